"""Symbolic layer (exact sympy) for kvshift24 on the user's own inputs: Theorem 2 on a given token
sequence or embedding file under a positional-encoding placement, and the decode-consistency claim.

Source: Xu et al., arXiv 2411.19574 v2: Definition 1 (IH), Sec. 2.2 Eqs. 4-6, Appendix B (Theorem 2's
parameters), Appendix F (reference code: RoPE after the shift; the inference branch's shift state).
The constructions are :mod:`verify.constructions.kvshift24_pe` (slot lists) and
:mod:`verify.constructions.kvshift24` (IH's term table); this module evaluates them with sympy.

Exactness: every output coefficient is a sympy expression in exp, cos and rationals.  A difference is
*zero* when sympy simplifies it to 0 or its value at 60 significant digits is below 1e-40 in absolute
value, *nonzero* when that value is above 1e-40 (the rule is printed with every result).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Sequence

import sympy as sp

from verify.constructions import kvshift24_pe as pe_mod
from verify.constructions.kvshift24 import Variant, canonical_sequences, ih_terms, join_signed, kvsa_terms
from verify.constructions.kvshift24 import evaluate as tt_evaluate
from verify.constructions.kvshift24_pe import PE, Decode, decode, first_mismatch, full_forward, symbols_in_order
from verify.evidence import Evidence, Layer, Status, engine_versions

#: sign rule of an exact difference (see the module docstring)
DIGITS = 60
ZERO_BELOW = sp.Float("1e-40", DIGITS)
RULE = "exact sympy expressions; nonzero when |value| > 1e-40 at 60 significant digits"


def q(x: Any) -> sp.Expr:
    """An exact sympy number from an int, Fraction or float (floats converted exactly)."""
    f = Fraction(x)
    return sp.Rational(f.numerator, f.denominator)


def is_nonzero(e: Any) -> bool:
    """The sign rule of :data:`RULE` for one exact expression."""
    e = sp.sympify(e)
    if e == 0:
        return False
    return bool(abs(sp.N(e, DIGITS)) > ZERO_BELOW)


def token_dot(x: Sequence[str], base: Any = pe_mod.ROPE_BASE):
    """``(t, p, delta) -> x_t^T R_delta x_p`` for orthonormal symbol embeddings, one symbol per RoPE
    plane (symbol j = e_{2j}, width 2V, frequency base^(-j/V)): 1 or 0 without rotation, cos(delta
    theta_j) between equal symbols under a rotation by delta positions."""
    order = symbols_in_order(x)
    V = len(order)
    theta = {s: sp.Integer(base) ** q(pe_mod.plane_exponent(j, V)) for j, s in enumerate(order)}

    def dot(t: int, p: int, delta: int | None) -> sp.Expr:
        if x[t - 1] != x[p - 1]:
            return sp.Integer(0)
        if not delta:
            return sp.Integer(1)
        return sp.cos(delta * theta[x[t - 1]])

    return dot


def vector_dot(X: Sequence[Sequence[Fraction]], base: Any = pe_mod.ROPE_BASE):
    """``(t, p, delta) -> x_t^T R_delta x_p`` for explicit rational rows (RoPE on coordinate pairs
    (2i, 2i+1) with frequency base^(-2i/d); d must be even when a rotation is asked for)."""
    d = len(X[0])

    def dot(t: int, p: int, delta: int | None) -> sp.Expr:
        u, v = [q(a) for a in X[t - 1]], [q(a) for a in X[p - 1]]
        if not delta:
            return sum((a * b for a, b in zip(u, v)), sp.Integer(0))
        out = sp.Integer(0)
        for i in range(d // 2):
            phi = delta * sp.Integer(base) ** q(Fraction(-2 * i, d))
            a0, a1, b0, b1 = u[2 * i], u[2 * i + 1], v[2 * i], v[2 * i + 1]
            out += sp.cos(phi) * (a0 * b0 + a1 * b1) + sp.sin(phi) * (a1 * b0 - a0 * b1)
        return out

    return dot


def _by_symbol(coefs: dict[int, Any], x: Sequence[str]) -> dict[str, sp.Expr]:
    out = {s: sp.Integer(0) for s in symbols_in_order(x)}
    for p, c in coefs.items():
        out[x[p - 1]] += c
    return out


def _vector(coefs: dict[int, Any], X: Sequence[Sequence[Fraction]]) -> list[sp.Expr]:
    return [sum((c * q(X[p - 1][j]) for p, c in coefs.items()), sp.Integer(0)) for j in range(len(X[0]))]


def fmt(vec: dict[str, Any], digits: int = 4) -> str:
    """'0.5 B + 0.5 C' from symbol coefficients (order of first appearance)."""
    parts = []
    for s, c in vec.items():
        v = float(sp.N(c, 30))
        if abs(v) < 0.5 * 10 ** -digits:
            continue
        parts.append(s if abs(v - 1) < 0.5 * 10 ** -digits else f"{v:.{digits}g} {s}")
    return join_signed(parts)


def ih_output(L: int, dot, sigma: sp.Expr, m: sp.Expr) -> dict[int, sp.Expr]:
    """IH (Definition 1, Eq. 7) at position L as coefficients on positions (no RoPE in IH)."""
    return tt_evaluate(ih_terms(L), lambda i: dot(L, i, None) if i else sp.Integer(0), sigma, m, sp.exp, sp.Integer(0))


# ------------------------------------------------------------------ Theorem 2 on the user's input


def theorem2_on_input(x: Sequence[str], var: Variant, m: Fraction, sigma: Fraction, pe: PE,
                      X: Sequence[Sequence[Fraction]] | None = None) -> dict[str, Any]:
    """IH, KVSA (with the PE placement) and KVSA - IH at the last position of one input, exactly.

    Args:
        x: the symbol sequence (L >= 3).
        var: the Theorem 2 variant (``none``, ``mask``, ``mask+scale``).
        m, sigma: ALiBi slope and score scale (rationals).
        pe: RoPE placement and ALiBi placement.
        X: the embedding rows per position (rationals, converted exactly from the file's floats), or
            None for orthonormal symbols (one per RoPE plane).

    Returns:
        dict with ``IH``, ``KVSA``, ``difference`` (symbol -> expression text, or coordinate list),
        ``max_abs_difference`` (float), ``nonzero`` (bool, :data:`RULE`), ``input_class``, ``text``,
        and ``table_check`` (without RoPE and with the slot ALiBi distance, KVSA must equal the
        Theorem 2 term table's value exactly: a machinery check; True, False or None when n/a).
    """
    L = len(x)
    S, M = q(sigma), q(m)
    dot = vector_dot(X) if X is not None else token_dot(x)
    kv = pe_mod.evaluate(full_forward(L, var, pe, S)[-1], dot, S, M, sp.exp, sp.Integer(0))
    ih = ih_output(L, dot, S, M)
    check = None
    if pe.rope == "none" and pe.alibi_placement == "after-shift" and pe.alibi == var.alibi:
        tt = tt_evaluate(kvsa_terms(L, var, S), lambda i: dot(L, i, None) if i else sp.Integer(0), S, M, sp.exp,
                         sp.Integer(0))
        check = all(not is_nonzero(kv.get(p, 0) - tt.get(p, 0)) for p in set(kv) | set(tt))
    if X is None:
        K, I = _by_symbol(kv, x), _by_symbol(ih, x)
        D = {s: K[s] - I[s] for s in K}
        nz = any(is_nonzero(v) for v in D.values())
        mx = max(abs(float(sp.N(v, 30))) for v in D.values())
        text = f"x = ({', '.join(x)}): IH = {fmt(I)}; KVSA = {fmt(K)}; KVSA - IH = {fmt(D, 6)}"
        shown: dict[str, Any] = {k: {s: str(sp.nsimplify(v)) if len(str(v)) < 200 else f"{float(sp.N(v, 30)):.12g}"
                     for s, v in d.items()} for k, d in (("IH", I), ("KVSA", K), ("difference", D))}
    else:
        Kv, Iv = _vector(kv, X), _vector(ih, X)
        Dv = [a - b for a, b in zip(Kv, Iv)]
        nz = any(is_nonzero(v) for v in Dv)
        mx = max(abs(float(sp.N(v, 30))) for v in Dv)
        text = (f"x = ({', '.join(x)}) with the file's embeddings (d = {len(X[0])}): max |KVSA - IH| over "
                f"coordinates = {mx:.6g}")
        shown = {k: [f"{float(sp.N(v, 30)):.12g}" for v in d] for k, d in (("IH", Iv), ("KVSA", Kv), ("difference", Dv))}
    return {"x": list(x), "L": L, **shown, "max_abs_difference": mx, "nonzero": nz,
            "input_class": pe_mod.input_class(x), "text": text, "table_check": check, "rule": RULE}


def theorem2_search(var: Variant, m: Fraction, sigma: Fraction, pe: PE, max_L: int = 5, max_V: int = 3
                    ) -> dict[str, Any] | None:
    """The first token sequence (L = 3..max_L, vocabulary 1..max_V, induction prompts first) whose exact
    KVSA (with this PE placement) differs from IH, with the largest difference over the searched
    sequences of that length (how far the construction is from IH); None when none differs."""
    first, worst = None, None
    for L in range(3, max_L + 1):
        for V in range(1, max_V + 1):
            for x in canonical_sequences(L, V):
                r = theorem2_on_input(x, var, m, sigma, pe)
                if r["nonzero"]:
                    first = first or r
                    if worst is None or r["max_abs_difference"] > worst["max_abs_difference"]:
                        worst = r
        if first is not None:
            return {"first": first, "largest": worst, "searched": f"L = 3..{L}, vocabulary <= {max_V}"}
    return None


def check_theorem2_input(x: Sequence[str] | None, var: Variant, m: Fraction, sigma: Fraction, pe: PE,
                         X: Sequence[Sequence[Fraction]] | None = None) -> Evidence:
    """kvshift24 Theorem 2 on the user's sequence (and embeddings) and/or a PE placement, exactly.

    With a sequence: refuted by it when KVSA - IH is nonzero; when it is zero, the tool's own witness
    search runs (a sequence on which the two agree does not prove the statement for every input).
    Without a sequence (a PE placement only): the witness search.  ``proved`` only when no sequence
    up to L = 5 differs *and* the slot lists equal IH's term table structurally, which this path does
    not establish: it then returns ``inconclusive`` (the general proof is the default path's).

    Returns:
        Evidence with ``numbers["sequence"]`` (the user's input, when given) and a witness.
    """
    numbers: dict[str, Any] = {"m": str(m), "sigma": str(sigma), "rope": pe.rope,
                               "alibi_placement": pe.alibi_placement if pe.alibi else "no ALiBi", "rule": RULE}
    base: dict[str, Any] = dict(layer=Layer.SYMBOLIC, engines=engine_versions("sympy"), numbers=numbers)
    details = []
    if x is not None:
        r = theorem2_on_input(x, var, m, sigma, pe, X)
        numbers["sequence"] = r
        details.append(f"on the given input ({r['input_class']}): {r['text']}")
        if r["table_check"] is False:
            return Evidence(status=Status.ERROR, summary=("the slot-list evaluation of KVSA disagrees with the Theorem 2 term "
                                                          "table on the given input"), details=details, **base)
        if r["nonzero"]:
            return Evidence(status=Status.REFUTED, witness={"input": r["x"], "input_class": r["input_class"],
                                                            "max_abs_difference": r["max_abs_difference"],
                                                            "IH": r["IH"], "KVSA": r["KVSA"], "difference": r["difference"]},
                            bound="the given input (exact)", summary=f"{r['text']} ({r['input_class']}; {RULE})",
                            details=details + ["the given input replaced the witness search in this layer"], **base)
    s = theorem2_search(var, m, sigma, pe)
    if s is None:
        return Evidence(status=Status.INCONCLUSIVE, bound="L <= 5, vocabulary <= 3",
                        summary=("no sequence up to L = 5 distinguishes KVSA from IH under this placement"
                                 + ("; the given input does not either" if x is not None else "")
                                 + "; equality for every input is proved only by the default (no RoPE) path"),
                        details=details, **base)
    f, w = s["first"], s["largest"]
    numbers["largest_difference_searched"] = {"x": w["x"], "max_abs_difference": w["max_abs_difference"]}
    lead = "the given input gives KVSA = IH exactly; the tool's witness: " if x is not None else ""
    return Evidence(status=Status.REFUTED, witness={"input": f["x"], "input_class": f["input_class"],
                                                    "max_abs_difference": f["max_abs_difference"],
                                                    "largest_over_search": w["max_abs_difference"], "largest_at": w["x"],
                                                    "IH": f["IH"], "KVSA": f["KVSA"], "difference": f["difference"]},
                    bound=f"smallest input, {s['searched']}",
                    summary=(f"{lead}{f['text']}; largest |KVSA - IH| over {s['searched']}: "
                             f"{w['max_abs_difference']:.4g} at ({', '.join(w['x'])}) ({RULE})"),
                    details=details, **base)


# ------------------------------------------------------------------ decode consistency


def decode_on_input(x: Sequence[str], var: Variant, m: Fraction, sigma: Fraction, pe: PE, dec: Decode,
                    X: Sequence[Sequence[Fraction]] | None = None) -> dict[str, Any]:
    """Full forward pass against incremental decoding on one input, exactly, at every decoded position.

    Returns:
        dict with per-position ``rows`` (t, full, decoded, difference, nonzero), ``nonzero`` (any
        decoded position differs, :data:`RULE`), ``last`` (the last position's row), and
        ``full_equals_ih`` at the last position (True/False).
    """
    L = len(x)
    S, M = q(sigma), q(m)
    dot = vector_dot(X) if X is not None else token_dot(x)
    full = full_forward(L, var, pe, S)
    rows = []
    for qd in decode(L, var, pe, dec, S):
        qf = full[qd.t - 1]
        if not any(sl.den for sl in qf.slots):
            continue  # empty softmax (a masked variant at t < 3): nothing to compare
        a = pe_mod.evaluate(qf, dot, S, M, sp.exp, sp.Integer(0))
        b = pe_mod.evaluate(qd, dot, S, M, sp.exp, sp.Integer(0))
        if X is None:
            A, B = _by_symbol(a, x[:qd.t]), _by_symbol(b, x[:qd.t])
            D = {s: B[s] - A[s] for s in A}
            nz = any(is_nonzero(v) for v in D.values())
            mx = max(abs(float(sp.N(v, 30))) for v in D.values())
            rows.append({"t": qd.t, "full": fmt(A), "decoded": fmt(B), "difference": fmt(D, 6), "nonzero": nz,
                         "max_abs_difference": mx})
        else:
            Av, Bv = _vector(a, X[:qd.t]), _vector(b, X[:qd.t])
            Dv = [u - v for u, v in zip(Bv, Av)]
            mx = max(abs(float(sp.N(v, 30))) for v in Dv)
            rows.append({"t": qd.t, "nonzero": any(is_nonzero(v) for v in Dv), "max_abs_difference": mx})
    ih_eq = None
    if L >= 3 and X is None:
        I = _by_symbol(ih_output(L, dot, S, M), x)
        F = _by_symbol(pe_mod.evaluate(full[-1], dot, S, M, sp.exp, sp.Integer(0)), x)
        ih_eq = not any(is_nonzero(F[s] - I[s]) for s in I)
        ih_text = fmt(I)
    else:
        ih_text = None
    return {"x": list(x), "prefill": dec.prefill, "rows": rows, "nonzero": any(r["nonzero"] for r in rows),
            "last": rows[-1] if rows else None, "full_equals_ih": ih_eq, "IH": ih_text}


def structure(var: Variant, pe: PE, dec: Decode, Ls: Sequence[int]) -> dict[str, Any]:
    """Compare the decoded slot lists with the full pass's, in normal form, for every L in ``Ls`` and every
    prefill 1..L-1 (the policy's own prefill included): equal slot lists give equal outputs for every
    input and any positive function in place of exp (the rotations compared relative to the query's).

    Returns:
        dict: ``equal`` (bool), ``first`` (L, prefill, t, description) of the first mismatch or None,
        ``checked`` (count of (L, prefill) pairs).
    """
    n = 0
    for L in Ls:
        for k in range(1, L):
            d = Decode(k, dec.cache, dec.rope_offset, dec.alibi_distance)
            full, got = full_forward(L, var, pe, sp.Symbol("sigma", positive=True)), \
                decode(L, var, pe, d, sp.Symbol("sigma", positive=True))
            n += 1
            t = first_mismatch(full, got)
            if t is not None:
                qd = next(qq for qq in got if qq.t == t)
                return {"equal": False, "first": {"L": L, "prefill": k, "t": t,
                                                  "slots": pe_mod.describe_mismatch(full[t - 1], qd)}, "checked": n}
    return {"equal": True, "first": None, "checked": n}


def check_decode(x: Sequence[str], var: Variant, m: Fraction, sigma: Fraction, pe: PE, dec: Decode, Lmax: int = 8,
                 X: Sequence[Sequence[Fraction]] | None = None) -> Evidence:
    """The decode-consistency claim, exactly: incremental decoding with ``dec`` equals the full pass.

    ``proved`` (bounded): the slot lists agree in normal form for every L in 3..Lmax and prefill
    1..L-1, so the outputs agree for every input of those lengths.  ``refuted``: they differ and an
    input whose exact outputs differ is found (the given one first, then token sequences up to L = 6).
    ``error``: the positive control (the raw-key cache with correct offsets must agree structurally) fails.
    """
    correct = Decode(dec.prefill)
    ctl = structure(var, pe, correct, range(3, 6))
    st = structure(var, pe, dec, range(3, Lmax + 1))
    r = decode_on_input(x, var, m, sigma, pe, dec, X)
    numbers: dict[str, Any] = {"structure": st, "sequence": r, "rule": RULE, "Lmax": Lmax,
                               "positive_control_raw_key_equal": ctl["equal"]}
    details = [f"given input ({', '.join(x)}), prefill {dec.prefill}: "
               + "; ".join(f"t = {row['t']}: full {row.get('full', '')}, decoded {row.get('decoded', '')}"
                           f" (max |diff| {row['max_abs_difference']:.4g})" for row in r["rows"])]
    if r["full_equals_ih"] is not None:
        details.append(f"full forward pass at the last position {'equals' if r['full_equals_ih'] else 'differs from'} "
                       f"IH = {r['IH']} exactly")
    base: dict[str, Any] = dict(layer=Layer.SYMBOLIC, engines=engine_versions("sympy"), numbers=numbers, details=details)
    if not ctl["equal"]:
        return Evidence(status=Status.ERROR, summary=("positive control failed: the raw-key cache with correct offsets does "
                                                      f"not reproduce the full pass ({ctl['first']})"), **base)
    if st["equal"]:
        if r["nonzero"]:
            return Evidence(status=Status.ERROR, summary="slot lists agree but the exact outputs on the given input differ",
                            **base)
        return Evidence(status=Status.PROVED, bound=f"every L in 3..{Lmax}, every prefill, every input; any positive exp",
                        summary=(f"decoded slot lists equal the full pass's for every L <= {Lmax} and prefill "
                                 f"({st['checked']} cases); on ({', '.join(x)}) the outputs agree exactly"), **base)
    w = r if r["nonzero"] else None
    f = st["first"]
    if w is None:
        # the first structural mismatch names (L, prefill): search token inputs of that shape only
        for V in range(1, 4):
            for xx in canonical_sequences(f["L"], V):
                cand = decode_on_input(xx, var, m, sigma, pe, Decode(f["prefill"], dec.cache, dec.rope_offset,
                                                                     dec.alibi_distance))
                if cand["nonzero"]:
                    w = cand
                    break
            if w:
                break
    struct_txt = f"slots differ first at L = {f['L']}, prefill {f['prefill']}, t = {f['t']}: {f['slots']}"
    if w is None:
        return Evidence(status=Status.INCONCLUSIVE, summary=(f"{struct_txt}; no token input of that length (vocabulary <= 3) "
                                                             "shows a nonzero difference"), **base)
    row = next(rr for rr in w["rows"] if rr["nonzero"])
    given = w is r
    numbers["witness_is_given_input"] = given
    return Evidence(status=Status.REFUTED, bound="exact, on the witness input",
                    witness={"input": w["x"], "prefill": w["prefill"], "t": row["t"], "full": row.get("full"),
                             "decoded": row.get("decoded"), "difference": row.get("difference"),
                             "max_abs_difference": row["max_abs_difference"]},
                    summary=(f"({', '.join(w['x'])}), prefill {w['prefill']}: at t = {row['t']} the full pass gives "
                             f"{row.get('full')}, incremental decoding gives {row.get('decoded')} "
                             f"(max |diff| {row['max_abs_difference']:.4g}; {RULE})"
                             + ("" if given else " [the given input does not distinguish them]")
                             + f"; {struct_txt}"), **base)
