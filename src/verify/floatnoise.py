"""A perturbed float path: what another CPU's rounding would do to the numeric layers, on this machine.

Machines of one kind differ in vector width and in their BLAS and libm kernels, so a reduction sums in another
order, a product is fused (one rounding) or not, and ``exp`` comes from another approximation: the last bits of
every inexact floating-point result move.  An output that records such bits (a count of rows that float noise
puts above an exact tie, the location where a rounding-level difference peaks, a deviation's third digit) is a
property of the CPU, not of the claim, and a golden file that records it fails on some other machine.

:func:`perturbed` runs a block with torch's floating-point kernels perturbed the way another machine would
perturb them: the result of every reduction, product and transcendental function (:data:`PERTURBED`) is moved
by a few units of roundoff of its dtype, elementwise, up or down by the last bit of the value's significand and a
seed (so the same computation on the same inputs moves the same way twice, as on a real machine), and the other
way in the scalar tail of a row (so one value computed in rows of different lengths rounds differently, as a
vectorised kernel's body and tail do).  A value that is
exactly representable with few significant bits (an integer, a short dyadic: :func:`_exact_looking`) is left as
it is, as every IEEE-754 machine computes an exact result exactly.  Nothing else changes: the same seeds, the same
inputs, the same code.  A check whose recorded output moves under it depends on rounding noise.

The test suite runs the default claims twice, as they are and under ``VERIFY_FLOAT_PERTURBATION=1`` (read by
:func:`from_environment`, honoured in every worker process because :func:`verify.core.model.run_layer` enters
it), and compares both runs with the golden file (tests/core/test_golden.py).

Only torch's kernels are perturbed: the numeric layers compute their floats in torch; Python floats and numpy's
elementwise operations round the same way on every IEEE-754 machine.
"""

from __future__ import annotations

import os
from contextlib import contextmanager, nullcontext
from typing import Any, ContextManager, Iterator

#: the environment variable that turns the perturbation on for a run (its value: a nonzero integer seed)
ENV = "VERIFY_FLOAT_PERTURBATION"

#: torch functions whose floating-point result depends on the machine's kernels (summation order, fused
#: multiply-add, vectorised libm), by name: the functions, the Tensor methods and ``torch.nn.functional``'s
PERTURBED = frozenset({
    "matmul", "__matmul__", "__rmatmul__", "mm", "bmm", "mv", "dot", "vdot", "inner", "outer", "einsum", "tensordot",
    "addmm", "baddbmm", "addmv", "linear", "bilinear", "sum", "nansum", "mean", "var", "std", "norm", "vector_norm",
    "matrix_norm", "prod", "softmax", "log_softmax", "logsumexp", "cumsum", "exp", "expm1", "log", "log1p", "log2",
    "sin", "cos", "tanh", "sigmoid", "pow", "__pow__", "__rpow__", "sqrt", "rsqrt", "erf", "gelu", "silu",
    "cross_entropy", "nll_loss", "scaled_dot_product_attention", "cdist",
})

#: units of roundoff (machine epsilon of the result's dtype) by which a perturbed result moves
UNITS = 2

#: the vector width (elements) of the modelled machine: along the last dimension, the elements past the last
#: whole vector of a row (the "tail", handled by a scalar loop) round the other way (:func:`_tail`)
WIDTH = 8


class PerturbationSettingError(ValueError):
    """``VERIFY_FLOAT_PERTURBATION`` holds something other than an integer."""


def seed_from_environment() -> int:
    """The perturbation seed the environment asks for (0: none).

    Raises:
        PerturbationSettingError: a value that is not an integer.
    """
    raw = os.environ.get(ENV, "").strip()
    if raw in ("", "0"):
        return 0
    try:
        return int(raw)
    except ValueError:
        raise PerturbationSettingError(f"{ENV}={raw!r}: expected an integer seed (0 or empty: off)") from None


def from_environment() -> ContextManager[Any]:
    """:func:`perturbed` when ``VERIFY_FLOAT_PERTURBATION`` is set to a nonzero integer, else a no-op
    (torch is imported only in the first case)."""
    seed = seed_from_environment()
    return perturbed(seed) if seed else nullcontext()


def _exact_looking(x: Any) -> Any:
    """Elements of the floating tensor ``x`` that look exactly computed: multiples of 2^-20 (integers, short dyadic
    fractions, zeros; and every value of magnitude 2^32 or more, whose float64 spacing is already coarser), which
    every IEEE-754 machine gets exactly."""
    import torch

    scaled = x.double() * 2.0 ** 20
    return scaled == torch.round(scaled)


def _signs(x: Any, seed: int) -> Any:
    """+1 or -1 per element of the floating tensor ``x``: the last bit of its significand, flipped by an even
    ``seed``: a function of the value, as a machine's rounding is (the same computation on the same inputs rounds the
    same way twice), and as good as a coin for the last bit of an inexact result."""
    import torch

    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16}[x.element_size()]
    low = (x.view(as_int) & 1).to(x.dtype)  # the last bit of the significand
    return low * 2 - 1 if seed % 2 else 1 - low * 2


def _tail(x: Any) -> Any:
    """True for the elements of ``x`` that a vectorised kernel of :data:`WIDTH` lanes computes in its scalar tail:
    along the last dimension, index ``j >= n - n % WIDTH`` of a row of ``n``.  So the same value rounds one way in a
    row of 8 and the other in a row of 3, as float32 ``softmax`` does on an AVX2 machine (a full pass's row of 8
    keys is one vector; a prefix's row of 3 is all tail): a check comparing two computations of one quantity at
    different lengths (a cached decode against the full pass, a prefix against the whole prompt) then sees the
    difference another CPU would show it."""
    import torch

    if x.dim() == 0:
        return torch.zeros((), dtype=torch.bool, device=x.device)
    n = x.shape[-1]
    return (torch.arange(n, device=x.device) >= n - n % WIDTH).expand(x.shape)


@contextmanager
def perturbed(seed: int = 1) -> Iterator[None]:
    """Within the block, every torch function of :data:`PERTURBED` returns its floating result moved by
    :data:`UNITS` units of roundoff, elementwise, up or down by :func:`_signs` of the value and ``seed``
    (flipped in a row's vector tail, :func:`_tail`; exact-looking elements unchanged; in-place variants, views and
    integer results untouched)."""
    import torch
    from torch.overrides import TorchFunctionMode

    def nudge(out: Any) -> Any:
        if isinstance(out, (tuple, list)):
            return type(out)(nudge(o) for o in out)
        if not isinstance(out, torch.Tensor) or not out.is_floating_point() or out.numel() == 0:
            return out
        eps = torch.finfo(out.dtype).eps * UNITS
        signs = _signs(out.detach(), seed)
        signs = torch.where(_tail(out), -signs, signs)
        moved = out + out.detach().abs() * (signs * eps)
        return torch.where(_exact_looking(out.detach()), out, moved)

    class _Mode(TorchFunctionMode):
        def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            out = func(*args, **(kwargs or {}))
            return nudge(out) if getattr(func, "__name__", "") in PERTURBED else out

    with _Mode():
        yield


__all__ = ["PerturbationSettingError", "ENV", "PERTURBED", "UNITS", "WIDTH", "from_environment", "perturbed", "seed_from_environment"]
