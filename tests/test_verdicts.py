"""Typed results: the enums read as their strings everywhere, the verdict order and exit codes, and the
solver provenance rules the verdict logic applies from the typed slot (not from display numbers)."""

from __future__ import annotations

import json

import pytest

from verify.evidence import Context, Evidence, Layer, Outcome, SolverProvenance, Status, current_settings, using
from verify.proofs.model import Verdict, _second_way_required, aggregate


def test_enums_are_their_strings():
    assert Status.PROVED == "proved" and {"proved": 1}[Status.PROVED] == 1 and f"{Status.REFUTED}" == "refuted"
    assert json.dumps({"s": Status.CONSISTENT, "v": Verdict.HOLDS_WITH_FIX}) == '{"s": "consistent", "v": "HOLDS WITH FIX"}'
    assert [v.value for v in Verdict] == ["INCONSISTENT", "INCONCLUSIVE", "FAILS", "HOLDS WITH FIX", "HOLDS"]
    assert [v.exit_code for v in Verdict] == [1, 3, 1, 0, 0]
    assert [x.value for x in Layer] == ["symbolic", "solver", "numeric"] and Outcome("holds") is Outcome.HOLDS
    assert [s.finished for s in Status] == [True, True, True, False, False, True]
    ev = Evidence(layer="solver", status="proved")
    assert ev.status is Status.PROVED and ev.outcome is Outcome.HOLDS and ev.to_dict()["status"] == "proved"


def _solver(status: str, **prov) -> Evidence:
    return Evidence(layer="solver", status=status, summary="s", solver=SolverProvenance(**prov))


def test_z3_only_unsat_is_not_proved_from_the_typed_slot():
    ev = _second_way_required(_solver("proved", z3_only=["|S| > A at v = 1"]))
    assert ev.status == "inconclusive" and "z3 only" in ev.summary
    # the display numbers are not read: an empty typed slot with a scary display stays proved
    ev = _solver("proved")
    ev.numbers = {"second_way": {"neither": ["not read"]}}
    assert _second_way_required(ev).status == "proved"


def test_a_solver_proved_without_provenance_is_not_proved():
    ev = _second_way_required(Evidence(layer="solver", status="proved", summary="UNSAT"))
    assert ev.status == "inconclusive" and "without provenance" in ev.summary


def test_solver_disagreement_is_inconsistent_from_the_typed_slot():
    sym = Evidence(layer="symbolic", status="proved")
    verdict, reason = aggregate([sym, _solver("proved", disagreements=["ob 3"], farkas_rechecked=["ob 3"])], None)
    assert verdict is Verdict.INCONSISTENT and "ob 3" in reason
    verdict, _ = aggregate([sym, _solver("proved", farkas_rechecked=["ob 3"])], None)
    assert verdict is Verdict.HOLDS


def test_provenance_merge_labels_and_counts():
    a = SolverProvenance(obligations=2, farkas_rechecked=["x"], cvc5_agrees=1)
    b = SolverProvenance(solvers=["z3", "cvc5"], obligations=3, z3_only=["y"], cvc5_unknown=2)
    m = a.merged(b, "V = 2: ")
    assert (m.solvers, m.obligations, m.farkas_rechecked, m.z3_only, m.cvc5_agrees, m.cvc5_unknown) == (
        ["z3", "cvc5"], 5, ["x"], ["V = 2: y"], 1, 2)


def test_settings_are_one_frozen_object_made_current_per_check():
    assert current_settings() == Context()
    with using(Context(certify=False, second_opinion="never")) as s:
        assert current_settings() is s
    assert current_settings().certify is True
    with pytest.raises(ValueError, match="second_opinion"):
        Context(second_opinion="sometimes")
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        Context().seed = 3  # type: ignore[misc]
