"""The analytic Coq theories (kernel/theories/Pr26Interval.v, Kvshift24Analytic.v) tied to the Python
constructions, and refused when changed.

Ties: kvshift24 Theorem 3's construction over Q (KV-shift scores, softmax weights with a table of exp
values at the scores that occur, tied orthonormal logits) and its Eq. 10 closed form (Appendix C's
c_t, c_n, c_q, c_o) evaluated with ``Compute``, against ``verify.constructions.kvshift24``'s Fraction
values (``kvsa_terms`` + ``evaluate`` with the same exp table, collected by token); the Coq constant
(0.0118, 0.0119) for Eq. 10 as printed minus the limit at T = 16, (0, 0) against the numeric layer's
``t3_formula``; pr26's ceil(L/2) and the maximiser 8833 against ``pe.ceil_half`` and the symbolic layer's
interval proof; kvshift24 Theorem 1's layer-1 weights and layer-2 scores x_L . y_s over Q (r = e^-p
rational) against ``t1_terms`` + ``logits`` for both key ranges, and the causal witness (A, B, A) against the
Python construction in floats.
Faults: 8833 replaced by 8832 (Prop. 3), Eq. 10 as printed (beta2 a2) or the plotting code's a2 + beta2
in place of Appendix C's form, the as-printed form replaced by Appendix C's, layer 2 as displayed with the key
s = L added, and the causal counterexample stated for the displayed ranges must each no longer compile.

Needs coqc: skipped without it, failed under CI.
"""

from __future__ import annotations

import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from kernel_support import need_coq, private_theory

from verify.constructions import kvshift24 as kc
from verify.constructions import pe
from verify.kernel.driver import THEORIES, coq_compute, parse_q, parse_q_list

K3 = "Kvshift24Analytic"
P3 = "Pr26Interval"
PRE = "From Coq Require Import List QArith ZArith. Import ListNotations. Open Scope Q_scope."






@pytest.fixture(scope="module")
def k3(tmp_path_factory) -> Path:
    """A private copy of Kvshift24Analytic.v (never compiled inside kernel/theories)."""
    need_coq()
    return private_theory(tmp_path_factory, K3)


@pytest.fixture(scope="module")
def p3(tmp_path_factory) -> Path:
    need_coq()
    return private_theory(tmp_path_factory, P3)


def q_lit(x: Fraction) -> str:
    return f"({x.numerator} # {x.denominator})" if x >= 0 else f"(-{-x.numerator} # {x.denominator})"


def compiles(tmp_path: Path, name: str, text: str) -> tuple[int, str]:
    (tmp_path / f"{name}.v").write_text(text)
    p = subprocess.run(["coqc", "-q", "-Q", ".", "Verify", f"{name}.v"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300)
    return p.returncode, p.stdout + p.stderr


# ------------------------------------------------------------------------------ kvshift24 Theorem 3

#: (T, i): the 1-indexed repeated position, 2 <= i <= T - 2; parameters (alpha1, alpha2, beta1, beta2) and
#: stand-in exp values at the scores 0, alpha1, alpha2 (the identity uses exp only as a positive map)
T3_CASES = (
    (6, 3, (Fraction(1, 3), Fraction(2, 3), Fraction(1, 4), Fraction(3, 4)), (Fraction(7, 5), Fraction(9, 5))),
    (9, 2, (Fraction(-1, 2), Fraction(5, 2), Fraction(-2, 3), Fraction(7, 3)), (Fraction(3, 5), Fraction(12))),
    (16, 14, (Fraction(0), Fraction(1), Fraction(0), Fraction(1)), (Fraction(1), Fraction(2718, 1000))),
)


def _t3_tokens(T: int, i: int) -> list[int]:
    """x_1..x_T a permutation of 0..T-1 (a fixed non-identity one), x_{T+1} = x_i."""
    perm = [(5 * j + 2) % T if T % 5 else (7 * j + 3) % T for j in range(T)]
    assert sorted(perm) == list(range(T))
    return perm + [perm[i - 1]]


def _python_logits(T: int, toks: list[int], params, exps) -> dict[int, Fraction]:
    a1, a2, b1, b2 = params
    L = T + 1
    terms = kc.kvsa_terms(L, "none", Fraction(1), kc.KVShiftParams(a1=a1, a2=a2, b1=b1, b2=b2))
    table = {Fraction(0): Fraction(1), a1: exps[0], a2: exps[1]}
    if a1 == 0:  # alpha1 = 0 is the score 0: its exp is 1
        table[a1] = Fraction(1)

    def dot(idx: int) -> Fraction:
        return Fraction(1) if idx and toks[idx - 1] == toks[L - 1] else Fraction(0)

    coefs = kc.evaluate(terms, dot, Fraction(1), Fraction(0), lambda q: table[Fraction(q)], Fraction(0))
    by = kc.by_token(coefs, [str(t) for t in toks], Fraction(0))
    return {v: by.get(str(v), Fraction(0)) for v in range(T)}


def _coq_tok(toks: list[int]) -> str:
    arms = " | ".join(f"{j + 1}%nat => {t}%nat" for j, t in enumerate(toks))
    return f"(fun j : nat => match j with {arms} | _ => 0%nat end)"


def _coq_qexp(params, exps) -> str:
    a1, a2 = params[0], params[1]
    e1 = Fraction(1) if a1 == 0 else exps[0]
    return (f"(fun q : Q => if Qeq_bool q 0 then 1 else if Qeq_bool q {q_lit(a1)} then {q_lit(e1)} "
            f"else if Qeq_bool q {q_lit(a2)} then {q_lit(exps[1])} else 0)")


@pytest.mark.parametrize("T,i,params,exps", T3_CASES)
def test_theorem3_construction_matches_python_and_eq10(k3, T, i, params, exps):
    toks = _t3_tokens(T, i)
    a1, a2, b1, b2 = (q_lit(x) for x in params)
    qexp = _coq_qexp(params, exps)
    e1 = Fraction(1) if params[0] == 0 else exps[0]
    out = coq_compute(K3, [
        f"List.map (fun v => Qred (out_logitQ {qexp} {_coq_tok(toks)} {T + 1} {a1} {a2} {b1} {b2} v)) (List.seq 0 {T})",
        f"let '(ct, cn, cq, co) := eq10_logitsQ {T} {q_lit(e1)} {q_lit(exps[1])} {b1} {b2} in "
        f"[Qred ct; Qred cn; Qred cq; Qred co]",
    ], theories=k3, workdir=k3 / "work", preamble=PRE)
    coq_logits = parse_q_list(out[0])
    ct, cn, cq, co = parse_q_list(out[1])
    py = _python_logits(T, toks, params, exps)
    assert coq_logits == [py[v] for v in range(T)]
    # Table 5 with Appendix C's c_n: target x_{i+1}, x_{i-1} and x_T share c_n, x_i gets c_q, the rest c_o
    role = {toks[i]: ct, toks[i - 2]: cn, toks[T - 1]: cn, toks[i - 1]: cq}
    assert [role.get(v, co) for v in range(T)] == coq_logits
    # the as-printed c_n (beta2 a2) is not what the construction gives when alpha1 != alpha2, beta2 != 0
    S = exps[1] + 2 * e1 + T - 2
    assert cn == params[2] / S + params[3] * e1 / S
    assert cn != params[2] / S + params[3] * exps[1] / S


def test_theorem3_gap_constant_matches_numeric():
    """The Coq interval (0.0118, 0.0119) for Eq. 10 as printed minus the limit at T = 16, (alpha1, beta1) = (0, 0)
    holds the numeric layer's float value of the same difference (far from either end)."""
    from verify.numeric.kvshift24 import t3_formula

    gap = t3_formula(0.0, 0.0, 16) - t3_formula(0.0, 0.0, 16, body_a1=True)
    assert 0.0118 + 1e-5 < gap < 0.0119 - 1e-5
    text = (THEORIES / f"{K3}.v").read_text()
    assert "0.0118 < eq10_as_printed 16 0 1 0 1 - eq10_appendix_c 16 0 1 0 1 < 0.0119" in text


def _fault(tmp_path: Path, name: str, old: str, new: str) -> tuple[int, str]:
    src = (THEORIES / f"{name}.v").read_text()
    assert src.count(old) >= 1, f"fault anchor {old!r} not in {name}.v"
    return compiles(tmp_path, name, src.replace(old, new, 1))


def test_fault_appendix_c_with_printed_cn_is_refused(tmp_path):
    """Eq. 10 as printed (beta2 a2 in the x_{i-1} and x_T logits) in place of Appendix C's form."""
    need_coq()
    rc, out = _fault(tmp_path, K3, "let c_n := beta1 / S + beta2 * a1 in", "let c_n := beta1 / S + beta2 * a2 in")
    assert rc != 0, "the appendix-c theorem still compiles with Eq. 10 as printed"
    assert "Error" in out


def test_fault_appendix_c_with_plotting_code_is_refused(tmp_path):
    """Appendix E's plotting code (a2 + beta2 for a2 beta2 in the repeated token's logit)."""
    need_coq()
    rc, _ = _fault(tmp_path, K3, "let c_q := 2 * a1 * beta1 + a2 * beta2 in", "let c_q := 2 * a1 * beta1 + (a2 + beta2) in")
    assert rc != 0


def test_fault_as_printed_equal_to_limit_is_refused(tmp_path):
    """If Eq. 10 'as printed' were the Appendix C form, its refutation must no longer compile."""
    need_coq()
    src = (THEORIES / f"{K3}.v").read_text()
    head, tail = src.split("Definition eq10_as_printed", 1)
    tail = tail.replace("let c_n := beta1 / S + beta2 * a2 in", "let c_n := beta1 / S + beta2 * a1 in", 1)
    rc, _ = compiles(tmp_path, K3, head + "Definition eq10_as_printed" + tail)
    assert rc != 0


def test_kvshift24_analytic_compiles_unchanged(tmp_path):
    """Control for the faults: the shipped theory compiles in the same way."""
    need_coq()
    rc, out = compiles(tmp_path, K3, (THEORIES / f"{K3}.v").read_text())
    assert rc == 0, out


# ------------------------------------------------------------------------------ pr26 Prop. 3


def test_prop3_ceil_half_matches_python(p3):
    Ls = [17665, 17666, 17664, 17667, 1, 2, 3, 0, 21, 40000]
    out = coq_compute(P3, [f"List.map (fun L => inject_Z (ceil_half L)) [{'; '.join(f'{L}%Z' for L in Ls)}]"],
                      theories=p3, workdir=p3 / "work", preamble=PRE)
    assert parse_q_list(out[0]) == [Fraction(pe.ceil_half(L)) for L in Ls]
    assert pe.ceil_half(17665) == 8833


def test_prop3_maximiser_matches_symbolic_layer(p3):
    """The symbolic layer's interval proof (arb balls) names the same nearest integer to pi / (2 theta_min)
    as the Coq theorem's 8833, and the same side of it (x* > 8833, the Coq lemma num_below_half_pi)."""
    from verify.symbolic.pr26_figures import sin_maximiser_proof

    res = sin_maximiser_proof(17665, 8833, 15, 40, False)
    assert res["nearest_integer_to_x_star"] == 8833 and res["step1_nearest_integer_strict"]
    mid, rad = (float(x) for x in str(res["x_star = pi/(2 theta)"]).strip("[]").split("+/-"))
    assert 8833 < mid - rad and mid + rad < 8833.5
    out = coq_compute(P3, ["inject_Z (ceil_half 17665)"], theories=p3, workdir=p3 / "work", preamble=PRE)
    assert parse_q(out[0]) == 8833


def test_fault_prop3_8832_is_refused(tmp_path):
    need_coq()
    src = (THEORIES / f"{P3}.v").read_text()
    rc, out = compiles(tmp_path, P3, src.replace("8833", "8832"))
    assert rc != 0, "Prop. 3 still compiles with 8832 as the maximiser"
    assert "Error" in out


def test_fault_prop3_other_frequency_is_refused(tmp_path):
    """theta_min = 10000^(-14/16) (the wrong frequency) must break the numeric facts."""
    need_coq()
    rc, _ = _fault(tmp_path, P3, "Rpower 10000 (- (15 / 16))", "Rpower 10000 (- (14 / 16))")
    assert rc != 0


def test_pr26_interval_compiles_unchanged(tmp_path):
    need_coq()
    rc, out = compiles(tmp_path, P3, (THEORIES / f"{P3}.v").read_text())
    assert rc == 0, out


# ------------------------------------------------------------------------------ kvshift24 Theorem 1

T1_SEQS = ((0, 1, 0), (0, 1, 2, 0, 1), (3, 1, 3, 2, 1, 3, 0))


@pytest.mark.parametrize("masks", ["as-displayed", "causal"])
def test_theorem1_layer_scores_match_python(k3, masks):
    """Layer 1's weights (r = e^-p as a rational) and layer 2's scores x_L . y_s on token sequences: the Coq
    definitions over Q against t1_terms + logits (sigma = 1, m = 0)."""
    strict = "true" if masks == "as-displayed" else "false"
    exprs, expected = [], []
    for r in (Fraction(1, 3), Fraction(2, 5)):
        for toks in T1_SEQS:
            L = len(toks)
            terms = kc.t1_terms(L, r, masks, Fraction(1))
            expected.append(kc.logits(terms, lambda i, t=toks, L=L: Fraction(1) if i and t[i - 1] == t[L - 1] else Fraction(0),
                                      Fraction(1), Fraction(0), Fraction(0)))
            exprs.append(f"List.map (fun s => Qred (l2_scoreQ {strict} {q_lit(r)} {_coq_tok(list(toks))} {L} s)) "
                         f"(l2_keys {strict} {L})")
            # the layer-1 weights of the last key, tau by tau
            s = terms[-1].s
            expected.append([w for w, _ in terms[-1].key])
            taus = [tau for _, tau in terms[-1].key]
            exprs.append(f"List.map (fun tau => Qred (l1_weightQ {strict} {q_lit(r)} {s} tau)) "
                         f"[{'; '.join(f'{t}%nat' for t in taus)}]")
    out = coq_compute(K3, exprs, theories=k3, workdir=k3 / "work", preamble=PRE)
    assert [parse_q_list(o) for o in out] == expected


@pytest.mark.parametrize("p", [0.0, 1.0, 5.0, 30.0])
def test_theorem1_causal_witness_consistent_with_python(p):
    """The Coq witness (A, B, A) under standard causal masks: the Python construction (t1_terms, float exp)
    gives IH's B coordinate 1 and TF's below 1/2 at every (p, m, sigma) tried, as the theorem says."""
    import math

    toks = ("A", "B", "A")

    def dot(i: int) -> float:
        return 1.0 if i and toks[i - 1] == toks[2] else 0.0

    for m in (0.0, 0.5, 2.0):
        for sigma in (0.25, 1.0, 4.0):
            tf = kc.by_token(kc.evaluate(kc.t1_terms(3, math.exp(-p), "causal", 1.0), dot, sigma, m, math.exp, 0.0), toks, 0.0)
            ih = kc.by_token(kc.evaluate(kc.ih_terms(3), dot, sigma, m, math.exp, 0.0), toks, 0.0)
            assert ih["B"] == pytest.approx(1.0)
            assert tf["B"] < 0.5


def test_fault_theorem1_layer2_boundary_is_refused(tmp_path):
    """Layer 2 as displayed with the key s = L added (s = 2..L): the as-displayed bound no longer compiles."""
    need_coq()
    rc, _ = _fault(tmp_path, K3, "if interior then seq 2 (L - 2) else seq 1 L", "if interior then seq 2 (L - 1) else seq 1 L")
    assert rc != 0


def test_fault_theorem1_causal_with_displayed_ranges_is_refused(tmp_path):
    """The causal counterexample stated for the displayed ranges (which do approximate IH) must not compile."""
    need_coq()
    rc, _ = _fault(tmp_path, K3, "IH d 3 xw m sigma 1 = 1 /\\ TF false false d 3 xw p m sigma 1 < 1 / 2.",
                   "IH d 3 xw m sigma 1 = 1 /\\ TF true true d 3 xw p m sigma 1 < 1 / 2.")
    assert rc != 0
