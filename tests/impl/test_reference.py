"""impl:reference: attention code against the attention its declared specification defines.  The specification's
refusals, the reference against hand arithmetic, the shipped modules (the good ones HOLD, each full-pass bug FAILS
with the field that explains it), the tiny Hugging Face models in float64 and low precision on eager and sdpa, an
injected scale fault in the library, and the testing API."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from verify.constructions import attention_spec as S  # noqa: E402
from verify.frontends.cli import main  # noqa: E402
from verify.numeric import impl_reference as R  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "attention_modules"
BASE = {"d_model": 32, "n_heads": 4}


@pytest.mark.parametrize("extra, field", [
    ({"n_kv_heads": 3}, "'n_kv_heads' (3) must divide 'n_heads' (4)"), ({"window": 0}, "'window' must be >= 1"),
    ({"rope_layout": "zigzag"}, "'rope_layout' must be one of half, interleaved"),
    ({"positional": "rope", "head_dim": 7}, "'head_dim' (7) must be even under RoPE"),
    ({"n_heads": None}, "'n_heads' is missing"), ({"heads": 4}, "'heads' is unknown"),
    ({"scale": -1.0}, "'scale' must be positive"), ({"causal": 1}, "'causal' must be bool"),
    ({"alibi_order": "backwards"}, "'alibi_order' must be one of listed, reversed"),
    ({"softcap": 0.0}, "'softcap' must be positive"), ({"alibi_scale": "half"}, "'alibi_scale' must be float")])
def test_a_bad_spec_is_refused_naming_its_field(extra: dict, field: str) -> None:
    with pytest.raises(S.SpecError) as e:
        S.from_mapping({**BASE, **extra})
    assert field in str(e.value) and "\n" not in str(e.value)


def test_the_reference_against_hand_arithmetic() -> None:
    """One head, head_dim 2, no positions: at query 1 the scores are q1.k0 / sqrt 2 = 0 and q1.k1 / sqrt 2 = 1, so
    the weights are 1/(1 + e) and e/(1 + e); the causal query 0 sees only key 0."""
    s = S.from_mapping({"d_model": 2, "n_heads": 1})
    q = torch.tensor([[[[1.0, 0.0], [0.0, math.sqrt(2)]]]], dtype=torch.float64)
    k = torch.tensor([[[[1.0, 0.0], [0.0, 1.0]]]], dtype=torch.float64)
    v = torch.tensor([[[[2.0, 0.0], [0.0, 3.0]]]], dtype=torch.float64)
    pos = torch.arange(2)[None]
    out = S.reference(s, q, k, v, pos, pos)[0, 0]
    e = math.e
    assert torch.allclose(out[0], torch.tensor([2.0, 0.0], dtype=torch.float64), atol=0, rtol=0)
    assert torch.allclose(out[1], torch.tensor([2 / (1 + e), 3 * e / (1 + e)], dtype=torch.float64), rtol=1e-15)


def test_rope_layouts_are_one_permutation_apart() -> None:
    """The interleaved layout on x equals the half layout on x with its dimensions reordered (2i -> i, 2i+1 -> i +
    half): the two layouts differ only by which dimensions pair up."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(1, 1, 5, 8, generator=g, dtype=torch.float64)
    pos = torch.arange(5)[None]
    half = S.from_mapping({"d_model": 8, "n_heads": 1, "positional": "rope"})
    inter = S.from_mapping({"d_model": 8, "n_heads": 1, "positional": "rope", "rope_layout": "interleaved"})
    perm = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])
    assert torch.allclose(S.rope(x, pos, inter)[..., perm], S.rope(x[..., perm], pos, half), rtol=0, atol=1e-15)
    assert not torch.allclose(S.rope(x, pos, inter), S.rope(x, pos, half))


@pytest.fixture
def in_examples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(EXAMPLES)


@pytest.mark.parametrize("factory", ["good_attention:make", "good_attention:make_gqa", "good_attention:make_windowed",
                                     "good_attention:make_alibi", "good_attention:make_alibi6"])
def test_the_good_modules_hold(in_examples: None, factory: str) -> None:
    ev = R.check_module(f"module:{factory}", "float64", 0, 8)
    assert (ev.status, ev.outcome) == ("consistent", "holds"), ev.summary
    low = R.check_module(f"module:{factory}", "bfloat16", 0, 8)
    assert low.outcome == "holds", low.summary


@pytest.mark.parametrize("factory, field, change", [
    ("make_scale_head_dim", "scale", "1/sqrt(8) -> 1/8"), ("make_gqa_strided", "grouping", "consecutive -> strided"),
    ("make_rope_interleaved", "rope_layout", "half -> interleaved"),
    ("make_rope_base", "rope_base", "10000.0 -> 500000.0"), ("make_rope_factor", "rope_factor", "1.0 -> 2.0"),
    ("make_window_off_by_one", "window", "4 -> 5"), ("make_half_softmax", "softmax_dtype", "same -> float16"),
    ("make_alibi_reversed", "alibi_order", "listed -> reversed"),
    ("make_alibi_geometric", "alibi_schedule", "press -> geometric")])
def test_each_full_pass_bug_fails_and_is_explained(in_examples: None, factory: str, field: str, change: str) -> None:
    """The shipped full-pass bugs: invisible to impl:decode (the full pass is its reference), each FAILS here with
    the batch entry, the position, the head and the field whose other value the module computes."""
    ev = R.check_module(f"module:full_pass_bugs:{factory}", "float64", 0, 8)
    assert ev.outcome == "fails", ev.summary
    assert (ev.witness["explained_by"], ev.witness["change"]) == (field, change)
    assert ev.witness["deviation"] > 1e6 * ev.witness["tolerance"] and ev.witness["deviation_then"] <= R.EXPLAINS * ev.witness["tolerance"]
    assert {"batch", "position", "head"} <= set(ev.witness)
    # the head named is one the bug changes: strided grouping moves heads 1 and 2 (heads 0 and 3 read the same kv
    # head either way); reversed slopes leave no head of 4 unchanged; the geometric rule changes heads 4 and 5 of 6
    assert ev.witness["head"] in {"make_gqa_strided": {1, 2}, "make_alibi_geometric": {4, 5}}.get(factory, range(6))
    from verify.numeric import impl_module

    dec = impl_module.check_decode(f"module:full_pass_bugs:{factory}", "float64", 0, 6)
    assert dec.outcome == "holds"  # the self-consistency check cannot see it


def test_a_module_without_a_spec_is_refused(in_examples: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["impl:reference", "--model", "module:buggy_attention:make_wide_window"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs the module's attention_spec" in err[0]


@pytest.fixture
def hf() -> None:
    if os.environ.get("CI"):
        import transformers  # noqa: F401
    else:
        pytest.importorskip("transformers")


@pytest.mark.parametrize("model, window, attn", [
    ("hf:llama", None, "eager"), ("hf:llama", None, "sdpa"), ("hf:mistral", 4, "eager"), ("hf:mistral", 4, "sdpa"),
    ("hf:qwen2", 4, "eager"), ("hf:qwen2", 4, "sdpa"), ("hf:gpt2", None, "eager"), ("hf:gpt2", None, "sdpa"),
    ("hf:bloom", None, "eager"), ("hf:mpt", None, "eager"), ("hf:gemma2", 4, "eager"), ("hf:falcon", None, "sdpa")])
def test_the_tiny_models_hold(hf: None, model: str, window: int | None, attn: str) -> None:
    ev = R.check_hf(model, attn, "float64", 0, 8, window)
    assert ev.outcome == "holds", ev.summary
    spec = ev.numbers["spec"]
    # the float32 steps each family's modeling file fixes set the tolerance; GPT-2 and Falcon have none
    assert ev.numbers["tolerance"] < (1e-13 if model in ("hf:gpt2", "hf:falcon") else 1e-4)
    assert spec["positional"] == {"hf:gpt2": "none", "hf:bloom": "alibi", "hf:mpt": "alibi",
                                  "hf:falcon": "alibi"}.get(model, "rope")
    if model == "hf:gemma2":  # query_pre_attn_scalar 256, the soft-cap 50, layer 0 a sliding layer
        assert (spec["scale"], spec["softcap"], spec["window"]) == (1 / 16, 50.0, 4)


@pytest.mark.parametrize("model, window, attn", [
    ("hf:gemma2", 4, "eager"), ("hf:gpt2", None, "sdpa"), ("hf:bloom", None, "eager"), ("hf:falcon", None, "sdpa"),
    ("hf:mpt", None, "eager")])
def test_the_tiny_models_hold_in_bfloat16(hf: None, model: str, window: int | None, attn: str) -> None:
    """Within 4 x the bfloat16 reference's own error; BLOOM's module adds the residual to its output in bfloat16, and
    that rounding (relative to the residual, larger than the attention output) is modelled in its reference."""
    ev = R.check_hf(model, attn, "bfloat16", 0, 8, window)
    assert ev.outcome == "holds", ev.summary
    assert ("residual the module adds" in ev.tolerance) == (model == "hf:bloom")


def test_falcon_eager_alibi_counts_its_bias_twice(hf: None) -> None:
    """A finding (transformers 4.51.3 and 5.24.0): Falcon's eager path adds ALiBi to the scores before its 1/sqrt
    (head_dim) scale and again inside the causal mask it receives, which already holds alibi / sqrt(head_dim); the
    sdpa path (the mask alone) HOLDS.  The witness names the cause: the bias factor 0.25 -> 0.5."""
    ev = R.check_hf("hf:falcon", "eager", "float64", 0, 8, None)
    assert ev.outcome == "fails", ev.summary
    assert (ev.witness["explained_by"], ev.witness["change"]) == ("alibi_scale", "0.25 -> 0.5")
    assert ev.witness["head"] == 0  # the steepest slope moves the most


def test_a_declared_spec_the_library_departs_from(hf: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Injected faults: Falcon's sdpa path against Press et al.'s unscaled bias (the spec without Falcon's order of
    operations) FAILS explained by alibi_scale; Gemma 2 with its soft-cap switched off in the library FAILS
    explained by softcap.  The soft-cap's fault is planted in a configuration capping at 1 (the tiny model's cap of 50
    is far above its scores, where cap tanh(s / cap) and s differ by less than the tolerance: a cap that large
    cannot be told from none at this size)."""
    from verify.numeric import impl_models as im

    b = im.build("hf:falcon", attn="sdpa", seed=0)
    given = {**R.hf_spec(b, "sdpa").to_dict(), "alibi_scale": 1.0}
    ev = R.hf_evidence(b, b, "sdpa", "float64", 0, 8, "hf:falcon", given=given)
    assert ev.outcome == "fails" and (ev.witness["explained_by"], ev.witness["change"]) == ("alibi_scale", "1 -> 0.25")
    real = im.build

    def uncapped(*a, **k):
        built = real(*a, **k)
        im.first_attention(built.model).attn_logit_softcapping = None
        return built

    import json

    cfg = tmp_path / "gemma2.json"
    cfg.write_text(json.dumps({**im.tiny_config("gemma2", window=4).to_dict(), "attn_logit_softcapping": 1.0}))
    assert R.check_hf(f"hf-config:{cfg}", "eager", "float64", 0, 8, None).outcome == "holds"
    monkeypatch.setattr(im, "build", uncapped)
    ev = R.check_hf(f"hf-config:{cfg}", "eager", "float64", 0, 8, None)
    assert ev.outcome == "fails" and (ev.witness["explained_by"], ev.witness["change"]) == ("softcap", "1.0 -> None")


def test_the_head_is_read_back_through_w_o() -> None:
    """head_of: a fault planted in head 2's output is named; a W_o of rank below n_heads x head_dim (exactly: two
    column blocks equal, so the heads cannot be recovered from the output, although a least-squares solution
    reproduces it) names none."""
    g = torch.Generator().manual_seed(0)
    s = S.from_mapping({"d_model": 16, "n_heads": 4})
    W = {n: torch.randn(16, 16, generator=g, dtype=torch.float64) for n in ("W_q", "W_k", "W_v", "W_o")}
    x = torch.randn(1, 5, 16, generator=g, dtype=torch.float64)
    out, heads = R.layer_reference(s, W, x, heads=True)
    bad = heads.clone()
    bad[0, 2, 3] += 0.5
    impl = bad.transpose(1, 2).reshape(1, 5, 16) @ W["W_o"].T
    assert R.head_of(impl, heads, W, 0, 3)[0] == 2
    W["W_o"][:, 8:] = W["W_o"][:, :8]  # heads 2, 3 write where heads 0, 1 do
    impl = bad.transpose(1, 2).reshape(1, 5, 16) @ W["W_o"].T
    assert R.head_of(impl, heads, W, 0, 3) is None


def test_the_model_lists_agree() -> None:
    from verify.proofs import impl as paper

    assert paper.REFERENCE_MODELS == R.HF_READ


def test_a_library_scale_fault_fails_and_is_explained(hf: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected fault: layer 0 of the library's Llama scales its scores by 1/head_dim."""
    from verify.numeric import impl_models as im

    real = im.build

    def faulty(*a, **k):
        b = real(*a, **k)
        att = im.first_attention(b.model)
        att.scaling = 1.0 / att.head_dim
        return b

    monkeypatch.setattr(im, "build", faulty)
    ev = R.check_hf("hf:llama", "eager", "float64", 0, 8, None)
    assert ev.outcome == "fails" and ev.witness["explained_by"] == "scale", ev.summary


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def test_configurations_and_directories(hf: None, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--model hf-config:FILE (a random model of that configuration) and hf-dir:PATH (a saved checkpoint): Falcon's
    new decoder architecture (4 query heads over 2 key/value groups, RoPE) and a Gemma 2 checkpoint HOLD; a bad
    file, a model over the size limit, a family impl:reference does not read, sdpa for an eager-only family and
    another family are refused in one line with exit 2."""
    import json

    from verify.numeric import impl_models as im

    cfg = _write(tmp_path / "falcon.json", json.dumps({
        "model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "alibi": False,
        "new_decoder_architecture": True, "num_kv_heads": 2, "vocab_size": 128}))
    ev = R.check_hf(f"hf-config:{cfg}", "eager", "float64", 0, 8, None)
    assert ev.outcome == "holds" and ev.numbers["spec"]["n_kv_heads"] == 2, ev.summary
    im.build("hf:gemma2", seed=0, window=4).model.save_pretrained(tmp_path / "g2")
    assert main(["impl:reference", "--model", f"hf-dir:{tmp_path / 'g2'}"]) == 0
    capsys.readouterr()
    big = _write(tmp_path / "big.json", json.dumps({"model_type": "llama", "hidden_size": 4096, "vocab_size": 32000,
                                                    "num_hidden_layers": 32}))
    for model, why in [(f"hf-config:{_write(tmp_path / 'bad.json', '{nope')}", "is not a JSON file"),
                       (f"hf-config:{_write(tmp_path / 'list.json', '[1]')}", 'naming its "model_type"'),
                       (f"hf-config:{big}", "parameters; hf-config builds random models of at most 50,000,000"),
                       (f"hf-config:{_write(tmp_path / 'phi.json', json.dumps({'model_type': 'phi'}))}",
                        "a phi model; this claim reads llama"),
                       (f"hf-config:{tmp_path / 'none.json'}", "is not a file")]:
        assert main(["impl:reference", "--model", model]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and why in err[0], err
    assert main(["impl:reference", "--model", "hf:bloom", "--attn", "sdpa"]) == 2
    assert "eager only" in capsys.readouterr().err
    assert main(["impl:rope", "--model", f"hf-config:{cfg}"]) == 2
    assert "a checkpoint directory or configuration goes to" in capsys.readouterr().err


def test_the_testing_api(in_examples: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """assert_attention_conforms: silent on the good module (float64, and bfloat16 against the float64 weights),
    an AssertionError naming the cause on a planted bug; a spec given here overrides the module's."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import full_pass_bugs
    import good_attention

    from verify.testing import assert_attention_conforms

    good = good_attention.make(0, torch.float64)
    assert_attention_conforms(good)
    assert_attention_conforms(good_attention.make(0, torch.bfloat16), dtype=torch.bfloat16,
                              weights=good.projections())
    with pytest.raises(AssertionError, match="explained by rope_layout"):
        assert_attention_conforms(full_pass_bugs.make_rope_interleaved(0, torch.float64))
    with pytest.raises(AssertionError, match="explained by rope_layout"):  # declared interleaved, computes half
        assert_attention_conforms(good, spec={**good.attention_spec, "rope_layout": "interleaved"})
    with pytest.raises(ValueError, match="'window' must be >= 1"):
        assert_attention_conforms(good, spec={**good.attention_spec, "window": 0})


def test_the_pytest_fixture(request: pytest.FixtureRequest, in_examples: None,
                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import full_pass_bugs

    conforms = request.getfixturevalue("attention_conforms")
    with pytest.raises(AssertionError, match="explained by grouping"):
        conforms(full_pass_bugs.make_gqa_strided(0, torch.float64))


@pytest.mark.parametrize("model, attn", [("hf:llama", "eager"), ("hf:mistral", "sdpa"), ("hf:gpt2", "eager"),
                                         ("hf:bloom", "eager"), ("hf:mpt", "eager"), ("hf:falcon", "sdpa"),
                                         ("hf:gemma2", "eager")])
@pytest.mark.parametrize("side", ["left", "right"])
def test_a_padded_batch_holds(hf: None, model: str, attn: str, side: str) -> None:
    """A batch of lengths 8 and 4 padded on either side, with its attention mask and position_ids from it."""
    ev = R.check_hf(model, attn, "float64", 0, 8, 4 if model in ("hf:mistral", "hf:gemma2") else None, side)
    assert ev.outcome == "holds", ev.summary
    assert ev.numbers["lengths"] == [8, 4] and ev.numbers["padding"] == side


def test_a_pad_key_let_in_fails(hf: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Injected fault: the library is given an attention mask of ones (every pad key visible; without any mask,
    transformers 5 would infer the pads from position_ids that restart, as packed sequences); the reference keeps
    the pads out."""
    from verify.numeric import impl_models as im

    real = im.full

    def leaky(b, ids, **kw):
        if "attention_mask" in kw:
            kw["attention_mask"] = torch.ones_like(kw["attention_mask"])
        return real(b, ids, **kw)

    monkeypatch.setattr(im, "full", leaky)
    ev = R.check_hf("hf:llama", "eager", "float64", 0, 8, None, "left")
    assert ev.outcome == "fails" and ev.witness["padding"] == "left" and ev.witness["batch"] == 1, ev.summary


def test_a_padded_module(in_examples: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """The good module holds with left and right padding; injected fault: its forward drops the mask."""
    for side in ("left", "right"):
        assert R.check_module("module:good_attention:make_gqa", "float64", 0, 8, padding=side).outcome == "holds"
    monkeypatch.syspath_prepend(str(EXAMPLES))
    import good_attention

    real = good_attention.Attention.forward
    monkeypatch.setattr(good_attention.Attention, "forward",
                        lambda self, x, cache=None, positions=None, mask=None: real(self, x, cache, positions, None))
    ev = R.check_module("module:good_attention:make", "float64", 0, 8, padding="left")
    assert ev.outcome == "fails", ev.summary
