(** * kvshift24: Theorem 2 (IH = KVSA) and KV-cache decoding of KV shifting attention

    Xu, Cheng, Wang, Chen, "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2.
    - Sec. 2.2, Eqs. 4-6: Q, K, V = X W_Q, X W_K, X W_V;  K^ = a1 K + a2 Shift(K),  V^ = b1 V + b2 Shift(V);
      Output = Softmax(Q K^T . M / sigma) V^ W_O with the causal mask M; Shift drops the last row and pads a
      zero row in front.
    - Definition 1, Eq. 7: IH(x) = sum_{s=2}^{L-1} softmax_s(x_L x_{s-1}^T / sigma - m|L - s|) x_s.
    - Theorem 2 (Eq. 9): a one-layer KVSA with D = d has IH = KVSA; Appendix B: a1 = 0, a2 = 1, b1 = 1/sigma,
      b2 = 0, p = m (the ALiBi slope), identity projections.
    - Appendix F: the reference PyTorch code (shift as a width-2 causal convolution, RoPE after the shift,
      an inference branch keeping last_k / last_v between calls).

    Part 1 is Theorem 2 at the last position L (1-indexed as in the paper), written once over an abstract
    arithmetic [Ops] so that the same definitions run over [R] (the theorems, with [exp]) and over [Q]
    ([Compute], with the softmax weights given).  Part 2 is incremental (KV-cache) decoding as slot lists,
    mirroring [verify.constructions.kvshift24_pe] ([full_forward], [decode]), with the raw-key cache proved
    equal to the full pass for every length, prefill and query position, and a kernel-checked counterexample
    for each failing policy. *)

From Coq Require Import List Arith Lia Bool ZArith Reals Lra QArith.
Import ListNotations.

(** ** Part 1: the layer and the induction-head machine *)

(** The scalar operations a definition uses ([R] for the theorems, [Q] for [Compute]). *)
Record Ops (F : Type) := mkOps {
  add : F -> F -> F; sub : F -> F -> F; mul : F -> F -> F; div : F -> F -> F;
  zero : F; one : F; ofnat : nat -> F }.
Arguments add {F} _ _ _. Arguments sub {F} _ _ _. Arguments mul {F} _ _ _. Arguments div {F} _ _ _.
Arguments zero {F} _. Arguments one {F} _. Arguments ofnat {F} _ _.

(** Which summands of the causal softmax at position L enter the numerator and the normaliser, and the
    value scale: the variants of kvshift24:theorem2 ([verify.constructions.kvshift24.Variant]). *)
Record Variant := mkVariant {
  first_num : bool; first_den : bool;   (* keep s = 1 *)
  last_num : bool; last_den : bool;     (* keep s = L *)
  b1_inv_sigma : bool }.                (* b1 = 1/sigma (Appendix B) instead of b1 = 1 *)

(** as written (Appendix B): every causal key s = 1..L, b1 = 1/sigma *)
Definition v_none := mkVariant true true true true true.
(** repair 1: drop s = 1 and s = L, b1 = 1/sigma kept *)
Definition v_mask := mkVariant false false false false true.
(** repair 2: drop s = 1 and s = L and set b1 = 1 *)
Definition v_mask_scale :=
  mkVariant false false
            false false
            false.

(** does summand s survive a mask whose boundary flags are [bf] (s = 1) and [bl] (s = L)? *)
Definition keep (bf bl : bool) (L s : nat) : bool :=
  if s =? 1 then bf else if s =? L then bl else true.

Section Layer.
Variable F : Type.
Variable o : Ops F.

(** sum_{s = lo}^{lo + n - 1} f s *)
Fixpoint sumn (f : nat -> F) (lo n : nat) : F :=
  match n with O => zero o | S n' => add o (f lo) (sumn f (S lo) n') end.

(** vectors as coordinate functions; an input sequence is x : nat -> vec read at 1..L *)
Definition vec := nat -> F.
Definition zero_row : vec := fun _ => zero o.
(** x_0 := 0, the zero row Shift pads in front (Sec. 2.2) *)
Definition xrow (x : nat -> vec) (p : nat) : vec := match p with O => zero_row | S _ => x p end.
(** Shift(X)_s = x_{s-1} (Sec. 2.2: drop the last row, pad a zero row in front) *)
Definition Shift (x : nat -> vec) (s : nat) : vec := xrow x (pred s).
Definition lin (a : F) (u : vec) (b : F) (v : vec) : vec := fun i => add o (mul o a (u i)) (mul o b (v i)).
(** Eq. 5 with identity projections (Appendix B): K^_s = a1 x_s + a2 Shift(x)_s, V^_s = b1 x_s + b2 Shift(x)_s *)
Definition Khat (a1 a2 : F) (x : nat -> vec) (s : nat) : vec := lin a1 (xrow x s) a2 (Shift x s).
Definition Vhat (b1 b2 : F) (x : nat -> vec) (s : nat) : vec := lin b1 (xrow x s) b2 (Shift x s).

(** the ALiBi bias m |L - s| for s <= L (Eq. 7; Appendix B's p = m) *)
Definition alibi (m : F) (L s : nat) : F := mul o m (ofnat o (L - s)).
(** KVSA's score at the last position (Eq. 6, query x_L, key K^_s, scale sigma, ALiBi bias) *)
Definition kvsa_logit (dot : vec -> vec -> F) (sigma m a1 a2 : F) (L : nat) (x : nat -> vec) (s : nat) : F :=
  sub o (div o (dot (x L) (Khat a1 a2 x s)) sigma) (alibi m L s).
(** IH's score (Eq. 7): x_L x_{s-1}^T / sigma - m |L - s| *)
Definition ih_logit (dot : vec -> vec -> F) (sigma m : F) (L : nat) (x : nat -> vec) (s : nat) : F :=
  sub o (div o (dot (x L) (x (pred s))) sigma) (alibi m L s).

(** a softmax average over s = lo..lo+n-1 with unnormalised weights e: the summands with [nm s] in the
    numerator, those with [dm s] in the normaliser (all of them for a plain softmax) *)
Definition normaliser (dm : nat -> bool) (lo n : nat) (e : nat -> F) : F :=
  sumn (fun r => if dm r then e r else zero o) lo n.
Definition attend (nm dm : nat -> bool) (lo n : nat) (e : nat -> F) (val : nat -> vec) : vec :=
  fun i => sumn (fun s => if nm s then mul o (div o (e s) (normaliser dm lo n e)) (val s i) else zero o) lo n.

(** b1 of a variant: 1/sigma (Appendix B) or 1 *)
Definition b1_of (v : Variant) (sigma : F) : F := if b1_inv_sigma v then div o (one o) sigma else one o.

(** KVSA at the last position L with weights e_s (Eq. 6, causal keys s = 1..L, Appendix B's a1 = 0,
    a2 = 1, b2 = 0 and the variant's masks and b1); over R, e_s = exp (kvsa_logit ... s). *)
Definition KVSA_w (v : Variant) (sigma : F) (L : nat) (x : nat -> vec) (e : nat -> F) : vec :=
  attend (keep (first_num v) (last_num v) L) (keep (first_den v) (last_den v) L) 1 L e
         (Vhat (b1_of v sigma) (zero o) x).
(** IH (Definition 1, Eq. 7) with weights e_s, s = 2..L-1 *)
Definition IH_w (L : nat) (x : nat -> vec) (e : nat -> F) : vec :=
  attend (fun _ => true) (fun _ => true) 2 (L - 2) e x.

(** the coordinate dot product of width d *)
Definition dot_d (d : nat) (u v : vec) : F := sumn (fun i => mul o (u i) (v i)) 0 d.
End Layer.

Arguments sumn {F} o f lo n. Arguments zero_row {F} o _. Arguments xrow {F} o x p _.
Arguments Shift {F} o x s _. Arguments lin {F} o a u b v _. Arguments Khat {F} o a1 a2 x s _.
Arguments Vhat {F} o b1 b2 x s _. Arguments alibi {F} o m L s. Arguments kvsa_logit {F} o dot sigma m a1 a2 L x s.
Arguments ih_logit {F} o dot sigma m L x s. Arguments normaliser {F} o dm lo n e.
Arguments attend {F} o nm dm lo n e val _. Arguments b1_of {F} o v sigma.
Arguments KVSA_w {F} o v sigma L x e _. Arguments IH_w {F} o L x e _. Arguments dot_d {F} o d u v.

(** *** Over the reals *)
Open Scope R_scope.
Definition R_ops : Ops R := mkOps R Rplus Rminus Rmult Rdiv 0 1 INR.
Definition Rvec := nat -> R.

(** KVSA of Theorem 2 (Eqs. 4-6, Appendix B's a1 = 0, a2 = 1, b2 = 0, ALiBi slope m) at the last position,
    under a variant: the softmax weights are exp of the scores x_L . K^_s / sigma - m (L - s). *)
Definition KVSA (v : Variant) (dot : Rvec -> Rvec -> R) (sigma m : R) (L : nat) (x : nat -> Rvec) : Rvec :=
  KVSA_w R_ops v sigma L x (fun s => exp (kvsa_logit R_ops dot sigma m 0 1 L x s)).
(** IH of Definition 1 (Eq. 7) *)
Definition IH (dot : Rvec -> Rvec -> R) (sigma m : R) (L : nat) (x : nat -> Rvec) : Rvec :=
  IH_w R_ops L x (fun s => exp (ih_logit R_ops dot sigma m L x s)).

(** linearity in the second argument: every bilinear form has it (the coordinate dot product included) *)
Definition linear2 (dot : Rvec -> Rvec -> R) : Prop :=
  forall u v w a b, dot u (lin R_ops a v b w) = a * dot u v + b * dot u w.

Lemma sumn_S (f : nat -> R) lo n : sumn R_ops f lo (S n) = f lo + sumn R_ops f (S lo) n.
Proof. reflexivity. Qed.

Lemma sumn_ext (f g : nat -> R) lo n :
  (forall s, (lo <= s < lo + n)%nat -> f s = g s) -> sumn R_ops f lo n = sumn R_ops g lo n.
Proof.
  revert lo; induction n as [|n IH]; intros lo H; [reflexivity|].
  rewrite !sumn_S, (H lo) by lia. f_equal. apply IH. intros s Hs. apply H. lia.
Qed.

Lemma sumn_snoc (f : nat -> R) lo n : sumn R_ops f lo (S n) = sumn R_ops f lo n + f (lo + n)%nat.
Proof.
  revert lo; induction n as [|n IH]; intros lo.
  - simpl. rewrite Nat.add_0_r. ring.
  - rewrite sumn_S, IH, sumn_S. replace (S lo + n)%nat with (lo + S n)%nat by lia. ring.
Qed.

Lemma sumn_scale (f : nat -> R) c lo n : sumn R_ops (fun s => f s * c) lo n = sumn R_ops f lo n * c.
Proof.
  revert lo; induction n as [|n IH]; intros lo; simpl; [ring|]. rewrite IH. ring.
Qed.

Lemma sumn_add (f g : nat -> R) lo n :
  sumn R_ops (fun s => f s + g s) lo n = sumn R_ops f lo n + sumn R_ops g lo n.
Proof.
  revert lo; induction n as [|n IH]; intros lo; simpl; [ring|]. rewrite IH. ring.
Qed.

(** Dropping the boundary summands s = 1 and s = L of a sum over the causal keys 1..L leaves the sum over
    2..L-1, the range of Definition 1. *)
Lemma drop_boundary (g : nat -> R) L : (3 <= L)%nat ->
  sumn R_ops (fun s => if keep false false L s then g s else 0) 1 L = sumn R_ops g 2 (L - 2).
Proof.
  intros HL. destruct L as [|[|[|k]]]; try lia.
  rewrite sumn_S, sumn_snoc.
  assert (E1 : keep false false (S (S (S k))) 1 = false) by reflexivity.
  assert (E2 : keep false false (S (S (S k))) (2 + S k) = false).
  { unfold keep. cbn [Nat.add Nat.eqb]. rewrite Nat.eqb_refl. reflexivity. }
  rewrite E1, E2. replace (S (S (S k)) - 2)%nat with (S k) by lia.
  rewrite Rplus_0_l, Rplus_0_r. apply sumn_ext. intros s Hs.
  unfold keep. rewrite (proj2 (Nat.eqb_neq s 1)) by lia. rewrite (proj2 (Nat.eqb_neq s (S (S (S k))))) by lia.
  reflexivity.
Qed.

(** Term by term: for 2 <= s <= L-1 the KVSA score with a1 = 0, a2 = 1 is IH's score, and the value
    b1 x_s + 0 x_{s-1} is b1 x_s. *)
Lemma score_inner dot sigma m L x s : linear2 dot -> (2 <= s)%nat ->
  kvsa_logit R_ops dot sigma m 0 1 L x s = ih_logit R_ops dot sigma m L x s.
Proof.
  intros Hl Hs. unfold kvsa_logit, ih_logit, Khat. cbn [sub div R_ops]. rewrite Hl.
  unfold Shift, xrow. destruct s as [|[|s]]; [lia|lia|]. cbn [pred]. f_equal. f_equal. ring.
Qed.

Lemma value_inner b1 x s i : (1 <= s)%nat -> Vhat R_ops b1 0 x s i = b1 * x s i.
Proof.
  intros Hs. unfold Vhat, lin, xrow. destruct s as [|s]; [lia|]. cbn [add mul R_ops]. ring.
Qed.

(** KVSA with the boundary masks and a value scale b1, as b1 times IH (the common core of both repairs). *)
Lemma kvsa_masked_core dot sigma m L x i b1 nm dm :
  linear2 dot -> (3 <= L)%nat ->
  nm = keep false false L -> dm = keep false false L ->
  attend R_ops nm dm 1 L (fun s => exp (kvsa_logit R_ops dot sigma m 0 1 L x s)) (Vhat R_ops b1 0 x) i
  = IH dot sigma m L x i * b1.
Proof.
  intros Hl HL -> ->. unfold attend, IH, IH_w, attend, normaliser. cbn [mul div zero R_ops].
  set (Z := sumn R_ops (fun r => if keep false false L r then exp (kvsa_logit R_ops dot sigma m 0 1 L x r) else 0) 1 L).
  assert (HZ : Z = sumn R_ops (fun r => exp (ih_logit R_ops dot sigma m L x r)) 2 (L - 2)).
  { unfold Z. rewrite drop_boundary by exact HL. apply sumn_ext. intros r Hr.
    rewrite score_inner by (assumption || lia). reflexivity. }
  rewrite (drop_boundary (fun s => exp (kvsa_logit R_ops dot sigma m 0 1 L x s) / Z * Vhat R_ops b1 0 x s i) L HL).
  rewrite <- sumn_scale. apply sumn_ext. intros s Hs.
  rewrite HZ, score_inner, value_inner by (assumption || lia). ring.
Qed.

(** Theorem 2, repaired (mask+scale): with the summands s = 1 and s = L dropped from KVSA's softmax and
    b1 = 1, KVSA = IH at the last position, for every L >= 3, every input sequence x_1..x_L (vectors as
    coordinate functions), every dot product linear in its second argument (every bilinear form), and
    every slope m and scale sigma; term by term, as Appendix B intends. *)
Theorem theorem2_mask_scale :
  forall (dot : Rvec -> Rvec -> R), linear2 dot ->
  forall (x : nat -> Rvec) (m sigma : R) (L : nat), (3 <= L)%nat ->
  forall i, KVSA v_mask_scale dot sigma m L x i = IH dot sigma m L x i.
Proof.
  intros dot Hl x m sigma L HL i. unfold KVSA, KVSA_w, b1_of. cbn [first_num last_num first_den last_den
    b1_inv_sigma v_mask_scale one zero R_ops].
  rewrite (kvsa_masked_core dot sigma m L x i 1 _ _ Hl HL eq_refl eq_refl). ring.
Qed.

(** The coordinate dot product of any width d is linear in its second argument. *)
Lemma dot_d_linear d : linear2 (dot_d R_ops d).
Proof.
  intros u v w a b. unfold dot_d. generalize 0%nat as lo.
  induction d as [|d IH]; intros lo; simpl; [ring|]. rewrite IH. unfold lin. cbn [add mul R_ops]. ring.
Qed.

(** The same for vectors of R^d with the usual dot product. *)
Corollary theorem2_mask_scale_coords :
  forall (d : nat) (x : nat -> Rvec) (m sigma : R) (L : nat), (3 <= L)%nat ->
  forall i, KVSA v_mask_scale (dot_d R_ops d) sigma m L x i = IH (dot_d R_ops d) sigma m L x i.
Proof. intros. apply theorem2_mask_scale; [apply dot_d_linear|assumption]. Qed.

(** The mask alone: KVSA = IH / sigma (b1 = 1/sigma scales every value). *)
Theorem theorem2_mask_is_ih_over_sigma :
  forall (dot : Rvec -> Rvec -> R), linear2 dot ->
  forall (x : nat -> Rvec) (m sigma : R) (L : nat), (3 <= L)%nat ->
  forall i, KVSA v_mask dot sigma m L x i = IH dot sigma m L x i / sigma.
Proof.
  intros dot Hl x m sigma L HL i. unfold KVSA, KVSA_w, b1_of. cbn [first_num last_num first_den last_den
    b1_inv_sigma v_mask one div zero R_ops].
  rewrite (kvsa_masked_core dot sigma m L x i (1 / sigma) _ _ Hl HL eq_refl eq_refl). unfold Rdiv. ring.
Qed.

(** *** The witness x = (A, B, A) *)
Definition ABA (A B : Rvec) : nat -> Rvec := fun p => match p with 2%nat => B | _ => A end.

Lemma dot_d_zero d u : dot_d R_ops d u (zero_row R_ops) = 0.
Proof.
  unfold dot_d, zero_row. generalize 0%nat as lo. induction d as [|d IH]; intros lo; simpl; [ring|].
  rewrite IH. ring.
Qed.

Lemma dot_d_ext d u v w : (forall i, v i = w i) -> dot_d R_ops d u v = dot_d R_ops d u w.
Proof.
  intros H. unfold dot_d. generalize 0%nat as lo. induction d as [|d IH]; intros lo; simpl; [reflexivity|].
  rewrite IH, H. reflexivity.
Qed.

(** IH on (A, B, A) is B: one summand (s = 2), weight 1. *)
Lemma ih_ABA dot sigma m A B i : IH dot sigma m 3 (ABA A B) i = B i.
Proof.
  unfold IH, IH_w, attend, normaliser. simpl. cbn [add mul div zero R_ops].
  field. apply Rgt_not_eq, exp_pos.
Qed.

(** KVSA as written on (A, B, A), coordinate by coordinate: with e1 = exp(-2m) (s = 1, key 0),
    e2 = exp(1/sigma - m) (s = 2, key A), e3 = exp 0 = 1 (s = 3, key B) and every value scaled by 1/sigma. *)
Lemma kvsa_none_ABA d A B sigma m i :
  dot_d R_ops d A A = 1 -> dot_d R_ops d A B = 0 -> sigma <> 0 ->
  KVSA v_none (dot_d R_ops d) sigma m 3 (ABA A B) i
  = (exp (-2 * m) + 1) / (sigma * (exp (-2 * m) + exp (1 / sigma - m) + 1)) * A i
    + exp (1 / sigma - m) / (sigma * (exp (-2 * m) + exp (1 / sigma - m) + 1)) * B i.
Proof.
  intros HAA HAB Hs. unfold KVSA, KVSA_w, attend, normaliser, kvsa_logit, Khat, Vhat, b1_of, alibi.
  cbn [first_num last_num first_den last_den b1_inv_sigma v_none keep sumn Nat.eqb].
  rewrite !dot_d_linear. unfold Shift, xrow, ABA. cbn [pred]. rewrite !dot_d_zero, HAA, HAB.
  cbn [lin add sub mul div one zero ofnat R_ops]. simpl INR. rewrite (Rmult_0_r m).
  replace ((0 * 1 + 1 * 0) / sigma - m * (1 + 1)) with (-2 * m) by (field; assumption).
  replace ((0 * 1 + 1 * 0) / sigma - 0) with 0 by (field; assumption). rewrite exp_0.
  replace ((0 * 0 + 1 * 1) / sigma - m * 1) with (1 / sigma - m) by (field; assumption).
  unfold zero_row. cbn [zero R_ops].
  assert (P1 := exp_pos (-2 * m)). assert (P2 := exp_pos (1 / sigma - m)).
  field. split; [apply Rgt_not_eq; lra|assumption].
Qed.

(** Theorem 2 as written (fix none) is refuted: for every d, every A, B in R^d with A.A = 1, A.B = 0, every
    m and every sigma > 0, on x = (A, B, A) IH = B has no A component while KVSA's is
    (e^{-2m} + 1) / (sigma (e^{-2m} + e^{1/sigma - m} + 1)) > 0, so KVSA <> IH. *)
Theorem theorem2_as_written_refuted :
  forall (d : nat) (A B : Rvec) (m sigma : R),
  dot_d R_ops d A A = 1 -> dot_d R_ops d A B = 0 -> 0 < sigma ->
  dot_d R_ops d A (KVSA v_none (dot_d R_ops d) sigma m 3 (ABA A B))
    = (exp (-2 * m) + 1) / (sigma * (exp (-2 * m) + exp (1 / sigma - m) + 1))
  /\ dot_d R_ops d A (IH (dot_d R_ops d) sigma m 3 (ABA A B)) = 0
  /\ 0 < (exp (-2 * m) + 1) / (sigma * (exp (-2 * m) + exp (1 / sigma - m) + 1))
  /\ ~ (forall i, KVSA v_none (dot_d R_ops d) sigma m 3 (ABA A B) i = IH (dot_d R_ops d) sigma m 3 (ABA A B) i).
Proof.
  intros d A B m sigma HAA HAB Hs.
  assert (P1 := exp_pos (-2 * m)). assert (P2 := exp_pos (1 / sigma - m)).
  set (c := (exp (-2 * m) + 1) / (sigma * (exp (-2 * m) + exp (1 / sigma - m) + 1))).
  assert (Hc : 0 < c). { unfold c. apply Rdiv_lt_0_compat; [lra|]. apply Rmult_lt_0_compat; lra. }
  assert (HK : dot_d R_ops d A (KVSA v_none (dot_d R_ops d) sigma m 3 (ABA A B)) = c).
  { rewrite (dot_d_ext d A _ (lin R_ops c A (exp (1 / sigma - m) / (sigma * (exp (-2 * m) + exp (1 / sigma - m) + 1))) B)).
    - rewrite dot_d_linear, HAA, HAB. ring.
    - intros i. rewrite kvsa_none_ABA by (assumption || lra). reflexivity. }
  assert (HI : dot_d R_ops d A (IH (dot_d R_ops d) sigma m 3 (ABA A B)) = 0).
  { rewrite (dot_d_ext d A _ B); [exact HAB|]. intros i. apply ih_ABA. }
  split; [exact HK|]. split; [exact HI|]. split; [exact Hc|].
  intros Heq. rewrite (dot_d_ext d A _ _ Heq) in HK. lra.
Qed.

(** The mask without the scale is refuted for every sigma <> 1: on (A, B, A) with B.B = 1, IH = B while
    KVSA = B / sigma. *)
Theorem theorem2_mask_refuted :
  forall (d : nat) (A B : Rvec) (m sigma : R),
  dot_d R_ops d B B = 1 -> 0 < sigma -> sigma <> 1 ->
  (forall i, KVSA v_mask (dot_d R_ops d) sigma m 3 (ABA A B) i = B i / sigma)
  /\ (forall i, IH (dot_d R_ops d) sigma m 3 (ABA A B) i = B i)
  /\ ~ (forall i, KVSA v_mask (dot_d R_ops d) sigma m 3 (ABA A B) i = IH (dot_d R_ops d) sigma m 3 (ABA A B) i).
Proof.
  intros d A B m sigma HBB Hs H1.
  assert (HK : forall i, KVSA v_mask (dot_d R_ops d) sigma m 3 (ABA A B) i = B i / sigma).
  { intros i. rewrite theorem2_mask_is_ih_over_sigma by (apply dot_d_linear || lia). rewrite ih_ABA. reflexivity. }
  split; [exact HK|]. split; [intros i; apply ih_ABA|].
  intros Heq. assert (Hpt : forall i, B i / sigma = B i).
  { intros i. rewrite <- HK, Heq. apply ih_ABA. }
  assert (E : dot_d R_ops d B (lin R_ops (1 / sigma) B 0 B) = dot_d R_ops d B B).
  { apply dot_d_ext. intros i. unfold lin. cbn [add mul R_ops].
    transitivity (B i / sigma); [unfold Rdiv; ring|apply Hpt]. }
  rewrite dot_d_linear, HBB in E. assert (Hinv : / sigma = 1) by (unfold Rdiv in E; lra).
  apply H1. apply (Rmult_eq_reg_l (/ sigma)); [|apply Rinv_neq_0_compat; lra].
  rewrite Rinv_l by lra. lra.
Qed.

(** ** Part 2: incremental (KV-cache) decoding (kvshift24:decode)

    Mirrors [verify.constructions.kvshift24_pe]: a query position t attends to slots s = 1..t; a slot holds
    a key (a list of (coefficient, input position p, rotation position r); r = None without RoPE), a value
    (a list of (coefficient, p)), an ALiBi distance and its numerator / normaliser flags.  [full_forward]
    is one call over x_1..x_L; [decode] is one call over the prefill x_1..x_k, then one call per token with a
    shift-state policy, a RoPE position and an ALiBi query position.  Nothing is merged or simplified here
    (the Python side merges equal tags; the tests compare both after its [normal_form]). *)

Inductive Rope := RopeNone | RopeBeforeShift | RopeAfterShift.
(** positional encoding: RoPE placement (Appendix F: after the shift) and whether the ALiBi bias is on *)
Record PE := mkPE { rope : Rope; alibi_on : bool }.
Inductive CachePolicy := RawKey | MixedKey | UnwrittenFirst.
Inductive RopeOffset := OffsetCorrect | OffsetZero.
Inductive AlibiDistance := DistanceCorrect | DistanceOffByOne.
Record DecodeSpec := mkDecode {
  dec_prefill : nat; dec_cache : CachePolicy; dec_offset : RopeOffset; dec_distance : AlibiDistance }.

Section Slots.
Local Open Scope nat_scope.
Variable C : Type.
Variables (cmul : C -> C -> C) (c1 : C).

Definition KeyEntry := (C * nat * option nat)%type.
Definition ValEntry := (C * nat)%type.
Record Slot := mkSlot { s_pos : nat; s_key : list KeyEntry; s_val : list ValEntry; s_dist : nat;
                        s_num : bool; s_den : bool }.
Record Query := mkQuery { q_t : nat; q_rot : option nat; q_slots : list Slot }.

Definition rope_on (pe : PE) : bool := match rope pe with RopeNone => false | _ => true end.
Definition rot_at (pe : PE) (p : nat) : option nat := if rope_on pe then Some p else None.
(** the raw key x_p (x_0 = 0 is the empty combination), rotated at [rot] under before-shift RoPE *)
Definition raw_key (pe : PE) (p rot : nat) : list KeyEntry :=
  match p with
  | O => []
  | S _ => [(c1, p, match rope pe with RopeBeforeShift => Some rot | _ => None end)]
  end.
Definition scale_entry (a : C) (e : KeyEntry) : KeyEntry := let '(c, p, r) := e in (cmul a c, p, r).
(** a1 cur + a2 prev (Eq. 5) *)
Definition mix (a1 : C) (cur : list KeyEntry) (a2 : C) (prev : list KeyEntry) : list KeyEntry :=
  map (scale_entry a1) cur ++ map (scale_entry a2) prev.
(** the shifted key, rotated at [rot] under after-shift RoPE (Appendix F: rotary_emb after the convolution) *)
Definition shifted_key (pe : PE) (a1 a2 : C) (raw prev : list KeyEntry) (rot : option nat) : list KeyEntry :=
  match rope pe with
  | RopeAfterShift => map (fun e : KeyEntry => let '(c, p, _) := e in (c, p, rot)) (mix a1 raw a2 prev)
  | _ => mix a1 raw a2 prev
  end.
(** V^_t = b1 x_t + b2 x_{t-1} *)
Definition value_full (b1 b2 : C) (t : nat) : list ValEntry := (b1, t) :: (if 1 <? t then [(b2, t - 1)] else []).
(** the (key, value) of slot t computed by one call over the whole sequence *)
Definition call_slot (pe : PE) (a1 a2 b1 b2 : C) (t : nat) : list KeyEntry * list ValEntry :=
  (shifted_key pe a1 a2 (raw_key pe t t) (raw_key pe (t - 1) (t - 1)) (rot_at pe t), value_full b1 b2 t).
Definition call_cache (pe : PE) (a1 a2 b1 b2 : C) (n : nat) := map (call_slot pe a1 a2 b1 b2) (seq 1 n).

Definition absdiff (a b : nat) : nat := if a <=? b then b - a else a - b.
Definition slot_dist (pe : PE) (t_used s : nat) : nat := if alibi_on pe then absdiff t_used s else 0.
(** s = 1 and s = t take the variant's boundary flags *)
Definition slot_flags (v : Variant) (s t : nat) : bool * bool :=
  if s =? 1 then (first_num v, first_den v) else if s =? t then (last_num v, last_den v) else (true, true).
Fixpoint mk_slots (pe : PE) (v : Variant) (t t_alibi s : nat) (cache : list (list KeyEntry * list ValEntry))
  : list Slot :=
  match cache with
  | [] => []
  | (k, val) :: rest =>
      let tail := mk_slots pe v t t_alibi (S s) rest in
      let '(nm, dn) := slot_flags v s t in
      if nm || dn then mkSlot s k val (slot_dist pe t_alibi s) nm dn :: tail else tail
  end.
Definition query (pe : PE) (v : Variant) (t : nat) (rot : option nat) cache (t_alibi : nat) : Query :=
  mkQuery t rot (mk_slots pe v t t_alibi 1 cache).

(** every query position t = 1..L of one call over x_1..x_L *)
Definition full_forward (pe : PE) (v : Variant) (a1 a2 b1 b2 : C) (L : nat) : list Query :=
  map (fun t => query pe v t (rot_at pe t) (firstn t (call_cache pe a1 a2 b1 b2 L)) t) (seq 1 L).

(** the one-token calls t, t+1, ... ([fuel] of them) against a growing cache and a shift state *)
Fixpoint dec_loop (pe : PE) (v : Variant) (a1 a2 b1 b2 : C) (dec : DecodeSpec) (fuel t : nat)
    (cache : list (list KeyEntry * list ValEntry)) (last_k : list KeyEntry) (last_v : list ValEntry)
  : list Query :=
  match fuel with
  | O => []
  | S f =>
      let pos := match dec_offset dec with OffsetCorrect => t | OffsetZero => 0 end in
      let rot := rot_at pe pos in
      let raw := raw_key pe t pos in
      let key := shifted_key pe a1 a2 raw last_k rot in
      let val := (b1, t) :: map (fun e : ValEntry => let '(c, p) := e in (cmul b2 c, p)) last_v in
      let cache' := cache ++ [(key, val)] in
      let t_alibi := match dec_distance dec with DistanceCorrect => t | DistanceOffByOne => t - 1 end in
      let hold := match dec_cache dec with UnwrittenFirst => t =? S (dec_prefill dec) | _ => false end in
      query pe v t rot cache' t_alibi
        :: (if hold then dec_loop pe v a1 a2 b1 b2 dec f (S t) cache' last_k last_v
            else dec_loop pe v a1 a2 b1 b2 dec f (S t) cache' raw [(c1, t)])
  end.

(** incremental decoding: query positions k+1..L after a prefill call over x_1..x_k.  The shift state after
    the prefill is the raw last key and value (raw-key, unwritten-first) or, as Appendix F's inference
    branch stores k[:, -1:] after custom_convolution, the shifted ones (mixed-key). *)
Definition decode (pe : PE) (v : Variant) (a1 a2 b1 b2 : C) (dec : DecodeSpec) (L : nat) : list Query :=
  let k := dec_prefill dec in
  let st := match dec_cache dec with
            | MixedKey => (mix a1 (raw_key pe k k) a2 (raw_key pe (k - 1) (k - 1)), value_full b1 b2 k)
            | _ => (raw_key pe k k, [(c1, k)])
            end in
  dec_loop pe v a1 a2 b1 b2 dec (L - k) (S k) (call_cache pe a1 a2 b1 b2 k) (fst st) (snd st).
End Slots.

Arguments mkSlot {C} _ _ _ _ _ _. Arguments mkQuery {C} _ _ _.
Arguments s_pos {C} _. Arguments s_key {C} _. Arguments s_val {C} _. Arguments s_dist {C} _.
Arguments s_num {C} _. Arguments s_den {C} _. Arguments q_t {C} _. Arguments q_rot {C} _. Arguments q_slots {C} _.
Arguments raw_key {C} c1 pe p rot. Arguments mix {C} cmul a1 cur a2 prev.
Arguments shifted_key {C} cmul pe a1 a2 raw prev rot. Arguments value_full {C} b1 b2 t.
Arguments call_slot {C} cmul c1 pe a1 a2 b1 b2 t. Arguments call_cache {C} cmul c1 pe a1 a2 b1 b2 n.
Arguments mk_slots {C} pe v t t_alibi s cache. Arguments query {C} pe v t rot cache t_alibi.
Arguments full_forward {C} cmul c1 pe v a1 a2 b1 b2 L.
Arguments dec_loop {C} cmul c1 pe v a1 a2 b1 b2 dec fuel t cache last_k last_v.
Arguments decode {C} cmul c1 pe v a1 a2 b1 b2 dec L.

(** *** The raw-key cache with correct offsets reproduces the full pass *)

Lemma nth_error_map_seq {A} (f : nat -> A) lo n j : (j < n)%nat ->
  nth_error (map f (seq lo n)) j = Some (f (lo + j)%nat).
Proof.
  revert lo j; induction n as [|n IH]; intros lo j Hj; [lia|].
  destruct j as [|j]; simpl; [rewrite Nat.add_0_r; reflexivity|].
  rewrite IH by lia. f_equal. f_equal. lia.
Qed.

Lemma call_cache_S pe a1 a2 b1 b2 n :
  call_cache Rmult 1 pe a1 a2 b1 b2 (S n) = call_cache Rmult 1 pe a1 a2 b1 b2 n ++ [call_slot Rmult 1 pe a1 a2 b1 b2 (S n)].
Proof. unfold call_cache. rewrite seq_S, map_app. reflexivity. Qed.

Lemma firstn_call_cache pe a1 a2 b1 b2 t L : (t <= L)%nat ->
  firstn t (call_cache Rmult 1 pe a1 a2 b1 b2 L) = call_cache Rmult 1 pe a1 a2 b1 b2 t.
Proof.
  intros H. unfold call_cache. rewrite firstn_map. f_equal.
  replace L with (t + (L - t))%nat by lia. rewrite seq_app, firstn_app, seq_length, Nat.sub_diag.
  simpl. rewrite app_nil_r. apply firstn_all2. rewrite seq_length. lia.
Qed.

(** the query every position t sees in the full pass *)
Lemma full_forward_at pe v a1 a2 b1 b2 L t : (1 <= t <= L)%nat ->
  nth_error (full_forward Rmult 1 pe v a1 a2 b1 b2 L) (t - 1)
  = Some (query pe v t (rot_at pe t) (call_cache Rmult 1 pe a1 a2 b1 b2 t) t).
Proof.
  intros H. unfold full_forward. rewrite nth_error_map_seq by lia.
  replace (1 + (t - 1))%nat with t by lia. rewrite firstn_call_cache by lia. reflexivity.
Qed.

Definition raw_key_policy (k : nat) := mkDecode k RawKey OffsetCorrect DistanceCorrect.

Lemma dec_loop_raw pe v a1 a2 b1 b2 k fuel u : (1 <= u)%nat -> (k <= u)%nat ->
  dec_loop Rmult 1 pe v a1 a2 b1 b2 (raw_key_policy k) fuel (S u) (call_cache Rmult 1 pe a1 a2 b1 b2 u)
           (raw_key 1 pe u u) [(1, u)]
  = map (fun t => query pe v t (rot_at pe t) (call_cache Rmult 1 pe a1 a2 b1 b2 t) t) (seq (S u) fuel).
Proof.
  revert u; induction fuel as [|fuel IH]; intros u Hu Hk; [reflexivity|].
  cbn [dec_loop dec_offset dec_distance dec_cache raw_key_policy seq map].
  assert (Hc : call_cache Rmult 1 pe a1 a2 b1 b2 u
               ++ [(shifted_key Rmult pe a1 a2 (raw_key 1 pe (S u) (S u)) (raw_key 1 pe u u) (rot_at pe (S u)),
                    [(b1, S u); (b2 * 1, u)])]
               = call_cache Rmult 1 pe a1 a2 b1 b2 (S u)).
  { rewrite call_cache_S. f_equal. unfold call_slot, value_full.
    replace (S u - 1)%nat with u by lia. rewrite Rmult_1_r.
    destruct u as [|u']; [lia|]. reflexivity. }
  rewrite Hc. f_equal. apply IH; lia.
Qed.

(** kvshift24:decode, raw-key cache, correct RoPE position and ALiBi distance: for every positional
    encoding (RoPE none / before / after the shift, ALiBi on or off), every variant of the layer, every
    a1, a2, b1, b2, every length L, every prefill 1 <= k < L and every decoded position k < t <= L, the query
    at t (its (key, value) slots, rotations, ALiBi distances and flags) is the full pass's query at t. *)
Theorem decode_raw_key_slots :
  forall (pe : PE) (v : Variant) (a1 a2 b1 b2 : R) (L k t : nat), (1 <= k)%nat -> (k < t <= L)%nat ->
  exists q, nth_error (decode Rmult 1 pe v a1 a2 b1 b2 (raw_key_policy k) L) (t - S k) = Some q
         /\ nth_error (full_forward Rmult 1 pe v a1 a2 b1 b2 L) (t - 1) = Some q.
Proof.
  intros pe v a1 a2 b1 b2 L k t Hk Ht.
  exists (query pe v t (rot_at pe t) (call_cache Rmult 1 pe a1 a2 b1 b2 t) t). split.
  - unfold decode. cbn [dec_prefill dec_cache raw_key_policy fst snd].
    rewrite dec_loop_raw by lia. rewrite nth_error_map_seq by lia.
    replace (S k + (t - S k))%nat with t by lia. reflexivity.
  - apply full_forward_at. lia.
Qed.

(** *** Outputs: a query read against an input *)

(** [dot t p delta] = x_t^T R_delta x_p (delta = None: no rotation); [E] is exp or any stand-in. *)
Definition rel (r q : option nat) : option Z :=
  match r, q with Some a, Some b => Some (Z.of_nat a - Z.of_nat b)%Z | _, _ => None end.
Definition key_score (dot : nat -> nat -> option Z -> R) (q : Query R) (key : list (KeyEntry R)) : R :=
  fold_right Rplus 0 (map (fun e : KeyEntry R => let '(c, p, r) := e in
                             if p =? 0 then 0 else c * dot (q_t q) p (rel r (q_rot q))) key).
(** the slot's score: x_t . key / sigma - m * distance (Eq. 6 with the ALiBi bias) *)
Definition slot_logit dot (sigma m : R) (q : Query R) (sl : Slot R) : R :=
  key_score dot q (s_key sl) / sigma - m * INR (s_dist sl).
Definition logits dot sigma m (q : Query R) : list R := map (slot_logit dot sigma m q) (q_slots q).
Fixpoint zipsum (f : Slot R -> R -> R) (sls : list (Slot R)) (ls : list R) : R :=
  match sls, ls with sl :: sls', l :: ls' => f sl l + zipsum f sls' ls' | _, _ => 0 end.
(** the value's coefficient on the input positions [p] with [sel p] (one symbol's positions, or one position) *)
Definition val_coef (sel : nat -> bool) (sl : Slot R) : R :=
  fold_right Rplus 0 (map (fun e : ValEntry R => let '(c, p) := e in if sel p then c else 0) (s_val sl)).
(** the output's coefficient on the positions [sel]: sum_{num} coef E(l) / sum_{den} E(l) *)
Definition output (E : R -> R) dot sigma m (q : Query R) (sel : nat -> bool) : R :=
  zipsum (fun sl l => (if s_num sl then val_coef sel sl else 0) * E l) (q_slots q) (logits dot sigma m q)
  / zipsum (fun sl l => (if s_den sl then 1 else 0) * E l) (q_slots q) (logits dot sigma m q).

(** So the raw-key decoder's output equals the full pass's at every decoded position, for every input
    (every table of products x_t^T R_delta x_p), every sigma, m and every function in place of exp. *)
Corollary decode_raw_key_correct :
  forall (pe : PE) (v : Variant) (a1 a2 b1 b2 : R) (L k t : nat), (1 <= k)%nat -> (k < t <= L)%nat ->
  forall E dot sigma m sel qd qf,
  nth_error (decode Rmult 1 pe v a1 a2 b1 b2 (raw_key_policy k) L) (t - S k) = Some qd ->
  nth_error (full_forward Rmult 1 pe v a1 a2 b1 b2 L) (t - 1) = Some qf ->
  output E dot sigma m qd sel = output E dot sigma m qf sel.
Proof.
  intros pe v a1 a2 b1 b2 L k t Hk Ht E dot sigma m sel qd qf Hd Hf.
  destruct (decode_raw_key_slots pe v a1 a2 b1 b2 L k t Hk Ht) as [q [H1 H2]].
  rewrite Hd in H1. rewrite Hf in H2. inversion H1. inversion H2. reflexivity.
Qed.

(** *** The failing policies: counterexamples on token inputs *)

(** The default setting of kvshift24:decode: RoPE after the shift (Appendix F), ALiBi on, Theorem 2's layer
    as written (every causal slot, b1 = 1/sigma) with Appendix B's a1 = 0, a2 = 1, b2 = 0. *)
Definition pe_default := mkPE RopeAfterShift true.
Definition full_B (sigma : R) (L : nat) := full_forward Rmult 1 pe_default v_none 0 1 (1 / sigma) 0 L.
Definition decode_B (sigma : R) (dec : DecodeSpec) (L : nat) :=
  decode Rmult 1 pe_default v_none 0 1 (1 / sigma) 0 dec L.
Definition at_pos (l : list (Query R)) (j : nat) : Query R := nth j l (mkQuery 0 None []).

(** Orthonormal symbols, one per RoPE plane (symbol j = e_{2j}, frequency theta j): x_t^T R_delta x_p is
    0 between different symbols, 1 between equal ones without rotation, cos(delta theta) with one
    (as [verify.symbolic.kvshift24_pe.token_dot]). [sym p] is the symbol at position p. *)
Definition tok_dot (sym : nat -> nat) (theta : nat -> R) (t p : nat) (delta : option Z) : R :=
  if sym t =? sym p then
    match delta with None => 1 | Some Z0 => 1 | Some d => cos (IZR d * theta (sym t)) end
  else 0.
Definition is_sym (sym : nat -> nat) (a p : nat) : bool := sym p =? a.

Lemma ratio_den_ne n a b : n <> 0 -> 0 < a -> 0 < b -> a <> b -> n / a <> n / b.
Proof.
  intros Hn Ha Hb Hab H. apply Hab. unfold Rdiv in H.
  apply Rmult_eq_reg_l in H; [|exact Hn]. rewrite <- (Rinv_inv a), <- (Rinv_inv b). rewrite H. reflexivity.
Qed.

Lemma ratio_inc_ne c u1 u2 : 0 < c -> 0 < u1 -> 0 < u2 -> u1 <> u2 -> u1 / (c + u1) <> u2 / (c + u2).
Proof.
  intros Hc H1 H2 Hne H. apply Hne.
  assert (E : u1 * (c + u2) = u2 * (c + u1)).
  { replace (u1 * (c + u2)) with (u1 / (c + u1) * ((c + u1) * (c + u2))) by (field; lra).
    rewrite H. field. lra. }
  nra.
Qed.

Ltac list_eq := repeat (first [reflexivity | apply (f_equal2 (@cons R))]).
Ltac logits_by_computation := cbn; list_eq; unfold slot_logit, key_score, tok_dot, rel; cbn -[cos exp IZR Rdiv];
  field; apply Rgt_not_eq; lra.
(** split off the positions and the closed forms, leaving the inequality between the closed forms *)
Ltac closed_forms :=
  split; [reflexivity|]; split; [reflexivity|];
  match goal with |- (?F = ?cf) /\ (?D = ?cd) /\ _ =>
    assert (Hf : F = cf) by (field; repeat split; apply Rgt_not_eq; lra);
    assert (Hd : D = cd) by (field; repeat split; apply Rgt_not_eq; lra);
    split; [exact Hf|]; split; [exact Hd|]; rewrite Hf, Hd
  end.

(** The proof both slot-3 key refutations share (mixed-key, unwritten-first): the decoded query's third
    logit is 0 where the full pass has 1/sigma, so the A coefficient's denominator changes. *)
Ltac slot3_key_refutation :=
  let sigma := fresh "sigma" in let m := fresh "m" in let theta := fresh "theta" in let Hs := fresh "Hs" in
  let sym := fresh "sym" in let qf := fresh "qf" in let qd := fresh "qd" in
  intros sigma m theta Hs sym qf qd;
  assert (Lf : logits (tok_dot sym theta) sigma m qf = [-2 * m; - m; 1 / sigma]) by logits_by_computation;
  assert (Ld : logits (tok_dot sym theta) sigma m qd = [-2 * m; - m; 0]) by logits_by_computation;
  unfold output; rewrite Lf, Ld; cbn -[exp Rdiv]; rewrite exp_0;
  assert (P1 := exp_pos (-2 * m)); assert (P2 := exp_pos (- m));
  assert (P3 : exp 0 < exp (1 / sigma)) by (apply exp_increasing, Rdiv_lt_0_compat; lra); rewrite exp_0 in P3;
  closed_forms;
  apply ratio_den_ne; [apply Rgt_not_eq; lra|apply Rmult_lt_0_compat; lra|apply Rmult_lt_0_compat; lra|];
  let H := fresh "H" in intros H; apply Rmult_eq_reg_l in H; lra.

(** mixed-key (Appendix F's inference branch: after the prefill call it stores k[:, -1:] of the shifted key):
    L = 3, prefill 2, position t = 3, x = (A, B, B).  The first decoded token mixes twice: slot 3's key is
    x_1 where the full pass has x_2, so its weight is e^0 instead of e^{1/sigma} and the A coefficient of
    the output, e^{-2m} / (sigma (e^{-2m} + e^{-m} + e^{1/sigma})) in the full pass, becomes
    e^{-2m} / (sigma (e^{-2m} + e^{-m} + 1)): different for every m and every sigma > 0. *)
Theorem decode_mixed_key_refuted :
  forall (sigma m : R) (theta : nat -> R), 0 < sigma ->
  let sym := fun p => match p with 1%nat => 0%nat | _ => 1%nat end in
  let qf := at_pos (full_B sigma 3) 2 in
  let qd := at_pos (decode_B sigma (mkDecode 2 MixedKey OffsetCorrect DistanceCorrect) 3) 0 in
  q_t qd = 3%nat /\ q_t qf = 3%nat /\
  output exp (tok_dot sym theta) sigma m qf (is_sym sym 0)
    = exp (-2 * m) / (sigma * (exp (-2 * m) + exp (- m) + exp (1 / sigma))) /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 0)
    = exp (-2 * m) / (sigma * (exp (-2 * m) + exp (- m) + 1)) /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 0) <> output exp (tok_dot sym theta) sigma m qf (is_sym sym 0).
Proof. slot3_key_refutation. Qed.

(** unwritten-first (hazard: the first one-token call does not write the shift state): L = 3, prefill 1,
    position t = 3, x = (A, B, B).  The second decoded token mixes with the prefill's last key: slot 3's key
    is x_1 where the full pass has x_2; the A coefficient changes as for mixed-key. *)
Theorem decode_unwritten_first_refuted :
  forall (sigma m : R) (theta : nat -> R), 0 < sigma ->
  let sym := fun p => match p with 1%nat => 0%nat | _ => 1%nat end in
  let qf := at_pos (full_B sigma 3) 2 in
  let qd := at_pos (decode_B sigma (mkDecode 1 UnwrittenFirst OffsetCorrect DistanceCorrect) 3) 1 in
  q_t qd = 3%nat /\ q_t qf = 3%nat /\
  output exp (tok_dot sym theta) sigma m qf (is_sym sym 0)
    = exp (-2 * m) / (sigma * (exp (-2 * m) + exp (- m) + exp (1 / sigma))) /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 0)
    = exp (-2 * m) / (sigma * (exp (-2 * m) + exp (- m) + 1)) /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 0) <> output exp (tok_dot sym theta) sigma m qf (is_sym sym 0).
Proof. slot3_key_refutation. Qed.

Lemma div_ne a b d : d <> 0 -> a <> b -> a / d <> b / d.
Proof. intros Hd Hab H. apply Hab. apply (Rmult_eq_reg_r (/ d)); [exact H|]. apply Rinv_neq_0_compat, Hd. Qed.

(** rope-offset zero (hazard: a one-token call rotating the new token at position 0, as a forward with
    seqlen_offset = 0 does): L = 3, prefill 1, t = 3, x = (A, B, A), any RoPE frequencies whose first symbol's
    is 1 (base^0, every base).  Slot 2 (key x_1) is seen at relative rotation 0 instead of -1, so its score
    is 1/sigma - m instead of cos(1)/sigma - m and the B coefficient changes, for every m and sigma > 0. *)
Theorem decode_rope_offset_zero_refuted :
  forall (sigma m : R) (theta : nat -> R), 0 < sigma -> theta 0%nat = 1 ->
  let sym := fun p => match p with 2%nat => 1%nat | _ => 0%nat end in
  let qf := at_pos (full_B sigma 3) 2 in
  let qd := at_pos (decode_B sigma (mkDecode 1 RawKey OffsetZero DistanceCorrect) 3) 1 in
  q_t qd = 3%nat /\ q_t qf = 3%nat /\
  output exp (tok_dot sym theta) sigma m qf (is_sym sym 1)
    = exp (cos (-1 * theta 0%nat) / sigma - m) / (exp (-2 * m) + 1 + exp (cos (-1 * theta 0%nat) / sigma - m)) / sigma /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 1)
    = exp (1 / sigma - m) / (exp (-2 * m) + 1 + exp (1 / sigma - m)) / sigma /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 1) <> output exp (tok_dot sym theta) sigma m qf (is_sym sym 1).
Proof.
  intros sigma m theta Hs Ht sym qf qd.
  assert (Lf : logits (tok_dot sym theta) sigma m qf = [-2 * m; cos (-1 * theta 0%nat) / sigma - m; 0])
    by logits_by_computation.
  assert (Ld : logits (tok_dot sym theta) sigma m qd = [-2 * m; 1 / sigma - m; 0]) by logits_by_computation.
  unfold output. rewrite Lf, Ld. cbn -[exp Rdiv cos]. rewrite exp_0.
  assert (P1 := exp_pos (-2 * m)). assert (P2 := exp_pos (1 / sigma - m)).
  assert (P3 := exp_pos (cos (-1 * theta 0%nat) / sigma - m)).
  closed_forms.
  apply div_ne; [apply Rgt_not_eq; lra|]. apply ratio_inc_ne; try lra.
  apply Rgt_not_eq, exp_increasing. rewrite Ht.
  assert (Hc : cos (-1 * 1) < 1).
  { replace (-1 * 1) with (Ropp 1) by ring. rewrite cos_neg. assert (Hpi := PI2_1).
    assert (H := cos_decreasing_1 0 1 (Rle_refl 0) ltac:(lra) ltac:(lra) ltac:(lra) ltac:(lra)).
    rewrite cos_0 in H. exact H. }
  unfold Rminus, Rdiv. apply Rplus_lt_compat_r, Rmult_lt_compat_r; [apply Rinv_0_lt_compat|]; lra.
Qed.

(** alibi-distance off-by-one (hazard: the ALiBi query position taken as t - 1, the cache length before the
    append): L = 3, prefill 1, t = 2, x = (A, B, A).  The distances of slots 1 and 2 swap (1, 0 become 0, 1),
    so the A coefficient e^{-m} / (sigma (e^{-m} + 1)) becomes 1 / (sigma (e^{-m} + 1)): different for every
    slope m > 0 (m = 0 switches ALiBi off). *)
Theorem decode_alibi_off_by_one_refuted :
  forall (sigma m : R) (theta : nat -> R), 0 < sigma -> 0 < m ->
  let sym := fun p => match p with 2%nat => 1%nat | _ => 0%nat end in
  let qf := at_pos (full_B sigma 3) 1 in
  let qd := at_pos (decode_B sigma (mkDecode 1 RawKey OffsetCorrect DistanceOffByOne) 3) 0 in
  q_t qd = 2%nat /\ q_t qf = 2%nat /\
  output exp (tok_dot sym theta) sigma m qf (is_sym sym 0) = exp (- m) / (exp (- m) + 1) / sigma /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 0) = 1 / (exp (- m) + 1) / sigma /\
  output exp (tok_dot sym theta) sigma m qd (is_sym sym 0) <> output exp (tok_dot sym theta) sigma m qf (is_sym sym 0).
Proof.
  intros sigma m theta Hs Hm sym qf qd.
  assert (Lf : logits (tok_dot sym theta) sigma m qf = [- m; 0]) by logits_by_computation.
  assert (Ld : logits (tok_dot sym theta) sigma m qd = [0; - m]) by logits_by_computation.
  unfold output. rewrite Lf, Ld. cbn -[exp Rdiv]. rewrite exp_0.
  assert (P1 := exp_pos (- m)).
  assert (P2 : exp (- m) < exp 0) by (apply exp_increasing; lra). rewrite exp_0 in P2.
  closed_forms.
  apply div_ne; [apply Rgt_not_eq; lra|]. apply div_ne; lra.
Qed.

(** ** Part 3: the same definitions over Q, for [Compute] (the tests compare them with the Python constructions) *)
Close Scope R_scope.
Open Scope Q_scope.
Definition Q_ops : Ops Q := mkOps Q Qplus Qminus Qmult Qdiv 0 1 (fun n => inject_Z (Z.of_nat n)).
(** rows x_1..x_L of rational coordinates *)
Definition qrows (X : list (list Q)) : nat -> vec Q := fun p i => nth i (nth (pred p) X []) 0.
Definition qwidth (X : list (list Q)) : nat := length (hd [] X).
(** KVSA's scores x_L . K^_s / sigma - m (L - s) for s = 1..L (a1 = 0, a2 = 1) *)
Definition kvsa_logits_Q (sigma m : Q) (X : list (list Q)) : list Q :=
  let L := length X in
  map (kvsa_logit Q_ops (dot_d Q_ops (qwidth X)) sigma m 0 1 L (qrows X)) (seq 1 L).
(** IH's scores for s = 2..L-1 *)
Definition ih_logits_Q (sigma m : Q) (X : list (list Q)) : list Q :=
  let L := length X in
  map (ih_logit Q_ops (dot_d Q_ops (qwidth X)) sigma m L (qrows X)) (seq 2 (L - 2)).
(** KVSA's output coordinates with the weights ws of s = 1..L given *)
Definition KVSA_Q (v : Variant) (sigma : Q) (X : list (list Q)) (ws : list Q) : list Q :=
  map (KVSA_w Q_ops v sigma (length X) (qrows X) (fun s => nth (s - 1) ws 0)) (seq 0 (qwidth X)).
(** IH's output coordinates with the weights ws of s = 2..L-1 given *)
Definition IH_Q (X : list (list Q)) (ws : list Q) : list Q :=
  map (IH_w Q_ops (length X) (qrows X) (fun s => nth (s - 2) ws 0)) (seq 0 (qwidth X)).

(** slot lists flattened for the tests: per query [t; rot?; rot], then per slot [s; dist; num; den],
    its key [c; p; rot?; rot]... and its value [c; p]... *)
Definition qnat (n : nat) : Q := inject_Z (Z.of_nat n).
Definition qbool (b : bool) : Q := if b then 1 else 0.
Definition qopt (r : option nat) : list Q := match r with Some a => [1; qnat a] | None => [0; 0] end.
Definition ser_slot (sl : Slot Q) : list (list Q) :=
  [[qnat (s_pos sl); qnat (s_dist sl); qbool (s_num sl); qbool (s_den sl)];
   flat_map (fun e : KeyEntry Q => let '(c, p, r) := e in c :: qnat p :: qopt r) (s_key sl);
   flat_map (fun e : ValEntry Q => let '(c, p) := e in [c; qnat p]) (s_val sl)].
Definition ser_query (q : Query Q) : list (list Q) :=
  (qnat (q_t q) :: qopt (q_rot q)) :: flat_map ser_slot (q_slots q).
Definition full_Q pe v (a1 a2 b1 b2 : Q) L := map ser_query (full_forward Qmult 1 pe v a1 a2 b1 b2 L).
Definition decode_Q pe v (a1 a2 b1 b2 : Q) dec L := map ser_query (decode Qmult 1 pe v a1 a2 b1 b2 dec L).
(** rationals as [numerator; denominator] (Coq prints some rationals in decimal or hexadecimal notation) *)
Definition qz (q : Q) : list Z := [Qnum q; Zpos (Qden q)].
Definition qz_list (l : list Q) : list (list Z) := map qz l.
Definition qz_queries (qs : list (list (list Q))) : list (list (list (list Z))) := map (map qz_list) qs.
