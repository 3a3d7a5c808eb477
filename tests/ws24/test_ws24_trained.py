"""ws24's trained and constructed-model claims (theorem1-ape, falsifier, prop3): each deciding check shown to
change its status or outcome on an injected fault.  Small sizes only."""

from __future__ import annotations

import sympy as sp
import torch

from verify.numeric import trained_models as tm
from verify.numeric import ws24_trained as num
from verify.symbolic import ws24_trained as sym


def test_theorem1_symbolic_proved_and_fault_refuted():
    assert sym.check_theorem1_ape().status == "proved"
    t, g = sp.symbols("t g", positive=True)
    ev = sym.check_theorem1_ape(g / sp.sqrt(t))  # a 1/sqrt(t) law must be refuted
    assert ev.status == "refuted"


def test_prop3_inconclusive_on_the_coefficient_and_small_tau1_breaks_invariance():
    ev = num.check_prop3(8, 24, 6, 30.0, 30.0, 5.0, 0)
    assert ev.status == "inconclusive" and "Definitions 2-3" in ev.summary
    assert ev.numbers["ff_weighted"]["model_coefficient"] == 900.0 and ev.numbers["ff_unit"]["model_coefficient"] == 1.0
    bad = num.check_prop3(8, 24, 6, 1.0, 30.0, 5.0, 0)
    assert bad.outcome == "fails" and bad.numbers["max_move_change"] > 1e-3


def test_prop3_formula_fault_detected(monkeypatch):
    """Dropping the z_1 = q term from the formula must be caught (half the prompts start with q)."""
    orig = num.formula_logits

    def no_first(z, pi, tau1, tau2, tau3, coefficient=None):
        return orig([(z[0] + 1) % pi.shape[0]] + list(z[1:]) if z[0] == z[-1] else z, pi, tau1, tau2, tau3,
                    coefficient)

    monkeypatch.setattr(num, "formula_logits", no_first)
    assert num.check_prop3(8, 24, 6, 30.0, 30.0, 5.0, 0).outcome == "fails"


def test_slope_interval_band_rule():
    ts = list(range(8, 40))
    decay = [[1.0 / t * (1 + 0.01 * r) for t in ts] for r in range(4)]
    flat = [[1.0 * (1 + 0.01 * r) for t in ts] for r in range(4)]
    assert abs(num.slope_interval(decay, ts, 0)["slope"] + 1) < 1e-9
    assert abs(num.slope_interval(flat, ts, 0)["slope"]) < 1e-9
    noisy = [[(-1) ** (t + r) for t in ts] for r in range(4)]
    assert num.slope_interval(noisy, ts, 0)["slope"] is None


def test_theorem1_numeric_fault_flat_ape(monkeypatch):
    """If the APE gradient lost its per-position 1/t weighting (attention fixed on every key with weight 1),
    the APE slope moves away from -1 and the check must fail; unfaulted it holds."""
    ev = num.check_theorem1_ape(8, 32, 128, 3, 0)
    assert ev.outcome == "holds", ev.summary
    orig = num.prev_profile

    def flat_ape(fr, W, pe):
        prof = orig(fr, W, pe)
        return [v * (i + 3) for i, v in enumerate(prof)] if pe == "ape" else prof

    monkeypatch.setattr(num, "prev_profile", flat_ape)
    assert num.check_theorem1_ape(8, 32, 128, 3, 0).outcome == "fails"


def test_falsifier_gate_is_inconclusive_without_a_head(tmp_path):
    ev = num.check_falsifier(8, 8, 130, 2, 2, 2, 0.01, [0], 2, None)
    assert ev.status == "inconclusive" and "no previous-token head" in ev.summary


def test_optimizer_choices_shared_with_the_recipe():
    from verify.proofs import bietti23
    from verify.proofs.ws24 import trained as ws24_trained

    assert ws24_trained.OPTIMIZERS == bietti23.OPTIMIZERS == tm.OPTIMIZERS
    cfg = num.falsifier_config("rpe", 8, 8, 130, 2, 2, 2, 0.01, 1, optimizer="adam")
    assert tm.recipe(cfg).optim.kind == "adam"
    import pytest

    with pytest.raises(ValueError):
        tm.recipe(num.falsifier_config("rpe", 8, 8, 130, 2, 2, 2, 0.01, 1, optimizer="rmsprop"))


def _planted_rpe(d: int, T: int, V: int, S: int = 1):
    """A two-layer RPE model whose layer-1 key matrix is Eq. 13's form c u r_{-1}^T with w_E(k)^T u = 1 for every k:
    the previous-token association is the same at every position (what RPE allows); ``S`` identical seeds."""
    from verify.numeric import lab

    g = torch.Generator().manual_seed(0)
    p = tm.init_two_layer(d, V, T, "rpe", g)
    E, r1 = p["E"].double(), p["POS"][1].double()
    u = E.T @ torch.linalg.solve(E @ E.T, torch.ones(V, dtype=torch.float64))
    p["W1K"] = (40.0 * u[:, None] * r1[None, :] / r1.norm() ** 2 * d ** 0.5).float()
    params = {k: v[None].expand(S, *v.shape).clone() for k, v in p.items()}
    return lab.Trained(params, tuple(range(S)), "planted", True, torch.zeros(1, S))


def test_falsifier_rule_on_planted_rpe_and_absolute_leak_fault(monkeypatch):
    """A planted RPE head recalls t - 1 early and late alike: HOLDS (no drop, the test has power).  Fault: a
    layer-1 score that leaks absolute position (the t - 1 entry penalised for t > 128) must turn the verdict to
    FAILS (late below early); with one seed there is no paired test (INCONCLUSIVE)."""
    planted = _planted_rpe(128, 136, 16, S=3)
    monkeypatch.setattr(tm, "train_two_layer", lambda cfg, seeds, cache, progress=None: planted)
    ev = num.check_falsifier(128, 16, 136, 2, 2, 1, 0.01, [0, 1, 2], 4, None)
    r = ev.numbers["rpe"]
    assert min(r["early_recall"]) > 0.9 and min(r["late_recall"]) > 0.9
    assert ev.outcome == "holds", ev.summary
    orig = tm.layer1_scores

    def leaky(p, tok, pe):
        sc = orig(p, tok, pe).clone()
        T = tok.shape[-1]
        idx = torch.arange(128, T)
        sc[..., idx, idx - 1] -= 1e6
        return sc

    monkeypatch.setattr(tm, "layer1_scores", leaky)
    bad = num.check_falsifier(128, 16, 136, 2, 2, 1, 0.01, [0, 1, 2], 4, None)
    assert bad.outcome == "fails" and max(bad.numbers["rpe"]["late_recall"]) < 0.1
    one = _planted_rpe(128, 136, 16, S=1)
    monkeypatch.setattr(tm, "train_two_layer", lambda cfg, seeds, cache, progress=None: one)
    assert num.check_falsifier(128, 16, 136, 2, 2, 1, 0.01, [0], 4, None).status == "inconclusive"
