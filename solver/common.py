"""Shared z3 plumbing: fresh contexts, fixed seeds, budgets, exact model extraction.

Every proof obligation gets its own ``z3.Context`` (no state leaks between checks), a
fixed random seed, a wall-clock timeout and, where z3 has one, a resource limit.
``unknown`` is reported with z3's reason and is never read as a pass.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Sequence

import z3

#: the fixed seed every solver call uses (DESIGN.md: "fixed z3/cvc5 seeds")
SOLVER_SEED = 0


@dataclass
class ObligationResult:
    """Outcome of one solver call.

    Attributes:
        name: the obligation, in words (e.g. ``"|S(v) - chi(v)| > A(eps) at v = 3"``).
        answer: ``"unsat"``, ``"sat"`` or ``"unknown"``.
        reason: z3's reason for ``unknown`` (timeout, incomplete, ...), else ''.
        model: for ``sat``, variable name -> exact Fraction value.
        seconds: wall time of the check.
        smt2: the obligation as SMT-LIB 2 text (the encoding, for certificates).
    """

    name: str
    answer: str
    reason: str = ""
    model: dict[str, Fraction] = field(default_factory=dict)
    seconds: float = 0.0
    smt2: str = ""


def fresh_solver(timeout_ms: int, seed: int = SOLVER_SEED, rlimit: int = 0) -> tuple[z3.Context, z3.Solver]:
    """A new z3 context and solver with fixed seeds and budgets.

    Args:
        timeout_ms: wall-clock budget per check (ms).
        seed: random seed (fixed by default).
        rlimit: z3 resource limit (0 = none).
    """
    ctx = z3.Context()
    s = z3.Solver(ctx=ctx)
    s.set("random_seed", seed)
    s.set("timeout", int(timeout_ms))
    if rlimit:
        s.set("rlimit", int(rlimit))
    return ctx, s


def to_fraction(val: z3.ExprRef) -> Fraction:
    """An exact Fraction from a z3 rational numeral (raises ValueError for algebraic numbers)."""
    if z3.is_rational_value(val):
        return Fraction(val.numerator_as_long(), val.denominator_as_long())
    if z3.is_int_value(val):
        return Fraction(val.as_long())
    if z3.is_algebraic_value(val):
        raise ValueError(f"irrational algebraic model value {val}; cannot re-check exactly")
    raise ValueError(f"not a numeral: {val}")


def check(
    name: str,
    build: Callable[[z3.Context], Sequence[z3.BoolRef]],
    timeout_ms: int,
    seed: int = SOLVER_SEED,
) -> ObligationResult:
    """Build the constraints in a fresh context and check satisfiability.

    Args:
        name: the obligation in words.
        build: ``ctx -> constraints``; the obligation is their conjunction.
        timeout_ms: budget.

    Returns:
        The ObligationResult; for ``sat``, every declared constant's exact value.
    """
    ctx, s = fresh_solver(timeout_ms, seed)
    for c in build(ctx):
        s.add(c)
    t0 = time.perf_counter()
    ans = s.check()
    secs = time.perf_counter() - t0
    res = ObligationResult(name=name, answer=str(ans), seconds=round(secs, 4), smt2=s.to_smt2())
    if ans == z3.sat:
        m = s.model()
        for d in m.decls():
            try:
                res.model[d.name()] = to_fraction(m[d])
            except ValueError:
                res.model[d.name()] = Fraction(0)  # marked below
                res.reason = f"model value of {d.name()} is irrational"
    elif ans == z3.unknown:
        res.reason = s.reason_unknown()
    return res


def rval(ctx: z3.Context, x: Fraction | int) -> z3.ArithRef:
    """An exact z3 rational constant in ``ctx``."""
    x = Fraction(x)
    return z3.RealVal(f"{x.numerator}/{x.denominator}", ctx)


def z3_version() -> str:
    return z3.get_version_string()
