"""The measured numbers of README.md and docs/ come from runs (tools/readme_numbers.py), never from a hand.

Every generated number stands between markers ``<!--n RUN_ID PATH [FORMAT]-->VALUE<!--/n-->``.
Fast checks: the markers parse and resolve, and each README value equals the value the tool last wrote
from a run (tools/readme_numbers.json), so a number changed by hand fails.  The drift check reruns
the quick claims the markers name (a few seconds each, in this process) and fails when a README number
differs from what the run gives now; heavy claims (--full, training) are compared with the snapshot,
which only ``--write`` with their run's JSON changes (the command is in the marker's listing).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from verify.core import registry

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("readme_numbers", ROOT / "tools" / "readme_numbers.py")
assert _spec is not None and _spec.loader is not None
rn = importlib.util.module_from_spec(_spec)
sys.modules["readme_numbers"] = rn
_spec.loader.exec_module(rn)

README = rn.all_text()  # README.md and every docs/**/*.md, one after another
MARKERS = rn.parse(README)
SNAP = rn.load_snapshot()["numbers"]


def test_readme_has_generated_numbers_for_the_figure_and_claim_rows():
    runs = {m.run_id for m in MARKERS}
    for rid in ("pr26:prop2", "pr26:prop3", "pr26:prop4", "kvshift24:theorem1[as-displayed]", "kvshift24:theorem1[causal]",
                "kvshift24:theorem3[as-printed]", "kvshift24:theorem3[appendix-c]",
                "kvshift24:decode[mixed-key,correct,correct]", "kvshift24:falsifier", "bietti23:probes",
                rn.LR_SELECTION):
        assert rid in runs, rid


def test_markers_resolve_to_claims_and_commands():
    for m in MARKERS:
        if m.run_id == rn.LR_SELECTION:
            continue
        if m.bench:
            assert m.command.startswith("python benchmarks/bench_") and m.run_id[len(rn.BENCH):] in m.command
            continue
        claim = registry.get(m.claim)
        assert claim.id == m.claim
        if m.heavy:
            assert m.command.startswith(f"verify {m.claim}")
        else:
            assert m.command.split()[:2] == ["verify", m.claim]  # a recorded variant (variant_args raised otherwise)


def test_every_readme_number_equals_what_the_tool_wrote():
    missing = [m.key for m in MARKERS if m.key not in SNAP]
    assert not missing, f"markers never written by tools/readme_numbers.py --write: {missing}"
    differ = [f"{m.key}: README {m.value!r}, written {SNAP[m.key]['value']!r}" for m in MARKERS
              if SNAP[m.key]["value"] != m.value]
    assert not differ, "README numbers changed by hand (run tools/readme_numbers.py --write):\n" + "\n".join(differ)


def test_a_hand_edited_number_fails():
    # fault injection: one README number edited by hand is reported, by the snapshot comparison and by the tool
    m = next(x for x in MARKERS if x.run_id == "pr26:prop4" and x.path == "figures_reproduced")
    edited = README[:m.start] + README[m.start:m.end].replace(f"-->{m.value}<!--", "-->11/11<!--") + README[m.end:]
    now = {k: v["value"] for k, v in SNAP.items()}
    diffs = rn.differences(edited, now)
    assert len(diffs) == 1 and "pr26:prop4 figures_reproduced: README '11/11'" in diffs[0]
    assert rn.differences(README, now) == []


def test_lookup_and_render():
    res = {"figures": [{"figure": "Prop. 4: alpha_128", "ours": 0.12963}, {"figure": "x", "ours": 1}],
           "layers": {"numeric": {"numbers": {"acc": [0.8, 0.9], "rmse": {"plotting code (a2+beta2)": 0.0601}}}},
           "rows": [{"lr": 0.07, "error": 0.4772}, {"lr": 0.1, "error": 0.6021}]}
    assert rn.lookup(res, "figures[figure~alpha_128].ours") == 0.12963
    assert rn.render(rn.lookup(res, "layers.numeric.numbers.acc"), "mean:.3f") == "0.850"
    assert rn.render(rn.lookup(res, "layers.numeric.numbers.rmse[~plotting]"), ".2f") == "0.06"
    assert rn.render(rn.lookup(res, "rows[lr=0.1].error"), ".2f") == "0.60"
    assert rn.lookup(res, "figures.1.ours") == 1
    for bad in ("figures[figure~alpha_999].ours", "layers.numeric.numbers.nope", "rows[lr=0.3].error"):
        with pytest.raises(KeyError):
            rn.lookup(res, bad)
    text = "a <!--n pr26:prop4 figures_reproduced-->8/11<!--/n--> b"
    (m,) = rn.parse(text)
    assert (m.run_id, m.path, m.fmt, m.value) == ("pr26:prop4", "figures_reproduced", "", "8/11")
    assert rn.fill(text, {m.key: "7/11"}) == "a <!--n pr26:prop4 figures_reproduced-->7/11<!--/n--> b"
    with pytest.raises(ValueError):
        rn.parse("<!--n only-->x<!--/n-->")


@pytest.mark.slow
def test_costs_equal_the_committed_benchmark_files():
    """Every cost in the README is a bench:FILE marker whose value is what the committed benchmark JSON gives (no
    rerun: the file is the run quoted).  Fault: a cost edited by hand (the designer's ratio) is reported."""
    bench = [m for m in MARKERS if m.bench]
    assert len(bench) >= 30
    assert {m.run_id for m in bench} >= {f"bench:benchmarks/results/{f}" for f in (
        "bench_all-2026-12-06.json", "bench_alpha-quick-2026-12-02.json", "bench_realizable-2026-12-02.json")}
    results = {rid: rn.bench_result(rid) for rid in {m.run_id for m in bench}}
    now = rn.values(bench, results)
    assert set(now) == {m.key for m in bench}
    assert rn.differences(README, now) == []
    m = next(x for x in bench if x.path == "designer.designer_ratio")
    edited = README[:m.start] + README[m.start:m.end].replace(f"-->{m.value}<!--", "-->4.0<!--") + README[m.end:]
    diffs = rn.differences(edited, now)
    assert len(diffs) == 1 and "designer.designer_ratio: README '4.0'" in diffs[0]


def test_star_path_and_bench_file_outside_the_repository_refused():
    assert rn.lookup({"rows": [{"a": 1}, {"a": 3}]}, "rows.*.a") == [1, 3]
    assert rn.render(rn.lookup({"rows": [{"a": 1.25}, {"a": 3}]}, "rows.*.a"), "min:.1f") == "1.2"
    with pytest.raises(FileNotFoundError):
        rn.bench_result("bench:../../etc/passwd")


def test_quick_numbers_equal_a_fresh_run():
    """The drift check: every quick claim a marker names, rerun now, gives the README's number."""
    quick = [m for m in MARKERS if not m.heavy]
    results = rn.run_quick({m.run_id for m in quick})
    now = rn.values(quick, results)
    assert set(now) == {m.key for m in quick}
    diffs = rn.differences(README, now)
    assert not diffs, "README numbers drifted from the run (tools/readme_numbers.py --write):\n" + "\n".join(diffs)


def test_snapshot_records_the_command_of_every_number():
    # (a marker missing from the snapshot fails test_every_readme_number_equals_what_the_tool_wrote)
    wrong = [m.key for m in MARKERS if m.key in SNAP and SNAP[m.key]["command"] != m.command]
    assert not wrong
    json.dumps(SNAP)  # plain JSON
