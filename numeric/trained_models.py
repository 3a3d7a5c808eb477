"""Trained two-layer Bietti-style models: data, model, lab recipes and memory-recall probes.

Used by the heavy claims ws24:falsifier (APE against RPE, end-to-end training) and the bietti23
probes.  Sources, element by element:

* the model: bietti23's public code (github albietz/transformer-birth, ``ihead_basic_model.py``):
  query^T W_K key scores with W_Q the identity, a 1/sqrt(d) score scale (its default ``no_sqrtd =
  False``), layer 1 without feed-forward, value paths W_V, W_O per layer, residual stream, output
  layer; random absolute positions ``pe`` (N(0, 1) rows), token embeddings N(0, 1) (nn.Embedding's
  default), linear layers initialised U(-1/sqrt(d), 1/sqrt(d)) (nn.Linear's default);
* the simplified model of the probes: layer-1 W_V, W_O and layer-2 W_V frozen at their
  initialisation, embeddings and output frozen (the same code's freeze flags), trained W^1_K,
  W^2_K, W^2_O;
* RPE (ws24): the layer-1 score adds x_t^T W^1_K r_{s-t} (relative vectors r_{-i}, N(0, 1) rows),
  and no absolute positions;
* the data (bietti23 Section 3 as the code implements it, ``ihead_data.py``): a bigram model with
  K trigger tokens per sequence, drawn from the unigram marginal without replacement; each trigger's
  output token is uniform over the vocabulary; after a trigger its output follows, elsewhere the
  bigram row of the previous token; a per-position counter marks the n-th occurrence of a trigger's
  output; the loss is the cross-entropy on positions whose counter is >= 2 (the code's
  ``loss_head_only``: the in-context bigrams the induction head must predict);
* optimisation: SGD with momentum 0.9 and weight decay 1e-4 (the code's ``OptimArgs``); learning
  rate, batch size and number of steps are CPU-scale (the code uses batch 512 on a GPU).

Shapes: tokens int64 (S, B, T) with S seeds batched along the leading dimension (the lab's
convention); parameters float32 (S, ...); evaluation float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import torch

from verify.numeric import lab

#: code version tag of the recipes below (part of the cache key): bump when model, data or loss change
RECIPE_VERSION = "bietti2-1"
PES = ("ape", "rpe")
#: the optimisers a two-layer recipe can use (the authors' code: SGD with momentum)
OPTIMIZERS = ("sgd", "adam")
#: matrix names of the two-layer model (layer-1 key, value, output; layer-2 key, value, output)
MATRICES = ("W1K", "W1V", "W1O", "W2K", "W2V", "W2O")
#: the simplified model of the probes trains only these (the rest stay at their initialisation)
SIMPLIFIED_TRAINED = ("W1K", "W2K", "W2O")
DATA_DIR = Path(__file__).resolve().parent / "data"
CORPUS = "corpus.txt"


# ----------------------------------------------------------------------------- data


@dataclass(frozen=True)
class BigramSource:
    """Unigram marginal and bigram rows over a vocabulary, float64.

    Attributes:
        marginal: (V,) probabilities (initial token and trigger draws).
        cond: (V, V) row-stochastic bigram matrix, cond[a, b] = P(b | a).
        itos: the characters of a text source ('' for synthetic sources).
    """

    marginal: torch.Tensor
    cond: torch.Tensor
    itos: str = ""

    @property
    def V(self) -> int:
        return int(self.marginal.shape[0])


def synthetic_source(V: int, seed: int) -> BigramSource:
    """ws24's data (reconstructed): initial token and triggers uniform over [V]; bigram rows drawn
    uniformly from the simplex (Dirichlet(1, ..., 1)) with a fixed generator.

    Raises:
        ValueError: V < 2.
    """
    if V < 2:
        raise ValueError(f"V must be >= 2, got {V}")
    g = torch.Generator().manual_seed(seed)
    rows = -torch.log(torch.rand(V, V, generator=g, dtype=torch.float64))  # Exp(1) -> Dirichlet(1)
    return BigramSource(torch.full((V,), 1.0 / V, dtype=torch.float64), rows / rows.sum(1, keepdim=True))


def text_source(text: str) -> BigramSource:
    """Character unigram and bigram statistics of ``text`` (bietti23's data recipe applied to the
    corpus shipped with the package instead of Tiny Shakespeare).  Rows with no observed successor
    fall back to the marginal.

    Raises:
        ValueError: fewer than 2 distinct characters.
    """
    chars = sorted(set(text))
    if len(chars) < 2:
        raise ValueError("the text needs at least 2 distinct characters")
    stoi = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    V = len(chars)
    marg = torch.bincount(ids, minlength=V).double()
    marg /= marg.sum()
    cond = torch.zeros(V, V, dtype=torch.float64)
    cond.index_put_((ids[:-1], ids[1:]), torch.ones(len(ids) - 1, dtype=torch.float64), accumulate=True)
    empty = cond.sum(1) == 0
    cond[empty] = marg
    return BigramSource(marg, cond / cond.sum(1, keepdim=True), "".join(chars))


def shipped_corpus() -> str:
    """The small text shipped with the package (numeric/data/corpus.txt), read as UTF-8."""
    return (DATA_DIR / CORPUS).read_text(encoding="utf-8")


def trigger_batch(src: BigramSource, K: int, T: int, B: int, gen: torch.Generator
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """B sequences of T + 1 tokens of the bigram-with-triggers model, and the output counters.

    Returns:
        tokens (B, T + 1) int64; counts (B, T + 1) int64, counts[b, t] = n when tokens[b, t + 1] is
        the n-th output of a trigger in that sequence, else 0 (the code's ``outputs_seq``).

    Raises:
        ValueError: K not in [0, V] or T < 2.
    """
    V = src.V
    if not 0 <= K <= V or T < 2:
        raise ValueError(f"need 0 <= K <= V and T >= 2, got K={K}, V={V}, T={T}")
    marg = src.marginal.float()
    trig = torch.multinomial(marg.expand(B, V), K, replacement=False, generator=gen) if K else \
        torch.zeros(B, 0, dtype=torch.long)
    return sequences_with_triggers(src, trig, T, gen)


def sequences_with_triggers(src: BigramSource, trig: torch.Tensor, T: int, gen: torch.Generator
                            ) -> tuple[torch.Tensor, torch.Tensor]:
    """B sequences of T + 1 tokens with the triggers ``trig`` [B, K] of each sequence: one uniform output drawn
    per trigger, then token by token the trigger's output after a trigger and the bigram row of the previous
    token elsewhere; with the output counters of :func:`trigger_batch`.  Random draws in a fixed order (the
    outputs, the first tokens, then one bigram draw per position), so a seeded generator gives the same data."""
    B, K = int(trig.shape[0]), int(trig.shape[1])
    V = src.V
    marg = src.marginal.float()
    outs = torch.randint(0, V, (B, K), generator=gen)
    cond = src.cond.float()
    tok = torch.empty(B, T + 1, dtype=torch.long)
    cnt = torch.zeros(B, T + 1, dtype=torch.long)
    tok[:, 0] = torch.multinomial(marg, B, replacement=True, generator=gen)
    seen = torch.zeros(B, K, dtype=torch.long)
    for t in range(1, T + 1):
        last = tok[:, t - 1]
        hit = trig == last[:, None]
        nxt = torch.multinomial(cond[last], 1, generator=gen)[:, 0]
        is_trig = hit.any(1)
        tok[:, t] = torch.where(is_trig, (outs * hit).sum(1), nxt)
        seen = seen + hit.long()
        cnt[:, t - 1] = torch.where(is_trig, (seen * hit).sum(1), torch.zeros_like(last))
    return tok, cnt


# ----------------------------------------------------------------------------- the model


def init_two_layer(d: int, V: int, T: int, pe: str, gen: torch.Generator) -> dict[str, torch.Tensor]:
    """One seed's parameters (float32, the code's initialisation; see the module docstring).

    Returns:
        E (V, d), U (V, d), POS (T, d) (absolute positions for APE, relative vectors r_{-i} for RPE,
        row i = r_{-i}) and the six (d, d) matrices of :data:`MATRICES`.

    Raises:
        ValueError: unknown ``pe``.
    """
    if pe not in PES:
        raise ValueError(f"pe must be one of {PES}, got {pe!r}")
    b = 1.0 / math.sqrt(d)

    def lin(*shape: int) -> torch.Tensor:
        return (torch.rand(*shape, generator=gen) * 2 - 1) * b

    out = {"E": torch.randn(V, d, generator=gen), "U": lin(V, d), "POS": torch.randn(T, d, generator=gen)}
    for name in MATRICES:
        out[name] = lin(d, d)
    return out


def _gather(table: torch.Tensor, tok: torch.Tensor) -> torch.Tensor:
    """table (S, V, d), tok (S, B, T) -> (S, B, T, d)."""
    S, B, T = tok.shape
    return table[torch.arange(S)[:, None, None], tok]


def layer1_scores(p: Mapping[str, torch.Tensor], tok: torch.Tensor, pe: str) -> torch.Tensor:
    """Layer-1 scores score1(t <- s) = x_t^T W^1_K key_s / sqrt(d), (S, B, T, T), -inf above the
    diagonal.  APE: x_t = w_E(z_t) + p_t, key x_s; RPE: x_t = w_E(z_t), key x_s + r_{s-t}."""
    S, B, T = tok.shape
    d = p["E"].shape[-1]
    X = _inputs(p, tok, pe)
    Q = torch.einsum("sbtd,sde->sbte", X, p["W1K"])
    sc = torch.einsum("sbte,sbue->sbtu", Q, X)
    if pe == "rpe":
        QR = torch.einsum("sbte,sie->sbti", Q, p["POS"][:, :T])
        ti = torch.arange(T)
        off = (ti[:, None] - ti[None, :]).clamp(min=0)
        sc = sc + torch.gather(QR, 3, off.expand(S, B, T, T))
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return (sc / math.sqrt(d)).masked_fill(~mask, float("-inf"))


def _inputs(p: Mapping[str, torch.Tensor], tok: torch.Tensor, pe: str) -> torch.Tensor:
    X = _gather(p["E"], tok)
    if pe == "ape":
        X = X + p["POS"][:, None, : tok.shape[-1]]
    return X


def _lin(X: torch.Tensor, W: torch.Tensor) -> torch.Tensor:
    """x -> W x for every row (nn.Linear without bias), W (S, d_out, d_in)."""
    return torch.einsum("sbtd,sed->sbte", X, W)


def forward(p: Mapping[str, torch.Tensor], tok: torch.Tensor, pe: str) -> torch.Tensor:
    """Logits (S, B, T, V) of the two-layer model at every position."""
    T = tok.shape[-1]
    d = p["E"].shape[-1]
    X = _inputs(p, tok, pe)
    A1 = torch.softmax(layer1_scores(p, tok, pe), -1)
    H = X + _lin(torch.einsum("sbtu,sbud->sbtd", A1, _lin(X, p["W1V"])), p["W1O"])
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    s2 = torch.einsum("sbte,sbue->sbtu", _lin(H, p["W2K"].transpose(1, 2)), H) / math.sqrt(d)
    A2 = torch.softmax(s2.masked_fill(~mask, float("-inf")), -1)
    O = H + _lin(torch.einsum("sbtu,sbud->sbtd", A2, _lin(H, p["W2V"])), p["W2O"])
    return torch.einsum("sbtd,svd->sbtv", O, p["U"])


def head_loss(p: Mapping[str, torch.Tensor], batch: tuple[torch.Tensor, torch.Tensor], pe: str) -> torch.Tensor:
    """Per-seed cross-entropy (S,) on the positions whose output counter is >= 2."""
    tok, cnt = batch
    T = tok.shape[-1] - 1
    x, y, c = tok[..., :T], tok[..., 1:], cnt[..., :T]
    logits = forward(p, x, pe)
    lp = torch.log_softmax(logits, -1).gather(-1, y[..., None])[..., 0]
    sel = (c >= 2).float()
    return -(lp * sel).sum((1, 2)) / sel.sum((1, 2)).clamp(min=1.0)


@dataclass(frozen=True)
class TwoLayerConfig:
    """Everything that determines a trained two-layer model (all of it enters the cache key).

    Attributes:
        pe: ``"ape"`` or ``"rpe"``; d, T: width and length; K: triggers per sequence;
        source: ``"synthetic:V:seed"`` or ``"text"`` (the shipped corpus); trained: the trained
        matrices; batch, steps, lr: CPU-scale training; optimizer: ``"sgd"`` (the code's SGD, momentum 0.9,
        weight decay 1e-4) or ``"adam"`` (Adam, betas (0.9, 0.999), weight decay 1e-4: a departure from the
        authors' SGD that forms the heads within a CPU budget; the claims that use it say so).
    """

    pe: str
    d: int
    T: int
    K: int
    source: str
    trained: tuple[str, ...]
    batch: int
    steps: int
    lr: float
    optimizer: str = "sgd"

    def bigram_source(self) -> BigramSource:
        if self.source == "text":
            return text_source(shipped_corpus())
        kind, V, seed = self.source.split(":")
        return synthetic_source(int(V), int(seed))


def recipe(cfg: TwoLayerConfig) -> lab.Recipe:
    """The lab recipe of a two-layer model (frozen: embeddings, output, positions and every matrix
    not in ``cfg.trained``)."""
    src = cfg.bigram_source()
    V = src.V

    def init(gen: torch.Generator) -> dict[str, torch.Tensor]:
        return init_two_layer(cfg.d, V, cfg.T, cfg.pe, gen)

    def data(step: int, gens: list[torch.Generator]) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [trigger_batch(src, cfg.K, cfg.T, cfg.batch, g) for g in gens]
        return torch.stack([a for a, _ in parts]), torch.stack([b for _, b in parts])

    def loss(params: dict[str, torch.Tensor], batch: Any) -> torch.Tensor:
        return head_loss(params, batch, cfg.pe)

    frozen = ("E", "U", "POS") + tuple(m for m in MATRICES if m not in cfg.trained)
    config = {"pe": cfg.pe, "d": cfg.d, "T": cfg.T, "K": cfg.K, "source": cfg.source, "V": V,
              "trained": list(cfg.trained), "batch": cfg.batch}
    if cfg.optimizer not in OPTIMIZERS:
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {cfg.optimizer!r}")
    every = max(1, cfg.steps // 4)
    optim = (lab.Optim(kind="sgd", lr=cfg.lr, steps=cfg.steps, momentum=0.9, weight_decay=1e-4, report_every=every)
             if cfg.optimizer == "sgd" else
             lab.Optim(kind="adam", lr=cfg.lr, steps=cfg.steps, weight_decay=1e-4, report_every=every))
    return lab.Recipe(name="bietti2", version=RECIPE_VERSION, config=config, init=init, data=data, loss=loss,
                      optim=optim, frozen=frozen)


def train_two_layer(cfg: TwoLayerConfig, seeds: Sequence[int], cache: lab.Cache | None,
                    progress: Any = None) -> lab.Trained:
    """Train (or read from the cache) the two-layer model for ``seeds``, batched (the lab)."""
    return lab.train(recipe(cfg), seeds, cache=cache, progress=progress)


# ----------------------------------------------------------------------------- probes


def eval_batch(cfg: TwoLayerConfig, seed: int, B: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh evaluation sequences (B, T + 1) and counters from the 'eval' stream of ``seed``."""
    return trigger_batch(cfg.bigram_source(), cfg.K, cfg.T, B, lab.generator("bietti2", seed, "eval"))


def prev_token_recall(p: Mapping[str, torch.Tensor], tok: torch.Tensor, pe: str,
                      lo: int, hi: int) -> torch.Tensor:
    """Per-seed fraction (S,) of positions with paper index t in [lo, hi] (1-indexed, t >= 2) whose
    causal layer-1 argmax is t - 1 (an exact tie counts as a failure)."""
    return recall_of_scores(layer1_scores(p, tok, pe), lo, hi)


def recall_of_scores(sc: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
    """:func:`prev_token_recall` from layer-1 scores already computed (``[S, B, T, T]``, :func:`layer1_scores`)."""
    T = sc.shape[-1]
    idx = torch.arange(T)
    top2 = sc.topk(2, dim=-1)
    arg = top2.indices[..., 0]
    strict = top2.values[..., 0] > top2.values[..., 1]
    ok = (arg == idx - 1) & strict
    ok[..., 0] = False
    cols = [t - 1 for t in range(max(lo, 2), min(hi, T) + 1)]
    return ok[..., cols].double().mean((1, 2))


def association_of_scores(sc: torch.Tensor, lo: int, hi: int) -> torch.Tensor:
    """Per-seed mean (S,) over positions with paper index t in [lo, hi] (t >= 2) of the previous-token association,
    from layer-1 scores ``sc`` ``[S, B, T, T]`` (:func:`layer1_scores`): the score of key t - 1 minus the mean score
    of the other visible keys (s <= t, s != t - 1)."""
    T = sc.shape[-1]
    cols = [t - 1 for t in range(max(lo, 2), min(hi, T) + 1)]
    out = []
    for r in cols:  # row r (0-indexed) sees keys 0..r; its previous token is r - 1
        row = sc[..., r, : r + 1]
        prev = row[..., r - 1]
        others = (row.sum(-1) - prev) / r
        out.append(prev - others)
    return torch.stack(out, -1).mean((1, 2))


def wk0_recall(p: Mapping[str, torch.Tensor], causal: bool, cutoff: int | None = None) -> torch.Tensor:
    """bietti23's positional memory probe (code: ``test_wk0``), per seed (S,): the fraction of
    positions t >= 1 (0-indexed) with argmax_s p_t^T W^1_K p_s = t - 1.  ``causal=False`` takes the
    argmax over every s in [0, T-2] as the authors' code does (future positions included);
    ``causal=True`` only over s <= t.  ``cutoff``: the first ``cutoff`` positions only, queries and keys (the code's
    ``test_wk0(cutoff=64)``, logged beside it)."""
    P = p["POS"][:, :cutoff]
    keys = torch.einsum("sed,sjd->sje", p["W1K"], P[:, :-1])   # W^1_K p_s, s = 0..T-2
    sc = torch.einsum("std,sjd->stj", P[:, 1:], keys)          # query p_{t}, t = 1..T-1
    T1 = sc.shape[1]
    if causal:
        t = torch.arange(T1)[:, None]  # row r is position r + 1; keys s <= r + 1 within [0, T-2]
        sc = sc.masked_fill(torch.arange(T1)[None, :] > t + 1, float("-inf"))
    return (sc.argmax(-1) == torch.arange(T1)).double().mean(1)


def wk1_recall(p: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Induction-key probe (code: ``test_wk1``), per seed: fraction of tokens k with
    argmax_k' w_E(k)^T W^2_K W^1_O W^1_V w_E(k') = k."""
    keys = torch.einsum("sab,sbc,scd,skd->ska", p["W2K"], p["W1O"], p["W1V"], p["E"])
    sc = torch.einsum("sqd,skd->sqk", p["E"], keys)
    return (sc.argmax(-1) == torch.arange(sc.shape[1])).double().mean(1)


def wo1_recall(p: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Output probe (code: ``test_wo1``), per seed: fraction of tokens k with
    argmax_j (W_U W^2_O W^2_V w_E(k))_j = k."""
    out = torch.einsum("sab,sbc,skc->ska", p["W2O"], p["W2V"], p["E"])
    logits = torch.einsum("ska,sja->skj", out, p["U"])
    return (logits.argmax(-1) == torch.arange(logits.shape[1])).double().mean(1)


def orientation_cosines(p: Mapping[str, torch.Tensor]) -> dict[str, list[float]]:
    """RPE only, per seed: how the trained W^1_K sits against Eq. 13's matrix (ws24).

    Eq. 13 with any chi is (sum_k chi(k) w_E(k)) r_{-1}^T, a matrix of the form u r_{-1}^T with u in
    span{w_E(k)}.  Reported: ``cos_eq13`` / ``cos_eq13_transposed``, the cosine of W^1_K with
    sum_k w_E(k) r_{-1}^T (chi = 1) and with its transpose; ``share_eq13`` / ``share_transposed``,
    the largest cosine over every chi (||P_E W r||/(||W||_F ||r||) and ||r^T W P_E||/(||W||_F ||r||),
    P_E the projector on span{w_E(k)}); the mean over k of the model's score w_E(k)^T W^1_K r_{-1} and
    of the displayed r_{-1}^T W^1_K w_E(k), both / sqrt(d)."""
    E, r1, W = p["E"], p["POS"][:, 1], p["W1K"]
    d = E.shape[-1]
    M = E.sum(1)[:, :, None] * r1[:, None, :]

    def cos(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a * b).sum((1, 2)) / (a.norm(dim=(1, 2)) * b.norm(dim=(1, 2)))

    Qe = torch.linalg.qr(E.transpose(1, 2)).Q  # (S, d, V): orthonormal basis of span{w_E(k)}
    rn = r1 / r1.norm(dim=1, keepdim=True)
    Wn = W.norm(dim=(1, 2))
    left = torch.einsum("sdv,sde,se->sv", Qe, W, rn).norm(dim=1) / Wn
    right = torch.einsum("sd,sde,sev->sv", rn, W, Qe).norm(dim=1) / Wn
    model = torch.einsum("skd,sde,se->sk", E, W, r1).mean(1) / math.sqrt(d)
    shown = torch.einsum("se,sed,skd->sk", r1, W, E).mean(1) / math.sqrt(d)
    return {"cos_eq13": cos(W, M).tolist(), "cos_eq13_transposed": cos(W, M.transpose(1, 2)).tolist(),
            "share_eq13": left.tolist(), "share_transposed": right.tolist(),
            "model_score_mean": model.tolist(), "displayed_score_mean": shown.tolist()}


__all__ = ["BigramSource", "synthetic_source", "text_source", "shipped_corpus", "trigger_batch", "init_two_layer",
           "layer1_scores", "forward", "head_loss", "TwoLayerConfig", "recipe", "train_two_layer", "eval_batch",
           "prev_token_recall", "wk0_recall", "wk1_recall", "wo1_recall", "orientation_cosines",
           "PES", "MATRICES", "SIMPLIFIED_TRAINED"]


def in_context_accuracy(p: Mapping[str, torch.Tensor], tok: torch.Tensor, cnt: torch.Tensor, pe: str) -> torch.Tensor:
    """Per-seed accuracy (S,) of the argmax prediction on the positions whose output counter is >= 2
    (the in-context bigrams), tok/cnt (S, B, T + 1)."""
    T = tok.shape[-1] - 1
    pred = forward(p, tok[..., :T], pe).argmax(-1)
    sel = cnt[..., :T] >= 2
    hit = ((pred == tok[..., 1:]) & sel).double().sum((1, 2))
    return hit / sel.double().sum((1, 2)).clamp(min=1.0)
