"""The import arrows of the layout (the README's "Layout"), checked on the source of every module:

* the four layers (``verify.symbolic``, ``verify.solver``, ``verify.numeric``, ``verify.kernel``), the constructions
  (``verify.constructions``) and the shared modules (``verify.evidence``, ``verify.safeio``) never import
  ``verify.proofs`` (the claims, reports and front ends sit on top of them);
* a layer never imports another layer: each checks a construction in its own arithmetic, so a defect in
  one cannot leak into another's answer;
* the constructions import no layer.

Imports are read from the syntax tree (module level and inside functions), so a lazy import counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
#: package -> folder, as pyproject.toml's [tool.setuptools.package-dir] maps them
FOLDERS = {"verify.symbolic": ROOT / "symbolic", "verify.solver": ROOT / "solver", "verify.numeric": ROOT / "numeric",
           "verify.kernel": ROOT / "kernel",
           "verify.constructions": ROOT / "src" / "verify" / "constructions", "verify.proofs": ROOT / "proofs"}
LAYERS = ("verify.symbolic", "verify.solver", "verify.numeric", "verify.kernel")
SHARED = (ROOT / "src" / "verify" / "evidence.py", ROOT / "src" / "verify" / "safeio.py")


def imported_modules(path: Path) -> set[str]:
    """Every absolute module name ``path`` imports (``from x import y`` counts ``x`` and ``x.y``)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.add(node.module)
            out.update(f"{node.module}.{a.name}" for a in node.names)
    return out


def _rel(f: Path) -> str:
    return str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f)


def _package_of(name: str) -> str | None:
    return next((p for p in FOLDERS if name == p or name.startswith(p + ".")), None)


def violations(package: str, files: list[Path]) -> list[str]:
    """``file: imports X`` for every import from ``package``'s files that breaks the arrows."""
    bad = []
    for f in files:
        for name in sorted(imported_modules(f)):
            target = _package_of(name)
            if target is None or target == package:
                continue
            if target == "verify.proofs" or (package in LAYERS and target in LAYERS) or (
                    package == "verify.constructions" and target in LAYERS) or (package == "shared"):
                bad.append(f"{_rel(f)}: imports {name}")
    return bad


@pytest.mark.parametrize("package", [*LAYERS, "verify.constructions"])
def test_layers_and_constructions_import_down_only(package):
    files = sorted(FOLDERS[package].glob("*.py"))
    assert files, f"no modules found for {package}"
    assert violations(package, files) == []


def test_shared_modules_import_no_package_above_them():
    assert violations("shared", list(SHARED)) == []


def test_the_check_sees_a_forbidden_import(tmp_path):
    """Injected fault: a layer module that imports the claims, one that imports another layer, and a
    lazy import inside a function, each reported."""
    f = tmp_path / "bad.py"
    f.write_text("from verify.proofs.model import Claim\n"
                 "def g():\n    import verify.numeric.pr26\n    from verify.solver import common\n")
    got = violations("verify.symbolic", [f])
    assert [x.split(": ", 1)[1] for x in got] == [
        "imports verify.numeric.pr26", "imports verify.proofs.model", "imports verify.proofs.model.Claim",
        "imports verify.solver", "imports verify.solver.common"]
