"""pr26 fault injection: every check added or kept for pr26 is shown failing on a corrupted input.

Each test injects one fault (a corrupted task, kernel, hypothesis check, family, Monte Carlo or
figure set) and asserts that the layer's status or outcome changes; the unfaulted run is asserted
first where it is cheap, so the change is the fault's doing.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from verify.constructions import pe
from verify.constructions.pe import FAMILIES, get_family, get_task
from verify.evidence import Figure
from verify.numeric import pr26 as num
from verify.numeric import pr26_figures as fig
from verify.proofs.cli import main
from verify.symbolic import pr26 as sym


def _moving_prev() -> pe.Task:
    """Fault: prev whose old rows change target when the sequence grows (not length-stable)."""
    return dataclasses.replace(get_task("prev"), name="prev-moving",
                               target=lambda i, L: i - 1 if L <= 5 or i < 2 else 0 * i)


# ----------------------------------------------------------------------------- Theorem 1: the margin part


def test_theorem1_symbolic_margin_identity_fault():
    ok = sym.check_theorem1(L0s=(5,), Ls=(9,))
    assert ok.status == "proved" and ok.numbers["margin_identity"]["checked"] == 45
    bad = sym.check_theorem1(L0s=(5,), Ls=(9,), tasks=[_moving_prev()])
    assert bad.status == "refuted"
    assert bad.witness["old_rows_whose_margin_moved"]


def test_theorem1_numeric_margin_identity_fault():
    fams = [FAMILIES["affine"], FAMILIES["learned-absolute"]]
    ok = num.check_theorem1(fams, [get_task("prev")], L0=5, L=12, seed=0, draws=4)
    assert ok.outcome == "holds"
    moving = dataclasses.replace(get_task("prev"), target=lambda i, L: i - 1 if L <= 5 else 0 * i)
    bad = num.check_theorem1(fams, [moving], L0=5, L=12, seed=0, draws=4)
    assert bad.outcome == "fails" and bad.numbers["max_margin_difference_rel"] > 1e-6


# ----------------------------------------------------------------------------- Theorem 2


def test_theorem2_symbolic_copy_count_is_computed(monkeypatch):
    assert sym.check_theorem2(3).status == "proved"
    # fault: copy's offset no longer grows with L (a fixed offset 10): every deep row can be right
    monkeypatch.setitem(pe.TASKS, "copy", dataclasses.replace(pe.TASKS["copy"], target=lambda i, L: i - 10))
    an = sym.deep_row_analysis(["copy"])
    assert an["copy"]["kind"] == "constant" and an["copy"]["failing_fraction_limit"] == 0
    assert sym.check_theorem2(3).status == "refuted"


def test_theorem2_symbolic_copy_depending_on_L_without_growth(monkeypatch):
    # fault: an offset that depends on L but is eventually constant, min(ceil(L/2), 5): right at every long L
    monkeypatch.setitem(pe.TASKS, "copy", dataclasses.replace(
        pe.TASKS["copy"], target=lambda i, L: i - (5 + 0 * L)))
    assert sym.check_theorem2(3).status == "refuted"


def test_theorem2_numeric_constructed_kernel_fault(monkeypatch):
    fams = [FAMILIES["rope"], FAMILIES["free-relative"]]
    ok = num.check_theorem2(fams, 20, (60, 120), 3, 0, horizon=256)
    assert ok.outcome == "holds", ok.numbers["problems"]
    # fault: the constructed kernel is peaked one offset too far (psi(delta + 1))
    real = num.peaked_kernel
    monkeypatch.setattr(num, "peaked_kernel", lambda fam, d, L0: real(fam, d + 1, L0))
    bad = num.check_theorem2(fams, 20, (60, 120), 3, 0, horizon=256)
    assert bad.outcome == "fails"
    assert any("psi(1)" in p and "maximiser at delta = 1" in p for p in bad.numbers["problems"])


def test_theorem2_numeric_rubber_stamped_hypothesis_fails(monkeypatch):
    # fault: the hypothesis check always says "strict unique maximiser at delta = 1": kernels that do
    # not satisfy it (ALiBi's peak is at an endpoint) are then judged, and the deep-row law breaks
    stamp = lambda k, tol=num.PEAK_TOL: {"delta_star": 1, "gap": 1.0, "strict_unique": True}  # noqa: E731
    monkeypatch.setattr(num, "kernel_peak", stamp)
    bad = num.check_theorem2([FAMILIES["alibi"]], 20, (60,), 3, 0, horizon=128)
    assert bad.outcome == "fails"
    assert any("do not attend to delta* = 1" in p for p in bad.numbers["problems"])


def test_theorem2_fitted_rope_first_failing_length():
    # the real extrapolation finding: the RoPE prev head fitted at L0 = 20 first fails at L = 561
    fr = num.fit(get_family("rope"), get_task("prev"), 20, 0)
    ff = num.first_failing_length(fr, 1024)
    assert ff["first_failing_length"] == 561 and ff["argmax_key_paper"] == 1
    assert ff["hypothesis_break_offset"] == 560 and ff["delta_star_trained"] == 1
    assert num.transfer(fr, 560).alpha == 1.0 and num.transfer(fr, 561).alpha < 1.0
    # and it is not judged as a counterexample: at L = 1000 the kernel's unique peak is elsewhere
    law = num.check_kernel_law(fr.family, fr.param, 20, (1000,), [get_task("prev")])
    assert law["problems"] == [] and law["per_L"][1000]["delta_star"] != 1


# ----------------------------------------------------------------------------- Prop. 4


def test_prop4_relative_row_fault(monkeypatch):
    # fault: the RoPE family replaced by an affine kernel (ALiBi's map): its prev row can no longer be 1
    monkeypatch.setitem(pe.FAMILIES, "rope", dataclasses.replace(FAMILIES["alibi"], name="rope"))
    bad = fig.check_prop4(20, (30, 40, 60, 128), 3, 0, sens_lrs=(), horizon=128)
    assert bad.outcome == "fails" and any(p.startswith("rope/prev") for p in bad.numbers["problems"])
    f = {x.figure: x for x in bad.figures}
    assert f["Prop. 4: relative (RoPE, free relative) on prev, skip-3"].reproduced is False


def test_prop4_beyond_table_is_a_finding_not_a_verdict():
    ev = fig.check_prop4(20, fig.PROP4_TABLE_LENGTHS + (1024,), 3, 0, sens_lrs=(), horizon=1024)
    assert ev.outcome == "holds", ev.numbers["problems"]
    assert ev.numbers["table"]["rope/prev"]["alpha"][1024] < 1
    assert any(d.startswith("finding: the fitted rope head on prev first fails at L = 561") for d in ev.details)


# ----------------------------------------------------------------------------- Prop. 2


def test_prop2_non_exchangeable_features_fault(monkeypatch):
    # fault: the untrained features are no longer exchangeable (even positions drawn 3x larger), so the
    # target L - 2 (even) wins more often than 1/(k-1) among the new keys
    base = FAMILIES["learned-absolute"]

    def skewed(n, L0, ar):
        v = base.feature(n, L0, ar)
        return [3 * x for x in v] if n >= L0 and n % 2 == 0 else v

    ok = fig.check_prop2((30,), 20, 3000, 0, 5)
    assert ok.outcome == "holds"
    monkeypatch.setitem(pe.FAMILIES, "learned-absolute", dataclasses.replace(base, feature=skewed))
    bad = fig.check_prop2((30,), 20, 3000, 0, 5)
    assert bad.outcome == "fails"
    assert bad.numbers["runs"][0]["conditional_hit_rate_nonself"] > 0.15


# ----------------------------------------------------------------------------- figure rules


def test_figure_rules_can_fail():
    assert fig.in_ci("x", 0.3, 0.289, (0.279, 0.299), 8000).reproduced is False
    assert fig.in_ci("x", 0.3, 0.29, (0.28, 0.31), 8000).reproduced is True
    assert fig.exact_alpha("x", 0.45, 18, 40).reproduced is True
    assert fig.exact_alpha("x", 0.45, 17, 40).reproduced is False
    assert fig.figure_error(Figure("x", 0.2, 0.25, False)) == pytest.approx(0.25)


def test_lr_rule_uses_every_figure(monkeypatch):
    # with all seven figures 0.07 and 0.1 tie at 5/7 and the summed error picks 0.07 ...
    res = fig.lr_selection_table(grid=(0.07, 0.1))
    assert [r["reproduced"] for r in res["rows"]] == [5, 5] and res["chosen"] == 0.07
    # ... fault: drop the Prop. 2 figures from the rule, and the choice moves to 0.1 (4 of 4 against 3 of 4)
    monkeypatch.setattr(fig, "prop2_figures", lambda r: [])
    res = fig.lr_selection_table(grid=(0.07, 0.1))
    assert res["chosen"] == 0.1


# ----------------------------------------------------------------------------- min-norm selection


def test_min_norm_closed_form_free_relative_prev():
    # minimise sum w_d^2 subject to w_1 - w_d >= 1 (d != 1, 20 trained offsets): w_1 = 19/20, w_d = -1/20
    fr = num.fit(get_family("free-relative"), get_task("prev"), 20, selection="min-norm")
    want = torch.full((20,), -1 / 20, dtype=torch.float64)
    want[1] = 19 / 20
    assert torch.allclose(fr.param, want, atol=1e-6)
    assert fr.settings["relative_duality_gap"] <= 1e-6
    assert num.transfer(fr, 64).g0 == pytest.approx(1.0, abs=1e-9)


def test_min_norm_refuses_to_fake(monkeypatch):
    # fault: too few iterations to certify the gap: an error, never an uncertified head
    with pytest.raises(num.MinNormError, match="not certified"):
        num.fit_min_norm(get_family("sinusoidal"), get_task("prev"), 20, max_iter=200)
    # an unrealizable cell (Prop. 1): no head reaches margin 1
    with pytest.raises(num.MinNormError):
        num.fit_min_norm(get_family("affine"), get_task("prev"), 20, max_iter=2000)


def test_alpha_cli_settings_in_json(capsys):
    assert main(["alpha", "--pe", "free-relative", "--task", "prev", "--L", "40", "--selection", "min-norm",
                 "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fit"]["selection"] == "min-norm" and doc["alpha"] == 1.0
    assert main(["alpha", "--pe", "rope", "--task", "attend-first", "--L", "30", "--lr", "0.02", "--steps", "100",
                 "--weight-decay", "0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["fit"]["lr"], doc["fit"]["steps"], doc["fit"]["weight_decay"]) == (0.02, 100, 0.0)
    assert main(["alpha", "--pe", "rope", "--task", "prev", "--steps", "0"]) == 2


def test_claim_fit_defaults_match_engine():
    from verify.proofs import pr26 as claims
    from verify.proofs import registry

    assert (claims.DEFAULT_LR, claims.DEFAULT_STEPS, claims.DEFAULT_WD) == (num.LR, num.STEPS, num.WEIGHT_DECAY)
    p = registry.get("pr26:prop2").parse_params({"lr": "0.1", "selection": "min-norm"})
    assert claims._fit_kw(p) == {"lr": 0.1, "steps": 400, "weight_decay": 1e-4, "selection": "min-norm"}
