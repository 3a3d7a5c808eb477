"""The one place verify meets the parts of the Hugging Face transformers API that changed between the releases it
supports (:data:`SUPPORTED`: 4.40 to the newest 5.x).  Every model verify builds or loads, every configuration
field whose name moved and every cache it runs goes through here; no other module passes a release-dependent
keyword to transformers.

What changed, and how each is bridged:

- the dtype keyword of ``from_config`` / ``from_pretrained``: ``torch_dtype`` in 4.x, ``dtype`` in 5.x;
- the RoPE configuration: 4.x keeps ``rope_theta`` on the configuration and the scaling rule in ``rope_scaling``
  (``None`` for plain RoPE); 5.x keeps both in ``rope_parameters``.  The scaling rules beyond linear and dynamic
  (YaRN, Llama 3) and ``modeling_rope_utils.ROPE_INIT_FUNCTIONS`` arrived in 4.43;
- the cache: 5.x's ``DynamicCache`` takes the configuration (it builds sliding-window layers from it); in 4.x
  GPT-2, BLOOM, Falcon and MPT keep the legacy tuples up to releases between 4.42 and 4.5x.  verify therefore lets
  the model make its own cache, as ``generate()`` does: the first cached call gets none, and each later call gets
  the ``past_key_values`` the previous one returned (:class:`CacheState`);
- the model families: Gemma 2 exists from 4.42 (:data:`FAMILY_SINCE`);
- calls (:func:`forward`): some 4.x families need what ``generate()`` always gives them: an explicit attention
  mask (4.40's Falcon), and, for a float64 model, a causal mask that does not overflow (4.51's MPT builds it with
  torch's default dtype from float64's minimum).

Outside the range, or with a release that no longer has a name this module needs, :func:`refusal` says so in
one line (installed release and supported range) and the claims refuse before any work.  The version check reads
the installed distribution's metadata; it imports neither transformers nor torch.
"""

from __future__ import annotations

import functools
import inspect
import os
from importlib import metadata
from typing import Any

#: the releases verify's impl claims are tested on and support (pyproject's ``impl`` extra says the same)
SUPPORTED = ">=4.40,<6"
#: the first release that has each family whose support came later than 4.40
FAMILY_SINCE = {"gemma2": (4, 42)}
#: the first release with every RoPE scaling rule (YaRN, Llama 3) and ``ROPE_INIT_FUNCTIONS``
ROPE_RULES_SINCE = (4, 43)
#: the scaling rules a 4.x release before :data:`ROPE_RULES_SINCE` knows (``rope_scaling["type"]``)
EARLY_ROPE_RULES = ("default", "linear", "dynamic")
INSTALL = "pip install 'transformers>=4.40,<6'"


class UnsupportedRelease(Exception):
    """The installed transformers release is outside :data:`SUPPORTED`, or lacks what a check needs; the message
    is one line naming the installed release and the supported range."""


@functools.cache
def installed() -> str | None:
    """The installed transformers release (from its distribution metadata, read once per process: about 1.7 ms a
    read, and every :func:`forward` asks), or None when it is not installed."""
    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return None


def release(text: str | None = None) -> tuple[int, ...]:
    """The numeric release of ``text`` (default: the installed transformers), e.g. (4, 51, 3); () when unknown."""
    from packaging.version import InvalidVersion, Version

    text = installed() if text is None else text
    try:
        return Version(text).release if text else ()
    except InvalidVersion:
        return ()


def refusal(version: str | None = None) -> str | None:
    """One line when the release ``version`` (default: the installed one) is outside :data:`SUPPORTED`, else
    None.  A missing transformers is not refused here (the claims say how to install it)."""
    from packaging.specifiers import SpecifierSet

    text = installed() if version is None else version
    if text is None:
        return None
    if not release(text) or not SpecifierSet(SUPPORTED).contains(text, prereleases=True):
        return (f"transformers {text} is installed; verify's impl checks support transformers {SUPPORTED}: "
                f"{INSTALL}")
    return None


def family_refusal(family: str, version: str | None = None) -> str | None:
    """One line when the installed release predates the model family ``family``, else None."""
    since = FAMILY_SINCE.get(family)
    text = installed() if version is None else version
    if since is None or text is None or release(text) >= since:
        return None
    return (f"--model hf:{family}: transformers {text} is installed and has no {family} model (it arrived in "
            f"{'.'.join(map(str, since))}); supported: transformers {SUPPORTED}")


def rope_refusal(rule: str, version: str | None = None) -> str | None:
    """One line when the installed release cannot configure the RoPE scaling rule ``rule``, else None."""
    text = installed() if version is None else version
    if text is None or rule in EARLY_ROPE_RULES or release(text) >= ROPE_RULES_SINCE:
        return None
    return (f"--rope-scaling {rule}: transformers {text} is installed and has no {rule} RoPE scaling (it arrived in "
            f"{'.'.join(map(str, ROPE_RULES_SINCE))}); {', '.join(EARLY_ROPE_RULES)} run on it")


#: family -> (modeling file under transformers/models, the causal-LM class it must define)
FAMILY_CLASSES = {"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM", "gpt2": "GPT2LMHeadModel",
                  "bloom": "BloomForCausalLM", "falcon": "FalconForCausalLM", "mpt": "MptForCausalLM",
                  "qwen2": "Qwen2ForCausalLM", "gemma2": "Gemma2ForCausalLM"}
#: (file under the transformers package, text it must contain): the names verify uses on every release
NEEDED = (("cache_utils.py", "class DynamicCache"), ("modeling_utils.py", "attn_implementation"),
          ("models/auto/modeling_auto.py", "AutoModelForCausalLM"))


def probe(family: str | None = None) -> str | None:
    """One line when the installed release lacks a name verify uses (the cache class, the attention-implementation
    switch, the family's causal-LM class), else None.  Read from the package's source files, without importing it
    (milliseconds): an API that moved is refused before any work instead of failing inside a check."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0])
    needed = list(NEEDED)
    if family in FAMILY_CLASSES:
        needed.append((f"models/{family}/modeling_{family}.py", f"class {FAMILY_CLASSES[family]}"))
    for rel, text in needed:
        f = root / rel
        if not f.is_file() or text not in f.read_text(errors="replace"):
            return (f"transformers {installed()} is installed and lacks {text.removeprefix('class ')} "
                    f"({rel}), which verify uses; the supported and tested releases: transformers {SUPPORTED}")
    return None


def load() -> Any:
    """The transformers package, imported with every download switched off (HF_HUB_OFFLINE, TRANSFORMERS_OFFLINE)
    and its logging at errors only.

    Raises:
        UnsupportedRelease: the installed release is outside :data:`SUPPORTED`.
    """
    why = refusal()
    if why is not None:
        raise UnsupportedRelease(why)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.utils.logging.disable_progress_bar()  # "Loading weights" bars would break one-line errors
    return transformers


def _dtype_kw(dtype: Any) -> dict[str, Any]:
    return {"dtype": dtype} if release() >= (5,) else {"torch_dtype": dtype}


def model_from_config(config: Any, dtype: Any, attn: str) -> Any:
    """``AutoModelForCausalLM.from_config`` in ``dtype`` with the attention path ``attn`` (eager, sdpa)."""
    return load().AutoModelForCausalLM.from_config(config, attn_implementation=attn, **_dtype_kw(dtype))


#: the largest configuration file read (``config.json`` of a checkpoint directory, ``--model hf-config:FILE``)
CONFIG_BYTES = 1 << 20


def read_config(path: str) -> dict[str, Any]:
    """A configuration file's mapping: a JSON object of at most CONFIG_BYTES naming a ``model_type``.

    Raises:
        ValueError: not a file, too large, not JSON, not an object, or no model_type (one line).
    """
    import json

    if not os.path.isfile(path):
        raise ValueError(f"{path} is not a file")
    if os.path.getsize(path) > CONFIG_BYTES:
        raise ValueError(f"{path} is larger than {CONFIG_BYTES} bytes; a configuration is a small JSON object")
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ValueError(f"{path} is not a JSON file ({str(e).splitlines()[0][:80]})") from None
    if not isinstance(d, dict) or not isinstance(d.get("model_type"), str):
        raise ValueError(f'{path} must be a JSON object naming its "model_type"')
    return d


def config_from_dict(d: dict[str, Any]) -> Any:
    """The configuration a ``config.json`` mapping describes (``AutoConfig.for_model(model_type, **fields)``), with no
    file or network access."""
    rest = {k: v for k, v in d.items() if k != "model_type"}
    return load().AutoConfig.for_model(d["model_type"], **rest)


def model_from_pretrained(path: str, dtype: Any, attn: str | None = None) -> Any:
    """``AutoModelForCausalLM.from_pretrained`` of a local directory (``local_files_only``: never a download)."""
    kw: dict[str, Any] = {} if attn is None else {"attn_implementation": attn}
    return load().AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **_dtype_kw(dtype), **kw)


def rope_config(rope: dict[str, Any] | None, max_positions: int) -> dict[str, Any]:
    """The configuration keywords for ``rope``, given in 5.x's ``rope_parameters`` form (``rope_type``,
    ``rope_theta``, ``factor``, ...), and ``max_position_embeddings``: 5.x takes ``rope_parameters`` as given; 4.x
    takes ``rope_theta`` plus ``rope_scaling`` (None for plain RoPE), where releases before 4.43 name the rule
    ``type``.  4.x's YaRN replaces ``factor`` by max_position_embeddings / original_max_position_embeddings
    whenever the latter is given (4.51's ``_compute_yarn_parameters``), so for YaRN the original length is passed
    as ``max_position_embeddings`` instead, which that code reads as the original length with ``factor`` kept."""
    out: dict[str, Any] = {"max_position_embeddings": max_positions}
    if rope is None:
        return out
    if release() >= (5,):
        return {**out, "rope_parameters": dict(rope)}
    scaling = {k: v for k, v in rope.items() if k != "rope_theta"}
    out["rope_theta"] = rope.get("rope_theta", 10000.0)
    rule = scaling.get("rope_type", "default")
    if rule == "yarn" and "original_max_position_embeddings" in scaling:
        out["max_position_embeddings"] = scaling.pop("original_max_position_embeddings")
    if rule == "default":
        out["rope_scaling"] = None
    else:
        if release() < ROPE_RULES_SINCE:
            scaling["type"] = scaling.pop("rope_type")
        out["rope_scaling"] = scaling
    return out


def rope_theta(config: Any) -> float:
    """The configured RoPE base: ``rope_parameters["rope_theta"]`` in 5.x, ``rope_theta`` in 4.x."""
    params = getattr(config, "rope_parameters", None)
    if isinstance(params, dict) and "rope_theta" in params:
        return float(params["rope_theta"])
    return float(getattr(config, "rope_theta", 10000.0))


def rope_init_refusal() -> str | None:
    """One line when the installed release has no ``ROPE_INIT_FUNCTIONS`` (before 4.43), else None."""
    if release() >= ROPE_RULES_SINCE:
        return None
    return (f"transformers {installed()} has no ROPE_INIT_FUNCTIONS (from "
            f"{'.'.join(map(str, ROPE_RULES_SINCE))})")


def rope_init(rule: str, config: Any, seq_len: int) -> tuple[Any, float]:
    """``ROPE_INIT_FUNCTIONS[rule](config, None, seq_len=seq_len)``: (inverse frequencies, attention factor).

    Raises:
        UnsupportedRelease: the release has no ``ROPE_INIT_FUNCTIONS`` (before 4.43) or no such rule.
    """
    why = rope_init_refusal()
    if why is not None:
        raise UnsupportedRelease(why)
    load()
    from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

    if rule not in ROPE_INIT_FUNCTIONS:
        raise UnsupportedRelease(f"transformers {installed()}: ROPE_INIT_FUNCTIONS has no rule {rule!r}")
    inv, att = ROPE_INIT_FUNCTIONS[rule](config, None, seq_len=seq_len)
    return inv, float(att)


def rotary_module(model: Any, layer: int = 0) -> Any:
    """The rotary module of layer ``layer``: the model's one (``model.model.rotary_emb``, 4.45 and later) or the
    layer's own (``self_attn.rotary_emb``, before).  Its ``inv_freq`` are the frequencies; ``attention_scaling``
    (4.43 and later; 1 before) the factor on cos and sin.

    Raises:
        UnsupportedRelease: neither exists.
    """
    inner = getattr(model, "model", model)
    rot = getattr(inner, "rotary_emb", None)
    if rot is None:
        rot = getattr(inner.layers[layer].self_attn, "rotary_emb", None)
    if rot is None:
        raise UnsupportedRelease(f"transformers {installed()}: {type(model).__name__} has no rotary module verify "
                                 "can reach")
    return rot


def rotate(model: Any, q: Any, k: Any) -> tuple[Any, Any]:
    """Queries and keys ``[batch, heads, pos, head_dim]`` (float64) at positions 0..pos-1, rotated by the model's
    own rotary module and its modeling file's ``apply_rotary_pos_emb``.  The module is one per model in 4.45 and
    later (``model.model.rotary_emb``), one per attention layer before (layer 0's); it is called as
    ``rot(x, position_ids)`` where it takes position ids (Llama from 4.38), else as ``rot(x, seq_len=...)`` with
    the positions given to ``apply_rotary_pos_emb`` (Mistral and Qwen2 in 4.40)."""
    import sys

    import torch

    rot = rotary_module(model)
    apply = sys.modules[type(model).__module__].apply_rotary_pos_emb
    P = int(q.shape[-2])
    pos = torch.arange(P)[None]
    x = torch.zeros(1, P, int(q.shape[-1]), dtype=torch.float64)
    if "position_ids" in inspect.signature(rot.forward).parameters:
        cos, sin = rot(x, pos)
        return apply(q, k, cos.to(torch.float64), sin.to(torch.float64))
    cos, sin = rot(x, seq_len=P)
    return apply(q, k, cos.to(torch.float64), sin.to(torch.float64), pos)


def cache_keyword(model: Any) -> str:
    """The forward keyword that takes the cache (``past_key_values``; ``cache`` where a model names it so)."""
    params = inspect.signature(model.forward).parameters
    return "cache" if "cache" in params else "past_key_values"


def forward(model: Any, past: int = 0, **kw: Any) -> Any:
    """``model(**kw)`` (``past``: positions already in the cache).  On a 4.x release two things ``generate()`` does
    are done here too: a call without an ``attention_mask`` gets one of ones over the past and new positions
    (4.40's Falcon adds the mask to its ALiBi scores unconditionally and fails on None), and a float64 model runs
    with torch's default dtype at float64 for the call (restored after it), so that a mask built with the default
    dtype from float64's minimum does not overflow (4.51's MPT)."""
    import torch

    if release() >= (5,):
        return model(**kw)
    if "attention_mask" not in kw and "input_ids" in kw:
        ids = kw["input_ids"]
        kw["attention_mask"] = torch.ones(int(ids.shape[0]), past + int(ids.shape[1]), dtype=torch.long)
    if getattr(model, "dtype", None) != torch.float64:
        return model(**kw)
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        return model(**kw)
    finally:
        torch.set_default_dtype(before)


class CacheState:
    """The cache of one decoding run of at most ``max_len`` positions, as ``generate()`` keeps it: the first cached
    call passes none and the model makes its own (5.x: ``DynamicCache(config=...)``; 4.x: a ``DynamicCache`` or the
    legacy tuples, as the family does), and each later call passes what the previous call returned.

    One exception, as ``generate()`` makes it too: a 4.x configuration whose ``cache_implementation`` is
    ``"hybrid"`` (Gemma 2) gets a ``HybridCache`` of ``max_len`` positions before the first call, with explicit
    ``cache_position`` on every call (the model's own would hold only the first call's positions)."""

    def __init__(self, max_len: int) -> None:
        self.max_len = max_len
        self.value: Any = None
        self.seen = 0

    def call(self, model: Any, **kw: Any) -> Any:
        ids = kw["input_ids"]
        if self.value is None and release() < (5,) and getattr(model.config, "cache_implementation", None) == "hybrid":
            import importlib

            load()  # HybridCache: 4.x only, and not exported at the top level before 4.44
            hybrid = importlib.import_module("transformers.cache_utils").HybridCache
            self.value = hybrid(model.config, max_batch_size=int(ids.shape[0]), max_cache_len=self.max_len,
                                device=model.device, dtype=model.dtype)
        if self.value is not None and type(self.value).__name__ == "HybridCache":
            import torch

            kw["cache_position"] = torch.arange(self.seen, self.seen + int(ids.shape[1]))
        out = forward(model, self.seen, use_cache=True, **{cache_keyword(model): self.value}, **kw)
        self.value = out.past_key_values
        self.seen += int(ids.shape[1])
        return out


__all__ = ["SUPPORTED", "FAMILY_SINCE", "ROPE_RULES_SINCE", "EARLY_ROPE_RULES", "UnsupportedRelease", "installed",
           "release", "refusal", "probe", "family_refusal", "rope_refusal", "load", "model_from_config",
           "model_from_pretrained", "rope_config", "rope_theta", "rope_init_refusal", "rope_init", "rotary_module",
           "rotate", "cache_keyword", "forward", "CacheState"]
