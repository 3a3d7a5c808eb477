(** * pr26, Proposition 3: the integer maximiser of delta -> sin(delta theta_min)

    Source: pr26 (positional realizability of length generalization), Proposition 3 ("existence is
    not selection"): with the 16 standard sinusoidal frequencies theta_k = 10000^(-k/16), the lowest
    one theta_min = theta_15 = 10000^(-15/16) ~ 1.78e-4; delta -> sin(delta theta_min) increases up to
    delta = 8833, and at L = 17665 the copy offset ceil(L/2) is 8833, so the sinusoidal kernel
    W[sin_15, cos_15] = 1, W[cos_15, sin_15] = -1 (logit(i, j) = sin((i - j) theta_min)) attends
    copy's target on every query row (alpha_L = 1).

    The numeric facts (where 8833 theta_min sits against pi/2, and 17665 theta_min < pi) are proved by
    Coq-Interval; the maximiser follows for every delta by a short real-analysis argument
    (sin x = cos(pi/2 - x), cos strictly decreasing on [0, pi]); no case enumeration.

    Coq-Interval runs with an explicit precision ([i_prec]): its default instance then computes on
    bignums over Coq's primitive 63-bit integers, so [Print Assumptions] lists the standard library's
    [Uint63]/[PrimInt63] specifications beside the four axioms of the reals (classic,
    functional_extensionality_dep and the two [ClassicalDedekindReals] ones); no primitive-float
    axiom ([FloatAxioms]/[PrimFloat], used at the default precision) appears.  Instantiating
    Interval on Flocq floats over [Z] ([SpecificFloat StdZRadix2]) removes the [Uint63] axioms too,
    but [coqchk] then re-checks the instantiated tactic functor (over 4 minutes), so it is not used. *)

From Coq Require Import Reals Lra Lia ZArith.
From Interval Require Import Tactic.

Open Scope R_scope.

(** theta_min = 10000^(-15/16) (Prop. 3; the k = 15 frequency of the standard sinusoidal PE). *)
Definition theta_min : R := Rpower 10000 (- (15 / 16)).

(** The copy task's offset: ceil(L/2), written as Python's [ceil_half] (-((-L) // 2), floor division). *)
Definition ceil_half (L : Z) : Z := (- ((- L) / 2))%Z.

(** The k-th block of the sinusoidal feature phi(n) = (sin(n theta_min), cos(n theta_min)) and the
    kernel W[sin_15, cos_15] = 1, W[cos_15, sin_15] = -1 (every other entry 0):
    logit(i, j) = phi(i)^T W phi(j). *)
Definition phi_sin (n : Z) : R := sin (IZR n * theta_min).
Definition phi_cos (n : Z) : R := cos (IZR n * theta_min).
Definition logit (i j : Z) : R := phi_sin i * 1 * phi_cos j + phi_cos i * (-1) * phi_sin j.

(** ** Numeric facts (Coq-Interval) *)

Lemma theta_pos : 0 < theta_min.
Proof. unfold theta_min, Rpower. apply exp_pos. Qed.

(** x* = pi / (2 theta_min) ~ 8833.237 lies strictly inside (8833 - 1/2, 8833 + 1/2), on the right of
    8833: 8833 theta_min < pi/2 and pi/2 - 8833 theta_min < theta_min / 2. *)
Lemma num_below_half_pi : 8833 * theta_min < PI / 2.
Proof. unfold theta_min. interval with (i_prec 60). Qed.

Lemma num_near_half_pi : PI / 2 - 8833 * theta_min < theta_min / 2.
Proof. unfold theta_min. interval with (i_prec 60). Qed.

(** Every argument delta theta_min with 0 <= delta <= 17665 lies in [0, pi). *)
Lemma num_range_below_pi : 17665 * theta_min < PI.
Proof. unfold theta_min. interval with (i_prec 40). Qed.

(** ** The real-analysis step *)

Lemma sin_as_cos_abs : forall x, Rabs (x - PI / 2) <= PI -> sin x = cos (Rabs (x - PI / 2)).
Proof.
  intros x _. rewrite <- (cos_shift x).
  unfold Rabs; destruct (Rcase_abs (x - PI / 2)).
  - f_equal; lra.
  - rewrite <- cos_neg; f_equal; lra.
Qed.

(** The distance |delta theta_min - pi/2| for an integer delta <> 8833 exceeds that of 8833. *)
Lemma dist_strict : forall delta : Z, delta <> 8833%Z ->
  Rabs (8833 * theta_min - PI / 2) < Rabs (IZR delta * theta_min - PI / 2).
Proof.
  intros d Hd. pose proof theta_pos as Ht. pose proof num_below_half_pi. pose proof num_near_half_pi.
  rewrite (Rabs_left (8833 * theta_min - PI / 2)) by lra.
  destruct (Z_lt_le_dec d 8833) as [Hlt | Hge].
  - assert (IZR d <= 8832) by (apply IZR_le; lia).
    assert (IZR d * theta_min <= 8832 * theta_min) by (apply Rmult_le_compat_r; lra).
    rewrite Rabs_left by lra. lra.
  - assert (IZR d >= 8834) by (apply Rle_ge, IZR_le; lia).
    assert (IZR d * theta_min >= 8834 * theta_min) by (apply Rle_ge, Rmult_le_compat_r; lra).
    unfold Rabs; destruct (Rcase_abs _); lra.
Qed.

(** ** Proposition 3 (a): the strict unique maximiser *)

(** For every integer 0 <= delta <= 17665 other than 8833: sin(delta theta_min) < sin(8833 theta_min). *)
Theorem prop3_unique_maximiser : forall delta : Z, (0 <= delta <= 17665)%Z -> delta <> 8833%Z ->
  sin (IZR delta * theta_min) < sin (8833 * theta_min).
Proof.
  intros d Hr Hd. pose proof theta_pos as Ht. pose proof num_range_below_pi. pose proof num_below_half_pi.
  pose proof PI_RGT_0.
  assert (Hd0 : 0 <= IZR d) by (apply IZR_le; lia).
  assert (Hd1 : IZR d <= 17665) by (apply IZR_le; lia).
  assert (IZR d * theta_min <= 17665 * theta_min) by (apply Rmult_le_compat_r; lra).
  assert (0 <= IZR d * theta_min) by (apply Rmult_le_pos; lra).
  assert (Rabs (IZR d * theta_min - PI / 2) <= PI / 2)
    by (unfold Rabs; destruct (Rcase_abs _); lra).
  assert (Rabs (8833 * theta_min - PI / 2) <= PI / 2)
    by (unfold Rabs; destruct (Rcase_abs _); lra).
  rewrite (sin_as_cos_abs (IZR d * theta_min)) by lra.
  rewrite (sin_as_cos_abs (8833 * theta_min)) by lra.
  apply cos_decreasing_1; try apply Rabs_pos; try lra.
  apply dist_strict; exact Hd.
Qed.

(** "delta -> sin(delta theta_min) increases up to delta = 8833": strictly, over the integers. *)
Theorem prop3_increasing_up_to : forall d1 d2 : Z, (0 <= d1)%Z -> (d1 < d2)%Z -> (d2 <= 8833)%Z ->
  sin (IZR d1 * theta_min) < sin (IZR d2 * theta_min).
Proof.
  intros d1 d2 H1 H12 H2. pose proof theta_pos as Ht. pose proof num_below_half_pi. pose proof PI_RGT_0.
  assert (0 <= IZR d1) by (apply IZR_le; lia).
  assert (IZR d1 < IZR d2) by (apply IZR_lt; lia).
  assert (IZR d2 <= 8833) by (apply IZR_le; lia).
  assert (IZR d2 * theta_min <= 8833 * theta_min) by (apply Rmult_le_compat_r; lra).
  assert (IZR d1 * theta_min < IZR d2 * theta_min) by (apply Rmult_lt_compat_r; lra).
  assert (0 <= IZR d1 * theta_min) by (apply Rmult_le_pos; lra).
  apply sin_increasing_1; lra.
Qed.

(** ** Proposition 3 (b): the copy offset at L = 17665 and alpha_L = 1 *)

Theorem prop3_copy_offset : ceil_half 17665 = 8833%Z.
Proof. reflexivity. Qed.

(** ceil(L/2) = 8833 exactly at L = 17665 and 17666 (lia over the floor-division definition). *)
Theorem prop3_copy_offset_iff : forall L : Z, ceil_half L = 8833%Z <-> (L = 17665 \/ L = 17666)%Z.
Proof.
  intro L. unfold ceil_half. split; intro H.
  - assert (Hq : ((- L) / 2 = -8833)%Z) by lia. Z.div_mod_to_equations. lia.
  - destruct H; subst; reflexivity.
Qed.

Lemma logit_is_sin : forall i j : Z, logit i j = sin (IZR (i - j) * theta_min).
Proof.
  intros i j. unfold logit, phi_sin, phi_cos. rewrite minus_IZR, Rmult_minus_distr_r, sin_minus. ring.
Qed.

(** Copy at L = 17665 (query rows i = ceil(L/2) .. L-1, target i - ceil(L/2), keys 0..i): on every
    row the target's logit is strictly above every other key's, so the row attends its target
    (strict argmax; ties would fail) and alpha_L = 1. *)
Theorem prop3_copy_alpha_one : forall i j : Z,
  (ceil_half 17665 <= i <= 17665 - 1)%Z -> (0 <= j <= i)%Z -> j <> (i - ceil_half 17665)%Z ->
  logit i j < logit i (i - ceil_half 17665).
Proof.
  intros i j Hi Hj Hne. rewrite prop3_copy_offset in *.
  rewrite !logit_is_sin. replace (i - (i - 8833))%Z with 8833%Z by lia.
  apply prop3_unique_maximiser; lia.
Qed.
