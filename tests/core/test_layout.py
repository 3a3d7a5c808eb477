"""The import arrows of the layout (docs/architecture.md), checked on the source of every module:

* the four layers (``verify.symbolic``, ``verify.solver``, ``verify.numeric``, ``verify.kernel``), the constructions
  (``verify.constructions``) and the shared modules (``verify.evidence``, ``verify.safeio``, ``verify.interrupts``,
  ``verify.faults``)
  import neither the papers (``verify.proofs``) nor the machinery (``verify.core``, ``verify.pipeline``,
  ``verify.reports``, ``verify.frontends``, ``verify.api``): those sit on top of them;
* a layer never imports another layer: each checks a construction in its own arithmetic, so a defect in
  one cannot leak into another's answer;
* the constructions import no layer;
* the machinery never imports a paper: the front ends and the pipeline reach the papers through the
  registry's entry points, as they reach a third-party claim pack; the core model imports no layer either.

Imports are read from the syntax tree (module level and inside functions), so a lazy import counts too."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SRC = ROOT / "src" / "verify"
#: package -> folder, as pyproject.toml's [tool.setuptools.package-dir] maps them
FOLDERS = {"verify.symbolic": ROOT / "symbolic", "verify.solver": ROOT / "solver", "verify.numeric": ROOT / "numeric",
           "verify.kernel": ROOT / "kernel",
           "verify.constructions": SRC / "constructions", "verify.proofs": ROOT / "proofs",
           "verify.core": SRC / "core", "verify.pipeline": SRC / "pipeline", "verify.reports": SRC / "reports",
           "verify.frontends": SRC / "frontends"}
LAYERS = ("verify.symbolic", "verify.solver", "verify.numeric", "verify.kernel")
MACHINERY = ("verify.core", "verify.pipeline", "verify.reports", "verify.frontends", "verify.api")
SHARED = (SRC / "evidence.py", SRC / "safeio.py", SRC / "interrupts.py", SRC / "faults.py", SRC / "runcache.py",
          SRC / "hfcompat.py")


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
    return next((p for p in (*FOLDERS, "verify.api") if name == p or name.startswith(p + ".")), None)


def violations(package: str, files: list[Path]) -> list[str]:
    """``file: imports X`` for every import from ``package``'s files that breaks the arrows."""
    bad = []
    for f in files:
        for name in sorted(imported_modules(f)):
            target = _package_of(name)
            if target is None or target == package:
                continue
            below = package in LAYERS or package in ("verify.constructions", "shared")
            if (target == "verify.proofs" and package != "verify.proofs") or (below and target in MACHINERY) or (
                    package in LAYERS and target in LAYERS) or (package == "verify.constructions" and target in LAYERS) or (
                    package == "shared") or (package == "verify.core" and target in LAYERS):
                bad.append(f"{_rel(f)}: imports {name}")
    return bad


@pytest.mark.parametrize("package", [*LAYERS, "verify.constructions"])
def test_layers_and_constructions_import_down_only(package):
    files = sorted(FOLDERS[package].rglob("*.py"))
    assert files, f"no modules found for {package}"
    assert violations(package, files) == []


def test_shared_modules_import_no_package_above_them():
    assert violations("shared", list(SHARED)) == []


def test_the_check_sees_a_forbidden_import(tmp_path):
    """Injected fault: a layer module that imports the claims, one that imports another layer, and a
    lazy import inside a function, each reported."""
    f = tmp_path / "bad.py"
    f.write_text("from verify.proofs.ws24 import PAPER\n"
                 "def g():\n    import verify.numeric.pr26\n    from verify.solver import common\n")
    got = violations("verify.symbolic", [f])
    assert [x.split(": ", 1)[1] for x in got] == [
        "imports verify.numeric.pr26", "imports verify.proofs.ws24", "imports verify.proofs.ws24.PAPER",
        "imports verify.solver", "imports verify.solver.common"]


@pytest.mark.parametrize("package", ["verify.core", "verify.pipeline", "verify.reports", "verify.frontends"])
def test_machinery_reaches_papers_only_through_the_registry(package):
    files = sorted(FOLDERS[package].rglob("*.py"))
    assert files, f"no modules found for {package}"
    assert violations(package, files) == []
    assert violations("verify.frontends", [SRC / "api.py"]) == []


def test_proofs_holds_one_package_per_paper_and_nothing_else():
    """proofs/ is the papers' room: one package per paper (each exports PAPER, registered as an entry point),
    and no front end, pipeline or report module among them."""
    modules = sorted(f.name for f in FOLDERS["verify.proofs"].glob("*.py"))
    assert modules == ["__init__.py"]
    packages = sorted(d.name for d in FOLDERS["verify.proofs"].iterdir() if (d / "__init__.py").is_file())
    assert packages == ["bietti23", "fp26", "impl", "kvshift24", "pr26", "ws24"]
    import tomllib

    eps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["entry-points"]["verify.papers"]
    assert eps == {k: f"verify.proofs.{k}:PAPER" for k in packages}


def test_the_check_sees_machinery_importing_a_paper(tmp_path):
    """Injected fault: a front end that imports a paper directly, and a layer that imports the pipeline."""
    f = tmp_path / "bad.py"
    f.write_text("def g():\n    from verify.proofs.pr26 import alpha\n")
    assert [x.split(": ", 1)[1] for x in violations("verify.frontends", [f])] == [
        "imports verify.proofs.pr26", "imports verify.proofs.pr26.alpha"]
    g = tmp_path / "bad2.py"
    g.write_text("from verify.pipeline.run import execute\n")
    assert [x.split(": ", 1)[1] for x in violations("verify.numeric", [g])] == [
        "imports verify.pipeline.run", "imports verify.pipeline.run.execute"]


def long_functions(files: list[Path], limit: int = 100) -> list[str]:
    """``file:function (n lines)`` for every function (methods and nested ones included) longer than ``limit``."""
    out = []
    for f in files:
        for node in ast.walk(ast.parse(f.read_text(), filename=str(f))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > limit:
                    out.append(f"{_rel(f)}:{node.name} ({n} lines)")
    return out


def test_no_function_is_over_100_lines():
    """Each check computes a typed result and a separate function describes it; no body grows past 100 lines."""
    files = sorted(p for d in (*FOLDERS.values(), SRC) for p in d.rglob("*.py"))
    assert files and long_functions(files) == []


def test_the_length_check_sees_a_long_function(tmp_path):
    f = tmp_path / "long.py"
    f.write_text("def f():\n" + "    x = 1\n" * 100)
    assert [x.rsplit("/", 1)[-1] for x in long_functions([f])] == ["long.py:f (101 lines)"]
