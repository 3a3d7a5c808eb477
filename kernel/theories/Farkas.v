(** * Farkas certificates, checked by the kernel

    The solver layer proves a bounded claim (pr26 Prop. 1 at a length n; [verify realizable]) by an
    UNSAT answer on a system of linear rows  sum_j a_ij x_j  op_i  b_i  over the reals, and certifies
    it with multipliers y_i (Farkas' lemma / Motzkin's transposition theorem): y_i >= 0 on the
    inequalities, the combination sum_i y_i a_i vanishes, and sum_i y_i b_i < 0, or = 0 with a
    positive weight on a strict row.

    [farkas_sound] proves once, for every system and every multiplier list, that a certificate the
    boolean checker [farkas_ok] accepts leaves no real solution.  A certificate file is then replayed
    by computation: [farkas_ok rows ys = true] by [vm_compute], so the kernel checks each certificate
    without trusting the solver that found it nor the Python re-check. *)

From Coq Require Import QArith Qreals Reals Lra List.
Import ListNotations.
Open Scope R_scope.

Inductive rel := Le | Lt | Eq.

(** A row [coeffs . x  rel  rhs]; variables are numbered by positives. *)
Record row := { coeffs : list (positive * Q); op : rel; rhs : Q }.

Definition eval (cs : list (positive * Q)) (x : positive -> R) : R :=
  fold_right (fun vc acc => Q2R (snd vc) * x (fst vc) + acc) 0 cs.

Definition holds (x : positive -> R) (r : row) : Prop :=
  match op r with
  | Le => eval (coeffs r) x <= Q2R (rhs r)
  | Lt => eval (coeffs r) x < Q2R (rhs r)
  | Eq => eval (coeffs r) x = Q2R (rhs r)
  end.

(** The system has a real solution. *)
Definition feasible (rows : list row) : Prop := exists x : positive -> R, Forall (holds x) rows.

(** ** The checker (computes in Q) *)

Fixpoint insert (v : positive) (a : Q) (m : list (positive * Q)) : list (positive * Q) :=
  match m with
  | [] => [(v, a)]
  | (w, b) :: m' => if Pos.eqb v w then (w, Qplus a b) :: m' else (w, b) :: insert v a m'
  end.

Definition normalize (cs : list (positive * Q)) : list (positive * Q) :=
  fold_right (fun vc m => insert (fst vc) (snd vc) m) [] cs.

Definition scale (y : Q) (cs : list (positive * Q)) : list (positive * Q) :=
  map (fun vc => (fst vc, Qmult y (snd vc))) cs.

Fixpoint combination (rows : list row) (ys : list Q) : list (positive * Q) :=
  match rows, ys with
  | r :: rs, y :: ys' => scale y (coeffs r) ++ combination rs ys'
  | _, _ => []
  end.

Fixpoint comb_rhs (rows : list row) (ys : list Q) : Q :=
  match rows, ys with
  | r :: rs, y :: ys' => Qplus (Qmult y (rhs r)) (comb_rhs rs ys')
  | _, _ => 0%Q
  end.

Fixpoint strict_weight (rows : list row) (ys : list Q) : Q :=
  match rows, ys with
  | r :: rs, y :: ys' => Qplus (match op r with Lt => y | _ => 0%Q end) (strict_weight rs ys')
  | _, _ => 0%Q
  end.

Fixpoint signs_ok (rows : list row) (ys : list Q) : bool :=
  match rows, ys with
  | [], [] => true
  | r :: rs, y :: ys' => andb (match op r with Eq => true | _ => Qle_bool 0 y end) (signs_ok rs ys')
  | _, _ => false
  end.

Definition Qlt_bool (a b : Q) : bool := negb (Qle_bool b a).

Lemma Qlt_bool_Rlt : forall a b, Qlt_bool a b = true -> Q2R a < Q2R b.
Proof.
  intros a b H. unfold Qlt_bool in H. apply negb_true_iff in H.
  apply Qlt_Rlt, Qnot_le_lt. intro Hle. apply Qle_bool_iff in Hle. congruence.
Qed.

Definition all_zero (cs : list (positive * Q)) : bool := forallb (fun vc => Qeq_bool (snd vc) 0) cs.

Definition farkas_ok (rows : list row) (ys : list Q) : bool :=
  andb (signs_ok rows ys)
   (andb (all_zero (normalize (combination rows ys)))
     (orb (Qlt_bool (comb_rhs rows ys) 0)
          (andb (Qeq_bool (comb_rhs rows ys) 0) (Qlt_bool 0 (strict_weight rows ys))))).

(** ** Soundness *)

Lemma Q2R0 : Q2R 0 = 0.
Proof. unfold Q2R; simpl. lra. Qed.

Lemma eval_app : forall a b x, eval (a ++ b) x = eval a x + eval b x.
Proof. induction a as [|[v c] a IH]; intros; simpl; [lra | rewrite IH; lra]. Qed.

Lemma eval_insert : forall v a m x, eval (insert v a m) x = Q2R a * x v + eval m x.
Proof.
  intros v a m x; induction m as [|[w b] m IH]; simpl; [lra|].
  destruct (Pos.eqb v w) eqn:E; simpl.
  - apply Pos.eqb_eq in E; subst w. rewrite Q2R_plus. lra.
  - rewrite IH. lra.
Qed.

Lemma eval_normalize : forall cs x, eval (normalize cs) x = eval cs x.
Proof.
  induction cs as [|[v c] cs IH]; intros; simpl; [reflexivity|].
  rewrite eval_insert; simpl. rewrite IH. lra.
Qed.

Lemma eval_scale : forall y cs x, eval (scale y cs) x = Q2R y * eval cs x.
Proof. induction cs as [|[v c] cs IH]; intros; simpl; [lra | rewrite IH, Q2R_mult; lra]. Qed.

Lemma eval_all_zero : forall cs x, all_zero cs = true -> eval cs x = 0.
Proof.
  induction cs as [|[v c] cs IH]; intros x H; simpl in *; [reflexivity|].
  apply andb_true_iff in H as [H1 H2]. apply Qeq_bool_eq, Qeq_eqR in H1. simpl in H1.
  rewrite H1, IH by exact H2. rewrite Q2R0. lra.
Qed.

Lemma Q2R_nonneg : forall y, Qle_bool 0 y = true -> 0 <= Q2R y.
Proof. intros y H. apply Qle_bool_iff, Qle_Rle in H. rewrite Q2R0 in H. exact H. Qed.

(** Adding the rows with their weights: the combined row holds, strictly when a strict row has
    positive weight. *)
Lemma combined_row : forall rows ys x,
  signs_ok rows ys = true -> Forall (holds x) rows ->
  eval (combination rows ys) x <= Q2R (comb_rhs rows ys) /\
  (0 < Q2R (strict_weight rows ys) -> eval (combination rows ys) x < Q2R (comb_rhs rows ys)).
Proof.
  induction rows as [|r rs IH]; intros ys x Hs Hh; destruct ys as [|y ys]; simpl in *; try discriminate.
  - rewrite Q2R0. split; lra.
  - apply andb_true_iff in Hs as [Hy Hs]. inversion Hh as [|? ? Hr Hrs]; subst.
    destruct (IH ys x Hs Hrs) as [IH1 IH2].
    rewrite eval_app, eval_scale, !Q2R_plus, !Q2R_mult.
    unfold holds in Hr.
    destruct (op r); simpl in *; rewrite ?Q2R0 in *.
    + apply Q2R_nonneg in Hy.
      assert (Q2R y * eval (coeffs r) x <= Q2R y * Q2R (rhs r)) by (apply Rmult_le_compat_l; lra).
      split; intros; [lra|]. specialize (IH2 ltac:(lra)). lra.
    + apply Q2R_nonneg in Hy.
      assert (Q2R y * eval (coeffs r) x <= Q2R y * Q2R (rhs r)) by (apply Rmult_le_compat_l; lra).
      split; [lra|]. intros Hpos.
      destruct (Rle_lt_or_eq_dec 0 (Q2R y) Hy) as [Hy0|Hy0].
      * assert (Q2R y * eval (coeffs r) x < Q2R y * Q2R (rhs r)) by (apply Rmult_lt_compat_l; lra). lra.
      * rewrite <- Hy0 in Hpos. specialize (IH2 ltac:(lra)). lra.
    + rewrite Hr. split; intros; [lra|]. specialize (IH2 ltac:(lra)). lra.
Qed.

(** Every certificate the checker accepts refutes its system over the reals. *)
Theorem farkas_sound : forall rows ys, farkas_ok rows ys = true -> ~ feasible rows.
Proof.
  intros rows ys Hok [x Hx]. unfold farkas_ok in Hok.
  apply andb_true_iff in Hok as [Hs Hok]. apply andb_true_iff in Hok as [Hz Hc].
  destruct (combined_row rows ys x Hs Hx) as [H1 H2].
  rewrite <- eval_normalize in H1, H2. rewrite (eval_all_zero _ x Hz) in H1, H2.
  apply orb_true_iff in Hc as [Hc|Hc].
  - apply Qlt_bool_Rlt in Hc. rewrite Q2R0 in Hc. lra.
  - apply andb_true_iff in Hc as [He Hw].
    apply Qeq_bool_eq, Qeq_eqR in He. apply Qlt_bool_Rlt in Hw. rewrite Q2R0 in He, Hw.
    specialize (H2 ltac:(lra)). lra.
Qed.

(** A tiny instance, the shape every replay file has: x <= 0 and -x < 0 (i.e. x > 0) is infeasible
    (multipliers 1, 1: 0 < 0). *)
Definition example_rows : list row :=
  [ {| coeffs := [(1%positive, 1%Q)]; op := Le; rhs := 0%Q |};
    {| coeffs := [(1%positive, (-1)%Q)]; op := Lt; rhs := 0%Q |} ].

Theorem example_infeasible : ~ feasible example_rows.
Proof. apply (farkas_sound example_rows [1%Q; 1%Q]). vm_compute. reflexivity. Qed.
