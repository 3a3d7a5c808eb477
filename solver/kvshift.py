"""Solver layer for kvshift24 Theorem 2 (IH = KVSA): bounded z3 proofs and exact witnesses.

Source: Xu et al., arXiv 2411.19574 v2, Theorem 2 (Appendix B construction), Definition 1.

exp is irrational, so the encodings never evaluate it:
* (equality, per L <= Lmax)  the inner products g_i = <x_L, x_i> are free reals and each
  softmax weight is E(l_t) for an *uninterpreted* function E with E > 0.  The obligation
  "some output coefficient of KVSA differs from IH's" is UNSAT exactly when the two
  outputs are equal for every input (arbitrary vectors: equal coefficients on every
  position give equal vectors) and for every positive function in place of exp, a
  fortiori for exp.  SAT means the term structure differs; a concrete witness is then
  searched.
* (witness)  token inputs x over a vocabulary of orthonormal embeddings (A.A = 1,
  A.B = 0); each weight exp(l_t) is a positive unknown w_t confined to a rigorous
  rational enclosure [lo_t, hi_t] of exp(l_t) (Taylor series with remainder,
  verify.constructions.kvshift.exp_enclosure) and ordered like its exponent
  (monotonicity).  The obligation "every token coefficient of KVSA is within delta of
  IH's" is UNSAT: the outputs are apart by at least the rational delta.  Smaller
  inputs are first shown not to be witnesses (UNSAT of "differ" with free positive
  weights) or skipped when their difference is not decided.  The witness is re-checked
  outside z3 with Fraction interval arithmetic.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import z3

from verify.constructions.kvshift import (
    Term,
    Variant,
    canonical_sequences,
    evaluate_weighted,
    fmt_vector,
    outward,
    scale_only,
    ih_terms,
    interval_coefficients,
    kvsa_terms,
    logits,
    token_dot,
)
from verify.evidence import Evidence, engine_versions
from verify.solver.common import solver_summary, ObligationResult, check, rval


def _equality_obligation(L: int, var: Variant, m: Fraction, sigma: Fraction, timeout_ms: int) -> ObligationResult:
    def build(ctx: z3.Context):
        g = {i: z3.Real(f"g_{i}", ctx) for i in range(1, L + 1)}  # <x_L, x_i>
        E = z3.Function("E", z3.RealSort(ctx), z3.RealSort(ctx))
        cons = []
        sig, mm = rval(ctx, sigma), rval(ctx, m)
        zero = z3.RealVal(0, ctx)

        def weights(terms: Sequence[Term]):
            ls = logits(terms, lambda i: g[i] if i else zero, sig, mm, zero)
            ws = [E(z3.simplify(lg)) for lg in ls]
            cons.extend(w > 0 for w in ws)
            return ws

        kt, it = kvsa_terms(L, var, sigma), ih_terms(L)
        kv = evaluate_weighted(kt, weights(kt), zero)
        ih = evaluate_weighted(it, weights(it), zero)
        idx = sorted(set(kv) | set(ih))
        differ = z3.Or([kv.get(i, zero) != ih.get(i, zero) for i in idx])
        return cons + [differ]

    return check(f"L = {L}: some coefficient of KVSA differs from IH's (free inputs, any positive E in place of exp)",
                 build, timeout_ms)


def _witness_obligation(x: tuple[str, ...], var: Variant, m: Fraction, sigma: Fraction, delta: Fraction | None,
                        timeout_ms: int) -> ObligationResult:
    """delta None: 'KVSA differs from IH' with free positive weights; else 'all within delta'
    with weights in exp enclosures."""
    from verify.constructions.kvshift import exp_enclosure

    L = len(x)
    dot = token_dot(x)
    kt, it = kvsa_terms(L, var, sigma), ih_terms(L)

    def build(ctx: z3.Context):
        zero = z3.RealVal(0, ctx)
        cons = []

        def weights(terms, tag):
            ls = logits(terms, lambda i: Fraction(dot(i)), Fraction(sigma), Fraction(m), Fraction(0))
            ws = []
            shared: dict[Fraction, Any] = {}
            for lg in ls:
                if lg not in shared:
                    w = z3.Real(f"exp({lg})", ctx)
                    shared[lg] = w
                    cons.append(w > 0)
                    if delta is not None:
                        lo, hi = exp_enclosure(lg)
                        cons.extend([w >= rval(ctx, lo), w <= rval(ctx, hi)])
                ws.append(shared[lg])
            return ws, shared

        wk, sk = weights(kt, "k")
        wi, si = weights(it, "i")
        allw = {**sk, **si}
        keys = sorted(allw)
        for a, b in zip(keys, keys[1:]):
            cons.append(allw[a] < allw[b])  # monotonicity of exp
        kv = evaluate_weighted(kt, wk, zero)
        ih = evaluate_weighted(it, wi, zero)
        toks = sorted(set(x))
        tk = {t: sum((kv.get(i, zero) for i in range(1, L + 1) if x[i - 1] == t), zero) for t in toks}
        ti = {t: sum((ih.get(i, zero) for i in range(1, L + 1) if x[i - 1] == t), zero) for t in toks}
        if delta is None:
            return cons + [z3.Or([tk[t] != ti[t] for t in toks])]
        d = rval(ctx, delta)
        return cons + [z3.And([z3.And(tk[t] - ti[t] < d, ti[t] - tk[t] < d) for t in toks])]

    what = ("KVSA differs from IH (any positive monotone weights)" if delta is None
            else f"every token coefficient of KVSA within {delta} of IH's (weights in exp enclosures)")
    return check(f"x = ({', '.join(x)}): {what}", build, timeout_ms)


def _tok_intervals(terms, x, sigma, m):
    iv = interval_coefficients(terms, token_dot(x), Fraction(sigma), Fraction(m))
    out: dict[str, list[Fraction]] = {}
    for i, (lo, hi) in iv.items():
        t = x[i - 1]
        a = out.setdefault(t, [Fraction(0), Fraction(0)])
        a[0] += lo
        a[1] += hi
    for t in x:
        out.setdefault(t, [Fraction(0), Fraction(0)])
    return out


def _gap(x, var, m, sigma) -> tuple[Fraction, str, dict, dict]:
    L = len(x)
    kv = _tok_intervals(kvsa_terms(L, var, Fraction(sigma)), x, sigma, m)
    ih = _tok_intervals(ih_terms(L), x, sigma, m)
    best, tok = Fraction(0), ""
    for t in sorted(set(x)):
        g = max(kv[t][0] - ih[t][1], ih[t][0] - kv[t][1], Fraction(0))
        if g > best:
            best, tok = g, t
    return best, tok, kv, ih


def find_witness(var: Variant, m: Fraction, sigma: Fraction, timeout_ms: int, max_L: int = 6, max_V: int = 3
                 ) -> tuple[dict | None, list[ObligationResult]]:
    """The smallest (L, vocabulary, x) whose outputs are apart by a rational delta > 0.

    Candidates in order L = 3.., V = 1.., induction prompts first
    (:func:`verify.constructions.kvshift.canonical_sequences`).  A candidate is skipped
    when z3 proves KVSA = IH on it (UNSAT of "differ" for any positive monotone weights),
    or when the Fraction enclosures do not separate it; the first separated candidate is
    certified by z3 (UNSAT of "all within delta") and re-checked in Fractions.

    Returns:
        (witness dict or None, obligations run).
    """
    obligations: list[ObligationResult] = []
    skipped: list[str] = []
    for L in range(3, max_L + 1):
        for V in range(1, max_V + 1):
            for x in canonical_sequences(L, V):
                gap, tok, kv, ih = _gap(x, var, m, sigma)
                if gap <= 0:
                    r = _witness_obligation(x, var, m, sigma, None, timeout_ms)
                    obligations.append(r)
                    skipped.append(f"({', '.join(x)}): {'equal (proved)' if r.answer == 'unsat' else 'not separated'}")
                    continue
                delta = Fraction(math.floor(gap * 10**4), 10**4) or gap
                r = _witness_obligation(x, var, m, sigma, delta, timeout_ms)
                obligations.append(r)
                if r.answer != "unsat":
                    skipped.append(f"({', '.join(x)}): z3 {r.answer}")
                    continue
                # exact re-check outside z3: Fraction enclosures apart by >= delta on `tok`
                ok = (kv[tok][0] - ih[tok][1] >= delta) or (ih[tok][0] - kv[tok][1] >= delta)
                if not ok:
                    skipped.append(f"({', '.join(x)}): Fraction re-check failed")
                    continue
                mid = {t: (kv[t][0] + kv[t][1]) / 2 for t in sorted(set(x))}
                ihm = {t: (ih[t][0] + ih[t][1]) / 2 for t in sorted(set(x))}
                return ({"x": x, "L": L, "V": V, "delta": delta, "token": tok, "KVSA": mid, "IH": ihm,
                         "KVSA_enclosure": {t: [str(v) for v in outward(kv[t][0], kv[t][1])] for t in kv},
                         "smaller_candidates": skipped}, obligations)
    return None, obligations


def _vec(c: dict) -> str:
    return fmt_vector(c)


def check_theorem2(var: Variant, m: Fraction, sigma: Fraction, Lmax: int = 12, timeout_ms: int = 20_000) -> Evidence:
    """Bounded solver check of kvshift24 Theorem 2 for a variant at (m, sigma).

    Args:
        var: the KVSA variant.
        m, sigma: ALiBi slope and score scale (rationals; sigma > 0).
        Lmax: equality is proved for every L in 3..Lmax.
        timeout_ms: per-obligation budget.

    Returns:
        ``proved`` (every L <= Lmax UNSAT), ``refuted`` (a witness apart by a rational
        delta, certified by z3 and re-checked in Fractions), or ``inconclusive``.
    """
    eq = []
    first_sat = None
    for L in range(3, Lmax + 1):
        r = _equality_obligation(L, var, m, sigma, timeout_ms)
        eq.append(r)
        if r.answer == "sat":
            first_sat = L
            break
        if r.answer == "unknown":
            break
    cert = {"equality": [r.summary() for r in eq]}
    numbers: dict[str, Any] = {"Lmax": Lmax, "equality_answers": [r.answer for r in eq], "m": str(m), "sigma": str(sigma),
                               "solver_seconds": round(sum(r.seconds for r in eq), 3),
                               "exp_encoding": "uninterpreted positive E (equality); positive unknowns in rational "
                                               "exp enclosures, ordered by exponent (witness)"}
    numbers.update(solver_summary(eq))
    base = dict(layer="solver", engines=engine_versions("z3", "cvc5"), certificate=cert, numbers=numbers)
    unknown = [r for r in eq if r.answer == "unknown"]
    if unknown:
        return Evidence(status="inconclusive", summary=f"{unknown[0].name}: unknown ({unknown[0].reason})",
                        bound=f"L <= {Lmax}", **base)
    if first_sat is None:
        return Evidence(status="proved", bound=f"every L in 3..{Lmax}, every input vectors, any positive E in place of exp",
                        summary=(f"UNSAT for every L <= {Lmax}: KVSA[{var.name}] and IH have equal coefficients on every "
                                 f"position (sigma = {sigma}, m = {m}); no witness up to the bound"),
                        details=[f"{r.name}: {r.answer.upper()} ({r.seconds:.2f} s)" for r in eq], **base)
    w, obs = find_witness(var, m, sigma, timeout_ms)
    cert["witness_search"] = [{"name": r.name, "answer": r.answer, "seconds": r.seconds} for r in obs]
    numbers["solver_seconds"] = round(numbers["solver_seconds"] + sum(r.seconds for r in obs), 3)
    if w is None:
        unk = [r for r in obs if r.answer == "unknown"]
        return Evidence(status="inconclusive", bound="L <= 6, vocabulary <= 3",
                        summary=f"the term structure differs at L = {first_sat} but no certified token witness up to L = 6"
                                + (f" ({len(unk)} unknown)" if unk else ""), **base)
    xs = ", ".join(w["x"])
    ih_txt, kv_txt = _vec(w["IH"]), _vec(w["KVSA"])
    witness = {"x": f"({xs})", "L": w["L"], "vocabulary": w["V"], "m": str(m), "sigma": str(sigma),
               "IH": ih_txt, "KVSA": kv_txt,
               "KVSA_coefficients": {t: round(float(v), 4) for t, v in w["KVSA"].items()},
               "IH_coefficients": {t: round(float(v), 4) for t, v in w["IH"].items()},
               "apart_by_at_least": str(w["delta"]), "on_token": w["token"],
               "KVSA_enclosure": w["KVSA_enclosure"],
               "rechecked_in": "fractions.Fraction interval enclosures of exp (gap >= delta)"}
    numbers["smaller_candidates"] = w["smaller_candidates"]
    scale = scale_only(w["KVSA"], w["IH"], sigma, 1e-6)
    if scale:
        witness["value_scale"] = f"KVSA = IH / sigma: the value scale b1 = 1/sigma = {1 / Fraction(sigma)}"
    return Evidence(status="refuted", witness=witness, bound=f"smallest (L, vocabulary); structure differs from L = {first_sat}",
                    summary=(f"x = ({xs}), m = {m}, sigma = {sigma}: IH = {ih_txt}; KVSA = {kv_txt}; "
                             f"|KVSA - IH| >= {w['delta']} on {w['token']} (z3 UNSAT of 'within {w['delta']}', "
                             f"re-checked in Fractions)" + (f"; KVSA = IH / sigma: the value scale b1 = 1/sigma" if scale else "")),
                    details=[f"{r.name}: {r.answer.upper()}" for r in eq] + [f"smaller inputs: {'; '.join(w['smaller_candidates']) or 'none'}"],
                    **base)
