"""kernel/check.py, the step from a kernel build to the kernel layer's Evidence, on hand-made builds (no Coq): each
status rule, each refusal and the texts a verdict prints, asserted by value (the mutation pass of kernel/check.py
runs against this file; tests/kernel/test_kernel.py checks the same rules on real Coq builds)."""

from __future__ import annotations

import pytest

from verify.evidence import Context, Status
from verify.kernel import check as K
from verify.kernel.driver import Build, KernelUnavailable, TheoremFact
from verify.kernel.spec import KernelStatement as S

PROVES = S("x:y", "v", "T", "t", "proves", "reads t", covers=("L",))
REFUTES = S("x:y", "v", "T", "r", "refutes", "reads r", covers=("L",), hypothesis="an orthonormal pair",
            tag="orthonormal")
IDEAL = S("x:y", "v", "U", "i", "proves", "reads i", covers=("L", "d"), hypothesis="orthonormal tokens",
          tag="orthonormal, d -> infinity", idealised=True)
PART = S("x:y", "v", "T", "p", "refutes", "reads p", covers=("L",), part="existence")


def _fact(q: str, statement: str = "forall L, P L", assumptions: tuple[str, ...] = ("Classical_Prop.classic",),
          untrusted: tuple[str, ...] = ()) -> TheoremFact:
    return TheoremFact(qualified=q, statement=statement, assumptions=list(assumptions), untrusted=list(untrusted),
                       found=True)


def _build(**over) -> Build:
    b = Build(coq_version="8.16.1", sources={"T": "aaa", "U": "bbb"}, compiled={"T": True, "U": True},
              coqchk={"T": "ok", "U": "ok"}, coqchk_axioms={"T": ["Coq.Logic.Classical_Prop.classic"], "U": []},
              theorems={s.qualified: _fact(s.qualified, f"statement of {s.theorem}") for s in (PROVES, REFUTES,
                                                                                              IDEAL, PART)})
    for k, v in over.items():
        setattr(b, k, v)
    return b


def test_a_proof_is_proved_with_its_certificate_and_texts() -> None:
    ev = K.evidence_from_build(_build(), [PROVES])
    assert ev.status == Status.PROVED and ev.outcome == "holds" and ev.layer == "kernel"
    assert ev.summary == "kernel-checked theorem (Coq 8.16.1, coqchk passed): reads t"
    assert ev.engines == {"coq": "8.16.1"} and ev.bound == "every size the theorem quantifies over"
    assert ev.details == ["Verify.T.t (proves; hypothesis: none beyond the paper's setting): statement of t"]
    assert ev.numbers == {"theorems": "Verify.T.t"}
    assert ev.certificate == {
        "coq_version": "8.16.1", "coqchk": "passed",
        "trusted_base": "Coq's kernel, the standard library's axioms listed under each theorem",
        "theorems": [{"theorem": "Verify.T.t", "role": "proves", "reading": "reads t", "statement": "statement of t",
                      "assumptions": ["Classical_Prop.classic"], "sha256": "aaa",
                      "hypothesis": "none beyond the paper's setting", "tag": "", "idealised": False}]}


def test_a_refutation_wins_and_is_shown_with_its_tag() -> None:
    ev = K.evidence_from_build(_build(), [PROVES, REFUTES])
    assert ev.status == Status.REFUTED and ev.outcome == "fails"
    assert ev.summary == "kernel-checked counterexample, orthonormal (Coq 8.16.1, coqchk passed): reads r"
    assert ev.numbers == {"theorems": "Verify.T.t, Verify.T.r"}
    assert ev.details[1] == "Verify.T.r (refutes; hypothesis: an orthonormal pair): statement of r"


def test_an_idealised_proof_is_proved_idealised_and_shown_first() -> None:
    ev = K.evidence_from_build(_build(), [PROVES, IDEAL])
    assert ev.status == Status.PROVED_IDEALISED and ev.outcome == "holds"
    assert ev.summary == ("kernel-checked theorem of an idealisation (not of the statement), orthonormal, "
                          "d -> infinity (Coq 8.16.1, coqchk passed): reads i")
    assert ev.certificate["theorems"][1]["idealised"] is True
    assert K.evidence_from_build(_build(), [IDEAL, REFUTES]).status == Status.REFUTED


@pytest.mark.parametrize("over, why", [
    ({"compiled": {"T": False, "U": True}, "errors": {"T": "line 1\nError: boom"}},
     "Verify.T did not compile: Error: boom"),
    ({"compiled": {"U": True}}, "Verify.T did not compile: not in _CoqProject"),
    ({"theorems": {}}, "Verify.T.t does not exist in the compiled theory"),
    ({"coqchk": {"T": "bad universe", "U": "ok"}}, "coqchk refused Verify.T: bad universe"),
    ({"coqchk": {"U": "ok"}}, "coqchk refused Verify.T: not run"),
    ({"coqchk_axioms": {"T": ["Verify.T.cheat"]}}, "coqchk lists axioms of ours in Verify.T: Verify.T.cheat"),
])
def test_each_refusal_is_an_error_naming_it(over: dict, why: str) -> None:
    ev = K.evidence_from_build(_build(**over), [PROVES])
    assert ev.status == Status.ERROR and ev.outcome is None
    assert ev.summary == f"kernel check not accepted: {why}" and ev.details == [why]
    assert ev.engines == {"coq": "8.16.1"}


def test_an_unfound_fact_and_an_assumption_of_ours_are_errors() -> None:
    b = _build()
    b.theorems[PROVES.qualified].found = False
    assert K.evidence_from_build(b, [PROVES]).details == ["Verify.T.t does not exist in the compiled theory"]
    b = _build()
    b.theorems[PROVES.qualified].untrusted = ["T.cheat", "T.other"]
    ev = K.evidence_from_build(b, [PROVES])
    assert ev.status == Status.ERROR and ev.details == ["Verify.T.t rests on assumptions of ours: T.cheat, T.other"]


def test_every_problem_is_listed_not_only_the_first() -> None:
    b = _build(coqchk={"T": "no", "U": "ok"})
    b.theorems[PROVES.qualified].untrusted = ["T.cheat"]
    ev = K.evidence_from_build(b, [PROVES, IDEAL])
    assert ev.details == ["Verify.T.t rests on assumptions of ours: T.cheat", "coqchk refused Verify.T: no"]


def test_a_part_theorem_answers_its_part_and_leaves_the_status_to_the_others() -> None:
    ev = K.evidence_from_build(_build(), [PROVES, PART])
    assert ev.status == Status.PROVED
    assert ev.numbers["parts"] == {"existence": {
        "status": "refuted", "theorem": "Verify.T.p",
        "reading": "kernel-checked counterexample (Coq 8.16.1, coqchk passed): reads p"}}
    alone = K.evidence_from_build(_build(), [PART])
    assert alone.status == Status.SKIPPED and alone.summary == "no kernel statement for this variant"
    assert alone.numbers["parts"]["existence"]["status"] == "refuted"


def test_a_part_at_an_option_its_theorem_does_not_cover_is_skipped() -> None:
    ev = K.evidence_from_build(_build(), [PROVES, PART], changed_options=["d"])
    assert ev.numbers["parts"]["existence"] == {"status": "skipped", "theorem": "Verify.T.p",
                                                "reading": "the theorem does not quantify over --d"}
    assert K.evidence_from_build(_build(), [PROVES, PART], changed_options=["L"]).numbers["parts"]["existence"][
        "status"] == "refuted"


def test_uncovered_options_are_the_changed_ones_some_theorem_misses() -> None:
    assert K.uncovered_options([PROVES, IDEAL], ["L", "d", "m"]) == ["d", "m"]
    assert K.uncovered_options([IDEAL], ["L", "d"]) == []
    assert K.uncovered_options([], ["L"]) == []


def test_check_skips_without_a_statement_or_at_an_uncovered_option(monkeypatch: pytest.MonkeyPatch) -> None:
    ctx = Context(seed=0)
    ev = K.check("no:such", "", [], ctx)
    assert ev.status == Status.SKIPPED and ev.summary == "no kernel statement for this variant"
    monkeypatch.setattr(K, "statements_for", lambda c, v: [PROVES, PART])
    ev = K.check("x:y", "v", ["d"], ctx)
    assert ev.status == Status.SKIPPED and ev.summary == (
        "the kernel theorems do not quantify over --d; they answer the variant at its default values of these "
        "options")

    def unavailable(*a, **k):
        raise KernelUnavailable("no coqc")

    monkeypatch.setattr(K, "cached_build", unavailable)
    ev = K.check("x:y", "v", ["L"], ctx)
    assert ev.status == Status.SKIPPED and ev.summary == K.INSTALL_HINT
    seen = {}

    def fake(statements, cache_dir=None, progress=None):
        seen["cache_dir"] = cache_dir
        return _build()

    monkeypatch.setattr(K, "cached_build", fake)
    ev = K.check("x:y", "v", ["L"], ctx, cache_dir="/tmp/k")
    assert ev.status == Status.PROVED and seen["cache_dir"] == "/tmp/k" and "parts" in ev.numbers


def test_statements_are_looked_up_by_claim_and_variant() -> None:
    got = K.statements_for("ws24:theorem2", "read-score")
    assert [s.theorem for s in got] == ["theorem2_read_score_near"]
    assert K.statements_for("ws24:theorem2", "no-such") == []
    by_variant = K.kernel_statements("ws24:theorem2")
    assert sorted(by_variant) == ["as-written", "read-score", "transposed"]
    assert [s.theorem for s in by_variant["transposed"]] == ["theorem2_transposed_refuted"]


def test_every_statement_s_problem_is_listed() -> None:
    """Two theorems in two theories, neither compiled (or neither found): both named (kills the 'continue' after
    each of these problems -> 'break', which stops at the first statement)."""
    ev = K.evidence_from_build(_build(compiled={}), [PROVES, IDEAL])
    assert ev.details == ["Verify.T did not compile: not in _CoqProject", "Verify.U did not compile: not in _CoqProject"]
    ev = K.evidence_from_build(_build(theorems={}), [PROVES, IDEAL])
    assert ev.details == ["Verify.T.t does not exist in the compiled theory",
                          "Verify.U.i does not exist in the compiled theory"]


def test_a_build_read_back_from_its_cache_file_is_accepted() -> None:
    """The cache stores the build as JSON: its 'ok' strings are new objects (kills != 'ok' -> is not 'ok')."""
    b = Build.from_json(_build().to_json())
    assert b.coqchk["T"] == "ok" and K.evidence_from_build(b, [PROVES]).status == Status.PROVED


def test_a_role_spelled_at_run_time_is_read_by_value() -> None:
    """A claim pack may build its catalog entries from text: a 'refutes' made at run time refutes (kills == 'refutes'
    -> is 'refutes')."""
    role = "".join(["re", "futes"])
    assert role == "refutes" and role is not "refutes"  # noqa: F632 - the point: equal, another object
    dyn = S("x:y", "v", "T", "r", role, "reads r")
    assert K.evidence_from_build(_build(), [dyn]).status == Status.REFUTED


def test_the_first_theorem_is_the_one_shown() -> None:
    """Two counterexamples: the first is shown; two proofs: the first (kills refuting[0] -> [-1] and rows[0] ->
    rows[-1])."""
    other_r = S("x:y", "v", "T", "p", "refutes", "reads p")
    assert K.evidence_from_build(_build(), [REFUTES, other_r]).summary.endswith(": reads r")
    other_p = S("x:y", "v", "T", "p", "proves", "reads p as a proof")
    assert K.evidence_from_build(_build(), [PROVES, other_p]).summary.endswith(": reads t")


def test_show_lists_one_claim_s_statements_only() -> None:
    """kvshift24:decode's variants, and no other claim's (kills s.claim == claim_id -> >=, which adds every claim
    sorting after it)."""
    assert sorted(K.kernel_statements("kvshift24:decode")) == [
        "mixed-key,correct,correct", "raw-key,correct,correct", "raw-key,correct,off-by-one", "raw-key,zero,correct",
        "unwritten-first,correct,correct"]
