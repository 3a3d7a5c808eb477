"""Solver layer for kvshift24:decode: incremental (KV-cache) decoding of KV-shift attention against
the full forward pass, bounded z3 proofs and certified witnesses.

Source: Xu et al., "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2: Sec. 2.2
Eqs. 4-6 (the layer), Appendix B (Theorem 2's parameters a1 = 0, a2 = 1, b1 = 1/sigma, b2 = 0),
Appendix F (the reference code: RoPE after the shift, the inference branch's shift state).  The slot
lists of both procedures come from :mod:`verify.constructions.kvshift24_pe` (defined once; this module
only evaluates them).

Obligations, all in fresh z3 contexts (see :func:`verify.solver.common.check`):

* (equality, one per prefill k = 1..Lmax-1)  "at some decoded position t = k+1..Lmax some output
  coefficient of incremental decoding differs from the full pass's".  Every inner product
  x_t^T R_delta x_p the scores use is a free real (arbitrary input vectors; a rotation by 0 is the
  identity), each softmax weight is ex(logit) for an *uninterpreted* function ex constrained only to
  be positive (a stand-in for exp), and the ALiBi distances of a query are taken relative to its
  smallest (softmax is unchanged when one constant is added to every logit, an exact property of exp).
  UNSAT: the two outputs have equal coefficients on every input position for every input and every
  positive stand-in, hence for exp; a decoded query at t depends on x_1..x_t only, so one obligation
  per prefill covers every L <= Lmax.  UNSAT is confirmed by cvc5 (no Farkas certificate exists for
  the uninterpreted stand-in): from z3 alone it is inconclusive.
* (model re-check)  a SAT answer's model (rational inner products and the stand-in's table) is
  plugged into the same slot lists in ``fractions.Fraction`` arithmetic: the difference must be
  nonzero there, else the layer is an error.  That shows the procedures differ as formulas; it is
  not yet a counterexample with exp.
* (witness)  a token input over orthonormal symbols, one per RoPE plane (as the symbolic layer's),
  the given sequence first, then the smallest token inputs with the first differing prefill: every
  logit is enclosed in a rational interval (cos of the RoPE angles by mpmath interval arithmetic,
  rounded outward), every weight lies in a rational enclosure of exp over that interval; z3 answers
  UNSAT to "every symbol coefficient of the decoded output is within delta of the full pass's", and
  the gap >= delta is re-checked outside z3 by Fraction interval arithmetic on the same boxes with
  an evaluator written here (not the construction's).  Only then is the layer ``refuted``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any, Callable, Sequence

import z3

from verify import balls
from verify.constructions import kvshift24 as kc  # kc.exp_enclosure looked up at call time
from verify.constructions import kvshift24_pe as pe_mod
from verify.constructions.kvshift24 import Variant, canonical_sequences
from verify.constructions.kvshift24_pe import PE, Decode, Query, plane_exponent, symbols_in_order
from verify.constructions.kvshift24_reference import exp_enclosure_sane
from verify.evidence import Evidence, Layer, Status, current_settings, engine_versions
from verify.faults import seam
from verify.solver.common import (
    ObligationResult,
    SolverAnswer,
    check,
    fresh_solver,
    provenance,
    provenance_numbers,
    rval,
    solve,
    solver_evidence,
    to_fraction,
)
from verify.solver.kvshift24 import decided_through, span

#: arb precision (bits) of the RoPE angles' enclosures (40 digits; flint's global precision is restored after)
ANGLE_PREC = 150
#: logit enclosures are rounded outward to this many decimal digits before exp is enclosed
LOGIT_DIGITS = 35
#: largest token input the witness search tries (the symbolic layer's search stops there too)
WITNESS_MAX_L = 6


def prefill_lengths(Lmax: int) -> list[int]:
    """The prefills whose equality obligation :func:`check_decode` solves: k = 1..Lmax-1, each over the decoded
    positions t = k+1..Lmax.  The bound the layer states is derived from the prefills actually solved
    (:func:`verify.solver.kvshift24.decided_through`), not from this list or from ``Lmax``."""
    return list(range(1, Lmax))


# ------------------------------------------------------------------ the equality obligations


def _relative(q: Query) -> Query:
    """The query with its ALiBi distances taken relative to its smallest (softmax shift invariance)."""
    low = min((sl.dist for sl in q.slots), default=0)
    return Query(q.t, q.rot, tuple(replace(sl, dist=sl.dist - low) for sl in q.slots))


def query_pairs(L: int, var: Variant, pe: PE, dec: Decode, sigma: Any) -> list[tuple[Query, Query]]:
    """(full-pass query, decoded query) at every decoded position t = k+1..L with a nonempty softmax.

    Args:
        L: the sequence length; dec.prefill < L.
        var, pe, dec: the layer variant, positional encoding and decode policy.
        sigma: the score scale in the caller's arithmetic (Fraction or a z3 number).

    Returns:
        Pairs in t order, distances relative to each query's smallest.
    """
    full = pe_mod.full_forward(L, var, pe, sigma)
    out = []
    for qd in pe_mod.decode(L, var, pe, dec, sigma):
        qf = full[qd.t - 1]
        if any(sl.den for sl in qf.slots) and any(sl.den for sl in qd.slots):
            out.append((_relative(qf), _relative(qd)))
    return out


def _equality_obligation(k: int, Lmax: int, var: Variant, pe: PE, dec: Decode, m: Fraction, sigma: Fraction,
                         timeout_ms: int) -> ObligationResult:
    d = Decode(k, dec.cache, dec.rope_offset, dec.alibi_distance)

    def build(ctx: z3.Context) -> list:
        zero = z3.RealVal(0, ctx)
        S, M = rval(ctx, sigma), rval(ctx, m)
        g: dict[tuple, Any] = {}
        ex = z3.Function("ex", z3.RealSort(ctx), z3.RealSort(ctx))  # a positive unknown standing for exp
        apps: dict[str, Any] = {}

        def dot(t: int, p: int, delta: int | None) -> Any:
            key = (t, p, delta or None)  # R_0 is the identity
            if key not in g:
                g[key] = z3.Real(f"g_{t}_{p}" + ("" if key[2] is None else f"_rot{key[2]}"), ctx)
            return g[key]

        def exp(a: Any) -> Any:
            w = ex(z3.simplify(a))
            apps.setdefault(w.sexpr(), w)
            return w

        differ = []
        for qf, qd in query_pairs(Lmax, var, pe, d, S):
            a = pe_mod.evaluate(qf, dot, S, M, exp, zero)
            b = pe_mod.evaluate(qd, dot, S, M, exp, zero)
            differ += [a.get(p, zero) != b.get(p, zero) for p in sorted(set(a) | set(b))]
        return [w > 0 for w in apps.values()] + [z3.Or(differ) if differ else z3.BoolVal(False, ctx)]

    name = (f"prefill {k}: some decoded output coefficient at t = {k + 1}..{Lmax} differs from the full pass's "
            f"(free inner products; ex(t), any positive function, in place of exp(t))")
    # z3 alone first: a SAT answer's model is re-evaluated exactly in Fractions (recheck_model), a stronger
    # second way than cvc5's 'sat' (which can take its whole budget on this nonlinear encoding); an UNSAT
    # answer is solved again under the run's settings, so cvc5 confirms it
    r = check(name, build, timeout_ms, second_opinion=False, certify=False)
    if r.answer == SolverAnswer.SAT and current_settings().second_opinion != "always":
        r.second_reason = "not run: the SAT model is re-evaluated exactly in Fractions instead"
    else:
        r = check(name, build, timeout_ms)
    if r.answer == SolverAnswer.SAT and "model value of ex" in r.reason:
        r.reason = "the model interprets ex, the positive stand-in for exp, as a table; re-checked below"
    if r.certificate_note.startswith("none (encoding beyond degree 2"):
        r.certificate_note = "none: no Farkas certificate, the encoding uses ex, an uninterpreted stand-in for exp"
    return r


def recheck_model(k: int, Lmax: int, var: Variant, pe: PE, dec: Decode, m: Fraction, sigma: Fraction,
                  timeout_ms: int) -> dict[str, Any] | None:
    """Solve the prefill-k equality obligation again and evaluate its model exactly in Fractions.

    The model's inner products and its table of the stand-in ex are plugged into the slot lists
    (:func:`verify.constructions.kvshift24_pe.evaluate`, Fraction arithmetic).

    Returns:
        ``{"t", "position", "full", "decoded"}`` (the first coefficient that differs, exact) or None when
        the model shows no difference (or z3 does not answer SAT again).
    """
    ctx, s = fresh_solver(timeout_ms)
    zero = z3.RealVal(0, ctx)
    S, M = rval(ctx, sigma), rval(ctx, m)
    g: dict[tuple, Any] = {}
    ex = z3.Function("ex", z3.RealSort(ctx), z3.RealSort(ctx))
    d = Decode(k, dec.cache, dec.rope_offset, dec.alibi_distance)

    def dot(t: int, p: int, delta: int | None) -> Any:
        return g.setdefault((t, p, delta or None), z3.Real(f"g_{t}_{p}_{delta or None}", ctx))

    def exp(a: Any) -> Any:
        w = ex(z3.simplify(a))
        s.add(w > 0)
        return w

    differ = []
    for qf, qd in query_pairs(Lmax, var, pe, d, S):
        a, b = pe_mod.evaluate(qf, dot, S, M, exp, zero), pe_mod.evaluate(qd, dot, S, M, exp, zero)
        differ += [a.get(p, zero) != b.get(p, zero) for p in set(a) | set(b)]
    if not differ:
        return None
    s.add(z3.Or(differ))
    if solve(s) != z3.sat:
        return None
    mdl = s.model()
    gval = {key: to_fraction(mdl.eval(v, model_completion=True)) for key, v in g.items()}

    def fdot(t: int, p: int, delta: int | None) -> Fraction:
        return gval.get((t, p, delta or None), Fraction(0))

    def fexp(lg: Fraction) -> Fraction:
        return to_fraction(mdl.eval(ex(rval(ctx, lg)), model_completion=True))

    for qf, qd in query_pairs(Lmax, var, pe, d, Fraction(sigma)):
        a = pe_mod.evaluate(qf, fdot, Fraction(sigma), Fraction(m), fexp, Fraction(0))
        b = pe_mod.evaluate(qd, fdot, Fraction(sigma), Fraction(m), fexp, Fraction(0))
        for p in sorted(set(a) | set(b)):
            if a.get(p, Fraction(0)) != b.get(p, Fraction(0)):
                return {"t": qd.t, "position": p, "full": a.get(p, Fraction(0)), "decoded": b.get(p, Fraction(0))}
    return None


# ------------------------------------------------------------------ certified token witnesses


def cos_enclosure(delta: int, j: int, V: int, base: int = pe_mod.ROPE_BASE) -> tuple[Fraction, Fraction]:
    """Rational lo <= cos(delta * theta_j) <= hi with theta_j = base^(-j/V) (the RoPE frequency of
    symbol j's plane, :func:`verify.constructions.kvshift24_pe.plane_exponent`): the exact ends of python-flint's
    arb ball around it."""
    from flint import arb, ctx, fmpq

    e = plane_exponent(j, V)
    with ctx.workprec(ANGLE_PREC):
        return balls.ends((delta * arb(base) ** arb(fmpq(e.numerator, e.denominator))).cos())


def _round_out(lo: Fraction, hi: Fraction) -> tuple[Fraction, Fraction]:
    sc = 10**LOGIT_DIGITS
    return Fraction(math.floor(lo * sc), sc), Fraction(math.ceil(hi * sc), sc)


class _Logits:
    """Exact canonical logits of token queries and their rational enclosures (shared by z3 and the
    Fraction re-check).  A logit is (constant, ((symbol, |delta|, coefficient), ...)): the cos terms
    of equal symbols under a rotation, the rest rational."""

    def __init__(self, x: Sequence[str], sigma: Fraction, m: Fraction,
                 cos_box: Callable[[int, int, int], tuple[Fraction, Fraction]]) -> None:
        self.x, self.sigma, self.m, self.cos_box = tuple(x), Fraction(sigma), Fraction(m), cos_box
        self.order = symbols_in_order(x)
        self.boxes: dict[tuple, tuple[Fraction, Fraction]] = {}

    def key(self, q: Query, sl: Any) -> tuple:
        const, cos_terms = Fraction(0), dict[tuple[int, int], Fraction]()
        for c, p, r in sl.key:
            if p == 0 or self.x[q.t - 1] != self.x[p - 1]:
                continue  # orthonormal symbols: distinct symbols (or the zero row) contribute 0
            delta = None if r is None else abs(r - q.rot)
            if not delta:
                const += Fraction(c)
            else:
                tag = (self.order.index(self.x[p - 1]), delta)
                cos_terms[tag] = cos_terms.get(tag, Fraction(0)) + Fraction(c)
        return (const / self.sigma - self.m * sl.dist,
                tuple(sorted((j, dl, c / self.sigma) for (j, dl), c in cos_terms.items() if c != 0)))

    def box(self, key: tuple) -> tuple[Fraction, Fraction]:
        """Rational enclosure of exp(logit)."""
        if key not in self.boxes:
            lo = hi = key[0]
            for j, dl, c in key[1]:
                clo, chi = self.cos_box(dl, j, len(self.order))
                lo, hi = lo + min(c * clo, c * chi), hi + max(c * clo, c * chi)
            lo, hi = _round_out(lo, hi)
            self.boxes[key] = (kc.exp_enclosure(lo)[0], kc.exp_enclosure(hi)[1])
        return self.boxes[key]


def _by_symbol(q: Query, x: Sequence[str], weight: Callable[[Any], Any], zero: Any, const: Callable[[Any], Any]
               ) -> dict[str, Any]:
    """The query's output as symbol coefficients, sum over numerator slots of c * w / Z (written here,
    independently of the construction's evaluator)."""
    ws = [weight(sl) for sl in q.slots]
    Z = zero
    for sl, w in zip(q.slots, ws):
        if sl.den:
            Z = Z + w
    out = {s: zero for s in symbols_in_order(x[:q.t])}
    for sl, w in zip(q.slots, ws):
        if sl.num:
            for c, p in sl.value:
                if p != 0 and c != 0:
                    out[x[p - 1]] = out[x[p - 1]] + const(c) * w / Z
    return out


class _Iv:
    """A closed rational interval [lo, hi] with the operations the evaluator uses (outward exact)."""

    def __init__(self, lo: Fraction | int, hi: Fraction | int | None = None) -> None:
        self.lo, self.hi = Fraction(lo), Fraction(lo if hi is None else hi)

    def __add__(self, o: "_Iv") -> "_Iv":
        return _Iv(self.lo + o.lo, self.hi + o.hi)

    def __mul__(self, o: "_Iv") -> "_Iv":
        ps = [self.lo * o.lo, self.lo * o.hi, self.hi * o.lo, self.hi * o.hi]
        return _Iv(min(ps), max(ps))

    def __truediv__(self, o: "_Iv") -> "_Iv":
        if o.lo <= 0 <= o.hi:
            raise ZeroDivisionError("interval divisor contains 0")
        return self * _Iv(1 / o.hi, 1 / o.lo)


@seam("solver.kvshift24_decode._gap")
def _gap(pairs: Sequence[tuple[Query, Query]], x: Sequence[str], lg: _Logits) -> tuple[Fraction, int, str]:
    """The largest certified separation between decoded and full symbol coefficients over the pairs,
    by Fraction interval arithmetic on the weight boxes: (gap, t, symbol), gap 0 when none separates."""
    best: tuple[Fraction, int, str] = (Fraction(0), 0, "")
    for qf, qd in pairs:
        def weight(sl: Any, q: Query) -> _Iv:
            return _Iv(*lg.box(lg.key(q, sl)))

        A = _by_symbol(qf, x, lambda sl: weight(sl, qf), _Iv(0), lambda c: _Iv(Fraction(c)))
        B = _by_symbol(qd, x, lambda sl: weight(sl, qd), _Iv(0), lambda c: _Iv(Fraction(c)))
        for s in A:
            g = max(B[s].lo - A[s].hi, A[s].lo - B[s].hi, Fraction(0))
            if g > best[0]:
                best = (g, qd.t, s)
    return best


def _round_down(gap: Fraction) -> Fraction:
    """A short rational delta with 0 < delta <= gap (two significant digits)."""
    e = 1
    while gap * 10**e < 10:
        e += 1
    return Fraction(math.floor(gap * 10**e), 10**e)


def _witness_obligation(pairs: Sequence[tuple[Query, Query]], x: Sequence[str], lg: _Logits, delta: Fraction | None,
                        timeout_ms: int) -> ObligationResult:
    """z3: weights in their boxes; delta None: the boxes alone (must be SAT: positive control), else
    'every symbol coefficient of every decoded position within delta of the full pass's'."""
    def build(ctx: z3.Context) -> list:
        zero = z3.RealVal(0, ctx)
        wv: dict[tuple, Any] = {}
        cons: list = []

        def weight(sl: Any, q: Query) -> Any:
            key = lg.key(q, sl)
            if key not in wv:
                wv[key] = z3.Real(f"w{len(wv)}", ctx)
                lo, hi = lg.box(key)
                cons.extend([wv[key] >= rval(ctx, lo), wv[key] <= rval(ctx, hi)])
            return wv[key]

        close = []
        for qf, qd in pairs:
            A = _by_symbol(qf, x, lambda sl: weight(sl, qf), zero, lambda c: rval(ctx, Fraction(c)))
            B = _by_symbol(qd, x, lambda sl: weight(sl, qd), zero, lambda c: rval(ctx, Fraction(c)))
            if delta is not None:
                dd = rval(ctx, delta)
                close += [z3.And(A[s] - B[s] < dd, B[s] - A[s] < dd) for s in A]
        return cons + ([z3.And(close)] if delta is not None else [])

    name = (f"x = ({', '.join(x)}): the weight boxes (exp enclosures) have a model" if delta is None else
            f"x = ({', '.join(x)}): every decoded symbol coefficient within {delta} of the full pass's "
            f"(weights in exp enclosures)")
    return check(name, build, timeout_ms, second_opinion=False, certify=False)


def certify_input(x: Sequence[str], k: int, var: Variant, pe: PE, dec: Decode, m: Fraction, sigma: Fraction,
                  timeout_ms: int, cos_box: Callable[[int, int, int], tuple[Fraction, Fraction]] | None = None
                  ) -> tuple[dict[str, Any] | None, list[ObligationResult], str]:
    """Certify that decoding with prefill k differs from the full pass on the token input x.

    Returns:
        (witness or None, obligations run, why not certified).  A witness has ``input``, ``prefill``,
        ``t``, ``symbol``, ``apart_by_at_least`` (delta), ``full`` and ``decoded`` (interval midpoints
        of that symbol's coefficient, floats) and ``rechecked_in``.
    """
    d = Decode(k, dec.cache, dec.rope_offset, dec.alibi_distance)
    pairs = query_pairs(len(x), var, pe, d, Fraction(sigma))
    lg = _Logits(x, sigma, m, cos_box or cos_enclosure)
    gap, t, sym = _gap(pairs, x, lg)
    if gap <= 0:
        return None, [], "the Fraction enclosures do not separate decoding from the full pass"
    delta = _round_down(gap)
    boxes = _witness_obligation(pairs, x, lg, None, timeout_ms)
    if boxes.answer != SolverAnswer.SAT:
        return None, [boxes], f"the weight boxes have no model (z3 {boxes.answer}): an UNSAT would be vacuous"
    r = _witness_obligation(pairs, x, lg, delta, timeout_ms)
    if r.answer != SolverAnswer.UNSAT:
        return None, [boxes, r], f"z3 {r.answer} on 'within {delta}'"
    # exact re-check outside z3 (the Fraction interval evaluation above, repeated on a fresh cache)
    again = _gap(pairs, x, _Logits(x, sigma, m, cos_box or cos_enclosure))
    if again[0] < delta:
        return None, [boxes, r], "the Fraction re-check does not confirm the gap"
    qf, qd = next(pq for pq in pairs if pq[1].t == t)
    mids = []
    for q in (qf, qd):
        def weight(sl: Any, q: Query = q) -> _Iv:
            return _Iv(*lg.box(lg.key(q, sl)))

        c = _by_symbol(q, x, weight, _Iv(0), lambda c: _Iv(Fraction(c)))[sym]
        mids.append(float((c.lo + c.hi) / 2))
    return ({"input": f"({', '.join(x)})", "prefill": k, "t": t, "symbol": sym, "apart_by_at_least": str(delta),
             "full": round(mids[0], 6), "decoded": round(mids[1], 6),
             "rechecked_in": "fractions.Fraction interval arithmetic on the exp and cos enclosures (gap >= delta)"},
            [boxes, r], "")


def _cos_enclosure_sane() -> list[str]:
    """The cos enclosure against math.cos at a few points (a wrong angle or base shows here)."""
    out = []
    for delta, j, V in ((1, 0, 1), (3, 1, 3), (-2, 2, 3), (5, 1, 2)):
        lo, hi = cos_enclosure(delta, j, V)
        ref = math.cos(delta * pe_mod.ROPE_BASE ** (-j / V))
        if not (lo <= hi and float(lo) - 1e-12 <= ref <= float(hi) + 1e-12 and hi - lo < Fraction(1, 10**30)):
            out.append(f"cos enclosure at delta = {delta}, plane {j}/{V}: [{float(lo):.15g}, {float(hi):.15g}] "
                       f"does not hold cos = {ref:.15g} tightly")
    return out


# ------------------------------------------------------------------ the layer


def check_decode(x: Sequence[str], var: Variant, m: Fraction, sigma: Fraction, pe: PE, dec: Decode, Lmax: int = 8,
                 timeout_ms: int = 20_000) -> Evidence:
    """Bounded solver check of the decode-consistency claim.

    Args:
        x: the given token sequence (orthonormal symbols here, even when the claim was given an
            embeddings file; the symbolic and numeric layers use the file).
        var: the Theorem 2 variant of the layer; m, sigma: ALiBi slope and score scale (rationals).
        pe: the positional encoding (RoPE placement, ALiBi on/off).
        dec: the decode policy; its prefill is the given input's.
        Lmax: equality is proved for every L <= Lmax and prefill 1..L-1.
        timeout_ms: per-obligation budget.

    Returns:
        ``proved`` (every prefill UNSAT, confirmed by cvc5), ``refuted`` (a structural SAT whose model
        re-checks in Fractions and a token input with a certified gap), ``inconclusive`` (unknown,
        z3-only UNSAT, fewer prefills solved than Lmax asks, or no certified token input) or ``error``
        (a failed control or re-check).  The stated bound is every L <= hi where the prefills 1..hi-1
        were solved UNSAT (each over t <= Lmax), never ``Lmax`` itself.

    Raises:
        ValueError: Lmax < 2.
    """
    if Lmax < 2:
        raise ValueError(f"Lmax must be >= 2, got {Lmax}")
    return describe_decode(decide_decode(x, var, m, sigma, pe, dec, Lmax, timeout_ms))


@dataclass
class DecodeDecision:
    """What the solver decided for the decode-consistency claim: the values the verdict depends on.

    Attributes:
        k0, control: the positive control's prefill and obligation (raw-key cache, correct offsets).
        problems: failed enclosure checks and a failed control; any makes the layer an error.
        eq, prefills: the equality obligations solved, one per prefill, stopping at the first not UNSAT.
        first_sat: the first prefill whose obligation is SAT (the slot lists differ), else None.
        exact: z3's model at ``first_sat`` re-evaluated in Fractions (None when it shows no difference).
        witness: the first token input with a certified gap, or None; ``witness_prefill`` its prefill.
        witness_obs: the witness search's obligations (None when no candidate was tried).
        tried: the candidates without a certified gap, with why; ``tried_sizes``: (L, vocabulary) of every
            candidate.
    """

    x: Sequence[str]
    var: Variant
    m: Fraction
    sigma: Fraction
    pe: PE
    dec: Decode
    Lmax: int
    k0: int
    control: ObligationResult
    problems: list[str]
    eq: list[ObligationResult] = field(default_factory=list)
    prefills: list[int] = field(default_factory=list)
    first_sat: int | None = None
    exact: dict | None = None
    witness: dict | None = None
    witness_prefill: int = 0
    witness_obs: list[ObligationResult] | None = None
    tried: list[str] = field(default_factory=list)
    tried_sizes: list[tuple[int, int]] = field(default_factory=list)


def decide_decode(x: Sequence[str], var: Variant, m: Fraction, sigma: Fraction, pe: PE, dec: Decode, Lmax: int,
                  timeout_ms: int) -> DecodeDecision:
    """Run the enclosure checks, the positive control, the equality obligation per prefill and, after a
    SAT, the model re-check and the token witness search (:func:`check_decode` describes the result)."""
    # the enclosures every witness rests on, against mpmath's interval exp and math.cos, before any verdict
    problems = exp_enclosure_sane(kc.exp_enclosure) + _cos_enclosure_sane()
    # positive control: the raw-key cache with correct offsets must be proved equal (prefill 2 or 1)
    k0 = min(2, Lmax - 1)
    control = _equality_obligation(k0, min(Lmax, 5), var, pe, Decode(k0), m, sigma, timeout_ms)
    if control.answer != SolverAnswer.UNSAT:
        problems.append(f"positive control: the raw-key cache with correct offsets (prefill {k0}) was not proved equal "
                        f"to the full pass (z3 {control.answer})")
    d = DecodeDecision(x, var, m, sigma, pe, dec, Lmax, k0, control, problems)
    for k in prefill_lengths(Lmax):
        r = _equality_obligation(k, Lmax, var, pe, dec, m, sigma, timeout_ms)
        d.eq.append(r)
        d.prefills.append(k)
        if r.answer != SolverAnswer.UNSAT:
            d.first_sat = k if r.answer == SolverAnswer.SAT else None
            break
    if problems or d.first_sat is None:
        return d
    first_sat = d.first_sat
    d.exact = recheck_model(first_sat, Lmax, var, pe, dec, m, sigma, timeout_ms)
    if d.exact is None:
        return d
    # a token input with a certified gap: the given one first, then the smallest with that prefill
    cands: list[tuple[tuple[str, ...], int]] = [(tuple(x), dec.prefill)] if dec.prefill < len(x) else []
    cands += [(xx, first_sat) for L in range(first_sat + 1, min(Lmax, WITNESS_MAX_L) + 1) for V in range(1, 4)
              for xx in canonical_sequences(L, V) if (xx, first_sat) not in cands]
    d.tried_sizes = [(len(xx), len(set(xx))) for xx, _ in cands]  # every candidate is tried before the inconclusive end
    for xx, k in cands:
        w, obs, why = certify_input(xx, k, var, pe, dec, m, sigma, timeout_ms)
        d.witness_obs = (d.witness_obs or []) + list(obs)
        if w is None:
            d.tried.append(f"({', '.join(xx)}), prefill {k}: {why}")
            continue
        w["is_given_input"] = (tuple(xx), k) == (tuple(x), dec.prefill)
        d.witness, d.witness_prefill = w, k
        break
    return d


def describe_decode(d: DecodeDecision) -> Evidence:
    """The solver Evidence for a :class:`DecodeDecision`: proved or inconclusive (every prefill solved UNSAT,
    or fewer than asked), error (a failed check, a model that does not re-check), refuted (a token input with
    a certified gap) or inconclusive (no such input)."""
    engines = engine_versions("z3", "cvc5")
    eq, Lmax, first_sat = d.eq, d.Lmax, d.first_sat
    numbers: dict[str, Any] = {"Lmax": Lmax, "prefills_checked": len(d.prefills),
                               "equality_answers": [r.answer for r in eq], "m": str(d.m), "sigma": str(d.sigma),
                               "solver_seconds": round(sum(r.seconds for r in eq), 3),
                               "exp_encoding": ("equality: ex(t), an uninterpreted positive function standing for "
                                                "exp(t), ALiBi distances relative to the query's smallest; witness: "
                                                "one unknown per distinct logit inside a rational enclosure of exp")}
    cert: dict[str, Any] = {"control": d.control.summary(), "equality": [r.summary() for r in eq]}
    details = [f"{r.name}: {r.answer.upper()}" for r in eq] + [
        f"positive control (raw-key, correct offsets, prefill {d.k0}, L <= {min(Lmax, 5)}): {d.control.answer.upper()}"]
    results = [d.control] + eq
    if d.problems or first_sat is None:
        return _decode_equal(d, engines, cert, numbers, details)
    if d.exact is None:
        return solver_evidence(results, proved="", engines=engines, certificate=cert, numbers=numbers, details=details,
                               problems=[f"prefill {first_sat}: z3's model does not show a difference when re-evaluated "
                                         f"in Fractions"])
    exact = d.exact
    numbers["model_recheck"] = {"prefill": first_sat, **exact}
    details.append(f"z3 model re-evaluated in Fractions (prefill {first_sat}, t = {exact['t']}): coefficient of "
                   f"x_{exact['position']} is {exact['full']} in the full pass, {exact['decoded']} decoded")
    if d.witness_obs is not None:
        # (kept out of the provenance: the witness rests on its Fraction re-check, cvc5 is not asked)
        cert["witness"] = [o.summary() for o in d.witness_obs]
    numbers["inputs_tried_before"] = d.tried
    w = d.witness
    if w is not None:
        summary = (f"{w['input']}, prefill {d.witness_prefill}: at t = {w['t']} the coefficient of {w['symbol']} is "
                   f"{w['full']:.6g} in the full pass and {w['decoded']:.6g} decoded, apart by >= "
                   f"{w['apart_by_at_least']} (z3 UNSAT of 'within {w['apart_by_at_least']}', re-checked in Fractions); "
                   f"structure differs from prefill {first_sat}")
        details.append(f"witness: {summary}")
        return solver_evidence(results, proved="", refuted=(summary, w), engines=engines, certificate=cert,
                               numbers=numbers, details=details,
                               bound=f"exact, on the witness input; structure checked for L <= {Lmax}")
    prov = provenance(results)
    numbers.update(provenance_numbers(prov, results))
    sizes = d.tried_sizes
    return Evidence(layer=Layer.SOLVER, status=Status.INCONCLUSIVE, engines=engines, certificate=cert, numbers=numbers,
                    details=details, solver=prov,
                    bound=(f"token inputs up to L = {max(L for L, _ in sizes)}, vocabulary <= "
                           f"{max(V for _, V in sizes)}" if sizes else "no token input tried"),
                    summary=(f"the slot lists differ from prefill {first_sat} (z3 SAT, model re-checked in Fractions) "
                             f"but no token input (vocabulary <= 3) has a certified gap"))


def _decode_equal(d: DecodeDecision, engines: dict, cert: dict, numbers: dict, details: list[str]) -> Evidence:
    """No SAT prefill, or a failed check: prefills 1..hi-1 solved UNSAT, each over t <= Lmax, cover every
    L <= hi (a decoded query at t depends on x_1..x_t only); fewer prefills than Lmax asks is
    inconclusive, never 'proved'."""
    eq, prefills, Lmax, dec = d.eq, d.prefills, d.Lmax, d.dec
    hi = min(Lmax, decided_through(1, [k for k, r in zip(prefills, eq) if r.answer == SolverAnswer.UNSAT]) + 1)
    unsettled = [k for k, r in zip(prefills, eq) if r.answer != SolverAnswer.UNSAT]
    short = ("" if unsettled or hi >= Lmax else
             f"prefills k = {span([k for k in range(1, Lmax) if k not in prefills])} not checked (L <= {Lmax} asked)")
    bound = (f"every L <= {hi}, every prefill 1..L-1, every input, any positive function ex(t) in place of exp(t)"
             + (f"; {short}" if short else "") if not unsettled else
             f"UNSAT at prefills k = {span(range(1, hi))}, {eq[len(prefills) - 1].answer} at k = {unsettled[0]}, "
             f"L <= {Lmax} asked")
    ev = solver_evidence(
        [d.control] + eq, engines=engines, certificate=cert, numbers=numbers, details=details, problems=d.problems,
        bound=bound,
        proved=(f"UNSAT for every prefill k < {hi}: decoding with cache {dec.cache}, RoPE offset "
                f"{dec.rope_offset}, ALiBi distance {dec.alibi_distance} has the full pass's coefficients at "
                f"every position t <= {hi} (free inputs, any positive stand-in for exp)"))
    if ev.status == Status.PROVED and short:
        ev = replace(ev, status=Status.INCONCLUSIVE, outcome=None, summary=f"UNSAT for every prefill k < {hi} only: {short}")
    return ev
