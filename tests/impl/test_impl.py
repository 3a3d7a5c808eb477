"""The impl claims: HOLDS on the pinned transformers, FAILS with a witness under injected faults, and a one-line
refusal without transformers."""

from __future__ import annotations

import os
import sys

import pytest

from verify.core.model import InputError
from verify.proofs import impl as paper

if os.environ.get("CI"):  # CI installs the impl extra (.ci/run): there a missing transformers is a failure
    import transformers  # noqa: F401
else:
    pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from verify.constructions.impl_alibi import floats, mpt_slopes, press_slopes  # noqa: E402
from verify.numeric import impl as num  # noqa: E402
from verify.numeric import impl_models as im  # noqa: E402


def test_model_lists_agree() -> None:
    assert paper.HF_MODELS == im.HF_MODELS


def test_refuses_without_transformers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # an import of it now fails
    for claim in paper.CLAIMS:
        with pytest.raises(InputError, match=r"pip install 'verify-attention\[impl\]'"):
            claim.parse_params({})


def test_refuses_missing_checkpoint_and_unknown_model() -> None:
    with pytest.raises(InputError, match="no config.json"):
        paper.DECODE.parse_params({"model": "hf-dir:/no/such/dir"})
    with pytest.raises(InputError, match="hf:NAME"):
        paper.DECODE.parse_params({"model": "hf:nosuch"})
    with pytest.raises(InputError, match="needs one of"):
        paper.ALIBI.parse_params({"model": "hf:llama"})


@pytest.mark.parametrize("spec", ["hf:llama", "hf:mistral", "hf:gpt2", "hf:bloom", "hf:falcon"])
def test_decode_holds(spec: str) -> None:
    ev = num.check_decode(spec, "eager", "float64", 0, 6, window=4 if spec == "hf:mistral" else None)
    assert (ev.status, ev.outcome) == ("consistent", "holds"), ev.summary


def test_decode_fails_with_a_cache_storing_wrong_positions(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache reports one more stored position than it holds: decoded tokens are placed (rotated) one
    position late."""
    from transformers import cache_utils

    orig = cache_utils.DynamicCache.get_seq_length

    def shifted(self, layer_idx: int = 0) -> int:
        n = orig(self, layer_idx)
        return n + 1 if n else n

    monkeypatch.setattr(cache_utils.DynamicCache, "get_seq_length", shifted)
    ev = num.check_decode("hf:llama", "eager", "float64", 0, 6)
    assert ev.outcome == "fails", ev.summary
    assert ev.witness["prompt_length"] >= 2 and ev.witness["deviation"] > 10 * num.CAL_CAP
    assert ev.witness["tolerance"] == "<= 1e-06"  # the calibrated tolerance, recorded by its bound


def _widen_window(monkeypatch: pytest.MonkeyPatch, w: int) -> None:
    """Inject the off-by-one of transformers #39408: the sliding-window mask admits w + 1 keys.  5.x builds the
    mask in masking_utils; a 4.x release (no masking_utils) passes Mistral's eager attention an additive mask,
    opened here at distance w."""
    import transformers

    if hasattr(transformers, "masking_utils") or transformers.__version__.startswith("5."):
        from transformers import masking_utils

        def wide(sliding_window: int):
            def inner(batch_idx, head_idx, q_idx, kv_idx):  # admits w + 1 keys
                return kv_idx > q_idx - sliding_window - 1
            return inner

        monkeypatch.setattr(masking_utils, "sliding_window_overlay", wide)
        return
    from transformers.models.mistral import modeling_mistral

    orig = modeling_mistral.eager_attention_forward

    def opened(module, query, key, value, attention_mask, *a, **k):
        if attention_mask is not None:
            n = key.shape[-2]  # the mask may hold more columns than keys (4.51 slices it to the keys)
            attention_mask = attention_mask[..., :n].clone()
            q = attention_mask.shape[-2]
            for i in range(q):
                j = i + (n - q) - w
                if j >= 0:
                    attention_mask[..., i, j] = 0
        return orig(module, query, key, value, attention_mask, *a, **k)

    monkeypatch.setattr(modeling_mistral, "eager_attention_forward", opened)


def test_window_holds_and_fails_off_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    ok = num.check_window("hf:mistral", "eager", 0, 9, 4, [3, 4, 5])
    assert ok.outcome == "holds", ok.summary
    _widen_window(monkeypatch, 4)
    ev = num.check_window("hf:mistral", "eager", 0, 9, 4, [3, 4, 5])
    assert ev.outcome == "fails", ev.summary
    assert ev.witness["extra_distances"] == [4] and ev.witness["run"] == "no cache"


def test_alibi_holds_and_fails_with_flipped_sign(monkeypatch: pytest.MonkeyPatch) -> None:
    sched = floats(press_slopes(4))
    ok = num.check_alibi("hf:bloom", "eager", 0, 4, 8, sched, "press")
    assert ok.outcome == "holds", ok.summary
    from transformers.models.bloom import modeling_bloom

    if hasattr(modeling_bloom, "_get_alibi_slopes"):  # 5.x
        orig = modeling_bloom._get_alibi_slopes
        monkeypatch.setattr(modeling_bloom, "_get_alibi_slopes", lambda n, device: -orig(n, device))
    else:  # 4.x: the bias tensor itself
        orig_t = modeling_bloom.build_alibi_tensor
        monkeypatch.setattr(modeling_bloom, "build_alibi_tensor", lambda *a, **k: -orig_t(*a, **k))
    ev = num.check_alibi("hf:bloom", "eager", 0, 4, 8, sched, "press")
    assert ev.outcome == "fails" and ev.witness["reason"].startswith("sign flipped"), ev.summary


def test_alibi_schedule_symbolic() -> None:
    from verify.symbolic import impl as sym

    assert sym.check_schedule(8, "press").outcome == "holds"
    assert sym.check_schedule(12, "press").outcome == "holds"
    for n in (3, 5, 6, 8, 12, 20):  # MPT's route (round n up, odd then even) reaches Press et al.'s schedule
        assert sym.check_schedule(n, "mpt").outcome == "holds"
        assert mpt_slopes(n) == press_slopes(n)


def test_rope_holds_and_fails_with_zero_offset_during_decode(monkeypatch: pytest.MonkeyPatch) -> None:
    rope = paper.rope_parameters("default", 2.0)
    ok = num.check_rope("hf:llama", "eager", 0, rope, 10, 8, [1, 4, 8])
    assert ok.outcome == "holds", ok.summary
    from transformers.models.llama import modeling_llama

    orig = modeling_llama.LlamaRotaryEmbedding.forward

    def zero_on_decode(self, x, position_ids, *a, **k):
        if position_ids.shape[-1] == 1:
            position_ids = torch.zeros_like(position_ids)
        return orig(self, x, position_ids, *a, **k)

    monkeypatch.setattr(modeling_llama.LlamaRotaryEmbedding, "forward", zero_on_decode)
    ev = num.check_rope("hf:llama", "eager", 0, rope, 10, 8, [1, 4, 8])
    assert ev.outcome == "fails" and ev.witness["split"] >= 1, ev.summary


def test_padding_holds_from_mask_and_gpt2_implicit_fails() -> None:
    assert num.check_padding("hf:gpt2", "eager", 0, (6, 4, 2), 2, "from-mask").outcome == "holds"
    ev = num.check_padding("hf:gpt2", "eager", 0, (6, 4, 2), 2, "implicit")
    assert ev.outcome == "fails" and ev.witness["padding"] > 0


def test_verify_all_without_transformers_lists_the_impl_claims_instead_of_stopping(monkeypatch):
    """Without the optional package the impl claims are listed as not checked, with the install line, and
    every other claim still runs; `verify impl:decode` alone still refuses in one line.  Injected fault: a
    claim whose requirement is ignored (requires=()) would reach its validator and stop the whole run."""
    import sys

    from verify.core import registry
    from verify.evidence import Context
    from verify.pipeline.run import run_all

    monkeypatch.setitem(sys.modules, "transformers", None)
    claims = [c for c in registry.all_claims() if c.paper == "impl"]
    assert claims and all(c.missing_requirements() for c in claims)
    ran = run_all(claims, Context(), ("symbolic",))
    assert ran.results == [] and len(ran.unavailable) == len(claims)
    assert all("pip install 'verify-attention[impl]'" in u for u in ran.unavailable)
    import dataclasses

    from verify.core.model import InputError

    bare = dataclasses.replace(claims[0], requires=())
    with pytest.raises(InputError, match="transformers"):
        run_all([bare], Context(), ("symbolic",))


def test_summaries_carry_no_rounding_digits():
    """A deviation at rounding level or within its tolerance is written as a bound (its digits follow the CPU's
    vector width: the tolerance itself, since a factor-of-3 bucket above the value still moved under the perturbed
    float path); a real mismatch keeps three digits.  Fault: formatting with .3g puts 4.72e-16 in the JSON."""
    assert num._noise(4.72e-16, 1e-9) == "< 1e-12" and num._noise(0.0, 1e-9) == "= 0"
    assert num._noise(0.98e-7, 1e-5) == num._noise(1.03e-7, 1e-5) == num._noise(5.6e-7, 1e-5) == "<= 1e-05"
    assert num._noise(6.7e-8) == "< 3e-07"  # no tolerance given: the bucket
    assert num._noise(0.0112, 1e-9) == "= 0.0112"
    ev = num.check_decode("hf:llama", "eager", "float64", 0, 6)
    assert ev.summary.endswith("max |full| <= 1e-06 (tolerance calibrated, <= 1e-06)"), ev.summary


def test_float64_decode_records_the_calibration_bound_not_the_cpus_rounding():
    """The float64 deviation, prefix rounding and calibrated tolerance are the CPU's rounding of the library's float32
    softmax (< 1e-12 here, 8e-8 under ATEN_CPU_CAPABILITY=avx2): recorded by the bound CAL_CAP, the same on both,
    and as they are under the perturbed float path, which models the AVX2 machine's vector tail.  A real mismatch
    keeps three digits.  Fault: recording the values themselves (rec = identity) gives 7.8527e-08 under AVX2 and
    fails this test's perturbed run."""
    from verify import floatnoise

    assert num._calibrated_record(7.8527e-08) == num._calibrated_record(1e-13) == num._calibrated_record(0.0) == "<= 1e-06"
    assert num._calibrated_record(0.012345) == 0.0123
    plain = num.check_decode("hf:llama", "eager", "float64", 0, 6)
    with floatnoise.perturbed(1):
        moved = num.check_decode("hf:llama", "eager", "float64", 0, 6)
    assert moved.outcome == plain.outcome == "holds"
    keys = ("max_deviation", "tolerance", "rounding", "per_split_max")
    assert {k: moved.numbers[k] for k in keys} == {k: plain.numbers[k] for k in keys}
    assert moved.summary == plain.summary


def test_impl_statements_are_labelled_as_the_librarys_contract_not_a_paper():
    """No impl variant may be reported as "the paper's statement": there is no paper.  Fault: a claim without its
    provenance declaration falls back to "paper"."""
    import dataclasses

    for claim in paper.CLAIMS:
        for v in claim.variants:
            assert claim.provenance_of(dict(v)).kind == "contract", claim.id
    bare = dataclasses.replace(paper.CLAIMS[0], provenance={})
    assert bare.provenance_of(dict(bare.variants[0])).kind == "paper"
