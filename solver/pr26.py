"""Solver layer for pr26: realizability of a task by a PE family as exact linear programs.

Source: pr26 (TMLR 2026), Prop. 1 (affine endpoint) and Theorem 2 (relative heads).

Encoding.  A head's logits are linear in its parameter (W for absolute families, w for
relative ones; :mod:`verify.constructions.pe`).  "The head realizes the task at length
L with margin >= gamma" is the conjunction, over query rows i and keys j <= i, j != t_L(i),
of the linear constraints

    logit(i, t_L(i)) - logit(i, j) >= gamma,

whose coefficients are computed exactly in fractions.Fraction from the shared feature
maps and handed to z3 as rationals.  Because the constraints are homogeneous in the
parameter, "margin >= 1" is equivalent to "strict masked argmax on every row" (scale
the parameter), so UNSAT means: no parameter realizes the task at all.  Each
obligation is a pure conjunction of linear constraints over exact rationals in a fresh
z3 context (:func:`verify.solver.common.check`), so a Farkas certificate can be
attached to every UNSAT answer later; :func:`realize_rows` returns the constraint rows
themselves (coefficient vectors) for that purpose.  Identical constraint rows are
deduplicated (relative families produce many).

Trigonometric features (sinusoidal, RoPE) enter as rationals: sin/cos are rounded to
the nearest multiple of 2^-40 (``pe.FractionArith``); an answer is exact for the
rounded feature map, and a SAT witness is also re-checked on the true features in
float64 (the margin moves by at most r ||w||_1 2^-40).
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Iterable, Sequence

if TYPE_CHECKING:
    import z3

from verify.constructions import pe
from verify.constructions.pe import QUADRATIC, Family, FloatArith, FractionArith, Task, exact_row_margin, get_task
from verify.evidence import Evidence, Status, engine_versions
from verify.solver.answers import ObligationResult, SolverAnswer

#: the margin every realization obligation demands.  The constraints are homogeneous in the parameter,
#: so "margin >= 1" is the strict argmax (scale the parameter); "margin >= 0" would admit ties (the zero
#: parameter ties every key of every row) and is never used: an exact tie is a failure.
MARGIN = Fraction(1)


def realize_rows(family: Family, task: Task, L: int, window: int, rows: Iterable[int] | None = None,
                 ar: Any = None) -> list[tuple[Fraction, ...]]:
    """Exact coefficient vectors c with  c . theta >= gamma  <=>  row-wise margin >= gamma.

    theta is the flattened parameter (W row-major for absolute families, w for relative).

    Args:
        family, task: the PE family and the task.
        L: the length at which the task is posed (targets t_L(i)).
        window: the family's L0 (trained slots / feature dimension).
        rows: the query rows to encode (default: all of task.rows(L)).
    Returns:
        deduplicated list of tuples of Fractions, each of length family.dim(window)^k.
    """
    ar = ar or FractionArith(0)
    r = family.dim(window)
    rows = list(rows) if rows is not None else None
    # row i's constraints read the features of positions/offsets 0..i only
    feats = [family.features(m, window, ar) for m in range(L if not rows else min(L, max(rows) + 1))]
    out: dict[tuple, None] = {}
    for i in (rows if rows is not None else task.rows(L)):
        t = pe.target_in_window(task, i, L)  # a target outside 0..i is an index bug, never encoded
        for j in range(i + 1):
            if j == t:
                continue
            if family.kind == "relative":
                c = tuple(a - b for a, b in zip(feats[i - t], feats[i - j]))
            else:
                pi, pt, pj = feats[i], feats[t], feats[j]
                c = tuple(pi[a] * (pt[b] - pj[b]) for a in range(r) for b in range(r))
            out[c] = None
    return list(out)


def _record(r: ObligationResult) -> dict[str, Any]:
    """The per-obligation record for Evidence.certificate (with cvc5/Farkas fields when present)."""
    return r.summary()


def _smt_q(q: Fraction) -> str:
    """An exact rational as an SMT-LIB real term."""
    q = Fraction(q)
    mag = f"{abs(q.numerator)}.0" if q.denominator == 1 else f"(/ {abs(q.numerator)}.0 {q.denominator}.0)"
    return f"(- {mag})" if q < 0 else mag


def _smt_lin(c: Sequence[Fraction]) -> str:
    """sum_a c_a theta_a as an SMT-LIB term (zero coefficients dropped; 0.0 when all are zero)."""
    terms = [f"theta_{a}" if ca == 1 else f"(* {_smt_q(ca)} theta_{a})" for a, ca in enumerate(c) if ca != 0]
    if not terms:
        return "0.0"
    return terms[0] if len(terms) == 1 else "(+ " + " ".join(terms) + ")"


def check(*args: Any, **kwargs: Any) -> ObligationResult:
    """:func:`verify.solver.common.check`, imported at the first call (z3's import waits for the first obligation
    that needs it: the designer's exact paths never do); a module attribute, so a test can replace it."""
    from verify.solver.common import check as common_check

    return common_check(*args, **kwargs)


def lp_obligation(name: str, rows: Sequence[Sequence[Fraction]], dim: int, timeout_ms: int,
                  margin: Fraction | None = None, extra: Sequence[tuple[Sequence[Fraction], Fraction]] = (),
                  second_opinion: bool | str | None = None, sat_rechecked: bool = False) -> ObligationResult:
    """Check  exists theta: c . theta >= margin for every row c (and c' . theta >= b' for extra).

    ``margin`` defaults to :data:`MARGIN` (1: strict by homogeneity).  A pure conjunction of linear
    constraints over exact rationals in a fresh z3 context.  ``second_opinion``: the cvc5 policy of
    :func:`verify.solver.common.check` (None: the module default).  ``sat_rechecked``: the caller
    re-checks every SAT model exactly (:func:`recheck_exact`), so cvc5 does not re-solve a SAT
    answer under the "auto" policy (:func:`verify.solver.common.check`).
    """
    margin = MARGIN if margin is None else margin

    import z3

    def build(ctx: z3.Context):
        # the conjunction  c . theta >= margin  per row, written as SMT-LIB text and parsed
        # once: building thousands of terms through the Python API cost about half of Prop. 1's time
        text = "".join(f"(declare-fun theta_{a} () Real)" for a in range(dim))
        text += "".join(f"(assert (>= {_smt_lin(c)} {_smt_q(margin)}))" for c in rows)
        text += "".join(f"(assert (>= {_smt_lin(c)} {_smt_q(b)}))" for c, b in extra)
        return list(z3.parse_smt2_string(text, ctx=ctx))

    def exact_rows() -> list[list[dict]]:
        # the same system as rows of recheck's format:  -c . theta <= -margin
        def row(c: Sequence[Fraction], b: Fraction) -> dict:
            return {"coeffs": {f"theta_{a}": str(-Fraction(k)) for a, k in enumerate(c) if k != 0},
                    "op": "<=", "rhs": str(-Fraction(b))}

        return [[row(c, margin) for c in rows] + [row(c, b) for c, b in extra]]

    return check(name, build, timeout_ms, rows=exact_rows, second_opinion=second_opinion, sat_rechecked=sat_rechecked)


def _theta_from_model(model: dict[str, Fraction], dim: int) -> list[Fraction]:
    return [model.get(f"theta_{a}", Fraction(0)) for a in range(dim)]


def _shape(family: Family, window: int, theta: Sequence[Fraction]) -> Any:
    if family.kind == "relative":
        return list(theta)
    r = family.dim(window)
    return [list(theta[a * r:(a + 1) * r]) for a in range(r)]


def recheck_exact(family: Family, task: Task, param: Any, L: int, window: int, margin: Fraction | None = None,
                  rows: Iterable[int] | None = None) -> tuple[bool, Fraction | None]:
    """Re-evaluate a witness outside z3 in fractions.Fraction: min row margin >= margin (default
    :data:`MARGIN`), and every row strictly attends to its target (``pe.attends``: a tie fails).

    Returns:
        (ok, min margin over the rows).
    """
    margin = MARGIN if margin is None else margin
    ar = FractionArith(0)
    feats = [family.features(m, window, ar) for m in range(L)]
    worst = None
    for i in (rows if rows is not None else task.rows(L)):
        mg = exact_row_margin(family, task, param, i, L, window, ar, feats)
        if mg is not None and (worst is None or mg < worst):
            worst = mg
    return (worst is None or (worst >= margin and bool(pe.attends(worst)))), worst


def recheck_float_true(family: Family, task: Task, param: Any, L: int, window: int,
                       rows: Iterable[int] | None = None) -> float:
    """Min row margin of a witness on the *true* (unrounded) features, float64."""
    ar = FloatArith(0)
    feats = [family.features(m, window, ar) for m in range(L)]
    p = [float(x) for x in param] if family.kind == "relative" else [[float(x) for x in row] for row in param]
    worst = float("inf")
    for i in (rows if rows is not None else task.rows(L)):
        mg = exact_row_margin(family, task, p, i, L, window, ar, feats)
        if mg is not None:
            worst = min(worst, mg)
    return worst


# ----------------------------------------------------------------------------- Prop. 1


def prop1_obligation(family: Family, n: int, timeout_ms: int) -> ObligationResult:
    """'Some W realizes prev at length n with margin >= 1' for an absolute family (rows 1..n-1, 0-indexed).

    A SAT answer's model must be re-checked by the caller (:func:`recheck_exact`, as
    :func:`check_prop1` does): cvc5 does not re-solve SAT answers of this obligation.
    """
    rows = realize_rows(family, get_task("prev"), n, n)
    dim = len(rows[0]) if rows else family.dim(n) ** 2
    # every SAT model is re-checked exactly by the caller (check_prop1: the witness and the control)
    return lp_obligation(f"exists W: prev at n = {n} with margin >= 1 ({family.name}, {len(rows)} constraints)",
                         rows, dim, timeout_ms, sat_rechecked=True)


def prop1_inclusion(family: Family, cert: dict, n0: int, n: int) -> bool:
    """Are the rows a checked Farkas certificate for the length-``n0`` prev system uses (nonzero
    multipliers) constraints of the length-``n`` system too?  Exact, without a solver.

    The length-n rows are rebuilt from the feature map at length n (window n), first for the
    query rows of length n0 only (each such row is a constraint at length n), then for every
    query row; the comparison is :func:`verify.solver.realizable.rows_present`.  For a feature
    map independent of n (affine [1, i]) row i's constraints over keys j <= i are the same at
    every n >= i + 1, so they are found; a map that changes with n fails the check.
    """
    from verify.solver.realizable import rows_present, used_rows

    used = used_rows(cert)
    task = get_task("prev")
    dim = family.dim(n) ** 2
    at_n = task.rows(n)  # a range: membership is O(1)
    first = realize_rows(family, task, n, n, rows=[i for i in task.rows(n0) if i in at_n])
    return rows_present(used, first, MARGIN, dim) or rows_present(used, realize_rows(family, task, n, n), MARGIN, dim)


def _ranges(ns: Sequence[int]) -> str:
    """Sorted lengths as 'a..b, c' runs."""
    out: list[list[int]] = []
    for n in sorted(ns):
        if out and out[-1][1] == n - 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return ", ".join(f"{a}" if a == b else f"{a}..{b}" for a, b in out)


def _used(results: Sequence[ObligationResult], n0: int) -> list[dict]:
    from verify.solver.realizable import used_rows

    r = next(r for r in results if r.name.startswith(f"exists W: prev at n = {n0} "))
    return used_rows(r.certificate or {})


def _prop1_argument(results: Sequence[ObligationResult], carried: dict[int, int], reached: int) -> str:
    """How the lengths 3..reached were decided, in one line (solved per length, or carried by inclusion)."""
    solved = [int(r.name.split("n = ")[1].split(" ")[0]) for r in results if r.answer == SolverAnswer.UNSAT]
    if not carried:
        return f"one solve per length, n = {_ranges(solved) or 'none'}"
    parts = []
    for n0 in sorted(set(carried.values())):
        ns = [n for n, m in carried.items() if m == n0]
        parts.append(f"UNSAT at n = {n0} with a Farkas certificate re-checked exactly; its {len(_used(results, n0))} rows "
                     f"with nonzero multipliers, rebuilt exactly without a solver, are constraints at every n = "
                     f"{_ranges(ns)}, so those lengths are UNSAT too")
    rest = [n for n in solved if n not in carried.values()]
    if rest:
        parts.append(f"solved separately: n = {_ranges(rest)}")
    return "; ".join(parts) + f" (together n = 3..{reached})"


def prop1_lengths(N: int) -> list[int]:
    """The lengths :func:`check_prop1` decides, n = 3..N.  Its stated bound is the lengths actually decided
    (``n_reached``), not this list or ``N``."""
    return list(range(3, N + 1))


def check_prop1(family: Family, N: int, timeout_ms: int = 20_000, control: Family = QUADRATIC,
                budget_s: float | None = None) -> Evidence:
    """pr26 Prop. 1, bounded: for each n = 3..N, no W realizes prev with phi = family (expect UNSAT);
    the control family (quadratic [1, i, i^2]) must answer SAT with an exactly re-checked witness.

    Each length n is decided one of two ways.  (a) By an LP obligation at n (z3; an UNSAT gets a
    Farkas certificate re-checked in exact rationals, or cvc5's UNSAT).  (b) By inclusion: the last
    certified UNSAT, at some n0 < n, uses rows (nonzero multipliers) that are all, exactly,
    constraints of the length-n system (:func:`prop1_inclusion`, no solver); the same multipliers
    then refute length n.  For affine features the length-3 certificate carries to every n, so one
    solve decides n = 3..N; when inclusion fails (a feature map that changes with n) length n is
    solved on its own.

    Args:
        family: the family under test (``affine``; a corrupted family for fault injection).
        N: largest length (>= 3).
        timeout_ms: per-obligation budget.
        budget_s: stop early (status inconclusive for the rest) when the total exceeds it.
    Returns:
        proved (every length UNSAT, control SAT), refuted (a witness W re-checked in Fractions:
        the family realizes prev at some n), inconclusive (unknown / budget), or error
        (the control is not SAT: the encoding would be vacuous).
    """
    return describe_prop1(decide_prop1(family, N, timeout_ms, control, budget_s))


@dataclass
class Prop1Decision:
    """What the solver decided for pr26 Prop. 1: the values the verdict depends on.

    Attributes:
        results: the obligations solved (lengths not carried by inclusion), in order.
        witness: a SAT witness W with its exact re-check, or None.
        decided: the lengths decided UNSAT (solved or carried): the stated bound comes from these.
        carried: length -> the length whose certificate refutes it by inclusion.
        total, t_incl: solver and inclusion seconds; out_of_budget: the loop stopped at ``budget_s``.
        nc, ctl: the control's length and obligation; ctl_ok, ctl_w: its witness and exact re-check.
    """

    family: Family
    control: Family
    N: int
    results: list[ObligationResult] = field(default_factory=list)
    witness: dict | None = None
    decided: list[int] = field(default_factory=list)
    carried: dict[int, int] = field(default_factory=dict)
    total: float = 0.0
    t_incl: float = 0.0
    out_of_budget: bool = False
    nc: int = 0
    ctl: ObligationResult | None = None
    ctl_ok: bool = False
    ctl_w: dict[str, Any] | None = None

    @property
    def reached(self) -> int:
        """The largest n with every length 3..n decided UNSAT."""
        reached = 2
        decided = set(self.decided)
        while reached + 1 in decided:
            reached += 1
        return reached


def decide_prop1(family: Family, N: int, timeout_ms: int, control: Family, budget_s: float | None) -> Prop1Decision:
    """Decide each length 3..N (solved, or carried by inclusion) and run the control (:func:`check_prop1`)."""
    d = Prop1Decision(family, control, N)
    cert_at: tuple[int, dict] | None = None  # the last checked certificate (length, certificate)
    for n in prop1_lengths(N):
        if budget_s is not None and d.total + d.t_incl > budget_s:
            d.out_of_budget = True
            break
        if cert_at is not None:
            t0 = time.perf_counter()
            inside = prop1_inclusion(family, cert_at[1], cert_at[0], n)
            d.t_incl += time.perf_counter() - t0
            if inside:
                d.carried[n] = cert_at[0]
                d.decided.append(n)
                continue
        res = prop1_obligation(family, n, timeout_ms)
        d.results.append(res)
        d.total += res.seconds
        if res.answer == SolverAnswer.UNKNOWN:
            break
        if res.answer == SolverAnswer.SAT:
            W = _shape(family, n, _theta_from_model(res.model, family.dim(n) ** 2))
            ok, mg = recheck_exact(family, get_task("prev"), W, n, n)
            d.witness = {"n": n, "W": [[str(x) for x in row] for row in W], "min_margin_exact": str(mg),
                         "rechecked_in": "fractions.Fraction", "recheck_ok": ok}
            break
        cert_at = (n, res.certificate) if res.certificate and res.certificate.get("checked") else None
        d.decided.append(n)
    # control: the same encoding with quadratic features is SAT
    d.nc = nc = min(max(N, 3), 16)
    d.ctl = ctl = prop1_obligation(control, nc, timeout_ms)
    if ctl.answer == SolverAnswer.SAT:
        W = _shape(control, nc, _theta_from_model(ctl.model, control.dim(nc) ** 2))
        d.ctl_ok, mg = recheck_exact(control, get_task("prev"), W, nc, nc)
        d.ctl_w = {"n": nc, "W": [[str(x) for x in row] for row in W], "min_margin_exact": str(mg)}
    return d


def describe_prop1(d: Prop1Decision) -> Evidence:
    """The solver Evidence for a :class:`Prop1Decision` (the claim-specific cascade: an exactly re-checked
    witness refutes; a witness that fails its re-check, or, when every obligation was answered, a control
    that is not SAT, is an error; the rest is :func:`solver_evidence`'s)."""
    from verify.solver.common import solver_evidence

    results, carried, ctl, ctl_w, ctl_ok, nc = d.results, d.carried, d.ctl, d.ctl_w, d.ctl_ok, d.nc
    assert ctl is not None
    reached, N, family, control, witness = d.reached, d.N, d.family, d.control, d.witness
    cert = {"obligations": [_record(r) for r in results],
            "control": {"name": ctl.name, "answer": ctl.answer, "seconds": ctl.seconds, "witness": ctl_w,
                        "witness_rechecked_exact": ctl_ok}}
    solved = {a: sum(r.answer == a for r in results) for a in SolverAnswer}
    # per length: a solved obligation's answer, or UNSAT carried by a certificate's rows (inclusion)
    counts = {**solved, SolverAnswer.UNSAT: solved[SolverAnswer.UNSAT] + len(carried)}
    argument = _prop1_argument(results, carried, reached)
    cert["inclusion"] = [{"certified_at": n0, "rows_used": len(_used(results, n0)),
                          "lengths": _ranges([n for n, m in carried.items() if m == n0])}
                         for n0 in sorted(set(carried.values()))]
    numbers = {"N": N, "n_reached": reached, "answers": counts, "solved": solved, "by_inclusion": len(carried),
               "argument": argument, "solver_seconds": round(d.total, 3), "inclusion_seconds": round(d.t_incl, 3),
               "control_answer": ctl.answer, "control_witness_ok": ctl_ok,
               "max_constraints": max((r.n_constraints for r in results), default=0)}
    base: dict[str, Any] = dict(
        engines=engine_versions("z3", "cvc5"), numbers=numbers, certificate=cert,
        bound=f"n = 3..{reached} (every W in Q^(r x r); margin >= 1 is equivalent to strict argmax by scaling)",
        details=[f"control {control.description}, n = {nc}: {ctl.answer.upper()}"
                 + (f", witness re-checked exactly (min margin {ctl_w['min_margin_exact']})" if ctl_ok and ctl_w else "")])
    unknown = [r for r in results if r.answer == SolverAnswer.UNKNOWN]
    refuted = None
    problems: list[str] = []
    if witness is not None and witness["recheck_ok"]:
        refuted = (f"SAT at n = {witness['n']}: a W with phi = {family.description} realizes prev with "
                   f"margin {witness['min_margin_exact']} (re-checked exactly)", witness)
    elif witness is not None:
        problems.append("a SAT witness failed the exact re-check")
        base["witness"] = witness
    elif not unknown and not ctl_ok:
        problems.append(f"control ({control.name}) was not SAT with a valid witness: the encoding may be vacuous")
    ev = solver_evidence(results + [ctl], refuted=refuted, problems=problems, proved=(
        f"UNSAT for every n = 3..{reached}: no W realizes prev with phi(i) = [1, i] (margin >= 1, equivalently strict). "
        f"{argument[0].upper() + argument[1:]}. Control [1, i, i^2] at n = {nc} is SAT with an exactly re-checked witness"), **base)
    if ev.status == Status.PROVED and reached < N:  # the lengths past `reached` are not decided: never 'proved' up to N
        ev = dataclasses.replace(ev, status=Status.INCONCLUSIVE, outcome=None,
                                 summary=(f"budget reached at n = {reached} < N = {N}" if d.out_of_budget else
                                          f"n = {_ranges([n for n in range(3, N + 1) if n not in d.decided])} not checked (N = {N} asked)"))
    return ev


# ----------------------------------------------------------------------------- Theorem 2


@dataclass(frozen=True)
class T2Obligation:
    """One Theorem 2 obligation: task at lengths (L0, L) with a free relative kernel k(0..L-1)."""

    task: str
    L0: int
    L: int
    peak: int | None  # condition (ii): strict unique global maximiser at delta* = peak (< L0); None = no condition
    expect: SolverAnswer  # what the statement needs: UNSAT or SAT


def t2_rows(task: Task, L0: int, L: int, family: Family, window: int) -> list[tuple[Fraction, ...]]:
    """Constraint rows realizing the task at both lengths L0 and L with one relative kernel."""
    rows = realize_rows(family, task, L0, window) + realize_rows(family, task, L, window)
    return list(dict.fromkeys(rows))


def peak_rows(peak: int, L: int, family: Family, window: int) -> list[tuple[Fraction, ...]]:
    """Condition (ii): k(peak) - k(d) >= 1 for every offset d in 0..L-1, d != peak."""
    ar = FractionArith(0)
    feats = [family.features(m, window, ar) for m in range(L)]
    return [tuple(a - b for a, b in zip(feats[peak], feats[d])) for d in range(L) if d != peak]


def t2_obligation(ob: T2Obligation, family: Family, timeout_ms: int,
                  cache: dict | None = None) -> tuple[ObligationResult, dict | None]:
    """Run one Theorem 2 obligation; for SAT, re-check the kernel exactly (and on true features).

    ``cache``: a dict shared by the obligations of one run, holding the realization rows per
    (family, task, L0, L) (the obligations at each peak share them; the rows are built once).
    """
    task = get_task(ob.task)
    window = ob.L  # one parameter per offset 0..L-1 for the free kernel
    key = (id(family), family.name, ob.task, ob.L0, ob.L)
    rows = cache.get(key) if cache is not None else None
    if rows is None:
        rows = t2_rows(task, ob.L0, ob.L, family, window)
        if cache is not None:
            cache[key] = rows
    if ob.peak is not None:
        rows = rows + peak_rows(ob.peak, ob.L, family, window)
    cond = f", unique global max at delta* = {ob.peak}" if ob.peak is not None else ", no maximiser condition"
    name = f"{family.name} kernel realizes {ob.task} at L0 = {ob.L0} and L = {ob.L}{cond}"
    res = lp_obligation(name, rows, family.dim(window), timeout_ms, sat_rechecked=True)  # re-checked below
    wit = None
    if res.answer == SolverAnswer.SAT:
        k = _theta_from_model(res.model, family.dim(window))
        ok0, m0 = recheck_exact(family, task, k, ob.L0, window)
        ok1, m1 = recheck_exact(family, task, k, ob.L, window)
        wit = {"obligation": name, "rechecked_in": "fractions.Fraction", "recheck_ok": ok0 and ok1,
               "min_margin_L0": str(m0), "min_margin_L": str(m1)}
        if family.name == "free-relative":
            wit["k(delta), delta = 0..L-1"] = [str(x) for x in k]
        else:
            wit["w"] = [str(x) for x in k]
        if not family.rational:
            wit["min_margin_true_features_float64"] = min(recheck_float_true(family, task, k, ob.L0, window),
                                                          recheck_float_true(family, task, k, ob.L, window))
    return res, wit


def reverse_control(L0: int, L: int, timeout_ms: int) -> dict[str, Any]:
    """Positive control for reverse: one-hot absolute features (learned absolute with every position < L
    trained, phi(i) = e_i) realize reverse at L0 and at L with margin >= 1 (e.g. W[i, L-1-i] = 1).

    Returns:
        {"name", "answer", "seconds", "recheck_ok", "min_margin_L0", "min_margin_L"} (margins as strings).
    """
    from verify.constructions.pe import FAMILIES

    fam, task = FAMILIES["learned-absolute"], get_task("reverse")
    rows = list(dict.fromkeys(realize_rows(fam, task, L0, L) + realize_rows(fam, task, L, L)))
    dim = fam.dim(L) ** 2
    name = f"one-hot absolute features (r = {L}) realize reverse at L0 = {L0} and L = {L}"
    res = lp_obligation(name, rows, dim, timeout_ms, sat_rechecked=True)  # re-checked below
    out = {"name": name, "answer": res.answer, "seconds": res.seconds, "recheck_ok": False,
           "min_margin_L0": None, "min_margin_L": None}
    if res.answer == SolverAnswer.SAT:
        W = _shape(fam, L, _theta_from_model(res.model, dim))
        ok0, m0 = recheck_exact(fam, task, W, L0, L)
        ok1, m1 = recheck_exact(fam, task, W, L, L)
        out.update(recheck_ok=ok0 and ok1, min_margin_L0=str(m0), min_margin_L=str(m1))
    return out


def default_t2_obligations(K: int, lengths: Sequence[tuple[int, int]]) -> list[T2Obligation]:
    """The default obligation list: copy/reverse under (ii) at every admissible peak (UNSAT),
    copy without (ii) (SAT), prev and skip-K with a peak at their offset (SAT)."""
    obs: list[T2Obligation] = []
    for L0, L in lengths:
        for task in ("copy", "reverse"):
            for peak in range(L0):
                obs.append(T2Obligation(task, L0, L, peak, SolverAnswer.UNSAT))
        obs.append(T2Obligation("copy", L0, L, None, SolverAnswer.SAT))
        obs.append(T2Obligation("prev", L0, L, 1, SolverAnswer.SAT))
        if K < L0:
            obs.append(T2Obligation(f"skip-{K}", L0, L, K, SolverAnswer.SAT))
    return obs


def check_theorem2(lengths: Sequence[tuple[int, int]] = ((8, 16), (10, 24)), K: int = 3, timeout_ms: int = 20_000,
                   family: Family | None = None, unique_max: bool = True, extra_families: Sequence[Family] = ()) -> Evidence:
    """pr26 Theorem 2, bounded, with a free relative kernel k(delta), delta = 0..L-1.

    Condition (ii) as encoded: k has a strict unique global maximiser delta* over offsets
    0..L-1 and delta* < L0 (the maximiser lies in the trained window, so deep rows exist
    at both lengths).  Expected: copy and reverse UNSAT for every delta* < L0 at both
    length pairs; copy SAT without (ii); prev (delta* = 1) and skip-K (delta* = K) SAT.

    Args:
        lengths: (L0, L) pairs with L >= 2 L0 (so ceil(L/2) >= L0).
        unique_max: False drops condition (ii) from the UNSAT obligations (fault injection:
            a kernel without a unique maximiser); the copy obligations then turn SAT.
        extra_families: relative families (rope, alibi) whose prev obligation at each
            length pair is also reported (informational; rope uses rounded trig features).
    Returns:
        proved when every answer matches and every SAT witness re-checks exactly;
        refuted when an expected-UNSAT obligation is SAT with an exactly re-checked kernel;
        inconclusive on unknown; error when an expected-SAT obligation is UNSAT.
    """
    from verify.constructions.pe import FAMILIES

    return describe_theorem2(decide_theorem2(lengths, K, timeout_ms, family or FAMILIES["free-relative"], unique_max,
                                             extra_families))


@dataclass
class Theorem2Decision:
    """What the solver decided for pr26 Theorem 2: the values the verdict depends on.

    Attributes:
        results, rows_out: the obligations solved and the :class:`T2Obligation` each one encodes.
        witnesses: the SAT witnesses with their exact re-checks; refuting: the first re-checked kernel on an
            expected-UNSAT obligation, or None; vacuous: expected-SAT obligations answered UNSAT.
        info: the extra families' prev obligations (informational).
        rev_ctl: the reverse encoding's positive control; rev_free: reverse without condition (ii).
    """

    lengths: Sequence[tuple[int, int]]
    K: int
    unique_max: bool
    results: list[ObligationResult] = field(default_factory=list)
    rows_out: list[T2Obligation] = field(default_factory=list)
    witnesses: list[dict[str, Any]] = field(default_factory=list)
    refuting: dict[str, Any] | None = None
    vacuous: list[str] = field(default_factory=list)
    info: list[dict[str, Any]] = field(default_factory=list)
    rev_ctl: dict[str, Any] = field(default_factory=dict)
    rev_free: list[dict[str, Any]] = field(default_factory=list)

    def covered(self) -> list[tuple[int, int]]:
        """The pairs the statement may name: copy and reverse solved under (ii) at every peak delta* < L0 (from
        the obligations actually run, against the requirement written here, not against default_t2_obligations)."""
        ran = {(o.task, o.L0, o.L, o.peak) for o, r in zip(self.rows_out, self.results)
               if r.answer != SolverAnswer.UNKNOWN}
        return [(L0, L) for L0, L in self.lengths
                if all((t, L0, L, pk) in ran for t in ("copy", "reverse")
                       for pk in (range(L0) if self.unique_max else [None]))]


def decide_theorem2(lengths: Sequence[tuple[int, int]], K: int, timeout_ms: int, family: Family, unique_max: bool,
                    extra_families: Sequence[Family]) -> Theorem2Decision:
    """Solve the Theorem 2 obligations, the extra families' prev obligations, the reverse control and reverse
    without condition (ii) (:func:`check_theorem2` describes the result)."""
    d = Theorem2Decision(lengths, K, unique_max)
    rows_cache: dict = {}  # realization rows per (family, task, L0, L), shared by the peaks' obligations
    for ob in default_t2_obligations(K, lengths):
        if not unique_max and ob.expect == SolverAnswer.UNSAT:
            ob = T2Obligation(ob.task, ob.L0, ob.L, None, SolverAnswer.UNSAT)
            if any(o.task == ob.task and o.L0 == ob.L0 and o.peak is None for o in d.rows_out):
                continue
        res, wit = t2_obligation(ob, family, timeout_ms, rows_cache)
        d.results.append(res)
        d.rows_out.append(ob)
        if wit is not None:
            d.witnesses.append(wit)
        if (ob.expect == SolverAnswer.UNSAT and res.answer == SolverAnswer.SAT and wit and wit["recheck_ok"]
                and d.refuting is None):
            d.refuting = wit
        if ob.expect == SolverAnswer.SAT and res.answer == SolverAnswer.UNSAT:
            d.vacuous.append(res.name)
    for fam in extra_families:
        for L0, L in lengths:
            res, wit = t2_obligation(T2Obligation("prev", L0, L, None, SolverAnswer.SAT), fam, timeout_ms)
            d.info.append({"name": res.name, "answer": res.answer, "seconds": res.seconds, "witness": wit})
    # positive control of the reverse encoding: the same constraint rows with one-hot absolute features
    # (every position < L trained) are SAT at both lengths of the first pair, so reverse's UNSAT is about
    # relative kernels, not a vacuous or mis-indexed encoding (the witness W is re-checked exactly)
    d.rev_ctl = reverse_control(lengths[0][0], lengths[0][1], timeout_ms)
    # reverse without the condition (informational): unrealizable by any relative kernel?
    for L0, L in lengths:
        res, _ = t2_obligation(T2Obligation("reverse", L0, L, None, SolverAnswer.UNSAT), family, timeout_ms, rows_cache)
        d.rev_free.append({"name": res.name, "answer": res.answer, "seconds": res.seconds})
    return d


def describe_theorem2(d: Theorem2Decision) -> Evidence:
    """The solver Evidence for a :class:`Theorem2Decision` (the claim-specific cascade: an exactly re-checked
    kernel on an expected-UNSAT obligation refutes; when every obligation was answered, an expected-SAT
    obligation that is UNSAT, a failed positive control or a witness that does not re-check is an error;
    the rest is :func:`solver_evidence`'s)."""
    from verify.solver.common import solver_evidence

    results, rows_out, lengths, rev_ctl, rev_free, info = d.results, d.rows_out, d.lengths, d.rev_ctl, d.rev_free, d.info
    cert = {"obligations": [{**_record(r), "expected": o.expect} for r, o in zip(results, rows_out)],
            "witnesses": d.witnesses, "families": info, "reverse_without_condition": rev_free,
            "reverse_control": rev_ctl}
    counts = {a: sum(r.answer == a for r in results) for a in SolverAnswer}
    covered = d.covered()
    missing = [(L0, L) for L0, L in lengths if (L0, L) not in covered]
    numbers = {"lengths": [list(x) for x in lengths], "lengths_checked": [list(x) for x in covered], "K": d.K,
               "answers": counts, "obligations": len(results),
               "solver_seconds": round(sum(r.seconds for r in results), 3),
               "reverse_without_condition": [x["answer"] for x in rev_free],
               "reverse_control": {"answer": rev_ctl["answer"], "witness_rechecked_exact": rev_ctl["recheck_ok"]},
               "family_prev": {x["name"]: x["answer"] for x in info}}
    base: dict[str, Any] = dict(
        engines=engine_versions("z3", "cvc5"), numbers=numbers, certificate=cert, details=_theorem2_details(d),
        bound=(f"(L0, L) in {covered}; every kernel k: {{0..L-1}} -> Q; margin >= 1 (equivalently strict); "
               "(ii) = strict unique global maximiser delta* < L0"
               + (f"; (L0, L) = {missing} not checked" if missing else "")))
    unknown = [r for r in results if r.answer == SolverAnswer.UNKNOWN]
    refuted = None
    problems: list[str] = []
    if d.refuting is not None:
        refuted = (f"SAT: {d.refuting['obligation']} (re-checked exactly, margins {d.refuting['min_margin_L0']}, "
                   f"{d.refuting['min_margin_L']})", d.refuting)
    elif not unknown:
        problems = _theorem2_problems(d)
        if not problems:  # the copy kernel without (ii), shown with the proof
            base["witness"] = next((w for w in d.witnesses if "copy" in w["obligation"]), None)
    ev = solver_evidence(results, refuted=refuted, problems=problems, proved=(
        f"UNSAT: no relative kernel with a strict unique global maximiser in the trained window realizes copy or reverse "
        f"at both lengths of {covered}; without (ii) copy is SAT (witness re-checked exactly); prev and skip-{d.K} SAT"),
        **base)
    if ev.status == Status.PROVED and missing:  # a pair asked for but not solved at every peak
        ev = dataclasses.replace(ev, status=Status.INCONCLUSIVE, outcome=None, summary=(
            f"copy and reverse under (ii) solved at every peak for (L0, L) in {covered} only; "
            f"{missing} asked but not checked"))
    return ev


def _theorem2_details(d: Theorem2Decision) -> list[str]:
    """One line per (task, length pair) under (ii), per obligation without it, per informational obligation,
    and the positive control."""
    details = []
    for L0, L in d.lengths:
        sub = [(r, o) for r, o in zip(d.results, d.rows_out) if o.L0 == L0]
        for task in ("copy", "reverse"):
            cond = [r.answer for r, o in sub if o.task == task and o.peak is not None]
            if cond:
                details.append(f"{task} at L0 = {L0}, L = {L} under (ii), every delta* < {L0}: "
                               f"{'UNSAT' if all(a == SolverAnswer.UNSAT for a in cond) else ', '.join(sorted(set(cond))).upper()} "
                               f"({len(cond)} obligations)")
        for r, o in sub:
            if o.peak is None or o.expect == SolverAnswer.SAT:
                details.append(f"{r.name}: {r.answer.upper()}")
    details += [f"{x['name']}: {x['answer'].upper()} (informational)" for x in d.rev_free + d.info]
    rev_ctl = d.rev_ctl
    details.append(f"positive control: {rev_ctl['name']}: {rev_ctl['answer'].upper()}"
                   + (f", witness re-checked exactly (min margins {rev_ctl['min_margin_L0']}, {rev_ctl['min_margin_L']})"
                      if rev_ctl["recheck_ok"] else ""))
    return details


def _theorem2_problems(d: Theorem2Decision) -> list[str]:
    """The defects that make the layer an error once every obligation was answered: an expected-SAT obligation
    that is UNSAT, a failed positive control, a witness that does not re-check."""
    problems: list[str] = []
    if d.vacuous:
        problems.append(f"expected SAT but UNSAT (encoding too strong): {d.vacuous[0]}")
    rev_ctl = d.rev_ctl
    if not rev_ctl["recheck_ok"]:
        problems.append(f"positive control failed: {rev_ctl['name']} answered {rev_ctl['answer'].upper()} without an "
                        "exactly re-checked witness, so reverse's UNSAT may come from the encoding, not from relative "
                        "kernels")
    bad_w = [w for w in d.witnesses if not w["recheck_ok"]]
    if bad_w:
        problems.append(f"witness failed the exact re-check: {bad_w[0]['obligation']}")
    return problems


__all__ = ["realize_rows", "lp_obligation", "recheck_exact", "recheck_float_true", "prop1_obligation",
           "check_prop1", "prop1_lengths", "check_theorem2", "T2Obligation", "t2_obligation", "t2_rows", "peak_rows",
           "default_t2_obligations", "reverse_control", "MARGIN"]
