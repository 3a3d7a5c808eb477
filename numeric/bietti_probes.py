"""Numeric layer of the bietti23 probes: the simplified two-layer model trained on the shipped text,
then the three memory-recall probes of the authors' code (``ihead_basic_main.py``: ``test_wk0``,
``test_wk1``, ``test_wo1``).  See :mod:`verify.numeric.trained_models` for the model and data.

Two data settings of the authors' code (``ihead_data.py``): triggers drawn per sequence from the unigram
marginal (``fixed_special_toks=False``, the code's default) or the k most frequent tokens, fixed
(``fixed_special_toks=True``, the setting of the README's example run of ``ihead_basic_main.py``: k = 5,
SGD lr 0.03, momentum 0.9, weight decay 1e-4, batch 512, 1000 iterations, dim 256, frozen embeddings and
output; with fixed triggers the code's induction-key probe ``test_wk1`` ranges over the k triggers).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Sequence

import torch

from verify.evidence import Evidence, Layer, Outcome, Status, engine_versions
from verify.numeric import lab
from verify.numeric import trained_models as tm

#: the model counts as trained when its in-context accuracy reaches this (the gate)
LEARNED = 0.5
#: a probe counts as recalled when it reaches this
RECALLED = 0.9


# The authors' first-layer probe (layer-1 attention argmax on the trigger, at the position after it) is
# reported beside the memory probes; it does not gate the verdict: a trained model whose W^1_K holds no
# previous-position memory is a model in which that memory did not form, which is what the probe tests.


def probe_verdict(accuracy: float, means: dict[str, float], attention_prev: float = 1.0, learned: float = LEARNED,
                  recalled: float = RECALLED) -> Outcome | None:
    """The rule of :func:`check_probes` on measured numbers at the protocol's horizon: None (inconclusive: the model
    did not learn the task, accuracy < ``learned``), ``"holds"`` (every deciding probe >= ``recalled``) or
    ``"fails"``.  ``attention_prev`` is reported, not judged."""
    if accuracy < learned:
        return None
    return Outcome.HOLDS if all(means[k] >= recalled for k in DECIDING) else Outcome.FAILS


#: the thresholds' sensitivity ranges (ours; bietti23:probes' protocol declares the same, a test holds them equal)
LEARNED_RANGE, RECALLED_RANGE = (0.4, 0.6), (0.8, 0.95)
#: a probe whose mean moved by at least this between half the steps and all of them is reported as still rising (a
#: finding about longer training; the fixed horizon decides)
PLATEAU = 0.02


#: the probes the verdict reads (the causal previous-token reading is reported beside them)
DECIDING = ("prev_token_all_positions", "induction_key", "output")


#: the authors' README configuration, the scope the statement is judged in (albietz/transformer-birth, README: the example
#: command ``ihead_basic_main.py max_iters=1000 loss_head_only=True data_args.k=5 data_args.fixed_special_toks=True``, SGD
#: lr 0.03, momentum 0.9, weight decay 1e-4, batch 512, ``model_args.dim=256``, frozen embeddings and output, its loss
#: "as in the experiments of Figure 3"; ``ihead_data.DataArgs.seq_length`` 256).  Here on the shipped corpus (V = 48)
#: in place of Tiny Shakespeare (65): the one departure, printed with the verdict.
PAPER_RUN: dict[str, Any] = {"d": 256, "T": 256, "K": 5, "batch": 512, "steps": 1000, "lr": 0.03, "optimizer": "sgd", "triggers": "fixed"}

#: seconds per step of PAPER_RUN measured here, low and high (2 cores, in-process, with another training beside it,
#: 2026-12-01/02: ``seconds_per_step`` of the checkpoints of the run the README quotes, its 1000-step and 500-step
#: halves), for the cost an answer names
PAPER_RUN_SECONDS_PER_STEP = (10.3, 14.4)


def paper_cost() -> str:
    """The measured cost of :data:`PAPER_RUN` on this kind of machine, per seed."""
    lo, hi = (PAPER_RUN["steps"] * x / 3600 for x in PAPER_RUN_SECONDS_PER_STEP)
    return (f"about {lo:.1f}-{hi:.1f} h of a 2-core machine per seed, at the {PAPER_RUN_SECONDS_PER_STEP[0]:g}-"
            f"{PAPER_RUN_SECONDS_PER_STEP[1]:g} s per step measured here")


def probes_command(d: int, T: int, K: int, batch: int, lr: float, optimizer: str, triggers: str, seeds: int) -> str:
    """The ``verify bietti23:probes`` command of a configuration, without ``--steps`` (an answer appends the steps
    it names)."""
    return (f"verify bietti23:probes --d {d} --T {T} --K {K} --batch {batch} --lr {lr:g} --optimizer {optimizer} "
            f"--triggers {triggers} --seeds {seeds}")


def paper_command(seeds: int = 1) -> str:
    """The command of :data:`PAPER_RUN` (the run that decides the statement in the authors' configuration)."""
    r = PAPER_RUN
    return (probes_command(r["d"], r["T"], r["K"], r["batch"], r["lr"], r["optimizer"], r["triggers"], seeds)
            + f" --steps {r['steps']}")


def is_paper_run(d: int, T: int, K: int, batch: int, steps: int, lr: float, optimizer: str, fixed_triggers: bool) -> bool:
    """Whether a configuration is :data:`PAPER_RUN` (any number of seeds)."""
    got = {"d": d, "T": T, "K": K, "batch": batch, "steps": steps, "lr": lr, "optimizer": optimizer,
           "triggers": "fixed" if fixed_triggers else "random"}
    return got == PAPER_RUN


#: code version tag of the fixed-trigger recipe (part of the cache key)
FIXED_VERSION = "bietti23-fixed-1"


@dataclass(frozen=True)
class FixedConfig:
    """The README's run of ``ihead_basic_main.py`` (fixed triggers) at a chosen size: everything that enters the
    cache key.  ``steps``/``batch``/``lr``/``optimizer`` as in :class:`verify.numeric.trained_models.TwoLayerConfig`."""

    d: int
    T: int
    K: int
    batch: int
    steps: int
    lr: float
    optimizer: str = "sgd"
    pe: str = "ape"

    def bigram_source(self) -> tm.BigramSource:
        return tm.text_source(tm.shipped_corpus())

    def triggers(self) -> torch.Tensor:
        """The K most frequent tokens (the code: ``marginal.argsort()[V - K:]``), ascending by frequency."""
        return self.bigram_source().marginal.argsort()[-self.K:]


def fixed_trigger_batch(src: tm.BigramSource, trig: torch.Tensor, T: int, B: int, gen: torch.Generator
                        ) -> tuple[torch.Tensor, torch.Tensor]:
    """B sequences of T + 1 tokens with the fixed triggers ``trig`` (each sequence draws one uniform output per
    trigger; after a trigger its output follows, elsewhere the bigram row of the previous token) and the output
    counters (counts[b, t] = n when tokens[b, t + 1] is the n-th output of a trigger), as ``ihead_data.gen_seq``
    with ``fixed_special_toks=True``."""
    return tm.sequences_with_triggers(src, trig[None, :].expand(B, int(trig.shape[0])), T, gen)


def fixed_recipe(cfg: FixedConfig) -> lab.Recipe:
    """The lab recipe of the README run: :func:`verify.numeric.trained_models.init_two_layer` and ``head_loss``
    (loss on outputs from their second occurrence), data :func:`fixed_trigger_batch`; trained W^1_K, W^2_K, W^2_O."""
    src = cfg.bigram_source()
    trig = cfg.triggers()

    def init(gen: torch.Generator) -> dict[str, torch.Tensor]:
        return tm.init_two_layer(cfg.d, src.V, cfg.T, cfg.pe, gen)

    def data(step: int, gens: list[torch.Generator]) -> tuple[torch.Tensor, torch.Tensor]:
        parts = [fixed_trigger_batch(src, trig, cfg.T, cfg.batch, g) for g in gens]
        return torch.stack([a for a, _ in parts]), torch.stack([b for _, b in parts])

    def loss(params: dict[str, torch.Tensor], batch: Any) -> torch.Tensor:
        return tm.head_loss(params, batch, cfg.pe)

    frozen = ("E", "U", "POS") + tuple(m for m in tm.MATRICES if m not in tm.SIMPLIFIED_TRAINED)
    every = max(1, cfg.steps // 4)
    optim = (lab.Optim(kind="sgd", lr=cfg.lr, steps=cfg.steps, momentum=0.9, weight_decay=1e-4, report_every=every)
             if cfg.optimizer == "sgd" else
             lab.Optim(kind="adam", lr=cfg.lr, steps=cfg.steps, weight_decay=1e-4, report_every=every))
    config = {"pe": cfg.pe, "d": cfg.d, "T": cfg.T, "K": cfg.K, "source": "text", "V": src.V, "triggers": "fixed",
              "trained": list(tm.SIMPLIFIED_TRAINED), "batch": cfg.batch}
    return lab.Recipe(name="bietti23-fixed", version=FIXED_VERSION, config=config, init=init, data=data, loss=loss,
                      optim=optim, frozen=frozen)


def _train(cfg: Any, seeds: Sequence[int], cache: lab.Cache | None, progress: Any) -> Any:
    if isinstance(cfg, FixedConfig):
        return lab.train(fixed_recipe(cfg), seeds, cache=cache, progress=progress)
    return tm.train_two_layer(cfg, seeds, cache, progress)


def train_task(spec: dict[str, Any]) -> lab.Trained:
    """One grid task (runs on a Dask worker or in this process): the lab run of ``spec["cfg"]`` for
    ``spec["seeds"]`` (batched, as in-process: the same weights wherever it runs), with the checkpoint cache
    at ``spec["cache_dir"]`` (None: no cache)."""
    cache = lab.Cache(spec["cache_dir"]) if spec["cache_dir"] is not None else None
    return _train(spec["cfg"], spec["seeds"], cache, None)


def _train_both(cfg: Any, half: Any, seeds: Sequence[int], cache: lab.Cache | None, progress: Any, scheduler: str,
                jobs: int) -> tuple[Any, Any]:
    """The run at ``cfg`` and, on a scheduler, the half-steps run of the convergence check beside it (two grid
    tasks; the half run is then trained whether or not a probe needs it, and read only when one does).
    In-process with the lab cache: the half run first, then the run at ``cfg`` continues its saved training
    state (the schedule is constant, so the half run is the first half of the full one: the convergence check
    costs no extra training).  In-process without a cache: the run at ``cfg`` only (the half run is trained
    when needed)."""
    if scheduler == "in-process":
        if cache is None:
            return _train(cfg, seeds, cache, progress), None
        half_tr = _train(half, seeds, cache, progress)
        return _train(cfg, seeds, cache, progress), half_tr
    from verify.numeric import grid

    cdir = None if cache is None else str(cache.directory)
    specs = [{"cfg": c, "seeds": list(seeds), "cache_dir": cdir} for c in (cfg, half)]
    full, half_tr = grid.run_grid(train_task, specs, scheduler=scheduler, n_workers=jobs, progress=progress,
                                  name="bietti23")
    return full, half_tr


def check_probes(d: int, T: int, K: int, batch: int, steps: int, lr: float, seeds: Sequence[int], n_eval: int,
                 cache: lab.Cache | None, progress: Any = None, optimizer: str = "sgd",
                 fixed_triggers: bool = False, scheduler: str = "in-process", jobs: int = 2
                 ) -> Evidence:
    """Train, then probe.

    Verdict rule (bietti23:probes' frozen protocol, :func:`probe_verdict`), read once at the run's horizon:
    ``inconclusive`` unless the mean in-context accuracy (positions whose trigger-output counter is >= 2) is >=
    :data:`LEARNED`; then ``holds`` when the mean over seeds of each probe (previous-token in the authors'
    all-positions reading, induction key, output) is >= :data:`RECALLED`, else ``fails``; recomputed at the ends of
    :data:`LEARNED_RANGE` and :data:`RECALLED_RANGE`, ``inconclusive`` when it flips.  The half-steps means, the
    causal previous-token probe, the code's first-64-positions reading and the authors' first-layer attention probe
    are reported beside, never decide.

    Args:
        d, T, K: width, length, triggers; batch, steps, lr, optimizer: training (``"sgd"``: the authors'
        SGD with momentum; ``"adam"``); seeds: batched; n_eval: evaluation sequences per seed; cache:
        the lab cache; progress: progress callback; scheduler, jobs: where the training runs
        (:func:`verify.numeric.grid.parse_scheduler`; on a scheduler the half-steps run trains beside the full
        one, :func:`_train_both`).

    Raises:
        verify.numeric.grid.SchedulerUnreachable: no scheduler at the address.
    """
    cfg: Any = (FixedConfig(d=d, T=T, K=K, batch=batch, steps=steps, lr=lr, optimizer=optimizer) if fixed_triggers
                else tm.TwoLayerConfig(pe="ape", d=d, T=T, K=K, source="text", trained=tm.SIMPLIFIED_TRAINED,
                                       batch=batch, steps=steps, lr=lr, optimizer=optimizer))
    half = dataclasses.replace(cfg, steps=max(1, steps // 2))
    tr, tr_half = _train_both(cfg, half, seeds, cache, progress, scheduler, jobs)
    V = cfg.bigram_source().V
    probes, mean, acc, attn_prev = _measure(cfg, tr, seeds, n_eval)
    numbers: dict[str, Any] = {
        "d": d, "T": T, "K": K, "V": V, "batch": batch, "steps": steps, "lr": lr, "optimizer": optimizer,
        "seeds": list(seeds), "probes": probes, "probe_means": mean, "in_context_accuracy": acc,
        "attention_prev_token_recall": attn_prev, "from_cache": tr.from_cache, "final_loss": tr.losses[-1].tolist(),
        "checkpoints": [tr.checkpoint()]}
    paper = is_paper_run(d, T, K, batch, steps, lr, optimizer, fixed_triggers)
    numbers["paper_run"] = paper
    tol = _tolerance(steps)
    a_m = sum(acc) / len(acc)
    attn_m = sum(attn_prev) / len(attn_prev)
    from verify.thresholds import Threshold, sensitivity

    def decide(th: dict[str, float]) -> Outcome | None:
        return probe_verdict(a_m, mean, attn_m, th["learned"], th["recalled"])

    verdict, lines = sensitivity(decide, (Threshold("learned", LEARNED, "ours: the gate", *LEARNED_RANGE),
                                          Threshold("recalled", RECALLED, "ours: the probe", *RECALLED_RANGE)))
    numbers["sensitivity"] = lines
    summary = (f"in-context accuracy {a_m:.3f}; probes: previous-token {mean['prev_token_all_positions']:.3f} (all "
               f"positions, the authors' code; {mean['prev_token_first_64']:.3f} over the first {min(64, T)}, the code's second "
               f"reading) / {mean['prev_token_causal']:.3f} (causal), induction key "
               f"{mean['induction_key']:.3f}, output {mean['output']:.3f}; the layer-1 attention itself puts its argmax on the "
               f"trigger at {attn_m:.3f} of the positions after one (the authors' first-layer probe; {steps} "
               f"{optimizer} steps, lr {lr:g}, batch {batch}, {len(seeds)} seeds, d = {d}, T = {T}, V = {V}); "
               f"per seed, previous-token {min(probes['prev_token_all_positions']):.3f}.."
               f"{max(probes['prev_token_all_positions']):.3f}; sensitivity: " + "; ".join(lines)
               + ("" if paper else f"; the authors' README configuration: {paper_command(1)} ({paper_cost()})"))
    base: dict[str, Any] = dict(numbers=numbers, tolerance=tol, engines=engine_versions("torch"))
    if tr_half is not None:  # a diagnostic, never the decision: the horizon is fixed
        _, half_mean, _, _ = _measure(half, tr_half, seeds, n_eval)
        numbers["probe_means_at_half_steps"] = half_mean
        rising = [f"{k} {mean[k] - half_mean[k]:+.3f}" for k in DECIDING if abs(mean[k] - half_mean[k]) >= PLATEAU]
        if rising:
            summary += (f"; still moving from {half.steps} to {steps} steps ({', '.join(rising)}): a finding about "
                        "training longer than the horizon, not the verdict")
    if verdict is None:
        why = ("the model did not learn the in-context task at this horizon" if a_m < LEARNED else
               "the verdict flips inside a declared threshold range")
        return Evidence(Layer.NUMERIC, Status.INCONCLUSIVE, summary=f"{why}: " + summary, **base)
    return Evidence(Layer.NUMERIC, Status.CONSISTENT, verdict, summary=summary, **base)


def _tolerance(steps: int) -> str:
    """The verdict rule of :func:`check_probes` as the answer states it."""
    return (f"gate: in-context accuracy >= {LEARNED} (the layer-1 attention argmax on t - 1 after a trigger, the authors' "
            "first-layer probe, is reported, not gated); "
            f"holds when each probe mean over seeds (previous-token over all positions, induction key, output) >= "
            f"{RECALLED}, fails otherwise, read once at the fixed horizon ({steps} steps); recomputed at the ends of the "
            f"ranges {list(LEARNED_RANGE)} (gate) and {list(RECALLED_RANGE)} (probe): a flip is INCONCLUSIVE; argmax ties "
            "count as the lowest index (torch.argmax)")


def _measure(cfg: Any, tr: Any, seeds: Sequence[int], n_eval: int) -> tuple[dict[str, list[float]], dict[str, float],
                                                                             list[float], list[float]]:
    """The probes (per seed), their means, the in-context accuracy and the layer-1 attention's previous-token
    recall of one trained model."""
    T = cfg.T
    p = tr.float64()
    if isinstance(cfg, FixedConfig):
        src, trig = cfg.bigram_source(), cfg.triggers()
        evb = [fixed_trigger_batch(src, trig, T, n_eval, lab.generator("bietti23-fixed", s, "eval")) for s in seeds]
    else:
        evb = [tm.eval_batch(cfg, s, n_eval) for s in seeds]
    tok = torch.stack([a for a, _ in evb])
    cnt = torch.stack([b for _, b in evb])
    probes = {"prev_token_all_positions": tm.wk0_recall(p, causal=False).tolist(),
              "prev_token_causal": tm.wk0_recall(p, causal=True).tolist(),
              "prev_token_first_64": tm.wk0_recall(p, causal=False, cutoff=64).tolist(),
              "induction_key": (wk1_triggers(p, cfg.triggers()) if isinstance(cfg, FixedConfig) else
                                tm.wk1_recall(p)).tolist(),
              "output": tm.wo1_recall(p).tolist()}
    acc = tm.in_context_accuracy(p, tok, cnt, "ape").tolist()
    # what the model's own layer-1 attention does where the task needs it: the authors' first-layer probe
    # (ihead_basic_main.py, score_acc): at each position holding a trigger's output, is the argmax on the trigger?
    attn_prev = after_trigger_prev(p, tok[..., :T], cnt[..., :T]).tolist()
    mean = {k: sum(v) / len(v) for k, v in probes.items()}
    return probes, mean, acc, attn_prev


def wk1_triggers(p: dict[str, torch.Tensor], trig: torch.Tensor) -> torch.Tensor:
    """The code's ``test_wk1`` with fixed triggers, per seed: over the K triggers k, the fraction with
    argmax_{k' in triggers} w_E(k)^T W^2_K W^1_O W^1_V w_E(k') = k."""
    E = p["E"][:, trig]
    keys = torch.einsum("sab,sbc,scd,skd->ska", p["W2K"], p["W1O"], p["W1V"], E)
    sc = torch.einsum("sqd,skd->sqk", E, keys)
    return (sc.argmax(-1) == torch.arange(sc.shape[1])).double().mean(1)


def after_trigger_prev(p: dict[str, torch.Tensor], tok: torch.Tensor, cnt: torch.Tensor) -> torch.Tensor:
    """The authors' first-layer attention probe (``ihead_basic_main.py``: ``score_acc``), per seed (S,): over the
    positions t + 1 whose previous token (at t) is a trigger (cnt[t] >= 1), the fraction whose layer-1 attention
    argmax is t.  tok, cnt (S, B, T)."""
    arg = tm.layer1_scores(p, tok, "ape").argmax(-1)  # (S, B, T)
    T = tok.shape[-1]
    sel = cnt[..., : T - 1] >= 1
    hit = (arg[..., 1:] == torch.arange(T - 1)) & sel
    return hit.double().sum((1, 2)) / sel.double().sum((1, 2)).clamp(min=1.0)
