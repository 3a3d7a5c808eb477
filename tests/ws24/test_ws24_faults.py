"""Fault injection for the ws24 checks: every check that decides a status or an outcome is
shown to change it when the construction or the model is corrupted (a checker that cannot
fail is a defect)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
import sympy as sp
import torch

from verify import faults
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
    """transposed under key-query proved (there the display is the model's score); a model whose own
    previous-token score is lost (the display still reading chi(v)) must be refuted on the model's-score clause,
    and the transposed variant under query-key (display fixed, head broken) is refuted on the same clause."""
    con = PrevTokenConstruction.uniform(3, "transposed", convention="key-query")
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


def test_numeric_eq14_model_score_can_fail():
    con = InductionKeyConstruction.uniform(16, "read-score")
    assert num.check_eq14(con, d=512, T=8, N=64, seed=0).outcome == "holds"
    real = num._dense
    with faults.inject("numeric.ws24._dense", lambda c, g: real(c, g).T):
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


# ------------------------------------------------------------------ index faults (distinct coefficients)
#
# The data's chi and psi are constant, so a coefficient, target, vector or token read at the
# wrong row changes no number there.  Every layer also checks the index probe (distinct
# coefficients); each fault below is invisible to the uniform construction and must change
# the layer's status or outcome through the probe.


def _cyclic_coefficients(cls, attr):
    """A one-line index fault: term k of W takes the coefficient of row k + 1 (cyclically)."""
    from verify.constructions.bilinear import OuterSum

    return property(lambda self: OuterSum(
        tuple(self.term(k, getattr(self, attr)[k % self.V], self.orientation) for k in range(1, self.V + 1)), "W"))


def test_symbolic_probe_catches_a_coefficient_row_fault(monkeypatch):
    con = PrevTokenConstruction.uniform(5, "read-score")
    assert sym.check_theorem2(con).status == "proved"
    monkeypatch.setattr(PrevTokenConstruction, "W", _cyclic_coefficients(PrevTokenConstruction, "chi"))
    ev = sym.check_theorem2(con)
    assert ev.status == "refuted", ev.summary
    assert "index probe" in ev.witness["clause"] and ev.witness["v"] == 1 and ev.witness["displayed_score"] == "-2"


def test_symbolic_probe_catches_a_query_key_token_swap(monkeypatch):
    """The layer-1 score built with the key token where the query token belongs: with chi
    constant the score at (t, t-1) is still chi; with distinct chi it is chi(z_(t-1))."""
    from verify.constructions.bilinear import bilinear, wE

    con = PrevTokenConstruction.uniform(4, "read-score")
    assert sym.check_theorem2(con).status == "proved"

    def swapped(self, t, s, z_t, z_s, gram):
        return (bilinear(wE(z_s), self.W, wE(z_t), gram)
                + bilinear(wE(z_s), self.W, ("r", self.rel_offset(t, s)), gram))

    monkeypatch.setattr(PrevTokenConstruction, "layer1_score", swapped)
    ev = sym.check_theorem2(con)
    assert ev.status == "refuted", ev.summary
    assert ev.witness["clause"].startswith("the layer-1 score at (t, t-1) equals chi(z_t) (index probe")
    assert ev.witness["layer1_score_at_(t,t-1)"] == "-2" and ev.witness["z_(t-1)"] == 2


def test_symbolic_eq14_probe_catches_a_target_row_fault(monkeypatch):
    con = InductionKeyConstruction.uniform(4, "read-score")
    assert sym.check_eq14(con).status == "proved"
    monkeypatch.setattr(InductionKeyConstruction, "target",
                        lambda self, s, T: self.psi[T % self.V] if s == T else F(0))
    ev = sym.check_eq14(con)
    assert ev.status == "refuted" and "index probe" in ev.witness["clause"], ev.summary


def test_solver_probe_catches_a_coefficient_row_fault(monkeypatch):
    con = PrevTokenConstruction.uniform(4, "read-score")
    ev = sol.check_theorem2(con, F(1, 16))
    assert ev.status == "proved" and ev.numbers["index_probe"]["answers"]["unsat"] == 3
    monkeypatch.setattr(PrevTokenConstruction, "W", _cyclic_coefficients(PrevTokenConstruction, "chi"))
    ev = sol.check_theorem2(con, F(1, 16))
    assert ev.status == "refuted", ev.summary
    assert ev.witness["at"].startswith("index probe chi = (1, -2, 3), v = 1") and ev.witness["score"] == "-2"


def test_solver_eq14_probe_catches_a_target_row_fault(monkeypatch):
    con = InductionKeyConstruction.uniform(3, "read-score")
    assert sol.check_eq14(con, F(1, 16)).status == "proved"
    monkeypatch.setattr(InductionKeyConstruction, "target",
                        lambda self, s, T: self.psi[T % self.V] if s == T else F(0))
    ev = sol.check_eq14(con, F(1, 16))
    assert ev.status == "refuted" and ev.witness["at"].startswith("index probe psi"), ev.summary


def test_solver_probe_is_skipped_where_it_cannot_isolate_index_faults():
    """At eps = 1/2 an honest probe row could leave its allowance: the probe says so and
    runs no obligation, instead of reading a near-orthogonality failure as an index fault."""
    rows, witness, info = sol._theorem2_probe("read-score", F(1, 2), 20_000)
    assert rows == [] and witness is None and "skipped" in info


def test_numeric_probe_catches_a_token_row_fault(monkeypatch):
    """The gram looks w_E(k) up one row late (cyclically): self-consistent inside the
    construction, but the built model embeds token k at its own row, so with distinct chi
    the previous-token score follows chi of the wrong token."""
    con = PrevTokenConstruction.uniform(16, "read-score")
    assert num.check_theorem2(con, d=512, T=8, N=64, seed=0).outcome == "holds"
    real = num.TorchGram.vec

    def late(self, x):
        return self.E[x[1] % self.E.shape[0]] if x[0] == "w_E" else real(self, x)

    monkeypatch.setattr(num.TorchGram, "vec", late)
    ev = num.check_theorem2(con, d=512, T=8, N=64, seed=0)
    assert ev.outcome == "fails", ev.summary
    assert abs(ev.numbers["model_score"] - 1) < ev.numbers["tolerance_tau"]  # the uniform check alone is blind
    assert abs(ev.numbers["index_probe"]["beta_model"] - 1) > ev.numbers["index_probe"]["model_tolerance"]


def test_numeric_eq14_probe_catches_a_coefficient_row_fault(monkeypatch):
    con = InductionKeyConstruction.uniform(16, "read-score")
    assert num.check_eq14(con, d=512, T=8, N=64, seed=0).outcome == "holds"
    monkeypatch.setattr(InductionKeyConstruction, "W", _cyclic_coefficients(InductionKeyConstruction, "psi"))
    ev = num.check_eq14(con, d=512, T=8, N=64, seed=0)
    assert ev.outcome == "fails", ev.summary
    assert abs(ev.numbers["model_score"] - 1) < 2 * ev.numbers["tolerance_tau"]  # the uniform check alone is blind


def test_claim_verdict_changes_on_a_coefficient_row_fault(monkeypatch):
    """End to end: the read-score repair holds; the same code with term k reading chi(k + 1)
    is FAILS in every layer (each through its index probe)."""
    from verify.core.model import run_claim
    from verify.evidence import Context
    from verify.proofs import ws24 as paper

    small = {"orientation": "read-score", "convention": "query-key", "d": "256", "V": "16", "T": "8", "N": "64",
             "Vmax": "3"}
    p = paper.THEOREM2.parse_params(small)
    assert run_claim(paper.THEOREM2, p, Context(seed=0)).verdict == "HOLDS WITH FIX"
    monkeypatch.setattr(PrevTokenConstruction, "W", _cyclic_coefficients(PrevTokenConstruction, "chi"))
    r = run_claim(paper.THEOREM2, p, Context(seed=0))
    assert r.verdict == "FAILS"
    assert {e.layer: (e.status, e.outcome) for e in r.evidence} == {
        "symbolic": ("refuted", "fails"), "solver": ("refuted", "fails"), "numeric": ("consistent", "fails"),
        "kernel": ("skipped", None)}  # the module's own claim: the registry attaches the kernel check


# ------------------------------------------------------------------ solver safety nets


class _PairSumScore(PrevTokenConstruction):
    """A corrupted construction whose association is 9/10 + (1/5) P, P = sum_{k < l <= 4} <w_E(k), w_E(l)>.

    With chi = 1 the allowance is 1/2: the statement fails iff P < -2 (P > 3 is impossible at
    eps = 1/2).  The Gram relaxation reaches P = -3 (every pair at -eps), but four real unit
    vectors have |sum_k w_E(k)|^2 = 4 + 2 P >= 0, so P >= -2: every model of the relaxation
    that violates the statement is a non-PSD Gram matrix, never a real family."""

    def _pairs(self, gram):
        return F(9, 10) + F(1, 5) * sum(gram(("w_E", k), ("w_E", l)) for k in range(1, 5) for l in range(k + 1, 5))

    def displayed_score(self, v, gram):
        return self._pairs(gram)

    def model_score(self, v, gram):
        return self._pairs(gram)


def test_solver_rejects_a_non_psd_witness():
    con = _PairSumScore(4, (F(1),) * 4, "read-score")
    ev = sol.check_theorem2(con, F(1, 2))
    assert ev.status == "inconclusive", ev.summary
    assert "not PSD" in ev.summary
    # the PSD re-check is what keeps the relaxation's model from being reported as a real family
    with faults.inject("solver.ws24._is_psd", lambda gram, family: True):
        assert sol.check_theorem2(con, F(1, 2)).status == "refuted"


def _z3_only(monkeypatch):
    """cvc5 gives no answer (as on a machine without it, or past its budget)."""
    from verify.solver import certify

    monkeypatch.setattr(certify, "cvc5_opinion", lambda smt2, timeout_ms, seed=0: ("unknown", "stubbed: no answer"))


def test_degree2_certificates_need_product_rows(monkeypatch):
    """Eq. 14's score is a sum of products of two inner products: its UNSAT obligations are
    certified by Farkas multipliers over degree-2 product rows.  Without cvc5 the layer is
    proved on those certificates alone; with the product rows dropped no certificate exists,
    and an UNSAT from z3 alone must leave the layer inconclusive, not proved."""
    from verify.solver import certify, common

    con = InductionKeyConstruction.uniform(2, "read-score")
    _z3_only(monkeypatch)
    ev = sol.check_eq14(con, F(1, 16), index_probe=False)
    assert ev.status == "proved", ev.summary
    assert ev.numbers["second_way"]["neither"] == [] and ev.numbers["second_way"]["cvc5_unsat"] == 0
    monkeypatch.setattr(certify, "with_products", lambda rows: rows)
    common.forget()  # answers memoized before the fault was injected must not hide it
    ev = sol.check_eq14(con, F(1, 16), index_probe=False)
    assert ev.numbers["second_way"]["neither"], "an obligation with products was certified without product rows"
    assert ev.status == "inconclusive" and "z3 only" in ev.summary, ev.summary


def test_tightness_sat_model_is_rechecked_exactly(monkeypatch):
    """The tightness SAT at eps* is decided by evaluating z3's model in fractions.Fraction
    (no second solver): a model that does not satisfy S_as-written >= S_transposed is not
    accepted as SAT."""
    from verify.solver import common

    con = PrevTokenConstruction.uniform(3, "read-score")
    ev = sol.check_theorem2(con, F(1, 16), index_probe=False)
    tight = [o for o in ev.certificate["obligations"] if "tightness" in o["name"]]
    assert ev.status == "proved" and tight and tight[0]["answer"] == "sat"
    assert "re-checked exactly" in tight[0]["cvc5"]
    real = common.check

    def corrupt(name, build, timeout_ms, **kw):
        res = real(name, build, timeout_ms, **kw)
        if "tightness" in name:
            res.model = {k: F(0) for k in res.model}  # the orthonormal point: S_as-written < S_transposed there
        return res

    monkeypatch.setattr(sol, "check", corrupt)
    ev = sol.check_theorem2(con, F(1, 16), index_probe=False)
    tight = [o for o in ev.certificate["obligations"] if "tightness" in o["name"]]
    assert tight[0]["answer"] == "unknown" and ev.status == "inconclusive", ev.summary


def test_separation_is_decided_exactly_and_can_fail():
    """Below eps* the separation follows from the two triangle bounds (UNSAT) and one exact
    inequality; a wrong threshold (claiming separation up to eps = 1 where the bounds stop
    separating at 1/V) must make the layer an error, not a proof."""
    con = PrevTokenConstruction.uniform(4, "read-score")
    ev = sol.check_theorem2(con, F(1, 8), index_probe=False)
    assert ev.status == "proved" and ev.numbers["separation"]["holds"] is True
    assert any("separation" in o["name"] and o["answer"] == "unsat" for o in ev.certificate["obligations"])
    with faults.inject("solver.ws24._threshold", lambda *a: sp.Integer(1)):
        ev = sol.check_theorem2(con, F(1, 2), index_probe=False)
    assert ev.status == "error" and "do not separate" in ev.summary, ev.summary


def test_r_minus1_looked_up_as_the_wrong_row_changes_the_verdict(monkeypatch):
    """Eq. 13's relative vector named r_{-2} where r_{-1} belongs: the symbolic closed form and
    layer-1 score (built from r_{-1} and the RPE index) no longer give chi, the solver's
    triangle-bound self-check (written for r_{-1}) flags an encoding error, and the built
    model's previous-token score (RPE key r_{-1} at s = t-1) loses chi.  The repair's
    HOLDS WITH FIX must not survive."""
    from verify.constructions import bilinear
    from verify.core.model import run_claim
    from verify.evidence import Context
    from verify.proofs import ws24 as paper

    p = paper.THEOREM2.parse_params({"orientation": "read-score", "convention": "query-key", "d": "256", "V": "16",
                                     "T": "8", "N": "64", "Vmax": "3"})
    assert run_claim(paper.THEOREM2, p, Context(seed=0)).verdict == "HOLDS WITH FIX"
    monkeypatch.setattr(bilinear, "R_PREV", ("r", -2))
    r = run_claim(paper.THEOREM2, p, Context(seed=0))
    assert r.verdict == "INCONCLUSIVE"  # a layer errored; no layer supports the statement
    assert {e.layer: (e.status, e.outcome) for e in r.evidence} == {
        "symbolic": ("refuted", "fails"), "solver": ("error", None), "numeric": ("consistent", "fails"),
        "kernel": ("skipped", None)}  # the module's own claim: the registry attaches the kernel check
    assert "triangle bound failed" in r.layer("solver").summary


@pytest.mark.parametrize("pe", ["rpe", "ape"])
def test_zero_key_shortcut_is_the_softmax_of_zero_scores(pe):
    """The one-step protocol skips the layer-1 scores while W^1_K is a constant zero (their causal softmax is
    uniform_causal) and forms x_t and Phi_1 x_t once per batch: the three matrices are bit-identical to the path
    that forms every score.  Fault: a uniform attention over all T keys (no causal mask) changes them."""
    fr = bm.sample_frozen(32, 12, 16, 0)
    tok, y, _ = bm.sample_sequences(12, 16, 60, 1)
    fast = bm.one_step_protocol(fr, tok, y, pe)
    real = bm._zero_constant
    try:
        bm._zero_constant = lambda W: False
        slow = bm.one_step_protocol(fr, tok, y, pe)
        bm._zero_constant = real
        good = bm.uniform_causal
        bm.uniform_causal = lambda T, dtype: torch.full((T, T), 1.0 / T, dtype=dtype)
        wrong = bm.one_step_protocol(fr, tok, y, pe)
    finally:
        bm._zero_constant = real
        bm.uniform_causal = good
    for k in ("W2O", "W2K", "W1K"):
        assert torch.equal(getattr(fast, k), getattr(slow, k))
    assert not torch.equal(wrong.W1K, fast.W1K)
