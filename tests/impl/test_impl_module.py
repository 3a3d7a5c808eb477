"""impl claims on the user's own attention module (--model module:PKG.MOD:FACTORY, docs/impl-module.md): the
correct example HOLDS, the planted bugs FAIL with a witness, and a broken module is refused with one line
before any work; no transformers needed."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Iterator

import pytest

from verify.core.model import InputError
from verify.proofs import impl as paper

torch = pytest.importorskip("torch")

from verify.numeric import impl_module as imod  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "attention_modules"


@pytest.fixture
def examples(monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from the examples folder: the current directory is first on the import path."""
    monkeypatch.chdir(EXAMPLES)


def test_correct_module_holds(examples: None) -> None:
    ev = imod.check_decode("module:good_attention:make", "float64", 0, 8)
    assert (ev.status, ev.outcome) == ("consistent", "holds"), ev.summary
    assert ev.numbers["tolerance"] == ev.numbers["max_deviation"] == "<= 1e-06"  # recorded by the calibration's bound
    for factory in ("make", "make_windowed"):
        ev = imod.check_window(f"module:good_attention:{factory}", 0, lambda w: paper._window_sizes(w, 0))
        assert ev.outcome == "holds", ev.summary
    for positions in ("from-mask", "implicit"):  # rotary positions: the pads' shift cancels
        ev = imod.check_padding("module:good_attention:make", 0, paper.PAD_LENGTHS, 3, positions)
        assert ev.outcome == "holds", ev.summary


def test_correct_module_holds_in_bfloat16_within_the_calibrated_tolerance(examples: None) -> None:
    ev = imod.check_decode("module:good_attention:make_windowed", "bfloat16", 0, 8)
    assert ev.outcome == "holds", ev.summary
    assert 0 < ev.numbers["max_deviation"] <= ev.numbers["tolerance"]


def test_dropping_cache_fails_with_the_smallest_witness(examples: None) -> None:
    ev = imod.check_decode("module:buggy_attention:make_dropping_cache", "float64", 0, 8)
    assert ev.outcome == "fails", ev.summary
    w = ev.witness
    # w = 4, the cache keeps 2 keys: after a prefill of 1, query 3 misses key 0
    assert (w["prompt_length"], w["split"]) == (4, 1)
    assert w["deviation"] > 10 * imod.num.CAL_CAP and w["tolerance"] == "<= 1e-06"
    assert "smallest mismatch: prompt length 4, split 1" in ev.summary
    win = imod.check_window("module:buggy_attention:make_dropping_cache", 0, lambda w: paper._window_sizes(w, 0))
    assert win.outcome == "fails" and win.witness["missing_distances"] == [3], win.summary


def test_wide_window_fails_window_and_holds_decode(examples: None) -> None:
    ev = imod.check_window("module:buggy_attention:make_wide_window", 0, lambda w: paper._window_sizes(w, 0))
    assert ev.outcome == "fails", ev.summary
    assert ev.witness["extra_distances"] == [4] and ev.witness["run"] == "no cache"
    assert (ev.witness["keys_seen"], ev.witness["keys_admitted"]) == (5, 4)
    dec = imod.check_decode("module:buggy_attention:make_wide_window", "float64", 0, 8)
    assert dec.outcome == "holds", dec.summary


def test_claims_run_end_to_end_through_the_cli(examples: None, capsys: pytest.CaptureFixture[str]) -> None:
    from verify.frontends.cli import main

    assert main(["impl:decode", "--model", "module:good_attention:make", "--quiet"]) == 0
    assert main(["impl:decode", "--model", "module:buggy_attention:make_dropping_cache", "--quiet"]) == 1
    capsys.readouterr()
    assert main(["impl:alibi", "--model", "module:good_attention:make"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "needs a model with a configuration" in err[0], err


BAD = '''
import time
import torch


class Echo(torch.nn.Module):
    d_model = 8
    n_heads = 2

    def forward(self, x, cache=None, positions=None):
        return x, {}


class NoHeads(Echo):
    n_heads = None


class Short(Echo):
    def forward(self, x, cache=None, positions=None):
        return x[:, :1], {}


class NoCache(Echo):
    def forward(self, x, cache=None, positions=None):
        return x, None


def hang(seed, dtype):
    time.sleep(600)


def boom(seed, dtype):
    raise RuntimeError("no weights here")


def quits(seed, dtype):
    raise SystemExit(3)


def echo(seed, dtype):
    return Echo()


def no_heads(seed, dtype):
    return NoHeads()


def short(seed, dtype):
    return Short()


def no_cache(seed, dtype):
    return NoCache()
'''


@pytest.fixture
def bad(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of broken factories in the current directory; its name, unique to this test."""
    name = f"impl_module_bad_{tmp_path.name.replace('-', '_')}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(BAD))
    (tmp_path / "impl_module_broken_import.py").write_text("import no_such_package_xyz\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(imod, "USER_TIMEOUT_S", 1.0)
    yield name
    sys.modules.pop(name, None)
    sys.modules.pop("impl_module_broken_import", None)


@pytest.mark.parametrize("factory, message", [
    ("hang", "ran past its time limit of 1 s"),
    ("boom", "the factory raised RuntimeError: no weights here"),
    ("quits", "the factory called exit(3)"),
    ("nothere", "has no callable 'nothere'"),
    ("no_heads", "n_heads must be a positive int, got none"),
    ("short", "out must be a tensor of shape [2, 3, 8], got [2, 1, 8]"),
    ("no_cache", "returned cache None"),
])
def test_broken_modules_are_refused_before_any_work(bad: str, factory: str, message: str) -> None:
    with pytest.raises(InputError) as e:
        paper.DECODE.parse_params({"model": f"module:{bad}:{factory}"})
    text = str(e.value)
    assert message in text and text.startswith(f"--model module:{bad}:{factory}: ") and "\n" not in text


def test_import_errors_and_bad_names_are_refused(bad: str) -> None:
    with pytest.raises(InputError, match=r"cannot import module 'impl_module_broken_import' \(ModuleNotFoundError"):
        paper.WINDOW.parse_params({"model": "module:impl_module_broken_import:make"})
    with pytest.raises(InputError, match="cannot import module 'no_such_module_xyz'"):
        paper.DECODE.parse_params({"model": "module:no_such_module_xyz:make"})
    with pytest.raises(InputError, match="expected MODULE:CALLABLE"):
        paper.DECODE.parse_params({"model": "module:not-a-name"})


def test_padding_needs_a_mask_and_alibi_rope_need_a_configuration(bad: str) -> None:
    paper.DECODE.parse_params({"model": f"module:{bad}:echo"})  # the protocol without a mask is enough for decode
    with pytest.raises(InputError, match="its forward takes no mask"):
        paper.PADDING.parse_params({"model": f"module:{bad}:echo"})
    for claim in (paper.ALIBI, paper.ROPE):
        with pytest.raises(InputError, match="needs a model with a configuration"):
            claim.parse_params({"model": f"module:{bad}:echo"})


def test_a_module_needs_no_transformers(examples: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "transformers", None)  # an import of it now fails
    paper.DECODE.parse_params({"model": "module:good_attention:make"})
    with pytest.raises(InputError, match=r"pip install"):
        paper.DECODE.parse_params({"model": "hf:llama"})


def test_the_factory_leaves_the_global_generator_as_it_was(examples: None) -> None:
    state = torch.random.get_rng_state()
    imod.load("module:good_attention:make", 0, "float64", imod.Guard("module:good_attention:make"))
    assert torch.equal(state, torch.random.get_rng_state())
