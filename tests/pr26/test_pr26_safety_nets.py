"""pr26's safety nets fed the case they exist for: an AUC label at the threshold, and Prop. 1's affinity
identity differentiated in the key."""

from __future__ import annotations

import sympy as sp


def test_auc_label_at_threshold_generalizes(monkeypatch):
    """pr26:auc labels a measurement generalizing when accuracy_L >= 0.9: an accuracy of exactly 0.9 (45/50)
    is positive, and alpha exactly 0.9 is above the cut (no disagreement).  Fault: `accuracy > threshold`."""
    from verify.numeric import pr26_trained as pt

    cells = [{"family": "a", "task": "x", "rows": [{"seed": 0, "L": 30, "alpha": 0.9, "accuracy": 45 / 50},
                                                   {"seed": 1, "L": 30, "alpha": 0.2, "accuracy": 0.5}]}]
    s = pt.summarize(cells, threshold=0.9)
    assert (s["n_generalizing"], s["n_not_generalizing"], s["disagreements"], s["auc"]) == (1, 1, [], 1.0)
    monkeypatch.setattr(pt, "generalizes", lambda acc, threshold=pt.THRESHOLD: acc > threshold)
    s = pt.summarize(cells, threshold=0.9)
    assert s["n_generalizing"] == 0 and s["auc"] is None and len(s["disagreements"]) == 1


def test_prop1_affinity_differentiates_in_the_key(monkeypatch):
    """pr26 Prop. 1's premise is a logit row affine in the key j.  A row affine in i but quadratic in j must be
    refused (inconclusive), and the controls must notice a test that differentiates in the query i instead
    (the shipped families are bilinear: that fault passed every claim)."""
    from verify.constructions.pe import get_family as fam
    from verify.symbolic import pr26 as sym

    assert sym.check_prop1([fam("affine"), fam("alibi")]).status == "proved"
    real_row = sym.symbolic_row

    def j_quadratic(family):
        f, i, j, params = real_row(family)
        return (f + j ** 2 if family.name == "affine" else f), i, j, params

    with monkeypatch.context() as mp:
        mp.setattr(sym, "symbolic_row", j_quadratic)
        ev = sym.check_prop1([fam("affine")])
        assert ev.status == "inconclusive" and "not affine in j" in ev.summary
    monkeypatch.setattr(sym, "key_curvature", lambda f, i, j: sp.simplify(sp.diff(f, i, 2)))
    ev = sym.check_prop1([fam("affine"), fam("alibi")])
    assert ev.status == "error" and "wrong variable" in ev.summary
