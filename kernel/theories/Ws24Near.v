(* ws24 -- Wang & Sato, arXiv 2412.11459 v2: Theorem 2 (Eq. 13) for near-orthogonal embeddings.

   Assumption 1 of the paper takes the embeddings and the relative position vectors to be nearly
   orthogonal; Ws24.v proves Theorem 2's repaired reading for an exactly orthonormal family.  Here the
   family is eps-near-orthonormal: every norm^2 within eps of 1 and every inner product of two distinct
   members at most eps in absolute value (eps >= 0; eps = 0 is the orthonormal case), and every chi(k),
   k in Q, at most M in absolute value.  With Eq. 13's matrix W^1_K = sum_{k in Q} chi(k) w_E(k) r_{-1}^T:

   - the model's score w_E(v)^T W^1_K r_{-1} lies within f = M eps (V + 1 + V eps) of chi(v);
   - the layer-1 score at (t, t-1) lies within f + M eps (1 + V eps) of chi(v), for every t and token u;
   - the display as written, r_{-1}^T W^1_K w_E(v), is at most g = V M eps^2 in absolute value;
   - hence, for |chi(v)| = M > 0, the model's score exceeds the as-written display in absolute value
     whenever eps (V + 1) + 2 V eps^2 < 1, i.e. eps < eps*(V) = (sqrt((V+1)^2 + 8V) - (V+1)) / (4V).

   Eq. 14 likewise (eq14_read_score_near): for {w_E(1..V), Phi_1 w_E(1..V)} eps-near-orthonormal and
   |psi| <= M, the model's layer-2 score w_E(z_T)^T W^2_K Phi_1 w_E(z_s) lies within M eps (2 + V eps) of
   psi(z_T)[z_s = z_T], the display as written (Phi_1 w_E(z_s))^T W^2_K w_E(z_T) is at most V M eps^2, and
   they separate at z_s = z_T for eps < (sqrt(1 + 2V) - 1) / (2V).

   The bounds hold for every d, V, eps, M and every such family (no bound on V: the solver's eps-bounds
   were checked for V <= 8 only). *)

From Coq Require Import Reals Lra Lia.
From Verify Require Import Ws24.
Open Scope R_scope.

Definition near_orthonormal_prev (d V : nat) (eps : R) (wE : nat -> vec) (r : Z -> vec) : Prop :=
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> k <> l -> Rabs (dot d (wE k) (wE l)) <= eps) /\
  (forall k, (1 <= k <= V)%nat -> Rabs (dot d (wE k) (wE k) - 1) <= eps) /\
  (forall k, (1 <= k <= V)%nat -> Rabs (dot d (wE k) (r (-1)%Z)) <= eps) /\
  Rabs (dot d (r (-1)%Z) (r (-1)%Z) - 1) <= eps.

(* an orthonormal family is eps-near-orthonormal for every eps >= 0 *)
Lemma orthonormal_is_near : forall d V eps wE r, 0 <= eps ->
  orthonormal_prev d V wE r -> near_orthonormal_prev d V eps wE r.
Proof.
  intros d V eps wE r He [Hww [Hwr Hrr]]. split; [|split; [|split]].
  - intros k l Hk Hl Hne. rewrite Hww by auto. destruct (Nat.eqb_spec k l); [lia|]. rewrite Rabs_R0. lra.
  - intros k Hk. rewrite Hww by auto. rewrite Nat.eqb_refl. replace (1 - 1) with 0 by ring. rewrite Rabs_R0. lra.
  - intros k Hk. rewrite Hwr by auto. rewrite Rabs_R0. lra.
  - rewrite Hrr. replace (1 - 1) with 0 by ring. rewrite Rabs_R0. lra.
Qed.

(* ------------------------------------------------------------------ sums of bounds *)

Lemma Rabs_tsum_le : forall V f b, (forall k, (1 <= k <= V)%nat -> Rabs (f k) <= b k) ->
  Rabs (tsum V f) <= tsum V b.
Proof.
  induction V; intros f b H; unfold tsum in *; simpl.
  - rewrite Rabs_R0. lra.
  - eapply Rle_trans; [apply Rabs_triang|]. apply Rplus_le_compat.
    + apply IHV. intros k Hk. apply H. lia.
    + apply H. lia.
Qed.

Lemma tsum_minus : forall V f g, tsum V (fun k => f k - g k) = tsum V f - tsum V g.
Proof.
  intros. unfold tsum. rewrite (rsum_ext V _ (fun k => f (S k) + (-1) * g (S k))) by (intros; ring).
  rewrite rsum_plus, rsum_scal. ring.
Qed.

Lemma tsum_const : forall V c, tsum V (fun _ => c) = INR V * c.
Proof.
  intros. unfold tsum. induction V; [simpl; ring|]. rewrite S_INR. cbn [rsum]. rewrite IHV. ring.
Qed.

Lemma tsum_const_delta : forall V v c a, (1 <= v <= V)%nat ->
  tsum V (fun k => c + (if Nat.eqb k v then a else 0)) = INR V * c + a.
Proof.
  intros V v c a Hv. unfold tsum. rewrite rsum_plus.
  fold (tsum V (fun _ => c)). fold (tsum V (fun k => if Nat.eqb k v then a else 0)).
  rewrite tsum_delta, tsum_const by auto. reflexivity.
Qed.

(* |a b| <= A B from |a| <= A, |b| <= B *)
Lemma Rabs_mult_le : forall a b A B, Rabs a <= A -> Rabs b <= B -> Rabs (a * b) <= A * B.
Proof.
  intros a b A B Ha Hb. rewrite Rabs_mult. apply Rmult_le_compat; auto using Rabs_pos.
Qed.

Lemma near_one : forall x eps, Rabs (x - 1) <= eps -> Rabs x <= 1 + eps.
Proof.
  intros x eps H. replace x with ((x - 1) + 1) by ring. eapply Rle_trans; [apply Rabs_triang|].
  rewrite Rabs_R1. lra.
Qed.

(* |a c - 1| <= eps (2 + eps) from |a - 1|, |c - 1| <= eps *)
Lemma near_one_product : forall a c eps, 0 <= eps -> Rabs (a - 1) <= eps -> Rabs (c - 1) <= eps ->
  Rabs (a * c - 1) <= eps * (2 + eps).
Proof.
  intros a c eps He Ha Hc. replace (a * c - 1) with ((a - 1) * c + (c - 1)) by ring.
  eapply Rle_trans; [apply Rabs_triang|].
  pose proof (Rabs_mult_le (a - 1) c eps (1 + eps) Ha (near_one c eps Hc)). lra.
Qed.

(* one near-orthonormal family: |<u v, u k>| <= 1 + eps on the diagonal, eps off it *)
Lemma near_gram_bound : forall d V eps (u : nat -> vec),
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> k <> l -> Rabs (dot d (u k) (u l)) <= eps) ->
  (forall k, (1 <= k <= V)%nat -> Rabs (dot d (u k) (u k) - 1) <= eps) ->
  forall v k, (1 <= v <= V)%nat -> (1 <= k <= V)%nat ->
  Rabs (dot d (u v) (u k)) <= (if Nat.eqb k v then 1 + eps else eps).
Proof.
  intros d V eps u Hoff Hdiag v k Hv Hk. destruct (Nat.eqb_spec k v) as [->|Hne].
  - apply near_one. apply Hdiag. auto.
  - apply Hoff; auto.
Qed.

Section NearScores.
  Variables (d V : nat) (eps M : R) (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec).
  Hypothesis Heps : 0 <= eps.
  Hypothesis NO : near_orthonormal_prev d V eps wE r.
  Hypothesis HM : forall k, (1 <= k <= V)%nat -> Q k = true -> Rabs (chi k) <= M.

  Let q (k : nat) := if Q k then chi k else 0.
  Let W := W1K V Q chi wE (r (-1)%Z).

  Lemma q_bound : forall v k, (1 <= v <= V)%nat -> Q v = true -> (1 <= k <= V)%nat -> Rabs (q k) <= M.
  Proof.
    intros v k Hv HQ Hk. unfold q. pose proof (HM v Hv HQ) as Hv'. pose proof (Rabs_pos (chi v)).
    destruct (Q k) eqn:E; [apply HM; auto|]. rewrite Rabs_R0. lra.
  Qed.

  Lemma ww_bound : forall v k, (1 <= v <= V)%nat -> (1 <= k <= V)%nat ->
    Rabs (dot d (wE v) (wE k)) <= (if Nat.eqb k v then 1 + eps else eps).
  Proof. destruct NO as [Hww [Hwn _]]. exact (near_gram_bound d V eps wE Hww Hwn). Qed.

  Lemma rw_bound : forall k, (1 <= k <= V)%nat -> Rabs (dot d (r (-1)%Z) (wE k)) <= eps.
  Proof. destruct NO as [_ [_ [Hwr _]]]. intros. rewrite dot_comm. auto. Qed.

  Lemma rr_bound : Rabs (dot d (r (-1)%Z) (r (-1)%Z) - 1) <= eps.
  Proof. destruct NO as [_ [_ [_ H]]]. exact H. Qed.

  (* the model's score: |w_E(v)^T W^1_K r_{-1} - chi(v)| <= M eps (V + 1 + V eps) *)
  Lemma model_near : forall v, (1 <= v <= V)%nat -> Q v = true ->
    Rabs (bilin d (wE v) W (r (-1)%Z) - chi v) <= M * eps * (INR V + 1 + INR V * eps).
  Proof.
    intros v Hv HQ. unfold W, W1K. rewrite bilin_outer_sum. fold q.
    assert (Hc : chi v = tsum V (fun k => if Nat.eqb k v then q k else 0)).
    { rewrite tsum_delta by auto. unfold q. rewrite HQ. reflexivity. }
    rewrite Hc, <- tsum_minus.
    replace (M * eps * (INR V + 1 + INR V * eps)) with (INR V * (M * eps * (1 + eps)) + M * eps) by ring.
    rewrite <- (tsum_const_delta V v (M * eps * (1 + eps)) (M * eps)) by auto.
    apply Rabs_tsum_le. intros k Hk. pose proof (q_bound v k Hv HQ Hk) as Hq.
    pose proof rr_bound as Hrr. pose proof (near_one _ _ Hrr) as Hr.
    change (if Q k then chi k else 0) with (q k).
    destruct (Nat.eqb_spec k v) as [->|Hne].
    - replace (q v * dot d (wE v) (wE v) * dot d (r (-1)%Z) (r (-1)%Z) - q v)
        with (q v * (dot d (wE v) (wE v) * dot d (r (-1)%Z) (r (-1)%Z) - 1)) by ring.
      destruct NO as [_ [Hwn _]].
      replace (M * eps * (1 + eps) + M * eps) with (M * (eps * (2 + eps))) by ring.
      exact (Rabs_mult_le _ _ _ _ Hq (near_one_product _ _ eps Heps (Hwn v Hv) Hrr)).
    - replace (q k * dot d (wE v) (wE k) * dot d (r (-1)%Z) (r (-1)%Z) - 0)
        with (q k * dot d (wE v) (wE k) * dot d (r (-1)%Z) (r (-1)%Z)) by ring.
      pose proof (ww_bound v k Hv Hk) as Hw. destruct (Nat.eqb_spec k v); [lia|].
      pose proof (Rabs_mult_le _ _ _ _ (Rabs_mult_le _ _ _ _ Hq Hw) Hr). lra.
  Qed.

  (* the display as written: |r_{-1}^T W^1_K w_E(v)| <= V M eps^2 *)
  Lemma display_near : forall v, (1 <= v <= V)%nat -> Q v = true ->
    Rabs (bilin d (r (-1)%Z) W (wE v)) <= INR V * M * eps ^ 2.
  Proof.
    intros v Hv HQ. unfold W, W1K. rewrite bilin_outer_sum. fold q.
    replace (INR V * M * eps ^ 2) with (INR V * (M * eps * eps)) by ring. rewrite <- tsum_const.
    apply Rabs_tsum_le. intros k Hk. change (if Q k then chi k else 0) with (q k).
    apply Rabs_mult_le; [apply Rabs_mult_le|]; [exact (q_bound v k Hv HQ Hk)|apply rw_bound; auto..].
  Qed.

  (* the token part of the layer-1 score: |w_E(v)^T W^1_K w_E(u)| <= M eps (1 + V eps) *)
  Lemma token_part_near : forall v u, (1 <= v <= V)%nat -> Q v = true -> (1 <= u <= V)%nat ->
    Rabs (bilin d (wE v) W (wE u)) <= M * eps * (1 + INR V * eps).
  Proof.
    intros v u Hv HQ Hu. unfold W, W1K. rewrite bilin_outer_sum. fold q.
    replace (M * eps * (1 + INR V * eps)) with (INR V * (M * eps * eps) + M * eps) by ring.
    rewrite <- (tsum_const_delta V v (M * eps * eps) (M * eps)) by auto.
    apply Rabs_tsum_le. intros k Hk. change (if Q k then chi k else 0) with (q k).
    pose proof (q_bound v k Hv HQ Hk) as Hq. pose proof (rw_bound u Hu) as Hr. pose proof (ww_bound v k Hv Hk) as Hw.
    pose proof (Rabs_mult_le _ _ _ _ (Rabs_mult_le _ _ _ _ Hq Hw) Hr).
    destruct (Nat.eqb_spec k v); lra.
  Qed.
End NearScores.

(* ws24:theorem2 [read-score], near-orthogonal.  For every d, V, eps >= 0, M, Q, chi with |chi(k)| <= M
   on Q, and every eps-near-orthonormal family {w_E(1..V), r_{-1}}: the model's score is within
   M eps (V + 1 + V eps) of chi(v), the layer-1 score at (t, t-1) within M eps (V + 2 + 2 V eps) for every
   t and u, the as-written display at most V M eps^2; and when |chi(v)| = M > 0 and
   eps (V + 1) + 2 V eps^2 < 1, the model's score is larger in absolute value than the as-written display. *)
Theorem theorem2_read_score_near :
  forall d V eps M (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec),
    0 <= eps -> near_orthonormal_prev d V eps wE r ->
    (forall k, (1 <= k <= V)%nat -> Q k = true -> Rabs (chi k) <= M) ->
    forall v, (1 <= v <= V)%nat -> Q v = true ->
      Rabs (bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) - chi v) <= M * eps * (INR V + 1 + INR V * eps) /\
      (forall (t : Z) u, (1 <= u <= V)%nat ->
         Rabs (layer1_score d (W1K V Q chi wE (r (-1)%Z)) wE r t (t - 1) v u - chi v)
           <= M * eps * (INR V + 2 + 2 * INR V * eps)) /\
      Rabs (bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v)) <= INR V * M * eps ^ 2 /\
      (Rabs (chi v) = M -> 0 < M -> eps * (INR V + 1) + 2 * INR V * eps ^ 2 < 1 ->
         Rabs (bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v))
           < Rabs (bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z))).
Proof.
  intros d V eps M Q chi wE r He NO HM v Hv HQ.
  pose proof (model_near d V eps M Q chi wE r He NO HM v Hv HQ) as Hm.
  pose proof (display_near d V eps M Q chi wE r NO HM v Hv HQ) as Hd.
  split; [exact Hm|split; [|split; [exact Hd|]]].
  - intros t u Hu. unfold layer1_score. rewrite bilin_vadd_r, prev_offset.
    pose proof (token_part_near d V eps M Q chi wE r NO HM v u Hv HQ Hu) as Ht.
    replace (bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (wE u) + bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) - chi v)
      with (bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (wE u) + (bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) - chi v)) by ring.
    eapply Rle_trans; [apply Rabs_triang|]. lra.
  - intros Hchi HMpos Hsmall.
    set (s := bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z)) in *.
    set (a := bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v)) in *.
    assert (Hs : M - M * eps * (INR V + 1 + INR V * eps) <= Rabs s).
    { pose proof (Rabs_triang_inv (chi v) (chi v - s)) as Htr.
      replace (chi v - (chi v - s)) with s in Htr by ring. rewrite Rabs_minus_sym in Hm. lra. }
    assert (Hgap : 0 < M * (1 - eps * (INR V + 1) - 2 * INR V * eps ^ 2)) by (apply Rmult_lt_0_compat; lra).
    nra.
Qed.

Lemma tsum_nonneg : forall V f, (forall j, 0 <= f j) -> 0 <= tsum V f.
Proof. intros V f Hf. unfold tsum. induction V; simpl; [lra|]. specialize (Hf (S V)). lra. Qed.

Lemma tsum_ge_term : forall V f k, (forall j, 0 <= f j) -> (1 <= k <= V)%nat -> f k <= tsum V f.
Proof.
  induction V; intros f k Hf Hk; [lia|].
  assert (E : tsum (S V) f = tsum V f + f (S V)) by reflexivity. rewrite E.
  destruct (Nat.eq_dec k (S V)) as [->|Hne].
  - pose proof (tsum_nonneg V f Hf). lra.
  - pose proof (IHV f k Hf ltac:(lia)). specialize (Hf (S V)). lra.
Qed.

(* at eps = 0 the bound is the orthonormal theorem's equality: the model's score is chi(v) *)
Corollary theorem2_read_score_near_at_0 :
  forall d V (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec),
    orthonormal_prev d V wE r ->
    forall v, (1 <= v <= V)%nat -> Q v = true ->
      bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) = chi v.
Proof.
  intros d V Q chi wE r ON v Hv HQ.
  assert (HM : forall k, (1 <= k <= V)%nat -> Q k = true -> Rabs (chi k) <= tsum V (fun j => Rabs (chi j)))
    by (intros k Hk _; apply (tsum_ge_term V (fun j => Rabs (chi j))); auto using Rabs_pos).
  destruct (theorem2_read_score_near d V 0 _ Q chi wE r (Rle_refl 0)
              (orthonormal_is_near d V 0 wE r (Rle_refl 0) ON) HM v Hv HQ) as [H _].
  rewrite Rmult_0_r, Rmult_0_l in H.
  set (x := bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) - chi v) in *.
  assert (x = 0) by (unfold Rabs in H; destruct (Rcase_abs x); lra). unfold x in *. lra.
Qed.

(* ================================================================== Eq. 14, near-orthogonal *)

(* {w_E(1..V), Phi_1 w_E(1..V)} eps-near-orthonormal: every squared norm within eps of 1, every inner product of
   two distinct members at most eps in absolute value *)
Definition near_orthonormal_ind (d V : nat) (eps : R) (wE : nat -> vec) (Phi1 : mat) : Prop :=
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> k <> l -> Rabs (dot d (wE k) (wE l)) <= eps) /\
  (forall k, (1 <= k <= V)%nat -> Rabs (dot d (wE k) (wE k) - 1) <= eps) /\
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> k <> l ->
     Rabs (dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE l))) <= eps) /\
  (forall k, (1 <= k <= V)%nat -> Rabs (dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE k)) - 1) <= eps) /\
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> Rabs (dot d (wE k) (mv d Phi1 (wE l))) <= eps).

Lemma orthonormal_ind_is_near : forall d V eps wE Phi1, 0 <= eps ->
  orthonormal_ind d V wE Phi1 -> near_orthonormal_ind d V eps wE Phi1.
Proof.
  intros d V eps wE Phi1 He [Hww [Hpp Hwp]].
  assert (Z : Rabs 0 <= eps) by (rewrite Rabs_R0; lra).
  assert (O : Rabs (1 - 1) <= eps) by (replace (1 - 1) with 0 by ring; exact Z).
  split; [|split; [|split; [|split]]].
  - intros k l Hk Hl Hne. rewrite Hww by auto. destruct (Nat.eqb_spec k l); [lia|exact Z].
  - intros k Hk. rewrite Hww by auto. rewrite Nat.eqb_refl. exact O.
  - intros k l Hk Hl Hne. rewrite Hpp by auto. destruct (Nat.eqb_spec k l); [lia|exact Z].
  - intros k Hk. rewrite Hpp by auto. rewrite Nat.eqb_refl. exact O.
  - intros k l Hk Hl. rewrite Hwp by auto. exact Z.
Qed.

Lemma tsum_two_deltas : forall V s T c a b, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
  tsum V (fun k => c + (if Nat.eqb k T then a else 0) + (if Nat.eqb k s then b else 0)) = INR V * c + a + b.
Proof.
  intros V s T c a b Hs HT. unfold tsum. rewrite rsum_plus.
  fold (tsum V (fun k => c + (if Nat.eqb k T then a else 0))). fold (tsum V (fun k => if Nat.eqb k s then b else 0)).
  rewrite tsum_const_delta, tsum_delta by auto. reflexivity.
Qed.

Section Eq14Near.
  Variables (d V : nat) (eps M : R) (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat).
  Hypothesis Heps : 0 <= eps.
  Hypothesis NO : near_orthonormal_ind d V eps wE Phi1.
  Hypothesis HM : forall k, (1 <= k <= V)%nat -> Rabs (psi k) <= M.

  Lemma ww14 : forall a k, (1 <= a <= V)%nat -> (1 <= k <= V)%nat ->
    Rabs (dot d (wE a) (wE k)) <= (if Nat.eqb k a then 1 + eps else eps).
  Proof. destruct NO as [Hww [Hwn _]]. exact (near_gram_bound d V eps wE Hww Hwn). Qed.

  Lemma pp14 : forall a k, (1 <= a <= V)%nat -> (1 <= k <= V)%nat ->
    Rabs (dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE a))) <= (if Nat.eqb k a then 1 + eps else eps).
  Proof.
    destruct NO as [_ [_ [Hpp [Hpn _]]]]. intros a k Ha Hk. rewrite Nat.eqb_sym.
    exact (near_gram_bound d V eps (fun k => mv d Phi1 (wE k)) Hpp Hpn k a Hk Ha).
  Qed.

  Lemma wp14 : forall a k, (1 <= a <= V)%nat -> (1 <= k <= V)%nat -> Rabs (dot d (wE a) (mv d Phi1 (wE k))) <= eps.
  Proof. destruct NO as [_ [_ [_ [_ Hwp]]]]. intros. auto. Qed.

  (* the model's layer-2 score: |w_E(z_T)^T W^2_K Phi_1 w_E(z_s) - psi(z_T)[z_s = z_T]| <= M eps (2 + V eps) *)
  Lemma eq14_model_near : forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
    Rabs (bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)) - (if Nat.eqb s T then psi T else 0))
      <= M * eps * (2 + INR V * eps).
  Proof.
    intros s T Hs HT. unfold W2K. rewrite bilin_outer_sum.
    assert (HM0 : 0 <= M) by (pose proof (HM T HT); pose proof (Rabs_pos (psi T)); lra).
    destruct (Nat.eqb_spec s T) as [->|HsT].
    - assert (Hc : psi T = tsum V (fun k => if Nat.eqb k T then psi k else 0)) by (rewrite tsum_delta; auto).
      rewrite Hc, <- tsum_minus.
      replace (M * eps * (2 + INR V * eps)) with (INR V * (M * eps * eps) + 2 * M * eps) by ring.
      rewrite <- (tsum_const_delta V T (M * eps * eps) (2 * M * eps)) by auto.
      apply Rabs_tsum_le. intros k Hk. pose proof (HM k Hk) as Hq.
      destruct (Nat.eqb_spec k T) as [->|Hne].
      +
        replace (psi T * dot d (wE T) (wE T) * dot d (mv d Phi1 (wE T)) (mv d Phi1 (wE T)) - psi T)
          with (psi T * (dot d (wE T) (wE T) * dot d (mv d Phi1 (wE T)) (mv d Phi1 (wE T)) - 1)) by ring.
        destruct NO as [_ [Hwn [_ [Hpn _]]]].
        pose proof (Rabs_mult_le _ _ _ _ Hq (near_one_product _ _ eps Heps (Hwn T HT) (Hpn T HT))) as H.
        assert (M * (eps * (2 + eps)) <= M * eps * eps + 2 * M * eps) by nra. lra.
      + replace (psi k * dot d (wE T) (wE k) * dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE T)) - 0)
          with (psi k * dot d (wE T) (wE k) * dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE T))) by ring.
        pose proof (ww14 T k HT Hk) as Hw. pose proof (pp14 T k HT Hk) as Hp.
        destruct (Nat.eqb_spec k T); [lia|].
        pose proof (Rabs_mult_le _ _ _ _ (Rabs_mult_le _ _ _ _ Hq Hw) Hp). lra.
    - rewrite Rminus_0_r.
      replace (M * eps * (2 + INR V * eps)) with (INR V * (M * eps * eps) + M * eps + M * eps) by ring.
      rewrite <- (tsum_two_deltas V s T (M * eps * eps) (M * eps) (M * eps)) by auto.
      apply Rabs_tsum_le. intros k Hk. pose proof (HM k Hk) as Hq.
      pose proof (ww14 T k HT Hk) as Hw. pose proof (pp14 s k Hs Hk) as Hp.
      pose proof (Rabs_mult_le _ _ _ _ (Rabs_mult_le _ _ _ _ Hq Hw) Hp) as H.
      destruct (Nat.eqb_spec k T); destruct (Nat.eqb_spec k s); try lia; nra.
  Qed.

  (* the display as written: |(Phi_1 w_E(z_s))^T W^2_K w_E(z_T)| <= V M eps^2 *)
  Lemma eq14_display_near : forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
    Rabs (bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T)) <= INR V * M * eps ^ 2.
  Proof.
    intros s T Hs HT. unfold W2K. rewrite bilin_outer_sum.
    replace (INR V * M * eps ^ 2) with (INR V * (M * eps * eps)) by ring. rewrite <- tsum_const.
    apply Rabs_tsum_le. intros k Hk.
    apply Rabs_mult_le; [apply Rabs_mult_le|]; [exact (HM k Hk)| |].
    - rewrite dot_comm. apply wp14; auto.
    - rewrite dot_comm. apply wp14; auto.
  Qed.
End Eq14Near.

(* ws24:eq14 [read-score], near-orthogonal.  For every d, V, eps >= 0, M, psi with |psi| <= M and every
   eps-near-orthonormal family {w_E(1..V), Phi_1 w_E(1..V)}: the model's layer-2 score
   w_E(z_T)^T W^2_K Phi_1 w_E(z_s) is within M eps (2 + V eps) of psi(z_T)[z_s = z_T] for all tokens, the
   display as written at most V M eps^2; and where |psi(z_T)| = M > 0 and 2 eps + 2 V eps^2 < 1, the model's
   score at z_s = z_T exceeds the as-written display in absolute value. *)
Theorem eq14_read_score_near :
  forall d V eps M (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat),
    0 <= eps -> near_orthonormal_ind d V eps wE Phi1 -> (forall k, (1 <= k <= V)%nat -> Rabs (psi k) <= M) ->
    forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
      Rabs (bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)) - (if Nat.eqb s T then psi T else 0))
        <= M * eps * (2 + INR V * eps) /\
      Rabs (bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T)) <= INR V * M * eps ^ 2 /\
      (s = T -> Rabs (psi T) = M -> 0 < M -> 2 * eps + 2 * INR V * eps ^ 2 < 1 ->
         Rabs (bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T))
           < Rabs (bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)))).
Proof.
  intros d V eps M psi wE Phi1 He NO HM s T Hs HT.
  pose proof (eq14_model_near d V eps M psi wE Phi1 He NO HM s T Hs HT) as Hm.
  pose proof (eq14_display_near d V eps M psi wE Phi1 NO HM s T Hs HT) as Hd.
  split; [exact Hm|split; [exact Hd|]].
  intros -> Hpsi HMpos Hsmall. rewrite Nat.eqb_refl in Hm.
  set (x := bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE T))) in *.
  set (a := bilin d (mv d Phi1 (wE T)) (W2K d V psi wE Phi1) (wE T)) in *.
  assert (Hx : M - M * eps * (2 + INR V * eps) <= Rabs x).
  { pose proof (Rabs_triang_inv (psi T) (psi T - x)) as Htr.
    replace (psi T - (psi T - x)) with x in Htr by ring. rewrite Rabs_minus_sym in Hm. lra. }
  assert (Hgap : 0 < M * (1 - 2 * eps - 2 * INR V * eps ^ 2)) by (apply Rmult_lt_0_compat; lra).
  nra.
Qed.
