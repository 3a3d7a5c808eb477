"""What the command-line tests share: run ``verify`` in-process and read its JSON report, or require a one-line
refusal (exit 2, no traceback, in seconds)."""

from __future__ import annotations

import json
import time
from typing import Any

from verify.frontends.cli import main


def json_report(capsys: Any, argv: list[str], rc: int = 0) -> Any:
    """``verify ARGV --format json``: asserts the exit code ``rc`` and returns the parsed report."""
    got = main(argv + ["--format", "json"])
    cap = capsys.readouterr()
    assert got == rc, cap.err
    return json.loads(cap.out)


def refused(capsys: Any, argv: list[str]) -> str:
    """``verify ARGV`` must exit 2 with one line on stderr, no traceback, within 10 s; returns that line."""
    t0 = time.perf_counter()
    rc = main(argv)
    secs = time.perf_counter() - t0
    err = capsys.readouterr().err.strip()
    assert rc == 2, err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert secs < 10, secs
    return err
