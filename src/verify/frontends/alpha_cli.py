"""``verify alpha`` and ``verify realizable``: pr26's positional-only head, for a PE designer.

    verify alpha (--pe NAME | --pe MODULE:CALLABLE | --pe-features EXPRS) (--task NAME | --target EXPR [--rows EXPR])
                 [--L0 N] [--L N] [--W FILE] [--slope M] [--base B] [--frequencies F]
                 [--rope-scaling linear|dynamic|yarn|llama3 --factor F [--original-max-position N]
                  [--beta-fast B --beta-slow B] [--low-freq-factor X --high-freq-factor X]]
                 [--selection ce|min-norm] [--lr X] [--steps N] [--weight-decay X] [--seed S]
                 [--min-margin G] [--min-mass P] [--require-alpha X] [--identifiability] [--plots DIR]
                 [--format text|json]
    verify alpha (--pe ... | --pe-features EXPRS) --tasks all|T1,T2,... [--up-to N] [--budget S] [--L0 N] ...
    verify realizable (--pe ... | --pe-features EXPRS) (--task NAME | --target EXPR) --L N [--margin G]
                 [--certificates DIR] [--timeout S] [--budget S] [--plots DIR] [--format text|json]

``verify alpha`` prints alpha_L (the fraction of new query rows i in [L0, L) whose strict causal
masked argmax is the target t_L(i); exact ties fail), the margins on the old rows (g0) and new rows
(gL), the softmax mass on the target (min and mean over the new rows), a ``weak`` flag when the
smallest new-row margin is below --min-margin or the mass below --min-mass (alpha stays the argmax
fraction: a near-uniform kernel can have alpha 1 with almost no mass on the target), the first
failing rows (paper's 1-indexed rows in brackets) and a summary of the head.  The head is fitted at
L0 (cross-entropy with Adam, or min-norm), read from --W, or fixed (alibi-fixed).  Decisions are
exact: in Fractions when the features are exact and the size allows, else float64 with every near
tie re-decided exactly or by interval arithmetic.  --identifiability adds the rank and null space of
Phi_L0 and the range of alpha_L over every parameter with the same L0 logits.

Exit codes of ``verify alpha``: 0 measured (and, with --require-alpha X, alpha >= X and not weak);
1 --require-alpha X given and alpha < X or the head is weak; 2 bad input, refused in one line on
stderr before any work (built-in families before torch is imported: unknown family/task, L <= L0,
L0 < 2, sizes too large, --seed outside 0..2^31-1, --lr outside [MIN_LR, MAX_LR], --steps outside
1..MAX_STEPS, --weight-decay outside [0, MAX_WEIGHT_DECAY], a refused expression, module or file);
3 inconclusive, one line on stderr (and a JSON document with ``"outcome": "inconclusive"`` and
``"alpha": null`` under --format json): no head to measure, because the cross-entropy fit ended with
a non-finite loss or parameter, or the min-norm head could not be certified.  A diverged fit is
never reported as a measured alpha.

``verify alpha --tasks`` answers the designer's question per task: the largest length up to which the
fitted head generalizes (selection: alpha_L of the head the fit picks) and up to which some head does
(existence: ``verify realizable``), one flushed line per decision.

Exit codes of ``verify realizable``: 0 realizable at every length 2..N (a parameter re-checked in
exact rationals); 1 not realizable from some length on (a Farkas certificate checked without a
solver); 2 bad input; 3 inconclusive (a solver timeout, an unchecked answer, --budget spent);
130 interrupted (what was decided so far is printed).

Source: pr26 (TMLR 2026), the fit/transfer protocol and the realizability programme (full text not
reachable; reconstructed).
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import click

from verify.core import registry
from verify.core.model import InputError
from verify.numeric.pr26_sizes import SELECTIONS

EXIT_INCONCLUSIVE = 3

SCHEMA = "verify-alpha/1"


def _inconclusive(fmt: str, pe: str, task: str, L0: int, L: int, seed: int, reason: str, message: str,
                  fit: dict) -> None:
    """Report a run with no head to measure: one line on stderr (JSON on stdout with --format json), exit 3."""
    from verify.core.inputs import clip

    if fmt == "json":
        from verify.evidence import to_jsonable

        doc = {"schema": SCHEMA, "pe": pe, "task": task, "L0": L0, "L": L, "seed": seed,
               "outcome": "inconclusive", "reason": reason, "message": message, "alpha": None, "fit": fit}
        click.echo(json.dumps(to_jsonable(doc), indent=2))
    click.echo(f"verify: inconclusive: {clip(' '.join(message.split()), 400)}", err=True)
    raise click.exceptions.Exit(EXIT_INCONCLUSIVE)


def _f(x: float) -> str:
    return "nan" if isinstance(x, float) and math.isnan(x) else f"{x:.6g}"


_PE_HELP = ("PE: affine, alibi (learned slope), alibi-fixed (with --slope), learned-absolute, clamped-absolute, "
            "sinusoidal, rope (both with optional --base/--frequencies), free-relative, nope (no positional "
            "information), or MODULE:CALLABLE, a Python function f(positions: LongTensor[n]) -> Tensor[n, k] "
            "(this imports and runs your module: opt in only for code you trust)")
_FEAT_HELP = ("a custom feature map: comma-separated expressions in the position i (absolute, e.g. \"1, i, i**2\") "
              "or in the offset d (relative kernel, e.g. \"cos(d/8), sin(d/8)\"); numbers, + - * / ** and sin cos "
              "exp log sqrt Abs floor ceiling Min Max Rational pi E; parsed, never executed")


def _pe_options(fn):
    for opt in reversed([
        click.option("--pe", "pe_name", default=None, help=_PE_HELP),
        click.option("--pe-features", "pe_features", default=None, help=_FEAT_HELP),
        click.option("--slope", default=None, help="alibi-fixed: the fixed slope M (bias -M (i - j)), e.g. 1/2"),
        click.option("--base", default=None, help="sinusoidal/rope: theta_k = BASE^(-k/F) [default: 10000]"),
        click.option("--frequencies", type=int, default=None, help="sinusoidal/rope: the number F of frequencies "
                     "[default: 16]"),
        click.option("--task", "task_name", default=None, help="task: prev, skip-K (e.g. skip-3), attend-first, copy, "
                     "reverse (or --target)"),
        click.option("--target", default=None, help="custom task: the target key as an expression in the query row i "
                     "and the length L, e.g. \"i - 1\" or \"floor(i/2)\""),
        click.option("--rows", default=None, help="custom task: its first query row as an expression in L "
                     "[default: the first row whose target lies in 0..i]"),
        click.option("--user-timeout", "user_timeout", type=float, default=60.0, show_default=True,
                     help="--pe MODULE:CALLABLE: time limit in seconds on the user's code (its import and every call "
                     "together); its exits and exceptions are refused in one line, its prints go to stderr"),
    ]):
        fn = opt(fn)
    return fn


@click.command("alpha", epilog="Exit codes: 0 measured (with --require-alpha: alpha >= X and not weak); 1 "
               "--require-alpha not met (alpha < X, or the head is weak); 2 bad input (one line, before any work); 3 "
               "inconclusive (no head to measure: a diverged fit or an uncertified min-norm head; with --tasks: some "
               "length undecided, e.g. --budget ran out); 130 interrupted (with --tasks: what was decided so far is "
               "printed).  Limits: L0 <= 2048, L <= 1048576 and about 4 GiB of float64 work; --up-to <= 131072 with "
               "one exact realizability check at --up-to within about 4.3e9 multiply-adds (see verify realizable "
               "--help).  --tasks runs the designer's question: per task, the largest length the fitted head "
               "generalizes to (selection, alpha_L) and the largest some head does (existence, as verify "
               "realizable), printed as decided.")
@_pe_options
@click.option("--tasks", "tasks", default=None, help="the designer's question for several tasks at once: 'all' (prev, "
              "skip-3, attend-first, copy, reverse) or a comma-separated list; with --up-to, instead of --task/--L")
@click.option("--up-to", "up_to", type=int, default=None, help="with --tasks: the largest length asked (fitted head "
              "measured at 2 L0, 4 L0, ..., up to it; existence decided at every length up to it) [default: 4096]")
@click.option("--budget", "budget_s", type=float, default=None, help="with --tasks: total seconds; what is undecided "
              "when it runs out is INCONCLUSIVE, never a pass")
@click.option("--L0", "L0", type=int, default=20, show_default=True, help="training length")
@click.option("--L", "L", type=int, default=64, show_default=True, help="evaluation length (> L0)")
@click.option("--W", "W", default=None, help="the head's parameter from a file instead of a fit: .npy (no pickle), "
              ".pt (torch.load weights_only) or .json (nested lists of exact rationals \"p/q\"); shape r x r "
              "(absolute) or r (relative)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the init and of untrained features")
@click.option("--lr", type=float, default=None, help="Adam learning rate of the ce fit [default: the engine's LR, "
              "chosen by the joint rule over the published figures]")
@click.option("--steps", type=int, default=400, show_default=True, help="Adam steps of the ce fit")
@click.option("--weight-decay", "weight_decay", type=float, default=1e-4, show_default=True,
              help="L2 weight decay of the ce fit")
@click.option("--selection", type=click.Choice(list(SELECTIONS)), default="ce", show_default=True,
              help="ce: regularised cross-entropy (Adam); min-norm: minimum ||W||_F with margin >= 1 on every L0 row")
@click.option("--min-margin", "min_margin", type=float, default=None,
              help="flag the head weak when its smallest new-row margin is below this (logit units) [default: 0.01]")
@click.option("--min-mass", "min_mass", type=float, default=None,
              help="flag the head weak when the softmax mass on the target is below this on some new row "
                   "[default: 0.5]")
@click.option("--require-alpha", "require_alpha", type=float, default=None,
              help="CI gate: exit 1 when alpha < X or the head is weak")
@click.option("--identifiability", is_flag=True, default=False,
              help="rank and null space of Phi_L0, and the range of alpha_L over every parameter with the same L0 "
                   "logits (exact LPs; L <= 128)")
@click.option("--timeout", "timeout_s", type=float, default=20.0, show_default=True,
              help="solver budget per call of --identifiability, seconds")
@click.option("--plots", "plots", default=None, help="directory for two PNGs: the kernel against the offset, and "
              "alpha against the length (needs matplotlib)")
@click.option("--rope-scaling", "rope_scaling", default=None, help="--pe rope with a real implementation's frequency "
              "scaling: linear (inv_freq / F), dynamic (NTK base at the evaluated length L), yarn (ramp between "
              "--beta-fast/--beta-slow, attention factor 0.1 ln F + 1 on cos and sin) or llama3 (low/high frequency "
              "factors); the head is fitted at L0 and evaluated at L with the scaled frequencies, which are "
              "cross-checked against transformers' ROPE_INIT_FUNCTIONS when it is installed")
@click.option("--factor", "factor", default=None, help="--rope-scaling: the scaling factor F (a number >= 1)")
@click.option("--original-max-position", "original_max", type=int, default=None, help="--rope-scaling dynamic/yarn/"
              "llama3: the original context length L_orig (dynamic scales only when L > L_orig) [default: 4096]")
@click.option("--beta-fast", "beta_fast", default=None, help="--rope-scaling yarn: rotations over L_orig above which "
              "a frequency is kept [default: 32]")
@click.option("--beta-slow", "beta_slow", default=None, help="--rope-scaling yarn: rotations below which a frequency "
              "is divided by F [default: 1]")
@click.option("--low-freq-factor", "low_freq_factor", default=None, help="--rope-scaling llama3: wavelengths above "
              "L_orig / this are divided by F [default: 1]")
@click.option("--high-freq-factor", "high_freq_factor", default=None, help="--rope-scaling llama3: wavelengths below "
              "L_orig / this are kept [default: 4]")
def alpha_cmd(pe_name: str | None, pe_features: str | None, slope: str | None, base: str | None,
              frequencies: int | None, task_name: str | None, target: str | None, rows: str | None, L0: int, L: int,
              W: str | None, fmt: str, seed: int, lr: float | None, steps: int, weight_decay: float, selection: str,
              min_margin: float | None, min_mass: float | None, require_alpha: float | None, identifiability: bool,
              timeout_s: float, plots: str | None, user_timeout: float, tasks: str | None, up_to: int | None,
              budget_s: float | None, rope_scaling: str | None = None, factor: str | None = None,
              original_max: int | None = None, beta_fast: str | None = None, beta_slow: str | None = None,
              low_freq_factor: str | None = None, high_freq_factor: str | None = None) -> None:
    """Measure alpha_L of a positional-only head (fitted at L0, from --W, or fixed) on a task, with its
    margins and the softmax mass on the target (pr26).  With --tasks, answer per task up to what length
    the fitted head (selection) and some head (existence) do the task.  See the epilog for exit codes."""
    A = registry.paper("pr26").api
    rope = _rope_options(rope_scaling, factor, original_max, beta_fast, beta_slow, low_freq_factor, high_freq_factor)
    if rope is not None and tasks is not None:
        raise InputError("--rope-scaling goes with --task/--target at one --L, not with --tasks")
    if tasks is not None:
        if task_name is not None or target is not None or W is not None:
            raise InputError("--tasks replaces --task/--target/--W (the designer's question fits a head per task)")
        _designer(A, pe_name, pe_features, slope, base, frequencies, tasks, L0, up_to or 4096, fmt, seed, lr,
                  steps, weight_decay, selection, min_margin, min_mass, timeout_s, budget_s, user_timeout)
        return
    if up_to is not None or budget_s is not None:
        raise InputError("--up-to and --budget go with --tasks")

    if require_alpha is not None and not (math.isfinite(require_alpha) and 0 <= require_alpha <= 1):
        raise InputError(f"--require-alpha must be in [0, 1], got {require_alpha}")
    if identifiability:
        from verify.core.inputs import check_timeout

        check_timeout(timeout_s)
    plt = None
    if plots is not None:
        from verify.reports.plots import require_matplotlib

        plt = require_matplotlib()
    mm = A.DEFAULT_MIN_MARGIN if min_margin is None else min_margin
    ms = A.DEFAULT_MIN_MASS if min_mass is None else min_mass
    kw: dict[str, Any] = dict(features=pe_features, slope=slope, base=base, frequencies=frequencies, target=target,
                              rows=rows, W=W, seed=seed, lr=lr, steps=steps, weight_decay=weight_decay, selection=selection,
                              min_margin=mm, min_mass=ms, user_timeout=user_timeout)
    if rope is not None:
        kw["rope_scaling"] = rope
    prep = A.prepare(pe_name, task_name, L0, L, **kw)
    try:
        res = A.alpha(pe_name, task_name, L0, L, **kw, identifiability=identifiability, timeout_s=timeout_s,
                      _prepared=prep)
    except A.Inconclusive as e:
        _inconclusive(fmt, prep["spec"].family.name, prep["task"].name, L0, L, seed, e.reason, e.message, e.fit)
    doc = res.doc
    if plt is not None and plots is not None:
        doc["plots"] = _plots(plt, plots, res, L0, L)
    gate_failed = require_alpha is not None and (not res.alpha >= require_alpha or res.weak)
    if require_alpha is not None:
        doc["require_alpha"] = {"X": require_alpha, "passed": not gate_failed}
    if fmt == "json":
        from verify.evidence import to_jsonable

        click.echo(json.dumps(to_jsonable(doc), indent=2))
    else:
        click.echo(_alpha_text(doc, require_alpha, gate_failed))
    if gate_failed:
        raise click.exceptions.Exit(1)


def _rope_options(rule: str | None, factor: str | None, original_max: int | None, beta_fast: str | None,
                  beta_slow: str | None, low: str | None, high: str | None) -> dict | None:
    """The --rope-scaling options as ``rope_scaling`` for the API (validated there), or None when not asked."""
    given = {k: v for k, v in (("factor", factor), ("original_max", original_max), ("beta_fast", beta_fast),
                               ("beta_slow", beta_slow), ("low_freq_factor", low), ("high_freq_factor", high))
             if v is not None}
    if rule is None:
        if given:
            flag = "--" + next(iter(given)).replace("_", "-").replace("original-max", "original-max-position")
            raise InputError(f"{flag} goes with --rope-scaling linear|dynamic|yarn|llama3")
        return None
    return {"rule": rule, **given}


def _rope_lines(doc: dict) -> list[str]:
    """The scaling rule, its frequencies and the library cross-check (text report of --rope-scaling)."""
    rs = doc.get("rope_scaling")
    if not rs:
        return []
    opts = ", ".join(f"{k.replace('_', ' ')} {rs[k]:g}" for k in ("factor", "original_max_position", "beta_fast",
                                                                       "beta_slow", "low_freq_factor",
                                                                       "high_freq_factor") if k in rs)
    w, p, a = rs["inv_freq"], rs["plain_inv_freq"], rs["attention_factor"]
    out = [f"  RoPE scaling: {rs['rule']} ({opts}; rotary dim {rs['rotary_dim']}, base {rs['base']:g}): "
           f"inverse frequencies {_f(w[0])} .. {_f(w[-1])} (plain {_f(p[0])} .. {_f(p[-1])})"
           + (f"; attention factor {a:.6g} on cos and sin (logits x {a * a:.6g})" if a != 1 else "")]
    if rs.get("length_dependence"):
        out.append(f"  dynamic: {rs['length_dependence']}")
    cc = rs["cross_check"]
    if not cc["checked"]:
        out.append(f"  {cc['note']}")
        return out
    ok = "agree" if cc["agrees"] else "DISAGREE"
    out.append(f"  cross-checked against {cc['library']} ({cc['function']}): {ok}; max relative difference "
               f"{cc['max_relative_difference']:.1e} over {len(w)} inverse frequencies (tolerance "
               f"{cc['tolerance']:g}: the library computes them in float32), attention factor "
               f"{cc['attention_factor_relative_difference']:.1e} (tolerance {cc['attention_factor_tolerance']:g})")
    for f in cc["findings"]:
        where = f" index {f['index']}" if "index" in f else ""
        out.append(f"  finding: {f['rule']} {f['what']}{where}: ours {f['ours']!r}, library {f['library']!r}")
    return out


def _designer(A: Any, pe_name: str | None, pe_features: str | None, slope: str | None, base: str | None,
              frequencies: int | None, tasks: str, L0: int, up_to: int, fmt: str, seed: int, lr: float | None,
              steps: int, weight_decay: float, selection: str, min_margin: float | None, min_mass: float | None,
              timeout_s: float, budget_s: float | None, user_timeout: float) -> None:
    """``verify alpha --tasks ... --up-to N``: one line per decision, flushed as it comes (a terminal or not);
    Ctrl-C prints what was decided and exits 130; an undecided length makes the exit 3."""
    names = list(A.DESIGNER_TASKS) if tasks.strip() == "all" else [t.strip() for t in tasks.split(",") if t.strip()]
    if not names:
        raise InputError("--tasks: give 'all' or a comma-separated list of tasks")
    if budget_s is not None and not (math.isfinite(budget_s) and budget_s > 0):
        raise InputError(f"--budget must be a positive number of seconds, got {budget_s}")
    mm = A.DEFAULT_MIN_MARGIN if min_margin is None else min_margin
    ms = A.DEFAULT_MIN_MASS if min_mass is None else min_mass
    gen = A.designer(pe_name, names, L0, up_to, features=pe_features, slope=slope, base=base, frequencies=frequencies,
                     seed=seed, lr=lr, steps=steps, weight_decay=weight_decay, selection=selection, min_margin=mm,
                     min_mass=ms, timeout_s=timeout_s, budget_s=budget_s, user_timeout=user_timeout)
    events: list[dict] = []

    def say(line: str) -> None:
        if fmt == "text":
            click.echo(line)
            sys.stdout.flush()

    say(f"designer (pr26): tasks {', '.join(names)}; the head fitted at L0 = {L0} ({selection}) measured at L = "
        f"{', '.join(map(str, A.designer_lengths(L0, up_to)))}; existence decided exactly at every L <= {up_to}")
    est_line = _estimate_line(A, _designer_sizes(pe_name, pe_features, frequencies, L0), names, L0, up_to, budget_s)
    if fmt == "text":
        say(est_line)
    else:  # stdout is the JSON document: the estimate goes to stderr
        click.echo(est_line, err=True)
    say("  selection = the head the fit picks (alpha_L, what the paper's fit measures); existence = some head with "
        "these features (what `verify realizable` decides)")
    try:
        for ev in gen:  # one event at a time, printed as decided
            events.append(ev)
            say(_designer_line(ev))
    except KeyboardInterrupt:
        done = [e for e in events if e["event"] == "task"]
        click.echo("verify: interrupted; decided so far: " + ("; ".join(
            f"{e['task']}: selection {e['selection']}, existence {e['existence']}" for e in done) or
            f"{len(events)} partial results, no task finished"), err=True)
        if fmt == "json":
            click.echo(json.dumps({"schema": "verify-designer/1", "interrupted": True, "events": events}, indent=2,
                                  default=str))
        raise click.exceptions.Exit(130) from None
    undecided = any(e["event"] == "length" and e["outcome"] != "measured" for e in events) or any(
        e["event"] == "existence" and e["answer"] is None for e in events)
    if fmt == "json":
        from verify.evidence import to_jsonable

        click.echo(json.dumps(to_jsonable({"schema": "verify-designer/1", "tasks": names, "L0": L0, "up_to": up_to,
                                           "selection": selection, "events": events,
                                           "inconclusive": undecided}), indent=2))
    if undecided:
        click.echo("verify: inconclusive: some lengths were not decided (see the INCONCLUSIVE lines)", err=True)
        raise click.exceptions.Exit(EXIT_INCONCLUSIVE)


#: the designer's cost model, seconds per unit on the machine it was measured on (2 cores, loaded), where the
#: calibration below took CALIBRATION_NOMINAL_S; an estimate scales them by (calibration now) / nominal
CALIBRATION_NOMINAL_S = 0.006
DESIGNER_COSTS = {
    "torch_import_s": 1.1,          # importing torch, when the process has not yet
    "solver_start_s": 0.1,          # the LP solver's and z3's imports and first use, once (when highspy is not loaded)
    "table_irrational_s": 6e-5,     # the exact (rounded mpmath) feature table, per position x coordinate
    "table_rational_s": 5e-6,       # the exact rational feature table, per position x coordinate
    "existence_task_s": 0.1,        # cutting planes per task: LPs and certificates
    "existence_relative_s": 6e-6,   # ... plus per offset x coordinate (integer kernels, a few rounds)
    "existence_absolute_s": 1e-8,   # ... plus per N^2 r (float64 filter, exact re-decisions)
    "fit_s": 0.05,                  # the fit at L0, per task
    "alpha_relative_s": 1.5e-6,     # selection at length L, per position (running maxima)
    "alpha_exact_s": 4e-6,          # selection in Fractions (absolute, exact features, small L), per L^2 r / 2
    "alpha_float_s": 1e-9,          # selection in float64 row blocks (absolute), per L^2 r
}


def _calibration_s() -> float:
    """Seconds of a fixed small workload of exact arithmetic (about 6 ms where the costs were measured): the
    machine's speed now, by which :data:`DESIGNER_COSTS` are scaled."""
    import time
    from fractions import Fraction

    t = time.perf_counter()
    acc = Fraction(0)
    for k in range(1, 1500):
        acc += Fraction(k, k + 1) * Fraction(3, 7)
    return time.perf_counter() - t


def designer_estimate(kind: str, r: int, exact_features: bool, n_tasks: int, lengths: list[int], up_to: int,
                      calibration_s: float, max_exact_work: int, loaded: frozenset[str] = frozenset()) -> float:
    """The designer's expected seconds from the sizes: the imports not yet done (``loaded``: the modules already
    imported), the exact feature table of ``up_to`` positions, per task the existence decision at ``up_to``
    (one system for length-stable tasks; copy and reverse usually fail early, and take longer when realizable
    far) and the fit plus one alpha_L per length; scaled by ``calibration_s`` / :data:`CALIBRATION_NOMINAL_S`."""
    c = DESIGNER_COSTS
    total = up_to * r * c["table_rational_s" if exact_features else "table_irrational_s"]
    total += (0.0 if "torch" in loaded else c["torch_import_s"]) + (
        0.0 if "highspy" in loaded else c["solver_start_s"])
    ex = c["existence_task_s"] + (up_to * r * c["existence_relative_s"] if kind == "relative"
                                  else up_to * up_to * r * c["existence_absolute_s"])
    sel = c["fit_s"]
    for ell in lengths:
        if kind == "relative":
            sel += ell * c["alpha_relative_s"]
        else:
            work = ell * ell * max(r, 1) // 2 + ell * r * r
            sel += work * c["alpha_exact_s"] if exact_features and work <= max_exact_work else \
                ell * ell * r * c["alpha_float_s"]
    return (total + n_tasks * (ex + sel)) * calibration_s / CALIBRATION_NOMINAL_S


def _designer_sizes(pe_name: str | None, pe_features: str | None, frequencies: int | None,
                    L0: int) -> tuple[str, int, bool] | None:
    """(kind, feature dimension, exact features) of the designer's map, read without resolving it again
    (expressions parsed, a built-in family looked up); None for a callable map."""
    try:
        if pe_features is not None:
            from verify.constructions import features as F

            try:
                exprs, kind = F.parse_expressions(pe_features, ("i",)), "absolute"
            except Exception:
                exprs, kind = F.parse_expressions(pe_features, ("d",)), "relative"
            return kind, len(exprs), all(F.is_rational_expr(e) for e in exprs)
        if pe_name is None or ":" in pe_name:
            return None
        from verify.constructions import pe as pemod

        fam = pemod.get_family(pe_name)
        r = 2 * frequencies if frequencies is not None and pe_name in ("rope", "sinusoidal") else fam.dim(L0)
        return fam.kind, r, bool(fam.rational)
    except Exception:  # the designer validated the map already; an estimate is not worth a second error
        return None


def _estimate_line(A: Any, sizes: tuple[str, int, bool] | None, names: list[str], L0: int, up_to: int,
                   budget_s: float | None) -> str:
    """One line: ``estimated ~X s (budget Y s)``, before any work."""
    budget = "no budget: --budget S stops it" if budget_s is None else f"budget {budget_s:g} s"
    if sizes is None:
        return f"estimated: no estimate for a callable feature map ({budget})"
    kind, r, exact = sizes
    secs = designer_estimate(kind, r, exact, len(names), A.designer_lengths(L0, up_to), up_to, _calibration_s(),
                             A.MAX_EXACT_WORK, frozenset(m for m in ("torch", "highspy") if m in sys.modules))
    return f"estimated ~{secs:.2g} s ({budget})" if secs < 10 else f"estimated ~{secs:.0f} s ({budget})"


def _designer_line(ev: dict) -> str:
    """One event of :func:`verify.proofs.pr26.alpha.designer` as a text line."""
    kind, t = ev["event"], ev.get("task", "")
    if kind == "existence":
        if ev["answer"] is True:
            return f"[{t}] existence: some head realizes {t} at every L <= {ev['up_to']} (exact, re-checked at {ev['up_to']})"
        if ev["answer"] is False:
            pre = (f"realizable at every L <= {ev['realizable_up_to']}; " if ev["realizable_up_to"] else "")
            return (f"[{t}] existence: {pre}NOT realizable at any L from {ev['first_unrealizable']} to {ev['up_to']} "
                    "(Farkas certificate)")
        return f"[{t}] existence: INCONCLUSIVE ({ev.get('why')})"
    if kind == "length":
        ex = {True: "exists", False: "none exists", None: "undecided"}[ev.get("existence")]
        if ev["outcome"] != "measured":
            return f"[{t}] L = {ev['L']}: selection INCONCLUSIVE ({ev.get('why')}); existence: {ex}"
        weak = f"; weak: {'; '.join(ev['weak_reasons'])}" if ev["weak"] else ""
        return (f"[{t}] L = {ev['L']}: selection alpha_L = {ev['alpha']:.4f} ({ev['passed']}/{ev['new_rows']} new "
                f"rows), min margin {_f(ev['min_margin'])}, target mass >= {_f(ev['mass_min'])}{weak}; existence: {ex}")
    if kind == "task":
        out = f"[{t}] answer: selection: {ev['selection']}; existence: {ev['existence']}"
        return out + (f"\n[{t}]   {ev['explanation']}" if ev["explanation"] else "")
    if kind == "estimate":
        return f"  ({ev['elapsed_s']} s so far; about {ev['remaining_s_estimate']} s more for the other tasks at this pace)"
    return f"done in {ev.get('seconds')} s"


def _alpha_text(doc: dict, require_alpha: float | None, gate_failed: bool) -> str:
    L0, L = doc["L0"], doc["L"]
    lines = [f"alpha_L (pr26): PE {doc['pe']}, task {doc['task']}, head {_source(doc)} at L0 = {L0}, "
             f"transferred to L = {L}",
             f"  alpha_L = {doc['alpha']:.4f}  ({doc['passed_rows']}/{doc['new_rows']} new query rows i in [L0, L) "
             f"attend to t_L(i); paper rows {L0 + 1}..{L})",
             f"  min margin: old rows (at L0) g0 = {_f(doc['min_margin_old_rows'])}; new rows gL = "
             f"{_f(doc['min_margin_new_rows'])}" + (f" (exact: {doc['min_margin_exact']})"
                                                     if doc.get("min_margin_exact") else ""),
             f"  softmax mass on the target over new rows: min {_f(doc['target_mass']['min'])}, mean "
             f"{_f(doc['target_mass']['mean'])}"]
    if doc["weak"]:
        lines.append("  weak: " + "; ".join(doc["weak_reasons"]))
    if doc["exact_rechecked_rows"] or doc["interval_rechecked_rows"]:
        lines.append(f"  arithmetic: {doc['arithmetic']} ({doc['exact_rechecked_rows']} rows decided exactly, "
                     f"{doc['interval_rechecked_rows']} by interval arithmetic)")
    if doc["unresolved_rows_counted_as_failures"]:
        lines.append(f"  unresolved: {doc['unresolved_rows_counted_as_failures']} near-tie rows beyond the re-check "
                     "budget, counted as failures")
    if doc["new_rows_with_exact_tie_to_target"]:
        lines.append(f"  exact ties: {doc['new_rows_with_exact_tie_to_target']} new rows have another key with exactly "
                     "the target's logit (ties fail)")
    if doc["failing_rows"]:
        lines.append("  failing rows (first {}): ".format(len(doc["failing_rows"])) + "; ".join(
            f"row {f['row_i_paper']} -> argmax key {f['argmax'] + 1}, target {f['target'] + 1}, margin {_f(f['margin'])}"
            for f in doc["failing_rows"]) + "  (paper's 1-indexed positions)")
    else:
        lines.append("  failing rows: none")
    s = doc["fit"]
    if s["selection"] == "min-norm":
        lines.append(f"  selection: min-norm (minimum ||W||_F = {s['frobenius_norm']:.6g} with margin >= 1 on every L0 "
                     f"row; {s['constraints']} constraints, duality gap {s['relative_duality_gap']:.1e} after "
                     f"{s['iterations']} iterations); cross-entropy of the head {s['loss_last']:.4g}")
    elif s["selection"] == "ce":
        lines.append(f"  fit: {s['optimizer']} lr {s['lr']}, {s['steps']} steps, weight decay {s['weight_decay']}, "
                     f"init {s['init']}; loss {s['loss_first']:.4g} -> {s['loss_last']:.4g}")
    elif s["selection"] == "file":
        lines.append(f"  head: read from --W ({s['file_format']}); cross-entropy at L0 {s['loss_last']:.4g}")
    else:
        lines.append("  head: fixed (no trained parameter)")
    lines.append("  head: " + ", ".join(f"{k} = {_short(v)}" for k, v in doc["kernel"].items()))
    lines.append(f"  PE: {doc['pe_description']}")
    lines += _rope_lines(doc)
    lines.append(f"  task: {doc['task_description']}")
    idf = doc.get("identifiability")
    if idf:
        if not idf.get("computed"):
            lines.append(f"  identifiability: not computed ({idf['why']})")
        else:
            ar = idf["alpha_range"]
            lines.append(f"  identifiability: {idf['matrix']} is {idf['shape'][0]} x {idf['shape'][1]} of rank "
                         f"{idf['rank']} (null space dimension {idf['null_space_dim']}; {idf['rank_how']}); the map "
                         f"parameter -> L0 logits has rank {idf['L0_logit_map_rank']} of {idf['parameters']} (null "
                         f"space {idf['L0_logit_map_null_space_dim']})")
            lo = "unknown" if ar["min"] is None else f"{ar['min']:.4f}"
            hi = "unknown" if ar["max"] is None else f"{ar['max']:.4f}"
            lines.append(f"  alpha_L over every parameter with the same L0 logits: [{lo}, {hi}] ({ar['how']})")
            if ar.get("attainable") is not None:
                lines.append("  attainable alpha_L: " + ", ".join(f"{a:.4f}" for a in ar["attainable"])
                             + f" ({ar['attainable_how']})")
    if doc.get("plots"):
        lines.append("  plots: " + ", ".join(doc["plots"]))
    lines.append("  conclusion: " + _conclusion(doc))
    if require_alpha is not None:
        lines.append(f"  gate --require-alpha {require_alpha:g}: " + ("FAILED" if gate_failed else "passed"))
    return "\n".join(lines)


def _source(doc: dict) -> str:
    return {"fit": "fitted", "file": "read from --W", "fixed": "fixed"}.get(doc.get("param_source", "fit"), "fitted")


def _short(v: object) -> object:
    """Floats to 6 significant digits for the text report (JSON keeps full precision)."""
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [_short(x) for x in v]
    return v


def _conclusion(doc: dict) -> str:
    """One sentence a PE designer can act on (numeric: 'consistent', never 'proved')."""
    pe, task, L0, L = doc["pe"], doc["task"], doc["L0"], doc["L"]
    g0, gL, alpha = doc["min_margin_old_rows"], doc["min_margin_new_rows"], doc["alpha"]
    if g0 is not None and g0 <= 0:
        return (f"the {pe} head does not even solve {task} at the training length L0 = {L0} (g0 = {_f(g0)} <= 0); "
                f"alpha_L = {alpha:.4f} at L = {L} says the same: no length generalization for this cell")
    if alpha == 1.0 and doc.get("weak"):
        return (f"the strict argmax picks the target on every new row up to L = {L}, but weakly (smallest margin "
                f"{_f(gL)}, softmax mass on the target down to {_f(doc['target_mass']['min'])}): not reported as "
                "length-generalizing")
    if alpha == 1.0:
        return (f"the {pe} head solves {task} on every new row up to L = {L} "
                f"(with margin min(g0, gL) = {_f(min(g0, gL))}): it length-generalizes here")
    return (f"the {pe} head solves {task} at L0 = {L0} (g0 = {_f(g0)}) but only a fraction {alpha:.4f} of the new rows "
            f"at L = {L}: it does not length-generalize")


def _plots(plt, directory: str, res, L0: int, L: int) -> list[str]:
    """kernel.png (logit against the offset i - j, last row) and alpha.png (alpha_ell against ell)."""
    import torch

    from verify.numeric import pr26 as num
    from verify.reports.plots import clip_title, plot_dir, save

    out = plot_dir(directory)
    fr = res.head
    fam = fr.family
    feats = num.feature_matrix(fam, L, L0, fr.seed)
    if fam.kind == "relative":
        k = (feats @ fr.param).tolist()
        offs = list(range(L))
        ylabel = "k(delta)"
    else:
        row = feats[L - 1] @ fr.param @ feats.T
        offs = [L - 1 - j for j in range(L)]
        k = row.tolist()
        ylabel = f"logit(i = {L - 1}, j)"
    written = []
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(offs, k, ".-", ms=2)
    ax.axvline(L0 - 0.5, color="grey", ls=":", label="trained window edge (delta = L0)")
    t_last = int(fr.task.target(L - 1, L))
    ax.axvline(L - 1 - t_last, color="red", ls="--", label=f"target offset i - t = {L - 1 - t_last} (row i = {L - 1})")
    ax.set_xlabel("offset delta = i - j")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{clip_title(fam.name, 44)}, {clip_title(fr.task.name, 24)}: kernel against the offset", fontsize=9)
    ax.legend(fontsize=7)
    written.append(str(save(fig, out / "kernel.png", plt, dpi=100)))
    step = max(1, (L - L0) // 40)
    ells = sorted(set(list(range(L0 + 1, L + 1, step)) + [L]))
    alphas, weak = [], []
    th = res.doc.get("thresholds", {})
    mm, ms = th.get("min_margin", 0.01), th.get("min_mass", 0.5)
    with torch.no_grad():
        for ell in ells:
            tr = num.transfer(fr, ell)
            alphas.append(tr.alpha)
            new = [i for i in fr.task.rows(ell) if i >= L0]
            mass = num.target_mass(fam, fr.task, fr.param, L0, ell, new, fr.seed) if new else []
            weak.append(bool(new) and (not tr.gL >= mm or not min(mass) >= ms))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(ells, alphas, "o-", ms=3, label="alpha_L")
    wk = [(e, a) for e, a, w in zip(ells, alphas, weak) if w]
    if wk:
        ax.plot([e for e, _ in wk], [a for _, a in wk], "x", color="red", ms=8,
                label=f"weak: margin < {mm:g} or target mass < {ms:g}")
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel("evaluation length L")
    ax.set_ylabel("alpha_L")
    ax.set_title(f"{clip_title(fam.name, 44)}, {clip_title(fr.task.name, 24)}: alpha_L (head fitted at L0 = {L0})", fontsize=9)
    ax.legend(fontsize=7)
    written.append(str(save(fig, out / "alpha.png", plt, dpi=100)))
    return written


_REALIZABLE_LIMITS = (
    "Limits: N <= 131072, at most 4096 unknowns (r^2 absolute, r relative), and one exact check at N within about "
    "4.3e9 multiply-adds (N^2 r / 2 for absolute features "
    "of dimension r, e.g. N <= 53000 for r = 3; N r for relative ones); larger sizes are refused before any work. "
    "For prev, skip-K, attend-first and targets in i alone, a head realizing length N realizes every shorter length "
    "(pr26 Theorem 1's causal-mask block identity), so 'every L <= N' is one exact decision at N; copy, reverse and "
    "targets depending on L are checked at every length (up to N^3 r / 6 work: bound the run with --budget).")


@click.command("realizable", epilog="Exit codes: 0 realizable at every length 2..N (a parameter re-checked in exact "
               "rationals); 1 not realizable from some length on (a Farkas certificate checked without a solver); 2 bad "
               "input; 3 inconclusive (a solver timeout, or --budget ran out); 130 interrupted (Ctrl-C: what was decided "
               "so far is printed). " + _REALIZABLE_LIMITS)
@_pe_options
@click.option("--L", "L", type=int, required=True, help="the largest length N (lengths 2..N are decided; N <= 131072, "
              "see the limits below)")
@click.option("--budget", "budget_s", type=float, default=None, help="total seconds; lengths undecided when it runs out "
              "are inconclusive (never realizable)")
@click.option("--plots", "plots", default=None, help="directory for PNGs of the witness: its kernel (or last-row logits) "
              "with the target offset marked, and its exact margin per query row with the weakest rows marked")
@click.option("--margin", default="1", show_default=True, help="G > 0: target logit >= every other causal logit + G "
              "(homogeneous constraints: any G > 0 gives the same answer)")
@click.option("--L0", "L0", type=int, default=20, show_default=True, help="the trained window of the learned families")
@click.option("--timeout", "timeout_s", type=float, default=20.0, show_default=True, help="solver budget per call, s")
@click.option("--certificates", default=None, help="write each Farkas certificate to this directory "
              "(re-check with 'verify recheck DIR')")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def realizable_cmd(pe_name: str | None, pe_features: str | None, slope: str | None, base: str | None,
                   frequencies: int | None, task_name: str | None, target: str | None, rows: str | None, L: int,
                   margin: str, L0: int, timeout_s: float, certificates: str | None, fmt: str, user_timeout: float,
                   budget_s: float | None, plots: str | None) -> None:
    """Decide exactly whether any head with these features realizes the task at every length up to N
    (pr26's realizability: existence of a head, not the head a fit selects; the constraints are linear in
    the parameter).  Progress goes to stderr, one flushed line per solve."""
    A = registry.paper("pr26").api

    if budget_s is not None and not (math.isfinite(budget_s) and budget_s > 0):
        raise InputError(f"--budget must be a positive number of seconds, got {budget_s}")
    plt = None
    if plots is not None:
        from verify.reports.plots import require_matplotlib

        plt = require_matplotlib()
    done: list[str] = []

    def progress(line: str) -> None:
        done.append(line)
        click.echo(f"verify: realizable: {line}", err=True)
        sys.stderr.flush()

    try:
        res = A.realizable(pe_name, task_name, L, features=pe_features, slope=slope, base=base,
                           frequencies=frequencies, target=target, rows=rows, margin=margin, L0=L0, timeout_s=timeout_s,
                           certificates=certificates, user_timeout=user_timeout, budget_s=budget_s, progress=progress)
    except KeyboardInterrupt:
        click.echo("verify: interrupted; decided so far: " + ("; ".join(done) or "nothing"), err=True)
        raise click.exceptions.Exit(130) from None
    doc = res.doc
    if plt is not None and plots is not None:
        doc["plots"] = A.realizable_plots(plt, plots, res)
    if fmt == "json":
        from verify.evidence import to_jsonable

        click.echo(json.dumps(to_jsonable(doc), indent=2))
    else:
        click.echo(_realizable_text(doc))
    if res.realizable is None:
        click.echo("verify: inconclusive: the solver did not decide every length", err=True)
        raise click.exceptions.Exit(EXIT_INCONCLUSIVE)
    if not res.realizable:
        raise click.exceptions.Exit(1)


def _realizable_text(doc: dict) -> str:
    lines = [f"realizable (pr26): PE {doc['pe']}, task {doc['task']}, lengths 2..{doc['L']}, margin {doc['margin']}"]
    groups: list[list] = []
    for p in doc["per_length"]:
        key = (p["realizable"], p["witness"], p["certificate"])
        if groups and groups[-1][0] == key:
            groups[-1][2] = p["L"]
        else:
            groups.append([key, p["L"], p["L"]])
    for (ok, w, c), a, b in groups:
        span = f"L = {a}" if a == b else f"L = {a}..{b}"
        if ok is True:
            lines.append(f"  {span}: realizable (parameter {w}, re-checked in exact rationals)")
        elif ok is False:
            lines.append(f"  {span}: NOT realizable (certificate {c})")
        else:
            lines.append(f"  {span}: inconclusive")
    for k, wd in doc["witnesses"].items():
        cp = wd.get("cutting_planes")
        how = (f"; cutting planes: {cp['rounds']} round(s), {cp['constraints_held']} constraints held"
               + (", every shorter length by the block identity" if cp["block_identity"] else "") if cp else "")
        lines.append(f"  {k} (found at L = {wd['found_at_length']}, exact re-check of every row "
                     f"{'passed' if wd['rechecked_exact'] else 'FAILED'}{how}): {_readable_param(wd['param'])} "
                     "(rounded; exact rationals in --format json)")
    for k, cd in doc["certificates"].items():
        lines.append(f"  {k} (at L = {cd['length']}): Farkas certificate, {cd['rows_used']} constraint rows with "
                     f"nonzero multipliers; solver-free check: {cd['check']}")
    if doc.get("certificate_files"):
        lines.append("  certificate files: " + ", ".join(doc["certificate_files"]) + " (verify recheck DIR)")
    if doc.get("plots"):
        lines.append("  plots: " + ", ".join(doc["plots"]))
    ans = doc["realizable"]
    lines.append("  answer: " + (f"realizable at every L <= {doc['L']} (one head for all of them; existence, not the "
                                 "head a fit selects)" if ans else (
        f"not realizable at any L from {doc['first_unrealizable_length']} to {doc['L']} (checked up to {doc['L']})"
        if ans is False else "inconclusive: " + _why_inconclusive(doc))))
    return "\n".join(lines)


def _why_inconclusive(doc: dict) -> str:
    """The first reason an undecided length gives (a solver timeout, the budget, an unconverged loop)."""
    return next((p["note"] for p in doc["per_length"] if p["realizable"] is None and p.get("note")), "undecided")


def _readable_param(p: object, digits: int = 4, limit: int = 300) -> str:
    """A parameter of exact rational strings printed rounded (``digits`` significant digits)."""
    from fractions import Fraction

    def r(x: object) -> object:
        if isinstance(x, list):
            return [r(y) for y in x]
        return float(f"{float(Fraction(str(x))):.{digits}g}")

    s = json.dumps(r(p))
    return s if len(s) <= limit else s[:limit] + f"... ({len(s)} characters)"


__all__ = ["alpha_cmd", "realizable_cmd", "EXIT_INCONCLUSIVE"]
