(* pr26 -- "A Positional Realizability Theory of Length Generalization in Single-Head Attention"
   (TMLR 2026): Proposition 1, Theorem 1, Theorem 2.

   The paper's full text was not reachable: the feature maps and tasks are those of
   verify.constructions.pe (reconstructed from a summary), so no equation number can be cited.
   Positions are 0-indexed as in the code (paper rows = code rows + 1).  A positional-only head has
   logits  logit(i, j) = phi(i)^T W phi(j)  (absolute features phi) or  k(i - j)  (relative kernel k);
   row i attends to its target t iff t is the strict maximiser of the logits over the causal window
   j = 0..i (a tie is a failure: pe.attends). *)

From Coq Require Import Reals Lra Lia List QArith Qreals Qminmax.
Import ListNotations.
Open Scope R_scope.

(* ------------------------------------------------------------------ finite sums, features *)

Fixpoint rsum (n : nat) (f : nat -> R) : R :=
  match n with O => 0 | S m => rsum m f + f m end.

Lemma rsum_ext : forall n f g, (forall i, (i < n)%nat -> f i = g i) -> rsum n f = rsum n g.
Proof. induction n; intros f g H; simpl; [reflexivity|]. rewrite (IHn f g), (H n); auto; lia. Qed.

(* u^T W v for feature vectors given as lists (W : nat -> nat -> R, only its r x r corner is read) *)
Definition bil (W : nat -> nat -> R) (u v : list R) : R :=
  rsum (length u) (fun a => rsum (length v) (fun b => nth a u 0 * W a b * nth b v 0)).

(* absolute head: logit(i, j) = phi(i)^T W phi(j) *)
Definition logit (phi : nat -> list R) (W : nat -> nat -> R) (i j : nat) : R := bil W (phi i) (phi j).
(* relative head: logit(i, j) = k(i - j) *)
Definition logit_rel (k : nat -> R) (i j : nat) : R := k (i - j)%nat.

(* row i (logits f over keys j = 0..i) has the strict masked argmax t *)
Definition strict_masked_argmax (f : nat -> R) (i t : nat) : Prop :=
  (t <= i)%nat /\ forall j, (j <= i)%nat -> j <> t -> f j < f t.

Lemma strict_masked_argmax_unique : forall f i t1 t2,
  strict_masked_argmax f i t1 -> strict_masked_argmax f i t2 -> t1 = t2.
Proof.
  intros f i t1 t2 [H1 A1] [H2 A2]. destruct (Nat.eq_dec t1 t2) as [|Hne]; [assumption|].
  pose proof (A1 t2 H2 (not_eq_sym Hne)). pose proof (A2 t1 H1 Hne). lra.
Qed.

(* prev: rows i = 1..n-1 target i - 1 (pe.TASKS["prev"]; paper rows 2..n) *)
Definition realizes_prev (n : nat) (row : nat -> nat -> R) : Prop :=
  forall i, (1 <= i < n)%nat -> strict_masked_argmax (row i) i (i - 1).

(* ================================================================== Proposition 1 *)

(* pr26 Prop. 1: the affine feature phi(i) = [1, i] (pe.FAMILIES["affine"]) *)
Definition phi_aff (i : nat) : list R := [1; INR i].

(* the core lemma: a row that is affine in j on the window 0..i has no strict interior maximiser *)
Lemma affine_no_strict_interior_max : forall (f : nat -> R) (a b : R) (i j : nat),
  (forall x, (x <= i)%nat -> f x = a + b * INR x) -> (0 < j < i)%nat ->
  f j <= Rmax (f 0%nat) (f i).
Proof.
  intros f a b i j Hf Hj. rewrite !Hf by lia.
  assert (H0 : 0 <= INR j) by apply pos_INR.
  assert (Hji : INR j <= INR i) by (apply le_INR; lia).
  simpl (INR 0). destruct (Rle_dec 0 b).
  - apply Rle_trans with (a + b * INR i); [nra|apply Rmax_r].
  - apply Rle_trans with (a + b * 0); [nra|apply Rmax_l].
Qed.

Lemma affine_not_strict_argmax : forall (f : nat -> R) (a b : R) (i j : nat),
  (forall x, (x <= i)%nat -> f x = a + b * INR x) -> (0 < j < i)%nat ->
  ~ strict_masked_argmax f i j.
Proof.
  intros f a b i j Hf Hj [_ Hs].
  pose proof (affine_no_strict_interior_max f a b i j Hf Hj) as Hm.
  pose proof (Hs 0%nat ltac:(lia) ltac:(lia)) as H0. pose proof (Hs i ltac:(lia) ltac:(lia)) as Hi.
  unfold Rmax in Hm. destruct (Rle_dec (f 0%nat) (f i)); lra.
Qed.

(* every logit row of phi(i) = [1, i] is affine in the key j, for every W *)
Lemma logit_aff_affine : forall W i, exists a b, forall j, logit phi_aff W i j = a + b * INR j.
Proof.
  intros W i. exists (W 0%nat 0%nat + INR i * W 1%nat 0%nat), (W 0%nat 1%nat + INR i * W 1%nat 1%nat).
  intro j. unfold logit, bil, phi_aff. simpl. ring.
Qed.

(* pr26:prop1, rows: for every W, no row i >= 2 (paper row >= 3) has its interior target i - 1 as
   strict masked argmax. *)
Theorem prop1_rows : forall (W : nat -> nat -> R) i, (2 <= i)%nat ->
  ~ strict_masked_argmax (logit phi_aff W i) i (i - 1).
Proof.
  intros W i Hi. destruct (logit_aff_affine W i) as [a [b Hab]].
  apply (affine_not_strict_argmax _ a b); [intros; apply Hab|lia].
Qed.

(* pr26:prop1, the paper's statement: with phi(i) = [1, i], prev is unrealizable at every length
   n >= 3 for every W. *)
Theorem prop1 : forall n (W : nat -> nat -> R), (3 <= n)%nat -> ~ realizes_prev n (logit phi_aff W).
Proof.
  intros n W Hn H. apply (prop1_rows W 2%nat); [lia|]. apply H. lia.
Qed.

(* ALiBi: the relative kernel k(delta) = a - m delta (pe.FAMILIES["alibi"], any a, m) *)
Definition alibi (a m : R) : nat -> R := fun delta => a - m * INR delta.

Theorem prop1_alibi_rows : forall a m i, (2 <= i)%nat ->
  ~ strict_masked_argmax (logit_rel (alibi a m) i) i (i - 1).
Proof.
  intros a m i Hi. apply (affine_not_strict_argmax _ (a - m * INR i) m); [|lia].
  intros x Hx. unfold logit_rel, alibi. rewrite minus_INR by lia. ring.
Qed.

(* pr26:prop1 for ALiBi: for every a, m, prev is unrealizable at every n >= 3 *)
Theorem prop1_alibi : forall n a m, (3 <= n)%nat -> ~ realizes_prev n (logit_rel (alibi a m)).
Proof.
  intros n a m Hn H. apply (prop1_alibi_rows a m 2%nat); [lia|]. apply H. lia.
Qed.

(* canonical ALiBi (m > 0) has alpha_L = 0 on prev: no prev row at all (row 1 included) is hit *)
Theorem alibi_canonical_prev_alpha0 : forall a m i, 0 < m -> (1 <= i)%nat ->
  ~ strict_masked_argmax (logit_rel (alibi a m) i) i (i - 1).
Proof.
  intros a m i Hm Hi [_ Hs]. pose proof (Hs i ltac:(lia) ltac:(lia)) as H.
  unfold logit_rel, alibi in H. replace (i - i)%nat with 0%nat in H by lia.
  replace (i - (i - 1))%nat with 1%nat in H by lia. simpl in H. lra.
Qed.

(* the positive control: with quadratic features [1, i, i^2] prev IS realizable at every n
   (logit(i, j) = -(j - (i - 1))^2), so the affinity of phi is what Prop. 1 uses *)
Definition phi_quad (i : nat) : list R := [1; INR i; INR i * INR i].
Definition W_quad_prev : nat -> nat -> R := fun a b =>
  match a, b with
  | O, O => -1 | 1%nat, O => 2 | 2%nat, O => -1 | O, 1%nat => -2 | 1%nat, 1%nat => 2 | O, 2%nat => -1 | _, _ => 0
  end.

Theorem prop1_quadratic_control : forall n, realizes_prev n (logit phi_quad W_quad_prev).
Proof.
  intros n i Hi. split; [lia|]. intros j Hj Hne.
  assert (Hq : forall x, logit phi_quad W_quad_prev i x = - (INR x - (INR i - 1)) ^ 2).
  { intro x. unfold logit, bil, phi_quad, W_quad_prev. simpl. ring. }
  rewrite !Hq. rewrite minus_INR by lia. simpl (INR 1).
  assert (INR j <> INR i - 1).
  { intro E. apply Hne. apply INR_eq. rewrite minus_INR by lia. simpl. lra. }
  assert (Hd : INR j - (INR i - 1) <> 0) by lra.
  assert (0 < (INR j - (INR i - 1)) ^ 2) by (simpl; rewrite Rmult_1_r; apply Rsqr_pos_lt; exact Hd).
  lra.
Qed.

(* pr26:prop1, as catalogued: (i) the core lemma: a row affine in j on the window 0..i has no strict
   interior maximiser; (ii) with phi(i) = [1, i], for every W no row i >= 2 (paper row >= 3) has its target
   i - 1 as strict masked argmax, so prev is unrealizable at every n >= 3 for every W; (iii) so it is for
   ALiBi a - m delta, every a, m; (iv) canonical ALiBi (m > 0) hits no prev row at all (alpha_L = 0). *)
Theorem prop1_statement :
  (forall (f : nat -> R) (a b : R) (i j : nat),
     (forall x, (x <= i)%nat -> f x = a + b * INR x) -> (0 < j < i)%nat -> ~ strict_masked_argmax f i j) /\
  (forall (W : nat -> nat -> R) i, (2 <= i)%nat -> ~ strict_masked_argmax (logit phi_aff W i) i (i - 1)) /\
  (forall n (W : nat -> nat -> R), (3 <= n)%nat -> ~ realizes_prev n (logit phi_aff W)) /\
  (forall n a m, (3 <= n)%nat -> ~ realizes_prev n (logit_rel (alibi a m))) /\
  (forall a m i, 0 < m -> (1 <= i)%nat -> ~ strict_masked_argmax (logit_rel (alibi a m) i) i (i - 1)).
Proof.
  split; [exact affine_not_strict_argmax|]. split; [exact prop1_rows|].
  split; [exact prop1|split; [exact prop1_alibi|exact alibi_canonical_prev_alpha0]].
Qed.

(* ================================================================== Theorem 1 *)

(* Phi_L: the L x r feature matrix, row i = phi(i) for i < L.  phi is indexed by the position only:
   it never takes L (pe.py: no feature depends on the evaluation length). *)
Definition Phi (L : nat) (phi : nat -> list R) (i a : nat) : R := if Nat.ltb i L then nth a (phi i) 0 else 0.

(* P_L(W) = Phi_L W Phi_L^T (r = the feature dimension) *)
Definition PL (L r : nat) (phi : nat -> list R) (W : nat -> nat -> R) (i j : nat) : R :=
  rsum r (fun a => rsum r (fun b => Phi L phi i a * W a b * Phi L phi j b)).

(* a relative head's logit matrix at length L: k(i - j) *)
Definition PL_rel (L : nat) (k : nat -> R) (i j : nat) : R :=
  if Nat.ltb i L && Nat.ltb j L then k (i - j)%nat else 0.

(* the causal mask: row i sees the keys j <= i *)
Definition masked (P : nat -> nat -> R) (i j : nat) : option R := if Nat.leb j i then Some (P i j) else None.

Lemma PL_is_logit : forall L r phi W i j, (i < L)%nat -> (j < L)%nat ->
  length (phi i) = r -> length (phi j) = r -> PL L r phi W i j = logit phi W i j.
Proof.
  intros L r phi W i j Hi Hj Li Lj. unfold PL, logit, bil, Phi. rewrite Li, Lj.
  replace (Nat.ltb i L) with true by (symmetry; apply Nat.ltb_lt; lia).
  replace (Nat.ltb j L) with true by (symmetry; apply Nat.ltb_lt; lia). reflexivity.
Qed.

Lemma Phi_prefix : forall L0 L phi i a, (L0 <= L)%nat -> (i < L0)%nat -> Phi L phi i a = Phi L0 phi i a.
Proof.
  intros. unfold Phi. replace (Nat.ltb i L) with true by (symmetry; apply Nat.ltb_lt; lia).
  replace (Nat.ltb i L0) with true by (symmetry; apply Nat.ltb_lt; lia). reflexivity.
Qed.

(* the block identity: the top-left L0 x L0 block of P_L(W) is P_L0(W) *)
Lemma PL_block : forall r phi W L0 L, (L0 <= L)%nat -> forall i j, (i < L0)%nat -> (j < L0)%nat ->
  PL L r phi W i j = PL L0 r phi W i j.
Proof.
  intros. unfold PL. apply rsum_ext. intros. apply rsum_ext. intros.
  rewrite (Phi_prefix L0 L phi i), (Phi_prefix L0 L phi j) by lia. reflexivity.
Qed.

Lemma PL_rel_block : forall k L0 L, (L0 <= L)%nat -> forall i j, (i < L0)%nat -> (j < L0)%nat ->
  PL_rel L k i j = PL_rel L0 k i j.
Proof.
  intros. unfold PL_rel. replace (Nat.ltb i L) with true by (symmetry; apply Nat.ltb_lt; lia).
  replace (Nat.ltb j L) with true by (symmetry; apply Nat.ltb_lt; lia).
  replace (Nat.ltb i L0) with true by (symmetry; apply Nat.ltb_lt; lia).
  replace (Nat.ltb j L0) with true by (symmetry; apply Nat.ltb_lt; lia). reflexivity.
Qed.

(* a row that has margin >= g on its target t over every other visible key *)
Definition row_margin_ge (P : nat -> nat -> R) (tgt : nat -> nat) (i : nat) (g : R) : Prop :=
  (tgt i <= i)%nat /\ forall j, (j <= i)%nat -> j <> tgt i -> P i (tgt i) - P i j >= g.
(* rows lo <= i < hi all have margin >= g *)
Definition solves_rows (P : nat -> nat -> R) (tgt : nat -> nat) (lo hi : nat) (g : R) : Prop :=
  forall i, (lo <= i < hi)%nat -> row_margin_ge P tgt i g.

Lemma margin_pos_attends : forall P tgt i g, row_margin_ge P tgt i g -> 0 < g ->
  strict_masked_argmax (P i) i (tgt i).
Proof. intros P tgt i g [Ht Hm] Hg. split; auto. intros j Hj Hne. pose proof (Hm j Hj Hne). lra. Qed.

(* the margin statement for any length-indexed logit matrices P_L with the block identity *)
Lemma margin_transfer : forall (P : nat -> nat -> nat -> R),
  (forall L0 L, (L0 <= L)%nat -> forall i j, (i < L0)%nat -> (j < L0)%nat -> P L i j = P L0 i j) ->
  forall L0 L i0 tgt g0 gL, (L0 <= L)%nat ->
  solves_rows (P L0) tgt i0 L0 g0 -> solves_rows (P L) tgt (Nat.max i0 L0) L gL ->
  solves_rows (P L) tgt i0 L (Rmin g0 gL).
Proof.
  intros P Hblk L0 L i0 tgt g0 gL HL H0 HN i Hi. destruct (Nat.lt_ge_cases i L0) as [Hlt|Hge].
  - destruct (H0 i ltac:(lia)) as [Ht Hm]. split; auto. intros j Hj Hne.
    rewrite (Hblk L0 L HL i (tgt i)), (Hblk L0 L HL i j) by lia.
    pose proof (Hm j Hj Hne). pose proof (Rmin_l g0 gL). lra.
  - destruct (HN i ltac:(lia)) as [Ht Hm]. split; auto. intros j Hj Hne.
    pose proof (Hm j Hj Hne). pose proof (Rmin_r g0 gL). lra.
Qed.

(* pr26:theorem1.  For every position-indexed feature map phi (independent of L), every W, r and
   L0 <= L: (i) the top-left L0 x L0 block of P_L(W) = Phi_L W Phi_L^T is P_L0(W), and every masked row
   i < L0 is the same at both lengths; (ii) for every length-stable target t (prev, skip-K,
   attend-first) and first query row i0: if W solves the rows [i0, L0) at L0 with margin g0 and the new
   rows [max(i0, L0), L) at L with margin gL, it solves every row [i0, L) at L with margin min(g0, gL),
   so with g0, gL > 0 every row attends to its target; (iii) (i) and (ii) for every relative kernel k. *)
Theorem theorem1 :
  (forall r phi W L0 L, (L0 <= L)%nat ->
     (forall i j, (i < L0)%nat -> (j < L0)%nat -> PL L r phi W i j = PL L0 r phi W i j) /\
     (forall i j, (i < L0)%nat -> masked (PL L r phi W) i j = masked (PL L0 r phi W) i j)) /\
  (forall r phi W L0 L i0 tgt g0 gL, (L0 <= L)%nat ->
     solves_rows (PL L0 r phi W) tgt i0 L0 g0 -> solves_rows (PL L r phi W) tgt (Nat.max i0 L0) L gL ->
     solves_rows (PL L r phi W) tgt i0 L (Rmin g0 gL) /\
     (0 < g0 -> 0 < gL -> forall i, (i0 <= i < L)%nat -> strict_masked_argmax (PL L r phi W i) i (tgt i))) /\
  (forall k L0 L, (L0 <= L)%nat ->
     (forall i j, (i < L0)%nat -> masked (PL_rel L k) i j = masked (PL_rel L0 k) i j) /\
     forall i0 tgt g0 gL,
     solves_rows (PL_rel L0 k) tgt i0 L0 g0 -> solves_rows (PL_rel L k) tgt (Nat.max i0 L0) L gL ->
     solves_rows (PL_rel L k) tgt i0 L (Rmin g0 gL)).
Proof.
  split; [|split].
  - intros r phi W L0 L HL. split; [exact (PL_block r phi W L0 L HL)|].
    intros i j Hi. unfold masked. destruct (Nat.leb_spec j i); [|reflexivity].
    rewrite (PL_block r phi W L0 L HL i j) by lia. reflexivity.
  - intros r phi W L0 L i0 tgt g0 gL HL H0 HN.
    pose proof (margin_transfer (fun L => PL L r phi W) (fun L0' L' H' => PL_block r phi W L0' L' H')
                  L0 L i0 tgt g0 gL HL H0 HN) as Hs.
    split; [exact Hs|]. intros Hg0 HgL i Hi. apply (margin_pos_attends _ _ _ (Rmin g0 gL)); [apply Hs; auto|].
    unfold Rmin. destruct (Rle_dec g0 gL); lra.
  - intros k L0 L HL. split.
    + intros i j Hi. unfold masked. destruct (Nat.leb_spec j i); [|reflexivity].
      rewrite (PL_rel_block k L0 L HL i j) by lia. reflexivity.
    + intros i0 tgt g0 gL.
      exact (margin_transfer (fun L => PL_rel L k) (fun L0' L' H' => PL_rel_block k L0' L' H') L0 L i0 tgt g0 gL HL).
Qed.

(* ================================================================== Theorem 2 *)

(* condition (ii): k has a strict unique global maximiser delta_star *)
Definition strict_unique_max (k : nat -> R) (ds : nat) : Prop := forall d, d <> ds -> k d < k ds.

(* the deep-row lemma: every row i >= delta_star has strict masked argmax j = i - delta_star *)
Lemma deep_row : forall k ds, strict_unique_max k ds ->
  forall i, (ds <= i)%nat -> strict_masked_argmax (logit_rel k i) i (i - ds).
Proof.
  intros k ds Hk i Hi. split; [lia|]. intros j Hj Hne. unfold logit_rel.
  replace (i - (i - ds))%nat with ds by lia. apply Hk. lia.
Qed.

Lemma deep_row_hit_iff : forall k ds, strict_unique_max k ds -> forall i t, (ds <= i)%nat ->
  (strict_masked_argmax (logit_rel k i) i t <-> t = (i - ds)%nat).
Proof.
  intros k ds Hk i t Hi. split.
  - intro H. apply (strict_masked_argmax_unique (logit_rel k i) i); auto. apply deep_row; auto.
  - intros ->. apply deep_row; auto.
Qed.

(* a kernel peaked at K: prev (K = 1) and skip-K are realized at every length *)
Definition peak (K : nat) : nat -> R := fun d => if Nat.eqb d K then 1 else 0.

Lemma peak_strict_unique_max : forall K, strict_unique_max (peak K) K.
Proof.
  intros K d Hd. unfold peak. rewrite Nat.eqb_refl. replace (Nat.eqb d K) with false by (symmetry; apply Nat.eqb_neq; auto).
  lra.
Qed.

(* ceil(L/2) (pe.ceil_half) *)
Definition ceil_half (L : nat) : nat := ((L + 1) / 2)%nat.

Lemma ceil_half_spec : forall L, (2 * ceil_half L = L \/ 2 * ceil_half L = L + 1)%nat.
Proof.
  intro L. unfold ceil_half. pose proof (Nat.div_mod (L + 1) 2 ltac:(lia)).
  pose proof (Nat.mod_upper_bound (L + 1) 2 ltac:(lia)). lia.
Qed.

(* a decision procedure for the strict masked argmax (Rlt_dec: the reals' order is decidable) *)
Definition Rltb (x y : R) : bool := if Rlt_dec x y then true else false.
Definition hit_b (f : nat -> R) (i t : nat) : bool :=
  Nat.leb t i && forallb (fun j => Nat.eqb j t || Rltb (f j) (f t)) (seq 0 (S i)).

Lemma hit_b_spec : forall f i t, hit_b f i t = true <-> strict_masked_argmax f i t.
Proof.
  intros f i t. unfold hit_b, strict_masked_argmax. rewrite andb_true_iff, Nat.leb_le, forallb_forall.
  split.
  - intros [Ht H]. split; auto. intros j Hj Hne. specialize (H j ltac:(apply in_seq; lia)).
    apply orb_true_iff in H. destruct H as [H|H]; [apply Nat.eqb_eq in H; contradiction|].
    unfold Rltb in H. destruct (Rlt_dec (f j) (f t)); [assumption|discriminate].
  - intros [Ht H]. split; auto. intros j Hj. apply in_seq in Hj. apply orb_true_iff.
    destruct (Nat.eq_dec j t) as [->|Hne]; [left; apply Nat.eqb_refl|right].
    unfold Rltb. destruct (Rlt_dec (f j) (f t)); [reflexivity|]. exfalso. apply n, H; lia.
Qed.

Lemma filter_at_most_one : forall (p : nat -> bool) l, NoDup l ->
  (forall x y, In x l -> In y l -> p x = true -> p y = true -> x = y) -> (length (filter p l) <= 1)%nat.
Proof.
  intros p l. induction l as [|a l IH]; intros Hnd Hu; simpl; [lia|]. inversion Hnd; subst.
  destruct (p a) eqn:Ha.
  - assert (Hnil : filter p l = []).
    { destruct (filter p l) as [|y ys] eqn:Hf; [reflexivity|]. exfalso.
      assert (Hy : In y (filter p l)) by (rewrite Hf; left; reflexivity).
      apply filter_In in Hy. destruct Hy as [Hyl Hpy].
      assert (a = y) by (apply Hu; simpl; auto). subst. contradiction. }
    rewrite Hnil. simpl. lia.
  - apply IH; auto. intros x y Hx Hy. apply Hu; simpl; auto.
Qed.

Lemma filter_none : forall (p : nat -> bool) l, (forall x, In x l -> p x = false) -> length (filter p l) = 0%nat.
Proof.
  intros p l H. induction l as [|a l IH]; simpl; [reflexivity|].
  rewrite (H a) by (left; reflexivity). apply IH. intros. apply H. right. auto.
Qed.

(* the query rows [ceil(L/2), L) of copy and reverse, and the rows a kernel hits *)
Definition half_rows (L : nat) : list nat := seq (ceil_half L) (L - ceil_half L).
(* reverse: row i targets L - 1 - i *)
Definition reverse_hits (k : nat -> R) (L : nat) : nat :=
  length (filter (fun i => hit_b (logit_rel k i) i (L - 1 - i)) (half_rows L)).
(* copy: row i targets i - ceil(L/2) *)
Definition copy_hits (k : nat -> R) (L : nat) : nat :=
  length (filter (fun i => hit_b (logit_rel k i) i (i - ceil_half L)) (half_rows L)).

Lemma reverse_deep_unique : forall k ds, strict_unique_max k ds -> forall L i1 i2,
  (ds <= i1)%nat -> (ds <= i2)%nat -> (ceil_half L <= i1 < L)%nat -> (ceil_half L <= i2 < L)%nat ->
  strict_masked_argmax (logit_rel k i1) i1 (L - 1 - i1) -> strict_masked_argmax (logit_rel k i2) i2 (L - 1 - i2) ->
  i1 = i2.
Proof.
  intros k ds Hk L i1 i2 H1 H2 R1 R2 A1 A2.
  apply (deep_row_hit_iff k ds Hk i1) in A1; auto. apply (deep_row_hit_iff k ds Hk i2) in A2; auto. lia.
Qed.

Lemma copy_deep_offset : forall k ds, strict_unique_max k ds -> forall L i,
  (ds <= i)%nat -> (ceil_half L <= i < L)%nat ->
  strict_masked_argmax (logit_rel k i) i (i - ceil_half L) -> ceil_half L = ds.
Proof.
  intros k ds Hk L i Hd Hr A. apply (deep_row_hit_iff k ds Hk i) in A; auto. lia.
Qed.

(* pr26:theorem2.  For every relative kernel k : nat -> R with a strict unique global maximiser delta_star:
   (i) every row i >= delta_star has strict masked argmax j = i - delta_star (the deep-row lemma), so a kernel
       peaked at K (one exists for every K) realizes prev (K = 1) and skip-K on every row i >= K at every
       length;
   (ii) reverse (rows [ceil(L/2), L), target L - 1 - i): at most one deep row of a length is hit, and at
       every L >= max(2, 2 delta_star) at most 1 of the floor(L/2) query rows is hit, so the fraction missed
       is >= 1 - 1/floor(L/2);
   (iii) copy (offset ceil(L/2)): a hit deep row forces ceil(L/2) = delta_star, so of two lengths with different
       ceil(L/2) at most one has a deep row hit, and at every L > 2 delta_star no query row is hit (fraction
       missed 1). *)
Theorem theorem2 :
  (forall K, strict_unique_max (peak K) K) /\
  forall (k : nat -> R) ds, strict_unique_max k ds ->
    (forall i, (ds <= i)%nat -> strict_masked_argmax (logit_rel k i) i (i - ds)) /\
    (forall L i1 i2, (ds <= i1)%nat -> (ds <= i2)%nat -> (ceil_half L <= i1 < L)%nat -> (ceil_half L <= i2 < L)%nat ->
       strict_masked_argmax (logit_rel k i1) i1 (L - 1 - i1) ->
       strict_masked_argmax (logit_rel k i2) i2 (L - 1 - i2) -> i1 = i2) /\
    (forall L, (2 <= L)%nat -> (2 * ds <= L)%nat ->
       (reverse_hits k L <= 1)%nat /\
       INR (L - ceil_half L - reverse_hits k L) / INR (L - ceil_half L) >= 1 - 1 / INR (L - ceil_half L)) /\
    (forall L1 L2, ceil_half L1 <> ceil_half L2 ->
       ~ ((exists i1, (ds <= i1)%nat /\ (ceil_half L1 <= i1 < L1)%nat /\
                      strict_masked_argmax (logit_rel k i1) i1 (i1 - ceil_half L1)) /\
          (exists i2, (ds <= i2)%nat /\ (ceil_half L2 <= i2 < L2)%nat /\
                      strict_masked_argmax (logit_rel k i2) i2 (i2 - ceil_half L2)))) /\
    (forall L, (2 <= L)%nat -> (2 * ds < L)%nat -> copy_hits k L = 0%nat /\ INR (L - ceil_half L - copy_hits k L) / INR (L - ceil_half L) = 1).
Proof.
  split; [exact peak_strict_unique_max|]. intros k ds Hk.
  split; [apply deep_row; auto|]. split; [apply reverse_deep_unique; auto|]. split; [|split].
  - intros L HL2 HL. pose proof (ceil_half_spec L) as Hc.
    assert (Hh : (reverse_hits k L <= 1)%nat).
    { unfold reverse_hits, half_rows. apply filter_at_most_one; [apply seq_NoDup|].
      intros x y Hx Hy Px Py. apply in_seq in Hx. apply in_seq in Hy.
      apply hit_b_spec in Px. apply hit_b_spec in Py.
      apply (reverse_deep_unique k ds Hk L x y); auto; lia. }
    split; [exact Hh|].
    assert (Hn : (1 <= L - ceil_half L)%nat) by lia.
    assert (Hpos : 0 < INR (L - ceil_half L)) by (apply lt_0_INR; lia).
    assert (Hh1 : INR (reverse_hits k L) <= 1) by (replace 1 with (INR 1) by reflexivity; apply le_INR; auto).
    rewrite minus_INR by lia.
    replace ((INR (L - ceil_half L) - INR (reverse_hits k L)) / INR (L - ceil_half L))
      with (1 - INR (reverse_hits k L) / INR (L - ceil_half L)) by (field; lra).
    assert (INR (reverse_hits k L) / INR (L - ceil_half L) <= 1 / INR (L - ceil_half L)).
    { unfold Rdiv. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat; lra|lra]. }
    lra.
  - intros L1 L2 Hne [[i1 [H1 [R1 A1]]] [i2 [H2 [R2 A2]]]]. apply Hne.
    rewrite (copy_deep_offset k ds Hk L1 i1), (copy_deep_offset k ds Hk L2 i2); auto.
  - intros L HL2 HL. pose proof (ceil_half_spec L) as Hc.
    assert (H0 : copy_hits k L = 0%nat).
    { unfold copy_hits, half_rows. apply filter_none. intros x Hx. apply in_seq in Hx.
      destruct (hit_b (logit_rel k x) x (x - ceil_half L)) eqn:Hb; [|reflexivity].
      apply hit_b_spec in Hb. apply (copy_deep_offset k ds Hk L x) in Hb; lia. }
    split; [exact H0|]. rewrite H0, Nat.sub_0_r.
    assert (Hpos : 0 < INR (L - ceil_half L)) by (apply lt_0_INR; lia).
    field. lra.
Qed.

(* ================================================================== rational instances (Compute) *)

Open Scope Q_scope.

Fixpoint qsum (n : nat) (f : nat -> Q) : Q :=
  match n with O => 0 | S m => qsum m f + f m end.
Definition qbil (W : nat -> nat -> Q) (u v : list Q) : Q :=
  qsum (length u) (fun a => qsum (length v) (fun b => nth a u 0 * W a b * nth b v 0)).
Definition qnat (i : nat) : Q := inject_Z (Z.of_nat i).
Definition qphi_aff (i : nat) : list Q := [1; qnat i].
Definition qlogit (phi : nat -> list Q) (W : nat -> nat -> Q) (i j : nat) : Q := qbil W (phi i) (phi j).
Definition qalibi (a m : Q) (delta : nat) : Q := a - m * qnat delta.
Definition qlogit_rel (k : nat -> Q) (i j : nat) : Q := k (i - j)%nat.
Definition qPhi (L : nat) (phi : nat -> list Q) (i a : nat) : Q := if Nat.ltb i L then nth a (phi i) 0 else 0.
Definition qPL (L r : nat) (phi : nat -> list Q) (W : nat -> nat -> Q) (i j : nat) : Q :=
  qsum r (fun a => qsum r (fun b => qPhi L phi i a * W a b * qPhi L phi j b)).
(* W from its rows, as the Python constructions hold it (list of rows) *)
Definition qW (rows : list (list Q)) : nat -> nat -> Q := fun a b => nth b (nth a rows []) 0.
(* the causal-masked rows of an L x L logit matrix: row i = [P(i, 0), ..., P(i, i)] *)
Definition qmasked_rows (L : nat) (P : nat -> nat -> Q) : list (list Q) :=
  map (fun i => map (fun j => P i j) (seq 0 (S i))) (seq 0 L).
(* pe.exact_row_margin: logit(i, t) - max_{j <= i, j <> t} logit(i, j) (None when t is the only key) *)
Definition qrow_margin (row : nat -> Q) (i t : nat) : option Q :=
  match filter (fun j => negb (Nat.eqb j t)) (seq 0 (S i)) with
  | [] => None
  | j0 :: js => Some (row t - fold_left (fun acc j => Qmax acc (row j)) js (row j0))
  end.

Lemma Q2R_qsum : forall n f, Q2R (qsum n f) = rsum n (fun i => Q2R (f i)).
Proof.
  induction n; intros f; simpl. - unfold Q2R; simpl; lra. - rewrite Q2R_plus, IHn. reflexivity.
Qed.

Lemma Q2R_qnat : forall i, Q2R (qnat i) = INR i.
Proof. intro i. unfold Q2R, qnat. simpl. rewrite INR_IZR_INZ. field. Qed.

Lemma Q2R_1 : Q2R 1 = 1%R.
Proof. unfold Q2R. simpl. field. Qed.

(* the rational affine head is the real one, read through Q2R *)
Lemma qlogit_aff_is_logit : forall W i j,
  Q2R (qlogit qphi_aff W i j) = logit phi_aff (fun a b => Q2R (W a b)) i j.
Proof.
  intros. unfold qlogit, qbil, logit, bil, qphi_aff, phi_aff. simpl length.
  rewrite Q2R_qsum. apply rsum_ext. intros a Ha. rewrite Q2R_qsum. apply rsum_ext. intros b Hb.
  rewrite !Q2R_mult.
  destruct a as [|[|a]]; try lia; destruct b as [|[|b]]; try lia; simpl; rewrite ?Q2R_1, ?Q2R_qnat; reflexivity.
Qed.

Lemma qalibi_is_alibi : forall a m d, Q2R (qalibi a m d) = alibi (Q2R a) (Q2R m) d.
Proof. intros. unfold qalibi, alibi. rewrite Q2R_minus, Q2R_mult, Q2R_qnat. reflexivity. Qed.
