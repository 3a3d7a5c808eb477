"""core/verdicts.py rule by rule, each asserted by the value it must give: the verdict order against every other
verdict and against plain strings, the tables (rank, exit code, meaning), ``parse``, the second-way rule on every
layer and status, every reason ``aggregate`` can give, ``depends_on``, the parts (``part_verdict``, ``with_parts``,
``only_part_verdict``) and ``verify all``'s expectation check.  tests/core/test_verdicts.py holds the whole truth
table of ``aggregate``; this file pins the rest, for the module's mutation pass (tools/mutation.py).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import pytest

from verify.core import verdicts as V
from verify.core.verdicts import (
    FAILS,
    HOLDS,
    HOLDS_WITH_FIX,
    INCONCLUSIVE,
    INCONSISTENT,
    Verdict,
    aggregate,
    depends_on,
    expectation_change,
    layer_verdict,
    only_part_verdict,
    part_verdict,
    second_way_required,
    with_parts,
)
from verify.evidence import Evidence, Outcome, SolverProvenance

ORDER = [HOLDS, HOLDS_WITH_FIX, FAILS, INCONCLUSIVE, INCONSISTENT]  # the better first


def test_every_pair_of_verdicts_compares_by_rank_as_members_and_as_strings():
    for (i, a), (j, b) in itertools.product(enumerate(ORDER), repeat=2):
        for other in (b, b.value):
            assert (a < other, a <= other, a > other, a >= other) == (i < j, i <= j, i > j, i >= j), (a, other)
    assert max(ORDER) is INCONSISTENT and min(ORDER) is HOLDS and sorted(reversed(ORDER)) == ORDER
    # a string that names no verdict compares as a string (Python's fallback), an int not at all
    assert (HOLDS < "a", HOLDS <= "a", HOLDS > "A", HOLDS >= "A") == (True, True, True, True)
    assert (FAILS < "A", FAILS <= "A", FAILS > "a", FAILS >= "a") == (False, False, False, False)
    for op in ("__lt__", "__le__", "__gt__", "__ge__"):
        assert getattr(HOLDS, op)("holds") is NotImplemented and getattr(HOLDS, op)(3) is NotImplemented
    with pytest.raises(TypeError):
        HOLDS < 3  # noqa: B015


def test_the_verdict_tables():
    assert [v.rank for v in ORDER] == [0, 1, 2, 3, 4]
    assert [v.exit_code for v in ORDER] == [0, 0, 1, 3, 1] and (V.EXIT_OK, V.EXIT_FAIL, V.EXIT_USAGE,
                                                                 V.EXIT_INCONCLUSIVE) == (0, 1, 2, 3)
    assert V.VERDICT_EXIT == {"INCONSISTENT": 1, "INCONCLUSIVE": 3, "FAILS": 1, "HOLDS WITH FIX": 0, "HOLDS": 0}
    assert V.VERDICTS == ("INCONSISTENT", "INCONCLUSIVE", "FAILS", "HOLDS WITH FIX", "HOLDS")
    assert HOLDS.meaning == "the statement holds as written"
    assert HOLDS_WITH_FIX.meaning == "the statement holds once the stated repair is applied"
    assert FAILS.meaning == "the statement is false as written; a witness is given"
    assert INCONCLUSIVE.meaning.startswith("at least one check did not finish") and "not a pass" in INCONCLUSIVE.meaning
    assert INCONSISTENT.meaning.startswith("two independent checks disagree") and "shown first" in INCONSISTENT.meaning


def test_parse_reads_exact_verdict_strings_only():
    assert Verdict.parse("HOLDS WITH FIX", "x") is HOLDS_WITH_FIX and Verdict.parse(FAILS, "x") is FAILS
    for bad in ("holds", "HOLDS ", "", 3, None, ["HOLDS"]):
        with pytest.raises(ValueError) as e:
            Verdict.parse(bad, "expect.txt line 2")
        assert str(e.value) == (f"expect.txt line 2: {bad!r} is not a verdict; valid: INCONSISTENT, INCONCLUSIVE, "
                                "FAILS, HOLDS WITH FIX, HOLDS")


STATUSES = ["proved", "proved (idealised)", "refuted", "consistent", "inconclusive", "error", "skipped"]
LAYERS = ["symbolic", "solver", "numeric", "kernel"]


def _ev(layer: str, status: str, **kw) -> Evidence:
    outcome = kw.pop("outcome", "holds" if status == "consistent" else None)
    return Evidence(layer=layer, status=status, outcome=outcome, summary="base", **kw)


def test_the_second_way_rule_touches_only_a_solver_proved():
    for layer, status in itertools.product(LAYERS, STATUSES):
        ev = _ev(layer, status)
        before = (ev.status, ev.outcome, ev.summary)
        out = second_way_required(ev)
        assert out is ev
        if layer == "solver" and status == "proved":
            assert (out.status, out.outcome) == ("inconclusive", None)
            assert out.summary == ("a solver 'proved' without provenance (build solver evidence with "
                                   "verify.solver.common.solver_evidence); base")
        else:
            assert (out.status, out.outcome, out.summary) == before, (layer, status)
    z3 = second_way_required(_ev("solver", "proved", solver=SolverProvenance(z3_only=["|S| > A", "b"])))
    assert (z3.status, z3.outcome) == ("inconclusive", None)
    assert z3.summary == ("UNSAT from z3 only on 2 obligation(s) (no re-checked certificate, cvc5 did not confirm), "
                          "e.g. '|S| > A'; base")
    fine = second_way_required(_ev("solver", "proved", solver=SolverProvenance(farkas_rechecked=["a"])))
    assert (fine.status, fine.summary) == ("proved", "base")
    refuted = second_way_required(_ev("solver", "refuted", solver=SolverProvenance(z3_only=["a"])))
    assert refuted.status == "refuted"


def test_what_one_layer_says():
    table = {("proved", None): HOLDS, ("proved", "fix"): HOLDS_WITH_FIX, ("refuted", None): FAILS,
             ("refuted", "fix"): FAILS, ("inconclusive", None): INCONCLUSIVE, ("error", "fix"): INCONCLUSIVE,
             ("proved (idealised)", ""): HOLDS}
    for (status, fix), want in table.items():
        assert layer_verdict(_ev("symbolic", status), fix) is want
    assert layer_verdict(_ev("numeric", "consistent", outcome="fails"), "fix") is FAILS
    assert layer_verdict(_ev("numeric", "consistent", outcome="holds"), "fix") is HOLDS_WITH_FIX
    torn = _ev("solver", "refuted", solver=SolverProvenance(disagreements=["ob"]))
    assert layer_verdict(torn, None) is INCONSISTENT
    assert layer_verdict(_ev("solver", "inconclusive", solver=SolverProvenance()), None) is INCONCLUSIVE


def test_every_reason_aggregate_gives():
    sym, num = _ev("symbolic", "proved"), _ev("numeric", "consistent", outcome="fails")
    cases = [
        ([], None, (INCONCLUSIVE, "no layer ran")),
        ([_ev("kernel", "skipped")], None, (INCONCLUSIVE, "no layer ran")),
        ([sym, _ev("numeric", "error"), _ev("kernel", "inconclusive")], None,
         (INCONCLUSIVE, "not every layer finished: numeric error, kernel inconclusive")),
        ([sym, num], None, (INCONSISTENT, "layers disagree: symbolic say holds, numeric say fails")),
        ([sym, _ev("solver", "refuted", solver=SolverProvenance(disagreements=["a", "b", "c"])),
          _ev("numeric", "inconclusive", solver=SolverProvenance(disagreements=["d"]))], None,
         (INCONSISTENT, "solvers disagree (z3 vs cvc5) on solver: a, b; numeric: d")),
        ([sym, num], None, (INCONSISTENT, "layers disagree: symbolic say holds, numeric say fails")),
        ([sym, _ev("kernel", "refuted")], "fix", (INCONSISTENT, "layers disagree: symbolic say holds, kernel say fails")),
        ([num, _ev("kernel", "refuted")], None,
         (FAILS, "every layer that ran finds the statement false: numeric, kernel; kernel-checked in Coq for every size")),
        ([num], None, (FAILS, "every layer that ran finds the statement false: numeric")),
        ([sym, _ev("kernel", "proved")], None, (HOLDS, "every layer that ran supports the statement: symbolic, kernel; "
                                                       "kernel-checked in Coq for every size")),
        ([sym, _ev("kernel", "proved (idealised)")], "W_K = 0",
         (HOLDS_WITH_FIX, "holds with fix: W_K = 0; kernel-checked in Coq only under an idealisation (proved "
                          "(idealised))")),
        ([sym, _ev("kernel", "skipped")], "", (HOLDS, "every layer that ran supports the statement: symbolic")),
        ([sym, _ev("symbolic", "proved (idealised)")], None,
         (HOLDS, "every layer that ran supports the statement: symbolic, symbolic")),
        ([_ev("solver", "refuted"), _ev("symbolic", "refuted")], "fix",
         (FAILS, "every layer that ran finds the statement false: solver, symbolic")),
    ]
    for evidence, fix, want in cases:
        assert aggregate(evidence, fix) == want, (evidence, fix)
    assert aggregate([sym, num, _ev("kernel", "proved")], None, layers_check_parts=True) == (
        FAILS, "the part of the statement that numeric checks is false (the part symbolic, kernel checks holds); "
               "kernel-checked in Coq for every size")
    assert aggregate([sym, num], "fix", layers_check_parts=True) == (
        FAILS, "the part of the statement that numeric checks is false (the part symbolic checks holds)")


def _dep(layer: str, values: dict[str, str], option: str = "convention", **extra) -> Evidence:
    return _ev(layer, "inconclusive", numbers={"depends_on": {"option": option, "values": values, **extra}})


def test_a_verdict_that_depends_on_an_option():
    values = {"query-key": "fails", "key-query": "holds"}
    two = [_ev("numeric", "consistent", outcome="holds"), _dep("symbolic", values, label="score convention"),
           _dep("solver", dict(reversed(list(values.items()))), label="score convention")]
    assert depends_on(two, None) == ("score convention", "convention", "query-key FAILS, key-query HOLDS")
    assert depends_on(two, "fix") == ("score convention", "convention", "query-key FAILS, key-query HOLDS WITH FIX")
    assert aggregate(two, "fix") == (INCONCLUSIVE, "depends on the score convention (--convention): query-key FAILS, "
                                                   "key-query HOLDS WITH FIX (symbolic, solver); the text does not fix one")
    assert depends_on([_dep("solver", {"a": "maybe"})], None) == ("convention", "convention", "a maybe")
    assert depends_on([_dep("solver", values), _dep("numeric", values, option="orientation")], None) is None
    assert depends_on([_dep("solver", values), _dep("numeric", {"query-key": "fails"})], None) is None
    assert depends_on([_dep("solver", values), _ev("numeric", "error")], None) is None
    assert depends_on([_ev("solver", "proved", solver=SolverProvenance(farkas_rechecked=["a"]))], None) is None
    assert depends_on([], None) is None
    skipped = _ev("numeric", "skipped", numbers={"depends_on": {"option": "other", "values": {"x": "holds"}}})
    assert depends_on([_dep("solver", values), skipped], None) == ("convention", "convention",
                                                                   "query-key FAILS, key-query HOLDS")
    assert aggregate([_dep("solver", values), _ev("numeric", "error")], None) == (
        INCONCLUSIVE, "not every layer finished: solver inconclusive, numeric error")


@dataclass
class P:
    name: str
    role: str
    verdict: Verdict
    evidence: str = "e"

    @property
    def severity(self) -> str:
        return "load-bearing" if self.role == "main" else "not load-bearing"


def test_a_part_s_verdict():
    assert [part_verdict(o, f, r) for o, f, r in [(None, "fix", True), ("fails", "fix", True), (Outcome.FAILS, None, True),
                                                  ("holds", "fix", True), ("holds", "fix", False), ("holds", None, True),
                                                  (Outcome.HOLDS, "", True)]] == [
        INCONCLUSIVE, FAILS, FAILS, HOLDS_WITH_FIX, HOLDS, HOLDS, HOLDS]


def test_the_claim_with_its_parts():
    assert with_parts(HOLDS, "r", [P("a", "main", HOLDS), P("b", "detail", INCONCLUSIVE)]) == (HOLDS, "r")
    assert with_parts(INCONCLUSIVE, "r", []) == (INCONCLUSIVE, "r")
    parts = [P("formula", "main", HOLDS_WITH_FIX, "ok"), P("minimiser", "detail", FAILS, "x = 2")]
    assert with_parts(HOLDS_WITH_FIX, "holds with fix: f", parts) == (
        FAILS, "part failing: minimiser, not load-bearing; the paper's main conclusion, formula, stands; "
               "minimiser: FAILS (x = 2); formula: HOLDS WITH FIX (ok)")
    assert with_parts(HOLDS, "r", [P("m", "main", FAILS, "w"), P("s", "detail", HOLDS, "v")]) == (
        FAILS, "part failing: m, load-bearing; the paper's main conclusion does not stand; m: FAILS (w); s: HOLDS (v)")
    assert with_parts(INCONCLUSIVE, "not every layer finished: numeric error", [P("m", "main", INCONCLUSIVE),
                                                                               P("s", "detail", FAILS)]) == (
        INCONCLUSIVE, "not every layer finished: numeric error; part failing: s, not load-bearing; the paper's main "
                      "conclusion is undecided")
    assert with_parts(FAILS, "r", [P("s", "detail", FAILS), P("t", "detail", FAILS)]) == (
        FAILS, "r; part failing: s, not load-bearing; t, not load-bearing; the paper's main conclusion is undecided")
    assert with_parts(INCONSISTENT, "r", [P("m1", "main", HOLDS), P("m2", "main", HOLDS_WITH_FIX),
                                          P("s", "detail", FAILS)]) == (
        INCONSISTENT, "r; part failing: s, not load-bearing; the paper's main conclusion, m1, m2, stands")


def test_a_run_judged_on_one_part():
    got = {(a, b): only_part_verdict(a, b) for a, b in itertools.product(ORDER, ORDER)}
    assert all(v is (a if a in (INCONCLUSIVE, INCONSISTENT) else b) for (a, b), v in got.items())
    assert only_part_verdict(FAILS, HOLDS) is HOLDS and only_part_verdict(INCONCLUSIVE, FAILS) is INCONCLUSIVE


def test_verify_all_fails_on_a_changed_or_missing_expectation():
    assert expectation_change("ws24:theorem2[transposed]", FAILS, HOLDS) == "ws24:theorem2[transposed]: FAILS -> HOLDS"
    assert expectation_change("c", None, HOLDS) == "c: no expectation recorded (got HOLDS)"
    assert [expectation_change("c", a, b) for a, b in itertools.product(ORDER, ORDER)].count(None) == 5
    assert all(expectation_change("c", v, v) is None for v in ORDER)
    assert expectation_change("c", HOLDS, HOLDS_WITH_FIX) == "c: HOLDS -> HOLDS WITH FIX"


# ----------------------------------------------------------------------------- survivors of the mutation pass, killed


def test_a_kernel_layer_that_is_only_consistent_is_not_kernel_checked():
    """Kills ``e.status == PROVED_IDEALISED`` -> ``<=`` (a consistent kernel result would read as idealised)."""
    sym = _ev("symbolic", "proved")
    assert aggregate([sym, _ev("kernel", "consistent", outcome="holds")], None) == (
        HOLDS, "every layer that ran supports the statement: symbolic, kernel")


def test_the_label_is_the_first_unfinished_layer_s():
    """Kills ``deps[0].get("label", ...)`` -> ``deps[-1]``: the layers agree on the option and its answers; the label
    is read from the first."""
    values = {"a": "fails", "b": "holds"}
    assert depends_on([_dep("symbolic", values, label="score convention"), _dep("solver", values)], None) == (
        "score convention", "convention", "a FAILS, b HOLDS")
    assert depends_on([_dep("symbolic", values), _dep("solver", values, label="x")], None)[0] == "convention"


def test_main_parts_are_those_whose_role_is_main():
    """Kills ``p.role == "main"`` -> ``is`` (a role read from a file is not the interned literal) and -> ``<=`` (the
    role 'detail' sorts before 'main')."""
    main = "".join(["ma", "in"])
    assert with_parts(FAILS, "r", [P("m", main, HOLDS), P("d", "detail", FAILS)])[1] == (
        "r; part failing: d, not load-bearing; the paper's main conclusion, m, stands")
    assert with_parts(FAILS, "r", [P("d", "detail", FAILS), P("e", "detail", HOLDS)])[1] == (
        "r; part failing: d, not load-bearing; the paper's main conclusion is undecided")


def test_failing_parts_are_named_first_and_only_they():
    """Kills the sort key ``p.verdict != FAILS`` -> ``<`` (an undecided part listed before a failing one would move
    ahead with it)."""
    parts = [P("u", "detail", INCONCLUSIVE, "x"), P("f", "main", FAILS, "y"), P("h", "detail", HOLDS, "z")]
    assert with_parts(HOLDS_WITH_FIX, "r", parts)[1] == (
        "part failing: f, load-bearing; the paper's main conclusion does not stand; f: FAILS (y); u: INCONCLUSIVE (x); "
        "h: HOLDS (z)")
