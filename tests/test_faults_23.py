"""Faults the rest of the suite does not inject, each fed to the check that exists for it.

Every test injects its fault by monkeypatch (the shipped code is never edited) and asserts that the
check refuses it; the un-faulted run is asserted alongside, so each test can fail both ways.
"""

from __future__ import annotations

import json
import math
import statistics
import sys

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import verify.numeric.pr26 as num
from verify.constructions import features as F
from verify.constructions.pe import get_family, get_task

torch.set_num_threads(1)


# ----------------------------------------------------------------------------- item 2: min-norm certificate


def test_min_norm_gap_is_rederived_exactly():
    """pr26's min-norm selection (the margin-1 minimum-norm head): the reported gap is the exact one."""
    fr = num.fit_min_norm(get_family("rope"), get_task("prev"), 20)
    gap = fr.settings["relative_duality_gap"]
    assert 0 <= gap <= 1e-6
    # the returned head is the rescaled primal point: margin 1 on every row at L0 (up to float rounding)
    C = num.constraint_matrix(get_family("rope"), get_task("prev"), 20)
    assert float((C @ fr.param.reshape(-1)).min()) == pytest.approx(1.0, abs=1e-9)
    assert fr.settings["frobenius_norm"] == pytest.approx(2.0513, abs=1e-3)


def test_exact_gap_refuses_an_unconverged_or_forged_certificate():
    C = num.constraint_matrix(get_family("rope"), get_task("prev"), 20)
    fr = num.fit_min_norm(get_family("rope"), get_task("prev"), 20)
    theta = fr.param.reshape(-1)
    # a dual point far from optimal: the exact gap is large (not certified), and never negative
    lam = torch.full((C.shape[0],), 1e-3, dtype=torch.float64)
    gap, upper, dual = num.exact_duality_gap(C, lam, theta)
    assert gap > 0.5 and upper > dual
    # a negative multiplier, or a primal point that is not strictly feasible, is refused
    with pytest.raises(num.DualityGapError, match="negative dual"):
        num.exact_duality_gap(C, -lam, theta)
    with pytest.raises(num.DualityGapError, match="not strictly feasible"):
        num.exact_duality_gap(C, lam, -theta)


def test_min_norm_wrong_primal_bound_refused(monkeypatch):
    """Fault: U = ||theta||^2 / (2 s) instead of / (2 s^2).  Unchecked it stops after 50 iterations with a
    gap of -0.119 (norm 2.17 instead of 2.05); a negative gap is an error."""
    monkeypatch.setattr(num, "_primal_upper", lambda sq, s: sq / (2 * s))
    with pytest.raises(num.DualityGapError, match=r"gap -1\.18\de-01 < 0 after 50 iterations"):
        num.fit_min_norm(get_family("rope"), get_task("prev"), 20)


def test_min_norm_float_gap_not_trusted(monkeypatch):
    """Fault: a float primal bound that claims a gap inside the tolerance while the true gap is not (U forged
    to D (1 + 5e-7), D read from the solver's frame).  The exact re-derivation does not confirm it, so the run
    never stops on it: not certified within 200 iterations (the honest run needs 250)."""
    real = num.exact_duality_gap
    exact_gaps = []

    def spy(C, lam, theta):
        out = real(C, lam, theta)
        exact_gaps.append(out[0])
        return out

    def forged_upper(sq, s):
        return sys._getframe(1).f_locals["dual"] * (1 + 5e-7)

    monkeypatch.setattr(num, "exact_duality_gap", spy)
    monkeypatch.setattr(num, "_primal_upper", forged_upper)
    with pytest.raises(num.MinNormError, match="not certified"):
        num.fit_min_norm(get_family("rope"), get_task("prev"), 20, max_iter=200)
    assert len(exact_gaps) == 4 and min(exact_gaps) > 1e-6   # each float "certificate" refused by the exact gap
    # without the exact net (it echoes the float claim) the forged certificate is accepted at iteration 50
    monkeypatch.setattr(num, "exact_duality_gap", lambda C, lam, theta: (0, None, None))
    assert num.fit_min_norm(get_family("rope"), get_task("prev"), 20, max_iter=200).settings["iterations"] == 50


# ----------------------------------------------------------------------------- item 1: the three evaluators


def _alpha_json(capsys, argv):
    from verify.frontends.cli import main

    rc = main(argv + ["--format", "json"])
    out = capsys.readouterr()
    return rc, (json.loads(out.out) if rc == 0 else out.err)


#: one expression per function of the grammar (sin cos exp log sqrt Abs/abs floor ceiling Min Max Rational pi E,
#: + - * / **), each at values where float64, exact, interval and sympy can be compared
GRAMMAR = ["sin(i/3)", "cos(pi*i/7)", "exp(-i/5)", "log(i + 1)", "sqrt(i + 2)", "Abs(i - 7)", "abs(3 - i)",
           "floor(i/49)", "ceiling(i/49)", "floor(3*i/10)", "ceiling(i*2/7)", "Min(i, 9)", "Max(i/2, 4)",
           "Rational(3, 4)*i", "E**(i/20)", "i**2 - 3*i", "(i + 1)**(-2)", "i**(1/3)", "pi*i - 2"]


def _reference(e, p):
    """sympy's own 40-digit value of e at the point (independent of features._mp / _np / _exact)."""
    sym = sp.Symbol("i", integer=True, nonnegative=True)
    with mpmath.workdps(45):
        return mpmath.mpf(str(sp.N(e.subs(sym, p), 40)))


def _check_three(e, positions):
    table = F.evaluate_table([e], "i", max(positions) + 1)
    old = mpmath.iv.dps
    mpmath.iv.dps = 30
    try:
        for p in positions:
            ref = _reference(e, p)
            assert abs(float(table[p, 0]) - float(ref)) <= 1e-9 * max(1.0, abs(float(ref))), (e, p, table[p, 0], ref)
            box = F.evaluate(e, {"i": p}, "iv", mpmath.iv)
            assert ref in box, (e, p, box, ref)
            if F.is_rational_expr(e):
                ex = F.evaluate(e, {"i": p}, "exact")
                with mpmath.workdps(45):
                    assert abs(mpmath.mpf(ex.numerator) / ex.denominator - ref) <= mpmath.mpf(10) ** -35, (e, p)
    finally:
        mpmath.iv.dps = old


@pytest.mark.parametrize("text", GRAMMAR)
def test_every_function_three_evaluators_agree(text):
    """float64 (what fits see), exact Fractions (rational maps) and mpmath intervals (ties of irrational maps)
    agree with sympy's 40-digit value at positions 0..99 (float and exact) and every interval encloses it;
    the map is accepted by expression_family (its own cross-check passes)."""
    (e,) = F.parse_expressions(text, ("i",))
    F.expression_family(text)
    _check_three(e, range(0, 100, 1 if "floor" in text or "ceiling" in text else 7))


_ATOMS = st.sampled_from(["i", "1", "2", "3", "7", "i/3", "2*i/7", "pi", "E", "Rational(5, 3)"])


def _grow(children):
    un = st.sampled_from(["sin({})", "cos({})", "exp({}/64)", "log(Abs({}) + 1)", "sqrt(Abs({}))", "Abs({})",
                          "floor({})", "ceiling({})"])
    bi = st.sampled_from(["({}) + ({})", "({}) - ({})", "({}) * ({})", "({}) / (Abs({}) + 1)", "Min({}, {})",
                          "Max({}, {})"])
    return st.one_of(st.tuples(un, children).map(lambda t: t[0].format(t[1])),
                     st.tuples(bi, children, children).map(lambda t: t[0].format(t[1], t[2])))


@settings(max_examples=60, deadline=None)
@given(st.recursive(_ATOMS, _grow, max_leaves=6))
def test_random_expressions_evaluators_agree_or_refused(text):
    """Random trees of the grammar: either expression_family refuses the map (its cross-check found the float64
    value too rounded, e.g. a floor of a sum that rounds below an integer) or all three evaluators agree with
    sympy at positions the cross-check never looked at (64..71) and the intervals enclose it."""
    try:
        (e,) = F.parse_expressions(text, ("i",))
        F.expression_family(text)
    except F.FeatureError:
        return
    _check_three(e, range(64, 72))


def test_interval_with_float_pi_refused(monkeypatch, capsys):
    """Fault: the interval evaluator's pi taken as the float math.pi (a point interval that does not
    enclose pi).  Unchecked, verify alpha on cos/sin(pi d/7) prev goes from alpha 0 (exact ties:
    k(1) = k(13)... a tie to the target) to alpha 1, the ties decided as strict."""
    argv = ["alpha", "--pe-features", "cos(pi*d/7), sin(pi*d/7)", "--task", "prev"]
    rc, doc = _alpha_json(capsys, argv)
    assert rc == 0 and doc["alpha"] == 0.0 and doc["new_rows_with_exact_tie_to_target"] == 44
    real = F._mp

    def float_pi(e, env, m):
        if e == sp.pi and m is mpmath.iv:
            return m.mpf(math.pi)
        return real(e, env, m)

    monkeypatch.setattr(F, "_mp", float_pi)
    with pytest.raises(F.FeatureError, match="does not enclose"):
        F.expression_family("cos(pi*d/7), sin(pi*d/7)")
    rc, err = _alpha_json(capsys, argv)
    assert rc == 2 and "does not enclose" in err
    # the fault is real: with the cross-check switched off the same command reports alpha 1
    monkeypatch.setattr(F, "cross_check", lambda *a: None)
    rc, doc = _alpha_json(capsys, argv)
    assert rc == 0 and doc["alpha"] == 1.0


def test_float_ceiling_as_floor_refused(monkeypatch):
    """Fault: the float64 evaluator computing ceiling with floor (the fit then sees wrong feature values)."""
    F.expression_family("1, ceiling(i/3)")
    real = F._np

    def ceil_as_floor(e, env):
        if isinstance(e, sp.ceiling):
            return np.floor(real(e.args[0], env))
        return real(e, env)

    monkeypatch.setattr(F, "_np", ceil_as_floor)
    with pytest.raises(F.FeatureError, match=r"float64 value 0\.0 at i = 1 disagrees with the exact value 1\.0"):
        F.expression_family("1, ceiling(i/3)")
    with pytest.raises(AssertionError):
        _check_three(F.parse_expressions("ceiling(i/3)", ("i",))[0], [1])


def test_float_reciprocal_rounding_fixed():
    """fl(1/49) * 49 = 0.9999999999999999: the float evaluator divides by 49 instead, so floor(i/49) is 1 at 49."""
    assert (1 / 49) * 49 < 1
    t = F.evaluate_table(F.parse_expressions("floor(i/49), ceiling(i*3/10)", ("i",)), "i", 100)
    assert t[49, 0] == 1 and t[98, 0] == 2 and t[10, 1] == 3 and t[11, 1] == 4


# ----------------------------------------------------------------------------- item 3: ws24's stated tolerance


def _tau(d, V, scale):
    """tau as the evidence states it: 4 sqrt((V+3)/(d V)) max|chi| (written again here, not imported)."""
    return 4 * math.sqrt((V + 3) / (d * V)) * scale


def test_ws24_tolerance_matches_measured_spread():
    """The derivation of tau checked against the spread it claims to bound: over 40 seeds the mean displayed
    score's standard deviation is 1.5-1.9 x sqrt((V+3)/(d V)) (measured 0.094 against 0.058 at d 512, V 4),
    so tau = 4 of those is 2.1-2.7 measured standard deviations: a tolerance 100x too loose (or too tight)
    would break the ratio."""
    from verify.constructions.bilinear import PrevTokenConstruction
    from verify.numeric import ws24

    V, d, T = 4, 512, 8
    con = PrevTokenConstruction.uniform(V, "read-score")
    means = []
    for seed in range(40):
        g = ws24.TorchGram(ws24.sample_frozen(d, V, T, seed))
        means.append(sum(con.displayed_score(v, g) for v in range(1, V + 1)) / V)
    sd = statistics.stdev(means)
    assert 1.2 <= sd / math.sqrt((V + 3) / (d * V)) <= 2.2, sd
    assert ws24.score_tolerance(d, V, 1.0) == pytest.approx(_tau(d, V, 1.0), rel=1e-12)
    assert 1.5 <= ws24.score_tolerance(d, V, 1.0) / sd <= 3.5


def _shifted(delta_in_tau, d, V):
    from verify.constructions.bilinear import PrevTokenConstruction

    tau = _tau(d, V, 1.0)

    class Shifted(PrevTokenConstruction):
        """The reading replaced by chi(v) + delta: its mean sits exactly delta from the target."""

        def displayed_score(self, v, g):
            return float(self.chi[v - 1]) + delta_in_tau * tau

    base = PrevTokenConstruction.uniform(V, "read-score")
    return Shifted(base.V, base.chi, base.orientation)


def test_ws24_reading_just_outside_tau_fails(monkeypatch):
    """ws24 Theorem 2 at scale: a reading 0.99 tau from chi holds, 1.01 tau (either side) fails.  Fault:
    tau = 400 sqrt(...) instead of 4 sqrt(...) changes no verdict of the default run; here 1.01 tau holds."""
    from verify.numeric import ws24

    d, V = 512, 4
    kw = dict(d=d, T=8, N=64, seed=0)
    assert ws24.check_theorem2(_shifted(0.99, d, V), **kw).outcome == "holds"
    assert ws24.check_theorem2(_shifted(-0.99, d, V), **kw).outcome == "holds"
    ev = ws24.check_theorem2(_shifted(1.01, d, V), **kw)
    assert ev.outcome == "fails" and ev.numbers["tolerance_tau"] == pytest.approx(_tau(d, V, 1.0), rel=1e-12)
    assert ws24.check_theorem2(_shifted(-1.01, d, V), **kw).outcome == "fails"
    monkeypatch.setattr(ws24, "score_tolerance", lambda d, V, scale: 400 * math.sqrt((V + 3) / (d * V)) * scale)
    assert ws24.check_theorem2(_shifted(1.01, d, V), **kw).outcome == "holds"   # the fault: no longer refused


# ----------------------------------------------------------------------------- item 5: safety nets fed their case


def test_decode_value_state_seen_with_b2():
    """kvshift24 decode (KV-shift Eqs. 4-5, V^ = b1 V + b2 Shift(V)): with b2 = 1 the raw-key decode equals the
    full pass at every prefill (variant none: the query's own slot s = t enters, so slot k + 1's value is
    read at t = k + 1).  Fault: the value state after the prefill holding x_{k-1}
    instead of x_k -- invisible at Appendix B's b2 = 0, seen here at the first decoded token k + 1."""
    from verify.constructions import kvshift24_pe as kp

    pe = kp.PE("none", alibi=False)
    co = kp.Coefs(b2=1)
    L = 6

    def mismatches():
        full = kp.full_forward(L, "none", pe, sp.Integer(2), co)
        return [kp.first_mismatch(full, kp.decode(L, "none", pe, kp.Decode(k), sp.Integer(2), co))
                for k in range(1, L)]

    assert mismatches() == [None] * (L - 1)
    real = kp._raw_state
    monkey = pytest.MonkeyPatch()
    with monkey.context() as mp:
        mp.setattr(kp, "_raw_state", lambda k, pe_: (real(k, pe_)[0], ((1, k - 1),)))
        assert mismatches() == [k + 1 for k in range(1, L)]
        # at b2 = 0 (the default) the same fault changes nothing: why the b2 = 1 case is needed
        assert all(kp.first_mismatch(kp.full_forward(L, "none", pe, sp.Integer(2)),
                                     kp.decode(L, "none", pe, kp.Decode(k), sp.Integer(2))) is None
                   for k in range(1, L))


def test_auc_label_at_threshold_generalizes(monkeypatch):
    """pr26:auc labels a measurement generalizing when accuracy_L >= 0.9: an accuracy of exactly 0.9 (45/50)
    is positive, and alpha exactly 0.9 is above the cut (no disagreement).  Fault: `accuracy > threshold`."""
    from verify.numeric import pr26_trained as pt

    cells = [{"family": "a", "task": "x", "rows": [{"seed": 0, "L": 30, "alpha": 0.9, "accuracy": 45 / 50},
                                                   {"seed": 1, "L": 30, "alpha": 0.2, "accuracy": 0.5}]}]
    s = pt.summarize(cells, threshold=0.9)
    assert (s["n_generalizing"], s["n_not_generalizing"], s["disagreements"], s["auc"]) == (1, 1, [], 1.0)
    monkeypatch.setattr(pt, "generalizes", lambda acc, threshold=pt.THRESHOLD: acc > threshold)
    s = pt.summarize(cells, threshold=0.9)
    assert s["n_generalizing"] == 0 and s["auc"] is None and len(s["disagreements"]) == 1


def test_prop1_affinity_differentiates_in_the_key(monkeypatch):
    """pr26 Prop. 1's premise is a logit row affine in the key j.  A row affine in i but quadratic in j must be
    refused (inconclusive), and the controls must notice a test that differentiates in the query i instead
    (the shipped families are bilinear: that fault passed every claim)."""
    from verify.constructions.pe import get_family as fam
    from verify.symbolic import pr26 as sym

    assert sym.check_prop1([fam("affine"), fam("alibi")]).status == "proved"
    real_row = sym.symbolic_row

    def j_quadratic(family):
        f, i, j, params = real_row(family)
        return (f + j ** 2 if family.name == "affine" else f), i, j, params

    with monkeypatch.context() as mp:
        mp.setattr(sym, "symbolic_row", j_quadratic)
        ev = sym.check_prop1([fam("affine")])
        assert ev.status == "inconclusive" and "not affine in j" in ev.summary
    monkeypatch.setattr(sym, "key_curvature", lambda f, i, j: sp.simplify(sp.diff(f, i, 2)))
    ev = sym.check_prop1([fam("affine"), fam("alibi")])
    assert ev.status == "error" and "wrong variable" in ev.summary
