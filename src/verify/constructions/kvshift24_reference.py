"""An independent re-evaluation of IH, KVSA and Theorem 1's two layers (kvshift24), for cross-checks.

Source: Xu et al., "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2:
Definition 1 (Eq. 7, the induction-head machine IH), Sec. 2.2 Eqs. 4-6 (KV shifting
attention: Shift, K^ = a1 K + a2 Shift(K), V^ = b1 V + b2 Shift(V), causal softmax with
the 1/sigma scale) with the ALiBi bias and parameters of the Appendix B proof, and the
two-layer construction of Appendix A (Theorem 1).

Why a second evaluation: every layer evaluates the shared term tables of
:mod:`verify.constructions.kvshift24` (IH and KVSA alike), so an error in the shared
evaluator (a sign, a scale, a normaliser) changes both sides the same way and can cancel
in ``KVSA - IH``.  This module writes the definitions a second time, directly from the
formulas, and shares no code with the term tables: inputs are explicit rational vectors,
Shift is applied to the key and value rows, scores are inner products computed in
``fractions.Fraction``, and every exponential is enclosed by mpmath's interval arithmetic
(``mpmath.iv``, outward rounding at 40 digits): deliberately a second interval library, the one
place it is used, since every enclosure of the engine (its exp enclosure included) is an arb ball
(:mod:`verify.balls`), and a reference that shared that library would share its faults.
A layer compares its *own* IH and KVSA values (not only their difference) with these enclosures on the fixed
inputs :data:`REF_INPUTS`; a mismatch makes the layer an ``error``.

Only the variant *flags* (:class:`~verify.constructions.kvshift24.Variant`, plain booleans)
are read from the shared module; what they mean (which of s = 1 and s = L enter the
numerator and the normaliser, b1, the ALiBi bias) is implemented here again.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any, Callable, Mapping, Sequence

import mpmath
from mpmath.ctx_iv import MPIntervalContext

from verify.evidence import fmt_measured
from verify.runcache import memoize
from verify.thirdparty import interval_ends, is_mpmath_interval

#: working precision of the interval enclosures (decimal digits)
DPS = 40
#: a private interval context (outward rounding), so no global mpmath setting is touched
IV = MPIntervalContext()
IV.dps = DPS

Vec = tuple  # a tuple of Fractions

# fixed inputs of the cross-checks: two token prompts over orthonormal embeddings (A.A = 1,
# A.B = 0) and one sequence of non-orthogonal rational vectors (every inner product differs)
_A, _B, _C = (Fraction(1), Fraction(0), Fraction(0)), (Fraction(0), Fraction(1), Fraction(0)), \
    (Fraction(0), Fraction(0), Fraction(1))
#: name -> rows x_1..x_L (1-indexed in the paper; row 0 here is x_1)
REF_INPUTS: dict[str, tuple[Vec, ...]] = {
    "(A, B, A)": (_A, _B, _A),
    "(A, B, C, B, A)": (_A, _B, _C, _B, _A),
    "rational vectors, L = 4": ((Fraction(1), Fraction(0), Fraction(1, 2)), (Fraction(1, 2), Fraction(1), Fraction(-1, 3)),
                                (Fraction(-1, 3), Fraction(2, 3), Fraction(1)), (Fraction(1), Fraction(1, 4), Fraction(1, 2))),
}
#: a fixed (m, sigma) checked besides the claim's own when the claim's would hide a fault kind:
#: m != 0 shows the ALiBi sign, sigma != 1 (and != its square root) shows the score scale and b1
REF_PARAMS = ((Fraction(1, 3), Fraction(3, 4)),)


def check_params(m: Any, sigma: Any) -> list[tuple[Fraction, Fraction]]:
    """The (m, sigma) pairs a cross-check uses: the claim's own, plus :data:`REF_PARAMS` when the
    claim's m = 0 (the ALiBi sign cannot show) or sigma = 1 (1/sigma = 1/sqrt(sigma) = 1)."""
    own = (Fraction(m), Fraction(sigma))
    return [own] + ([p for p in REF_PARAMS if p != own] if own[0] == 0 or own[1] == 1 else [])


def token_vectors(x: Sequence[str]) -> tuple[Vec, ...]:
    """One-hot rational rows for a token sequence, one coordinate per distinct token in
    alphabetical order (A.A = 1, A.B = 0)."""
    toks = sorted(set(x))
    return tuple(tuple(Fraction(int(t == u)) for u in toks) for t in x)


def _is_iv(q: Any) -> bool:
    return is_mpmath_interval(q)


def _iv(q: Any):
    if _is_iv(q):
        return q
    q = Fraction(q)
    return IV.mpf(q.numerator) / IV.mpf(q.denominator)


def _exp(q: Any):
    """exp of a rational (Fraction) or of an interval, as an interval of :data:`IV`."""
    return IV.exp(_iv(q))


def _dot(u: Vec, v: Vec) -> Fraction:
    return sum((Fraction(a) * Fraction(b) for a, b in zip(u, v)), Fraction(0))


def _average(weights: Mapping[int, Any], values: Mapping[int, Vec | list], num: Sequence[int], den: Sequence[int],
             d: int) -> list:
    """sum_{s in num} w_s v_s / sum_{s in den} w_s per coordinate (mpmath intervals)."""
    Z = sum((weights[s] for s in den), IV.mpf(0))
    out = []
    for j in range(d):
        acc = IV.mpf(0)
        for s in num:
            acc += weights[s] * _iv(values[s][j])
        out.append(acc / Z)
    return out


def ih_weights(X: Sequence[Vec], m: Any, sigma: Any) -> dict[int, Any]:
    """Definition 1's unnormalised weights exp(<x_L, x_{s-1}>/sigma - m(L - s)), s = 2..L-1 (intervals)."""
    L = len(X)
    x = {s: X[s - 1] for s in range(1, L + 1)}
    return {s: _exp(_dot(x[L], x[s - 1]) / Fraction(sigma) - Fraction(m) * (L - s)) for s in range(2, L)}


def ih(X: Sequence[Vec], m: Any, sigma: Any) -> list:
    """IH(x) of Definition 1 (Eq. 7) at the last position, per coordinate, as mpmath intervals.

    IH(x) = sum_{s=2}^{L-1} softmax_s(<x_L, x_{s-1}>/sigma - m(L - s)) x_s.

    Args:
        X: rows x_1..x_L (L >= 3), rational vectors of one width d.
        m, sigma: ALiBi slope and score scale (rationals, sigma > 0).

    Returns:
        d mpmath intervals.

    Raises:
        ValueError: L < 3.
    """
    L = len(X)
    if L < 3:
        raise ValueError("IH needs L >= 3")
    w = ih_weights(X, m, sigma)
    return _average(w, {s: X[s - 1] for s in w}, list(w), list(w), len(X[0]))


def kvsa_weights(X: Sequence[Vec], m: Any, sigma: Any, alibi: bool = True, a1: Any = 0, a2: Any = 1) -> dict[int, Any]:
    """Eq. 6's unnormalised weights at the last row for s = 1..L: exp(<q_L, K^_s>/sigma - m(L - s))
    with Q = K = X (identity projections), K^ = a1 K + a2 Shift(K) and Shift(K)_1 = 0 (intervals)."""
    L, d = len(X), len(X[0])
    zero = tuple(Fraction(0) for _ in range(d))
    shifted = (zero,) + tuple(X[:-1])  # Shift: drop the last row, pad a zero row in front
    khat = [tuple(Fraction(a1) * k + Fraction(a2) * sk for k, sk in zip(X[r], shifted[r])) for r in range(L)]
    q = X[L - 1]
    return {s: _exp(_dot(q, khat[s - 1]) / Fraction(sigma) - (Fraction(m) * (L - s) if alibi else 0))
            for s in range(1, L + 1)}


def kvsa(X: Sequence[Vec], m: Any, sigma: Any, first_num: bool, first_den: bool, last_num: bool, last_den: bool,
         b1_inv_sigma: bool, alibi: bool = True) -> list:
    """KV-shift attention (Eqs. 4-6, Appendix B parameters a1 = 0, a2 = 1, b2 = 0) at the last row.

    The causal softmax runs over s = 1..L; the flags say whether s = 1 and s = L enter the
    numerator / the normaliser (True for all four is the layer as written); b1 = 1/sigma
    (``b1_inv_sigma``) or 1; ``alibi`` adds the bias -m(L - s) (Appendix B, p = m).

    Returns:
        d mpmath intervals.

    Raises:
        ValueError: L < 3.
    """
    L, d = len(X), len(X[0])
    if L < 3:
        raise ValueError("KVSA vs IH needs L >= 3")
    b1 = 1 / Fraction(sigma) if b1_inv_sigma else Fraction(1)
    vhat = {s: tuple(b1 * v for v in X[s - 1]) for s in range(1, L + 1)}  # b2 = 0: V^ = b1 V
    w = kvsa_weights(X, m, sigma, alibi)
    inner = list(range(2, L))
    num = inner + [s for s, keep in ((1, first_num), (L, last_num)) if keep]
    den = inner + [s for s, keep in ((1, first_den), (L, last_den)) if keep]
    return _average(w, vhat, num, den, d)


def kvsa_variant(X: Sequence[Vec], m: Any, sigma: Any, var: Any) -> list:
    """:func:`kvsa` with the flags of a :class:`~verify.constructions.kvshift24.Variant`."""
    return kvsa(X, m, sigma, var.first_num, var.first_den, var.last_num, var.last_den, var.b1_inv_sigma, var.alibi)


def two_layer(X: Sequence[Vec], p: Any, m: Any, sigma: Any, layer1_strict: bool, layer2_interior: bool) -> list:
    """Appendix A's two-layer construction (Theorem 1) at the last position, per coordinate.

    Layer 1 (zero query and key, ALiBi slope p): y_s = sum_tau softmax_tau(-p(top - tau)) x_tau over
    tau = 1..s-1 with top = s-1 (as Appendix A displays it; y_1 = 0) or tau = 1..s with top = s
    (a standard causal layer).  Layer 2 (query x_L, key y_s, value x_s, slope m, W^(2)_O = (I, 0)):
    sum_s softmax_s(<x_L, y_s>/sigma - m(L - s)) x_s over s = 2..L-1 (as displayed) or s = 1..L.

    Args:
        p: first-layer slope (rational or float; read as an exact rational).

    Returns:
        d mpmath intervals.
    """
    L, d = len(X), len(X[0])
    pq = Fraction(p)
    y = {}
    for s in range(1, L + 1):
        taus = range(1, s) if layer1_strict else range(1, s + 1)
        top = s - 1 if layer1_strict else s
        w = {tau: _exp(-pq * (top - tau)) for tau in taus}
        if not w:
            y[s] = [IV.mpf(0)] * d
            continue
        y[s] = _average(w, {tau: X[tau - 1] for tau in w}, list(w), list(w), d)
    ss = list(range(2, L)) if layer2_interior else list(range(1, L + 1))
    q = X[L - 1]
    w2 = {}
    for s in ss:
        score = sum((_iv(q[j]) * y[s][j] for j in range(d)), IV.mpf(0)) / _iv(sigma) - _iv(Fraction(m) * (L - s))
        w2[s] = _exp(score)
    return _average(w2, {s: X[s - 1] for s in ss}, ss, ss, d)


def lo(a: Any) -> mpmath.mpf:
    """The lower end of an interval (an mpf)."""
    return mpmath.mpf(interval_ends(a)[0])


def hi(a: Any) -> mpmath.mpf:
    """The upper end of an interval (an mpf)."""
    return mpmath.mpf(interval_ends(a)[1])


def mid(a: Any) -> mpmath.mpf:
    """The midpoint of an interval (an mpf at :data:`DPS` digits)."""
    with mpmath.workdps(DPS):
        return (lo(a) + hi(a)) / 2


def width(a: Any) -> mpmath.mpf:
    """The width of an interval."""
    with mpmath.workdps(DPS):
        return hi(a) - lo(a)


def _mpf(value: Any) -> mpmath.mpf:
    if isinstance(value, Fraction):
        return mpmath.mpf(value.numerator) / value.denominator
    return mpmath.mpf(value)


def agrees(value: Any, ref: Any, tol: float) -> bool:
    """True when ``value`` (number, Fraction or mpf) lies within ``tol`` of the interval ``ref``."""
    with mpmath.workdps(DPS):
        return lo(ref) - tol <= _mpf(value) <= hi(ref) + tol


def exp_enclosure_sane(enclosure: Any, points: Sequence[Fraction] = (Fraction(-7, 2), Fraction(-1, 3), Fraction(0),
                                                                      Fraction(2, 5), Fraction(5))) -> list[str]:
    """Sanity of a rational exp enclosure ``q -> (lo, hi)``: 0 < lo <= exp(q) <= hi with exp(q) enclosed
    by mpmath's interval exp, at a few points (negative, zero and positive exponents).

    Returns:
        the failures in words (empty when every point passes).
    """
    bad = []
    for q in points:
        e_lo, e_hi = enclosure(q)
        e = _exp(q)
        with mpmath.workdps(DPS):
            ok = 0 < e_lo <= e_hi and _mpf(Fraction(e_lo)) <= lo(e) and hi(e) <= _mpf(Fraction(e_hi))
        if not ok:
            bad.append(f"exp({q}): enclosure [{float(e_lo):.6g}, {float(e_hi):.6g}] does not contain "
                       f"exp({q}) = {float(mid(e)):.6g} (or is empty)")
    return bad


# ------------------------------------------------------------------ cross-checks of a layer's evaluator

#: Theorem 2 tables every layer evaluates on :data:`REF_INPUTS`: IH, the claim's variant, the
#: repaired construction (positive control: it must equal IH in the layer's own arithmetic) and a
#: table whose numerator and normaliser differ (so an evaluator that confuses the two is seen)
T2_CONTROLS = ("mask+scale", "fault:normalisation-only")


def _dev(value: Any, ref: Any) -> float:
    with mpmath.workdps(DPS):
        v = _mpf(value)
        return float(max(lo(ref) - v, v - hi(ref), mpmath.mpf(0)))


def _flags(var: Any) -> tuple:
    return (var.first_num, var.first_den, var.last_num, var.last_den, var.b1_inv_sigma, var.alibi)


@memoize(maxsize=256)
def _ref_t2(name: str, m: Fraction, sigma: Fraction, flags: tuple | None) -> tuple:
    """IH (flags None) or KVSA with these flags on the fixed input ``name`` (cached: the three layers
    of one run ask for the same values)."""
    X = REF_INPUTS[name]
    return tuple(ih(X, m, sigma) if flags is None else kvsa(X, m, sigma, *flags))


def _table_fn(kc: Any, L: int, v: Any) -> Callable[[Any], list]:
    """``sigma -> term table`` of IH (v None) or of KVSA with variant v at length L."""
    if v is None:
        return lambda s_: kc.ih_terms(L)
    return lambda s_: kc.kvsa_terms(L, v, s_)


def cross_check_t2(evaluate_many: Any, var: Any, m: Any, sigma: Any, tol: float) -> dict[str, Any]:
    """Compare a layer's own IH and KVSA values with this module's, on the fixed inputs.

    Args:
        evaluate_many: ``(X, [terms_fn, ...], m, sigma) -> [[value per coordinate], ...]``: the
            layer's evaluator; ``terms_fn(sigma_in_the_layer's_arithmetic)`` returns a term table
            of :mod:`verify.constructions.kvshift24`; values are numbers, Fractions or sympy/mpmath
            floats.  It may raise ValueError (e.g. an empty enclosure box), recorded as a problem.
        var: the claim's :class:`~verify.constructions.kvshift24.Variant`.
        m, sigma: the claim's slope and scale (with :data:`REF_PARAMS` where :func:`check_params` adds them).
        tol: the layer's tolerance (absolute, per coordinate, outside the reference enclosure).

    Returns:
        ``{"ok", "problems", "checked", "max_deviation", "inputs", "params", "tables"}``.  Besides
        value-by-value agreement, the repaired table must equal IH within ``tol`` in the layer's
        own values (positive control), and the reference itself must show IH = KVSA[mask+scale]
        and IH != KVSA[none] on (A, B, A) (its own controls).
    """
    from verify.constructions import kvshift24 as kc  # tables and flags only

    tables = [("IH", None), (f"KVSA[{var.name}]", var)] + [(f"KVSA[{n}]", kc.variant(n)) for n in T2_CONTROLS]
    params = check_params(m, sigma)
    problems: list[str] = []
    checked, worst = 0, 0.0
    for mm, sg in params:
        for name, X in REF_INPUTS.items():
            L = len(X)
            fns = [_table_fn(kc, L, v) for _, v in tables]
            refs = [_ref_t2(name, mm, sg, None if v is None else _flags(v)) for _, v in tables]
            try:
                ours = evaluate_many(X, fns, mm, sg)
            except (ValueError, ZeroDivisionError, ArithmeticError) as exc:
                problems.append(f"{name}, m = {mm}, sigma = {sg}: the layer's evaluation failed ({exc})")
                continue
            where = f"{name}, m = {mm}, sigma = {sg}"
            for (label, _), o, r in zip(tables, ours, refs):
                for j, (a, b) in enumerate(zip(o, r)):
                    checked += 1
                    dv = _dev(a, b)
                    worst = max(worst, dv)
                    if dv > tol:
                        problems.append(f"{label} on {where}, coordinate {j + 1}: layer {float(a):.12g}, independent "
                                        f"evaluation {float(mid(b)):.12g}")
            ih_o, rep_o = ours[0], ours[2]
            if any(abs(float(_mpf(a) - _mpf(b))) > tol for a, b in zip(ih_o, rep_o)):
                problems.append(f"positive control on {where}: the layer's KVSA[mask+scale] differs from its IH")
            ref_ih, ref_rep = refs[0], refs[2]
            if any(hi(a) < lo(b) or hi(b) < lo(a) for a, b in zip(ref_ih, ref_rep)):
                problems.append(f"reference self-check on {where}: KVSA[mask+scale] != IH")
        a_, b_ = _ref_t2("(A, B, A)", mm, sg, None), _ref_t2("(A, B, A)", mm, sg, _flags(kc.variant("none")))
        if not any(hi(a) < lo(b) or hi(b) < lo(a) for a, b in zip(a_, b_)):
            problems.append(f"reference self-check at m = {mm}, sigma = {sg}: KVSA[none] = IH on (A, B, A)")
    return {"ok": not problems, "problems": problems, "checked": checked, "max_deviation": worst,
            "inputs": list(REF_INPUTS), "params": [f"m = {a}, sigma = {b}" for a, b in params],
            "tables": [t for t, _ in tables], "tolerance": tol}


#: first-layer slope of the Theorem 1 cross-check (moderate, so both readings differ from IH)
T1_REF_P = Fraction(3)


def cross_check_t1(tf_eval: Any, ih_eval: Any, m: Any, sigma: Any, tol: float, p: Any = T1_REF_P) -> dict[str, Any]:
    """Compare a layer's two-layer outputs (both key-range readings) and IH with :func:`two_layer` /
    :func:`ih` on :data:`REF_INPUTS` at first-layer slope ``p``.

    Args:
        tf_eval: ``(X, p, masks_name, m, sigma) -> [value per coordinate]`` (the layer's Theorem 1
            evaluator, ``masks_name`` in ``("as-displayed", "causal")``).
        ih_eval: ``(X, m, sigma) -> [value per coordinate]`` (the layer's IH).
        m, sigma: second-layer slope and scale.
        tol: absolute tolerance per coordinate.

    Returns:
        ``{"ok", "problems", "checked", "max_deviation", "p"}``.
    """
    readings = {"as-displayed": (True, True), "causal": (False, False)}
    problems: list[str] = []
    checked, worst = 0, 0.0
    for name, X in REF_INPUTS.items():
        cases = [("IH", ih_eval(X, m, sigma), ih(X, m, sigma))]
        for r, (l1, l2) in readings.items():
            cases.append((f"two layers [{r}], p = {p}", tf_eval(X, p, r, m, sigma), two_layer(X, p, m, sigma, l1, l2)))
        for label, o, ref in cases:
            for j, (a, b) in enumerate(zip(o, ref)):
                checked += 1
                dv = _dev(a, b)
                worst = max(worst, dv)
                if dv > tol:
                    problems.append(f"{label} on {name}, coordinate {j + 1}: layer {float(a):.12g}, independent "
                                    f"evaluation {float(mid(b)):.12g}")
    return {"ok": not problems, "problems": problems, "checked": checked, "max_deviation": worst, "p": str(p),
            "inputs": list(REF_INPUTS), "tolerance": tol}


def _deviation(xc: dict[str, Any]) -> str:
    """The largest deviation for a sentence: a float64 comparison's (tolerance >= 1e-12) at rounding level is
    written as its bound, since its digits follow the CPU; a high-precision one (mpmath, the witness encoding) is
    the same everywhere and keeps its digits."""
    dev = xc["max_deviation"]
    return fmt_measured(dev) if xc["tolerance"] >= 1e-12 else f"{dev:.2g}"


def summary_line(xc: dict[str, Any], what: str) -> str:
    """One line for a layer's details: how many values matched the independent evaluation."""
    if xc["ok"]:
        return (f"{what}: {xc['checked']} values on {len(xc['inputs'])} fixed inputs agree with an independent "
                f"evaluation written from the formulas (mpmath interval exp), largest deviation "
                f"{_deviation(xc)} (tolerance {xc['tolerance']:g})")
    return f"{what}: {len(xc['problems'])} disagreements with the independent evaluation; first: {xc['problems'][0]}"
