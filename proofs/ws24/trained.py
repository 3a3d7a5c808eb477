"""ws24: claims about trained and constructed models (the APE decay, the end-to-end falsifier, Prop. 3).

Kept apart from :mod:`verify.proofs.ws24` (the constructions); that module appends these
claims to its ``CLAIMS``.  Heavy: not in the default ``verify all``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from verify.core.model import Claim, InputError, Params, param
from verify.core.protocol import Protocol, Threshold
from verify.evidence import Context, Evidence

#: the optimisers of the two-layer recipes (torch-free copy checked against the numeric module's by a test)
OPTIMIZERS = ("sgd", "adam")

MODEL_SOURCES = ("Model and data follow the base model of bietti23 (public code albietz/transformer-birth: "
                 "ihead_basic_model.py, ihead_data.py, ihead_basic_main.py) where it settles an element; the ws24 "
                 "text past its introduction was not reachable here, so the RPE score w_E(z_t)^T W^1_K (w_E(z_s) + "
                 "r_{s-t}), the Appendix C.2 data and the training protocol of its experiments are reconstructed.")


def lab_cache(ctx: Context) -> Any:
    """The lab's checkpoint cache: the run's ``cache_dir`` when the context carries one, else the user
    cache directory (``$XDG_CACHE_HOME/verify/lab``)."""
    from verify.numeric import lab

    return lab.Cache(ctx.cache_dir)


# ------------------------------------------------------------------ theorem1-ape


@dataclass(frozen=True)
class Theorem1Params(Params):
    V: int = param(8, "vocabulary size (orthonormal idealization)", kind="int", minimum=2, maximum=64)
    T: int = param(64, "sequence length; the slope is fitted over t in [8, T - 1]", kind="int", minimum=12, maximum=256)
    N: int = param(256, "sequences per run", kind="int", minimum=8, maximum=4096)
    runs: int = param(6, "independent runs (the bootstrap resamples runs)", kind="int", minimum=2, maximum=64)


def _t1_symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import ws24_trained as sym

    return sym.check_theorem1_ape()


def _t1_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import ws24_trained as num

    return num.check_theorem1_ape(p["V"], p["T"], p["N"], p["runs"], ctx.seed)


THEOREM1_APE = Claim(
    id="ws24:theorem1-ape",
    title="APE: the one-step previous-token association decays like 1/t (RPE: flat)",
    source="arXiv 2412.11459 v2, Theorem 1 (the APE baseline, from bietti23 arXiv 2306.00802 Section 6, Theorem 3)",
    statement=("With absolute positions, uniform layer-1 attention at initialisation spreads the gradient of W^1_K over "
               "t keys, so the learned previous-token association at position t decays like 1/t; with relative "
               "positions it does not depend on t."),
    quantifiers=("for every position t: the APE association decays like 1/t, the RPE one is constant",
                 "symbolic: symbolic t in the uniform-attention gradient; numeric: t <= T = 64, V = 8, 6 runs"),
    options=(),
    params_type=Theorem1Params,
    checks={"symbolic": _t1_symbolic, "numeric": _t1_numeric},
    expected={"": "HOLDS"},
    caveats=(MODEL_SOURCES,
             "Numeric setting: the gradient of W^1_K at W^1_K = 0 with the layer-2 memories already learned "
             "(bietti23's top-down order: W^2_O, then W^2_K, then W^1_K), frozen parts an exact orthonormal family; "
             "the association at t is the positional part of the layer-1 score at (t, t-1) minus its mean over "
             "earlier keys, averaged over query tokens. The fit excludes t = T (the query position, never an "
             "induction target in the Appendix C.2 data).",
             "Verdict rule: the APE slope's 95% bootstrap interval must meet [-1.2, -0.8] and the RPE interval "
             "[-0.2, 0.2]; the exact law (t - 1)/t^2 has local slope -1 - 1/(t - 1), so at small T the APE slope "
             "sits slightly below -1.",
             "Reduced CPU size (V = 8, T = 64) by default; --T up to 256."),
    cost="symbolic < 1 s; numeric ~10-20 s at V = 8, T = 64, N = 256, 6 runs (one autograd gradient per run and PE)",
    heavy=True,
)


# ------------------------------------------------------------------ falsifier


#: the falsifier's default number of seeds (see the cost and the power the verdict reports)
SEEDS = 16


@dataclass(frozen=True)
class FalsifierParams(Params):
    d: int = param(32, "embedding width", kind="int", minimum=8, maximum=256)
    V: int = param(32, "vocabulary size", kind="int", minimum=4, maximum=256)
    T: int = param(256, "sequence length (late positions are t > 128)", kind="int", minimum=129, maximum=512)
    K: int = param(8, "trigger tokens per sequence", kind="int", minimum=1, maximum=64)
    batch: int = param(16, "sequences per step and seed", kind="int", minimum=1, maximum=512)
    steps: int = param(300, "optimiser steps (the protocol's horizon)", kind="int", minimum=1, maximum=20000)
    lr: float = param(0.01, "learning rate (weight decay 1e-4; SGD adds momentum 0.9)", kind="float", minimum=1e-6,
                      maximum=10.0)
    optimizer: str = param("adam", "adam (default: forms the heads within the CPU budget) or sgd (the authors' "
                           "SGD with momentum)", choices=OPTIMIZERS)
    seeds: int = param(SEEDS, "seeds, trained as one batched model (the paired test's sample)", kind="int", minimum=1,
                       maximum=256)
    eval_sequences: int = param(32, "fresh evaluation sequences per seed (63 early and T - 128 late positions each)",
                                kind="int", minimum=1, maximum=1024)


PROTOCOL = Protocol(
    claim="ws24:falsifier", version=2,
    statistic=("per RPE seed that formed a previous-token head, the relative change late / early - 1 of its "
               "previous-token association (the layer-1 score of key t - 1 minus the mean score of the other visible "
               "keys), early = t in [2, 64], late = t > 128, on 32 fresh evaluation sequences per seed; a seed formed a "
               "head when its certified early recall on 32 other sequences is >= 0.5"),
    test=("'not below' read with a margin, the smallest drop that matters (5% of the early association): two one-sided "
          "one-sample t-tests (scipy.stats.ttest_1samp) of the mean change against -0.05 at level 0.05: a drop beyond "
          "the margin shown FAILS, a change within it shown HOLDS, neither INCONCLUSIVE; fewer than 2 formed seeds: "
          "INCONCLUSIVE; the verdict is recomputed at each end of each threshold's range and is INCONCLUSIVE if it "
          "flips. (v1, a test against 0 with a power rule, was replaced before its confirmatory run was evaluated: "
          "a planted RPE head with a 0.7% drop would FAIL it on enough seeds, a drop that does not matter)"),
    thresholds=(Threshold("level", 0.05, "ours: the conventional level; the paper states no test", 0.01, 0.1),
                Threshold("gate", 0.5, "ours: a head that recalls t - 1 at half the early rows has formed", 0.4, 0.6),
                Threshold("drop", 0.05, "ours: the margin, the smallest relative drop of the association that matters",
                          0.02, 0.1)),
    fixed=(("K", 8), ("T", 256), ("V", 32), ("batch", 16), ("d", 32), ("eval_sequences", 32), ("lr", 0.01),
           ("optimizer", "adam"), ("seeds", 16), ("steps", 300)),
    profile="quick", first_seed=1000, development_seeds=(0, 15),
    horizon=("300 Adam steps (lr 0.01, weight decay 1e-4), batch 16 per seed: ours; the ws24 text past its "
             "introduction was not reachable, so its optimiser is not checked against the paper's; the authors' "
             "bietti23 code uses SGD with momentum, which forms no head at CPU budgets (development runs)"),
    stopping="fixed horizon: one look, after training",
    arms="RPE (judged) and APE (reported), 16 seeds each (the statement's T = 256 kept)",
    command="verify ws24:falsifier",
    cost="about 13 min of one core the first time on fresh seeds; about 20 s cached")


def _validate_falsifier(p: Mapping[str, Any]) -> None:
    if p["K"] > p["V"]:
        raise InputError(f"--K {p['K']} exceeds --V {p['V']}: triggers are distinct tokens")


def _fals_numeric(p: FalsifierParams, ctx: Context) -> Evidence:
    from verify.numeric import ws24_trained as num

    steps = p.profiled("steps", ctx)
    keep = " ".join(f"--{k} {p[k]}" for k in ("d", "V", "T", "K", "batch", "steps", "lr", "optimizer", "eval_sequences")
                    if p[k] != getattr(FalsifierParams, k))
    command = "verify ws24:falsifier" + (" --full" if ctx.full else "") + (f" {keep}" if keep else "")
    return num.check_falsifier(p["d"], p["V"], p["T"], p["K"], p["batch"], steps, p["lr"],
                               list(range(ctx.seed, ctx.seed + p["seeds"])), p["eval_sequences"], lab_cache(ctx),
                               ctx.progress, optimizer=p["optimizer"], command=command)


def _fals_explain(p: Mapping[str, Any], evs: Any) -> list[str]:
    num = next((e for e in evs if e.layer == "numeric" and e.numbers.get("rpe_orientation")), None)
    if num is None:
        return []
    o = num.numbers["rpe_orientation"]
    return [f"Trained RPE W^1_K against Eq. 13: cosine with sum_k w_E(k) r_{{-1}}^T {o['cos_eq13']}, with its transpose "
            f"{o['cos_eq13_transposed']}; best-chi share {o['share_eq13']} (as written) against {o['share_transposed']} "
            f"(transposed); the model's score w_E(k)^T W^1_K r_{{-1}} averages {o['model_score_mean']}, the displayed "
            f"r_{{-1}}^T W^1_K w_E(k) {o['displayed_score_mean']}."]


FALSIFIER = Claim(
    id="ws24:falsifier",
    title="end-to-end training: the RPE previous-token association is not lower late in the sequence",
    source="arXiv 2412.11459 v2, Theorem 2 and its experiments (the falsification test the reviews asked for)",
    statement=("Trained end to end (all attention matrices jointly) on bigram-with-triggers data with T = 256, the RPE "
               "model's previous-token association (Theorem 2's quantity: the score of key t - 1 above the other "
               "visible keys) for positions t > 128 is not below its association for early positions."),
    quantifiers=("for trained RPE models (an empirical claim): association at t > 128 not below early",
                 "numeric: 16 fresh seeds under the frozen protocol, a 5% margin, two one-sided t-tests"),
    options=(),
    params_type=FalsifierParams,
    checks={"numeric": _fals_numeric},
    expected={"": "INCONCLUSIVE"},
    validate=_validate_falsifier,
    protocol=PROTOCOL,
    caveats=(MODEL_SOURCES,
             "Verdict rule: the frozen protocol ws24:falsifier v2 (`verify show ws24:falsifier` prints it with its "
             "hash; a run that changes an option it fixes, or --seed, is EXPLORATORY). A seed's RPE model counts when "
             "it formed a previous-token head (certified early recall >= 0.5 on gate sequences of its own, independent "
             "of the test's); fewer than 2 such seeds: INCONCLUSIVE. The statistic is the association the statement "
             "is about (Theorem 2's quantity), each counted seed's late association relative to its early one; 'not "
             "below' is read with a margin of 5% (the smallest drop that matters): two one-sided t-tests at level 0.05 "
             "FAIL the statement when a drop beyond the margin is shown and HOLD it when a change within the margin "
             "is shown. Recall (the argmax at t - 1, the statistic before the protocol: a head whose association does "
             "not depend on t still loses recall late, where more keys compete) is reported as a diagnostic.",
             "History, exploratory: before the protocol this claim was decided by recall, and its rule was changed "
             "after a run had been seen (the same kind of data read HOLDS under the earlier power rule and FAILS under "
             "the t-test that replaced it); no such run decides it now. The confirmatory seeds are 1000-1015, "
             "disjoint from the development seeds 0-15.",
             "CPU scale: d = 32, V = 32, 8 triggers, T = 256 (the statement's length, kept), batch 16 per seed, 300 Adam "
             "steps (lr 0.01, weight decay 1e-4), 16 seeds (the paired test's sample). Adam departs from the authors' "
             "SGD with momentum (the bietti23 code, batch 512 on a GPU): with SGD at CPU budgets no previous-token head "
             "forms (150 steps at lr 0.03, batch 8: early recall 0.13, the gate is not met; lr 0.1 and 0.3 diverged), "
             "so the statement could not be judged; Adam's per-coordinate step sizes form the head in 300 steps. "
             "--optimizer sgd keeps the authors' optimiser (then expect INCONCLUSIVE at CPU budgets).",
             "Trained: W^1_K, W^1_V, W^1_O, W^2_K, W^2_V, W^2_O; embeddings, output and positions frozen (random). "
             "Loss on the in-context outputs only (the code's loss_head_only)."),
    explain=_fals_explain,
    cost="numeric ~13 min of one core the first time (2 PEs x 16 seeds x 300 Adam steps at T = 256, batch 16, on "
         "one thread; measured CPU time 6.5 min RPE, 6 min APE; longer wall time on a loaded machine); a second run "
         "reads the lab cache and evaluates in ~5-20 s; --full is the same run (the protocol fixes the horizon)",
    heavy=True,
)


# ------------------------------------------------------------------ prop3


@dataclass(frozen=True)
class Prop3Params(Params):
    V: int = param(16, "vocabulary size", kind="int", minimum=3, maximum=128)
    T: int = param(64, "prompt length", kind="int", minimum=12, maximum=512)
    n: int = param(40, "prompts (half start with the trigger)", kind="int", minimum=2, maximum=2000)
    tau1: float = param(30.0, "layer-1 (previous-token) scale", kind="float", minimum=0.0, maximum=200.0)
    tau2: float = param(30.0, "layer-2 (induction) scale", kind="float", minimum=0.0, maximum=200.0)
    tau3: float = param(5.0, "output scale of the induction head", kind="float", minimum=0.0, maximum=1000.0)


def _p3_numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import ws24_trained as num

    return num.check_prop3(p["V"], p["T"], p["n"], p["tau1"], p["tau2"], p["tau3"], ctx.seed)


def _p3_explain(p: Mapping[str, Any], evs: Any) -> list[str]:
    num = next((e for e in evs if e.layer == "numeric" and e.numbers.get("ff_weighted")), None)
    if num is None:
        return []
    n = num.numbers
    return [f"Global coefficient: stated tau1 tau2 = {n['stated_coefficient']:g}; the built model's own coefficient of "
            f"log pi_b(v|q) is {n['ff_weighted']['model_coefficient']:g} with the feed-forward memory weighted by tau1 tau2 "
            f"and {n['ff_unit']['model_coefficient']:g} with the memory at unit weight (formula error "
            f"{n['ff_weighted']['max_formula_error']:.1e} and {n['ff_unit']['max_formula_error']:.3g})."]


PROP3 = Claim(
    id="ws24:prop3",
    title="associative-memory transformer: global plus in-context logits, position-free",
    source="arXiv 2412.11459 v2, Proposition 3 (Definitions 2-3)",
    statement=("At a final trigger q the constructed model's logits are xi_v ~ tau1 tau2 log pi_b(v|q) + tau3 f(v) "
               "(+ a term only when v = q and z_1 = q), tau1, tau2 the model's layer-1 and layer-2 temperatures, f(v) "
               "from the in-context patterns 'q v', so moving a pattern within the prompt leaves the logits unchanged."),
    quantifiers=("for every token v at a final trigger q: logit = tau1 tau2 log pi_b(v|q) + tau3 f(v) (+ a term at v ="
                 " q)",
                 "numeric: V = 16, T = 64, 40 prompts, two readings of the feed-forward weight; a negative control "
                 "with a wrong coefficient must be rejected at the same sizes"),
    options=(),
    params_type=Prop3Params,
    checks={"numeric": _p3_numeric},
    expected={"": "INCONCLUSIVE"},
    explain=_p3_explain,
    caveats=("Partly self-definitional: the global term log pi_b(v|q) is placed into the weights by Definition 2 (the "
             "feed-forward block stores it), so its appearance in the logits checks the wiring, not a learned "
             "behaviour. What is tested beyond the wiring: that the two attention layers deliver the in-context term "
             "and the z_1 = q term in the limit form, and that the logits do not depend on where a pattern sits "
             "(this needs tau1 large against log T: at --tau1 2 the previous-token weight depends on t and the "
             "invariance fails).",
             "The coefficient tau1 tau2 is checked as stated, from the model's own tau1 and tau2, against the model's "
             "own coefficient read from its logits (with and without the feed-forward block). No attention path "
             "multiplies the feed-forward output by tau1 tau2, so the model meets the coefficient only if Definition 3 "
             "writes tau1 tau2 into the feed-forward weights; the text that says so was not reachable here. The model "
             "is built both ways (memory weighted by tau1 tau2; Definition 2's memory at unit weight) and the verdict "
             "is INCONCLUSIVE while the two disagree with each other (they agree only at tau1 tau2 = 1).",
             "Reconstructed (Definitions 2-3 were not reachable): exact orthonormal blocks; layer 1 RPE with W^1_K = "
             "tau1 sum_k w_E(k) r_{-1}^T; W^2_K = tau2 sum_k w_E(k) (Phi_1 w_E(k))^T; output map tau3 sum_k w_U(k) "
             "w_E(k)^T; a linear feed-forward memory sum_{a,u} log pi_b(u|a) w_U(u) w_E(a)^T; f(v) read as the share "
             "c(v)/n of the patterns (softmax attention averages over the matches); zero probabilities replaced by "
             "eps = 1e-3 before normalising. Patterns 'q v' use v != q and the token before the final q is not q (a "
             "'q q' pair would add a match at the query itself).",
             "Verdict rule (tolerance 1e-6 x max(1, tau3, tau1 tau2) over every prompt): FAILS when moving one "
             "pattern changes the logits, or when the model with the memory weighted by tau1 tau2 misses the formula "
             "with the stated coefficient; HOLDS when the model with the memory at unit weight also meets it; "
             "INCONCLUSIVE otherwise, naming the text that settles it."),
    cost="numeric ~4-8 s at V = 16, T = 64, 40 prompts (two readings of the feed-forward weight)",
    heavy=True,
)

CLAIMS: list[Claim] = [THEOREM1_APE, FALSIFIER, PROP3]
