"""pr26: PE families x tasks, alpha_L, Prop. 1, Theorem 2, Theorem 1, and `verify alpha`."""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.constructions import pe
from verify.constructions.pe import FAMILIES, FractionArith, exact_row_margin, get_family, get_task
from verify.core import registry
from verify.core.model import run_claim
from verify.evidence import Context
from verify.frontends.cli import main
from verify.numeric import pr26 as num
from verify.solver import pr26 as sol
from verify.symbolic import pr26 as sym

# ----------------------------------------------------------------------------- known alpha_L cells

KNOWN = [
    ("rope", "prev", 1.0), ("rope", "skip-3", 1.0), ("free-relative", "prev", 1.0), ("free-relative", "skip-2", 1.0),
    ("alibi", "prev", 0.0), ("affine", "prev", 0.0), ("clamped-absolute", "attend-first", 1.0),
    ("clamped-absolute", "prev", 0.0), ("free-relative", "attend-first", 0.0),
]


@pytest.mark.parametrize("fam,task,want", KNOWN)
def test_known_alpha_cells(fam, task, want):
    tr = num.alpha(get_family(fam), get_task(task), 20, 64, seed=0)
    assert tr.new_rows == 44
    assert tr.alpha == want
    if want == 1.0:
        assert tr.gL > 0 and not tr.failing
    else:
        assert tr.gL <= 0 and len(tr.failing) == 5


def test_clamped_prev_fails_by_exact_tie():
    tr = num.alpha(get_family("clamped-absolute"), get_task("prev"), 20, 64)
    # every new row i >= 20: key i has the same clamped feature as the target i - 1
    assert tr.new_rows_target_tied == tr.new_rows == 44
    # the exact re-check: target logit equals key i's logit in rational arithmetic
    ar = FractionArith(0)
    fam = get_family("clamped-absolute")
    W = [[Fraction(v) for v in row] for row in tr.fit.param.tolist()]
    for i in (20, 33, 63):
        assert pe.logit(fam, W, i, i - 1, 20, ar) == pe.logit(fam, W, i, i, 20, ar)


def test_fit_reaches_l0_and_is_seeded():
    a = num.fit(get_family("rope"), get_task("prev"), 20, seed=3)
    b = num.fit(get_family("rope"), get_task("prev"), 20, seed=3)
    c = num.fit(get_family("rope"), get_task("prev"), 20, seed=4)
    assert torch.equal(a.param, b.param) and not torch.equal(a.param, c.param)
    assert a.loss_last < 0.1 < a.loss_first
    assert a.settings["lr"] == num.LR and a.settings["steps"] == 400 and a.settings["weight_decay"] == 1e-4
    assert a.settings["selection"] == "ce"


def test_chunked_evaluation_matches_unchunked():
    fr = num.fit(get_family("sinusoidal"), get_task("prev"), 20, seed=0)
    rows = list(range(20, 300))
    a = num.evaluate_rows(fr.family, fr.task, fr.param, 20, 300, rows, chunk=7)
    b = num.evaluate_rows(fr.family, fr.task, fr.param, 20, 300, rows, chunk=4096)
    assert torch.allclose(a.margin, b.margin, rtol=0, atol=1e-9)
    assert torch.equal(a.passed, b.passed)


# ----------------------------------------------------------------------------- pe definitions


def test_tasks_and_rounding():
    assert get_task("skip-3").target(10, 64) == 7 and list(get_task("skip-3").rows(5)) == [3, 4]
    assert get_task("copy").target(40, 64) == 8 and get_task("copy").rows(7) == range(4, 7)
    assert get_task("reverse").target(40, 64) == 23
    with pytest.raises(KeyError, match="valid"):
        get_task("skip-0")
    with pytest.raises(KeyError, match="rope"):
        get_family("nope")
    ar = FractionArith(0)
    for k in (0, 7, 15):
        for n in (1, 100, 8833):
            assert abs(float(ar.sin(k, n)) - math.sin(n * pe.theta(k))) <= 2.0 ** -41 + 1e-15


# ----------------------------------------------------------------------------- Prop. 1


def test_prop1_solver_unsat_and_control_sat():
    ev = sol.check_prop1(FAMILIES["affine"], 12)
    assert ev.status == "proved"
    assert ev.numbers["answers"] == {"unsat": 10, "sat": 0, "unknown": 0}
    ctl = ev.certificate["control"]
    assert ctl["answer"] == "sat" and ctl["witness_rechecked_exact"]
    assert Fraction(ctl["witness"]["min_margin_exact"]) >= 1


def test_prop1_symbolic_affinity_identity():
    ev = sym.check_prop1([FAMILIES["affine"], FAMILIES["alibi"]])
    assert ev.status == "proved"
    assert ev.numbers["affine: d^2 logit / dj^2"] == "0"


def _non_affine_affine() -> pe.Family:
    # fault: a non-affine feature slipped into the affine family
    return dataclasses.replace(FAMILIES["affine"], dim=lambda L0: 3,
                               feature=lambda n, L0, ar: [ar.num(1), ar.num(n), ar.num(n * n)])


def test_fault_non_affine_feature_changes_prop1(monkeypatch):
    bad = _non_affine_affine()
    ev = sol.check_prop1(bad, 8)
    assert ev.status == "refuted" and ev.witness["recheck_ok"] and ev.witness["n"] == 3
    assert sym.check_prop1([bad]).status == "inconclusive"
    monkeypatch.setitem(pe.FAMILIES, "affine", bad)
    claim = registry.get("pr26:prop1")
    res = run_claim(claim, claim.parse_params({"N": 8, "n": 32}), Context(seed=0))
    assert res.verdict != "HOLDS"
    assert res.layer("solver").status == "refuted"
    assert res.layer("numeric").outcome == "fails"


def test_prop1_numeric_no_interior_argmax():
    ev = num.check_prop1(FAMILIES["affine"], 128, seed=1, samples=200, opt_lengths=(64,))
    assert ev.outcome == "holds" and ev.numbers["random_interior_strict_argmax_rows"] == 0
    assert ev.numbers["random_rows_checked"] == 200 * 127


# ----------------------------------------------------------------------------- Theorem 2


def test_theorem2_solver_answers():
    ev = sol.check_theorem2(((8, 16),), K=3)
    assert ev.status == "proved"
    obs = ev.certificate["obligations"]
    assert all(o["answer"] == o["expected"] for o in obs)
    assert sum(o["answer"] == "unsat" for o in obs) == 16  # copy and reverse, delta* = 0..7
    assert ev.witness is not None and ev.witness["recheck_ok"]
    k = [Fraction(x) for x in ev.witness["k(delta), delta = 0..L-1"]]
    assert k.index(max(k)) == 8  # the copy witness peaks at ceil(16/2) = 8, outside the trained window
    assert ev.numbers["reverse_without_condition"] == ["unsat"]


def test_fault_no_unique_maximiser_changes_theorem2():
    ev = sol.check_theorem2(((8, 16),), K=3, unique_max=False)
    assert ev.status == "refuted" and ev.witness["recheck_ok"]
    # a kernel whose maximum is not unique (tied at offsets 1 and 3): deep rows tie, prev fails
    fam, prev = get_family("free-relative"), get_task("prev")
    tied = torch.zeros(20, dtype=torch.float64)
    tied[1] = tied[3] = 1.0
    unique = tied.clone()
    unique[3] = 0.5
    rows = list(range(20, 64))
    assert int(num.evaluate_rows(fam, prev, unique, 20, 64, rows).passed.sum()) == 44
    assert int(num.evaluate_rows(fam, prev, tied, 20, 64, rows).passed.sum()) == 0


def test_rope_prev_witness_survives_rounding():
    ev = sol.check_theorem2(((8, 16),), K=2, extra_families=(FAMILIES["rope"], FAMILIES["alibi"]))
    fams = {f["name"].split()[0]: f for f in ev.certificate["families"]}
    assert fams["rope"]["answer"] == "sat" and fams["alibi"]["answer"] == "unsat"
    assert fams["rope"]["witness"]["recheck_ok"]
    assert fams["rope"]["witness"]["min_margin_true_features_float64"] > 0.999


def test_deep_row_analysis():
    an = sym.deep_row_analysis(["prev", "skip-4", "copy", "reverse", "attend-first"])
    assert an["prev"]["kind"] == "constant" and an["skip-4"]["offset"] == "4"
    assert an["copy"]["kind"] == "grows with L" and an["copy"]["failing_fraction_limit"] == 1
    # computed, not assumed: every copy row is right exactly at the one length with ceil(L/2) = delta*
    assert an["copy"]["deep_rows_right_at_most"] == "Piecewise((m, Eq(delta_star, m)), (0, True))"
    assert an["reverse"]["deep_rows_right_at_most"] == "1" and an["reverse"]["failing_fraction_limit"] == 1


# ----------------------------------------------------------------------------- Theorem 1


@settings(max_examples=25, deadline=None)
@given(fam=st.sampled_from(["affine", "alibi", "learned-absolute", "clamped-absolute", "free-relative"]),
       task=st.sampled_from(["prev", "skip-2", "attend-first"]),
       seed=st.integers(0, 10_000), L0=st.integers(3, 6), extra=st.integers(1, 5))
def test_theorem1_block_identity_and_margin_exact(fam, task, seed, L0, extra):
    family, t = get_family(fam), get_task(task)
    L = L0 + extra
    g = torch.Generator().manual_seed(seed)
    p = torch.randint(-4, 5, family.param_shape(L0), generator=g).tolist()
    P = [[Fraction(x) for x in row] for row in p] if family.kind == "absolute" else [Fraction(x) for x in p]
    ar = FractionArith(seed)
    for i in range(L0):
        for j in range(i + 1):
            assert pe.logit(family, P, i, j, L0, ar) == pe.logit(family, P, i, j, L0, ar)
    m = lambda rows, n: [exact_row_margin(family, t, P, i, n, L0, ar) for i in rows]  # noqa: E731
    old = [x for x in m(t.rows(L0), L0) if x is not None]
    new = [x for x in m([i for i in t.rows(L) if i >= L0], L) if x is not None]
    at_L = [x for x in m(t.rows(L), L) if x is not None]
    assert min(at_L) == min(min(old) if old else math.inf, min(new))


def test_theorem1_symbolic_and_fault():
    assert sym.check_theorem1(L0s=(3,), Ls=(7,)).status == "proved"
    # fault: a feature that depends on the sequence length breaks the block identity
    calls = {"n": 0}

    def leaky(n, L0, ar):
        calls["n"] += 1
        return [ar.num(1), ar.num(n + (calls["n"] > 3))]

    bad = dataclasses.replace(FAMILIES["affine"], feature=leaky)
    assert sym.check_theorem1(L0s=(3,), Ls=(7,), families=[bad]).status == "refuted"


# ----------------------------------------------------------------------------- claims and CLI


@pytest.mark.parametrize("cid", ["pr26:prop1", "pr26:theorem2"])
def test_claims_hold(cid):
    claim = registry.get(cid)
    res = run_claim(claim, claim.parse_params({}), Context(seed=0))
    assert res.verdict == "HOLDS" == claim.expected[""]
    assert {e.layer: e.status for e in res.evidence} == {"symbolic": "proved", "solver": "proved", "numeric": "consistent",
                                                         "kernel": "proved"}


def test_cli_alpha_json(capsys):
    assert main(["alpha", "--pe", "rope", "--task", "prev", "--L0", "20", "--L", "64", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["alpha"] == 1.0 and doc["new_rows"] == 44 and doc["min_margin_new_rows"] > 0
    assert main(["alpha", "--pe", "alibi", "--task", "prev", "--L0", "20", "--L", "64"]) == 0
    out = capsys.readouterr().out
    assert "alpha_L = 0.0000" in out and "row 21 -> argmax key 21, target 20" in out


@pytest.mark.parametrize("args,needle", [
    (["--pe", "nonesuch", "--task", "prev"], "valid: affine, alibi"),
    (["--pe", "rope", "--task", "nope"], "skip-K"),
    (["--pe", "rope", "--task", "prev", "--L0", "20", "--L", "20"], "must exceed"),
    (["--pe", "rope", "--task", "prev", "--L0", "1", "--L", "8"], ">= 2"),
    (["--pe", "learned-absolute", "--task", "prev", "--L0", "2000", "--L", "900000"], "GiB"),
])
def test_cli_alpha_errors(capsys, args, needle):
    assert main(["alpha", *args]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and len(err.splitlines()) == 1


def test_untrained_features_are_numpys_seeded_stream_and_do_not_depend_on_L():
    """Slot n's untrained feature is row n of numpy's Generator seeded by SeedSequence([RAND_STREAM, seed, r]),
    times 1/sqrt(r), whichever slot was asked for first (the cache extends the stream by redrawing it), and it does
    not depend on how many slots are drawn (Theorem 1's independence of L).  Fault: drawing each slot from a
    stream sized by the request (standard_normal((r, n + 1)).T) gives slot 20 another value at L = 30 than at
    L = 60."""
    import numpy as np

    from verify.constructions import pe

    for seed, n, r in [(0, 20, 20), (3, 45, 20), (7, 21, 7), (1, 100, 1), (10**12, 300, 20)]:
        gen = np.random.Generator(np.random.PCG64(np.random.SeedSequence([pe.RAND_STREAM, seed, r])))
        want = (gen.standard_normal((n + 1, r)) * (1.0 / np.sqrt(r)))[n].tolist()
        pe._RAND_CACHE.clear()
        assert pe._rand_vec(seed, n, r) == want
        assert pe.FloatArith(seed).rand_vec(n, r) == want and pe._rand(seed, n, r - 1, r) == want[-1]
        assert pe._draw(seed, r, n + 1)[n].tolist() == pe._draw(seed, r, 3 * n + 7)[n].tolist() == want
        pe._RAND_CACHE.clear()
        pe._rand_vec(seed, 2, r)  # a short prefix first: the later slot extends it
        assert pe._rand_vec(seed, n, r) == want
    x = np.array([pe._rand_vec(5, n, 20) for n in range(20, 2020)]).ravel()
    assert abs(x.mean()) < 0.01 and abs(x.var() * 20 - 1) < 0.02  # N(0, 1/r): 40,000 draws
    with pytest.raises(ValueError):
        pe._rand_vec(-1, 20, 20)
