"""The impl claims' numeric layer: run the library's own model (Hugging Face transformers) and compare.

Each check builds the model (:mod:`verify.numeric.impl_models`), runs the library's forward pass with and without
its cache, and reports ``consistent`` with the outcome its numbers agree with (floating point never says proved).
Deviations are relative: max |a - b| / max |b| over the compared logits or outputs.
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import torch

from verify import hfcompat
from verify.evidence import (
    FLOAT32_LEVEL,
    Evidence,
    Layer,
    Outcome,
    Status,
    at_resolution,
    engine_versions,
    recorded_within,
)
from verify.numeric import impl_models as im

#: float64 floor of a correct implementation's relative deviation (tolerance when the library rounds no lower)
TOL64 = 1e-9
#: tolerance = LOW_FACTOR x the rounding of a correct computation of the same positions (as kvshift24:decode)
LOW_FACTOR = 4
#: a failure needs a deviation above FAIL_FACTOR x the tolerance; between the two the layer is inconclusive
FAIL_FACTOR = 10
#: a key is visible to a query when changing its token moves the query's layer-0 attention output by more than
#: VISIBLE (relative); invisible below HIDDEN
VISIBLE, HIDDEN = 1e-9, 1e-13
#: ALiBi slopes agree with the schedule to this absolute tolerance (the library's slopes and softmax are float32;
#: the schedule exact)
SLOPE_TOL = 1e-5
#: the calibrated float64 tolerance is capped here: a prefix rounding above it says the full pass at a position
#: depends on the prompt length (a length-dependent rule such as dynamic RoPE scaling), not rounding
CAL_CAP = 1e-6
#: RoPE offset check: the library computes cos and sin in float32; spread tolerance = ROPE_FACTOR x P x 2^-24
ROPE_FACTOR = 8



def _noise(x: float, tol: float | None = None) -> str:
    """A measured deviation for a sentence, without the digits that follow the CPU: at rounding level (below
    :data:`~verify.evidence.ROUNDING_LEVEL`) ``< 1e-12``; within a given tolerance, that tolerance (``<= 1e-05``),
    since below it every digit is rounding noise (float32 cos/sin, float32 slopes: a factor-of-3 bucket above the
    value still moved with the CPU, tests/core/test_golden.py's perturbed run); without a tolerance, the bound
    3 x 10^k above it (``< 3e-07``); beyond the tolerance (a real mismatch) three significant digits."""
    import math

    from verify.evidence import ROUNDING_LEVEL, fmt_measured

    x = float(x)
    if x == 0.0:
        return "= 0"
    if x < ROUNDING_LEVEL:  # rounding level
        return fmt_measured(x, "g")
    if tol is not None and x <= tol:
        return f"<= {tol:.2g}"
    if tol is None:
        # the bound 3 x 10^k just above x: the measured values sit near powers of ten (float32 rounding ~1e-7),
        # so bounds between them keep a factor of about 3 from a CPU's last-bit wobble
        return f"< 3e{math.ceil(math.log10(x / 3)):+03d}"
    return f"= {x:.3g}"


def _calibrated_record(x: float) -> float | str:
    """A float64 decode deviation, prefix rounding or calibrated tolerance as recorded: at or below
    :data:`CAL_CAP` the bound ``"<= 1e-06"`` (below it the value is the CPU's rounding of the library's float32
    steps: < 1e-12 on an AVX-512 machine, 8e-8 on the same machine under ATEN_CPU_CAPABILITY=avx2, where float32
    softmax computes a row of 8 keys as one vector and shorter rows in its scalar tail), above it three significant
    digits (a real mismatch)."""
    return recorded_within(x, CAL_CAP)


def _shown64(dev: float | str, tol: float | str) -> str:
    """A float64 decode deviation and its calibrated tolerance, as recorded by :func:`_calibrated_record`, for a
    sentence."""
    def show(x: float | str) -> str:
        return x if isinstance(x, str) else f"= {x:.3g}"

    return f"{show(dev)} (tolerance calibrated, {show(tol)})"


def _engines() -> dict[str, str]:
    out = engine_versions("torch")
    out["transformers"] = im.transformers_module().__version__
    return out


def _lib() -> str:
    """The library release, as every impl result's first line names it (a bug can belong to one release)."""
    return f"transformers {_engines()['transformers']}"


def _released(ev: Evidence) -> Evidence:
    """``ev`` with the library release in its witness, when it has one."""
    if isinstance(ev.witness, dict):
        ev.witness["transformers"] = _engines()["transformers"]
    return ev


def _rel(a: torch.Tensor, b: torch.Tensor, scale: float) -> float:
    return float((a - b).abs().max()) / scale


def _per_pos(a: torch.Tensor, b: torch.Tensor, scale: float) -> list[float]:
    return [float(x) / scale for x in (a - b).abs().amax(dim=(0, 2))]


def _first_mismatch(devs: dict[int, list[float]], tol: float) -> dict[str, Any] | None:
    """The smallest (prompt length, split) whose deviation exceeds ``tol``."""
    best = None
    for k, row in devs.items():
        for t, d in enumerate(row):
            if d > tol and (best is None or (t + 1, k) < (best[0], best[1])):
                best = (t + 1, k, d)
    if best is None:
        return None
    return {"prompt_length": best[0], "split": best[1], "deviation": best[2]}


def _verdict(dev: float, tol: float) -> tuple[Status, Outcome | None]:
    if dev <= tol:
        return Status.CONSISTENT, Outcome.HOLDS
    if dev > FAIL_FACTOR * tol:
        return Status.CONSISTENT, Outcome.FAILS
    return Status.INCONCLUSIVE, None


def check_decode(spec: str, attn: str, dtype: str, seed: int, L: int, splits: Sequence[int] | None = None,
                 window: int | None = None, rope: dict[str, Any] | None = None, max_positions: int = 256,
                 claim: str = "decode") -> Evidence:
    """impl:decode: every prefill split of an L-token prompt, then one token at a time through the library's
    cache, against the full forward pass (float64 reference).  Tolerance: float64 -> max(TOL64, LOW_FACTOR x the
    prefix rounding); another dtype -> LOW_FACTOR x that dtype's full pass's deviation from float64."""
    b64 = im.build(spec, attn=attn, seed=seed, window=window, rope=rope, max_positions=max_positions)
    ids = im.tokens(L, b64.vocab, seed)
    b = b64 if dtype == "float64" else im.cast(b64, dtype)
    return _released(decode_evidence(lambda x: im.full(b64, x), lambda x: im.full(b, x),
                                     lambda x, k: im.decode(b, x, k), ids, dtype, splits,
                                     f"{spec} ({b.attn}, {dtype}; {_lib()})", "tokens", b.describe(), _engines(), seed))


def decode_evidence(full64: Callable[[torch.Tensor], torch.Tensor], full_at: Callable[[torch.Tensor], torch.Tensor],
                    decode_at: Callable[[torch.Tensor, int], torch.Tensor], inputs: torch.Tensor, dtype: str,
                    splits: Sequence[int] | None, label: str, unit: str, describe: dict[str, Any],
                    engines: dict[str, str], seed: int) -> Evidence:
    """impl:decode's comparison and report, for any model: ``full64`` (the float64 reference's cache-free pass),
    ``full_at`` (the same at ``dtype``), ``decode_at(inputs, split)`` (a prefill of ``split`` positions then one
    per call through the cache, at ``dtype``); each maps inputs ``[batch, pos, ...]`` to float64 outputs
    ``[batch, pos, features]``."""
    L = inputs.shape[1]
    ref = full64(inputs)
    scale = float(ref.abs().max()) or 1.0
    splits = list(splits) if splits is not None else list(range(1, L))
    if dtype == "float64":
        floor = 0.0  # the prefix rounding: full passes of each prefix against the whole prompt's
        for n in range(1, L):
            floor = max(floor, _rel(full64(inputs[:, :n]), ref[:, :n], scale))
        tol = max(TOL64, min(LOW_FACTOR * floor, CAL_CAP))
        tol_txt = (f"float64: relative deviation <= max({TOL64:g}, min({LOW_FACTOR} x the prefix rounding, {CAL_CAP:g})) "
                   f"holds; > {FAIL_FACTOR} x that fails; between: inconclusive (the prefix rounding: full passes of each "
                   "prefix against the whole prompt's, at the same positions; it follows the CPU's rounding of the "
                   f"library's float32 steps, such as eager softmax, so it is recorded by its bound {CAL_CAP:g})")
    else:
        floor = _rel(full_at(inputs), ref, scale)
        tol = LOW_FACTOR * floor
        tol_txt = (f"{dtype}: relative deviation from the float64 full pass <= {LOW_FACTOR} x the {dtype} full "
                   f"pass's own ({_noise(floor)}) = {tol:.2g} holds; > {FAIL_FACTOR} x that fails")
    devs = {k: _per_pos(decode_at(inputs, k), ref, scale) for k in splits}
    dev = max(max(r) for r in devs.values())
    status, outcome = _verdict(dev, tol)
    wit = _first_mismatch(devs, tol)
    quantity = "logit" if unit == "tokens" else "output"
    rec = _calibrated_record if dtype == "float64" else (lambda x: x)
    numbers = {**describe, "L": L, "splits": splits, "max_deviation": rec(dev), "tolerance": rec(tol),
               "rounding": rec(floor), "per_split_max": {str(k): rec(max(r)) for k, r in devs.items()},
               "relative_to": f"max |{quantity}| = {scale:.4g}"}
    shown = (_shown64(numbers["max_deviation"], numbers["tolerance"]) if dtype == "float64"
             else f"{_noise(dev, tol)} (tolerance {tol:.2g})")
    head = (f"{label}, prompt {L} {unit}, prefill splits {splits[0]}..{splits[-1]} then one "
            f"{'token' if unit == 'tokens' else 'position'} per call: max |cached - full| / max |full| {shown}")
    witness = None
    if outcome == Outcome.FAILS and wit is not None:
        witness = {**wit, "dtype": dtype, "tolerance": rec(tol)}
        head += (f"; smallest mismatch: prompt length {wit['prompt_length']}, split {wit['split']}, deviation "
                 f"{wit['deviation']:.3g}")
    return Evidence(Layer.NUMERIC, status, outcome, summary=head, numbers=numbers, witness=witness,
                    tolerance=tol_txt, engines=engines, seed=seed)


def _capture(b: im.Built) -> tuple[list[torch.Tensor], Any]:
    """A forward hook on layer 0's attention module collecting its output (B, T, hidden)."""
    store: list[torch.Tensor] = []

    def hook(_m: Any, _a: Any, out: Any) -> None:
        o = out[0] if isinstance(out, tuple) else out
        store.append(o.detach().to(torch.float64))

    return store, im.first_attention(b.model).register_forward_hook(hook)


def layer0_outputs(b: im.Built, ids: torch.Tensor, split: int | None) -> torch.Tensor:
    """Layer 0's attention output at every position (B, T, hidden): one pass, or a prefill of ``split`` tokens
    then one token per call through the cache."""
    store, h = _capture(b)
    try:
        if split is None:
            im.call(b, ids)
        else:
            cache = im.new_cache(b, ids.shape[1])
            im.call(b, ids[:, :split], cache)
            for t in range(split, ids.shape[1]):
                im.call(b, ids[:, t:t + 1], cache)
    finally:
        h.remove()
    return torch.cat(store, 1)


def visibility(b: im.Built, ids: torch.Tensor, split: int | None) -> list[list[float]]:
    """V[t][j]: relative change of layer 0's attention output at query t when token j (<= t) is changed; the prompt
    and its L one-token changes run as one batch."""
    L = ids.shape[1]
    batch = ids.repeat(L + 1, 1)
    for j in range(L):
        batch[j + 1, j] = 3 + (int(ids[0, j]) - 3 + 1) % (b.vocab - 3)
    out = layer0_outputs(b, batch, split)
    base = out[0]
    scale = float(base.abs().max()) or 1.0
    change = (out[1:] - base[None]).abs().amax(dim=-1) / scale  # (j, t)
    return [[float(change[j, t]) if j <= t else 0.0 for j in range(L)] for t in range(L)]


def check_window(spec: str, attn: str, seed: int, L: int, window: int | None, splits: Sequence[int]) -> Evidence:
    """impl:window: query t sees exactly keys t - w + 1..t (w keys) under a sliding window w, else 0..t; measured
    by changing each token j and reading which of layer 0's attention outputs move, without and with the cache."""
    b = im.build(spec, attn=attn, seed=seed, window=window)
    w = getattr(b.config, "sliding_window", None) if window is not None else None
    ids = im.tokens(L, b.vocab, seed)
    return _released(window_evidence(lambda k: visibility(b, ids, k), L, w, splits, f"{spec} ({b.attn}; {_lib()})",
                                     "tokens", "changing its token moves layer 0's attention output", b.describe(),
                                     _engines(), seed))


def window_evidence(vis_at: Callable[[int | None], list[list[float]]], L: int, w: int | None, splits: Sequence[int],
                    label: str, unit: str, moves: str, describe: dict[str, Any], engines: dict[str, str],
                    seed: int) -> Evidence:
    """impl:window's reading and report, for any model: ``vis_at(split)`` is the visibility matrix V[t][j] (the
    relative change at query t when input j changes) of one pass (split None) or of a prefill of ``split``
    positions then one per call through the cache; ``moves`` says what V measures, for the tolerance text."""
    runs: list[tuple[str, int | None]] = [("no cache", None)] + [(f"cache, prefill {k}", k) for k in splits]
    rows = []
    worst: dict[str, Any] | None = None
    undecided = []
    for label_run, k in runs:
        vis = vis_at(k)
        first_q = 0 if k is None else k
        for t in range(first_q, L):
            lo = 0 if w is None else max(0, t - w + 1)
            seen = [j for j in range(t + 1) if vis[t][j] > VISIBLE]
            unsure = [j for j in range(t + 1) if HIDDEN < vis[t][j] <= VISIBLE]
            if unsure:
                undecided.append({"run": label_run, "query": t, "keys": unsure})
            want = list(range(lo, t + 1))
            if seen != want and worst is None:
                extra = sorted(set(seen) - set(want))
                missing = sorted(set(want) - set(seen))
                worst = {"run": label_run, "query": t, "keys_seen": len(seen), "keys_admitted": len(want),
                         "extra_distances": [t - j for j in extra], "missing_distances": [t - j for j in missing],
                         "window": w, "prompt_length": L}
        rows.append({"run": label_run, "queries": f"{first_q}..{L - 1}"})
    rule = f"a sliding window of w = {w} (keys at distance 0..{w - 1})" if w else "the causal mask (keys 0..t)"
    numbers = {**describe, "L": L, "runs": rows, "undecided": undecided[:10], "rule": rule}
    tol = (f"a key is seen when {moves} at the query by > {VISIBLE:g} "
           f"(relative), unseen below {HIDDEN:g}; between: undecided")
    head = f"{label}, {rule}, prompt {L} {unit}, {len(runs)} runs (no cache; cache with prefill {list(splits)})"
    if worst is not None:
        return Evidence(Layer.NUMERIC, Status.CONSISTENT, Outcome.FAILS, numbers=numbers, tolerance=tol, seed=seed,
                        engines=engines, witness=worst,
                        summary=(f"{head}: query {worst['query']} ({worst['run']}) sees {worst['keys_seen']} keys, the "
                                 f"rule admits {worst['keys_admitted']} (extra distances {worst['extra_distances']}, "
                                 f"missing {worst['missing_distances']})"))
    if undecided:
        return Evidence(Layer.NUMERIC, Status.INCONCLUSIVE, numbers=numbers, tolerance=tol, seed=seed,
                        engines=engines, summary=f"{head}: {len(undecided)} query/key pairs undecided")
    return Evidence(Layer.NUMERIC, Status.CONSISTENT, Outcome.HOLDS, numbers=numbers, tolerance=tol, seed=seed,
                    engines=engines, summary=f"{head}: every query sees exactly the keys the rule admits")


# ------------------------------------------------------------------ ALiBi


def _zero_qkv(b: im.Built) -> None:
    """Zero the query/key/value projections: every score is then the bias alone."""
    with torch.no_grad():
        for name, prm in b.model.named_parameters():
            leaf = name.rsplit(".", 2)[-2] if "." in name else name
            if leaf in ("query_key_value", "Wqkv", "c_attn", "q_proj", "k_proj", "v_proj"):
                prm.zero_()


def _probs(out: Any) -> torch.Tensor:
    a = out.attentions[0]
    return a.to(torch.float64)


def measured_slopes(b: im.Built, L: int) -> dict[str, Any]:
    """The bias the model adds, read from layer 0's attention probabilities with zero projections: for query t and
    key j < t, m(t, j) = (log p[t, t] - log p[t, j]) / (t - j) (positive: distance penalised).  Without the cache
    (one pass of L tokens) and with it (a prefill of L // 2, then one token per call)."""
    ids = im.tokens(L, b.vocab, 0)
    P = _probs(im.call(b, ids, output_attentions=True))[0]  # (H, L, L)
    cache = im.new_cache(b, L)
    k = L // 2
    im.call(b, ids[:, :k], cache, output_attentions=True)
    rows = []
    for t in range(k, L):
        rows.append(_probs(im.call(b, ids[:, t:t + 1], cache, output_attentions=True))[0, :, 0])  # (H, t+1)

    def per_key(p_row: torch.Tensor, t: int) -> torch.Tensor:  # (H, t) slopes over keys j < t
        lp = torch.log(p_row[:, :t + 1])
        return (lp[:, t:t + 1] - lp[:, :t]) / torch.arange(t, 0, -1, dtype=torch.float64)[None]

    full_m = torch.cat([per_key(P[:, t], t) for t in range(1, L)], 1)
    cache_m = torch.cat([per_key(rows[t - k], t) for t in range(k, L)], 1)
    return {"full": full_m, "cache": cache_m, "k": k}


def check_alibi(spec: str, attn: str, seed: int, heads: int, L: int, schedule: Sequence[float],
                convention: str) -> Evidence:
    """impl:alibi: the slopes the model applies equal ``schedule`` (the ALiBi schedule for ``heads`` heads), with
    the sign that penalises distance, one slope per head over every (query, key) pair (linear in the distance, so
    the distance origin cancels in the softmax), and the same bias under the cache."""
    b = im.build(spec, attn=attn, seed=seed, heads=heads)
    _zero_qkv(b)
    m = measured_slopes(b, L)
    want = torch.tensor(list(schedule), dtype=torch.float64)[:, None]
    problems = []
    per_head = []
    witness = None
    for name in ("full", "cache"):
        got = m[name]
        rel = (got - want).abs().amax(dim=1)
        for h in range(heads):
            if name == "full":
                dev = got[h] - want[h, 0]
                per_head.append({"head": h + 1, "schedule": float(want[h, 0]),
                                 "measured_minus_schedule": [float(dev.min()), float(dev.max())]})
            if float(rel[h]) > SLOPE_TOL and witness is None:
                g = float(got[h].mean())
                ratio = (got.mean(dim=1) / want[:, 0])
                why = ("sign flipped (distance rewarded)" if g < 0 else "no bias" if abs(g) < SLOPE_TOL else
                       "not one slope over the row (distance origin or bias rows)" if
                       float(got[h].max() - got[h].min()) > SLOPE_TOL else
                       f"every slope scaled by {float(ratio.mean()):.6g}" if float(ratio.max() - ratio.min()) < 1e-4
                       else "slope differs from the schedule")
                witness = {"run": "no cache" if name == "full" else f"cache, prefill {m['k']}", "head": h + 1,
                           "heads": heads, "schedule": float(want[h, 0]), "measured": g,
                           "abs_difference": float(rel[h]), "reason": why, "prompt_length": L}
        if float(rel.max()) > SLOPE_TOL:
            problems.append(name)
    numbers = {**b.describe(), "L": L, "convention": convention, "slopes": per_head,
               "max_abs_difference": {n: float((m[n] - want).abs().max()) for n in ("full", "cache")}}
    tol = (f"each measured slope (every query/key pair, without and with the cache) within {SLOPE_TOL:g} of "
           "the schedule (the slopes are float32 in the library; the schedule exact)")
    head = (f"{spec} ({b.attn}; {_lib()}), {heads} heads, L = {L}: slopes read from layer 0's attention with zero projections, "
            f"max |measured - schedule| {_noise(numbers['max_abs_difference']['full'], SLOPE_TOL)} (no "
            f"cache), {_noise(numbers['max_abs_difference']['cache'], SLOPE_TOL)} (cache)")
    # float32 slopes: the digits below 1e-5 follow the CPU (the schedule is exact and keeps every digit)
    numbers["max_abs_difference"] = at_resolution(numbers["max_abs_difference"], FLOAT32_LEVEL)
    for row in per_head:
        row["measured_minus_schedule"] = at_resolution(row["measured_minus_schedule"], FLOAT32_LEVEL)
    if witness is not None:
        return _released(Evidence(Layer.NUMERIC, Status.CONSISTENT, Outcome.FAILS, numbers=numbers, tolerance=tol,
                                  seed=seed, engines=_engines(), witness=witness,
                                  summary=(f"{head}; head {witness['head']} ({witness['run']}): {witness['reason']}, "
                                           f"measured {witness['measured']:.6g}, schedule {witness['schedule']:.6g}")))
    return Evidence(Layer.NUMERIC, Status.CONSISTENT, Outcome.HOLDS, numbers=numbers, tolerance=tol, seed=seed,
                    engines=_engines(), summary=head + "; distance penalised, one slope per head, the same under the cache")


# ------------------------------------------------------------------ RoPE


def offset_dependence(b: im.Built, P: int, seed: int) -> float:
    """Through the model's own rotary module and rotation: one query vector and one key vector placed at every
    position 0..P-1; max over offsets of the spread of score(i, j) along i - j, relative to max |score|."""
    hd = im.HEAD_DIM
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(hd, generator=g, dtype=torch.float64)
    k = torch.randn(hd, generator=g, dtype=torch.float64)
    Q = q.expand(1, 1, P, hd).clone()
    K = k.expand(1, 1, P, hd).clone()
    qr, kr = hfcompat.rotate(b.model, Q, K)
    S = (qr[0, 0] @ kr[0, 0].T)
    scale = float(S.abs().max()) or 1.0
    worst = 0.0
    for off in range(-(P - 1), P):
        d = torch.diagonal(S, offset=off)
        worst = max(worst, float(d.max() - d.min()) / scale)
    return worst


def check_rope(spec: str, attn: str, seed: int, rope: dict[str, Any], L: int, max_positions: int,
               splits: Sequence[int]) -> Evidence:
    """impl:rope: scores depend only on the offset (the model's rotary module and rotation, positions 0..2L-1,
    past the configured max_position_embeddings), and positions continue correctly through the cache (cached
    decode equals the full pass at every split given)."""
    b = im.build(spec, attn=attn, seed=seed, rope=rope, max_positions=max_positions)
    spread = offset_dependence(b, 2 * L, seed)
    dec = check_decode(spec, attn, "float64", seed, L, splits=splits, rope=rope, max_positions=max_positions)
    numbers = {**b.describe(), "rope": rope, "max_position_embeddings": max_positions, "L": L,
               "offset_spread": at_resolution(spread, FLOAT32_LEVEL), "decode": dec.numbers}
    otol = ROPE_FACTOR * 2 * L * 2.0**-24
    tol = (f"offset: spread of the score along each offset <= {ROPE_FACTOR} x P x 2^-24 = {otol:.2g} relative (the "
           f"library's cos and sin are float32; P = {2 * L} positions); > {FAIL_FACTOR} x that fails; cache: "
           f"{dec.tolerance}")
    head = (f"{spec} ({b.attn}; {_lib()}), rope {rope.get('rope_type')}: score spread along offsets {_noise(spread, otol)} over positions "
            f"0..{2 * L - 1} (max_position_embeddings {max_positions}); cached decode vs full pass "
            f"{_shown64(dec.numbers['max_deviation'], dec.numbers['tolerance'])}")
    if spread > FAIL_FACTOR * otol or dec.outcome == Outcome.FAILS:
        w: dict[str, Any] = {"offset_spread": spread} if spread > FAIL_FACTOR * otol else {}
        if dec.outcome == Outcome.FAILS:
            w.update(dec.witness or {})
        return _released(Evidence(Layer.NUMERIC, Status.CONSISTENT, Outcome.FAILS, summary=head, numbers=numbers,
                                  witness=w, tolerance=tol, engines=_engines(), seed=seed))
    if spread > otol or dec.status != Status.CONSISTENT:
        return Evidence(Layer.NUMERIC, Status.INCONCLUSIVE, summary=head, numbers=numbers, tolerance=tol,
                        engines=_engines(), seed=seed)
    return Evidence(Layer.NUMERIC, Status.CONSISTENT, Outcome.HOLDS, summary=head, numbers=numbers, tolerance=tol,
                    engines=_engines(), seed=seed)


# ------------------------------------------------------------------ padding


def check_padding(spec: str, attn: str, seed: int, lengths: Sequence[int], steps: int, positions: str) -> Evidence:
    """impl:padding: a left-padded batch (attention_mask; position_ids from the mask when ``positions`` is
    'from-mask', none given when 'implicit') prefilled through the cache then decoded ``steps`` tokens one per
    call gives, for each sequence, the logits of that sequence run alone without padding or cache."""
    b = im.build(spec, attn=attn, seed=seed)
    B, T = len(lengths), max(lengths)
    toks = im.tokens(T + steps, b.vocab, seed, batch=B)
    ids = torch.zeros(B, T, dtype=torch.long)
    mask = torch.zeros(B, T, dtype=torch.long)
    for i, n in enumerate(lengths):
        ids[i, T - n:] = toks[i, :n]
        mask[i, T - n:] = 1
    cache = im.new_cache(b, T + steps)

    def kw(msk: torch.Tensor, last: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"attention_mask": msk}
        if positions == "from-mask":
            pos = (msk.cumsum(-1) - 1).clamp(min=0)
            out["position_ids"] = pos if last is None else pos[:, -last:]
        return out

    logits = [im.call(b, ids, cache, **kw(mask, None)).logits.to(torch.float64)]
    for s in range(steps):
        nxt = torch.stack([toks[i, n + s] for i, n in enumerate(lengths)])[:, None]
        mask = torch.cat([mask, torch.ones(B, 1, dtype=torch.long)], 1)
        logits.append(im.call(b, nxt, cache, **kw(mask, 1)).logits.to(torch.float64))
    got = torch.cat(logits, 1)
    return _released(padding_evidence(got, lambda i, n: im.full(b, toks[i:i + 1, :n + steps]), lengths, steps,
                                      positions, f"{spec} ({b.attn}; {_lib()})", b.describe(), _engines(), seed))


def padding_evidence(got: torch.Tensor, alone_at: Callable[[int, int], torch.Tensor], lengths: Sequence[int],
                     steps: int, positions: str, label: str, describe: dict[str, Any], engines: dict[str, str],
                     seed: int, quantity: str = "logit") -> Evidence:
    """impl:padding's comparison and report, for any model: ``got`` (float64 ``[batch, max(lengths) + steps,
    features]``) are the batched calls' outputs, left-padded; ``alone_at(i, n)`` the cache-free pass of sequence
    ``i`` (``n`` prompt positions, then the ``steps`` decoded ones) run alone, ``[1, n + steps, features]``;
    ``quantity`` names what the features are, for the tolerance text."""
    T = max(lengths)
    worst, witness, scale_all = 0.0, None, 0.0
    for i, n in enumerate(lengths):
        alone = alone_at(i, n)
        scale = float(alone.abs().max()) or 1.0
        scale_all = max(scale_all, scale)
        mine = got[i:i + 1, T - n:]
        per = _per_pos(mine, alone, scale)
        for t, d in enumerate(per):
            if d > worst:
                worst = d
            if d > FAIL_FACTOR * TOL64 and witness is None:
                witness = {"sequence": i, "length": n, "padding": T - n, "position": t,
                           "phase": "prefill" if t < n else f"decode step {t - n + 1}", "deviation": d}
    status, outcome = _verdict(worst, TOL64)
    numbers = {**describe, "lengths": list(lengths), "steps": steps, "positions": positions,
               "max_deviation": worst}
    tol = (f"float64: relative deviation <= {TOL64:g} holds, > {FAIL_FACTOR * TOL64:g} fails (max |{quantity}| of the "
           "sequence alone)")
    head = (f"{label}, left-padded batch of lengths {list(lengths)} with the cache, {steps} decode steps, "
            f"position_ids {positions}: max |batched - alone| / max |alone| {_noise(worst, TOL64)}")
    if outcome == Outcome.FAILS and witness is not None:
        head += (f"; first: sequence {witness['sequence']} (length {witness['length']}, {witness['padding']} pads), "
                 f"{witness['phase']}")
    return Evidence(Layer.NUMERIC, status, outcome, summary=head, numbers=numbers,
                    witness=witness if outcome == Outcome.FAILS else None, tolerance=tol, engines=engines, seed=seed)
