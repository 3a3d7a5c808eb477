"""The designer's time estimate (issue 25, Build 3): one line "estimated ~X s (budget Y s)" before any work,
from the sizes (tasks x lengths, the feature table, the existence systems) and a calibration of the machine."""

from __future__ import annotations

import json
import re

from verify.frontends import alpha_cli as C
from verify.frontends.cli import main
from verify.proofs.pr26 import alpha as A

REL = "cos(d/4), sin(d/4), cos(d/64), sin(d/64)"
LINE = re.compile(r"^estimated ~[0-9.e+]+ s \((budget [0-9.]+ s|no budget: --budget S stops it)\)$")


def test_estimate_line_comes_before_any_decision(capsys):
    assert main(["alpha", "--pe-features", REL, "--tasks", "prev", "--up-to", "80", "--budget", "30"]) == 0
    lines = capsys.readouterr().out.splitlines()
    k = next(n for n, ln in enumerate(lines) if ln.startswith("estimated"))
    assert LINE.match(lines[k]) and lines[k].endswith("(budget 30 s)")
    assert lines[0].startswith("designer (pr26)") and k < next(n for n, ln in enumerate(lines) if ln.startswith("[prev]"))


def test_estimate_goes_to_stderr_with_json(capsys):
    assert main(["alpha", "--pe", "alibi", "--tasks", "attend-first", "--up-to", "80", "--format", "json"]) == 0
    cap = capsys.readouterr()
    assert json.loads(cap.out)["schema"] == "verify-designer/1"
    assert any(LINE.match(ln) for ln in cap.err.splitlines())


def _est(**kw):
    base = dict(kind="relative", r=4, exact_features=False, n_tasks=5, lengths=A.designer_lengths(20, 4096),
                up_to=4096, calibration_s=C.CALIBRATION_NOMINAL_S, max_exact_work=A.MAX_EXACT_WORK)
    return C.designer_estimate(**{**base, **kw})


def test_estimate_scales_with_the_sizes_and_the_calibration():
    e = _est()
    assert abs(_est(calibration_s=2 * C.CALIBRATION_NOMINAL_S) - 2 * e) < 1e-9 * e  # a machine half as fast
    assert _est(n_tasks=1) < e < _est(n_tasks=6)
    assert _est(up_to=512, lengths=A.designer_lengths(20, 512)) < e
    assert _est(loaded=frozenset({"torch", "highspy"})) < e  # imports already done are not counted
    # absolute heads: quadratic in L, the exact (Fraction) decisions at small L the costliest per unit
    ab = _est(kind="absolute", r=3, exact_features=True, up_to=1024, lengths=A.designer_lengths(20, 1024))
    assert ab > _est(up_to=1024, lengths=A.designer_lengths(20, 1024))


def test_sizes_read_without_resolving_the_map_again():
    assert C._designer_sizes(None, REL, None, 20) == ("relative", 4, False)
    assert C._designer_sizes(None, "1, i, i**2", None, 20) == ("absolute", 3, True)
    assert C._designer_sizes("rope", None, 8, 20) == ("relative", 16, False)
    assert C._designer_sizes("pkg.mod:fn", None, None, 20) is None
