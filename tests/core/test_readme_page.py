"""README.md as a product page: short, its example is what the tool prints, its claims table says what the default
run says, and its two commands are the ones CI runs.  Everything longer lives in docs/ (linked from it)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
GOLDEN = ROOT / "tests" / "golden"
VERDICTS = ("HOLDS WITH FIX", "INCONCLUSIVE", "INCONSISTENT", "HOLDS", "FAILS")


def test_readme_is_at_most_250_lines_and_links_only_existing_docs():
    assert len(README.splitlines()) <= 250
    links = re.findall(r"\]\(([^)#]+)\)", README)
    assert links and all((ROOT / link).exists() for link in links), [x for x in links if not (ROOT / x).exists()]
    for page in ("ws24", "kvshift24", "pr26", "bietti23", "fp26", "impl"):
        assert f"docs/papers/{page}.md" in README


def test_the_example_is_the_short_view_the_tool_prints():
    """The README's example block equals the golden text view (itself compared with a fresh run, as it is and under
    the perturbed float path, by tests/core/test_golden.py)."""
    block = re.search(r"```text\n\$ verify theorem2 --orientation transposed --no-timings\n(.*?)```", README, re.S)
    assert block is not None
    assert block.group(1) == (GOLDEN / "views" / "ws24-theorem2-transposed.txt").read_text()


def _default_table() -> list[tuple[str, list[tuple[str, str]]]]:
    section = README.split("## Claims", 1)[1].split("Claims about trained models", 1)[0]
    rows = []
    for line in section.splitlines():
        m = re.match(r"\| `([\w-]+:[\w-]+)` \|[^|]*\| ([^|]*) \|", line)
        if m:
            cells = [re.match(r"`([^`]+)` (.+)", c.strip()) for c in m.group(2).split("·")]
            assert all(cells), line
            rows.append((m.group(1), [(c.group(1), c.group(2)) for c in cells if c]))
    return rows


def _run_id(claim: str, label: str, run_ids: list[str]) -> str:
    """The default run's id that a README label names: ``default`` is the claim without a variant (or its
    ``[default]``), another label one part of the bracket (the run whose other parts are the first variant's)."""
    mine = [r for r in run_ids if r == claim or r.startswith(claim + "[")]
    if label == "default" and claim in mine:
        return claim
    parts = {r: r[len(claim) + 1:-1].split(",") for r in mine if r != claim}
    cands = [r for r, p in parts.items() if label in p]
    assert cands, f"{claim}: no default variant {label!r} among {mine}"
    first = parts[mine[0]] if mine[0] in parts else []
    return max(cands, key=lambda r: sum(a == b for a, b in zip(parts[r], first)))


def test_the_claims_table_says_what_the_default_run_says():
    golden = json.loads((GOLDEN / "verify_all_results.json").read_text())["results"]
    ids = list(golden)
    named = set()
    for claim, cells in _default_table():
        for label, verdict in cells:
            assert verdict in VERDICTS, (claim, label, verdict)
            rid = _run_id(claim, label, ids)
            assert golden[rid]["verdict"] == verdict, f"README: {rid} {verdict}; the default run: {golden[rid]['verdict']}"
            named.add(rid)
    assert named == set(ids), f"default variants missing from the README's table: {sorted(set(ids) - named)}"


def test_a_wrong_verdict_in_the_table_is_caught():
    golden = json.loads((GOLDEN / "verify_all_results.json").read_text())["results"]
    claim, cells = next(r for r in _default_table() if r[0] == "kvshift24:decode")
    label, verdict = cells[1]
    rid = _run_id(claim, label, list(golden))
    assert (rid, verdict) == ("kvshift24:decode[mixed-key,correct,correct]", "FAILS")
    assert golden[rid]["verdict"] != "HOLDS"  # the README saying HOLDS here would fail the test above
    assert _run_id(claim, "raw-key", list(golden)) == "kvshift24:decode[raw-key,correct,correct]"


def test_the_readme_test_command_is_what_ci_runs():
    commands = re.findall(r"```bash\n(sh tools/install-coq.sh[^\n]*)\n```", README)
    assert len(commands) == 2 and commands[0].endswith("&& verify all")
    ci = (ROOT / ".ci" / "run").read_text()
    steps = [s.strip() for s in commands[1].split("&&")]
    for step in steps:
        step = step.replace("pip install -c", "pip install -q -c")
        assert step in ci, f"README step not in .ci/run: {step}"
