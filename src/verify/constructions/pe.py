"""Positional-encoding families and tasks of pr26, defined once for every layer.

Source: "A Positional Realizability Theory of Length Generalization in Single-Head
Attention" (pr26, TMLR 2026).  The paper's full text was not reachable: the exact feature maps
below are reconstructed from a summary of it (each family's description says what was taken),
so no section or equation can be cited for them.

A positional-only head has positional logits that are *linear in its parameter*:

* absolute families: a feature map phi: position -> R^r, parameter W (r x r),
  logit(i, j) = phi(i)^T W phi(j)  (P_L(W) = Phi_L W Phi_L^T);
* relative families: a feature map psi: offset delta = i - j >= 0 -> R^r, parameter
  w (r), logit(i, j) = k(i - j) with the kernel k(delta) = w . psi(delta).

Positions are 0-indexed here (the paper indexes from 1; printed statements convert).
Every feature map takes (n, L0, ar): n the position (absolute) or offset (relative),
L0 the training length (learned families have L0 trained slots) and ``ar`` an
*arithmetic* that supplies numbers in the caller's arithmetic:

* ``ar.num(q)``       an exact rational q (int or Fraction);
* ``ar.sin(k, n)``    sin(n theta_k), theta_k = 10000^(-k/16);
* ``ar.cos(k, n)``    cos(n theta_k);
* ``ar.rand(n, a)``   coordinate a of the untrained random feature of slot n (a
                      Gaussian N(0, 1/r) from numpy's Generator seeded through
                      SeedSequence by (``ar.seed``, r): deterministic, explicit seed).

:class:`FractionArith` (exact rationals; trig rounded, see there) and
:class:`FloatArith` (float64) live here; the symbolic layer passes a sympy arithmetic
and the numeric layer builds torch tensors from :class:`FloatArith`.  No feature ever
depends on the evaluation length L, which is why the top-left L0 x L0 block of P_L(W)
equals P_L0(W) (pr26 Theorem 1; checked by the symbolic layer).

Adding a family is one :class:`Family` entry in :data:`FAMILIES`; adding a task is one
:class:`Task` entry in :data:`TASKS` (``skip-K`` is built by :func:`get_task`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

from verify.faults import seam
from verify.runcache import Memo

#: the 16 standard frequencies theta_k = 10000^(-k/16), k = 0..15 (sinusoidal, RoPE)
N_FREQ = 16
TRIG_DENOM_BITS = 40  # FractionArith rounds sin/cos to the nearest multiple of 2^-40


def theta(k: int) -> float:
    """theta_k = 10000^(-k/16) in float64."""
    return 10000.0 ** (-k / N_FREQ)


def theta_ball(k: int) -> Any:
    """An arb ball around theta_k = 10000^(-k/16) = exp(-(k/16) log 10000), at the current arb precision."""
    from flint import arb

    return (-(arb(k) / N_FREQ) * arb(10000).log()).exp()


class FloatArith:
    """float64 arithmetic for the feature maps (used to build torch tensors)."""

    exact = False

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def num(self, q: Any) -> float:
        return float(q)

    def sin(self, k: int, n: int) -> float:
        return math.sin(n * theta(k))

    def cos(self, k: int, n: int) -> float:
        return math.cos(n * theta(k))

    def rand(self, n: int, a: int, r: int) -> float:
        return _rand(self.seed, n, a, r)

    def rand_vec(self, n: int, r: int) -> list[float]:
        """All r coordinates of slot n's untrained feature at once (a fresh list)."""
        return list(_rand_vec(self.seed, n, r))


class FractionArith:
    """Exact rational arithmetic (fractions.Fraction) for the solver layer and re-checks.

    Integer, one-hot and random features are exact (the random features are float64
    numbers, taken as the exact rationals they are).  sin/cos are irrational: they are
    computed with mpmath at 50 digits and rounded to the nearest multiple of
    2^-TRIG_DENOM_BITS (|error| <= 2^-41 ~ 4.5e-13 per entry).  A solver answer over
    these features is exact *for the rounded feature map*; it transfers to the true map
    only up to that error (a margin-1 witness keeps margin >= 1 - 2 r ||W||_1 2^-41).
    """

    exact = True

    def __init__(self, seed: int = 0) -> None:
        self.seed = seed

    def num(self, q: Any) -> Fraction:
        return Fraction(q)

    def sin(self, k: int, n: int) -> Fraction:
        return _round_trig("sin", k, n)

    def cos(self, k: int, n: int) -> Fraction:
        return _round_trig("cos", k, n)

    def rand(self, n: int, a: int, r: int) -> Fraction:
        return Fraction(_rand(self.seed, n, a, r))


def _round_trig(fn: str, k: int, n: int) -> Fraction:
    import mpmath

    with mpmath.workdps(50):
        x = mpmath.mpf(n) * mpmath.power(10000, mpmath.mpf(-k) / N_FREQ)
        v = mpmath.sin(x) if fn == "sin" else mpmath.cos(x)
        scaled = int(mpmath.nint(v * 2**TRIG_DENOM_BITS))
    return Fraction(scaled, 2**TRIG_DENOM_BITS)


#: the untrained features' stream: numpy's Generator (PCG64) seeded by ``SeedSequence([RAND_STREAM, seed, r])``;
#: the tag ("pr26" in ASCII) keeps it apart from any other stream seeded with the same integers
RAND_STREAM = 0x70723236
#: the untrained features by (seed, r), the stream's rows drawn so far: run-scoped (:mod:`verify.runcache`)
_RAND_CACHE = Memo("constructions.pe: untrained random features")


def _draw(seed: int, r: int, rows: int) -> Any:
    """Rows 0..rows-1 of draw ``seed``'s untrained features, numpy float64 ``[rows, r]``: row n is slot n's
    feature, r i.i.d. N(0, 1/r) values: ``standard_normal`` of numpy's Generator seeded by
    ``SeedSequence([RAND_STREAM, seed, r])``, times 1/sqrt(r).  The generator fills the rows in order, so row n is
    the same however many rows are drawn: a slot's feature depends on (seed, n, r) only, never on the evaluation
    length L (pr26 Theorem 1).

    Raises:
        ValueError: a negative ``seed`` (SeedSequence takes non-negative integers).
    """
    import numpy as np

    gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([RAND_STREAM, seed, r])))
    return gen.standard_normal((rows, r)) * (1.0 / math.sqrt(r))


def _rand_vec(seed: int, n: int, r: int) -> list[float]:
    """The untrained random feature of slot n of draw ``seed`` (r coordinates, N(0, 1/r) each): row n of
    :func:`_draw`, from a cached prefix of the stream (extended by doubling)."""
    cache = _RAND_CACHE.table()
    rows = cache.get((seed, r))
    if rows is None or len(rows) <= n:
        if len(cache) > 4096:
            cache.clear()
        rows = cache[(seed, r)] = _draw(seed, r, max(n + 1, 2 * len(rows) if rows is not None else 64))
    return rows[n].tolist()


def rand_block(keys: Sequence[tuple[int, int]], r: int) -> Any:
    """The untrained features of many slots at once, numpy float64 ``[len(keys), r]``: row i is
    ``_rand_vec(seed, n, r)`` for ``(seed, n) = keys[i]`` (each distinct seed's stream drawn once, to its largest
    slot)."""
    import numpy as np

    top: dict[int, int] = {}
    for seed, n in keys:
        top[seed] = max(top.get(seed, -1), n)
    streams = {seed: _draw(seed, r, m + 1) for seed, m in top.items()}
    out = np.empty((len(keys), r))
    for i, (seed, n) in enumerate(keys):
        out[i] = streams[seed][n]
    return out


def _rand(seed: int, n: int, a: int, r: int) -> float:
    return _rand_vec(seed, n, r)[a]


# ----------------------------------------------------------------------------- families

FeatureFn = Callable[[Any, int, Any], list]


@dataclass(frozen=True)
class Family:
    """One PE family.

    Attributes:
        name: command-line name (``affine``, ``rope``, ...).
        kind: ``"absolute"`` (parameter W, r x r) or ``"relative"`` (parameter w, r).
        dim: ``L0 -> r``, the feature dimension.
        feature: ``(n, L0, ar) -> list of r numbers``: phi(n) (absolute, n a position)
            or psi(n) (relative, n = i - j >= 0 an offset), in ``ar``'s arithmetic.
        description: the feature map in the paper's words.
        rational: True when every feature value is rational (exact in Fractions and z3).
        trained_slots: True when positions/offsets >= L0 are untrained (learned families).
    """

    name: str
    kind: str
    dim: Callable[[int], int]
    feature: FeatureFn
    description: str
    rational: bool = True
    trained_slots: bool = False

    def features(self, n: int, L0: int, ar: Any) -> list:
        """The feature vector at position/offset n (length ``dim(L0)``)."""
        return self.feature(n, L0, ar)

    def param_shape(self, L0: int) -> tuple[int, ...]:
        r = self.dim(L0)
        return (r, r) if self.kind == "absolute" else (r,)


def _onehot(a: int, r: int, ar: Any) -> list:
    return [ar.num(1 if b == a else 0) for b in range(r)]


def learned_feature(n: int, L0: int, ar: Any) -> list:
    """learned-absolute: one-hot e_n for the L0 trained slots, the untrained random feature beyond."""
    if n < L0:
        return _onehot(n, L0, ar)
    vec = getattr(ar, "rand_vec", None)
    return vec(n, L0) if vec is not None else [ar.rand(n, a, L0) for a in range(L0)]


def _trig(n: int, L0: int, ar: Any) -> list:
    out = []
    for k in range(N_FREQ):
        out += [ar.sin(k, n), ar.cos(k, n)]
    return out


def _rope(n: int, L0: int, ar: Any) -> list:
    out = []
    for k in range(N_FREQ):
        out += [ar.cos(k, n), ar.sin(k, n)]
    return out


def _free_rel(n: int, L0: int, ar: Any) -> list:
    # one free value per trained offset 0..L0-1; untrained offsets keep value 0
    return _onehot(n, L0, ar) if n < L0 else [ar.num(0) for _ in range(L0)]


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("affine", "absolute", lambda L0: 2, lambda n, L0, ar: [ar.num(1), ar.num(n)],
               "phi(i) = [1, i]"),
        Family("alibi", "relative", lambda L0: 2, lambda n, L0, ar: [ar.num(1), ar.num(n)],
               "relative kernel k(delta) = a - m delta (psi(delta) = [1, delta], w = [a, -m]); affine in delta"),
        Family("learned-absolute", "absolute", lambda L0: L0, learned_feature,
               "phi(i) = e_i (one-hot) for i < L0; positions i >= L0 get untrained random features N(0, I/L0)",
               trained_slots=True),
        Family("clamped-absolute", "absolute", lambda L0: L0,
               lambda n, L0, ar: _onehot(min(n, L0 - 1), L0, ar),
               "phi(i) = e_min(i, L0-1): positions >= L0 reuse the feature of L0-1", trained_slots=True),
        Family("sinusoidal", "absolute", lambda L0: 2 * N_FREQ, _trig,
               "phi(i) = [sin(i theta_k), cos(i theta_k)]_k, theta_k = 10000^(-k/16), k = 0..15", rational=False),
        Family("rope", "relative", lambda L0: 2 * N_FREQ, _rope,
               "k(delta) = sum_k a_k cos(delta theta_k) + b_k sin(delta theta_k), theta_k = 10000^(-k/16)",
               rational=False),
        Family("free-relative", "relative", lambda L0: L0, _free_rel,
               "one free value k(delta) per trained offset delta < L0; untrained offsets keep value 0",
               trained_slots=True),
    )
}

#: control families used by the checks (not PE families of the paper, not on the CLI)
QUADRATIC = Family("quadratic", "absolute", lambda L0: 3, lambda n, L0, ar: [ar.num(1), ar.num(n), ar.num(n * n)],
                   "phi(i) = [1, i, i^2] (control: not affine in j)")


def get_family(name: str) -> Family:
    """The family called ``name``.

    Raises:
        KeyError: unknown name (the message lists the valid names).
    """
    try:
        return FAMILIES[name]
    except KeyError:
        raise KeyError(f"unknown PE family {name!r}; valid: {', '.join(FAMILIES)}") from None


# ----------------------------------------------------------------------------- tasks


@seam("pe.ceil_half")
def ceil_half(L: Any) -> Any:
    """ceil(L / 2) for ints and for sympy expressions (via floor division)."""
    return -((-L) // 2)


@dataclass(frozen=True)
class Task:
    """One task: its query rows at length L and the target t_L(i) of each.

    Attributes:
        name: command-line name.
        first_row: ``L -> i0``; the query rows are i0 <= i < L.
        target: ``(i, L) -> t_L(i)`` (0-indexed key position; works on sympy symbols).
        description: the paper's definition.
        length_stable: True when t_L(i) does not depend on L (rows below L0 keep their
            targets when the sequence grows).
    """

    name: str
    first_row: Callable[[Any], Any]
    target: Callable[[Any, Any], Any]
    description: str
    length_stable: bool = True

    def rows(self, L: int) -> range:
        """The query rows at length L (0-indexed)."""
        return range(max(int(self.first_row(L)), 0), L)

    def offset(self, i: Any, L: Any) -> Any:
        """The target offset i - t_L(i)."""
        return i - self.target(i, L)


def _skip(K: int) -> Task:
    def first_row(L: Any) -> Any:
        return K

    def target(i: Any, L: Any) -> Any:
        return i - K

    return Task(f"skip-{K}", first_row, target, f"t = i - {K} on rows i >= {K}")


TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("prev", lambda L: 1, lambda i, L: i - 1, "t = i - 1 on rows i >= 1 (paper: i >= 2, 1-indexed)"),
        Task("attend-first", lambda L: 1, lambda i, L: 0 * i, "t = 0 on rows i >= 1"),
        Task("copy", ceil_half, lambda i, L: i - ceil_half(L),
             "rows i >= ceil(L/2), t = i - ceil(L/2)", length_stable=False),
        Task("reverse", ceil_half, lambda i, L: L - 1 - i,
             "rows i >= ceil(L/2), t = L - 1 - i", length_stable=False),
    )
}

_SKIP = re.compile(r"^skip-(\d+)$")


def task_names() -> list[str]:
    return list(TASKS) + ["skip-K (K >= 1, e.g. skip-3)"]


@seam("pe.get_task")
def get_task(name: str) -> Task:
    """The task called ``name`` (``prev``, ``skip-K``, ``attend-first``, ``copy``, ``reverse``).

    Raises:
        KeyError: unknown name or K < 1 (the message lists the valid names).
    """
    if name in TASKS:
        return TASKS[name]
    m = _SKIP.match(name)
    if m and int(m.group(1)) >= 1:
        return _skip(int(m.group(1)))
    raise KeyError(f"unknown task {name!r}; valid: {', '.join(task_names())}")


# ----------------------------------------------------------------------------- exact evaluation


def logit(family: Family, param: Any, i: int, j: int, L0: int, ar: Any, feats: Sequence[Sequence] | None = None) -> Any:
    """logit(i, j) = phi(i)^T W phi(j) (absolute) or w . psi(i - j) (relative), in ar's arithmetic.

    Args:
        param: W as a list of rows (absolute) or w as a list (relative).
        feats: optional precomputed feature rows (index = position or offset).
    """
    f = feats if feats is not None else None
    if family.kind == "relative":
        psi = f[i - j] if f is not None else family.features(i - j, L0, ar)
        return sum((wa * pa for wa, pa in zip(param, psi)), ar.num(0))
    pi = f[i] if f is not None else family.features(i, L0, ar)
    pj = f[j] if f is not None else family.features(j, L0, ar)
    total = ar.num(0)
    for a, pa in enumerate(pi):
        if pa == 0:
            continue
        row = param[a]
        total = total + pa * sum((row[b] * pb for b, pb in enumerate(pj) if pb != 0), ar.num(0))
    return total


@seam("pe.attends")
def attends(margin: Any) -> Any:
    """The one rule every layer uses to decide a row: it attends to its target iff margin > 0.

    "Attends to t" means the strict causal masked argmax is t, so an exact tie (margin 0) is a
    failure.  Works elementwise on torch tensors and on ints, Fractions, floats and numeric sympy
    values.  Layers call it as ``pe.attends`` (looked up at call time), so a test can replace the
    rule (e.g. count ties as successes) and watch every decision that depends on it move.

    Source: pr26's definition of alpha_L (strict argmax; ties fail), as summarised.
    """
    return margin > 0


def target_in_window(task: Task, i: int, L: int) -> int:
    """t_L(i) as an int, checked to lie in row i's causal window 0..i.

    Raises:
        ValueError: the target is negative or to the right of the query (an index bug in a task:
            a negative index would silently wrap around in Python and in torch).
    """
    t = int(task.target(i, L))
    if not 0 <= t <= i:
        raise ValueError(f"task {task.name}: target t_L(i) = {t} of row i = {i} at L = {L} lies outside the causal "
                         f"window 0..{i}")
    return t


def exact_row_margin(family: Family, task: Task, param: Any, i: int, L: int, L0: int, ar: Any,
                     feats: Sequence[Sequence] | None = None) -> Any:
    """Margin of row i at length L: logit(i, t) - max_{j <= i, j != t} logit(i, j) (None if t is the only key).

    Raises:
        ValueError: the target lies outside the causal window 0..i (:func:`target_in_window`).
    """
    t = target_in_window(task, i, L)
    lt = logit(family, param, i, t, L0, ar, feats)
    others = [logit(family, param, i, j, L0, ar, feats) for j in range(i + 1) if j != t]
    if not others:
        return None
    return lt - max(others)


__all__ = ["Family", "Task", "FAMILIES", "TASKS", "QUADRATIC", "get_family", "get_task", "task_names",
           "FloatArith", "FractionArith", "ceil_half", "theta", "logit", "exact_row_margin",
           "attends", "target_in_window",
           "N_FREQ", "TRIG_DENOM_BITS"]
