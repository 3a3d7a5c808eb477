"""KV-shift attention and the induction-head machine, defined once as term tables.

Source: Xu et al., "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2:
Definition 1 (the induction-head machine IH), Eqs. 4-6 (KV shifting attention) with the
ALiBi bias -m|L - s| that Definition 1 (Eq. 7) and the Appendix B proof add (Eq. 6 itself,
Sec. 2.2, has only the causal mask and the 1/sigma scale; ``Variant.alibi`` switches the
bias off), the Appendix B parameters of the Theorem 2 proof (a1 = 0, a2 = 1, b1 = 1/sigma,
b2 = 0, identity projections, ALiBi slope p = m), and two repairs of ours (mask: drop
s = 1 and s = L; mask+scale: also b1 = 1).  Theorem 1's two-layer construction
(Appendix A) is at the end of the module (:func:`t1_terms`).

Both mechanisms, read at the last position L (1-indexed), are softmax averages

    out = sum_{t in num} e_t v_t / sum_{t in den} e_t,   e_t = exp(l_t),
    l_t = <x_L, k_t> / sigma - m * dist_t,

with a key k_t and a value v_t that are linear combinations of the inputs x_1..x_L
(x_0 := 0, the zero row Shift pads in front).  A :class:`Term` stores one summand as
*indices and coefficients only*; no arithmetic happens here.  Each layer evaluates the
same term table in its own arithmetic:

* ``verify.symbolic`` with sympy (exact ``exp``, symbolic index s, symbolic L),
* ``verify.solver`` with z3 reals (exp values as positive unknowns, or an
  uninterpreted positive function) and fractions.Fraction interval enclosures,
* ``verify.numeric`` with torch float64 (vectorised gathers over the table).

IH (Definition 1):  terms s = 2..L-1, key x_{s-1}, value x_s, dist L - s.
KVSA (Eqs. 4-6, causal, last row):  terms s = 1..L, key a1 x_s + a2 x_{s-1},
    value b1 x_s + b2 x_{s-1}, dist L - s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Callable, Iterable, Sequence

from verify import balls
from verify.faults import seam

#: ``--fix`` choices of kvshift24:theorem2
FIXES = ("none", "mask", "mask+scale")

Lin = tuple  # tuple of (coef, index); index 0 is the zero row x_0 = 0


@dataclass(frozen=True)
class Term:
    """One summand of a softmax average read at position L.

    Attributes:
        s: the attended position (1-indexed; may be a sympy Symbol in the symbolic layer).
        key: ((coef, index), ...): the key k_s = sum coef * x_index (index 0 = zero row).
        value: ((coef, index), ...): the value v_s.
        dist: the ALiBi distance |L - s| (int or sympy expression).
        num: the term is in the numerator (its value is averaged).
        den: the term is in the softmax normaliser.
    """

    s: Any
    key: Lin
    value: Lin
    dist: Any
    num: bool = True
    den: bool = True


@dataclass(frozen=True)
class KVShiftParams:
    """KV-shift coefficients (Eqs. 4-5): K^ = a1 K + a2 Shift(K), V^ = b1 V + b2 Shift(V).

    Coefficients are in the caller's arithmetic (Fraction, sympy, float).
    ``b1_inv_sigma`` True means b1 = 1/sigma (the Appendix B choice), evaluated when the
    table is built with a concrete ``sigma``.
    """

    a1: Any = 0
    a2: Any = 1
    b1: Any = 1
    b2: Any = 0
    b1_inv_sigma: bool = False


@dataclass(frozen=True)
class Variant:
    """Which summands KVSA keeps and its value scale (the repairs and the fault injections).

    Attributes:
        name: label.
        first_num/first_den: keep s = 1 in the numerator / normaliser.
        last_num/last_den: keep s = L in the numerator / normaliser.
        b1_inv_sigma: b1 = 1/sigma (as written) instead of b1 = 1.
        alibi: KVSA carries the ALiBi bias -m|L - s| (Theorem 2 with Appendix B's p = m);
            False is Eq. 6 as printed (Sec. 2.2: causal mask and 1/sigma only), while IH keeps
            its bias (Eq. 7).
    """

    name: str
    first_num: bool
    first_den: bool
    last_num: bool
    last_den: bool
    b1_inv_sigma: bool
    alibi: bool = True

    @property
    def masked(self) -> bool:
        return not (self.first_num or self.first_den or self.last_num or self.last_den)


#: the statement as written (none), our two repairs, and the fault injections of the tests
VARIANTS: dict[str, Variant] = {
    "none": Variant("none", True, True, True, True, True),
    "mask": Variant("mask", False, False, False, False, True),
    "mask+scale": Variant("mask+scale", False, False, False, False, False),
    # faults: each is one repair step short of mask+scale
    "fault:drop-first-only": Variant("fault:drop-first-only", False, False, True, True, False),
    "fault:drop-last-only": Variant("fault:drop-last-only", True, True, False, False, False),
    "fault:normalisation-only": Variant("fault:normalisation-only", False, True, False, True, False),
    "fault:scale-without-mask": Variant("fault:scale-without-mask", True, True, True, True, False),
}


def variant(name: str, alibi: bool = True) -> Variant:
    """The named variant (``none``, ``mask``, ``mask+scale`` or a ``fault:...``).

    Args:
        name: the variant's name.
        alibi: False drops KVSA's ALiBi bias (Eq. 6 as printed); IH keeps its own.

    Raises:
        KeyError: unknown name.
    """
    var = VARIANTS[name]
    return var if alibi else replace(var, name=f"{var.name}, no ALiBi", alibi=False)


def ih_term(s: Any, L: Any) -> Term:
    """Definition 1's summand at index s (2 <= s <= L-1): key x_{s-1}, value x_s, dist L - s."""
    return Term(s=s, key=((1, s - 1),), value=((1, s),), dist=L - s)


@seam("kvshift24.kvsa_term")
def kvsa_term(s: Any, L: Any, a1: Any, a2: Any, b1: Any, b2: Any) -> Term:
    """KVSA's summand at s: key a1 x_s + a2 x_{s-1}, value b1 x_s + b2 x_{s-1}, dist L - s.

    At s = 1 the shifted rows are x_0 = 0 (Shift pads a zero row in front).  ``s`` may
    be symbolic; zero coefficients are dropped only when they are the literal 0.
    """
    key = tuple((c, i) for c, i in ((a1, s), (a2, s - 1)) if not _is_zero(c))
    value = tuple((c, i) for c, i in ((b1, s), (b2, s - 1)) if not _is_zero(c))
    return Term(s=s, key=key, value=value, dist=L - s)


def _is_zero(c: Any) -> bool:
    try:
        return c == 0 and not hasattr(c, "free_symbols") or (hasattr(c, "is_zero") and c.is_zero is True)
    except Exception:  # noqa: BLE001 - z3/torch objects: keep the term
        return False


def ih_terms(L: int) -> list[Term]:
    """IH's term table at position L (Definition 1), s = 2..L-1.

    Raises:
        ValueError: L < 3 (the softmax over s = 2..L-1 is empty).
    """
    if L < 3:
        raise ValueError(f"IH needs L >= 3 (softmax over s = 2..L-1), got L = {L}")
    return [ih_term(s, L) for s in range(2, L)]


def kvsa_terms(L: int, var: Variant | str, sigma: Any = 1, params: KVShiftParams | None = None) -> list[Term]:
    """KVSA's term table at position L under a variant (Appendix B parameters by default).

    Args:
        L: sequence length (>= 3).
        var: the variant (or its name): which boundary terms stay, and b1.
        sigma: the score scale, in the caller's arithmetic (b1 = 1/sigma when the
            variant keeps the as-written value scale).
        params: KV-shift coefficients; default a1 = 0, a2 = 1, b2 = 0 and b1 from the variant.

    Returns:
        Terms s = 1..L with num/den flags set by the variant (terms in neither are dropped).

    Raises:
        ValueError: L < 3.
    """
    if L < 3:
        raise ValueError(f"KVSA vs IH needs L >= 3, got L = {L}")
    var = variant(var) if isinstance(var, str) else var
    p = params or KVShiftParams(b1_inv_sigma=var.b1_inv_sigma)
    b1 = (1 / sigma) if p.b1_inv_sigma else p.b1
    out = []
    for s in range(1, L + 1):
        t = kvsa_term(s, L, p.a1, p.a2, b1, p.b2)
        if not var.alibi:
            t = replace(t, dist=0)
        if s == 1:
            t = replace(t, num=var.first_num, den=var.first_den)
        elif s == L:
            t = replace(t, num=var.last_num, den=var.last_den)
        if t.num or t.den:
            out.append(t)
    return out


def evaluate(
    terms: Sequence[Term],
    dot_query: Callable[[int], Any],
    sigma: Any,
    m: Any,
    exp: Callable[[Any], Any],
    zero: Any = 0,
) -> dict[int, Any]:
    """The softmax average as coefficients on the inputs: ``{index: c}``, out = sum c x_index.

    Generic over scalar arithmetic (Fraction, sympy, z3, float): only + - * / and ``exp``.

    Args:
        terms: a term table.
        dot_query: ``i -> <x_L, x_i>`` in the caller's arithmetic (index 0 gives 0).
        sigma, m: score scale and ALiBi slope.
        exp: the exponential in the caller's arithmetic (or a stand-in: any positive map).
        zero: the additive zero of the arithmetic.

    Returns:
        index -> coefficient (index 0, the zero row, is omitted).
    """
    return evaluate_weighted(terms, [exp(lg) for lg in logits(terms, dot_query, sigma, m, zero)], zero)


@seam("kvshift24.evaluate_weighted")
def evaluate_weighted(terms: Sequence[Term], weights: Sequence[Any], zero: Any = 0) -> dict[int, Any]:
    """Like :func:`evaluate` but with the exponentials given (one per term, positive).

    Used by the solver (weights as z3 unknowns) and by exact Fraction re-checks.
    """
    Z = zero
    for t, w in zip(terms, weights):
        if t.den:
            Z = Z + w
    out: dict[int, Any] = {}
    for t, w in zip(terms, weights):
        if t.num:
            for c, i in t.value:
                if i != 0:
                    out[i] = out.get(i, zero) + c * w / Z
    return out


@seam("kvshift24.logits")
def logits(terms: Sequence[Term], dot_query: Callable[[int], Any], sigma: Any, m: Any, zero: Any = 0) -> list[Any]:
    """The exponents l_t = <x_L, k_t>/sigma - m dist_t of a term table (caller's arithmetic)."""
    out = []
    for t in terms:
        lg = zero
        for c, i in t.key:
            if i != 0:
                lg = lg + c * dot_query(i)
        out.append(lg / sigma - m * t.dist)
    return out


def by_token(coefs: dict[int, Any], x: Sequence[str], zero: Any = 0) -> dict[str, Any]:
    """Collect position coefficients onto tokens: x = ('A', 'B', 'A') (1-indexed positions)."""
    out: dict[str, Any] = {}
    for i, c in coefs.items():
        tok = x[i - 1]
        out[tok] = out.get(tok, zero) + c
    for tok in x:
        out.setdefault(tok, zero)
    return out


def token_dot(x: Sequence[str]) -> Callable[[int], int]:
    """<x_L, x_i> for orthonormal token embeddings (A.A = 1, A.B = 0); index 0 -> 0."""
    last = x[-1]
    return lambda i: 0 if i == 0 else int(x[i - 1] == last)


# ----------------------------------------------------------------- exact exp enclosures


@seam("kvshift24.exp_enclosure")
def exp_enclosure(q: Fraction, digits: int = 30) -> tuple[Fraction, Fraction]:
    """Rational lo <= exp(q) <= hi, rigorous: the ends of python-flint's arb ball around exp(q), at a working
    precision of digits + 8 decimal digits, rounded outward to digits + 6 significant decimals.

    Args:
        q: a rational exponent (|q| up to a few hundred is fine).
        digits: the enclosure is rounded outward to 10^-digits relative precision.

    Returns:
        (lo, hi) Fractions with 0 < lo <= exp(q) <= hi.
    """
    from flint import arb, ctx, fmpq

    q = Fraction(q)
    if q == 0:
        return Fraction(1), Fraction(1)
    if q < 0:  # rounded as a value above 1, then inverted (a tiny exp(q) keeps its relative precision)
        lo, hi = exp_enclosure(-q, digits)
        return 1 / hi, 1 / lo
    with ctx.workprec(balls.bits(digits + 8)):
        lo, hi = balls.ends(arb(fmpq(q.numerator, q.denominator)).exp())
    return _round_down(lo, digits + 6), _round_up(hi, digits + 6)


def _round_down(x: Fraction, digits: int) -> Fraction:
    e = max(0, _mag(x))
    scale = 10 ** (digits - min(e, digits))
    return Fraction(math.floor(x * scale), scale)


def _round_up(x: Fraction, digits: int) -> Fraction:
    e = max(0, _mag(x))
    scale = 10 ** (digits - min(e, digits))
    return Fraction(math.ceil(x * scale), scale)


def _mag(x: Fraction) -> int:
    return len(str(abs(x.numerator) // max(1, abs(x.denominator))))


def interval_coefficients(
    terms: Sequence[Term], dot_query: Callable[[int], Fraction | int], sigma: Fraction, m: Fraction
) -> dict[int, tuple[Fraction, Fraction]]:
    """Exact rational bounds lo <= c_i <= hi on each output coefficient (Fraction intervals).

    The exponent of each term is rational (rational sigma, m, inner products); each weight
    is enclosed by :func:`exp_enclosure` and the softmax average is bounded term by term:
    for a coefficient c_i = sum_{t in N_i} v_t w_t / Z with v_t >= 0 the bound uses the
    lowest numerator over the highest normaliser and vice versa (values here are >= 0;
    negative value coefficients raise).

    Raises:
        ValueError: a negative value coefficient (not needed by this construction).
    """
    ls = logits(terms, dot_query, Fraction(sigma), Fraction(m), Fraction(0))
    enc = [exp_enclosure(Fraction(lg)) for lg in ls]
    out: dict[int, tuple[Fraction, Fraction]] = {}
    idxs = sorted({i for t in terms if t.num for _, i in t.value if i != 0})
    for i in idxs:
        # c_i = (sum_{t: contributes to i} v_ti w_t) / (sum_{t in den} w_t)
        contrib = []
        for t, _box in zip(terms, enc):
            v = sum((Fraction(c) for c, j in t.value if j == i), Fraction(0)) if t.num else Fraction(0)
            if v < 0:
                raise ValueError("negative value coefficient; interval bound not implemented")
            contrib.append(v)
        # minimise/maximise the ratio: monotone in each w_t (up if v_t/1 > ratio, i.e. treat exactly):
        # bound by the corners: numerator weights low & other normaliser weights high, and reverse.
        num_lo = sum((v * lo for v, (lo, hi) in zip(contrib, enc)), Fraction(0))
        num_hi = sum((v * hi for v, (lo, hi) in zip(contrib, enc)), Fraction(0))
        den_hi = sum((hi for t, (lo, hi) in zip(terms, enc) if t.den), Fraction(0))
        den_lo = sum((lo for t, (lo, hi) in zip(terms, enc) if t.den), Fraction(0))
        out[i] = (num_lo / den_hi, num_hi / den_lo)
    return out


def input_bytes(B: int, L: int, d: int) -> int:
    """Bytes of one numeric batch of inputs (float64: B sequences, L + 1 positions, width d, three
    tensors), for the claims' input validation (here, not in the numeric layer, so that a refusal
    never imports torch)."""
    return 8 * B * (L + 1) * d * 3


def canonical_sequences(L: int, V: int) -> Iterable[tuple[str, ...]]:
    """Token sequences of length L using exactly V distinct tokens A, B, C, ... in order of
    first occurrence (one representative per relabelling); induction prompts first
    (x_L occurs among x_1..x_{L-2}, so IH has a previous occurrence to copy from).
    """
    letters = [chr(ord("A") + i) for i in range(V)]
    seqs: list[tuple[str, ...]] = []

    def rec(prefix: list[str], used: int) -> None:
        if len(prefix) == L:
            if used == V:
                seqs.append(tuple(prefix))
            return
        for j in range(min(used + 1, V)):
            rec(prefix + [letters[j]], max(used, j + 1))

    rec([], 0)
    induct = [s for s in seqs if s[-1] in s[:-2]]
    rest = [s for s in seqs if s[-1] not in s[:-2]]
    return induct + rest


def fmt_vector(coefs: dict[str, Any], digits: int = 4) -> str:
    """The paper-notation vector 'c_A A + c_B B - c_C C': coefficients to ``digits`` decimals,
    tokens in alphabetical (= first-occurrence) order, zero terms dropped, 1 shown bare."""
    parts = []
    for tok in sorted(coefs):
        c = float(coefs[tok])
        if abs(c) < 0.5 * 10**-digits:
            continue
        parts.append(tok if abs(c - 1) < 0.5 * 10**-digits else f"{c:.{digits}f} {tok}")
    return join_signed(parts)


def join_signed(terms: Sequence[str]) -> str:
    """Terms joined as a sum, a negative one written with a minus: ['0.5 A', '-0.25 B'] ->
    '0.5 A - 0.25 B' (not '+ -0.25 B'); no terms: '0'."""
    if not terms:
        return "0"
    out = terms[0]
    for t in terms[1:]:
        out += f" - {t[1:]}" if t.startswith("-") else f" + {t}"
    return out


def outward(lo: Fraction, hi: Fraction, digits: int = 10) -> tuple[Fraction, Fraction]:
    """[lo, hi] rounded outward to 10^-digits (a shorter enclosure that still contains it)."""
    sc = 10**digits
    return Fraction(math.floor(lo * sc), sc), Fraction(math.ceil(hi * sc), sc)


def scale_only(kv: dict[str, Any], ih: dict[str, Any], sigma: Any, tol: float = 1e-9) -> bool:
    """True when the KVSA token coefficients are IH's divided by sigma (the value-scale error alone)."""
    return all(abs(float(kv.get(t, 0)) - float(ih.get(t, 0)) / float(sigma)) < tol for t in set(kv) | set(ih))


def without_value_scale(var: Variant) -> Variant:
    """The same variant with b1 = 1: what KVSA would give once the value scale 1/sigma is removed.

    A difference between KVSA and IH that survives this is caused by the boundary terms or
    the normaliser, not by b1 = 1/sigma alone.
    """
    return replace(var, name=f"{var.name} (b1 = 1)", b1_inv_sigma=False)


def boundary_tokens(kv: dict[str, Any], ih: dict[str, Any], tol: float = 1e-12) -> list[str]:
    """Tokens that KVSA weights but IH gives weight exactly 0.

    IH's weights on s = 2..L-1 are all positive, so a token with IH weight 0 occurs only
    at positions 1 and/or L: its KVSA weight comes from the boundary terms s = 1, s = L.
    """
    return sorted(t for t in kv if float(ih.get(t, 0)) == 0 and abs(float(kv[t])) > tol)


def boundary_positions(x: Sequence[str], toks: Iterable[str], terms: Sequence[Term]) -> list[str]:
    """'s = 1 (value x_1 = A)' / 's = L (value x_3 = A)' for the boundary summands of a KVSA term table
    whose value carries one of ``toks``.

    Read from the table itself (the summands s outside IH's 2..L-1 that sit in the numerator,
    and the positions their values read), not from a variant's flags, so the text names only
    terms the construction has.

    Args:
        x: the token input (1-indexed positions).
        toks: the tokens to account for (e.g. :func:`boundary_tokens`).
        terms: the KVSA term table at L = len(x) (:func:`kvsa_terms`).
    """
    toks = set(toks)
    L = len(x)
    out = []
    for t in sorted(terms, key=lambda t: t.s):
        if not t.num or 2 <= t.s <= L - 1:
            continue
        for c, i in t.value:
            if i != 0 and not _is_zero(c) and x[i - 1] in toks:
                out.append(f"s = {'1' if t.s == 1 else 'L'} (value x_{i} = {x[i - 1]})")
    return out


#: the sigma at which :func:`kvsa_table_facts` reads the value scale off the table (any rational != 1)
PROBE_SIGMA = Fraction(7, 3)
#: the sequence length at which :func:`kvsa_table_facts` reads the table
PROBE_L = 6


def _pos_text(i: int, L: int) -> str:
    return {0: "0", 1: "x_1", L: "x_L", L - 1: "x_{L-1}"}.get(i, f"x_{i}")


def _lin_text(lin: Lin, L: int, scale: Any = 1) -> str:
    """'x_{L-1}' / '0' / '2 x_1' for a linear combination, coefficients divided by ``scale``."""
    parts = [(c / scale if scale not in (None, 0) else c, i) for c, i in lin if i != 0 and not _is_zero(c)]
    if not parts:
        return "0"
    return " + ".join(_pos_text(i, L) if c == 1 else f"{c} {_pos_text(i, L)}" for c, i in parts)


def kvsa_table_facts(var: Variant | str, L: int = PROBE_L) -> dict[str, Any]:
    """What a KVSA term table *contains*, read off :func:`kvsa_terms` (not off the variant's flags).

    At L = :data:`PROBE_L` and sigma = :data:`PROBE_SIGMA`: which boundary summands (s = 1, s = L)
    are in the numerator / normaliser, their keys and values in paper notation, the value scale b1
    of the interior summands ("1", "1/sigma", or the number read at sigma = 7/3), whether the
    interior summands carry the ALiBi distance L - s, and whether their keys and values are IH's
    (key x_{s-1}, value a multiple of x_s).  Used by every explanation and by the symbolic
    decomposition, so text and pieces describe the construction that was evaluated.

    Returns:
        a dict with first_num, first_den, last_num, last_den (bool), first/last (the Term or
        None), key/value texts, b1 ("1", "1/sigma" or a number as text), b1_value (Fraction or
        None), alibi (bool), interior_like_ih (bool), den_count (int, at this L), masked (bool).
    """
    var = variant(var) if isinstance(var, str) else var
    terms = kvsa_terms(L, var, PROBE_SIGMA)
    by_s = {t.s: t for t in terms}
    first, last = by_s.get(1), by_s.get(L)
    inner = [by_s.get(s) for s in range(2, L)]
    scales: set[Any] = set()
    like_ih, alibi = True, True
    for s, t in zip(range(2, L), inner):
        if t is None or not (t.num and t.den):
            like_ih = False
            continue
        keys = [(c, i) for c, i in t.key if i != 0 and not _is_zero(c)]
        vals = [(c, i) for c, i in t.value if i != 0 and not _is_zero(c)]
        if keys != [(1, s - 1)] or [i for _, i in vals] != [s]:
            like_ih = False
        scales.update(Fraction(c) if not isinstance(c, float) else c for c, _ in vals)
        if t.dist != L - s:
            alibi = False
    b1 = scales.pop() if len(scales) == 1 else None
    b1_text = ("1" if b1 == 1 else "1/sigma" if b1 == 1 / PROBE_SIGMA else
               (f"{float(b1):.6g} at sigma = {PROBE_SIGMA}" if b1 is not None else "not one value"))
    facts = {
        "first_num": bool(first and first.num), "first_den": bool(first and first.den),
        "last_num": bool(last and last.num), "last_den": bool(last and last.den),
        "first": first, "last": last, "b1": b1_text, "b1_value": b1, "alibi": alibi,
        "interior_like_ih": like_ih, "L": L,
        "den_count": sum(1 for t in terms if t.den),
    }
    facts["masked"] = first is None and last is None
    if first is not None:
        w = "exp(-m(L-1))" if first.dist == L - 1 else ("1" if first.dist == 0 else f"exp(-m*{first.dist})")
        facts["first_text"] = (f"the s = 1 term (key {_lin_text(first.key, L)} under Shift, unnormalised weight {w}, "
                               f"value {_lin_text(first.value, L, b1)})")
    if last is not None:
        facts["last_text"] = f"the s = L term (key {_lin_text(last.key, L)}, value {_lin_text(last.value, L, b1)})"
    return facts


#: symbols of the general-L decomposition, defined where the formula is printed
DECOMPOSITION_LEGEND = (
    "where, at the last position L, e_s = exp(<x_L, key_s>/sigma - m(L - s)) is the unnormalised softmax weight "
    "of term s (e_1 = exp(-m(L-1)) because the s = 1 key is the zero row Shift pads in front; "
    "e_L = exp(<x_L, x_{L-1}>/sigma)); Z = e_2 + ... + e_{L-1} is IH's normaliser and "
    "N = e_2 x_2 + ... + e_{L-1} x_{L-1} its numerator, so IH = N/Z; x_1 and x_L stand for one coordinate of "
    "the first and last inputs (the identity is linear in the values, so one coordinate suffices)"
)

#: the as-written difference in one plain sentence
MECHANISM = (
    "At the last position KV-shift attention's softmax runs over s = 1..L while IH's runs over s = 2..L-1: "
    "the s = L term (key x_{L-1}, value x_L) and the s = 1 term (key 0 under Shift, unnormalised weight "
    "exp(-m(L-1)), value x_1) are added, the normaliser changes from L-2 to L terms, and b1 = 1/sigma "
    "scales every value."
)


#: what dropping KVSA's ALiBi bias changes (Eq. 6 as printed vs Definition 1 / Appendix B)
NO_ALIBI = ("Without ALiBi (Eq. 6 as printed in Sec. 2.2 has only the causal mask and the 1/sigma scale), KVSA's "
            "summand s has the logit <x_L, x_{s-1}>/sigma while IH's (Eq. 7) has <x_L, x_{s-1}>/sigma - m(L - s): "
            "the weights differ whenever m != 0, even with both boundary terms masked and b1 = 1.")


def _den_range(f: dict[str, Any]) -> str:
    return f"{'1' if f['first_den'] else '2'}..{'L' if f['last_den'] else 'L-1'}"


def _den_count_text(f: dict[str, Any]) -> str:
    extra = f["den_count"] - (f["L"] - 2)
    return {0: "L-2", 1: "L-1", 2: "L"}.get(extra, f"{f['den_count']} (at L = {f['L']})")


def _as_written_text(f: dict[str, Any]) -> str:
    added = [f[k] for k in ("last_text", "first_text") if k in f]
    head = (f"At the last position KV-shift attention's softmax runs over s = {_den_range(f)} while IH's runs over "
            f"s = 2..L-1: ")
    body = (f"{' and '.join(added)} {'are' if len(added) > 1 else 'is'} added, " if added else "no term is added, ")
    body += (f"the normaliser changes from L-2 to {_den_count_text(f)} terms" if f["den_count"] != f["L"] - 2
             else "the normaliser keeps L-2 terms")
    body += (f", and b1 = {f['b1']} scales every value." if f["b1"] != "1" else ", and b1 = 1.")
    if not f["interior_like_ih"]:
        body += " The interior summands' keys or values differ from IH's (key x_{s-1}, value x_s)."
    return head + body


def mechanism_sentence(var: Variant) -> str:
    """The mechanism of KVSA - IH in one paragraph, derived from the term tables
    (:func:`kvsa_table_facts`): the as-written table (:data:`MECHANISM` for the construction of
    Appendix B), then what the variant's own table keeps of it, and :data:`NO_ALIBI` when the
    variant's table carries no ALiBi distance."""
    f = kvsa_table_facts(var)
    ref = kvsa_table_facts(replace(VARIANTS["none"], alibi=var.alibi))
    tail = "" if f["alibi"] else " " + NO_ALIBI
    if var.name.split(",")[0] == "none":
        return _as_written_text(f) + tail
    if f["masked"]:
        rest = ("both boundary terms are masked, so the softmax runs over the same s = 2..L-1 as IH's"
                + (f"; only the value scale b1 = {f['b1']} remains, so KVSA = IH / sigma" if f["b1"] == "1/sigma"
                   else (", and b1 = 1, so every " + ("summand" if f["alibi"] else "value") + " equals IH's")
                   if f["b1"] == "1" else f"; the value scale is b1 = {f['b1']}"))
    else:
        kept = [n for n, k in (("the s = 1 term", f["first_num"]), ("the s = L term", f["last_num"])) if k]
        den = [n for n, k in (("s = 1", f["first_den"]), ("s = L", f["last_den"])) if k]
        rest = (f"it keeps {' and '.join(kept) or 'no boundary value'}, "
                f"the normaliser has {_den_count_text(f)} terms"
                f"{' (extra: ' + ', '.join(den) + ')' if den else ''}, "
                f"and b1 = {f['b1']}")
    if not f["interior_like_ih"]:
        rest += "; its interior summands' keys or values differ from IH's"
    name = var.name.split(",")[0]
    label = f"--fix {name}" if name in FIXES else f"variant {name}"
    aw = _as_written_text(ref)
    return f"As written, a{aw[1:]} Under {label}: {rest}.{tail}"


def witness_text(x: Sequence[str], kv: dict[str, Any], ih: dict[str, Any], var: Variant, m: Any, sigma: Any
                 ) -> tuple[str, list[str]]:
    """A witness in paper notation, with what it exhibits; and its boundary tokens.

    ``x = (A, B, A), m = 1/2, sigma = 2: IH = B; KVSA = 0.2888 A + 0.2112 B (weight 0.2888
    on A, which IH gives weight 0: the boundary terms ...)``, or ``... = IH / sigma (...)``
    when the input shows only the value scale.  Coefficients to 4 decimals (fmt_vector).
    """
    txt = f"x = ({', '.join(x)}), m = {m}, sigma = {sigma}: IH = {fmt_vector(ih)}; KVSA = {fmt_vector(kv)}"
    bt = boundary_tokens(kv, ih)
    if Fraction(sigma) != 1 and scale_only(kv, ih, sigma, 1e-9):
        txt += " = IH / sigma (only the value scale b1 = 1/sigma shows here)"
    elif bt:
        ws = ", ".join(f"{float(kv[t]):.4f} on {t}" for t in bt)
        where = boundary_positions(x, bt, kvsa_terms(len(x), var, Fraction(sigma)))
        txt += (f" (weight {ws}, which IH gives weight 0: " +
                (f"the boundary terms {' and '.join(where)})" if where else
                 "not from a boundary term, so the summands themselves differ)"))
    return txt, bt


# ============================================================ Theorem 1 (Appendix A), two layers

#: ``--masks`` choices of kvshift24:theorem1
T1_MASKS = ("as-displayed", "causal")

#: ``--eq10`` choices of kvshift24:theorem3: Eq. 10 as printed (Table 5's beta2*a2 in the x_{i-1} and x_T
#: logits) or Appendix C's derivation (beta2*a1 there)
EQ10_READINGS = ("as-printed", "appendix-c")


@dataclass(frozen=True)
class T1Masks:
    """Which keys each layer of Appendix A's two-layer construction attends over.

    Attributes:
        name: label.
        layer1_strict: layer 1 at position s attends to tau = 1..s-1, as Appendix A displays
            its output y_s = (x_s, sum_{tau=1}^{s-1} softmax(-p(s-1-tau)) x_tau); False is a
            standard causal layer, tau = 1..s, with the ALiBi bias -p|s - tau|.
        layer2_interior: layer 2 at the last position attends to s = 2..L-1, as Appendix A
            displays the second layer's output sum_{s=2}^{L-1} softmax(x_L^T y_s/sigma - m|L-s|) x_s;
            False is a standard causal layer, s = 1..L.
    """

    name: str
    layer1_strict: bool
    layer2_interior: bool


#: the two readings of Appendix A, and the two one-layer attributions (also used as faults)
T1_VARIANTS: dict[str, T1Masks] = {
    "as-displayed": T1Masks("as-displayed", True, True),
    "causal": T1Masks("causal", False, False),
    "layer 1 causal only": T1Masks("layer 1 causal only", False, True),
    "layer 2 causal only": T1Masks("layer 2 causal only", True, False),
}


def t1_masks(name: str) -> T1Masks:
    """The named Theorem 1 mask reading (``as-displayed``, ``causal`` or an attribution).

    Raises:
        KeyError: unknown name.
    """
    return T1_VARIANTS[name]


@seam("kvshift24.t1_layer1_weights")
def t1_layer1_weights(s: int, r: Any, masks: T1Masks, one: Any = 1) -> dict[int, Any]:
    """Layer 1's softmax weights at position s (1-indexed) as ``{tau: weight}``.

    W^(1)_Q = W^(1)_K = 0 (Theorem 1), so the scores are the ALiBi bias alone.  With
    r = e^{-p} (p the first-layer slope, in the caller's arithmetic), the as-displayed
    layer (Appendix A) weights tau = 1..s-1 by r^(s-1-tau), normalised; the standard causal
    layer weights tau = 1..s by r^(s-tau) (bias -p|s - tau|).  At s = 1 the as-displayed
    range is empty: the sum is 0 (no weights), as the zero row a shift pads in front.
    """
    taus = range(1, s) if masks.layer1_strict else range(1, s + 1)
    top = s - 1 if masks.layer1_strict else s
    raw = {tau: one * r ** (top - tau) for tau in taus}
    Z = sum(raw.values(), 0 * one)
    return {tau: w / Z for tau, w in raw.items()}


def t1_terms(L: int, r: Any, masks: T1Masks | str, one: Any = 1) -> list[Term]:
    """Layer 2's term table at the last position L of Appendix A's construction.

    Layer 2 (no residual, W^(2)_O = (I, 0)) reads the query x_L, the key y_s (layer 1's
    second half, a combination of x_tau with :func:`t1_layer1_weights`), the value x_s and
    the ALiBi distance L - s (slope m), over s = 2..L-1 (as displayed) or s = 1..L (causal).
    Evaluate with :func:`evaluate` / :func:`logits` in any arithmetic; at r = 0 (p -> infinity)
    the as-displayed table is IH's (:func:`ih_terms`) term by term.

    Raises:
        ValueError: L < 3.
    """
    if L < 3:
        raise ValueError(f"Theorem 1 vs IH needs L >= 3, got L = {L}")
    masks = t1_masks(masks) if isinstance(masks, str) else masks
    ss = range(2, L) if masks.layer2_interior else range(1, L + 1)
    out = []
    for s in ss:
        key = tuple((w, tau) for tau, w in sorted(t1_layer1_weights(s, r, masks, one).items()) if not _is_zero(w))
        out.append(Term(s=s, key=key, value=((1, s),), dist=L - s))
    return out


#: where Appendix A departs from a standard causal layer (one sentence per layer)
T1_DEPARTURES = (
    "Layer 1: Appendix A writes the first layer's output at position s as x_s stacked on "
    "sum_{tau=1}^{s-1} softmax(-p(s-1-tau)) x_tau, i.e. the current key tau = s is excluded; a standard causal "
    "layer (keys tau <= s) with zero query/key puts its largest weight on tau = s, so its second half tends to "
    "x_s, not x_{s-1}.",
    "Layer 2: Appendix A writes the second layer's last output as sum_{s=2}^{L-1} softmax(x_L^T y_s/sigma - m|L - s|) x_s, "
    "i.e. the keys s = 1 and s = L are excluded; a standard causal layer at the last position also attends to "
    "s = 1 (key y_1 = 0 or x_1) and s = L (key y_L, about x_{L-1}, value x_L), the boundary terms of Theorem 2, "
    "whose weights do not depend on p.",
)


# ------------------------------------------------------------ Theorem 2 as an existence statement (part b)

#: Theorem 2's words (Sec. 3.1, Eq. 9): an existence statement over every layer of Eqs. 4-6
THEOREM2_WORDS = ("There exists a one-layer single-head KV shifting attention KVSA, with D = d, such that IH = KVSA. "
                  "(Sec. 3.1, Eq. 9)")


@dataclass(frozen=True)
class Eq46Layer:
    """One layer of KV shifting attention with free parameters (Sec. 2.2, Eqs. 4-6), read at its last position.

    Q, K, V = X W_Q, X W_K, X W_V (Eq. 4); K^ = alpha1 K + alpha2 Shift(K), V^ = beta1 V + beta2 Shift(V) (Eq. 5,
    Shift pads a zero row x_0 in front); the last row of Softmax(Q K^T . M / sigma) V^ W_O (Eq. 6, causal mask M),
    with an additive bias ``bias[s - 1]`` on key s (ALiBi: -p(L - s), Appendix B's choice; Eq. 6 as printed: 0).
    The entries are in whatever arithmetic :class:`Arith` evaluates (sympy symbols, z3 reals, floats).
    """

    alpha1: Any
    alpha2: Any
    beta1: Any
    beta2: Any
    W_Q: Any  # [D, D]
    W_K: Any
    W_V: Any
    W_O: Any
    sigma: Any
    bias: Sequence[Any]  # [L]: the bias of key s = 1..L in the last row


@dataclass(frozen=True)
class Arith:
    """The vector operations :func:`kvsa_last` needs, in one arithmetic.

    vm: row vector times matrix, ``[D] x [D, D] -> [D]``; dot: ``[D] x [D] -> scalar``; lin: ``a x + b y``;
    zero: the zero row x_0; softmax: scores -> weights (an arithmetic without exp returns positive unknowns);
    mix: ``sum_s w_s v_s``.
    """

    vm: Callable[[Any, Any], Any]
    dot: Callable[[Any, Any], Any]
    lin: Callable[[Any, Any, Any, Any], Any]
    zero: Any
    softmax: Callable[[Sequence[Any]], Sequence[Any]]
    mix: Callable[[Sequence[Any], Sequence[Any]], Any]


def kvsa_last(X: Sequence[Any], layer: Eq46Layer, ar: Arith) -> Any:
    """The output of one Eqs. 4-6 layer at the last position L = len(X) of ``X = (x_1, .., x_L)``, ``[D]``."""
    rows = [ar.zero, *X]  # x_0 = 0: the zero row Shift pads in front
    K = [ar.vm(x, layer.W_K) for x in rows]
    V = [ar.vm(x, layer.W_V) for x in rows]
    q = ar.vm(X[-1], layer.W_Q)
    L = len(X)
    keys = [ar.lin(layer.alpha1, K[s], layer.alpha2, K[s - 1]) for s in range(1, L + 1)]
    values = [ar.lin(layer.beta1, V[s], layer.beta2, V[s - 1]) for s in range(1, L + 1)]
    w = ar.softmax([ar.dot(q, k) / layer.sigma + b for k, b in zip(keys, layer.bias)])
    return ar.vm(ar.mix(w, values), layer.W_O)


#: the inputs of the impossibility argument: u alone in slot 1, 2 or 3 of a length-3 input (1-indexed);
#: IH(x_1, x_2, x_3) = x_2 (Definition 1 at L = 3: the softmax runs over s = 2 alone), so IH is 0, u, 0
EXISTENCE_PROBES = (1, 2, 3)


def existence_probe(slot: int, u: Any, zero: Any) -> list[Any]:
    """The length-3 input with u in ``slot`` (1-indexed) and the zero row elsewhere."""
    return [u if s == slot else zero for s in EXISTENCE_PROBES]


#: the argument, as each layer reports it
EXISTENCE_ARGUMENT = (
    "IH(x_1, x_2, x_3) = x_2 (Definition 1 at L = 3), so IH is 0, u, 0 on the inputs (u, 0, 0), (0, u, 0), (0, 0, u); "
    "any Eqs. 4-6 layer gives c * (u W_V W_O) on them with c = (e_1 beta1 + e_2 beta2)/Z, (e_2 beta1 + e_3 beta2)/Z "
    "and e_3 beta1/Z (e_s > 0 the softmax numerators); the middle one must be u, so u W_V W_O != 0, then the other "
    "two force beta1 = beta2 = 0 and the middle one is 0 != u.")
