"""docs/trusted-base.md (tools/trusted_base.py): the kernel's trusted base in one place, generated from the build and
current; the coqchk command line trusts neither the bytecode VM nor native compilation.

Needs coqc: skipped without it, failed under CI.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from kernel_support import need_coq

from verify.kernel import driver

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "tools" / "trusted_base.py"


def test_the_page_is_what_the_build_says_now():
    need_coq()
    res = subprocess.run([sys.executable, str(TOOL), "--check"], capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout + res.stderr


def test_a_number_changed_on_the_page_is_caught(tmp_path, monkeypatch):
    """Injected fault: one theorem's assumption list edited on the page: --check exits 1."""
    need_coq()
    sys.path.insert(0, str(ROOT / "tools"))
    import trusted_base

    page = tmp_path / "trusted-base.md"
    text = trusted_base.render()
    page.write_text(text.replace("| proved (idealised) |", "| proved |", 1))
    monkeypatch.setattr(trusted_base, "PAGE", page)
    monkeypatch.setattr(trusted_base, "ROOT", tmp_path)
    assert trusted_base.main(["--check"]) == 1
    page.write_text(text)
    assert trusted_base.main(["--check"]) == 0


def test_coqchk_is_never_asked_to_trust_the_vm_or_native_compilation():
    """Every coqchk call in the kernel layer passes COQCHK_ARGS, which holds no option that makes coqchk trust
    compiled code (coqchk re-does every conversion itself)."""
    assert not {a for a in driver.COQCHK_ARGS if re.search(r"vm|native|bytecode|impredicative|type-in-type", a)}
    calls = []
    for path in (ROOT / "kernel").glob("*.py"):
        for m in re.finditer(r'_run\(\["coqchk",([^\]]*)\]', path.read_text()):
            calls.append(path.name)
            assert m.group(1).strip().startswith("*COQCHK_ARGS"), f"{path.name}: coqchk called with {m.group(1)!r}"
    # one call site, the theories' build; HeadSoftmax goes through that build too
    assert calls == ["driver.py"]
    assert "build_theories(" in (ROOT / "kernel" / "head_replay.py").read_text()
