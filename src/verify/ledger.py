"""The run ledger: every run of a claim under a protocol, exploratory or confirmatory, one JSON line each, kept
beside the lab's checkpoint cache (``<lab cache>/ledger.jsonl``; torch-free).

A run appends a ``start`` line (its claim, protocol hash, kind, departures, seeds, options) before any work and an
``end`` line with its outcome when it finishes; a run stopped in between (Ctrl-C, a killed machine) leaves its
``start`` line alone, which :func:`summary` reads as an incomplete run.  Lines are appended with one ``write`` of
the whole line and flushed to disk, so the file is never half a record; a line that does not parse (a foreign
edit) is counted as unreadable, never trusted.
"""

from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

LEDGER_FILE = "ledger.jsonl"


def default_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/verify/lab``, or ``~/.cache/verify/lab`` when XDG_CACHE_HOME is unset or empty."""
    base = os.environ.get("XDG_CACHE_HOME") or ""
    root = Path(base) if base.strip() else Path.home() / ".cache"
    return root / "verify" / "lab"


def ledger_path(cache_dir: str | None) -> Path:
    return (Path(cache_dir) if cache_dir else default_cache_dir()) / LEDGER_FILE


def _append(cache_dir: str | None, record: dict[str, Any]) -> None:
    path = ledger_path(cache_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (json.dumps(record, sort_keys=True) + "\n").encode())
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:  # a read-only cache never stops a run; the run says so on stderr
        import sys

        print(f"verify: the run ledger {path} could not be written ({exc.strerror}); the run is not recorded",
              file=sys.stderr)


def start(cache_dir: str | None, record: dict[str, Any]) -> str:
    """Append a run's ``start`` line; returns its run id."""
    run = uuid.uuid4().hex[:16]
    _append(cache_dir, {"event": "start", "run": run, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        **record})
    return run


def end(cache_dir: str | None, run: str, outcome: str | None, status: str) -> None:
    """Append the ``end`` line of run ``run``."""
    _append(cache_dir, {"event": "end", "run": run, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                        "outcome": outcome, "status": status})


def summary(cache_dir: str | None, claim: str) -> dict[str, Any]:
    """The claim's runs in the ledger: how many, how many confirmatory, incomplete (started, never ended), and per
    variant label the last finished confirmatory run (the one that decides it)."""
    runs: dict[str, dict[str, Any]] = {}
    unreadable = 0
    try:
        lines = ledger_path(cache_dir).read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        try:
            rec = json.loads(line)
            key = rec["run"]
        except (ValueError, KeyError, TypeError):
            unreadable += 1
            continue
        if rec.get("event") == "start" and rec.get("claim") == claim:
            runs[key] = dict(rec)
        elif rec.get("event") == "end" and key in runs:
            runs[key].update(ended=rec.get("time"), outcome=rec.get("outcome"), status=rec.get("status"))
    done = [r for r in runs.values() if "ended" in r]
    deciding: dict[str, dict[str, Any]] = {}
    for r in done:  # the last finished confirmatory run of each variant decides it
        if r.get("kind") == "confirmatory":
            deciding[str(r.get("variant", ""))] = r
    return {"runs": len(runs), "confirmatory": sum(r.get("kind") == "confirmatory" for r in runs.values()),
            "exploratory": sum(r.get("kind") == "exploratory" for r in runs.values()),
            "incomplete": len(runs) - len(done), "unreadable_lines": unreadable, "deciding": deciding}
