"""kvshift24 Theorem 2 as the existence statement it is (Sec. 3.1, Eq. 9): no layer of Eqs. 4-6 equals IH.

Each layer's decision, and a fault in the construction that would let a layer equal IH (the last slot masked out of
the softmax, i.e. a layer outside Eqs. 4-6) must stop every layer from refuting."""

from __future__ import annotations

import pytest

import verify.constructions.kvshift24 as kc
from verify.core import registry
from verify.core.model import run_claim
from verify.evidence import Context, Evidence, Layer, Status

SMALL = {"L": 16, "d": 8, "Lmax": 4}


def _masking_last_slot(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fault: the construction's softmax gives the last key (s = L) weight 0, as a boundary mask would."""
    orig = kc.kvsa_last

    def masked(X, layer, ar):
        soft = ar.softmax

        def softmax(scores):
            w = soft(scores[:-1])
            return [*w, 0 * w[0]]

        return orig(X, layer, kc.Arith(ar.vm, ar.dot, ar.lin, ar.zero, softmax, ar.mix))

    monkeypatch.setattr(kc, "kvsa_last", masked)


def test_symbolic_refutes_existence_for_a_symbolic_width():
    from verify.symbolic.kvshift24 import decide_existence

    r = decide_existence.__wrapped__()
    assert r["status"] == "refuted" and r["beta_solutions"] == "beta1 = beta2 = 0 only"
    assert r["ih"] == {"probe 1": "0", "probe 2": "1", "probe 3": "0"}
    assert r["forced_coefficient"] == "0" and "D" in r["width"]


def test_symbolic_existence_check_can_fail(monkeypatch):
    from verify.symbolic.kvshift24 import decide_existence

    _masking_last_slot(monkeypatch)
    r = decide_existence.__wrapped__()
    assert r["status"] == "error", r


def test_solver_refutes_existence_at_bounded_widths_and_can_fail(monkeypatch):
    from verify.solver.kvshift24 import EXISTENCE_WIDTHS, decide_existence

    r = decide_existence(20_000)
    assert r["status"] == "refuted" and set(r["widths"].values()) == {"unsat"}
    assert [int(d) for d in r["widths"]] == list(EXISTENCE_WIDTHS) and r["second_opinion"]["1"] == "unsat"
    _masking_last_slot(monkeypatch)
    faulty = decide_existence(20_000)
    assert faulty["status"] == "error" and "sat" in faulty["widths"].values(), faulty["widths"]


def test_kernel_statement_is_a_part_and_does_not_set_the_layer_status():
    from verify.kernel.check import statements_for

    for variant in ("none", "mask", "mask+scale"):
        parts = [s for s in statements_for("kvshift24:theorem2", variant) if s.part]
        assert [(s.theorem, s.role, s.part) for s in parts] == [
            ("theorem2_no_eq46_layer_equals_ih", "refutes", "existence")]
    main = [s for s in statements_for("kvshift24:theorem2", "mask+scale") if not s.part]
    assert [s.role for s in main] == ["proves"]


def _ev(layer: str, status: str, existence: str) -> Evidence:
    numbers = ({"parts": {"existence": {"status": existence, "theorem": "T"}}} if layer == Layer.KERNEL
               else {"existence": {"status": existence, "widths": {"1": "unsat"}, "second_opinion": {"1": "unsat"}}})
    return Evidence(layer=layer, status=status, summary="s", numbers=numbers)


@pytest.mark.parametrize("statuses,outcome", [
    ({"symbolic": "refuted", "solver": "refuted", "kernel": "refuted"}, "fails"),
    ({"symbolic": "refuted", "solver": "inconsistent", "kernel": "refuted"}, None),
    ({"symbolic": "refuted", "solver": "inconclusive"}, None),
    ({"symbolic": "error", "kernel": "refuted"}, None),
    ({"symbolic": "refuted", "kernel": "skipped"}, "fails"),
    ({"symbolic": "refuted", "kernel": "proved"}, None),
    ({}, None),
])
def test_existence_judge_reads_every_layer(statuses, outcome):
    """A layer that did not decide it (inconsistent, inconclusive, error) or two that disagree leave the part
    undecided; a kernel theorem skipped for an option it does not cover is not a decision either way."""
    from verify.proofs.kvshift24 import _t2_existence

    evs = [_ev(layer, Status.REFUTED, s) for layer, s in statuses.items()]
    got, said, layers, by_layer = _t2_existence({}, evs)
    assert (got.value if got else None) == outcome, said
    assert set(by_layer) == set(statuses)


def test_claim_reports_both_parts_with_their_kernel_results():
    c = registry.get("kvshift24:theorem2")
    r = run_claim(c, c.parse_params({"fix": "mask+scale", **SMALL}), Context(seed=0))
    construction, existence = r.parts
    assert (construction.verdict, existence.verdict, r.verdict) == ("HOLDS", "FAILS", "FAILS")
    assert existence.role == "main" and construction.role == "detail"
    if r.layer("kernel").status != "skipped":  # Coq installed
        assert existence.by_layer["kernel"].startswith("refuted: Verify.Kvshift24Exists.")
        assert construction.by_layer["kernel"].startswith("proved")
    assert r.provenance.kind == "outside" and "outside Eqs. 4-6" in r.fix
