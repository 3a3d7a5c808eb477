"""Issue 20 items 2 and 5: ws24:prop3 sees the coefficient it states; ws24:falsifier is a stated one-sided test
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
