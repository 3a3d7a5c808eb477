"""impl:reference's numeric layer: an attention implementation against the attention its declared specification
defines (:mod:`verify.constructions.attention_spec`), computed from the definitions, on every batch entry and
position of one cache-free pass.

Tolerance, stated in every result (the rule of flash-attention's and PyTorch's SDPA tests):

* float64: relative deviation <= C64 x u x (head_dim + keys), u the unit roundoff of the softmax's precision
  (2^-53, or 2^-24 when the specification declares a float32 softmax), the length of the two sums each output
  entry is made of;
* another dtype: <= LOW_FACTOR x the deviation of the same-dtype reference (the module's own rounded weights and
  inputs, the reference computed in that dtype) from the float64 reference.

A deviation above FAIL_FACTOR x the tolerance FAILS, with a witness naming the batch entry and position of the
largest deviation and, when one exists, the specification field whose other value the implementation matches
(:func:`verify.constructions.attention_spec.alternatives`).
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from verify.constructions import attention_spec as S
from verify.evidence import Evidence, Layer, Outcome, engine_versions
from verify.numeric import impl as num
from verify.numeric import impl_module as im

#: the float64 tolerance's constant: C64 x u x (head_dim + keys)
C64 = 32
U = {"float64": 2.0 ** -53, "float32": 2.0 ** -24, "float16": 2.0 ** -11}
#: an alternative specification explains a mismatch when the implementation matches it within this many tolerances
EXPLAINS = 10


def projections(mod: Any, spec: str, s: S.AttentionSpec) -> dict[str, torch.Tensor]:
    """The module's ``projections()``: W_q [n_heads * head_dim, d_model], W_k and W_v [kv_heads * head_dim, d_model],
    W_o [d_model, n_heads * head_dim] (``y = x W^T``, nn.Linear's convention), optional biases b_q, b_k, b_v, b_o;
    float64, shapes checked against the specification.

    Raises:
        FeatureError: no projections(), or a missing or misshapen matrix.
    """
    fn = getattr(mod.module, "projections", None)
    if not callable(fn):
        raise im.refuse(spec, "impl:reference needs the module's projections() (W_q, W_k, W_v, W_o)")
    got = mod.guard(fn, "projections()")
    if not isinstance(got, Mapping):
        raise im.refuse(spec, f"projections() must return a mapping of tensors, got {type(got).__name__}")
    H, KV, hd, d = s.n_heads, s.kv_heads, s.head_dim, s.d_model
    want = {"W_q": (H * hd, d), "W_k": (KV * hd, d), "W_v": (KV * hd, d), "W_o": (d, H * hd)}
    out = {}
    for name, shape in want.items():
        w = got.get(name)
        if not isinstance(w, torch.Tensor) or tuple(w.shape) != shape:
            shown = list(w.shape) if isinstance(w, torch.Tensor) else type(w).__name__
            raise im.refuse(spec, f"projections()[{name!r}] must be a tensor of shape {list(shape)}, got {shown}")
        out[name] = w.detach().to(torch.float64)
    for name, n in (("b_q", H * hd), ("b_k", KV * hd), ("b_v", KV * hd), ("b_o", d)):
        b = got.get(name)
        if b is not None:
            if not isinstance(b, torch.Tensor) or tuple(b.shape) != (n,):
                raise im.refuse(spec, f"projections()[{name!r}] must be a tensor of shape [{n}] or absent")
            out[name] = b.detach().to(torch.float64)
    return out


def read_spec(mod: Any, spec: str, given: Mapping[str, Any] | None = None) -> S.AttentionSpec:
    """The specification: ``given`` (the testing API's ``spec=``) or the module's ``attention_spec`` mapping.

    Raises:
        FeatureError: none declared, or a field missing or contradictory (one line naming it).
    """
    d = given if given is not None else getattr(mod.module, "attention_spec", None)
    if d is None:
        raise im.refuse(spec, "impl:reference needs the module's attention_spec (a mapping of the fields it declares)")
    try:
        s = S.from_mapping(d)
    except S.SpecError as e:
        raise im.refuse(spec, str(e)) from None
    if s.d_model != mod.d_model:
        raise im.refuse(spec, f"spec field 'd_model' ({s.d_model}) differs from the module's d_model ({mod.d_model})")
    return s


def layer_reference(s: S.AttentionSpec, W: Mapping[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """The layer ``s`` and ``W`` define on ``x: [batch, pos, d_model]`` (a cache-free pass from position 0), in
    x's dtype: projections, the attention of :func:`~verify.constructions.attention_spec.reference`, the output
    projection.  Returns ``[batch, pos, d_model]``."""
    B, T, _ = x.shape
    H, KV, hd = s.n_heads, s.kv_heads, s.head_dim
    W = {k: v.to(x.dtype) for k, v in W.items()}

    def proj(name: str, n: int) -> torch.Tensor:
        y = x @ W[f"W_{name}"].T + (W[f"b_{name}"] if f"b_{name}" in W else 0)
        return y.view(B, T, n, hd).transpose(1, 2)

    pos = torch.arange(T).expand(B, T)
    o = S.reference(s, proj("q", H), proj("k", KV), proj("v", KV), pos, pos)
    return o.transpose(1, 2).reshape(B, T, H * hd) @ W["W_o"].T + (W["b_o"] if "b_o" in W else 0)


def _dev(a: torch.Tensor, b: torch.Tensor, scale: float) -> float:
    return float((a.to(torch.float64) - b.to(torch.float64)).abs().max()) / scale


def compare(impl: torch.Tensor, s: S.AttentionSpec, W: Mapping[str, torch.Tensor], x: torch.Tensor, dtype: str,
            W_dtype: Mapping[str, torch.Tensor] | None, label: str, describe: dict[str, Any],
            engines: dict[str, str], seed: int) -> Evidence:
    """impl:reference's comparison and report: ``impl`` (the implementation's cache-free pass, float64
    ``[batch, pos, d_model]``) against the float64 reference of ``s`` and ``W`` on ``x``; ``W_dtype``: the
    implementation's weights at ``dtype`` (the same-dtype reference's), None in float64."""
    ref = layer_reference(s, W, x)
    scale = float(ref.abs().max()) or 1.0
    dev = _dev(impl, ref, scale)
    n = s.head_dim + x.shape[1]
    if dtype == "float64":
        f32 = [w for w, v in (("softmax", s.softmax_dtype), ("RoPE angles", s.rope_dtype)) if v != "same"]
        u = max(U.get(v, U["float64"]) for v in (s.softmax_dtype, s.rope_dtype))
        tol = C64 * u * n
        why = f"the lower-precision {' and '.join(f32)} the spec declares" if f32 else "float64"
        tol_txt = (f"float64: relative deviation <= {C64} x u x (head_dim + keys) = {C64} x {u:.3g} x {n} = {tol:.2g} "
                   f"(u the unit roundoff of {why}) "
                   f"holds; > {num.FAIL_FACTOR} x that fails; between: inconclusive")
    else:
        low = getattr(torch, dtype)
        ref_low = layer_reference(s, W_dtype if W_dtype is not None else W, x.to(low))
        floor = _dev(ref_low, ref, scale)
        tol = max(num.LOW_FACTOR * floor, U["float64"] * n)
        tol_txt = (f"{dtype}: relative deviation from the float64 reference <= {num.LOW_FACTOR} x the {dtype} "
                   f"reference's own ({floor:.2g}) = {tol:.2g} holds; > {num.FAIL_FACTOR} x that fails")
    status, outcome = num._verdict(dev, tol)
    diff = (impl - ref).abs().amax(-1)  # [batch, pos]
    b, t = divmod(int(diff.argmax()), diff.shape[1])
    numbers = {**describe, "spec": s.to_dict(), "L": x.shape[1], "batch": x.shape[0], "dtype": dtype,
               "max_deviation": num._calibrated_record(dev) if dtype == "float64" and dev <= tol else dev,
               "tolerance": tol, "relative_to": f"max |reference| = {scale:.4g}"}
    head = (f"{label}: cache-free pass against the attention its spec defines ({_spec_line(s)}), batch "
            f"{x.shape[0]}, {x.shape[1]} positions, {dtype}: max |impl - reference| / max |reference| "
            f"{num._noise(dev, tol)} (tolerance {tol:.2g})")
    witness = None
    if outcome == Outcome.FAILS:
        witness = {"batch": b, "position": t, "deviation": dev, "tolerance": tol, "dtype": dtype}
        best = None
        for field, shown, alt in S.alternatives(s):
            d_alt = _dev(impl, layer_reference(alt, W, x), scale)
            if best is None or d_alt < best[0]:
                best = (d_alt, field, shown)
        if best is not None and best[0] <= EXPLAINS * tol:
            witness.update(explained_by=best[1], change=best[2], deviation_then=best[0])
            head += f"; batch {b}, position {t}; explained by {best[1]} ({best[2]}: deviation then {best[0]:.2g})"
        else:
            head += f"; batch {b}, position {t}; no single spec field explains it"
    return Evidence(Layer.NUMERIC, status, outcome, summary=head, numbers=numbers, witness=witness, tolerance=tol_txt,
                    engines=engines, seed=seed)


def _spec_line(s: S.AttentionSpec) -> str:
    parts = [f"{s.n_heads} heads", f"{s.kv_heads} kv heads ({s.grouping})" if s.kv_heads != s.n_heads else "",
             f"head_dim {s.head_dim}", "scale 1/sqrt(head_dim)" if s.scale is None else f"scale {s.scale:g}",
             "causal" if s.causal else "not causal", f"window {s.window}" if s.window else "",
             (f"RoPE base {s.rope_base:g} {s.rope_layout}" + (f" factor {s.rope_factor:g}" if s.rope_factor != 1 else ""))
             if s.positional == "rope" else s.positional if s.positional != "none" else "",
             f"{s.softmax_dtype} softmax" if s.softmax_dtype != "same" else "",
             f"{s.rope_dtype} RoPE angles" if s.rope_dtype != "same" else ""]
    return ", ".join(p for p in parts if p)


def check_module(spec: str, dtype: str, seed: int, L: int, given: Mapping[str, Any] | None = None) -> Evidence:
    """impl:reference on the user's module: its cache-free pass on a batch of 2 standard normal inputs of L
    positions against the attention its ``attention_spec`` and ``projections()`` define."""
    guard = im.Guard(spec)
    m64 = im.load(spec, seed, "float64", guard)
    s = read_spec(m64, spec, given)
    W = projections(m64, spec, s)
    m = m64 if dtype == "float64" else im.load(spec, seed, dtype, guard)
    W_low = None if dtype == "float64" else {k: v.to(getattr(torch, dtype)) for k, v in projections(m, spec, s).items()}
    x = im.inputs(seed, 2, L, m64.d_model)
    if dtype != "float64":
        x = x.to(getattr(torch, dtype)).to(torch.float64)  # the module sees x rounded to its dtype; so does the reference
    impl = m.full(x)
    return compare(impl, s, W, x, dtype, W_low, spec, m.describe(), engine_versions("torch"), seed)


def validate(spec: str, given: Mapping[str, Any] | None = None) -> None:
    """impl:reference's refusals before any work: the module protocol (:func:`verify.numeric.impl_module.validate`),
    then the declared specification and the projections' shapes.

    Raises:
        FeatureError: one line naming the field or the matrix.
    """
    im.validate(spec, "impl:reference")
    m = im.load(spec, 0, "float64", im.Guard(spec))
    projections(m, spec, read_spec(m, spec, given))


__all__ = ["check_module", "compare", "layer_reference", "projections", "read_spec", "validate", "C64", "EXPLAINS"]


# ------------------------------------------------------------------ Hugging Face models (the Llama family)

#: the families whose layer-0 attention impl:reference reads (q_proj, k_proj, v_proj, o_proj; rotate-half RoPE)
HF_READ = ("llama", "mistral", "qwen2")


def hf_spec(b: Any, attn: str) -> S.AttentionSpec:
    """The specification a tiny model's configuration declares for its layer-0 attention (heads, key/value heads,
    head size, 1/sqrt(head_dim), causal, the sliding window where the family applies one, RoPE with the configured
    base in the rotate-half layout of the family's modeling file, its angles in float32 as the rotary module
    computes them; the eager path's softmax in float32, as its modeling file computes it)."""
    from verify import hfcompat

    cfg = b.config
    H = int(cfg.num_attention_heads)
    hd = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // H)
    window = getattr(cfg, "sliding_window", None) if cfg.model_type == "mistral" or getattr(
        cfg, "use_sliding_window", False) else None
    return S.from_mapping({"d_model": int(cfg.hidden_size), "n_heads": H, "head_dim": hd,
                           "n_kv_heads": int(getattr(cfg, "num_key_value_heads", None) or H),
                           "window": int(window) if window else None, "positional": "rope",
                           "rope_base": float(hfcompat.rope_theta(cfg)), "rope_layout": "half",
                           "softmax_dtype": "float32" if attn == "eager" else "same", "rope_dtype": "float32"})


def hf_weights(att: Any) -> dict[str, torch.Tensor]:
    out = {f"W_{n}": getattr(att, f"{n}_proj").weight.detach().to(torch.float64) for n in "qkvo"}
    for n in "qkvo":
        bias = getattr(att, f"{n}_proj").bias
        if bias is not None:
            out[f"b_{n}"] = bias.detach().to(torch.float64)
    return out


def _layer0_io(b: Any, ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Layer 0's attention input (hidden states after the input norm) and output, from one cache-free pass."""
    from verify.numeric import impl_models as hf

    att = hf.first_attention(b.model)
    seen: dict[str, torch.Tensor] = {}

    def pre(_m: Any, args: Any, kwargs: Any) -> None:
        seen["x"] = (kwargs.get("hidden_states") if "hidden_states" in kwargs else args[0]).detach()

    def post(_m: Any, _a: Any, _k: Any, out: Any) -> None:
        seen["out"] = (out[0] if isinstance(out, tuple) else out).detach()

    h1 = att.register_forward_pre_hook(pre, with_kwargs=True)
    h2 = att.register_forward_hook(post, with_kwargs=True)
    try:
        hf.full(b, ids)
    finally:
        h1.remove()
        h2.remove()
    return seen["x"], seen["out"]


def check_hf(spec: str, attn: str, dtype: str, seed: int, L: int, window: int | None) -> Evidence:
    """impl:reference on a tiny Hugging Face model: layer 0's attention output in one cache-free pass against the
    attention its configuration defines, on the attention's own input (the hidden states after the input norm)."""
    from verify.numeric import impl_models as hf

    b64 = hf.build(spec, attn=attn, seed=seed, window=window)
    s = hf_spec(b64, attn)
    W = hf_weights(hf.first_attention(b64.model))
    b = b64 if dtype == "float64" else hf.cast(b64, dtype)
    ids = hf.tokens(L, b.vocab, seed, batch=2)
    x, out = _layer0_io(b, ids)
    W_low = None if dtype == "float64" else {k: v.to(getattr(torch, dtype)) for k, v in
                                             hf_weights(hf.first_attention(b.model)).items()}
    return compare(out.to(torch.float64), s, W, x.to(torch.float64), dtype, W_low, f"{spec} ({attn}; {num._lib()})",
                   b.describe(), num._engines(), seed)
