"""pr26 figures: Prop. 2 Monte Carlo, Prop. 3 interval proof and alpha at 17665, Prop. 4 table."""

from __future__ import annotations

import json

import pytest

from verify.constructions import pe
from verify.constructions.pe import get_family
from verify.evidence import Context
from verify.numeric import pr26_figures as fig
from verify.proofs import registry
from verify.proofs.cli import main
from verify.proofs.model import InputError, run_claim
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
    lo, hi = fig.wilson(50, 100)
    assert lo < 0.5 < hi and abs((lo + hi) / 2 - 0.5) < 1e-12
    assert fig.wilson(0, 0) == (0.0, 1.0)
    assert fig.wilson(0, 100)[0] == 0.0


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
    assert rc == 0
    res = doc["results"][0]
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
