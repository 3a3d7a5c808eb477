"""Hostile certificates against ``verify recheck --kernel``'s Coq replay (kernel/replay.py).

The replay writes each certificate as a Coq file; everything taken from the file (claim, obligation,
variable names, numbers) is data and must never change what Coq checks.  A forged case must be refused
by the kernel on its own, whatever the Python re-check in front of it says.
"""

from __future__ import annotations

import json
import re
import shutil
from fractions import Fraction

import pytest
from kernel_support import compile_theory, need_coq

from verify.kernel.driver import THEORIES
from verify.kernel.replay import NotReplayable, _q, certificate_text, replay_documents


def _doc(cases, **extra) -> dict:
    doc = {"format": "verify-certificate/1", "answer": "unsat", "claim": "pr26:prop1", "obligation": "test",
           "certificate": {"kind": "farkas", "cases": cases}}
    doc.update(extra)
    return doc


#: a feasible system (x <= 1) whose "multiplier" 1 refutes nothing: a forgery
_FORGED = {"rows": [{"coeffs": {'a"': "1"}, "op": "<=", "rhs": "1"}], "multipliers": ["1"]}
#: a genuine refutation: 0 <= -1
_GENUINE = {"rows": [{"coeffs": {'b"': "0"}, "op": "<=", "rhs": "-1"}], "multipliers": ["1"]}


def test_a_quote_in_a_variable_name_cannot_hide_a_forged_case() -> None:
    """A '"' in case 0's names must not open a Coq string inside its comment that runs to case 1's comment
    (case 0's rows and theorem would never be compiled and the kernel replay would accept the forgery)."""
    doc = _doc([_FORGED, _GENUINE])
    text = certificate_text(doc)
    assert '"' not in text  # the generated file has no string literal; a name never brings one
    need_coq()
    (label, ok, message), = replay_documents([("forged", json.dumps(doc).encode())])
    assert not ok, message
    assert "refuses" in message


def test_the_claim_field_is_never_coq_code() -> None:
    """The claim went into the header comment unescaped: '*) CMD (*' ran CMD in Coq."""
    doc = _doc([_GENUINE], claim="*) Fail Check 1. (*", obligation="x *) y (* z \" w")
    text = certificate_text(doc)
    header = text.split("From Coq Require", 1)[0]
    assert header.count("(*") == 1 and header.count("*)") == 1 and '"' not in header
    need_coq()
    (label, ok, message), = replay_documents([("inject", json.dumps(doc).encode())])
    assert ok, message  # a genuine certificate, whatever its claim text says


@pytest.mark.parametrize("bad", ["1/0", "-1/0", "0/0"])
def test_a_zero_denominator_is_not_replayable(bad: str) -> None:
    with pytest.raises(NotReplayable, match="zero denominator"):
        _q(bad)
    doc = _doc([{"rows": [{"coeffs": {"x": "1"}, "op": "<=", "rhs": bad}], "multipliers": ["1"]}])
    if shutil.which("coqc") is None:
        return
    (label, ok, message), = replay_documents([("zero", json.dumps(doc).encode())])
    assert not ok and "zero denominator" in message


@pytest.mark.parametrize("rows", [5, "rows", None, {"a": 1}])
def test_a_case_whose_rows_are_not_a_list_is_not_replayable(rows) -> None:
    with pytest.raises(NotReplayable):
        certificate_text(_doc([{"rows": rows, "multipliers": []}]))


def _hex_value(literal: str) -> Fraction:
    m = re.fullmatch(r"\((-?)0x([0-9a-f]+) # 0x([0-9a-f]+)\)", literal)
    assert m, literal
    return Fraction(int(m.group(2), 16) * (-1 if m.group(1) else 1), int(m.group(3), 16))


@pytest.mark.parametrize("text", ["0", "-7", "3/4", "-12/8", "9" * 2000, "-1/" + "7" * 2000])
def test_numbers_are_written_in_hexadecimal_with_their_value(text: str) -> None:
    """Coq reads a decimal numeral in time quadratic in its digits (about 10 s for 2000 digits on this
    machine); the replay writes hexadecimal, which Coq reads in linear time."""
    literal = _q(text)
    assert _hex_value(literal) == Fraction(text)
    assert len(literal) < 0.9 * len(text) + 20


def test_huge_rationals_replay_and_a_huge_forgery_is_refused() -> None:
    need_coq()
    big = "9" * 2000
    genuine = {"rows": [{"coeffs": {"x": big}, "op": "<=", "rhs": "-" + big},
                        {"coeffs": {"x": "-" + big}, "op": "<=", "rhs": "-1/" + big}], "multipliers": ["1", "1"]}
    forged = {"rows": [{"coeffs": {"x": big}, "op": "<=", "rhs": big}], "multipliers": ["1"]}
    out = replay_documents([("genuine", json.dumps(_doc([genuine])).encode()),
                            ("forged", json.dumps(_doc([forged])).encode())])
    assert [ok for _, ok, _ in out] == [True, False], out


# ----------------------------------------------------------------------------------------------------------
# Non-vacuity: each refutation's hypotheses hold together (so its conclusion is a real counterexample), and
# the hypotheses of pr26 Theorem 1 (ii) are met by a concrete head (so the implication is not empty).

_NV_KVSHIFT24 = r"""
From Coq Require Import Reals Lra Lia List.
Require Import Verify.Kvshift24.
Open Scope R_scope.
(* non-vacuity: the hypotheses of the kvshift24 refutations hold together (d = 2, A = e_0, B = e_1) *)
Definition e0 : Rvec := fun i => match i with 0%nat => 1 | _ => 0 end.
Definition e1 : Rvec := fun i => match i with 1%nat => 1 | _ => 0 end.
Lemma AA : dot_d R_ops 2 e0 e0 = 1. Proof. unfold dot_d; simpl; lra. Qed.
Lemma AB : dot_d R_ops 2 e0 e1 = 0. Proof. unfold dot_d; simpl; lra. Qed.
Lemma BB : dot_d R_ops 2 e1 e1 = 1. Proof. unfold dot_d; simpl; lra. Qed.
(* as written: a concrete KVSA <> IH at m = 1/2, sigma = 2 (the defaults) *)
Lemma none_instance : ~ (forall i, KVSA v_none (dot_d R_ops 2) 2 (1/2) 3 (ABA e0 e1) i = IH (dot_d R_ops 2) 2 (1/2) 3 (ABA e0 e1) i).
Proof. destruct (theorem2_as_written_refuted 2 e0 e1 (1/2) 2 AA AB ltac:(lra)) as [_ [_ [_ H]]]. exact H. Qed.
Lemma mask_instance : ~ (forall i, KVSA v_mask (dot_d R_ops 2) 2 (1/2) 3 (ABA e0 e1) i = IH (dot_d R_ops 2) 2 (1/2) 3 (ABA e0 e1) i).
Proof. destruct (theorem2_mask_refuted 2 e0 e1 (1/2) 2 BB ltac:(lra) ltac:(lra)) as [_ [_ H]]. exact H. Qed.
(* mask+scale: the hypothesis linear2 is satisfiable (dot_d), so the theorem is not vacuous *)
Lemma ms_instance : forall i, KVSA v_mask_scale (dot_d R_ops 2) 2 (1/2) 3 (ABA e0 e1) i = IH (dot_d R_ops 2) 2 (1/2) 3 (ABA e0 e1) i.
Proof. apply theorem2_mask_scale_coords. lia. Qed.
(* and it is not trivially true: as-written at the same point is different (none_instance) *)
(* decode: the refutations' hypotheses hold at the defaults m = 1/2, sigma = 2, theta_0 = 1 *)
Definition th : nat -> R := fun _ => 1.
Definition mixed_instance := decode_mixed_key_refuted 2 (1/2) th ltac:(lra).
Definition unwritten_instance := decode_unwritten_first_refuted 2 (1/2) th ltac:(lra).
Definition offset_instance := decode_rope_offset_zero_refuted 2 (1/2) th ltac:(lra) eq_refl.
Definition alibi_instance := decode_alibi_off_by_one_refuted 2 (1/2) th ltac:(lra) ltac:(lra).
"""

_NV_PR26 = r"""
From Coq Require Import Reals Lra Lia List.
Require Import Verify.Pr26.
Open Scope R_scope.
(* non-vacuity of theorem1 (ii): with phi = [1, i, i^2] and the prev head W_quad_prev, rows [1, 3) at
   L0 = 3 and the new rows [3, 6) at L = 6 all have margin >= 1, so the hypotheses hold together *)
Lemma PL_quad : forall L i j, (i < L)%nat -> (j < L)%nat ->
  PL L 3 phi_quad W_quad_prev i j = - (INR j - (INR i - 1)) ^ 2.
Proof.
  intros L i j Hi Hj. rewrite PL_is_logit by (auto; reflexivity).
  unfold logit, bil, phi_quad, W_quad_prev. simpl. ring.
Qed.
Lemma solves_quad : forall L lo hi, (1 <= lo)%nat -> (hi <= L)%nat ->
  solves_rows (PL L 3 phi_quad W_quad_prev) pred lo hi 1.
Proof.
  intros L lo hi Hlo Hhi i Hi. split; [lia|]. intros j Hj Hne.
  rewrite !PL_quad by lia. replace (pred i) with (i - 1)%nat by lia. rewrite minus_INR by lia. simpl (INR 1).
  assert (Hz : forall z : Z, z <> 0%Z -> 1 <= IZR z ^ 2).
  { intros z Hz. assert (1 <= IZR (z * z)) by (apply IZR_le; nia). rewrite mult_IZR in H. simpl. lra. }
  assert (E : INR j - (INR i - 1) = IZR (Z.of_nat j - (Z.of_nat i - 1))).
  { rewrite !minus_IZR, <- !INR_IZR_INZ. simpl. lra. }
  rewrite E. pose proof (Hz (Z.of_nat j - (Z.of_nat i - 1))%Z ltac:(lia)). lra.
Qed.
Lemma theorem1_hyps_hold :
  solves_rows (PL 3 3 phi_quad W_quad_prev) pred 1 3 1 /\ solves_rows (PL 6 3 phi_quad W_quad_prev) pred (Nat.max 1 3) 6 1.
Proof. split; apply solves_quad; simpl; lia. Qed.
"""


def _theories_copy(tmp_path, names, faults=None):
    for n in names:
        text = (THEORIES / f"{n}.v").read_text()
        for old, new in (faults or {}).get(n, []):
            assert text.count(old) == 1, old
            text = text.replace(old, new)
        p = compile_theory(tmp_path, n, text)
        assert p.returncode == 0, p.stdout + p.stderr


def test_the_kvshift24_refutations_and_pr26_theorem1_are_not_vacuous(tmp_path) -> None:
    """Kvshift24's refutations state 'for all A, B with A.A = 1, A.B = 0, sigma > 0 ...' without an
    existence conjunct (Ws24's carry one); these instances, at the claim defaults m = 1/2, sigma = 2 and
    A = e_0, B = e_1 in R^2, show the hypotheses hold together."""
    need_coq()
    _theories_copy(tmp_path, ["Kvshift24", "Pr26"])
    for name, text in (("NVKv", _NV_KVSHIFT24), ("NVPr", _NV_PR26)):
        p = compile_theory(tmp_path, name, text)
        assert p.returncode == 0, p.stdout + p.stderr


def test_a_refutation_made_vacuous_is_caught(tmp_path) -> None:
    """Fault: an unsatisfiable hypothesis (A.A = 1 and A.A = 2) added to theorem2_as_written_refuted still
    compiles (the original proof never uses it) but the instance no longer does."""
    need_coq()
    _theories_copy(tmp_path, ["Kvshift24"], {"Kvshift24": [
        ("  dot_d R_ops d A A = 1 -> dot_d R_ops d A B = 0 -> 0 < sigma ->",
         "  dot_d R_ops d A A = 1 -> dot_d R_ops d A A = 2 -> dot_d R_ops d A B = 0 -> 0 < sigma ->"),
        ("  intros d A B m sigma HAA HAB Hs.", "  intros d A B m sigma HAA HAA2 HAB Hs.")]})
    p = compile_theory(tmp_path, "NVKv", _NV_KVSHIFT24)
    assert p.returncode != 0
    assert "Error" in p.stdout + p.stderr
