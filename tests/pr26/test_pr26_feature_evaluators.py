"""The three evaluators of a user's feature expression (``verify alpha --pe-features``: float64, exact and
interval, against sympy): they agree on every function of the grammar and on random expressions, or refuse;
each fault (a float pi in the interval evaluator, a float ceiling taken as a floor) is refused, and the
un-faulted run is asserted alongside, so each test can fail both ways.
"""

from __future__ import annotations

import json
import math

import mpmath
import numpy as np
import pytest
import sympy as sp
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.constructions import features as F

torch.set_num_threads(1)


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
    from flint import arb, ctx

    table = F.evaluate_table([e], "i", max(positions) + 1)
    for p in positions:
        ref = _reference(e, p)
        assert abs(float(table[p, 0]) - float(ref)) <= 1e-9 * max(1.0, abs(float(ref))), (e, p, table[p, 0], ref)
        with ctx.workprec(F.CROSS_CHECK_PREC):
            box = F.ball(e, {"i": p})
        with ctx.workprec(2 * F.CROSS_CHECK_PREC):
            # the reference's 40 digits are good to 1e-38 relative
            assert box.overlaps(arb(mpmath.nstr(ref, 45)) + arb(0, 1) * (abs(arb(mpmath.nstr(ref, 45))) * arb(10) ** -38
                                                                      + arb(10) ** -40)), (e, p, box, ref)
        if F.is_rational_expr(e):
            ex = F.evaluate(e, {"i": p}, "exact")
            with mpmath.workdps(45):
                # the reference has 40 significant digits, so it is good to 1e-35 relative (i^3/3 at i = 67 is
                # 100254.33..., whose 40th digit is the 34th decimal: an absolute 1e-35 failed there)
                assert abs(mpmath.mpf(ex.numerator) / ex.denominator - ref) <= \
                    mpmath.mpf(10) ** -35 * max(1, abs(ref)), (e, p)


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
    from flint import arb

    real = F._arb_node

    def float_pi(e):
        if e == sp.pi:
            return lambda x: arb(math.pi)
        return real(e)

    monkeypatch.setattr(F, "_arb_node", float_pi)
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


def test_long_dyadic_constant_is_not_refused_by_the_interval_cross_check():
    """A constant p/2^55 (55 decimal digits) is an exact point interval; sympy's 40-digit value of it is rounded, so
    the cross-check asks that the interval meet sympy's value within its rounding, not contain the rounded digits
    (the float-pi fault above is still refused: it misses pi by ~1e-16)."""
    from verify.constructions import features

    spec = features.expression_family("3602879701896397/36028797018963968*cos(d/4), sin(d/4)")
    assert spec.family.kind == "relative"


#: the designer's relative map, the grammar's functions in one irrational map, and exact ties of the rounding
#: (i/2^41 is a half multiple of 2^-40 at odd i; 2*i/7 is an integer at multiples of 7, where mpmath's
#: 50-digit quotient may fall on either side of it)
ARB_MAPS = ["cos(d/4), sin(d/4), cos(d/64), sin(d/64)",
            "sin(i/3), cos(pi*i/7), exp(-i/5), log(i + 1), sqrt(i + 2), floor(i/49) + sin(i), ceiling(i*2/7)*cos(i), "
            "Min(sin(i), cos(i)), Max(i/2, 4)*E**(i/20), (i + 1)**(-2), i**(1/3), pi*i - 2, 1, i, i/2199023255552, "
            "Abs(sin(i) - 1/2), 7*pi/3 + 0*i"]
ARB_POSITIONS = [*range(0, 300), 4095, 4096, 65535, 131071, 1048575, *range(1000, 200000, 7919)]


def _arb_mismatches(text, positions):
    """Positions where the arb table (the one the layers use) differs from _round of mpmath's 50-digit values."""
    spec = F.expression_family(text)
    feats = spec.family.feature
    assert feats.rounded_fn is not None and feats.mp_fn is not None
    return [(n, a, m) for n in positions
            for a, m in [(feats.rounded_fn(n), [F._round(x) for x in feats.mp_fn(n)])] if a != m]


@pytest.mark.parametrize("text", ARB_MAPS)
def test_arb_rounded_table_is_the_mpmath_one(text):
    """The exact table of an irrational map from arb balls is bit-identical to the 50-digit mpmath values rounded
    to multiples of 2^-40, at positions up to 2^20 (near ties, constructs without an arb form and non-finite
    balls take the mpmath value)."""
    assert _arb_mismatches(text, ARB_POSITIONS) == []


def test_arb_near_ties_fall_back_to_mpmath():
    """A value on a rounding boundary (i/2^41 at odd i) and a floor/ceiling of an exact integer are not decided by
    the balls (None: the mpmath path answers); elsewhere they are."""
    from flint import arb, ctx

    (half, ceil) = F.parse_expressions("i/2199023255552, ceiling(i*2/7)", ("i",))
    with ctx.workprec(F.ARB_PREC):
        fh, fc = F._arb_compile(half), F._arb_compile(ceil)
        assert F._arb_round(fh(arb(3))) is None and F._arb_round(fh(arb(4))) == F._round(F.evaluate(half, {"i": 4}, "mp"))
        assert F._arb_round(fc(arb(7))) is None and F._arb_round(fc(arb(8))) == 3


def test_arb_table_fault_wrong_argument_scale_is_caught():
    """Fault: the arb position scaled by (1 + 2^-30) (a wrong argument scale).  The balls are also the interval
    re-check's, so the cross-check against sympy's own values refuses the map before any use (at d = 1); without
    the fault the comparison with mpmath finds nothing (so the check can fail both ways)."""
    from flint import arb

    from verify import faults

    text = ARB_MAPS[0]
    assert _arb_mismatches(text, range(0, 200)) == []
    with faults.inject("features._arb_position", lambda n: arb(n) * (1 + arb(2) ** -30)):
        with pytest.raises(F.FeatureError, match="at d = 1 does not enclose"):
            _arb_mismatches(text, range(0, 200))
