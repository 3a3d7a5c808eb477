"""verify realizable: exact per-length realizability with a re-checked W or a Farkas certificate."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from cli_support import json_report as _json

from verify import faults
from verify.constructions import features as F
from verify.constructions import pe
from verify.frontends.cli import main
from verify.proofs.pr26 import alpha as A
from verify.solver import realizable as R
from verify.solver.recheck import check_certificate


def test_affine_prev_unrealizable_from_3(capsys):
    # generalizes pr26 Prop. 1: [1, i] on prev has no head at any length >= 3
    doc = _json(capsys, ["realizable", "--pe-features", "1, i", "--task", "prev", "--L", "24"], 1)
    assert doc["realizable"] is False and doc["first_unrealizable_length"] == 3
    per = {p["L"]: p for p in doc["per_length"]}
    assert per[2]["realizable"] is True and per[2]["witness"] == "W1"
    assert all(per[L]["realizable"] is False and per[L]["certificate"] == "C1" for L in range(3, 25))
    cert = doc["certificates"]["C1"]
    assert cert["checked"] and check_certificate(cert["certificate"])[0]
    # the built-in affine family gives the same answer
    assert A.realizable("affine", "prev", 10).doc["first_unrealizable_length"] == 3


def test_quadratic_prev_realizable_W_rechecked_independently(capsys):
    doc = _json(capsys, ["realizable", "--pe-features", "1, i, i**2", "--task", "prev", "--L", "20"], 0)
    assert doc["realizable"] is True and not doc["certificates"]
    W = [[Fraction(x) for x in row] for row in doc["witnesses"]["W1"]["param"]]
    fam = F.expression_family("1, i, i**2").family
    ar = pe.FractionArith()
    margins = [pe.exact_row_margin(fam, pe.get_task("prev"), W, i, 20, 20, ar) for i in range(1, 20)]
    assert min(margins) >= 1  # recomputed here, outside the tool's own re-check


def test_certificate_files_recheck_and_tamper(capsys, tmp_path):
    d = tmp_path / "certs"
    assert main(["realizable", "--pe-features", "1, i", "--task", "prev", "--L", "6", "--certificates", str(d)]) == 1
    capsys.readouterr()
    assert main(["recheck", str(d)]) == 0
    assert "1/1 certificates valid" in capsys.readouterr().out
    # fault: one multiplier changed: the solver-free checker rejects the file
    (f,) = [p for p in d.glob("*.json") if p.name != "MANIFEST.json"]
    doc = json.loads(f.read_text())
    ys = doc["certificate"]["cases"][0]["multipliers"]
    k = next(i for i, y in enumerate(ys) if Fraction(y) != 0)
    ys[k] = str(Fraction(ys[k]) * 3)
    assert not check_certificate(doc["certificate"])[0]
    f.write_text(json.dumps(doc))
    assert main(["recheck", str(d)]) == 1
    capsys.readouterr()


def test_fault_features_replaced_flip_the_answer():
    # a corrupted construction: the affine map replaced by the quadratic control: prev becomes realizable
    aff = R.decide_lengths(F.expression_family("1, i").family, pe.get_task("prev"), 8, 20)
    quad = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 8, 20)
    assert [a.realizable for a in aff.answers] == [True] + [False] * 6
    assert all(a.realizable for a in quad.answers)


def test_fault_wrong_model_fails_the_exact_recheck(monkeypatch):
    # fault: a solver whose model is off (every parameter entry + 1): the exact re-check refuses it
    from verify.solver import pr26 as sol

    real = sol.lp_obligation

    def off(*a, **k):
        res = real(*a, **k)
        if res.answer == "sat":
            res.model = {v: x + 1 for v, x in res.model.items()}
        return res

    monkeypatch.setattr(R, "lp_obligation", off)
    with faults.inject("solver.realizable._float_proposal", lambda *a, **k: None):  # every round through the faulty solver
        dec = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 8, 20, method="full")
        assert any(a.realizable is None for a in dec.answers) and not dec.witnesses["W1"]["rechecked_exact"]
        # cutting planes: the off model keeps violating rows already held: no witness, every length undecided
        dec = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 8, 20)
        assert all(a.realizable is None for a in dec.answers) and "W1" not in dec.witnesses
        res = A.realizable(features="1, i, i**2", task="prev", L=8)
        assert res.realizable is None


def test_fault_float_proposal_taken_unchecked():
    # fault: the float64 LP proposal accepted without its exact check, and off by one in every entry: the exact
    # check of the whole system keeps finding violated rows already held; nothing is certified
    from verify.solver.common import ObligationResult

    def off(name, rows, dim, margin, support=None):
        return ObligationResult(name, "sat", model={f"theta_{a}": Fraction(1) for a in range(dim)})

    with faults.inject("solver.realizable._float_proposal", off):
        dec = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 8, 20)
    assert all(a.realizable is None for a in dec.answers) and "W1" not in dec.witnesses


def test_fault_certificate_rows_not_at_longer_lengths(monkeypatch):
    # fault: the cumulative rows of longer lengths lose the rows the certificate uses: those lengths become undecided
    real = R.cumulative_rows

    def drop(family, task, L, window, cache=None):
        rows = real(family, task, L, window, cache)
        return rows if L <= 3 else rows[len(rows) // 2:]

    monkeypatch.setattr(R, "cumulative_rows", drop)
    dec = R.decide_lengths(F.expression_family("1, i").family, pe.get_task("prev"), 6, 20, method="full")
    assert dec.answers[1].realizable is False and any(a.realizable is None for a in dec.answers[2:])


def test_fault_certificate_carried_to_a_length_missing_its_rows():
    # fault: the bisection is told the certificate's rows all lie at length 2 (they lie at 3): the rows are rebuilt
    # exactly at 2, not found there, and length 2 (realizable) is left undecided, never refuted
    with faults.inject("solver.realizable._cert_extent", lambda cut, min_L, dim: min_L):
        dec = R.decide_lengths(F.expression_family("1, i").family, pe.get_task("prev"), 6, 20)
    assert dec.answers[0].L == 2 and dec.answers[0].realizable is None
    assert not any(a.realizable for a in dec.answers)  # nothing certified from the wrong extent


def test_alibi_fixed_realizability(capsys):
    # the fixed head (slope 1/2) attends to itself with margin exactly 1/2: realizable at G = 1/2, not at G = 1
    ok = A.realizable("alibi-fixed", None, 12, slope="1/2", target="i", margin="1/2")
    assert ok.realizable is True
    no = A.realizable("alibi-fixed", None, 12, slope="1/2", target="i", margin=1)
    assert no.realizable is False and no.doc["certificates"]["C1"]["checked"]
    # and it never realizes prev
    assert A.realizable("alibi-fixed", "prev", 6, slope="1/2").doc["first_unrealizable_length"] == 2


def test_relative_and_custom_target():
    # free relative kernels realize prev; a custom target 'i - 2' on rows >= 2 (skip-2) as well
    assert A.realizable(features="1, d, d**2", task="prev", L=16).realizable is True
    res = A.realizable(features="1, d, d**2", target="i - 2", rows="2", L=16)
    assert res.realizable is True and res.doc["task"] == "target(i - 2)"
    # copy (target moves with L) with [1, d]: not realizable for one head across lengths
    assert A.realizable(features="1, d", task="copy", L=8).realizable is False


@pytest.mark.parametrize("argv,needle", [
    (["--pe-features", "1, i", "--task", "prev", "--L", "200000"], "--L"),
    (["--pe-features", "1, i, i**2, i**3, i**4, i**5", "--task", "prev", "--L", "131072"], "budget"),
    (["--pe-features", "1, i", "--task", "prev", "--L", "8", "--margin", "0"], "positive"),
    (["--pe-features", "1, i", "--task", "prev", "--L", "8", "--margin", "abc"], "--margin"),
    (["--pe-features", "__import__('os')", "--task", "prev", "--L", "8"], "'__'"),
    (["--pe", "learned-absolute", "--task", "prev", "--L", "256", "--L0", "256"], "too large"),
])
def test_realizable_refusals(capsys, argv, needle):
    assert main(["realizable", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_api_realizable():
    import verify.api as api

    res = api.realizable(features="1, i", task="prev", L=4)
    first = res.to_dict()["per_length"][0]
    assert res.realizable is False and Fraction(first.pop("min_margin_exact")) >= 1 and first == {
        "L": 2, "realizable": True, "witness": "W1", "certificate": None}


# ----------------------------------------------------------------------------- the fast paths against the definitions

_SMALL = [("1, i, i**2", "prev"), ("1, i", "prev"), ("1, i, i**2", "attend-first"), ("1, i, i**2", "copy"),
          ("1, i, i**2", "reverse"), ("cos(d/4), sin(d/4), cos(d/64), sin(d/64)", "prev"),
          ("cos(d/4), sin(d/4), cos(d/64), sin(d/64)", "copy"), ("1, d, d**2", "skip-2"), ("1, d", "reverse")]


@pytest.mark.parametrize("expr,task", _SMALL)
def test_cutting_planes_match_the_full_system(expr, task):
    # every length's answer by cutting planes (with the block identity where it applies) equals the full LP's
    fam, tsk = F.expression_family(expr).family, pe.get_task(task)
    full = R.decide_lengths(fam, tsk, 12, 20, method="full")
    cut = R.decide_lengths(fam, tsk, 12, 20)
    assert [(a.L, a.realizable) for a in cut.answers] == [(a.L, a.realizable) for a in full.answers]
    assert all(a.realizable is not None for a in cut.answers)
    for c in cut.certificates.values():
        assert check_certificate(c["certificate"])[0]


@pytest.mark.parametrize("expr,task", _SMALL)
def test_exact_margins_match_the_row_definition(expr, task):
    # the fast exact margins (running top-two / float64 filter + integer re-decision) equal pe.exact_row_margin
    fam, tsk = F.expression_family(expr).family, pe.get_task(task)
    r = fam.dim(20)
    import random

    rnd = random.Random(1)
    for _ in range(3):
        flat = [Fraction(rnd.randint(-9, 9), rnd.randint(1, 4)) for _ in range(r if fam.kind == "relative" else r * r)]
        param = flat if fam.kind == "relative" else [flat[a * r:(a + 1) * r] for a in range(r)]
        for L in (2, 7, 16):
            got = R.exact_margins(fam, tsk, param, L, 20).margins
            ar = pe.FractionArith()
            want = {i: pe.exact_row_margin(fam, tsk, param, i, L, 20, ar) for i in tsk.rows(L)}
            assert got == {i: m for i, m in want.items() if m is not None}


def test_exact_margins_ties_decided_exactly():
    # W = 0: every logit ties; the float filter hands every key to the exact re-decision: margins exactly 0
    fam, tsk = pe.QUADRATIC, pe.get_task("prev")
    got = R.exact_margins(fam, tsk, [[Fraction(0)] * 3 for _ in range(3)], 40, 20).margins
    assert set(got.values()) == {Fraction(0)}


def test_fault_block_identity_refused_for_length_dependent_targets():
    # fault: copy marked length-stable (the block identity applied to a target that moves with L): refused
    import dataclasses

    bad = dataclasses.replace(pe.get_task("copy"), length_stable=True)
    with pytest.raises(ValueError, match="block identity"):
        R.decide_lengths(pe.QUADRATIC, bad, 12, 20)
    with pytest.raises(ValueError, match="block identity"):
        R.decide_lengths(pe.QUADRATIC, dataclasses.replace(pe.get_task("reverse"), length_stable=True), 12, 20)


def test_fault_cutting_loop_stopping_early_does_not_certify():
    # fault: the loop's violation search reports nothing (it stops on the seed rows): the independent exact
    # re-check of every row refuses the parameter at N; only the short lengths it truly realizes stay realizable
    with faults.inject("solver.realizable._violations", lambda *a, **k: []):
        dec = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 64, 20)
    assert dec.answers[-1].realizable is None and not dec.witnesses["W1"]["rechecked_exact"]
    W = [[Fraction(x) for x in row] for row in dec.witnesses["W1"]["param"]]
    ar = pe.FractionArith()
    for a in dec.answers:
        if a.realizable:  # the definition, row by row
            assert min(pe.exact_row_margin(pe.QUADRATIC, pe.get_task("prev"), W, i, a.L, 20, ar)
                       for i in range(1, a.L)) >= 1


def test_fault_unconverged_loop_is_unknown():
    # a loop given one round only: SAT on a subset is never reported as realizable
    fam, tsk = pe.QUADRATIC, pe.get_task("prev")
    ar = pe.FractionArith()
    feats = [fam.features(m, 20, ar) for m in range(64)]
    cut = R.solve_cutting(fam, tsk, 64, 20, Fraction(1), 9, [], 20_000, feats, True, max_rounds=1)
    assert not cut.converged and cut.res.answer != "sat"


def test_budget_gives_inconclusive_never_realizable():
    import time as _t

    dec = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 64, 20, deadline=_t.perf_counter() - 1)
    assert all(a.realizable is None for a in dec.answers)
    res = A.realizable(features="1, i, i**2", task="prev", L=64, budget_s=1e-9)
    assert res.realizable is None


def test_long_prev_one_decision_at_N():
    # the block identity: one exact decision at N = 1024 covers every shorter length
    lines: list[str] = []
    res = A.realizable(features="1, i, i**2", task="prev", L=1024, progress=lines.append)
    assert res.realizable is True and len(lines) == 1 and lines[0].startswith("length 1024: sat")
    assert res.doc["witnesses"]["W1"]["cutting_planes"]["block_identity"] is True


@pytest.mark.parametrize("name,task,window", [("learned-absolute", "prev", 6), ("learned-absolute", "reverse", 6),
                                              ("rope", "prev", 20), ("alibi", "attend-first", 20),
                                              ("clamped-absolute", "skip-2", 5), ("free-relative", "copy", 6)])
def test_cutting_planes_match_the_full_system_builtin_families(name, task, window):
    fam, tsk = pe.FAMILIES[name], pe.get_task(task)
    full = R.decide_lengths(fam, tsk, 10, window, method="full")
    cut = R.decide_lengths(fam, tsk, 10, window)
    assert [(a.L, a.realizable) for a in cut.answers] == [(a.L, a.realizable) for a in full.answers]


def test_cutting_planes_match_with_a_pinned_parameter():
    # alibi-fixed: the parameter pinned by equality rows (no float proposal; z3 with the pinned rows)
    spec = A.resolve_pe("alibi-fixed", slope="1/2")
    tsk = A.resolve_task(None, target="i")
    for G in (Fraction(1, 2), Fraction(1)):
        full = R.decide_lengths(spec.family, tsk, 8, 20, G, fixed=spec.fixed_param, method="full")
        cut = R.decide_lengths(spec.family, tsk, 8, 20, G, fixed=spec.fixed_param)
        assert [(a.L, a.realizable) for a in cut.answers] == [(a.L, a.realizable) for a in full.answers]


def test_lp_proposals_do_not_carry_the_solvers_last_bits():
    """A float LP's last bits follow the CPU's vector width: the proposal keeps 30 significant bits, so two
    solutions a few ulps apart give the same exact W (the exact check decides either way).  Fault: reading the
    float bit for bit (Fraction(x)) gives two different Ws."""
    import math
    from fractions import Fraction

    from verify.solver.realizable import PROPOSAL_BITS, _dyadic

    for x in (0.7364219811, -3.25e-3, 12345.678, 1.0 / 3.0):
        y = math.nextafter(math.nextafter(x, math.inf), math.inf)
        assert _dyadic(x) == _dyadic(y) and Fraction(x) != Fraction(y)
        assert abs(_dyadic(x) - Fraction(x)) <= abs(Fraction(x)) / 2 ** (PROPOSAL_BITS - 1)
    assert _dyadic(0.0) == 0
