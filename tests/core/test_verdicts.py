"""Typed results: the enums read as their strings everywhere, the verdict order and exit codes, and the
solver provenance rules the verdict logic applies from the typed slot (not from display numbers)."""

from __future__ import annotations

import itertools
import json

import pytest

from verify.core.model import Verdict, aggregate
from verify.core.verdicts import second_way_required
from verify.evidence import Context, Evidence, Layer, Outcome, SolverProvenance, Status, current_settings, using


def test_enums_are_their_strings():
    assert Status.PROVED == "proved" and {"proved": 1}[Status.PROVED] == 1 and f"{Status.REFUTED}" == "refuted"
    assert json.dumps({"s": Status.CONSISTENT, "v": Verdict.HOLDS_WITH_FIX}) == '{"s": "consistent", "v": "HOLDS WITH FIX"}'
    assert [v.value for v in Verdict] == ["INCONSISTENT", "INCONCLUSIVE", "FAILS", "HOLDS WITH FIX", "HOLDS"]
    assert [v.exit_code for v in Verdict] == [1, 3, 1, 0, 0]
    assert [x.value for x in Layer] == ["symbolic", "solver", "numeric", "kernel"] and Outcome("holds") is Outcome.HOLDS
    assert [s.finished for s in Status] == [True, True, True, True, False, False, True]
    assert Evidence(layer="kernel", status="proved (idealised)").outcome is Outcome.HOLDS
    ev = Evidence(layer="solver", status="proved")
    assert ev.status is Status.PROVED and ev.outcome is Outcome.HOLDS and ev.to_dict()["status"] == "proved"


def _solver(status: str, **prov) -> Evidence:
    return Evidence(layer="solver", status=status, summary="s", solver=SolverProvenance(**prov))


def test_z3_only_unsat_is_not_proved_from_the_typed_slot():
    ev = second_way_required(_solver("proved", z3_only=["|S| > A at v = 1"]))
    assert ev.status == "inconclusive" and "z3 only" in ev.summary
    # the display numbers are not read: an empty typed slot with a scary display stays proved
    ev = _solver("proved")
    ev.numbers = {"second_way": {"neither": ["not read"]}}
    assert second_way_required(ev).status == "proved"


def test_a_solver_proved_without_provenance_is_not_proved():
    ev = second_way_required(Evidence(layer="solver", status="proved", summary="UNSAT"))
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
    assert current_settings().replace(claim_jobs=None) == Context()  # the suite runs claims in-process (conftest)
    with using(Context(certify=False, second_opinion="never")) as s:
        assert current_settings() is s
    assert current_settings().certify is True
    with pytest.raises(ValueError, match="second_opinion"):
        Context(second_opinion="sometimes")
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        Context().seed = 3  # type: ignore[misc]


# ---------------------------------------------------------------------------------------------------------------------
# The whole truth table of aggregate.  Every layer takes every (status, outcome) pair Evidence accepts
# (derived from the enums, so a new status or layer is covered without editing this test), the solver layer also a
# 'proved' and an 'inconclusive' carrying a z3/cvc5 disagreement, and the claim is run with and without a fix.  The
# expected verdict is not re-implemented rule by rule: every verdict whose condition holds (src/verify/core/model.py's module
# docstring) is a candidate, and the documented order INCONSISTENT > INCONCLUSIVE > FAILS > HOLDS WITH FIX > HOLDS
# picks the first.


def _layer_options(layer: str) -> list[Evidence | None]:
    """Every distinct (status, outcome) pair a layer can report, as Evidence (None: the layer is absent from the list)."""
    seen: dict[tuple[str, str | None], Evidence] = {}
    for status in Status:
        for outcome in (None, *Outcome):
            try:
                ev = Evidence(layer=layer, status=status, outcome=outcome, summary=f"{layer} {status} {outcome}",
                              solver=SolverProvenance() if layer == "solver" else None)
            except ValueError:
                continue
            seen.setdefault((ev.status, ev.outcome), ev)
    options: list[Evidence | None] = list(seen.values())
    if layer == "solver":
        options += [Evidence(layer="solver", status=s, summary="split", solver=SolverProvenance(disagreements=["ob 7"]))
                    for s in ("proved", "inconclusive")]
    return options + [None]


_OPTIONS = {layer.value: _layer_options(layer.value) for layer in Layer}
_ORDER = [Verdict.INCONSISTENT, Verdict.INCONCLUSIVE, Verdict.FAILS, Verdict.HOLDS_WITH_FIX, Verdict.HOLDS]


def _expected(evidence: list[Evidence], fix: str | None) -> Verdict:
    ran = [e for e in evidence if e.status != "skipped"]
    outcomes = {e.outcome for e in ran if e.outcome is not None}
    candidates = set()
    if any(e.solver is not None and e.solver.disagreements for e in ran) or outcomes == {"holds", "fails"}:
        candidates.add(Verdict.INCONSISTENT)
    if not ran or any(not e.status.finished for e in ran):
        candidates.add(Verdict.INCONCLUSIVE)
    if "fails" in outcomes:
        candidates.add(Verdict.FAILS)
    candidates.add(Verdict.HOLDS_WITH_FIX if fix else Verdict.HOLDS)
    return next(v for v in _ORDER if v in candidates)


def _table():
    for combo in itertools.product(*_OPTIONS.values()):
        for fix in (None, "mask the diagonal"):
            yield [e for e in combo if e is not None], fix


def test_truth_table_covers_every_status_of_every_layer():
    pairs = {(e.status.value, e.outcome and e.outcome.value) for e in _OPTIONS["numeric"] if e is not None}
    assert pairs == {("proved", "holds"), ("proved (idealised)", "holds"), ("refuted", "fails"),
                     ("consistent", "holds"), ("consistent", "fails"), ("inconclusive", None), ("error", None),
                     ("skipped", None)}
    assert [len(o) for o in _OPTIONS.values()] == [9, 11, 9, 9]
    assert sum(1 for _ in _table()) == 2 * 9 * 11 * 9 * 9


def test_aggregate_truth_table():
    """Every combination: the documented verdict, and never HOLDS / HOLDS WITH FIX while a layer did not finish,
    refutes or points to 'fails', or while no layer ran.  The reason names what decided it."""
    wrong = []
    for evidence, fix in _table():
        verdict, reason = aggregate(evidence, fix)
        want = _expected(evidence, fix)
        if verdict is not want:
            wrong.append((["%s %s %s" % (e.layer, e.status, e.outcome) for e in evidence], fix, verdict, want))
            continue
        ran = [e for e in evidence if e.status != "skipped"]
        if verdict in (Verdict.HOLDS, Verdict.HOLDS_WITH_FIX):
            assert ran and all(e.status.finished and e.outcome == "holds" for e in ran), (evidence, fix, verdict)
            assert (verdict is Verdict.HOLDS_WITH_FIX) == (fix is not None)
        if verdict is Verdict.INCONCLUSIVE:
            for e in ran:
                if not e.status.finished:
                    assert f"{e.layer} {e.status}" in reason, (reason, evidence)
        kernel = any(e.layer == "kernel" and e.status in ("proved", "refuted") for e in ran)
        decided = verdict in (Verdict.FAILS, Verdict.HOLDS, Verdict.HOLDS_WITH_FIX)
        assert reason.endswith("kernel-checked in Coq for every size") == (kernel and decided), (reason, evidence)
        assert verdict.exit_code == {"HOLDS": 0, "HOLDS WITH FIX": 0, "FAILS": 1, "INCONSISTENT": 1,
                                     "INCONCLUSIVE": 3}[verdict.value]
    assert not wrong, f"{len(wrong)} combinations aggregate wrongly, e.g. {wrong[:3]}"


def test_named_cases_of_the_table():
    """The cases the table exists for, spelled out: fp26:fingerprint's shape (symbolic proved, numeric inconclusive)
    is INCONCLUSIVE, a refutation beside a proof is INCONSISTENT whatever layer proved, skipped layers do not count."""
    sym, num_unknown = Evidence(layer="symbolic", status="proved"), Evidence(layer="numeric", status="inconclusive")
    assert aggregate([sym, num_unknown], None)[0] is Verdict.INCONCLUSIVE
    assert aggregate([sym, num_unknown], "fix")[0] is Verdict.INCONCLUSIVE
    kern = Evidence(layer="kernel", status="proved")
    refuted = Evidence(layer="numeric", status="refuted")
    assert aggregate([kern, refuted], None)[0] is Verdict.INCONSISTENT
    assert aggregate([Evidence(layer="kernel", status="skipped"), refuted], "fix")[0] is Verdict.FAILS
    assert aggregate([Evidence(layer=x, status="skipped") for x in ("symbolic", "kernel")], None)[0] is Verdict.INCONCLUSIVE


def test_verdicts_are_ordered_worst_last():
    """The documented order is a rank; the aggregation's verdict is the maximum of what each layer says."""
    from verify.core.model import layer_verdict

    assert sorted(Verdict) == [Verdict.HOLDS, Verdict.HOLDS_WITH_FIX, Verdict.FAILS, Verdict.INCONCLUSIVE,
                               Verdict.INCONSISTENT] == _ORDER[::-1]
    assert [v.rank for v in _ORDER] == [4, 3, 2, 1, 0]
    assert max([Verdict.HOLDS, Verdict.INCONCLUSIVE, Verdict.FAILS]) is Verdict.INCONCLUSIVE
    assert Verdict.FAILS > "HOLDS WITH FIX" and "INCONSISTENT" > Verdict.INCONCLUSIVE  # a verdict's string reads as it
    for evidence, fix in _table():
        ran = [e for e in evidence if e.status is not Status.SKIPPED]
        split = {e.outcome for e in ran} >= {Outcome.HOLDS, Outcome.FAILS}
        says = [layer_verdict(e, fix) for e in ran] + [Verdict.INCONSISTENT] * split
        assert aggregate(evidence, fix)[0] is max(says, default=Verdict.INCONCLUSIVE)


def test_evidence_fields_hold_the_enums():
    for status in Status:
        for outcome in (None, *Outcome, "holds", "fails"):
            try:
                ev = Evidence(layer="numeric", status=status.value, outcome=outcome)
            except ValueError:
                continue
            assert type(ev.layer) is Layer and type(ev.status) is Status
            assert ev.outcome is None or type(ev.outcome) is Outcome
    with pytest.raises(ValueError, match="unknown status"):
        Evidence(layer="numeric", status="prooved")
    with pytest.raises(ValueError, match="must say which outcome"):
        Evidence(layer="numeric", status="consistent", outcome="hold")


def _claim(**kw):
    import dataclasses

    from verify.core.model import Claim, Params, param

    @dataclasses.dataclass(frozen=True)
    class DemoParams(Params):
        orientation: str = param("as-written", "which way", choices=("as-written", "transposed"), variant=True)
        d: int = param(4, "width", kind="int", minimum=1)

    return Claim(id="demo:thm", title="t", source="s", statement="x", options=(), checks={}, params_type=DemoParams,
                 **kw)


def test_expected_verdicts_are_checked_when_the_claim_is_built():
    c = _claim(expected={"as-written": "FAILS", "transposed": Verdict.HOLDS})
    assert c.expected == {"as-written": Verdict.FAILS, "transposed": Verdict.HOLDS}
    assert type(c.expected["as-written"]) is Verdict and c.expected_verdict("as-written") is Verdict.FAILS
    assert c.expected_verdict("nowhere") is None
    with pytest.raises(ValueError, match=r"claim demo:thm: expected\['as-written'\]: 'HOLD' is not a verdict"):
        _claim(expected={"as-written": "HOLD"})
    with pytest.raises(ValueError, match=r"claim demo:thm: expected\['sideways'\] names no variant"):
        _claim(expected={"sideways": "HOLDS"})
    with pytest.raises(ValueError, match=r"expected\[''\] names no variant"):
        _claim(expected={"": "HOLDS"})
    from verify.core import registry

    for claim in registry.all_claims():  # every registered expectation is a Verdict of a variant the claim has
        assert all(type(v) is Verdict for v in claim.expected.values()), claim.id


def test_claim_result_verdict_is_a_verdict():
    from verify.core.model import ClaimResult

    c = _claim()
    r = ClaimResult(c, {"orientation": "as-written", "d": 4}, "FAILS", "r", [], None, expected="HOLDS")
    assert r.verdict is Verdict.FAILS and r.expected is Verdict.HOLDS and r.exit_code == 1
    with pytest.raises(ValueError, match="demo:thm: verdict: 'FAIL' is not a verdict"):
        ClaimResult(c, {}, "FAIL", "r", [], None)


def test_no_status_or_layer_string_literal_where_the_enum_is_meant():
    """src/, kernel/ and proofs/ build Evidence with the enums (Status.PROVED, Layer.KERNEL), never their strings."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parent
    while not (root / "pyproject.toml").exists():
        root = root.parent
    # (a docstring quoting one in ``...`` is not code)
    literal = re.compile(r"(?<!`)\b(?:status|layer|outcome)\s*=\s*[\"'](?:%s)[\"']"
                         % "|".join([*(s.value for s in Status), *(x.value for x in Layer), *(o.value for o in Outcome)]))
    found = [f"{p.relative_to(root)}:{n}: {line.strip()}"
             for folder in ("src", "kernel", "proofs") for p in sorted((root / folder).rglob("*.py"))
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if literal.search(line)]
    assert not found, "\n".join(found)


def test_one_error_root_mapped_to_exit_codes_in_one_place(monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]):
    from verify.core.model import InconclusiveError, InputError, VerifyError
    from verify.frontends import cli
    from verify.proofs.pr26.alpha import Inconclusive

    assert issubclass(InputError, VerifyError) and issubclass(InputError, ValueError)
    assert issubclass(Inconclusive, InconclusiveError) and issubclass(InconclusiveError, VerifyError)
    assert cli.error_exit_code(InputError("x")) == 2 and cli.error_exit_code(Inconclusive("r", "m")) == 3

    class Unmapped(VerifyError):
        pass

    assert cli.error_exit_code(Unmapped("x")) is None

    def raising(exc):
        def fn(*a, **k):
            raise exc
        return fn

    monkeypatch.setattr(cli.cli, "main", raising(Inconclusive("fit diverged", "no alpha measured")))
    assert cli.main(["list"]) == 3
    assert capsys.readouterr().err == "verify: error: no alpha measured\n"
    monkeypatch.setattr(cli.cli, "main", raising(InputError("bad --d")))
    assert cli.main(["list"]) == 2
    monkeypatch.setattr(cli.cli, "main", raising(Unmapped("a defect")))
    with pytest.raises(Unmapped):
        cli.main(["list"])


def test_layers_checking_different_parts_do_not_contradict_each_other():
    """fp26's symbolic layer checks the algebra and its numeric layer the toy training: the algebra proved and the
    toy failing is FAILS (the part that fails named), not INCONSISTENT; a claim whose layers check the same
    statement still calls that split INCONSISTENT (the fault: the flag ignored), and a solver contradiction stays
    INCONSISTENT either way."""
    sym = Evidence(layer="symbolic", status="proved")
    num = Evidence(layer="numeric", status="consistent", outcome="fails")
    verdict, reason = aggregate([sym, num], None, layers_check_parts=True)
    assert verdict is Verdict.FAILS and "numeric checks is false" in reason and "symbolic checks holds" in reason
    assert aggregate([sym, num], None)[0] is Verdict.INCONSISTENT
    sol = _solver("proved", disagreements=["ob 3"], farkas_rechecked=["ob 3"])
    assert aggregate([sym, sol], None, layers_check_parts=True)[0] is Verdict.INCONSISTENT
    assert aggregate([sym, Evidence(layer="numeric", status="consistent", outcome="holds")], None,
                     layers_check_parts=True)[0] is Verdict.HOLDS


def test_fp26_parts_name_the_failing_part():
    from verify.core.model import finish_claim
    from verify.core.registry import get

    claim = get("fp26:fingerprint")
    p = claim.parse_params({})
    sym = Evidence(layer="symbolic", status="proved")
    num = Evidence(layer="numeric", status="consistent", outcome="fails")
    res = finish_claim(claim, p, [sym, num])
    assert res.verdict is Verdict.FAILS
    assert [(x.name, x.verdict) for x in res.parts] == [("algebra", Verdict.HOLDS), ("toy training", Verdict.FAILS)]
    res = finish_claim(claim, p, [sym, Evidence(layer="numeric", status="inconclusive")])
    assert res.verdict is Verdict.INCONCLUSIVE and res.parts[1].verdict is Verdict.INCONCLUSIVE


def test_layers_check_parts_needs_parts():
    import dataclasses

    from verify.core.registry import get

    with pytest.raises(ValueError, match="layers_check_parts needs parts"):
        dataclasses.replace(get("fp26:fingerprint"), parts=())
