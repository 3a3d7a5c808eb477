"""fp26 — Li Hengyu, Fingerprint, Not Blueprint: How Positional Schemes Set the Default Spectral Algebra of
Attention, arXiv 2607.06621 v1.

Sources reached: the abstract (``find_string`` "Fingerprint, Not Blueprint") and the authors' bundle
(github HengyuLi-Ozaki-lab/qk-spectral-fingerprint: paper/qk_spectral.tex and src/p10_training_intervention.py).
The abstract scopes the claim three ways; this claim judges the parts that run here and says which:
* algebraic (exact, symbolic layer): a symmetric static M gives pair-symmetric scores under absolute positions but
  directional scores under RoPE through the phase Im(M_t) (Sec. "Mechanism" display; Sec. "Is the rotational
  channel necessary?");
* causal, toy scale (numeric layer): the constrained two-layer training of Sec. "Is the rotational channel
  necessary?" at a stated CPU size;
* static (seven pretrained models, exact permutation p = 0.029) and dynamic (Pythia checkpoints): not run here
  (the models are not shipped and nothing is downloaded); the exact p is reproduced as arithmetic (1 / C(7, 3)).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from verify import hfcompat
from verify.core.model import Claim, InputError, Paper, Params, Part, param
from verify.core.protocol import Protocol, Threshold
from verify.evidence import Context, Evidence, Figure, Outcome, engine_versions

#: the toy arms (torch-free copy of verify.numeric.fingerprint.ARMS; a test checks they agree)
ARMS = ("absolute/free", "absolute/sym", "rope/free", "rope/sym", "rope/imag")


@dataclass(frozen=True)
class FingerprintParams(Params):
    d: int = param(64, "toy model width (the paper's toy: 128)", kind="int", minimum=8, maximum=256)
    H: int = param(4, "heads per layer (the paper's toy: 4)", kind="int", minimum=1, maximum=16)
    V: int = param(32, "vocabulary of the random-map task (the paper's toy: 64)", kind="int", minimum=4, maximum=256)
    T: int = param(64, "sequence length (the paper's toy: 256)", kind="int", minimum=8, maximum=512)
    batch: int = param(32, "sequences per step and seed (the paper's toy: 64)", kind="int", minimum=1, maximum=512)
    steps: int = param(800, "Adam steps per arm (--full: the protocol's horizon 6000, the paper's toy's)", kind="int",
                       minimum=25, maximum=194400, full=6000)
    lr: float = param(1e-3, "Adam learning rate (the paper's toy: AdamW 1e-3)", kind="float", minimum=1e-6, maximum=1.0)
    seeds: int = param(2, "seeds per arm, trained as one batched model (--full and the paper's toy: 5)", kind="int",
                       minimum=1, maximum=16, full=5)
    arms: str = param("absolute/free,absolute/sym,rope/sym", "toy arms to train, comma-separated, from "
                      + ", ".join(ARMS) + " (--full: all five, every ban the statement names)", kind="text", maximum=200,
                      full=",".join(ARMS))
    draws: int = param(200, "random frames of the D_head null figure", kind="int", minimum=10, maximum=10000)
    scheduler: str = param("in-process", "where the toy arms train: 'in-process', 'local' (a Dask LocalCluster of "
                           "--jobs one-thread workers) or an existing Dask scheduler tcp://HOST:PORT (runs larger "
                           "than this machine)", kind="text", maximum=200)
    jobs: int = param(2, "workers of a 'local' scheduler", kind="int", minimum=1, maximum=16)
    checkpoint: str = param("", "the static part: local Hugging Face checkpoint directories, comma-separated (never a "
                            "download; needs the transformers package); empty: the static part is not run",
                            kind="text", maximum=2000)


def _arms(text: str) -> tuple[tuple[str, str], ...]:
    names = [a.strip() for a in text.split(",") if a.strip()]
    bad = [a for a in names if a not in ARMS]
    if bad or not names:
        raise InputError(f"--arms {text!r}: each arm must be one of {', '.join(ARMS)}")
    return tuple(tuple(a.split("/")) for a in dict.fromkeys(names))  # type: ignore[misc]


def _checkpoints(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def _validate(p: Mapping[str, Any]) -> None:
    if p["d"] % p["H"] or (p["d"] // p["H"]) % 2:
        raise InputError(f"--d {p['d']} / --H {p['H']} must give an even head size (RoPE pairs)")
    _arms(p["arms"])
    import os

    for path in _checkpoints(p["checkpoint"]):
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise InputError(f"--checkpoint {path!r}: not a local checkpoint directory (no config.json); nothing is "
                             "downloaded")
    if _checkpoints(p["checkpoint"]) and hfcompat.refusal() is not None:
        raise InputError(f"--checkpoint: {hfcompat.refusal()}")
    from verify.numeric.grid import parse_scheduler  # torch-free

    try:
        parse_scheduler(p["scheduler"])
    except ValueError as exc:
        raise InputError(f"--scheduler: {exc}") from None


def _symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import fp26 as sym

    ids = sym.check_identities(3, 4)
    w = sym.symmetric_m_witness()
    pv = sym.permutation_p(7, 3)
    ok = all(ids.values()) and w["M_symmetric"] and w["rope_directional_all_theta"] and not w["absolute_directional"]
    fig = Figure("exact model-level permutation p (Sec. 'The architecture-conditional signature'; abstract)", "0.029",
                 f"1/{pv.denominator}", sym.in_rounding_interval(pv, "0.029"),
                 "rule: the rounding interval of the printed digits, exact rationals; 1/C(7,3) is the smallest p a "
                 "one-sided exact permutation test can give with 3 RoPE models among 7. That the seven models "
                 "separate perfectly is the paper's measurement, not checked here (the models are not shipped)")
    numbers = {"identities (symbolic W_q, W_k: d = 3, d_k = 4)": ids,
               "witness": {"W_q": [list(r) for r in sym.WITNESS_WQ], "W_k": [list(r) for r in sym.WITNESS_WK],
                           "n": list(sym.WITNESS_N), "static_M": w["M"], "Im_M_t": w["Im_M_t"],
                           "rope_pair_asymmetry": str(w["rope_pair_asymmetry"]),
                           "absolute_pair_asymmetry": str(w["absolute_pair_asymmetry"])},
               "permutation_p": str(pv)}
    summary = (f"exact: W_q^T W_k = sum_t Re(M_t); score(Delta) - score(-Delta) = sum_t 2 sin(Delta theta_t) n^T Im(M_t) n; "
               f"a symmetric M gives x_i^T M x_j = x_j^T M x_i under absolute positions; the head W_q = I, W_k = "
               f"diag(1, 2) has symmetric static M and RoPE pair asymmetry {w['rope_pair_asymmetry']} (score(i, i-1) "
               f"- score(i-1, i); nonzero for theta in (0, pi)), 0 under absolute positions")
    return Evidence("symbolic", "proved" if ok else "refuted", "holds" if ok else "fails", summary=summary,
                    numbers=numbers, figures=[fig], engines=engine_versions("sympy"))


def _numeric(p: FingerprintParams, ctx: Context) -> Evidence:
    from verify.numeric import fingerprint as num
    from verify.numeric.grid import SchedulerUnreachable

    steps = p.profiled("steps", ctx)
    arms = _arms(p.profiled("arms", ctx))
    seeds = list(range(ctx.seed, ctx.seed + p.profiled("seeds", ctx)))
    try:
        toy = num.check_toy(p["d"], p["H"], p["V"], p["T"], p["batch"], steps, p["lr"], seeds, 25, arms, ctx.cache_dir,
                            ctx.progress, scheduler=p["scheduler"].strip(), jobs=p["jobs"])
    except SchedulerUnreachable as exc:
        return Evidence("numeric", "inconclusive", summary=str(exc), engines=engine_versions("torch", "numpy"))
    g = num.gpt2_null(p["draws"], 0)
    figs = [Figure("random-orientation null of D_head, GPT-2 heads (Sec. Method: 'D_head,null = 0.608')", 0.608,
                   round(g["mean"], 3), abs(g["mean"] - 0.608) <= 0.0005 + 1.96 * (g["hi"] - g["lo"]) / 3.92 /
                   p["draws"] ** 0.5,
                   f"ours: Gaussian W_q, W_k at GPT-2's d = {num.GPT2_D}, d_k = {num.GPT2_DK}, matched singular values "
                   f"with {p['draws']} random frames in the rank-{num.GPT2_DK} core; rule: the printed value's rounding "
                   "interval widened by a 95% Monte-Carlo interval of our mean. The paper's value is over GPT-2's "
                   "trained heads' singular values, ours over a Gaussian head's")]
    a = toy["arms"]
    if "absolute/free" in a and "absolute/sym" in a and all(f is not None for f in a["absolute/free"]["formation"]
                                                            + a["absolute/sym"]["formation"]):
        import statistics
        r = statistics.median(a["absolute/sym"]["formation"]) / max(1, statistics.median(a["absolute/free"]["formation"]))
        figs.append(Figure("formation delay of symmetry on learned-absolute models (abstract; Table 'Constrained-training "
                           "formation delays', P3: 600 -> 1740 steps)", num.PAPER_SYM_RATIO, round(r, 2),
                           abs(r - 2.9) <= 0.05,
                           f"rule: the rounding interval of the printed 2.9; ours at the reduced size (d = {p['d']}, "
                           f"T = {p['T']}, V = {p['V']}, batch {p['batch']}, {len(seeds)} seeds) is a ratio of medians "
                           "of formation steps read every 25 steps"))
    numbers = {"toy": toy, "gpt2_null": g, "sizes": {"d": p["d"], "H": p["H"], "V": p["V"], "T": p["T"],
               "batch": p["batch"], "steps": steps, "lr": p["lr"], "seeds": seeds},
               "not_run": {"static": "seven pretrained models (GPT-2, OPT-1.3B, GPT-Neo-1.3B, BLOOM-1b1, Pythia-410m, "
                           "Pythia-1.4B, Llama-3-8B): not shipped, never downloaded",
                           "dynamic": "Pythia public checkpoints: not shipped, never downloaded"}}
    tol = (f"formation: first recorded step (every 25) with training loss below {toy['formation_threshold']} (midway "
           f"between ln V and the induction floor {toy['loss_floor']}); previous-token head: mean attention on t - 1 >= "
           f"{num.PREV_HEAD}, certified (the lower end of its arb-ball enclosure, verify head's bounds); symmetric "
           f"static M: dir_frac < {num.SYMMETRIC}; phase used: rotary imaginary share >= "
           f"{num.PHASE_USED}")
    parts = []
    for name, v in a.items():
        fs = ", ".join("-" if f is None else str(f) for f in v["formation"])
        h = v["heads"]
        parts.append(f"{name}: formed at {fs}; head on t - 1 >= {min(num.prev_lower(x) for x in h):.2f} (certified), "
                     f"dir_frac <= "
                     f"{max(x['dir_frac'] for x in h):.3f}"
                     + (f", rotary Im share >= {min(x['rope_imag_share'] for x in h):.2f}, pair asymmetry >= "
                        f"{min(x['pair_asymmetry'] for x in h):.2f}" if h[0]["rope_imag_share"] is not None else ""))
    summary = "toy scale, " + "; ".join(parts)
    static_ok = None
    if _checkpoints(p["checkpoint"]):
        try:
            profiles = [num.static_profile(c, seed=ctx.seed) for c in _checkpoints(p["checkpoint"])]
        except ImportError:
            numbers["not_run"]["static"] = ("--checkpoint given but the transformers package is not installed: "
                                            "pip install transformers")
        except hfcompat.UnsupportedRelease as e:
            numbers["not_run"]["static"] = f"--checkpoint given but {e}"
        else:
            sv = num.static_verdict(profiles)
            numbers["static"] = {"profiles": profiles, **sv}
            numbers["not_run"].pop("static")
            static_ok = sv["each_on_its_side"] and sv.get("perfect_separation", True)
            summary += ("; static, on the given checkpoints: top-5 previous-token heads' median D_head percentile "
                        + ", ".join(f"{pr['model_type']} ({pr['scheme']}) {pr['median_percentile']:.2f}" for pr in profiles)
                        + (f", separation perfect (exact p = {sv['permutation_p']})" if sv.get("perfect_separation")
                           else ""))
    base: dict[str, Any] = dict(numbers=numbers, tolerance=tol, figures=figs, engines=engine_versions("torch", "numpy"))
    numbers["sensitivity"] = toy["sensitivity"]
    if toy["verdict"] is None:
        return Evidence("numeric", "inconclusive", summary=(
            f"the verdict flips inside a declared threshold range ({'; '.join(toy['sensitivity'])}): " + summary), **base)
    outcome = toy["verdict"] if static_ok is not False else "fails"
    if static_ok is False:
        toy["reasons"].append("static: a model's top previous-token heads sit on the other side of its scheme")
    return Evidence("numeric", "consistent", outcome,
                    summary=summary + ("" if outcome == "holds" else "; " + "; ".join(toy["reasons"])), **base)


#: the development runs before the protocol (exploratory: their horizon was extended run by run, so they decide nothing)
MEASURED = ("Exploratory history, before protocol v1 (development seeds 0 and 1; the horizon extended after each run, "
            "optional stopping, so none of this decides the claim). Measured with 2400 Adam steps per arm, 2 seeds (the "
            "--full of then; ~1200 s of training per arm on a loaded 2-core "
            "machine): absolute/free forms at steps 575 and 550 (the paper: 600) with previous-token heads 0.84-0.85 and "
            "dir_frac 0.64-0.69; absolute/sym forms at 2300 and 1825 (ratio of medians 3.67; the paper: 2.9) with "
            "dir_frac <= 0.031 (the ban holds) but seed 0's head only at 0.29 on t - 1; rope/sym forms in seed 0 at 2200 "
            "with a previous-token head (0.71 on t - 1) whose static M is symmetric (dir_frac 0.019) and which keeps the "
            "phase (rotary Im share 0.46; the paper: 0.52) and attends directionally (pair asymmetry +0.97), the "
            "dissociation the abstract states; seed 1 has not formed by 2400 steps, so the verdict is INCONCLUSIVE "
            "and names the run that decides it (3x the steps). That run, --steps 7200 (916 s of one core for the "
            "three arms): absolute/sym's heads at 0.87-0.89 on t - 1, rope/sym seed 0 at 0.84, but rope/sym seed 1 "
            "ends at loss 2.663 above the threshold 2.42, so INCONCLUSIVE again, naming --steps 21600. That run "
            "(57 and 69 min of one core for the two arms it trained, 0.19-0.22 s per step): every seed of every arm "
            "forms; absolute/sym's heads at 0.90 and 0.93 (dir_frac <= 0.008), rope/sym seed 0 at 0.93 (dir_frac "
            "0.007, Im share 0.74, pair asymmetry +1.99); rope/sym seed 1 stayed near loss 2.6 until it formed at "
            "step 11875 (one batch dipped under the threshold at 3225, which an earlier rule read as formation) and "
            "its head reads 0.49 on t - 1 at the end, still forming, so INCONCLUSIVE, naming --steps 64800 (43200 more "
            "steps per arm from the saved training states: about 2.3-2.7 h of one core per arm). The rule settles a head "
            "that formed at step F in any run of 2F steps or more (23750 here; the answer now names that least run), so "
            "the shortest run continuing the 64800-step run's saved states (stopped at 33579, 38080 and 48635 steps) "
            "decides it: --steps 48800 --scheduler local --jobs 3 (0.14, 0.22 and 0.17 s per step for absolute/free, "
            "absolute/sym and rope/sym, side by side on both cores): every seed of every arm forms; rope/sym seed 1's "
            "head reads 0.59 on t - 1 (seed 0's 0.96) with a symmetric static M (dir_frac 0.009), the phase in use (Im "
            "share 0.80) and directional (pair asymmetry +1.89); absolute/sym's heads 0.88 and 0.92 with dir_frac <= "
            "0.007; absolute/free's 0.96 and 0.94: HOLDS.")


PROTOCOL = Protocol(
    claim="fp26:fingerprint", version=1,
    statistic=("per arm and seed at the horizon: the formation step (the first recorded step, every 25, from which the "
               "training loss stays below the midpoint of ln V and the induction floor; none when it has not), the "
               "strongest previous-token head's certified attention on t - 1, its static M's dir_frac, rotary "
               "imaginary share and pair asymmetry"),
    test=("HOLDS when (a) every seed of every arm forms within the horizon with a head >= 0.5 on t - 1, (b) each ban "
          "enforces (dir_frac < 0.05 under sym, imaginary share < 0.05 under imag), (c) 'symmetry slows learned-absolute "
          "models': a one-sided Mann-Whitney U test (scipy) of absolute/sym's formation steps against absolute/free's "
          "(unformed: after the horizon) rejects at level 0.05, (d) every rope/sym head has dir_frac < 0.05, imaginary "
          "share >= 0.2 and a positive pair asymmetry; FAILS otherwise; recomputed at each end of the ranges of the "
          "thresholds' ranges, INCONCLUSIVE if it flips"),
    thresholds=(Threshold("prev_head", 0.5, "ours: a head that puts half its attention on t - 1", 0.4, 0.6),
                Threshold("level", 0.05, "ours: the conventional level; the paper reports delays, no test", 0.01, 0.1),
                Threshold("symmetric", 0.05, "ours: the ban's residue counted as enforced", 0.03, 0.1),
                Threshold("phase_used", 0.2, "ours: a rotary imaginary share that routes (the paper's trained "
                          "rope/sym: 0.52)", 0.1, 0.3)),
    fixed=(("H", 4), ("T", 64), ("V", 32), ("arms", ",".join(ARMS)), ("batch", 32), ("d", 64), ("lr", 1e-3),
           ("seeds", 5), ("steps", 6000)),
    profile="full", first_seed=1000, development_seeds=(0, 1),
    horizon=("6000 Adam steps at lr 1e-3 (the paper's toy: 6000 AdamW steps), at our CPU size d = 64, V = 32, T = 64, "
             "batch 32 (the paper's toy: 128, 64, 256, 64; about 50x the cost per step)"),
    stopping="fixed horizon: one look, at 6000 steps; no extension (the development runs' 800-48800-step extensions "
             "were optional stopping and decide nothing)",
    arms="absolute/free, absolute/sym, rope/free, rope/sym, rope/imag (every ban the statement names), 5 seeds each "
         "(the paper's toy)",
    command="verify fp26:fingerprint --full --scheduler local --jobs 2 (or --scheduler tcp://HOST:PORT)",
    cost=("not run here: about 0.3-0.5 s per step for 5 batched seeds at this size (development runs: 0.14-0.22 s for "
          "2), so 30-50 min of one core per arm, 2.5-4 h for the five (1.3-2 h on 2 Dask workers)"))


def _protocol_values(p: FingerprintParams, ctx: Context) -> dict[str, Any]:
    values = {k: p.profiled(k, ctx) for k, _ in PROTOCOL.fixed}
    values["arms"] = ",".join(f"{a}/{b}" for a, b in sorted(_arms(values["arms"]), key=lambda x: ARMS.index("/".join(x))))
    return values


def _layer_judge(layer: str, what: str) -> Any:
    """A part judged by one layer alone: its outcome, or undecided (None) when that layer did not run or finish."""
    def judge(p: Mapping[str, Any], evs: Sequence[Evidence]) -> tuple[Outcome | None, str, list[str], dict]:
        ev = next((e for e in evs if e.layer == layer and e.status != "skipped"), None)
        if ev is None or not ev.status.finished or ev.outcome is None:
            return None, f"{what}: not decided ({layer} {ev.status if ev is not None else 'not run'})", [layer], {}
        return ev.outcome, f"{what}: {ev.outcome} ({layer})", [layer], {}
    return judge


#: the abstract's two judged parts, each checked by one layer (the claim's layers_check_parts)
PARTS = (
    Part("algebra", "main", "a symmetric static M gives pair-symmetric scores under absolute positions and can route "
         "directionally under RoPE through the phase Im(M_t) (exact)", _layer_judge("symbolic", "the algebra")),
    Part("toy training", "main", "in constrained two-layer training every spectral ban trained is rerouted with "
         "capability intact, symmetry slows learned-absolute models, and a RoPE head with a symmetric static M "
         "attends directionally (at the stated CPU size)", _layer_judge("numeric", "the toy training")),
)


FINGERPRINT = Claim(
    id="fp26:fingerprint",
    title="positional schemes set the default spectral algebra (judged: the exact algebra and the toy training)",
    source="arXiv 2607.06621 v1: abstract; paper/qk_spectral.tex of the authors' bundle (HengyuLi-Ozaki-lab/"
           "qk-spectral-fingerprint), Sec. 'Mechanism' (display of score(Delta) - score(-Delta)) and Sec. 'Is the "
           "rotational channel necessary?' (Table 'Constrained-training formation delays')",
    statement=("Judged scope (the abstract's algebraic and causal, toy-scale parts): a symmetric static M = W_q^T W_k "
               "gives pair-symmetric scores under absolute positions but can route directionally under RoPE through "
               "the phase Im(M_t) (exact); and in constrained two-layer training, every spectral ban (the confirmatory "
               "run, --full, trains each the statement names: symmetry under both schemes and the phase ban) is "
               "rerouted with capability intact, imposing symmetry slows learned-absolute models, and a RoPE head with a "
               "fully symmetric static M still attends directionally. With --checkpoint, also the static profile on the "
               "given local models (RoPE: the strongest previous-token heads rotational; learned absolute, ALiBi: "
               "content-like). Not judged here: the paper's seven pretrained models and the dynamic claim over "
               "Pythia checkpoints."),
    quantifiers=("for every symmetric M (exact) and for trained toy models (empirical)",
                 "symbolic: every M in symbols (exact algebra); numeric: 5 fresh seeds x 5 arms under the frozen "
                 "protocol"),
    options=(),
    params_type=FingerprintParams,
    checks={"symbolic": _symbolic, "numeric": _numeric},
    expected={"": "FAILS"},  # the confirmatory run of protocol v1 (results/confirmatory/fp26-fingerprint.json)
    parts=PARTS,
    layers_check_parts=True,
    validate=_validate,
    protocol=PROTOCOL,
    protocol_values=_protocol_values,
    caveats=("Scope: the abstract's static part (seven pretrained models; exact permutation p = 0.029) and dynamic "
             "part (Pythia checkpoints) are not run: the models are not shipped and nothing is downloaded. Only the "
             "arithmetic of the printed p is checked (1/C(7,3) = 1/35, in the rounding interval of 0.029). The "
             "verdict is about the judged scope in the statement, never about the unrun parts.",
             "Toy reconstruction from the authors' src/p10_training_intervention.py: 2-layer attention-only model, "
             "pre-LayerNorm, rotate-half RoPE over the whole head, random-map task (x_{t+1} = f_seq(x_t) w.p. 0.9, "
             "f_seq fresh per sequence), penalties lambda ||M_A||^2/||M||^2 (sym) and lambda sum_t||Im M_t||^2 / "
             "sum_t(||Re||^2 + ||Im||^2) (imag), lambda = 10. Departures: the LayerNorms have no gain or bias; Adam "
             "without weight decay, warm-up or clipping (the code: AdamW, wd 0.01, 200 warm-up steps, clip 1.0); "
             "formation is read from the training loss every 25 steps (the code: held-out loss on predictable "
             "positions every 100 steps, threshold (ln V + 0.15)/2).",
             "Protocol v1 (`verify show fp26:fingerprint`): the confirmatory run is `verify fp26:fingerprint --full` "
             "(5 seeds from 1000, all five arms, 6000 Adam steps, the paper's toy horizon, at our CPU size d = 64, 4 "
             "heads, V = 32, T = 64, batch 32; the paper's toy: d = 128, V = 64, T = 256, batch 64, about 50x the "
             "cost per step); 'symmetry slows' is a one-sided Mann-Whitney U test at level 0.05; a seed not formed by "
             "the horizon fails capability. The default run (800 steps, 2 seeds, three arms) is EXPLORATORY.",
             "The formation-delay ratio 2.9 is a Figure (rounding interval), not the verdict: the statement says "
             "symmetry slows the absolute model, which the verdict tests as median formation(sym) > median "
             "formation(free).",
             MEASURED),
    cost="symbolic ~15 s; numeric ~5-20 min at the defaults (3 arms x 800 Adam steps x 2 seeds, one thread; a second "
         "run reads the lab cache); --full (the confirmatory run): 5 arms x 6000 steps x 5 seeds, 0.2-0.35 s per step "
         "per arm, so 2.5-4 h of one core (the arms are independent grid tasks: --scheduler local --jobs 2, or a Dask "
         "cluster tcp://HOST:PORT); a stopped run continues from each arm's saved training state",
    heavy=True,
)

CLAIMS: list[Claim] = [FINGERPRINT]

#: this paper as a plugin (the registry reads it; see :class:`verify.core.model.Paper`)
PAPER = Paper(key="fp26", title="Fingerprint, Not Blueprint, arXiv 2607.06621", claims=tuple(CLAIMS))
