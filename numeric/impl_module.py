"""The impl claims on the user's own attention module: ``--model module:PKG.MOD:FACTORY`` (docs/impl-module.md).

The protocol (one attention layer, no tokenizer, no configuration):

* ``FACTORY(seed: int, dtype: torch.dtype) -> module``: the same seed gives the same weights (rounded to ``dtype``);
* ``module.d_model: int``, ``module.n_heads: int``, optionally ``module.window: int | None`` (a sliding window of
  that many keys, the query's own included; absent or None: the causal mask alone);
* ``module(x, cache=None, positions=None) -> (out, cache)`` with ``x: Tensor[batch, pos, d_model]`` in ``dtype``,
  ``out: Tensor[batch, pos, d_model]``; ``cache=None`` is a cache-free pass from position 0 that also returns the
  cache of its keys, and a cache passed back continues it; ``positions: LongTensor[batch, pos]`` are the inputs'
  absolute positions (None: the cache's length onwards);
* for impl:padding also ``mask: BoolTensor[batch, keys]`` (keys: every slot so far, cached and new; True: a real
  input, False: padding, never attended).

The user's code runs as ``--pe MODULE:CALLABLE``'s does (:func:`verify.constructions.features.load_callable`): the
current directory first on the import path, its prints sent to stderr, its exits and exceptions made one-line
refusals, all of it (import, factory, every call) under one time limit per check, :data:`USER_TIMEOUT_S`.
Inputs are standard normal vectors drawn from ``torch.Generator().manual_seed(seed)``.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from verify.constructions import features as F
from verify.evidence import Evidence, engine_versions
from verify.numeric import impl as num

PREFIX = "module:"
#: seconds (wall clock) for all the user's code of one check: the import, the factory and every call
USER_TIMEOUT_S = F.USER_TIMEOUT_S
DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
#: what a refusal points to
DOC = " (docs/impl-module.md)"
#: impl:window's input scales: a key is seen when replacing its input moves the output at either
WINDOW_SCALES = (1.0, 0.125)
#: positions of the protocol probe the validator runs (a cache-free pass, then one position through its cache)
PROBE = 3


class Guard:
    """One time limit over the user's code of one check; each call runs under
    :func:`verify.constructions.features._guarded` (prints to stderr, exits and exceptions as one-line
    :class:`~verify.constructions.features.FeatureError`, SIGALRM at the deadline)."""

    def __init__(self, spec: str, limit: float | None = None) -> None:
        self.spec = spec
        self.limit = USER_TIMEOUT_S if limit is None else limit
        self.deadline = time.monotonic() + self.limit

    def __call__(self, fn: Callable[[], Any], what: str) -> Any:
        return F._guarded(fn, self.spec, what, self.deadline, self.limit, "--model", DOC)


def refuse(spec: str, why: str) -> F.FeatureError:
    return F.FeatureError(f"--model {spec}: {why}{DOC}")


@dataclass
class Attn:
    """The user's module, loaded at one dtype, with the calls the checks make (float64 outputs)."""

    module: Any
    spec: str
    dtype: str
    d_model: int
    n_heads: int
    window: int | None
    takes_mask: bool
    guard: Guard

    def run(self, x: torch.Tensor, cache: Any = None, positions: torch.Tensor | None = None,
            mask: torch.Tensor | None = None) -> tuple[torch.Tensor, Any]:
        """One call of the module on ``x`` (float64 ``[batch, pos, d_model]``, cast to the module's dtype);
        returns its output in float64 and its cache."""
        kw: dict[str, Any] = {"cache": cache, "positions": positions}
        if mask is not None:
            kw["mask"] = mask
        xin = x.to(DTYPES[self.dtype])

        def call() -> Any:
            with torch.no_grad():
                return self.module(xin, **kw)

        res = self.guard(call, "attention module's call")
        if not isinstance(res, (tuple, list)) or len(res) != 2:
            raise refuse(self.spec, f"the module must return (out, cache), got {type(res).__name__}")
        out, new = res
        want = (x.shape[0], x.shape[1], self.d_model)
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != want:
            got = list(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            raise refuse(self.spec, f"the module's out must be a tensor of shape {list(want)}, got {got}")
        out = out.detach().to(torch.float64)
        if not bool(torch.isfinite(out).all()):
            raise refuse(self.spec, f"the module returned a non-finite output for {x.shape[1]} positions")
        return out, new

    def full(self, x: torch.Tensor) -> torch.Tensor:
        """The cache-free pass (float64 ``[batch, pos, d_model]``)."""
        return self.run(x)[0]

    def decode(self, x: torch.Tensor, split: int) -> torch.Tensor:
        """A call on the first ``split`` positions, then one call per position through the module's cache."""
        out, cache = self.run(x[:, :split])
        outs = [out]
        for t in range(split, x.shape[1]):
            o, cache = self.run(x[:, t:t + 1], cache)
            outs.append(o)
        return torch.cat(outs, 1)

    def describe(self) -> dict[str, Any]:
        return {"model": self.spec, "class": type(self.module).__name__, "dtype": self.dtype, "d_model": self.d_model,
                "heads": self.n_heads, "sliding_window": self.window}


def _int_attr(mod: Any, name: str, spec: str, optional: bool = False) -> int | None:
    v = getattr(mod, name, None)
    if v is None and optional:
        return None
    if isinstance(v, bool) or not isinstance(v, int) or v < 1:
        shown = "none" if v is None else f"{type(v).__name__} {str(v)[:20]}"
        raise refuse(spec, f"the module's {name} must be a positive int{' or None' if optional else ''}, got {shown}")
    return v


def _takes_mask(mod: Any) -> bool:
    try:
        params = inspect.signature(getattr(mod, "forward", mod)).parameters
    except (TypeError, ValueError):
        return False
    return "mask" in params or any(p.kind == p.VAR_KEYWORD for p in params.values())


def load(spec: str, seed: int, dtype: str, guard: Guard) -> Attn:
    """Import the factory ``spec`` names (``module:PKG.MOD:FACTORY``), call it with ``seed`` and ``dtype`` (under a
    forked, seeded global generator, left as it was) and check the protocol's attributes.

    Raises:
        FeatureError: an import failure, no such factory, a factory that raises or runs past the time limit,
            a missing or wrong attribute.
    """
    fn = F.load_callable(spec[len(PREFIX):], guard.deadline, guard.limit, flag="--model", label=spec, limit_hint=DOC)

    def make() -> Any:
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return fn(seed, DTYPES[dtype])

    mod = guard(make, "factory")
    d_model = _int_attr(mod, "d_model", spec)
    n_heads = _int_attr(mod, "n_heads", spec)
    window = _int_attr(mod, "window", spec, optional=True)
    if not callable(mod):
        raise refuse(spec, f"the factory must return a callable module, got {type(mod).__name__}")
    if isinstance(mod, torch.nn.Module):
        mod.eval()
    assert d_model is not None and n_heads is not None
    return Attn(mod, spec, dtype, d_model, n_heads, window, _takes_mask(mod), guard)


def inputs(seed: int, batch: int, L: int, d: int) -> torch.Tensor:
    """Standard normal inputs ``[batch, L, d]`` (float64) from ``torch.Generator().manual_seed(seed)``."""
    return torch.randn(batch, L, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def validate(spec: str, claim: str, needs_mask: bool = False) -> None:
    """Everything a check needs from the module, before any work: the import, the factory (seed 0, float64), the
    attributes, a cache-free call on :data:`PROBE` positions and one more position through its cache, and for
    impl:padding a ``mask`` argument.

    Raises:
        FeatureError: one line naming what the module lacks.
    """
    a = load(spec, 0, "float64", Guard(spec))
    x = inputs(0, 2, PROBE + 1, a.d_model)
    _, cache = a.run(x[:, :PROBE])
    if cache is None:
        raise refuse(spec, "the module's cache-free call returned cache None; it must return the cache of its keys")
    a.run(x[:, PROBE:], cache)
    if needs_mask and not a.takes_mask:
        raise refuse(spec, f"{claim} calls the module with mask=BoolTensor[batch, keys]; its forward takes no mask")


def _engines() -> dict[str, str]:
    return engine_versions("torch")


def check_decode(spec: str, dtype: str, seed: int, L: int) -> Evidence:
    """impl:decode on the module: every prefill split 1..L-1 of a batch of 2 prompts of L input vectors, then one
    position per call through the module's cache, against its float64 cache-free pass (tolerances as
    :func:`verify.numeric.impl.check_decode`)."""
    guard = Guard(spec)
    m64 = load(spec, seed, "float64", guard)
    m = m64 if dtype == "float64" else load(spec, seed, dtype, guard)
    x = inputs(seed, 2, L, m64.d_model)
    return num.decode_evidence(m64.full, m.full, m.decode, x, dtype, None, f"{spec} ({dtype})", "positions",
                               m.describe(), _engines(), seed)


def visibility(m: Attn, x: torch.Tensor, other: torch.Tensor, split: int | None) -> list[list[float]]:
    """V[t][j]: relative change of the module's output at query t when input j (<= t) is replaced by ``other[j]``;
    the inputs and their L one-position changes run as one batch, in one pass or a prefill of ``split`` then one
    position per call."""
    L = x.shape[1]
    batch = x.repeat(L + 1, 1, 1)
    for j in range(L):
        batch[j + 1, j] = other[0, j]
    out = m.full(batch) if split is None else m.decode(batch, split)
    base = out[0]
    scale = float(base.abs().max()) or 1.0
    change = (out[1:] - base[None]).abs().amax(dim=-1) / scale  # (j, t)
    return [[float(change[j, t]) if j <= t else 0.0 for j in range(L)] for t in range(L)]


def check_window(spec: str, seed: int, sizes: Callable[[int | None], tuple[int, Sequence[int]]]) -> Evidence:
    """impl:window on the module: query t sees exactly keys t - w + 1..t under its ``window`` w, else 0..t;
    measured by replacing each input vector in turn, without and with the cache.  ``sizes(w)`` gives the prompt
    length and the prefill splits for the module's window."""
    m = load(spec, seed, "float64", Guard(spec))
    L, splits = sizes(m.window)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(1, L, m.d_model, generator=g, dtype=torch.float64)
    other = torch.randn(1, L, m.d_model, generator=g, dtype=torch.float64)

    def vis_at(k: int | None) -> list[list[float]]:
        # the larger change over the input scales: a softmax saturated at one scale (an admitted key's weight
        # below rounding) is not at a smaller one, where the scores of a linear projection shrink quadratically
        per = [visibility(m, s * x, s * other, k) for s in WINDOW_SCALES]
        return [[max(v[t][j] for v in per) for j in range(L)] for t in range(L)]

    return num.window_evidence(vis_at, L, m.window, splits, f"{spec} (float64)", "positions",
                               "replacing its input vector (scales " + ", ".join(f"{s:g}" for s in WINDOW_SCALES)
                               + ") moves the module's output", m.describe(), _engines(), seed)


def check_padding(spec: str, seed: int, lengths: Sequence[int], steps: int, positions: str) -> Evidence:
    """impl:padding on the module: a left-padded batch (``mask`` marking the pads, which hold random vectors;
    ``positions`` from the mask when 'from-mask', None when 'implicit'), a cache-free call then ``steps`` positions
    one per call through the cache, gives each sequence's outputs as the sequence run alone."""
    m = load(spec, seed, "float64", Guard(spec))
    if not m.takes_mask:
        raise refuse(spec, "impl:padding calls the module with mask=BoolTensor[batch, keys]; its forward takes no mask")
    B, T = len(lengths), max(lengths)
    g = torch.Generator().manual_seed(seed)
    xs = torch.randn(B, T + steps, m.d_model, generator=g, dtype=torch.float64)
    x = torch.randn(B, T, m.d_model, generator=g, dtype=torch.float64)  # the pads' contents
    mask = torch.zeros(B, T, dtype=torch.bool)
    for i, n in enumerate(lengths):
        x[i, T - n:] = xs[i, :n]
        mask[i, T - n:] = True

    def pos(msk: torch.Tensor, last: int | None) -> torch.Tensor | None:
        if positions != "from-mask":
            return None
        p = (msk.long().cumsum(-1) - 1).clamp(min=0)
        return p if last is None else p[:, -last:]

    out, cache = m.run(x, None, pos(mask, None), mask)
    outs = [out]
    for s in range(steps):
        nxt = torch.stack([xs[i, n + s] for i, n in enumerate(lengths)])[:, None]
        mask = torch.cat([mask, torch.ones(B, 1, dtype=torch.bool)], 1)
        out, cache = m.run(nxt, cache, pos(mask, 1), mask)
        outs.append(out)
    got = torch.cat(outs, 1)
    return num.padding_evidence(got, lambda i, n: m.full(xs[i:i + 1, :n + steps]), lengths, steps, positions,
                                f"{spec} (float64)", m.describe(), _engines(), seed, quantity="output")
