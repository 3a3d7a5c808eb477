"""fp26: the exact algebra (symmetric M: directional under RoPE, never under absolute positions), D_head and its
null, the toy's penalties and verdict rule, each with an injected fault that changes the answer."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from verify.numeric import fingerprint as fp
from verify.symbolic import fp26 as sym

# ----------------------------------------------------------------------------- the exact algebra


def test_identities_hold_exactly():
    assert sym.check_identities(3, 4) == {"static_is_sum_re": True, "rope_relative": True, "phase_identity": True,
                                          "absolute_pair_symmetric": True, "absolute_asymmetry_is_MA": True}


def test_identities_see_a_wrong_complex_operator(monkeypatch):
    """Fault: w_k not conjugated in M_t = w_q conj(w_k)^T: the static M is no longer sum_t Re(M_t) and the phase
    identity breaks."""
    def unconjugated(WQ, WK):
        return [(WQ.row(2 * t) + sp.I * WQ.row(2 * t + 1)).T * (WK.row(2 * t) + sp.I * WK.row(2 * t + 1))
                for t in range(WQ.rows // 2)]

    monkeypatch.setattr(sym, "complex_operators", unconjugated)
    out = sym.check_identities(2, 2)
    assert not out["static_is_sum_re"] and not out["phase_identity"]


def test_symmetric_m_is_directional_under_rope_only():
    """The witness W_q = I, W_k = diag(1, 2): static M symmetric, Im(M_1) = [[0, -2], [1, 0]], RoPE pair asymmetry
    score(i, i-1) - score(i-1, i) = 2 sin(theta) exactly, absolute-position asymmetry 0."""
    w = sym.symmetric_m_witness()
    th = sp.Symbol("theta", positive=True)
    assert w["M"] == [[1, 0], [0, 2]] and w["M_symmetric"]
    assert w["Im_M_t"] == [[[0, -2], [1, 0]]]
    assert sp.simplify(w["rope_pair_asymmetry"] - 2 * sp.sin(th)) == 0
    assert w["rope_asymmetry_coefficient"] == 2 and w["rope_directional_all_theta"]
    assert w["absolute_pair_asymmetry"] == 0 and not w["absolute_directional"]


def test_phase_dropped_removes_the_direction():
    """Fault: the RoPE phase dropped (every rotation the identity): the same symmetric head scores both directions
    alike."""
    w = sym.symmetric_m_witness(phase=False)
    assert w["rope_pair_asymmetry"] == 0 and not w["rope_directional_all_theta"]


def test_absolute_check_can_see_an_asymmetric_m():
    """Fault: a non-symmetric static M (W_k = [[1, 1], [0, 2]]) is directional under absolute positions, so the
    absolute-position check is not vacuous."""
    w = sym.symmetric_m_witness(WK=((1, 1), (0, 2)))
    assert not w["M_symmetric"] and w["absolute_directional"]


def test_permutation_p_and_rounding_rule():
    assert sym.permutation_p(7, 3) == Fraction(1, 35)
    assert sym.in_rounding_interval(Fraction(1, 35), "0.029")
    assert not sym.in_rounding_interval(sym.permutation_p(7, 2), "0.029")  # fault: 3 of 7 read as 2 of 7 (1/21)
    assert not sym.in_rounding_interval(Fraction(295, 10000) + Fraction(1, 10 ** 9), "0.029")


# ----------------------------------------------------------------------------- D_head and the null


def test_d_head_rotation_and_symmetric():
    th = 0.3
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    assert abs(fp.d_head(R) - abs(np.sin(th))) < 1e-12
    S = np.array([[2.0, 1.0], [1.0, 3.0]])
    assert fp.d_head(S) == 0.0
    assert fp.d_head(np.zeros((3, 3))) == 0.0


def test_null_is_between_and_fault_changes_it(monkeypatch):
    M = np.diag(np.linspace(1, 2, 16))
    n = fp.null_d_head(M, 60, 0)
    assert 0.3 < n["mean"] < 0.8 and n["lo"] <= n["mean"] <= n["hi"]
    # fault: the 'random' rotation replaced by the identity gives a symmetric M: D_head 0
    monkeypatch.setattr(fp, "haar", lambda k, rng: np.eye(k))
    assert fp.null_d_head(M, 10, 0)["mean"] == 0.0


def test_core_null_matches_the_full_null():
    """The rank-k core sampler has the law of the full Haar construction (same singular values): means agree
    within Monte-Carlo error; a core without the sign fix (fault) is biased."""
    rng = np.random.default_rng(3)
    s = np.linalg.svd(rng.standard_normal((8, 8)), compute_uv=False)
    full = fp.null_d_head(np.diag(np.concatenate([s, np.zeros(24)])), 400, 1)["mean"]
    core = fp.core_null(s, 32, 400, 2)["mean"]
    assert abs(full - core) < 0.03


# ----------------------------------------------------------------------------- the toy


def test_rope_half_relative_and_phase_fault():
    import torch

    x = torch.randn(4, dtype=torch.float64).expand(6, 4).clone()
    r = fp.rope_half(x)
    assert torch.allclose((r[1] * r[0]).sum(), (r[4] * r[3]).sum())
    assert not torch.allclose((r[1] * r[0]).sum(), (r[2] * r[0]).sum())
    assert torch.equal(fp.rope_half(x, phase=False), x)


def test_penalties_zero_exactly_where_the_ban_is_met():
    """sym: W_q = W_k gives M = W W^T symmetric, penalty 0, a random pair does not; imag: the closed form equals
    sum_t ||Im M_t||^2 computed from complex numbers."""
    import torch

    g = torch.Generator().manual_seed(0)
    W = torch.randn(1, 2, 8, 4, generator=g, dtype=torch.float64)
    p = {"Q1": W, "K1": W, "Q2": W, "K2": W}
    assert float(fp.penalty_sym(p)[0]) < 1e-12
    W2 = torch.randn(1, 2, 8, 4, generator=g, dtype=torch.float64)
    assert float(fp.penalty_sym({"Q1": W, "K1": W2, "Q2": W, "K2": W2})[0]) > 0.1
    im, re_ = fp.imag_parts(W[0, 0], W2[0, 0])
    h = 2
    wq = W[0, 0][:, :h] + 1j * W[0, 0][:, h:]
    wk = W2[0, 0][:, :h] + 1j * W2[0, 0][:, h:]
    Mt = [np.outer(wq[:, t].numpy(), np.conj(wk[:, t].numpy())) for t in range(h)]
    assert abs(float(im) - sum(np.linalg.norm(m.imag) ** 2 for m in Mt)) < 1e-9
    assert abs(float(re_) - sum(np.linalg.norm(m.real) ** 2 for m in Mt)) < 1e-9


def _head(w=0.9, dfrac=0.01, im=0.5, asym=0.1):
    return {"prev_weight": w, "dir_frac": dfrac, "rope_imag_share": im, "pair_asymmetry": asym}


def test_toy_rule_and_faults():
    """The protocol's rule at a fixed horizon (5 seeds per arm, as the protocol declares): each part can fail it."""
    arms = {"absolute/free": {"formation": [550, 575, 600, 525, 500], "heads": [_head(dfrac=0.7, im=None)] * 5},
            "absolute/sym": {"formation": [1500, 1700, 1800, 1400, 1650], "heads": [_head(im=None)] * 5},
            "rope/sym": {"formation": [1400, 1600, 1500, 1450, 1550], "heads": [_head()] * 5}}
    assert fp.toy_verdict(arms, 6000)[0] == "holds"
    t = fp.slows_test(arms["absolute/free"]["formation"], arms["absolute/sym"]["formation"], 6000, 25)
    assert t["U"] == 25.0 and abs(t["p_value"] - 1 / 252) < 1e-12          # the exact one-sided p of 5 against 5
    slow_free = {**arms, "absolute/free": {**arms["absolute/free"], "formation": [1800, 1900, 1300, 1350, 1720]}}
    assert fp.toy_verdict(slow_free, 6000)[0] == "fails"                    # symmetry did not slow the model
    no_phase = {**arms, "rope/sym": {**arms["rope/sym"], "heads": [_head(im=0.0, asym=0.0)] * 5}}
    assert fp.toy_verdict(no_phase, 6000)[0] == "fails"                     # fault: RoPE phase dropped
    leaky = {**arms, "absolute/sym": {**arms["absolute/sym"], "heads": [_head(dfrac=0.3, im=None)] * 5}}
    assert fp.toy_verdict(leaky, 6000)[0] == "fails"                        # the ban did not enforce
    # a seed that has not formed by the fixed horizon fails capability (no extension: the horizon is frozen)
    unformed = {**arms, "rope/sym": {**arms["rope/sym"], "formation": [None, 1600, 1500, 1450, 1550]}}
    verdict, why = fp.toy_verdict(unformed, 6000)
    assert verdict == "fails" and "did not form within the 6000-step horizon" in why[0]
    # unformed sym seeds count as the slowest: symmetry slows
    censored = {**arms, "absolute/sym": {**arms["absolute/sym"], "formation": [None, None, 1800, 1400, 1650]}}
    assert fp.slows_test(censored["absolute/free"]["formation"], censored["absolute/sym"]["formation"], 6000,
                         25)["sym"][:2] == [6025, 6025]
    # the rule reads the certified lower end of the head's attention on t - 1 when it is measured
    uncertain = {**arms, "rope/sym": {**arms["rope/sym"],
                                      "heads": [{**_head(), "prev_weight_certified": ["0.45", "0.9"]}] * 5}}
    assert fp.toy_verdict(uncertain, 6000)[0] == "fails"
    # a head at 0.45 sits inside the declared range 0.4..0.6 of the head threshold: the verdict flips, INCONCLUSIVE
    outcome, _, lines = fp.toy_decision(uncertain, 6000, 25)
    assert outcome is None and any(line.startswith("prev_head: holds at 0.4") for line in lines)
    assert fp.toy_decision(arms, 6000, 25)[0] == "holds"


@pytest.mark.parametrize("pe", ["rope", "absolute"])
def test_head_report_certifies_the_previous_token_weight(pe):
    """The chosen head's mean attention on t - 1, enclosed in arb balls (verify head's bounds on fp26_program), contains
    the float64 measurement; fault: the program without RoPE (under rope) no longer encloses it."""
    pytest.importorskip("torch")
    from verify.numeric import heads, lab

    tr = lab.train(fp.toy_recipe(pe, "free", 32, 2, 16, 32, 4, 5, 1e-2, 5), [0], cache=None)
    p = tr.float64()
    rep = fp.head_report(p, pe, 16, 32, 7)[0]
    lo, hi = (float(v) for v in rep["prev_weight_certified"])
    assert lo <= rep["prev_weight"] + 5e-5 and rep["prev_weight"] - 5e-5 <= hi and hi - lo < 1e-5
    if pe == "rope":
        prog = heads.fp26_program(p, 0, rep["layer"], rep["head"], pe)
        prog.rope_inv_freq = None
        x, _ = fp.map_batch(16, 32, 16, lab.generator("fp26-toy", 7, "eval"))
        streams: list = []
        fp.toy_forward(p, x.expand(1, *x.shape), pe, streams=streams)
        bad = heads.certified_mean_prev(prog, x.tolist(), [streams[0][0, b] for b in range(16)], 8)
        assert not (float(bad[0]) <= rep["prev_weight"] + 5e-5 and rep["prev_weight"] - 5e-5 <= float(bad[1]))


def test_head_report_sees_the_phase_of_a_symmetric_rope_head(monkeypatch):
    """A planted RoPE head with a symmetric static M (W_k = W_q S, S symmetric and not commuting with the
    rotation) has a nonzero pair asymmetry; with the phase dropped (fault) it is 0."""
    import torch

    d, H, V, T = 8, 1, 6, 8
    g = torch.Generator().manual_seed(1)
    p = {k: v[None].double() for k, v in fp.toy_recipe("rope", "free", d, H, V, T, 2, 1, 1e-3, 1).init(g).items()}
    WQ = torch.eye(d, dtype=torch.float64)[:, :d]
    S = torch.diag(torch.arange(1.0, d + 1, dtype=torch.float64))
    for layer in (1, 2):
        p[f"Q{layer}"] = WQ[None, None].clone()
        p[f"K{layer}"] = (S @ WQ)[None, None].clone()
    rep = fp.head_report(p, "rope", V, T, 0)[0]
    assert rep["dir_frac"] < 1e-12 and abs(rep["pair_asymmetry"]) > 1e-3
    monkeypatch.setattr(fp, "rope_half", lambda x, phase=True: x)
    assert abs(fp.head_report(p, "rope", V, T, 0)[0]["pair_asymmetry"]) < 1e-12


def test_map_batch_follows_the_map():
    import torch

    x, mp = fp.map_batch(16, 40, 8, torch.Generator().manual_seed(0))
    for b in range(8):
        succ: dict[int, int] = {}
        for t in range(39):
            if mp[b, t]:
                assert succ.setdefault(int(x[b, t]), int(x[b, t + 1])) == int(x[b, t + 1])
    assert 0.8 < float(mp.double().mean()) < 0.97


@pytest.mark.parametrize("arms", ["absolute/free,rope/imag", "rope/sym"])
def test_claim_arms_parse(arms):
    from verify.proofs import fp26 as claim

    assert all(f"{pe}/{c}" in fp.ARMS_NAMES for pe, c in claim._arms(arms))
    assert set(claim.ARMS) == set(fp.ARMS_NAMES)


def test_static_rule_and_faults():
    """Each model on its scheme's side and perfect separation: exact p = 1/C(n, n_RoPE); a RoPE model whose top
    previous-token heads are content-like (fault) breaks both."""
    prof = [{"scheme": "rope", "median_percentile": 0.85}, {"scheme": "rope", "median_percentile": 0.8},
            {"scheme": "rope", "median_percentile": 0.9}, {"scheme": "absolute", "median_percentile": 0.2},
            {"scheme": "absolute", "median_percentile": 0.22}, {"scheme": "absolute", "median_percentile": 0.14},
            {"scheme": "alibi", "median_percentile": 0.26}]
    v = fp.static_verdict(prof)
    assert v["each_on_its_side"] and v["perfect_separation"] and v["permutation_p"] == "1/35"
    bad = fp.static_verdict([{**prof[0], "median_percentile": 0.1}] + prof[1:])
    assert not bad["each_on_its_side"] and not bad["perfect_separation"] and bad["permutation_p"] is None
    assert fp.static_verdict(prof[:1]) == {"models": 1, "each_on_its_side": True, "on_side": [True]}


def test_claim_refuses_a_missing_checkpoint(tmp_path):
    from verify.core.model import InputError
    from verify.proofs import fp26 as claim

    p = dict(claim.FingerprintParams())
    with pytest.raises(InputError, match="not a local checkpoint"):
        claim._validate({**p, "checkpoint": str(tmp_path)})
    (tmp_path / "config.json").write_text("{}")
    claim._validate({**p, "checkpoint": str(tmp_path)})


def test_claim_symbolic_layer_and_phase_fault(monkeypatch):
    """The claim's symbolic layer proves the algebra and reproduces p = 0.029 as 1/35; with the RoPE phase dropped
    everywhere (fault) it refutes the statement."""
    from verify.evidence import Context
    from verify.proofs import fp26 as claim

    ev = claim._symbolic(claim.FingerprintParams(), Context())
    assert (ev.status, ev.outcome) == ("proved", "holds") and ev.figures[0].reproduced and ev.figures[0].ours == "1/35"
    orig = sym.rope_block
    monkeypatch.setattr(sym, "rope_block", lambda pos, thetas, phase=True: orig(pos, thetas, phase=False))
    bad = claim._symbolic(claim.FingerprintParams(), Context())
    assert (bad.status, bad.outcome) == ("refuted", "fails")


def test_formation_is_the_start_of_the_final_stretch_below_the_threshold():
    """A model forms where its loss goes below the threshold and stays there: the 7200-step rope/sym seed whose loss
    dipped once (3225) and ended at 2.66 against 2.42 had not formed, and in the 21600-step run the same seed formed
    only about step 14000, not at that dip.  Faults: the first dip read as formation (a run ending above the
    threshold, or one that dips early and forms late)."""
    from verify.numeric.fingerprint import formation_step

    assert formation_step([3.4, 2.5, 2.3, 2.2, 2.1], 25, 101, 2.42) == 50
    assert formation_step([3.4, 2.5, 2.3, 2.6, 2.66], 25, 101, 2.42) is None
    assert formation_step([3.4, 2.3, 2.6, 2.6, 2.1, 1.9], 25, 126, 2.42) == 100   # dipped at 25, formed at 100
    assert formation_step([2.0, 1.9], 25, 26, 2.42) == 0
    assert formation_step([3.4, 2.5], 25, 26, 2.42) is None and formation_step([], 25, 1, 2.42) is None


def test_a_run_longer_than_the_protocols_horizon_is_exploratory_and_never_decides(monkeypatch, tmp_path):
    """The development runs extended the horizon five times until every seed formed (optional stopping).  Under the
    frozen protocol an extended horizon is a departure: the run is EXPLORATORY and its evidence inconclusive, however
    the toy turned out.  Faults: the protocol's horizon taken from the run (any --steps confirmatory), or an
    exploratory run's outcome kept."""
    from verify.core.model import run_claim
    from verify.evidence import Context
    from verify.proofs import fp26 as claim

    arms = {"absolute/free": {"formation": [550, 575, 600, 525, 500], "heads": [_head(dfrac=0.7, im=None)] * 5},
            "absolute/sym": {"formation": [1500, 1700, 1800, 1400, 1650], "heads": [_head(im=None)] * 5},
            "rope/sym": {"formation": [1400, 1600, 1500, 1450, 1550], "heads": [_head()] * 5}}
    outcome, reasons, lines = fp.toy_decision(arms, 6000, 25)
    toy = {"arms": arms, "verdict": outcome, "reasons": reasons, "sensitivity": lines, "formation_threshold": 2.42,
           "loss_floor": 1.0}
    seen: list = []
    monkeypatch.setattr(fp, "check_toy", lambda *a, **k: seen.append(a) or toy)
    monkeypatch.setattr(fp, "gpt2_null", lambda *a, **k: {"mean": 0.608, "lo": 0.6, "hi": 0.62})
    ctx = Context(profile="full", cache_dir=str(tmp_path))
    c = claim.FINGERPRINT
    full = run_claim(c, c.parse_params({}), ctx, layers=("numeric",))
    assert full.layer("numeric").numbers["protocol"]["run"] == "confirmatory" and full.verdict == "HOLDS"
    assert seen[-1][7] == list(range(1000, 1005)) and seen[-1][5] == 6000      # the protocol's seeds and horizon
    assert full.expected == c.expected_verdict("") is not None
    # an option the protocol does not fix (where the arms train) keeps the run confirmatory, and its expectation
    local = run_claim(c, c.parse_params({"scheduler": "local"}), ctx, layers=("numeric",))
    assert local.layer("numeric").numbers["protocol"]["run"] == "confirmatory"
    assert local.expected == c.expected_verdict("") is not None
    given = {"steps": "7000", "seeds": "5", "arms": ",".join(claim.ARMS)}  # the protocol's run, but 1000 steps longer
    longer = run_claim(c, c.parse_params(given), ctx.replace(profile="quick"), layers=("numeric",))
    ev = longer.layer("numeric")
    assert ev.status == "inconclusive" and ev.summary.startswith("EXPLORATORY (--steps 7000 (the protocol: 6000)")
    assert longer.verdict == "INCONCLUSIVE" and longer.reason.startswith("EXPLORATORY run")
    assert seen[-1][7] == [0, 1, 2, 3, 4]                                         # exploring: development seeds


def test_the_printed_decimal_interval_is_the_shared_one():
    """"1.78e-4" stands for [1.775e-4, 1.785e-4] (the old copy here took it as +- 0.005) and "30%" for
    [0.295, 0.305] (the old copy raised)."""
    assert sym.in_rounding_interval(Fraction(1779, 10 ** 7), "1.78e-4")
    assert not sym.in_rounding_interval(Fraction(179, 10 ** 6), "1.78e-4")
    assert sym.in_rounding_interval(Fraction(3, 10), "30%") and not sym.in_rounding_interval(Fraction(31, 100), "30%")
