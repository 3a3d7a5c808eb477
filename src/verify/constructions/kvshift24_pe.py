"""KV-shift attention with a positional-encoding placement, and incremental (KV-cache) decoding.

Source: Xu et al., "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2:
Sec. 2.2, Eqs. 4-6 (Shift pads a zero row in front; K^ = a1 K + a2 Shift(K), V^ = b1 V + b2 Shift(V);
causal softmax with the 1/sigma scale), Definition 1 / Eq. 7 and Appendix B (the ALiBi bias
-m|t - s| and the parameters a1 = 0, a2 = 1, b1 = 1/sigma, b2 = 0), and Appendix F (the reference
PyTorch code: the shift is a width-2 causal convolution applied to k and v, rotary embedding is
applied to q and the *shifted* k afterwards with ``seqlen_offset=0``, and the inference branch keeps
``last_k``/``last_v`` between calls: after the first (multi-token) call it stores the last row of the
*convolved* k and v, after a single-token call the raw one).

Everything here is formal: keys and values are linear combinations of the inputs x_1..x_L (x_0 = 0,
the zero row Shift pads in front), each key entry tagged with the position at which a rotation was
applied to it (``None`` without RoPE).  A query position t attends to *slots* s; a :class:`Slot`
records the slot's key, value, ALiBi distance and whether it is in the numerator / normaliser.
Because RoPE is relative (R_a^T R_b = R_{b-a}), the score of a key entry (c, p, r) against the query
x_t rotated at q is c * x_t^T R_{r-q} x_p; :func:`normal_form` rewrites every slot with r - q, so two
slot lists in normal form that are equal give the same output for *every* input and for any positive
function in place of exp.  :func:`evaluate` turns a slot list into output coefficients in any
arithmetic (sympy, z3, Fraction, float) given the products ``dot(t, p, delta)``.

Two procedures build slot lists: :func:`full_forward` (the whole sequence in one call) and
:func:`decode` (a prefill of k tokens, then one token per call, with a stated cache policy, RoPE
position offset and ALiBi distance).  The decode-consistency claim compares them.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable, Sequence

from verify.constructions.kvshift24 import Variant, variant

#: ``--rope`` choices: no RoPE, RoPE on the raw keys before the shift, or on the shifted keys
#: (Appendix F's code: ``custom_convolution`` first, then ``rotary_emb``)
ROPE_PLACEMENTS = ("none", "before-shift", "after-shift")
#: ``--alibi-placement`` choices: the ALiBi distance of slot s is t - s (the slot, as Eq. 7 and
#: Appendix B write it) or t - (s - 1) (the position the shifted key x_{s-1} came from)
ALIBI_PLACEMENTS = ("after-shift", "before-shift")
#: ``--cache`` choices (decode): what the shift state keeps between calls
CACHE_POLICIES = ("raw-key", "mixed-key", "unwritten-first")
#: ``--rope-offset`` choices (decode): the rotation position of a decoded token
ROPE_OFFSETS = ("correct", "zero")
#: ``--alibi-distance`` choices (decode): the query position used in the ALiBi distance
ALIBI_DISTANCES = ("correct", "off-by-one")
#: default RoPE base (the common 10,000; Appendix G's models use 100,000)
ROPE_BASE = 10_000

KeyLin = tuple  # ((coef, pos, rot), ...); rot None = not rotated
ValLin = tuple  # ((coef, pos), ...)


@dataclass(frozen=True)
class PE:
    """Positional encoding of the KV-shift layer.

    Attributes:
        rope: one of :data:`ROPE_PLACEMENTS`.
        alibi: True adds the ALiBi bias -m * distance (slope m given at evaluation).
        alibi_placement: one of :data:`ALIBI_PLACEMENTS`.
    """

    rope: str = "none"
    alibi: bool = True
    alibi_placement: str = "after-shift"

    def __post_init__(self) -> None:
        if self.rope not in ROPE_PLACEMENTS:
            raise ValueError(f"rope placement {self.rope!r} not in {ROPE_PLACEMENTS}")
        if self.alibi_placement not in ALIBI_PLACEMENTS:
            raise ValueError(f"alibi placement {self.alibi_placement!r} not in {ALIBI_PLACEMENTS}")


@dataclass(frozen=True)
class Decode:
    """How incremental decoding is done (the decode-consistency claim's variants).

    Attributes:
        prefill: tokens processed by the first (multi-token) call, k >= 1; then one token per call.
        cache: one of :data:`CACHE_POLICIES`.  ``raw-key``: the shift state is the previous token's
            raw key and value (correct).  ``mixed-key``: after the prefill call the state is the last
            row of the *shifted* (mixed) key and value, as Appendix F's inference branch stores
            ``k[:, -1:]`` after ``custom_convolution``; single-token calls then store the raw one, so
            the first decoded token mixes twice.  ``unwritten-first``: the first single-token call
            does not write the state, so the second decoded token mixes with the prefill's last key.
        rope_offset: ``correct`` rotates a decoded token at its absolute position; ``zero`` at 0,
            as a call with ``seqlen_offset=0`` (Appendix F's forward) does for a one-token input.
        alibi_distance: ``correct`` uses the query's position t; ``off-by-one`` uses t - 1 (the
            cache length before the append), i.e. distance |t - 1 - s'| with s' the slot position.
    """

    prefill: int
    cache: str = "raw-key"
    rope_offset: str = "correct"
    alibi_distance: str = "correct"

    def __post_init__(self) -> None:
        if self.cache not in CACHE_POLICIES or self.rope_offset not in ROPE_OFFSETS \
                or self.alibi_distance not in ALIBI_DISTANCES:
            raise ValueError(f"unknown decode setting {self}")
        if self.prefill < 1:
            raise ValueError(f"prefill must be >= 1, got {self.prefill}")


@dataclass(frozen=True)
class Coefs:
    """KV-shift coefficients (Eqs. 4-5) and the score scale; Appendix B's by default."""

    a1: Any = 0
    a2: Any = 1
    b2: Any = 0


@dataclass(frozen=True)
class Slot:
    """One attended slot s at a query position t (see the module docstring)."""

    s: int
    key: KeyLin
    value: ValLin
    dist: int
    num: bool = True
    den: bool = True


@dataclass(frozen=True)
class Query:
    """The query at position t: x_t rotated at ``rot`` (None without RoPE), and its slots."""

    t: int
    rot: int | None
    slots: tuple[Slot, ...]


def _merge(entries: Sequence[tuple]) -> tuple:
    """Combine equal tags (all but the first field), drop zero coefficients, sort."""
    acc: dict[tuple, Any] = {}
    for c, *tag in entries:
        acc[tuple(tag)] = acc.get(tuple(tag), 0) + c
    return tuple(sorted(((c, *tag) for tag, c in acc.items() if not _zero(c)), key=lambda e: tuple(map(_k, e[1:]))))


def _k(v: Any) -> tuple:
    return (0, 0) if v is None else (1, v)


def _zero(c: Any) -> bool:
    try:
        return bool(c == 0)
    except Exception:  # noqa: BLE001 - symbolic coefficient: keep it
        return False


def _b1(var: Variant, sigma: Any) -> Any:
    return 1 / sigma if var.b1_inv_sigma else 1


def _mix(a: Any, cur: Sequence[tuple], b: Any, prev: Sequence[tuple]) -> tuple:
    return _merge([(a * e[0], *e[1:]) for e in cur] + [(b * e[0], *e[1:]) for e in prev])


def _slot_flags(var: Variant, s: int, t: int) -> tuple[bool, bool]:
    if s == 1:
        return var.first_num, var.first_den
    if s == t:
        return var.last_num, var.last_den
    return True, True


def _dist(pe: PE, t_used: int, s: int) -> int:
    src = s - 1 if pe.alibi_placement == "before-shift" else s
    return abs(t_used - src) if pe.alibi else 0


def _query(t: int, rot: int | None, cache: Sequence[tuple], var: Variant, pe: PE, t_alibi: int) -> Query:
    slots = []
    for s, (key, val) in enumerate(cache, start=1):
        num, den = _slot_flags(var, s, t)
        if num or den:
            slots.append(Slot(s, key, val, _dist(pe, t_alibi, s), num, den))
    return Query(t, rot, tuple(slots))


def _raw_key(p: int, rot_at: int | None, pe: PE) -> tuple:
    """The raw key of position p as the state would hold it: rotated first under before-shift RoPE."""
    if p == 0:
        return ()
    return ((1, p, rot_at if pe.rope == "before-shift" else None),)


def _shifted_key(a1: Any, a2: Any, raw: tuple, prev: tuple, rot_at: int | None, pe: PE) -> KeyLin:
    mixed = _mix(a1, raw, a2, prev)
    if pe.rope == "after-shift":
        return _merge([(c, p, rot_at) for c, p, _ in mixed])
    return mixed


def full_forward(L: int, var: Variant | str, pe: PE, sigma: Any = 1, co: Coefs = Coefs()) -> list[Query]:
    """Every query position 1..L of one call over x_1..x_L (Eqs. 4-6 with the PE placement).

    Args:
        L: sequence length (>= 1).
        var: the Theorem 2 variant (which of s = 1 and s = t enter numerator / normaliser, b1).
        pe: the positional encoding.
        sigma: the score scale in the caller's arithmetic (b1 = 1/sigma when the variant says so).
        co: a1, a2, b2.

    Returns:
        ``queries[t-1]`` for t = 1..L.
    """
    var = variant(var) if isinstance(var, str) else var
    cache = _call_cache(L, _b1(var, sigma), pe, co)
    rope = pe.rope != "none"
    return [_query(t, t if rope else None, cache[:t], var, pe, t) for t in range(1, L + 1)]


def _call_cache(L: int, b1: Any, pe: PE, co: Coefs) -> list[tuple]:
    """(key, value) of slots 1..L computed by one call over x_1..x_L (rotations at absolute positions)."""
    rope = pe.rope != "none"
    cache = []
    for t in range(1, L + 1):
        key = _shifted_key(co.a1, co.a2, _raw_key(t, t, pe), _raw_key(t - 1, t - 1, pe), t if rope else None, pe)
        cache.append((key, _merge([(b1, t)] + ([(co.b2, t - 1)] if t > 1 else []))))
    return cache


def _raw_state(k: int, pe: PE) -> tuple[tuple, tuple]:
    """The ``raw-key`` shift state after a prefill of x_1..x_k: the raw key and value of x_k (the
    previous token of the first decoded one).  Its value half is seen only when b2 != 0 (Appendix B's
    b2 = 0 hides it): tests/kvshift24/test_kvshift24_decode_value_state.py decodes with b2 = 1 to exercise it."""
    return _raw_key(k, k, pe), ((1, k),)


def decode(L: int, var: Variant | str, pe: PE, dec: Decode, sigma: Any = 1, co: Coefs = Coefs()) -> list[Query]:
    """The query positions k+1..L of incremental decoding: one call over x_1..x_k (as
    :func:`full_forward`), then one call per token with the cache and shift state of ``dec``.

    Returns:
        ``queries`` for t = k+1..L (the positions a decoder produces one at a time).

    Raises:
        ValueError: prefill k >= L.
    """
    var = variant(var) if isinstance(var, str) else var
    k = dec.prefill
    if k >= L:
        raise ValueError(f"prefill {k} leaves nothing to decode at L = {L}")
    b1 = _b1(var, sigma)
    rope = pe.rope != "none"
    cache = _call_cache(k, b1, pe, co)  # the prefill is one call over x_1..x_k
    # shift state after the prefill call
    if dec.cache == "mixed-key":
        # Appendix F: last_k = k[:, -1:] and last_v = v[:, -1:] after custom_convolution, i.e. the
        # shifted key (before rotary) and the shifted value
        last_k = _mix(co.a1, _raw_key(k, k, pe), co.a2, _raw_key(k - 1, k - 1, pe))
        last_v = _merge([(b1, k)] + ([(co.b2, k - 1)] if k > 1 else []))
    else:
        last_k, last_v = _raw_state(k, pe)
    out = []
    for t in range(k + 1, L + 1):
        pos = t if dec.rope_offset == "correct" else 0
        rot = pos if rope else None
        raw = _raw_key(t, pos, pe)
        key = _shifted_key(co.a1, co.a2, raw, last_k, rot, pe)
        val = _merge([(b1, t)] + [(co.b2 * c, p) for c, p in last_v])
        cache.append((key, val))
        t_alibi = t if dec.alibi_distance == "correct" else t - 1
        out.append(_query(t, rot, cache, var, pe, t_alibi))
        if not (dec.cache == "unwritten-first" and t == k + 1):
            last_k, last_v = raw, ((1, t),)
    return out


def normal_form(q: Query) -> tuple:
    """The query's slots with every rotation made relative to the query's (see the module docstring) and
    every ALiBi distance relative to the smallest."""
    out = []
    # softmax is invariant under one constant added to every logit: distances are compared
    # relative to the smallest one (a uniform shift of every ALiBi distance changes nothing)
    low = min((sl.dist for sl in q.slots), default=0)
    for sl in q.slots:
        key = _merge([(c, p, None if r is None else r - q.rot) for c, p, r in sl.key])
        out.append((sl.s, key, _merge(list(sl.value)), sl.dist - low, sl.num, sl.den))
    return tuple(out)


def evaluate(q: Query, dot: Callable[[int, int, int | None], Any], sigma: Any, m: Any, exp: Callable[[Any], Any],
             zero: Any = 0) -> dict[int, Any]:
    """The query's output as coefficients on the inputs, ``{p: c}`` with out = sum c x_p.

    Args:
        q: a query with its slots.
        dot: ``(t, p, delta) -> x_t^T R_delta x_p`` (delta None: no rotation) in the caller's arithmetic.
        sigma, m: score scale and ALiBi slope.
        exp: exp, or any positive stand-in.
        zero: the arithmetic's zero.
    """
    ws = []
    for sl in q.slots:
        lg = zero
        for c, p, r in sl.key:
            if p != 0:
                lg = lg + c * dot(q.t, p, None if r is None else r - q.rot)
        ws.append(exp(lg / sigma - m * sl.dist))
    Z = zero
    for sl, w in zip(q.slots, ws):
        if sl.den:
            Z = Z + w
    out: dict[int, Any] = {}
    for sl, w in zip(q.slots, ws):
        if sl.num:
            for c, p in sl.value:
                if p != 0:
                    out[p] = out.get(p, zero) + c * w / Z
    return out


def first_mismatch(full: Sequence[Query], dec: Sequence[Query]) -> int | None:
    """The first decoded position t whose slots differ from the full pass's (normal form), or None."""
    by_t = {q.t: q for q in full}
    for q in dec:
        if normal_form(q) != normal_form(by_t[q.t]):
            return q.t
    return None


def describe_mismatch(full_q: Query, dec_q: Query) -> str:
    """Which slots of a decoded query differ from the full pass's, in words."""
    a, b = normal_form(full_q), normal_form(dec_q)
    parts = []
    for x, y in zip(a, b):
        if x != y:
            what = [n for n, i in (("key", 1), ("value", 2), ("ALiBi distance", 3)) if x[i] != y[i]]
            parts.append(f"slot s = {x[0]}: {', '.join(what)} (full: {_text(x)}; decoded: {_text(y)})")
    if len(a) != len(b):
        parts.append(f"{len(a)} slots in the full pass, {len(b)} decoded")
    return "; ".join(parts) or "no difference"


def _text(rec: tuple) -> str:
    _, key, val, dist, _, _ = rec

    def lin(es: tuple, rot: bool) -> str:
        if not es:
            return "0"
        return " + ".join((f"{e[0]} " if e[0] != 1 else "") + f"x_{e[1]}"
                          + (f"@{e[2]:+d}" if rot and e[2] is not None else "") for e in es)

    return f"key {lin(key, True)}, value {lin(val, False)}, distance {dist}"


# ------------------------------------------------------------------ token sequences

#: most tokens a ``--sequence`` may have, and most distinct symbols
MAX_TOKENS = 12
MAX_SYMBOLS = 6
#: longest symbol name
MAX_SYMBOL_CHARS = 16


def parse_sequence(text: str, min_tokens: int = 3) -> tuple[str, ...]:
    """A whitespace-separated symbol sequence, e.g. ``"A B C A"`` -> ('A', 'B', 'C', 'A').

    Symbols are letters, digits, ``_`` or ``-``, at most :data:`MAX_SYMBOL_CHARS` characters.

    Raises:
        ValueError: one line naming the problem (too few or too many tokens, too many distinct
            symbols, a bad symbol).
    """
    toks = tuple(text.split())
    if len(toks) < min_tokens:
        raise ValueError(f"needs at least {min_tokens} tokens, got {len(toks)}")
    if len(toks) > MAX_TOKENS:
        raise ValueError(f"takes at most {MAX_TOKENS} tokens, got {len(toks)}")
    for tok in toks:
        if len(tok) > MAX_SYMBOL_CHARS or not all(ch.isascii() and (ch.isalnum() or ch in "_-") for ch in tok):
            shown = tok if len(tok) <= 20 else tok[:20] + "..."
            raise ValueError(f"symbol {shown!r} must be 1-{MAX_SYMBOL_CHARS} ASCII letters, digits, '_' or '-'")
    if len(set(toks)) > MAX_SYMBOLS:
        raise ValueError(f"takes at most {MAX_SYMBOLS} distinct symbols, got {len(set(toks))}")
    return toks


def symbols_in_order(x: Sequence[str]) -> tuple[str, ...]:
    """Distinct symbols in order of first appearance (the row order of an embeddings file)."""
    seen: list[str] = []
    for tok in x:
        if tok not in seen:
            seen.append(tok)
    return tuple(seen)


def input_class(x: Sequence[Any]) -> str:
    """The input class that decides which KVSA terms matter: whether x_{L-1} = x_L, and whether
    x_L occurred among x_1..x_{L-2} (so IH has a previous occurrence to copy from)."""
    last = x[-1]
    if x[-2] == last:
        return "last two tokens equal (x_{L-1} = x_L)"
    if last in x[:-2]:
        return "last two tokens differ, x_L seen before"
    return "x_L not seen before"


def plane_exponent(j: int, V: int) -> Fraction:
    """RoPE frequency exponent of the plane that symbol j (0-based, order of first appearance) occupies
    when V symbols are embedded one per rotation plane (width d = 2V, symbol j = e_{2j}):
    theta_j = base^(-2j/d) = base^(-j/V); returns -j/V (each layer raises the base in its arithmetic)."""
    return Fraction(-j, V)
