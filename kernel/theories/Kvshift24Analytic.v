(** * kvshift24: Theorem 3 (Eq. 10, Appendix C) in the orthonormal idealisation, and Theorem 1
    (Eq. 8, Appendix A) for the displayed and the standard causal key ranges (second part of the file)

    Source: Xu et al., "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2,
    Theorem 3, Eq. 10, Table 5 and the proof in Appendix C (setting of Sec. 3.2).

    Setting (Theorem 3): one layer of KV shifting attention, no residual, MLP, normalisation or
    positional encoding, identity projections, unscaled scores, tied embeddings; vocabulary of T
    tokens, a sequence of length T + 1 in which x_1 .. x_T is every token once and x_{T+1} = x_i
    (the last token repeated, 1 < i < T - 1 as footnote 16 and Table 5 need); the loss is the
    cross-entropy of the last position against x_{i+1}.  As d -> infinity the embeddings
    N(0, I/d) become orthonormal: every inner product of token embeddings is 1 on equal tokens and
    0 otherwise (the idealisation the tool's exact limit [numeric/kvshift24.py: t3_exact_limit]
    evaluates).  KV shifting (Eqs. 4-5): K^ = alpha1 K + alpha2 Shift(K), V^ = beta1 V + beta2 Shift(V),
    Shift pads a zero row x_0 = 0 in front.

    Proved here for every T >= 4, every such input and all real (alpha1, alpha2, beta1, beta2):
    the loss equals Eq. 10 with beta2 a1 in the x_{i-1} and x_T logits (Appendix C's derivation),
    and differs from Eq. 10 as printed (beta2 a2 there, as Table 5) whenever beta2 <> 0 and
    alpha1 <> alpha2; at the paper's (alpha1, beta1) = (0, 0) with alpha2 = 1 - alpha1,
    beta2 = 1 - beta1 and T = 16 the difference lies in (0.0118, 0.0119) (Coq-Interval). *)

From Coq Require Import Reals Lra Lia List Arith Permutation QArith.
From Interval Require Import Tactic.
Import ListNotations.

Open Scope R_scope.

(** ** Finite sums over lists of positions *)

Fixpoint sumR (l : list nat) (f : nat -> R) : R :=
  match l with [] => 0 | a :: l' => f a + sumR l' f end.

Lemma sumR_ext : forall l f g, (forall s, In s l -> f s = g s) -> sumR l f = sumR l g.
Proof.
  induction l as [| a l IH]; intros f g H; simpl; [reflexivity |].
  rewrite (H a (or_introl eq_refl)), (IH f g); [reflexivity |]. intros s Hs; apply H; right; exact Hs.
Qed.

Lemma sumR_plus : forall l f g, sumR l (fun s => f s + g s) = sumR l f + sumR l g.
Proof. induction l as [| a l IH]; intros f g; simpl; [lra | rewrite IH; lra]. Qed.

Lemma sumR_const : forall l c, sumR l (fun _ => c) = INR (length l) * c.
Proof.
  induction l as [| a l IH]; intro c; simpl; [lra |].
  rewrite IH. destruct (length l); simpl; lra.
Qed.

Lemma sumR_delta : forall l p c, NoDup l -> In p l ->
  sumR l (fun s => if Nat.eqb s p then c else 0) = c.
Proof.
  induction l as [| a l IH]; intros p c Hnd Hin; [destruct Hin |].
  inversion Hnd as [| a' l' Hna Hnd']; subst. simpl.
  destruct Hin as [-> | Hin].
  - rewrite Nat.eqb_refl.
    rewrite (sumR_ext l _ (fun _ => 0)), sumR_const; [lra |].
    intros s Hs. destruct (Nat.eqb_spec s p); [subst; contradiction | reflexivity].
  - destruct (Nat.eqb_spec a p); [subst; contradiction |]. rewrite IH; auto; lra.
Qed.

Lemma sumR_app : forall l1 l2 f, sumR (l1 ++ l2) f = sumR l1 f + sumR l2 f.
Proof. induction l1 as [| a l1 IH]; intros l2 f; simpl; [lra | rewrite IH; lra]. Qed.

Lemma sumR_perm : forall l1 l2 f, Permutation l1 l2 -> sumR l1 f = sumR l2 f.
Proof. intros l1 l2 f H; induction H; simpl; lra. Qed.

Lemma sumR_map : forall l (g : nat -> nat) f, sumR (map g l) f = sumR l (fun s => f (g s)).
Proof. induction l as [| a l IH]; intros g f; simpl; [reflexivity | rewrite IH; reflexivity]. Qed.

Lemma NoDup_map_on : forall (g : nat -> nat) l,
  (forall a b, In a l -> In b l -> g a = g b -> a = b) -> NoDup l -> NoDup (map g l).
Proof.
  intros g l Hinj Hnd. induction Hnd as [| a l Hna Hnd IH]; simpl; constructor.
  - intro Hin. apply in_map_iff in Hin as [b [Hb Hbin]].
    assert (b = a) by (apply Hinj; simpl; auto). subst; contradiction.
  - apply IH. intros a' b' Ha Hb; apply Hinj; simpl; auto.
Qed.

(** ** The construction (Eqs. 4-5; Theorem 3's setting, Appendix C) *)

(** Orthonormal token embeddings: the inner product of two rows is 1 on equal tokens, 0 otherwise;
    [None] is the zero row x_0 = 0 that Shift pads in front. *)
Definition ip (u v : option nat) : R :=
  match u, v with Some a, Some b => if Nat.eqb a b then 1 else 0 | _, _ => 0 end.

(** The row at position s (1-indexed) of a token sequence [tok]; position 0 is Shift's zero row. *)
Definition row (tok : nat -> nat) (s : nat) : option nat :=
  match s with O => None | _ => Some (tok s) end.

(** The score of key s at the last position L: x_L^T K^_s with K^_s = alpha1 x_s + alpha2 x_{s-1}
    (identity projections, unscaled, no positional term; Theorem 3 / Appendix C). *)
Definition score (tok : nat -> nat) (L : nat) (alpha1 alpha2 : R) (s : nat) : R :=
  alpha1 * ip (row tok L) (row tok s) + alpha2 * ip (row tok L) (row tok (s - 1)).

(** The softmax normaliser over the keys s = 1..L (the causal row of the last position). *)
Definition Zsum (tok : nat -> nat) (L : nat) (alpha1 alpha2 : R) : R :=
  sumR (seq 1 L) (fun s => exp (score tok L alpha1 alpha2 s)).

Definition weight (tok : nat -> nat) (L : nat) (alpha1 alpha2 : R) (s : nat) : R :=
  exp (score tok L alpha1 alpha2 s) / Zsum tok L alpha1 alpha2.

(** The output logit of token v with tied embeddings: E_v^T sum_s w_s V^_s, V^_s = beta1 x_s + beta2 x_{s-1}. *)
Definition out_logit (tok : nat -> nat) (L : nat) (alpha1 alpha2 beta1 beta2 : R) (v : nat) : R :=
  sumR (seq 1 L) (fun s => weight tok L alpha1 alpha2 s *
                            (beta1 * ip (Some v) (row tok s) + beta2 * ip (Some v) (row tok (s - 1)))).

(** The last-token cross-entropy against [target], softmax over the vocabulary 0..T-1; L = T + 1. *)
Definition loss (T : nat) (tok : nat -> nat) (alpha1 alpha2 beta1 beta2 : R) (target : nat) : R :=
  - ln (exp (out_logit tok (T + 1) alpha1 alpha2 beta1 beta2 target) /
        sumR (seq 0 T) (fun v => exp (out_logit tok (T + 1) alpha1 alpha2 beta1 beta2 v))).

(** ** Eq. 10 *)

(** S = e^{alpha2} + 2 e^{alpha1} + O(T), the O(T) being the T - 2 keys of score 0 (Table 5). *)
Definition S10 (T : nat) (alpha1 alpha2 : R) : R := exp alpha2 + 2 * exp alpha1 + (INR T - 2).

(** Eq. 10 with Appendix C's derivation of the x_{i-1} and x_T logits (beta1/S + beta2 a1); the
    second O(T) is the T - 4 other tokens, each with logit (beta1 + beta2)/S. *)
Definition eq10_appendix_c (T : nat) (alpha1 alpha2 beta1 beta2 : R) : R :=
  let S := S10 T alpha1 alpha2 in
  let a1 := exp alpha1 / S in
  let a2 := exp alpha2 / S in
  let c_t := a2 * beta1 + beta2 / S in
  let c_n := beta1 / S + beta2 * a1 in
  let c_q := 2 * a1 * beta1 + a2 * beta2 in
  let c_o := (beta1 + beta2) / S in
  - ln (exp c_t / (exp c_t + 2 * exp c_n + exp c_q + (INR T - 4) * exp c_o)).

(** Eq. 10 as printed (and Table 5): beta2 a2 in the x_{i-1} and x_T logits. *)
Definition eq10_as_printed (T : nat) (alpha1 alpha2 beta1 beta2 : R) : R :=
  let S := S10 T alpha1 alpha2 in
  let a1 := exp alpha1 / S in
  let a2 := exp alpha2 / S in
  let c_t := a2 * beta1 + beta2 / S in
  let c_n := beta1 / S + beta2 * a2 in
  let c_q := 2 * a1 * beta1 + a2 * beta2 in
  let c_o := (beta1 + beta2) / S in
  - ln (exp c_t / (exp c_t + 2 * exp c_n + exp c_q + (INR T - 4) * exp c_o)).

(** ** The proof *)

Section Theorem3.
Variables (T i : nat) (tok : nat -> nat) (alpha1 alpha2 beta1 beta2 : R).
Hypothesis HT : (4 <= T)%nat.
Hypothesis Hi : (2 <= i <= T - 2)%nat.
Hypothesis Hrange : forall j, (1 <= j <= T)%nat -> (tok j < T)%nat.
Hypothesis Hinj : forall j k, (1 <= j <= T)%nat -> (1 <= k <= T)%nat -> tok j = tok k -> j = k.
Hypothesis Hlast : tok (T + 1) = tok i.

Let L := (T + 1)%nat.

Lemma ip_tok : forall j k, (1 <= j <= T)%nat -> (1 <= k <= T)%nat ->
  ip (Some (tok j)) (row tok k) = if Nat.eqb k j then 1 else 0.
Proof.
  intros j k Hj Hk. unfold row. destruct k as [| k']; [lia |].
  simpl ip. destruct (Nat.eqb_spec (tok j) (tok (S k'))) as [E | E];
    destruct (Nat.eqb_spec (S k') j); try reflexivity.
  - exfalso. apply n. symmetry. apply Hinj; auto.
  - subst; contradiction.
Qed.

(** x_{T+1} = x_i: the row of any position 1..T+1 against a token of position 1..T. *)
Lemma ip_row : forall j s, (1 <= j <= T)%nat -> (1 <= s <= T + 1)%nat ->
  ip (Some (tok j)) (row tok s) = (if Nat.eqb s j then 1 else 0) + (if Nat.eqb s (T + 1) then
                                    (if Nat.eqb j i then 1 else 0) else 0).
Proof.
  intros j s Hj Hs. destruct (Nat.eqb_spec s (T + 1)) as [-> | Hne].
  - assert (E : row tok (T + 1) = row tok i) by (unfold row; destruct i; [lia |];
      replace (T + 1)%nat with (S T) by lia; rewrite <- Hlast; f_equal; f_equal; lia).
    rewrite E, ip_tok by lia. destruct (Nat.eqb_spec (T + 1) j); [lia |].
    destruct (Nat.eqb_spec i j), (Nat.eqb_spec j i); subst; try lia; lra.
  - rewrite ip_tok by lia. lra.
Qed.

Lemma ip_row_shift : forall j s, (1 <= j <= T)%nat -> (1 <= s <= T + 1)%nat ->
  ip (Some (tok j)) (row tok (s - 1)) = if Nat.eqb s (j + 1) then 1 else 0.
Proof.
  intros j s Hj Hs. destruct (Nat.eqb_spec s 1) as [-> | Hs1].
  - assert (E : Nat.eqb 1 (j + 1) = false) by (apply Nat.eqb_neq; lia). rewrite E. reflexivity.
  - rewrite ip_tok by lia. destruct (Nat.eqb_spec (s - 1) j), (Nat.eqb_spec s (j + 1)); try lia; reflexivity.
Qed.

Lemma row_L : row tok L = Some (tok i).
Proof. unfold L, row. replace (T + 1)%nat with (S T) by lia. rewrite <- Hlast. f_equal. f_equal. lia. Qed.

(** The scores: alpha1 at s = i and s = T + 1, alpha2 at s = i + 1, 0 elsewhere (Table 5). *)
Lemma score_val : forall s, (1 <= s <= T + 1)%nat ->
  score tok L alpha1 alpha2 s =
  if Nat.eqb s i then alpha1 else if Nat.eqb s (i + 1) then alpha2 else if Nat.eqb s (T + 1) then alpha1 else 0.
Proof.
  intros s Hs. unfold score. rewrite row_L, ip_row, ip_row_shift by lia.
  destruct (Nat.eqb_spec s i), (Nat.eqb_spec s (i + 1)), (Nat.eqb_spec s (T + 1)), (Nat.eqb_spec i i);
    try lia; lra.
Qed.

Let S := S10 T alpha1 alpha2.

Lemma S_pos : 0 < S.
Proof.
  unfold S, S10. pose proof (exp_pos alpha1). pose proof (exp_pos alpha2).
  assert (4 <= INR T) by (replace 4 with (INR 4) by (simpl; lra); apply le_INR; exact HT). lra.
Qed.

Lemma In_seq1 : forall s n, In s (seq 1 n) <-> (1 <= s <= n)%nat.
Proof. intros s n. rewrite in_seq. lia. Qed.

Lemma Zsum_val : Zsum tok L alpha1 alpha2 = S.
Proof.
  unfold Zsum, S, S10.
  rewrite (sumR_ext _ _ (fun s => ((1 + (if Nat.eqb s i then exp alpha1 - 1 else 0)) +
                                   (if Nat.eqb s (i + 1) then exp alpha2 - 1 else 0)) +
                                   (if Nat.eqb s (T + 1) then exp alpha1 - 1 else 0))).
  - rewrite !sumR_plus, sumR_const, !sumR_delta; try apply seq_NoDup; try (apply In_seq1; unfold L; lia).
    rewrite seq_length. unfold L. rewrite plus_INR. simpl INR. lra.
  - intros s Hs. apply In_seq1 in Hs. unfold L in Hs. rewrite score_val by lia.
    destruct (Nat.eqb_spec s i), (Nat.eqb_spec s (i + 1)), (Nat.eqb_spec s (T + 1)); try lia;
      rewrite ?exp_0; lra.
Qed.

Lemma weight_val : forall s, (1 <= s <= T + 1)%nat ->
  weight tok L alpha1 alpha2 s =
  (if Nat.eqb s i then exp alpha1 else if Nat.eqb s (i + 1) then exp alpha2
   else if Nat.eqb s (T + 1) then exp alpha1 else 1) / S.
Proof.
  intros s Hs. unfold weight. rewrite Zsum_val, score_val by lia.
  destruct (Nat.eqb s i), (Nat.eqb s (i + 1)), (Nat.eqb s (T + 1)); rewrite ?exp_0; reflexivity.
Qed.

(** The logit of the token at position j: beta1 w_j (+ beta1 w_{T+1} when j = i) + beta2 w_{j+1}. *)
Lemma logit_tok : forall j, (1 <= j <= T)%nat ->
  out_logit tok L alpha1 alpha2 beta1 beta2 (tok j) =
  beta1 * weight tok L alpha1 alpha2 j
  + (if Nat.eqb j i then beta1 * weight tok L alpha1 alpha2 (T + 1) else 0)
  + beta2 * weight tok L alpha1 alpha2 (j + 1).
Proof.
  intros j Hj. unfold out_logit.
  rewrite (sumR_ext _ _ (fun s => ((if Nat.eqb s j then beta1 * weight tok L alpha1 alpha2 j else 0) +
            (if Nat.eqb s (T + 1) then (if Nat.eqb j i then beta1 * weight tok L alpha1 alpha2 (T + 1) else 0)
             else 0)) + (if Nat.eqb s (j + 1) then beta2 * weight tok L alpha1 alpha2 (j + 1) else 0))).
  - rewrite !sumR_plus, !sumR_delta; try apply seq_NoDup; try (apply In_seq1; unfold L; lia). reflexivity.
  - intros s Hs. apply In_seq1 in Hs. unfold L in Hs. rewrite ip_row, ip_row_shift by lia.
    destruct (Nat.eqb_spec s j), (Nat.eqb_spec s (T + 1)), (Nat.eqb_spec j i), (Nat.eqb_spec s (j + 1));
      subst; try lia; try ring; replace (j + 1)%nat with (T + 1)%nat by lia; ring.
Qed.

Let a1 := exp alpha1 / S.
Let a2 := exp alpha2 / S.
Let c_t := a2 * beta1 + beta2 / S.
Let c_n := beta1 / S + beta2 * a1.
Let c_q := 2 * a1 * beta1 + a2 * beta2.
Let c_o := (beta1 + beta2) / S.

(** Table 5 with Appendix C's logits, position by position. *)
Lemma logit_val : forall j, (1 <= j <= T)%nat ->
  out_logit tok L alpha1 alpha2 beta1 beta2 (tok j) =
  if Nat.eqb j (i - 1) then c_n else if Nat.eqb j i then c_q else if Nat.eqb j (i + 1) then c_t
  else if Nat.eqb j T then c_n else c_o.
Proof.
  intros j Hj. pose proof S_pos. rewrite logit_tok by lia. rewrite !weight_val by lia.
  unfold c_n, c_q, c_t, c_o, a1, a2.
  repeat match goal with |- context [Nat.eqb ?a ?b] => destruct (Nat.eqb_spec a b); try lia end.
  all: field; lra.
Qed.

(** The softmax normaliser over the vocabulary: every token is x_j for exactly one j in 1..T. *)
Lemma vocab_reindex : forall F, sumR (seq 0 T) F = sumR (seq 1 T) (fun j => F (tok j)).
Proof.
  intro F. rewrite <- (sumR_map (seq 1 T) tok F). apply sumR_perm. symmetry. apply NoDup_Permutation_bis.
  - apply NoDup_map_on; [| apply seq_NoDup]. intros a b Ha Hb; apply In_seq1 in Ha; apply In_seq1 in Hb; auto.
  - rewrite map_length, !seq_length; lia.
  - intros v Hv. apply in_map_iff in Hv as [j [<- Hj]]. apply In_seq1 in Hj. apply in_seq.
    specialize (Hrange j Hj). lia.
Qed.

Lemma vocab_val : sumR (seq 0 T) (fun v => exp (out_logit tok L alpha1 alpha2 beta1 beta2 v)) =
  exp c_t + 2 * exp c_n + exp c_q + (INR T - 4) * exp c_o.
Proof.
  rewrite vocab_reindex.
  rewrite (sumR_ext _ _ (fun j => ((((exp c_o + (if Nat.eqb j (i - 1) then exp c_n - exp c_o else 0)) +
            (if Nat.eqb j i then exp c_q - exp c_o else 0)) + (if Nat.eqb j (i + 1) then exp c_t - exp c_o else 0)) +
            (if Nat.eqb j T then exp c_n - exp c_o else 0)))).
  - rewrite !sumR_plus, sumR_const, !sumR_delta; try apply seq_NoDup; try (apply In_seq1; lia).
    rewrite seq_length. lra.
  - intros j Hj. apply In_seq1 in Hj. rewrite logit_val by lia.
    destruct (Nat.eqb_spec j (i - 1)), (Nat.eqb_spec j i), (Nat.eqb_spec j (i + 1)), (Nat.eqb_spec j T);
      try lia; lra.
Qed.

Lemma loss_val : loss T tok alpha1 alpha2 beta1 beta2 (tok (i + 1)) = eq10_appendix_c T alpha1 alpha2 beta1 beta2.
Proof.
  unfold loss. fold L. rewrite vocab_val, logit_val by lia.
  destruct (Nat.eqb_spec (i + 1) (i - 1)), (Nat.eqb_spec (i + 1) i); try lia. rewrite Nat.eqb_refl.
  reflexivity.
Qed.

End Theorem3.

(** ** Theorem 3, [appendix-c] (proves): for every T >= 4, every input of Theorem 3's setting
    (x_1..x_T a permutation of the vocabulary 0..T-1, x_{T+1} = x_i with 2 <= i <= T-2, target
    x_{i+1}) and all real alpha1, alpha2, beta1, beta2, the orthonormal-limit loss is Eq. 10 with
    beta2 a1 in the x_{i-1} and x_T logits. *)
Theorem theorem3_appendix_c : forall (T i : nat) (tok : nat -> nat) (alpha1 alpha2 beta1 beta2 : R),
  (4 <= T)%nat -> (2 <= i <= T - 2)%nat ->
  (forall j, (1 <= j <= T)%nat -> (tok j < T)%nat) ->
  (forall j k, (1 <= j <= T)%nat -> (1 <= k <= T)%nat -> tok j = tok k -> j = k) ->
  tok (T + 1)%nat = tok i ->
  loss T tok alpha1 alpha2 beta1 beta2 (tok (i + 1)%nat) = eq10_appendix_c T alpha1 alpha2 beta1 beta2.
Proof. intros. apply loss_val; assumption. Qed.

Lemma eq10_readings_differ : forall T alpha1 alpha2 beta1 beta2, (4 <= T)%nat -> beta2 <> 0 -> alpha1 <> alpha2 ->
  eq10_appendix_c T alpha1 alpha2 beta1 beta2 <> eq10_as_printed T alpha1 alpha2 beta1 beta2.
Proof.
  intros T alpha1 alpha2 beta1 beta2 HT Hb Ha. unfold eq10_appendix_c, eq10_as_printed, S10.
  set (S := exp alpha2 + 2 * exp alpha1 + (INR T - 2)).
  assert (HS : 0 < S).
  { unfold S. pose proof (exp_pos alpha1). pose proof (exp_pos alpha2).
    assert (4 <= INR T) by (replace 4 with (INR 4) by (simpl; lra); apply le_INR; exact HT). lra. }
  assert (H4 : 0 <= INR T - 4).
  { assert (4 <= INR T) by (replace 4 with (INR 4) by (simpl; lra); apply le_INR; exact HT). lra. }
  set (ct := exp alpha2 / S * beta1 + beta2 / S). set (cq := 2 * (exp alpha1 / S) * beta1 + exp alpha2 / S * beta2).
  set (co := (beta1 + beta2) / S).
  set (nC := beta1 / S + beta2 * (exp alpha1 / S)). set (nP := beta1 / S + beta2 * (exp alpha2 / S)).
  assert (Hn : nC <> nP).
  { unfold nC, nP. intro E. apply Ha. apply exp_inv.
    assert (E' : beta2 * (exp alpha1 / S) = beta2 * (exp alpha2 / S)) by lra.
    apply Rmult_eq_reg_l in E'; [| exact Hb]. unfold Rdiv in E'. apply Rmult_eq_reg_r in E'; [exact E' |].
    apply Rgt_not_eq, Rinv_0_lt_compat, HS. }
  pose proof (exp_pos ct). pose proof (exp_pos cq). pose proof (exp_pos co). pose proof (exp_pos nC).
  pose proof (exp_pos nP).
  intro E. apply Ropp_eq_compat in E. rewrite !Ropp_involutive in E. apply ln_inv in E.
  - unfold Rdiv in E. apply Rmult_eq_reg_l in E; [| apply Rgt_not_eq, exp_pos].
    apply (f_equal Rinv) in E. rewrite !Rinv_inv in E. apply Hn, exp_inv. lra.
  - apply Rdiv_lt_0_compat; [exact (exp_pos ct) | nra].
  - apply Rdiv_lt_0_compat; [exact (exp_pos ct) | nra].
Qed.

(** ** Theorem 3, [as-printed] (refutes): for every T >= 4, every input of the setting and all real
    parameters with beta2 <> 0 and alpha1 <> alpha2, the orthonormal-limit loss is not Eq. 10 as
    printed. *)
Theorem theorem3_as_printed_refuted : forall (T i : nat) (tok : nat -> nat) (alpha1 alpha2 beta1 beta2 : R),
  (4 <= T)%nat -> (2 <= i <= T - 2)%nat ->
  (forall j, (1 <= j <= T)%nat -> (tok j < T)%nat) ->
  (forall j k, (1 <= j <= T)%nat -> (1 <= k <= T)%nat -> tok j = tok k -> j = k) ->
  tok (T + 1)%nat = tok i -> beta2 <> 0 -> alpha1 <> alpha2 ->
  loss T tok alpha1 alpha2 beta1 beta2 (tok (i + 1)%nat) <> eq10_as_printed T alpha1 alpha2 beta1 beta2.
Proof.
  intros T i tok alpha1 alpha2 beta1 beta2 HT Hi Hr Hj Hl Hb Ha.
  rewrite (theorem3_appendix_c T i tok alpha1 alpha2 beta1 beta2) by assumption.
  apply eq10_readings_differ; assumption.
Qed.

(** The paper's point (alpha1, beta1) = (0, 0) with alpha2 = 1 - alpha1, beta2 = 1 - beta1, T = 16
    (the tool's default): Eq. 10 as printed exceeds the limit by between 0.0118 and 0.0119. *)
Theorem theorem3_as_printed_gap_T16 :
  0.0118 < eq10_as_printed 16 0 1 0 1 - eq10_appendix_c 16 0 1 0 1 < 0.0119.
Proof.
  unfold eq10_as_printed, eq10_appendix_c, S10. replace (INR 16) with 16 by (simpl; lra).
  split; interval with (i_prec 60).
Qed.

Theorem theorem3_as_printed_refuted_T16 : forall (i : nat) (tok : nat -> nat),
  (2 <= i <= 14)%nat ->
  (forall j, (1 <= j <= 16)%nat -> (tok j < 16)%nat) ->
  (forall j k, (1 <= j <= 16)%nat -> (1 <= k <= 16)%nat -> tok j = tok k -> j = k) ->
  tok 17%nat = tok i ->
  0.0118 < eq10_as_printed 16 0 1 0 1 - loss 16 tok 0 1 0 1 (tok (i + 1)%nat) < 0.0119.
Proof.
  intros i tok Hi Hr Hj Hl. rewrite (theorem3_appendix_c 16 i tok 0 1 0 1); try assumption; try lia.
  apply theorem3_as_printed_gap_T16.
Qed.

(** ** The construction over Q (for [Compute]): the same definitions with a stand-in [qexp] for the
    exponential (the tests pass a table of exp values at the few scores that occur). *)

Open Scope Q_scope.

Fixpoint sumQ (l : list nat) (f : nat -> Q) : Q :=
  match l with [] => 0 | a :: l' => f a + sumQ l' f end.

Definition ipQ (u v : option nat) : Q :=
  match u, v with Some a, Some b => if Nat.eqb a b then 1 else 0 | _, _ => 0 end.

Definition scoreQ (tok : nat -> nat) (L : nat) (alpha1 alpha2 : Q) (s : nat) : Q :=
  alpha1 * ipQ (row tok L) (row tok s) + alpha2 * ipQ (row tok L) (row tok (s - 1)).

Definition weightQ (qexp : Q -> Q) (tok : nat -> nat) (L : nat) (alpha1 alpha2 : Q) (s : nat) : Q :=
  qexp (scoreQ tok L alpha1 alpha2 s) / sumQ (seq 1 L) (fun s' => qexp (scoreQ tok L alpha1 alpha2 s')).

Definition out_logitQ (qexp : Q -> Q) (tok : nat -> nat) (L : nat) (alpha1 alpha2 beta1 beta2 : Q) (v : nat) : Q :=
  sumQ (seq 1 L) (fun s => weightQ qexp tok L alpha1 alpha2 s *
                            (beta1 * ipQ (Some v) (row tok s) + beta2 * ipQ (Some v) (row tok (s - 1)))).

(** The logits of Eq. 10 (Appendix C) given e^{alpha1} = E1 and e^{alpha2} = E2: (c_t, c_n, c_q, c_o). *)
Definition eq10_logitsQ (T : nat) (E1 E2 beta1 beta2 : Q) : Q * Q * Q * Q :=
  let S := E2 + 2 * E1 + (inject_Z (Z.of_nat T) - 2) in
  let a1 := E1 / S in
  let a2 := E2 / S in
  (a2 * beta1 + beta2 / S, beta1 / S + beta2 * a1, 2 * a1 * beta1 + a2 * beta2, (beta1 + beta2) / S).

Close Scope Q_scope.

(** * kvshift24: Theorem 1 (Eq. 8, Appendix A), the two-layer width-2d construction

    Source: arXiv 2411.19574 v2, Theorem 1 and Appendix A.  Layer 1 (W_Q = W_K = 0, ALiBi slope p,
    value into the second half, with the residual) gives at position s the stacked row
    (x_s, y_s), y_s = sum_{tau=1}^{s-1} softmax_tau(-p(s-1-tau)) x_tau as Appendix A displays it
    (keys tau = 1..s-1), or, as a standard causal layer, y_s = sum_{tau=1}^{s} softmax_tau(-p(s-tau)) x_tau.
    Layer 2 (no residual, W_O = (I, 0), ALiBi slope m) reads at the last position L the query x_L
    (first half), the key y_s (second half) and the value x_s (first half):
    TF(x) = sum_{s} softmax_s(x_L . y_s / sigma - m(L - s)) x_s over s = 2..L-1 as displayed, or
    s = 1..L as a standard causal layer.  IH is Definition 1 (Eq. 7).  Rows are coordinate functions
    x s k (row s, coordinate k) of any width d; the construction's 2d-wide rows are (x_s, y_s). *)

Definition dotv (d : nat) (u v : nat -> R) : R := sumR (seq 0 d) (fun k => u k * v k).

(** Layer 1's keys at position s and the exponent origin: [strict] is Appendix A's display. *)
Definition l1_keys (strict : bool) (s : nat) : list nat := if strict then seq 1 (s - 1) else seq 1 s.
Definition l1_top (strict : bool) (s : nat) : nat := if strict then (s - 1)%nat else s.

Lemma l1_keys_true : forall s, l1_keys true s = seq 1 (s - 1).
Proof. reflexivity. Qed.
Lemma l1_top_true : forall s, l1_top true s = (s - 1)%nat.
Proof. reflexivity. Qed.

Definition l1_weight (strict : bool) (p : R) (s tau : nat) : R :=
  exp (- p * INR (l1_top strict s - tau)) /
  sumR (l1_keys strict s) (fun t => exp (- p * INR (l1_top strict s - t))).

(** y_s, the second half of layer 1's output at s. *)
Definition y1 (strict : bool) (p : R) (x : nat -> nat -> R) (s : nat) : nat -> R :=
  fun k => sumR (l1_keys strict s) (fun tau => l1_weight strict p s tau * x tau k).

Definition l2_keys (interior : bool) (L : nat) : list nat := if interior then seq 2 (L - 2) else seq 1 L.

Definition softmax_avg (l : list nat) (score : nat -> R) (value : nat -> R) : R :=
  sumR l (fun s => exp (score s) * value s) / sumR l (fun s => exp (score s)).

(** Coordinate k of the two-layer output at the last position L. *)
Definition TF (strict interior : bool) (d L : nat) (x : nat -> nat -> R) (p m sigma : R) (k : nat) : R :=
  softmax_avg (l2_keys interior L) (fun s => dotv d (x L) (y1 strict p x s) / sigma - m * INR (L - s))
              (fun s => x s k).

(** Coordinate k of IH (Definition 1, Eq. 7): softmax over s = 2..L-1 of x_L . x_{s-1}/sigma - m(L - s). *)
Definition IH (d L : nat) (x : nat -> nat -> R) (m sigma : R) (k : nat) : R :=
  softmax_avg (seq 2 (L - 2)) (fun s => dotv d (x L) (x (s - 1)%nat) / sigma - m * INR (L - s))
              (fun s => x s k).

(** ** Sum lemmas *)

Lemma sumR_scal : forall l c f, c * sumR l f = sumR l (fun s => c * f s).
Proof. induction l as [| a l IH]; intros c f; simpl; [ring | rewrite <- IH; ring]. Qed.

Lemma sumR_div : forall l f Z, sumR l f / Z = sumR l (fun s => f s / Z).
Proof. intros l f Z. unfold Rdiv. rewrite Rmult_comm, sumR_scal. apply sumR_ext; intros; ring. Qed.

Lemma sumR_swap : forall l1 l2 (F : nat -> nat -> R),
  sumR l1 (fun a => sumR l2 (fun b => F a b)) = sumR l2 (fun b => sumR l1 (fun a => F a b)).
Proof.
  induction l1 as [| a l1 IH]; intros l2 F; simpl.
  - rewrite sumR_const. ring.
  - rewrite IH, <- sumR_plus. reflexivity.
Qed.

Lemma sumR_le : forall l f g, (forall s, In s l -> f s <= g s) -> sumR l f <= sumR l g.
Proof.
  induction l as [| a l IH]; intros f g H; simpl; [lra |].
  apply Rplus_le_compat; [apply H; left; auto | apply IH; intros; apply H; right; auto].
Qed.

Lemma sumR_abs : forall l f, Rabs (sumR l f) <= sumR l (fun s => Rabs (f s)).
Proof.
  induction l as [| a l IH]; intro f; simpl; [rewrite Rabs_R0; lra |].
  eapply Rle_trans; [apply Rabs_triang | apply Rplus_le_compat_l, IH].
Qed.

Lemma sumR_pos : forall l f, l <> [] -> (forall s, In s l -> 0 < f s) -> 0 < sumR l f.
Proof.
  induction l as [| a l IH]; intros f Hne H; [contradiction |]. simpl.
  destruct l as [| b l'].
  - simpl. rewrite Rplus_0_r. apply H; left; auto.
  - apply Rplus_lt_0_compat; [apply H; left; auto | apply IH; [discriminate | intros; apply H; right; auto]].
Qed.

Lemma exp_le_mono : forall a b, a <= b -> exp a <= exp b.
Proof. intros a b H. destruct (Rle_lt_or_eq_dec _ _ H) as [Hl | ->]; [apply Rlt_le, exp_increasing; auto | lra]. Qed.

Lemma exp_mul_INR : forall p k, exp (- p * INR k) = exp (- p) ^ k.
Proof.
  intros p k. induction k as [| k IH].
  - simpl. rewrite Rmult_0_r, exp_0. reflexivity.
  - rewrite S_INR, <- tech_pow_Rmult, <- IH, <- exp_plus. f_equal. ring.
Qed.

(** ** Layer 1: the off-target mass is at most r = e^{-p} *)

Definition Gs (r : R) (n : nat) : R := sumR (seq 1 n) (fun t => r ^ (n - t)).

Lemma Gs_S : forall r n, Gs r (S n) = 1 + r * Gs r n.
Proof.
  intros r n. unfold Gs. rewrite seq_S, sumR_app.
  rewrite (sumR_ext (seq 1 n) (fun t => r ^ (S n - t)) (fun t => r * r ^ (n - t)))
    by (intros t Ht; apply in_seq in Ht; replace (S n - t)%nat with (S (n - t)) by lia; reflexivity).
  rewrite <- sumR_scal. assert (E : (S n - (1 + n) = 0)%nat) by lia. cbn [sumR]. rewrite E. simpl pow. ring.
Qed.

Lemma Gs_bound : forall r n, 0 <= r <= 1 -> 0 <= Gs r n /\ Gs r n * (1 - r) <= 1.
Proof.
  intros r n Hr. induction n as [| n [IH1 IH2]].
  - unfold Gs. simpl. lra.
  - rewrite Gs_S. split; [nra |]. nra.
Qed.

(** As displayed: |x_L . y_s - x_L . x_{s-1}| <= e^{-p} Gd when every x_L . x_t, t < s, is within Gd of
    x_L . x_{s-1}. *)
Lemma layer1_key_error : forall (d : nat) (u : nat -> R) (x : nat -> nat -> R) (p Gd : R) (s : nat),
  0 <= p -> (2 <= s)%nat ->
  (forall t, (1 <= t <= s - 1)%nat -> Rabs (dotv d u (x t) - dotv d u (x (s - 1)%nat)) <= Gd) ->
  Rabs (dotv d u (y1 true p x s) - dotv d u (x (s - 1)%nat)) <= exp (- p) * Gd.
Proof.
  intros d u x p Gd s Hp Hs HG. set (r := exp (- p)).
  assert (Hr : 0 < r <= 1).
  { unfold r. split; [apply exp_pos |]. rewrite <- exp_0. apply exp_le_mono. lra. }
  set (q := fun t => dotv d u (x t)). destruct s as [| [| n]]; [lia | lia |].
  replace (S (S n) - 1)%nat with (S n) in * by lia.
  assert (Hdy : dotv d u (y1 true p x (S (S n))) =
                sumR (seq 1 (S n)) (fun tau => l1_weight true p (S (S n)) tau * q tau)).
  { unfold dotv, y1, q. rewrite l1_keys_true. replace (S (S n) - 1)%nat with (S n) by lia.
    rewrite (sumR_ext (seq 0 d) _ (fun k => sumR (seq 1 (S n)) (fun tau => u k * (l1_weight true p (S (S n)) tau * x tau k))))
      by (intros; cbv beta; rewrite sumR_scal; reflexivity).
    rewrite sumR_swap. apply sumR_ext. intros tau _. cbv beta. unfold dotv. rewrite sumR_scal. apply sumR_ext. intros; ring. }
  assert (Hw : forall tau, In tau (seq 1 (S n)) -> l1_weight true p (S (S n)) tau = r ^ (S n - tau) / Gs r (S n)).
  { intros tau _. unfold l1_weight, Gs. rewrite l1_top_true, l1_keys_true. replace (S (S n) - 1)%nat with (S n) by lia.
    rewrite exp_mul_INR. f_equal. apply sumR_ext. intros; apply exp_mul_INR. }
  destruct (Gs_bound r n) as [HG0 HG1]; [lra |].
  assert (HD : 0 < Gs r (S n)) by (rewrite Gs_S; nra).
  rewrite Hdy, (sumR_ext _ _ (fun tau => r ^ (S n - tau) / Gs r (S n) * q tau)) by (intros; cbv beta; rewrite Hw; auto).
  (* split off tau = s - 1 = S n *)
  change (dotv d u (x (S n))) with (q (S n)).
  rewrite seq_S, sumR_app. replace (1 + n)%nat with (S n) by lia. cbn [sumR]. rewrite Nat.sub_diag, pow_O.
  assert (Hsplit : sumR (seq 1 n) (fun tau => r ^ (S n - tau) / Gs r (S n) * q tau) + (1 / Gs r (S n) * q (S n) + 0)
                   - q (S n) = sumR (seq 1 n) (fun tau => r ^ (S n - tau) * (q tau - q (S n))) / Gs r (S n)).
  { rewrite sumR_div.
    assert (Hsum : sumR (seq 1 n) (fun tau => r ^ (S n - tau)) = r * Gs r n).
    { unfold Gs. rewrite sumR_scal. apply sumR_ext. intros t Ht. apply in_seq in Ht.
      replace (S n - t)%nat with (S (n - t)) by lia. reflexivity. }
    rewrite (sumR_ext (seq 1 n) (fun tau => r ^ (S n - tau) * (q tau - q (S n)) / Gs r (S n))
               (fun tau => r ^ (S n - tau) / Gs r (S n) * q tau + (- q (S n) / Gs r (S n)) * r ^ (S n - tau)))
      by (intros; cbv beta; field; lra).
    rewrite sumR_plus, <- sumR_scal, Hsum. rewrite Gs_S in *. field. lra. }
  rewrite Hsplit. unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ _)) by (apply Rle_ge, Rlt_le, Rinv_0_lt_compat; lra).
  apply (Rle_trans _ (r * Gs r n * Gd * / Gs r (S n))).
  - apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat; lra |].
    eapply Rle_trans; [apply sumR_abs |].
    assert (Hsum : sumR (seq 1 n) (fun tau => r ^ (S n - tau) * Gd) = r * Gs r n * Gd).
    { unfold Gs. rewrite (sumR_ext (seq 1 n) _ (fun t => (r * Gd) * r ^ (n - t))).
      - rewrite <- sumR_scal. ring.
      - intros t Ht. apply in_seq in Ht. cbv beta. replace (S n - t)%nat with (S (n - t)) by lia. simpl. ring. }
    rewrite <- Hsum. apply sumR_le. intros t Ht. apply in_seq in Ht. rewrite Rabs_mult, Rabs_right.
    + apply Rmult_le_compat_l; [apply pow_le; lra |]. apply HG. lia.
    + apply Rle_ge, pow_le; lra.
  - rewrite Gs_S in *. apply (Rmult_le_reg_r (1 + r * Gs r n)); [lra |].
    rewrite Rmult_assoc, Rinv_l by lra. rewrite Rmult_1_r.
    assert (0 <= Gd).
    { specialize (HG (S n) ltac:(lia)). rewrite Rminus_eq_0, Rabs_R0 in HG. exact HG. }
    assert (0 <= r * Gd * (1 - Gs r n * (1 - r))) by (apply Rmult_le_pos; nra). nra.
Qed.

(** ** Layer 2: a softmax average moves by at most B (e^{2 Delta} - 1) when its scores move by Delta *)

Lemma softmax_avg_perturb : forall l g h c (Delta B : R), l <> [] -> 0 <= Delta ->
  (forall s, In s l -> Rabs (g s - h s) <= Delta) -> (forall s, In s l -> Rabs (c s) <= B) ->
  Rabs (softmax_avg l g c - softmax_avg l h c) <= B * (exp (2 * Delta) - 1).
Proof.
  intros l g h c Delta B Hne HD Hgh Hc.
  set (Zg := sumR l (fun s => exp (g s))). set (Zh := sumR l (fun s => exp (h s))).
  assert (HZg : 0 < Zg) by (apply sumR_pos; auto; intros; apply exp_pos).
  assert (HZh : 0 < Zh) by (apply sumR_pos; auto; intros; apply exp_pos).
  set (E := exp Delta).
  assert (HE : 1 <= E) by (unfold E; rewrite <- exp_0; apply exp_le_mono; lra).
  assert (HE2 : exp (2 * Delta) = E * E) by (unfold E; rewrite <- exp_plus; f_equal; ring).
  assert (Hup : forall s, In s l -> exp (g s) <= exp (h s) * E).
  { intros s Hs. unfold E. rewrite <- exp_plus. apply exp_le_mono. specialize (Hgh s Hs).
    unfold Rabs in Hgh; destruct (Rcase_abs _); lra. }
  assert (Hlo : forall s, In s l -> exp (h s) <= exp (g s) * E).
  { intros s Hs. unfold E. rewrite <- exp_plus. apply exp_le_mono. specialize (Hgh s Hs).
    unfold Rabs in Hgh; destruct (Rcase_abs _); lra. }
  assert (HZup : Zg <= Zh * E).
  { unfold Zg, Zh. rewrite Rmult_comm, sumR_scal. apply sumR_le. intros s Hs. rewrite Rmult_comm. auto. }
  assert (HZlo : Zh <= Zg * E).
  { unfold Zg, Zh. rewrite Rmult_comm, sumR_scal. apply sumR_le. intros s Hs. rewrite Rmult_comm. auto. }
  assert (B0 : 0 <= B) by (destruct l as [| s l']; [contradiction |];
                           specialize (Hc s (or_introl eq_refl)); pose proof (Rabs_pos (c s)); lra).
  assert (Ediff : sumR l (fun s => exp (g s) * c s) / Zg - sumR l (fun s => exp (h s) * c s) / Zh =
                  sumR l (fun s => (exp (g s) / Zg - exp (h s) / Zh) * c s)).
  { rewrite !sumR_div. unfold Rminus.
    rewrite (sumR_ext l (fun s => (exp (g s) / Zg + - (exp (h s) / Zh)) * c s)
                        (fun s => exp (g s) * c s / Zg + (-1) * (exp (h s) * c s / Zh)))
      by (intros; cbv beta; field; lra).
    rewrite sumR_plus, <- sumR_scal. ring. }
  unfold softmax_avg. fold Zg Zh. rewrite Ediff.
  eapply Rle_trans; [apply sumR_abs |].
  apply (Rle_trans _ (sumR l (fun s => exp (h s) / Zh * (E * E - 1) * B))).
  - apply sumR_le. intros s Hs. rewrite Rabs_mult.
    assert (Hgs := exp_pos (g s)). assert (Hhs := exp_pos (h s)).
    specialize (Hup s Hs). specialize (Hlo s Hs).
    apply Rmult_le_compat; [apply Rabs_pos | apply Rabs_pos | | apply Hc; auto].
    set (a := exp (g s)) in *. set (b := exp (h s)) in *.
    assert (P1 : a / Zg <= b / Zh * (E * E)).
    { apply (Rmult_le_reg_r (Zg * Zh)); [nra |]. unfold Rdiv.
      replace (a * / Zg * (Zg * Zh)) with (a * Zh) by (field; lra).
      replace (b * / Zh * (E * E) * (Zg * Zh)) with (b * E * (E * Zg)) by (field; lra). nra. }
    assert (P2 : b / Zh <= a / Zg * (E * E)).
    { apply (Rmult_le_reg_r (Zg * Zh)); [nra |]. unfold Rdiv.
      replace (b * / Zh * (Zg * Zh)) with (b * Zg) by (field; lra).
      replace (a * / Zg * (E * E) * (Zg * Zh)) with (a * E * (E * Zh)) by (field; lra). nra. }
    assert (Q0 : 0 <= b / Zh) by (apply Rlt_le, Rdiv_lt_0_compat; lra).
    assert (A0 : 0 <= a / Zg) by (apply Rlt_le, Rdiv_lt_0_compat; lra).
    unfold Rabs; destruct (Rcase_abs _).
    + (* b/Zh - a/Zg <= b/Zh (1 - 1/E^2) <= b/Zh (E^2 - 1) *)
      assert (HEE : 1 <= E * E) by nra.
      assert (b / Zh - a / Zg <= b / Zh * (E * E - 1)).
      { set (Q := b / Zh) in *. set (P := a / Zg) in *. set (F := E * E) in *.
        assert (HQF : 0 <= Q * ((F - 1) * (F - 1))) by (apply Rmult_le_pos; [exact Q0 | nra]).
        assert (HF : (Q - P) * F <= Q * (F - 1) * F) by nra.
        apply (Rmult_le_reg_r F); [lra | exact HF]. }
      lra.
    + lra.
  - rewrite (sumR_ext l _ (fun s => (E * E - 1) * B * (exp (h s) / Zh))) by (intros; ring).
    rewrite <- sumR_scal, <- sumR_div. fold Zh. unfold Rdiv. rewrite Rinv_r by lra. rewrite HE2. lra.
Qed.

(** ** Theorem 1, [as-displayed] (proves) *)

(** For every width d, every L >= 3, every input x_1..x_L with |x_s[k]| <= B and every dot product
    x_L . x_t within Gd of every other (Gd = 1 for distinct orthonormal tokens; Gd <= 2 B |x_L|_1 in
    general), every p >= 0, every m and every sigma > 0:
    |TF(x)[k] - IH(x)[k]| <= B (e^{2 Gd e^{-p} / sigma} - 1) on every coordinate k. *)
Theorem theorem1_as_displayed_bound :
  forall (d L : nat) (x : nat -> nat -> R) (p m sigma B Gd : R) (k : nat),
  (3 <= L)%nat -> 0 <= p -> 0 < sigma ->
  (forall s, (1 <= s <= L)%nat -> Rabs (x s k) <= B) ->
  (forall t t', (1 <= t <= L)%nat -> (1 <= t' <= L)%nat -> Rabs (dotv d (x L) (x t) - dotv d (x L) (x t')) <= Gd) ->
  Rabs (TF true true d L x p m sigma k - IH d L x m sigma k) <= B * (exp (2 * (Gd * exp (- p) / sigma)) - 1).
Proof.
  intros d L x p m sigma B Gd k HL Hp Hs HB HG.
  assert (HGd : 0 <= Gd) by (specialize (HG 1%nat 1%nat ltac:(lia) ltac:(lia)); rewrite Rminus_eq_0, Rabs_R0 in HG; exact HG).
  unfold TF, IH. simpl l2_keys. apply softmax_avg_perturb.
  - destruct (L - 2)%nat eqn:E; [lia | discriminate].
  - apply Rmult_le_pos; [apply Rmult_le_pos; [exact HGd | apply Rlt_le, exp_pos] | apply Rlt_le, Rinv_0_lt_compat; exact Hs].
  - intros s Hin. apply in_seq in Hin.
    replace (dotv d (x L) (y1 true p x s) / sigma - m * INR (L - s) - (dotv d (x L) (x (s - 1)%nat) / sigma - m * INR (L - s)))
      with ((dotv d (x L) (y1 true p x s) - dotv d (x L) (x (s - 1)%nat)) / sigma) by (field; lra).
    unfold Rdiv. rewrite Rabs_mult, (Rabs_right (/ sigma)) by (apply Rle_ge, Rlt_le, Rinv_0_lt_compat; lra).
    apply Rmult_le_compat_r; [apply Rlt_le, Rinv_0_lt_compat; lra |].
    rewrite Rmult_comm. apply layer1_key_error; [exact Hp | lia |]. intros t Ht. apply HG; lia.
  - intros s Hin. apply in_seq in Hin. apply HB. lia.
Qed.

(** The explicit C e^{-p} form: C = B (2 Gd / sigma) e^{2 Gd / sigma}, with no L in it
    (e^u - 1 <= u e^u, and e^{-p} <= 1 for p >= 0).  For distinct orthonormal tokens (B = Gd = 1) and
    sigma = 1: C = 2 e^2. *)
Theorem theorem1_as_displayed :
  forall (d L : nat) (x : nat -> nat -> R) (p m sigma B Gd : R) (k : nat),
  (3 <= L)%nat -> 0 <= p -> 0 < sigma ->
  (forall s, (1 <= s <= L)%nat -> Rabs (x s k) <= B) ->
  (forall t t', (1 <= t <= L)%nat -> (1 <= t' <= L)%nat -> Rabs (dotv d (x L) (x t) - dotv d (x L) (x t')) <= Gd) ->
  Rabs (TF true true d L x p m sigma k - IH d L x m sigma k) <= B * (2 * Gd / sigma) * exp (2 * Gd / sigma) * exp (- p).
Proof.
  intros d L x p m sigma B Gd k HL Hp Hs HB HG.
  assert (HGd : 0 <= Gd) by (specialize (HG 1%nat 1%nat ltac:(lia) ltac:(lia)); rewrite Rminus_eq_0, Rabs_R0 in HG; exact HG).
  assert (HB0 : 0 <= B) by (specialize (HB 1%nat ltac:(lia)); pose proof (Rabs_pos (x 1%nat k)); lra).
  eapply Rle_trans; [apply theorem1_as_displayed_bound; eauto |].
  set (r := exp (- p)). assert (Hr : 0 < r <= 1).
  { unfold r. split; [apply exp_pos |]. rewrite <- exp_0. apply exp_le_mono. lra. }
  set (u := 2 * (Gd * r / sigma)).
  assert (Hu0 : 0 <= u) by (unfold u; apply Rmult_le_pos; [lra | apply Rmult_le_pos; [nra | apply Rlt_le, Rinv_0_lt_compat; lra]]).
  assert (Hu1 : u <= 2 * Gd / sigma).
  { unfold u. unfold Rdiv. assert (0 < / sigma) by (apply Rinv_0_lt_compat; lra).
    assert (0 <= Gd * / sigma * (1 - r)) by (apply Rmult_le_pos; [apply Rmult_le_pos; lra | lra]). nra. }
  (* e^u - 1 <= u e^u from e^{-u} >= 1 - u *)
  assert (Hexp : exp u - 1 <= u * exp u).
  { pose proof (exp_ineq1_le (- u)). pose proof (exp_pos u).
    assert (exp (- u) * exp u = 1) by (rewrite <- exp_plus; replace (- u + u) with 0 by ring; apply exp_0). nra. }
  assert (Hmono : exp u <= exp (2 * Gd / sigma)) by (apply exp_le_mono; exact Hu1).
  assert (u * exp u <= (2 * Gd / sigma) * r * exp (2 * Gd / sigma)).
  { assert (Hu : u = 2 * Gd / sigma * r) by (unfold u; field; lra).
    assert (0 <= 2 * Gd / sigma) by (unfold Rdiv; apply Rmult_le_pos; [lra | apply Rlt_le, Rinv_0_lt_compat; lra]).
    rewrite Hu at 1. rewrite Rmult_assoc, (Rmult_assoc (2 * Gd / sigma) r (exp (2 * Gd / sigma))).
    apply Rmult_le_compat_l; [exact H |]. apply Rmult_le_compat_l; [lra | exact Hmono]. }
  apply (Rle_trans _ (B * (u * exp u))); [apply Rmult_le_compat_l; lra |].
  replace (B * (2 * Gd / sigma) * exp (2 * Gd / sigma) * r) with (B * ((2 * Gd / sigma) * r * exp (2 * Gd / sigma))) by ring.
  apply Rmult_le_compat_l; lra.
Qed.

(** ** Theorem 1, [causal] (refutes) *)

(** The witness x = (A, B, A), L = 3, with A = e_0 and B = e_1 (orthonormal; every coordinate k >= 2 is 0, so it lives in R^d for every d >= 2). *)
Definition xw (s k : nat) : R :=
  match s, k with 2%nat, 1%nat => 1 | 2%nat, _ => 0 | _, 0%nat => 1 | _, _ => 0 end.

Lemma dotv_xw3 : forall d v, (1 <= d)%nat -> dotv d (xw 3) v = v 0%nat.
Proof.
  intros d v Hd. unfold dotv. destruct d as [| d']; [lia |]. rewrite <- cons_seq. cbn [sumR].
  rewrite (sumR_ext (seq 1 d') _ (fun _ => 0)), sumR_const.
  - simpl. ring.
  - intros k Hk. apply in_seq in Hk. destruct k as [| k']; [lia |]. simpl. ring.
Qed.

Ltac l1_simpl p := unfold y1, l1_weight, l1_keys, l1_top; simpl;
  repeat rewrite Rmult_0_r; rewrite ?exp_0;
  try replace (- p * (1 + 1)) with (- p + - p) by ring; rewrite ?exp_plus; rewrite ?Rmult_1_r.

Lemma causal_dot1 : forall p, y1 false p xw 1 0%nat = 1.
Proof. intro p. l1_simpl p. field. Qed.
Lemma causal_dot2 : forall p, y1 false p xw 2 0%nat = exp (- p) / (exp (- p) + 1).
Proof. intro p. l1_simpl p. pose proof (exp_pos (- p)). field. lra. Qed.
Lemma causal_dot3 : forall p, y1 false p xw 3 0%nat =
  (exp (- p) * exp (- p) + 1) / (exp (- p) * exp (- p) + exp (- p) + 1).
Proof. intro p. l1_simpl p. pose proof (exp_pos (- p)). field. nra. Qed.

(** With standard causal masks (layer 1 over tau = 1..s with bias -p(s - tau), layer 2 over s = 1..L):
    for every width d >= 2, p >= 0, m >= 0 and sigma > 0, IH(x) = B (its B coordinate is 1) while TF's
    B coordinate is below 1/2: the key y_3 stays within 1/3 of x_3 = A (its score beats y_2's by at
    least 1/(6 sigma) + m), so the sup error stays above 1/2 for every p. *)
Theorem theorem1_causal_refuted : forall d p m sigma, (2 <= d)%nat -> 0 <= p -> 0 <= m -> 0 < sigma ->
  IH d 3 xw m sigma 1 = 1 /\ TF false false d 3 xw p m sigma 1 < 1 / 2.
Proof.
  intros d p m sigma Hd Hp Hm Hs. split.
  - unfold IH, softmax_avg. simpl. pose proof (exp_pos (dotv d (xw 3) (xw 1) / sigma - m * 1)). field. lra.
  - unfold TF, softmax_avg, l2_keys. cbn [seq sumR]. rewrite !dotv_xw3 by lia.
    rewrite causal_dot1, causal_dot2, causal_dot3.
    simpl xw. simpl INR. set (r := exp (- p)).
    assert (Hr : 0 < r <= 1) by (unfold r; split; [apply exp_pos | rewrite <- exp_0; apply exp_le_mono; lra]).
    assert (H2 : r / (r + 1) <= 1 / 2) by (apply (Rmult_le_reg_r (2 * (r + 1))); [lra |]; field_simplify; lra).
    assert (H3 : 2 / 3 <= (r * r + 1) / (r * r + r + 1)).
    { apply (Rmult_le_reg_r (3 * (r * r + r + 1))); [nra |]. field_simplify; nra. }
    assert (Hg : r / (r + 1) / sigma - m * 1 < (r * r + 1) / (r * r + r + 1) / sigma - m * 0).
    { assert (r / (r + 1) / sigma < (r * r + 1) / (r * r + r + 1) / sigma).
      { unfold Rdiv at 2 4. apply Rmult_lt_compat_r; [apply Rinv_0_lt_compat; lra | lra]. }
      lra. }
    apply exp_increasing in Hg.
    pose proof (exp_pos (1 / sigma - m * (1 + 1))).
    set (e1 := exp (1 / sigma - m * (1 + 1))) in *.
    set (e2 := exp (r / (r + 1) / sigma - m * 1)) in *.
    set (e3 := exp ((r * r + 1) / (r * r + r + 1) / sigma - m * 0)) in *.
    assert (0 < e2) by apply exp_pos.
    apply (Rmult_lt_reg_r (e1 + (e2 + (e3 + 0)))); [lra |].
    field_simplify; [lra | lra].
Qed.

Theorem theorem1_causal_error : forall d p m sigma, (2 <= d)%nat -> 0 <= p -> 0 <= m -> 0 < sigma ->
  1 / 2 < Rabs (TF false false d 3 xw p m sigma 1 - IH d 3 xw m sigma 1).
Proof.
  intros d p m sigma Hd Hp Hm Hs. destruct (theorem1_causal_refuted d p m sigma Hd Hp Hm Hs) as [HI HT].
  rewrite HI. rewrite Rabs_left by lra. lra.
Qed.

(** ** Theorem 1's construction over Q (for [Compute]): layer 1's weights with r = e^{-p} given as a
    rational, and the layer-2 scores x_L . y_s on a token sequence (orthonormal tokens). *)

Open Scope Q_scope.

Fixpoint qpow (r : Q) (n : nat) : Q := match n with O => 1 | S n' => r * qpow r n' end.

Definition l1_weightQ (strict : bool) (r : Q) (s tau : nat) : Q :=
  qpow r (l1_top strict s - tau) / sumQ (l1_keys strict s) (fun t => qpow r (l1_top strict s - t)).

(** x_L . y_s for a token sequence [tok] (inner product 1 on equal tokens, 0 otherwise). *)
Definition l2_scoreQ (strict : bool) (r : Q) (tok : nat -> nat) (L s : nat) : Q :=
  sumQ (l1_keys strict s) (fun tau => l1_weightQ strict r s tau * (if Nat.eqb (tok tau) (tok L) then 1 else 0)).

Close Scope Q_scope.
