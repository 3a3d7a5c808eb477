"""Numeric layer of the bietti23 probes: the simplified two-layer model trained on the shipped text,
then the three memory-recall probes of the authors' code (``ihead_basic_main.py``: ``test_wk0``,
``test_wk1``, ``test_wo1``).  See :mod:`verify.numeric.trained_models` for the model and data.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from verify.evidence import Evidence, engine_versions
from verify.numeric import lab
from verify.numeric import trained_models as tm

#: the model counts as trained when its in-context accuracy reaches this (the gate)
LEARNED = 0.5
#: a probe counts as recalled when it reaches this
RECALLED = 0.9


def check_probes(d: int, T: int, K: int, batch: int, steps: int, lr: float, seeds: Sequence[int], n_eval: int,
                 cache: lab.Cache | None, progress: Any = None) -> Evidence:
    """Train, then probe.

    Verdict rule (stated up front): ``inconclusive`` unless the mean in-context accuracy (positions
    whose trigger-output counter is >= 2) is >= :data:`LEARNED`; then ``holds`` when the mean of each
    probe (previous-token in the authors' all-positions reading, induction key, output) is >=
    :data:`RECALLED`, ``fails`` otherwise.  The causal previous-token probe is reported beside it.
    """
    cfg = tm.TwoLayerConfig(pe="ape", d=d, T=T, K=K, source="text", trained=tm.SIMPLIFIED_TRAINED,
                            batch=batch, steps=steps, lr=lr)
    tr = tm.train_two_layer(cfg, seeds, cache, progress)
    p = tr.float64()
    evb = [tm.eval_batch(cfg, s, n_eval) for s in seeds]
    tok = torch.stack([a for a, _ in evb])
    cnt = torch.stack([b for _, b in evb])
    probes = {"prev_token_all_positions": tm.wk0_recall(p, causal=False).tolist(),
              "prev_token_causal": tm.wk0_recall(p, causal=True).tolist(),
              "induction_key": tm.wk1_recall(p).tolist(), "output": tm.wo1_recall(p).tolist()}
    acc = tm.in_context_accuracy(p, tok, cnt, "ape").tolist()
    V = cfg.bigram_source().V
    mean = {k: sum(v) / len(v) for k, v in probes.items()}
    numbers = {"d": d, "T": T, "K": K, "V": V, "batch": batch, "steps": steps, "lr": lr, "seeds": list(seeds),
               "probes": probes, "probe_means": mean, "in_context_accuracy": acc, "from_cache": tr.from_cache,
               "final_loss": tr.losses[-1].tolist()}
    tol = (f"gate: in-context accuracy >= {LEARNED}; holds when each probe mean (previous-token over all positions, "
           f"induction key, output) >= {RECALLED}; argmax ties count as the lowest index (torch.argmax)")
    a_m = sum(acc) / len(acc)
    summary = (f"in-context accuracy {a_m:.3f}; probes: previous-token {mean['prev_token_all_positions']:.3f} (all "
               f"positions, the authors' code) / {mean['prev_token_causal']:.3f} (causal), induction key "
               f"{mean['induction_key']:.3f}, output {mean['output']:.3f} ({steps} SGD steps, batch {batch}, "
               f"{len(seeds)} seeds, V = {V})")
    if a_m < LEARNED:
        return Evidence("numeric", "inconclusive", summary="the model did not learn the in-context task at this "
                        "budget: " + summary, numbers=numbers, tolerance=tol, engines=engine_versions("torch"))
    ok = all(mean[k] >= RECALLED for k in ("prev_token_all_positions", "induction_key", "output"))
    return Evidence("numeric", "consistent", "holds" if ok else "fails", summary=summary, numbers=numbers,
                    tolerance=tol, engines=engine_versions("torch"))
