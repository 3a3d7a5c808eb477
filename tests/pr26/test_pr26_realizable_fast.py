"""verify realizable's fast paths against their definitions (issue 25): the violated rows of a relative head
from integer margins (:func:`verify.solver.realizable._relative_violations`) against the row-by-row exact
margins, the certificate's presence at many lengths (``_Presence``) against ``_present_by_origin``, and the
integer features of a longer prefix reused at a shorter length; each comparison shown failing on an
injected fault."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from verify.constructions import features as F
from verify.constructions import pe
from verify.solver import realizable as R

REL = "cos(d/4), sin(d/4), cos(d/64), sin(d/64)"


def _brute_violations(fam, tsk, param, lengths, margin, feats, limit=None):
    """The definition: every row's exact logits k(i - j) in Fractions, the worst key the largest key j != t
    attaining the max over the others (the running top-two keeps the first maximising offset)."""
    out = []
    for ell in lengths:
        k = [sum((a * b for a, b in zip(param, feats[d])), Fraction(0)) for d in range(ell)]
        for i in tsk.rows(ell):
            if i == 0:
                continue
            t = pe.target_in_window(tsk, i, ell)
            others = [(k[i - j], j) for j in range(i + 1) if j != t]
            top = max(v for v, _ in others)
            m = k[i - t] - top
            if m < margin:
                out.append((m - margin, i, max(j for v, j in others if v == top), ell))
    out.sort(key=lambda v: (v[0], v[3], v[1]))
    return out if limit is None else out[:limit]


def _relative_cases():
    rnd = random.Random(5)
    for expr in (REL, "1, d, d**2", "1, d"):
        fam = F.expression_family(expr).family
        r = fam.dim(20)
        feats = R.feature_table(fam, 20, 40)
        heads = [[Fraction(rnd.randint(-9, 9), rnd.randint(1, 4)) for _ in range(r)] for _ in range(3)]
        heads.append([Fraction(0)] * r)            # every logit ties: every row violated, worst key by the tie rule
        heads.append([Fraction(1)] + [Fraction(0)] * (r - 1))
        for task in ("prev", "skip-2", "attend-first", "copy", "reverse"):
            yield fam, pe.get_task(task), heads, feats


def _violation_mismatches() -> list:
    bad = []
    for fam, tsk, heads, feats in _relative_cases():
        for param in heads:
            for lengths in ([40], [17], list(range(2, 13))):
                for limit in (None, 3):
                    for G in (Fraction(1), Fraction(1, 3)):
                        got = R._relative_violations(fam, tsk, param, lengths, 20, G, feats, limit)
                        if got != _brute_violations(fam, tsk, param, lengths, G, feats, limit):
                            bad.append((fam.name, tsk.name, lengths[-1], limit))
                        if limit is None and got != R._violations_from_margins(fam, tsk, param, lengths, 20, G, feats):
                            bad.append((fam.name, tsk.name, "margins"))
    return bad


def test_relative_violations_equal_the_definition():
    assert _violation_mismatches() == []


def test_fault_in_the_integer_margins_is_caught(monkeypatch):
    real = R._relative_scaled

    def one_unit_high(task, param, L, feats, rows):  # a fault: every margin one unit (1 / scale) too high
        nums, worst, scale = real(task, param, L, feats, rows)
        return {i: v + 1 for i, v in nums.items()}, worst, scale

    monkeypatch.setattr(R, "_relative_scaled", one_unit_high)
    assert _violation_mismatches() != []


def _certificate_cut(expr: str, task: str, ell: int):
    fam, tsk = F.expression_family(expr).family, pe.get_task(task)
    feats = R.feature_table(fam, 20, ell)
    dim = fam.dim(20) if fam.kind == "relative" else fam.dim(20) ** 2
    stable = R._stable_lengths(tsk, ell, 2)
    cut = R.solve_cutting(fam, tsk, ell, 20, Fraction(1), dim, [], 20_000, feats, stable)
    assert cut.res.answer == "unsat" and cut.res.certificate.get("checked")
    return fam, tsk, feats, dim, stable, cut


def _presence_mismatches(stale_memo: bool = False) -> list:
    bad = []
    for expr, task, ell in (("1, i", "prev", 24), ("1, d", "reverse", 9), ("1, i, i**2", "copy", 8)):
        fam, tsk, feats, dim, stable, cut = _certificate_cut(expr, task, ell)
        used = R.used_rows(cut.res.certificate)
        tampered = [dict(u, rhs=str(Fraction(u["rhs"]) - 1)) for u in used[:1]] + used[1:]
        for rows in (used, tampered):
            fast = R._Presence(cut.origin, fam, tsk, 20, feats, Fraction(1), dim, [], stable)
            if stale_memo:  # a fault: the coefficient memo answers every (i, j, t) with the first one it held
                first: dict = {}

                class Stale(dict):
                    def get(self, key, default=None):
                        return first.get("c", default)

                    def __setitem__(self, key, value):
                        first.setdefault("c", value)

                fast._coef = Stale()
            for L in range(2, ell + 6):
                want = R._present_by_origin(rows, cut.origin, fam, tsk, 20, feats, Fraction(1), dim, [], L, stable)
                if fast(rows, L) != want:
                    bad.append((expr, task, L))
    return bad


def test_certificate_presence_equals_the_definition():
    assert _presence_mismatches() == []


def test_fault_stale_coefficient_memo_is_caught():
    assert _presence_mismatches(stale_memo=True) != []


@pytest.mark.parametrize("expr,task", [("1, i, i**2", "prev"), (REL, "reverse"), ("1, i", "copy")])
def test_integer_features_of_a_longer_prefix(expr, task):
    # exact margins at short lengths after a longer table's integer features are held: the row definition
    fam, tsk = F.expression_family(expr).family, pe.get_task(task)
    r = fam.dim(20)
    rnd = random.Random(2)
    flat = [Fraction(rnd.randint(-9, 9), rnd.randint(1, 5)) for _ in range(r if fam.kind == "relative" else r * r)]
    param = flat if fam.kind == "relative" else [flat[a * r:(a + 1) * r] for a in range(r)]
    feats = R.feature_table(fam, 20, 60)
    ar = pe.FractionArith()
    for L in (60, 9, 33, 2, 60):
        got = R.exact_margins(fam, tsk, param, L, 20, feats).margins
        want = {i: pe.exact_row_margin(fam, tsk, param, i, L, 20, ar) for i in tsk.rows(L)}
        assert got == {i: m for i, m in want.items() if m is not None}, L


def test_fault_prefix_denominator_forgotten_is_caught(monkeypatch):
    # a fault: the absolute logits scaled by the shorter prefix's own denominator instead of the held table's
    fam, tsk = F.expression_family("1, i/3, i**2/7").family, pe.get_task("prev")
    param = [[Fraction(a - b, 1 + a) for b in range(3)] for a in range(3)]
    feats = R.feature_table(fam, 20, 60)
    R.exact_margins(fam, tsk, param, 60, 20, feats)  # the 60-row integer table is now held
    monkeypatch.setattr(R, "_feature_den", lambda feats, L: 1)
    got = R.exact_margins(fam, tsk, param, 12, 20, feats).margins
    ar = pe.FractionArith()
    want = {i: pe.exact_row_margin(fam, tsk, param, i, 12, 20, ar) for i in tsk.rows(12)}
    assert got != {i: m for i, m in want.items() if m is not None}


def _memo_mismatches() -> list:
    """Exact margins of several parameters on one feature list, asked twice each (the second from the memo),
    against the row definition."""
    bad = []
    for expr, task in (("1, i, i**2", "prev"), (REL, "skip-2")):
        fam, tsk = F.expression_family(expr).family, pe.get_task(task)
        r = fam.dim(20)
        feats = R.feature_table(fam, 20, 30)
        ar = pe.FractionArith()
        rnd = random.Random(7)
        for _ in range(2):
            for _ in range(3):
                flat = [Fraction(rnd.randint(-9, 9), rnd.randint(1, 5)) for _ in range(r if fam.kind == "relative"
                                                                                        else r * r)]
                param = flat if fam.kind == "relative" else [flat[a * r:(a + 1) * r] for a in range(r)]
                for _ in range(2):
                    got = R.exact_margins(fam, tsk, param, 30, 20, feats).margins
                    want = {i: pe.exact_row_margin(fam, tsk, param, i, 30, 20, ar) for i in tsk.rows(30)}
                    if got != {i: m for i, m in want.items() if m is not None}:
                        bad.append((expr, task))
    return bad


def test_exact_margins_memo_equals_the_definition():
    assert _memo_mismatches() == []


def test_fault_memo_keyed_without_the_parameter_is_caught(monkeypatch):
    monkeypatch.setattr(R, "_frozen", lambda param: ())
    assert _memo_mismatches() != []


def _recheck_mismatches(first: bool = False) -> list:
    """Where _recheck_fast (integer running minima for relative families) differs from _recheck_all (the exact
    margins row by row), over the cases above and several sets of lengths."""
    bad = []
    for fam, tsk, heads, feats in _relative_cases():
        for param in heads:
            for lengths in ([40], [2, 3, 17, 40]):
                if R._recheck_fast(fam, tsk, param, lengths, 20, feats) != R._recheck_all(fam, tsk, param, lengths, 20,
                                                                                           Fraction(1)):
                    bad.append((fam.name, tsk.name, lengths[-1]))
                    if first:
                        return bad
    return bad


def test_recheck_fast_equals_recheck_all():
    assert _recheck_mismatches() == []


def test_fault_in_the_running_minimum_is_caught(monkeypatch):
    """Fault: the integer margins' scale doubled (every min margin half its value): the comparison finds it."""
    real = R._relative_scaled

    def half(task, param, L, feats, rows):
        nums, worst, scale = real(task, param, L, feats, rows)
        return nums, worst, 2 * scale

    monkeypatch.setattr(R, "_relative_scaled", half)
    assert _recheck_mismatches(first=True) != []


def _scipy_lp(cost, A, b, lower, upper):
    """The reference: scipy.optimize.linprog (HiGHS through scipy), the path _linprog replaced."""
    import numpy as np
    from scipy.optimize import linprog

    res = linprog(cost, A_ub=A, b_ub=b, bounds=[(None if not np.isfinite(lo) else lo, None if not np.isfinite(hi)
                                                 else hi) for lo, hi in zip(lower, upper)], method="highs")
    return res.status == 0, (None if res.status != 0 else float(np.dot(cost, res.x)))


@pytest.mark.parametrize("seed", range(12))
def test_highspy_lp_agrees_with_scipy_linprog(seed):
    """:func:`R._linprog` (HiGHS through highspy, imported in ~0.01 s) against scipy's linprog (HiGHS through scipy,
    0.3-0.5 s to import) on the LP shapes the cutting planes ask: the same answer (optimal or not), the same optimum
    to 1e-9, a solution meeting every row to 1e-9 and duals of the right length (the fault below shows the
    comparison failing)."""
    import numpy as np

    # odd seeds: the max-margin shape (maximise t with -C theta + t <= 0, |theta| <= 1, t <= 1); even seeds: the
    # feasibility shape (free variables, -C theta <= -1.01)
    cost, A, b, lo, hi = _lp_instance(seed)
    m = A.shape[0]
    ok_ref, opt_ref = _scipy_lp(cost, A, b, lo, hi)
    got = R._linprog(cost, A, b, lo, hi)
    assert got.ok == ok_ref
    if got.ok:
        assert abs(float(np.dot(cost, got.x)) - opt_ref) <= 1e-9
        assert (A @ got.x <= b + 1e-9).all() and got.duals is not None and len(got.duals) == m


def _lp_instance(seed):
    import numpy as np

    rng = np.random.default_rng(seed)
    m, n = int(rng.integers(3, 40)), int(rng.integers(2, 6))
    A = rng.normal(size=(m, n)) * (rng.random(size=(m, n)) < 0.8)
    inf = float("inf")
    if seed % 2:
        A = np.hstack([A, np.ones((m, 1))])
        return np.r_[np.zeros(n), -1.0], A, np.zeros(m), [-1.0] * n + [-inf], [1.0] * n + [1.0]
    return np.zeros(n), A, -1.01 * np.ones(m), [-inf] * n, [inf] * n


def test_fault_lp_rows_read_with_the_wrong_sense():
    """The comparison above can fail: with the rows' sense flipped (A x >= b passed as A x <= b) the answers or
    optima differ from scipy's on most of the same instances."""
    import numpy as np

    differ = 0
    for seed in range(12):
        cost, A, b, lo, hi = _lp_instance(seed)
        ok_ref, opt_ref = _scipy_lp(cost, A, b, lo, hi)
        got = R._linprog(cost, -A, -b, lo, hi)
        differ += got.ok != ok_ref or (got.ok and abs(float(np.dot(cost, got.x)) - opt_ref) > 1e-9)
    assert differ >= 6


def test_without_highspy_the_scipy_path_gives_the_same_answers(monkeypatch):
    """Where highspy is missing, _linprog falls back to scipy: the answers (realizable or not at each length, the
    first unrealizable length) are the same either way; only the witness may differ (another optimal vertex)."""
    import sys

    fam = F.expression_family(REL).family
    tsk = pe.get_task("attend-first")
    a = R.decide_lengths(fam, tsk, 400, 20)
    monkeypatch.setitem(sys.modules, "highspy", None)
    b = R.decide_lengths(fam, tsk, 400, 20)
    assert [x.realizable for x in a.answers] == [x.realizable for x in b.answers]
    assert next(x.L for x in a.answers if x.realizable is False) == next(x.L for x in b.answers if x.realizable is False)


@pytest.mark.parametrize("seed", range(8))
def test_exact_null_space_against_sympy(seed):
    """:func:`R._null_space` (fractions, RREF) against sympy's nullspace: every basis vector is annihilated and
    there are s - rank of them."""
    import sympy as sp

    rnd = random.Random(seed)
    dim, s = rnd.randint(1, 5), rnd.randint(1, 7)
    cols = [tuple(Fraction(rnd.randint(-3, 3), rnd.randint(1, 4)) for _ in range(dim)) for _ in range(s)]
    basis = R._null_space(cols, dim)
    M = sp.Matrix(dim, s, lambda a, k: sp.Rational(cols[k][a].numerator, cols[k][a].denominator))
    assert len(basis) == s - M.rank()
    for y in basis:
        assert all(sum((y[k] * cols[k][a] for k in range(s)), Fraction(0)) == 0 for a in range(dim))


@pytest.mark.parametrize("seed", range(8))
def test_rref_and_rank_against_sympy(seed):
    """:func:`R.rref` (the one Gauss-Jordan routine behind exact_rank and _null_space) equals sympy's rref, pivots
    included, and exact_rank its rank, on random rational matrices with repeated and zero rows."""
    import sympy as sp

    rnd = random.Random(100 + seed)
    n, m = rnd.randint(1, 6), rnd.randint(1, 6)
    rows = [[Fraction(rnd.randint(-3, 3), rnd.randint(1, 4)) for _ in range(m)] for _ in range(n)]
    rows.append(list(rows[0]))
    rows.append([Fraction(0)] * m)
    red, piv = R.rref(rows)
    M = sp.Matrix([[sp.Rational(x.numerator, x.denominator) for x in r] for r in rows])
    want, want_piv = M.rref()
    assert piv == list(want_piv)
    assert [[sp.Rational(x.numerator, x.denominator) for x in r] for r in red] == want.tolist()
    assert R.exact_rank(rows) == M.rank()


def test_dual_farkas_certifies_infeasible_rows_and_never_feasible_ones():
    """An infeasible system (theta >= 1 and -theta >= 1, and a 2-d triangle) gets a certificate the solver-free
    checker accepts; a feasible one gets none; and a wrong null vector (fault) is caught by that checker, so no
    certificate comes out of it."""
    one = Fraction(1)
    res = R._dual_farkas("t", [(one,), (-one,)], 1, one)
    assert res is not None and res.answer == "unsat" and res.certificate["checked"]
    tri = [(one, Fraction(0)), (Fraction(0), one), (-one, -one)]
    res = R._dual_farkas("t", tri, 2, one)
    assert res is not None and res.certificate["cases"][0]["multipliers"] == ["1", "1", "1"]
    assert R._dual_farkas("t", [(one, Fraction(0)), (Fraction(0), one)], 2, one) is None  # feasible
    assert R._dual_farkas("t", [(one,), (one,)], 1, one) is None  # feasible, null vector of mixed sign
    real = R._null_space
    try:
        R._null_space = lambda cols, dim: [[Fraction(1)] * len(cols)] if len(cols) == 3 else real(cols, dim)
        assert R._dual_farkas("t", [(one, Fraction(0)), (Fraction(0), one), (-one, Fraction(0))], 2, one) is None
    finally:
        R._null_space = real


def test_dual_farkas_answers_equal_the_solver_route(monkeypatch):
    """The certificates from the LP's dual support give the same answers at every length as z3's (the route they
    replaced, kept as the fallback): attend-first with the designer's relative features, and [1, i] on prev."""
    for fam, tsk, N in ((F.expression_family(REL).family, pe.get_task("attend-first"), 300),
                        (F.expression_family("1, i").family, pe.get_task("prev"), 40)):
        a = R.decide_lengths(fam, tsk, N, 20)
        names = [o["name"] for o in a.obligations]
        assert any("solved exactly (no solver)" in n for n in names)
        monkeypatch.setattr(R, "_dual_farkas", lambda *args, **kw: None)
        b = R.decide_lengths(fam, tsk, N, 20)
        monkeypatch.undo()
        assert [x.realizable for x in a.answers] == [x.realizable for x in b.answers]
        assert all(c["certificate"]["checked"] for c in a.certificates.values())


def test_with_scipys_own_highs_the_witnesses_are_scipys():
    """constraints.txt pins highspy to the HiGHS that scipy bundles: then _linprog (column-wise, dual simplex, a
    warning status read as the model status it leaves) gives scipy's vertices, so the witnesses and the rounds are the
    old path's too.  Fault this caught: a HiGHS warning read as a failure sent [1, i, i^2] prev at 4096 through 5
    cutting-plane rounds (134 rows held) instead of 2 (38)."""
    import sys

    import scipy.optimize._highspy._core as sc
    from highspy import _core as hc

    if hc._Highs().version() != sc._Highs().version():
        pytest.skip("highspy's HiGHS is not scipy's (constraints.txt pins them equal)")
    fam = F.expression_family("1, i, i**2").family
    tsk = pe.get_task("prev")
    a = R.decide_lengths(fam, tsk, 4096, 20)
    assert a.witnesses["W1"]["cutting_planes"] == {"rounds": 2, "constraints_held": 38, "block_identity": True}
    saved = sys.modules.get("highspy")
    sys.modules["highspy"] = None  # type: ignore[assignment]
    try:
        b = R.decide_lengths(fam, tsk, 4096, 20)
    finally:
        sys.modules["highspy"] = saved  # type: ignore[assignment]
    assert a.witnesses["W1"]["param"] == b.witnesses["W1"]["param"]
