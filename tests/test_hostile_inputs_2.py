"""Hostile input on the newer surfaces (issue 23): each input is refused in one line with the
documented exit code within 2 s, never a traceback, a vacuous answer or a hang.
"""

from __future__ import annotations

import time

import pytest

from verify.proofs.cli import main


def run(capsys, *args: str) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, time.perf_counter() - t0


def refused(capsys, *args: str, within: float = 2.0) -> str:
    """The command exits 2 with exactly one stderr line and no stdout, in under ``within`` seconds."""
    rc, out, err, secs = run(capsys, *args)
    assert rc == 2, (args, rc, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("verify: error: "), err
    assert "Traceback" not in err and out == ""
    assert secs < within, (args, secs)
    return err


# ------------------------------------------------------------------ 1. a task with no query row

@pytest.mark.parametrize("task", [["--target", "i + 1"], ["--target", "i - 1", "--rows", "L"]])
@pytest.mark.parametrize("pe", [["--pe", "nope"], ["--pe-features", "1, i"]])
def test_realizable_refuses_a_task_without_rows_like_alpha(capsys, task, pe):
    """No query row at --L: W = 0 would 'realize' it vacuously; alpha refuses the same task at --L0."""
    err = refused(capsys, "realizable", *pe, *task, "--L", "8")
    assert "no query row at --L 8" in err
    err = refused(capsys, "alpha", *pe, *task, "--L0", "4", "--L", "8")
    assert "no query row at --L0 4" in err
