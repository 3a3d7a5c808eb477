"""Size arithmetic of the pr26 transfer evaluation and the fit protocol's selection rules (no torch
import), so that ``verify alpha`` and the pr26 claims refuse sizes that cannot fit before torch is
loaded (refusals stay well under a second), and declare their ``--selection`` choices from the same
tuple the engine checks.

Source: pr26 (TMLR 2026), the fit/transfer protocol; the formula counts the float64 buffers of
:func:`verify.numeric.pr26.evaluate_rows` and of the fit (see that module's docstring).
"""
from __future__ import annotations

from verify.constructions.pe import Family

#: the selection rules of the fit at L0 (:func:`verify.numeric.pr26.fit`): ``ce`` (regularised
#: cross-entropy, Adam) and ``min-norm`` (minimum ||W||_F with margin >= 1 on every L0 row)
SELECTIONS = ("ce", "min-norm")


def memory_bytes(family: Family, L0: int, L: int, chunk: int = 1024) -> int:
    """Peak bytes of a transfer evaluation (features, parameter, one chunk of logits), float64.

    Args:
        family: the PE family (its feature dimension ``family.dim(L0)`` sets r).
        L0, L: training and evaluation lengths; chunk: rows of logits evaluated at once.
    Returns:
        an int, the rough peak in bytes.
    """
    r = family.dim(L0)
    return 8 * (L * r + r * r + L * r + 3 * min(chunk, L) * L) + 16 * L0 * L0 * 4


#: float64 logits held at once by one block of the streaming stage of ``evaluate_rows`` / ``target_mass``
#: (rows x keys of one block; :func:`verify.numeric.pr26.block_rows`)
BLOCK_BYTES = 96 * 2**20
#: the budgets ``verify alpha`` works within; a size whose estimate exceeds either is refused before any work
MEMORY_BUDGET_BYTES = 4 * 2**30
TIME_BUDGET_S = 600.0
#: unit costs of the streaming evaluation, measured on the development machine (2 cores, torch on one thread;
#: ``python benchmarks/bench_alpha.py`` re-measures the totals).  Absolute heads: each causal logit (block
#: product, mask, max, softmax mass) costs about NS_PER_LOGIT + NS_PER_LOGIT_R * r ns (sinusoidal, r = 32:
#: 1.1 s for the 3.4e7 logits of L = 8192); relative heads: each row about NS_PER_ROW ns (range maxima, running
#: argmax, prefix log-sum-exp, the target); feature entries built position by position in Python about
#: NS_PER_FEATURE ns each (the built-in sin/cos tables cost about a tenth of that).
NS_PER_LOGIT = 25.0
NS_PER_LOGIT_R = 0.6
NS_PER_ROW = 2000.0
NS_PER_FEATURE = 400.0
#: Python-side bytes per query row (row lists, per-row masses as floats)
BYTES_PER_ROW = 200


def fast_memory_bytes(family: Family, L0: int, L: int) -> int:
    """Peak bytes (rough upper estimate) of ``verify alpha``'s streaming evaluation at length L.

    Counts the float64 feature table (cached, and one working copy, and for absolute heads W phi(j)), for
    relative heads the kernel, its range-maximum table (1 + log2 L levels, and the levels while it is built)
    and a dozen length-L vectors, for absolute heads four blocks of logits of :data:`BLOCK_BYTES`; the
    Python row lists; the fit at L0 (as :func:`memory_bytes`).
    """
    r = family.dim(L0)
    levels = max(L, 1).bit_length()
    feats = 8 * L * r * (3 if family.kind == "absolute" else 2)
    if family.kind == "relative":
        work = 8 * L * (2 * levels + 12) + 3 * BLOCK_BYTES
    else:
        work = 4 * BLOCK_BYTES
    return feats + work + BYTES_PER_ROW * L + 8 * r * r + 16 * L0 * L0 * 4


def time_estimate_s(family: Family, L0: int, L: int) -> float:
    """Seconds (rough estimate, this machine's unit costs above) of ``verify alpha``'s evaluation at length L:
    the feature table, then O(L^2 r / 2) logits for an absolute head or O(L) rows for a relative one.  The fit at
    L0 and the re-checks of near ties (at most MAX_RECHECK_ROWS rows) come on top."""
    r = family.dim(L0)
    feats = NS_PER_FEATURE * L * r
    if family.kind == "absolute":
        work = (NS_PER_LOGIT + NS_PER_LOGIT_R * r) * L * (L + 1) / 2
    else:
        work = NS_PER_ROW * L
    return (feats + work) * 1e-9


__all__ = ["SELECTIONS", "memory_bytes", "fast_memory_bytes", "time_estimate_s", "BLOCK_BYTES",
           "MEMORY_BUDGET_BYTES", "TIME_BUDGET_S"]
