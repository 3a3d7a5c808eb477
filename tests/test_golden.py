"""The default run as a whole: every verdict equals its recorded expectation, and every result's
JSON (``--no-timings``) is byte-for-byte what it was when the golden hashes were recorded, through
the concurrent path (``--jobs 2``; the hashes were recorded with ``--jobs 1``).

A speed-up, a refactor or a change of engine that alters any output fails here.  When a change of
output is intended, regenerate tests/golden/verify_all_results.json and say why in the commit."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from verify.proofs.cli import main
from verify.proofs.registry import BUILTIN

GOLDEN = Path(__file__).parent / "golden" / "verify_all_results.json"


@pytest.mark.slow
def test_default_run_matches_golden_hashes(capsys):
    rc = main(["all", "--jobs", "2", "--format", "json", "--no-timings", "--quiet"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["changes"] == [], doc["changes"]
    # the built-in papers only: an installed claim pack (the example pack) runs too but is not pinned here
    got = {r["run_id"]: hashlib.sha256(json.dumps(r, sort_keys=True).encode()).hexdigest() for r in doc["results"]
           if r["paper"] in BUILTIN}
    want = json.loads(GOLDEN.read_text())["results"]
    assert sorted(got) == sorted(want), "the set of default claim variants changed"
    changed = [k for k in want if got[k] != want[k]]
    assert changed == [], f"outputs changed for {changed}"
