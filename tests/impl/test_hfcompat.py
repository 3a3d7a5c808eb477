"""verify.hfcompat: the supported transformers range, the one-line refusals outside it, the 4.x/5.x translations,
and the rule that no other module passes a release-dependent keyword to transformers.

The refusals and translations are tested with the release given as text (no install needed); the claims' refusal
is tested end to end through the CLI with the installed release replaced by one below the range."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomllib

from verify import hfcompat

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("version, refused", [
    ("4.39.3", True), ("4.40.0", False), ("4.40.2", False), ("4.51.3", False), ("5.0.0", False), ("5.24.0", False),
    ("6.0.0", True), ("3.5.1", True), ("not-a-version", True), ("4.40.0.dev0", True)])
def test_the_range(version: str, refused: bool) -> None:
    why = hfcompat.refusal(version)
    assert (why is not None) == refused, why
    if refused:
        assert why == (f"transformers {version} is installed; verify's impl checks support transformers >=4.40,<6: "
                       "pip install 'transformers>=4.40,<6'")
        assert "\n" not in why


def test_pyproject_declares_the_same_range() -> None:
    extra = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["impl"]
    assert extra == [f"transformers{hfcompat.SUPPORTED}"]


def test_a_family_or_rule_the_release_lacks_is_refused() -> None:
    assert hfcompat.family_refusal("gemma2", "4.41.2") == (
        "--model hf:gemma2: transformers 4.41.2 is installed and has no gemma2 model (it arrived in 4.42); "
        "supported: transformers >=4.40,<6")
    assert hfcompat.family_refusal("gemma2", "4.42.0") is None
    assert hfcompat.family_refusal("llama", "4.40.0") is None
    assert hfcompat.rope_refusal("yarn", "4.42.4").startswith("--rope-scaling yarn: transformers 4.42.4 is installed")
    assert hfcompat.rope_refusal("llama3", "4.43.0") is None
    assert hfcompat.rope_refusal("dynamic", "4.40.0") is None


def _as(monkeypatch: pytest.MonkeyPatch, version: str) -> None:
    monkeypatch.setattr(hfcompat, "installed", lambda: version)


ROPE = {"rope_type": "yarn", "rope_theta": 500000.0, "factor": 2.0, "original_max_position_embeddings": 8}


def test_rope_configuration_per_release(monkeypatch: pytest.MonkeyPatch) -> None:
    _as(monkeypatch, "5.24.0")
    assert hfcompat.rope_config(ROPE, 16) == {"max_position_embeddings": 16, "rope_parameters": ROPE}
    _as(monkeypatch, "4.51.3")  # YaRN: the original length goes to max_position_embeddings, factor kept
    assert hfcompat.rope_config(ROPE, 16) == {
        "max_position_embeddings": 8, "rope_theta": 500000.0, "rope_scaling": {"rope_type": "yarn", "factor": 2.0}}
    assert hfcompat.rope_config({"rope_type": "default", "rope_theta": 10000.0}, 16) == {
        "max_position_embeddings": 16, "rope_theta": 10000.0, "rope_scaling": None}
    _as(monkeypatch, "4.40.2")  # the rule is named "type" before 4.43
    assert hfcompat.rope_config({"rope_type": "linear", "rope_theta": 10000.0, "factor": 2.0}, 16) == {
        "max_position_embeddings": 16, "rope_theta": 10000.0, "rope_scaling": {"type": "linear", "factor": 2.0}}
    assert hfcompat.rope_config(None, 16) == {"max_position_embeddings": 16}


def test_dtype_keyword_per_release(monkeypatch: pytest.MonkeyPatch) -> None:
    _as(monkeypatch, "4.51.3")
    assert hfcompat._dtype_kw("x") == {"torch_dtype": "x"}
    _as(monkeypatch, "5.0.0")
    assert hfcompat._dtype_kw("x") == {"dtype": "x"}


def test_a_release_below_the_range_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """Injected fault: the installed release reads 4.39.3.  Every impl claim, verify head on an hf model and
    fp26 with a checkpoint say so in one line and exit 2; nothing is built (the loader is never reached)."""
    from verify.frontends.cli import main

    _as(monkeypatch, "4.39.3")
    monkeypatch.setattr(hfcompat, "load", lambda: pytest.fail("a refused run built something"))
    for argv in (["impl:decode"], ["impl:window", "--model", "hf:mistral"], ["impl:rope"], ["impl:alibi"],
                 ["impl:padding"], ["head", "--model", "hf:llama", "--layer", "0", "--head", "0"]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "transformers 4.39.3 is installed" in err[0] and ">=4.40,<6" in err[0], (argv, err)


def test_a_family_newer_than_the_release_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from verify.frontends.cli import main

    _as(monkeypatch, "4.41.2")
    monkeypatch.setattr(hfcompat, "load", lambda: pytest.fail("a refused run built something"))
    assert main(["impl:decode", "--model", "hf:gemma2"]) == 2
    assert "has no gemma2 model (it arrived in 4.42)" in capsys.readouterr().err
    _as(monkeypatch, "4.42.4")
    assert main(["impl:rope", "--rope-scaling", "yarn"]) == 2
    assert "has no yarn RoPE scaling (it arrived in 4.43)" in capsys.readouterr().err


#: what only verify.hfcompat may call or name in code: the model builders (their dtype keyword changed), the cache
#: classes, the RoPE initialisers, the rotary modules and their rotation
RELEASE_DEPENDENT = re.compile(r"AutoModelForCausalLM\.from_(?:config|pretrained)|DynamicCache|HybridCache|"
                               r"\btorch_dtype\b|ROPE_INIT_FUNCTIONS|\.rotary_emb\b|apply_rotary_pos_emb")


SOURCES = ("src", "numeric", "proofs", "solver", "symbolic", "kernel", "tools", "benchmarks", "examples")


def release_dependent_uses(text: str) -> list[str]:
    """The code lines of ``text`` (strings and comments left out, by the tokenizer) that reach a release-dependent
    transformers name."""
    import io
    import tokenize

    lines: dict[int, list[str]] = {}
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.NAME, tokenize.OP, tokenize.NUMBER):
            lines.setdefault(tok.start[0], []).append(tok.string)
    return [" ".join(t) for _, t in sorted(lines.items()) if RELEASE_DEPENDENT.search("".join(t))]


def test_only_hfcompat_reaches_release_dependent_names() -> None:
    bad = []
    for top in SOURCES:
        for f in sorted((ROOT / top).rglob("*.py")):
            if f.name == "hfcompat.py" or "verify-example-pack" in str(f):
                continue
            bad += [f"{f.relative_to(ROOT)}: {line}" for line in release_dependent_uses(f.read_text())]
    assert bad == []


def test_the_scan_sees_a_direct_use() -> None:
    """Injected fault: a module that builds a model with the 5.x keyword, or makes its own cache."""
    assert release_dependent_uses("m = tf.AutoModelForCausalLM.from_config(cfg, dtype=torch.float64)\n") != []
    assert release_dependent_uses("    cache = transformers.DynamicCache(config=cfg)\n") != []
    assert release_dependent_uses("x = 1  # DynamicCache is mentioned in a comment\n") == []
    assert release_dependent_uses("s = 'the DynamicCache contract'\n") == []


def test_a_release_that_lost_a_name_is_refused_before_any_work(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """Injected fault: a transformers package whose cache_utils.py no longer defines DynamicCache, and one whose
    Mistral modeling file lost its causal-LM class.  The probe reads the files (no import) and the claim refuses
    in one line, exit 2."""
    import importlib.util

    import transformers

    real = Path(transformers.__file__).parent
    fake = tmp_path / "transformers"
    for rel, _ in hfcompat.NEEDED:
        (fake / rel).parent.mkdir(parents=True, exist_ok=True)
        (fake / rel).write_text((real / rel).read_text())
    (fake / "models/mistral").mkdir(parents=True)
    (fake / "models/mistral/modeling_mistral.py").write_text("class MistralModel: pass\n")
    spec = importlib.util.spec_from_file_location("transformers", fake / "__init__.py",
                                                  submodule_search_locations=[str(fake)])
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: spec if name == "transformers" else None)
    assert hfcompat.probe("llama") is not None  # no llama modeling file at all in the fake package
    assert "lacks MistralForCausalLM (models/mistral/modeling_mistral.py)" in hfcompat.probe("mistral")
    (fake / "cache_utils.py").write_text("class Cache: pass\n")
    assert hfcompat.probe(None).startswith(f"transformers {hfcompat.installed()} is installed and lacks DynamicCache")
    from verify.frontends.cli import main

    monkeypatch.setattr(hfcompat, "load", lambda: pytest.fail("a refused run built something"))
    assert main(["impl:decode"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lacks DynamicCache" in err[0] and ">=4.40,<6" in err[0]
