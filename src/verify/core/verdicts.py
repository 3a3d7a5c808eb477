"""Verdicts and the rules that reach one: the verdict aggregation of the trusted base.

A claim variant's verdict comes from its layers' evidence by one documented maximum.  Verdicts are ordered, the
worst first (:attr:`Verdict.rank`; INCONSISTENT is always an error and shown first):

    INCONSISTENT > INCONCLUSIVE > FAILS > HOLDS WITH FIX > HOLDS

and the claim's verdict is the maximum (the worst) of what each layer that ran says, as CrossHair reports the worst
of its message kinds (a layer that did not finish outranks a failure: a claim is never reported FAILS on the layers
that happened to finish while another layer is unknown).  What one layer says (skipped layers say nothing):

1. two solvers that contradict each other on an obligation (``Evidence.solver.disagreements``) -> INCONSISTENT;
2. ``error`` or ``inconclusive`` -> INCONCLUSIVE (a layer that did not finish is never dropped, so a claim cannot
   pass on the layers that happened to run);
3. outcome ``fails`` -> FAILS;
4. outcome ``holds`` -> HOLDS, or HOLDS WITH FIX when the variant is a repair.

Two layers whose outcomes disagree (one says holds, another fails) add INCONSISTENT; when no layer ran the verdict
is INCONCLUSIVE (the maximum of nothing).  A solver 'proved' resting on z3 alone is downgraded to inconclusive
(:func:`second_way_required`).  A claim with parts has a verdict per part (:func:`part_verdict`); the claim FAILS
when any part fails (:func:`with_parts`).  Each verdict has one exit code (:attr:`Verdict.exit_code`, the README's
table), and ``verify all`` fails on a verdict that differs from its expectation (:func:`expectation_change`).

This module is in the mutation-tested trusted base (tools/mutation.py, tests/core/test_verdict_rules.py): a one-line
fault here must fail a test.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from verify.evidence import Evidence, Layer, Outcome, Status, _StrEnum

if TYPE_CHECKING:  # the part results are made in verify.core.model, which imports this module
    from verify.core.model import PartResult


class Verdict(_StrEnum):
    """A claim variant's verdict, declared in the order reports list them (the worst first).

    Verdicts are ordered by :attr:`rank`, the worse the greater (``HOLDS < HOLDS WITH FIX < FAILS <
    INCONCLUSIVE < INCONSISTENT``): :func:`aggregate` reports the maximum over a claim's layers.
    The comparisons read a plain string that names a verdict as that verdict; equality and hashing
    stay those of the string value.
    """

    INCONSISTENT = "INCONSISTENT"
    INCONCLUSIVE = "INCONCLUSIVE"
    FAILS = "FAILS"
    HOLDS_WITH_FIX = "HOLDS WITH FIX"
    HOLDS = "HOLDS"

    @property
    def meaning(self) -> str:
        """One line for the audit legend, the README and ``--help``."""
        return _VERDICT_MEANING[self.value]

    @property
    def exit_code(self) -> int:
        """The exit code of ``verify CLAIM`` for this verdict (the README's exit-code table)."""
        return _VERDICT_EXIT[self.value]

    @property
    def rank(self) -> int:
        """0 for HOLDS up to 4 for INCONSISTENT: the greater, the worse (the module docstring's order)."""
        return _VERDICT_RANK[self.value]

    @classmethod
    def parse(cls, value: object, where: str) -> "Verdict":
        """``value`` as a Verdict (a Verdict or its exact string value).

        Raises:
            ValueError: anything else, naming ``where`` and the valid verdicts.
        """
        if isinstance(value, str) and value in VERDICTS:
            return cls(value)
        raise ValueError(f"{where}: {value!r} is not a verdict; valid: {', '.join(VERDICTS)}")

    def _rank_of(self, other: object) -> int | None:
        return _VERDICT_RANK.get(other) if isinstance(other, str) else None

    def __lt__(self, other: object) -> bool:
        r = self._rank_of(other)
        return NotImplemented if r is None else self.rank < r

    def __le__(self, other: object) -> bool:
        r = self._rank_of(other)
        return NotImplemented if r is None else self.rank <= r

    def __gt__(self, other: object) -> bool:
        r = self._rank_of(other)
        return NotImplemented if r is None else self.rank > r

    def __ge__(self, other: object) -> bool:
        r = self._rank_of(other)
        return NotImplemented if r is None else self.rank >= r


_VERDICT_MEANING = {
    "HOLDS": "the statement holds as written",
    "HOLDS WITH FIX": "the statement holds once the stated repair is applied",
    "FAILS": "the statement is false as written; a witness is given",
    "INCONCLUSIVE": "at least one check did not finish (solver unknown, budget exhausted or an error); not a pass",
    "INCONSISTENT": "two independent checks disagree; this is a defect of the checker and is shown first",
}

HOLDS, FAILS, HOLDS_WITH_FIX = Verdict.HOLDS, Verdict.FAILS, Verdict.HOLDS_WITH_FIX
INCONCLUSIVE, INCONSISTENT = Verdict.INCONCLUSIVE, Verdict.INCONSISTENT
VERDICTS = tuple(v.value for v in Verdict)

#: exit code for a single claim's verdict (the README's exit-code table)
EXIT_OK, EXIT_FAIL, EXIT_USAGE, EXIT_INCONCLUSIVE = 0, 1, 2, 3
_VERDICT_EXIT = {"HOLDS": EXIT_OK, "HOLDS WITH FIX": EXIT_OK, "FAILS": EXIT_FAIL, "INCONSISTENT": EXIT_FAIL,
                 "INCONCLUSIVE": EXIT_INCONCLUSIVE}
VERDICT_EXIT: dict[str, int] = {v.value: v.exit_code for v in Verdict}
#: the order :func:`aggregate` takes the maximum in: the greater, the worse
_VERDICT_RANK = {"HOLDS": 0, "HOLDS WITH FIX": 1, "FAILS": 2, "INCONCLUSIVE": 3, "INCONSISTENT": 4}


def second_way_required(ev: Evidence) -> Evidence:
    """A solver 'proved' whose UNSAT answers were not all checked a second way (a Farkas
    certificate re-checked without a solver, or cvc5 answering UNSAT too) is downgraded
    to 'inconclusive': z3 alone is not enough for 'proved' (the README's verdict rules).
    :func:`verify.solver.common.solver_evidence` applies the rule where the evidence is built;
    this re-applies it to every solver result from its typed provenance, so no claim can skip it."""
    if ev.layer != Layer.SOLVER or ev.status != Status.PROVED:
        return ev
    if ev.solver is None:  # built by hand, not by verify.solver.common.solver_evidence: no way to tell
        ev.status, ev.outcome = Status.INCONCLUSIVE, None
        ev.summary = ("a solver 'proved' without provenance (build solver evidence with "
                      "verify.solver.common.solver_evidence); " + ev.summary)
    elif ev.solver.z3_only:
        z3_only = ev.solver.z3_only
        ev.status, ev.outcome = Status.INCONCLUSIVE, None
        ev.summary = (f"UNSAT from z3 only on {len(z3_only)} obligation(s) (no re-checked certificate, cvc5 did not "
                      f"confirm), e.g. {z3_only[0]!r}; " + ev.summary)
    return ev


def _disagreements(ev: Evidence) -> list[str]:
    return list(ev.solver.disagreements) if ev.solver is not None else []


def layer_verdict(ev: Evidence, fix: str | None) -> Verdict:
    """What one layer that ran says about the claim variant (rules 1-4 of the module docstring)."""
    if _disagreements(ev):
        return INCONSISTENT
    if not ev.status.finished:
        return INCONCLUSIVE
    if ev.outcome == Outcome.FAILS:
        return FAILS
    return HOLDS_WITH_FIX if fix else HOLDS


def aggregate(evidence: Sequence[Evidence], fix: str | None, layers_check_parts: bool = False) -> tuple[Verdict, str]:
    """The claim verdict and a one-line reason from per-layer evidence: the maximum of
    :func:`layer_verdict` over the layers that ran, INCONSISTENT when two layers' outcomes
    disagree, INCONCLUSIVE when none ran (the module docstring).  ``layers_check_parts``: the layers check
    different parts of the statement (:attr:`Claim.layers_check_parts`), so differing outcomes are not a
    disagreement (a solver contradiction still is)."""
    ran = [e for e in evidence if e.status != Status.SKIPPED]
    holds = [e.layer for e in ran if e.outcome == Outcome.HOLDS]
    fails = [e.layer for e in ran if e.outcome == Outcome.FAILS]
    parted = bool(holds and fails)  # layers_check_parts: each layer its own part
    says = [layer_verdict(e, fix) for e in ran] + ([INCONSISTENT] if parted and not layers_check_parts else [])
    verdict = max(says, default=INCONCLUSIVE)
    if verdict == INCONSISTENT:
        split = [f"{e.layer}: {', '.join(_disagreements(e)[:2])}" for e in ran if _disagreements(e)]
        if split:
            return verdict, "solvers disagree (z3 vs cvc5) on " + "; ".join(split)
        return verdict, f"layers disagree: {', '.join(holds)} say holds, {', '.join(fails)} say fails"
    if verdict == INCONCLUSIVE:
        depends = _depends_on(ran, fix)
        if depends:
            return verdict, depends
        unfinished = [f"{e.layer} {e.status}" for e in ran if not e.status.finished]
        return verdict, ("not every layer finished: " + ", ".join(unfinished)) if unfinished else "no layer ran"
    kernel = [e for e in ran if e.layer == Layer.KERNEL and e.status in (Status.PROVED, Status.REFUTED)]
    ideal = [e for e in ran if e.layer == Layer.KERNEL and e.status == Status.PROVED_IDEALISED]
    checked = ("; kernel-checked in Coq for every size" if kernel else
               "; kernel-checked in Coq only under an idealisation (proved (idealised))" if ideal else "")
    if verdict == FAILS and parted:
        return verdict, ("the part of the statement that " + ", ".join(fails) + " checks is false (the part "
                         + ", ".join(holds) + " checks holds)" + checked)
    if verdict == FAILS:
        return verdict, "every layer that ran finds the statement false: " + ", ".join(fails) + checked
    if verdict == HOLDS_WITH_FIX:
        return verdict, f"holds with fix: {fix}" + checked
    return verdict, "every layer that ran supports the statement: " + ", ".join(holds) + checked


def depends_on(evidence: Sequence[Evidence], fix: str | None) -> tuple[str, str, str] | None:
    """``(label, option, answers)`` when every layer that did not finish answered both ways of one option (ws24's
    score convention): ``("score convention", "convention", "query-key FAILS, key-query HOLDS WITH FIX")``; None
    when some unfinished layer did not (a timeout, an error: the usual reason) or every layer finished."""
    unfinished = [e for e in evidence if e.status != Status.SKIPPED and not e.status.finished]
    deps: list[dict[str, Any]] = [e.numbers.get("depends_on") or {} for e in unfinished]
    if not deps or not all(deps) or len({(d["option"], tuple(sorted(d["values"].items()))) for d in deps}) != 1:
        return None
    said = {Outcome.HOLDS.value: (HOLDS_WITH_FIX if fix else HOLDS).value, Outcome.FAILS.value: FAILS.value}
    answers = ", ".join(f"{k} {said.get(v, v)}" for k, v in deps[0]["values"].items())
    return deps[0].get("label", deps[0]["option"]), deps[0]["option"], answers


def _depends_on(ran: Sequence[Evidence], fix: str | None) -> str:
    """The reason of an INCONCLUSIVE verdict that :func:`depends_on` an option: ``depends on the score convention
    (--convention): query-key FAILS, key-query HOLDS WITH FIX (symbolic, solver); the text does not fix one``."""
    dep = depends_on(ran, fix)
    if dep is None:
        return ""
    unfinished = [str(e.layer) for e in ran if not e.status.finished]
    return f"depends on the {dep[0]} (--{dep[1]}): {dep[2]} ({', '.join(unfinished)}); the text does not fix one"

def part_verdict(outcome: Outcome | str | None, fix: str | None, repairable: bool) -> Verdict:
    """One part's verdict from the outcome its judge read: INCONCLUSIVE when the judge could not decide (None),
    FAILS, or HOLDS (HOLDS WITH FIX when the variant is a repair and the part is one the repair addresses)."""
    if outcome is None:
        return INCONCLUSIVE
    if outcome == Outcome.FAILS:
        return FAILS
    return HOLDS_WITH_FIX if fix and repairable else HOLDS


def with_parts(verdict: Verdict, reason: str, parts: Sequence["PartResult"]) -> tuple[Verdict, str]:
    """The claim's verdict and reason with its parts: the claim FAILS when any part fails (a worse verdict of
    the layers stays), and the reason names the failing parts, their severity and whether the paper's main
    conclusion (its ``main`` parts) stands."""
    failing = [p for p in parts if p.verdict == FAILS]
    if not failing:
        return verdict, reason
    layers_hold = verdict in (HOLDS, HOLDS_WITH_FIX)  # the layers' checks hold; a part they do not decide fails
    verdict = max(verdict, FAILS)
    mains = [p for p in parts if p.role == "main"]
    if any(p.verdict == FAILS for p in mains):
        stands = "the paper's main conclusion does not stand"
    elif mains and all(p.verdict in (HOLDS, HOLDS_WITH_FIX) for p in mains):
        stands = "the paper's main conclusion, " + ", ".join(p.name for p in mains) + ", stands"
    else:
        stands = "the paper's main conclusion is undecided"
    named = "; ".join(f"{p.name}, {p.severity}" for p in failing)
    if layers_hold:  # never "holds with fix" in front of a failing part: name the parts, the failing ones first
        said = "; ".join(f"{p.name}: {p.verdict} ({p.evidence})" for p in sorted(parts, key=lambda p: p.verdict != FAILS))
        return verdict, f"part failing: {named}; {stands}; {said}"
    return verdict, f"{reason}; part failing: {named}; {stands}"


def only_part_verdict(layers_said: Verdict, part: Verdict) -> Verdict:
    """The verdict of a run judged on one part (``--part``): the part's own, unless the layers did not finish or
    disagree (INCONCLUSIVE, INCONSISTENT), which still win."""
    return layers_said if layers_said in (INCONCLUSIVE, INCONSISTENT) else part


def expectation_change(run_id: str, expected: Verdict | None, verdict: Verdict) -> str | None:
    """The line ``verify all`` reports (and fails on, exit 1) when a verdict is not the one expected: ``ws24:theorem2
    [transposed]: FAILS -> HOLDS``, or that no expectation is recorded; None when the verdict is the expected one."""
    if expected is None:
        return f"{run_id}: no expectation recorded (got {verdict})"
    if expected != verdict:
        return f"{run_id}: {expected} -> {verdict}"
    return None
