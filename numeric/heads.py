"""One attention head of a real or trained model, taken apart for :mod:`verify.numeric.head_bounds`: its query/key
weights, its input rows on given prompts, the target of each query under a pattern, and the library's own float64
attention for the cross-check that ties the extracted head to the model's forward pass.

Models (``--model``):

* ``hf:gpt2|llama|mistral|qwen2`` -- a tiny random model built locally (:mod:`verify.numeric.impl_models`);
  ``hf-dir:PATH`` -- a local checkpoint of one of those families (never a download);
* ``trained:ws24-rpe`` / ``trained:ws24-ape`` -- the two-layer model of ws24:falsifier (bietti23's simplified
  architecture, arXiv 2306.00802 Sec. 4, as proofs/ws24/trained.py cites it) trained with that claim's
  default recipe for the given seed (read from the lab's checkpoint cache, or trained: about 15 s of one core).

Inputs: the first attention layer's input is exact from the weights (token embedding plus learned position, added
exactly in the balls).  The layers below a deeper head travel with it as prefix layers (every head's scores, values
and output projection, the MLP) and are computed in the balls too, so its input is exact as well; only past
:data:`MAX_PREFIX_NUMBERS` weights, or for an activation the balls do not take, is a deeper layer's input the
model's own float64 forward, recorded (the certificate says so: the bound then holds for those recorded inputs, not
for the earlier layers' arithmetic).

Patterns: ``prev`` (query i -> key i - 1, i >= 1) and ``induction`` (query i -> the key after the most recent
earlier occurrence of token x_i; prompts drawn as a random block repeated twice, [A A]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from verify import hfcompat
from verify.constructions import rope
from verify.numeric.head_bounds import MLP, TARGETS, HeadProgram, PrefixHead, PrefixLayer, PromptInput

#: the Hugging Face families whose attention head is taken apart here
HF_FAMILIES = ("gpt2", "llama", "mistral", "qwen2")
TRAINED = ("ws24-rpe", "ws24-ape")
#: the cross-check: the library's float64 attention and the balls' midpoints agree to this (absolute, on a_ij);
#: RoPE tables computed in float32 by the library move a_ij by ~1e-7, a wrong head or offset by ~1e-1
CROSS_CHECK_TOL = 1e-4


class HeadInputError(ValueError):
    """A model, layer, head or prompt this module cannot take apart (the message says what to change)."""


@dataclass
class Extracted:
    """The head, its prompts (with targets), the library's attention rows ``[pos, pos]`` per prompt, and where the
    inputs come from."""

    program: HeadProgram
    prompts: list[PromptInput]
    library_attention: list[torch.Tensor]
    input_kind: str
    describe: dict[str, Any]


# ----------------------------------------------------------------------------- prompts and targets


def draw_prompts(pattern: str, n: int, length: int, vocab: int, seed: int, low: int = 3) -> list[list[int]]:
    """``n`` prompts of ``length`` tokens from ``[low, vocab)`` under ``seed``: uniform for prev; for induction a
    block of length//2 distinct tokens (when the vocabulary allows) repeated twice."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        if pattern == "induction":
            half = length // 2
            if vocab - low >= half:
                block = (torch.randperm(vocab - low, generator=g)[:half] + low).tolist()
            else:
                block = torch.randint(low, vocab, (half,), generator=g).tolist()
            out.append(block + block)
        else:
            out.append(torch.randint(low, vocab, (length,), generator=g).tolist())
    return out


def _rows(pattern: str, toks: Sequence[int], rows: tuple[int, int] | None) -> tuple[list[int], list[int]]:
    r, t = TARGETS[pattern](toks)
    if rows is not None:
        keep = [k for k, i in enumerate(r) if rows[0] <= i <= rows[1]]
        r, t = [r[k] for k in keep], [t[k] for k in keep]
    return r, t


def _floats(t: torch.Tensor) -> list[list[float]]:
    return t.detach().to(torch.float64).tolist()


# ----------------------------------------------------------------------------- Hugging Face models


def _hf_family(model: Any) -> str:
    mt = str(getattr(model.config, "model_type", ""))
    if mt not in HF_FAMILIES:
        raise HeadInputError(f"model type {mt!r}: verify head takes apart {', '.join(HF_FAMILIES)}")
    return mt


def _gpt2_program(model: Any, layer: int, head: int) -> tuple[HeadProgram, Callable[[list[int]], list]]:
    cfg = model.config
    blk = model.transformer.h[layer]
    d = int(cfg.n_embd)
    H = int(cfg.n_head)
    dh = d // H
    W = blk.attn.c_attn.weight.detach().to(torch.float64)  # Conv1D: x @ W + b, [d, 3d]
    b = blk.attn.c_attn.bias.detach().to(torch.float64)
    sl = slice(head * dh, (head + 1) * dh)
    factor = 1.0
    if getattr(blk.attn, "scale_attn_by_inverse_layer_idx", False):
        factor = 1.0 / float(layer + 1)
    prog = HeadProgram(W_Q=_floats(W[:, :d][:, sl]), W_K=_floats(W[:, d:2 * d][:, sl]), b_Q=b[:d][sl].tolist(),
                       b_K=b[d:2 * d][sl].tolist(), norm="layernorm",
                       norm_weight=blk.ln_1.weight.detach().double().tolist(),
                       norm_bias=blk.ln_1.bias.detach().double().tolist(), norm_eps=float(blk.ln_1.eps),
                       scale_inv_sqrt=dh if getattr(blk.attn, "scale_attn_weights", True) else 1, scale_factor=factor)
    wte, wpe = model.transformer.wte.weight.detach(), model.transformer.wpe.weight.detach()

    def embed(toks: list[int]) -> list:
        idx = torch.tensor(toks)
        return [_floats(wte[idx]), _floats(wpe[: len(toks)])]

    return prog, embed


def _llama_program(model: Any, layer: int, head: int) -> tuple[HeadProgram, Callable[[list[int]], list]]:
    cfg = model.config
    blk = model.model.layers[layer]
    att = blk.self_attn
    H = int(cfg.num_attention_heads)
    n_kv = int(getattr(cfg, "num_key_value_heads", None) or H)
    dh = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // H)
    kvh = head // (H // n_kv)
    try:
        rope = hfcompat.rotary_module(model, layer)
    except hfcompat.UnsupportedRelease as e:
        raise HeadInputError(str(e)) from None
    rtype = str(getattr(rope, "rope_type", "default"))
    if "Dynamic" in type(rope).__name__:  # a 4.x release names the rule by the module's class
        rtype = "dynamic"
    if "dynamic" in rtype:
        raise HeadInputError(f"RoPE scaling {rtype!r}: its frequencies depend on the sequence length; verify head "
                             "takes static frequencies (default, linear, yarn, llama3)")
    inv = rope.inv_freq.detach().to(torch.float64)
    if 2 * inv.numel() != dh:
        raise HeadInputError(f"partial rotary embeddings ({2 * inv.numel()} of {dh} dims) are not taken apart here")
    scaling = float(getattr(att, "scaling", dh ** -0.5))
    if scaling != dh ** -0.5:
        raise HeadInputError(f"attention scale {scaling} is not 1/sqrt(head_dim) = {dh ** -0.5}")
    window = None
    types = getattr(cfg, "layer_types", None) or []
    sliding = cfg.model_type == "mistral" or (layer < len(types) and types[layer] == "sliding_attention")
    if sliding and getattr(cfg, "sliding_window", None):
        window = int(cfg.sliding_window)
    qb = att.q_proj.bias
    kb = att.k_proj.bias
    q_rows = slice(head * dh, (head + 1) * dh)
    k_rows = slice(kvh * dh, (kvh + 1) * dh)
    prog = HeadProgram(W_Q=_floats(att.q_proj.weight.detach()[q_rows].T), W_K=_floats(att.k_proj.weight.detach()[k_rows].T),
                       b_Q=None if qb is None else qb.detach().double()[q_rows].tolist(),
                       b_K=None if kb is None else kb.detach().double()[k_rows].tolist(), norm="rmsnorm",
                       norm_weight=blk.input_layernorm.weight.detach().double().tolist(),
                       norm_eps=float(blk.input_layernorm.variance_epsilon), scale_inv_sqrt=dh,
                       rope_inv_freq=inv.tolist(), rope_attention_scaling=float(getattr(rope, "attention_scaling", 1.0)), window=window)
    emb = model.model.embed_tokens.weight.detach()

    def embed(toks: list[int]) -> list:
        return [_floats(emb[torch.tensor(toks)])]

    return prog, embed


#: a model whose layers below the certified head hold more weights than this keeps their output recorded (the
#: certificate would carry every one of them as exact hex)
MAX_PREFIX_NUMBERS = 4_000_000
#: Hugging Face activation names -> head_bounds.ACTIVATIONS
HF_ACTS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "silu": "silu", "relu": "relu", "gelu": "gelu"}


def _hf_prefix(model: Any, fam: str, layer: int) -> tuple[list[PrefixLayer] | None, str]:
    """Layers 0..layer-1 whole (every head's scores, values and output projection, the MLP), or None with the reason
    their output stays recorded (too many weights, an activation the balls do not take)."""
    cfg = model.config
    act = str(getattr(cfg, "activation_function", None) or getattr(cfg, "hidden_act", ""))
    if act not in HF_ACTS:
        return None, f"activation {act!r} is not computed in the balls"
    n = sum(p.numel() for name, p in model.named_parameters()
            if any(f".{i}." in name for i in range(layer)) and ("layers." in name or ".h." in name))
    if n > MAX_PREFIX_NUMBERS:
        return None, f"the layers below hold {n} weights, more than {MAX_PREFIX_NUMBERS} a certificate carries"
    _, H = _n_layers_heads(model)
    out = []
    for li in range(layer):
        out.append(_gpt2_block(model, li, H) if fam == "gpt2" else _llama_block(model, li, H, HF_ACTS[act]))
    return out, ""


def _gpt2_block(model: Any, li: int, H: int) -> PrefixLayer:
    blk = model.transformer.h[li]
    d = int(model.config.n_embd)
    dh = d // H
    W = blk.attn.c_attn.weight.detach().to(torch.float64)
    b = blk.attn.c_attn.bias.detach().to(torch.float64)
    Wo = blk.attn.c_proj.weight.detach().to(torch.float64)
    heads_ = []
    for h in range(H):
        sl = slice(h * dh, (h + 1) * dh)
        qk, _ = _gpt2_program(model, li, h)
        heads_.append(PrefixHead(qk, _floats(W[:, 2 * d:3 * d][:, sl]), _floats(Wo[sl, :]), b[2 * d:3 * d][sl].tolist()))
    act = HF_ACTS[str(model.config.activation_function)]
    mlp = MLP(norm="layernorm", norm_weight=blk.ln_2.weight.detach().double().tolist(),
              norm_bias=blk.ln_2.bias.detach().double().tolist(), norm_eps=float(blk.ln_2.eps),
              W_in=_floats(blk.mlp.c_fc.weight), b_in=blk.mlp.c_fc.bias.detach().double().tolist(),
              W_out=_floats(blk.mlp.c_proj.weight), b_out=blk.mlp.c_proj.bias.detach().double().tolist(), act=act)
    return PrefixLayer(heads_, blk.attn.c_proj.bias.detach().double().tolist(), mlp)


def _llama_block(model: Any, li: int, H: int, act: str) -> PrefixLayer:
    cfg = model.config
    blk = model.model.layers[li]
    att = blk.self_attn
    n_kv = int(getattr(cfg, "num_key_value_heads", None) or H)
    dh = int(getattr(cfg, "head_dim", None) or cfg.hidden_size // H)
    Wv = att.v_proj.weight.detach().to(torch.float64)
    bv = att.v_proj.bias
    Wo = att.o_proj.weight.detach().to(torch.float64)
    heads_ = []
    for h in range(H):
        kv = slice((h // (H // n_kv)) * dh, (h // (H // n_kv) + 1) * dh)
        qk, _ = _llama_program(model, li, h)
        heads_.append(PrefixHead(qk, _floats(Wv[kv].T), _floats(Wo[:, h * dh:(h + 1) * dh].T),
                                 None if bv is None else bv.detach().double()[kv].tolist()))
    mlp_ = blk.mlp
    mlp = MLP(norm="rmsnorm", norm_weight=blk.post_attention_layernorm.weight.detach().double().tolist(), norm_bias=None,
              norm_eps=float(blk.post_attention_layernorm.variance_epsilon), W_in=_floats(mlp_.up_proj.weight.T),
              W_gate=_floats(mlp_.gate_proj.weight.T), W_out=_floats(mlp_.down_proj.weight.T), act=act,
              b_in=None if mlp_.up_proj.bias is None else mlp_.up_proj.bias.detach().double().tolist(),
              b_gate=None if mlp_.gate_proj.bias is None else mlp_.gate_proj.bias.detach().double().tolist(),
              b_out=None if mlp_.down_proj.bias is None else mlp_.down_proj.bias.detach().double().tolist())
    ob = att.o_proj.bias
    return PrefixLayer(heads_, None if ob is None else ob.detach().double().tolist(), mlp)


def _n_layers_heads(model: Any) -> tuple[int, int]:
    cfg = model.config
    L = int(getattr(cfg, "num_hidden_layers", 0) or getattr(cfg, "n_layer", 0))
    H = int(getattr(cfg, "num_attention_heads", 0) or getattr(cfg, "n_head", 0))
    return L, H


def extract_hf(spec: str, layer: int, head: int, pattern: str, prompts: list[list[int]] | None, *, n: int,
               length: int, seed: int, rows: tuple[int, int] | None = None) -> Extracted:
    """Take apart head ``head`` of layer ``layer`` (0-indexed) of the model ``spec`` names."""
    from verify.numeric import impl_models as im

    try:
        b = im.build(spec, attn="eager", dtype="float64", seed=seed)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as e:
        raise HeadInputError(f"--model {spec}: cannot load it ({type(e).__name__}: "
                             f"{' '.join(str(e).split())[:160]})") from None
    model = b.model
    fam = _hf_family(model)
    L, H = _n_layers_heads(model)
    if not (0 <= layer < L) or not (0 <= head < H):
        raise HeadInputError(f"--layer {layer} --head {head}: {spec} has layers 0..{L - 1} and heads 0..{H - 1}")
    prog, embed = (_gpt2_program if fam == "gpt2" else _llama_program)(model, layer, head)
    prefix, why_recorded = _hf_prefix(model, fam, layer) if layer > 0 else (None, "")
    vocab = int(model.config.vocab_size)
    maxpos = int(getattr(model.config, "n_positions", 0) or getattr(model.config, "max_position_embeddings", 0) or 0)
    toks_list = prompts if prompts is not None else draw_prompts(pattern, n, length, vocab, seed)
    _check_prompts(toks_list, vocab, maxpos)
    out_prompts, atts = [], []
    for toks in toks_list:
        ids = torch.tensor([toks])
        with torch.no_grad():
            o = hfcompat.forward(model, input_ids=ids, use_cache=False, output_attentions=True,
                                 output_hidden_states=layer > 0 and prefix is None)
        comps = embed(toks) if (layer == 0 or prefix is not None) else [_floats(o.hidden_states[layer][0])]
        r, t = _rows(pattern, toks, rows)
        if prog.window is not None:  # a target outside the sliding window is not a key the query can see
            keep = [k for k in range(len(r)) if r[k] - t[k] < prog.window]
            r, t = [r[k] for k in keep], [t[k] for k in keep]
        out_prompts.append(PromptInput(list(toks), comps, r, t))
        atts.append(o.attentions[layer][0, head].to(torch.float64))
    kind = _input_kind(layer, fam)
    if prefix is not None:
        prog.prefix = prefix
        kind = (_input_kind(0, fam) + f"; layers 0..{layer - 1} (every head, the output projection and the MLP) "
                "computed in the balls, so this layer's input is exact too")
    elif layer > 0:
        kind += f" ({why_recorded})"
    desc = {"model": spec, "family": fam, "class": type(model).__name__, "layers": L, "heads": H,
            "d_model": prog.d_model, "d_head": prog.d_head, "rope": prog.rope_inv_freq is not None,
            "window": prog.window}
    return Extracted(prog, out_prompts, atts, kind, desc)


def _input_kind(layer: int, fam: str) -> str:
    if layer == 0:
        what = "token embedding + learned position" if fam in ("gpt2", "ws24-ape") else "token embedding"
        return f"exact: {what}, from the stored weights"
    return (f"recorded: the model's float64 forward of layers 0..{layer - 1} (the bound holds for these inputs; the "
            "earlier layers' arithmetic is not certified)")


def _check_prompts(toks_list: list[list[int]], vocab: int, maxpos: int) -> None:
    if not toks_list:
        raise HeadInputError("no prompts")
    for k, toks in enumerate(toks_list):
        if len(toks) < 2:
            raise HeadInputError(f"prompt {k}: needs at least 2 tokens")
        if maxpos and len(toks) > maxpos:
            raise HeadInputError(f"prompt {k}: {len(toks)} tokens exceed the model's {maxpos} positions")
        bad = [t for t in toks if not (0 <= t < vocab)]
        if bad:
            raise HeadInputError(f"prompt {k}: token {bad[0]} outside the vocabulary 0..{vocab - 1}")


# ----------------------------------------------------------------------------- ws24's trained two-layer model


def extract_trained(name: str, layer: int, head: int, pattern: str, prompts: list[list[int]] | None, *, n: int,
                    length: int, seed: int, rows: tuple[int, int] | None = None, cache: Any = None) -> Extracted:
    """The two-layer model ws24:falsifier trains (its default recipe, seed ``seed``): one head per layer; layer 0's
    scores x_t^T W^1_K (x_s + r_{t-s}) / sqrt(d) (RPE) or with x = w_E + p (APE), layer 1's h_t^T W^2_K h_s / sqrt(d)."""
    from verify.numeric import trained_models as tm
    from verify.numeric import ws24_trained as wt

    pe = name.split("-", 1)[1]
    if head != 0:
        raise HeadInputError(f"--head {head}: {name} has one head per layer (head 0)")
    if layer not in (0, 1):
        raise HeadInputError(f"--layer {layer}: {name} has layers 0 and 1")
    cfg = wt.falsifier_config(pe, 32, 32, 256, 8, 16, 300, 0.01, 0, "adam")
    tr = tm.train_two_layer(cfg, [seed], cache)
    p = {k: v[0:1] for k, v in tr.float64().items()}
    d = int(p["E"].shape[-1])
    V = int(p["E"].shape[1])
    if prompts is None:
        toks_t = tm.eval_batch(cfg, seed, n)[0][:, : min(length or cfg.T, cfg.T)]
        toks_list = toks_t.tolist() if pattern == "prev" else draw_prompts(pattern, n, length or 64, V, seed, low=0)
    else:
        toks_list = prompts
    _check_prompts(toks_list, V, cfg.T)
    prog = ws24_program(p, layer, pe)
    out_prompts, atts = [], []
    for toks in toks_list:
        tok = torch.tensor([[toks]])
        if layer == 0:
            comps = ws24_inputs(p, toks, pe)
            sc = tm.layer1_scores(p, tok, pe)[0, 0]
        else:
            H1 = _ws24_layer1_out(p, tok, pe, tm)
            comps = ws24_inputs(p, toks, pe)  # layer 0 runs again in balls (the program's prefix)
            sc = (H1 @ p["W2K"][0]) @ H1.T / math.sqrt(d)
            sc = sc.masked_fill(~torch.ones_like(sc, dtype=torch.bool).tril(), float("-inf"))
        r, t = _rows(pattern, toks, rows)
        out_prompts.append(PromptInput(list(toks), comps, r, t))
        atts.append(torch.softmax(sc, -1))
    desc = {"model": f"trained:{name}", "family": name, "recipe": "ws24:falsifier defaults (d 32, V 32, T 256, K 8, "
            "batch 16, 300 Adam steps, lr 0.01)", "seed": seed, "layers": 2, "heads": 1, "d_model": d, "d_head": d}
    kind = _input_kind(0, name) + ("" if layer == 0 else "; layer 0 (its one head, values and output) computed "
                                   "in the balls, so layer 1's input is exact too")
    return Extracted(prog, out_prompts, atts, kind, desc)


def ws24_program(p: dict[str, torch.Tensor], layer: int, pe: str) -> HeadProgram:
    """The head of layer ``layer`` of one seed's two-layer model (parameters ``[1, ...]``, float64): q = x W_K^l,
    k = x (W_K = identity), scale 1/sqrt(d), plus RPE's relative key vectors r_delta = POS[delta] at layer 0."""
    d = int(p["E"].shape[-1])
    WK = p["W1K" if layer == 0 else "W2K"][0]
    rel = _floats(p["POS"][0]) if (pe == "rpe" and layer == 0) else None
    prefix = [] if layer == 0 else [PrefixLayer([PrefixHead(ws24_program(p, 0, pe), _floats(p["W1V"][0].T),
                                                            _floats(p["W1O"][0].T))])]
    return HeadProgram(W_Q=_floats(WK), W_K=_floats(torch.eye(d, dtype=torch.float64)), scale_inv_sqrt=d,
                       relative_keys=rel, prefix=prefix)


def ws24_inputs(p: dict[str, torch.Tensor], toks: Sequence[int], pe: str) -> list[list[list[float]]]:
    """Layer 0's input rows, exact: w_E(z_t) (and the absolute position p_t for APE), as separate components."""
    comps = [_floats(p["E"][0][torch.tensor(list(toks))])]
    return comps + ([_floats(p["POS"][0][: len(toks)])] if pe == "ape" else [])


def certified_prev_recall(p: dict[str, torch.Tensor], toks: torch.Tensor, pe: str, lo: int, hi: int
                          ) -> tuple[int, int, int]:
    """The previous-token recall of one seed's layer-0 head on sequences ``toks`` ``[batch, pos]``, certified in arb
    balls: (rows whose target t - 1 is certainly the strict argmax, rows where it certainly is not, rows) over the
    paper's t in [lo, hi] (1-indexed, t >= 2; 0-indexed rows t - 1).  Only positions <= hi enter (causal)."""
    from fractions import Fraction

    from verify.numeric.head_bounds import bound_prompt

    prog = ws24_program(p, 0, pe)
    yes = no = n = 0
    for seq in toks[:, :hi].tolist():
        rows = list(range(max(lo, 2) - 1, min(hi, len(seq))))
        pr = PromptInput(seq, ws24_inputs(p, seq, pe), rows, [r - 1 for r in rows])
        for r in bound_prompt(prog, pr, Fraction(1, 2)):
            yes += r.argmax == "yes"
            no += r.argmax == "no"
            n += 1
    return yes, no, n


def _ws24_layer1_out(p: dict[str, torch.Tensor], tok: torch.Tensor, pe: str, tm: Any) -> torch.Tensor:
    """h_t = x_t + W^1_O W^1_V sum_s a_ts x_s (the residual stream after layer 1), float64, ``[pos, d]``."""
    X = tm._inputs(p, tok, pe)[0, 0]
    A = torch.softmax(tm.layer1_scores(p, tok, pe)[0, 0], -1)
    return X + (A @ (X @ p["W1V"][0].T)) @ p["W1O"][0].T


# ----------------------------------------------------------------------------- the cross-check


def cross_check(ex: Extracted) -> float:
    """Largest |a_ij(library, float64) - a_ij(extracted head, float64)| over the checked rows' admitted keys, the
    extracted head evaluated in the arithmetic the balls enclose: ties the extracted head to the model's own forward
    pass (a wrong slice, scale, norm, rotation or mask shows as ~1e-1)."""
    worst = 0.0
    for prompt, A in zip(ex.prompts, ex.library_attention):
        ours = _midpoint_attention(ex.program, prompt)
        for i in prompt.rows:
            for j, v in ours[i].items():
                worst = max(worst, abs(float(A[i, j]) - v))
    return worst


def _midpoint_attention(prog: HeadProgram, prompt: PromptInput) -> dict[int, dict[int, float]]:
    """a_ij for every checked row i and admitted key j, in float64 from the program (the arithmetic the balls
    enclose, evaluated at their midpoints), the prefix layers included."""
    X = sum(torch.tensor(c, dtype=torch.float64) for c in prompt.components)
    assert isinstance(X, torch.Tensor)
    X = _prefix_t(prog, X)
    _, S = _scores_t(prog, X)
    out: dict[int, dict[int, float]] = {}
    for i in prompt.rows:
        lo = 0 if prog.window is None else max(0, i - prog.window + 1)
        a = torch.softmax(S[i, lo:i + 1], -1)
        out[i] = {lo + k: float(a[k]) for k in range(a.numel())}
    return out


def _prefix_t(prog: HeadProgram, X: torch.Tensor) -> torch.Tensor:
    """The residual stream after the program's prefix layers, float64 (the balls' arithmetic at midpoints)."""
    L = X.shape[0]
    for layer in prog.prefix:
        add = torch.zeros_like(X)
        for ph in layer.heads:
            Xn, S = _scores_t(ph.qk, X)
            allowed = torch.ones(L, L, dtype=torch.bool).tril()
            if ph.qk.window is not None:
                idx = torch.arange(L)
                allowed &= (idx[:, None] - idx[None, :]) < ph.qk.window
            A = torch.softmax(S.masked_fill(~allowed, float("-inf")), -1)
            V = Xn @ torch.tensor(ph.W_V, dtype=torch.float64)
            if ph.b_V is not None:
                V = V + torch.tensor(ph.b_V, dtype=torch.float64)
            add = add + (A @ V) @ torch.tensor(ph.W_O, dtype=torch.float64)
        X = X + add
        if layer.out_bias is not None:
            X = X + torch.tensor(layer.out_bias, dtype=torch.float64)
        if layer.mlp is not None:
            X = X + _mlp_t(layer.mlp, X)
    return X


def _mlp_t(m: MLP, X: torch.Tensor) -> torch.Tensor:
    def t(v: Any) -> torch.Tensor:
        return torch.tensor(v, dtype=torch.float64)

    N = _norm_t(X, *m.norm_spec)
    acts = {"silu": torch.nn.functional.silu, "relu": torch.relu, "gelu": torch.nn.functional.gelu,
            "gelu_tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh")}
    Hin = N @ t(m.W_in) + (t(m.b_in) if m.b_in is not None else 0)
    if m.W_gate is not None:
        G = N @ t(m.W_gate) + (t(m.b_gate) if m.b_gate is not None else 0)
        Hin = acts[m.act](G) * Hin
    else:
        Hin = acts[m.act](Hin)
    return Hin @ t(m.W_out) + (t(m.b_out) if m.b_out is not None else 0)


def _scores_t(prog: HeadProgram, X: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """n(X) ``[pos, d_model]`` and the scores s_ij ``[pos, pos]`` (unmasked) of the program's query/key side."""
    Xn = _norm_t(X, *prog.norm_spec)
    Q = Xn @ torch.tensor(prog.W_Q, dtype=torch.float64)
    K = Xn @ torch.tensor(prog.W_K, dtype=torch.float64)
    if prog.b_Q is not None:
        Q = Q + torch.tensor(prog.b_Q, dtype=torch.float64)
    if prog.b_K is not None:
        K = K + torch.tensor(prog.b_K, dtype=torch.float64)
    if prog.rope_inv_freq is not None:
        Q, K = _rope_t(Q, prog), _rope_t(K, prog)
    S = Q @ K.T
    L = S.shape[0]
    if prog.relative_keys is not None:
        QR = Q @ torch.tensor(prog.relative_keys, dtype=torch.float64).T
        idx = torch.arange(L)
        off = (idx[:, None] - idx[None, :]).clamp(min=0, max=QR.shape[1] - 1)
        S = S + torch.gather(QR, 1, off)
    S = S * (prog.scale_factor / math.sqrt(prog.scale_inv_sqrt))
    if prog.alibi_slope is not None:
        idx = torch.arange(L, dtype=torch.float64)
        S = S + prog.alibi_slope * (idx[None, :] - idx[:, None])
    return Xn, S


def _norm_t(X: torch.Tensor, kind: str, weight: list[float] | None, bias: list[float] | None,
            eps: float) -> torch.Tensor:
    """The float64 twin of head_bounds' norm: LayerNorm, RMSNorm or none, then the gain and bias."""
    if kind == "layernorm":
        Xn = torch.nn.functional.layer_norm(X, X.shape[-1:], eps=eps)
    elif kind == "rmsnorm":
        Xn = X * torch.rsqrt(X.pow(2).mean(-1, keepdim=True) + eps)
    else:
        Xn = X
    if weight is not None:
        Xn = Xn * torch.tensor(weight, dtype=torch.float64)
    if bias is not None:
        Xn = Xn + torch.tensor(bias, dtype=torch.float64)
    return Xn


def _rope_t(Y: torch.Tensor, prog: HeadProgram) -> torch.Tensor:
    inv = torch.tensor(prog.rope_inv_freq, dtype=torch.float64)
    return rope.rotate(Y, torch.arange(Y.shape[0]), inv, "half", scale=prog.rope_attention_scaling)


# ----------------------------------------------------------------------------- one entry point, and the rebuild


def extract(spec: str, layer: int, head: int, pattern: str, prompts: list[list[int]] | None, *, n: int, length: int,
            seed: int, rows: tuple[int, int] | None = None) -> Extracted:
    """Take apart the head of the model ``spec`` names (``hf:``, ``hf-dir:`` or ``trained:``)."""
    kind, _, name = spec.partition(":")
    if kind == "trained":
        from verify.numeric import lab

        return extract_trained(name, layer, head, pattern, prompts, n=n, length=length, seed=seed, rows=rows,
                               cache=lab.Cache(None))
    return extract_hf(spec, layer, head, pattern, prompts, n=n, length=length, seed=seed, rows=rows)


def rebuild_matches(doc: dict[str, Any]) -> tuple[bool, str]:
    """Take the certificate's head apart again from its model (same layer, head, pattern, seed, prompts and row
    filter) and compare the head and inputs with the file's: ties a self-consistent file to the model's weights."""
    from verify.numeric import head_bounds as hb

    try:
        model = doc["model"]["model"]
        toks = [p["tokens"] for p in doc["prompts"]]
        rf = doc.get("rows_filter")
        ex = extract(model, int(doc["layer"]), int(doc["head"]), str(doc["pattern"]), toks, n=len(toks), length=0,
                     seed=int(doc["seed"]), rows=None if rf is None else (int(rf[0]), int(rf[1])))
    except (KeyError, TypeError, ValueError, HeadInputError) as e:
        return False, f"cannot rebuild the head: {type(e).__name__}: {str(e)[:120]}"
    body = {"program": ex.program.to_json(), "prompts": [p.to_json() for p in ex.prompts]}
    if hb.content_digest(body) != doc.get("content_sha256"):
        return False, f"the head or inputs are not those of {model} layer {doc['layer']} head {doc['head']} today"
    return True, f"the head and inputs are {model}'s (layer {doc['layer']}, head {doc['head']})"


# ----------------------------------------------------------------------------- fp26's toy two-layer model


def fp26_program(p: dict[str, torch.Tensor], s: int, layer: int, head: int, pe: str) -> HeadProgram:
    """Head ``head`` of layer ``layer`` (1 or 2) of seed row ``s`` of fp26's toy model
    (:func:`verify.numeric.fingerprint.toy_forward`): LayerNorm without gain (eps 1e-5), q = n(x) Q[h], k = n(x) K[h],
    rotate-half RoPE over the whole head with theta_m = 10000^(-2m/d_head) under ``pe == "rope"``, scale
    1/sqrt(d_head); a layer-2 head carries every layer-1 head (values V1, outputs O1) as its prefix, so its input is
    computed in the balls from the embeddings."""
    WQ, WK = p[f"Q{layer}"][s, head], p[f"K{layer}"][s, head]
    dh = int(WQ.shape[-1])
    inv = None
    if pe == "rope":
        inv = (10000.0 ** (-2.0 * torch.arange(dh // 2, dtype=torch.float64) / dh)).tolist()
    prefix = [] if layer == 1 else [PrefixLayer([
        PrefixHead(fp26_program(p, s, 1, h, pe), _floats(p["V1"][s, h]), _floats(p["O1"][s, h]))
        for h in range(int(p["Q1"].shape[1]))])]
    return HeadProgram(W_Q=_floats(WQ), W_K=_floats(WK), norm="layernorm", norm_eps=1e-5, scale_inv_sqrt=dh,
                       rope_inv_freq=inv, prefix=prefix)


def certified_mean_prev(prog: HeadProgram, tokens: Sequence[Sequence[int]], inputs: Sequence[torch.Tensor],
                        lo: int) -> list[str]:
    """The head's mean attention on t - 1 over rows lo..T-1 of every sequence, enclosed: [lower, upper] as decimal
    strings of 6 significant digits rounded outward (each row's ball, summed in exact rationals)."""
    from fractions import Fraction

    from verify.numeric.head_bounds import bound_prompt, fmt_directed

    lo_sum, hi_sum, n = Fraction(0), Fraction(0), 0
    for toks, X in zip(tokens, inputs):
        rows = list(range(max(lo, 1), len(toks)))
        pr = PromptInput(list(toks), [_floats(X)], rows, [r - 1 for r in rows])
        for r in bound_prompt(prog, pr, Fraction(1, 2)):
            lo_sum += Fraction(r.mass_lo)
            hi_sum += Fraction(r.mass_hi)
            n += 1
    if not n:
        return ["0", "0"]
    down, up = math.nextafter(float(lo_sum / n), -math.inf), math.nextafter(float(hi_sum / n), math.inf)
    return [fmt_directed(down, True, 6), fmt_directed(up, False, 6)]
