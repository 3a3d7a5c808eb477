"""ws24:prop3 sees the coefficient it states; ws24:falsifier is a stated one-sided test
with its power reported; the read-score training half is an exact coefficient.  Each check is fed the fault it
exists for.  Small sizes only."""

from __future__ import annotations

import pytest

from verify.numeric import ws24_trained as num

# ------------------------------------------------------------------ ws24:prop3, the global coefficient


def test_prop3_reads_the_models_own_coefficient():
    """The model's coefficient of log pi_b(v|q) is read from its logits, so it follows the feed-forward weight."""
    ev = num.check_prop3(8, 24, 6, 30.0, 20.0, 5.0, 0)
    assert ev.numbers["stated_coefficient"] == 600.0
    assert ev.numbers["ff_weighted"]["model_coefficient"] == 600.0
    assert ev.numbers["ff_unit"]["model_coefficient"] == 1.0
    assert ev.numbers["ff_weighted"]["coefficient_same_on_every_prompt_to_1e-9"]
    assert ev.status == "inconclusive"  # the two readings disagree: the text that settles it is named
    assert "Definitions 2-3" in ev.summary


@pytest.mark.parametrize("wrong", [lambda t1, t2: t1, lambda t1, t2: t2, lambda t1, t2: t1 + t2,
                                   lambda t1, t2: 1.0])
def test_prop3_wrong_stated_coefficient_fails(monkeypatch, wrong):
    """Injected fault: the formula's coefficient tau1 (or tau2, tau1 + tau2, 1) instead of tau1 tau2 must FAIL."""
    monkeypatch.setattr(num, "stated_global_coefficient", wrong)
    ev = num.check_prop3(8, 24, 6, 30.0, 20.0, 5.0, 0)
    assert (ev.status, ev.outcome) == ("consistent", "fails"), ev.summary
    assert ev.witness["prompt_formula"] is not None


def test_prop3_wrong_model_coefficient_fails(monkeypatch):
    """Injected fault on the model side: the feed-forward memory weighted by tau1 alone must FAIL."""
    orig = num.ff_weight
    monkeypatch.setattr(num, "ff_weight", lambda r, t1, t2: t1 if r == "weighted" else orig(r, t1, t2))
    ev = num.check_prop3(8, 24, 6, 30.0, 20.0, 5.0, 0)
    assert ev.outcome == "fails" and ev.witness["model_coefficient"] == 30.0


def test_prop3_holds_once_the_reading_is_settled(monkeypatch):
    """The HOLDS branch: were the text to settle the feed-forward weight as tau1 tau2 (both readings then build the
    same model), the statement holds; at tau1 tau2 = 1 with a soft layer 2 (tau2 = 1/30) the readings agree on the
    coefficient but the in-context part misses, so it FAILS rather than HOLDS."""
    monkeypatch.setattr(num, "ff_weight", lambda r, t1, t2: t1 * t2)
    ev = num.check_prop3(8, 24, 6, 30.0, 20.0, 5.0, 0)
    assert (ev.status, ev.outcome) == ("consistent", "holds"), ev.summary
    monkeypatch.undo()
    soft = num.check_prop3(8, 24, 6, 30.0, 1 / 30.0, 5.0, 0)
    assert soft.numbers["ff_unit"]["model_coefficient"] == 1.0 == soft.numbers["ff_weighted"]["model_coefficient"]
    assert soft.outcome == "fails"


# ------------------------------------------------------------------ ws24:falsifier, the one-sided test


def test_t_distribution_values():
    """The falsifier's power and fewest seeds against textbook values (the power of a one-sided paired test with
    n = 10, sd = 0.05 against a drop of 0.05 is 0.8975); the fewest seeds is the exact minimum: at sd 0.2, 101 seeds
    reach power 0.8 and 100 do not (a doubling search above 64 seeds answered 128)."""
    assert num.drop_power(10, 0.05) == pytest.approx(0.897517, abs=1e-5)
    assert num.seeds_for_power(0.05) == 8 and num.seeds_for_power(0.03) == 4
    assert num.seeds_for_power(0.2) == 101
    assert num.drop_power(101, 0.2) >= 0.8 > num.drop_power(100, 0.2)


def _seeds(n, base, spread):
    return [base + spread * ((7 * i) % 5 - 2) / 2 for i in range(n)]


def test_drop_test_fires_on_a_synthetic_drop():
    """Late recall 0.06 below early on every seed (sd 0.02): the one-sided test rejects: FAILS."""
    early = _seeds(16, 0.71, 0.02)
    late = [e - 0.06 + x for e, x in zip(early, _seeds(16, 0.0, 0.02))]
    t = num.drop_test(early, late)
    assert t["rejected"] and t["outcome"] == "fails" and t["p_value"] < 1e-6


def test_drop_test_holds_only_with_power():
    """No drop: HOLDS when the test has power >= 0.8 against a drop of 0.05; with 3 noisy seeds it lacks that
    power, so the answer is None (INCONCLUSIVE) with the seeds that would give it."""
    early = _seeds(16, 0.71, 0.02)
    same = [e + x for e, x in zip(early, _seeds(16, 0.0, 0.02))]
    t = num.drop_test(early, same)
    assert t["outcome"] == "holds" and t["power"] >= 0.8
    few = num.drop_test([0.70, 0.75, 0.66], [0.62, 0.80, 0.66])
    assert few["outcome"] is None and few["power"] < 0.8 and few["seeds_needed"] > 3
    assert num.drop_power(few["seeds_needed"], few["sd_difference"]) >= 0.8


def _measured(early_assoc, late_assoc, early_recall=None, late_recall=None):
    n = len(early_assoc)
    return lambda p, cfg, seeds, n_eval, pe: {"gate": [0.7] * n, "early": early_recall or [0.7] * n,
                                               "late": late_recall or [0.7] * n, "assoc_early": early_assoc,
                                               "assoc_late": late_assoc}


def test_falsifier_reports_underpowered_and_synthetic_drop(monkeypatch):
    """The claim's check end to end with the measurements replaced: a drop of the association FAILS; noisy seeds
    without a detectable drop are INCONCLUSIVE and name the seeds and the command that give the power; a drop of
    recall alone (the association flat) is a diagnostic, not a failure.  Fault: the statistic read from recall
    (FAILS on the third)."""
    from verify.numeric import trained_models as tm

    class Fake:
        from_cache, train_seconds = True, 0.0
        losses = __import__("torch").zeros(1, 3)

        def float64(self):
            return {}

        def checkpoint(self):
            return {"file": "fake.pt", "digest": "0"}

    monkeypatch.setattr(tm, "train_two_layer", lambda cfg, seeds, cache, progress=None: Fake())
    monkeypatch.setattr(tm, "orientation_cosines", lambda p: {})
    monkeypatch.setattr(num, "_certified_gate", lambda p, cfg, seeds, n, pe: [[0.7, 0.7]] * 3)
    monkeypatch.setattr(num, "_recalls", _measured([2.0, 2.1, 1.9], [1.6, 1.7, 1.5]))
    ev = num.check_falsifier(8, 8, 130, 2, 2, 1, 0.01, [0, 1, 2], 2, None)
    assert (ev.status, ev.outcome) == ("consistent", "fails") and "the association falls late" in ev.summary
    monkeypatch.setattr(num, "_recalls", _measured([2.0, 2.0, 2.0], [2.0, 2.4, 1.8]))
    ev = num.check_falsifier(8, 8, 130, 2, 2, 1, 0.01, [0, 1, 2], 2, None, command="verify ws24:falsifier")
    assert ev.status == "inconclusive" and "verify ws24:falsifier --seeds 6" in ev.summary
    monkeypatch.setattr(num, "_recalls", _measured([2.0, 2.0, 2.0], [2.0, 2.001, 1.999], [0.9, 0.92, 0.91],
                                                   [0.6, 0.62, 0.61]))
    ev = num.check_falsifier(8, 8, 130, 2, 2, 1, 0.01, [0, 1, 2], 2, None)
    assert (ev.status, ev.outcome) == ("consistent", "holds")
    assert ev.numbers["recall_test_diagnostic"]["p_value"] < 0.05          # recall fell: reported, not judged


def test_the_margin_separates_a_drop_that_matters_from_one_that_does_not():
    """ws24:falsifier v2: a systematic 0.7% drop (a planted RPE head's) is within the 5% margin and HOLDS; a 10% drop
    FAILS; v1's test against 0 would have failed the first (fault: margin 0).  The p-values are scipy's
    ttest_1samp against -margin."""
    from scipy.stats import ttest_1samp

    small = [-0.007, -0.011, -0.003, -0.006, -0.009]
    t = num.association_test(small)
    assert t["outcome"] == "holds" and t["p_within"] == pytest.approx(ttest_1samp(small, -0.05, alternative="greater").pvalue)
    assert num.association_test(small, margin=0.0)["outcome"] == "fails"
    big = [-0.10, -0.12, -0.09, -0.11, -0.1]
    assert num.association_test(big)["outcome"] == "fails"
    assert num.association_test([-0.05, 0.2, -0.3])["outcome"] is None


# ------------------------------------------------------------------ ws24 read-score, the training half


def _support_matches_sampler(tokens, V, T, n=400, seed=3):
    from verify.numeric.bietti_model import sample_sequences

    enum = {tuple(z) for z in tokens.tolist()}
    sampled, _, _ = sample_sequences(V, T, n, seed)
    return len(enum) == tokens.shape[0] == V * (T - 2) * (V - 1) ** (T - 2) and all(
        tuple(z) in enum for z in sampled.tolist())


def test_enumeration_is_the_sampled_distribution():
    """The enumeration is the sampler's support, each sequence once (so its mean is the population mean).
    Fault: an enumeration that drops the last first-occurrence position s0 = T - 3 is caught."""
    from verify.numeric import ws24 as w

    tok, y = w.appendix_c2_sequences(3, 5)
    assert _support_matches_sampler(tok, 3, 5)
    assert all(int(z[z.tolist().index(int(z[-1])) + 1]) == int(t) for z, t in zip(tok, y))  # target follows first q
    first = [z.tolist().index(int(z[-1])) for z in tok]
    keep = [i for i, s0 in enumerate(first) if s0 != 5 - 3]
    assert not _support_matches_sampler(tok[keep], 3, 5)


def test_exact_one_step_coefficient():
    """The population one-step coefficient of w_E(k) r_{-1}^T (orthonormal idealization, lr = 1), exact up to
    float64 rounding: positive and the same for every k at V = 3, T = 4 (5.306154e-05), with a negative r_{-2}
    coefficient; the Monte-Carlo estimator of the default run agrees with it at that size."""
    from verify.numeric import ws24 as w

    x = w.population_coefficients_exact(3, 4)
    assert x["chi"] == pytest.approx(5.306154e-05, rel=1e-6) and x["sign"] == 1 and x["chi_equal_for_every_k"]
    assert x["r_minus2"] == pytest.approx(-9.116203e-05, rel=1e-6)
    L = w.learning_coefficients(3, 4, 2048, 12, 0)
    lo, hi = L["chi_hat_interval"]
    assert lo <= x["chi"] <= hi, (lo, x["chi"], hi)
    assert all(w.population_coefficients_exact(v, t)["sign"] == 1 for v, t in w.EXACT_SIZES)


def test_falsifier_gate_is_per_seed(monkeypatch):
    """Seeds whose model formed no head (gate recall < 0.5 on their own gate sequences) are left out of the test;
    fewer than 2 with a head: INCONCLUSIVE.  Fault it guards against: unformed heads (recall near chance, which is
    higher early: 1/t) would drag late - early down and fail the statement for want of a head."""
    from verify.numeric import trained_models as tm

    class Fake:
        from_cache, train_seconds = True, 0.0
        losses = __import__("torch").zeros(1, 4)

        def float64(self):
            return {}

        def checkpoint(self):
            return {"file": "fake.pt", "digest": "0"}

    monkeypatch.setattr(tm, "train_two_layer", lambda cfg, seeds, cache, progress=None: Fake())
    monkeypatch.setattr(tm, "orientation_cosines", lambda p: {})
    early = [0.70, 0.72, 0.25, 0.71, 0.30, 0.69, 0.73, 0.22]
    a_early = [2.0, 2.1, 0.5, 1.9, 0.6, 2.0, 2.05, 0.4]
    a_late = [2.0, 2.101, 0.1, 1.9, 0.1, 2.001, 2.05, 0.05]
    monkeypatch.setattr(num, "_recalls", _measured(a_early, a_late))
    monkeypatch.setattr(num, "_certified_gate", lambda p, cfg, seeds, n, pe: [[g, g] for g in early])
    ev = num.check_falsifier(8, 8, 130, 2, 2, 1, 0.01, list(range(8)), 2, None)
    assert ev.numbers["rpe_formed_seeds"] == [0, 1, 3, 5, 6]
    assert ev.outcome == "holds", ev.summary          # no drop among the seeds with a head
    every = num.drop_test([1.0] * 8, [b / a for a, b in zip(a_early, a_late)])
    assert every["outcome"] == "fails"                 # the unformed seeds alone would have failed it
    monkeypatch.setattr(num, "_certified_gate", lambda p, cfg, seeds, n, pe: [[0.1, 0.1]] * 7 + [[0.7, 0.7]])
    ev = num.check_falsifier(8, 8, 130, 2, 2, 1, 0.01, list(range(8)), 2, None)
    assert ev.status == "inconclusive" and "no previous-token head formed in enough seeds" in ev.summary
    # the gate reads the certified lower end: a float recall of 0.7 whose enclosure starts at 0.3 does not count
    monkeypatch.setattr(num, "_certified_gate", lambda p, cfg, seeds, n, pe: [[0.3, g] for g in early])
    ev = num.check_falsifier(8, 8, 130, 2, 2, 1, 0.01, list(range(8)), 2, None)
    assert ev.numbers["rpe_formed_seeds"] == [] and ev.status == "inconclusive"


# ------------------------------------------------------------------ ws24:prop3, negative controls in the same run


def test_prop3_negative_controls_at_the_defaults():
    """A wrong global coefficient (tau1 + tau2) gets the same answer as the stated one: the check cannot separate
    them, and says so; 2 tau3 in the formula is rejected: the in-context term is seen."""
    ev = num.check_prop3(16, 64, 40, 30.0, 30.0, 5.0, 0)
    c = ev.numbers["negative_controls"]
    assert c["global"]["coefficient"] == 60.0 and not c["global"]["separated"]
    assert c["global"]["outcome"] == c["global"]["stated_outcome"] == "inconclusive"
    assert c["in_context"]["rejected"] and c["in_context"]["max_formula_error"] > ev.numbers["tolerance"]
    assert ev.status == "inconclusive" and "the same answer as the stated one's" in ev.summary


def test_prop3_in_context_control_can_fail(monkeypatch):
    """Fault: a formula that ignores its tau3 (the in-context coefficient fixed at 5): the 2 tau3 control is no longer
    rejected, so the check cannot see the in-context term and must not HOLD or FAIL on it."""
    orig = num.formula_logits
    monkeypatch.setattr(num, "formula_logits", lambda z, pi, t1, t2, t3, coefficient=None: orig(z, pi, t1, t2, 5.0,
                                                                                                coefficient))
    monkeypatch.setattr(num, "ff_weight", lambda r, t1, t2: t1 * t2)  # the branch that would otherwise HOLD
    ev = num.check_prop3(8, 24, 6, 30.0, 20.0, 5.0, 0)
    assert not ev.numbers["negative_controls"]["in_context"]["rejected"]
    assert ev.status == "inconclusive" and "cannot see the in-context term" in ev.summary


def test_prop3_wrong_coefficient_is_separated_where_the_readings_agree(monkeypatch):
    """Where both readings build the same model (the text settled), the wrong coefficient gets another answer:
    the control is separated and the stated coefficient HOLDS."""
    monkeypatch.setattr(num, "ff_weight", lambda r, t1, t2: t1 * t2)
    ev = num.check_prop3(8, 24, 6, 30.0, 20.0, 5.0, 0)
    g = ev.numbers["negative_controls"]["global"]
    assert g["separated"] and g["outcome"] != g["stated_outcome"] == "holds" and ev.outcome == "holds"
