"""verify realizable: exact per-length realizability with a re-checked W or a Farkas certificate."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from verify.constructions import features as F
from verify.constructions import pe
from verify.frontends.cli import main
from verify.proofs.pr26 import alpha as A
from verify.solver import realizable as R
from verify.solver.recheck import check_certificate


def _json(capsys, argv, rc):
    got = main(argv + ["--format", "json"])
    cap = capsys.readouterr()
    assert got == rc, cap.err
    return json.loads(cap.out)


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
    dec = R.decide_lengths(pe.QUADRATIC, pe.get_task("prev"), 8, 20)
    assert any(a.realizable is None for a in dec.answers) and not dec.witnesses["W1"]["rechecked_exact"]
    res = A.realizable(features="1, i, i**2", task="prev", L=8)
    assert res.realizable is None


def test_fault_certificate_rows_not_at_longer_lengths(monkeypatch):
    # fault: the cumulative rows of longer lengths lose the rows the certificate uses: those lengths become undecided
    real = R.cumulative_rows

    def drop(family, task, L, window, cache=None):
        rows = real(family, task, L, window, cache)
        return rows if L <= 3 else rows[len(rows) // 2:]

    monkeypatch.setattr(R, "cumulative_rows", drop)
    dec = R.decide_lengths(F.expression_family("1, i").family, pe.get_task("prev"), 6, 20)
    assert dec.answers[1].realizable is False and any(a.realizable is None for a in dec.answers[2:])


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
    (["--pe-features", "1, i", "--task", "prev", "--L", "1000"], "--L"),
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
    assert res.realizable is False and res.to_dict()["per_length"][0] == {
        "L": 2, "realizable": True, "witness": "W1", "certificate": None, "min_margin_exact": "1"}
