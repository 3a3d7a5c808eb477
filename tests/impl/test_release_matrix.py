"""The impl claims' answers on the installed transformers release equal the ones recorded for it in
proofs/impl/releases.json (tools/release_matrix.py).  CI runs this in both environments: the pinned 5.x (main)
and the pinned 4.x (.venv-tf4, tools/venv-tf4.sh), so a release whose answers moved, or a change of verify that
moves one, fails here; and the report of a run on a release with a recorded bug names the release."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

if os.environ.get("CI"):
    import transformers  # noqa: F401
else:
    pytest.importorskip("transformers")

from verify import hfcompat  # noqa: E402
from verify.proofs.impl import releases  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
PINNED = {line.split("==")[1].strip() for f in ("constraints.txt", "constraints-tf4.txt")
          for line in (ROOT / f).read_text().splitlines() if line.startswith("transformers==")}


def _matrix_tool():
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import release_matrix
    finally:
        sys.path.pop(0)
    return release_matrix


def test_every_pinned_release_is_recorded() -> None:
    assert PINNED == {"5.24.0", "4.51.3"}
    assert PINNED <= set(releases.measured()["releases"])


def test_the_installed_release_answers_as_recorded() -> None:
    version = hfcompat.installed()
    recorded = releases.measured()["releases"].get(version)
    if recorded is None:
        if os.environ.get("CI"):
            pytest.fail(f"transformers {version} has no recorded answers: python tools/release_matrix.py --installed")
        pytest.skip(f"transformers {version} is not in proofs/impl/releases.json")
    got = _matrix_tool().run_installed()["entries"]
    moved = {k: (recorded.get(k, {}).get("verdict"), v["verdict"]) for k, v in got.items()
             if recorded.get(k, {}).get("verdict") != v["verdict"]}
    assert moved == {}, f"(recorded, now) on transformers {version}: {moved}"


def test_a_recorded_release_bug_is_named_in_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    """A release recorded with impl:window FAILS for hf:qwen2 (4.48.3 in the shipped file; here injected, so the
    test does not depend on which releases were measured): the report's line names the release and where the
    same entry holds; a release recorded HOLDS, or an entry no release holds (Falcon's ALiBi), gets no line."""
    table = {"releases": {"4.48.3": {"impl:window --model hf:qwen2": {"verdict": "FAILS"},
                                     "impl:alibi --model hf:falcon": {"verdict": "FAILS"}},
                          "4.49.0": {"impl:window --model hf:qwen2": {"verdict": "HOLDS"},
                                     "impl:alibi --model hf:falcon": {"verdict": "FAILS"}}}}
    monkeypatch.setattr(releases, "measured", lambda: table)
    line = releases.known_on("4.48.3", "impl:window", {"model": "hf:qwen2"})
    assert line == ("transformers 4.48.3: impl:window --model hf:qwen2 was measured FAILS on this release (also on "
                    "no other release measured; HOLDS on 4.49.0): docs/transformers-releases.md")
    assert releases.known_on("4.49.0", "impl:window", {"model": "hf:qwen2"}) is None
    assert releases.known_on("4.48.3", "impl:alibi", {"model": "hf:falcon"}) is None
    assert releases.known_on("9.9.9", "impl:window", {"model": "hf:qwen2"}) is None
    from verify.proofs import impl as paper

    monkeypatch.setattr(hfcompat, "installed", lambda: "4.48.3")
    p = {"model": "hf:qwen2", "attn": "eager", "L": 9, "window": 4}
    assert any("transformers 4.48.3" in x for x in paper.WINDOW.explain(p, []))
    assert paper.WINDOW.explain({**p, "model": "hf:mistral"}, []) == []
