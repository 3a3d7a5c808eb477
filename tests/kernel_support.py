"""What every kernel test needs: Coq present (or a skip that says why, or a failure under CI), and a private
copy of one theory to compile and evaluate (never compiled inside kernel/theories)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from verify.kernel.driver import THEORIES


def need_coq() -> None:
    """Skip without coqc/coqchk; fail instead under CI, where .ci/run installs Coq (tools/install-coq.sh)."""
    if shutil.which("coqc") is None or shutil.which("coqchk") is None:
        if os.environ.get("CI"):
            pytest.fail("coqc/coqchk missing under CI: .ci/run installs Coq (tools/install-coq.sh)")
        pytest.skip("coqc not installed (tools/install-coq.sh installs it); the kernel layer is skipped here")


def private_theory(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    """A directory holding a copy of ``kernel/theories/<name>.v``, its own ``_CoqProject`` and a ``work``
    folder for :func:`verify.kernel.driver.coq_compute`."""
    need_coq()
    d = tmp_path_factory.mktemp(f"{name.lower()}-theories")
    shutil.copy(THEORIES / f"{name}.v", d / f"{name}.v")
    (d / "_CoqProject").write_text(f"-Q . Verify\n{name}.v\n")
    (d / "work").mkdir()
    return d


def compile_theory(directory: Path, name: str, text: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """``text`` written as ``directory/<name>.v`` and compiled there by coqc (as the build does: ``-Q . Verify``):
    the fault tests' way to show a changed statement no longer compiles."""
    from verify.kernel.driver import COQC_ARGS

    (directory / f"{name}.v").write_text(text)
    return subprocess.run(["coqc", *COQC_ARGS, f"{name}.v"], cwd=directory, capture_output=True, text=True,
                          timeout=timeout)
