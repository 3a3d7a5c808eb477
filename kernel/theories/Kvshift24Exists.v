(** * kvshift24: Theorem 2 read as the existence statement it is

    Xu, Cheng, Wang, Chen, "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2,
    Sec. 3.1: "Theorem 2  There exists a one-layer single-head KV shifting attention KVSA, with D = d, such
    that IH = KVSA. (9)".  KVSA is Sec. 2.2, Eqs. 4-6: Q, K, V = X W_Q, X W_K, X W_V (Eq. 4);
    K^ = a1 K + a2 Shift(K), V^ = b1 V + b2 Shift(V) (Eq. 5, Shift drops the last row and pads a zero row in
    front); Output = Softmax(Q K^T . M / sigma) V^ W_O with the causal mask M (Eq. 6).  IH is Definition 1
    (Eq. 7): IH(x) = sum_{s=2}^{L-1} softmax_s(x_L x_{s-1}^T / sigma - m|L - s|) x_s.

    Proved here: for every width D >= 1, every a1, a2, b1, b2, every D x D matrix W_Q, W_K, W_V, W_O,
    every score scale and every additive positional bias of the last row (ALiBi's -p(L - s) at any slope p,
    Appendix B's choice, or none, Eq. 6 as printed), and every m and sigma of IH, the layer's output at the
    last position differs from IH on some input of length 3.  The argument reads IH(x_1, x_2, x_3) = x_2 and
    uses three inputs, u = e_0 alone in slot 1, 2 or 3: the output is c * (u W_V W_O) with
    c = (e_2 b1 + e_3 b2)/Z, e_3 b1/Z and (e_1 b1 + e_2 b2)/Z, e_s > 0 the softmax numerators; the first must
    be u, so u W_V W_O <> 0; then the other two force b1 = b2 = 0, and the first is 0.  Only the positivity
    of the softmax weights is used: no score function of any kind rescues the statement. *)

From Coq Require Import Reals Lra.

Open Scope R_scope.

(** ** Vectors of R^D as coordinate functions, D x D matrices as entry functions *)

Definition vec := nat -> R.
Definition mat := nat -> nat -> R.

(** sum_{j < n} f j *)
Fixpoint sumD (n : nat) (f : nat -> R) : R :=
  match n with O => 0 | S k => sumD k f + f k end.

Lemma sumD_ext : forall n f g, (forall j, f j = g j) -> sumD n f = sumD n g.
Proof. induction n as [| n IH]; intros f g H; simpl; [reflexivity | rewrite (IH f g H), H; reflexivity]. Qed.

Lemma sumD_lin : forall n a b f g, sumD n (fun j => a * f j + b * g j) = a * sumD n f + b * sumD n g.
Proof. induction n as [| n IH]; intros a b f g; simpl; [lra | rewrite IH; ring]. Qed.

(** the row vector x times the matrix W: (x W)_i = sum_j x_j W_{j i} *)
Definition vm (D : nat) (x : vec) (W : mat) : vec := fun i => sumD D (fun j => x j * W j i).

Definition dot (D : nat) (x y : vec) : R := sumD D (fun j => x j * y j).

Definition lin (a : R) (x : vec) (b : R) (y : vec) : vec := fun j => a * x j + b * y j.

Definition zerov : vec := fun _ => 0.

(** e_0, the first unit vector *)
Definition unit0 : vec := fun j => if Nat.eqb j 0 then 1 else 0.

Lemma vm_ext : forall D x y W i, (forall j, x j = y j) -> vm D x W i = vm D y W i.
Proof. intros D x y W i H; unfold vm; apply sumD_ext; intro j; rewrite H; reflexivity. Qed.

Lemma vm_lin : forall D a b x y W i, vm D (fun j => a * x j + b * y j) W i = a * vm D x W i + b * vm D y W i.
Proof.
  intros D a b x y W i; unfold vm.
  rewrite <- sumD_lin; apply sumD_ext; intro j; ring.
Qed.

Lemma vm_zero : forall D W i, vm D zerov W i = 0.
Proof.
  intros D W i; unfold vm, zerov.
  rewrite (sumD_ext D _ (fun j => 0 * (fun _ => 0) j + 0 * (fun _ => 0) j)) by (intro; simpl; ring).
  rewrite sumD_lin; ring.
Qed.

(** ** One layer of KV shifting attention with free parameters (Eqs. 4-6) *)

Record Layer := mkLayer {
  a1 : R; a2 : R; b1 : R; b2 : R;
  WQ : mat; WK : mat; WV : mat; WO : mat;
  scale : R;               (* sigma = sqrt(D) in Eq. 6; any value here *)
  bias : nat -> R }.       (* additive bias of the last row at key s (ALiBi: -p(L - s); Eq. 6: 0) *)

(** Eq. 5 at key s with x = x_s and xprev = x_{s-1} (x_0 = 0: the zero row Shift pads) *)
Definition key (D : nat) (P : Layer) (x xprev : vec) : vec := lin (a1 P) (vm D x (WK P)) (a2 P) (vm D xprev (WK P)).
Definition value (D : nat) (P : Layer) (x xprev : vec) : vec :=
  lin (b1 P) (vm D x (WV P)) (b2 P) (vm D xprev (WV P)).

(** the softmax average of three values with numerators e1, e2, e3, then W_O *)
Definition out3 (D : nat) (P : Layer) (e1 e2 e3 : R) (v1 v2 v3 : vec) : vec :=
  vm D (fun j => (e1 * v1 j + e2 * v2 j + e3 * v3 j) / (e1 + e2 + e3)) (WO P).

(** Eq. 6's causal softmax row at the last position L = 3 of x_1 x_2 x_3 *)
Definition kvsa3 (D : nat) (P : Layer) (x1 x2 x3 : vec) : vec :=
  let q := vm D x3 (WQ P) in
  let e s k := exp (dot D q k / scale P + bias P s) in
  out3 D P (e 1%nat (key D P x1 zerov)) (e 2%nat (key D P x2 x1)) (e 3%nat (key D P x3 x2))
       (value D P x1 zerov) (value D P x2 x1) (value D P x3 x2).

(** Definition 1 (Eq. 7) at L = 3: the softmax runs over s = 2 alone *)
Definition ih3 (D : nat) (m sigma : R) (x1 x2 x3 : vec) : vec :=
  fun i => exp (dot D x3 x1 / sigma - m * 1) / exp (dot D x3 x1 / sigma - m * 1) * x2 i.

Lemma ih3_is_x2 : forall D m sigma x1 x2 x3 i, ih3 D m sigma x1 x2 x3 i = x2 i.
Proof. intros; unfold ih3; field; apply Rgt_not_eq, exp_pos. Qed.

(** the output when every value is a multiple of one vector V *)
Lemma out3_scalar : forall D P e1 e2 e3 c1 c2 c3 V v1 v2 v3 i, e1 + e2 + e3 <> 0 ->
  (forall j, v1 j = c1 * V j) -> (forall j, v2 j = c2 * V j) -> (forall j, v3 j = c3 * V j) ->
  out3 D P e1 e2 e3 v1 v2 v3 i = (e1 * c1 + e2 * c2 + e3 * c3) / (e1 + e2 + e3) * vm D V (WO P) i.
Proof.
  intros D P e1 e2 e3 c1 c2 c3 V v1 v2 v3 i HZ H1 H2 H3; unfold out3.
  rewrite (vm_ext D _ (fun j => (e1 * c1 + e2 * c2 + e3 * c3) / (e1 + e2 + e3) * V j + 0 * V j)).
  - rewrite vm_lin; ring.
  - intro j; rewrite H1, H2, H3; field; exact HZ.
Qed.

Lemma value_parts : forall D P x xprev cx cp V,
  (forall j, vm D x (WV P) j = cx * V j) -> (forall j, vm D xprev (WV P) j = cp * V j) ->
  forall j, value D P x xprev j = (b1 P * cx + b2 P * cp) * V j.
Proof. intros D P x xprev cx cp V Hx Hp j; unfold value, lin; rewrite Hx, Hp; ring. Qed.

Lemma vm_zero_scaled : forall D W V j, vm D zerov W j = 0 * V j.
Proof. intros; rewrite vm_zero; ring. Qed.

Lemma vm_unit_scaled : forall D W j, vm D unit0 W j = 1 * vm D unit0 W j.
Proof. intros; ring. Qed.

Lemma sum3_pos : forall e1 e2 e3, 0 < e1 -> 0 < e2 -> 0 < e3 -> e1 + e2 + e3 <> 0.
Proof. intros; lra. Qed.

(** The three probes, each output a multiple of y = (e_0 W_V) W_O at coordinate i *)
Lemma probe_shape : forall D P x1 x2 x3 c1 c2 c3 i,
  (forall j, vm D x1 (WV P) j = c1 * vm D unit0 (WV P) j) ->
  (forall j, vm D x2 (WV P) j = c2 * vm D unit0 (WV P) j) ->
  (forall j, vm D x3 (WV P) j = c3 * vm D unit0 (WV P) j) ->
  exists e1 e2 e3, 0 < e1 /\ 0 < e2 /\ 0 < e3 /\
    kvsa3 D P x1 x2 x3 i =
      (e1 * (b1 P * c1) + e2 * (b1 P * c2 + b2 P * c1) + e3 * (b1 P * c3 + b2 P * c2)) / (e1 + e2 + e3)
      * vm D (vm D unit0 (WV P)) (WO P) i.
Proof.
  intros D P x1 x2 x3 c1 c2 c3 i H1 H2 H3.
  set (V := vm D unit0 (WV P)).
  assert (H0 : forall j, vm D zerov (WV P) j = 0 * V j) by (intro j; apply vm_zero_scaled).
  unfold kvsa3.
  set (q := vm D x3 (WQ P)).
  set (e := fun s k => exp (dot D q k / scale P + bias P s)).
  exists (e 1%nat (key D P x1 zerov)), (e 2%nat (key D P x2 x1)), (e 3%nat (key D P x3 x2)).
  assert (P1 : 0 < e 1%nat (key D P x1 zerov)) by apply exp_pos.
  assert (P2 : 0 < e 2%nat (key D P x2 x1)) by apply exp_pos.
  assert (P3 : 0 < e 3%nat (key D P x3 x2)) by apply exp_pos.
  repeat split; try assumption.
  rewrite (out3_scalar D P _ _ _ (b1 P * c1 + b2 P * 0) (b1 P * c2 + b2 P * c1) (b1 P * c3 + b2 P * c2) V).
  - fold V; unfold e in *; field; lra.
  - apply sum3_pos; assumption.
  - apply value_parts; assumption.
  - apply value_parts; assumption.
  - apply value_parts; assumption.
Qed.

(** ** Theorem 2 as an existence statement: no layer of Eqs. 4-6 equals IH *)

Theorem theorem2_no_eq46_layer_equals_ih :
  forall (D : nat) (P : Layer) (m sigma : R), (1 <= D)%nat ->
  ~ (forall x1 x2 x3 : vec, forall i, (i < D)%nat -> kvsa3 D P x1 x2 x3 i = ih3 D m sigma x1 x2 x3 i).
Proof.
  intros D P m sigma HD H.
  set (y := vm D (vm D unit0 (WV P)) (WO P) 0%nat).
  assert (Hu : unit0 0%nat = 1) by reflexivity.
  assert (Z1 : forall j, vm D zerov (WV P) j = 0 * vm D unit0 (WV P) j) by (intro; apply vm_zero_scaled).
  assert (U1 : forall j, vm D unit0 (WV P) j = 1 * vm D unit0 (WV P) j) by (intro; apply vm_unit_scaled).
  (* probe (0, u, 0): IH = u, so the output's coordinate 0 is 1 *)
  destruct (probe_shape D P zerov unit0 zerov 0 1 0 0%nat Z1 U1 Z1) as (a1' & a2' & a3' & Pa1 & Pa2 & Pa3 & Ea).
  assert (Ha := H zerov unit0 zerov 0%nat HD). rewrite ih3_is_x2, Hu, Ea in Ha. fold y in Ha.
  (* probe (0, 0, u): IH = 0 *)
  destruct (probe_shape D P zerov zerov unit0 0 0 1 0%nat Z1 Z1 U1) as (b1' & b2' & b3' & Pb1 & Pb2 & Pb3 & Eb).
  assert (Hb := H zerov zerov unit0 0%nat HD). rewrite ih3_is_x2, Eb in Hb. fold y in Hb. unfold zerov in Hb.
  (* probe (u, 0, 0): IH = 0 *)
  destruct (probe_shape D P unit0 zerov zerov 1 0 0 0%nat U1 Z1 Z1) as (c1' & c2' & c3' & Pc1 & Pc2 & Pc3 & Ec).
  assert (Hc := H unit0 zerov zerov 0%nat HD). rewrite ih3_is_x2, Ec in Hc. fold y in Hc. unfold zerov in Hc.
  assert (Ny : y <> 0) by (intro Hy; rewrite Hy in Ha; lra).
  assert (Hb1 : b1 P = 0).
  { assert (Hb' : (b3' * b1 P) / (b1' + b2' + b3') * y = 0) by (rewrite <- Hb; field; lra).
    apply Rmult_integral in Hb' as [Hb' | Hb']; [| contradiction].
    unfold Rdiv in Hb'. apply Rmult_integral in Hb' as [Hb' | Hb'].
    - apply Rmult_integral in Hb' as [Hb' | Hb']; [lra | exact Hb'].
    - exfalso. apply (Rinv_neq_0_compat (b1' + b2' + b3')); [lra | exact Hb']. }
  assert (Hb2 : b2 P = 0).
  { assert (Hc' : (c2' * b2 P) / (c1' + c2' + c3') * y = 0) by (rewrite <- Hc, Hb1; field; lra).
    apply Rmult_integral in Hc' as [Hc' | Hc']; [| contradiction].
    unfold Rdiv in Hc'. apply Rmult_integral in Hc' as [Hc' | Hc'].
    - apply Rmult_integral in Hc' as [Hc' | Hc']; [lra | exact Hc'].
    - exfalso. apply (Rinv_neq_0_compat (c1' + c2' + c3')); [lra | exact Hc']. }
  rewrite Hb1, Hb2 in Ha. assert (Ha' : 0 = 1) by (rewrite <- Ha; field; lra). lra.
Qed.

(** The construction the statement is checked through (Appendix B's parameters) is one such layer: the
    existence statement fails for it in particular, and for every other choice as well. *)
