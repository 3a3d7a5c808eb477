"""Size arithmetic of the Bietti-style model (no torch import), so that input validation stays
fast: ``verify ws24:...`` refuses sizes that cannot fit before torch is loaded."""
from __future__ import annotations


def memory_bytes(d: int, V: int, T: int, N: int) -> int:
    """Rough peak memory of :func:`verify.numeric.bietti_model.one_step_protocol` (float32, autograd kept)."""
    per = 4
    acts = N * T * d * 6 + N * T * T * 6
    return per * (acts + 6 * d * d + (2 * V + 2 * T) * d)


__all__ = ["memory_bytes"]
