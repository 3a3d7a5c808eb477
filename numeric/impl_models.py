"""Tiny random Hugging Face transformers models built locally from a configuration (never a download), and the
calls the impl claims make on them: a full forward pass and cached incremental decoding through the library's
own cache (the one the model makes, as ``generate()`` does).  Every release-dependent call goes through
:mod:`verify.hfcompat` (transformers 4.40 to 5.x).

Every model is drawn under a fixed seed inside :func:`torch.random.fork_rng` (the global generator is left as it
was), in float64 unless a dtype is asked for, and with its query and key projections scaled by :data:`SHARPEN` so
attention is far from uniform: a mask, offset or cache bug then moves the output far above rounding.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from verify import hfcompat

#: the model families ``--model hf:NAME`` builds (kept equal to verify.proofs.impl.HF_MODELS; a test checks it)
HF_MODELS = ("llama", "mistral", "gpt2", "bloom", "falcon", "mpt", "qwen2", "gemma2")
DTYPES = {"float64": torch.float64, "float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
#: factor on the query and key projections (fused qkv projections: on the whole projection)
SHARPEN = 4.0
VOCAB = 128
HEAD_DIM = 16
LAYERS = 2


def transformers_module() -> Any:
    """The transformers package, offline and quiet (:func:`verify.hfcompat.load`; refuses a release outside the
    supported range)."""
    return hfcompat.load()


@dataclass(frozen=True)
class Built:
    """A model ready to run: the module (eval mode), its configuration, and how it was made."""

    model: Any
    config: Any
    spec: str
    attn: str
    dtype: str
    heads: int

    @property
    def vocab(self) -> int:
        return int(self.config.vocab_size)

    def describe(self) -> dict[str, Any]:
        return {"model": self.spec, "class": type(self.model).__name__, "attn": self.attn, "dtype": self.dtype,
                "heads": self.heads, "layers": int(getattr(self.config, "num_hidden_layers", LAYERS)),
                "sliding_window": getattr(self.config, "sliding_window", None), "sharpen": SHARPEN}


def tiny_config(name: str, *, heads: int = 4, window: int | None = None, rope: dict[str, Any] | None = None,
                max_positions: int = 256) -> Any:
    """A tiny configuration of family ``name`` (2 layers, head size 16, vocabulary 128)."""
    tf = transformers_module()
    hidden = heads * HEAD_DIM
    common = dict(vocab_size=VOCAB, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if name in ("llama", "mistral", "qwen2", "gemma2"):
        kw: dict[str, Any] = dict(hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=LAYERS,
                                  num_attention_heads=heads, num_key_value_heads=heads,
                                  **common)
        kw.update(hfcompat.rope_config(rope, max_positions))
        if name == "mistral":
            kw["sliding_window"] = window
        if name == "qwen2" and window is not None:
            kw.update(use_sliding_window=True, sliding_window=window, max_window_layers=LAYERS,
                      layer_types=["sliding_attention"] * LAYERS)
        if name == "gemma2":
            kw.update(head_dim=HEAD_DIM, sliding_window=window or 4096)
        cls = getattr(tf, {"llama": "LlamaConfig", "mistral": "MistralConfig", "qwen2": "Qwen2Config",
                           "gemma2": "Gemma2Config"}[name])  # by name: a release may lack one (hfcompat.FAMILY_SINCE)
        return cls(**kw)
    if name == "gpt2":
        return tf.GPT2Config(n_embd=hidden, n_layer=LAYERS, n_head=heads, n_positions=max_positions, **common)
    if name == "bloom":
        return tf.BloomConfig(hidden_size=hidden, n_layer=LAYERS, n_head=heads, **common)
    if name == "falcon":
        return tf.FalconConfig(hidden_size=hidden, num_hidden_layers=LAYERS, num_attention_heads=heads, alibi=True,
                               new_decoder_architecture=False, multi_query=False, parallel_attn=True, bias=False,
                               **common)
    if name == "mpt":
        return tf.MptConfig(d_model=hidden, n_layers=LAYERS, n_heads=heads, max_seq_len=max_positions, **common)
    raise ValueError(f"unknown model family {name!r}; known: {', '.join(HF_MODELS)}")


def _sharpen(model: torch.nn.Module) -> None:
    with torch.no_grad():
        for name, prm in model.named_parameters():
            leaf = name.rsplit(".", 2)[-2] if "." in name else name
            if name.endswith(".weight") and leaf in ("q_proj", "k_proj", "c_attn", "query_key_value", "Wqkv"):
                prm.mul_(SHARPEN)


def build(spec: str, *, attn: str = "eager", dtype: str = "float64", seed: int = 0, heads: int = 4,
          window: int | None = None, rope: dict[str, Any] | None = None, max_positions: int = 256) -> Built:
    """The model ``spec`` names: ``hf:NAME`` (a tiny random model of family NAME drawn under ``seed``) or
    ``hf-dir:PATH`` (a local checkpoint directory, loaded with ``local_files_only``) or ``hf-config:FILE`` (a random
    model of the configuration in that JSON file, drawn under ``seed`` as hf:NAME's are)."""
    kind, _, rest = spec.partition(":")
    if kind == "hf-dir":
        model = hfcompat.model_from_pretrained(rest, DTYPES[dtype], attn).eval()
        n = int(getattr(model.config, "num_attention_heads", 0) or getattr(model.config, "n_head", 0))
        return Built(model, model.config, spec, attn, dtype, n)
    if kind == "hf-config":
        cfg = hfcompat.config_from_dict(hfcompat.read_config(rest))
        heads = int(getattr(cfg, "num_attention_heads", 0) or getattr(cfg, "n_head", 0)
                    or getattr(cfg, "n_heads", 0))
    else:
        cfg = tiny_config(rest, heads=heads, window=window, rope=rope, max_positions=max_positions)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = hfcompat.model_from_config(cfg, torch.float64, attn)
    _sharpen(model)
    model = model.to(DTYPES[dtype]).eval()
    return Built(model, model.config, spec, attn, dtype, heads)


def cast(b: Built, dtype: str) -> Built:
    """The same weights in another dtype (a copy)."""
    import copy

    m = copy.deepcopy(b.model).to(DTYPES[dtype]).eval()
    return Built(m, m.config, b.spec, b.attn, dtype, b.heads)


def tokens(L: int, vocab: int, seed: int, batch: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(3, vocab, (batch, L), generator=g)


def new_cache(b: Built, max_len: int) -> hfcompat.CacheState:
    """An empty cache for one decoding run of at most ``max_len`` positions: the model makes its own on the first
    call, as ``generate()`` does (:class:`verify.hfcompat.CacheState`)."""
    return hfcompat.CacheState(max_len)


def full(b: Built, ids: torch.Tensor, **kw: Any) -> torch.Tensor:
    """Logits of one forward pass without a cache, float64."""
    with torch.no_grad():
        return hfcompat.forward(b.model, input_ids=ids, use_cache=False, **kw).logits.to(torch.float64)


def decode(b: Built, ids: torch.Tensor, split: int) -> torch.Tensor:
    """Logits at every position: a prefill call on ``ids[:, :split]``, then one call per token, all through one
    library cache; float64."""
    cache = new_cache(b, ids.shape[1])
    outs = []
    with torch.no_grad():
        outs.append(cache.call(b.model, input_ids=ids[:, :split]).logits)
        for t in range(split, ids.shape[1]):
            outs.append(cache.call(b.model, input_ids=ids[:, t:t + 1]).logits)
    return torch.cat(outs, 1).to(torch.float64)


def call(b: Built, ids: torch.Tensor, cache: hfcompat.CacheState | None = None, **kw: Any) -> Any:
    """One forward call (through ``cache`` when given); returns the library's output object."""
    with torch.no_grad():
        if cache is None:
            return hfcompat.forward(b.model, input_ids=ids, use_cache=False, **kw)
        return cache.call(b.model, input_ids=ids, **kw)


def first_attention(model: torch.nn.Module) -> torch.nn.Module:
    """The first attention module of the model (layer 0): its input at position t depends on token t alone."""
    for mod in model.modules():
        n = type(mod).__name__
        if n.endswith("Attention") and "Flash" not in n:
            return mod
    raise ValueError(f"no attention module found in {type(model).__name__}")
