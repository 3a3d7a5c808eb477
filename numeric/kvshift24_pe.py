"""Numeric layer (torch) for kvshift24 on the user's inputs and for the decode-consistency claim.

Source: Xu et al., arXiv 2411.19574 v2: Sec. 2.2 Eqs. 4-6 (KV shifting attention), Definition 1 (IH),
Appendix B (Theorem 2's parameters a1 = 0, a2 = 1, b1 = 1/sigma, b2 = 0 and the ALiBi bias), Appendix F
(reference code: the shift as a width-2 causal convolution of k and v, rotary embedding applied to q and
the shifted k, and the inference branch's ``last_k``/``last_v`` state).

This is a second, tensor implementation written from those equations: it shares no code with the slot
lists of :mod:`verify.constructions.kvshift24_pe` (only the option names and the variant flags).  The full
pass runs the whole sequence at once; decoding runs a prefill call, then one token per call against a
growing cache, exactly as an inference loop does.  RoPE rotates coordinate pairs (2i, 2i+1) by
position * base^(-2i/d); its cos/sin tables are computed in float64 and cast, as implementations do.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Sequence

import torch

from verify.constructions import rope
from verify.constructions.kvshift24 import Variant
from verify.constructions.kvshift24_pe import PE, ROPE_BASE, Decode
from verify.evidence import Evidence, Layer, Outcome, Status, engine_versions, fmt_measured
from verify.faults import seam

#: float64 tolerance of the decode claim (relative to the largest output entry): decoding with a
#: correct cache reorders no reduction that matters at this size; a bug moves outputs by far more
TOL64 = 1e-9
#: a float64 deviation counts as a bug only when it is this many times the correct cache's
SEPARATION = 1000
#: the reduced precisions studied (rounding against a bug)
LOW_DTYPES = {"float16": torch.float16, "bfloat16": torch.bfloat16}
#: rounding rule for the reduced precisions: tolerance = this factor x the full pass's own deviation
#: from float64 in that dtype (a correct cache only reorders the same operations)
LOW_FACTOR = 4


@seam("numeric.kvshift24_pe._rope")
def _rope(X: torch.Tensor, pos: torch.Tensor, base: float) -> torch.Tensor:
    """Rotate coordinate pairs of X (..., n, d) at positions ``pos`` (n,), angles in float64."""
    return rope.rotate(X, pos, rope.inverse_frequencies(base, X.shape[-1]), "interleaved")


def _shift(X: torch.Tensor) -> torch.Tensor:
    """Eq. 4's Shift: drop the last row, pad a zero row in front (along the sequence axis -2)."""
    return torch.cat([torch.zeros_like(X[..., :1, :]), X[..., :-1, :]], dim=-2)


def _b1(var: Variant, sigma: float) -> float:
    return 1.0 / sigma if var.b1_inv_sigma else 1.0


def _allowed(var: Variant, t: int, s: torch.Tensor) -> torch.Tensor:
    """Slots s (1-indexed) a query at t attends to (the variants keep numerator = normaliser)."""
    ok = s <= t
    if not var.first_den:
        ok &= s != 1
    if not var.last_den:
        ok &= s != t
    return ok


def _attend(q: torch.Tensor, K: torch.Tensor, V: torch.Tensor, sigma: float, m: float, dist: torch.Tensor,
            ok: torch.Tensor) -> torch.Tensor:
    """softmax(q K^T / sigma - m dist) V over the slots ``ok``; q (B, d), K and V (B, n, d)."""
    sc = torch.einsum("bd,bnd->bn", q, K) / sigma - m * dist.to(q.dtype)[None, :]
    sc = sc.masked_fill(~ok[None, :], float("-inf"))
    return torch.einsum("bn,bnd->bd", torch.softmax(sc, dim=-1), V)


def _keys_values(X: torch.Tensor, var: Variant, pe: PE, sigma: float, base: float, a1: float, a2: float, b2: float):
    """One call over X (B, n, d) starting at position 1: raw keys (as the state holds them), shifted and
    rotated keys, shifted values, the query rows."""
    n = X.shape[-2]
    pos = torch.arange(1, n + 1)
    raw = _rope(X, pos, base) if pe.rope == "before-shift" else X
    mixed = a1 * raw + a2 * _shift(raw)
    K = _rope(mixed, pos, base) if pe.rope == "after-shift" else mixed
    Vh = _b1(var, sigma) * X + b2 * _shift(X)
    Q = _rope(X, pos, base) if pe.rope != "none" else X
    return raw, mixed, K, Vh, Q


def _dist(pe: PE, t_used: int, n: int) -> torch.Tensor:
    s = torch.arange(1, n + 1)
    src = s - 1 if pe.alibi_placement == "before-shift" else s
    return (t_used - src).abs() if pe.alibi else torch.zeros(n, dtype=torch.long)


def full_pass(X: torch.Tensor, var: Variant, pe: PE, sigma: float, m: float, base: float = ROPE_BASE,
              a1: float = 0.0, a2: float = 1.0, b2: float = 0.0) -> torch.Tensor:
    """Outputs at every position 1..L of one call (Eqs. 4-6 with the PE placement).

    Args:
        X: inputs (B, L, d), any float dtype (d even when RoPE is on).
        var: the Theorem 2 variant (boundary masks, b1).
        pe: RoPE / ALiBi placement.
        sigma, m: score scale and ALiBi slope.

    Returns:
        (B, L, d) in X's dtype; a position whose softmax is empty (masked variants, t < 3) is 0.
    """
    L = X.shape[-2]
    _, _, K, Vh, Q = _keys_values(X, var, pe, sigma, base, a1, a2, b2)
    t = torch.arange(1, L + 1)[:, None]
    s = torch.arange(1, L + 1)[None, :]
    ok = s <= t
    if not var.first_den:
        ok = ok & (s != 1)
    if not var.last_den:
        ok = ok & (s != t)
    src = s - 1 if pe.alibi_placement == "before-shift" else s
    dist = (t - src).abs() if pe.alibi else torch.zeros(L, L, dtype=torch.long)
    sc = torch.einsum("btd,bsd->bts", Q, K) / sigma - m * dist.to(X.dtype)[None]
    sc = sc.masked_fill(~ok[None], float("-inf"))
    P = torch.softmax(sc, dim=-1).nan_to_num(0.0)  # an empty softmax (masked variants, t < 3) gives 0
    return torch.einsum("bts,bsd->btd", P, Vh)


def decode_pass(X: torch.Tensor, var: Variant, pe: PE, dec: Decode, sigma: float, m: float, base: float = ROPE_BASE,
                a1: float = 0.0, a2: float = 1.0, b2: float = 0.0) -> torch.Tensor:
    """Outputs at positions k+1..L from a prefill call over x_1..x_k and one call per later token.

    The cache holds the shifted (and, after-shift, rotated) keys and shifted values of every slot;
    the shift state between calls follows ``dec.cache`` (see :class:`verify.constructions.kvshift24_pe.Decode`).

    Returns:
        (B, L - k, d) in X's dtype.
    """
    B, L, d = X.shape
    k = dec.prefill
    b1 = _b1(var, sigma)
    raw, mixed, K, Vh, _ = _keys_values(X[:, :k], var, pe, sigma, base, a1, a2, b2)
    cK = torch.zeros(B, L, d, dtype=X.dtype)
    cV = torch.zeros(B, L, d, dtype=X.dtype)
    cK[:, :k], cV[:, :k] = K, Vh
    if dec.cache == "mixed-key":  # Appendix F: last_k = k[:, -1:] after the convolution (before rotary)
        last_k, last_v = mixed[:, k - 1], Vh[:, k - 1]
    else:
        last_k, last_v = raw[:, k - 1], X[:, k - 1]
    outs = []
    for t in range(k + 1, L + 1):
        x = X[:, t - 1]
        pos = torch.tensor([t if dec.rope_offset == "correct" else 0])
        kr = _rope(x[:, None], pos, base)[:, 0] if pe.rope == "before-shift" else x
        kh = a1 * kr + a2 * last_k
        if pe.rope == "after-shift":
            kh = _rope(kh[:, None], pos, base)[:, 0]
        cK[:, t - 1] = kh
        cV[:, t - 1] = b1 * x + b2 * last_v
        q = _rope(x[:, None], pos, base)[:, 0] if pe.rope != "none" else x
        t_al = t if dec.alibi_distance == "correct" else t - 1
        ok = _allowed(var, t, torch.arange(1, t + 1))
        o = (_attend(q, cK[:, :t], cV[:, :t], sigma, m, _dist(pe, t_al, t), ok)
             if ok.any() else torch.zeros_like(x))
        outs.append(o)
        if not (dec.cache == "unwritten-first" and t == k + 1):
            last_k, last_v = kr, x
    return torch.stack(outs, 1)


def ih_last(X: torch.Tensor, sigma: float, m: float) -> torch.Tensor:
    """IH (Definition 1) at the last position: softmax_s(x_L x_{s-1}/sigma - m(L - s)) x_s, s = 2..L-1."""
    L = X.shape[-2]
    s = torch.arange(2, L)
    sc = torch.einsum("bd,bnd->bn", X[:, -1], X[:, s - 2]) / sigma - m * (L - s).to(X.dtype)[None, :]
    return torch.einsum("bn,bnd->bd", torch.softmax(sc, -1), X[:, s - 1])


def _inputs(B: int, L: int, d: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(B, L, d, generator=g, dtype=torch.float64) / math.sqrt(d)


def decode_deviation(X: torch.Tensor, var: Variant, pe: PE, dec: Decode, sigma: float, m: float,
                     dtype: torch.dtype = torch.float64, ref: torch.Tensor | None = None) -> float:
    """max |decoded - full (float64)| over decoded positions, with the decode computed in ``dtype``."""
    full64 = full_pass(X, var, pe, sigma, m) if ref is None else ref
    got = decode_pass(X.to(dtype), var, pe, dec, sigma, m).to(torch.float64)
    return float((got - full64[:, dec.prefill:]).abs().max())


def check_decode(var: Variant, pe: PE, dec: Decode, sigma: Fraction, m: Fraction, L: int, d: int, seed: int,
                 B: int = 4, X: torch.Tensor | None = None) -> Evidence:
    """The decode-consistency claim in float64 at scale, plus the float16/bfloat16 rounding study.

    Args:
        var, pe, dec: the construction, PE placement and decode policy (prefill ``dec.prefill`` is used
            as given when < L, else L // 2).
        sigma, m: score scale and ALiBi slope.
        L, d, B: length, width, batch of random N(0, I/d) inputs (d even for RoPE).
        seed: the generator seed.
        X: explicit inputs (B, L, d) instead (e.g. the user's embeddings).

    Returns:
        ``consistent`` (holds: deviation <= TOL64 relative), ``refuted`` (fails: deviation > TOL64 and
        >= SEPARATION x the correct cache's), else ``inconclusive``.
    """
    sg, mm = float(sigma), float(m)
    X = _inputs(B, L, d, seed) if X is None else X.to(torch.float64)
    L = X.shape[-2]
    k = dec.prefill if dec.prefill < L else L // 2
    dec = Decode(k, dec.cache, dec.rope_offset, dec.alibi_distance)
    good = Decode(k)
    full64 = full_pass(X, var, pe, sg, mm)
    scale = float(full64.abs().max()) or 1.0
    dev = decode_deviation(X, var, pe, dec, sg, mm, ref=full64) / scale
    floor = decode_deviation(X, var, pe, good, sg, mm, ref=full64) / scale
    low: dict[str, Any] = {}
    for name, dt in LOW_DTYPES.items():
        rfull = float((full_pass(X.to(dt), var, pe, sg, mm).to(torch.float64) - full64).abs().max()) / scale
        rgood = decode_deviation(X, var, pe, good, sg, mm, dt, ref=full64) / scale
        rpol = decode_deviation(X, var, pe, dec, sg, mm, dt, ref=full64) / scale
        tol = LOW_FACTOR * rfull
        low[name] = {"full_pass_rounding": rfull, "correct_cache": rgood, "this_policy": rpol, "tolerance": tol,
                     "correct_within_tolerance": rgood <= tol, "policy_beyond_tolerance": rpol > tol,
                     "separates": rgood <= tol < rpol}
    numbers = {"L": L, "d": X.shape[-1], "B": X.shape[0], "prefill": k, "float64_deviation": dev,
               "float64_correct_cache": floor, "tolerance_float64": TOL64, "reduced_precision": low,
               "relative_to": f"max |full output| = {scale:.4g}"}
    tol_txt = (f"float64: relative deviation <= {TOL64:g} holds; a failure also needs >= {SEPARATION} x the correct "
               f"cache's deviation ({fmt_measured(floor)}). float16/bfloat16: tolerance = {LOW_FACTOR} x the full pass's own "
               f"deviation from float64 in that dtype (a correct cache reorders the same operations)")
    lows = "; ".join(f"{n}: correct cache {v['correct_cache']:.2g}, this policy {v['this_policy']:.2g}, tolerance "
                     f"{v['tolerance']:.2g}" for n, v in low.items())
    base: dict[str, Any] = dict(layer=Layer.NUMERIC, engines=engine_versions("torch"), seed=seed, numbers=numbers, tolerance=tol_txt,
                details=[f"reduced precision (relative max deviation from the float64 full pass): {lows}"])
    head = f"L = {L}, d = {X.shape[-1]}, B = {X.shape[0]}, prefill {k}: max |decoded - full| / max |full| = {fmt_measured(dev, '.3g')}"
    if dev <= TOL64:
        return Evidence(status=Status.CONSISTENT, outcome=Outcome.HOLDS, summary=f"{head} (float64, <= {TOL64:g}); {lows}", **base)
    if dev >= SEPARATION * max(floor, 1e-300) and dev > TOL64:
        # floating point agrees with FAILS; only an exact re-check may say refuted
        return Evidence(status=Status.CONSISTENT, outcome=Outcome.FAILS,
                        summary=f"{head} (float64; correct cache {fmt_measured(floor)}); {lows}", **base)
    return Evidence(status=Status.INCONCLUSIVE, summary=f"{head}: above {TOL64:g} but not {SEPARATION} x the correct "
                                                   f"cache's {fmt_measured(floor)}", **base)


def check_theorem2_pe(var: Variant, pe: PE, sigma: Fraction, m: Fraction, L: int, d: int, seed: int, B: int = 4,
                      X: torch.Tensor | None = None) -> Evidence:
    """max |KVSA (with the PE placement) - IH| at the last position in float64, over random N(0, I/d)
    inputs at L (or the given X).  Consistent with FAILS above 1e-6 relative, consistent with HOLDS below
    1e-9 (floating point never says proved or refuted); else inconclusive."""
    X = _inputs(B, L, d, seed) if X is None else X.to(torch.float64)
    kv = full_pass(X, var, pe, float(sigma), float(m))[:, -1]
    ih = ih_last(X, float(sigma), float(m))
    scale = float(ih.abs().max()) or 1.0
    dev = float((kv - ih).abs().max()) / scale
    numbers = {"L": X.shape[-2], "d": X.shape[-1], "B": X.shape[0], "max_rel_abs_difference": dev,
               "rope": pe.rope, "alibi_placement": pe.alibi_placement}
    base: dict[str, Any] = dict(layer=Layer.NUMERIC, engines=engine_versions("torch"), seed=seed, numbers=numbers,
                tolerance="float64; equal below 1e-9 relative, different above 1e-6 relative")
    head = (f"L = {X.shape[-2]}, d = {X.shape[-1]}, rope {pe.rope}, ALiBi {pe.alibi_placement if pe.alibi else 'off'}: "
            f"max |KVSA - IH| / max |IH| = {dev:.4g}")
    if dev < 1e-9:
        return Evidence(status=Status.CONSISTENT, outcome=Outcome.HOLDS, summary=head, **base)
    if dev > 1e-6:
        return Evidence(status=Status.CONSISTENT, outcome=Outcome.FAILS, summary=head, witness={"max_rel_abs_difference": dev},
                        **base)
    return Evidence(status=Status.INCONCLUSIVE, summary=head + " (between the two tolerances)", **base)


def rows_tensor(X: Sequence[Sequence[float]]) -> torch.Tensor:
    """(1, L, d) float64 from per-position rows."""
    return torch.tensor([list(map(float, r)) for r in X], dtype=torch.float64)[None]
