(* ws24 -- Wang & Sato, "Rethinking Associative Memory Mechanism in Induction Head",
   arXiv 2412.11459 v2 (COLM 2025): Theorem 2 (appendix Theorem 3, Eq. 13), Eq. 14 and
   Proposition 4, under the orthonormal idealisation of Assumption 1.

   Setting (as in verify.constructions.bilinear and symbolic/ws24.py): vectors are coordinate
   functions of R^d (any d), the key matrices are sums of outer products

       W = sum_k c(k) a_k b_k^T                                            (Eq. 13 / Eq. 14)

   and every score is a bilinear form u^T W v.  The model's own score is query^T W_K key (W_Q the
   identity; the convention of the base model, bietti23).  Tokens are 1-indexed: k = 1..V.
   Assumption 1 is idealised as an exact orthonormal family (hypotheses of each theorem), and every
   refutation also proves that such families exist for every V (the standard basis), so no
   refutation is vacuous. *)

From Coq Require Import Reals Lra Lia List QArith Qreals.
Import ListNotations.
Open Scope R_scope.

(* ------------------------------------------------------------------ finite sums *)

Fixpoint rsum (n : nat) (f : nat -> R) : R :=
  match n with O => 0 | S m => rsum m f + f m end.

Lemma rsum_ext : forall n f g, (forall i, (i < n)%nat -> f i = g i) -> rsum n f = rsum n g.
Proof. induction n; intros f g H; simpl; [reflexivity|]. rewrite (IHn f g), (H n); auto; lia. Qed.

Lemma rsum_plus : forall n f g, rsum n (fun i => f i + g i) = rsum n f + rsum n g.
Proof. induction n; intros; simpl; [lra|]. rewrite IHn. lra. Qed.

Lemma rsum_scal : forall n c f, rsum n (fun i => c * f i) = c * rsum n f.
Proof. induction n; intros; simpl; [lra|]. rewrite IHn. lra. Qed.

Lemma rsum_swap : forall n m (f : nat -> nat -> R),
  rsum n (fun i => rsum m (fun j => f i j)) = rsum m (fun j => rsum n (fun i => f i j)).
Proof.
  induction n; intros m f; simpl.
  - induction m; simpl; [reflexivity|]. rewrite <- IHm. lra.
  - rewrite IHn. rewrite <- rsum_plus. reflexivity.
Qed.

(* sum_{i < n} [i = p] g(i) *)
Lemma rsum_delta : forall n p g,
  rsum n (fun i => if Nat.eqb i p then g i else 0) = if Nat.ltb p n then g p else 0.
Proof.
  induction n; intros p g; simpl; [reflexivity|]. rewrite IHn.
  destruct (Nat.eqb_spec n p) as [->|Hne].
  - replace (Nat.ltb p p) with false by (symmetry; apply Nat.ltb_ge; lia).
    replace (Nat.ltb p (S p)) with true by (symmetry; apply Nat.ltb_lt; lia). lra.
  - destruct (Nat.ltb_spec p n); destruct (Nat.ltb_spec p (S n)); try lia; lra.
Qed.

(* sums over the tokens k = 1..V *)
Definition tsum (V : nat) (f : nat -> R) : R := rsum V (fun k => f (S k)).

Lemma tsum_delta : forall V v g, (1 <= v <= V)%nat ->
  tsum V (fun k => if Nat.eqb k v then g k else 0) = g v.
Proof.
  intros V v g Hv. unfold tsum.
  rewrite (rsum_ext V _ (fun i => if Nat.eqb i (v - 1) then g (S i) else 0)).
  - rewrite rsum_delta. destruct (Nat.ltb_spec (v - 1) V); [|lia]. f_equal. lia.
  - intros i Hi. destruct (Nat.eqb_spec (S i) v); destruct (Nat.eqb_spec i (v - 1)); auto; lia.
Qed.

Lemma tsum_zero : forall V f, (forall k, (1 <= k <= V)%nat -> f k = 0) -> tsum V f = 0.
Proof.
  intros V f H. unfold tsum. induction V; simpl; [reflexivity|].
  rewrite IHV by (intros; apply H; lia). rewrite H by lia. lra.
Qed.

Lemma tsum_ext : forall V f g, (forall k, (1 <= k <= V)%nat -> f k = g k) -> tsum V f = tsum V g.
Proof. intros V f g H. unfold tsum. apply rsum_ext. intros. apply H. lia. Qed.

(* ------------------------------------------------------------------ vectors, matrices, bilinear forms *)

Definition vec := nat -> R.
Definition mat := nat -> nat -> R.

(* <u, v> in R^d *)
Definition dot (d : nat) (u v : vec) : R := rsum d (fun i => u i * v i).
(* u^T M v in R^d *)
Definition bilin (d : nat) (u : vec) (M : mat) (v : vec) : R :=
  rsum d (fun i => rsum d (fun j => u i * M i j * v j)).
Definition vadd (u v : vec) : vec := fun i => u i + v i.
(* M x *)
Definition mv (d : nat) (M : mat) (x : vec) : vec := fun i => rsum d (fun j => M i j * x j).

(* sum_{k=1..V} c(k) a_k b_k^T *)
Definition outer_sum (V : nat) (c : nat -> R) (a b : nat -> vec) : mat :=
  fun i j => tsum V (fun k => c k * a k i * b k j).

Lemma dot_comm : forall d u v, dot d u v = dot d v u.
Proof. intros. unfold dot. apply rsum_ext. intros. ring. Qed.

Lemma bilin_vadd_r : forall d u M v w, bilin d u M (vadd v w) = bilin d u M v + bilin d u M w.
Proof.
  intros. unfold bilin, vadd. rewrite <- rsum_plus. apply rsum_ext. intros.
  rewrite <- rsum_plus. apply rsum_ext. intros. ring.
Qed.

(* (**) of verify.constructions.bilinear: u^T (sum_k c(k) a_k b_k^T) v = sum_k c(k) <u, a_k> <b_k, v> *)
Lemma bilin_outer_sum : forall d V c a b u v,
  bilin d u (outer_sum V c a b) v = tsum V (fun k => c k * dot d u (a k) * dot d (b k) v).
Proof.
  intros. unfold bilin, outer_sum, tsum, dot.
  assert (Hin : forall i j, u i * rsum V (fun k => c (S k) * a (S k) i * b (S k) j) * v j =
                  rsum V (fun k => c (S k) * (u i * a (S k) i) * (b (S k) j * v j))).
  { intros i j. replace (u i * rsum V (fun k => c (S k) * a (S k) i * b (S k) j) * v j)
      with ((u i * v j) * rsum V (fun k => c (S k) * a (S k) i * b (S k) j)) by ring.
    rewrite <- rsum_scal. apply rsum_ext. intros. ring. }
  rewrite (rsum_ext d _ (fun i => rsum V (fun k => rsum d (fun j =>
             c (S k) * (u i * a (S k) i) * (b (S k) j * v j))))).
  2: { intros i _. rewrite <- rsum_swap. apply rsum_ext. intros j _. apply Hin. }
  rewrite rsum_swap. apply rsum_ext. intros k _.
  rewrite (rsum_ext d _ (fun i => (c (S k) * (u i * a (S k) i)) * rsum d (fun j => b (S k) j * v j))).
  2: { intros. rewrite <- rsum_scal. reflexivity. }
  rewrite (rsum_ext d _ (fun i => (rsum d (fun j => b (S k) j * v j) * c (S k)) * (u i * a (S k) i)))
    by (intros; ring).
  rewrite rsum_scal. ring.
Qed.

(* the standard basis e_p of R^d *)
Definition e (p : nat) : vec := fun i => if Nat.eqb i p then 1 else 0.

Lemma dot_e : forall d p q, (p < d)%nat -> dot d (e p) (e q) = if Nat.eqb p q then 1 else 0.
Proof.
  intros d p q Hp. unfold dot, e.
  rewrite (rsum_ext d _ (fun i => if Nat.eqb i p then (if Nat.eqb i q then 1 else 0) else 0)).
  - rewrite rsum_delta. destruct (Nat.ltb_spec p d); [reflexivity|lia].
  - intros i _. destruct (Nat.eqb i p), (Nat.eqb i q); ring.
Qed.

(* ================================================================== Theorem 2 / Eq. 13 *)

(* Eq. 13 as written: W^1_K = sum_{k in Q} chi(k) w_E(k) r_{-1}^T  (Q a set of tokens, as a test) *)
Definition W1K (V : nat) (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r1 : vec) : mat :=
  outer_sum V (fun k => if Q k then chi k else 0) wE (fun _ => r1).

(* the transposed variant: sum_{k in Q} chi(k) r_{-1} w_E(k)^T *)
Definition W1K_transposed (V : nat) (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r1 : vec) : mat :=
  outer_sum V (fun k => if Q k then chi k else 0) (fun _ => r1) wE.

(* The RPE layer-1 score of key s for query t: w_E(z_t)^T W^1_K (w_E(z_s) + r_{s-t}),
   r : Z -> vec the relative position vectors (Section 3 of the paper, reconstructed as in
   verify.constructions.bilinear.PrevTokenConstruction.layer1_score). *)
Definition layer1_score (d : nat) (W : mat) (wE : nat -> vec) (r : Z -> vec) (t s : Z) (zt zs : nat) : R :=
  bilin d (wE zt) W (vadd (wE zs) (r (s - t)%Z)).

(* Assumption 1, idealised: {w_E(1..V), r_{-1}} is an orthonormal family of R^d. *)
Definition orthonormal_prev (d V : nat) (wE : nat -> vec) (r : Z -> vec) : Prop :=
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> dot d (wE k) (wE l) = if Nat.eqb k l then 1 else 0) /\
  (forall k, (1 <= k <= V)%nat -> dot d (wE k) (r (-1)%Z) = 0) /\
  dot d (r (-1)%Z) (r (-1)%Z) = 1.

(* The standard basis realises it in R^(V+1): w_E(k) = e_(k-1), r_{-1} = e_V. *)
Lemma orthonormal_prev_exists : forall V, exists d wE r, orthonormal_prev d V wE r.
Proof.
  intro V. exists (S V), (fun k => e (k - 1)), (fun _ => e V). split; [|split].
  - intros k l Hk Hl. rewrite dot_e by lia.
    destruct (Nat.eqb_spec (k - 1) (l - 1)), (Nat.eqb_spec k l); auto; lia.
  - intros k Hk. rewrite dot_e by lia. destruct (Nat.eqb_spec (k - 1) V); [lia|reflexivity].
  - rewrite dot_e by lia. rewrite Nat.eqb_refl. reflexivity.
Qed.

Section Eq13Scores.
  Variables (d V : nat) (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec).
  Hypothesis ON : orthonormal_prev d V wE r.

  Let q (k : nat) := if Q k then chi k else 0.

  Lemma dot_wE_wE : forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat ->
    dot d (wE k) (wE l) = if Nat.eqb k l then 1 else 0.
  Proof. destruct ON as [H _]. exact H. Qed.
  Lemma dot_wE_r : forall k, (1 <= k <= V)%nat -> dot d (wE k) (r (-1)%Z) = 0.
  Proof. destruct ON as [_ [H _]]. exact H. Qed.
  Lemma dot_r_wE : forall k, (1 <= k <= V)%nat -> dot d (r (-1)%Z) (wE k) = 0.
  Proof. intros. rewrite dot_comm. apply dot_wE_r; auto. Qed.

  (* r_{-1}^T W^1_K w_E(v) = sum_k q(k) <r, w_E(k)> <r, w_E(v)> = 0 *)
  Lemma displayed_as_written : forall v, (1 <= v <= V)%nat ->
    bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v) = 0.
  Proof.
    intros v Hv. unfold W1K. rewrite bilin_outer_sum. apply tsum_zero. intros k Hk.
    rewrite dot_r_wE by auto. ring.
  Qed.

  (* w_E(v)^T W^1_K r_{-1} = sum_k q(k) <w_E(v), w_E(k)> <r, r> = q(v) *)
  Lemma model_as_written : forall v, (1 <= v <= V)%nat ->
    bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) = q v.
  Proof.
    intros v Hv. unfold W1K. rewrite bilin_outer_sum. destruct ON as [_ [_ Hrr]].
    rewrite (tsum_ext V _ (fun k => if Nat.eqb k v then q k else 0)).
    - apply tsum_delta; auto.
    - intros k Hk. rewrite Hrr, dot_wE_wE by auto. fold (q k).
      destruct (Nat.eqb_spec v k), (Nat.eqb_spec k v); subst; try lia; ring.
  Qed.

  (* w_E(v)^T W^1_K w_E(u) = sum_k q(k) <w_E(v), w_E(k)> <r, w_E(u)> = 0 *)
  Lemma token_part_as_written : forall v u, (1 <= u <= V)%nat ->
    bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (wE u) = 0.
  Proof.
    intros v u Hu. unfold W1K. rewrite bilin_outer_sum. apply tsum_zero. intros k Hk.
    rewrite dot_r_wE by auto. ring.
  Qed.

  Lemma displayed_transposed : forall v, (1 <= v <= V)%nat ->
    bilin d (r (-1)%Z) (W1K_transposed V Q chi wE (r (-1)%Z)) (wE v) = q v.
  Proof.
    intros v Hv. unfold W1K_transposed. rewrite bilin_outer_sum. destruct ON as [_ [_ Hrr]].
    rewrite (tsum_ext V _ (fun k => if Nat.eqb k v then q k else 0)).
    - apply tsum_delta; auto.
    - intros k Hk. rewrite Hrr, dot_wE_wE by auto. fold (q k).
      destruct (Nat.eqb_spec k v); ring.
  Qed.

  Lemma model_transposed : forall v, (1 <= v <= V)%nat ->
    bilin d (wE v) (W1K_transposed V Q chi wE (r (-1)%Z)) (r (-1)%Z) = 0.
  Proof.
    intros v Hv. unfold W1K_transposed. rewrite bilin_outer_sum. apply tsum_zero. intros k Hk.
    rewrite dot_wE_r by auto. ring.
  Qed.

  Lemma token_part_transposed : forall v u, (1 <= v <= V)%nat ->
    bilin d (wE v) (W1K_transposed V Q chi wE (r (-1)%Z)) (wE u) = 0.
  Proof.
    intros v u Hv. unfold W1K_transposed. rewrite bilin_outer_sum. apply tsum_zero. intros k Hk.
    rewrite dot_wE_r by auto. ring.
  Qed.
End Eq13Scores.

Lemma prev_offset : forall t : Z, ((t - 1) - t)%Z = (-1)%Z.
Proof. intro. lia. Qed.

(* ws24:theorem2 [as-written], refuted.  Orthonormal families exist for every V, and for every one
   of them, every Q, chi and every token v, the displayed association r_{-1}^T W^1_K w_E(v) of Eq. 13
   is 0; so wherever v is in Q with chi(v) <> 0 it is not chi(v), as the theorem states. *)
Theorem theorem2_as_written_refuted :
  (forall V, exists d wE r, orthonormal_prev d V wE r) /\
  forall d V (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec),
    orthonormal_prev d V wE r ->
    forall v, (1 <= v <= V)%nat ->
      bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v) = 0 /\
      (Q v = true -> chi v <> 0 -> bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v) <> chi v).
Proof.
  split; [exact orthonormal_prev_exists|]. intros d V Q chi wE r ON v Hv.
  rewrite displayed_as_written by auto. split; [reflexivity|]. intros _ Hc H. apply Hc. auto.
Qed.

(* ws24:theorem2 [transposed], refuted.  With the matrix transposed the display becomes chi(v), but the
   model's own previous-token score w_E(v)^T W^1_K r_{-1} (query^T W_K key) is 0, and so is the whole
   layer-1 score w_E(z_t)^T W^1_K (w_E(z_{t-1}) + r_{-1}) at (t, t - 1) for every t: no previous-token
   head is left (wherever v in Q has chi(v) <> 0, the model's score is not chi(v)). *)
Theorem theorem2_transposed_refuted :
  (forall V, exists d wE r, orthonormal_prev d V wE r) /\
  forall d V (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec),
    orthonormal_prev d V wE r ->
    forall v, (1 <= v <= V)%nat -> Q v = true ->
      bilin d (r (-1)%Z) (W1K_transposed V Q chi wE (r (-1)%Z)) (wE v) = chi v /\
      bilin d (wE v) (W1K_transposed V Q chi wE (r (-1)%Z)) (r (-1)%Z) = 0 /\
      (forall (t : Z) u, layer1_score d (W1K_transposed V Q chi wE (r (-1)%Z)) wE r t (t - 1) v u = 0) /\
      (chi v <> 0 -> bilin d (wE v) (W1K_transposed V Q chi wE (r (-1)%Z)) (r (-1)%Z) <> chi v).
Proof.
  split; [exact orthonormal_prev_exists|]. intros d V Q chi wE r ON v Hv HQ.
  pose proof (model_transposed d V Q chi wE r ON v Hv) as Hm.
  split; [|split; [exact Hm|split]].
  - rewrite displayed_transposed by auto. rewrite HQ. reflexivity.
  - intros t u. unfold layer1_score. rewrite bilin_vadd_r, prev_offset.
    rewrite token_part_transposed, Hm by auto. ring.
  - intros Hc H. apply Hc. rewrite <- H. exact Hm.
Qed.

(* ws24:theorem2 [read-score], proved.  Eq. 13 kept, the display read as query^T W_K key:
   for every orthonormal family, Q, chi, every v in Q and every u, w_E(v)^T W^1_K r_{-1} = chi(v),
   which is the model's own previous-token score, and the layer-1 score at (t, t - 1),
   w_E(v)^T W^1_K (w_E(u) + r_{(t-1)-t}), equals chi(v) for every position t (t does not occur). *)
Theorem theorem2_read_score :
  forall d V (Q : nat -> bool) (chi : nat -> R) (wE : nat -> vec) (r : Z -> vec),
    orthonormal_prev d V wE r ->
    forall v, (1 <= v <= V)%nat -> Q v = true ->
      bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) = chi v /\
      (forall (t : Z) u, (1 <= u <= V)%nat -> layer1_score d (W1K V Q chi wE (r (-1)%Z)) wE r t (t - 1) v u = chi v).
Proof.
  intros d V Q chi wE r ON v Hv HQ.
  assert (Hm : bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) = chi v)
    by (rewrite model_as_written by auto; rewrite HQ; reflexivity).
  split; [exact Hm|]. intros t u Hu. unfold layer1_score.
  rewrite bilin_vadd_r, prev_offset, token_part_as_written, Hm by auto. ring.
Qed.

(* ================================================================== Eq. 14 *)

(* Eq. 14: W^2_K = sum_k psi(k) w_E(k) (Phi_1 w_E(k))^T, Phi_1 = W^1_O W^1_V a d x d matrix *)
Definition W2K (d V : nat) (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat) : mat :=
  outer_sum V psi wE (fun k => mv d Phi1 (wE k)).
Definition W2K_transposed (d V : nat) (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat) : mat :=
  outer_sum V psi (fun k => mv d Phi1 (wE k)) wE.

(* the idealisation of symbolic/ws24.py: {w_E(1..V), Phi_1 w_E(1..V)} is one orthonormal family *)
Definition orthonormal_ind (d V : nat) (wE : nat -> vec) (Phi1 : mat) : Prop :=
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> dot d (wE k) (wE l) = if Nat.eqb k l then 1 else 0) /\
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat ->
     dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE l)) = if Nat.eqb k l then 1 else 0) /\
  (forall k l, (1 <= k <= V)%nat -> (1 <= l <= V)%nat -> dot d (wE k) (mv d Phi1 (wE l)) = 0).

(* realised in R^(2V): w_E(k) = e_(k-1), Phi_1 e_j = e_(j+V) *)
Definition Phi1_shift (V : nat) : mat := fun i j => if Nat.eqb i (j + V) then 1 else 0.

Lemma mv_shift : forall V k i, (1 <= k <= V)%nat ->
  mv (2 * V) (Phi1_shift V) (e (k - 1)) i = e (k - 1 + V) i.
Proof.
  intros V k i Hk. unfold mv, Phi1_shift, e.
  rewrite (rsum_ext _ _ (fun j => if Nat.eqb j (k - 1) then (if Nat.eqb i (j + V) then 1 else 0) else 0)).
  - rewrite rsum_delta. destruct (Nat.ltb_spec (k - 1) (2 * V)); [reflexivity|lia].
  - intros j _. destruct (Nat.eqb j (k - 1)), (Nat.eqb i (j + V)); ring.
Qed.

Lemma orthonormal_ind_exists : forall V, exists d wE Phi1, orthonormal_ind d V wE Phi1.
Proof.
  intro V. exists (2 * V)%nat, (fun k => e (k - 1)), (Phi1_shift V).
  assert (Hd : forall u u' w w', (forall i, u i = u' i) -> (forall i, w i = w' i) ->
             dot (2 * V) u w = dot (2 * V) u' w').
  { intros u u' w w' Hu Hw. unfold dot. apply rsum_ext. intros. rewrite Hu, Hw. reflexivity. }
  split; [|split].
  - intros k l Hk Hl. rewrite dot_e by lia.
    destruct (Nat.eqb_spec (k - 1) (l - 1)), (Nat.eqb_spec k l); auto; lia.
  - intros k l Hk Hl. rewrite (Hd _ (e (k - 1 + V)) _ (e (l - 1 + V))) by (intros; apply mv_shift; auto).
    rewrite dot_e by lia. destruct (Nat.eqb_spec (k - 1 + V) (l - 1 + V)), (Nat.eqb_spec k l); auto; lia.
  - intros k l Hk Hl. rewrite (Hd _ (e (k - 1)) _ (e (l - 1 + V))) by (auto; intros; apply mv_shift; auto).
    rewrite dot_e by lia. destruct (Nat.eqb_spec (k - 1) (l - 1 + V)); [lia|reflexivity].
Qed.

Section Eq14Scores.
  Variables (d V : nat) (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat).
  Hypothesis ON : orthonormal_ind d V wE Phi1.

  Let pw (k : nat) := mv d Phi1 (wE k).

  (* (Phi_1 w_E(s))^T W^2_K w_E(T) = sum_k psi(k) <Phi_1 w_E(s), w_E(k)> <Phi_1 w_E(k), w_E(T)> = 0 *)
  Lemma eq14_displayed_as_written : forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
    bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T) = 0.
  Proof.
    intros s T Hs HT. unfold W2K. rewrite bilin_outer_sum. apply tsum_zero. intros k Hk.
    destruct ON as [_ [_ Hx]]. rewrite (dot_comm d (mv d Phi1 (wE k))), Hx by auto. ring.
  Qed.

  (* w_E(T)^T W^2_K Phi_1 w_E(s) = sum_k psi(k) <w_E(T), w_E(k)> <Phi_1 w_E(k), Phi_1 w_E(s)> = psi(T)[s = T] *)
  Lemma eq14_model_as_written : forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
    bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)) = if Nat.eqb s T then psi T else 0.
  Proof.
    intros s T Hs HT. unfold W2K. rewrite bilin_outer_sum. destruct ON as [Hw [Hp _]].
    rewrite (tsum_ext V _ (fun k => if Nat.eqb k T then (if Nat.eqb s T then psi k else 0) else 0)).
    - rewrite tsum_delta by auto. reflexivity.
    - intros k Hk. rewrite Hw, Hp by auto.
      destruct (Nat.eqb_spec T k), (Nat.eqb_spec k s), (Nat.eqb_spec k T), (Nat.eqb_spec s T);
        subst; try lia; ring.
  Qed.

  Lemma eq14_displayed_transposed : forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
    bilin d (mv d Phi1 (wE s)) (W2K_transposed d V psi wE Phi1) (wE T) = if Nat.eqb s T then psi T else 0.
  Proof.
    intros s T Hs HT. unfold W2K_transposed. rewrite bilin_outer_sum. destruct ON as [Hw [Hp _]].
    rewrite (tsum_ext V _ (fun k => if Nat.eqb k T then (if Nat.eqb s T then psi k else 0) else 0)).
    - rewrite tsum_delta by auto. reflexivity.
    - intros k Hk. rewrite Hw, Hp by auto.
      destruct (Nat.eqb_spec s k), (Nat.eqb_spec k T), (Nat.eqb_spec s T); subst; try lia; ring.
  Qed.

  Lemma eq14_model_transposed : forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
    bilin d (wE T) (W2K_transposed d V psi wE Phi1) (mv d Phi1 (wE s)) = 0.
  Proof.
    intros s T Hs HT. unfold W2K_transposed. rewrite bilin_outer_sum. apply tsum_zero. intros k Hk.
    destruct ON as [_ [_ Hx]]. rewrite Hx by auto. ring.
  Qed.
End Eq14Scores.

(* ws24:eq14 [as-written], refuted.  Families as assumed exist for every V, and for every one of them,
   every psi and all tokens s, T the proof's score (Phi_1 w_E(z_s))^T W^2_K w_E(z_T) is 0; at z_s = z_T
   with psi(z_T) <> 0 it is not psi(z_T) [z_s = z_T], as Eq. 14's proof states. *)
Theorem eq14_as_written_refuted :
  (forall V, exists d wE Phi1, orthonormal_ind d V wE Phi1) /\
  forall d V (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat),
    orthonormal_ind d V wE Phi1 ->
    forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
      bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T) = 0 /\
      (s = T -> psi T <> 0 -> bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T) <> psi T).
Proof.
  split; [exact orthonormal_ind_exists|]. intros d V psi wE Phi1 ON s T Hs HT.
  rewrite eq14_displayed_as_written by auto. split; [reflexivity|]. intros _ Hp H. apply Hp. auto.
Qed.

(* ws24:eq14 [transposed], refuted.  With W^2_K transposed the display becomes psi(z_T)[z_s = z_T], but
   the model's own induction score w_E(z_T)^T W^2_K Phi_1 w_E(z_s) (query^T W_K key) is 0 for every pair:
   at z_s = z_T with psi(z_T) <> 0 the induction head is gone. *)
Theorem eq14_transposed_refuted :
  (forall V, exists d wE Phi1, orthonormal_ind d V wE Phi1) /\
  forall d V (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat),
    orthonormal_ind d V wE Phi1 ->
    forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
      bilin d (mv d Phi1 (wE s)) (W2K_transposed d V psi wE Phi1) (wE T) = (if Nat.eqb s T then psi T else 0) /\
      bilin d (wE T) (W2K_transposed d V psi wE Phi1) (mv d Phi1 (wE s)) = 0 /\
      (s = T -> psi T <> 0 -> bilin d (wE T) (W2K_transposed d V psi wE Phi1) (mv d Phi1 (wE s)) <> psi T).
Proof.
  split; [exact orthonormal_ind_exists|]. intros d V psi wE Phi1 ON s T Hs HT.
  rewrite eq14_displayed_transposed, eq14_model_transposed by auto.
  split; [reflexivity|split; [reflexivity|]]. intros _ Hp H. apply Hp. auto.
Qed.

(* ws24:eq14 [read-score], proved.  Eq. 14 kept, the score read as query^T W_K key: for every family as
   assumed, every psi and all tokens z_s, z_T: w_E(z_T)^T W^2_K Phi_1 w_E(z_s) = psi(z_T) [z_s = z_T],
   which is the model's own layer-2 score of key s for the query z_T. *)
Theorem eq14_read_score :
  forall d V (psi : nat -> R) (wE : nat -> vec) (Phi1 : mat),
    orthonormal_ind d V wE Phi1 ->
    forall s T, (1 <= s <= V)%nat -> (1 <= T <= V)%nat ->
      bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)) = (if Nat.eqb s T then psi T else 0).
Proof.
  intros d V psi wE Phi1 ON s T Hs HT. apply eq14_model_as_written; auto.
Qed.

(* ================================================================== Proposition 4 *)

(* softmax over the t visible keys 0..t-1: weight of key j *)
Definition softmax (t : nat) (score : nat -> R) (j : nat) : R :=
  exp (score j) / rsum t (fun i => exp (score i)).

(* Prop. 4's layer-1 scores: 1 on the previous token (key p), 0 on the other t - 1 keys *)
Definition prev_scores (p : nat) : nat -> R := fun j => if Nat.eqb j p then 1 else 0.

Lemma rsum_two_values : forall n p a b,
  rsum n (fun i => if Nat.eqb i p then a else b) = if Nat.ltb p n then a + INR (n - 1) * b else INR n * b.
Proof.
  induction n; intros p a b.
  - simpl. lra.
  - change (rsum (S n) (fun i => if Nat.eqb i p then a else b))
      with (rsum n (fun i => if Nat.eqb i p then a else b) + (if Nat.eqb n p then a else b)).
    rewrite IHn. rewrite S_INR.
    destruct (lt_eq_lt_dec p n) as [[Hlt|Heq]|Hgt].
    + replace (Nat.ltb p n) with true by (symmetry; apply Nat.ltb_lt; lia).
      replace (Nat.ltb p (S n)) with true by (symmetry; apply Nat.ltb_lt; lia).
      replace (Nat.eqb n p) with false by (symmetry; apply Nat.eqb_neq; lia).
      replace (S n - 1)%nat with (S (n - 1)) by lia. rewrite S_INR. ring.
    + rewrite <- Heq. rewrite Nat.ltb_irrefl, Nat.eqb_refl.
      replace (Nat.ltb p (S p)) with true by (symmetry; apply Nat.ltb_lt; lia).
      replace (S p - 1)%nat with p by lia. ring.
    + replace (Nat.ltb p n) with false by (symmetry; apply Nat.ltb_ge; lia).
      replace (Nat.ltb p (S n)) with false by (symmetry; apply Nat.ltb_ge; lia).
      replace (Nat.eqb n p) with false by (symmetry; apply Nat.eqb_neq; lia). ring.
Qed.

(* ws24:prop4, proved: for every number t >= 1 of visible keys and every position p < t of the previous
   token, the softmax weight on it is e / (t + e - 1). *)
Theorem prop4 : forall t p, (1 <= t)%nat -> (p < t)%nat ->
  softmax t (prev_scores p) p = exp 1 / (INR t + exp 1 - 1).
Proof.
  intros t p Ht Hp. unfold softmax, prev_scores. rewrite Nat.eqb_refl.
  rewrite (rsum_ext t _ (fun i => if Nat.eqb i p then exp 1 else exp 0))
    by (intros i _; destruct (Nat.eqb i p); reflexivity).
  rewrite rsum_two_values. replace (Nat.ltb p t) with true by (symmetry; apply Nat.ltb_lt; lia).
  rewrite exp_0, minus_INR by lia. simpl (INR 1). f_equal. ring.
Qed.

(* ================================================================== rational instances (Compute) *)

Open Scope Q_scope.

Fixpoint qsum (n : nat) (f : nat -> Q) : Q :=
  match n with O => 0 | S m => qsum m f + f m end.
Definition qtsum (V : nat) (f : nat -> Q) : Q := qsum V (fun k => f (S k)).
Definition qdot (d : nat) (u v : nat -> Q) : Q := qsum d (fun i => u i * v i).
Definition qbilin (d : nat) (u : nat -> Q) (M : nat -> nat -> Q) (v : nat -> Q) : Q :=
  qsum d (fun i => qsum d (fun j => u i * M i j * v j)).
Definition qmv (d : nat) (M : nat -> nat -> Q) (x : nat -> Q) : nat -> Q := fun i => qsum d (fun j => M i j * x j).
Definition qouter_sum (V : nat) (c : nat -> Q) (a b : nat -> nat -> Q) : nat -> nat -> Q :=
  fun i j => qtsum V (fun k => c k * a k i * b k j).
Definition qe (p : nat) : nat -> Q := fun i => if Nat.eqb i p then 1 else 0.

(* Eq. 13 and Eq. 14 over Q, Q = every token (the Appendix C.2 data), on the standard basis:
   w_E(k) = e_(k-1), r_{-1} = e_V (Theorem 2, d = V + 1); Phi_1 w_E(k) = e_(k-1+V) (Eq. 14, d = 2V). *)
Definition qW1K (V : nat) (chi : nat -> Q) : nat -> nat -> Q := qouter_sum V chi (fun k => qe (k - 1)) (fun _ => qe V).
Definition qW1K_transposed (V : nat) (chi : nat -> Q) : nat -> nat -> Q :=
  qouter_sum V chi (fun _ => qe V) (fun k => qe (k - 1)).
Definition qPhi1 (V : nat) : nat -> nat -> Q := fun i j => if Nat.eqb i (j + V) then 1 else 0.
Definition qW2K (V : nat) (psi : nat -> Q) : nat -> nat -> Q :=
  qouter_sum V psi (fun k => qe (k - 1)) (fun k => qmv (2 * V) (qPhi1 V) (qe (k - 1))).
Definition qW2K_transposed (V : nat) (psi : nat -> Q) : nat -> nat -> Q :=
  qouter_sum V psi (fun k => qmv (2 * V) (qPhi1 V) (qe (k - 1))) (fun k => qe (k - 1)).

Definition qmatrix (n : nat) (M : nat -> nat -> Q) : list (list Q) :=
  map (fun i => map (fun j => M i j) (seq 0 n)) (seq 0 n).
Definition qtokens (V : nat) : list nat := seq 1 V.
(* the displayed score r_{-1}^T W w_E(v) and the model's score w_E(v)^T W r_{-1}, v = 1..V *)
Definition q_displayed (V : nat) (W : nat -> nat -> Q) : list Q :=
  map (fun v => qbilin (S V) (qe V) W (qe (v - 1))) (qtokens V).
Definition q_model (V : nat) (W : nat -> nat -> Q) : list Q :=
  map (fun v => qbilin (S V) (qe (v - 1)) W (qe V)) (qtokens V).
(* Eq. 14: rows z_T = 1..V, columns z_s = 1..V *)
Definition q_eq14_displayed (V : nat) (W : nat -> nat -> Q) : list (list Q) :=
  map (fun T => map (fun s => qbilin (2 * V) (qmv (2 * V) (qPhi1 V) (qe (s - 1))) W (qe (T - 1))) (qtokens V)) (qtokens V).
Definition q_eq14_model (V : nat) (W : nat -> nat -> Q) : list (list Q) :=
  map (fun T => map (fun s => qbilin (2 * V) (qe (T - 1)) W (qmv (2 * V) (qPhi1 V) (qe (s - 1)))) (qtokens V)) (qtokens V).
(* Prop. 4 with the exponentials as inputs: ex(j) = exp(score j) *)
Definition qsoftmax (t : nat) (ex : nat -> Q) (j : nat) : Q := ex j / qsum t ex.
Definition qprev_weight (t : nat) (e1 : Q) : Q := qsoftmax t (fun j => if Nat.eqb j (t - 1) then e1 else 1) (t - 1).

(* the rational definitions are the real ones, read through Q2R *)
Lemma Q2R_qsum : forall n f, Q2R (qsum n f) = rsum n (fun i => Q2R (f i)).
Proof.
  induction n; intros f; simpl. - unfold Q2R; simpl; lra. - rewrite Q2R_plus, IHn. reflexivity.
Qed.

Lemma Q2R_qouter_sum : forall V c a b i j,
  Q2R (qouter_sum V c a b i j) =
  outer_sum V (fun k => Q2R (c k)) (fun k x => Q2R (a k x)) (fun k x => Q2R (b k x)) i j.
Proof.
  intros. unfold qouter_sum, outer_sum, qtsum, tsum. rewrite Q2R_qsum. apply rsum_ext. intros.
  rewrite !Q2R_mult. reflexivity.
Qed.

Lemma Q2R_qbilin : forall d u M v,
  Q2R (qbilin d u M v) = bilin d (fun i => Q2R (u i)) (fun i j => Q2R (M i j)) (fun i => Q2R (v i)).
Proof.
  intros. unfold qbilin, bilin. rewrite Q2R_qsum. apply rsum_ext. intros.
  rewrite Q2R_qsum. apply rsum_ext. intros. rewrite !Q2R_mult. reflexivity.
Qed.

Lemma Q2R_qe : forall p i, Q2R (qe p i) = e p i.
Proof. intros. unfold qe, e. destruct (Nat.eqb i p); unfold Q2R; simpl; lra. Qed.

(* qW1K is W1K (Eq. 13) on the standard-basis family, entry by entry *)
Lemma qW1K_is_W1K : forall V chi i j,
  Q2R (qW1K V chi i j) = W1K V (fun _ => true) (fun k => Q2R (chi k)) (fun k => e (k - 1)) (e V) i j.
Proof.
  intros. unfold qW1K, W1K. rewrite Q2R_qouter_sum. unfold outer_sum. apply tsum_ext. intros.
  rewrite !Q2R_qe. reflexivity.
Qed.

Lemma qW1K_transposed_is_W1K_transposed : forall V chi i j,
  Q2R (qW1K_transposed V chi i j) =
  W1K_transposed V (fun _ => true) (fun k => Q2R (chi k)) (fun k => e (k - 1)) (e V) i j.
Proof.
  intros. unfold qW1K_transposed, W1K_transposed. rewrite Q2R_qouter_sum. unfold outer_sum. apply tsum_ext.
  intros. rewrite !Q2R_qe. reflexivity.
Qed.
