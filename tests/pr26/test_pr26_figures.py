"""pr26 figures: Prop. 2 Monte Carlo, Prop. 3 interval proof and alpha at 17665, Prop. 4 table."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from verify.constructions import pe
from verify.constructions.pe import get_family
from verify.core import registry
from verify.core.model import InputError, run_claim
from verify.evidence import FIGURE_RULES, Context, Figure, rounding_interval
from verify.frontends.cli import main
from verify.numeric import pr26_figures as fig
from verify.symbolic import pr26_figures as sf

# ----------------------------------------------------------------------------- Prop. 3 (a): the interval proof


def test_maximiser_proof_8833():
    r = sf.sin_maximiser_proof(17665, 8833)
    assert r["ok"] and r["step1_nearest_integer_strict"] and r["step2_arguments_below_pi"]
    assert r["step4_brute_force_all_deltas"] is True and r["increasing_up_to_claimed"]
    assert r["nearest_integer_to_x_star"] == 8833
    # the runner-up is the neighbour 8834, certified below by ~8.3e-9 (a float comparison alone is not the proof)
    assert r["min_certified_gap"]["delta"] == 8834
    assert 8e-9 < r["min_certified_gap"]["lower_bound"] < 9e-9


@pytest.mark.parametrize("wrong", [8832, 8834])
def test_maximiser_proof_rejects_wrong_maximiser(wrong):
    # fault injection: a neighbouring claimed maximiser must fail both the nearest-integer step and the brute force
    r = sf.sin_maximiser_proof(17665, wrong)
    assert not r["ok"]
    assert not r["step1_nearest_integer_strict"] and r["step4_brute_force_all_deltas"] is False
    assert r["violation"]["delta"] == 8833 and r["violation"]["gap_lower_bound"] < 0
    ev = sf.check_prop3(17665, claimed=wrong)
    assert ev.status == "refuted" and ev.outcome == "fails"


def test_maximiser_proof_fails_when_arguments_pass_pi():
    # L large enough that (L - 1) theta_min > pi: step 2 must refuse (the reduction to |delta - x*| breaks)
    r = sf.sin_maximiser_proof(17700, 8833, brute_force=False)
    assert not r["step2_arguments_below_pi"] and not r["ok"]


def test_kernel_identity():
    assert sf.kernel_identity(15) and sf.kernel_identity(3)


# ----------------------------------------------------------------------------- Prop. 3 (b): alpha of the offset kernel

# reduced but meaningful size: theta_8 = 1/100, pi/(2 theta_8) = 157.08, so at L = 313 (ceil(L/2) = 157,
# 312 theta_8 < pi) the kernel sin(delta theta_8) peaks exactly at the copy offset; at L = 315 it does not
SMALL_K, SMALL_L, SMALL_BAD_L = 8, 313, 315


def test_reduced_size_proof_and_alpha():
    assert sf.check_prop3(SMALL_L, k=SMALL_K).status == "proved"
    r = fig.alpha_fixed(get_family("sinusoidal"), "copy", fig.sin_offset_W(SMALL_K), SMALL_L, chunk=16)
    assert r["alpha"] == 1.0 and r["rows"] == SMALL_L - 157 and r["argmax_offsets"] == [157] and r["min_margin"] > 0
    # fault injection: the copy offset moves to 158, the kernel's peak does not
    assert sf.check_prop3(SMALL_BAD_L, k=SMALL_K).status == "refuted"
    bad = fig.alpha_fixed(get_family("sinusoidal"), "copy", fig.sin_offset_W(SMALL_K), SMALL_BAD_L)
    assert bad["alpha"] == 0.0 and bad["argmax_offsets"] == [157]


def test_chunking_does_not_change_alpha():
    W = fig.sin_offset_W(SMALL_K)
    a = fig.alpha_fixed(get_family("sinusoidal"), "copy", W, SMALL_L, chunk=16)
    b = fig.alpha_fixed(get_family("sinusoidal"), "copy", W, SMALL_L, chunk=4096)
    assert (a["alpha"], a["min_margin"], a["argmax_offsets"]) == (b["alpha"], b["min_margin"], b["argmax_offsets"])


def test_alpha_at_17665_full_size():
    r = fig.alpha_fixed(get_family("sinusoidal"), "copy", fig.sin_offset_W(), 17665, chunk=512)
    assert r["rows"] == 8832 and r["alpha"] == 1.0 and r["argmax_offsets"] == [8833] and r["ties"] == 0
    # float64 margin agrees with the certified interval gap to ~1e-15
    proof = sf.sin_maximiser_proof(17665, 8833, brute_force=False)
    assert abs(r["min_margin"] - proof["min_certified_gap"]["lower_bound"]) < 1e-13


# ----------------------------------------------------------------------------- Prop. 2


def test_wilson():
    from verify.stats import wilson_interval

    lo, hi = wilson_interval(50, 100)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-12
    assert wilson_interval(0, 0) == (0.0, 1.0)
    assert wilson_interval(0, 100)[0] == 0.0


def test_prop2_rates_within_ci_of_chance():
    for L, trials in ((30, 8000), (60, 4000)):
        r = fig.prop2_mc(L, 20, trials, seed=0)
        assert r["k"] == L - 20
        lo, hi = r["conditional_hit_rate_nonself_ci95"]
        assert lo <= 1 / (r["k"] - 1) <= hi
        assert r["winner_trained"] + r["winner_self"] + r["winner_other_new"] == trials
        assert r["unconditional_hit_rate"] == pytest.approx(r["hits"] / trials)


def test_prop2_deterministic_for_a_seed():
    a = fig.prop2_mc(30, 20, 1000, seed=7)
    b = fig.prop2_mc(30, 20, 1000, seed=7)
    c = fig.prop2_mc(30, 20, 1000, seed=8)
    assert a == b and a != c


def test_prop2_refuses_too_short():
    with pytest.raises(ValueError):
        fig.prop2_mc(22, 20, 100)


# ----------------------------------------------------------------------------- Prop. 4


def test_clamped_tie_fault_injection(monkeypatch):
    assert sf.check_prop4_clamped_tie().status == "proved"
    # fault injection: un-clamp the family (new positions get their own one-hot-free random features)
    fams = dict(pe.FAMILIES)
    fams["clamped-absolute"] = pe.FAMILIES["learned-absolute"]
    monkeypatch.setattr(pe, "FAMILIES", fams)
    assert sf.check_prop4_clamped_tie().status == "refuted"


def test_prop4_table_and_published():
    ev = fig.check_prop4(20, (30, 40, 60, 128), 3, 0)
    assert ev.outcome == "holds", ev.numbers["problems"]
    t = ev.numbers["table"]
    assert t["clamped-absolute/prev"]["target_tied"][30] == t["clamped-absolute/prev"]["rows"][30] == 10
    # the fit's other key wins outright (reported next to the paper's margin 0)
    assert t["clamped-absolute/prev"]["first_failing"][0]["margin"] < 0
    figs = {f.figure: f for f in ev.figures}
    assert figs["Prop. 4: RoPE on attend-first, alpha_30"].paper == 0.80
    assert figs["Prop. 4: RoPE on attend-first, alpha_30"].reproduced == (t["rope/attend-first"]["passed"][30] == 8)
    assert "published" not in ev.numbers


# ----------------------------------------------------------------------------- claims, JSON, audit


def _cli_json(capsys, *args):
    rc = main([*args, "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def _published(res):
    return res["figures"]


def test_claims_registered_and_hold(capsys):
    for cid in ("pr26:prop1", "pr26:theorem2", "pr26:theorem1", "pr26:prop2", "pr26:prop3", "pr26:prop4"):
        assert registry.get(cid).id == cid
    rc, doc = _cli_json(capsys, "pr26:prop3")
    assert rc == 0
    res = doc["results"][0]
    assert res["verdict"] == "HOLDS"
    pub = _published(res)
    figures = {r["figure"] for r in pub}
    assert "Prop. 3: alpha_60 of prev, sinusoidal, L0-fit" in figures
    assert all(set(r) >= {"figure", "paper", "ours", "note", "reproduced"} for r in pub)
    assert res["figures_reproduced"] == f"{sum(r['reproduced'] for r in pub)}/{len(pub)}"


def test_prop2_claim_json_published(capsys):
    rc, doc = _cli_json(capsys, "pr26:prop2", "--trials", "3000")
    res = doc["results"][0]
    # 3000 trials cannot reject the negative control 1/(k-2): INCONCLUSIVE (exit 3), the figures still reported
    assert rc == 3 and res["verdict"] == "INCONCLUSIVE" and "1/(k-2)" in res["layers"]["numeric"]["summary"]
    pub = _published(res)
    paper = {r["figure"]: r["paper"] for r in pub}
    assert paper["Prop. 2 (L = 30): conditional hit rate, winner a new key"] == 0.115
    assert paper["Prop. 2 (L = 30): winner among new keys"] == 0.30
    assert res["layers"]["numeric"]["numbers"]["fit_settings"]["lr"] == 0.07


def test_prop3_refuses_oversized_chunk():
    with pytest.raises(InputError):
        registry.get("pr26:prop3").parse_params({"L": 40000, "chunk": 4096})


def test_prop4_claim_expected():
    claim = registry.get("pr26:prop4")
    r = run_claim(claim, claim.parse_params({}), Context(seed=0))
    assert r.verdict == r.expected == "HOLDS"


# ----------------------------------------------------------------------------- figure rules (each fails just outside)


def test_rounding_interval_exact():
    assert rounding_interval("0.055") == (Fraction(11, 200), Fraction(109, 2000), Fraction(111, 2000))
    assert rounding_interval("30%") == (Fraction(3, 10), Fraction(59, 200), Fraction(61, 200))
    assert rounding_interval("0.80")[1:] == (Fraction(159, 200), Fraction(161, 200))  # trailing zero is a digit
    assert rounding_interval("1.78e-4")[1:] == (Fraction(1775, 10**7), Fraction(1785, 10**7))
    with pytest.raises(ValueError):
        rounding_interval("lower than at 60")


def test_rounding_rule_edges():
    lo, hi = Fraction(115, 1000), Fraction(125, 1000)
    assert fig.printed_value("x", "0.12", lo).reproduced and fig.printed_value("x", "0.12", hi).reproduced
    eps = Fraction(1, 10**12)
    assert not fig.printed_value("x", "0.12", lo - eps).reproduced
    assert not fig.printed_value("x", "0.12", hi + eps).reproduced
    # alpha counts: the printed 0.12 of 108 rows allows 13 only; one row more or less is outside
    assert fig.printed_alpha("x", "0.12", 13, 108).reproduced
    for k in (12, 14):
        f = fig.printed_alpha("x", "0.12", k, 108)
        assert not f.reproduced and f.rule == "rounding" and "allow 13/108" in f.note


def test_ci_rule_edges():
    # '30%' stands for [0.295, 0.305]: a Wilson interval ending just above 0.295 meets it, one just below does not
    # (the float 0.295 itself is 0.29499999999999998..., below the exact end: compared exactly)
    assert fig.in_ci("x", "30%", 0.289, (0.279, 0.2950001), 8000).reproduced
    assert not fig.in_ci("x", "30%", 0.289, (0.279, 0.295), 8000).reproduced
    f = fig.in_ci("x", "30%", 0.289, (0.279, 0.2949999), 8000)
    assert not f.reproduced and f.rule == "ci" and "disjoint" in f.note
    assert not fig.in_ci("x", "30%", 0.32, (0.3050001, 0.33), 8000).reproduced


def test_exact_rule_and_not_computed():
    assert fig.exact_alpha("x", 1, 492, 492).reproduced
    f = fig.exact_alpha("x", 1, 491, 492)  # 0.998 rounds to 1.00 but is not 1
    assert not f.reproduced and f.rule == "exact"
    n = fig.not_computed("x", "roughly 20-35%", "why")
    assert not n.reproduced and n.ours is None and n.rule == "not computed"
    assert set(FIGURE_RULES) == {"exact", "rounding", "ci", "bound", "tolerance", "not computed"}
    with pytest.raises(ValueError):
        Figure("x", 1, 1, True, rule="close enough")


# ----------------------------------------------------------------------------- every printed number in the tables


def test_prop4_rope_row_printed_values_and_one_row():
    ev = fig.check_prop4(20, fig.PROP4_TABLE_LENGTHS, 3, 0, sens_lrs=(0.07, 0.1), horizon=512)
    figs = {f.figure: f for f in ev.figures}
    assert all(f.rule for f in ev.figures)
    rope = {L: figs[f"Prop. 4: RoPE on attend-first, alpha_{L}"] for L in fig.PROP4_TABLE_LENGTHS}
    assert [rope[L].paper for L in fig.PROP4_TABLE_LENGTHS] == [0.8, 0.4, 0.2, 0.12, 0.055, 0.039]
    assert [rope[L].reproduced for L in fig.PROP4_TABLE_LENGTHS] == [True] * 3 + [False] * 3
    assert all(isinstance(f.paper, (int, float)) for f in ev.figures)  # only printed numbers under 'paper'
    # one row more than the printed digits allow at each length: the lower edge of the band 82..87
    for L, want, ours in ((128, "13/108", "14/108"), (256, "13/236", "14/236"), (512, "19/492", "20/492")):
        assert f"allow {want}" in rope[L].note and f"ours {ours}" in rope[L].note
        assert "82..87" in rope[L].note
    # the same count rule meets the whole printed row at lr 0.1, not at the default 0.07
    assert fig.rope_af_every_printed(ev.numbers["sensitivity"]) == [(0.1, 0)]
    assert sum(f.reproduced for f in ev.figures) == 7 and len(ev.figures) == 10  # + the symbolic margin: 8/11


def test_prop3_alpha_128_and_prop2_at_60_are_figures():
    p3 = fig.check_prop3(313, 20, (60, 128), 0, sens_lrs=(), offset_k=8)
    f3 = {f.figure: f for f in p3.figures}
    assert f3["Prop. 3: alpha_128 of prev, sinusoidal, L0-fit"].paper == 0.34
    assert f3["Prop. 3: alpha_128 of prev, sinusoidal, L0-fit"].reproduced  # 37/108 inside [0.335, 0.345]
    assert not f3["Prop. 3: alpha_60 of prev, sinusoidal, L0-fit"].reproduced  # 17/40 where 0.45 allows 18/40
    p2 = fig.check_prop2((30, 60), 20, 3000, 0, 5)
    f2 = {f.figure: f for f in p2.figures}
    want = {"conditional hit rate, winner a new key": 0.025, "chance 1/(k-1)": 0.026, "unconditional hit rate": 0.016,
            "winner among new keys": 0.65}
    for name, v in want.items():
        assert f2[f"Prop. 2 (L = 60): {name}"].paper == v
    assert f2["Prop. 2 (L = 30): winner among new keys"].rule == "ci"
    rescue = f2["Prop. 2: a rescuing W exists (Monte Carlo)"]
    assert rescue.paper == "roughly 20-35%" and not rescue.reproduced and rescue.rule == "not computed"


def test_prop4_claim_counts_8_of_11(capsys):
    rc, doc = _cli_json(capsys, "pr26:prop4")
    res = doc["results"][0]
    assert rc == 0 and res["verdict"] == "HOLDS"
    assert res["figures_reproduced"] == "8/11"
    assert all(f["rule"] in FIGURE_RULES for f in res["figures"])


# ------------------------------------------------------------------ pr26:prop2, the negative control 1/(k-2)


def test_prop2_negative_control_separates_at_the_default_trials():
    """At the sized default (24000 trials at L = 30) the competing rate 1/(k-2) is outside the interval: HOLDS;
    at 3000 trials the same check cannot separate them: INCONCLUSIVE, with the power statement."""
    ev = fig.check_prop2((30, 60), 20, 24000, 0, 5)
    c30, c60 = ev.numbers["negative_control"]
    assert (ev.status, ev.outcome) == ("consistent", "holds") and c30["rejected"] and c30["power_at_this_run"] >= 0.88
    assert not c60["rejected"] and c60["events_for_power"] > 50 * c60["events"]  # reported, not required
    small = fig.check_prop2((30, 60), 20, 3000, 0, 5)
    assert small.status == "inconclusive" and small.outcome is None
    assert "cannot separate 1/(k-1) from the negative control 1/(k-2)" in small.summary


def test_prop2_control_can_fail(monkeypatch):
    """Fault: an interval that admits everything (0, 1): the check can no longer reject 1/(k-2), so it must not HOLD."""
    from verify import stats

    monkeypatch.setattr(stats, "wilson_interval", lambda h, n, conf=0.95: (0.0, 1.0))
    ev = fig.check_prop2((30, 60), 20, 3000, 0, 5)
    assert ev.status == "inconclusive" and not ev.numbers["negative_control"][0]["rejected"]


def test_power_statement_against_the_exact_binomial():
    """events_for_power (normal approximation) lands within 0.02 of the exact power it is asked for; the exact power
    grows with the events; equal rates are refused."""
    from verify import stats

    n = stats.events_for_power(1 / 9, 1 / 8, 0.975, 0.9)
    assert n == 6599
    assert abs(stats.wilson_exclusion_power(n, 1 / 9, 1 / 8, 0.975) - 0.9) < 0.02
    assert stats.wilson_exclusion_power(n // 4, 1 / 9, 1 / 8, 0.975) < 0.5 < stats.wilson_exclusion_power(2 * n, 1 / 9,
                                                                                                          1 / 8, 0.975)
    with pytest.raises(ValueError):
        stats.events_for_power(0.1, 0.1, 0.975, 0.9)
