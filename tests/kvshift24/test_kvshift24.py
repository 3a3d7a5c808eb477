"""kvshift24 (arXiv 2411.19574 v2): known verdicts, fault injection, exact property tests, CLI."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.constructions import kvshift24 as kc
from verify.core import registry
from verify.core.model import InputError, run_claim
from verify.evidence import Context
from verify.frontends.cli import main

CTX = Context(seed=0)
SMALL = {"L": 32, "d": 16}


def _t2():
    return registry.get("kvshift24:theorem2")


# ------------------------------------------------------------------ known verdicts


@pytest.mark.parametrize("fix,sigma,verdict", [
    ("none", "1", "FAILS"),
    ("none", "2", "FAILS"),
    ("mask", "2", "FAILS"),
    ("mask", "1", "HOLDS"),
    ("mask+scale", "2", "HOLDS"),
    ("mask+scale", "1/3", "HOLDS"),
])
def test_theorem2_known_verdicts(fix, sigma, verdict):
    """``verdict`` is the construction part's (the layer the variant builds); the claim FAILS in every variant: no
    layer of Eqs. 4-6 equals IH (the existence part), and a masked layer is outside Eqs. 4-6, never a fix."""
    c = _t2()
    p = c.parse_params({"fix": fix, "sigma": sigma, **SMALL})
    r = run_claim(c, p, CTX)
    parts = {x.name.split(" (")[0]: x for x in r.parts}
    assert r.verdict == "FAILS", [(e.layer, e.status, e.summary) for e in r.evidence]
    assert parts["construction"].verdict == verdict, [(e.layer, e.status, e.summary) for e in r.evidence]
    assert parts["existence"].verdict == "FAILS" and parts["existence"].role == "main"
    assert "holds with fix" not in r.reason
    statuses = {e.layer: e.status for e in r.evidence}
    if verdict == "FAILS":
        assert statuses["symbolic"] == "refuted" and statuses["solver"] == "refuted"
    else:
        assert statuses["symbolic"] == "proved" and statuses["solver"] == "proved"
    assert statuses["numeric"] == "consistent"


def test_expectations_recorded_for_every_variant():
    c = _t2()
    assert [c.variant_label(v) for v in c.variants] == ["none", "mask", "mask+scale"]
    assert c.expected == {"none": "FAILS", "mask": "FAILS", "mask+scale": "FAILS"}  # no Eqs. 4-6 layer equals IH
    assert c.fix({"fix": "none"}) is None and "b1 = 1" in c.fix({"fix": "mask+scale"})


def test_witness_ABA_numbers():
    from verify.solver.kvshift24 import check_theorem2

    ev = check_theorem2(kc.variant("none"), Fraction(1, 2), Fraction(1))
    assert ev.status == "refuted"
    w = ev.witness
    assert w["x"] == "(A, B, A)" and w["IH"] == "B"
    # c_A = (e^-1 + 1) / (e^-1 + e^{1/2} + 1), c_B = e^{1/2} / (...)
    Z = math.exp(-1) + math.exp(0.5) + 1
    assert w["KVSA_coefficients"]["A"] == pytest.approx((math.exp(-1) + 1) / Z, abs=1e-4)
    assert w["KVSA_coefficients"]["B"] == pytest.approx(math.exp(0.5) / Z, abs=1e-4)
    assert Fraction(w["apart_by_at_least"]) > Fraction(45, 100)
    assert "(A, A, A): equal (proved)" in ev.numbers["smaller_candidates"]


@pytest.mark.parametrize("layer", ["symbolic", "solver"])
def test_none_headline_shows_boundary_term_and_value_scale_separately(layer):
    """Default sigma = 2: the headline witness is not the value-scale-only (A, A, A) but one where KVSA
    puts weight on a token IH gives weight 0 (a boundary term); the value-scale fact is reported too."""
    if layer == "symbolic":
        from verify.symbolic.kvshift24 import check_theorem2
    else:
        from verify.solver.kvshift24 import check_theorem2
    ev = check_theorem2(kc.variant("none"), Fraction(1, 2), Fraction(2))
    assert ev.status == "refuted"
    w = ev.witness
    assert w["x"] == "(A, B, A)" and w["IH"] == "B"
    boundary = [t for t, c in w["IH_coefficients"].items() if c == 0 and w["KVSA_coefficients"][t] > 0]
    assert boundary == ["A"] == w["boundary_tokens"]
    # exact: c_A = (1 + e)/(2(1 + 2e)), c_B = e/(2(1 + 2e)) at m = 1/2, sigma = 2
    e = math.e
    assert w["KVSA_coefficients"]["A"] == pytest.approx((1 + e) / (2 * (1 + 2 * e)), abs=1e-4)
    assert w["KVSA_coefficients"]["B"] == pytest.approx(e / (2 * (1 + 2 * e)), abs=1e-4)
    assert ev.summary.startswith("x = (A, B, A), m = 1/2, sigma = 2: IH = B; KVSA = 0.2888 A + 0.2112 B")
    # the value scale, separately labelled
    assert w["value_scale_fact"].startswith("x = (A, A, A), m = 1/2, sigma = 2: IH = A; KVSA = 0.5000 A = IH / sigma")
    vs = ev.numbers["value_scale_witness"]
    assert vs["x"] == "(A, A, A)" and vs["KVSA_coefficients"] == {"A": 0.5} and vs["IH_coefficients"] == {"A": 1.0}
    assert "Value scale, separately: x = (A, A, A)" in ev.summary


def test_mask_headline_is_the_value_scale():
    from verify.solver.kvshift24 import check_theorem2 as sol
    from verify.symbolic.kvshift24 import check_theorem2 as sym

    for ev in (sym(kc.variant("mask"), Fraction(1, 2), Fraction(2)),
               sol(kc.variant("mask"), Fraction(1, 2), Fraction(2), Lmax=6)):
        assert ev.status == "refuted" and ev.witness["x"] == "(A, A, A)"
        assert "= IH / sigma" in ev.summary and "value_scale_fact" not in ev.witness


def test_user_facing_text_is_self_contained(capsys):
    """No development paths, no sympy 'E' for Euler's number, the plain mechanism sentence, symbols defined."""
    import json
    import re

    code = main(["kvshift24:theorem2", "--m", "0.5", "--sigma", "1", "--L", "32", "--d", "16", "--format", "json"])
    assert code == 1
    doc = json.loads(capsys.readouterr().out)
    text = json.dumps(doc)
    assert "CLAIMS.md" not in text and "../shared" not in text and "every input vectors" not in text
    assert not re.search(r"\bE\b", text), re.findall(r".{30}\bE\b.{30}", text)
    r = doc["results"][0]
    assert r["findings"][0].startswith(kc.MECHANISM)
    assert r["layers"]["symbolic"]["details"][0] == kc.MECHANISM
    assert "Z = e_2 + ... + e_{L-1}" in " ".join(r["layers"]["symbolic"]["details"])
    assert r["layers"]["symbolic"]["witness"]["KVSA_exact"]["A"] == "(1 + exp(1))/(1 + exp(1) + exp(3/2))"


def test_symbolic_closed_form_ABA():
    import sympy as sp

    from verify.symbolic.kvshift24 import SIGMA, M, aba_closed_form

    cf = aba_closed_form(kc.variant("none"))
    val = float(cf["diff_A"].subs({M: sp.Rational(1, 2), SIGMA: 1}))
    Z = math.exp(-1) + math.exp(0.5) + 1
    assert val == pytest.approx((math.exp(-1) + 1) / Z, rel=1e-12)
    # mask: only the value scale remains, (1/sigma - 1) B
    cm = aba_closed_form(kc.variant("mask"))
    assert sp.simplify(cm["diff_A"]) == 0
    assert sp.simplify(cm["diff_B"] - (1 / SIGMA - 1)) == 0
    assert sp.simplify(aba_closed_form(kc.variant("mask+scale"))["diff_B"]) == 0


def test_decomposition_pieces():
    from verify.symbolic.kvshift24 import decomposition

    d = decomposition(kc.variant("none"))
    assert d["tables_ok"] and d["tables_failed_at"] == []
    assert not any(d["vanishing"].values())
    d2 = decomposition(kc.variant("mask+scale"))
    assert all(d2["vanishing"].values())
    d3 = decomposition(kc.variant("mask"))
    assert [k for k, v in d3["vanishing"].items() if not v] == ["value scale b1 = 1/sigma"]


# ------------------------------------------------------------------ fault injection

FAULTS = ["fault:drop-first-only", "fault:drop-last-only", "fault:normalisation-only", "fault:scale-without-mask"]


@pytest.mark.parametrize("fault", FAULTS)
def test_fault_injection_changes_every_layer(fault):
    from verify.numeric.kvshift24 import check_theorem2 as num
    from verify.solver.kvshift24 import check_theorem2 as sol
    from verify.symbolic.kvshift24 import check_theorem2 as sym

    m, sigma = Fraction(1, 2), Fraction(2)
    good, bad = kc.variant("mask+scale"), kc.variant(fault)
    assert sym(good, m, sigma).status == "proved"
    assert sym(bad, m, sigma).status == "refuted"
    assert sol(good, m, sigma, Lmax=8).status == "proved"
    sb = sol(bad, m, sigma, Lmax=8)
    assert sb.status == "refuted" and Fraction(sb.witness["apart_by_at_least"]) > 0
    assert num(good, m, sigma, 32, 16, 0).outcome == "holds"
    assert num(bad, m, sigma, 32, 16, 0).outcome == "fails"


def test_fault_normalisation_only_fails_across_slopes():
    """Changing only the normaliser leaves a visible error at both a flat and a steep ALiBi slope."""
    from verify.numeric.kvshift24 import sweep

    g = sweep(kc.variant("fault:normalisation-only"), 64, 16, 2, 16, 0,
              ms=(Fraction(0), Fraction(2)), sigmas=(Fraction(1, 64), Fraction(1)))
    assert g[(Fraction(0), Fraction(1))] > 1e-3
    assert g[(Fraction(2), Fraction(1))] > 1e-3


# ------------------------------------------------------------------ exact property tests

rat = st.fractions(min_value=Fraction(-3), max_value=Fraction(3), max_denominator=50)


def stand_in_exp(q: Fraction) -> Fraction:
    """A positive, strictly increasing rational stand-in for exp (exactness of the structure)."""
    q = Fraction(q)
    return 1 + q + q * q / 2 if q >= 0 else 1 / (1 - q + q * q / 2)


@settings(max_examples=60, deadline=None)
@given(L=st.integers(3, 9), data=st.data(),
       m=st.fractions(min_value=0, max_value=2, max_denominator=20),
       sigma=st.fractions(min_value=Fraction(1, 10), max_value=4, max_denominator=20))
def test_repaired_equals_ih_exactly(L, data, m, sigma):
    dots = [Fraction(0)] + data.draw(st.lists(rat, min_size=L, max_size=L))
    dq = lambda i: dots[i]  # noqa: E731
    kv = kc.evaluate(kc.kvsa_terms(L, "mask+scale", sigma), dq, sigma, m, stand_in_exp, Fraction(0))
    ih = kc.evaluate(kc.ih_terms(L), dq, sigma, m, stand_in_exp, Fraction(0))
    assert kv == ih
    assert sum(ih.values()) == 1 and set(ih) == set(range(2, L))
    # the as-written construction puts positive weight on x_1 and x_L, which IH never does
    none = kc.evaluate(kc.kvsa_terms(L, "none", sigma), dq, sigma, m, stand_in_exp, Fraction(0))
    assert none[1] > 0 and none[L] > 0 and none != ih
    # mask alone: exactly IH / sigma
    mask = kc.evaluate(kc.kvsa_terms(L, "mask", sigma), dq, sigma, m, stand_in_exp, Fraction(0))
    assert all(mask[i] == ih[i] / sigma for i in ih)


@settings(max_examples=60, deadline=None)
@given(q=st.fractions(min_value=-20, max_value=20, max_denominator=1000))
def test_exp_enclosure_is_rigorous_and_tight(q):
    lo, hi = kc.exp_enclosure(q)
    assert 0 < lo <= hi
    import mpmath

    with mpmath.workdps(60):
        e = mpmath.exp(mpmath.mpf(q.numerator) / q.denominator)
        assert mpmath.mpf(lo.numerator) / lo.denominator <= e <= mpmath.mpf(hi.numerator) / hi.denominator
    assert (hi - lo) / lo < Fraction(1, 10**20)


@settings(max_examples=25, deadline=None)
@given(L=st.integers(3, 6), data=st.data())
def test_interval_witness_recheck_on_tokens(L, data):
    toks = tuple(data.draw(st.lists(st.sampled_from("ABC"), min_size=L, max_size=L)))
    m, sigma = Fraction(1, 3), Fraction(3, 2)
    ih = kc.interval_coefficients(kc.ih_terms(L), kc.token_dot(toks), sigma, m)
    kv = kc.interval_coefficients(kc.kvsa_terms(L, "mask+scale", sigma), kc.token_dot(toks), sigma, m)
    assert ih == kv
    none = kc.interval_coefficients(kc.kvsa_terms(L, "none", sigma), kc.token_dot(toks), sigma, m)
    assert none[1][0] > 0  # x_1's coefficient is bounded away from 0 exactly


# ------------------------------------------------------------------ CLI and name resolution


def test_cli_witness_exit_1(capsys):
    code = main(["kvshift24:theorem2", "--m", "0.5", "--sigma", "1", "--L", "32", "--d", "16", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1
    assert "x = (A, B, A), m = 1/2, sigma = 1: IH = B; KVSA = 0.4535 A + 0.5465 B" in out
    assert "FAILS" in out


def test_cli_mask_scale_exit_1_and_its_construction_part_exit_0(capsys):
    """The masked layer equals IH (its part, exit 0), but it is outside Eqs. 4-6: Theorem 2 FAILS (exit 1)."""
    args = ["kvshift24:theorem2", "--fix", "mask+scale", "--L", "32", "--d", "16", "--quiet"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "HOLDS WITH FIX" not in out and "existence (Eqs. 4-6) FAILS" in out
    assert main([*args, "--part", "construction"]) == 0
    assert "kvshift24:theorem2[mask+scale,L=32,d=16]: HOLDS\n" in capsys.readouterr().out
    assert main([*args, "--part", "nope"]) == 2
    assert "its parts: construction, existence" in capsys.readouterr().err


def test_cli_mask_sigma2_names_value_scale(capsys):
    assert main(["theorem2", "--fix", "mask", "--sigma", "2", "--L", "32", "--d", "16", "--quiet"]) == 1
    out = capsys.readouterr().out
    assert "value scale b1 = 1/sigma" in out and "IH / sigma" in out


def test_bare_theorem2_is_ambiguous(capsys):
    assert main(["theorem2"]) == 2
    err = capsys.readouterr().err
    assert "ambiguous" in err and "ws24:theorem2" in err and "kvshift24:theorem2" in err


def test_options_disambiguate():
    assert registry.resolve("theorem2", ["orientation"]).id == "ws24:theorem2"
    assert registry.resolve("theorem2", ["fix"]).id == "kvshift24:theorem2"
    assert registry.resolve("theorem2", ["sigma", "m"]).id == "kvshift24:theorem2"
    with pytest.raises(InputError, match="ambiguous"):
        registry.resolve("theorem2", [])


@pytest.mark.parametrize("raw,msg", [
    ({"sigma": "0"}, "sigma must be > 0"),
    ({"sigma": "-1/2"}, "sigma must be > 0"),
    ({"L": "2"}, "L must be >= 3"),
    ({"L": "100000", "d": "4096"}, "GiB"),
    ({"m": "-1"}, "--m must be >= 0"),
])
def test_bad_input_refused(raw, msg):
    with pytest.raises(InputError, match=msg):
        _t2().parse_params(raw)


def test_cli_bad_input_exit_2(capsys):
    assert main(["kvshift24:theorem2", "--sigma", "0"]) == 2
    assert "sigma" in capsys.readouterr().err


# ------------------------------------------------------------------ theorem 3 and theorem 1


def test_t3_formula_is_eq10_as_printed():
    from verify.numeric.kvshift24 import t3_formula

    T, a1_, b1_ = 16, 0.3, 0.6
    a2_, b2_ = 1 - a1_, 1 - b1_
    S = math.exp(a2_) + 2 * math.exp(a1_) + (T - 2)
    a1, a2 = math.exp(a1_) / S, math.exp(a2_) / S
    ct, cn, cq = a2 * b1_ + b2_ / S, b1_ / S + b2_ * a2, 2 * a1 * b1_ + a2 * b2_
    other = (T - 4) * math.exp((b1_ + b2_) / S)
    want = -math.log(math.exp(ct) / (math.exp(ct) + 2 * math.exp(cn) + math.exp(cq) + other))
    assert t3_formula(a1_, b1_, T) == pytest.approx(want, rel=1e-12)
    assert t3_formula(a1_, b1_, T, plotting_code=True) != pytest.approx(want, abs=1e-3)
    assert t3_formula(a1_, b1_, T, body_a1=True) != pytest.approx(want, abs=1e-4)


def test_t3_empirical_matches_eq10_not_plotting_code():
    from verify.numeric.kvshift24 import BODY, EQ10, PLOTTING, check_theorem3

    ev = check_theorem3(8, (256,), 32, 0, grid=5)
    n = ev.numbers["per_d"]["256"]
    assert EQ10 in n["matches"] and PLOTTING not in n["matches"]
    assert n["rmse"][EQ10] < ev.numbers["tolerance"] < n["rmse"][PLOTTING]
    # the exact d -> infinity limit is Appendix C's body reading, to rounding, and not Eq. 10 as printed
    assert ev.numbers["exact_limit"]["best"] == BODY
    assert min(ev.numbers["exact_limit"]["rmse"].values()) < 1e-12
    assert tuple(n["argmin_alpha1_beta1"]) == (0.0, 1.0)
    assert ev.outcome == "fails" and not ev.numbers["exact_limit_check"]["ok"]
    assert not ev.figures[2].reproduced and ev.figures[0].reproduced and ev.figures[1].reproduced


def test_t3_default_sizes_as_printed_fails_appendix_c_holds():
    """At the claim's default sizes (T = 16, d = 256, 1024, N = 128): Eq. 10 as printed is 0.0119
    from the exact limit at (0, 0); Appendix C's beta2*a1 is the limit and the data match it."""
    from verify.numeric.kvshift24 import check_theorem3

    a = check_theorem3(16, (256, 1024), 128, 0, reading="as-printed")
    ex = a.numbers["exact_limit_check"]
    assert a.outcome == "fails" and not ex["ok"] and ex["separates"]
    assert tuple(ex["witness"]["alpha1_beta1"]) == (0.0, 0.0) and ex["max_abs_diff"] == pytest.approx(0.011875, abs=1e-5)
    assert not a.numbers["empirical_check"]["ok"]
    b = check_theorem3(16, (256, 1024), 128, 0, reading="appendix-c")
    assert b.outcome == "holds" and b.numbers["exact_limit_check"]["max_abs_diff"] < 1e-12
    assert b.numbers["empirical_check"]["rmse_vs_reading"] < b.numbers["empirical_check"]["tolerance"]


def test_t3_claim_variants_and_expectations():
    from verify.proofs.kvshift24 import THEOREM3

    assert [v["eq10"] for v in THEOREM3.variants] == ["as-printed", "appendix-c"]
    assert THEOREM3.expected == {"as-printed": "FAILS", "appendix-c": "HOLDS WITH FIX"}
    assert THEOREM3.fix({"eq10": "as-printed"}) is None and "beta2 a1" in THEOREM3.fix({"eq10": "appendix-c"})


def test_t1_as_displayed_decays_causal_does_not():
    from verify.numeric.kvshift24 import check_theorem1

    good = check_theorem1("as-displayed", [2, 6, 12], [8, 64], 64, 4, 0)
    e = good.numbers["sup_err_vs_IH"]
    assert 1e-2 < e[0] < 3e-2 and e[-1] < 1e-6
    assert 0.9 < good.numbers["fit_rate_lambda"] < 1.1 and good.outcome == "holds"
    bad = check_theorem1("causal", [2, 6, 12], [8, 64], 64, 4, 0)
    assert bad.numbers["sup_err_vs_IH"][-1] > 0.1 and bad.outcome == "fails"
    assert bad.numbers["attribution_at_largest_p"]["layer 2 causal only"] > 0.1


@pytest.mark.parametrize("masks,verdict", [("as-displayed", "HOLDS"), ("causal", "FAILS")])
def test_theorem1_known_verdicts(masks, verdict):
    c = registry.get("kvshift24:theorem1")
    assert [c.variant_label(v) for v in c.variants] == ["as-displayed", "causal"]
    assert c.expected == {"as-displayed": "HOLDS", "causal": "FAILS"}
    r = run_claim(c, c.parse_params({"masks": masks, "pmax": "8", "d": "16"}), CTX)
    assert r.verdict == verdict, [(e.layer, e.status, e.summary) for e in r.evidence]
    assert r.layer("symbolic").status == ("proved" if verdict == "HOLDS" else "refuted")
    text = " ".join(r.notes)
    assert "Layer 1:" in text and "Layer 2:" in text and "tau = s is excluded" in text


def test_theorem1_cli_json_per_p(capsys):
    import json

    assert main(["kvshift24:theorem1", "--format", "json", "--no-timings"]) == 0
    doc = json.loads(capsys.readouterr().out)
    n = doc["results"][0]["layers"]["numeric"]["numbers"]
    assert n["p"][-1] == 12 and n["sup_err_vs_IH"][-1] < 1e-4
    assert doc["results"][0]["verdict"] == "HOLDS"


def test_theorem2_alibi_option():
    c = _t2()
    r = run_claim(c, c.parse_params({"fix": "mask+scale", "alibi": "no", **SMALL}), CTX)
    assert r.verdict == "FAILS" and r.layer("symbolic").status == "refuted"
    assert "no ALiBi bias" in r.layer("symbolic").summary
    r0 = run_claim(c, c.parse_params({"fix": "mask+scale", "alibi": "no", "m": "0", **SMALL}), CTX)
    assert r0.verdict == "FAILS" and r0.parts[0].verdict == "HOLDS"  # the masked layer; no Eqs. 4-6 layer exists


def test_theorem2_regime_by_input_class():
    from verify.numeric.kvshift24 import regime_by_class

    reg = regime_by_class(kc.variant("none"), 64, 16, 4, 16, 0)
    assert reg["last two tokens differ, x_L seen before"]["boundary_error_b1=1"] < 1e-9
    assert reg["last two tokens equal"]["boundary_error_b1=1"] > 0.1
    assert reg["x_L not seen before"]["boundary_error_b1=1"] > 1e-3
    v = reg["last two tokens differ, x_L seen before"]
    assert v["error_as_variant"] == pytest.approx(v["value_scale_error"], rel=1e-9) and v["value_scale_error"] > 1


def test_all_registered():
    from verify.proofs.kvshift24.trained import CLAIMS as TRAINED

    ids = [c.id for c in registry.paper_claims("kvshift24")]
    assert ids == (["kvshift24:theorem2", "kvshift24:theorem1", "kvshift24:theorem3", "kvshift24:decode"]
                   + [c.id for c in TRAINED])


def test_value_taken_from_the_wrong_position_is_not_proved(monkeypatch):
    """Fault injection: values x_{s-1} instead of x_s must not be
    excused as a 'value scale' by the symbolic layer."""
    import verify.constructions.kvshift24 as K
    import verify.symbolic.kvshift24 as S
    from verify.core import registry
    from verify.core.model import run_claim
    from verify.evidence import Context

    orig = K.kvsa_term

    def shifted(s, L, a1, a2, b1, b2):
        return orig(s, L, a1, a2, b2, b1)

    monkeypatch.setattr(K, "kvsa_term", shifted)
    monkeypatch.setattr(S, "kvsa_term", shifted)
    claim = registry.get("kvshift24:theorem2")
    r = run_claim(claim, claim.parse_params({"fix": "mask+scale"}), Context(seed=0), layers=("symbolic",))
    ev = r.layer("symbolic")
    # the independent evaluation disagrees with the corrupted tables: an error, never a proof
    assert ev.status == "error" and "boundary terms )" not in ev.summary and r.verdict == "INCONCLUSIVE"
