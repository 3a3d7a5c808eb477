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


__all__ = ["SELECTIONS", "memory_bytes"]
