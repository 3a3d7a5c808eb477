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
* :func:`exact_rank`: rank of a rational matrix, exactly (python-flint).
"""

from __future__ import annotations

import contextlib
import math
import operator
import re
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Iterable, Iterator, Sequence

from verify import runcache
from verify.constructions import pe
from verify.constructions.pe import Family, FractionArith, Task
from verify.faults import seam
from verify.solver.answers import SolverAnswer
from verify.solver.pr26 import _shape, lp_obligation, realize_rows
from verify.thirdparty import silent_highs

#: cutting planes: constraints added per round (the most violated of the exact check), and the most rounds
CUT_ADD = 32
CUT_MAX_ROUNDS = 200
#: exact re-check of an absolute family: the most (row, key) pairs re-decided in Fractions after the float64
#: filter (a head with that many near ties is not certified: the answer is unknown)
MAX_EXACT_CANDIDATES = 2_000_000
#: rows per block of the float64 filter (block x L logits held at once: 512 x 131072 x 8 bytes = 512 MiB at most)
FILTER_BLOCK = 256

def _fmpq_mat(rows: Sequence[Sequence[Fraction]]) -> Any:
    """The rational matrix ``rows`` as python-flint's exact ``fmpq_mat``."""
    import flint

    n, k = len(rows), len(rows[0]) if rows else 0
    return flint.fmpq_mat(n, k, [flint.fmpq(int(Fraction(x).numerator), int(Fraction(x).denominator))
                                 for r in rows for x in r])


def rref(rows: Sequence[Sequence[Fraction]]) -> tuple[list[list[Fraction]], list[int]]:
    """The reduced row echelon form of a matrix of Fractions and its pivot columns, exactly (python-flint's
    ``fmpq_mat.rref``, at every size).

    Returns:
        (R, pivots): R's first ``len(pivots)`` rows are the nonzero rows, row i with a 1 in column
        ``pivots[i]`` and 0 in every other pivot column; the rank is ``len(pivots)``.
    """
    if not rows or not rows[0]:
        return [list(r) for r in rows], []
    red, rank = _fmpq_mat(rows).rref()
    n, k = red.nrows(), red.ncols()
    out = [[Fraction(int(red[i, j].p), int(red[i, j].q)) for j in range(k)] for i in range(n)]
    pivots = [next(j for j in range(k) if out[i][j] != 0) for i in range(rank)]
    return out, pivots


def exact_rank(rows: Sequence[Sequence[Fraction]]) -> int:
    """Rank of a matrix of Fractions, exactly (python-flint's ``fmpq_mat.rank``)."""
    if not rows or not rows[0]:
        return 0
    return int(_fmpq_mat(rows).rank())


def matrix_rank(rows: Sequence[Sequence[Fraction]]) -> tuple[int, str]:
    """(rank, how): the exact rank at every size (no float rank decides a printed property)."""
    return exact_rank(rows), "exact (python-flint fmpq_mat)"


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


class TooManyTies(RuntimeError):
    """The float64 filter left more near-tied (row, key) pairs than :data:`MAX_EXACT_CANDIDATES` to decide exactly."""


def coefficient(family: Family, task: Task, i: int, j: int, L: int, window: int, feats: Sequence[Sequence]) -> tuple:
    """The exact coefficient vector of the constraint  logit(i, t_L(i)) - logit(i, j) >= margin  (the row
    :func:`verify.solver.pr26.realize_rows` builds for query row i and key j at length L)."""
    t = pe.target_in_window(task, i, L)
    if family.kind == "relative":
        return tuple(a - b for a, b in zip(feats[i - t], feats[i - j]))
    r = len(feats[i])
    pi, pt, pj = feats[i], feats[t], feats[j]
    return tuple(pi[a] * (pt[b] - pj[b]) for a in range(r) for b in range(r))


@dataclass
class RowCheck:
    """Exact margins of one parameter at one length.

    Attributes:
        margins: row i -> logit(i, t) - max_{j <= i, j != t} logit(i, j), exact (rows with one key omitted).
        worst_key: row i -> a key attaining that max (the most violated constraint of the row).
    """

    margins: dict[int, Fraction]
    worst_key: dict[int, int]


def exact_margins(family: Family, task: Task, param: Any, L: int, window: int,
                  feats: Sequence[Sequence] | None = None, only: Sequence[int] | None = None) -> RowCheck:
    """Every query row's exact margin at length L, without an L x L matrix of Fractions.

    Relative families: k(delta) = w . psi(delta) exactly for delta < L, then row i's competitors are
    k over the offsets 0..i except the target's: a running top-two of k (O(L) exact comparisons).
    Absolute families: float64 logits a_i . phi(j) (a_i = W^T phi(i)) in row blocks, with the bound
    |fl - exact| <= (4 r + 8) 2^-52 sum_ab |phi_a(i)| |W_ab| |phi_b(j)| (inputs rounded once, two dot
    products of length r) <= E_i, the same with |phi_b(j)| replaced by its max over the row's keys; every
    key within 2 E_i of the row's float max (excluding the target) is re-decided exactly (integer dot
    products after scaling by the common denominators), a set that contains the exact max.  The margins
    returned are exact rationals.

    ``only``: the query rows to decide (default: every query row at L).  The result is kept for the same family,
    task and feature list objects and an equal parameter (a few per run; the RowCheck is shared: not to be
    written).

    Raises:
        TooManyTies: more than :data:`MAX_EXACT_CANDIDATES` pairs to re-decide (or a non-finite float).
    """
    ar = FractionArith(0)
    if feats is None or len(feats) < L:
        feats = [family.features(m, window, ar) for m in range(L)]
    key = (L, window, None if only is None else tuple(only), _frozen(param))
    recent = _MARGINS.table()
    for fam_, task_, feats_, key_, chk in recent:
        if fam_ is family and task_ is task and feats_ is feats and key_ == key:
            return chk
    rows = list(task.rows(L)) if only is None else [i for i in only if i in task.rows(L)]
    if family.kind == "relative":
        chk = _relative_margins(task, param, L, feats, rows)
    else:
        chk = _absolute_margins(task, param, L, feats, rows)
    recent[:] = [(family, task, feats, key, chk)] + recent[:3]
    return chk


# (family, task, feature list, (L, window, rows, parameter), RowCheck): the last few exact checks of this run, so
# the loop's last check, the model's extent and the witness re-check of one parameter at N compute it once
# (the same family, task and feature list objects, an equal exact parameter); :mod:`verify.runcache`
_MARGINS = runcache.Memo("solver.realizable: exact margins of a parameter", list)


def _frozen(param: Any) -> tuple:
    """The parameter (a vector, or a matrix as rows) as nested tuples of Fractions, to compare by value."""
    return tuple(tuple(Fraction(x) for x in p) if isinstance(p, (list, tuple)) else Fraction(p) for p in param)


def _relative_margins(task: Task, param: Any, L: int, feats: Sequence[Sequence], rows: Sequence[int]) -> RowCheck:
    """:func:`exact_margins` for a relative family: k(delta) in integers, a running top-two of k over the offsets."""
    nums, worst, scale = _relative_scaled(task, param, L, feats, rows)
    return RowCheck({i: Fraction(v, scale) for i, v in nums.items()}, worst)


def _relative_scaled(task: Task, param: Any, L: int, feats: Sequence[Sequence],
                     rows: Sequence[int]) -> tuple[dict[int, int], dict[int, int], int]:
    """Row i's exact margin as an integer over one positive scale: ``(numerators, worst keys, scale)``, the
    margin of row i being numerators[i] / scale (no Fraction per row; :func:`_relative_margins` divides)."""
    margins: dict[int, int] = {}
    worst: dict[int, int] = {}
    # k(delta) * scale as Python ints (features and w times their common denominators)
    Fi, (wi,), scale = _integer_scaled(feats, L, [[Fraction(w) for w in param]])
    mul = operator.mul
    k = [sum(map(mul, wi, f)) for f in Fi[:L]]
    # top-two of k over offsets 0..d, as (value, offset)
    top1: list[tuple[int, int]] = []
    top2: list[tuple[int, int] | None] = []
    a: tuple[int, int] | None = None
    b: tuple[int, int] | None = None
    for d in range(L):
        v = (k[d], d)
        if a is None or v[0] > a[0]:
            a, b = v, a
        elif b is None or v[0] > b[0]:
            b = v
        top1.append(a)
        top2.append(b)
    for i, dt in _target_offsets(task, L, rows):
        best = top1[i] if top1[i][1] != dt else top2[i]
        assert best is not None
        margins[i] = k[dt] - best[0]
        worst[i] = i - best[1]
    return margins, worst, scale


# (task, L, rows, [(row i, offset i - t_L(i))] for the rows i > 0): the last few of this run (:mod:`verify.runcache`)
_TARGETS = runcache.Memo("solver.realizable: target offsets of rows", list)


def _target_offsets(task: Task, L: int, rows: Sequence[int]) -> list[tuple[int, int]]:
    """(i, i - t_L(i)) for each row i > 0 of ``rows`` (targets checked by :func:`pe.target_in_window`, row 0
    included), reused for the same task object, length and rows."""
    recent = _TARGETS.table()
    for task_, L_, rows_, out in recent:
        if task_ is task and L_ == L and rows_ == rows:
            return out
    out = []
    for i in rows:
        t = pe.target_in_window(task, i, L)
        if i != 0:
            out.append((i, i - t))
    recent[:] = [(task, L, list(rows), out)] + recent[:3]
    return out


def _absolute_margins(task: Task, param: Any, L: int, feats: Sequence[Sequence], rows: Sequence[int]) -> RowCheck:
    """:func:`exact_margins` for an absolute family: float64 logits in row blocks, every key within twice the
    rounding bound of the row's float max re-decided exactly in integers."""
    import numpy as np

    margins: dict[int, Fraction] = {}
    worst: dict[int, int] = {}
    W = [[Fraction(x) for x in row] for row in param]
    r = len(W)
    Fi, Wi, scale = _integer_scaled(feats, L, W)
    scale = scale * _feature_den(feats, L)  # logits carry the feature denominator twice (phi(i) and phi(j))
    Ff = np.array([[float(x) for x in f] for f in feats[:L]], dtype=np.float64).reshape(L, r)
    Wf = np.array([[float(x) for x in row] for row in W], dtype=np.float64).reshape(r, r)
    Q = Ff @ Wf
    Qa = np.abs(Ff) @ np.abs(Wf)
    Fmax = np.maximum.accumulate(np.abs(Ff), axis=0).T  # Fmax[b, h] = max_{j <= h} |phi_b(j)|
    c = (4 * r + 8) * 2.0 ** -52
    total = 0
    rows_arr = np.array(rows, dtype=np.int64)
    targets = {i: pe.target_in_window(task, i, L) for i in rows}
    col = np.arange(L)
    for s0 in range(0, len(rows), FILTER_BLOCK):
        blk = rows_arr[s0:s0 + FILTER_BLOCK]
        if len(blk) == 0:
            continue
        hi = int(blk.max()) + 1
        masked = Q[blk] @ Ff[:hi].T
        # E_i >= the bound at every key j <= hi: sum_b (|phi(i)|^T |W|)_b max_j |phi_b(j)|
        E = c * (Qa[blk] @ Fmax[:, hi - 1]) * 1.0001
        if not (np.isfinite(masked).all() and np.isfinite(E).all()):
            raise TooManyTies("non-finite float64 logits: the filter cannot bound the rounding")
        tg = np.array([targets[int(i)] for i in blk], dtype=np.int64)
        lo = int(blk.min())
        masked[:, lo:][col[None, lo:hi] > blk[:, None]] = -np.inf  # keys after the query (the causal mask)
        masked[np.arange(len(blk)), tg] = -np.inf
        M = masked.max(axis=1)
        cand = masked >= np.where(np.isfinite(M), M - 2 * E, np.inf)[:, None]
        ri, ji = np.nonzero(cand)
        total += len(ri)
        if total > MAX_EXACT_CANDIDATES:
            raise TooManyTies(f"more than {MAX_EXACT_CANDIDATES} near-tied (row, key) pairs to re-decide exactly")
        by_row: dict[int, list[int]] = {}
        for a_, j_ in zip(ri.tolist(), ji.tolist()):
            by_row.setdefault(a_, []).append(j_)
        for a_, js in by_row.items():
            i = int(blk[a_])
            pi = Fi[i]
            q = [sum(pi[a] * Wi[a][b2] for a in range(r)) for b2 in range(r)]

            def lgt(j: int) -> int:
                fj = Fi[j]
                return sum(q[b2] * fj[b2] for b2 in range(r))

            best_j = max(js, key=lgt)
            margins[i] = Fraction(lgt(targets[i]) - lgt(best_j), scale)
            worst[i] = best_j
    return RowCheck(margins, worst)


# (feature list, length, integer features, Df): the last few of this run (:mod:`verify.runcache`)
_INT_FEATS = runcache.Memo("solver.realizable: integer features", list)


def _integer_scaled(feats: Sequence[Sequence], L: int, W: Sequence[Sequence[Fraction]]) -> tuple[list, list, int]:
    """Features and W as integers (times their common denominators Df and Dw): W phi = (integer) / scale with
    scale = Df Dw (absolute logits phi^T W phi carry one more Df: :func:`_feature_den`), so the exact logits are
    Python-int dot products.  The integer features of the same feature list are reused across calls, a longer
    prefix's for a shorter L (its Df is a common multiple of the shorter prefix's denominators too, so the
    logits are the same rationals, every integer scaled by the same positive factor: same signs, same order);
    a miss at least doubles the prefix held, so increasing lengths cost O(longest) in all."""
    hit = _int_features(feats, L)
    Dw = 1
    for row in W:
        for x in row:
            Dw = math.lcm(Dw, x.denominator)
    Wi = [[int(x * Dw) for x in row] for row in W]
    return hit[2], Wi, hit[3] * Dw


def _int_features(feats: Sequence[Sequence], L: int) -> tuple:
    """(feats, n, integer features of 0..n-1, Df) with n >= L: the first cached entry for ``feats`` that long."""
    recent = _INT_FEATS.table()
    hit = next((e for e in recent if e[0] is feats and e[1] >= L), None)
    if hit is None:
        held = max((e[1] for e in recent if e[0] is feats), default=0)
        n = min(len(feats), max(L, 2 * held))
        fr = [[x if type(x) is Fraction else Fraction(x) for x in f] for f in feats[:n]]
        Df = math.lcm(1, *{x.denominator for f in fr for x in f})
        # x * Df is an integer: Df is a multiple of x's denominator
        hit = (feats, n, [[x.numerator * (Df // x.denominator) for x in f] for f in fr], Df)
        recent[:] = [hit] + recent[:3]
    return hit


def _feature_den(feats: Sequence[Sequence], L: int) -> int:
    """The common denominator Df of the integer features :func:`_integer_scaled` cached for ``feats``."""
    return _int_features(feats, L)[3]


# (family, window, exact features 0..n-1): the last few of this run, by identity (:mod:`verify.runcache`)
_FEATS = runcache.Memo("solver.realizable: exact feature tables", list)


def feature_table(family: Family, window: int, N: int) -> list:
    """The exact features of positions/offsets 0..N-1, reused for the same family object (several tasks of one
    feature map: the trigonometric tables are computed with mpmath, about 0.2 ms an entry)."""
    recent = _FEATS.table()
    for fam, w, feats in recent:
        if fam is family and w == window and len(feats) >= N:
            return feats
    ar = FractionArith(0)
    feats = [family.features(m, window, ar) for m in range(N)]
    recent[:] = [(family, window, feats)] + recent[:1]
    return feats


def _stable_lengths(task: Task, N: int, min_L: int) -> bool:
    """May every length up to N be decided by the one system at N (the causal-mask block identity, pr26
    Theorem 1: a head realizing length N realizes every shorter length)?  Only when the targets and the first
    query row do not depend on L: ``task.length_stable``, confirmed here on every row at three lengths each
    (a task that says it is stable but is not is refused).

    Raises:
        ValueError: ``task.length_stable`` is set but some target or the first row moves with L.
    """
    if not task.length_stable:
        return False
    first = {int(task.first_row(ell)) for ell in {min_L, (min_L + N) // 2, N, max(min_L, 2)}}
    moved = len(first) > 1
    for i in task.rows(N):
        if moved:
            break
        Ls = {ell for ell in (i + 1, (i + 1 + N) // 2, N) if ell >= max(min_L, i + 1)}
        moved = len({int(task.target(i, ell)) for ell in Ls}) > 1
    if moved:
        raise ValueError(f"task {task.name} is marked length-stable but its targets depend on L: the block identity "
                         "(one decision at N for every shorter length) does not apply")
    return True


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
    method: str = "full"


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


#: rounds at one length L > SAMPLE_FROM (absolute families) first check every SAMPLE_STEP-th row and the last
#: SAMPLE_TAIL rows; the full exact check runs when that sample shows no violated row
SAMPLE_FROM, SAMPLE_STEP, SAMPLE_TAIL = 1024, 32, 256


@seam("solver.realizable._violations")
def _violations(family: Family, task: Task, param: Any, lengths: Sequence[int], window: int, margin: Fraction,
                feats: Sequence[Sequence], limit: int | None = None) -> list[tuple[Fraction, int, int, int]]:
    """The violated constraints of ``param`` (exact): (slack < 0, row i, key j, length L), most violated first,
    one per (row, length): the row's worst key.  Empty only when every row of every length passed the exact
    check (a sample of rows may be checked first, to find violations cheaply).  Relative families:
    :func:`_relative_violations` (integer margins); the definition is :func:`_violations_from_margins`.
    ``limit``: only the first ``limit`` of that list (the most violated)."""
    if family.kind == "relative":
        return _relative_violations(family, task, param, lengths, window, margin, feats, limit)
    out = _violations_from_margins(family, task, param, lengths, window, margin, feats)
    return out if limit is None else out[:limit]


def _violations_from_margins(family: Family, task: Task, param: Any, lengths: Sequence[int], window: int,
                             margin: Fraction, feats: Sequence[Sequence]) -> list[tuple[Fraction, int, int, int]]:
    """:func:`_violations` from :func:`exact_margins` (every family; the definition the relative path is tested
    against)."""
    out = []
    for ell in lengths:
        chk = None
        if family.kind != "relative" and len(lengths) == 1 and ell > SAMPLE_FROM:
            sample = sorted(set(range(0, ell, SAMPLE_STEP)) | set(range(max(ell - SAMPLE_TAIL, 0), ell)))
            chk = exact_margins(family, task, param, ell, window, feats, only=sample)
            if all(m >= margin for m in chk.margins.values()):
                chk = None
        if chk is None:
            chk = exact_margins(family, task, param, ell, window, feats)
        out += [(m - margin, i, chk.worst_key[i], ell) for i, m in chk.margins.items() if m < margin]
    out.sort(key=lambda v: (v[0], v[3], v[1]))
    return out


def _relative_violations(family: Family, task: Task, param: Any, lengths: Sequence[int], window: int,
                         margin: Fraction, feats: Sequence[Sequence] | None,
                         limit: int | None = None) -> list[tuple[Fraction, int, int, int]]:
    """:func:`_violations` of a relative family from the integer margins (:func:`_relative_scaled`): row i is
    violated iff n_i / scale < G = p / q, i.e. n_i q - p scale < 0, so only the violated rows become
    Fractions; at one length the slacks share the positive denominator q scale, so the integers sort as the
    slacks do, and only the ``limit`` most violated become Fractions (``heapq.nsmallest``: the first ``limit``
    of the sorted list).  The same list :func:`_violations` builds from :func:`exact_margins` (tested)."""
    import heapq

    G = Fraction(margin)
    p, q = G.numerator, G.denominator
    found: list[tuple[int, int, int, int, int]] = []  # (slack numerator, its denominator, row, key, length)
    for ell in lengths:
        fts = feats
        if fts is None or len(fts) < ell:
            ar = FractionArith(0)
            fts = [family.features(m, window, ar) for m in range(ell)]
        nums, worst, scale = _relative_scaled(task, param, ell, fts, list(task.rows(ell)))
        ps = p * scale
        for i, v in nums.items():
            s_ = v * q - ps
            if s_ < 0:
                found.append((s_, q * scale, i, worst[i], ell))
    if len(lengths) == 1:
        def one_key(v: tuple) -> tuple:
            return v[0], v[4], v[2]

        top = sorted(found, key=one_key) if limit is None else heapq.nsmallest(limit, found, key=one_key)
        return [(Fraction(s_, d), i, j, ell) for s_, d, i, j, ell in top]
    out = [(Fraction(s_, d), i, j, ell) for s_, d, i, j, ell in found]

    def key(v: tuple) -> tuple:
        return v[0], v[3], v[1]

    return sorted(out, key=key) if limit is None else heapq.nsmallest(limit, out, key=key)


@dataclass
class _Cuts:
    """One cutting-plane solve at one length: the last LP's result (on a subset of the rows), the rows it
    used with the (row, key, length) each came from, the rounds, and whether the exact check passed."""

    res: Any
    rows: list[tuple]
    origin: dict[tuple, tuple[int, int, int]]
    rounds: int
    converged: bool


#: significant bits an LP's float solution keeps before the exact check (:func:`_dyadic`)
PROPOSAL_BITS = 30


def _dyadic(x: float) -> Fraction:
    """``x`` rounded to :data:`PROPOSAL_BITS` significant bits, as an exact dyadic rational: the LP solver's last
    bits follow the CPU's vector width, so a proposal read bit for bit could print a different W on another
    machine; the exact check that follows decides either way."""
    import math

    if x == 0.0:
        return Fraction(0)
    mant, exp = math.frexp(x)
    return Fraction(round(mant * (1 << PROPOSAL_BITS))) * Fraction(2) ** (exp - PROPOSAL_BITS)


@dataclass
class _LP:
    """A float64 LP's answer, as :func:`_linprog` reads it: ``ok`` (solved to optimality), the solution ``x`` and the
    duals of the inequality rows (None where the solver gives none)."""

    ok: bool
    x: Any = None
    duals: Any = None


def _linprog(cost: Any, A_ub: Any, b_ub: Any, lower: Sequence[float], upper: Sequence[float]) -> _LP:
    """min cost . x subject to A_ub x <= b_ub and lower <= x <= upper (a bound may be +-inf), in float64.

    HiGHS through its own small binding (highspy, imported in about 0.01 s) when it is installed, else through
    scipy.optimize.linprog (HiGHS again; importing scipy.optimize takes 0.3-0.5 s, a quarter of the designer's
    question).  Either answer is only a proposal: what the caller keeps is checked in exact rationals."""

    import numpy as np

    highs = silent_highs()  # the package first: a test (or a user) that blocks "highspy" gets the scipy path
    if highs is not None:
        hc, h = highs
        m, n = A_ub.shape
        inf = hc.kHighsInf
        lp = hc.HighsLp()
        lp.num_col_, lp.num_row_ = n, m
        lp.col_cost_ = np.asarray(cost, dtype=np.float64)
        lp.col_lower_ = np.array([max(v, -inf) for v in lower], dtype=np.float64)
        lp.col_upper_ = np.array([min(v, inf) for v in upper], dtype=np.float64)
        lp.row_lower_ = np.full(m, -inf)
        lp.row_upper_ = np.asarray(b_ub, dtype=np.float64)
        # column-wise, as scipy's linprog passes it, and with its dual simplex: the same vertices as that path
        At = np.ascontiguousarray(A_ub.T)
        nz = At != 0
        lp.a_matrix_.format_ = hc.MatrixFormat.kColwise
        lp.a_matrix_.start_ = np.concatenate([[0], np.cumsum(nz.sum(axis=1))]).astype(np.int32)
        lp.a_matrix_.index_ = np.nonzero(nz)[1].astype(np.int32)
        lp.a_matrix_.value_ = At[nz].astype(np.float64)
        h.setOptionValue("output_flag", False)
        h.setOptionValue("simplex_strategy", 1)  # dual simplex (scipy's linprog sets it)
        # a warning (HiGHS's kWarning: e.g. a small residual it reports) still leaves an optimal model to read
        if h.passModel(lp) == hc.HighsStatus.kError or h.run() == hc.HighsStatus.kError:
            return _LP(False)
        if h.getModelStatus() != hc.HighsModelStatus.kOptimal:
            return _LP(False)
        sol = h.getSolution()
        return _LP(True, np.array(sol.col_value, dtype=np.float64),
                   np.array(sol.row_dual, dtype=np.float64) if sol.dual_valid else None)
    try:
        from scipy.optimize import linprog
    except ImportError:
        return _LP(False)
    try:
        res = linprog(cost, A_ub=A_ub, b_ub=b_ub, bounds=[(None if not np.isfinite(lo) else lo,
                                                           None if not np.isfinite(hi) else hi)
                                                          for lo, hi in zip(lower, upper)], method="highs")
    except (ValueError, RuntimeError):
        return _LP(False)
    if res.status != 0 or res.x is None:
        return _LP(False)
    return _LP(True, res.x, getattr(getattr(res, "ineqlin", None), "marginals", None))


@seam("solver.realizable._float_proposal")
def _float_proposal(name: str, rows: Sequence[tuple], dim: int, margin: Fraction, support: list[int] | None = None) -> Any:
    """A parameter for the rows held, proposed by a float64 LP and accepted only after an exact check.

    First a feasibility LP at margin 1.01 G (HiGHS, :func:`_linprog`), its solution rounded to :data:`PROPOSAL_BITS`
    significant bits (:func:`_dyadic`) and kept when every held row meets G in Fractions.  Otherwise an LP maximises t subject to
    c . theta >= t |c|_inf for every held row and |theta_a| <= 1 (the most robust direction; the
    constraints are homogeneous, so the scale is free).
    The float solution is rounded the same way, its smallest held-row value m is
    computed in Fractions, and theta is scaled by a dyadic s >= G / m, so every held row has c . theta >= G
    exactly.  Returns an ObligationResult SAT with that model, or None when the LP finds no positive t or m
    is not positive (the caller then asks z3, which also gives the Farkas certificate of an infeasible
    subset; ``support`` then receives the indices of the rows with nonzero LP duals, a likely small
    infeasible subset).  The whole-system check that follows each round is exact either way."""
    from verify.solver.answers import ObligationResult

    support = [] if support is None else support
    try:
        import numpy as np
    except ImportError:
        return None
    t0 = time.perf_counter()
    C = np.array([[float(x) for x in c] for c in rows], dtype=np.float64)
    if not np.isfinite(C).all() or not len(rows):
        return None
    scale = np.abs(C).max(axis=1)
    scale[scale == 0] = 1.0
    inf = float("inf")
    # first a plain feasibility LP at 1.01 G (a vertex: often generalizes to the rows not held), read exactly
    lp = _linprog(np.zeros(dim), -C / scale[:, None], -float(margin) * 1.01 / scale, [-inf] * dim, [inf] * dim)
    if lp.ok and np.isfinite(lp.x).all():
        theta = [_dyadic(float(x)) for x in lp.x]
        if all(sum((a * b for a, b in zip(c, theta) if a != 0), Fraction(0)) >= margin for c in rows):
            return ObligationResult(name + "; float64 LP proposal checked exactly", SolverAnswer.SAT,
                                    model={f"theta_{a}": x for a, x in enumerate(theta)},
                                    seconds=time.perf_counter() - t0, n_constraints=len(rows))
    A = np.hstack([-C / scale[:, None], np.ones((len(rows), 1))])
    cost = np.zeros(dim + 1)
    cost[-1] = -1.0
    lp = _linprog(cost, A, np.zeros(len(rows)), [-1.0] * dim + [-inf], [1.0] * dim + [1.0])
    if lp.ok and np.isfinite(lp.x).all() and not lp.x[-1] > 1e-12:
        # no positive margin: the rows with nonzero duals are the likely Farkas support
        if lp.duals is not None:
            support.extend(int(k) for k in np.nonzero(np.abs(lp.duals) > 1e-12)[0])
        return None
    if not lp.ok or not np.isfinite(lp.x).all():
        return None
    theta = [_dyadic(float(x)) for x in lp.x[:dim]]
    m = min(sum((a * b for a, b in zip(c, theta) if a != 0), Fraction(0)) for c in rows)
    if m <= 0:
        return None
    k = Fraction(margin) / m
    den = 1 << 20
    s = Fraction(-(-k.numerator * den // k.denominator), den)  # the dyadic ceiling of G / m
    theta = [x * s for x in theta]
    return ObligationResult(name + "; float64 max-margin LP proposal, scaled and checked exactly", SolverAnswer.SAT,
                            model={f"theta_{a}": x for a, x in enumerate(theta)},
                            seconds=time.perf_counter() - t0, n_constraints=len(rows))


def _null_space(cols: Sequence[Sequence[Fraction]], dim: int) -> list[list[Fraction]]:
    """A basis of {y : sum_k y_k cols[k] = 0} in exact fractions (from :func:`rref` of the dim x s matrix whose
    columns are ``cols``: one basis vector per free column)."""
    s = len(cols)
    M, pivots = rref([[cols[k][a] for k in range(s)] for a in range(dim)])
    free = [c for c in range(s) if c not in pivots]
    basis = []
    for fc in free:
        y = [Fraction(0)] * s
        y[fc] = Fraction(1)
        for i, pc in enumerate(pivots):
            y[pc] = -M[i][fc]
        basis.append(y)
    return basis


def _dual_farkas(name: str, rows: Sequence[tuple], dim: int, margin: Fraction) -> Any:
    """An UNSAT answer for  c . theta >= margin  (c in ``rows``) with a Farkas certificate solved exactly from the
    rows alone, no solver: when the y with sum_k y_k c_k = 0 form a line (the rows the float LP's nonzero duals
    name are usually a minimal infeasible set, dim + 1 rows or fewer), its direction with sum_k y_k > 0 is a
    certificate when every y_k >= 0 (summing y_k (c_k . theta) >= y_k margin gives 0 >= margin sum_k y_k > 0).
    The certificate is written in :func:`verify.solver.pr26.lp_obligation`'s row format and checked by the
    solver-free checker (:func:`verify.solver.recheck.check_certificate`); None when the rows do not give one
    (the caller then asks z3)."""
    from verify.solver.answers import ObligationResult
    from verify.solver.recheck import check_certificate, encoding_hash

    t0 = time.perf_counter()
    basis = _null_space(rows, dim)
    if len(basis) != 1:
        return None
    y = basis[0]
    if sum(y) < 0:
        y = [-v for v in y]
    if sum(y) <= 0 or any(v < 0 for v in y):
        return None
    lcm = 1
    for v in y:
        lcm = lcm * v.denominator // math.gcd(lcm, v.denominator)
    y = [v * lcm for v in y]
    g = 0
    for v in y:
        g = math.gcd(g, v.numerator)
    y = [v / g for v in y]
    exact = [{"coeffs": {f"theta_{a}": str(-Fraction(k)) for a, k in enumerate(c) if k != 0}, "op": "<=",
              "rhs": str(-Fraction(margin))} for c in rows]
    cert: dict[str, Any] = {"kind": "farkas", "cases": [{"rows": exact, "multipliers": [str(v) for v in y]}],
                            "encoding_sha256": encoding_hash([exact])}
    ok, why = check_certificate(cert)
    if not ok:
        return None
    cert.update(checked=ok, check=why)
    return ObligationResult(name + "; Farkas multipliers of the LP's dual support solved exactly (no solver)",
                            SolverAnswer.UNSAT, seconds=round(time.perf_counter() - t0, 4), n_constraints=len(rows),
                            certificate=cert, second_reason="not run: the UNSAT carries a Farkas certificate "
                            "re-checked without a solver")


def solve_cutting(family: Family, task: Task, ell: int, window: int, margin: Fraction, dim: int,
                  extra: Sequence[tuple[Sequence[Fraction], Fraction]], timeout_ms: int, feats: Sequence[Sequence],
                  stable: bool, deadline: float | None = None, max_rounds: int = CUT_MAX_ROUNDS) -> _Cuts:
    """'Some parameter has margin >= ``margin`` on every constraint of every length <= ell' by cutting planes.

    Start from the constraints of the first few query rows, solve the LP on the rows held (a float64 HiGHS
    proposal kept only when exact rationals meet every held row; an infeasible one certified by Farkas
    multipliers solved exactly on its dual support, :func:`_dual_farkas`; z3 where neither answers), check
    the model on every row of every length exactly (:func:`exact_margins`), add the :data:`CUT_ADD` most
    violated constraints, repeat.  UNSAT on a subset is UNSAT for the whole system (the subset's Farkas
    certificate uses rows of it); SAT is returned only when the exact check found no violated row
    (``converged``).  With ``stable`` (the block identity, :func:`_stable_lengths`) the lengths checked are
    ell alone, else every length 2..ell.
    """
    from verify.solver.answers import ObligationResult

    lengths = [ell] if stable else list(range(2, ell + 1))
    origin: dict[tuple, tuple[int, int, int]] = {}
    rows: list[tuple] = []

    def add(i: int, j: int, L: int) -> bool:
        c = coefficient(family, task, i, j, L, window, feats)
        if c in origin:
            return False
        origin[c] = (i, j, L)
        rows.append(c)
        return True

    for L in lengths[:4] if not stable else lengths:
        for i in list(task.rows(L))[:3]:
            t = pe.target_in_window(task, i, L)
            for j in range(i + 1):
                if j != t:
                    add(i, j, L)
    res: Any = None
    for rnd in range(1, max_rounds + 1):
        if deadline is not None and time.perf_counter() > deadline:
            return _Cuts(ObligationResult(f"length {ell}", SolverAnswer.UNKNOWN, "time budget exhausted"), rows,
                         origin, rnd - 1, False)
        name = (f"exists a parameter with margin >= {margin} on every query row of every length <= {ell} "
                f"({family.name}, {task.name}; cutting planes: {len(rows)} constraints, round {rnd})")
        support: list[int] = []
        res = None if extra else _float_proposal(name, rows, dim, margin, support)
        if res is None and 0 < len(support) < len(rows):
            # the float LP's dual support first: a small subset whose Farkas multipliers are solved exactly (no
            # solver), else whose infeasibility z3 certifies quickly
            sub = [rows[k] for k in support]
            sub_name = name.replace(f"{len(rows)} constraints", f"{len(sub)} of {len(rows)} constraints")
            res = _dual_farkas(sub_name, sub, dim, margin)
            if res is None:
                res = lp_obligation(sub_name, sub, dim, timeout_ms, margin=margin, second_opinion="never")
            if res.answer != SolverAnswer.UNSAT or not (res.certificate or {}).get("checked"):
                res = None
        if res is None:  # no exactly feasible float proposal: z3 decides (an UNSAT with its Farkas certificate)
            res = lp_obligation(name, rows, dim, timeout_ms, margin=margin, extra=extra, second_opinion="never")
        if res.answer != SolverAnswer.SAT:
            return _Cuts(res, rows, origin, rnd, False)
        theta = [res.model.get(f"theta_{a}", Fraction(0)) for a in range(dim)]
        try:
            viol = _violations(family, task, _shape(family, window, theta), lengths, window, margin, feats,
                               limit=CUT_ADD)
        except TooManyTies as e:
            return _Cuts(ObligationResult(name, SolverAnswer.UNKNOWN, str(e)), rows, origin, rnd, False)
        if not viol:
            return _Cuts(res, rows, origin, rnd, True)
        if not sum(add(i, j, L) for _s, i, j, L in viol[:CUT_ADD]):
            return _Cuts(ObligationResult(name, SolverAnswer.UNKNOWN, "a violated constraint was already held"),
                         rows, origin, rnd, False)
    return _Cuts(ObligationResult(f"length {ell}", SolverAnswer.UNKNOWN,
                                  f"cutting planes did not converge in {max_rounds} rounds"), rows, origin,
                 max_rounds, False)


def _recheck_fast(family: Family, task: Task, param: Any, lengths: Sequence[int], window: int,
                  feats: Sequence[Sequence]) -> dict[int, Fraction | None]:
    """:func:`_recheck_all` with :func:`exact_margins`: the exact min margin at each length (over every row of
    every length up to it).  A length-stable task is checked once at the longest length, whose rows i < ell are
    exactly the rows of length ell (same targets)."""
    out: dict[int, Fraction | None] = {}
    if not lengths:
        return out
    if _stable_lengths(task, max(lengths), min(lengths)):
        N = max(lengths)
        if family.kind == "relative" and len(feats) >= N:
            # the integer margins over their one positive scale: the running minimum in integers, one Fraction
            # per length (the values exact_margins' Fractions give)
            nums, _w, scale = _relative_scaled(task, param, N, feats, list(task.rows(N)))
            ordered_i = sorted(nums.items())
            run_i: int | None = None
            last: tuple[int | None, Fraction | None] = (None, None)
            k = 0
            for ell in sorted(lengths):
                while k < len(ordered_i) and ordered_i[k][0] < ell:
                    run_i = ordered_i[k][1] if run_i is None else min(run_i, ordered_i[k][1])
                    k += 1
                if run_i != last[0]:
                    last = (run_i, None if run_i is None else Fraction(run_i, scale))
                out[ell] = last[1]
            return out
        by_row = exact_margins(family, task, param, N, window, feats).margins
        run: Fraction | None = None
        ordered = sorted(by_row.items())
        k = 0
        for ell in sorted(lengths):
            while k < len(ordered) and ordered[k][0] < ell:
                run = ordered[k][1] if run is None else min(run, ordered[k][1])
                k += 1
            out[ell] = run
        return out
    worst: Fraction | None = None
    for ell in range(2, max(lengths) + 1):
        vals = list(exact_margins(family, task, param, ell, window, feats).margins.values())
        if vals:
            worst = min(vals) if worst is None else min(worst, min(vals))
        if ell in lengths:
            out[ell] = worst
    return out


@contextlib.contextmanager
def gc_frozen() -> Iterator[None]:
    """The objects that exist on entry frozen for Python's cyclic garbage collector inside the block
    (``gc.freeze``; unfrozen after, also on an error).  The exact checks allocate many small objects (Fractions,
    tuples, per-length dicts), which trigger full collections that walk every object of the process (torch's,
    sympy's, scipy's): 0.1-0.2 s each on this machine, to free what the block itself made; frozen, a collection
    walks only the block's objects.  Garbage among the older objects waits for the first full collection after
    the block.  Nothing is frozen or unfrozen when some caller has frozen objects already."""
    import gc

    # inside our own block (a depth count: gc.get_freeze_count walks every frozen object, 3 ms here), or someone
    # else froze objects: leave the state alone
    if _FROZEN[0] or gc.get_freeze_count():
        _FROZEN[0] += 1
        try:
            yield
        finally:
            _FROZEN[0] -= 1
        return
    gc.freeze()
    _FROZEN[0] += 1
    try:
        yield
    finally:
        _FROZEN[0] -= 1
        gc.unfreeze()


#: depth of :func:`gc_frozen` blocks in progress (one list cell: the module's single mutable counter)
_FROZEN = [0]


def _gc_frozen_before(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``fn`` run inside :func:`gc_frozen`."""
    import functools

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        with gc_frozen():
            return fn(*args, **kwargs)
    return run


@_gc_frozen_before
def decide_lengths(family: Family, task: Task, N: int, window: int, margin: Fraction = Fraction(1),
                   timeout_ms: int = 20_000, fixed: Sequence[Fraction] | None = None, min_L: int = 2,
                   method: str = "cutting", deadline: float | None = None,
                   progress: Callable[[str], None] | None = None) -> Decision:
    """For each length ell in min_L..N: is there one parameter with margin >= ``margin`` on every query row
    of every length <= ell?

    ``method="cutting"`` (default): each length is solved by :func:`solve_cutting` (the LP on the violated
    rows only, the model re-checked on every row exactly), and a length-stable task decides every length
    <= N from the one system at N (pr26 Theorem 1's causal-mask block identity, :func:`_stable_lengths`);
    copy, reverse and any target depending on L are decided on the rows of every length <= ell.
    ``method="full"``: every constraint row built and handed to the solver (the reference definition,
    kept as the test oracle).  ``deadline``: a time.perf_counter() value past which the remaining
    solves are unknown.  ``progress``: called with one line per solve.

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
    if method not in ("cutting", "full"):
        raise ValueError(f"method must be 'cutting' or 'full', got {method!r}")
    t0 = time.perf_counter()
    r = family.dim(window)
    dim = r if family.kind == "relative" else r * r
    extra = _pinned_rows(fixed, dim)
    cache: dict = {}
    solved: dict[int, Any] = {}
    if method == "cutting":
        return _decide_cutting(family, task, N, window, margin, timeout_ms, fixed, min_L, dim, extra, t0, deadline,
                               progress)

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


def _decide_cutting(family: Family, task: Task, N: int, window: int, margin: Fraction, timeout_ms: int,
                    fixed: Sequence[Fraction] | None, min_L: int, dim: int, extra: list, t0: float,
                    deadline: float | None, progress: Callable[[str], None] | None) -> Decision:
    """:func:`decide_lengths` by cutting planes (see there)."""
    stable = _stable_lengths(task, N, min_L)
    feats = feature_table(family, window, N)
    solved: dict[int, _Cuts] = {}

    def solve(ell: int) -> tuple[Any, list]:
        if ell not in solved:
            cut = solve_cutting(family, task, ell, window, margin, dim, extra, timeout_ms, feats, stable, deadline)
            if not cut.converged and cut.res.answer == SolverAnswer.SAT:  # never certify an unconverged loop
                from verify.solver.answers import ObligationResult

                cut.res = ObligationResult(cut.res.name, SolverAnswer.UNKNOWN, "cutting planes stopped before the "
                                           "exact check passed")
            solved[ell] = cut
            if progress is not None:
                progress(f"length {ell}: {cut.res.answer} ({len(cut.rows)} constraints, {cut.rounds} round(s), "
                         f"{time.perf_counter() - t0:.1f} s)")
        return solved[ell].res, solved[ell].rows

    dec = Decision([], method="cutting")
    lengths = list(range(min_L, N + 1))
    best_sat: list[tuple[int, _Cuts]] = []  # (every length <= extent realized by this model, the solve)
    best_unsat: list[tuple[int, _Cuts]] = []  # (the certificate's rows are all rows of this length, the solve)
    if stable:
        first_bad = _first_infeasible_stable(solve, solved, min_L, N, best_sat, best_unsat,
                                             lambda res: _extent(family, task, [res.model.get(f"theta_{a}", Fraction(0))
                                                                                for a in range(dim)], N, window, margin,
                                                                 dim, feats),
                                             lambda cut: _cert_extent(cut, min_L, dim))
    else:
        first_bad = _first_infeasible_upward(solve, min_L, N)
        if first_bad not in (None, -1):
            best_unsat.append((first_bad, solved[first_bad]))
        good_top = N if first_bad is None else (first_bad - 1 if first_bad != -1 else 0)
        if good_top >= min_L:
            best_sat.append((good_top, solved[good_top]))
    dec.obligations = [c.res.summary() for c in solved.values()]
    if first_bad == -1 or any(c.res.answer not in (SolverAnswer.SAT, SolverAnswer.UNSAT) for c in solved.values()):
        why = next((f"{c.res.answer} at length {k} ({c.res.reason})" for k, c in solved.items()
                    if c.res.answer not in (SolverAnswer.SAT, SolverAnswer.UNSAT)), "")
        for ell in lengths:
            dec.answers.append(LengthAnswer(ell, None, note=f"solver: {why}"))
        dec.seconds = time.perf_counter() - t0
        return dec
    good = lengths if first_bad is None else [ell for ell in lengths if ell < first_bad]
    if good:
        wcut = max(best_sat, key=lambda e: e[0])[1]
        _cite_witness(dec, wcut.res, family, task, good, window, margin, dim, fixed, feats)
        dec.witnesses["W1"]["cutting_planes"] = {"rounds": wcut.rounds, "constraints_held": len(wcut.rows),
                                                 "block_identity": stable}
    if first_bad is not None:
        cut = min(best_unsat, key=lambda e: e[0])[1]
        _cite_certificate(dec, cut.res, first_bad, lengths,
                          _Presence(cut.origin, family, task, window, feats, margin, dim, extra, stable))
    dec.answers.sort(key=lambda a: a.L)
    dec.seconds = time.perf_counter() - t0
    return dec


def _present_by_origin(used: Sequence[dict], origin: dict[tuple, tuple[int, int, int]], family: Family, task: Task,
                       window: int, feats: Sequence[Sequence], margin: Fraction, dim: int, extra: Sequence,
                       ell: int, stable: bool) -> bool:
    """Is every certificate row in ``used`` a constraint of the length-``ell`` system?  Each row's (row i, key j,
    length L) is looked up and its coefficients rebuilt exactly, at ell for a length-stable task (row i with
    key j is a constraint of every length > i with the same target), at L <= ell otherwise (the system at ell
    holds every length <= ell); the pinned rows are compared with ``extra``."""
    ex = {(tuple(c), Fraction(b)) for c, b in extra}
    for u in used:
        d = _dense(u, dim)
        if d is None:
            return False
        if d in ex:
            continue
        c, b = d
        if b != margin or c not in origin:
            return False
        i, j, L = origin[c]
        at = ell if stable else L
        if at > ell or i not in task.rows(at) or j > i or j == pe.target_in_window(task, i, at):
            return False
        if coefficient(family, task, i, j, at, window, feats) != c:
            return False
    return True


class _Presence:
    """:func:`_present_by_origin` for one certificate asked at many lengths: its rows read once (:func:`_dense`),
    each (row i, key j, target t) coefficient rebuilt once (it depends on nothing else), every membership
    condition still checked at each length.  Answers what :func:`_present_by_origin` answers (tested)."""

    def __init__(self, origin: dict[tuple, tuple[int, int, int]], family: Family, task: Task, window: int,
                 feats: Sequence[Sequence], margin: Fraction, dim: int, extra: Sequence, stable: bool) -> None:
        self.origin, self.family, self.task, self.window, self.feats = origin, family, task, window, feats
        self.margin, self.dim, self.stable = margin, dim, stable
        self.ex = {(tuple(c), Fraction(b)) for c, b in extra}
        self._used: tuple[int, list] | None = None
        self._coef: dict[tuple[int, int, int], tuple] = {}
        # (index of a row read, target t) -> its coefficient equals the row's (compared once; cleared on a new read)
        self._same: dict[tuple[int, int], bool] = {}

    def _read(self, used: Sequence[dict]) -> list:
        """Per used row: "extra" (a pinned row), None (not a constraint of any length), or (c, i, j, L)."""
        if self._used is not None and self._used[0] == id(used):
            return self._used[1]
        out: list = []
        for u in used:
            d = _dense(u, self.dim)
            if d is not None and d in self.ex:
                out.append("extra")
            elif d is None or d[1] != self.margin or d[0] not in self.origin:
                out.append(None)
            else:
                out.append((d[0], *self.origin[d[0]]))
        self._used = (id(used), out)
        self._keep = used  # the list whose id keys the rows read
        self._same = {}
        return out

    def __call__(self, used: Sequence[dict], ell: int) -> bool:
        task = self.task
        for k, r in enumerate(self._read(used)):
            if r == "extra":
                continue
            if r is None:
                return False
            c, i, j, L = r
            at = ell if self.stable else L
            if at > ell or i not in task.rows(at) or j > i:
                return False
            t = pe.target_in_window(task, i, at)
            if j == t:
                return False
            same = self._same.get((k, t))
            if same is None:
                co = self._coef.get((i, j, t))
                if co is None:
                    co = self._coef[(i, j, t)] = coefficient(self.family, task, i, j, at, self.window, self.feats)
                same = self._same[(k, t)] = co == c
            if not same:
                return False
        return True


def _extent(family: Family, task: Task, theta: Sequence[Fraction], N: int, window: int, margin: Fraction, dim: int,
            feats: Sequence[Sequence]) -> int:
    """The longest length <= N a model realizes (length-stable task): the first row whose exact margin at N is
    below ``margin`` is the first length it fails at, plus one."""
    param = _shape(family, window, list(theta))
    if family.kind == "relative" and len(feats) >= N:  # integer margins: n / scale < p / q iff n q < p scale
        G = Fraction(margin)
        nums, _w, scale = _relative_scaled(task, param, N, feats, list(task.rows(N)))
        bad = [i for i, v in nums.items() if v * G.denominator < G.numerator * scale]
    else:
        m = exact_margins(family, task, param, N, window, feats).margins
        bad = [i for i, v in m.items() if v < margin]
    return min(bad) if bad else N


@seam("solver.realizable._cert_extent")
def _cert_extent(cut: _Cuts, min_L: int, dim: int) -> int | None:
    """The shortest length holding every row a checked certificate uses (length-stable task: row i's
    constraints are rows of every length > i): 1 + the largest row used; None without a checked certificate."""
    cert = cut.res.certificate
    if cut.res.answer != SolverAnswer.UNSAT or not cert or not cert.get("checked"):
        return None
    top = min_L - 1
    for u in used_rows(cert):
        d = _dense(u, dim)
        if d is not None and d[0] in cut.origin:
            top = max(top, cut.origin[d[0]][0])
    return max(top + 1, min_L)


def _first_infeasible_stable(solve: Callable[[int], Any], solved: dict[int, _Cuts], min_L: int, N: int,
                             best_sat: list, best_unsat: list, extent: Callable[[Any], int],
                             cert_extent: Callable[[_Cuts], int | None]) -> int | None:
    """The first infeasible length of a length-stable task, by bisection narrowed by what each solve shows: a
    model (``extent(result)``) realizes every length up to its first failing row (checked exactly at N), and a certificate refutes
    every length that holds its rows (1 + its largest row).  Fills ``best_sat`` / ``best_unsat`` with
    (length, solve).  None when N is feasible; -1 when a solve was not decided."""
    lo, hi = min_L - 1, N + 1  # lo: realized (or below the range); hi: refuted

    def learn(ell: int) -> bool:
        nonlocal lo, hi
        res = solve(ell)[0]
        cut = solved[ell]
        if res.answer == SolverAnswer.SAT:
            x = extent(res)
            best_sat.append((max(x, ell), cut))
            lo = max(lo, ell, x)
            return True
        if res.answer == SolverAnswer.UNSAT:
            e = cert_extent(cut)
            if e is None:
                return False
            best_unsat.append((min(e, ell), cut))
            hi = min(hi, ell, e)
            return True
        return False

    if not learn(N):
        return -1
    if hi > N:
        return None
    while hi - lo > 1:
        if not learn((lo + hi) // 2):
            return -1
    return hi


def _first_infeasible_upward(solve: Callable[[int], Any], min_L: int, N: int) -> int | None:
    """The first infeasible length of min_L..N searched from below (doubling, then bisection): for systems
    whose size grows fast with the length (every length <= ell together), an early failure is found without
    solving at N.  None when N is feasible; -1 when a solve was not decided."""
    lo, probe = None, min_L
    while True:
        ans = solve(probe)[0].answer
        if ans == SolverAnswer.UNSAT:
            break
        if ans != SolverAnswer.SAT:
            return -1
        lo = probe
        if probe == N:
            return None
        probe = min(N, probe * 2)
    return probe if lo is None else _bisect_first(solve, lo, probe)


def _bisect_first(solve: Callable[[int], Any], lo: int, hi: int) -> int:
    """The first infeasible length in lo + 1..hi, ``lo`` feasible and ``hi`` infeasible, by bisection (the answers
    are monotone in the length); -1 when a solve was not decided."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        ans = solve(mid)[0].answer
        if ans == SolverAnswer.UNSAT:
            hi = mid
        elif ans == SolverAnswer.SAT:
            lo = mid
        else:
            return -1
    return hi


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
    first = solve(min_L)[0].answer
    if first == SolverAnswer.UNSAT:
        return min_L
    return _bisect_first(solve, min_L, N) if first == SolverAnswer.SAT else -1


def fraction_strings(values: Iterable[Fraction | None]) -> list[str | None]:
    """``str`` of each value (None stays None), each distinct object written once: the margins of
    consecutive lengths are mostly the same Fraction object, and writing one with a large denominator
    costs microseconds (measured: 0.1-0.3 s for the 4096 lengths of five tasks)."""
    seen: dict[int, str] = {}
    out: list[str | None] = []
    for v in values:
        if v is None:
            out.append(None)
            continue
        t = seen.get(id(v))
        if t is None:
            t = seen[id(v)] = str(v)
        out.append(t)
    return out


def _cite_witness(dec: Decision, res: Any, family: Family, task: Task, good: Sequence[int], window: int,
                  margin: Fraction, dim: int, fixed: Sequence[Fraction] | None,
                  feats: Sequence[Sequence] | None = None) -> None:
    """Record the parameter the solver found at the longest feasible length as witness W1, re-checked
    exactly at every length in ``good``, and the answer it gives each of those lengths."""
    theta = [res.model.get(f"theta_{a}", Fraction(0)) for a in range(dim)]
    param = _shape(family, window, theta)
    try:
        margins = (_recheck_all(family, task, param, good, window, margin) if feats is None else
                   _recheck_fast(family, task, param, good, window, feats))
    except TooManyTies as e:
        for ell in good:
            dec.answers.append(LengthAnswer(ell, None, note=f"the exact re-check could not finish: {e}"))
        return
    ok_all = all(m is None or (m >= margin and bool(pe.attends(m))) for m in margins.values())
    fixed_ok = fixed is None or [Fraction(x) for x in theta] == [Fraction(x) for x in fixed]
    dec.witnesses["W1"] = {"found_at_length": max(good), "param": _strings(param), "shape": list(
        family.param_shape(window)), "rechecked_exact": ok_all and fixed_ok,
        "min_margin_by_length": {str(k): v for k, v in zip(margins, fraction_strings(margins.values()))}}
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
