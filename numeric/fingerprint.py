"""fp26's spectral fingerprint D_head, its random-orientation null, and the constrained two-layer toy.

Source: fp26 = Li Hengyu, "Fingerprint, Not Blueprint", arXiv 2607.06621 v1, read in the authors' bundle
(github HengyuLi-Ozaki-lab/qk-spectral-fingerprint): paper/qk_spectral.tex, Sec. Method (the metrics
dir_frac = ||M_A||_F / ||M||_F and D_head = sum_r |Im lambda_r| / sum_r |lambda_r|; the matched-singular-value
random-orientation null "computed exactly in the rank-k core", "D_head,null = 0.608" for GPT-2) and Sec. "Is the
rotational channel necessary?" (the constrained-training toy), with its code src/p10_training_intervention.py.
The toy, reconstructed from that code: 2-layer attention-only models (pre-LayerNorm, 4 heads) on the per-sequence
random-map task, free or with a soft ban on the static M's antisymmetric part (sym) or on RoPE's phase Im(M_t)
(imag); formation is when the training loss crosses the midpoint between ln V and the induction floor.
Departures from the code are listed by the claim (proofs/fp26).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import torch

from verify.constructions import rope
from verify.evidence import Outcome
from verify.numeric import lab

RECIPE_VERSION = "fp26-toy-1"
#: a head counts as a previous-token head when its mean attention on t - 1 is >= this
PREV_HEAD = 0.5


def d_head(M: np.ndarray) -> float:
    """sum |Im lambda| / sum |lambda| over the eigenvalues of M (float64); 0 for M = 0.

    Raises:
        ValueError: M not square.
    """
    M = np.asarray(M, dtype=np.float64)
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise ValueError(f"M must be square, got shape {M.shape}")
    lam = np.linalg.eigvals(M)
    den = float(np.abs(lam).sum())
    return float(np.abs(lam.imag).sum()) / den if den > 0 else 0.0


def haar(n: int, rng: np.random.Generator) -> np.ndarray:
    """A Haar-random n x n orthogonal matrix (QR of a Gaussian with the sign fix)."""
    Z = rng.standard_normal((n, n))
    Q, R = np.linalg.qr(Z)
    return Q * np.sign(np.diag(R))


def null_d_head(M: np.ndarray, draws: int, seed: int) -> dict[str, float]:
    """D_head of U diag(s) V^T, s the singular values of M, U and V Haar: mean and 2.5/97.5% quantiles."""
    s = np.linalg.svd(np.asarray(M, dtype=np.float64), compute_uv=False)
    n = s.shape[0]
    rng = np.random.default_rng(seed)
    vals = np.array([d_head(haar(n, rng) @ np.diag(s) @ haar(n, rng).T) for _ in range(draws)])
    return {"mean": float(vals.mean()), "lo": float(np.quantile(vals, 0.025)), "hi": float(np.quantile(vals, 0.975))}


# ---------------------------------------------- the toy of Sec. "Is the rotational channel necessary?"

#: the paper's toy sizes (fp26 Sec. "Is the rotational channel necessary?" and its code p10_training_intervention.py):
#: 2-layer attention-only, d = 128, 4 heads (d_k = 32), V = 64, length 256, batch 64, AdamW lr 1e-3, 6000 steps
PAPER_TOY = {"d": 128, "H": 4, "V": 64, "T": 256, "batch": 64, "lr": 1e-3, "steps": 6000}
#: the toy's arms: (positions, constraint); constraints: free, sym (penalise ||M_A||^2 / ||M||^2), imag (penalise
#: sum_t ||Im M_t||^2 / sum_t (||Re M_t||^2 + ||Im M_t||^2); RoPE only)
ARMS = (("absolute", "free"), ("absolute", "sym"), ("rope", "free"), ("rope", "sym"), ("rope", "imag"))
ARMS_NAMES = tuple(f"{pe}/{c}" for pe, c in ARMS)
#: penalty weight lambda of the constrained arms (the paper's grid: sym 10; imag 1 and 10)
LAMBDA = 10.0
#: the map process's noise probability (the paper's EPS)
NOISE = 0.1
#: the paper's formation delays (Table "Constrained-training formation delays"; text: APE free 600, APE sym 1740 +- 241)
PAPER_APE_FREE, PAPER_APE_SYM, PAPER_SYM_RATIO = 600, 1740, "2.9"
#: a static M counts as fully symmetric when dir_frac = ||M_A||_F / ||M||_F is below this (the paper's sym arms end at
#: 0.004-0.006); the phase channel is used when the rotary imaginary share is above PHASE_USED (paper: 0.52)
SYMMETRIC, PHASE_USED = 0.05, 0.2


def map_batch(V: int, T: int, B: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """The paper's per-sequence random-map task: x_{t+1} = f_seq(x_t) with probability 0.9, uniform noise
    otherwise, f_seq a fresh random map [V] -> [V] per sequence (forces induction: no global memorisation,
    no fixed offset).  Returns tokens (B, T) int64 and map (B, T - 1) bool (True where x_{t+1} came from f)."""
    f = torch.randint(0, V, (B, V), generator=gen)
    x = torch.empty(B, T, dtype=torch.long)
    x[:, 0] = torch.randint(0, V, (B,), generator=gen)
    noise = torch.rand(B, T - 1, generator=gen) < NOISE
    rnd = torch.randint(0, V, (B, T - 1), generator=gen)
    rows = torch.arange(B)
    for t in range(T - 1):
        x[:, t + 1] = torch.where(noise[:, t], rnd[:, t], f[rows, x[:, t]])
    return x, ~noise


def seen_before(x: torch.Tensor) -> torch.Tensor:
    """seen[..., t] = x_t occurred at some j < t (a lookup is possible)."""
    T = x.shape[-1]
    eq = x[..., :, None] == x[..., None, :]
    return (eq & torch.ones(T, T, dtype=torch.bool).tril(-1)).any(-1)


def _ln(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


def rope_half(x: torch.Tensor, phase: bool = True) -> torch.Tensor:
    """Rotate-half RoPE over the whole head (pairs (i, i + dh/2), theta_i = 10000^(-2i/dh)), x (..., T, dh).
    ``phase=False`` is the fault 'RoPE phase dropped' (identity)."""
    if not phase:
        return x
    T, dh = x.shape[-2], x.shape[-1]
    # angles in the training dtype, as the runs that decided fp26 computed them (bit-identical)
    return rope.rotate(x, torch.arange(T), rope.inverse_frequencies(10000.0, dh, x.dtype), "half", angle_dtype=x.dtype)


def toy_forward(p: dict[str, torch.Tensor], tok: torch.Tensor, pe: str, phase: bool = True,
                streams: list[torch.Tensor] | None = None) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """Logits (S, B, T, V) of the 2-layer attention-only model (pre-LayerNorm without gain, residual stream,
    unembedding after a final LayerNorm) and each layer's attention (S, B, H, T, T); ``streams``, when given,
    receives each layer's input residual stream (S, B, T, d)."""
    S, B, T = tok.shape
    X = p["E"][torch.arange(S)[:, None, None], tok]
    if pe == "absolute":
        X = X + p["P"][:, None, :T]
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    atts = []
    for layer in (1, 2):
        if streams is not None:
            streams.append(X)
        h = _ln(X)
        q = torch.einsum("sbtd,shde->sbhte", h, p[f"Q{layer}"])
        k = torch.einsum("sbtd,shde->sbhte", h, p[f"K{layer}"])
        v = torch.einsum("sbtd,shde->sbhte", h, p[f"V{layer}"])
        if pe == "rope":
            q, k = rope_half(q, phase), rope_half(k, phase)
        sc = q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])
        A = torch.softmax(sc.masked_fill(~mask, float("-inf")), -1)
        atts.append(A)
        X = X + torch.einsum("sbhte,shed->sbtd", A @ v, p[f"O{layer}"])
    return torch.einsum("sbtd,sdv->sbtv", _ln(X), p["U"]), atts


def static_m(WQ: torch.Tensor, WK: torch.Tensor) -> torch.Tensor:
    """M = W_q W_k^T per head in the residual basis, WQ, WK (..., H, d, dh) -> (..., H, d, d)."""
    return WQ @ WK.transpose(-1, -2)


def penalty_sym(p: dict[str, torch.Tensor]) -> torch.Tensor:
    """Per seed: mean over layers and heads of ||M_A||_F^2 / ||M||_F^2 (denominator detached), (S,)."""
    tot = torch.zeros(())
    for layer in (1, 2):
        M = static_m(p[f"Q{layer}"], p[f"K{layer}"])
        MA = 0.5 * (M - M.transpose(-1, -2))
        tot = tot + ((MA ** 2).sum((-1, -2)) / ((M ** 2).sum((-1, -2)).detach() + 1e-8)).mean(-1)
    return tot / 2


def imag_parts(WQ: torch.Tensor, WK: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """sum_t ||Im M_t||_F^2 and sum_t ||Re M_t||_F^2 per head (rotate-half pairing, M_t = w_q^t conj(w_k^t)^T with
    w^t = column t + i column t + dh/2), closed forms, (..., H) each."""
    h = WQ.shape[-1] // 2
    a, c = WQ[..., :h], WQ[..., h:]
    b, d = WK[..., :h], WK[..., h:]
    na, nb, nc, nd = (a * a).sum(-2), (b * b).sum(-2), (c * c).sum(-2), (d * d).sum(-2)
    ac, bd = (a * c).sum(-2), (b * d).sum(-2)
    return (nc * nb + na * nd - 2 * ac * bd).sum(-1), (na * nb + nc * nd + 2 * ac * bd).sum(-1)


def penalty_imag(p: dict[str, torch.Tensor]) -> torch.Tensor:
    """Per seed: mean over layers and heads of sum_t ||Im M_t||^2 / sum_t (||Re||^2 + ||Im||^2) (denominator
    detached), (S,)."""
    tot = torch.zeros(())
    for layer in (1, 2):
        im, re_ = imag_parts(p[f"Q{layer}"], p[f"K{layer}"])
        tot = tot + (im / ((im + re_).detach() + 1e-8)).mean(-1)
    return tot / 2


def toy_recipe(pe: str, constraint: str, d: int, H: int, V: int, T: int, batch: int, steps: int, lr: float,
               every: int) -> lab.Recipe:
    """One arm of the toy grid as a lab recipe (loss: cross-entropy on every next token + LAMBDA x penalty)."""
    if constraint == "imag" and pe != "rope":
        raise ValueError("the Im(M_t) ban exists only under RoPE")
    dh = d // H
    std = 0.8 / math.sqrt(d)  # TransformerLens' default initializer_range

    def init(gen: torch.Generator) -> dict[str, torch.Tensor]:
        out = {"E": torch.randn(V, d, generator=gen) * std, "P": torch.randn(T, d, generator=gen) * std,
               "U": torch.randn(d, V, generator=gen) * std}
        for layer in (1, 2):
            for n in "QKV":
                out[f"{n}{layer}"] = torch.randn(H, d, dh, generator=gen) * std
            out[f"O{layer}"] = torch.randn(H, dh, d, generator=gen) * std
        return out

    def data(step: int, gens: list[torch.Generator]) -> torch.Tensor:
        return torch.stack([map_batch(V, T, batch, g)[0] for g in gens])

    pen = {"free": None, "sym": penalty_sym, "imag": penalty_imag}[constraint]

    def loss(params: dict[str, torch.Tensor], tok: torch.Tensor) -> torch.Tensor:
        logits, _ = toy_forward(params, tok[..., :-1], pe)
        ce = -torch.log_softmax(logits, -1).gather(-1, tok[..., 1:, None])[..., 0].mean((1, 2))
        return ce if pen is None else ce + LAMBDA * pen(params)

    frozen = () if pe == "absolute" else ("P",)
    return lab.Recipe(name="fp26-toy", version=RECIPE_VERSION,
                      config={"pe": pe, "constraint": constraint, "lambda": LAMBDA, "noise": NOISE, "d": d, "H": H,
                              "V": V, "T": T, "batch": batch},
                      init=init, data=data, loss=loss,
                      optim=lab.Optim(kind="adam", lr=lr, steps=steps, report_every=every), frozen=frozen)


def loss_floor(V: int, T: int, seed: int, n: int = 64) -> float:
    """The loss of a model that knows f_seq for every token seen before (exact mixture entropy on those
    positions, ln V elsewhere), averaged over ``n`` sequences of the task: the floor induction can reach."""
    x, _ = map_batch(V, T, n, lab.generator("fp26-toy", seed, "floor"))
    seen = seen_before(x)[:, :-1].double().mean().item()
    hi, lo = 1 - NOISE + NOISE / V, NOISE / V
    h_mix = -(hi * math.log(hi) + (V - 1) * lo * math.log(lo))
    return seen * h_mix + (1 - seen) * math.log(V)


def formation_step(losses: Sequence[float], every: int, steps: int, threshold: float) -> int | None:
    """The recorded step (0, every, 2 every, ..., steps - 1) from which every recorded training loss stays below
    ``threshold`` (the start of the final stretch below it); None (not formed) when the last recorded loss is not
    below it.  One batch's loss dipping under the threshold on the way is not a formed model: the 21600-step run's
    rope/sym seed 1 dipped at 3225, stayed near 2.6 against a threshold of 2.42 until about step 14000, and formed
    only then (an earlier rule read the first dip as its formation)."""
    if not losses or not losses[-1] < threshold:
        return None
    r = len(losses) - 1
    while r > 0 and losses[r - 1] < threshold:
        r -= 1
    return min(r * every, steps - 1)


def head_report(p: dict[str, torch.Tensor], pe: str, V: int, T: int, seed: int) -> list[dict[str, Any]]:
    """Per seed: the previous-token head (the head of either layer with the most mean attention on t - 1 over
    positions >= T/4), its attention on t - 1, dir_frac = ||M_A||/||M||, D_head, the rotary imaginary share, and the
    pair asymmetry of its scores on identical content at offsets -1 and +1 (mean over the vocabulary of
    score(query i, key i - 1) - score(query i - 1, key i), divided by the mean |score|; 0 for any head whose
    rotation-free M is symmetric, by the algebra of :mod:`verify.symbolic.fp26`); also the final cross-entropy on
    predictable positions (a map step whose token was seen before)."""
    x, mp = map_batch(V, T, 16, lab.generator("fp26-toy", seed, "eval"))
    S = p["E"].shape[0]
    tok = x.expand(S, *x.shape)
    streams: list[torch.Tensor] = []
    logits, atts = toy_forward(p, tok, pe, streams=streams)
    ce = -torch.log_softmax(logits[..., :-1, :], -1).gather(-1, tok[..., 1:, None])[..., 0]
    pred = (mp & seen_before(x)[:, :-1])
    out = []
    lo = T // 4
    idx = torch.arange(lo, T)
    for s in range(S):
        cands = []
        for li, A in enumerate(atts, start=1):
            wl = A[s][..., idx, idx - 1].mean((0, 2))  # (H,)
            cands += [(float(wl[h]), li, h) for h in range(wl.shape[0])]
        w, li, h = max(cands)
        WQ, WK = p[f"Q{li}"][s, h], p[f"K{li}"][s, h]
        M = (WQ @ WK.T).numpy()
        MA = 0.5 * (M - M.T)
        im, re_ = imag_parts(WQ, WK)
        content = _ln(p["E"][s])  # the layer-1 input of each token without position (exact for RoPE heads)
        q2 = torch.stack([content @ WQ] * 2, 1)  # (V, positions 0 and 1, dh)
        k2 = torch.stack([content @ WK] * 2, 1)
        qr, kr = (rope_half(q2), rope_half(k2)) if pe == "rope" else (q2, k2)
        prev = (qr[:, 1] * kr[:, 0]).sum(-1)  # query at 1, key at 0
        nxt = (qr[:, 0] * kr[:, 1]).sum(-1)   # query at 0, key at 1
        scale = float(torch.cat([prev, nxt]).abs().mean()) or 1.0
        dfrac = float(np.linalg.norm(MA)) / max(float(np.linalg.norm(M)), 1e-300)
        from verify.numeric.heads import certified_mean_prev, fp26_program

        cert = certified_mean_prev(fp26_program(p, s, li, h, pe), x.tolist(),
                                   [streams[0][s, b] for b in range(x.shape[0])], lo)
        out.append({"layer": li, "head": h, "prev_weight": round(w, 4), "prev_weight_certified": cert,
                    "dir_frac": dfrac, "d_head": d_head(M),
                    "rope_imag_share": float(im / (im + re_)) if pe == "rope" else None,
                    "pair_asymmetry": float((prev - nxt).mean()) / scale,
                    "ce_predictable": float(ce[s][pred].mean())})
    return out


def core_null(s: np.ndarray, d: int, draws: int, seed: int) -> dict[str, float]:
    """The matched-singular-value random-orientation null in the rank-k core (fp26, Sec. Method): M = U diag(s) V^T
    with U, V independent uniformly random orthonormal d x k frames; its nonzero eigenvalues are those of
    diag(s) V^T U (k x k).  V^T U has the law of the first k rows of a random frame (rotate V to the standard
    frame: U's law is invariant), which is what is sampled."""
    rng = np.random.default_rng(seed)
    k = s.shape[0]
    vals = []
    for _ in range(draws):
        Q, R = np.linalg.qr(rng.standard_normal((d, k)))
        U = Q * np.sign(np.diag(R))  # the sign fix makes the frame uniformly distributed (LAPACK's Q alone is not)
        vals.append(d_head(np.diag(s) @ U[:k]))
    v = np.array(vals)
    return {"mean": float(v.mean()), "lo": float(np.quantile(v, 0.025)), "hi": float(np.quantile(v, 0.975))}


#: the paper's null is reported for GPT-2 small (Sec. Method: "Empirically ... D_head,null = 0.608"; d = 768, d_k = 64)
GPT2_D, GPT2_DK = 768, 64


def gpt2_null(draws: int, seed: int) -> dict[str, float]:
    """The null at GPT-2's sizes for a head with Gaussian W_q, W_k (d x d_k): singular values of W_q W_k^T, random
    frames in the rank-64 core (:func:`core_null`)."""
    rng = np.random.default_rng(seed)
    A, B = rng.standard_normal((GPT2_D, GPT2_DK)), rng.standard_normal((GPT2_D, GPT2_DK))
    qa, ra = np.linalg.qr(A)
    qb, rb = np.linalg.qr(B)
    s = np.linalg.svd(ra @ rb.T, compute_uv=False)  # the singular values of A B^T, from its 64 x 64 core
    return core_null(s, GPT2_D, draws, seed)


def prev_lower(head: dict[str, Any]) -> float:
    """A head's attention on t - 1 as the rule reads it: the certified lower end when measured, else the float."""
    cert = head.get("prev_weight_certified")
    return float(cert[0]) if cert else float(head["prev_weight"])


#: the level of the one-sided test that symmetry slows the learned-absolute model, and the ranges of the thresholds of
#: ours that the verdict is recomputed at (fp26:fingerprint's protocol declares the same; a test holds them equal)
SLOW_LEVEL = 0.05
SLOW_LEVEL_RANGE, PREV_HEAD_RANGE, SYMMETRIC_RANGE, PHASE_USED_RANGE = (0.01, 0.1), (0.4, 0.6), (0.03, 0.1), (0.1, 0.3)


def slows_test(free: Sequence[int | None], sym: Sequence[int | None], steps: int, every: int) -> dict[str, Any]:
    """"Imposing symmetry slows learned-absolute models" as a test: one-sided Mann-Whitney U (scipy.stats.mannwhitneyu,
    alternative 'greater', exact where scipy computes it) of absolute/sym's formation steps against absolute/free's; a
    seed that did not form within the horizon counts as forming after it (``steps + every``, the slowest rank)."""
    from scipy.stats import mannwhitneyu

    late = steps + every
    x = [late if f is None else f for f in sym]
    y = [late if f is None else f for f in free]
    res = mannwhitneyu(x, y, alternative="greater")
    return {"U": float(res.statistic), "p_value": float(res.pvalue), "sym": x, "free": y}


def toy_verdict(arms: dict[str, dict[str, Any]], steps: int | None = None, every: int = 25,
                prev_head: float = PREV_HEAD, level: float = SLOW_LEVEL, symmetric: float = SYMMETRIC,
                phase_used: float = PHASE_USED) -> tuple[Outcome, list[str]]:
    """The rule of :func:`check_toy` on measured numbers at the protocol's fixed horizon (``arms[name]`` with
    ``formation`` (per seed, None = not formed within the run), ``heads`` (per seed, :func:`head_report`)).  Judged, each
    as the abstract words it; ``holds`` when all four hold, else ``fails`` with the reasons:
    (a) capability intact under every ban: every seed of every arm forms within the run and its head attends to t - 1
        (certified lower end >= ``prev_head``);
    (b) the bans enforce: sym arms' previous-token heads have dir_frac < SYMMETRIC, the imag arm's rotary imaginary
        share < SYMMETRIC;
    (c) imposing symmetry slows learned-absolute models: :func:`slows_test` rejects at ``level``;
    (d) a RoPE head with a fully symmetric static M routes directionally through the phase: rope/sym's heads have
        dir_frac < SYMMETRIC, rotary imaginary share >= PHASE_USED and a positive pair asymmetry (prefers t - 1)."""
    reasons: list[str] = []
    for name, a in arms.items():
        unformed = [k for k, f in enumerate(a["formation"]) if f is None]
        if unformed:
            reasons.append(f"{name}: seed(s) {unformed} did not form within the {steps}-step horizon")
        weak = [prev_lower(h) for k, h in enumerate(a["heads"]) if k not in unformed and prev_lower(h) < prev_head]
        if weak:
            reasons.append(f"{name}: previous-token head weak ({min(weak):.2f} < {prev_head})")
        cons = name.split("/")[1]
        if cons == "sym" and max(h["dir_frac"] for h in a["heads"]) >= symmetric:
            reasons.append(f"{name}: the symmetry ban did not enforce (dir_frac >= {symmetric})")
        if cons == "imag" and max(h["rope_imag_share"] for h in a["heads"]) >= symmetric:
            reasons.append(f"{name}: the phase ban did not enforce")
    if "absolute/free" in arms and "absolute/sym" in arms:
        t = slows_test(arms["absolute/free"]["formation"], arms["absolute/sym"]["formation"], steps or 0, every)
        if not t["p_value"] < level:
            reasons.append(f"symmetry did not slow the absolute model at level {level} (one-sided Mann-Whitney U = "
                           f"{t['U']:g}, p = {t['p_value']:.3g})")
    if "rope/sym" in arms:
        hs = arms["rope/sym"]["heads"]
        if not all(h["dir_frac"] < symmetric and h["rope_imag_share"] >= phase_used and h["pair_asymmetry"] > 0
                   for h in hs):
            reasons.append("rope/sym: no head is directional through the phase with a symmetric static M")
    return (Outcome.FAILS if reasons else Outcome.HOLDS), reasons


def toy_decision(arms: dict[str, dict[str, Any]], steps: int, every: int) -> tuple[Outcome | None, list[str], list[str]]:
    """:func:`toy_verdict` at the declared thresholds and at each end of their ranges (None when it flips): the
    outcome, the reasons at the declared values and the sensitivity lines."""
    from verify.thresholds import Threshold, sensitivity

    outcome, lines = sensitivity(lambda th: toy_verdict(arms, steps, every, th["prev_head"], th["level"],
                                                        th["symmetric"], th["phase_used"])[0],
                                 (Threshold("prev_head", PREV_HEAD, "ours: the head", *PREV_HEAD_RANGE),
                                  Threshold("level", SLOW_LEVEL, "ours: the level", *SLOW_LEVEL_RANGE),
                                  Threshold("symmetric", SYMMETRIC, "ours: the ban", *SYMMETRIC_RANGE),
                                  Threshold("phase_used", PHASE_USED, "ours: the phase", *PHASE_USED_RANGE)))
    return outcome, toy_verdict(arms, steps, every)[1], lines


def train_arm(spec: dict[str, Any]) -> dict[str, Any]:
    """One arm of the toy grid (a module-level task for :func:`verify.numeric.grid.run_grid`): train its seeds as one
    batched model through the lab (cache at ``spec["cache_dir"]``; None: the user cache directory of the machine
    that runs it), read formation steps from the training loss and report each seed's previous-token head."""
    pe, cons = spec["pe"], spec["constraint"]
    steps, every = spec["steps"], spec["every"]
    cache = lab.Cache(spec["cache_dir"]) if spec.get("use_cache", True) else None
    tr = lab.train(toy_recipe(pe, cons, spec["d"], spec["H"], spec["V"], spec["T"], spec["batch"], steps, spec["lr"],
                              every), spec["seeds"], cache=cache)
    losses = tr.losses.double()
    form = [formation_step(losses[:, k].tolist(), every, steps, spec["threshold"]) for k in range(len(spec["seeds"]))]
    return {"formation": form, "heads": head_report(tr.float64(), pe, spec["V"], spec["T"], 7),
            "final_loss": [round(v, 4) for v in losses[-1].tolist()], "from_cache": tr.from_cache,
            "train_seconds": tr.train_seconds, "seconds_per_step": round(tr.seconds_per_step, 4),
            "checkpoint": tr.checkpoint()}


def check_toy(d: int, H: int, V: int, T: int, batch: int, steps: int, lr: float, seeds: Sequence[int], every: int,
              arms: Sequence[tuple[str, str]], cache_dir: str | None, progress: Any = None, scheduler: str = "in-process",
              jobs: int = 2, use_cache: bool = True) -> dict[str, Any]:
    """Train every arm (one grid task per arm, seeds batched), find formation steps and the previous-token heads;
    returns the numbers and the verdict of :func:`toy_decision`.  ``scheduler``: where the arms train
    (:func:`verify.numeric.grid.parse_scheduler`: ``in-process``, ``local`` with ``jobs`` workers, or an existing
    Dask scheduler ``tcp://HOST:PORT`` for runs larger than this machine).

    Raises:
        verify.numeric.grid.SchedulerUnreachable: no scheduler at the address.
    """
    from verify.numeric import grid

    floor = loss_floor(V, T, 0)
    thr = 0.5 * (math.log(V) + floor)
    out: dict[str, Any] = {"loss_floor": round(floor, 4), "formation_threshold": round(thr, 4), "arms": {}}
    specs = [{"pe": pe, "constraint": cons, "d": d, "H": H, "V": V, "T": T, "batch": batch, "steps": steps, "lr": lr,
              "every": every, "seeds": list(seeds), "threshold": thr, "cache_dir": cache_dir, "use_cache": use_cache}
             for pe, cons in arms]
    results = grid.run_grid(train_arm, specs, scheduler=scheduler, n_workers=jobs, progress=progress, name="fp26-toy")
    for (pe, cons), r in zip(arms, results):
        out["arms"][f"{pe}/{cons}"] = r
    verdict, reasons, lines = toy_decision(out["arms"], steps, every)
    out["verdict"], out["reasons"], out["sensitivity"] = verdict, reasons, lines
    if "absolute/free" in out["arms"] and "absolute/sym" in out["arms"]:
        out["slows_test"] = slows_test(out["arms"]["absolute/free"]["formation"],
                                       out["arms"]["absolute/sym"]["formation"], steps, every)
    return out


# ---------------------------------------------- the static part on local checkpoints (Sec. "The architecture-conditional signature")

#: positional scheme by Hugging Face ``model_type`` (position inside QK: RoPE; outside: learned absolute or ALiBi)
SCHEMES = {"gpt2": "absolute", "opt": "absolute", "gpt_neo": "absolute", "bloom": "alibi", "gpt_neox": "rope",
           "llama": "rope", "mistral": "rope", "qwen2": "rope"}
#: top previous-token heads per model whose within-model D_head percentile is summarised (the paper's k = 5)
TOP_K = 5


def _qk_heads(model: Any, model_type: str, n_layers: int, H: int) -> list[tuple[int, int, np.ndarray, np.ndarray]]:
    """(layer, head, W_q (d, d_k), W_k (d, d_k)) per head, the norm gain folded into both and, for LayerNorm models,
    the centring C = I - 11^T/d applied (the paper's M_eff = C M C; RMSNorm: M), float64."""
    sd = {k: v.detach().double().cpu().numpy() for k, v in model.state_dict().items()}
    out = []
    for li in range(n_layers):
        if model_type == "gpt2":
            W, g = sd[f"transformer.h.{li}.attn.c_attn.weight"], sd[f"transformer.h.{li}.ln_1.weight"]
            d = W.shape[0]
            Wq, Wk = W[:, :d], W[:, d:2 * d]
        elif model_type in ("gpt_neox", "bloom"):
            pre = (f"gpt_neox.layers.{li}.attention.query_key_value" if model_type == "gpt_neox"
                   else f"transformer.h.{li}.self_attention.query_key_value")
            ln = (f"gpt_neox.layers.{li}.input_layernorm.weight" if model_type == "gpt_neox"
                  else f"transformer.h.{li}.input_layernorm.weight")
            W, g = sd[pre + ".weight"], sd[ln]
            d = W.shape[1]
            Wr = W.reshape(H, 3, d // H, d)
            Wq, Wk = Wr[:, 0].reshape(d, d).T, Wr[:, 1].reshape(d, d).T
        elif model_type in ("llama", "mistral", "qwen2", "opt", "gpt_neo"):
            pre, ln = {"opt": (f"model.decoder.layers.{li}.self_attn", f"model.decoder.layers.{li}.self_attn_layer_norm"),
                       "gpt_neo": (f"transformer.h.{li}.attn.attention", f"transformer.h.{li}.ln_1")}.get(
                model_type, (f"model.layers.{li}.self_attn", f"model.layers.{li}.input_layernorm"))
            Wq, Wk, g = sd[pre + ".q_proj.weight"].T, sd[pre + ".k_proj.weight"].T, sd[ln + ".weight"]
            if Wk.shape[1] != Wq.shape[1]:  # grouped-query attention: each query head uses its group's key head
                dk = Wq.shape[1] // H
                groups = H // (Wk.shape[1] // dk)
                Wk = np.concatenate([Wk[:, (h // groups) * dk:(h // groups + 1) * dk] for h in range(H)], 1)
        else:
            raise ValueError(f"model_type {model_type!r} is not supported (supported: {', '.join(sorted(SCHEMES))})")
        d = Wq.shape[0]
        C = np.eye(d) - np.ones((d, d)) / d if model_type not in ("llama", "mistral", "qwen2") else np.eye(d)
        Wq, Wk = C @ (g[:, None] * Wq), C @ (g[:, None] * Wk)
        dk = Wq.shape[1] // H
        out += [(li, h, Wq[:, h * dk:(h + 1) * dk], Wk[:, h * dk:(h + 1) * dk]) for h in range(H)]
    return out


def core_d_head(Wq: np.ndarray, Wk: np.ndarray) -> float:
    """D_head of M = W_q W_k^T (d x d, rank <= d_k) from its d_k x d_k core W_k^T W_q (same nonzero eigenvalues)."""
    return d_head(Wk.T @ Wq)


def static_profile(path: str, seed: int = 0, n_seq: int = 8, T: int = 64, top: int = TOP_K) -> dict[str, Any]:
    """The static measurement of one local checkpoint (a Hugging Face directory; ``local_files_only``: never a
    download): each head's previous-token score (mean attention on t - 1 over ``n_seq`` uniformly random token
    sequences of length ``T``, seeded) and D_head (norm-folded M, float64), then the within-model D_head percentile
    (rank r / n) of the ``top`` strongest previous-token heads and its median.

    Raises:
        ImportError: the ``transformers`` package is not installed (what the static part needs).
        verify.hfcompat.UnsupportedRelease: its release is outside the supported range.
        ValueError: an unsupported model type.
    """
    from verify import hfcompat

    transformers = hfcompat.load()  # optional: only the static part needs it

    cfg = transformers.AutoConfig.from_pretrained(path, local_files_only=True)
    mt = cfg.model_type
    if mt not in SCHEMES:
        raise ValueError(f"model_type {mt!r} is not supported (supported: {', '.join(sorted(SCHEMES))})")
    model = hfcompat.model_from_pretrained(path, torch.float32, "eager").eval()
    H = cfg.num_attention_heads
    g = torch.Generator().manual_seed(seed)
    tok = torch.randint(0, cfg.vocab_size, (n_seq, T), generator=g)
    with torch.no_grad():
        atts = model(tok, output_attentions=True).attentions
    idx = torch.arange(1, T)
    prev = [a[:, :, idx, idx - 1].double().mean((0, 2)).tolist() for a in atts]  # per layer, per head
    heads = _qk_heads(model, mt, len(atts), H)
    dh = np.array([core_d_head(q, k) for _, _, q, k in heads])
    pv = np.array([prev[li][h] for li, h, _, _ in heads])
    ranks = dh.argsort().argsort() + 1
    pct = ranks / len(dh)
    top_idx = np.argsort(-pv, kind="stable")[:top]
    return {"path": path, "model_type": mt, "scheme": SCHEMES[mt], "heads": len(heads),
            "top_prev_heads": [{"layer": heads[i][0], "head": heads[i][1], "prev": round(float(pv[i]), 4),
                                "d_head": round(float(dh[i]), 4), "percentile": round(float(pct[i]), 4)} for i in top_idx],
            "median_percentile": float(np.median(pct[top_idx]))}


def static_verdict(profiles: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The static rule on measured profiles (the paper's profile-level claim): each model's top previous-token heads'
    median D_head percentile is high (>= 0.5, rotational) under RoPE and low (< 0.5, content-like) under learned
    absolute positions and ALiBi; with models of both kinds, the model-level separation is perfect when every RoPE
    median exceeds every other median, and the exact one-sided permutation p is then 1 / C(n, n_RoPE)."""
    from math import comb

    agree = [(p["scheme"] == "rope") == (p["median_percentile"] >= 0.5) for p in profiles]
    rope = [p["median_percentile"] for p in profiles if p["scheme"] == "rope"]
    other = [p["median_percentile"] for p in profiles if p["scheme"] != "rope"]
    out: dict[str, Any] = {"models": len(profiles), "each_on_its_side": all(agree), "on_side": agree}
    if rope and other:
        sep = min(rope) > max(other)
        out["perfect_separation"] = sep
        out["permutation_p"] = f"1/{comb(len(profiles), len(rope))}" if sep else None
    return out
