"""kvshift24:decode, solver layer: bounded z3 equality per prefill, the SAT model re-evaluated in
Fractions, token witnesses with a certified gap; fault injection on the decoder, the enclosures and
the second solver."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from verify import faults
from verify.constructions import kvshift24 as kc
from verify.constructions import kvshift24_pe as pe_mod
from verify.constructions.kvshift24 import variant
from verify.constructions.kvshift24_pe import PE, Decode
from verify.solver import kvshift24_decode as Sol

X = ("A", "B", "C", "B")
M, S = Fraction(1, 2), Fraction(2)
PE_F = PE(rope="after-shift")


def _run(dec: Decode, Lmax: int = 5, var: str = "none", pe: PE = PE_F):
    return Sol.check_decode(X, variant(var), M, S, pe, dec, Lmax)


@pytest.mark.parametrize("dec,status", [
    (Decode(2), "proved"),
    (Decode(2, "mixed-key"), "refuted"),
    (Decode(2, "unwritten-first"), "refuted"),
    (Decode(2, rope_offset="zero"), "refuted"),
    (Decode(2, alibi_distance="off-by-one"), "refuted"),
])
def test_policies(dec, status):
    ev = _run(dec)
    assert ev.status == status, ev.summary
    assert ev.solver is not None and ev.solver.obligations >= 2
    if status == "proved":
        assert ev.numbers["equality_answers"] == ["unsat"] * 4 and not ev.solver.z3_only
    else:
        assert ev.witness["is_given_input"] and ev.numbers["model_recheck"]["full"] != ev.numbers["model_recheck"]["decoded"]


def test_rope_offset_is_no_bug_without_rope_and_off_by_one_cancels_under_the_mask():
    """Two cases the statement holds in: without RoPE the rotation position is irrelevant, and with s = t
    masked an off-by-one ALiBi query position shifts every remaining distance alike (softmax cancels it)."""
    assert _run(Decode(2, rope_offset="zero"), pe=PE("none")).status == "proved"
    assert _run(Decode(2, alibi_distance="off-by-one"), var="mask+scale").status == "proved"


def test_witness_agrees_with_exact_sympy():
    """The certified witness's interval midpoints (an evaluator of the solver module's own) match the exact
    sympy values of the symbolic layer on the same input."""
    from verify.symbolic.kvshift24_pe import decode_on_input

    ev = _run(Decode(2, "mixed-key"))
    w = ev.witness
    r = decode_on_input(X, variant("none"), M, S, PE_F, Decode(2, "mixed-key"))
    row = next(rr for rr in r["rows"] if rr["t"] == w["t"])
    full = dict(part.split(" ")[::-1] for part in row["full"].split(" + "))
    dec = dict(part.split(" ")[::-1] for part in row["decoded"].split(" + "))
    assert float(full[w["symbol"]]) == pytest.approx(w["full"], abs=1e-4)
    assert float(dec[w["symbol"]]) == pytest.approx(w["decoded"], abs=1e-4)
    assert abs(w["full"] - w["decoded"]) >= float(Fraction(w["apart_by_at_least"]))


def test_cos_enclosure_holds_cos():
    lo, hi = Sol.cos_enclosure(3, 1, 3)
    exact = sp.cos(3 * sp.Integer(10000) ** sp.Rational(-1, 3))
    assert lo <= hi and sp.Rational(lo.numerator, lo.denominator) <= exact <= sp.Rational(hi.numerator, hi.denominator)
    assert hi - lo < Fraction(1, 10**30)


# ------------------------------------------------------------------ fault injection


def _decoder_ignoring_policy(monkeypatch, cache: str):
    """Fault: the decoder ignores the requested shift-state policy and always uses ``cache``."""
    orig = pe_mod.decode

    def decode(L, var, pe, dec, sigma=1, co=None):
        return orig(L, var, pe, Decode(dec.prefill, cache, dec.rope_offset, dec.alibi_distance), sigma,
                    co or pe_mod.Coefs())

    monkeypatch.setattr(pe_mod, "decode", decode)


def test_fault_decoder_ignoring_the_buggy_policy_flips_refuted_to_proved(monkeypatch):
    assert _run(Decode(2, "mixed-key")).status == "refuted"
    _decoder_ignoring_policy(monkeypatch, "raw-key")
    assert _run(Decode(2, "mixed-key")).status == "proved"


def test_fault_decoder_always_mixing_fails_the_positive_control(monkeypatch):
    """The raw-key claim does not turn into a refutation through a broken decoder: the positive control
    (raw-key must be proved equal) makes the layer an error."""
    assert _run(Decode(2)).status == "proved"
    _decoder_ignoring_policy(monkeypatch, "mixed-key")
    ev = _run(Decode(2))
    assert ev.status == "error" and "positive control" in ev.summary, ev.summary


def test_fault_wrong_cos_enclosure_is_an_error(monkeypatch):
    """Fault: RoPE angles enclosed at the wrong frequency (theta_j = 1 for every plane): the enclosure's
    check against math.cos makes the layer an error before any witness is certified with it."""
    assert _run(Decode(2, rope_offset="zero")).status == "refuted"

    def theta_one(delta, j, V, base=10_000):
        from flint import arb, ctx

        from verify import balls

        with ctx.workprec(Sol.ANGLE_PREC):
            return balls.ends(arb(delta).cos())

    monkeypatch.setattr(Sol, "cos_enclosure", theta_one)
    ev = _run(Decode(2, rope_offset="zero"))
    assert ev.status == "error" and "cos enclosure" in ev.summary, ev.summary


def test_fault_wrong_exp_enclosure_is_an_error(monkeypatch):
    """Fault: exp enclosed around 2 exp(q): the boxes would still give a 'certified' gap; the sanity check
    against mpmath's interval exp makes the layer an error instead."""
    orig = kc.exp_enclosure

    def doubled(q, digits=30):
        lo, hi = orig(q, digits)
        return 2 * lo, 2 * hi

    monkeypatch.setattr(kc, "exp_enclosure", doubled)
    ev = _run(Decode(2, "mixed-key"))
    assert ev.status == "error" and "exp(" in ev.summary, ev.summary


def test_fault_model_recheck_failing_is_an_error(monkeypatch):
    """A SAT answer is reported only when its model shows the difference in Fraction arithmetic."""
    monkeypatch.setattr(Sol, "recheck_model", lambda *a, **k: None)
    ev = _run(Decode(2, "mixed-key"))
    assert ev.status == "error" and "Fractions" in ev.summary, ev.summary


def test_no_certified_input_is_inconclusive_not_refuted():
    """Fault: the Fraction enclosures never separate (gap 0): the structural SAT alone is not a refutation."""
    with faults.inject("solver.kvshift24_decode._gap", lambda pairs, x, lg: (Fraction(0), 0, "")):
        ev = _run(Decode(2, "mixed-key"))
    assert ev.status == "inconclusive" and "no token input" in ev.summary, ev.summary


def _cvc5_says(monkeypatch, answer):
    import verify.solver.certify as cert
    import verify.solver.common as common

    monkeypatch.setattr(cert, "cvc5_opinion", lambda smt2, timeout_ms, seed=0: (answer, ""))
    common.forget()  # answers memoized before the fault was injected must not hide it


def test_z3_only_unsat_is_inconclusive(monkeypatch):
    _cvc5_says(monkeypatch, "unknown")
    ev = _run(Decode(2))
    assert ev.status == "inconclusive" and ev.solver.z3_only, ev.summary


def test_cvc5_contradiction_makes_the_claim_inconsistent(monkeypatch):
    from verify.core.model import run_claim
    from verify.evidence import Context
    from verify.proofs.kvshift24 import DECODE

    p = DECODE.parse_params({"Lmax": "4"})
    assert run_claim(DECODE, p, Context(seed=0), layers=("solver",)).verdict == "HOLDS"
    _cvc5_says(monkeypatch, "sat")
    r = run_claim(DECODE, p, Context(seed=0), layers=("solver",))
    assert r.verdict == "INCONSISTENT" and r.layer("solver").solver.disagreements, r.reason
