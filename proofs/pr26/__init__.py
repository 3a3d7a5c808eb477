"""pr26 — "A Positional Realizability Theory of Length Generalization in Single-Head
Attention" (TMLR 2026; no arXiv id known): Prop. 1, Theorem 2, Theorem 1, wired to the layers.

The PE families and tasks are the shared table of :mod:`verify.constructions.pe`; the
families are looked up at run time (``pe.FAMILIES[...]``) so a corrupted entry (fault
injection) reaches every layer.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from verify.core.model import Claim, InputError, Paper, Params, Times, param
from verify.evidence import Context, Evidence, Sized
from verify.numeric.pr26_sizes import SELECTIONS
from verify.proofs import with_kernel_layer
from verify.proofs.pr26 import alpha, plots

SOURCE = "pr26: A Positional Realizability Theory of Length Generalization in Single-Head Attention (TMLR 2026)"
RECONSTRUCTED = ("The exact feature maps are reconstructed from a summary of the paper (its full text was not reachable, "
                 "so no section or equation can be cited): affine [1, i]; ALiBi a - m delta; learned absolute one-hot with "
                 "random untrained features; clamped one-hot; sinusoidal and RoPE with theta_k = 10000^(-k/16), "
                 "k = 0..15; free relative one value per trained offset. Positions are 0-indexed in code; printed paper "
                 "rows add 1.")
FIT = ("Fit protocol: the summary gives 400 Adam steps and weight decay 1e-4 but not the learning rate, the "
       "initialisation or the Adam constants (full text not reachable). The default learning rate 0.07 is chosen from "
       "a fixed grid by one joint rule over every published figure the fit affects (verify.numeric.pr26.LR: the most "
       "figures reproduced, ties by the summed normalised error); --lr, --steps, --weight-decay override it and the "
       "settings used are in the JSON (fit_settings).")

FIGURE_RULES_TEXT = ("Figures (every number the summary prints beside the statement): a value it asserts exactly "
                     "(alpha_L = 1, the maximiser 8833) by exact equality; a printed measurement (0.45, 0.055) by the "
                     "rounding interval of its digits, ours taken exactly as passed/rows; a printed Monte-Carlo rate "
                     "(0.115, '30%') when that rounding interval meets our 95% Wilson interval. Only printed numbers "
                     "stand under 'paper'.")

#: the fit defaults, as the engine's (verify.numeric.pr26: LR, STEPS, WEIGHT_DECAY; a test keeps them equal)
DEFAULT_LR, DEFAULT_STEPS, DEFAULT_WD = 0.07, 400, 1e-4

#: pr26's work sizes that are not options, per claim, each with its value under the quick and the full profile
#: (``verify show CLAIM`` lists a claim's; the checks read them under the run's profile with ``ctx.size``)
SIZES: dict[str, dict[str, Sized]] = {
    "prop1": {"samples": Sized(500, 4000, "random W draws of the numeric search"),
              "opt_lengths": Sized((64, 256), (64, 256, 1024), "lengths at which a head is fitted to prev")},
    "theorem2": {"solver_lengths": Sized(((8, 16), (10, 24)), ((8, 16), (10, 24), (16, 40)),
                                         "(L0, L) pairs of the solver layer"),
                 "length_factors": Sized((3, 6, 12), (3, 6, 12, 25, 50), "numeric lengths, as multiples of --L0"),
                 "horizon": Sized(2048, 4096, "longest length searched for the first failing length")},
    "theorem1": {"draws": Sized(4, 16, "random parameter draws per family and task")},
    "prop2": {"lr_band": Sized(False, True, "also the learning-rate sensitivity band (with --selection ce)")},
    "prop3": {"lengths": Sized((60, 128, 256, 512), (60, 128, 256, 512, 1024, 2048), "evaluation lengths"),
              "sensitivity_seeds": Sized(1, 5, "fit seeds of the sensitivity band (--seed onwards)"),
              "min_norm": Sized(False, True, "also the minimum-norm fit")},
    "prop4": {"extra_lengths": Sized((), (1024, 2048), "lengths added to the published table's"),
              "sensitivity_seeds": Sized(1, 5, "fit seeds of the sensitivity band (--seed onwards)"),
              "horizon": Sized(1024, 4096, "longest length searched for the first failing length"),
              "min_norm": Sized(False, True, "also the minimum-norm fit")},
}


# one factory per fit option (a dataclass field object cannot be shared between two classes); the four
# claims that fit a head list them last, in this order, after their own options
def _lr() -> Any:
    return param(DEFAULT_LR, "learning rate of the cross-entropy fit (default: the joint rule's choice)", kind="float",
                 minimum=1e-6, maximum=10.0)


def _steps() -> Any:
    return param(DEFAULT_STEPS, "Adam steps of the cross-entropy fit", kind="int", minimum=1, maximum=20_000)


def _weight_decay() -> Any:
    return param(DEFAULT_WD, "L2 weight decay of the cross-entropy fit", kind="float", minimum=0.0, maximum=1.0,
                 name="weight-decay")


def _selection() -> Any:
    """--selection, for statements that allow any selection rule (choices: the engine's SELECTIONS)."""
    return param("ce", "selection rule at L0: ce (cross-entropy, Adam) or min-norm (minimum ||W||_F with margin >= 1 "
                 "on every L0 row)", choices=SELECTIONS)


def _fit_kw(p: Mapping[str, Any]) -> dict[str, Any]:
    """The fit settings of a claim's parameters, as keyword arguments of verify.numeric.pr26.fit."""
    kw = {"lr": p["lr"], "steps": p["steps"], "weight_decay": p["weight-decay"]}
    if "selection" in p:
        kw["selection"] = p["selection"]
    return kw


TRIG = ("Trigonometric features (sinusoidal, RoPE) enter z3 as rationals rounded to the nearest multiple of 2^-40 "
        "(mpmath, 50 digits); a solver answer is exact for the rounded map, and SAT witnesses are also re-checked on "
        "the true features in float64. Integer and one-hot features are exact.")


def _fam(name: str):
    from verify.constructions import pe

    return pe.FAMILIES[name]


# ------------------------------------------------------------------ prop1

@dataclass(frozen=True)
class Prop1Params(Params):
    """Options of pr26:prop1 (typed; the flags --N and --n)."""

    N: int = param(64, "largest length n of the solver layer (n = 3..N; N <= 131072: past the first certified "
                   "length each n is carried by an exact row-inclusion check, about 0.06 ms each, 8 s at the cap; a "
                   "family whose certificate does not carry is solved per length, O(n^2) rows each)", kind="int",
                   minimum=3, maximum=131072)
    n: int = param(256, "length of the numeric random-W search", kind="int", minimum=3, maximum=4096)

    sizes = SIZES["prop1"]


def _p1_sym(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import pr26 as sym

    return sym.check_prop1([_fam("affine"), _fam("alibi")])


def _p1_sol(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.solver import pr26 as sol

    return sol.check_prop1(_fam("affine"), p["N"], ctx.timeout_ms)


def _p1_num(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import pr26 as num

    size = SIZES["prop1"]
    return num.check_prop1(_fam("affine"), p["n"], ctx.seed, samples=ctx.size(size["samples"]),
                           opt_lengths=ctx.size(size["opt_lengths"]))


def _p1_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = ["Every logit row of phi(i) = [1, i] is affine in the key j, so the masked maximiser is j = 0, j = i, or a tie: "
           "prev (paper rows i >= 3, code rows i >= 2) is unrealizable for every W at every n >= 3, and ALiBi's "
           "a - m delta is affine in delta, so canonical ALiBi has alpha_L = 0 on prev."]
    sol = next((e for e in evs if e.layer == "solver" and e.numbers), None)
    if sol is not None:
        out.append(f"Solver: {sol.numbers['answers']} over n = 3..{sol.numbers['n_reached']} (z3 time in the solver "
                   f"evidence); the quadratic control answered {sol.numbers['control_answer'].upper()}.")
    out.append("Ties decide this statement: the best an interior key can do is tie an endpoint (a constant row, margin "
               "exactly 0), and a tie is a failure. Each layer exercises that case: the symbolic layer computes the "
               "constant row's margin, the numeric layer decides near-flat rows exactly (float64 alone would pass some "
               "of them), and every layer carries a positive control with quadratic features [1, i, i^2], where interior "
               "maxima exist and must be found.")
    return out


PROP1 = Claim(
    id="pr26:prop1",
    title="affine features can only pick an endpoint (prev unrealizable)",
    source=SOURCE + ", Proposition 1",
    statement=("With phi(i) = [1, i] each logit row is affine in the key index j, so the unique masked maximiser is "
               "j = 1, j = i (paper's 1-indexing) or there is a tie; hence prev is unrealizable at every length n >= 3 "
               "for every W, and canonical ALiBi has alpha_L = 0 on prev."),
    quantifiers=("for every W and every length n >= 3: prev is unrealizable with phi(i) = [1, i]",
                 "symbolic: every n (affine rows); solver: an LP at n = 3 with a Farkas certificate whose rows recur "
                 "at every n <= 64; kernel: every n; numeric: fitted heads"),
    options=(),
    params_type=Prop1Params,
    checks={"symbolic": _p1_sym, "solver": _p1_sol, "numeric": _p1_num},
    expected={"": "HOLDS"},
    caveats=(RECONSTRUCTED, "Solver layer: bounded n = 3..N; margin >= 1 is equivalent to a strict argmax by scaling W "
             "(the constraints are homogeneous)."),
    explain=_p1_explain,
    cost="symbolic < 1 s; solver ~0.1 s (one LP at n = 3 with its Farkas certificate; the certificate's rows are "
         "found exactly in the system of every n <= 64, no solver) plus the quadratic control; numeric ~1 s (500 random W "
         "at n = 256, fits at 64 and 256, 152 near-flat rows decided exactly, a quadratic control); --full: 4000 W and "
         "a fit at 1024",
)


# ------------------------------------------------------------------ theorem2

@dataclass(frozen=True)
class Theorem2Params(Params):
    """Options of pr26:theorem2: the skip-K task, the numeric training length, the fit settings."""

    K: int = param(3, "the skip-K task checked alongside prev", kind="int", minimum=1, maximum=7)
    L0: int = param(20, "training length of the numeric layer", kind="int", minimum=4, maximum=256)
    lr: float = _lr()
    steps: int = _steps()
    weight_decay: float = _weight_decay()
    selection: str = _selection()

    sizes = SIZES["theorem2"]


def _t2_sym(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import pr26 as sym

    return sym.check_theorem2(p["K"])


def _t2_sol(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.solver import pr26 as sol

    lengths = ctx.size(SIZES["theorem2"]["solver_lengths"])
    return sol.check_theorem2(lengths, p["K"], ctx.timeout_ms, family=_fam("free-relative"),
                              extra_families=(_fam("rope"), _fam("alibi")))


def _t2_num(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import pr26 as num

    L0 = p["L0"]
    size = SIZES["theorem2"]
    Ls = tuple(L0 * f for f in ctx.size(size["length_factors"]))
    return num.check_theorem2([_fam("rope"), _fam("alibi"), _fam("free-relative")], L0, Ls, p["K"], ctx.seed,
                              horizon=ctx.size(size["horizon"]), fit_kw=_fit_kw(p))


def _t2_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = ["Condition (ii) as encoded in the solver: k has a strict unique global maximiser delta* over offsets 0..L-1 "
           "and delta* < L0 (deep rows exist at both lengths). With the maximiser taken over 0..L-1 alone the last row at "
           "L always sees every offset, so any kernel realizing copy at L has one; the deep-row reading is what makes "
           "the condition bite (a reconstruction: the full text was not reachable).",
           "Numeric layer: the statement is checked on kernels whose hypothesis is verified at each length (a strict "
           "unique global maximiser over the offsets that occur): constructed kernels w = psi(delta) peaked at delta, and "
           "fitted heads at the lengths where their own peak is unique. A fitted head is selection, not existence: "
           "where its peak moves to an untrained offset the theorem promises nothing, and its first failing length "
           "is a finding."]
    sol = next((e for e in evs if e.layer == "solver" and e.numbers), None)
    if sol is not None and "reverse_without_condition" in sol.numbers:
        out.append("Stronger than stated: reverse is UNSAT even without (ii) at "
                   f"{sol.numbers['lengths']} ({sol.numbers['reverse_without_condition']}): no relative kernel realizes "
                   "reverse at a single length L >= 8 (rows L/2 and L/2 + 1 demand opposite orders of k(1), k(3)).")
    num = next((e for e in evs if e.layer == "numeric" and e.numbers), None)
    if num is not None:
        for fam, d in num.numbers["alpha"].items():
            out.append(f"{fam} (fitted heads): " + "; ".join(f"{t} {v}" for t, v in d.items())
                       + f" at L = {num.numbers['L']}")
        for ff in num.numbers.get("fitted_extrapolation", []):
            if ff.get("first_failing_length") is not None:
                ds = ff["delta_star_trained"]
                out.append(f"Extrapolation finding: the {ff['family']} head fitted on {ff['task']} at L0 = "
                           f"{num.numbers['L0']} first fails at L = {ff['first_failing_length']} (row "
                           f"{ff['failing_row_paper']} attends to key {ff['argmax_key_paper']} instead of "
                           f"{ff['target_key_paper']}, paper's 1-indexing): its kernel's global peak moves from offset "
                           f"{ds} to offset {ff['hypothesis_break_offset']}, outside the trained window. The theorem's "
                           f"hypothesis with delta* = {ds} no longer holds there, so this is no counterexample; a kernel "
                           f"peaked at {ds} that keeps its unique peak at every checked length exists (w = psi({ds}), "
                           "checked).")
    out.append("Controls: copy's and reverse's failures are read next to heads that realize them at one length (a RoPE "
               "kernel peaked at ceil(L/2) at an odd L, where ceil and floor differ; a one-hot absolute head with "
               "W[a, L-1-a] = 1; in the solver, one-hot absolute features SAT on reverse), and a kernel with two equal "
               "maxima (offsets 1 and K) must be rejected by the hypothesis check and fail prev and skip-K on every row "
               "by an exact tie.")
    return out


THEOREM2 = Claim(
    id="pr26:theorem2",
    title="relative heads: fixed offsets transfer, growing offsets cannot",
    source=SOURCE + ", Theorem 2",
    statement=("For a relative kernel k(delta) with a strict unique global maximiser delta*, every deep row (window "
               "covering delta*) attends to offset delta*; so prev and skip-k are realizable at every length by a kernel "
               "peaked at k, while copy (offset ceil(L/2)) and reverse (offset varying within a length) fail on a "
               "non-vanishing fraction of rows; without condition (ii) a free relative kernel can realize copy at two "
               "given lengths."),
    quantifiers=("for every relative kernel with a strict unique maximiser and every length: deep rows attend to "
                 "delta*; there exists a kernel for prev and skip-k, none for copy and reverse at every length",
                 "symbolic: every length; solver: 42 LPs at bounded lengths; numeric: 12 fits at L0 = 20, L <= 12 L0; "
                 "kernel: every kernel and length"),
    options=(),
    params_type=Theorem2Params,
    checks={"symbolic": _t2_sym, "solver": _t2_sol, "numeric": _t2_num},
    expected={"": "HOLDS"},
    caveats=(RECONSTRUCTED, TRIG, FIT, "Solver layer: bounded (L0, L) pairs with L >= 2 L0; condition (ii) "
             "reconstructed as 'strict unique global maximiser delta* < L0' (full text not reachable; see findings).",
             "Numeric layer: the hypothesis is checked in float64 (gap > 1e-9 x max|k|); alpha_L are exact row counts."),
    explain=_t2_explain,
    cost="symbolic < 1 s; solver ~2 s (42 LPs + rope/alibi prev + the reverse control); numeric ~2 s (4 constructed "
         "kernels, 12 fits at L0 = 20, L up to 12 L0, fitted prev/skip heads scanned to L = 2048, copy/reverse/tie "
         "controls ~0.4 s); --full: a third length pair, L up to 50 L0, scans to 4096 (~8 s numeric)",
)


# ------------------------------------------------------------------ theorem1

@dataclass(frozen=True)
class Theorem1Params(Params):
    """Options of pr26:theorem1 (typed; the flags --L0 and --L)."""

    L0: int = param(20, "training length of the numeric property check", kind="int", minimum=2, maximum=256)
    L: int = param(64, "evaluation length of the numeric property check", kind="int", minimum=3, maximum=4096)

    sizes = SIZES["theorem1"]


def _t1_validate(p: Mapping[str, Any]) -> None:
    if p["L"] <= p["L0"]:
        raise InputError(f"--L {p['L']} must exceed --L0 {p['L0']}")


def _t1_sym(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.constructions import pe
    from verify.symbolic import pr26 as sym

    return sym.check_theorem1(families=list(pe.FAMILIES.values()), seed=ctx.seed)


def _t1_num(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.constructions import pe
    from verify.numeric import pr26 as num

    tasks = [pe.get_task(t) for t in ("prev", "skip-3", "attend-first")]
    return num.check_theorem1(list(pe.FAMILIES.values()), tasks, p["L0"], p["L"], ctx.seed,
                              draws=ctx.size(SIZES["theorem1"]["draws"]))


THEOREM1 = Claim(
    id="pr26:theorem1",
    title="sufficiency and the causal-mask block identity",
    source=SOURCE + ", Theorem 1",
    statement=("Rows below L0 see identical logits at both lengths (the top-left L0 x L0 block of P_L(W) is P_L0(W)), so "
               "if the fitted W solves L0 with margin g0 and alpha_L = 1 with margin gL on new rows, it solves L with "
               "margin min(g0, gL)."),
    quantifiers=("for every W, L0 <= L: the block identity, and margin min(g0, gL) on L",
                 "symbolic: symbolic L0, L; numeric: random parameters, 7 families x 3 tasks; kernel: every size"),
    options=(),
    params_type=Theorem1Params,
    checks={"symbolic": _t1_sym, "numeric": _t1_num},
    expected={"": "HOLDS"},
    validate=_t1_validate,
    caveats=(RECONSTRUCTED, "The margin statement needs length-stable targets (t_L(i) = t_L0(i) for i < L0: prev, skip-K, "
             "attend-first); copy and reverse move their targets with L, so old rows may change verdict."),
    cost="symbolic < 1 s; numeric ~2 s (random parameters, 7 families x 3 tasks)",
)

CLAIMS = [PROP1, THEOREM2, THEOREM1]


# ------------------------------------------------------------------ the paper's figures (Props. 2-4)
# Published numbers are Figures on the evidence of the layer that computed them (Evidence.figures).


# prop2

@dataclass(frozen=True)
class Prop2Params(Params):
    """Options of pr26:prop2: the Monte-Carlo size, the second length, the fit settings."""

    trials: int = param(24000, "Monte-Carlo trials at L = 30 (a longer L gets trials x 30 / L; fresh untrained features "
                        "each)", kind="int", minimum=200, maximum=400_000, full=Times(4))
    fits: int = param(5, "fitted heads (fit seeds seed..seed+fits-1) the trials are spread over", kind="int", minimum=1,
                      maximum=50)
    L: int = param(60, "the second length (the first is the published L = 30)", kind="int", minimum=23, maximum=1024)
    lr: float = _lr()
    steps: int = _steps()
    weight_decay: float = _weight_decay()
    selection: str = _selection()

    sizes = SIZES["prop2"]


def _p2_num(p: Prop2Params, ctx: Context) -> Evidence:
    from verify.numeric import pr26_figures as fig
    from verify.numeric.pr26 import LR_GRID

    trials = p.profiled("trials", ctx)
    band = LR_GRID if ctx.size(SIZES["prop2"]["lr_band"]) and p["selection"] == "ce" else ()
    return fig.check_prop2((30, p["L"]), 20, trials, ctx.seed, p["fits"], fit_kw=_fit_kw(p), sens_lrs=band)


def _p2_validate(p: Mapping[str, Any]) -> None:
    if p["trials"] < p["fits"]:
        raise InputError(f"--trials {p['trials']} must be at least --fits {p['fits']}")


#: measured effect of --full on the resolution (seed 0, 5 fits; see _p2_resolution)
PROP2_FULL_NOTE = ("; measured at seed 0: with --full the L = 30 interval [0.1084, 0.1214] excludes 1/k = 0.1000 and "
                   "1/(k-2) = 0.1250, but the L = 60 interval [0.0218, 0.0278] still contains 1/k = 0.0250 and "
                   "1/(k-2) = 0.0263 (k = 40: neighbours 4% apart need far more trials)")


def _p2_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = ["k = L - L0 = the number of untrained key positions visible to the query row i = L - 1 (positions L0..L-1, "
           "the query's own included); the prediction 1/(k-1) is for the winner among the k - 1 new keys other than the "
           "query, which are exchangeable (i.i.d. N(0, I/L0) features independent of the fitted W), one of which is the "
           "target i - 1. Task prev, head fitted at L0 = 20 by the engine protocol; each trial redraws the untrained "
           "features. The self key (j = i) is counted apart; it almost never wins (both conditional rates are in the JSON)."]
    out += _p2_resolution(evs)
    return out


def _p2_resolution(evs: Sequence[Evidence]) -> list[str]:
    """A finding when the decision intervals also admit a neighbouring chance formula (1/k or 1/(k-2)):
    the check then cannot tell 1/(k-1) from an off-by-one in k at this sample size."""
    out = []
    for ev in evs:
        runs = (ev.numbers or {}).get("runs") if isinstance(ev.numbers, Mapping) else None
        if not runs:
            continue
        admitted = []
        for r in runs:
            lo, hi = r["conditional_hit_rate_nonself_ci_decision"]
            k = r["k"]
            alts = [(name, v) for name, v in (("1/k", 1 / k), ("1/(k-2)", 1 / (k - 2) if k > 2 else None))
                    if v is not None and lo <= v <= hi]
            if alts:
                admitted.append(f"at L = {r['L']} (k = {k}) the interval [{lo:.4f}, {hi:.4f}] also contains "
                                + " and ".join(f"{n} = {v:.4f}" for n, v in alts))
        if admitted:
            out.append("Resolution (finding): this check cannot distinguish 1/(k-1) from its neighbours at this sample "
                       "size: " + "; ".join(admitted) + ". An off-by-one in k would pass unnoticed. The verdict says "
                       "the data are consistent with 1/(k-1), not that they single it out; --full (4x the trials) "
                       "halves the interval widths" + PROP2_FULL_NOTE + ".")
    return out


PROP2 = Claim(
    id="pr26:prop2",
    title="learned absolute PEs extrapolate at chance",
    source=SOURCE + ", Proposition 2 and its Monte Carlo",
    statement=("For a selection rule that depends only on trained rows, when the winner is a new key it hits the target "
               "with probability 1/(k-1); Monte Carlo at L = 30: conditional hit rate 0.115 against 1/(k-1) = 0.111, "
               "unconditional 0.034, winner among new keys 30% of the time; at L = 60: 0.025 against 0.026, "
               "unconditional 0.016, 65%. A rescuing W exists with probability roughly 20-35% in the Monte Carlo."),
    quantifiers=("for a selection rule depending only on trained rows: hit rate 1/(k-1) given a new-key winner",
                 "numeric: Monte Carlo at L = 30 and 60 (24000 and 12000 trials); the competing rate 1/(k-2) is a "
                 "negative control that the L = 30 interval must reject (90% power, sized before the run)"),
    options=(),
    params_type=Prop2Params,
    checks={"numeric": _p2_num},
    expected={"": "HOLDS"},
    validate=_p2_validate,
    caveats=(RECONSTRUCTED, FIT, "k and the Monte-Carlo protocol are reconstructed (full text not reachable): the "
             "published 1/(k-1) = 0.111 at L = 30, "
             "L0 = 20 fixes k = 10 = L - L0 (the last row's untrained keys, itself included). The verdict is about the "
             "conditional rate; the unconditional rate and the new-winner fraction depend on the fitted W and the scale "
             "of the untrained features (reported against the paper, not judged).",
             "Statistics: Wilson intervals; the verdict uses 97.5% per length (Bonferroni over L = 30 and the second L). "
             "Negative control: the competing rate 1/(k-2) (an off-by-one in k) must lie outside the L = 30 interval, "
             "else the check could not have told the two apart and the verdict is INCONCLUSIVE. The --trials default "
             "(24000) was sized before the run for 90% power to reject 1/(k-2) at the event rate 0.29 of the earlier "
             "8000-trial runs (stats.events_for_power: 6599 events); the exact power at the run's events is printed. "
             "At L = 60 (k = 40) 1/(k-1) and 1/(k-2) need ~690 000 events: reported, not required. Not a "
             "confirmatory decision: the control and the 24000-trial default were added on 2026-12-06 and decided at "
             "seed 0, whose first trials the 8000-trial runs had shown; no protocol is frozen for this claim.",
             FIGURE_RULES_TEXT + " 'A rescuing W exists with probability roughly 20-35%' is listed as not computed: the "
             "summary does not say what a rescue may change or must achieve (its reason is in the figure's note)."),
    explain=_p2_explain,
    cost="numeric ~5 s (5 fits at L0 = 20; 24000 trials at L = 30, 12000 at L = 60); --full: 4x the trials and a "
         "learning-rate band at L = 30 (11 rates x 2000 trials, ~+6 s)",
)


# prop3

@dataclass(frozen=True)
class Prop3Params(Params):
    """Options of pr26:prop3: the copy length, the evaluation chunk, the fit settings (cross-entropy only)."""

    L: int = param(17665, "length of the copy check with the kernel sin(delta theta_min) (paper: 17665)", kind="int",
                   minimum=21, maximum=40_000)
    chunk: int = param(512, "rows per chunk of the numeric evaluation (memory ~ chunk x L x 8 bytes x a few)",
                       kind="int", minimum=16, maximum=4096)
    lr: float = _lr()
    steps: int = _steps()
    weight_decay: float = _weight_decay()

    sizes = SIZES["prop3"]


def _p3_validate(p: Mapping[str, Any]) -> None:
    need = 8 * p["chunk"] * p["L"] * 6
    if need > 4 * 2**30:
        raise InputError(f"--chunk {p['chunk']} x --L {p['L']} needs ~{need / 2**30:.1f} GiB per chunk; lower --chunk")


def _p3_sym(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import pr26_figures as sf

    return sf.check_prop3(p["L"])


def _p3_num(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import pr26_figures as fig
    from verify.numeric.pr26 import LR_GRID

    size = SIZES["prop3"]
    seeds = tuple(range(ctx.seed, ctx.seed + ctx.size(size["sensitivity_seeds"])))
    return fig.check_prop3(p["L"], 20, ctx.size(size["lengths"]), ctx.seed, sens_seeds=seeds, sens_lrs=LR_GRID,
                           chunk=p["chunk"], fit_kw=_fit_kw(p), min_norm=ctx.size(size["min_norm"]))


def _p3_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = ["Existence: W[sin_15, cos_15] = 1, W[cos_15, sin_15] = -1 gives the sinusoidal logits sin((i - j) theta_min); "
           "its strict unique maximiser over offsets 0..L-1 is proved by interval arithmetic, so it realizes copy at "
           "L = 17665. Selection: the L0-fit on prev does not find a transferring head (alpha_60 < 1). Verdict = both."]
    num = next((e for e in evs if e.layer == "numeric" and e.numbers), None)
    mn = (num.numbers.get("min_norm") if num is not None else None) or {}
    if "alpha" in mn:
        out.append(f"Min-norm selection (finding): the minimum-||W||_F head with margin >= 1 at L0 has alpha_60 = "
                   f"{mn['alpha']:.3f} on prev: the statement's 'the L0-fit does not select it' is about the "
                   "cross-entropy fit; the min-norm rule " + ("does select a transferring head." if mn["alpha"] == 1
                                                               else "does not transfer either."))
    return out


PROP3 = Claim(
    id="pr26:prop3",
    title="sinusoidal: existence is not selection",
    source=SOURCE + ", Proposition 3",
    statement=("A kernel realizing any fixed offset exists at all lengths, yet the L0-fit does not select it: prev under "
               "sinusoidal has alpha_60 = 0.45 and alpha_128 = 0.34; with theta_min = 10000^(-15/16), delta -> "
               "sin(delta theta_min) increases "
               "up to delta = 8833, and at L = 17665 (copy offset ceil(L/2) = 8833) that kernel has alpha_L = 1."),
    quantifiers=("there exists a kernel for every fixed offset at all lengths; the L0-fit does not select it",
                 "symbolic: 17664 sines in arb balls (the monotone range, exact); numeric: 12 fits, alpha at L = "
                 "17665; kernel: the monotone range"),
    options=(),
    params_type=Prop3Params,
    checks={"symbolic": _p3_sym, "numeric": _p3_num},
    expected={"": "HOLDS"},
    validate=_p3_validate,
    caveats=(RECONSTRUCTED, "Maximiser: python-flint arb balls (40 digits), a proof over the integers 0..L-1; the "
             "numeric layer evaluates alpha_L at full size in float64 (strict argmax, ties fail) and reports its "
             "smallest margin (~8e-9) against the stated float64 rounding bound of a logit (~8e-12); rows within four "
             "times that bound of a tie would be re-decided by interval arithmetic (none are).",
             "alpha_60 = 0.45 is a property of the paper's fit; ours uses the engine protocol (Adam, the jointly chosen "
             "learning rate, 400 steps, weight decay 1e-4, N(0, 0.02^2) init), never tuned to this one number; the "
             "band over the 11 learning rates of the fixed grid is reported (x 5 seeds with --full).", FIT,
             FIGURE_RULES_TEXT),
    explain=_p3_explain,
    cost="symbolic < 0.5 s (17664 sines in arb balls); numeric ~6 s (alpha at L = 17665 at full size ~4 s, 12 fits); --full: "
         "the fitted head also at L = 1024, 2048, the band over 5 seeds, the min-norm head (~+8 s)",
)


# prop4

@dataclass(frozen=True)
class Prop4Params(Params):
    """Options of pr26:prop4: the skip-K task of the relative row, the fit settings (cross-entropy only)."""

    K: int = param(3, "the skip-K task of the relative row", kind="int", minimum=1, maximum=7)
    lr: float = _lr()
    steps: int = _steps()
    weight_decay: float = _weight_decay()

    sizes = SIZES["prop4"]


def _p4_sym(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.symbolic import pr26_figures as sf

    return sf.check_prop4_clamped_tie(20, 64)


def _p4_num(p: Mapping[str, Any], ctx: Context) -> Evidence:
    from verify.numeric import pr26_figures as fig
    from verify.numeric.pr26 import LR_GRID

    size = SIZES["prop4"]
    Ls = fig.PROP4_TABLE_LENGTHS + ctx.size(size["extra_lengths"])
    seeds = tuple(range(ctx.seed, ctx.seed + ctx.size(size["sensitivity_seeds"])))
    return fig.check_prop4(20, Ls, p["K"], ctx.seed, sens_seeds=seeds, sens_lrs=LR_GRID, fit_kw=_fit_kw(p),
                           horizon=ctx.size(size["horizon"]), min_norm=ctx.size(size["min_norm"]))


def _p4_explain(p: Mapping[str, Any], evs: Sequence[Evidence]) -> list[str]:
    out = ["Taxonomy checked: relative families with an interior peak (RoPE, free relative) transfer prev/skip-K "
           "(alpha_L = 1); clamped absolute transfers attend-first (1) but not prev (0: key i repeats the target's "
           "clamped feature, an exact tie for every W); free relative fails attend-first (0: untrained offsets); RoPE "
           "on attend-first decays with L. ALiBi is relative but affine (Prop. 1): prev 0, not part of the '1' row.",
           "Clamped prev, both facts: the paper's margin 0 is the forced tie between the target i - 1 and key i (proved "
           "for a symbolic W); in the engine's fit another key can win outright, so the measured margin may be "
           "negative, not 0 (the numeric details give the key and the margin).",
           "Read over the paper's table lengths L = 30..512. A fitted relative head is selection: its alpha_L = 1 beyond "
           "the table is not promised by the existence result (Theorem 2), so longer L (--full) and each fitted "
           "relative head's first failing length are findings."]
    num = next((e for e in evs if e.layer == "numeric" and e.numbers), None)
    if num is not None:
        out += [d for d in num.details if d.startswith(("finding", "beyond", "min-norm"))]
    return out


PROP4 = Claim(
    id="pr26:prop4",
    title="absolute/relative duality (the taxonomy)",
    source=SOURCE + ", Proposition 4 and its table",
    statement=("Relative families: alpha_L = 1 for prev and skip-k. Clamped learned absolute: attend-first 1.00, prev "
               "0.00 (an exact tie, margin 0). Relative on attend-first: 0.00. RoPE on attend-first decays: 0.80 at "
               "L = 30, 0.40 at 40, 0.20 at 60, 0.12 at 128, 0.055 at 256, 0.039 at 512."),
    quantifiers=("for each (family, task) cell: the printed alpha_L values",
                 "numeric: 9 fits + 11 learning-rate fits at L up to 512 (the learning rate fitted on a declared "
                 "subset, scored on the rest); symbolic: the exact ties"),
    options=(),
    params_type=Prop4Params,
    checks={"symbolic": _p4_sym, "numeric": _p4_num},
    expected={"": "HOLDS"},
    caveats=(RECONSTRUCTED, FIT, "L0 = 20; 'relative on attend-first' is checked with the free relative family (RoPE on "
             "attend-first is the decaying row). The table's lengths are taken as 30, 40, 60, 128, 256, 512 (the lengths "
             "the summary names); full text not reachable. The verdict reads 'decays' (non-increasing in L, lower at "
             "512 than at 30); the six printed RoPE values are figures.", FIGURE_RULES_TEXT + " The printed RoPE "
             "attend-first 0.12, 0.055, 0.039 allow 13/108, 13/236, 19/492 rows; the default fit passes one row more "
             "at each (the lower edge of the band of rows where its kernel returns to key 0), counted by the same rule "
             "(new rows i in [L0, L), strict argmax at key 0, ties fail); the figure notes give the rows and margins "
             "and the learning rates whose fit meets the printed values."),
    explain=_p4_explain,
    cost="symbolic < 1 s; numeric ~3 s (9 fits + 11 learning-rate fits, L up to 512, relative heads scanned to "
         "L = 1024); --full: L = 1024, 2048 as findings, 5 seeds per learning rate, scans to 4096, min-norm heads",
)

CLAIMS += [PROP2, PROP3, PROP4]


from verify.proofs.pr26.trained import CLAIMS as TRAINED_CLAIMS  # noqa: E402  (heavy claims about trained models)

CLAIMS += TRAINED_CLAIMS

#: this paper as a plugin (the registry reads it; see :class:`verify.core.model.Paper`)
PAPER = with_kernel_layer(Paper(
    key="pr26", title="A Positional Realizability Theory of Length Generalization in Single-Head Attention (TMLR 2026)",
    claims=tuple(CLAIMS), plotters={"pr26:*": plots.alpha_vs_L}, api=alpha))
