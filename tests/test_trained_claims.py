"""Trained/constructed-model claims (ws24 theorem1-ape, falsifier, prop3; bietti23 probes): each
deciding check shown to change its status or outcome on an injected fault.  Small sizes only."""

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


def test_prop3_holds_and_small_tau1_breaks_invariance():
    ev = num.check_prop3(8, 24, 6, 30.0, 30.0, 5.0, 1.0, 0)
    assert ev.status == "consistent" and ev.outcome == "holds"
    bad = num.check_prop3(8, 24, 6, 1.0, 30.0, 5.0, 1.0, 0)
    assert bad.outcome == "fails" and bad.numbers["max_move_change"] > 1e-3


def test_prop3_formula_fault_detected(monkeypatch):
    """Dropping the z_1 = q term from the formula must be caught (half the prompts start with q)."""
    orig = num.formula_logits

    def no_first(z, pi, tau3, tau_g):
        return orig([(z[0] + 1) % pi.shape[0]] + list(z[1:]) if z[0] == z[-1] else z, pi, tau3, tau_g)

    monkeypatch.setattr(num, "formula_logits", no_first)
    assert num.check_prop3(8, 24, 6, 30.0, 30.0, 5.0, 1.0, 0).outcome == "fails"


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


def test_probes_detect_planted_memories():
    """Probes read planted associations: an identity-like output map recalls every token; a random one does not."""
    g = torch.Generator().manual_seed(0)
    p = {k: v[None].double() for k, v in tm.init_two_layer(64, 8, 16, "ape", g).items()}
    assert float(tm.wo1_recall(p)[0]) < 1.0
    p["W2V"] = torch.eye(64, dtype=torch.float64)[None]
    p["W2O"] = (p["U"][0].T @ p["E"][0].pinverse().T)[None] * 0 + (p["U"][0].T @ p["E"][0])[None]
    assert float(tm.wo1_recall(p)[0]) == 1.0
    # previous-token probe: W1K = sum_t p_{t+1} p_t^T recalls every position, causal or not
    P = p["POS"][0]
    p["W1K"] = (P[1:].T @ P[:-1])[None]
    assert float(tm.wk0_recall(p, causal=False)[0]) == 1.0
    p["W1K"] = (P[:-1].T @ P[1:])[None]  # the transposed association points forward: fails
    assert float(tm.wk0_recall(p, causal=True)[0]) < 0.5


def test_falsifier_gate_is_inconclusive_without_a_head(tmp_path):
    ev = num.check_falsifier(8, 8, 130, 2, 2, 2, 0.01, [0], 2, None)
    assert ev.status == "inconclusive" and "no previous-token head" in ev.summary
