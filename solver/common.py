"""Shared z3 plumbing: fresh contexts, fixed seeds, budgets, exact model extraction.

Every proof obligation gets its own ``z3.Context`` (no state leaks between checks), a
fixed random seed, a wall-clock timeout and, where z3 has one, a resource limit.
``unknown`` is reported with z3's reason and is never read as a pass.
"""

from __future__ import annotations

import collections
import copy
import dataclasses
import hashlib
import re
import time
from fractions import Fraction
from typing import Any, Callable, Sequence

import z3

from verify import interrupts, runcache
from verify.evidence import Evidence, Layer, SolverProvenance, Status, current_settings
from verify.solver.answers import ObligationResult, SolverAnswer  # noqa: F401 - re-exported (their home)

#: the fixed seed every solver call uses (determinism: fixed z3/cvc5 seeds)
SOLVER_SEED = 0


def fresh_solver(timeout_ms: int, seed: int = SOLVER_SEED, rlimit: int = 0) -> tuple[z3.Context, z3.Solver]:
    """A new z3 context and solver with fixed seeds and budgets.

    Args:
        timeout_ms: wall-clock budget per check (ms).
        seed: random seed (fixed by default).
        rlimit: z3 resource limit (0 = none).
    """
    ctx = z3.Context()
    s = seeded_solver(ctx, timeout_ms, seed)
    if rlimit:
        s.set("rlimit", int(rlimit))
    return ctx, s


def seeded_solver(ctx: z3.Context, timeout_ms: int, seed: int = SOLVER_SEED) -> z3.Solver:
    """A new solver in ``ctx`` with the fixed random seed and a wall-clock budget (ms)."""
    s = z3.Solver(ctx=ctx)
    s.set("random_seed", seed)
    s.set("timeout", int(timeout_ms))
    return s


def solve(s: z3.Solver, *assumptions: z3.BoolRef) -> z3.CheckSatResult:
    """``s.check(*assumptions)``, except that a Ctrl-C is always raised as KeyboardInterrupt.

    By default z3 handles SIGINT itself during a search: it cancels and answers unknown
    ("interrupted from keyboard"), so the run would go on and report an inconclusive obligation
    instead of stopping; that answer is raised.  Under :func:`verify.interrupts.watching` (the
    command line) z3 leaves SIGINT alone and the watcher interrupts this solver's context, so a
    key that came as the call ended is not lost either.

    Raises:
        KeyboardInterrupt: the user interrupted the search.
    """
    # under the command line's watch z3 leaves SIGINT to verify (z3 would drop a key that came as
    # its call ended with an answer); the watcher interrupts this context instead
    z3.set_param("ctrl_c", interrupts.z3_takes_ctrl_c())
    with interrupts.interruptible(s.ctx):  # first: a Ctrl-C swallowed by a destructor since the last call
        ans = s.check(*assumptions)
    interrupts.check()
    if ans == z3.unknown and s.reason_unknown() == "interrupted from keyboard":
        raise KeyboardInterrupt
    return ans


def to_fraction(val: z3.ExprRef) -> Fraction:
    """An exact Fraction from a z3 rational numeral (raises ValueError for algebraic numbers)."""
    if z3.is_rational_value(val):
        return Fraction(val.numerator_as_long(), val.denominator_as_long())
    if z3.is_int_value(val):
        return Fraction(val.as_long())
    if z3.is_algebraic_value(val):
        raise ValueError(f"irrational algebraic model value {val}; cannot re-check exactly")
    raise ValueError(f"not a numeral: {val}")


#: cvc5's budget per obligation (ms); an UNSAT it cannot confirm in time still needs a
#: re-checked certificate, and ``provenance`` counts what was confirmed which way
SECOND_OPINION_MS = 3000
SECOND_OPINION_CERTIFIED_MS = 1000


def check(
    name: str,
    build: Callable[[z3.Context], Sequence[z3.BoolRef]],
    timeout_ms: int,
    seed: int = SOLVER_SEED,
    second_opinion: bool | str | None = None,
    certify: bool | None = None,
    rows: Callable[[], list[list[dict]]] | None = None,
    sat_rechecked: bool = False,
) -> ObligationResult:
    """Build the constraints in a fresh context and check satisfiability.

    After z3 answers, cvc5 re-solves the same SMT-LIB 2 encoding (fixed seed, same
    budget); an answer that contradicts z3's (sat against unsat) is recorded in
    ``disagreement``.  An UNSAT answer on a linear encoding gets a Farkas certificate,
    re-checked in exact rationals by :mod:`verify.solver.recheck` (no solver involved).
    An obligation whose SMT-LIB 2 text was already answered in this process under the same
    settings is not solved again (``_ANSWERED``: its answer, model, certificate and cvc5 answer
    are reused under this name).

    Args:
        name: the obligation in words.
        build: ``ctx -> constraints``; the obligation is their conjunction.
        timeout_ms: budget (each solver).
        second_opinion / certify: override the run's settings
            (:func:`verify.evidence.current_settings`: ``certify`` on, ``second_opinion`` "auto"
            unless the CLI, a test or a benchmark runs under other settings).
        rows: optional ``() -> cases``, the same obligation already written as exact
            linear rows (see :mod:`verify.solver.recheck`); saves walking the z3 terms
            when certifying large linear encodings. The caller guarantees it is the
            system ``build`` encodes.
        sat_rechecked: the caller re-checks every SAT model of this obligation exactly, outside
            the solver, and a model that fails makes its layer an error; under the "auto" policy
            cvc5 then does not re-solve a SAT answer (the exact re-check is the second way).

    Returns:
        The ObligationResult; for ``sat``, every declared constant's exact value.
    """
    ctx, s = fresh_solver(timeout_ms, seed)
    constraints = list(build(ctx))
    settings = current_settings()
    certify = settings.certify if certify is None else certify
    policy = settings.second_opinion if second_opinion is None else second_opinion
    policy = {True: "always", False: "never"}.get(policy, policy)  # type: ignore[arg-type]
    for c in constraints:
        s.add(c)
    text = s.to_smt2()  # the SMT-LIB 2 benchmark: the memo's key, and what cvc5 is given
    order = _build_order(ctx, text, constraints)
    key = (hashlib.sha256(text.encode()).hexdigest(), order, seed, int(timeout_ms), bool(certify), policy,
           sat_rechecked, rows is not None)
    answered = _ANSWERED.table()
    hit = answered.get(key) if order is not None else None
    if hit is not None:  # the same obligation, built the same way, under the same settings: answered before
        answered.move_to_end(key)
        return dataclasses.replace(copy.deepcopy(hit), name=name, seconds=0.0, certify_seconds=0.0)
    res = _check_built(name, ctx, s, text, constraints, timeout_ms, seed, policy, certify, rows, sat_rechecked)
    if res.answer != SolverAnswer.UNKNOWN and order is not None:  # an unknown (a budget ran out) is asked again
        answered[key] = copy.deepcopy(res)
        while len(answered) > _ANSWERED_MAX:
            answered.popitem(last=False)
    return res


#: answered obligations by (SHA-256 of the SMT-LIB 2 text, build order, seed, budget, certify, second-
#: opinion policy, SAT re-checked by the caller, exact rows given).  A pure memo: z3 in a fresh context
#: with a fixed seed answers the same terms, created in the same order, the same way, so a hit returns
#: what a new solve would (answer, model, certificate, cvc5's answer), with the caller's name and no
#: time spent.  The text alone is not enough: the same text with its variables created in another order
#: can get another model (55 of 98 such repeats on random linear systems), hence :func:`_build_order`.  The
#: variants of a claim share many obligations (ws24: 91 of 284).  Run-scoped (:mod:`verify.runcache`): the
#: table of the run in progress, an ``OrderedDict`` in least-recently-used order.
_ANSWERED = runcache.Memo("solver.common: answered obligations", collections.OrderedDict)
_ANSWERED_MAX = 2048
_DECLARED = re.compile(r"^\(declare-fun (\|[^|]*\||[^\s|()]+) \(\) (Real|Int|Bool)\)$", re.M)


def _build_order(ctx: z3.Context, text: str, constraints: Sequence[z3.BoolRef]) -> tuple[int, ...] | None:
    """How the obligation was built, as far as z3's search can tell: the AST ids (creation order in
    its fresh context) of every declared constant, in the text's order, and of every asserted
    constraint.  None (no memo) when the text declares anything but Real, Int or Bool constants."""
    declared = _DECLARED.findall(text)
    if len(declared) != text.count("(declare-"):
        return None
    sorts = {"Real": z3.RealSort(ctx), "Int": z3.IntSort(ctx), "Bool": z3.BoolSort(ctx)}
    ids = [z3.Const(n[1:-1] if n.startswith("|") else n, sorts[sort]).get_id() for n, sort in declared]
    return tuple(ids + [c.get_id() for c in constraints])


def forget() -> None:
    """Drop the memoized obligation answers and Farkas certificates of the current run scope
    (:mod:`verify.runcache`).  The memos are pure for fixed code; a caller that changes a solver or
    checker between two runs in one scope (a test injecting a fault) calls this so the second run
    solves afresh."""
    from verify.solver import certify

    _ANSWERED.clear()
    certify._CERTIFIED.clear()


def _check_built(name: str, ctx: z3.Context, s: z3.Solver, smt2: str, constraints: list[z3.BoolRef], timeout_ms: int,
                 seed: int, policy: str, certify: bool, rows: Callable[[], list[list[dict]]] | None,
                 sat_rechecked: bool) -> ObligationResult:
    """:func:`check` after the memo: solve, certify, second opinion."""
    exact_cases = rows() if rows is not None else None
    track = (certify and exact_cases is not None and len(exact_cases) == 1
             and len(exact_cases[0]) == len(constraints))
    t0 = time.perf_counter()
    ans = solve(s)
    secs = time.perf_counter() - t0
    res = ObligationResult(name=name, answer=SolverAnswer(str(ans)), seconds=round(secs, 4), n_constraints=len(constraints))
    if ans == z3.sat:
        m = s.model()
        for d in m.decls():
            try:
                res.model[d.name()] = to_fraction(m[d])
            except ValueError:
                res.model[d.name()] = Fraction(0)  # marked below
                res.reason = f"model value of {d.name()} is irrational"
    elif ans == z3.unknown:
        res.reason = s.reason_unknown()
    core = None
    if track and ans == z3.unsat:
        # row i <-> constraint i: an unsat core names the rows a certificate needs (a
        # separate tracked solve, so that tracking never changes the answer or a model)
        s2 = seeded_solver(ctx, timeout_ms, seed)
        for i, c in enumerate(constraints):
            s2.assert_and_track(c, z3.Bool(f"__row{i}", ctx))
        if solve(s2) == z3.unsat:
            names = {str(c) for c in s2.unsat_core()}
            core = [i for i in range(len(constraints)) if f"__row{i}" in names]
    t1 = time.perf_counter()
    if res.answer == SolverAnswer.UNSAT and certify:
        from verify.solver.certify import NonLinear, farkas_certificate

        try:
            cert = farkas_certificate(constraints, timeout_ms, cases=exact_cases, core=core)
        except NonLinear as e:
            res.certificate_note = f"none (encoding beyond degree 2: {str(e)[:80]})"
        else:
            if cert.get("cases"):
                res.certificate = cert  # multipliers found: 'checked' is the exact checker's verdict
            else:  # no multipliers within the budget: no certificate, not a failed one
                res.certificate_note = f"none ({cert.get('check', 'no multipliers found')})"
    certified = bool(res.certificate and res.certificate.get("checked"))
    sat_second_way = sat_rechecked and res.answer == SolverAnswer.SAT
    if policy == "always" or (policy == "auto" and not certified and not sat_second_way):
        from verify.solver.certify import cvc5_opinion

        budget = min(timeout_ms, SECOND_OPINION_CERTIFIED_MS if certified else SECOND_OPINION_MS)
        res.smt2_text = smt2
        res.second_answer, res.second_reason = cvc5_opinion(res.smt2_text, budget, seed)
        if {res.answer, res.second_answer} == {SolverAnswer.SAT, SolverAnswer.UNSAT}:
            res.disagreement = f"z3 says {res.answer}, cvc5 says {res.second_answer}"
    elif certified:
        res.second_reason = "not run: the UNSAT carries a Farkas certificate re-checked without a solver"
    elif sat_second_way and policy == "auto":
        res.second_reason = "not run: the SAT model is re-checked exactly outside the solver"
    res.certify_seconds = round(time.perf_counter() - t1, 4)
    return res


def _certified(r: ObligationResult) -> bool:
    return bool(r.certificate and r.certificate.get("checked"))


def provenance(results: Sequence[ObligationResult]) -> SolverProvenance:
    """How a set of obligations was answered: the typed slot :attr:`Evidence.solver` the verdict
    logic reads (UNSAT re-checked by a Farkas certificate or confirmed by cvc5, or from z3 alone;
    z3/cvc5 contradictions; certificates that failed their exact re-check)."""
    unsat = [r for r in results if r.answer == SolverAnswer.UNSAT]
    return SolverProvenance(
        solvers=["z3", "cvc5"] if any(r.second_answer for r in results) else ["z3"],
        obligations=len(results),
        farkas_rechecked=[r.name for r in unsat if _certified(r)],
        cvc5_confirmed=[r.name for r in unsat if not _certified(r) and r.second_answer == SolverAnswer.UNSAT],
        z3_only=[r.name for r in unsat if not _certified(r) and r.second_answer != SolverAnswer.UNSAT],
        disagreements=[r.name for r in results if r.disagreement],
        farkas_failed=[r.name for r in unsat if r.certificate is not None and not r.certificate.get("checked")],
        cvc5_agrees=sum(r.second_answer == r.answer for r in results),
        cvc5_unknown=sum(r.second_answer == SolverAnswer.UNKNOWN for r in results))


def provenance_numbers(prov: SolverProvenance, results: Sequence[ObligationResult] = ()) -> dict[str, Any]:
    """The display form of a provenance for ``Evidence.numbers`` (``solvers``, ``second_way``,
    ``cvc5_agrees``, ``cvc5_unknown``, ``solvers_disagree``, ``farkas_rechecked``, ``farkas_failed``,
    ``unsat_without_certificate``, ``certify_seconds``)."""
    unsat = [r for r in results if r.answer == SolverAnswer.UNSAT]
    return {
        "solvers": list(prov.solvers),
        "second_way": {"farkas": len(prov.farkas_rechecked), "cvc5_unsat": len(prov.cvc5_confirmed),
                       "neither": list(prov.z3_only)},
        "cvc5_agrees": prov.cvc5_agrees,
        "cvc5_unknown": prov.cvc5_unknown,
        "solvers_disagree": list(prov.disagreements),
        "farkas_rechecked": len(prov.farkas_rechecked),
        "farkas_failed": list(prov.farkas_failed),
        "unsat_without_certificate": sum(r.certificate is None for r in unsat),
        "certify_seconds": round(sum(r.certify_seconds for r in results), 4),
    }


def solver_evidence(results: Sequence[ObligationResult], *, proved: str, refuted: tuple[str, Any] | None = None,
                    problems: Sequence[str] = (), **base: Any) -> Evidence:
    """The solver layer's Evidence from its obligations: the one status cascade every solver
    check uses.

    In order: a certificate that failed its exact re-check, or any of ``problems`` (a failed control,
    a vacuous encoding, a witness that did not re-check) -> ``error``; ``refuted`` given (a summary
    and a witness already re-checked in exact arithmetic by the caller) -> ``refuted``; an ``unknown``
    answer -> ``inconclusive``; an UNSAT from z3 alone (no re-checked Farkas certificate, no cvc5
    UNSAT) -> ``inconclusive``; otherwise ``proved`` with the summary ``proved``.

    Args:
        results: every obligation checked.
        proved: the summary when every obligation came out as the statement needs.
        refuted: ``(summary, witness)`` for an exactly re-checked counterexample, or None.
        problems: claim-specific defects (each one line), any of which makes the layer an error.
        **base: further Evidence fields (numbers, certificate, bound, details, engines, ...); the
            provenance's display numbers are added to ``numbers``.

    Returns:
        Evidence with ``layer=Layer.SOLVER`` and the typed :attr:`Evidence.solver` slot set.
    """
    prov = provenance(results)
    numbers = dict(base.pop("numbers", {}) or {})
    numbers.update(provenance_numbers(prov, results))
    base = {"layer": Layer.SOLVER, **base, "numbers": numbers, "solver": prov}
    problems = list(problems)
    if prov.farkas_failed:
        problems.insert(0, f"a Farkas certificate failed its exact re-check: {prov.farkas_failed[0]}")
    if problems:
        return Evidence(status=Status.ERROR, summary="; ".join(problems), **base)
    if refuted is not None:
        return Evidence(status=Status.REFUTED, summary=refuted[0], witness=refuted[1], **base)
    unknown = [r for r in results if r.answer == SolverAnswer.UNKNOWN]
    if unknown:
        return Evidence(status=Status.INCONCLUSIVE, summary=(f"{len(unknown)} obligation(s) unknown: {unknown[0].name}: "
                                                             f"{unknown[0].reason}"), **base)
    if prov.z3_only:
        return Evidence(status=Status.INCONCLUSIVE, summary=(
            f"UNSAT from z3 only on {len(prov.z3_only)} obligation(s): no Farkas certificate re-checked without a "
            f"solver and no UNSAT from cvc5, e.g. {prov.z3_only[0]!r}"), **base)
    return Evidence(status=Status.PROVED, summary=proved, **base)


def rval(ctx: z3.Context, x: Fraction | int) -> z3.ArithRef:
    """An exact z3 rational constant in ``ctx``."""
    x = Fraction(x)
    return z3.RealVal(f"{x.numerator}/{x.denominator}", ctx)
