"""impl — claims about the attention code people ship, checked on the running library (Hugging Face transformers),
not on a construction of ours.

Each claim builds a tiny random model from a configuration (``--model hf:NAME``; never a download) or loads a local
checkpoint directory (``--model hf-dir:PATH``), runs the library's forward pass with and without its own cache
(``DynamicCache``), and compares.  impl:decode, impl:window and impl:padding also run on the user's own attention
module behind a small protocol (``--model module:PKG.MOD:FACTORY``, docs/impl-module.md,
:mod:`verify.numeric.impl_module`), which needs torch but not transformers.  The statements are the properties the
library's documentation promises and public trackers report broken (transformers #39408 and mlx-lm #390: a sliding
window admitting w + 1 keys; keras-hub #2861 and TransformerLens #776: ALiBi bias under the cache;
flash-linear-attention #766: RoPE positions during decoding; transformers #18104: GPT-2 with the cache and left
padding).  ALiBi's schedule is Press, Smith and Lewis, ICLR 2022 (arXiv 2108.12409), Sec. 3 and the authors'
fairseq code.

The layers: numeric (the library's model, or the user's module, in float64 or the dtype asked, against its own
full pass) for every claim; symbolic (the ALiBi schedule for the head count, exact in sympy) for impl:alibi.  transformers is an
optional extra: without it every impl claim refuses before any work (``pip install 'verify-attention[impl]'``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Mapping

from verify import hfcompat
from verify.core.model import Claim, InputError, Paper, Params, Provenance, missing_packages, param
from verify.evidence import Context, Evidence

#: the families ``--model hf:NAME`` builds (torch-free copy of verify.numeric.impl_models.HF_MODELS; a test checks it)
HF_MODELS = ("llama", "mistral", "gpt2", "bloom", "falcon", "mpt", "qwen2", "gemma2")
ROPE_MODELS = ("llama", "mistral", "qwen2", "gemma2")
ALIBI_MODELS = ("bloom", "falcon", "mpt")
#: the ALiBi convention each family's code follows (verify.constructions.impl_alibi)
ALIBI_CONVENTION = {"bloom": "press", "falcon": "press", "mpt": "mpt"}
#: families whose tiny model transformers builds only with eager attention (BLOOM and MPT: "does not support an
#: attention implementation through torch.nn.functional.scaled_dot_product_attention yet")
EAGER_ONLY = ("gemma2", "bloom", "mpt")
DTYPE_CHOICES = ("float64", "float32", "float16", "bfloat16")
ATTN_CHOICES = ("eager", "sdpa")
ROPE_SCALINGS = ("default", "linear", "dynamic", "yarn", "llama3")
#: max_position_embeddings of the RoPE check's model (and the scaling rules' original length): the check's
#: positions run past it, where dynamic, YaRN and Llama-3 scaling act
ROPE_MAX_POSITIONS = 8
INSTALL = "the impl claims need the transformers package: pip install 'verify-attention[impl]'"
#: the optional package every impl claim imports (``verify all`` lists the claims as not checked without it)
REQUIRES = (("transformers", "needs transformers: pip install 'verify-attention[impl]'"),)
#: whose statement an impl claim checks: the library's contract (its documentation and the behaviour its own
#: full forward pass defines), not a paper's
CONTRACT = {"*": Provenance("contract", "an attention implementation must compute what its cache-free, unpadded "
                                       "forward pass and the published schedule define")}


def rope_parameters(rule: str, factor: float) -> dict[str, Any]:
    """The configuration's ``rope_parameters`` for a scaling rule, in transformers 5's field names
    (:func:`verify.hfcompat.rope_config` gives a 4.x release its ``rope_theta`` and ``rope_scaling``)."""
    base: dict[str, Any] = {"rope_type": rule, "rope_theta": 10000.0}
    if rule != "default":
        base["factor"] = factor
    if rule in ("yarn", "llama3"):
        base["original_max_position_embeddings"] = ROPE_MAX_POSITIONS
    if rule == "llama3":
        base.update(low_freq_factor=1.0, high_freq_factor=4.0)
    return base


def read_config(path: str, text: str) -> dict[str, Any]:
    """:func:`verify.hfcompat.read_config`, its refusal prefixed with the option.

    Raises:
        InputError: not a file, too large, not JSON, not an object, or no model_type (one line).
    """
    try:
        return hfcompat.read_config(path)
    except ValueError as e:
        raise InputError(f"--model {text}: {e}") from None


#: the largest random model ``--model hf-config:FILE`` builds (parameters, estimated from the configuration)
CONFIG_PARAMETERS = 50_000_000


def config_parameters(d: Mapping[str, Any]) -> int:
    """The parameters a configuration's model holds, estimated from its sizes (each family's field names): per
    layer 4 h^2 for the attention and 3 h f for the MLP, plus 2 V h for the embeddings and the head."""
    def first(*names: str, default: int = 0) -> int:
        for n in names:
            v = d.get(n)
            if isinstance(v, int) and not isinstance(v, bool) and v > 0:
                return v
        return default

    h = first("hidden_size", "n_embd", "d_model")
    f = first("intermediate_size", "ffn_hidden_size", "n_inner", default=4 * h)
    n = first("num_hidden_layers", "n_layer", "n_layers", default=1)
    return n * (4 * h * h + 3 * h * f) + 2 * first("vocab_size") * h


def _model(text: str, allowed: tuple[str, ...] = HF_MODELS) -> tuple[str, str]:
    kind, sep, rest = text.partition(":")
    if kind == "module" and sep and rest:
        return kind, rest
    if kind == "hf" and sep and rest in HF_MODELS:
        if rest not in allowed:
            raise InputError(f"--model {text}: this claim needs one of {', '.join('hf:' + a for a in allowed)}")
        return kind, rest
    if kind == "hf-dir" and sep and rest:
        if not os.path.isfile(os.path.join(rest, "config.json")):
            raise InputError(f"--model {text}: not a local checkpoint directory (no config.json); nothing is downloaded")
        return kind, rest
    if kind == "hf-config" and sep and rest:
        n = config_parameters(read_config(rest, text))
        if n > CONFIG_PARAMETERS:
            raise InputError(f"--model {text}: its model would hold about {n:,} parameters; hf-config builds random "
                             f"models of at most {CONFIG_PARAMETERS:,} (a checkpoint directory goes as hf-dir:PATH)")
        return kind, rest
    raise InputError(f"--model {text!r}: expected hf:NAME (NAME one of {', '.join(HF_MODELS)}), hf-dir:PATH, "
                     "hf-config:FILE or module:PKG.MOD:FACTORY")


def family(text: str) -> str:
    """The model family ``--model`` names: NAME of hf:NAME, the ``model_type`` of an hf-dir's config.json or of an
    hf-config FILE (read here, a few bytes of JSON)."""
    kind, name = _model(text)
    if kind in ("hf-dir", "hf-config"):
        return str(read_config(os.path.join(name, "config.json") if kind == "hf-dir" else name, text)["model_type"])
    return name


def _common(p: Mapping[str, Any], allowed: tuple[str, ...] = HF_MODELS, checkpoint: bool = True,
            claim: str = "", needs_mask: bool = False, any_family: bool = True) -> tuple[str, str]:
    """The refusals every impl claim shares, before any work; ``any_family``: a checkpoint or configuration of any
    causal LM runs (the claims that only call the model), else only the ``allowed`` families (those whose attention
    the claim reads)."""
    if p["model"].startswith("module:"):
        _module(p["model"], checkpoint, claim, needs_mask)
        return "module", p["model"]
    if missing_packages(REQUIRES):
        raise InputError(INSTALL)
    why = hfcompat.refusal()
    if why is not None:
        raise InputError(why)
    kind, name = _model(p["model"], allowed)
    if kind in ("hf-dir", "hf-config") and not checkpoint:
        raise InputError(f"--model {p['model']}: this claim builds its tiny model with the rule asked; a checkpoint "
                         "directory or configuration goes to impl:decode, impl:window, impl:padding or impl:reference")
    fam = family(p["model"])
    if kind != "hf" and not any_family and fam not in allowed:
        raise InputError(f"--model {p['model']}: a {fam} model; this claim reads {', '.join(allowed)}")
    why = (hfcompat.family_refusal(fam) if fam in HF_MODELS else None) or hfcompat.probe(
        fam if kind != "hf-dir" and fam in HF_MODELS else None)
    if why is not None:
        raise InputError(why)
    if fam in EAGER_ONLY and p["attn"] != "eager":
        raise InputError(f"--model {p['model']}: transformers builds {fam} with --attn eager only")
    return kind, name


def _module(spec: str, takes_module: bool, claim: str, needs_mask: bool) -> None:
    """``--model module:PKG.MOD:FACTORY`` (docs/impl-module.md): refused for the claims that read a configuration;
    for the others the module is imported, built and probed here, so that a broken one stops before any work."""
    if not takes_module:
        raise InputError(f"--model {spec}: {claim} needs a model with a configuration (hf:NAME); an attention module "
                         "goes to impl:decode, impl:window or impl:padding")
    from verify.constructions.features import FeatureError
    from verify.numeric import impl_module

    try:
        impl_module.validate(spec, claim, needs_mask)
    except FeatureError as e:
        raise InputError(str(e)) from None


def _release_explain(claim: str) -> Any:
    """The explain hook of ``claim``: :func:`_module_explain`, and the line of
    :func:`verify.proofs.impl.releases.known_on` when the installed release was measured other than HOLDS on the
    release matrix's entry these options match (family, and RoPE rule or attention path where the entry names one)."""
    def explain(p: Mapping[str, Any], evidence: Any) -> list[str]:
        from verify.proofs.impl import releases

        lines = _module_explain(p, evidence)
        version = hfcompat.installed()
        options = releases.entry_for(claim, p)
        if options is not None and version is not None:
            line = releases.known_on(version, claim, options)
            if line is not None:
                lines.append(line + " (measured at the claim's defaults)")
        return lines

    return explain


def _module_explain(p: Mapping[str, Any], evidence: Any) -> list[str]:
    """With ``--model module:...``: how the module was run (the caveats describe the tiny hf models)."""
    if not p["model"].startswith("module:"):
        return []
    return [f"{p['model']}: the attention module as its factory builds it under --seed, on standard normal input "
            "vectors drawn under --seed; the module's own window attribute sets the rule, --attn and --window do "
            "not apply (docs/impl-module.md)"]


def _model_param(default: str) -> Any:
    return param(default, "hf:NAME (a tiny random model: " + ", ".join(HF_MODELS) + "; never a download), "
                 "hf-dir:PATH (a local checkpoint directory) or module:PKG.MOD:FACTORY (your attention module, "
                 "docs/impl-module.md)", kind="text", maximum=400)


def _attn_param() -> Any:
    return param("eager", "the library's attention path (bugs live in one path)", choices=ATTN_CHOICES)


# ------------------------------------------------------------------ decode


@dataclass(frozen=True)
class DecodeParams(Params):
    model: str = _model_param("hf:llama")
    attn: str = _attn_param()
    dtype: str = param("float64", "dtype of the cached decode (the reference is the float64 full pass)",
                       choices=DTYPE_CHOICES)
    L: int = param(8, "prompt length: every prefill split 1..L-1, then one token per call", kind="int", minimum=2,
                   maximum=64)
    window: int = param(4, "sliding window of the tiny model (mistral, qwen2, gemma2); 0: none", kind="int", minimum=0,
                        maximum=64)


def _dec_validate(p: Mapping[str, Any]) -> None:
    _common(p, claim="impl:decode")


def _window_of(p: Mapping[str, Any], name: str) -> int | None:
    return (p["window"] or None) if name in ("mistral", "qwen2", "gemma2") else None


def _dec_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    kind, name = _model(p["model"])
    if kind == "module":
        from verify.numeric import impl_module

        return impl_module.check_decode(p["model"], p["dtype"], ctx.seed, p["L"])
    from verify.numeric import impl as num

    return num.check_decode(p["model"], p["attn"], p["dtype"], ctx.seed, p["L"], window=_window_of(p, name))


DECODE = Claim(
    requires=REQUIRES,
    worker_group="transformers",
    provenance=CONTRACT,
    id="impl:decode",
    title="cached incremental decoding equals the full forward pass (the library's own cache)",
    source="transformers' generation contract (DynamicCache): generate() with use_cache=True and the cache-free forward pass must agree",
    statement=("For every prefill split of a prompt, a prefill call then one call per token through the library's "
               "cache gives at every position the logits of the full forward pass without a cache: float64 to "
               "rounding; float16/bfloat16/float32 within a tolerance calibrated on the full pass's own rounding."),
    quantifiers=("for every prefill split of every prompt: cached logits equal the full pass",
                 "numeric: every split of one prompt of length 8 per model, float64 to rounding"),
    options=(),
    params_type=DecodeParams,
    checks={"numeric": _dec_numeric},
    expected={"": "HOLDS"},
    validate=_dec_validate,
    explain=_release_explain("impl:decode"),
    caveats=("Tiny random models (2 layers, head size 16, vocabulary 128, 4 heads) drawn under --seed with the query "
             "and key projections scaled by 4 so attention is far from uniform; a checkpoint directory is run as "
             "stored.",
             "The float64 tolerance is calibrated as kvshift24:decode calibrates it: 4 x the rounding of a correct "
             "computation of the same positions (full passes of each prefix against the whole prompt's), at least "
             "1e-9 and at most 1e-6.  Eager attention computes its softmax in float32 even in a float64 model (Llama, "
             "MPT), so that rounding follows the CPU (< 1e-12 relative on an AVX-512 machine, 8e-8 under AVX2, where a "
             "row of 8 keys is one vector and a shorter row runs in the scalar tail); the calibration absorbs it, and "
             "the report records the deviation and the tolerance by their bound 1e-6."),
    cost="~0.1 s per model at L = 8 after a ~3-5 s import of transformers",
)


# ------------------------------------------------------------------ window


@dataclass(frozen=True)
class WindowParams(Params):
    model: str = _model_param("hf:mistral")
    attn: str = _attn_param()
    window: int = param(4, "sliding window w of the tiny model (mistral, qwen2, gemma2); 0 or another family: the "
                        "causal mask alone", kind="int", minimum=0, maximum=64)
    L: int = param(0, "prompt length (0: 2w + 1, past the window)", kind="int", minimum=0, maximum=64)


def _win_validate(p: Mapping[str, Any]) -> None:
    _common(p, claim="impl:window")


def _win_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    kind, name = _model(p["model"])
    if kind == "module":
        from verify.numeric import impl_module

        return impl_module.check_window(p["model"], ctx.seed, lambda w: _window_sizes(w, p["L"]))
    from verify.numeric import impl as num

    w = _window_of(p, name)
    L, splits = _window_sizes(w, p["L"])
    return num.check_window(p["model"], p["attn"], ctx.seed, L, w, splits)


def _window_sizes(w: int | None, L: int) -> tuple[int, list[int]]:
    """The prompt length (``L``, or 2w + 1 past the window when 0) and the prefill splits w - 1, w, w + 1 (w = 4
    without a window)."""
    L = L or 2 * (w or 4) + 1
    return L, sorted({k for k in ((w or 4) - 1, w or 4, (w or 4) + 1) if 1 <= k < L})


WINDOW = Claim(
    requires=REQUIRES,
    worker_group="transformers",
    provenance=CONTRACT,
    id="impl:window",
    title="each query sees exactly the keys its causal mask or sliding window admits (w keys, not w + 1)",
    source="transformers masking_utils (sliding_window_overlay); transformers #39408, mlx-lm #390",
    statement=("Under a sliding window w, query t attends to keys t - w + 1..t (w keys) and no other; without a window "
               "to keys 0..t; the same with the cache, for prefills on both sides of the window boundary."),
    quantifiers=("for every query t and window w: exactly keys t - w + 1..t",
                 "numeric: L = 9, w = 4, prefills w - 1, w, w + 1"),
    options=(),
    params_type=WindowParams,
    checks={"numeric": _win_numeric},
    expected={"": "HOLDS"},
    validate=_win_validate,
    explain=_release_explain("impl:window"),
    caveats=("Measured, not read from the mask: each token of the prompt is changed in turn (one batch) and a key "
             "counts as seen by query t when layer 0's attention output at t moves (> 1e-9 relative); layer 0's input "
             "at t depends on token t alone, so this is the attention pattern of that layer, in the path --attn picks.",
             "The window convention checked is w keys including the query's own (Mistral's); a library that admits "
             "w + 1 keys fails with the extra distance as the witness."),
    cost="~0.5-1 s at w = 4 (L = 9; no cache and prefills w-1, w, w+1)",
)


# ------------------------------------------------------------------ ALiBi


@dataclass(frozen=True)
class AlibiParams(Params):
    model: str = _model_param("hf:bloom")
    attn: str = param("eager", "the library's attention path (the slopes are read from the attention weights, which "
                      "eager returns)", choices=("eager",))
    heads: int = param(4, "head count (any >= 1; the schedule for non-powers of two interleaves)", kind="int",
                       minimum=1, maximum=64)
    L: int = param(8, "prompt length (slopes read from every query/key pair; the cache half after a prefill of L/2)",
                   kind="int", minimum=3, maximum=64)


def _al_validate(p: Mapping[str, Any]) -> None:
    _common(p, ALIBI_MODELS, checkpoint=False, claim="impl:alibi")


def _convention(p: Mapping[str, Any]) -> str:
    return ALIBI_CONVENTION[_model(p["model"])[1]]


def _al_symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.evidence import Layer, Status
    from verify.symbolic import impl as sym

    if _model(p["model"])[1] == "falcon":
        return Evidence(Layer.SYMBOLIC, Status.SKIPPED,
                        summary=("Falcon's code multiplies the ALiBi bias together with the scores by 1/sqrt(head size), "
                                 "so the slopes it applies are not its slope function's; the numeric layer reads them"))
    return sym.check_schedule(p["heads"], _convention(p))


def _al_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.constructions.impl_alibi import floats, press_slopes
    from verify.numeric import impl as num

    return num.check_alibi(p["model"], p["attn"], ctx.seed, p["heads"], p["L"], floats(press_slopes(p["heads"])),
                           _convention(p))


ALIBI = Claim(
    requires=REQUIRES,
    worker_group="transformers",
    provenance=CONTRACT,
    id="impl:alibi",
    title="the ALiBi slopes the model applies are Press et al.'s schedule for its head count, penalise distance, "
          "and hold under the cache",
    source="Press, Smith, Lewis, ICLR 2022 (arXiv 2108.12409) Sec. 3 and fairseq get_slopes; keras-hub #2861, "
           "TransformerLens #776",
    statement=("Head i of n gets slope 2^(-8i/n) for n a power of two, and for other n the n' = 2^floor(log2 n) slopes "
               "of n' heads followed by the odd-indexed slopes of 2n' heads; the bias is -m (t - j) (distance "
               "penalised, linear in the distance, so its origin cancels in the softmax), the same for a decoded "
               "query through the cache."),
    quantifiers=("for every head count n: Press et al.'s slopes; for every distance: -m (t - j)",
                 "symbolic: the schedule exactly at the head count asked; numeric: the bias the model applies there"),
    options=(),
    params_type=AlibiParams,
    checks={"symbolic": _al_symbolic, "numeric": _al_numeric},
    expected={"": "HOLDS"},
    validate=_al_validate,
    explain=_release_explain("impl:alibi"),
    caveats=("Conventions: BLOOM's and Falcon's code follow Press et al.'s interleaving; MPT's rounds n up to a power "
             "of two and keeps odd-indexed then even-indexed slopes, which with its alibi_bias_max = 8 gives the same "
             "schedule (exact, for the head count asked). The symbolic layer checks the convention the family's code follows, exactly; the "
             "numeric layer reads the slopes the running model applies: with the query/key/value projections "
             "zeroed, layer 0's attention weights are softmax(bias), so m(t, j) = (log p[t,t] - log p[t,j]) / (t - j).",
             "Falcon's eager attention multiplies scores and bias together by 1/sqrt(head size) and, from "
             "transformers 4.45, adds the bias once more through its causal mask (impl:reference explains it: "
             "alibi_scale 0.25 -> 0.5), so its effective slopes are the schedule scaled; the numeric layer reports "
             "the common factor."),
    cost="symbolic < 1 s; numeric ~0.3 s",
    # Falcon (--model hf:falcon) FAILS: its eager attention scales the bias with the scores and (from 4.45) adds it
    # twice, and the measured slopes are the schedule times a common factor (0.5 at head size 16), which the witness
    # reports
)


# ------------------------------------------------------------------ RoPE


@dataclass(frozen=True)
class RopeParams(Params):
    scaling: str = param("default", "the RoPE scaling rule of the configuration", choices=ROPE_SCALINGS, variant=True,
                         name="rope-scaling")
    model: str = _model_param("hf:llama")
    attn: str = _attn_param()
    factor: float = param(2.0, "scaling factor of the rule", kind="float", minimum=1.0, maximum=64.0)
    L: int = param(12, f"prompt length (max_position_embeddings is {ROPE_MAX_POSITIONS}; the offset check runs to 2L)",
                   kind="int", minimum=4, maximum=64)


def _rope_validate(p: Mapping[str, Any]) -> None:
    _common(p, ROPE_MODELS, checkpoint=False, claim="impl:rope")
    why = hfcompat.rope_refusal(p["rope-scaling"])
    if why is not None:
        raise InputError(why)


def _rope_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import impl as num

    L = p["L"]
    splits = sorted({1, ROPE_MAX_POSITIONS // 2, ROPE_MAX_POSITIONS, L - 1} & set(range(1, L)))
    return num.check_rope(p["model"], p["attn"], ctx.seed, rope_parameters(p["rope-scaling"], p["factor"]), L,
                          ROPE_MAX_POSITIONS, splits)


ROPE = Claim(
    requires=REQUIRES,
    worker_group="transformers",
    provenance=CONTRACT,
    id="impl:rope",
    title="RoPE scores depend only on the offset, for each scaling rule, with positions continued through the cache",
    source="Su et al., RoFormer (arXiv 2104.09864) Sec. 3.4.2; transformers modeling_rope_utils; "
           "flash-linear-attention #766",
    statement=("Through the model's own rotary module and rotation, score(q at i, k at j) depends on i - j only, for "
               "the configured scaling rule (default, linear, dynamic, YaRN, Llama-3); and cached decoding continues "
               "the positions: every split's decode equals the full pass."),
    quantifiers=("for every pair of positions (i, j): the score depends on i - j only",
                 "numeric: all pairs up to the model's test length, every split's decode"),
    options=(),
    params_type=RopeParams,
    checks={"numeric": _rope_numeric},
    variants=({"rope-scaling": "default"},),
    expected={"default": "HOLDS", "linear": "HOLDS", "dynamic": "FAILS", "yarn": "HOLDS", "llama3": "HOLDS"},
    validate=_rope_validate,
    explain=_release_explain("impl:rope"),
    caveats=(f"max_position_embeddings = {ROPE_MAX_POSITIONS} so the prompt runs past it, where the length-dependent "
             "rules act. Dynamic NTK scaling recomputes the frequencies from the longest position of each call, so "
             "keys cached before the prompt passed the original length keep the old rotation: the cached decode "
             "departs from the full pass (a property of the rule with a cache, not a rounding effect).",
             "The library computes cos and sin in float32; the offset tolerance is scaled to float32 angles."),
    cost="~0.3 s (default); YaRN and Llama-3 ~5 s (their initialisation)",
)


# ------------------------------------------------------------------ padding


@dataclass(frozen=True)
class PaddingParams(Params):
    positions: str = param("from-mask", "position_ids of the batched calls: from-mask (cumsum of the attention mask "
                           "minus 1, as generate computes them) or implicit (none passed)",
                           choices=("from-mask", "implicit"), variant=True)
    model: str = _model_param("hf:gpt2")
    attn: str = _attn_param()
    steps: int = param(3, "tokens decoded one per call after the batched prefill", kind="int", minimum=1, maximum=32)


def _pad_validate(p: Mapping[str, Any]) -> None:
    _common(p, claim="impl:padding", needs_mask=True)


def _pad_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    if _model(p["model"])[0] == "module":
        from verify.numeric import impl_module

        return impl_module.check_padding(p["model"], ctx.seed, PAD_LENGTHS, p["steps"], p["positions"])
    from verify.numeric import impl as num

    return num.check_padding(p["model"], p["attn"], ctx.seed, PAD_LENGTHS, p["steps"], p["positions"])


PADDING = Claim(
    requires=REQUIRES,
    worker_group="transformers",
    provenance=CONTRACT,
    id="impl:padding",
    title="a left-padded batch with the cache equals each sequence run alone",
    source="transformers #18104 (GPT-2 with the cache and left padding)",
    statement=("A batch of sequences of lengths 6, 4, 2, left-padded to 6 with an attention mask, prefilled through the "
               "cache and then decoded one token per call, gives each sequence's logits at its real positions as the "
               "sequence run alone without padding."),
    quantifiers=("for every sequence of the batch: padded cached logits equal the sequence alone",
                 "numeric: lengths 6, 4, 2 left-padded to 6"),
    options=(),
    params_type=PaddingParams,
    checks={"numeric": _pad_numeric},
    variants=({"positions": "from-mask"},),
    expected={"from-mask": "HOLDS", "implicit": "FAILS"},
    validate=_pad_validate,
    explain=_release_explain("impl:padding"),
    caveats=("With --positions implicit the library numbers every slot, padding included, so a left-padded sequence's "
             "absolute positions shift: GPT-2 (learned absolute positions) fails; RoPE models hold, the shift being "
             "common to query and keys.",),
    cost="~0.3 s",
)

#: impl:padding's sequence lengths, left-padded to the longest
PAD_LENGTHS = (6, 4, 2)


# ------------------------------------------------------------------ reference

#: the families whose attention impl:reference reads from the model (torch-free copy of
#: verify.numeric.impl_reference.HF_READ; a test checks it)
REFERENCE_MODELS = ("llama", "mistral", "qwen2", "gemma2", "gpt2", "bloom", "falcon", "mpt")


@dataclass(frozen=True)
class ReferenceParams(Params):
    model: str = _model_param("hf:llama")
    attn: str = _attn_param()
    dtype: str = param("float64", "dtype of the implementation (the reference is also computed in it, for the "
                       "tolerance)", choices=DTYPE_CHOICES)
    L: int = param(8, "positions of the cache-free pass (a batch of 2)", kind="int", minimum=2, maximum=64)
    window: int = param(4, "sliding window of the tiny model (mistral, qwen2); 0: none", kind="int", minimum=0,
                        maximum=64)
    padding: str = param("none", "none, or a batch of lengths L and L // 2 padded on the left or the right (attention "
                         "mask and position_ids from it, as generate() passes them)", choices=("none", "left", "right"))


def _ref_validate(p: Mapping[str, Any]) -> None:
    if p["model"].startswith("module:"):
        from verify.constructions.features import FeatureError
        from verify.numeric import impl_reference

        try:
            impl_reference.validate(p["model"])
        except FeatureError as e:
            raise InputError(str(e)) from None
        return
    _common(p, REFERENCE_MODELS, claim="impl:reference", any_family=False)


def _ref_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import impl_reference

    if p["model"].startswith("module:"):
        return impl_reference.check_module(p["model"], p["dtype"], ctx.seed, p["L"], padding=p["padding"])
    name = _model(p["model"])[1]
    return impl_reference.check_hf(p["model"], p["attn"], p["dtype"], ctx.seed, p["L"], _window_of(p, name),
                                   p["padding"])


REFERENCE = Claim(
    requires=REQUIRES,
    worker_group="transformers",
    provenance=CONTRACT,
    id="impl:reference",
    title="the attention an implementation computes equals the attention its declared specification defines",
    source="Vaswani et al. 2017 Eq. 1; Ainslie et al. 2023 (GQA) Sec. 2.2; Su et al., RoFormer Eq. 34; Press et al., "
           "ALiBi Sec. 3; the tolerance rule of flash-attention's and PyTorch's SDPA tests",
    statement=("On every batch entry and position of a cache-free pass, the implementation's attention output equals "
               "softmax(q k^T * scale + bias + mask) v with the heads, key/value grouping, head size, scale, causal "
               "mask, window and positional scheme (RoPE base, pair layout, scaling; ALiBi slopes) its specification "
               "declares: float64 to a bound from the unit roundoff, another dtype within 4 x the same-dtype "
               "reference's own error."),
    quantifiers=("for every input, batch entry, position and head: the output equals the specification's attention",
                 "numeric: a batch of 2 inputs of L = 8 positions (a module: standard normal vectors; a model: tokens "
                 "through its embedding), one cache-free pass; --padding left|right: lengths 8 and 4 with a mask"),
    options=(),
    params_type=ReferenceParams,
    checks={"numeric": _ref_numeric},
    expected={"": "HOLDS"},
    validate=_ref_validate,
    explain=_release_explain("impl:reference"),
    caveats=("The specification of a Hugging Face model (hf:NAME, hf-dir:PATH, hf-config:FILE) is read from its "
             "configuration (heads, key/value heads, head size, RoPE base, sliding window, Gemma 2's scale and "
             "soft-cap, Falcon's ALiBi or RoPE) and from what the family's modeling file declares in code: "
             "rotate-half RoPE pairs with float32 angles, in the eager path a float32 softmax, Falcon's ALiBi added "
             "before the 1/sqrt(head_dim) scale (so scaled by it); those float32 steps set the float64 tolerance to "
             "float32's unit roundoff. A module declares its specification as the attention_spec mapping and its "
             "weights through projections() (docs/impl-module.md).",
             "A failure names the batch entry, position and head of the largest deviation (the head solved from the "
             "output through W_o when W_o has full column rank, decided exactly) and, when the implementation matches "
             "the specification with one field changed (scale, grouping, RoPE layout, base or factor, window, causal "
             "mask, softmax precision, ALiBi schedule, head order or factor, soft-cap), that field: the cause, not "
             "only the symptom.",
             "The tiny Gemma 2's soft-cap (50) lies far above its scores (scale 1/16), where cap tanh(s / cap) and s "
             "differ by less than the tolerance: the check cannot tell that cap from none at this size (a "
             "configuration with a cap of 1 can, and a test plants that fault)."),
    cost="~0.1 s per model at L = 8 after the import of transformers; a module: milliseconds",
)

CLAIMS: list[Claim] = [DECODE, WINDOW, ALIBI, ROPE, PADDING, REFERENCE]

#: this paper as a plugin (the registry reads it; see :class:`verify.core.model.Paper`)
PAPER = Paper(key="impl", title="Claims about shipped attention implementations (Hugging Face transformers)",
              claims=tuple(CLAIMS))
