"""The attention an implementation declares, as data, and the attention that declaration defines, computed from the
definitions (impl:reference).

A specification (:class:`AttentionSpec`) names every choice a multi-head attention layer makes: heads and key/value
heads with their grouping, head size, score scale, causal mask and sliding window, the positional scheme with its
parameters (RoPE: base, pair layout, linear scaling factor; ALiBi: Press et al.'s slopes in head order), and the
precision of the softmax.  :func:`reference` computes the attention it defines from the papers' definitions:

* scaled dot-product attention (Vaswani et al. 2017, Eq. 1): softmax(q k^T * scale + bias + mask) v;
* grouped-query attention (Ainslie et al. 2023, Sec. 2.2): query head h reads key/value head h // (H / KV)
  (``grouping="consecutive"``, the Hugging Face ``repeat_interleave`` layout) or h % KV (``"strided"``);
* RoPE (Su et al., RoFormer, arXiv 2104.09864 Eq. 34): the pair (x_a, x_b) at position m rotated by m theta_i,
  theta_i = base^(-2i/head_dim); pairs (i, i + head_dim/2) (``layout="half"``, rotate-half) or (2i, 2i + 1)
  (``"interleaved"``, the paper's own); linear scaling (Chen et al., arXiv 2306.15595) divides m by the factor;
* ALiBi (Press et al., ICLR 2022, Sec. 3): bias -m_h (t - s) with m_h Press et al.'s schedule for H heads
  (:mod:`verify.constructions.impl_alibi`; ``alibi_schedule="geometric"``: 2^(-8i/H) for every H, the power-of-two
  formula applied where it does not hold), head h taking the h-th slope (``alibi_order="reversed"``: the last);
  ``alibi_scale``: a factor on the bias (Falcon's code adds it before the score scale: 1/sqrt(head_dim));
* logit soft-capping (Gemma 2, arXiv 2408.00118 Sec. 2): the scaled scores s replaced by cap tanh(s / cap);
* the causal mask (key s <= query t) and a sliding window of w keys (t - s < w).

The same function computes in any dtype, so a same-dtype run of the reference against its float64 run measures
the rounding a correct implementation of that dtype has (the tolerance rule of flash-attention's and PyTorch's
tests).  :func:`alternatives` lists the specifications one field away, so a mismatch can be explained by the field
whose other value the implementation matches.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

POSITIONAL = ("none", "rope", "alibi")
ROPE_LAYOUTS = ("half", "interleaved")
GROUPINGS = ("consecutive", "strided")
SOFTMAX_DTYPES = ("same", "float32", "float16")
ALIBI_SCHEDULES = ("press", "geometric")
ALIBI_ORDERS = ("listed", "reversed")


class SpecError(ValueError):
    """A field of a specification is missing, of the wrong type, or contradicts another; the message is one line
    naming the field."""


@dataclass(frozen=True)
class AttentionSpec:
    """What an attention layer declares.  ``scale`` None means 1/sqrt(head_dim); ``n_kv_heads`` None means
    ``n_heads``; ``window`` None means the causal mask alone; ``softmax_dtype`` ``"float32"`` when the
    implementation computes its softmax in float32 whatever its dtype (Hugging Face's eager path); ``rope_dtype``
    ``"float32"`` when its RoPE angles, cos and sin are float32 whatever its dtype (Hugging Face's rotary modules);
    ``softcap`` the cap of Gemma 2's logit soft-capping (None: none)."""

    d_model: int
    n_heads: int
    head_dim: int
    n_kv_heads: int | None = None
    grouping: str = "consecutive"
    scale: float | None = None
    causal: bool = True
    window: int | None = None
    positional: str = "none"
    rope_base: float = 10000.0
    rope_layout: str = "half"
    rope_factor: float = 1.0
    softmax_dtype: str = "same"
    rope_dtype: str = "same"
    alibi_schedule: str = "press"
    alibi_order: str = "listed"
    alibi_scale: float = 1.0
    softcap: float | None = None

    @property
    def kv_heads(self) -> int:
        return self.n_heads if self.n_kv_heads is None else self.n_kv_heads

    @property
    def score_scale(self) -> float:
        return 1.0 / math.sqrt(self.head_dim) if self.scale is None else float(self.scale)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _field(d: Mapping[str, Any], name: str, kind: type | tuple[type, ...], default: Any = ..., positive: bool = False,
           choices: tuple[str, ...] = ()) -> Any:
    if name not in d or d[name] is None:
        if default is ...:
            raise SpecError(f"spec field {name!r} is missing")
        return default
    v = d[name]
    if isinstance(v, bool) and kind is not bool:
        raise SpecError(f"spec field {name!r} must be {getattr(kind, '__name__', kind)}, got bool")
    if kind is float and isinstance(v, int):
        v = float(v)
    if not isinstance(v, kind):
        raise SpecError(f"spec field {name!r} must be {getattr(kind, '__name__', 'a number')}, got {type(v).__name__}")
    if positive and not v > 0:  # type: ignore[operator]
        raise SpecError(f"spec field {name!r} must be positive, got {v}")
    if choices and v not in choices:
        raise SpecError(f"spec field {name!r} must be one of {', '.join(choices)}, got {v!r}")
    return v


def from_mapping(d: Mapping[str, Any]) -> AttentionSpec:
    """A specification from a mapping (a module's ``attention_spec``, a configuration read), every field checked.

    Raises:
        SpecError: an unknown, missing, mistyped or contradictory field (kv heads not dividing heads, a window
            below 1, an odd head size under RoPE, an unknown RoPE layout).
    """
    if not isinstance(d, Mapping):
        raise SpecError(f"the spec must be a mapping of fields, got {type(d).__name__}")
    known = {f.name for f in fields(AttentionSpec)}
    unknown = sorted(set(d) - known)
    if unknown:
        raise SpecError(f"spec field {unknown[0]!r} is unknown; the fields: {', '.join(sorted(known))}")
    H = _field(d, "n_heads", int, positive=True)
    d_model = _field(d, "d_model", int, positive=True)
    hd = _field(d, "head_dim", int, d_model // H if d_model % H == 0 else ..., positive=True)
    spec = AttentionSpec(
        d_model=d_model, n_heads=H, head_dim=hd, n_kv_heads=_field(d, "n_kv_heads", int, None, positive=True),
        grouping=_field(d, "grouping", str, "consecutive", choices=GROUPINGS),
        scale=_field(d, "scale", float, None, positive=True), causal=_field(d, "causal", bool, True),
        window=_field(d, "window", int, None), positional=_field(d, "positional", str, "none", choices=POSITIONAL),
        rope_base=_field(d, "rope_base", float, 10000.0, positive=True),
        rope_layout=_field(d, "rope_layout", str, "half", choices=ROPE_LAYOUTS),
        rope_factor=_field(d, "rope_factor", float, 1.0, positive=True),
        softmax_dtype=_field(d, "softmax_dtype", str, "same", choices=SOFTMAX_DTYPES),
        rope_dtype=_field(d, "rope_dtype", str, "same", choices=SOFTMAX_DTYPES),
        alibi_schedule=_field(d, "alibi_schedule", str, "press", choices=ALIBI_SCHEDULES),
        alibi_order=_field(d, "alibi_order", str, "listed", choices=ALIBI_ORDERS),
        alibi_scale=_field(d, "alibi_scale", float, 1.0, positive=True),
        softcap=_field(d, "softcap", float, None, positive=True))
    if H % spec.kv_heads:
        raise SpecError(f"spec field 'n_kv_heads' ({spec.kv_heads}) must divide 'n_heads' ({H})")
    if spec.window is not None and spec.window < 1:
        raise SpecError(f"spec field 'window' must be >= 1 or None, got {spec.window}")
    if spec.positional == "rope" and hd % 2:
        raise SpecError(f"spec field 'head_dim' ({hd}) must be even under RoPE (pairs of dimensions)")
    return spec


def alibi_slopes(spec: AttentionSpec) -> list[float]:
    """The ALiBi slope of each head, in head order: Press et al.'s schedule (or the geometric 2^(-8i/H)), reversed
    when the spec says so."""
    import sympy as sp

    from verify.constructions.impl_alibi import floats, press_slopes

    H = spec.n_heads
    exact = press_slopes(H) if spec.alibi_schedule == "press" else [
        sp.Integer(2) ** sp.Rational(-8 * i, H) for i in range(1, H + 1)]
    return floats(exact[::-1] if spec.alibi_order == "reversed" else exact)


def rope(x: Any, positions: Any, spec: AttentionSpec) -> Any:
    """RoPE on ``x: [batch, heads, pos, head_dim]`` at ``positions: [batch, pos]`` (RoFormer Eq. 34) in the spec's
    pair layout (:func:`verify.constructions.rope.rotate`), in x's dtype with angles from float64 (from float32 when
    the spec declares ``rope_dtype`` float32)."""
    import torch

    from verify.constructions.rope import inverse_frequencies, rotate

    work = {"float32": torch.float32, "float16": torch.float16}.get(spec.rope_dtype, torch.float64)
    return rotate(x, positions.to(torch.float64) / spec.rope_factor, inverse_frequencies(spec.rope_base, spec.head_dim),
                  spec.rope_layout, angle_dtype=work)


def reference(spec: AttentionSpec, q: Any, k: Any, v: Any, q_pos: Any, k_pos: Any, key_mask: Any = None) -> Any:
    """The attention ``spec`` defines, in the inputs' dtype: ``q: [batch, n_heads, T, head_dim]``, ``k, v:
    [batch, kv_heads, S, head_dim]`` (before RoPE), ``q_pos: [batch, T]``, ``k_pos: [batch, S]`` absolute positions,
    ``key_mask: [batch, S]`` (True: a real key; None: all).  Returns ``[batch, n_heads, T, head_dim]``; a query
    that sees no key gets zeros."""
    import torch

    H, KV = spec.n_heads, spec.kv_heads
    if spec.positional == "rope":
        q, k = rope(q, q_pos, spec), rope(k, k_pos, spec)
    idx = (torch.arange(H) // (H // KV)) if spec.grouping == "consecutive" else (torch.arange(H) % KV)
    k, v = k[:, idx], v[:, idx]
    scores = (q @ k.transpose(-1, -2)) * spec.score_scale
    if spec.softcap is not None:
        scores = spec.softcap * torch.tanh(scores / spec.softcap)
    dist = (q_pos[:, None, :, None] - k_pos[:, None, None, :])  # [batch, 1, T, S]: t - s
    if spec.positional == "alibi":
        m = torch.tensor(alibi_slopes(spec), dtype=scores.dtype)[None, :, None, None]
        scores = scores - (m * spec.alibi_scale) * dist.to(scores.dtype)
    ok = torch.ones_like(dist, dtype=torch.bool)
    if spec.causal:
        ok &= dist >= 0
    if spec.window is not None:
        ok &= dist < spec.window
    if key_mask is not None:
        ok &= key_mask[:, None, None, :].to(torch.bool)
    work = {"float32": torch.float32, "float16": torch.float16}.get(spec.softmax_dtype, scores.dtype)
    w = torch.softmax(scores.to(work).masked_fill(~ok, float("-inf")), -1).nan_to_num(0.0).to(v.dtype)
    return w @ v


#: the alternative values tried, per field, when an implementation departs from its specification
ALTERNATIVES: dict[str, tuple[Any, ...]] = {
    "scale": ("1/sqrt(head_dim)", "1/head_dim", "1"),
    "grouping": GROUPINGS,
    "rope_layout": ROPE_LAYOUTS,
    "rope_base": (10000.0, 500000.0, 1000000.0, 100000.0),
    "rope_factor": (1.0, 2.0, 4.0, 8.0),
    "window": ("w + 1", "w - 1", None),
    "causal": (True, False),
    "softmax_dtype": SOFTMAX_DTYPES,
    "alibi_schedule": ALIBI_SCHEDULES,
    "alibi_order": ALIBI_ORDERS,
    "alibi_scale": ("1", "score scale", "2x", "x/2"),
    "softcap": (None,),
}


def alternatives(spec: AttentionSpec) -> list[tuple[str, str, AttentionSpec]]:
    """The specifications one field away from ``spec``: ``(field, "declared -> alternative", spec')``, for the
    fields the layer uses (RoPE fields under RoPE, the grouping with fewer key/value heads than heads, the window
    when there is one)."""
    out: list[tuple[str, str, AttentionSpec]] = []
    for name, values in ALTERNATIVES.items():
        if name.startswith("rope") and spec.positional != "rope" or name.startswith("alibi") and (
                spec.positional != "alibi"):
            continue
        if name == "grouping" and spec.kv_heads in (1, spec.n_heads):
            continue
        for val in values:
            if name == "scale":
                hd = spec.head_dim
                sc, text = {"1/sqrt(head_dim)": (1.0 / math.sqrt(hd), f"1/sqrt({hd})"),
                            "1/head_dim": (1.0 / hd, f"1/{hd}"), "1": (1.0, "1")}[str(val)]
                if math.isclose(sc, spec.score_scale):
                    continue
                declared = f"1/sqrt({hd})" if spec.scale is None else f"{spec.scale:g}"
                alt, shown = replace(spec, scale=sc), f"{declared} -> {text}"
            elif name == "alibi_scale":
                was = spec.alibi_scale
                factor = {"1": 1.0, "score scale": spec.score_scale, "2x": 2 * was, "x/2": was / 2}[str(val)]
                if math.isclose(factor, was):
                    continue
                alt, shown = replace(spec, alibi_scale=factor), f"{was:g} -> {factor:g}"
            elif name == "window":
                if spec.window is None and val is not None:
                    continue
                w = spec.window
                new = None if val is None else (w + 1 if val == "w + 1" else w - 1) if w is not None else None
                if new == w or (new is not None and new < 1):
                    continue
                alt, shown = replace(spec, window=new), f"{w} -> {new}"
            else:
                if getattr(spec, name) == val:
                    continue
                alt = replace(spec, **{name: val})
                if name == "alibi_schedule" and alibi_slopes(alt) == alibi_slopes(spec):
                    continue  # a power-of-two head count: the two schedules agree
                alt, shown = replace(spec, **{name: val}), f"{getattr(spec, name)} -> {val}"
            out.append((name, shown, alt))
    return out


__all__ = ["AttentionSpec", "SpecError", "from_mapping", "rope", "reference", "alternatives", "alibi_slopes",
           "ALTERNATIVES", "POSITIONAL", "ROPE_LAYOUTS", "GROUPINGS", "SOFTMAX_DTYPES", "ALIBI_SCHEDULES",
           "ALIBI_ORDERS"]
