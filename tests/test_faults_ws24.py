"""Fault injection for the ws24 checks: every check that decides a status or an outcome is
shown to change it when the construction or the model is corrupted (a checker that cannot
fail is a defect)."""

from __future__ import annotations

from fractions import Fraction as F

import sympy as sp
import torch

from verify.constructions.bilinear import InductionKeyConstruction, PrevTokenConstruction
from verify.numeric import bietti_model as bm
from verify.numeric import ws24 as num
from verify.solver import ws24 as sol
from verify.symbolic import ws24 as sym


# ------------------------------------------------------------------ symbolic


def test_symbolic_t_independence_can_fail(monkeypatch):
    """The layer-1 score at (t, t-1) is built from the RPE index s - t with a symbolic t; a
    position-dependent off-by-one in that index (at t = 3 the head reads r_{-2}) must be
    caught by the 'independent of t' clause."""
    con = PrevTokenConstruction.uniform(4, "read-score")
    assert sym.check_theorem2(con).status == "proved"
    monkeypatch.setattr(PrevTokenConstruction, "rel_offset",
                        staticmethod(lambda t, s: s - t - sp.KroneckerDelta(t, 3)))
    ev = sym.check_theorem2(con)
    assert ev.status == "refuted"
    assert ev.witness["clause"] == "independent of the position t"
    assert ev.witness["score_at_t"]["3"] == "0" and ev.witness["score_at_t"]["2"] == "1"


def test_symbolic_model_score_clause_can_fail(monkeypatch):
    """read-score proved; a model whose own previous-token score is lost (the display still
    reading chi(v)) must be refuted on the model's-score clause, and the transposed variant
    (display fixed, head broken) is refuted on the same clause."""
    con = PrevTokenConstruction.uniform(3, "read-score")
    assert sym.check_theorem2(con).status == "proved"
    ev = sym.check_theorem2(PrevTokenConstruction.uniform(3, "transposed"))
    assert ev.status == "refuted" and "model's score" in ev.witness["clause"] and ev.witness["model_score"] == "0"
    monkeypatch.setattr(PrevTokenConstruction, "model_score", lambda self, v, gram: 0)
    ev = sym.check_theorem2(con)
    assert ev.status == "refuted" and "model's score" in ev.witness["clause"]


def test_symbolic_eq14_model_clause_can_fail():
    assert sym.check_eq14(InductionKeyConstruction.uniform(3, "read-score")).status == "proved"
    ev = sym.check_eq14(InductionKeyConstruction.uniform(3, "transposed"))
    assert ev.status == "refuted" and "model's score" in ev.witness["clause"]


# ------------------------------------------------------------------ solver


def test_solver_allowance_is_fixed_up_front():
    """The statement's allowance no longer comes from a construction's own triangle bound:
    it is the same string for every orientation and V."""
    texts = {sol.check_theorem2(PrevTokenConstruction.uniform(V, o), F(1, 16)).numbers.get("allowance_A")
             for V in (2, 5) for o in ("as-written", "transposed", "read-score")}
    assert texts == {f"1/2 = {sol.REL_TOL} * max|chi| (fixed up front, independent of the construction)"}


def test_solver_shrunk_association_is_refuted(monkeypatch):
    """A construction whose association is chi/4 (a scale bug) stays inside its own triangle
    bound but outside the fixed allowance: the solver must refute it."""
    con = PrevTokenConstruction.uniform(4, "read-score")
    assert sol.check_theorem2(con, F(1, 16)).status == "proved"
    real = PrevTokenConstruction.term
    monkeypatch.setattr(PrevTokenConstruction, "term",
                        staticmethod(lambda k, coef, o: (coef / 4,) + real(k, coef, o)[1:]))
    ev = sol.check_theorem2(PrevTokenConstruction.uniform(4, "read-score"), F(1, 16))
    assert ev.status == "refuted", ev.summary
    assert ev.witness["violated"].startswith("|score - target|")


def test_solver_model_score_obligation_refutes_transposed():
    ev = sol.check_theorem2(PrevTokenConstruction.uniform(4, "transposed"), F(1, 16))
    assert ev.status == "refuted" and "model score" in ev.witness["at"]
    ev = sol.check_eq14(InductionKeyConstruction.uniform(3, "transposed"), F(1, 16))
    assert ev.status == "refuted" and "model score" in ev.witness["at"]


def test_solver_exact_refutations_do_not_claim_a_solver():
    ev = sol.check_theorem2(PrevTokenConstruction(3, (F(1), F(0), F(1)), "read-score"), F(1, 16))
    assert ev.status == "refuted" and ev.engines == {} and "no solver call" in ev.summary
    ev = sol.check_theorem2(PrevTokenConstruction(3, (F(1), F(2), F(1)), "read-score"), F(1, 16))
    assert ev.status == "refuted" and ev.engines == {} and "no solver call" in ev.summary


# ------------------------------------------------------------------ numeric


def test_numeric_model_score_in_built_model_can_fail(monkeypatch):
    """read-score holds; the built model given the transposed matrix (the display untouched)
    must fail on the model's own previous-token score."""
    con = PrevTokenConstruction.uniform(16, "read-score")
    assert num.check_theorem2(con, d=512, T=8, N=64, seed=0).outcome == "holds"
    real = num._dense
    monkeypatch.setattr(num, "_dense", lambda c, g: real(c, g).T)
    ev = num.check_theorem2(con, d=512, T=8, N=64, seed=0)
    assert ev.outcome == "fails" and abs(ev.numbers["model_score"]) < 0.2


def test_numeric_eq14_model_score_can_fail(monkeypatch):
    con = InductionKeyConstruction.uniform(16, "read-score")
    assert num.check_eq14(con, d=512, T=8, N=64, seed=0).outcome == "holds"
    real = num._dense
    monkeypatch.setattr(num, "_dense", lambda c, g: real(c, g).T)
    assert num.check_eq14(con, d=512, T=8, N=64, seed=0).outcome == "fails"


def test_learning_sign_rule_can_fail_either_way(monkeypatch):
    """The sign of the one-step coefficient is stated only when the interval excludes 0: a
    clean positive, a clean negative, and a pure-noise protocol give +1, -1 and None."""
    V, T = 4, 6
    fr = bm.orthonormal_frozen(V, T)
    signal = torch.outer(fr.w_E.sum(0), fr.r[1])

    def fake(kind):
        calls = {"n": 0}

        def protocol(frozen, tokens, y, pe="rpe", lr=1.0):
            calls["n"] += 1
            noise = (-1) ** calls["n"] * 1e-3 * signal
            W1K = {"pos": signal + noise, "neg": -signal + noise, "noise": noise}[kind]
            return bm.OneStepWeights(W2O=W1K, W2K=W1K, W1K=W1K)
        return protocol

    for kind, want in (("pos", 1), ("neg", -1), ("noise", None)):
        num.learning_coefficients.cache_clear()
        monkeypatch.setattr(bm, "one_step_protocol_split", fake(kind))
        out = num.learning_coefficients(V, T, 3, 4, seed=0)
        assert out["sign"] == want, (kind, out)
    num.learning_coefficients.cache_clear()


def test_split_protocol_removes_the_single_batch_bias():
    """Same data, the two protocols: the single-batch coefficient is a product of sample
    means and differs from the split one (the O(1/n) bias the split protocol removes)."""
    V, T = 4, 6
    fr = bm.orthonormal_frozen(V, T)
    tokens, y, _ = bm.sample_sequences(V, T, 48, 5)
    one = bm.one_step_protocol(fr, tokens, y).W1K
    split = bm.one_step_protocol_split(fr, tokens, y).W1K
    assert not torch.allclose(one, split)
