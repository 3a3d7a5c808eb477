"""The private names of other packages that verify still needs, each behind one wrapper here and nowhere else.

A private attribute can disappear in a minor release.  Where a package's public API cannot do the job, the one use
lives in this module, says why, and has a test that fails the day the name disappears
(tests/core/test_thirdparty.py, which also fails when a private name of another package is used outside this
module).  The supported ranges are pyproject's (``mpmath>=1.3``, ``highspy>=1.7``).

- mpmath interval endpoints, exactly: ``ivmpf._mpi_`` holds the two ends as raw (sign, mantissa, exponent, bits)
  tuples; the public ends (``x.a``, ``x.b``) are intervals themselves and converting them to ``mpf`` rounds to the
  ``mp`` context's precision, not the interval context's.
- a silent HiGHS: ``highspy.Highs`` prints a banner on stdout when it is built; ``highspy._core._Highs`` is the same
  solver without it (stdout carries only the report).
- a process pool's state (the standard library, before Python 3.14): ``ProcessPoolExecutor._broken`` (a worker died)
  and ``_processes`` (the workers to kill on Ctrl-C).
"""

from __future__ import annotations

from typing import Any

#: the private names wrapped here (the test refuses them anywhere else)
WRAPPED = ("_mpi_", "_Highs", "_core", "_broken", "_processes")


def is_mpmath_interval(x: Any) -> bool:
    """True for an mpmath interval number (``mpmath.iv.mpf``)."""
    return hasattr(x, "_mpi_")


def interval_ends(x: Any) -> tuple[Any, Any]:
    """The raw ends of an mpmath interval: two (sign, mantissa, exponent, bits) tuples, exact at the interval
    context's precision (value (-1)^sign mantissa 2^exponent; mantissa 0 with a nonzero exponent is +-inf or nan).

    Raises:
        TypeError: ``x`` is not an mpmath interval.
    """
    ends = getattr(x, "_mpi_", None)
    if ends is None:
        raise TypeError(f"not an mpmath interval: {type(x).__name__}")
    return ends[0], ends[1]


def silent_highs() -> tuple[Any, Any] | None:
    """(the HiGHS binding module, a silent Highs instance) from highspy, or None when highspy or its binding is
    missing (the caller then takes scipy's HiGHS)."""
    import importlib

    try:
        core = getattr(importlib.import_module("highspy"), "_core", None)
    except ImportError:
        return None
    if core is None or not hasattr(core, "_Highs") or not hasattr(core, "HighsLp"):
        return None
    return core, core._Highs()


def pool_broken(pool: Any) -> bool:
    """True when a ``concurrent.futures.ProcessPoolExecutor`` knows that one of its workers died."""
    return bool(getattr(pool, "_broken", False))


def pool_processes(pool: Any) -> list[Any]:
    """The worker processes of a ``concurrent.futures.ProcessPoolExecutor`` (empty when it has none or the name
    is gone)."""
    return list((getattr(pool, "_processes", None) or {}).values())


__all__ = ["WRAPPED", "is_mpmath_interval", "interval_ends", "silent_highs", "pool_broken", "pool_processes"]
