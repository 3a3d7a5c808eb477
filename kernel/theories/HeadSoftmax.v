(** * The softmax step of a head certificate, checked by the kernel ([verify head --kernel])

    [verify head] encloses every pre-softmax score s_ij of one attention head (query i, key j) in an
    interval from the head's stored weights (arb balls, python-flint), then decides for each checked
    query row whether the attention mass on its target key t,

        a_it = exp s_it / sum_j exp s_ij          (softmax over the admitted keys j of row i),

    is >= tau (the head's claim, e.g. a previous-token head: t = i - 1, tau = 1/2) or < tau.  This theory
    proves once, for every row and every table, that a row the boolean checkers below accept satisfies
    the real-valued statement for EVERY score vector inside the enclosures:

    - [row_ge_sound]: lower bound l_t on s_it, upper bounds h_j on the other keys' scores, and
      [ge_ok] = true  imply  tau <= a_it;
    - [row_lt_sound]: upper bound h_t on s_it, lower bounds l_j on the others, and [lt_ok] = true
      imply  a_it < tau.

    Numbers are fixed point: an integer z stands for z / 2^P ([dy]).  exp is bounded through tables of
    exp(k h), h = 2^-G, whose entries the checker validates against each other (one product each) from
    one bound of exp(h) or exp(-h) obtained by squaring 1/(1 - y) or 1 + y at y = h / 2^K (from
    1 + y <= exp y, the standard library's [exp_ineq1_le]).  Nothing about exp is assumed.

    A certificate file (written by verify.kernel.head_replay) holds the tables and the rows as data and
    proves each row's statement by [vm_compute] on its checker. *)

From Coq Require Import ZArith Reals Lra Lia List.
From Coq Require Sint63.
Import ListNotations.
Open Scope R_scope.

(** ** Fixed point *)

Definition dy (P : nat) (z : Z) : R := IZR z / 2 ^ P.

Lemma pow2_pos : forall n : nat, 0 < 2 ^ n.
Proof. intro n. apply pow_lt. lra. Qed.

Lemma dy_le : forall P a b, (a <= b)%Z -> dy P a <= dy P b.
Proof.
  intros P a b H. unfold dy. apply Rmult_le_compat_r.
  - left. apply Rinv_0_lt_compat, pow2_pos.
  - apply IZR_le, H.
Qed.

Lemma dy_lt : forall P a b, (a < b)%Z -> dy P a < dy P b.
Proof.
  intros P a b H. unfold dy. apply Rmult_lt_compat_r.
  - apply Rinv_0_lt_compat, pow2_pos.
  - apply IZR_lt, H.
Qed.

Lemma dy_add : forall P a b, dy P (a + b) = dy P a + dy P b.
Proof. intros. unfold dy. rewrite plus_IZR. field. apply Rgt_not_eq, pow2_pos. Qed.

Lemma dy_sub : forall P a b, dy P (a - b) = dy P a - dy P b.
Proof. intros. unfold dy. rewrite minus_IZR. field. apply Rgt_not_eq, pow2_pos. Qed.

Lemma dy_one : forall P, dy P (2 ^ Z.of_nat P)%Z = 1.
Proof.
  intro P. unfold dy. rewrite <- pow_IZR.
  field. apply Rgt_not_eq, pow2_pos.
Qed.

Definition scale (P : nat) : Z := (2 ^ Z.of_nat P)%Z.

(** A product of two fixed-point numbers, and a number scaled by 2^P, both over 2^P once more. *)
Lemma dy_prod : forall P a b, dy P a * dy P b = dy P (a * b) / 2 ^ P.
Proof. intros. unfold dy. rewrite mult_IZR. field. apply Rgt_not_eq, pow2_pos. Qed.

Lemma dy_scale : forall P c, dy P c = dy P (c * scale P) / 2 ^ P.
Proof. intros. unfold dy, scale. rewrite mult_IZR, <- pow_IZR. field. apply Rgt_not_eq, pow2_pos. Qed.

Lemma div_pow2_le : forall P x y, x <= y -> x / 2 ^ P <= y / 2 ^ P.
Proof. intros. apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, pow2_pos | assumption]. Qed.

(** [a * b <= c * 2^P] between fixed-point numbers is [dy a * dy b <= dy c], and the other way round. *)
Lemma dy_mul_le : forall P a b c, (a * b <= c * scale P)%Z -> dy P a * dy P b <= dy P c.
Proof. intros. rewrite dy_prod, (dy_scale P c). apply div_pow2_le, dy_le. assumption. Qed.

Lemma dy_mul_ge : forall P a b c, (c * scale P <= a * b)%Z -> dy P c <= dy P a * dy P b.
Proof. intros. rewrite dy_prod, (dy_scale P c). apply div_pow2_le, dy_le. assumption. Qed.

(** ** Bounds of exp at one point, by squaring *)

(** [squares_up S (c :: c' :: cs)]: each next entry bounds the square of the previous from above. *)
Fixpoint squares_up (S : Z) (c : Z) (cs : list Z) : bool :=
  match cs with
  | [] => true
  | c' :: cs' => Z.leb (c * c) (c' * S) && squares_up S c' cs'
  end.

Fixpoint squares_dn (S : Z) (c : Z) (cs : list Z) : bool :=
  match cs with
  | [] => true
  | c' :: cs' => Z.leb 0 c' && Z.leb (c' * S) (c * c) && squares_dn S c' cs'
  end.

Lemma exp_double : forall x, exp (2 * x) = exp x * exp x.
Proof. intro x. replace (2 * x) with (x + x) by ring. apply exp_plus. Qed.

Lemma last_cons : forall (cs : list Z) c c', last (c' :: cs) c = last cs c'.
Proof.
  induction cs as [| a cs IH]; intros c c'; [reflexivity |].
  change (last (c' :: a :: cs) c) with (last (a :: cs) c). rewrite IH. symmetry. apply IH.
Qed.

Lemma squares_up_sound : forall P cs c x,
  squares_up (scale P) c cs = true -> exp x <= dy P c ->
  exp (x * 2 ^ length cs) <= dy P (last cs c).
Proof.
  intro P. induction cs as [| c' cs IH]; intros c x Hs Hx.
  - simpl. rewrite Rmult_1_r. exact Hx.
  - simpl in Hs. apply andb_prop in Hs as [H1 H2]. apply Z.leb_le in H1.
    replace (x * 2 ^ length (c' :: cs)) with ((2 * x) * 2 ^ length cs) by (simpl; ring).
    replace (last (c' :: cs) c) with (last cs c') by (symmetry; apply last_cons).
    apply IH; [exact H2 |].
    rewrite exp_double. eapply Rle_trans; [| apply dy_mul_le; exact H1].
    pose proof (exp_pos x). apply Rmult_le_compat; lra.
Qed.

Lemma squares_dn_sound : forall P cs c x,
  squares_dn (scale P) c cs = true -> 0 <= dy P c -> dy P c <= exp x ->
  dy P (last cs c) <= exp (x * 2 ^ length cs).
Proof.
  intro P. induction cs as [| c' cs IH]; intros c x Hs H0 Hx.
  - simpl. rewrite Rmult_1_r. exact Hx.
  - simpl in Hs. apply andb_prop in Hs as [H12 H3]. apply andb_prop in H12 as [H1 H2].
    apply Z.leb_le in H1. apply Z.leb_le in H2.
    replace (x * 2 ^ length (c' :: cs)) with ((2 * x) * 2 ^ length cs) by (simpl; ring).
    replace (last (c' :: cs) c) with (last cs c') by (symmetry; apply last_cons).
    apply IH; [exact H3 | |].
    + replace 0 with (dy P 0) by (unfold dy; simpl; field; apply Rgt_not_eq, pow2_pos). apply dy_le; exact H1.
    + rewrite exp_double. eapply Rle_trans; [apply dy_mul_ge; exact H2 |].
      apply Rmult_le_compat; lra.
Qed.

(** The starting points at y = 1/n (n > 1): 1 + y <= exp y, so exp y <= 1/(1 - y), exp(-y) <= 1/(1 + y),
    1 + y <= exp y and 1 - y <= exp(-y). *)
Lemma exp_le_inv : forall y, y < 1 -> exp y <= / (1 - y).
Proof.
  intros y Hy. pose proof (exp_ineq1_le (- y)) as H. pose proof (exp_pos y) as Hp.
  rewrite exp_Ropp in H. apply (Rmult_le_reg_r (1 - y)); [lra |].
  rewrite Rinv_l by lra. apply (Rmult_le_reg_r (/ exp y)); [apply Rinv_0_lt_compat; lra |].
  rewrite Rmult_1_l, Rmult_assoc, (Rmult_comm (1 - y)), <- Rmult_assoc, Rinv_r by lra. lra.
Qed.

(** Base of an upper chain at +y (sign true) or -y (sign false), y = 1/n: c0 (n -+ 1) >= S n. *)
Definition base_up (S n c0 : Z) (pos : bool) : bool :=
  Z.ltb 1 n && Z.leb (S * n) (c0 * (if pos then n - 1 else n + 1)).

Definition base_dn (S n c0 : Z) (pos : bool) : bool :=
  Z.ltb 1 n && Z.leb 0 c0 && Z.leb (c0 * n) (S * (if pos then n + 1 else n - 1)).

Definition sgn (pos : bool) : R := if pos then 1 else -1.

Lemma base_up_sound : forall P n c0 pos, base_up (scale P) n c0 pos = true ->
  exp (sgn pos / IZR n) <= dy P c0.
Proof.
  intros P n c0 pos H. unfold base_up in H. apply andb_prop in H as [H1 H2].
  apply Z.ltb_lt in H1. apply Z.leb_le in H2. apply IZR_lt in H1. apply IZR_le in H2.
  rewrite mult_IZR in H2. unfold scale in H2. rewrite <- pow_IZR in H2. pose proof (pow2_pos P) as HP.
  assert (Hn : 0 < IZR n) by lra.
  assert (Hd : 0 < (if pos then IZR (n - 1) else IZR (n + 1))).
  { destruct pos; [rewrite minus_IZR | rewrite plus_IZR]; lra. }
  eapply Rle_trans; [apply exp_le_inv; destruct pos; unfold sgn;
    [apply (Rmult_lt_reg_r (IZR n)); [lra |]; field_simplify; lra
    | apply (Rmult_lt_reg_r (IZR n)); [lra |]; field_simplify; lra] |].
  unfold dy. destruct pos; unfold sgn; cbv beta iota in H2; rewrite ?mult_IZR, ?minus_IZR, ?plus_IZR in *.
  - replace (/ (1 - 1 / IZR n)) with (IZR n / (IZR n - 1)) by (field; lra).
    apply (Rmult_le_reg_r ((IZR n - 1) * 2 ^ P)); [nra |].
    replace (IZR n / (IZR n - 1) * ((IZR n - 1) * 2 ^ P)) with (2 ^ P * IZR n) by (field; lra).
    replace (IZR c0 / 2 ^ P * ((IZR n - 1) * 2 ^ P)) with (IZR c0 * (IZR n - 1)) by (field; lra). lra.
  - replace (/ (1 - -1 / IZR n)) with (IZR n / (IZR n + 1)) by (field; lra).
    apply (Rmult_le_reg_r ((IZR n + 1) * 2 ^ P)); [nra |].
    replace (IZR n / (IZR n + 1) * ((IZR n + 1) * 2 ^ P)) with (2 ^ P * IZR n) by (field; lra).
    replace (IZR c0 / 2 ^ P * ((IZR n + 1) * 2 ^ P)) with (IZR c0 * (IZR n + 1)) by (field; lra). lra.
Qed.

Lemma base_dn_sound : forall P n c0 pos, base_dn (scale P) n c0 pos = true ->
  0 <= dy P c0 /\ dy P c0 <= exp (sgn pos / IZR n).
Proof.
  intros P n c0 pos H. unfold base_dn in H. apply andb_prop in H as [H12 H3].
  apply andb_prop in H12 as [H1 H2]. apply Z.ltb_lt in H1. apply Z.leb_le in H2. apply Z.leb_le in H3.
  apply IZR_lt in H1. apply IZR_le in H2. apply IZR_le in H3.
  rewrite !mult_IZR in H3. unfold scale in H3. rewrite <- pow_IZR in H3. pose proof (pow2_pos P) as HP.
  assert (Hn : 0 < IZR n) by lra. split.
  - unfold dy. apply Rmult_le_pos; [exact H2 | left; apply Rinv_0_lt_compat, HP].
  - eapply Rle_trans; [| apply exp_ineq1_le]. unfold dy.
    apply (Rmult_le_reg_r (IZR n * 2 ^ P)); [nra |].
    replace (IZR c0 / 2 ^ P * (IZR n * 2 ^ P)) with (IZR c0 * IZR n) by (field; lra).
    destruct pos; unfold sgn; cbv beta iota in H3; rewrite ?minus_IZR, ?plus_IZR in H3.
    + replace ((1 + 1 / IZR n) * (IZR n * 2 ^ P)) with (2 ^ P * (IZR n + 1)) by (field; lra). lra.
    + replace ((1 + -1 / IZR n) * (IZR n * 2 ^ P)) with (2 ^ P * (IZR n - 1)) by (field; lra). lra.
Qed.

(** ** Tables of exp(k h)

    A table for one sign holds entries for k = 1, 2, ... (times the sign) after the entry 2^P for k = 0;
    each next entry bounds the previous times the step's bound. *)
Fixpoint steps_up (S e c : Z) (cs : list Z) : bool :=
  match cs with
  | [] => true
  | c' :: cs' => Z.leb (c * e) (c' * S) && steps_up S e c' cs'
  end.

Fixpoint steps_dn (S e c : Z) (cs : list Z) : bool :=
  match cs with
  | [] => true
  | c' :: cs' => Z.leb 0 c' && Z.leb (c' * S) (c * e) && steps_dn S e c' cs'
  end.

Lemma steps_up_sound : forall P e h cs c k,
  exp h <= dy P e -> steps_up (scale P) e c cs = true -> exp (INR k * h) <= dy P c ->
  forall i, (i < length cs)%nat -> exp (INR (k + S i) * h) <= dy P (nth i cs 0%Z).
Proof.
  intros P e h. induction cs as [| c' cs IH]; intros c k He Hs Hc i Hi; [simpl in Hi; lia |].
  simpl in Hs. apply andb_prop in Hs as [H1 H2]. apply Z.leb_le in H1.
  assert (Hc' : exp (INR (S k) * h) <= dy P c').
  { rewrite S_INR. replace ((INR k + 1) * h) with (INR k * h + h) by ring. rewrite exp_plus.
    eapply Rle_trans; [| apply dy_mul_le; exact H1].
    pose proof (exp_pos (INR k * h)). pose proof (exp_pos h). apply Rmult_le_compat; lra. }
  destruct i as [| i].
  - simpl. replace (k + 1)%nat with (S k) by lia. exact Hc'.
  - simpl. replace (k + S (S i))%nat with (S k + S i)%nat by lia. apply (IH c'); auto. simpl in Hi; lia.
Qed.

Lemma steps_dn_sound : forall P e h cs c k,
  0 <= dy P e -> dy P e <= exp h -> steps_dn (scale P) e c cs = true -> 0 <= dy P c ->
  dy P c <= exp (INR k * h) ->
  forall i, (i < length cs)%nat -> 0 <= dy P (nth i cs 0%Z) /\ dy P (nth i cs 0%Z) <= exp (INR (k + S i) * h).
Proof.
  intros P e h cs. induction cs as [| c' cs IH]; intros c k He0 He Hs Hc0 Hc i Hi; [simpl in Hi; lia |].
  simpl in Hs. apply andb_prop in Hs as [H12 H3]. apply andb_prop in H12 as [H1 H2].
  apply Z.leb_le in H1. apply Z.leb_le in H2.
  assert (H0' : 0 <= dy P c').
  { replace 0 with (dy P 0) by (unfold dy; simpl; field; apply Rgt_not_eq, pow2_pos). apply dy_le; exact H1. }
  assert (Hc' : dy P c' <= exp (INR (S k) * h)).
  { rewrite S_INR. replace ((INR k + 1) * h) with (INR k * h + h) by ring. rewrite exp_plus.
    eapply Rle_trans; [apply dy_mul_ge; exact H2 |]. apply Rmult_le_compat; lra. }
  destruct i as [| i].
  - simpl. replace (k + 1)%nat with (S k) by lia. auto.
  - simpl. replace (k + S (S i))%nat with (S k + S i)%nat by lia. apply (IH c'); auto. simpl in Hi; lia.
Qed.

(** One direction's data: the step h = sign / n given by its bound [e] (with the squaring chain
    [chain] from y = 1 / (n 2^length chain)... ) and the entries for k = 1, 2, ... *)
Record side := { n : Z; chain0 : Z; chain : list Z; entries : list Z }.

Definition step_bound (sd : side) : Z := last (chain sd) (chain0 sd).

Definition side_up_ok (P : nat) (pos : bool) (sd : side) : bool :=
  base_up (scale P) (n sd * 2 ^ Z.of_nat (length (chain sd))) (chain0 sd) pos
  && squares_up (scale P) (chain0 sd) (chain sd)
  && steps_up (scale P) (step_bound sd) (scale P) (entries sd).

Definition side_dn_ok (P : nat) (pos : bool) (sd : side) : bool :=
  base_dn (scale P) (n sd * 2 ^ Z.of_nat (length (chain sd))) (chain0 sd) pos
  && squares_dn (scale P) (chain0 sd) (chain sd)
  && steps_dn (scale P) (step_bound sd) (scale P) (entries sd).

Lemma step_value : forall (pos : bool) (n : Z) (m : nat), (0 < n)%Z ->
  sgn pos / IZR (n * 2 ^ Z.of_nat m) * 2 ^ m = sgn pos / IZR n.
Proof.
  intros pos n m Hn. rewrite mult_IZR, <- pow_IZR.
  assert (IZR n <> 0) by (apply not_0_IZR; lia). assert (2 ^ m <> 0) by (apply Rgt_not_eq, pow2_pos).
  field; auto.
Qed.

Lemma base_n_pos : forall S N c0 pos, base_up S N c0 pos = true \/ base_dn S N c0 pos = true -> (1 < N)%Z.
Proof.
  intros S N c0 pos [H | H].
  - unfold base_up in H. apply andb_prop in H as [H _]. apply Z.ltb_lt, H.
  - unfold base_dn in H. apply andb_prop in H as [H _]. apply andb_prop in H as [H _]. apply Z.ltb_lt, H.
Qed.

Lemma side_n_pos : forall (sd : side) m, (1 < n sd * 2 ^ Z.of_nat m)%Z -> (0 < n sd)%Z.
Proof.
  intros sd m H. pose proof (Z.pow_pos_nonneg 2 (Z.of_nat m) ltac:(lia) ltac:(lia)). nia.
Qed.

Lemma side_up_sound : forall P pos sd, side_up_ok P pos sd = true ->
  forall i, (i < length (entries sd))%nat ->
  exp (INR (S i) * (sgn pos / IZR (n sd))) <= dy P (nth i (entries sd) 0%Z).
Proof.
  intros P pos sd H i Hi. unfold side_up_ok in H. apply andb_prop in H as [H12 H3].
  apply andb_prop in H12 as [H1 H2].
  pose proof (base_n_pos _ _ _ _ (or_introl H1)) as Hn. apply side_n_pos in Hn.
  pose proof (base_up_sound P _ _ _ H1) as Hb.
  pose proof (squares_up_sound P (chain sd) (chain0 sd) _ H2 Hb) as Hs.
  rewrite step_value in Hs by exact Hn.
  replace (S i) with (0 + S i)%nat by lia.
  apply (steps_up_sound P (step_bound sd) _ (entries sd) (scale P) 0); auto.
  simpl. rewrite Rmult_0_l, exp_0. unfold scale. rewrite dy_one. lra.
Qed.

Lemma side_dn_sound : forall P pos sd, side_dn_ok P pos sd = true ->
  forall i, (i < length (entries sd))%nat ->
  0 <= dy P (nth i (entries sd) 0%Z) /\ dy P (nth i (entries sd) 0%Z) <= exp (INR (S i) * (sgn pos / IZR (n sd))).
Proof.
  intros P pos sd H i Hi. unfold side_dn_ok in H. apply andb_prop in H as [H12 H3].
  apply andb_prop in H12 as [H1 H2].
  pose proof (base_n_pos _ _ _ _ (or_intror H1)) as Hn. apply side_n_pos in Hn.
  pose proof (base_dn_sound P _ _ _ H1) as [Hb0 Hb].
  pose proof (squares_dn_sound P (chain sd) (chain0 sd) _ H2 Hb0 Hb) as Hs.
  rewrite step_value in Hs by exact Hn.
  assert (Hl0 : 0 <= dy P (last (chain sd) (chain0 sd))).
  { clear -H2 Hb0. revert H2 Hb0. generalize (chain0 sd). induction (chain sd) as [| c cs IH]; intros c0 H H0.
    - exact H0.
    - simpl in H. apply andb_prop in H as [H12 H3]. apply andb_prop in H12 as [H1 _]. apply Z.leb_le in H1.
      replace (last (c :: cs) c0) with (last cs c) by (symmetry; apply last_cons). apply IH; [exact H3 |].
      replace 0 with (dy P 0) by (unfold dy; simpl; field; apply Rgt_not_eq, pow2_pos). apply dy_le; exact H1. }
  replace (S i) with (0 + S i)%nat by lia.
  apply (steps_dn_sound P (step_bound sd) _ (entries sd) (scale P) 0); auto.
  - unfold scale. rewrite dy_one. lra.
  - simpl. rewrite Rmult_0_l, exp_0. unfold scale. rewrite dy_one. lra.
Qed.

(** ** The tables of one certificate and the bounds they give

    Steps h = 1/2^G ([G <= P]): [up_pos] bounds exp(k h) from above for k = 1, 2, ..., [up_neg] exp(-k h)
    from above, [dn_pos] and [dn_neg] from below. *)
Record tables := { P : nat; G : nat; up_pos : side; up_neg : side; dn_pos : side; dn_neg : side }.

Definition tables_ok (tb : tables) : bool :=
  Nat.leb (G tb) (P tb)
  && Z.eqb (n (up_pos tb)) (2 ^ Z.of_nat (G tb)) && Z.eqb (n (up_neg tb)) (2 ^ Z.of_nat (G tb))
  && Z.eqb (n (dn_pos tb)) (2 ^ Z.of_nat (G tb)) && Z.eqb (n (dn_neg tb)) (2 ^ Z.of_nat (G tb))
  && side_up_ok (P tb) true (up_pos tb) && side_up_ok (P tb) false (up_neg tb)
  && side_dn_ok (P tb) true (dn_pos tb) && side_dn_ok (P tb) false (dn_neg tb).

(** ceil(u / 2^q) and floor(u / 2^q), by shifts *)
Definition ceil_shift (u : Z) (q : nat) : Z := (- Z.shiftr (- u) (Z.of_nat q))%Z.
Definition floor_shift (u : Z) (q : nat) : Z := Z.shiftr u (Z.of_nat q).

(** an upper bound of exp(u / 2^P), or None above the table *)
Definition exp_up (tb : tables) (u : Z) : option Z :=
  let m := ceil_shift u (P tb - G tb) in
  if Z.leb m 0 then
    let i := Nat.min (Z.to_nat (- m)) (length (entries (up_neg tb))) in
    match i with O => Some (scale (P tb)) | S i' => Some (nth i' (entries (up_neg tb)) 0%Z) end
  else
    let i := Z.to_nat m in
    if Nat.leb i (length (entries (up_pos tb))) then Some (nth (pred i) (entries (up_pos tb)) 0%Z) else None.

(** a lower bound of exp(u / 2^P) *)
Definition exp_dn (tb : tables) (u : Z) : Z :=
  let m := floor_shift u (P tb - G tb) in
  if Z.leb 0 m then
    let i := Nat.min (Z.to_nat m) (length (entries (dn_pos tb))) in
    match i with O => scale (P tb) | S i' => nth i' (entries (dn_pos tb)) 0%Z end
  else
    let i := Z.to_nat (- m) in
    if Nat.leb i (length (entries (dn_neg tb))) then nth (pred i) (entries (dn_neg tb)) 0%Z else 0%Z.

Lemma exp_mono : forall x y, x <= y -> exp x <= exp y.
Proof. intros x y [H | H]; [left; apply exp_increasing; exact H | subst; lra]. Qed.

Lemma pow2_Z : forall k : nat, IZR (2 ^ Z.of_nat k) = 2 ^ k.
Proof. intro k. rewrite <- pow_IZR. reflexivity. Qed.

Lemma floor_shift_le : forall P G u, (G <= P)%nat ->
  IZR (floor_shift u (P - G)) / 2 ^ G <= dy P u.
Proof.
  intros P G u HG. unfold floor_shift. rewrite Z.shiftr_div_pow2 by lia.
  set (q := (2 ^ Z.of_nat (P - G))%Z).
  assert (Hq : (0 < q)%Z) by (apply Z.pow_pos_nonneg; lia).
  pose proof (Z.mul_div_le u q Hq) as Hm.
  apply IZR_le in Hm. rewrite mult_IZR in Hm. unfold q in Hm. rewrite pow2_Z in Hm.
  unfold dy. pose proof (pow2_pos P). pose proof (pow2_pos G).
  replace (2 ^ P) with (2 ^ (P - G) * 2 ^ G) by (rewrite <- pow_add; f_equal; lia).
  pose proof (pow2_pos (P - G)).
  apply (Rmult_le_reg_r (2 ^ (P - G) * 2 ^ G)); [nra |].
  field_simplify; try lra. unfold q in *. lra.
Qed.

(* ceil(u / 2^q) = - floor(- u / 2^q): the upper end from the lower one *)
Lemma ceil_shift_ge : forall P G u, (G <= P)%nat ->
  dy P u <= IZR (ceil_shift u (P - G)) / 2 ^ G.
Proof.
  intros P G u HG. pose proof (floor_shift_le P G (- u) HG) as H. unfold floor_shift in H. unfold ceil_shift.
  unfold dy in *. rewrite opp_IZR in *. unfold Rdiv in *. rewrite <- !Ropp_mult_distr_l. lra.
Qed.

Lemma step_eq : forall (pos : bool) (k : nat) G, INR k * (sgn pos / IZR (2 ^ Z.of_nat G)) = sgn pos * INR k / 2 ^ G.
Proof. intros. rewrite pow2_Z. field. apply Rgt_not_eq, pow2_pos. Qed.

Lemma tables_parts : forall tb, tables_ok tb = true ->
  (G tb <= P tb)%nat /\ n (up_pos tb) = (2 ^ Z.of_nat (G tb))%Z /\ n (up_neg tb) = (2 ^ Z.of_nat (G tb))%Z
  /\ n (dn_pos tb) = (2 ^ Z.of_nat (G tb))%Z /\ n (dn_neg tb) = (2 ^ Z.of_nat (G tb))%Z
  /\ side_up_ok (P tb) true (up_pos tb) = true /\ side_up_ok (P tb) false (up_neg tb) = true
  /\ side_dn_ok (P tb) true (dn_pos tb) = true /\ side_dn_ok (P tb) false (dn_neg tb) = true.
Proof.
  intros tb H. unfold tables_ok in H.
  repeat match goal with H : andb _ _ = true |- _ => apply andb_prop in H as [? ?] end.
  repeat split; try assumption; try (apply Z.eqb_eq; assumption). apply Nat.leb_le; assumption.
Qed.

Lemma exp_up_sound : forall tb u b, tables_ok tb = true -> exp_up tb u = Some b -> exp (dy (P tb) u) <= dy (P tb) b.
Proof.
  intros tb u b Hok Hb. destruct (tables_parts tb Hok) as (HG & Hn1 & Hn2 & _ & _ & Hu1 & Hu2 & _).
  pose proof (ceil_shift_ge (P tb) (G tb) u HG) as Hc.
  unfold exp_up in Hb. set (m := ceil_shift u (P tb - G tb)) in *.
  eapply Rle_trans; [apply exp_mono; exact Hc |]. clear Hc.
  destruct (Z.leb m 0) eqn:Hm.
  - apply Z.leb_le in Hm.
    set (i := Nat.min (Z.to_nat (- m)) (length (entries (up_neg tb)))) in *.
    assert (Hi : IZR m / 2 ^ G tb <= - INR i / 2 ^ G tb).
    { apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, pow2_pos |].
      assert (INR i <= INR (Z.to_nat (- m))) by (apply le_INR; apply Nat.le_min_l).
      rewrite (INR_IZR_INZ (Z.to_nat (- m))), Z2Nat.id in H by lia. rewrite opp_IZR in H. lra. }
    eapply Rle_trans; [apply exp_mono; exact Hi |].
    destruct i as [| i'] eqn:Hie; injection Hb as <-.
    + simpl. replace (- 0 / 2 ^ G tb) with 0 by (field; apply Rgt_not_eq, pow2_pos). rewrite exp_0.
      unfold scale. rewrite dy_one. lra.
    + assert (Hlt : (i' < length (entries (up_neg tb)))%nat).
      { pose proof (Nat.le_min_r (Z.to_nat (- m)) (length (entries (up_neg tb)))). fold i in H. lia. }
      pose proof (side_up_sound _ _ _ Hu2 i' Hlt) as Hs. rewrite Hn2, step_eq in Hs.
      eapply Rle_trans; [| exact Hs]. right. f_equal. unfold sgn. field. apply Rgt_not_eq, pow2_pos.
  - apply Z.leb_gt in Hm.
    destruct (Nat.leb (Z.to_nat m) (length (entries (up_pos tb)))) eqn:Hl; [| discriminate].
    apply Nat.leb_le in Hl. injection Hb as <-.
    assert (Hlt : (pred (Z.to_nat m) < length (entries (up_pos tb)))%nat) by lia.
    pose proof (side_up_sound _ _ _ Hu1 _ Hlt) as Hs. rewrite Hn1, step_eq in Hs. change (sgn true) with 1 in Hs.
    replace (S (pred (Z.to_nat m))) with (Z.to_nat m) in Hs by lia.
    rewrite INR_IZR_INZ, Z2Nat.id, Rmult_1_l in Hs by lia. exact Hs.
Qed.

Lemma exp_dn_sound : forall tb u, tables_ok tb = true -> dy (P tb) (exp_dn tb u) <= exp (dy (P tb) u).
Proof.
  intros tb u Hok. destruct (tables_parts tb Hok) as (HG & _ & _ & Hn3 & Hn4 & _ & _ & Hd1 & Hd2).
  pose proof (floor_shift_le (P tb) (G tb) u HG) as Hc.
  unfold exp_dn. set (m := floor_shift u (P tb - G tb)) in *.
  eapply Rle_trans; [| apply exp_mono; exact Hc]. clear Hc.
  destruct (Z.leb 0 m) eqn:Hm.
  - apply Z.leb_le in Hm.
    set (i := Nat.min (Z.to_nat m) (length (entries (dn_pos tb)))) in *.
    assert (Hi : INR i / 2 ^ G tb <= IZR m / 2 ^ G tb).
    { apply Rmult_le_compat_r; [left; apply Rinv_0_lt_compat, pow2_pos |].
      assert (INR i <= INR (Z.to_nat m)) by (apply le_INR; apply Nat.le_min_l).
      rewrite (INR_IZR_INZ (Z.to_nat m)), Z2Nat.id in H by lia. lra. }
    eapply Rle_trans; [| apply exp_mono; exact Hi].
    destruct i as [| i'] eqn:Hie.
    + simpl. replace (0 / 2 ^ G tb) with 0 by (field; apply Rgt_not_eq, pow2_pos). rewrite exp_0.
      unfold scale. rewrite dy_one. lra.
    + assert (Hlt : (i' < length (entries (dn_pos tb)))%nat).
      { pose proof (Nat.le_min_r (Z.to_nat m) (length (entries (dn_pos tb)))). fold i in H. lia. }
      pose proof (side_dn_sound _ _ _ Hd1 i' Hlt) as [_ Hs]. rewrite Hn3, step_eq in Hs.
      change (sgn true) with 1 in Hs. rewrite Rmult_1_l in Hs. exact Hs.
  - apply Z.leb_gt in Hm.
    destruct (Nat.leb (Z.to_nat (- m)) (length (entries (dn_neg tb)))) eqn:Hl.
    + apply Nat.leb_le in Hl.
      assert (Hlt : (pred (Z.to_nat (- m)) < length (entries (dn_neg tb)))%nat) by lia.
      pose proof (side_dn_sound _ _ _ Hd2 _ Hlt) as [_ Hs]. rewrite Hn4, step_eq in Hs. change (sgn false) with (-1) in Hs.
      replace (S (pred (Z.to_nat (- m)))) with (Z.to_nat (- m)) in Hs by lia.
      rewrite INR_IZR_INZ, Z2Nat.id, opp_IZR in Hs by lia.
      eapply Rle_trans; [exact Hs |]. right. f_equal. field. apply Rgt_not_eq, pow2_pos.
    + unfold dy at 1. replace (IZR 0 / 2 ^ P tb) with 0 by (simpl; field; apply Rgt_not_eq, pow2_pos).
      left. apply exp_pos.
Qed.

(** ** One query row

    The attention mass on the target key, for the target's score [st] and the other admitted keys' scores
    [so]: a_it = exp s_it / (exp s_it + sum_j exp s_ij).  (The order of the other keys does not matter: a
    sum.) *)
Definition sumR (l : list R) : R := fold_right Rplus 0 l.

Definition mass (st : R) (so : list R) : R := exp st / (exp st + sumR (map exp so)).

(** A row's data, in fixed point: the target's score bound [t] (its lower end for [ge] and [argmax] rows, its upper
    end for [lt] and [argmax_no] rows), the bounds [keys] of the keys stated one by one (upper ends, resp. lower
    ends), and for [ge]/[argmax] rows one upper bound [rest] shared by at most [count] further keys. *)
Record row := { t : Z; keys : list Z; rest : Z; count : Z }.

(** The statements, as a referee reads them: for EVERY score of the target and of every other key within the
    row's bounds (any number of further keys in [lt] and [argmax_no] rows, where more keys only make it truer). *)
Definition ge_row (tb : tables) (tn td : Z) (r : row) : Prop :=
  forall st so so', dy (P tb) (t r) <= st -> Forall2 (fun x h => x <= dy (P tb) h) so (keys r) ->
  Forall (fun x => x <= dy (P tb) (rest r)) so' -> (Z.of_nat (length so') <= count r)%Z ->
  IZR tn / IZR td <= mass st (so ++ so').

Definition lt_row (tb : tables) (tn td : Z) (r : row) : Prop :=
  forall st so so', st <= dy (P tb) (t r) -> Forall2 (fun x l => dy (P tb) l <= x) so (keys r) ->
  mass st (so ++ so') < IZR tn / IZR td.

Definition argmax_row (P : nat) (r : row) : Prop :=
  forall st so so', dy P (t r) <= st -> Forall2 (fun x h => x <= dy P h) so (keys r) ->
  Forall (fun x => x <= dy P (rest r)) so' -> Forall (fun x => x < st) (so ++ so').

Definition argmax_no_row (P : nat) (r : row) : Prop :=
  forall st so so', st <= dy P (t r) -> Forall2 (fun x l => dy P l <= x) so (keys r) ->
  Exists (fun x => st <= x) (so ++ so').

(** The checkers (integers only) *)
Fixpoint sum_up (tb : tables) (lt : Z) (his : list Z) : option Z :=
  match his with
  | [] => Some 0%Z
  | h :: hs => match exp_up tb (h - lt), sum_up tb lt hs with
               | Some a, Some b => Some (a + b)%Z
               | _, _ => None
               end
  end.

Fixpoint sum_dn (tb : tables) (ht : Z) (los : list Z) : Z :=
  match los with
  | [] => 0%Z
  | l :: ls => (exp_dn tb (l - ht) + sum_dn tb ht ls)%Z
  end.

(** mass >= tn/td: tn (1 + sum + count e_rest) <= td, in fixed point *)
Definition ge_ok (tb : tables) (tn td : Z) (r : row) : bool :=
  Z.ltb 0 td && Z.leb 0 (count r) &&
  match sum_up tb (t r) (keys r), exp_up tb (rest r - t r) with
  | Some s, Some e => Z.leb (tn * (scale (P tb) + s + count r * e)) (td * scale (P tb))
  | _, _ => false
  end.

(** mass < tn/td: td < tn (1 + sum), in fixed point *)
Definition lt_ok (tb : tables) (tn td : Z) (r : row) : bool :=
  Z.ltb 0 td && Z.ltb 0 tn && Z.ltb (td * scale (P tb)) (tn * (scale (P tb) + sum_dn tb (t r) (keys r))).

Definition argmax_ok (r : row) : bool := forallb (fun h => Z.ltb h (t r)) (keys r) && Z.ltb (rest r) (t r).

Definition argmax_no_ok (r : row) : bool := existsb (fun l => Z.leb (t r) l) (keys r).

Lemma sum_split : forall st so, exp st + sumR (map exp so) = exp st * (1 + sumR (map (fun s => exp (s - st)) so)).
Proof.
  intros st so. induction so as [| s so IH]; simpl; [ring |].
  assert (E : exp (s - st) * exp st = exp s) by (rewrite <- exp_plus; f_equal; ring).
  replace (exp st + (exp s + sumR (map exp so))) with (exp s + (exp st + sumR (map exp so))) by ring.
  rewrite IH. rewrite <- E. ring.
Qed.

Lemma sumR_app : forall f (a b : list R), sumR (map f (a ++ b)) = sumR (map f a) + sumR (map f b).
Proof. intros f a b. induction a as [| x a IH]; simpl; [ring | rewrite IH; ring]. Qed.

Lemma sumR_exp_nonneg : forall st so, 0 <= sumR (map (fun x => exp (x - st)) so).
Proof. intros st so. induction so as [| x so IH]; simpl; [lra |]. pose proof (exp_pos (x - st)). lra. Qed.

Lemma sum_up_sound : forall tb lt his s st so, tables_ok tb = true -> sum_up tb lt his = Some s ->
  dy (P tb) lt <= st -> Forall2 (fun x h => x <= dy (P tb) h) so his ->
  sumR (map (fun x => exp (x - st)) so) <= dy (P tb) s.
Proof.
  intros tb lt his s st so Hok Hs Ht H. revert s Hs. induction H as [| x h so his Hx _ IH]; intros s Hs.
  - simpl in Hs. injection Hs as <-. unfold dy. simpl. right. field. apply Rgt_not_eq, pow2_pos.
  - simpl in Hs. destruct (exp_up tb (h - lt)) as [a |] eqn:Ha; [| discriminate].
    destruct (sum_up tb lt his) as [b |] eqn:Hb; [| discriminate]. injection Hs as <-.
    simpl. rewrite dy_add. apply Rplus_le_compat; [| apply IH; reflexivity].
    eapply Rle_trans; [| apply (exp_up_sound tb _ _ Hok Ha)]. apply exp_mono. rewrite dy_sub. lra.
Qed.

Lemma sum_rest_sound : forall tb lt H e st so', tables_ok tb = true -> exp_up tb (H - lt) = Some e ->
  dy (P tb) lt <= st -> Forall (fun x => x <= dy (P tb) H) so' ->
  sumR (map (fun x => exp (x - st)) so') <= INR (length so') * dy (P tb) e.
Proof.
  intros tb lt H e st so' Hok He Ht Hso. pose proof (exp_up_sound tb _ _ Hok He) as HE.
  induction Hso as [| x so' Hx _ IH]; [simpl; lra |].
  replace (INR (length (x :: so'))) with (INR (length so') + 1) by (simpl length; rewrite S_INR; reflexivity).
  change (sumR (map (fun x0 => exp (x0 - st)) (x :: so'))) with (exp (x - st) + sumR (map (fun x0 => exp (x0 - st)) so')).
  assert (exp (x - st) <= dy (P tb) e).
  { eapply Rle_trans; [| exact HE]. apply exp_mono. rewrite dy_sub. lra. }
  lra.
Qed.

Lemma sum_dn_sound : forall tb ht los st so, tables_ok tb = true ->
  st <= dy (P tb) ht -> Forall2 (fun x l => dy (P tb) l <= x) so los ->
  dy (P tb) (sum_dn tb ht los) <= sumR (map (fun x => exp (x - st)) so).
Proof.
  intros tb ht los st so Hok Ht H. induction H as [| x l so los Hx _ IH].
  - unfold dy. simpl. right. field. apply Rgt_not_eq, pow2_pos.
  - simpl. rewrite dy_add. apply Rplus_le_compat; [| exact IH].
    eapply Rle_trans; [apply (exp_dn_sound tb _ Hok) |]. apply exp_mono. rewrite dy_sub. lra.
Qed.

Lemma scale_dy : forall P z, IZR z = dy P z * IZR (scale P).
Proof.
  intros P0 z. unfold dy, scale. rewrite pow2_Z. field. apply Rgt_not_eq, pow2_pos.
Qed.

(** mass = 1 / (1 + E) with E the sum of exp(s_j - s_t) *)
Lemma mass_inv : forall st so, mass st so = / (1 + sumR (map (fun x => exp (x - st)) so)).
Proof.
  intros st so. unfold mass. rewrite sum_split. pose proof (exp_pos st). pose proof (sumR_exp_nonneg st so).
  field. split; lra.
Qed.

Theorem row_ge_sound : forall tb tn td r, tables_ok tb = true -> ge_ok tb tn td r = true -> ge_row tb tn td r.
Proof.
  intros tb tn td r Hok H st so so' Ht Hso Hrest Hc. unfold ge_ok in H.
  apply andb_prop in H as [H12 H3]. apply andb_prop in H12 as [Htd Hc0].
  apply Z.ltb_lt in Htd. apply Z.leb_le in Hc0.
  destruct (sum_up tb (t r) (keys r)) as [s |] eqn:Hs; [| discriminate].
  destruct (exp_up tb (rest r - t r)) as [e |] eqn:He; [| discriminate]. apply Z.leb_le in H3.
  pose proof (sum_up_sound tb _ _ s st so Hok Hs Ht Hso) as HE1.
  pose proof (sum_rest_sound tb _ _ e st so' Hok He Ht Hrest) as HE2.
  assert (He0 : 0 <= dy (P tb) e).
  { eapply Rle_trans; [left; apply exp_pos |]. apply (exp_up_sound tb _ _ Hok He). }
  assert (Hlen : INR (length so') <= IZR (count r)).
  { rewrite INR_IZR_INZ. apply IZR_le. exact Hc. }
  rewrite mass_inv, sumR_app.
  set (E := sumR (map (fun x => exp (x - st)) so) + sumR (map (fun x => exp (x - st)) so')).
  assert (HE : E <= dy (P tb) s + IZR (count r) * dy (P tb) e).
  { unfold E. assert (INR (length so') * dy (P tb) e <= IZR (count r) * dy (P tb) e) by
      (apply Rmult_le_compat_r; assumption). lra. }
  assert (HE0 : 0 <= E) by (unfold E; pose proof (sumR_exp_nonneg st so); pose proof (sumR_exp_nonneg st so'); lra).
  apply IZR_le in H3. rewrite !mult_IZR, !plus_IZR, mult_IZR in H3.
  pose proof (pow2_pos (P tb)) as HP. assert (HS : 0 < IZR (scale (P tb))) by (unfold scale; rewrite pow2_Z; exact HP).
  assert (Hd : 0 < IZR td) by (apply IZR_lt; exact Htd).
  assert (Hk : IZR tn / IZR td * (1 + (dy (P tb) s + IZR (count r) * dy (P tb) e)) <= 1).
  { rewrite (scale_dy (P tb) s), (scale_dy (P tb) e) in H3.
    apply (Rmult_le_reg_r (IZR td * IZR (scale (P tb)))); [nra |].
    replace (IZR tn / IZR td * (1 + (dy (P tb) s + IZR (count r) * dy (P tb) e)) * (IZR td * IZR (scale (P tb))))
      with (IZR tn * (IZR (scale (P tb)) + dy (P tb) s * IZR (scale (P tb))
                      + IZR (count r) * (dy (P tb) e * IZR (scale (P tb))))) by (field; lra). lra. }
  destruct (Rle_or_lt 0 (IZR tn)) as [Hn | Hn].
  - apply (Rmult_le_reg_r (1 + E)); [lra |]. rewrite Rinv_l by lra.
    eapply Rle_trans; [| exact Hk]. apply Rmult_le_compat_l; [| lra].
    unfold Rdiv. apply Rmult_le_pos; [lra | left; apply Rinv_0_lt_compat; lra].
  - assert (IZR tn / IZR td < 0) by (unfold Rdiv; pose proof (Rinv_0_lt_compat _ Hd); nra).
    assert (0 < / (1 + E)) by (apply Rinv_0_lt_compat; lra). lra.
Qed.

Theorem row_lt_sound : forall tb tn td r, tables_ok tb = true -> lt_ok tb tn td r = true -> lt_row tb tn td r.
Proof.
  intros tb tn td r Hok H st so so' Ht Hso. unfold lt_ok in H.
  apply andb_prop in H as [H12 H3]. apply andb_prop in H12 as [Htd Htn].
  apply Z.ltb_lt in Htd. apply Z.ltb_lt in Htn. apply Z.ltb_lt in H3.
  pose proof (sum_dn_sound tb _ _ st so Hok Ht Hso) as HE.
  set (s := sum_dn tb (t r) (keys r)) in *.
  apply IZR_lt in H3. rewrite !mult_IZR, plus_IZR in H3.
  pose proof (pow2_pos (P tb)) as HP. assert (HS : 0 < IZR (scale (P tb))) by (unfold scale; rewrite pow2_Z; exact HP).
  assert (Hd : 0 < IZR td) by (apply IZR_lt; exact Htd).
  assert (Hk : 1 < IZR tn / IZR td * (1 + dy (P tb) s)).
  { rewrite (scale_dy (P tb) s) in H3.
    apply (Rmult_lt_reg_r (IZR td * IZR (scale (P tb)))); [nra |].
    replace (IZR tn / IZR td * (1 + dy (P tb) s) * (IZR td * IZR (scale (P tb))))
      with (IZR tn * (IZR (scale (P tb)) + dy (P tb) s * IZR (scale (P tb)))) by (field; lra). lra. }
  assert (Htn' : 0 < IZR tn / IZR td).
  { apply IZR_lt in Htn. unfold Rdiv. apply Rmult_lt_0_compat; [exact Htn | apply Rinv_0_lt_compat, Hd]. }
  rewrite mass_inv, sumR_app.
  pose proof (sumR_exp_nonneg st so'). pose proof (sumR_exp_nonneg st so).
  set (E := sumR (map (fun x => exp (x - st)) so) + sumR (map (fun x => exp (x - st)) so')).
  assert (dy (P tb) s <= E) by (unfold E; lra).
  apply (Rmult_lt_reg_r (1 + E)); [unfold E in *; lra |]. rewrite Rinv_l by (unfold E in *; lra).
  eapply Rlt_le_trans; [exact Hk |]. apply Rmult_le_compat_l; lra.
Qed.

Theorem row_argmax_sound : forall P r, argmax_ok r = true -> argmax_row P r.
Proof.
  intros P0 r H st so so' Ht Hso Hrest. unfold argmax_ok in H. apply andb_prop in H as [H1 H2].
  apply Z.ltb_lt in H2. apply (dy_lt P0) in H2. apply Forall_app. split.
  - clear Hrest H2. induction Hso as [| x h so his Hx _ IH]; constructor.
    + simpl in H1. apply andb_prop in H1 as [H _]. apply Z.ltb_lt in H. apply (dy_lt P0) in H. lra.
    + apply IH. simpl in H1. apply andb_prop in H1 as [_ H]. exact H.
  - eapply Forall_impl; [| exact Hrest]. intros x Hx. simpl in Hx. lra.
Qed.

Theorem row_argmax_no_sound : forall P r, argmax_no_ok r = true -> argmax_no_row P r.
Proof.
  intros P0 r H st so so' Ht Hso. apply Exists_app. left. unfold argmax_no_ok in H.
  induction Hso as [| x l so los Hx _ IH]; [discriminate |].
  simpl in H. apply Bool.orb_true_iff in H as [H | H].
  - apply Exists_cons_hd. apply Z.leb_le in H. apply (dy_le P0) in H. lra.
  - apply Exists_cons_tl. apply IH, H.
Qed.

(** ** Many rows at once: a certificate's rows of one kind, checked by one computation of [forallb] *)
Lemma forallb_Forall : forall (A : Type) (f : A -> bool) (Q : A -> Prop) l,
  (forall a, f a = true -> Q a) -> forallb f l = true -> Forall Q l.
Proof.
  intros A f Q l H. induction l as [| a l IH]; intro Hl; constructor; simpl in Hl;
  apply andb_prop in Hl as [H1 H2]; auto.
Qed.

Theorem rows_ge_sound : forall tb tn td rows, tables_ok tb = true ->
  forallb (ge_ok tb tn td) rows = true -> Forall (ge_row tb tn td) rows.
Proof. intros tb tn td rows Hok. apply forallb_Forall. intros r Hr. exact (row_ge_sound tb tn td r Hok Hr). Qed.

Theorem rows_lt_sound : forall tb tn td rows, tables_ok tb = true ->
  forallb (lt_ok tb tn td) rows = true -> Forall (lt_row tb tn td) rows.
Proof. intros tb tn td rows Hok. apply forallb_Forall. intros r Hr. exact (row_lt_sound tb tn td r Hok Hr). Qed.

Theorem rows_argmax_sound : forall P rows, forallb argmax_ok rows = true -> Forall (argmax_row P) rows.
Proof. intros P0 rows. apply forallb_Forall. intros r Hr. exact (row_argmax_sound P0 r Hr). Qed.

Theorem rows_argmax_no_sound : forall P rows, forallb argmax_no_ok rows = true -> Forall (argmax_no_row P) rows.
Proof. intros P0 rows. apply forallb_Forall. intros r Hr. exact (row_argmax_no_sound P0 r Hr). Qed.

(** A row read from signed 63-bit literals (Coq reads those ten times faster than [Z]'s): the certificate files
    state their rows as [mk t keys rest count]. *)
Definition mk (t0 : PrimInt63.int) (ks : list PrimInt63.int) (rest0 count0 : PrimInt63.int) : row :=
  {| t := Sint63.to_Z t0; keys := map Sint63.to_Z ks; rest := Sint63.to_Z rest0; count := Sint63.to_Z count0 |}.
