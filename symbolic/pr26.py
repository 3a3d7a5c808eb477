"""Symbolic layer for pr26: Prop. 1 for every n and W, the deep-row argument of Theorem 2,
and the causal-mask block identity of Theorem 1, in sympy.

Source: pr26 (TMLR 2026), Prop. 1, Theorem 2, Theorem 1 (the paper's full text was not
reachable: statements as summarised, arguments reconstructed below).  The feature maps and tasks
are the shared definitions of :mod:`verify.constructions.pe`, evaluated here with an
exact sympy arithmetic (positions/offsets may be sympy Symbols where the map allows).

Prop. 1 (argument next to the code).  With phi(i) = [1, i] every logit row is
f(j) = phi(i)^T W phi(j), and sympy shows d^2 f / dj^2 = 0 identically (f affine in j).
For 0 <= j <= i, i >= 1, the exact identity

    f(j) = ((i - j)/i) f(0) + (j/i) f(i)

(checked by sympy for symbolic i, j and symbolic W) writes every interior value as a
convex combination of the endpoints with positive weights, so f(j) <= max(f(0), f(i))
and an interior j is never the strict unique maximiser.  prev needs the interior key
i - 1 on every row i >= 2 (0-indexed; paper's 1-indexed rows i >= 3, whose previous
token is not the first), hence no W realizes it at any n >= 3.  The same holds for ALiBi,
whose kernel a - m delta is affine in delta = i - j.

Theorem 2 (deep-row argument).  If k has a strict unique global maximiser delta*,
a row i >= delta* (its window of offsets 0..i contains delta*) has strict argmax offset
delta*, i.e. attends to j = i - delta*.  A row realizes the task iff its target offset
o(i, L) = i - t_L(i) equals delta*.  sympy computes o for every task from the shared
task definitions: constant (prev: 1, skip-K: K) -> every deep row is right at every L
with delta* = o; depends on L only (copy: ceil(L/2)) -> no deep row is right once
ceil(L/2) != delta*; depends on i (reverse: 2i - L + 1, attend-first: i) -> at most one
row per length solves o = delta*.  The fraction of failing new rows then tends to 1.

Theorem 1 (block identity).  No feature depends on the evaluation length L, so
E^T Phi_L = Phi_L0 (E = the first L0 unit vectors) and the top-left L0 x L0 block of
P_L(W) = Phi_L W Phi_L^T is P_L0(W); for relative heads every block entry is k(i - j)
with 0 <= i - j < L0 at both lengths.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import sympy as sp

from verify.constructions.pe import FAMILIES, N_FREQ, Family, get_task
from verify.evidence import Evidence, Layer, Status, engine_versions


class SympyArith:
    """Exact sympy arithmetic for the feature maps (positions may be Symbols)."""

    exact = True

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def num(self, q: Any) -> sp.Expr:
        if isinstance(q, Fraction):
            return sp.Rational(q.numerator, q.denominator)
        return sp.sympify(q)

    @staticmethod
    def theta(k: int) -> sp.Expr:
        return sp.Integer(10000) ** sp.Rational(-k, N_FREQ)

    def sin(self, k: int, n: Any) -> sp.Expr:
        return sp.sin(n * self.theta(k))

    def cos(self, k: int, n: Any) -> sp.Expr:
        return sp.cos(n * self.theta(k))

    def rand(self, n: int, a: int, r: int) -> sp.Expr:
        from verify.constructions.pe import _rand

        return sp.Rational(Fraction(_rand(self.seed, n, a, r)).numerator, Fraction(_rand(self.seed, n, a, r)).denominator)


def symbolic_row(family: Family) -> tuple[sp.Expr, sp.Symbol, sp.Symbol, list[sp.Symbol]]:
    """f(j) = logit(i, j) with symbolic i, j and a symbolic parameter (small families only).

    Returns:
        (f, i, j, parameter symbols).
    Raises:
        TypeError/ValueError: the feature map cannot take a symbolic position.
    """
    i, j = sp.symbols("i j", integer=True, nonnegative=True)
    ar = SympyArith()
    r = family.dim(4)
    if family.kind == "absolute":
        W = sp.Matrix(r, r, lambda a, b: sp.Symbol(f"W_{a}{b}"))
        pi = sp.Matrix(family.features(i, 4, ar))
        pj = sp.Matrix(family.features(j, 4, ar))
        f = sp.expand((pi.T * W * pj)[0, 0])
        params = list(W)
    else:
        w = sp.Matrix([sp.Symbol(f"w_{a}") for a in range(r)])
        f = sp.expand((w.T * sp.Matrix(family.features(i - j, 4, ar)))[0, 0])
        params = list(w)
    return f, i, j, params


def tie_row(family: Family) -> tuple[dict, sp.Expr, sp.Expr]:
    """The best an interior key can do under Prop. 1: a constant logit row (every key tied).

    Sets every parameter that multiplies the key index j to 0 and the others to 1, so the row f(j) no
    longer depends on j.  Returns (parameter values, the row, prev's margin at row i: f(i - 1) -
    max(f(0), f(i)), which is 0 -- a tie, the supremum of the interior margin by the convex-combination
    identity).
    """
    f, i, j, params = symbolic_row(family)
    slope = sp.expand(sp.diff(f, j))
    vals = {p: (0 if slope.has(p) else 1) for p in params}
    ft = sp.expand(f.subs(vals))
    margin = sp.simplify(ft.subs(j, i - 1) - sp.Max(ft.subs(j, 0), ft.subs(j, i)))
    return {str(k): int(v) for k, v in vals.items()}, ft, margin


def key_curvature(f: sp.Expr, i: sp.Symbol, j: sp.Symbol) -> sp.Expr:
    """d^2 f / dj^2 in the key index j (the query i held fixed): 0 exactly when the logit row is affine in j,
    the premise of Prop. 1's endpoint argument."""
    return sp.simplify(sp.diff(f, j, 2))


def check_prop1(families: Sequence[Family], control: Family | None = None) -> Evidence:
    """pr26 Prop. 1 for every n >= 3 and every W, for each given family (affine, alibi).

    The argument has three steps, each computed: (1) the logit row is affine in j (d^2/dj^2 = 0);
    (2) f(j) = ((i-j)/i) f(0) + (j/i) f(i), so an interior key's margin over the endpoints is <= 0;
    (3) that bound is attained only by a tie (a constant row, :func:`tie_row`, margin exactly 0), and
    a tie is a failure (``pe.attends``), so no W realizes prev.  Positive control: the same affinity
    test on ``control`` (default the quadratic [1, i, i^2]) must report d^2/dj^2 != 0.

    Returns:
        proved when every family passes the three steps and the control is detected as non-affine;
        inconclusive (premise fails, argument does not apply) naming the first non-affine family;
        refuted when the tie of step 3 counts as realization under the decision rule (witness: the
        constant row); error if the identity or the control fails.
    """
    from verify.constructions import pe
    from verify.constructions.pe import QUADRATIC

    control = control or QUADRATIC
    details: list[str] = []
    numbers: dict[str, Any] = {}
    fc, ic, jc, _ = symbolic_row(control)
    d2c = key_curvature(fc, ic, jc)
    numbers[f"control {control.name}: d^2 logit / dj^2"] = str(d2c)
    if d2c == 0:
        return Evidence(layer=Layer.SYMBOLIC, status=Status.ERROR, engines=engine_versions("sympy"), numbers=numbers,
                        summary=(f"positive control failed: the affinity test finds the {control.name} row "
                                 f"({control.description}) affine, so it cannot tell affine rows from others"))
    # the shipped families are bilinear (as curved in i as in j): the test must also tell the key from the
    # query, so a row affine in i but quadratic in j is not affine, and one quadratic in i but affine in j is
    for row, affine in ((ic + jc ** 2, False), (ic ** 2 + jc, True)):
        if (key_curvature(row, ic, jc) == 0) != affine:
            return Evidence(layer=Layer.SYMBOLIC, status=Status.ERROR, engines=engine_versions("sympy"), numbers=numbers,
                            summary=(f"positive control failed: the affinity test calls the row {row} "
                                     f"{'affine' if not affine else 'not affine'} in the key j: it differentiates in "
                                     "the wrong variable"))
    for fam in families:
        f, i, j, params = symbolic_row(fam)
        d2 = key_curvature(f, i, j)
        numbers[f"{fam.name}: logit(i, j)"] = str(f)
        numbers[f"{fam.name}: d^2 logit / dj^2"] = str(d2)
        if d2 != 0:
            return Evidence(layer=Layer.SYMBOLIC, status=Status.INCONCLUSIVE, engines=engine_versions("sympy"), numbers=numbers,
                            summary=(f"the {fam.name} logit row is not affine in j (d^2/dj^2 = {d2}): the endpoint "
                                     "argument of Prop. 1 does not apply"), details=details)
        comb = sp.simplify(f - ((i - j) / i * f.subs(j, 0) + j / i * f.subs(j, i)))
        numbers[f"{fam.name}: f(j) - ((i-j)/i f(0) + (j/i) f(i))"] = str(comb)
        if comb != 0:
            return Evidence(layer=Layer.SYMBOLIC, status=Status.ERROR, engines=engine_versions("sympy"), numbers=numbers,
                            summary=f"convex-combination identity failed for {fam.name}: {comb}")
        vals, ft, tm = tie_row(fam)
        numbers[f"{fam.name}: best interior margin (constant row {vals})"] = str(tm)
        if bool(pe.attends(tm)):
            return Evidence(layer=Layer.SYMBOLIC, status=Status.REFUTED, engines=engine_versions("sympy"), numbers=numbers,
                            details=details, witness={"family": fam.name, "parameters": vals, "row": str(ft),
                                                      "prev_margin": str(tm)},
                            summary=(f"{fam.name}: the constant row {ft} (parameters {vals}) has prev margin {tm}, "
                                     "which the decision rule counts as attending: prev is realized by a tie"))
        details.append(f"{fam.name}: logit(i, j) = {f}; affine in j; f(j) = ((i-j)/i) f(0) + (j/i) f(i) identically; "
                       f"the best interior margin is {tm}, attained only by a constant row (e.g. {vals}): a tie, "
                       "which fails")
    details.append(f"positive control {control.description}: d^2 logit / dj^2 = {d2c} != 0 (the test sees "
                   "non-affine rows)")
    return Evidence(layer=Layer.SYMBOLIC, status=Status.PROVED, engines=engine_versions("sympy"), numbers=numbers, details=details,
                    bound="every n >= 3, every W (symbolic i, j, W)",
                    summary=("every logit row is affine in j, so f(j) is a convex combination of f(0) and f(i) with positive "
                             "weights: an interior key (in particular i - 1 on rows i >= 2, 0-indexed) at best ties an "
                             "endpoint (margin 0, a failure), so it is never the strict unique maximiser; prev is "
                             "unrealizable at every n >= 3 for every W (" + ", ".join(f.name for f in families) + ")"))


def deep_row_analysis(task_names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """Target offsets o(i, L) = i - t_L(i) of each task, symbolically, and the deep-row consequence.

    The number of deep rows that are right at length L = 2m is computed, never assumed: a
    constant offset o makes every deep row right (delta* = o); an offset o(L) that depends on L
    only makes every row right exactly at the lengths solving o(2m) = delta* (sympy.solve) and none
    beyond the last of them; an offset that varies with i is right on as many rows as
    o(i, L) = delta* has solutions i.

    Returns:
        task -> {"offset": str, "kind": "constant" | "grows with L" | "depends on L" | "varies with i",
                 "deep_rows_right_at_most": str, "failing_fraction_limit": sympy number}
        (L taken even, L = 2m, for the limit; query rows i in [ceil(L/2), L) or as the task says).
    """
    i, L, d = sp.symbols("i L delta_star", integer=True, nonnegative=True)
    m = sp.Symbol("m", integer=True, positive=True)
    out: dict[str, dict[str, Any]] = {}
    for name in task_names:
        task = get_task(name)
        o = sp.simplify(task.offset(i, L))
        first = sp.simplify(task.first_row(L))
        n_rows = sp.simplify((L - first).subs(L, 2 * m))
        fs = o.free_symbols
        k = sp.Symbol("k", integer=True, nonnegative=True)
        if not fs:
            kind, succ = "constant", n_rows  # delta* = o: every deep row is right
            frac = sp.Integer(0)
        elif i not in fs:
            # o depends on L only: a row is right iff o(L) = delta*; solve for the lengths L = 2m where that happens
            o_m = sp.simplify(o.subs(L, 2 * m))
            sols = sp.solve(sp.Eq(o_m, d), m)
            kind = "grows with L" if sp.limit(o_m, m, sp.oo) == sp.oo else "depends on L"
            succ = sp.Piecewise(*[(n_rows, sp.Eq(m, sv)) for sv in sols], (0, True)) if sols else sp.Integer(0)
            # beyond the last solving length (m = last + 1 + k, k >= 0) no deep row is right
            last = max(sols, key=lambda v: sp.default_sort_key(v)) if sols else None
            eventually = sp.simplify(succ.subs(m, last + 1 + k)) if last is not None else sp.Integer(0)
            frac = sp.limit(1 - eventually / n_rows, m, sp.oo) if not eventually.has(m) else sp.nan
        else:
            sols = sp.solve(sp.Eq(o, d), i)
            kind, succ = "varies with i", sp.Integer(len(sols))
            frac = sp.limit(1 - succ / n_rows, m, sp.oo)
        out[name] = {"offset": str(o), "kind": kind, "query_rows_at_L=2m": str(n_rows),
                     "deep_rows_right_at_most": str(succ), "failing_fraction_limit": frac}
    return out


def check_theorem2(K: int = 3) -> Evidence:
    """The deep-row argument of pr26 Theorem 2 for a symbolic relative kernel.

    Returns:
        proved when prev and skip-K have constant offsets (so every deep row is right at
        every L for delta* = offset) and copy and reverse have failing fractions whose
        limit as L -> oo is 1 (> 0: non-vanishing); refuted otherwise.
    """
    names = ["prev", f"skip-{K}", "attend-first", "copy", "reverse"]
    an = deep_row_analysis(names)
    details = [f"{t}: o(i, L) = {a['offset']} ({a['kind']}); at L = 2m: {a['query_rows_at_L=2m']} query rows, at most "
               f"{a['deep_rows_right_at_most']} deep rows right; failing fraction -> {a['failing_fraction_limit']}"
               for t, a in an.items()]
    ok = (an["prev"]["kind"] == "constant" and an[f"skip-{K}"]["kind"] == "constant"
          and an["copy"]["failing_fraction_limit"] == 1 and an["reverse"]["failing_fraction_limit"] == 1)
    numbers = {t: {k: str(v) for k, v in a.items()} for t, a in an.items()}
    base: dict[str, Any] = dict(layer=Layer.SYMBOLIC, engines=engine_versions("sympy"), numbers=numbers, details=details,
                bound="every L, every relative kernel with a strict unique global maximiser delta* (symbolic L, i, delta*)")
    if ok:
        return Evidence(status=Status.PROVED, summary=(
            f"deep rows attend to delta*: prev and skip-{K} have constant target offsets (1, {K}), realized at every L by "
            "a kernel peaked there; copy's offset ceil(L/2) grows with L and reverse's 2i - L + 1 varies with i, so the "
            "fraction of failing rows tends to 1"), **base)
    return Evidence(status=Status.REFUTED, summary="the deep-row classification does not give the stated dichotomy", **base)


def margin_identity(families: Sequence[Family], tasks: Sequence[Any], L0: int = 5, L: int = 9, seed: int = 0,
                    draws: int = 3) -> dict:
    """Theorem 1's margin part, exactly: margin at L over all query rows = min(g0, gL).

    For each family with rational features (exact in fractions.Fraction), task and draw, a random
    integer parameter (entries in -4..4, ``random.Random`` seeded by (seed, family, task, draw)):
    g0 = min exact margin over the query rows at L0 (targets t_L0), gL = min over the new query rows
    [L0, L) at L, and the claim is  min over all query rows at L  ==  min(g0, gL); each old row's margin
    at L also equals its margin at L0.  Needs length-stable targets (t_L(i) = t_L0(i) for i < L0).

    Returns:
        {"checked": n, "mismatches": [witness dicts], "families": [...], "tasks": [...]}.
    """
    import random

    from verify.constructions.pe import FractionArith, exact_row_margin

    checked, bad = 0, []
    fams = [f for f in families if f.rational]
    for fam in fams:
        ar = FractionArith(seed)
        feats = [fam.features(n, L0, ar) for n in range(L)]
        for task in tasks:
            for dr in range(draws):
                g = random.Random(f"pr26-theorem1:{seed}:{fam.name}:{task.name}:{dr}")
                shape = fam.param_shape(L0)
                P: Any
                if len(shape) == 2:
                    P = [[Fraction(g.randint(-4, 4)) for _ in range(shape[1])] for _ in range(shape[0])]
                else:
                    P = [Fraction(g.randint(-4, 4)) for _ in range(shape[0])]

                def marg(rows, n):
                    return {i: exact_row_margin(fam, task, P, i, n, L0, ar, feats) for i in rows}

                old0 = {i: v for i, v in marg(task.rows(L0), L0).items() if v is not None}
                atL = {i: v for i, v in marg(task.rows(L), L).items() if v is not None}
                new = [v for i, v in atL.items() if i >= L0]
                want = min(list(old0.values()) + new)
                got = min(atL.values())
                moved = [i for i in old0 if atL.get(i) != old0[i]]
                checked += 1
                if got != want or moved:
                    bad.append({"family": fam.name, "task": task.name, "draw": dr, "L0": L0, "L": L,
                                "margin_at_L": str(got), "min(g0, gL)": str(want),
                                "old_rows_whose_margin_moved": moved[:5]})
    return {"checked": checked, "mismatches": bad, "families": [f.name for f in fams],
            "tasks": [t.name for t in tasks], "L0": L0, "L": L}


def check_theorem1(L0s: Sequence[int] = (3, 5), Ls: Sequence[int] = (8, 13), families: Sequence[Family] | None = None,
                   seed: int = 0, tasks: Sequence[Any] | None = None) -> Evidence:
    """The block identity of pr26 Theorem 1 for every family, exactly.

    For each family, L0 in L0s and L in Ls: the first L0 feature rows (positions;
    offsets for relative families) at length L equal those at L0 exactly, and, for the
    families with r <= 8 at L0 = 3, the full symbolic block P_L(W)[:L0, :L0] - P_L0(W) = 0
    with a symbolic W.  The matrix identity E^T (Phi W Phi^T) E = (E^T Phi) W (E^T Phi)^T
    is checked once with sympy MatrixSymbols.

    Returns:
        proved, or refuted naming the family and the first differing entry.
    """
    fams = list(families) if families is not None else list(FAMILIES.values())
    ar = SympyArith(seed)
    details = []
    if not _matrix_identity_holds():
        return Evidence(layer=Layer.SYMBOLIC, status=Status.ERROR, summary="matrix identity failed (sympy)")
    for fam in fams:
        refuted, line = _theorem1_family(fam, L0s, Ls, ar)
        if refuted is not None:
            return refuted
        details.append(line)
    tks = list(tasks) if tasks is not None else [get_task(t) for t in ("prev", "skip-2", "attend-first")]
    mi = margin_identity(fams, tks, L0s[-1], Ls[0], seed)
    numbers = {"families": [f.name for f in fams], "L0": list(L0s), "L": list(Ls), "margin_identity": mi}
    if mi["mismatches"]:
        w = mi["mismatches"][0]
        return Evidence(layer=Layer.SYMBOLIC, status=Status.REFUTED, engines=engine_versions("sympy"), numbers=numbers,
                        details=details, witness=w,
                        summary=(f"{w['family']}/{w['task']}: at L = {w['L']} the exact margin is {w['margin_at_L']} "
                                 f"against min(g0, gL) = {w['min(g0, gL)']}, and old rows "
                                 f"{w['old_rows_whose_margin_moved'] or 'none'} changed margin "
                                 f"({len(mi['mismatches'])} of {mi['checked']} draws differ)"))
    details.append(f"margin part, exactly (fractions): {mi['checked']} random integer parameters over "
                   f"{', '.join(mi['families'])} x {', '.join(mi['tasks'])} at L0 = {mi['L0']}, L = {mi['L']}: margin "
                   "at L = min(g0, gL) and every old row keeps its margin")
    return Evidence(layer=Layer.SYMBOLIC, status=Status.PROVED, engines=engine_versions("sympy"), details=details,
                    numbers=numbers,
                    bound=(f"block identity: L0 in {list(L0s)}, L in {list(Ls)}, every W (symbolic); margin identity: "
                           f"{mi['checked']} exact random integer parameters (rational families), L0 = {mi['L0']}, "
                           f"L = {mi['L']}"),
                    summary=("the top-left L0 x L0 block of P_L(W) equals P_L0(W) for every family (features never depend "
                             f"on L), and with length-stable targets the exact margin at L equals min(g0, gL) on "
                             f"{mi['checked']} random parameters"))


def _matrix_identity_holds() -> bool:
    """E^T (Phi W Phi^T) E = (E^T Phi) W (E^T Phi)^T, with sympy MatrixSymbols (6 x 3 features, a 4-row block)."""
    Phi = sp.MatrixSymbol("Phi_L", 6, 3)
    W = sp.MatrixSymbol("W", 3, 3)
    E = sp.Matrix(6, 4, lambda a, b: 1 if a == b else 0)
    lhs = (E.T * sp.Matrix(Phi) * sp.Matrix(W) * sp.Matrix(Phi).T * E)
    rhs = (E.T * sp.Matrix(Phi)) * sp.Matrix(W) * (E.T * sp.Matrix(Phi)).T
    return bool(sp.simplify(lhs - rhs) == sp.zeros(4, 4))


def _theorem1_family(fam: Family, L0s: Sequence[int], Ls: Sequence[int], ar: Any) -> tuple[Evidence | None, str]:
    """One family's block identity: its first L0 feature rows at each L against L0 and, when r <= 8 at
    L0 = 3, the symbolic block P_L(W)[:3, :3] - P_3(W).  A refutation, or None and the detail line."""
    for L0 in L0s:
        rows_L0 = [fam.features(p, L0, ar) for p in range(L0)]
        for L in Ls:
            # the map is evaluated afresh for the longer sequence; no argument carries L
            rows_L = [fam.features(p, L0, ar) for p in range(L)][:L0]
            for p in range(L0):
                diff = [sp.simplify(a - b) for a, b in zip(rows_L[p], rows_L0[p])]
                if any(x != 0 for x in diff):
                    return Evidence(layer=Layer.SYMBOLIC, status=Status.REFUTED, engines=engine_versions("sympy"),
                                    summary=f"{fam.name}: feature of position {p} differs between L = {L} and L0 = {L0}",
                                    witness={"family": fam.name, "position": p, "L0": L0, "L": L}), ""
    L0 = 3
    if fam.dim(L0) > 8:
        return None, (f"{fam.name}: first L0 feature rows identical at L0 = {list(L0s)} and L = {list(Ls)} "
                      f"(r = {fam.dim(3)}; block identity by the matrix identity)")
    rr = fam.dim(L0)
    if fam.kind == "absolute":
        Wm = sp.Matrix(rr, rr, lambda a, b: sp.Symbol(f"W_{a}{b}"))
        PhiL = sp.Matrix([fam.features(p, L0, ar) for p in range(max(Ls))])
        PL = PhiL * Wm * PhiL.T
        P0 = sp.Matrix(PhiL[:L0, :]) * Wm * sp.Matrix(PhiL[:L0, :]).T
    else:
        w = sp.Matrix([sp.Symbol(f"w_{a}") for a in range(rr)])
        Lm = max(Ls)
        k = [(w.T * sp.Matrix(fam.features(dd, L0, ar)))[0, 0] for dd in range(Lm)]
        PL = sp.Matrix(Lm, Lm, lambda a, b: k[a - b] if a >= b else 0)
        P0 = sp.Matrix(L0, L0, lambda a, b: k[a - b] if a >= b else 0)
    blk = sp.simplify(PL[:L0, :L0] - P0)
    if blk != sp.zeros(L0, L0):
        return Evidence(layer=Layer.SYMBOLIC, status=Status.REFUTED, engines=engine_versions("sympy"),
                        summary=f"{fam.name}: block differs: {blk}"), ""
    return None, f"{fam.name}: P_{max(Ls)}(W)[:3, :3] - P_3(W) = 0 with symbolic W (r = {rr})"


__all__ = ["check_prop1", "tie_row", "check_theorem2", "check_theorem1", "deep_row_analysis", "symbolic_row", "SympyArith"]
