"""Assertions for your own test suite: your attention code against the attention its specification defines
(impl:reference, :mod:`verify.numeric.impl_reference`).

    import torch
    from verify.testing import assert_attention_conforms

    def test_my_attention_is_what_it_declares():
        layer = MyAttention(d_model=64, n_heads=8, n_kv_heads=2)       # attention_spec + projections()
        assert_attention_conforms(layer)                               # float64: to the unit roundoff
        assert_attention_conforms(layer.to(torch.bfloat16), dtype=torch.bfloat16)

    def test_with_a_spec_given_here(attention_conforms):               # the pytest fixture does the same
        attention_conforms(MyAttention(...), spec={"d_model": 64, "n_heads": 8, "positional": "rope"})

A module follows docs/impl-module.md's protocol (``d_model``, ``n_heads``, ``module(x, cache=None, positions=None)
-> (out, cache)``) and declares its specification as the mapping ``attention_spec`` (or you pass ``spec=``) and its
weights through ``projections()``.  A Hugging Face model of a family impl:reference reads (llama, mistral, qwen2,
gpt2, bloom, mpt) is read from its configuration: its layer 0's attention is checked.  A mismatch raises
:class:`AssertionError` whose message is the witness: the deviation, its tolerance, the batch entry and position,
and the specification field that explains it when one does.
"""

from __future__ import annotations

from typing import Any, Mapping


def _dtype_name(dtype: Any) -> str:
    name = str(dtype).removeprefix("torch.")
    if name not in ("float64", "float32", "float16", "bfloat16"):
        raise ValueError(f"dtype {dtype}: one of torch.float64, float32, float16, bfloat16")
    return name


def conformance(module_or_model: Any, spec: Mapping[str, Any] | None = None, dtype: Any = "float64", seed: int = 0,
                L: int = 8, weights: Any = None) -> Any:
    """The impl:reference evidence for an attention module or a Hugging Face model (see the module docstring).

    Args:
        module_or_model: the module (in ``dtype``) or a transformers model (llama, mistral, qwen2, gpt2, bloom,
            mpt).
        spec: the specification's fields (default: the module's ``attention_spec``; a model's configuration).
        dtype: the dtype the module computes in (torch dtype or its name); the reference is float64, and also
            computed in ``dtype`` for the tolerance.
        seed: the inputs' seed (standard normal vectors, or tokens for a model).
        L: positions of the cache-free pass (a batch of 2).
        weights: the float64 weights the reference uses (``projections()`` of a float64 copy); default: the
            module's own ``projections()`` in float64 (exact when the module is float64).

    Returns:
        :class:`verify.evidence.Evidence` (``.outcome``, ``.summary``, ``.witness``, ``.tolerance``).

    Raises:
        ValueError: a specification field missing or contradictory, a module without the protocol.
    """
    from verify.constructions.features import FeatureError
    from verify.numeric import impl_module as im
    from verify.numeric import impl_reference as R

    name = _dtype_name(dtype)
    if hasattr(module_or_model, "config") and hasattr(module_or_model, "model"):
        from verify.numeric import impl_models as hf

        cfg = module_or_model.config
        b = hf.Built(module_or_model, cfg, f"model:{type(module_or_model).__name__}", "eager", name,
                     int(cfg.num_attention_heads))
        attn = getattr(cfg, "_attn_implementation", "eager") or "eager"
        return R.hf_evidence(b, b, attn, name, seed, L, b.spec, given=spec)
    label = f"module {type(module_or_model).__name__}"
    try:
        a = im.Attn(module_or_model, label, name, int(module_or_model.d_model), int(module_or_model.n_heads),
                    getattr(module_or_model, "window", None), False, im.Guard(label))
        return R.module_evidence(a, a, label, name, seed, L, spec, weights=weights)
    except FeatureError as e:
        raise ValueError(str(e)) from None


def assert_attention_conforms(module_or_model: Any, spec: Mapping[str, Any] | None = None, dtype: Any = "float64",
                              seed: int = 0, L: int = 8, weights: Any = None) -> None:
    """Assert that the attention ``module_or_model`` computes is the one its specification defines
    (:func:`conformance`'s arguments); raises :class:`AssertionError` with the witness when it is not, including
    when the comparison is inconclusive (a deviation between the tolerance and 10 x it)."""
    ev = conformance(module_or_model, spec, dtype, seed, L, weights)
    if ev.outcome is None or ev.outcome.value != "holds":
        raise AssertionError(f"{ev.summary}; witness: {ev.witness}; tolerance: {ev.tolerance}")


__all__ = ["assert_attention_conforms", "conformance"]
