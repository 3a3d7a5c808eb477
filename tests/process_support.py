"""What the tests that stop processes share: wait for a process to be gone."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest


def assert_gone(pid: int, what: str, seconds: float = 5.0) -> None:
    """Wait up to ``seconds`` for process ``pid`` to exit (gone, or a zombie awaiting its reaper); else kill it and
    fail with ``what`` (the message says which process outlived what)."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
        except FileNotFoundError:
            return
        if state == "Z":
            return
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    pytest.fail(what)
