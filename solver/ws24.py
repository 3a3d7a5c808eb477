"""Solver layer for ws24 Theorem 2 (Eq. 13) and Eq. 14: bounded proofs over eps-families.

Source: Wang & Sato, arXiv 2412.11459 v2, Theorem 2 / Eq. 13 and Eq. 14; the
near-orthogonality of Assumption 1 is bounded as |<x, y>| <= eps for distinct family
members, <x, x> = 1.

Encoding.  Each inner product that a score touches is a z3 real in [-eps, eps]; the
score is the shared construction's bilinear form (verify.constructions.bilinear)
evaluated on those reals.  The Gram matrix is *not* constrained to be positive
semidefinite: this is a relaxation, so an UNSAT answer covers every real family of
unit vectors (sound), while a SAT model is only a real family once its Gram matrix is
checked PSD, which the witness re-check does in exact rationals.

Obligations, for each token (pair) and the given eps:
  (bound)      UNSAT  |S - S_0| > B(eps)        S_0 the orthonormal value, B the
                                                triangle bound of the construction;
  (statement)  UNSAT  |S - target| > A or sign(S) != sign(target), for the variant's
               reading and for the model's own score (query^T W_K key); A = REL_TOL * scale
               is fixed up front and independent of every construction's bound;
               SAT gives a witness family, re-checked in fractions.Fraction and PSD;
  (probe)      the (statement) obligations again, token by token (pair by pair), for the
               index probe with coefficients (1, -2, 3): distinct, so that a coefficient,
               target or vector read at the wrong row leaves the allowance (the uniform
               coefficients of the data hide such faults); run once per sweep;
  (separation) eps* the root of S_0,aw + B_aw(eps) = S_0,tr - B_tr(eps) (exact, sympy:
               below it the triangle bounds separate the two scores); at the given
               eps < eps*, S_as-written < S_repaired for every eps-family follows from the
               (bound) obligations of both scores (UNSAT) and S_0,aw + B_aw(eps) <
               S_0,tr - B_tr(eps) in exact rationals, so it is not solved again (the
               eps-families shrink with eps: this covers every smaller eps); SAT of
               S_as-written >= S_repaired at eps* when it is rational (the threshold is tight
               for the relaxation; the SAT model is evaluated exactly).

Every UNSAT must be confirmed a second way (a Farkas certificate, with degree-2 product rows
where the encoding has products, re-checked without a solver; or cvc5 answering UNSAT):
an UNSAT from z3 alone leaves the layer inconclusive, never proved.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Sequence

import sympy as sp
import z3

from verify.constructions.bilinear import (
    R_PREV,
    InductionKeyConstruction,
    OuterSum,
    PrevTokenConstruction,
    Vec,
    phi_wE,
    show,
    wE,
)
from verify.evidence import Evidence, Layer, SolverProvenance, Status, current_settings, engine_versions
from verify.faults import seam
from verify.runcache import memoize
from verify.solver.common import ObligationResult, SolverAnswer, check, provenance_numbers, rval, solver_evidence

EPS = sp.Symbol("eps", nonnegative=True)


class Z3Gram:
    """Inner products as z3 reals bounded by |<x, y>| <= eps, <x, x> = 1 (lazily declared)."""

    def __init__(self, ctx: z3.Context, eps: z3.ArithRef) -> None:
        self.ctx, self.eps = ctx, eps
        self.vars: dict[tuple[Vec, Vec], z3.ArithRef] = {}
        self.constraints: list[z3.BoolRef] = []

    def __call__(self, x: Vec, y: Vec) -> z3.ArithRef:
        if x == y:
            return z3.RealVal(1, self.ctx)
        a, b = sorted((x, y), key=repr)
        key = (a, b)
        if key not in self.vars:
            g = z3.Real(f"<{show(key[0])},{show(key[1])}>", self.ctx)
            self.vars[key] = g
            self.constraints += [g <= self.eps, g >= -self.eps]
        return self.vars[key]

    def coef(self, c: Fraction) -> z3.ArithRef:
        return rval(self.ctx, c)


class ModelGram:
    """A Gram function from a z3 model (exact Fractions; unassigned pairs are 0)."""

    def __init__(self, model: dict[str, Fraction]) -> None:
        self.model = model

    def __call__(self, x: Vec, y: Vec) -> Fraction:
        if x == y:
            return Fraction(1)
        a, b = sorted((x, y), key=repr)
        return self.model.get(f"<{show(a)},{show(b)}>", Fraction(0))


def ortho(x: Vec, y: Vec) -> Fraction:
    """The exact orthonormal Gram in Fractions."""
    return Fraction(1) if x == y else Fraction(0)


def triangle_bound(u: Vec, W: OuterSum, v: Vec) -> sp.Expr:
    """B(eps) with |u^T W v - (u^T W v)_orthonormal| <= B(eps) for every eps-family.

    Each term c <u, a><b, v> deviates by at most |c| eps (one off-diagonal factor) or
    |c| eps^2 (two); diagonal factors are exactly 1.
    """
    total = sp.Integer(0)
    for c, a, b in W.terms:
        off = (u != a) + (b != v)
        if off:
            total += sp.Rational(abs(c).numerator, abs(c).denominator) * EPS**off
    return sp.expand(total)


def _sym(x: Fraction) -> sp.Rational:
    return sp.Rational(x.numerator, x.denominator)


def _z3_of(expr: sp.Expr, ctx: z3.Context, eps: z3.ArithRef) -> z3.ArithRef:
    """A polynomial in EPS with rational coefficients, as a z3 term."""
    poly = sp.Poly(expr, EPS)
    out = z3.RealVal(0, ctx)
    for (deg,), c in poly.terms():
        c = sp.Rational(c)
        out = out + rval(ctx, Fraction(int(c.p), int(c.q))) * eps**deg
    return out


@seam("solver.ws24._is_psd")
def _is_psd(gram: Callable[[Vec, Vec], Fraction], family: Sequence[Vec]) -> bool:
    M = sp.Matrix(len(family), len(family), lambda i, j: _sym(gram(family[i], family[j])))
    return bool(M.is_positive_semidefinite)


@seam("solver.ws24._threshold")
@memoize(maxsize=256)
def _threshold(s0_aw: Fraction, B_aw: sp.Expr, s0_tr: Fraction, B_tr: sp.Expr) -> sp.Expr | None:
    """The smallest eps > 0 where s0_aw + B_aw(eps) = s0_tr - B_tr(eps) (None: never).  Memoized: an
    exact function of its (immutable) arguments; ws24's solver layers ask 42 times for 13 of them."""
    gap = _sym(s0_tr) - _sym(s0_aw)
    if gap <= 0:
        return sp.Integer(0)
    roots = [r for r in sp.solve(sp.Eq(B_aw + B_tr, gap), EPS) if r.is_real and r > 0]
    return min(roots) if roots else None


def _check_rows(
    rows: Sequence[tuple[str, Callable[[Callable], Any], Fraction, sp.Expr, sp.Expr]],
    family: Sequence[Vec],
    eps: Fraction,
    timeout_ms: int,
    self_check: bool = True,
) -> tuple[list[ObligationResult], dict | None, list[str], list[str]]:
    """Run (bound) and (statement) obligations for each row.

    rows: (label, score(gram), target, B(eps), A(eps)).
    self_check: run the (bound) encoding self-check (once per score function: not on rows
        labelled 'model score', nor on the index probe, whose score functions are the main rows').
    Returns (results, first witness or None, problems, notes on vacuous allowances).
    """
    results: list[ObligationResult] = []
    witness = None
    problems: list[str] = []
    vacuous: list[str] = []
    for label, score, target, B, A in rows:
        s0 = score(ortho)
        a_val = A.subs(EPS, _sym(eps)) if A != 0 else sp.Integer(0)
        if target != 0 and a_val >= abs(_sym(target)):
            problems_note = (f"at {label} the allowance A(eps) = {a_val} is at least |target| = {abs(target)}: the "
                             "magnitude clause is vacuous there and only the sign clause can fail")
            vacuous.append(problems_note)

        if self_check and not label.endswith("model score"):  # the encoding self-check once per score function
            r1 = _bound_obligation(label, score, s0, B, eps, timeout_ms)
            results.append(r1)
            if r1.answer == SolverAnswer.SAT:
                problems.append(f"the triangle bound failed at {label} (encoding bug)")

        def statement(ctx: z3.Context, score=score, target=target, A=A):
            g = Z3Gram(ctx, rval(ctx, eps))
            S = score(g)
            a = _z3_of(A, ctx, g.eps)
            t = rval(ctx, target)
            violations = [S - t > a, t - S > a]
            if target != 0:  # the statement's association is nonzero, with the sign of the target
                violations.append(S * t <= 0)
            return g.constraints + [z3.Or(*violations)]

        r2 = check(f"|S - target| > A(eps) or sign(S) != sign(target) at {label}", statement, timeout_ms)
        results.append(r2)
        if r2.answer == SolverAnswer.SAT and witness is None:
            witness = _recheck_witness(label, score, target, A, eps, family, r2)
            if witness is None:
                # the relaxation admits a violation but no real family was exhibited
                r2.answer, r2.reason = SolverAnswer.UNKNOWN, "SAT only in the Gram relaxation (witness Gram matrix not PSD)"
    return results, witness, problems, vacuous


def _recheck_witness(label, score, target, A, eps, family, res: ObligationResult) -> dict | None:
    """Re-evaluate a z3 model in Fractions; fall back to the orthonormal family if the
    model's Gram matrix is not PSD (a relaxation artefact). Returns the witness or None."""
    allowance = Fraction(str(sp.Rational(A.subs(EPS, _sym(eps))))) if A != 0 else Fraction(0)
    for name, gram in (("z3 model", ModelGram(res.model)), ("orthonormal family", ortho)):
        vals_ok = all(abs(v) <= eps for v in res.model.values()) if name == "z3 model" else True
        S = score(gram)
        far = abs(S - target) > allowance
        violated = far or (target != 0 and S * target <= 0)
        if vals_ok and violated and _is_psd(gram, family):
            inner = {k: str(v) for k, v in res.model.items() if v != 0} if name == "z3 model" else {}
            clause = ("|score - target| > A(eps)" if far else
                      "the association is not nonzero with the target's sign (score * target <= 0)")
            return {"at": label, "family": name, "violated": clause, "nonzero_inner_products": inner, "score": str(S),
                    "statement_value": str(target), "allowance_A(eps)": str(allowance),
                    "eps": str(eps), "rechecked_in": "fractions.Fraction; Gram matrix PSD (sympy, exact)"}
    return None


def _bound_obligation(label: str, score, s0: Fraction, B: sp.Expr, eps: Fraction, timeout_ms: int) -> ObligationResult:
    """(bound): UNSAT of |S - S_0| > B(eps) over the eps-families, S_0 the orthonormal value."""
    def bound(ctx: z3.Context):
        g = Z3Gram(ctx, rval(ctx, eps))
        S = score(g)
        b = _z3_of(B, ctx, g.eps)
        return g.constraints + [z3.Or(S - rval(ctx, s0) > b, rval(ctx, s0) - S > b)]

    return check(f"|S - S_0| > B(eps) at {label}", bound, timeout_ms)


def _separation(score_aw, score_tr, B_aw, B_tr, eps: Fraction, timeout_ms,
                proved: frozenset[str] = frozenset()) -> tuple[sp.Expr | None, list[ObligationResult], dict]:
    """eps* from the triangle bounds (exact, sympy), the separation below it, and tightness.

    Below eps* the separation S_as-written < S_repaired is decided by an exact argument,
    not re-solved: the two (bound) obligations |S - S_0| > B(eps) for the as-written display
    and for the repaired reading (at token 1) are UNSAT, and S_0,aw + B_aw(eps) <
    S_0,rep - B_rep(eps) holds in exact rationals at the user's eps (so at every smaller eps:
    the eps-families shrink with eps).  ``proved`` names the bounds ('as-written',
    'repaired') the caller's own (bound) obligations already proved UNSAT for the same score
    function; only the others are run here.  SAT at eps* itself, when eps* is rational, shows
    the threshold is tight for the relaxation (the model is evaluated exactly).

    Returns (eps*, obligations, numbers); numbers['separation'] states the exact step, with
    ``holds`` False when the exact inequality fails below eps* (an encoding bug).
    """
    s0_aw, s0_tr = score_aw(ortho), score_tr(ortho)
    thr = _threshold(s0_aw, B_aw, s0_tr, B_tr)
    if thr is None or thr == 0:
        return thr, [], {}
    out = []
    info: dict = {}
    e = sp.Rational(eps.numerator, eps.denominator)
    if e < thr:
        for name, score, s0, B in (("as-written", score_aw, s0_aw, B_aw), ("repaired", score_tr, s0_tr, B_tr)):
            if name not in proved:
                out.append(_bound_obligation(f"token 1, {name} score (separation)", score, s0, B, eps, timeout_ms))
        upper, lower = _sym(s0_aw) + B_aw.subs(EPS, e), _sym(s0_tr) - B_tr.subs(EPS, e)
        info = {"rule": ("S_as-written <= S_0 + B_aw(eps) < S_0 - B_rep(eps) <= S_repaired for every eps-family: the two "
                         "triangle bounds UNSAT, the middle inequality in exact rationals"),
                "as_written_upper": str(upper), "repaired_lower": str(lower), "eps": str(eps), "holds": bool(upper < lower)}
    if thr.is_Rational:
        thr_q = Fraction(int(thr.p), int(thr.q))

        def tight(ctx: z3.Context):
            g = Z3Gram(ctx, rval(ctx, thr_q))
            return g.constraints + [score_aw(g) >= score_tr(g)]

        # a SAT answer is decided by evaluating its model exactly (no second solver needed:
        # cvc5 can take seconds on this nonlinear system and would only repeat the answer)
        policy = None if current_settings().second_opinion == "always" else "never"  # an explicit 'always' still runs cvc5
        res = check(f"S_as-written >= S_transposed at eps = {thr} (tightness)", tight, timeout_ms, second_opinion=policy)
        if res.answer == SolverAnswer.SAT:
            mg = ModelGram(res.model)
            inside = all(abs(x) <= thr_q for x in res.model.values()) and not res.reason
            if inside and score_aw(mg) >= score_tr(mg):
                if not res.second_answer:
                    res.second_reason = "not run: the SAT model re-checked exactly in fractions.Fraction"
            else:
                res.answer, res.reason = SolverAnswer.UNKNOWN, "the SAT model did not re-check exactly in fractions.Fraction"
        out.append(res)
    return thr, out, info


def _proved_reading_bound(results: Sequence[ObligationResult], label: str, orientation: str) -> frozenset[str]:
    """Which separation bound the variant's own (bound) obligation at token 1 already proved:
    its reading is the as-written display for ``as-written`` and the repaired reading
    (transposed display, or query^T W_K key) otherwise."""
    done = any(r.name == f"|S - S_0| > B(eps) at {label}" and r.answer == SolverAnswer.UNSAT for r in results)
    return frozenset({"as-written" if orientation == "as-written" else "repaired"} if done else ())


def _evidence(kind: str, results: list[ObligationResult], witness: dict[str, Any] | None, problems: Sequence[str],
              sep_results: list[ObligationResult], thr: sp.Expr | None, eps: Fraction, bound_text: str, summary_ok: str,
              summary_fail: Callable[[dict[str, Any]], str], extra_numbers: dict[str, Any]) -> Evidence:
    """The solver evidence of ``kind`` (theorem2 or eq14) through :func:`verify.solver.common.solver_evidence`:
    a triangle-bound obligation that is SAT, a separation below the threshold that is not UNSAT, or bounds that
    do not separate are encoding problems (an error) unless an obligation is unknown (inconclusive)."""
    counts = {a: sum(r.answer == a for r in results) for a in SolverAnswer}
    numbers = {"obligations": len(results), "answers": counts, "eps": str(eps),
               "separation_threshold_eps": str(thr) if thr is not None else "none",
               "solver_seconds": round(sum(r.seconds for r in results + sep_results), 3)}
    numbers.update(extra_numbers)
    cert = {"obligations": [r.summary() for r in results + sep_results]}
    details = [f"{r.name}: {r.answer.upper()}{' (' + r.reason + ')' if r.reason else ''}" for r in sep_results]
    sep_info = extra_numbers.get("separation") or {}
    if sep_info:
        details.append(f"separation at eps = {eps} (every eps <= {eps}): S_as-written <= {sep_info['as_written_upper']} "
                       f"{'<' if sep_info['holds'] else '>='} {sep_info['repaired_lower']} <= S_repaired (triangle bounds "
                       "UNSAT, the middle inequality in exact rationals; no separate solve)")
    if extra_numbers.get("vacuous_allowance"):
        details.insert(0, "note: " + extra_numbers["vacuous_allowance"][0])
    if thr is not None and sp.Rational(eps.numerator, eps.denominator) >= thr:
        details.insert(0, f"note: eps = {eps} is at or beyond the separation threshold eps* = {thr}: near-orthogonality this "
                          "weak lets real families cancel the association, so a failure here says nothing about the "
                          "orientation; choose eps < eps*")
    problems = list(problems)
    everything = list(results) + list(sep_results)
    if not any(r.answer == SolverAnswer.UNKNOWN for r in everything):  # an unknown obligation is inconclusive, not an encoding bug
        if not all(r.answer == SolverAnswer.UNSAT for r in results if r.name.startswith("|S - S_0|")):
            problems.append("a triangle-bound obligation was SAT")
        if not all(r.answer == SolverAnswer.UNSAT for r in sep_results if "tightness" not in r.name):
            problems.append("separation below the threshold was not UNSAT (encoding bug)")
        if sep_info and not sep_info["holds"]:
            problems.append(f"below eps* = {thr} the triangle bounds do not separate the scores at eps = {eps}: as-written "
                            f"upper bound {sep_info['as_written_upper']} >= repaired lower bound "
                            f"{sep_info['repaired_lower']} (encoding bug)")
    refuted = (summary_fail(witness), witness) if witness is not None else None
    return solver_evidence(everything, proved=summary_ok, refuted=refuted, problems=problems,
                           engines=engine_versions("z3", "cvc5"), numbers=numbers, certificate=cert,
                           bound=bound_text, details=details)


#: the statement's allowance, fixed up front and independent of every construction: the
#: association must stay within REL_TOL * scale of its target (scale = max |chi| or max |psi|)
#: and keep the target's sign.  It is not derived from any construction's own triangle bound.
REL_TOL = Fraction(1, 2)


def _exact_refutation(summary: str, witness: dict[str, Any]) -> Evidence:
    """A refutation decided in exact arithmetic without a solver call (said so in the evidence)."""
    return Evidence(layer=Layer.SOLVER, status=Status.REFUTED, witness=witness, engines={},
                    numbers={"decided_by": "fractions.Fraction on the orthonormal family (no solver call)"},
                    summary=summary + " (decided in exact arithmetic; no solver call)")


#: vocabulary size of the index probe (coefficients (1, -2, 3): any two differ by more than
#: half the largest, so a row confused with another leaves its allowance)
PROBE_V = 3


def _probe(rows, family: Sequence[Vec], eps: Fraction, timeout_ms: int, coeffs: Sequence[Fraction]
           ) -> tuple[list[ObligationResult], dict | None, dict]:
    """The (statement) obligations of the index probe (distinct coefficients, every token or
    pair): a coefficient, target or vector read at the wrong row moves a score by at least 2
    (the probe values differ pairwise by >= 2), beyond its allowance A = REL_TOL * |target|
    (REL_TOL * min|c| on a zero target), fixed up front from the probe's values.

    Run only where the probe's own triangle bounds keep every honest row inside its allowance
    and sign at this eps (exact check, so a SAT can only come from a wrong row); otherwise
    skipped with a note.  Returns (results, first witness or None, numbers)."""
    info = {"coefficients": [str(c) for c in coeffs], "rows": len(rows)}
    for label, _score, target, B, A in rows:
        b = B.subs(EPS, _sym(eps))
        room = min(A, abs(_sym(target))) if target != 0 else A
        if b >= room:
            info["skipped"] = (f"at eps = {eps} the probe's triangle bound at {label} is {b} >= {room}: an honest "
                               "construction could leave its allowance, so the probe would not isolate index faults")
            return [], None, info
    results, witness, _problems, _vacuous = _check_rows(rows, family, eps, timeout_ms, self_check=False)
    info["answers"] = {a: sum(r.answer == a for r in results) for a in SolverAnswer}
    return results, witness, info


def _probe_allowance(target: Fraction, coeffs: Sequence[Fraction]) -> sp.Expr:
    half = sp.Rational(REL_TOL.numerator, REL_TOL.denominator)
    return half * (abs(_sym(target)) if target != 0 else min(abs(_sym(c)) for c in coeffs))


def _theorem2_probe(orientation: str, eps: Fraction, timeout_ms: int,
                    convention: str = "query-key") -> tuple[list[ObligationResult], dict | None, dict]:
    """Theorem 2's per-token obligations for :meth:`PrevTokenConstruction.index_probe` at V = PROBE_V."""
    probe = PrevTokenConstruction.index_probe(PROBE_V, orientation, convention=convention)
    rows = []
    for v in range(1, probe.V + 1):
        t = probe.target(v)
        A = _probe_allowance(t, probe.chi)
        left, right = ((wE(v), R_PREV) if orientation == "read-score" else (R_PREV, wE(v)))
        rows.append((f"index probe chi = {_tuple_txt(probe.chi)}, v = {v}, reading",
                     lambda g, v=v: probe.displayed_score(v, g), t,
                     triangle_bound(left, probe.W_model if orientation == "read-score" else probe.W, right), A))
        if orientation != "read-score":
            rows.append((f"index probe chi = {_tuple_txt(probe.chi)}, v = {v}, model score",
                         lambda g, v=v: probe.model_score(v, g), t, triangle_bound(wE(v), probe.W_model, R_PREV), A))
    return _probe(rows, probe.family(), eps, timeout_ms, probe.chi)


def _eq14_probe(orientation: str, eps: Fraction, timeout_ms: int,
                convention: str = "query-key") -> tuple[list[ObligationResult], dict | None, dict]:
    """Eq. 14's per-pair obligations for :meth:`InductionKeyConstruction.index_probe` at V = PROBE_V."""
    probe = InductionKeyConstruction.index_probe(PROBE_V, orientation, convention=convention)
    rows = []
    for T in range(1, probe.V + 1):
        for s_ in range(1, probe.V + 1):
            t = probe.target(s_, T)
            A = _probe_allowance(t, probe.psi)
            left, right = ((wE(T), phi_wE(s_)) if orientation == "read-score" else (phi_wE(s_), wE(T)))
            rows.append((f"index probe psi = {_tuple_txt(probe.psi)}, z_s = {s_}, z_T = {T}, reading",
                         lambda g, s_=s_, T=T: probe.displayed_score(s_, T, g), t,
                         triangle_bound(left, probe.W_model if orientation == "read-score" else probe.W, right), A))
            if orientation != "read-score":
                rows.append((f"index probe psi = {_tuple_txt(probe.psi)}, z_s = {s_}, z_T = {T}, model score",
                             lambda g, s_=s_, T=T: probe.model_score(s_, T, g), t,
                             triangle_bound(wE(T), probe.W_model, phi_wE(s_)), A))
    return _probe(rows, probe.family(), eps, timeout_ms, probe.psi)


def _tuple_txt(xs: Sequence[Fraction]) -> str:
    return "(" + ", ".join(str(x) for x in xs) + ")"


def _score_numbers(rows, eps: Fraction) -> dict:
    """``displayed_score`` / ``model_score`` for the first row of each kind: the orthonormal
    value and the triangle bound of its deviation over eps-families."""
    out: dict = {}
    if rows and all(r[5] == "displayed_score" for r in rows):  # read-score: the reading is the model's score
        rows = list(rows) + [(rows[0][0], rows[0][1], rows[0][2], rows[0][3], rows[0][4], "model_score")]
    for label, score, _target, B, _A, kind in rows:
        if kind not in out:
            out[kind] = {"at": label, "orthonormal": str(score(ortho)), "deviation_bound_B(eps)": str(B),
                         "deviation_bound_at_eps": str(B.subs(EPS, _sym(eps)))}
    return out


def check_theorem2(con: PrevTokenConstruction, eps: Fraction, timeout_ms: int = 20_000,
                   index_probe: bool = True) -> Evidence:
    """Bounded check of ws24 Theorem 2 for every eps-family at the construction's V.

    Statement: for every v, both the variant's reading of the association (r_{-1}^T W^1_K
    w_E(v), or w_E(v)^T W^1_K r_{-1} for ``read-score``) and the model's own score
    w_E(v)^T W^1_K r_{-1} (query^T W_K key) lie within A = REL_TOL * max|chi| of chi(v)
    with chi(v)'s sign.  A is fixed up front, independent of the construction's bounds.

    Args:
        con: construction (V, chi, orientation); V up to about 8 is quick.
        eps: the near-orthogonality bound (exact rational, 0 <= eps < 1).
        timeout_ms: per-obligation budget.
        index_probe: also run the per-token obligations of the index probe chi = (1, -2, 3)
            (distinct coefficients, same variant; see :func:`_probe`), where a row read at the
            wrong index leaves its allowance; the uniform chi of the data would hide it.

    Returns:
        ``proved`` (all obligations UNSAT, each confirmed a second way), ``refuted``
        (witness family re-checked exactly and PSD), ``inconclusive`` (some unknown, or an
        UNSAT from z3 alone) or ``error``.
    """
    aw = PrevTokenConstruction(con.V, con.chi, "as-written", con.convention)
    tr = PrevTokenConstruction(con.V, con.chi, "transposed" if con.orientation == "transposed" else "read-score",
                               con.convention)
    exact = _theorem2_chi_refutation(con)
    if exact is not None:
        return exact
    scale = _sym(max(abs(c) for c in con.chi))
    A = sp.Rational(REL_TOL.numerator, REL_TOL.denominator) * scale
    rows = _theorem2_rows(con, A)
    results, witness, problems, vacuous = _check_rows([r[:5] for r in rows], con.family(), eps, timeout_ms)
    probe_info = None
    if index_probe:
        p_results, p_witness, probe_info = _theorem2_probe(con.orientation, eps, timeout_ms, con.convention)
        results += p_results
        witness = witness or p_witness
    B_aw = triangle_bound(("r", -1), aw.W, ("w_E", 1))
    B_tr = triangle_bound(*((("w_E", 1), tr.W_model, ("r", -1)) if tr.orientation == "read-score"
                            else (("r", -1), tr.W, ("w_E", 1))))
    thr, sep, sep_info = _separation(lambda g: aw.displayed_score(1, g), lambda g: tr.displayed_score(1, g), B_aw, B_tr,
                                     eps, timeout_ms, _proved_reading_bound(results, "v = 1, reading", con.orientation))
    extra = {"bound_as_written": f"|r^T W w_E(v)| <= {B_aw}",
             "bound_repaired_reading": (f"{'w_E(v)^T W r' if tr.orientation == 'read-score' else 'r^T W^T-form w_E(v)'} "
                                        f">= chi(v) - ({B_tr})"),
             "allowance_A": f"{A} = {REL_TOL} * max|chi| (fixed up front, independent of the construction)",
             "vacuous_allowance": vacuous, **_score_numbers(rows, eps)}
    if probe_info is not None:
        extra["index_probe"] = probe_info
    if sep_info:
        extra["separation"] = sep_info
    return _evidence(
        "theorem2", results, witness, problems, sep, thr, eps,
        bound_text=f"V = {con.V}, every family of unit vectors with |<x, y>| <= eps = {eps} (Gram relaxation, no PSD needed for UNSAT)",
        summary_ok=(f"UNSAT: no eps-family (eps = {eps}, V = {con.V}) puts the association or the model's score "
                    f"w_E(v)^T W^1_K r_{{-1}} further than {A} from chi(v) or off its sign; the as-written display is "
                    f"strictly below the repaired reading for every eps < {thr}"),
        summary_fail=lambda w: (f"witness ({w['family']}, eps = {eps}): at {w['at']} the score is {w['score']} "
                                f"where chi(v) = {w['statement_value']} +- {w['allowance_A(eps)']} "
                                f"(violated: {w.get('violated', 'the statement')}); "
                                f"for every eps-family |as-written display| <= {B_aw} and the repaired reading >= chi(v) - ({B_tr}); "
                                f"they separate for eps < {thr}"),
        extra_numbers=extra)


def _theorem2_chi_refutation(con: PrevTokenConstruction) -> Evidence | None:
    """The statement fails for the data's chi alone (a zero chi(v), or chi not constant on Q): refuted on
    the orthonormal family, re-checked in Fractions; None otherwise."""
    zero = next((v for v in range(1, con.V + 1) if con.chi[v - 1] == 0), None)
    if zero is not None:
        w: dict[str, Any] = {"at": f"v = {zero}", "family": "orthonormal family",
                             "score": str(con.displayed_score(zero, ortho)), "statement_value": "nonzero",
                             "rechecked_in": "fractions.Fraction"}
        return _exact_refutation(f"chi({zero}) = 0: the association at v = {zero} is not nonzero "
                                 f"(orthonormal family: {w['score']})", w)
    if len(set(con.chi)) > 1:
        v2 = next(v for v in range(2, con.V + 1) if con.chi[v - 1] != con.chi[0])
        w = {"at": f"v = 1 and v = {v2}", "family": "orthonormal family",
             "score": [str(con.displayed_score(1, ortho)), str(con.displayed_score(v2, ortho))],
             "statement_value": "equal for every v in Q", "rechecked_in": "fractions.Fraction"}
        return _exact_refutation(f"chi is not constant on Q (chi(1) = {con.chi[0]}, chi({v2}) = {con.chi[v2 - 1]}): "
                                 "the association cannot be equal for every v", w)
    return None


def _theorem2_rows(con: PrevTokenConstruction, A: Any) -> list[tuple]:
    """The rows of the Theorem 2 obligations: (name, score, target, triangle bound, allowance A, numbers key)
    for the variant's reading and, unless it is the model's score itself, the model's score."""
    left, right = ((("w_E", None), ("r", -1)) if con.orientation == "read-score" else (("r", -1), ("w_E", None)))
    rows = []
    # chi is constant here (checked before): W^1_K and the eps-family constraints are
    # invariant under every relabelling of the tokens, so v = 1 represents every v
    for v in (1,):
        lv = ("w_E", v) if left[0] == "w_E" else left
        rv = ("w_E", v) if right[0] == "w_E" else right
        rows.append((f"v = {v}, reading", lambda g, v=v: con.displayed_score(v, g), con.target(v),
                     triangle_bound(lv, con.W_model if con.orientation == "read-score" else con.W, rv), A,
                     "displayed_score"))
        if con.orientation != "read-score":  # for read-score the reading is the model's score itself
            rows.append((f"v = {v}, model score", lambda g, v=v: con.model_score(v, g), con.target(v),
                         triangle_bound(("w_E", v), con.W_model, ("r", -1)), A, "model_score"))
    return rows


def representative_pairs(con: InductionKeyConstruction) -> list[tuple[int, int]]:
    """Token pairs (z_s, z_T) to check: all V^2 pairs, or, when psi is constant, one
    pair per orbit of the relabelling group of [V] ((1, 1) and, for V >= 2, (2, 1)).

    Correctness of the reduction: with psi constant, W^2_K and the eps-family
    constraints are invariant under any permutation of the token labels, so every
    pair with z_s = z_T (resp. z_s != z_T) has the same set of reachable scores.
    """
    if len(set(con.psi)) == 1:
        return [(1, 1)] + ([(2, 1)] if con.V >= 2 else [])
    return [(s, T) for T in range(1, con.V + 1) for s in range(1, con.V + 1)]


def check_theorem2_upto(make, Vmax: int, eps: Fraction, timeout_ms: int = 20_000) -> Evidence:
    """:func:`check_theorem2` for every V = 1..Vmax (``make(V)`` builds the construction),
    the index probe once (with V = Vmax); the worst status wins (error > inconclusive >
    refuted > proved)."""
    return _sweep([check_theorem2(make(V), eps, timeout_ms, index_probe=V == Vmax) for V in range(1, Vmax + 1)], Vmax)


def check_eq14_upto(make, Vmax: int, eps: Fraction, timeout_ms: int = 20_000) -> Evidence:
    """:func:`check_eq14` for every V = 1..Vmax, the index probe once (with V = Vmax); the
    worst status wins."""
    return _sweep([check_eq14(make(V), eps, timeout_ms, index_probe=V == Vmax) for V in range(1, Vmax + 1)], Vmax)


def _sweep(evs: list[Evidence], Vmax: int) -> Evidence:
    order = ["error", "inconclusive", "refuted", "proved"]
    worst = min(evs, key=lambda e: order.index(e.status))
    # report the largest V among those with the worst status (the headline bound)
    pick = [e for e in evs if e.status == worst.status][-1]
    pick.numbers["per_V"] = {str(i + 1): {"status": e.status, "obligations": e.numbers.get("obligations"),
                                          "threshold": e.numbers.get("separation_threshold_eps")}
                             for i, e in enumerate(evs)}
    pick.numbers["solver_seconds"] = round(sum(e.numbers.get("solver_seconds", 0) for e in evs), 3)
    probe = next((e.numbers["index_probe"] for e in evs if "index_probe" in e.numbers), None)
    if probe is not None:
        pick.numbers["index_probe"] = probe
    # every V's obligations (and their certificates) are evidence, not just the headline V's
    obligations = []
    for i, e in enumerate(evs):
        for ob in (e.certificate or {}).get("obligations", []):
            obligations.append({**ob, "name": f"V = {i + 1}: {ob['name']}"})
    if obligations:
        pick.certificate = {"obligations": obligations}
        prov = SolverProvenance(solvers=[])
        for i, e in enumerate(evs, start=1):
            if e.solver is not None:
                prov = prov.merged(e.solver, f"V = {i}: ")
        unsat_no_cert = sum(e.numbers.get("unsat_without_certificate", 0) for e in evs)
        certify_s = round(sum(e.numbers.get("certify_seconds", 0) for e in evs), 4)
        pick.solver = prov
        pick.numbers.update(provenance_numbers(prov))
        pick.numbers["unsat_without_certificate"] = unsat_no_cert
        pick.numbers["certify_seconds"] = certify_s
    pick.bound = f"every V = 1..{Vmax}; " + (pick.bound or "")
    return pick


def check_eq14(con: InductionKeyConstruction, eps: Fraction, timeout_ms: int = 20_000,
               pairs: Sequence[tuple[int, int]] | None = None, index_probe: bool = True) -> Evidence:
    """Bounded check of ws24 Eq. 14: the variant's reading of the score and the model's own
    score w_E(z_T)^T W^2_K Phi_1 w_E(z_s) both within A = REL_TOL * max|psi| of
    psi(z_T)[z_s = z_T] (with psi's sign at z_s = z_T), for every eps-family.

    Args:
        con: construction (V, psi, orientation).
        eps: near-orthogonality bound.
        timeout_ms: per-obligation budget.
        pairs: (z_s, z_T) token pairs to check (default: :func:`representative_pairs`).
        index_probe: also run the per-pair obligations of the index probe psi = (1, -2, 3)
            (every pair; see :func:`_probe`).
    """
    aw = InductionKeyConstruction(con.V, con.psi, "as-written", con.convention)
    tr = InductionKeyConstruction(con.V, con.psi, "transposed" if con.orientation == "transposed" else "read-score",
                                  con.convention)
    if pairs is None:
        pairs = representative_pairs(con)
    scale = _sym(max(abs(p) for p in con.psi)) or sp.Integer(1)
    A = sp.Rational(REL_TOL.numerator, REL_TOL.denominator) * scale
    rows = []
    for s_, T in pairs:
        if con.orientation == "read-score":
            Bd = triangle_bound(("w_E", T), con.W_model, ("Phi_1 w_E", s_))
        else:
            Bd = triangle_bound(("Phi_1 w_E", s_), con.W, ("w_E", T))
        rows.append((f"z_s = {s_}, z_T = {T}, reading", lambda g, s_=s_, T=T: con.displayed_score(s_, T, g),
                     con.target(s_, T), Bd, A, "displayed_score"))
        if con.orientation != "read-score":  # for read-score the reading is the model's score itself
            rows.append((f"z_s = {s_}, z_T = {T}, model score", lambda g, s_=s_, T=T: con.model_score(s_, T, g),
                         con.target(s_, T), triangle_bound(("w_E", T), con.W_model, ("Phi_1 w_E", s_)), A,
                         "model_score"))
    results, witness, problems, vacuous = _check_rows([r[:5] for r in rows], con.family(), eps, timeout_ms)
    probe_info = None
    if index_probe:
        p_results, p_witness, probe_info = _eq14_probe(con.orientation, eps, timeout_ms, con.convention)
        results += p_results
        witness = witness or p_witness
    B_aw = triangle_bound(("Phi_1 w_E", 1), aw.W, ("w_E", 1))
    B_tr = (triangle_bound(("w_E", 1), tr.W_model, ("Phi_1 w_E", 1)) if tr.orientation == "read-score"
            else triangle_bound(("Phi_1 w_E", 1), tr.W, ("w_E", 1)))
    thr, sep, sep_info = _separation(lambda g: aw.displayed_score(1, 1, g), lambda g: tr.displayed_score(1, 1, g), B_aw, B_tr,
                                     eps, timeout_ms, _proved_reading_bound(results, "z_s = 1, z_T = 1, reading", con.orientation))
    extra = {"bound_as_written": f"|(Phi_1 w_E(s))^T W w_E(T)| <= {B_aw} at s = T",
             "bound_repaired_reading": f">= psi(T) - ({B_tr}) at s = T",
             "allowance_A": f"{A} = {REL_TOL} * max|psi| (fixed up front, independent of the construction)",
             "vacuous_allowance": vacuous, **_score_numbers(rows, eps)}
    if probe_info is not None:
        extra["index_probe"] = probe_info
    if sep_info:
        extra["separation"] = sep_info
    return _evidence(
        "eq14", results, witness, problems, sep, thr, eps,
        bound_text=f"V = {con.V}, {len(pairs)} token pairs, every family of unit vectors with |<x, y>| <= eps = {eps} (Gram relaxation)",
        summary_ok=(f"UNSAT: no eps-family (eps = {eps}, V = {con.V}) puts the reading or the model's score "
                    f"w_E(T)^T W^2_K Phi_1 w_E(s) further than {A} from psi(T)[s = T]; the as-written display is "
                    f"strictly below the repaired reading for every eps < {thr}"),
        summary_fail=lambda w: (f"witness ({w['family']}, eps = {eps}): at {w['at']} the score is {w['score']} "
                                f"where psi(T)[s = T] = {w['statement_value']} +- {w['allowance_A(eps)']} "
                                f"(violated: {w.get('violated', 'the statement')}); "
                                f"for every eps-family |as-written display| <= {B_aw} and the repaired reading "
                                f">= psi(T) - ({B_tr}) at s = T; "
                                f"they separate for eps < {thr}"),
        extra_numbers=extra)
