"""Numeric layer of the bietti23 probes: the simplified two-layer model trained on the shipped text,
then the three memory-recall probes of the authors' code (``ihead_basic_main.py``: ``test_wk0``,
``test_wk1``, ``test_wo1``).  See :mod:`verify.numeric.trained_models` for the model and data.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Sequence

import torch

from verify.evidence import Evidence, engine_versions
from verify.numeric import lab
from verify.numeric import trained_models as tm

#: the model counts as trained when its in-context accuracy reaches this (the gate)
LEARNED = 0.5
#: a probe counts as recalled when it reaches this
RECALLED = 0.9


#: a previous-token head counts as formed when the layer-1 attention's causal argmax is on t - 1 at
#: this fraction of positions (the gate's second half: the memories are judged only once the head exists)
HEAD_FORMED = 0.5


def probe_verdict(accuracy: float, means: dict[str, float], attention_prev: float = 1.0) -> str | None:
    """The rule of :func:`check_probes` on measured numbers: None (inconclusive: the model did not
    learn the task, or learned it without a previous-token head), ``"holds"`` or ``"fails"``."""
    if accuracy < LEARNED or attention_prev < HEAD_FORMED:
        return None
    return "holds" if all(means[k] >= RECALLED for k in DECIDING) else "fails"


#: a probe below RECALLED counts against the statement only when training has converged on it: between
#: half the steps and all of them its mean moved by less than this (a probe still rising says nothing
#: about the trained model the statement is about)
PLATEAU = 0.02


#: the probes the verdict reads (the causal previous-token reading is reported beside them)
DECIDING = ("prev_token_all_positions", "induction_key", "output")


def check_probes(d: int, T: int, K: int, batch: int, steps: int, lr: float, seeds: Sequence[int], n_eval: int,
                 cache: lab.Cache | None, progress: Any = None, optimizer: str = "sgd") -> Evidence:
    """Train, then probe.

    Verdict rule (stated up front, :func:`probe_verdict`): ``inconclusive`` unless the mean in-context
    accuracy (positions whose trigger-output counter is >= 2) is >= :data:`LEARNED` and the layer-1
    attention's causal argmax is on t - 1 at >= :data:`HEAD_FORMED` of positions (a previous-token head
    formed); then ``holds`` when the mean of each probe (previous-token in the authors' all-positions
    reading, induction key, output) is >= :data:`RECALLED`; otherwise ``fails`` only when every probe
    below it has converged (its mean moved by less than :data:`PLATEAU` between half the steps and all
    of them; a second, cached training run at half the steps measures it), else ``inconclusive``.  The
    causal previous-token probe is reported beside it.

    Args:
        d, T, K: width, length, triggers; batch, steps, lr, optimizer: training (``"sgd"``: the authors'
        SGD with momentum; ``"adam"``); seeds: batched; n_eval: evaluation sequences per seed; cache:
        the lab cache; progress: progress callback.
    """
    cfg = tm.TwoLayerConfig(pe="ape", d=d, T=T, K=K, source="text", trained=tm.SIMPLIFIED_TRAINED,
                            batch=batch, steps=steps, lr=lr, optimizer=optimizer)
    tr = tm.train_two_layer(cfg, seeds, cache, progress)
    V = cfg.bigram_source().V
    probes, mean, acc, attn_prev = _measure(cfg, tr, seeds, n_eval)
    numbers: dict[str, Any] = {
        "d": d, "T": T, "K": K, "V": V, "batch": batch, "steps": steps, "lr": lr, "optimizer": optimizer,
        "seeds": list(seeds), "probes": probes, "probe_means": mean, "in_context_accuracy": acc,
        "attention_prev_token_recall": attn_prev, "from_cache": tr.from_cache, "final_loss": tr.losses[-1].tolist()}
    tol = (f"gate: in-context accuracy >= {LEARNED} and layer-1 attention on t - 1 at >= {HEAD_FORMED} of positions; "
           f"holds when each probe mean (previous-token over all positions, induction key, output) >= {RECALLED}; "
           f"a probe below it fails the statement only once converged (its mean moved < {PLATEAU} between "
           f"{steps // 2} and {steps} steps); argmax ties count as the lowest index (torch.argmax)")
    a_m = sum(acc) / len(acc)
    attn_m = sum(attn_prev) / len(attn_prev)
    verdict = probe_verdict(a_m, mean, attn_m)
    summary = (f"in-context accuracy {a_m:.3f}; probes: previous-token {mean['prev_token_all_positions']:.3f} (all "
               f"positions, the authors' code) / {mean['prev_token_causal']:.3f} (causal), induction key "
               f"{mean['induction_key']:.3f}, output {mean['output']:.3f}; the layer-1 attention itself (tokens and "
               f"positions) puts its argmax on t - 1 at {attn_m:.3f} of positions ({steps} "
               f"{optimizer} steps, lr {lr:g}, batch {batch}, {len(seeds)} seeds, d = {d}, T = {T}, V = {V})")
    base: dict[str, Any] = dict(numbers=numbers, tolerance=tol, engines=engine_versions("torch"))
    if verdict is None:
        why = ("the model did not learn the in-context task at this budget: " if a_m < LEARNED else
               "the model learned the task without a previous-token head (its layer-1 attention is on t - 1 at "
               f"{attn_m:.3f} < {HEAD_FORMED} of positions), so the memories the probes test did not form: ")
        return Evidence("numeric", "inconclusive", summary=why + summary, **base)
    if verdict == "fails":
        half = dataclasses.replace(cfg, steps=max(1, steps // 2))
        _, half_mean, _, _ = _measure(half, tm.train_two_layer(half, seeds, cache, progress), seeds, n_eval)
        rising = {k: round(mean[k] - half_mean[k], 4) for k in DECIDING
                  if mean[k] < RECALLED and abs(mean[k] - half_mean[k]) >= PLATEAU}
        numbers["probe_means_at_half_steps"] = half_mean
        if rising:
            return Evidence("numeric", "inconclusive", summary=(
                f"probes below {RECALLED} are still moving with training (change from {half.steps} to {steps} steps: "
                + ", ".join(f"{k} {v:+.3f}" for k, v in rising.items())
                + "), so this run does not show the trained model's memories: " + summary), **base)
    return Evidence("numeric", "consistent", verdict, summary=summary, **base)


def _measure(cfg: Any, tr: Any, seeds: Sequence[int], n_eval: int) -> tuple[dict[str, list[float]], dict[str, float],
                                                                             list[float], list[float]]:
    """The probes (per seed), their means, the in-context accuracy and the layer-1 attention's previous-token
    recall of one trained model."""
    T = cfg.T
    p = tr.float64()
    evb = [tm.eval_batch(cfg, s, n_eval) for s in seeds]
    tok = torch.stack([a for a, _ in evb])
    cnt = torch.stack([b for _, b in evb])
    probes = {"prev_token_all_positions": tm.wk0_recall(p, causal=False).tolist(),
              "prev_token_causal": tm.wk0_recall(p, causal=True).tolist(),
              "induction_key": tm.wk1_recall(p).tolist(), "output": tm.wo1_recall(p).tolist()}
    acc = tm.in_context_accuracy(p, tok, cnt, "ape").tolist()
    # what the model's own layer-1 attention does (tokens and positions together), beside the positional probe
    attn_prev = tm.prev_token_recall(p, tok[..., :T], "ape", 2, T).tolist()
    mean = {k: sum(v) / len(v) for k, v in probes.items()}
    return probes, mean, acc, attn_prev
