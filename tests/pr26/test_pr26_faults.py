"""pr26 fault injection: every check added or kept for pr26 is shown failing on a corrupted input.

Each test injects one fault (a corrupted task, kernel, hypothesis check, family, Monte Carlo or
figure set) and asserts that the layer's status or outcome changes; the unfaulted run is asserted
first where it is cheap, so the change is the fault's doing.
"""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction

import pytest
import torch

from verify.constructions import pe
from verify.constructions.pe import FAMILIES, get_family, get_task
from verify.evidence import Figure
from verify.frontends.cli import main
from verify.numeric import pr26 as num
from verify.numeric import pr26_figures as fig
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

    ok = fig.check_prop2((30,), 20, 24000, 0, 5)  # the sized default: the negative control 1/(k-2) rejected
    assert ok.outcome == "holds"
    monkeypatch.setitem(pe.FAMILIES, "learned-absolute", dataclasses.replace(base, feature=skewed))
    bad = fig.check_prop2((30,), 20, 3000, 0, 5)
    assert bad.outcome == "fails"
    assert bad.numbers["runs"][0]["conditional_hit_rate_nonself"] > 0.15


# ----------------------------------------------------------------------------- figure rules


def test_figure_rules_can_fail():
    # each rule a value just outside it (more in tests/pr26/test_pr26_figures.py)
    assert fig.in_ci("x", "30%", 0.289, (0.279, 0.2949), 8000).reproduced is False
    assert fig.in_ci("x", "30%", 0.289, (0.279, 0.2989), 8000).reproduced is True
    assert fig.printed_alpha("x", "0.45", 18, 40).reproduced is True
    assert fig.printed_alpha("x", "0.45", 17, 40).reproduced is False
    assert fig.exact_alpha("x", 1, 40, 40).reproduced is True
    assert fig.exact_alpha("x", 1, 39, 40).reproduced is False
    assert fig.figure_error(Figure("x", 0.2, 0.25, False)) == pytest.approx(0.25)


def test_lr_rule_uses_the_in_sample_figures(monkeypatch):
    # on the ten in-sample figures (L <= 60) 0.07 reproduces 9, 0.1 reproduces 7; the four held out are scored apart
    res = fig.lr_selection_table(grid=(0.07, 0.1))
    assert [r["reproduced"] for r in res["rows"]] == [9, 7] and [r["n"] for r in res["rows"]] == [10, 10]
    assert res["chosen"] == 0.07 and res["held_out_at_chosen"] == "1/4"
    assert [r["held_out_reproduced"] for r in res["rows"]] == [1, 3]  # never part of the choice
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
    from verify.core import registry
    from verify.proofs import pr26 as claims

    assert (claims.DEFAULT_LR, claims.DEFAULT_STEPS, claims.DEFAULT_WD) == (num.LR, num.STEPS, num.WEIGHT_DECAY)
    p = registry.get("pr26:prop2").parse_params({"lr": "0.1", "selection": "min-norm"})
    assert claims._fit_kw(p) == {"lr": 0.1, "steps": 400, "weight_decay": 1e-4, "selection": "min-norm"}
    # the typed parameters keep the flags, their order and the engine's selection rules
    fit = ["lr", "steps", "weight-decay"]
    order = {"theorem2": ["K", "L0", *fit, "selection"], "prop2": ["trials", "fits", "L", *fit, "selection"],
             "prop3": ["L", "chunk", *fit], "prop4": ["K", *fit]}
    for name, flags in order.items():
        claim = registry.get(f"pr26:{name}")
        assert claim.params_type is not None and [o.name for o in claim.options] == flags
        if "selection" in flags:
            assert claim.option("selection").choices == num.SELECTIONS


# =============================================================================== exact ties (every decision point)
# The house rule: a row attends to its target iff its margin is > 0 (``pe.attends``); an exact tie fails.
# Each test feeds a decision point the tie it exists for and shows that counting ties as successes
# (``_ties_count``) or removing the re-check that finds the tie changes the result.


def _ties_count(monkeypatch):
    """Fault: the decision rule counts an exact tie (margin 0) as attending."""
    monkeypatch.setattr(pe, "attends", lambda m: m >= 0)


def _no_rounding_bound(monkeypatch):
    """Fault: the float64 rounding bound is forgotten (0), so float64 alone decides near ties."""
    monkeypatch.setattr(num, "logit_error_bound", lambda family, param, feats: 0.0)


def _clamped_best_head(L0: int = 20) -> torch.Tensor:
    W = torch.zeros(L0, L0, dtype=torch.float64)
    W[L0 - 1, L0 - 1] = 1.0
    return W


def test_tie_numeric_clamped_best_head(monkeypatch):
    fam, prev = get_family("clamped-absolute"), get_task("prev")
    rows = list(range(20, 64))
    ev = num.evaluate_rows(fam, prev, _clamped_best_head(), 20, 64, rows)
    assert int(ev.passed.sum()) == 0 and int(ev.target_tied.sum()) == 44
    assert float(ev.margin.abs().max()) == 0.0 and ev.exact_rechecked == 44
    assert fig.clamped_tie_control(20, (30, 64))["problems"] == []
    _ties_count(monkeypatch)
    assert int(num.evaluate_rows(fam, prev, _clamped_best_head(), 20, 64, rows).passed.sum()) == 44
    assert any("clamped tie control" in p for p in fig.clamped_tie_control(20, (30, 64))["problems"])


def test_tie_prop4_numeric_outcome(monkeypatch):
    ok = fig.check_prop4(20, (30, 40, 60, 128), 3, 0, sens_lrs=(), horizon=128)
    assert ok.outcome == "holds", ok.numbers["problems"]
    assert ok.numbers["tie_control"]["per_L"][128]["tied"] == 108
    _ties_count(monkeypatch)
    bad = fig.check_prop4(20, (30, 40, 60, 128), 3, 0, sens_lrs=(), horizon=128)
    assert bad.outcome == "fails"
    assert any(p.startswith("clamped tie control") for p in bad.numbers["problems"])


def test_tie_numeric_exact_recheck_flat_affine_rows(monkeypatch):
    # near-flat affine rows: every row's exact margin is <= 0 and within the rounding bound, so each is re-decided
    # exactly, on any CPU.  float64 alone puts prev's target on top in some of them (5 of 152 heads on this machine),
    # but how many follows the CPU's summation order: not asserted (the rope test shows that fault deterministically)
    ok = num.check_prop1(FAMILIES["affine"], 64, 0, samples=64, opt_lengths=())
    flat = ok.numbers["flat_rows"]
    assert ok.status == "consistent" and ok.outcome == "holds"
    assert flat["engine_passed"] == 0 and flat["exact_ties"] >= 1 and flat["exact_rechecked"] == flat["heads"] == 152
    with monkeypatch.context() as mp:
        _no_rounding_bound(mp)
        bad = num.check_prop1(FAMILIES["affine"], 64, 0, samples=64, opt_lengths=())
        # fault: only rows whose float64 margin is exactly 0 are re-decided (35 of 152 here), the rest by float64
        assert bad.numbers["flat_rows"]["exact_rechecked"] < flat["heads"]
    _ties_count(monkeypatch)
    bad = num.check_prop1(FAMILIES["affine"], 64, 0, samples=64, opt_lengths=())
    assert bad.outcome == "fails" and bad.numbers["flat_rows"]["engine_passed"] == flat["exact_ties"]


def test_tie_numeric_interval_recheck_rope(monkeypatch):
    # RoPE w = psi(0) + psi(4) (features from Python's math, the same on every CPU): k(0) and k(4) are equal in
    # real arithmetic; with the float64 w taken exactly, mpmath intervals put offset 0 (the query itself) on top
    # by ~6e-17.  float64 cannot see that: k(0) = 27.66 has an ulp of 3.6e-15, and the sign of its float64 margin
    # k(4) - k(0) follows the summation order of the 32-term dot product (sequential: -1 ulp, 2 lanes: -2, 4 lanes:
    # 0; an FMA machine gave +1 ulp and 44 passing rows), so it is CPU-dependent and never asserted.  What holds on
    # every CPU: |float64 margin| <= 4 E, so every row is re-decided by intervals, and the exact answer is kept.
    rope, task = get_family("rope"), get_task("skip-4")
    w = num.peaked_kernel(rope, 0, 20) + num.peaked_kernel(rope, 4, 20)
    rows = list(range(20, 64))
    feats = num.feature_matrix(rope, 64, 20, 0)
    E = num.logit_error_bound(rope, w, feats)
    assert 1e-14 < E < 1e-12  # the rounding bound, far above the true gap

    def decided(ev):
        assert ev.interval_rechecked == 44 and int(ev.passed.sum()) == 0
        assert bool((ev.margin < 0).all()) and bool((ev.margin > -1e-15).all()) and bool((ev.argmax == ev.rows).all())

    decided(num.evaluate_rows(rope, task, w, 20, 64, rows))
    # the float64 error made deliberate and CPU-independent: offset 4's float64 features are moved along w so that
    # its float64 logit exceeds k(0) by 2 E (the dot product's own rounding is at most E, so float64 alone now
    # passes every row on any CPU), while the exact features, and so the interval re-check, are untouched
    real = num.feature_matrix
    shift = 2 * E * w / float(w @ w)

    def wrong_by_2E(family, n, L0, seed=0, start=0):
        f = real(family, n, L0, seed, start)
        if family is rope and start <= 4 < n:
            f[4 - start] += shift
        return f

    monkeypatch.setattr(num, "feature_matrix", wrong_by_2E)
    fl = num.evaluate_rows(rope, task, w, 20, 64, rows, exact_ties=False)
    assert int(fl.passed.sum()) == 44 and bool((fl.margin > E / 2).all())  # precondition: float64 alone passes all
    decided(num.evaluate_rows(rope, task, w, 20, 64, rows))
    # fault: the rounding bound is forgotten, float64 alone decides and every row passes
    _no_rounding_bound(monkeypatch)
    assert int(num.evaluate_rows(rope, task, w, 20, 64, rows).passed.sum()) == 44


def test_tie_theorem2_two_peak_control(monkeypatch):
    fams = [FAMILIES["rope"], FAMILIES["free-relative"]]
    ok = num.check_theorem2(fams, 20, (60, 120), 3, 0, horizon=256)
    assert ok.outcome == "holds", ok.numbers["problems"]
    tp = ok.numbers["controls"]["two_peak"]["per_L"][60]
    assert tp["hypothesis"] is False and tp["prev"] == {"alpha": 0.0, "tied": 40, "rows": 40, "exact_rechecked": 40}
    _ties_count(monkeypatch)
    bad = num.check_theorem2(fams, 20, (60, 120), 3, 0, horizon=256)
    assert bad.outcome == "fails"
    assert any(p.startswith("two-peak kernel: prev alpha_60 = 1.0") for p in bad.numbers["problems"])


def test_tie_kernel_peak_rejects_two_equal_maxima(monkeypatch):
    k = torch.tensor([0.0, 1.0, 0.5, 1.0, 0.2], dtype=torch.float64)
    assert num.kernel_peak(k)["strict_unique"] is False
    assert num.kernel_peak(torch.tensor([0.0, 1.0, 0.5, 0.9], dtype=torch.float64))["strict_unique"] is True
    # fault: a peak check that accepts a tie (gap >= 0) lets the two-peak control through
    real = num.kernel_peak
    monkeypatch.setattr(num, "kernel_peak", lambda k, tol=num.PEAK_TOL: {**real(k, tol), "strict_unique":
                                                                           real(k, tol)["gap"] >= 0})
    probs = num.theorem2_controls(20, (60,), 3)["problems"]
    assert "two-peak kernel: hypothesis accepted at L = 60 (two equal maxima)" in probs


def test_tie_solver_margin(monkeypatch):
    from verify.solver import pr26 as sol

    aff, prev = FAMILIES["affine"], get_task("prev")
    flat = [[Fraction(1), Fraction(0)], [Fraction(0), Fraction(0)]]  # logit 1 on every key: every row tied
    assert sol.recheck_exact(aff, prev, flat, 6, 6) == (False, 0)
    assert sol.check_prop1(aff, 6).status == "proved"
    with monkeypatch.context() as mp:
        # fault: the encoding demands margin >= 0 (ties admitted): SAT with a tie, which the strict re-check refuses
        mp.setattr(sol, "MARGIN", Fraction(0))
        ev = sol.check_prop1(aff, 6)
        assert ev.status == "error" and ev.witness["min_margin_exact"] == "0"
        _ties_count(mp)
        assert sol.recheck_exact(aff, prev, flat, 6, 6) == (True, 0)
        ev = sol.check_prop1(aff, 6)
        assert ev.status == "refuted" and ev.witness["n"] == 3


def test_tie_symbolic_prop1(monkeypatch):
    fams = [FAMILIES["affine"], FAMILIES["alibi"]]
    ok = sym.check_prop1(fams)
    assert ok.status == "proved"
    assert ok.numbers["affine: best interior margin (constant row {'W_00': 1, 'W_01': 0, 'W_10': 1, 'W_11': 0})"] == "0"
    _ties_count(monkeypatch)
    bad = sym.check_prop1(fams)
    assert bad.status == "refuted" and bad.witness["family"] == "affine" and bad.witness["prev_margin"] == "0"


def test_tie_symbolic_prop4_clamped(monkeypatch):
    from verify.symbolic import pr26_figures as sf

    ok = sf.check_prop4_clamped_tie()
    assert ok.status == "proved" and ok.numbers["best_head_margin"] == "0"
    _ties_count(monkeypatch)
    bad = sf.check_prop4_clamped_tie()
    assert bad.status == "refuted" and "alpha_L would be 1" in bad.summary


def test_tie_symbolic_prop3_interval_never_certifies_a_tie():
    from verify.symbolic import pr26_figures as sf

    # theta = pi / 17 puts pi / (2 theta) at 8.5: sin(8 theta) = sin(9 theta) exactly
    for claimed, other in ((8, 9), (9, 8)):
        r = sf.sin_maximiser_proof(17, claimed, theta_fn=lambda arb: arb.pi() / 17)
        assert r["ok"] is False and r["step1_nearest_integer_strict"] is False
        assert r["step4_brute_force_all_deltas"] is False and r["violation"]["delta"] == other
    # control: a theta whose pi / (2 theta) = 8.25 is not a tie, and the same proof certifies 8
    assert sf.sin_maximiser_proof(17, 8, theta_fn=lambda arb: arb.pi() / arb(16.5))["ok"] is True


def test_tie_verify_alpha_cli(monkeypatch, capsys):
    # `verify alpha` decides with the engine: feed it the clamped head at its best (every new row tied)
    fam, prev = get_family("clamped-absolute"), get_task("prev")
    monkeypatch.setattr(num, "fit", lambda *a, **k: num.FitResult(fam, prev, 20, 0, _clamped_best_head(), 0.0, 0.0,
                                                                  {"selection": "given"}))
    args = ["alpha", "--pe", "clamped-absolute", "--task", "prev", "--L", "64", "--format", "json"]
    assert main(args) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alpha"] == 0.0 and doc["new_rows_with_exact_tie_to_target"] == 44 and doc["exact_rechecked_rows"] > 0
    _ties_count(monkeypatch)
    assert main(args) == 0
    assert json.loads(capsys.readouterr().out)["alpha"] == 1.0


# =============================================================================== positive controls


def _affine_in_disguise() -> pe.Family:
    """Fault: the control family's features lost their square (affine again)."""
    return dataclasses.replace(pe.QUADRATIC, feature=lambda n, L0, ar: [ar.num(1), ar.num(n), ar.num(n)])


def test_control_prop1_solver_broken_control():
    from verify.solver import pr26 as sol

    assert sol.check_prop1(FAMILIES["affine"], 6).status == "proved"
    ev = sol.check_prop1(FAMILIES["affine"], 6, control=_affine_in_disguise())
    assert ev.status == "error" and "control" in ev.summary and ev.numbers["control_answer"] == "unsat"


def test_control_prop1_symbolic_broken_control():
    ev = sym.check_prop1([FAMILIES["affine"]], control=_affine_in_disguise())
    assert ev.status == "error" and ev.summary.startswith("positive control failed")


def test_control_prop1_numeric_broken_control():
    ok = num.check_prop1(FAMILIES["affine"], 64, 0, samples=64, opt_lengths=())
    assert ok.status == "consistent" and ok.numbers["control"]["interior_strict_argmax_rows"] > 0
    ev = num.check_prop1(FAMILIES["affine"], 64, 0, samples=64, opt_lengths=(), control=_affine_in_disguise())
    assert ev.status == "error" and ev.summary.startswith("positive control failed")


def test_control_theorem2_solver_reverse(monkeypatch):
    from verify.solver import pr26 as sol

    ok = sol.check_theorem2(((8, 16),), 3)
    assert ok.status == "proved" and ok.numbers["reverse_control"] == {"answer": "sat", "witness_rechecked_exact": True}
    # fault: the one-hot features of the control collapse to one feature (every key tied): reverse's
    # positive control turns UNSAT and the layer must stop calling reverse's UNSAT a proof
    la = FAMILIES["learned-absolute"]
    monkeypatch.setitem(pe.FAMILIES, "learned-absolute",
                        dataclasses.replace(la, feature=lambda n, L0, ar: la.feature(0, L0, ar)))
    bad = sol.check_theorem2(((8, 16),), 3)
    assert bad.status == "error" and "positive control failed" in bad.summary


def test_control_theorem2_solver_prev_index_fault(monkeypatch):
    from verify.solver import pr26 as sol

    # fault (index): prev as i - 2; the SAT control "prev with its peak at offset 1" turns UNSAT
    monkeypatch.setitem(pe.TASKS, "prev", dataclasses.replace(pe.TASKS["prev"], first_row=lambda L: 2,
                                                              target=lambda i, L: i - 2))
    bad = sol.check_theorem2(((8, 16),), 3)
    assert bad.status == "error" and "prev" in bad.summary


# =============================================================================== index faults (non-symmetric inputs)


def test_index_copy_floor_instead_of_ceil(monkeypatch):
    ok = num.theorem2_controls(20, (60,), 3)
    assert ok["problems"] == [] and ok["copy_control"]["L"] == 61 and ok["copy_control"]["alpha"] == 1.0
    # prop3 at a smaller odd length: theta_8 = 0.01, pi / (2 theta_8) = 157.08, L = 313 (ceil(L/2) = 157)
    p3 = fig.check_prop3(313, 20, (60,), 0, sens_lrs=(), offset_k=8)
    assert p3.outcome == "holds" and p3.numbers["alpha_big"]["alpha"] == 1.0
    monkeypatch.setattr(pe, "ceil_half", lambda L: L // 2)  # fault: copy's offset floor(L/2)
    assert get_task("copy").target(61, 61) == 31  # the fault reaches the task table
    bad = num.theorem2_controls(20, (60,), 3)
    assert any(p.startswith("copy control") for p in bad["problems"])
    p3 = fig.check_prop3(313, 20, (60,), 0, sens_lrs=(), offset_k=8)
    assert p3.outcome == "fails" and p3.numbers["alpha_big"]["alpha"] == 0.0


def test_index_reverse_off_by_one(monkeypatch):
    # fault (index): reverse's target L - i instead of L - 1 - i (still inside the window at odd L)
    monkeypatch.setitem(pe.TASKS, "reverse", dataclasses.replace(pe.TASKS["reverse"], target=lambda i, L: L - i))
    bad = num.theorem2_controls(20, (60,), 3)
    assert any(p.startswith("reverse control") for p in bad["problems"])


def test_index_prev_and_skip_numeric(monkeypatch):
    fams = [FAMILIES["rope"], FAMILIES["free-relative"]]
    with monkeypatch.context() as mp:
        mp.setitem(pe.TASKS, "prev", dataclasses.replace(pe.TASKS["prev"], first_row=lambda L: 2,
                                                         target=lambda i, L: i - 2))
        bad = num.check_theorem2(fams, 20, (60,), 3, 0, horizon=128)
        assert bad.outcome == "fails" and any("w = psi(1): prev alpha_60" in p for p in bad.numbers["problems"])
    real = pe.get_task

    def skip_off(name):  # fault: skip-K as i - K - 1
        t = real(name)
        return dataclasses.replace(t, first_row=lambda L: 4, target=lambda i, L: i - 4) if name == "skip-3" else t

    monkeypatch.setattr(pe, "get_task", skip_off)
    bad = num.check_theorem2(fams, 20, (60,), 3, 0, horizon=128)
    assert bad.outcome == "fails" and any("w = psi(3): skip-3 alpha_60" in p for p in bad.numbers["problems"])


def test_index_target_outside_causal_window(monkeypatch):
    from verify.solver import pr26 as sol

    # fault (index): reverse's query rows start one row early, so row floor(L/2) - 1 targets a key to its right
    bad_rev = dataclasses.replace(pe.TASKS["reverse"], first_row=lambda L: L // 2 - 1)
    with pytest.raises(ValueError, match="outside the causal window"):
        sol.realize_rows(FAMILIES["free-relative"], bad_rev, 16, 16)
    with pytest.raises(ValueError, match="outside the causal window"):
        num.evaluate_rows(FAMILIES["rope"], bad_rev, num.peaked_kernel(FAMILIES["rope"], 1, 20), 20, 64,
                          list(bad_rev.rows(64)))
    # and a negative target (prev on row 0) would wrap around to the last feature row in Python
    prev0 = dataclasses.replace(pe.TASKS["prev"], first_row=lambda L: 0)
    with pytest.raises(ValueError, match="outside the causal window"):
        pe.exact_row_margin(FAMILIES["affine"], prev0, [[Fraction(1)] * 2] * 2, 0, 5, 5, pe.FractionArith(0))


# =============================================================================== Prop. 3's symbolic figures


def test_prop3_symbolic_figures_fault(monkeypatch):
    from verify.symbolic import pr26_figures as sf

    ok = {f.figure: f for f in sf.check_prop3(brute_force=False).figures}
    assert ok["Prop. 3: theta_min = 10000^(-15/16)"].reproduced is True
    assert ok["Prop. 3: sin(delta theta_min) increases up to delta"].ours == 8833
    assert ok["Prop. 3: sin(delta theta_min) increases up to delta"].reproduced is True
    # fault: 15 frequencies per decade of the exponent instead of 16 (theta_min = 10000^(-15/15) = 1e-4), in the
    # construction's theta (pe.theta_ball, the interval proof's) and in the figure's float theta alike
    monkeypatch.setattr(sf, "N_FREQ", 15)
    monkeypatch.setattr(pe, "N_FREQ", 15)
    ev = sf.check_prop3(brute_force=False)
    bad = {f.figure: f for f in ev.figures}
    assert ev.status == "refuted"
    assert bad["Prop. 3: theta_min = 10000^(-15/16)"].reproduced is False
    assert bad["Prop. 3: sin(delta theta_min) increases up to delta"].ours == 15708
    assert bad["Prop. 3: sin(delta theta_min) increases up to delta"].reproduced is False


def test_tie_rows_beyond_the_recheck_budget_fail(monkeypatch):
    # near-tie rows past the re-check budget are unresolved and fail; float64 never decides them
    monkeypatch.setattr(num, "MAX_RECHECK_ROWS", 10)
    fam, prev, rows = get_family("clamped-absolute"), get_task("prev"), list(range(20, 64))
    _ties_count(monkeypatch)
    ev = num.evaluate_rows(fam, prev, _clamped_best_head(), 20, 64, rows)
    assert ev.exact_rechecked == 10 and ev.unresolved == 34 and int(ev.passed.sum()) == 10


# ----------------------------------------------------------------------------- verify alpha: refusals and outcomes

_PROBE = ("import sys, time\nfrom verify.frontends.cli import main\n{pre}t = time.perf_counter()\nrc = main({argv!r})\n"
          "print('PROBE', rc, time.perf_counter() - t, 'torch' in sys.modules)\n")


def _probe(argv: list[str], pre: str = "") -> tuple[int, float, bool, str]:
    """Run ``main(argv)`` in a fresh interpreter: exit code, seconds inside main, torch imported?, stderr."""
    import subprocess
    import sys

    cp = subprocess.run([sys.executable, "-c", _PROBE.format(pre=pre, argv=argv)], capture_output=True, text=True,
                        timeout=120)
    line = [x for x in cp.stdout.splitlines() if x.startswith("PROBE")][-1].split()
    return int(line[1]), float(line[2]), line[3] == "True", cp.stderr


_BASE = ["alpha", "--pe", "rope", "--task", "prev", "--L0", "20", "--L", "64"]


@pytest.mark.parametrize("extra,needle", [
    (["--seed", "99999999999999999999"], "--seed"),
    (["--seed", "-1"], "--seed"),
    (["--lr", "nan"], "--lr"),
    (["--lr", "1e300"], "--lr"),
    (["--weight-decay", "-1"], "--weight-decay"),
    (["--steps", "0"], "--steps"),
])
def test_alpha_refusals_before_torch(extra, needle):
    rc, secs, torch_loaded, err = _probe(_BASE + extra)
    assert rc == 2 and len(err.strip().splitlines()) == 1 and needle in err
    assert not torch_loaded and secs < 0.5, (secs, torch_loaded)


def test_alpha_size_refusal_before_torch():
    # an absolute head is O(L^2 r): 200000 positions are past the time budget, refused before torch loads
    rc, secs, torch_loaded, err = _probe(["alpha", "--pe", "sinusoidal", "--task", "prev", "--L0", "20", "--L", "200000"])
    assert rc == 2 and "time budget" in err and len(err.strip().splitlines()) == 1
    assert not torch_loaded and secs < 0.5, (secs, torch_loaded)


def test_alpha_refusal_probe_sees_torch():
    # fault: the numeric engine imported before validation: the probe must notice torch
    rc, _, torch_loaded, _ = _probe(_BASE + ["--steps", "0"], pre="import verify.numeric.pr26\n")
    assert rc == 2 and torch_loaded


def test_diverged_fit_is_not_a_measurement(monkeypatch, capsys):
    # the engine refuses to return a non-finite head (lr beyond any sane range: Adam overflows)
    with pytest.raises(num.FitDiverged, match="diverged"):
        num.fit(get_family("rope"), get_task("prev"), 20, 0, lr=1e300)
    # the CLI refuses --lr 1e300 before work; with the range check lifted, the divergence is exit 3, never alpha
    from verify.proofs.pr26 import alpha as alpha_api
    monkeypatch.setattr(alpha_api, "MAX_LR", float("inf"))
    assert main(_BASE + ["--lr", "1e300", "--format", "json"]) == 3
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["outcome"] == "inconclusive" and doc["alpha"] is None and doc["reason"] == "fit diverged"
    assert len(cap.err.strip().splitlines()) == 1 and "no alpha measured" in cap.err
    assert main(_BASE + ["--lr", "1e300"]) == 3
    cap = capsys.readouterr()
    assert "alpha_L" not in cap.out and "nan" not in cap.out.lower()


def test_nan_head_escaping_the_engine_is_caught_by_the_cli(monkeypatch, capsys):
    # fault: an engine that returns a NaN head (its own guard bypassed): the CLI still reports no alpha
    good = num.fit(get_family("rope"), get_task("prev"), 20, 0, steps=5)
    bad = dataclasses.replace(good, param=torch.full_like(good.param, float("nan")), loss_last=float("nan"))
    monkeypatch.setattr(num, "fit", lambda *a, **k: bad)
    assert main(_BASE + ["--format", "json"]) == 3
    doc = json.loads(capsys.readouterr().out)
    assert doc["alpha"] is None and doc["outcome"] == "inconclusive"


def test_alpha_min_norm_unrealizable_is_inconclusive(capsys):
    argv = ["alpha", "--pe", "affine", "--task", "prev", "--L0", "20", "--L", "40", "--selection", "min-norm"]
    assert main(argv + ["--format", "json"]) == 3
    cap = capsys.readouterr()
    doc = json.loads(cap.out)
    assert doc["alpha"] is None and doc["reason"] == "min-norm unrealizable"
    assert doc["fit"]["norm_lower_bound"] > num.NORM_BOUND
    assert len(cap.err.strip().splitlines()) == 1
    assert "could not be certified" in cap.err and "no head with margin >= 1" in cap.err


def test_alpha_min_norm_not_certified_is_inconclusive(monkeypatch, capsys):
    import functools
    # fault: a solve budget too small to close the gap on a realizable cell: exit 3, not 0 and not 2
    assert main(["alpha", "--pe", "sinusoidal", "--task", "prev", "--L", "40", "--selection", "min-norm",
                 "--format", "json"]) == 0
    capsys.readouterr()
    monkeypatch.setattr(num, "fit_min_norm", functools.partial(num.fit_min_norm, max_iter=200))
    num.forget_fits()  # heads memoized before the fault was injected must not hide it
    assert main(["alpha", "--pe", "sinusoidal", "--task", "prev", "--L", "40", "--selection", "min-norm"]) == 3
    err = capsys.readouterr().err
    assert "could not be certified" in err and "not certified after 200 iterations" in err


def test_prop2_resolution_finding():
    import types

    from verify.proofs import pr26 as claims

    def ev(lo, hi, k=10, L=30):
        return types.SimpleNamespace(numbers={"runs": [{"L": L, "k": k, "conditional_hit_rate_nonself_ci_decision":
                                                        (lo, hi)}]})
    wide = claims._p2_resolution([ev(0.102, 0.132)])
    assert len(wide) == 1 and "cannot distinguish" in wide[0] and "1/(k-2) = 0.1250" in wide[0]
    assert "also contains 1/(k-2)" in wide[0] and "also contains 1/k" not in wide[0]
    # fault-free direction: an interval that excludes both neighbours gives no such finding
    assert claims._p2_resolution([ev(0.103, 0.117)]) == []


# =============================================================================== the solver layer's status cascade


def test_solver_cascade_typed_provenance_z3_alone_is_not_proved():
    from verify.evidence import Context, using
    from verify.solver import pr26 as sol

    ok = sol.check_prop1(FAMILIES["affine"], 5)
    assert ok.status == "proved" and ok.solver is not None and not ok.solver.z3_only
    # n = 3 solved, UNSAT with a re-checked certificate whose rows are constraints at n = 4, 5 (inclusion)
    assert len(ok.solver.farkas_rechecked) == 1 and ok.numbers["by_inclusion"] == 2
    # fault: no certificate and no cvc5, so every UNSAT rests on z3 alone: the typed slot says so, not proved
    with using(Context(certify=False, second_opinion="never")):
        bad = sol.check_prop1(FAMILIES["affine"], 5)
        bad2 = sol.check_theorem2(((8, 16),), 3)
    assert bad.status == "inconclusive" and len(bad.solver.z3_only) == 3 and "z3 only" in bad.summary
    assert bad2.status == "inconclusive" and bad2.solver.z3_only


def test_solver_cascade_unknown_and_budget_are_inconclusive(monkeypatch):
    from verify.solver import pr26 as sol

    real = sol.check

    def timeout_at(n):
        def f(name, *a, **k):  # fault: the solver gives up on one obligation
            res = real(name, *a, **k)
            if f"n = {n} " in name:
                res.answer, res.reason = "unknown", "timeout (injected)"
            return res
        return f

    with monkeypatch.context() as mp:
        mp.setattr(sol, "check", timeout_at(3))
        ev = sol.check_prop1(FAMILIES["affine"], 6)
        assert ev.status == "inconclusive" and "timeout (injected)" in ev.summary and ev.outcome is None
        # without the inclusion step every length is solved, and a timeout at n = 5 is inconclusive too
        mp.setattr(sol, "check", timeout_at(5))
        mp.setattr(sol, "prop1_inclusion", lambda *a: False)
        ev = sol.check_prop1(FAMILIES["affine"], 6)
        assert ev.status == "inconclusive" and "timeout (injected)" in ev.summary and ev.numbers["by_inclusion"] == 0
        mp.setattr(sol, "check", lambda name, *a, **k: dataclasses.replace(real(name, *a, **k), answer="unknown",
                                                                          reason="timeout (injected)")
                   if "copy at L0 = 8" in name else real(name, *a, **k))
        ev = sol.check_theorem2(((8, 16),), 3)
        assert ev.status == "inconclusive" and "timeout (injected)" in ev.summary
    # a wall-clock budget that stops the scan early: the lengths past it are undecided, never a pass
    ev = sol.check_prop1(FAMILIES["affine"], 12, budget_s=-1.0)
    assert ev.status == "inconclusive" and ev.summary == "budget reached at n = 2 < N = 12"
    assert sol.check_prop1(FAMILIES["affine"], 12, budget_s=60.0).status == "proved"


def test_solver_cascade_refuted_witness_outranks_a_broken_control(monkeypatch):
    from verify.solver import pr26 as sol

    # a family that realizes prev (the quadratic features) checked with a control that is itself broken:
    # the exactly re-checked witness still refutes; with the real affine family the broken control is an error
    quad = dataclasses.replace(pe.QUADRATIC, name="affine")
    broken = dataclasses.replace(pe.QUADRATIC, feature=lambda n, L0, ar: [ar.num(1), ar.num(n), ar.num(n)])
    ev = sol.check_prop1(quad, 6, control=broken)
    assert ev.status == "refuted" and ev.witness["recheck_ok"]
    assert sol.check_prop1(FAMILIES["affine"], 6, control=broken).status == "error"


# =============================================================================== Prop. 1: certificate carried by inclusion


def _affine_until(n_switch: int) -> pe.Family:
    """Fault: a feature map that changes with the length: affine [1, i, 0] below n_switch, [1, i, i^2] from it on
    (prev is then unrealizable at small n and realizable from n_switch)."""
    return dataclasses.replace(FAMILIES["affine"], name="affine", dim=lambda L0: 3,
                               feature=lambda n, L0, ar: [ar.num(1), ar.num(n), ar.num(n * n if L0 >= n_switch else 0)])


def test_prop1_inclusion_carries_the_n3_certificate_and_fails_on_a_length_dependent_map(monkeypatch):
    from verify.solver import pr26 as sol

    ok = sol.check_prop1(FAMILIES["affine"], 64)
    assert ok.status == "proved" and ok.numbers["answers"]["unsat"] == 62
    assert ok.numbers["solved"] == {"unsat": 1, "sat": 0, "unknown": 0} and ok.numbers["by_inclusion"] == 61
    assert ok.certificate["inclusion"] == [{"certified_at": 3, "rows_used": 2, "lengths": "4..64"}]
    assert "UNSAT at n = 3" in ok.summary and "every n = 4..64" in ok.summary
    # a map that changes with n: the n = 3 certificate's rows are not constraints at n = 5, so n = 5 is solved
    # on its own and its SAT witness refutes
    bad = _affine_until(5)
    ev = sol.check_prop1(bad, 8)
    assert ev.status == "refuted" and ev.witness["n"] == 5 and ev.witness["recheck_ok"]
    assert ev.numbers["by_inclusion"] == 1  # n = 4 carried (same rows), n = 5 solved
    # fault: an inclusion step that does not compare the rows carries the n = 3 UNSAT to every n: wrongly proved
    monkeypatch.setattr(sol, "prop1_inclusion", lambda *a: True)
    wrong = sol.check_prop1(bad, 8)
    assert wrong.status == "proved" and wrong.numbers["by_inclusion"] == 5


def test_prop1_inclusion_exact_rows_refuse_a_scaled_or_missing_row():
    from verify.solver import pr26 as sol
    from verify.solver.realizable import rows_present, used_rows

    aff = FAMILIES["affine"]
    res = sol.prop1_obligation(aff, 3, 20_000)
    used = used_rows(res.certificate)
    rows = sol.realize_rows(aff, get_task("prev"), 9, 9)
    assert rows_present(used, rows, sol.MARGIN, 4)
    # faults: each rows set without one used row, rows scaled by 2, a different margin, a wider parameter space
    # whose theta indices no longer line up
    for u in used:
        c = tuple(-Fraction(u["coeffs"].get(f"theta_{a}", 0)) for a in range(4))
        assert not rows_present(used, [r for r in rows if r != c], sol.MARGIN, 4)
    assert not rows_present(used, [tuple(2 * x for x in r) for r in rows], sol.MARGIN, 4)
    assert not rows_present(used, rows, Fraction(2), 4)
    assert not rows_present(used, [r + (Fraction(1),) for r in rows], sol.MARGIN, 5)


# =============================================================================== numeric: the per-check feature cache


def test_feature_cache_is_per_check_and_keyed_by_the_construction():
    fam = FAMILIES["rope"]
    plain = num.feature_matrix(fam, 40, 20, 0)
    with num.feature_cache():
        a = num.feature_matrix(fam, 40, 20, 0)
        b = num.feature_matrix(fam, 25, 20, 0, start=5)  # answered from the cached prefix
        assert torch.equal(a, plain) and torch.equal(b, plain[5:25])
        a.zero_()  # a caller that writes into its copy does not change the cache
        assert torch.equal(num.feature_matrix(fam, 40, 20, 0), plain)
        # fault: a changed construction inside the block is a different family object: recomputed, not served
        bad = dataclasses.replace(fam, feature=lambda n, L0, ar: [x * 2 for x in fam.feature(n, L0, ar)])
        assert torch.equal(num.feature_matrix(bad, 40, 20, 0), 2 * plain)
    assert num._FEATURE_CACHE is None  # nothing survives the block: the next check computes afresh


# =============================================================================== cvc5 and exactly re-checked SAT models


def test_sat_rechecked_skips_cvc5_only_on_sat_and_the_exact_recheck_catches_a_bad_model(monkeypatch):
    from verify.evidence import Context, using
    from verify.solver import pr26 as sol

    one = Fraction(1)
    sat = sol.lp_obligation("theta >= 1", [(one,)], 1, 20_000, sat_rechecked=True)
    assert sat.answer == "sat" and sat.second_answer == "" and "re-checked exactly" in sat.second_reason
    assert sol.lp_obligation("theta >= 1", [(one,)], 1, 20_000).second_answer == "sat"  # without the flag cvc5 runs
    with using(Context(certify=False)):  # an UNSAT without a certificate still gets cvc5's answer
        uns = sol.lp_obligation("theta >= 1 and -theta >= 1", [(one,), (-one,)], 1, 20_000, sat_rechecked=True)
    assert uns.answer == "unsat" and uns.second_answer == "unsat"
    # fault: z3's SAT model for the control is corrupted (all zeros); with cvc5 no longer re-solving it, the exact
    # re-check is the second way, and it turns the layer into an error
    assert sol.check_prop1(FAMILIES["affine"], 5).status == "proved"
    real = sol.check

    def zero_model(name, *a, **k):
        res = real(name, *a, **k)
        if res.answer == "sat":
            res.model = {key: Fraction(0) for key in res.model}
        return res

    monkeypatch.setattr(sol, "check", zero_model)
    ev = sol.check_prop1(FAMILIES["affine"], 5)
    assert ev.status == "error" and "control" in ev.summary and not ev.numbers["control_witness_ok"]
    assert sol.check_theorem2(((8, 16),), 3).status == "error"
