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
#: the sequence lengths of a padded batch (--padding left|right), as fractions of L: lengths L and L // 2
PAD_FRACTIONS = (1.0, 0.5)
PADDINGS = ("none", "left", "right")


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


def layer_reference(s: S.AttentionSpec, W: Mapping[str, torch.Tensor], x: torch.Tensor,
                    mask: torch.Tensor | None = None, heads: bool = False) -> Any:
    """The layer ``s`` and ``W`` define on ``x: [batch, pos, d_model]`` (a cache-free pass), in x's dtype:
    projections, the attention of :func:`~verify.constructions.attention_spec.reference`, the output projection.
    ``mask: [batch, pos]`` (True: a real input) makes the pads keys no query sees and numbers the real inputs
    0, 1, ... (the mask's cumulative sum minus 1, as ``generate()`` derives position_ids); None: every slot real,
    positions 0..pos-1.  Returns ``[batch, pos, d_model]``; with ``heads``, also each head's attention output
    ``[batch, n_heads, pos, head_dim]`` (before W_o)."""
    B, T, _ = x.shape
    H, KV, hd = s.n_heads, s.kv_heads, s.head_dim
    W = {k: v.to(x.dtype) for k, v in W.items()}

    def proj(name: str, n: int) -> torch.Tensor:
        y = x @ W[f"W_{name}"].T + (W[f"b_{name}"] if f"b_{name}" in W else 0)
        return y.view(B, T, n, hd).transpose(1, 2)

    pos = torch.arange(T).expand(B, T) if mask is None else (mask.long().cumsum(-1) - 1).clamp(min=0)
    o = S.reference(s, proj("q", H), proj("k", KV), proj("v", KV), pos, pos, mask)
    out = o.transpose(1, 2).reshape(B, T, H * hd) @ W["W_o"].T + (W["b_o"] if "b_o" in W else 0)
    return (out, o) if heads else out


def heads_recoverable(Wo: torch.Tensor) -> bool:
    """Whether W_o ``[d_model, n_heads * head_dim]`` has full column rank, exactly (python-flint's ``fmpq_mat.rank``
    on the float64 entries as the rationals they are; a few milliseconds at d_model 64): then each head's output is
    the one solution of ``concat_h(o_h) W_o^T = out - b_o``."""
    import flint

    n, k = Wo.shape
    vals = [flint.fmpq(*float(v).as_integer_ratio()) for v in Wo.flatten().tolist()]
    return k <= n and int(flint.fmpq_mat(n, k, vals).rank()) == k


def head_of(impl: torch.Tensor, heads_ref: torch.Tensor, W: Mapping[str, torch.Tensor], b: int,
            t: int) -> tuple[int, float] | None:
    """The head whose attention output departs most at batch entry b, position t, and its share of the
    deviation (its largest entry over the sum of every head's): the implementation's per-head outputs solved from
    its layer output through W_o (``impl - b_o = concat_h(o_h) W_o^T``).  None when W_o's columns are dependent
    (:func:`heads_recoverable`): the heads cannot then be told apart from the output alone."""
    Wo = W["W_o"]
    if not heads_recoverable(Wo):
        return None
    y = impl[b, t].to(torch.float64) - (W["b_o"] if "b_o" in W else 0)
    o = torch.linalg.lstsq(Wo, y[:, None]).solution[:, 0]  # [n_heads * head_dim]
    H, hd = heads_ref.shape[1], heads_ref.shape[3]
    per = (o.view(H, hd) - heads_ref[b, :, t]).abs().nan_to_num(nan=float("inf")).amax(-1)
    h = int(per.argmax())
    total = float(per.sum())
    return h, float(per[h]) / total if 0 < total < float("inf") else 1.0


def padded(lengths: tuple[int, ...], T: int, side: str) -> torch.Tensor:
    """The attention mask ``[batch, T]`` of sequences of ``lengths`` padded to T on ``side`` (left or right)."""
    m = torch.zeros(len(lengths), T, dtype=torch.bool)
    for i, n in enumerate(lengths):
        if side == "left":
            m[i, T - n:] = True
        else:
            m[i, :n] = True
    return m


def _dev(a: torch.Tensor, b: torch.Tensor, scale: float, mask: torch.Tensor | None = None) -> float:
    """max |a - b| / scale over the real query rows (all rows when ``mask`` is None)."""
    d = _row_dev(a, b, mask)
    return float(d.max()) / scale


def _row_dev(a: torch.Tensor, b: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """|a - b| per entry, a non-finite value counted infinite, the pads' own rows (whose queries see no key, and
    whose output no contract fixes) set to 0."""
    d = (a.to(torch.float64) - b.to(torch.float64)).abs().nan_to_num(nan=float("inf"))
    return d if mask is None else torch.where(mask[..., None], d, torch.zeros((), dtype=d.dtype))


def compare(impl: torch.Tensor, s: S.AttentionSpec, W: Mapping[str, torch.Tensor], x: torch.Tensor, dtype: str,
            W_dtype: Mapping[str, torch.Tensor] | None, label: str, describe: dict[str, Any],
            engines: dict[str, str], seed: int, mask: torch.Tensor | None = None, padding: str = "none",
            residual: torch.Tensor | None = None) -> Evidence:
    """impl:reference's comparison and report: ``impl`` (the implementation's cache-free pass, float64
    ``[batch, pos, d_model]``) against the float64 reference of ``s`` and ``W`` on ``x``; ``W_dtype``: the
    implementation's weights at ``dtype`` (the same-dtype reference's), None in float64; ``mask``: the padded
    batch's attention mask (pads are keys no query sees, and their own output rows are not compared)."""
    ref, ref_heads = layer_reference(s, W, x, mask, heads=True)
    scale = float(ref.abs().max()) or 1.0
    dev = _dev(impl, ref, scale, mask)
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
        ref_low = layer_reference(s, W_dtype if W_dtype is not None else W, x.to(low), mask)
        if residual is not None:  # the module adds it in its dtype (BLOOM): that rounding is the dtype's too
            r64 = residual.to(torch.float64)
            ref_low = (ref_low + residual.to(low)).to(torch.float64) - r64
        floor = _dev(ref_low, ref, scale, mask)
        tol = max(num.LOW_FACTOR * floor, U["float64"] * n)
        tol_txt = (f"{dtype}: relative deviation from the float64 reference <= {num.LOW_FACTOR} x the {dtype} "
                   f"reference's own ({floor:.2g}"
                   f"{', the residual the module adds in its dtype included' if residual is not None else ''}) = "
                   f"{tol:.2g} holds; > {num.FAIL_FACTOR} x that fails")
    status, outcome = num._verdict(dev, tol)
    diff = _row_dev(impl, ref, mask).amax(-1)  # [batch, pos]
    b, t = divmod(int(diff.argmax()), diff.shape[1])
    numbers = {**describe, "spec": s.to_dict(), "L": x.shape[1], "batch": x.shape[0], "dtype": dtype,
               "padding": padding, "lengths": [x.shape[1]] * x.shape[0] if mask is None else mask.sum(-1).tolist(),
               "max_deviation": f"<= {tol:.2g}" if dev <= tol else dev,
               "tolerance": tol, "relative_to": f"max |reference| = {scale:.4g}"}
    shown = f"<= {tol:.2g}" if dev <= tol else num._noise(dev, tol)  # within it, the digits follow the CPU
    head = (f"{label}: cache-free pass against the attention its spec defines ({_spec_line(s)}), batch "
            f"{x.shape[0]}, {x.shape[1]} positions{_padding_line(mask, padding)}, {dtype}: max |impl - reference| / "
            f"max |reference| "
            f"{shown} (tolerance {tol:.2g})")
    witness = None
    if outcome == Outcome.FAILS:
        witness = {"batch": b, "position": t, "deviation": dev, "tolerance": tol, "dtype": dtype, "padding": padding}
        where = f"batch {b}, position {t}"
        found = head_of(impl, ref_heads, W, b, t)
        if found is not None:
            witness.update(head=found[0], head_share=round(found[1], 3))
            where += f", head {found[0]} ({found[1]:.0%} of the per-head deviation)"
        best = None
        for field, shown, alt in S.alternatives(s):
            d_alt = _dev(impl, layer_reference(alt, W, x, mask), scale, mask)
            if best is None or d_alt < best[0]:
                best = (d_alt, field, shown)
        if best is not None and best[0] <= EXPLAINS * tol:
            witness.update(explained_by=best[1], change=best[2], deviation_then=best[0])
            head += f"; {where}; explained by {best[1]} ({best[2]}: deviation then {best[0]:.2g})"
        else:
            head += f"; {where}; no single spec field explains it"
    return Evidence(Layer.NUMERIC, status, outcome, summary=head, numbers=numbers, witness=witness, tolerance=tol_txt,
                    engines=engines, seed=seed)


def _padding_line(mask: torch.Tensor | None, padding: str) -> str:
    if mask is None:
        return ""
    return f" ({padding}-padded, lengths {mask.sum(-1).tolist()}, position_ids from the mask)"


def _spec_line(s: S.AttentionSpec) -> str:
    parts = [f"{s.n_heads} heads", f"{s.kv_heads} kv heads ({s.grouping})" if s.kv_heads != s.n_heads else "",
             f"head_dim {s.head_dim}", "scale 1/sqrt(head_dim)" if s.scale is None else f"scale {s.scale:g}",
             "causal" if s.causal else "not causal", f"window {s.window}" if s.window else "",
             (f"RoPE base {s.rope_base:g} {s.rope_layout}" + (f" factor {s.rope_factor:g}" if s.rope_factor != 1 else ""))
             if s.positional == "rope" else s.positional if s.positional != "none" else "",
             f"softcap {s.softcap:g}" if s.softcap is not None else "",
             ", ".join(p for p in ("geometric slopes" if s.alibi_schedule != "press" else "",
                                   "slopes reversed" if s.alibi_order != "listed" else "",
                                   f"bias x {s.alibi_scale:g}" if s.alibi_scale != 1 else "") if p) if s.positional == "alibi" else "",
             f"{s.softmax_dtype} softmax" if s.softmax_dtype != "same" else "",
             f"{s.rope_dtype} RoPE angles" if s.rope_dtype != "same" else ""]
    return ", ".join(p for p in parts if p)


def check_module(spec: str, dtype: str, seed: int, L: int, given: Mapping[str, Any] | None = None,
                 padding: str = "none") -> Evidence:
    """impl:reference on the user's module ``spec`` names (:func:`module_evidence` on its float64 build and its
    ``dtype`` build from the same seed)."""
    guard = im.Guard(spec)
    m64 = im.load(spec, seed, "float64", guard)
    m = m64 if dtype == "float64" else im.load(spec, seed, dtype, guard)
    return module_evidence(m64, m, spec, dtype, seed, L, given, padding)


def _at(W: Mapping[str, torch.Tensor], dtype: str) -> dict[str, torch.Tensor]:
    """The weights rounded to ``dtype`` (the same-dtype reference's)."""
    return {k: v.to(getattr(torch, dtype)) for k, v in W.items()}


def _pad_mask(L: int, padding: str) -> torch.Tensor | None:
    return None if padding == "none" else padded(tuple(max(1, int(f * L)) for f in PAD_FRACTIONS), L, padding)


def module_evidence(m64: Any, m: Any, label: str, dtype: str, seed: int, L: int,
                    given: Mapping[str, Any] | None = None, padding: str = "none",
                    weights: Mapping[str, torch.Tensor] | None = None) -> Evidence:
    """impl:reference on a loaded module (:class:`verify.numeric.impl_module.Attn`): ``m``'s cache-free pass on a
    batch of 2 standard normal inputs of L positions against the attention its ``attention_spec`` (or ``given``)
    and ``m64``'s ``projections()`` (or ``weights``) define; ``padding`` left or right: lengths L and L // 2 padded
    on that side, passed as ``mask`` with ``positions`` from the mask (the protocol of impl:padding)."""
    s = read_spec(m64, label, given)
    W = dict(weights) if weights is not None else projections(m64, label, s)
    W_low = None if dtype == "float64" else _at(projections(m, label, s), dtype)
    x = im.inputs(seed, 2, L, s.d_model)
    if dtype != "float64":
        x = x.to(getattr(torch, dtype)).to(torch.float64)  # the module sees x rounded to its dtype; so does the reference
    mask = _pad_mask(L, padding)
    if mask is None:
        impl = m.full(x)
    else:
        if not m.takes_mask:
            raise im.refuse(label, "--padding calls the module with mask=BoolTensor[batch, keys]; its forward takes no mask")
        impl = m.run(x, positions=(mask.long().cumsum(-1) - 1).clamp(min=0), mask=mask)[0]
    return compare(impl, s, W, x, dtype, W_low, label, m.describe(), engine_versions("torch"), seed, mask, padding)


def validate(spec: str, given: Mapping[str, Any] | None = None) -> None:
    """impl:reference's refusals before any work: the module protocol (:func:`verify.numeric.impl_module.validate`),
    then the declared specification and the projections' shapes.

    Raises:
        FeatureError: one line naming the field or the matrix.
    """
    im.validate(spec, "impl:reference")
    m = im.load(spec, 0, "float64", im.Guard(spec))
    projections(m, spec, read_spec(m, spec, given))




# ------------------------------------------------------------------ Hugging Face models (the Llama family)

#: the families whose layer-0 attention impl:reference reads, and where its weights are
HF_READ = ("llama", "mistral", "qwen2", "gemma2", "gpt2", "bloom", "falcon", "mpt")


def hf_spec(b: Any, attn: str) -> S.AttentionSpec:
    """The specification a tiny model's configuration declares for its layer-0 attention, with what the family's
    modeling file fixes in code: the Llama family (llama, mistral, qwen2): key/value heads, 1/sqrt(head_dim), the
    sliding window where the family applies one, RoPE with the configured base in the rotate-half layout with
    float32 angles, and in the eager path a float32 softmax; GPT-2: no positional term in the attention (learned
    positions are added to the input), 1/sqrt(head_dim), the softmax in the model's dtype; BLOOM and MPT: ALiBi
    with Press et al.'s slopes, 1/sqrt(head_dim), a float32 softmax; Gemma 2: the Llama family's RoPE with the
    scale query_pre_attn_scalar^(-1/2), the logit soft-cap attn_logit_softcapping and, layer 0 being a sliding
    layer, its window; Falcon: its fused query_key_value (one key/value head with multi_query, groups with
    new_decoder_architecture), then ALiBi added before the score scale (so scaled by it, as Falcon's code does) when
    the configuration sets alibi, else rotate-half RoPE with float32 angles; the softmax in the model's dtype.

    Raises:
        ValueError: a family impl:reference does not read.
    """
    from verify import hfcompat

    cfg = b.config
    mt = cfg.model_type
    if mt in ("llama", "mistral", "qwen2"):
        H = int(cfg.num_attention_heads)
        hd = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // H)
        window = getattr(cfg, "sliding_window", None) if mt == "mistral" or getattr(
            cfg, "use_sliding_window", False) else None
        return S.from_mapping({"d_model": int(cfg.hidden_size), "n_heads": H, "head_dim": hd,
                               "n_kv_heads": int(getattr(cfg, "num_key_value_heads", None) or H),
                               "window": int(window) if window else None, "positional": "rope",
                               "rope_base": float(hfcompat.rope_theta(cfg)), "rope_layout": "half",
                               "softmax_dtype": "float32" if attn == "eager" else "same", "rope_dtype": "float32"})
    if mt == "gemma2":
        H = int(cfg.num_attention_heads)
        layer0 = (getattr(cfg, "layer_types", None) or ["sliding_attention"])[0]  # 4.x: even layers slide
        cap = getattr(cfg, "attn_logit_softcapping", None)
        return S.from_mapping({"d_model": int(cfg.hidden_size), "n_heads": H, "head_dim": int(cfg.head_dim),
                               "n_kv_heads": int(cfg.num_key_value_heads),
                               "scale": float(cfg.query_pre_attn_scalar) ** -0.5, "softcap": cap and float(cap),
                               "window": int(cfg.sliding_window) if layer0 == "sliding_attention" else None,
                               "positional": "rope", "rope_base": float(hfcompat.rope_theta(cfg)),
                               "rope_layout": "half", "softmax_dtype": "float32", "rope_dtype": "float32"})
    if mt == "falcon":
        H = int(cfg.num_attention_heads)
        kv = int(cfg.num_kv_heads) if cfg.new_decoder_architecture else 1 if cfg.multi_query else H
        base = {"d_model": int(cfg.hidden_size), "n_heads": H, "n_kv_heads": kv}
        if cfg.alibi:
            hd = int(cfg.hidden_size) // H
            return S.from_mapping({**base, "positional": "alibi", "alibi_scale": hd ** -0.5})
        return S.from_mapping({**base, "positional": "rope", "rope_base": float(hfcompat.rope_theta(cfg)),
                               "rope_layout": "half", "rope_dtype": "float32"})
    if mt == "gpt2":
        return S.from_mapping({"d_model": int(cfg.n_embd), "n_heads": int(cfg.n_head), "positional": "none",
                               "scale": None if getattr(cfg, "scale_attn_weights", True) else 1.0})
    if mt == "bloom":
        return S.from_mapping({"d_model": int(cfg.hidden_size), "n_heads": int(cfg.n_head), "positional": "alibi",
                               "softmax_dtype": "float32"})
    if mt == "mpt":
        return S.from_mapping({"d_model": int(cfg.d_model), "n_heads": int(cfg.n_heads), "positional": "alibi",
                               "softmax_dtype": "float32"})
    raise ValueError(f"impl:reference does not read {mt} models (it reads {', '.join(HF_READ)})")


def hf_weights(att: Any) -> dict[str, torch.Tensor]:
    """Layer 0's W_q, W_k, W_v, W_o and biases (``y = x W^T + b``) from the family's own modules: q/k/v/o_proj
    (Llama family); c_attn and c_proj, Conv1D's ``y = x W + b`` (GPT-2); query_key_value with the heads outermost
    ([head, q/k/v, head_dim] rows) and dense (BLOOM; Falcon in its three layouts); Wqkv in q, k, v blocks and out_proj (MPT)."""
    def f64(t: Any) -> Any:  # None stays None (a projection without a bias)
        return None if t is None else t.detach().to(torch.float64)

    out: dict[str, Any] = {}
    if hasattr(att, "q_proj"):
        for n in "qkvo":
            lin = getattr(att, f"{n}_proj")
            out[f"W_{n}"], out[f"b_{n}"] = f64(lin.weight), f64(lin.bias)
    elif hasattr(att, "c_attn"):
        d = att.c_proj.weight.shape[0]
        w, bias = f64(att.c_attn.weight), f64(att.c_attn.bias)
        for i, n in enumerate("qkv"):
            out[f"W_{n}"] = w[:, i * d:(i + 1) * d].T
            out[f"b_{n}"] = None if bias is None else bias[i * d:(i + 1) * d]
        out["W_o"], out["b_o"] = f64(att.c_proj.weight).T, f64(att.c_proj.bias)
    elif hasattr(att, "query_key_value") and hasattr(att, "multi_query"):  # Falcon
        H, hd = att.num_heads, att.head_dim
        w, bias = f64(att.query_key_value.weight), f64(att.query_key_value.bias)
        if att.new_decoder_architecture:  # rows: [kv group, its H / KV queries, then its key, then its value, hd]
            KV = att.num_kv_heads
            rows = torch.arange(w.shape[0]).view(KV, H // KV + 2, hd)
            parts = {"q": rows[:, :-2].reshape(-1), "k": rows[:, -2].reshape(-1), "v": rows[:, -1].reshape(-1)}
        elif att.multi_query:  # rows: H query heads, one key head, one value head
            parts = {"q": torch.arange(H * hd), "k": torch.arange(H * hd, (H + 1) * hd),
                     "v": torch.arange((H + 1) * hd, (H + 2) * hd)}
        else:  # rows: [head, q/k/v, hd], as BLOOM's
            rows = torch.arange(w.shape[0]).view(H, 3, hd)
            parts = {n: rows[:, i].reshape(-1) for i, n in enumerate("qkv")}
        for n, idx in parts.items():
            out[f"W_{n}"], out[f"b_{n}"] = w[idx], None if bias is None else bias[idx]
        out["W_o"], out["b_o"] = f64(att.dense.weight), f64(att.dense.bias)
    elif hasattr(att, "query_key_value"):
        H, hd = att.num_heads, att.head_dim
        w, bias = f64(att.query_key_value.weight), f64(att.query_key_value.bias)
        w3 = w.view(H, 3, hd, -1)
        b3 = None if bias is None else bias.view(H, 3, hd)
        for i, n in enumerate("qkv"):
            out[f"W_{n}"] = w3[:, i].reshape(H * hd, -1)
            out[f"b_{n}"] = None if b3 is None else b3[:, i].reshape(H * hd)
        out["W_o"], out["b_o"] = f64(att.dense.weight), f64(att.dense.bias)
    elif hasattr(att, "Wqkv"):
        w = f64(att.Wqkv.weight)
        d = w.shape[1]
        for i, n in enumerate("qkv"):
            out[f"W_{n}"] = w[i * d:(i + 1) * d]
        out["W_o"] = f64(att.out_proj.weight)
    else:
        raise ValueError(f"impl:reference cannot find the projections of {type(att).__name__}")
    return {k: v for k, v in out.items() if v is not None}


def _layer0_io(b: Any, ids: torch.Tensor, **kw: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Layer 0's attention input (hidden states after the input norm), its output with the residual taken off, and
    the residual its module adds (BLOOM's; None for the others), from one cache-free pass."""
    import inspect

    from verify.numeric import impl_models as hf

    att = hf.first_attention(b.model)
    seen: dict[str, torch.Tensor] = {}
    takes = list(inspect.signature(att.forward).parameters)  # BLOOM's forward(hidden_states, residual, ...)

    def pre(_m: Any, args: Any, kwargs: Any) -> None:
        seen["x"] = (kwargs.get("hidden_states") if "hidden_states" in kwargs else args[0]).detach()
        residual = kwargs.get("residual", args[1] if len(args) > 1 and takes[1:2] == ["residual"] else None)
        if residual is not None:  # BLOOM's attention adds the residual to its output (dropout_add)
            seen["residual"] = residual.detach()

    def post(_m: Any, _a: Any, _k: Any, out: Any) -> None:
        seen["out"] = (out[0] if isinstance(out, tuple) else out).detach()

    h1 = att.register_forward_pre_hook(pre, with_kwargs=True)
    h2 = att.register_forward_hook(post, with_kwargs=True)
    try:
        hf.full(b, ids, **kw)
    finally:
        h1.remove()
        h2.remove()
    res = seen.get("residual")
    return seen["x"], seen["out"] - (0 if res is None else res), res


def check_hf(spec: str, attn: str, dtype: str, seed: int, L: int, window: int | None,
             padding: str = "none") -> Evidence:
    """impl:reference on the tiny Hugging Face model ``spec`` names (:func:`hf_evidence` on its float64 build and
    its ``dtype`` copy)."""
    from verify.numeric import impl_models as hf

    b64 = hf.build(spec, attn=attn, seed=seed, window=window)
    b = b64 if dtype == "float64" else hf.cast(b64, dtype)
    return hf_evidence(b64, b, attn, dtype, seed, L, f"{spec} ({attn}; {num._lib()})", padding=padding)


def hf_evidence(b64: Any, b: Any, attn: str, dtype: str, seed: int, L: int, label: str,
                given: Mapping[str, Any] | None = None, padding: str = "none") -> Evidence:
    """impl:reference on a Hugging Face model (:class:`verify.numeric.impl_models.Built`): ``b``'s layer-0 attention
    output in one cache-free pass against the attention ``b64``'s configuration (or ``given``) and weights define,
    on the attention's own input (the hidden states after the input norm; BLOOM's residual, which its attention
    module adds, taken off its output).  ``padding`` left or right: a batch of lengths L and L // 2 padded to L on
    that side, with its attention mask and position_ids from the mask (as ``generate()`` passes them); the pads'
    own rows are not compared."""
    from verify.numeric import impl_models as hf

    s = hf_spec(b64, attn) if given is None else S.from_mapping(given)
    W = hf_weights(hf.first_attention(b64.model))
    ids = hf.tokens(L, b.vocab, seed, batch=2)
    mask = _pad_mask(L, padding)
    kw: dict[str, Any] = {}
    if mask is not None:
        kw = {"attention_mask": mask.long(), "position_ids": (mask.long().cumsum(-1) - 1).clamp(min=0)}
    x, out, residual = _layer0_io(b, ids, **kw)
    W_low = None if dtype == "float64" else _at(hf_weights(hf.first_attention(b.model)), dtype)
    return compare(out.to(torch.float64), s, W, x.to(torch.float64), dtype, W_low, label, b.describe(),
                   num._engines(), seed, mask, padding, residual)


__all__ = ["check_module", "module_evidence", "check_hf", "hf_evidence", "hf_spec", "hf_weights", "compare",
           "layer_reference", "padded", "projections", "read_spec", "validate", "C64", "EXPLAINS", "HF_READ",
           "PAD_FRACTIONS"]
