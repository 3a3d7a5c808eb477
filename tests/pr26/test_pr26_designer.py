"""verify alpha --tasks ... --up-to N: the designer's question in one command (issue 25)."""

from __future__ import annotations

import json

import pytest

from verify.frontends.cli import main
from verify.proofs.pr26 import alpha as A

REL = "cos(d/4), sin(d/4), cos(d/64), sin(d/64)"


def test_designer_text_lines_and_answers(capsys):
    rc = main(["alpha", "--pe-features", REL, "--tasks", "prev,copy", "--up-to", "320"])
    out = capsys.readouterr().out  # captured: stdout is not a terminal, every line is still there
    assert rc == 0
    lines = out.splitlines()
    assert any(ln.startswith("[prev] existence: some head realizes prev at every L <= 320") for ln in lines)
    assert [ln for ln in lines if ln.startswith("[prev] L = ")][-1].startswith("[prev] L = 320: selection alpha_L")
    ans = next(ln for ln in lines if ln.startswith("[prev] answer:"))
    assert "alpha_L = 1 at every L <= 276" in ans and "every length" not in out
    assert "selection vs existence" in out and "`verify realizable`" in out
    assert any(ln.startswith("[copy] existence: realizable at every L <= 4; NOT realizable at any L from 5 to 320")
               for ln in lines)


def test_designer_json_and_selection_bound_matches_alpha(capsys):
    rc = main(["alpha", "--pe-features", REL, "--tasks", "prev", "--up-to", "320", "--format", "json"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 0 and doc["schema"] == "verify-designer/1" and not doc["inconclusive"]
    (task,) = [e for e in doc["events"] if e["event"] == "task"]
    # the slower definition: alpha at L = the bound is 1, at the bound + 1 it is not (the fitted head, one call each)
    up = task["selection_up_to"]
    assert A.alpha(None, "prev", 20, up, features=REL).alpha == 1.0
    assert A.alpha(None, "prev", 20, up + 1, features=REL).alpha < 1.0


def test_designer_budget_is_inconclusive_never_a_pass(capsys):
    rc = main(["alpha", "--pe-features", REL, "--tasks", "prev", "--up-to", "320", "--budget", "0.000001"])
    cap = capsys.readouterr()
    assert rc == 3 and "INCONCLUSIVE" in cap.out and "inconclusive" in cap.err
    assert "realizes prev at every" not in cap.out


def test_designer_interrupt_prints_what_was_decided(capsys, monkeypatch):
    real = A.alpha
    calls = {"n": 0}

    def interrupting(*a, **k):
        calls["n"] += 1
        if calls["n"] > 2:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(A, "alpha", interrupting)
    rc = main(["alpha", "--pe-features", REL, "--tasks", "prev", "--up-to", "320"])
    cap = capsys.readouterr()
    assert rc == 130 and "[prev] existence:" in cap.out and "[prev] L = 40:" in cap.out
    assert "interrupted" in cap.err


@pytest.mark.parametrize("argv,needle", [
    (["--tasks", "prev", "--up-to", "30"], "--up-to"),
    (["--tasks", "prev", "--task", "prev"], "--tasks replaces"),
    (["--tasks", "nosuch"], "nosuch"),
    (["--tasks", "prev", "--budget", "-1"], "--budget"),
    (["--task", "prev", "--up-to", "64"], "--up-to and --budget go with --tasks"),
])
def test_designer_refusals(capsys, argv, needle):
    assert main(["alpha", "--pe-features", REL, *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_help_states_the_limits(capsys):
    assert main(["alpha", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "--up-to" in out and "131072" in out and "selection" in out
    assert main(["realizable", "--help"]) == 0
    assert "131072" in capsys.readouterr().out


def test_realizable_plots_and_readable_W(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    rc = main(["realizable", "--pe-features", "1, i, i**2", "--task", "prev", "--L", "64", "--plots", str(tmp_path)])
    out = capsys.readouterr().out
    assert rc == 0 and "realizable at every L <= 64" in out and "rounded; exact rationals in --format json" in out
    assert (tmp_path / "realizable_kernel.png").stat().st_size > 0
    assert (tmp_path / "realizable_margins.png").stat().st_size > 0


def test_realizable_4096_one_exact_decision_and_affine_certificate(capsys, tmp_path):
    # issue 25's "done when": [1, i, i^2] realizes prev at every L <= 4096 (one head re-checked exactly at 4096);
    # [1, i] does not from L = 3, with a certificate verify recheck accepts
    assert main(["realizable", "--pe-features", "1, i, i**2", "--task", "prev", "--L", "4096", "--margin", "1"]) == 0
    cap = capsys.readouterr()
    assert "realizable at every L <= 4096" in cap.out and "block identity" in cap.out
    assert cap.err.count("verify: realizable: length ") == 1  # one decision, at 4096
    d = tmp_path / "c"
    assert main(["realizable", "--pe-features", "1, i", "--task", "prev", "--L", "4096", "--certificates", str(d)]) == 1
    assert "not realizable at any L from 3 to 4096" in capsys.readouterr().out
    assert main(["recheck", str(d)]) == 0


def test_realizable_interrupt_prints_progress_and_exits_130(capsys, monkeypatch):
    from verify.solver import realizable as R

    real = R.solve_cutting
    calls = {"n": 0}

    def interrupting(*a, **k):
        calls["n"] += 1
        if calls["n"] > 1:
            raise KeyboardInterrupt
        return real(*a, **k)

    monkeypatch.setattr(R, "solve_cutting", interrupting)
    rc = main(["realizable", "--pe-features", "1, i", "--task", "prev", "--L", "64"])
    err = capsys.readouterr().err
    assert rc == 130 and "decided so far: length 64: unsat" in err


def test_designer_resolves_an_expression_map_once_with_the_same_events(monkeypatch):
    """The designer parses and cross-checks the feature map once for every task and length; its events are
    those of a run that resolves the map again for every call (timings aside)."""
    from verify.constructions import features as F

    def events() -> list:
        return [{k: v for k, v in e.items() if k not in ("seconds", "elapsed_s", "remaining_s_estimate")}
                for e in A.designer(features=REL, tasks=("prev", "copy"), up_to=80)]

    calls = []
    real = F.expression_family
    monkeypatch.setattr(F, "expression_family", lambda *a, **k: calls.append(a) or real(*a, **k))
    shared = events()
    assert len(calls) == 1
    real_prepare = A.prepare
    monkeypatch.setattr(A, "prepare", lambda *a, _spec=None, **k: real_prepare(*a, **k))  # resolved per call
    real_events = A._designer_events
    monkeypatch.setattr(A, "_designer_events", lambda *a: real_events(*a[:-1], None))
    calls.clear()
    assert events() == shared and len(calls) > 1
