"""Realizability and identifiability of a task by a fixed positional feature map, decided exactly.

Source: pr26 (TMLR 2026): a positional-only head's logits are linear in its parameter, so
"some head realizes the task" is a linear feasibility problem (this generalizes the paper's
Prop. 1, affine features, to any feature map); and the parameters with the same logits at the
training length L0 form an affine space, over which alpha_L can range (the identifiability
question the paper raises).  Full text not reachable: reconstructed, as in
:mod:`verify.solver.pr26`.

* :func:`decide_lengths`: for every length ell <= N, does one parameter realize the task with
  margin >= G on every query row of every length <= ell?  Each answer is either a parameter
  (z3's exact rational model) re-checked in fractions.Fraction outside the solver, or a Farkas
  certificate (nonnegative multipliers giving 0 <= negative) checked by the solver-free
  :mod:`verify.solver.recheck`.  A solver timeout is inconclusive.
* :func:`alpha_range`: over every parameter with the same masked logits at L0 as a given one,
  the smallest and largest alpha_L (z3 Optimize over linear real arithmetic with one Boolean per
  new row: a solver optimum; each attaining parameter is re-checked exactly), and, for a few new
  rows, every attainable alpha_L.
* :func:`exact_rank`: rank of a rational matrix by Fraction elimination.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Sequence

from verify.constructions import pe
from verify.constructions.pe import Family, FractionArith, Task
from verify.solver.common import SolverAnswer
from verify.solver.pr26 import _shape, lp_obligation, realize_rows

#: cost cap of the exact rank (rows x cols x min(rows, cols) Fraction operations); above it, numpy's SVD rank
MAX_EXACT_RANK_WORK = 4_000_000


def exact_rank(rows: Sequence[Sequence[Fraction]]) -> int:
    """Rank of a matrix of Fractions (Gaussian elimination, exact)."""
    m = [list(r) for r in rows if any(x != 0 for x in r)]
    if not m:
        return 0
    ncol = len(m[0])
    rank = 0
    for c in range(ncol):
        piv = next((k for k in range(rank, len(m)) if m[k][c] != 0), None)
        if piv is None:
            continue
        m[rank], m[piv] = m[piv], m[rank]
        p = m[rank]
        for k in range(rank + 1, len(m)):
            if m[k][c] != 0:
                f = m[k][c] / p[c]
                m[k] = [a - f * b for a, b in zip(m[k], p)]
        rank += 1
        if rank == len(m):
            break
    return rank


def matrix_rank(rows: Sequence[Sequence[Fraction]]) -> tuple[int, str]:
    """(rank, how): exact by Fraction elimination when small enough, else numpy's SVD rank (float64)."""
    n = len(rows)
    k = len(rows[0]) if rows else 0
    if n * k * max(min(n, k), 1) <= MAX_EXACT_RANK_WORK:
        return exact_rank(rows), "exact (Fraction elimination)"
    import numpy as np

    a = np.array([[float(x) for x in r] for r in rows], dtype=np.float64)
    return int(np.linalg.matrix_rank(a)), "numeric (numpy SVD rank, default tolerance)"


def _flat(family: Family, param: Any) -> list[Fraction]:
    if family.kind == "relative":
        return [Fraction(x) for x in param]
    return [Fraction(x) for row in param for x in row]


def cumulative_rows(family: Family, task: Task, L: int, window: int, cache: dict | None = None) -> list[tuple]:
    """The margin rows of every length 2..L together (deduplicated): one parameter for all of them.

    For a length-stable task (targets independent of L) these are the rows at L alone.
    """
    if task.length_stable:
        return realize_rows(family, task, L, window)
    out: dict[tuple, None] = {}
    for ell in range(2, L + 1):
        key = ("rows", ell)
        rows = cache.get(key) if cache is not None else None
        if rows is None:
            rows = realize_rows(family, task, ell, window)
            if cache is not None:
                cache[key] = rows
        for r in rows:
            out[r] = None
    return list(out)


@dataclass
class LengthAnswer:
    """One length ell: realizable (with the id of its re-checked parameter) or not (certificate id), or unknown."""

    L: int
    realizable: bool | None
    witness: str | None = None
    certificate: str | None = None
    min_margin: Fraction | None = None
    note: str = ""


@dataclass
class Decision:
    """The per-length answers and the evidence they cite."""

    answers: list[LengthAnswer]
    witnesses: dict[str, dict] = field(default_factory=dict)
    certificates: dict[str, dict] = field(default_factory=dict)
    obligations: list[dict] = field(default_factory=list)
    seconds: float = 0.0


def _margins_by_row(family: Family, task: Task, param: Any, L: int, window: int) -> dict[int, Fraction]:
    """Exact margin of every query row at length L (rows with a single key omitted)."""
    ar = FractionArith(0)
    feats = [family.features(m, window, ar) for m in range(L)]
    out = {}
    for i in task.rows(L):
        mg = pe.exact_row_margin(family, task, param, i, L, window, ar, feats)
        if mg is not None:
            out[i] = mg
    return out


def _recheck_all(family: Family, task: Task, param: Any, lengths: Sequence[int], window: int,
                 margin: Fraction) -> dict[int, Fraction | None]:
    """Exact min margin at each length (over every row of every length up to it); outside z3."""
    out: dict[int, Fraction | None] = {}
    if task.length_stable and lengths:
        by_row = _margins_by_row(family, task, param, max(lengths), window)
        for ell in lengths:
            vals = [m for i, m in by_row.items() if i < ell]
            out[ell] = min(vals) if vals else None
        return out
    worst: Fraction | None = None
    for ell in range(2, max(lengths) + 1 if lengths else 2):
        vals = list(_margins_by_row(family, task, param, ell, window).values())
        if vals:
            worst = min(vals) if worst is None else min(worst, min(vals))
        if ell in lengths:
            out[ell] = worst
    return out


def decide_lengths(family: Family, task: Task, N: int, window: int, margin: Fraction = Fraction(1),
                   timeout_ms: int = 20_000, fixed: Sequence[Fraction] | None = None, min_L: int = 2) -> Decision:
    """For each length ell in min_L..N: is there one parameter with margin >= ``margin`` on every query row
    of every length <= ell?

    The answers are monotone in ell (more rows, fewer parameters).  One solve at N; if it is
    infeasible, a bisection finds the first infeasible length L*; lengths below L* cite the parameter
    found at L* - 1, lengths from L* on cite the certificate found at L* (its rows are rows of every
    longer length, checked).  ``fixed``: a family without a trained parameter (the parameter is
    pinned by equality rows, which the certificate then uses too).

    Returns:
        :class:`Decision` (witness parameters as rational strings with their exact re-check; Farkas
        certificates in :mod:`verify.solver.recheck`'s format with the checker's verdict).
    Raises:
        ValueError: margin <= 0 (a margin of 0 is met by the zero parameter: ties are failures).
    """
    margin = Fraction(margin)
    if margin <= 0:
        raise ValueError("the margin must be positive (an exact tie is a failure)")
    t0 = time.perf_counter()
    r = family.dim(window)
    dim = r if family.kind == "relative" else r * r
    extra = _pinned_rows(fixed, dim)
    cache: dict = {}
    solved: dict[int, Any] = {}

    def solve(ell: int):
        if ell not in solved:
            rows = cumulative_rows(family, task, ell, window, cache)
            name = (f"exists a parameter with margin >= {margin} on every query row of every length <= {ell} "
                    f"({family.name}, {task.name}, {len(rows)} constraints)")
            res = lp_obligation(name, rows, dim, timeout_ms, margin=margin, extra=extra, second_opinion="never")
            solved[ell] = (res, rows)
        return solved[ell]

    dec = Decision([])
    lengths = list(range(min_L, N + 1))
    res_N, _ = solve(N)
    first_bad = _first_infeasible(solve, res_N.answer, min_L, N)
    for res, _rows in solved.values():
        dec.obligations.append(res.summary() if callable(getattr(res, "summary", None)) else {"name": res.name})
    if first_bad == -1 or any(solved[k][0].answer not in (SolverAnswer.SAT, SolverAnswer.UNSAT) for k in solved):
        for ell in lengths:
            dec.answers.append(LengthAnswer(ell, None, note=f"solver: {res_N.answer} ({res_N.reason})"))
        dec.seconds = time.perf_counter() - t0
        return dec
    good = lengths if first_bad is None else [ell for ell in lengths if ell < first_bad]
    if good:
        res, _ = solve(max(good))
        if res.answer != SolverAnswer.SAT or res.reason:
            for ell in lengths:
                dec.answers.append(LengthAnswer(ell, None, note=f"no exact model at {max(good)} ({res.reason})"))
            dec.seconds = time.perf_counter() - t0
            return dec
        _cite_witness(dec, res, family, task, good, window, margin, dim, fixed)
    if first_bad is not None:
        res, _rows = solve(first_bad)
        _cite_certificate(dec, res, first_bad, lengths, lambda used, ell: rows_present(
            used, cumulative_rows(family, task, ell, window, cache), margin, dim, extra))
    dec.answers.sort(key=lambda a: a.L)
    dec.seconds = time.perf_counter() - t0
    return dec


def _pinned_rows(fixed: Sequence[Fraction] | None, dim: int) -> list[tuple[tuple, Fraction]]:
    """The equality rows (as two inequalities each) that pin the parameter to ``fixed``; none when not given."""
    extra: list[tuple[tuple, Fraction]] = []
    if fixed is not None:
        for a, v in enumerate(fixed):
            e = tuple(Fraction(int(b == a)) for b in range(dim))
            extra += [(e, Fraction(v)), (tuple(-x for x in e), -Fraction(v))]
    return extra


def _first_infeasible(solve: Callable[[int], Any], answer_N: SolverAnswer, min_L: int, N: int) -> int | None:
    """The first length whose system is infeasible, by bisection on min_L..N (the answers are monotone in
    the length): None when the system at N is feasible, -1 when the solver did not decide at N."""
    if answer_N == SolverAnswer.SAT:
        return None
    if answer_N != SolverAnswer.UNSAT:
        return -1
    lo, hi = min_L, N  # invariant: hi infeasible; find the smallest infeasible length
    if solve(lo)[0].answer == SolverAnswer.UNSAT:
        hi = lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ans = solve(mid)[0].answer
        if ans == SolverAnswer.UNSAT:
            hi = mid
        elif ans == SolverAnswer.SAT:
            lo = mid
        else:
            break
    return hi


def _cite_witness(dec: Decision, res: Any, family: Family, task: Task, good: Sequence[int], window: int,
                  margin: Fraction, dim: int, fixed: Sequence[Fraction] | None) -> None:
    """Record the parameter the solver found at the longest feasible length as witness W1, re-checked
    exactly at every length in ``good``, and the answer it gives each of those lengths."""
    theta = [res.model.get(f"theta_{a}", Fraction(0)) for a in range(dim)]
    param = _shape(family, window, theta)
    margins = _recheck_all(family, task, param, good, window, margin)
    ok_all = all(m is None or (m >= margin and bool(pe.attends(m))) for m in margins.values())
    fixed_ok = fixed is None or [Fraction(x) for x in theta] == [Fraction(x) for x in fixed]
    dec.witnesses["W1"] = {"found_at_length": max(good), "param": _strings(param), "shape": list(
        family.param_shape(window)), "rechecked_exact": ok_all and fixed_ok,
        "min_margin_by_length": {str(k): (None if v is None else str(v)) for k, v in margins.items()}}
    for ell in good:
        m = margins[ell]
        okl = (m is None or (m >= margin and bool(pe.attends(m)))) and fixed_ok
        dec.answers.append(LengthAnswer(ell, True if okl else None, witness="W1", min_margin=m,
                                        note="" if okl else "the solver's parameter failed the exact re-check"))


def _cite_certificate(dec: Decision, res: Any, first_bad: int, lengths: Sequence[int],
                      present: Callable[[list[dict], int], bool]) -> None:
    """Record the Farkas certificate found at the first infeasible length as C1 and the answer it gives
    every length from there on (``present(used, ell)``: the rows it uses are constraints of length ell too)."""
    cert = res.certificate
    if cert is None or not cert.get("checked"):
        for ell in lengths:
            if ell >= first_bad:
                dec.answers.append(LengthAnswer(ell, None, note="solver: unsat without a checked Farkas certificate "
                                                f"({res.certificate_note or (cert or {}).get('check', '')})"))
        return
    used = used_rows(cert)
    dec.certificates["C1"] = {"length": first_bad, "obligation": res.name, "certificate": cert,
                              "rows_used": len(used)}
    for ell in lengths:
        if ell < first_bad:
            continue
        # the certificate's rows must be constraints of this length too (exact membership)
        inside = present(used, ell)
        dec.answers.append(LengthAnswer(ell, False if inside else None, certificate="C1",
                                        note="" if inside else "certificate rows not found at this length"))


_THETA = re.compile(r"^theta_(0|[1-9][0-9]*)$")


def _dense(row: dict, dim: int) -> tuple[tuple[Fraction, ...], Fraction] | None:
    """A certificate row  -c . theta <= -b  (the format :func:`verify.solver.pr26.lp_obligation` writes) read
    back as (c, b), c dense of length ``dim``; None when the row is not of that form (another operator, a
    product row, a variable other than theta_0..theta_{dim-1})."""
    if row.get("op") != "<=" or "product_of" in row:
        return None
    c = [Fraction(0)] * dim
    for name, v in row["coeffs"].items():
        m = _THETA.match(name)
        if m is None or int(m.group(1)) >= dim:
            return None
        c[int(m.group(1))] = -Fraction(v)
    return tuple(c), -Fraction(row["rhs"])


def rows_present(used: Sequence[dict], rows: Sequence[Sequence[Fraction]], margin: Fraction, dim: int,
                 extra: Sequence[tuple[Sequence[Fraction], Fraction]] = ()) -> bool:
    """Is every certificate row in ``used`` exactly one of the constraints  c . theta >= margin  (c in ``rows``)
    or  c . theta >= b  ((c, b) in ``extra``) of a system over theta_0..theta_{dim-1}?

    Exact comparison in fractions.Fraction, no solver.  This is the inclusion step that carries a Farkas
    certificate found for one system to another: a certificate proves infeasible every system that contains
    the rows it uses (the other rows get multiplier 0), so when the rows are present the second system is
    infeasible too.

    Args:
        used: certificate rows ({"coeffs": {"theta_a": str}, "op", "rhs"}) with nonzero multipliers
            (:func:`used_rows`).
        rows: the other system's coefficient vectors (each of length ``dim``), margin ``margin``.
        extra: further (vector, bound) constraints of the other system.
    Returns:
        True when every used row is found; False when one is missing or not of the linear form.
    """
    margin = Fraction(margin)
    have = {(tuple(c), margin) for c in rows}
    have.update((tuple(c), Fraction(b)) for c, b in extra)
    for u in used:
        d = _dense(u, dim)
        if d is None or d not in have:
            return False
    return True


def used_rows(cert: dict) -> list[dict]:
    """The rows of a Farkas certificate (every case) whose multiplier is nonzero."""
    out = []
    for case in cert.get("cases", []):
        for row, y in zip(case["rows"], case["multipliers"]):
            if Fraction(y) != 0:
                out.append(row)
    return out


def _strings(param: Any) -> Any:
    if isinstance(param, list):
        return [_strings(x) for x in param]
    return str(Fraction(param))


# ----------------------------------------------------------------------------- identifiability


def logit_rows(family: Family, L0: int, window: int) -> list[tuple[Fraction, ...]]:
    """Coefficient vectors of the masked logits at L0 (logit(i, j) = c_ij . theta, j <= i < L0), deduplicated."""
    ar = FractionArith(0)
    feats = [family.features(m, window, ar) for m in range(L0)]
    r = family.dim(window)
    out: dict[tuple, None] = {}
    for i in range(L0):
        for j in range(i + 1):
            if family.kind == "relative":
                c = tuple(feats[i - j])
            else:
                c = tuple(feats[i][a] * feats[j][b] for a in range(r) for b in range(r))
            out[c] = None
    return list(out)


def alpha_range(family: Family, task: Task, L0: int, L: int, window: int, theta0: Sequence[Fraction],
                timeout_ms: int = 20_000, enumerate_max: int = 16) -> dict:
    """The smallest and largest alpha_L over every parameter with the masked L0 logits of theta0.

    Encoding (fresh z3 context, exact rationals): theta free; c_ij . theta = c_ij . theta0 for every
    masked logit at L0; new row i in [L0, L) passes iff d . theta > 0 for each of its margin rows d
    (strict argmax; a tie fails).  Maximise / minimise the number of passing rows (z3 Optimize); the
    attaining parameters are re-checked in Fractions (same L0 logits, exact pass count).  With at
    most ``enumerate_max`` new rows, every count 0..n is also tested for attainability (one check each).

    Returns:
        dict with ``min`` / ``max`` (alpha values or None when unknown), ``how``, the re-checked
        witnesses, ``attainable`` (alpha values, or None when not enumerated) and ``new_rows``.
    """
    t0 = time.perf_counter()
    r = family.dim(window)
    new_rows = [i for i in task.rows(L) if i >= L0]
    prob = _AlphaProblem(family, task, L, window, dim=r if family.kind == "relative" else r * r,
                         eq_rows=logit_rows(family, L0, window), new_rows=new_rows,
                         per_row={i: realize_rows(family, task, L, window, rows=[i]) for i in new_rows},
                         theta0=[Fraction(x) for x in theta0], timeout_ms=timeout_ms)
    n = len(new_rows)
    out: dict[str, Any] = {"new_rows": n, "how": "solver bound: z3 Optimize (exact linear real arithmetic with one "
                           "Boolean per new row); each attaining parameter re-checked in fractions.Fraction; "
                           "optimality is z3's answer", "witnesses": {}}
    for goal in ("min", "max"):
        ans, th = prob.run(goal)
        if th is None:
            out[goal] = None
            out["witnesses"][goal] = {"answer": ans}
            continue
        same, npass = prob.exact_eval(th)
        out[goal] = npass / n if n else None
        out["witnesses"][goal] = {"param": _strings(_shape(family, window, th)), "same_L0_logits_exact": same,
                                  "passed_rows_exact": npass}
    if 0 < n <= enumerate_max:
        out["attainable"] = prob.attainable()
        out["attainable_how"] = ("exact enumeration: for each count c = 0..n a z3 check of 'exactly c new rows pass', "
                                 "the model re-checked in Fractions")
    else:
        out["attainable"] = None
    out["seconds"] = round(time.perf_counter() - t0, 3)
    return out


@dataclass
class _AlphaProblem:
    """The optimisation :func:`alpha_range` solves: theta with the masked L0 logits of theta0 (``eq_rows``),
    and for each new row the margin rows (``per_row``) that decide whether it passes."""

    family: Family
    task: Task
    L: int
    window: int
    dim: int
    eq_rows: list[tuple[Fraction, ...]]
    new_rows: list[int]
    per_row: dict[int, list]
    theta0: list[Fraction]
    timeout_ms: int
    ar: FractionArith = field(default_factory=lambda: FractionArith(0))
    feats: list = field(default_factory=list)

    def __post_init__(self) -> None:
        self.feats = [self.family.features(m, self.window, self.ar) for m in range(self.L)]

    def build(self, ctx: Any, s: Any) -> tuple[list, list]:
        """Declare theta in ``ctx``, assert the L0 logits on ``s``; return theta and each new row's pass condition."""
        import z3

        th = [z3.Real(f"theta_{a}", ctx) for a in range(self.dim)]

        def lin(c: Sequence[Fraction]) -> Any:
            terms = [z3.RealVal(f"{Fraction(x).numerator}/{Fraction(x).denominator}", ctx) * th[a]
                     for a, x in enumerate(c) if x != 0]
            return z3.Sum(terms) if terms else z3.RealVal(0, ctx)

        for c in self.eq_rows:
            v = sum((Fraction(x) * y for x, y in zip(c, self.theta0)), Fraction(0))
            s.add(lin(c) == z3.RealVal(f"{v.numerator}/{v.denominator}", ctx))
        passes = []
        for i in self.new_rows:
            conds = [lin(d) > 0 for d in self.per_row[i]]
            passes.append(z3.And(conds) if conds else z3.BoolVal(True, ctx))
        return th, passes

    def run(self, goal: str, count: int | None = None) -> tuple[SolverAnswer, list[Fraction] | None]:
        """Minimise (``"min"``) or maximise (``"max"``) the number of passing new rows, or (``"count"``) ask
        for exactly ``count`` of them; the answer and, when SAT, the exact parameter."""
        import z3

        from verify.solver.common import SOLVER_SEED, solve, to_fraction

        ctx = z3.Context()
        if goal == "count":
            s = z3.Solver(ctx=ctx)
        else:
            s = z3.Optimize(ctx=ctx)
        s.set("timeout", int(self.timeout_ms))
        if goal == "count":
            s.set("random_seed", SOLVER_SEED)
        th, passes = self.build(ctx, s)
        total = z3.Sum([z3.If(p, z3.IntVal(1, ctx), z3.IntVal(0, ctx)) for p in passes]) if passes else z3.IntVal(0, ctx)
        if goal == "max":
            s.maximize(total)
        elif goal == "min":
            s.minimize(total)
        else:
            s.add(total == count)
        ans = solve(s)
        if ans != z3.sat:
            return SolverAnswer(str(ans)), None
        m = s.model()
        try:
            return SolverAnswer.SAT, [to_fraction(m.eval(x, model_completion=True)) for x in th]
        except ValueError:
            return SolverAnswer.UNKNOWN, None

    def exact_eval(self, theta: Sequence[Fraction]) -> tuple[bool, int]:
        """In Fractions: does ``theta`` give the L0 logits of theta0, and how many new rows pass?"""
        same = all(sum((x * y for x, y in zip(c, theta)), Fraction(0)) ==
                   sum((x * y for x, y in zip(c, self.theta0)), Fraction(0)) for c in self.eq_rows)
        param = _shape(self.family, self.window, theta)
        npass = 0
        for i in self.new_rows:
            mg = pe.exact_row_margin(self.family, self.task, param, i, self.L, self.window, self.ar, self.feats)
            npass += bool(mg is None or pe.attends(mg))
        return same, npass

    def attainable(self) -> list[float] | None:
        """Every alpha value some parameter attains (one check per count 0..n, each model re-checked); None
        when some count's check was unknown (no list is claimed then)."""
        n = len(self.new_rows)
        att: list[float] = []
        for c in range(n + 1):
            ans, th = self.run("count", c)
            if th is not None:
                same, npass = self.exact_eval(th)
                if same and npass == c:
                    att.append(c / n)
            elif ans == SolverAnswer.UNKNOWN:
                return None
        return att


__all__ = ["decide_lengths", "Decision", "LengthAnswer", "alpha_range", "exact_rank", "matrix_rank", "logit_rows",
           "cumulative_rows", "rows_present", "used_rows"]
