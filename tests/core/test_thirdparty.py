"""verify.thirdparty: the private names of other packages verify needs live there and nowhere else, and each still
exists in the installed release (so a release that drops one fails here, not in a user's run)."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

from verify import thirdparty

ROOT = Path(__file__).resolve().parents[2]
SOURCES = ("src", "numeric", "proofs", "solver", "symbolic", "kernel", "tools", "benchmarks")
WRAPPER = ROOT / "src" / "verify" / "thirdparty.py"
_WRAPPED = re.compile(r"\._(?:mpi_|Highs|core|broken|processes)\b|[\"']_(?:core|broken|processes|mpi_)[\"']")


def private_uses(source: str) -> list[str]:
    """Where ``source`` reaches a private name of another package: an attribute path that starts at an imported
    module other than the standard library's and verify's and goes through a name with one leading underscore,
    or one of the names thirdparty.py wraps (``x._mpi_``, ``getattr(m, "_core")``)."""
    tree = ast.parse(source)
    modules: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                if top not in sys.stdlib_module_names and top != "verify":
                    modules.add(a.asname or top)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            chain, cur = [], node
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name) and cur.id in modules and \
                    any(a.startswith("_") and not a.startswith("__") for a in chain):
                found.append(f"line {node.lineno}: {cur.id}." + ".".join(reversed(chain)))
    found += [f"line {source.count(chr(10), 0, m.start()) + 1}: {m.group(0)}" for m in _WRAPPED.finditer(source)]
    return sorted(set(found))


def test_no_private_name_of_another_package_outside_the_wrapper():
    bad = {}
    for d in SOURCES:
        for f in (ROOT / d).rglob("*.py"):
            if f == WRAPPER or ".venv" in f.parts:
                continue
            if uses := private_uses(f.read_text()):
                bad[str(f.relative_to(ROOT))] = uses
    assert not bad, f"private names of other packages outside verify/thirdparty.py: {bad}"


def test_the_scan_finds_what_it_looks_for():
    """Fault injection: the uses this project once had are each found."""
    src = ("import z3\nimport mpmath as mp\nimport importlib\n"
           "def f(a, ctx, x, pool):\n"
           "    s = z3.z3._symbol2py(ctx, a)\n"
           "    e = mp.libmp._normalize\n"
           "    lo = x._mpi_[0]\n"
           "    core = getattr(importlib.import_module('highspy'), '_core', None)\n"
           "    return pool._broken\n")
    found = private_uses(src)
    assert any("z3.z3._symbol2py" in u for u in found) and any("mp.libmp._normalize" in u for u in found)
    assert any("._mpi_" in u for u in found) and any("'_core'" in u for u in found) and any("._broken" in u for u in found)
    assert private_uses("import os\nx = os._exit\nimport verify\ny = verify._private\n") == []


def test_each_wrapped_name_still_exists():
    import concurrent.futures as cf

    import mpmath

    lo, hi = thirdparty.interval_ends(mpmath.iv.mpf([1, 2]))
    assert lo[1] == 1 and hi[1] == 1 and hi[2] == 1  # 1 = 1 * 2^0, 2 = 1 * 2^1: (sign, mantissa, exponent, bits)
    assert thirdparty.is_mpmath_interval(mpmath.iv.mpf(1)) and not thirdparty.is_mpmath_interval(1.0)
    highs = thirdparty.silent_highs()
    assert highs is not None, "highspy's silent binding (highspy._core._Highs) is gone: update verify.thirdparty"
    pool = cf.ProcessPoolExecutor(max_workers=1)
    try:
        assert thirdparty.pool_broken(pool) is False and thirdparty.pool_processes(pool) == []
        assert hasattr(pool, "_broken") and hasattr(pool, "_processes")
    finally:
        pool.shutdown()


def test_no_check_leaves_a_global_precision_changed():
    """mpmath's and python-flint's precisions are process-wide: a check that sets one and does not restore it changes
    every later computation in the run.  ws24 Prop. 4's refutation (mpmath at 50 digits) and pr26 Prop. 3's interval
    proof (arb at 40 digits) leave all three as they were.  Fault: ``mpmath.mp.dps = 50`` in place of ``with
    mpmath.workdps(50)`` (as it was) fails here."""
    import flint
    import mpmath
    import sympy as sp

    from verify.symbolic import pr26_figures, ws24

    before = (mpmath.mp.dps, mpmath.iv.dps, flint.ctx.prec)
    ev = ws24.check_prop4(claimed=lambda t: sp.E / (sp.E + t))  # a wrong closed form: refuted at t = 1 in mpmath
    assert ev.status == "refuted"
    assert pr26_figures.sin_maximiser_proof(17665, 8833, brute_force=False)["ok"]
    assert (mpmath.mp.dps, mpmath.iv.dps, flint.ctx.prec) == before
