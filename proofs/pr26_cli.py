"""``verify alpha``: fit a positional-only head at L0 and measure alpha_L at L (pr26).

    verify alpha --pe NAME --task NAME --L0 N --L N [--lr X] [--steps N] [--weight-decay X]
                 [--selection ce|min-norm] [--format json] [--seed S]

Prints alpha_L (the fraction of new query rows i in [L0, L) whose strict causal masked
argmax is the target t_L(i); exact ties fail, and rows whose float64 margin is within the
stated rounding bound are re-decided exactly or by interval arithmetic), the minimum margin on the old rows (the
fit at L0, g0) and on the new rows (gL), the first failing rows (paper's 1-indexed rows
in brackets) and a summary of the fitted head.  The JSON has an ``alpha`` field and the fit
settings used (``fit``: selection, learning rate, steps, weight decay, init; for min-norm the
certified duality gap).  The default learning rate is the engine's LR, chosen by a stated joint
rule over the paper's published figures (see verify.numeric.pr26.LR).
Exit codes: 0 measured; 2 bad input, refused in one line on stderr before torch is imported (unknown
family/task, L <= L0, L0 < 2, sizes too large, --seed outside 0..2^31-1, --lr outside [MIN_LR, MAX_LR],
--steps outside 1..MAX_STEPS, --weight-decay outside [0, MAX_WEIGHT_DECAY]); 3 inconclusive, one line
on stderr (and a JSON document with ``"outcome": "inconclusive"`` and ``"alpha": null`` under
--format json): no head to measure, because the cross-entropy fit ended with a non-finite loss or
parameter, or the min-norm head could not be certified (the dual shows no head of bounded norm reaches
margin 1 at L0, or the solver did not close its duality gap).  A diverged fit is never reported as a
measured alpha.
Source: pr26 (TMLR 2026), the fit/transfer protocol (full text not reachable; reconstructed).
"""

from __future__ import annotations

import json
import math

import click

from verify.proofs.model import InputError

MAX_BYTES = 4 * 2**30
MAX_L0 = 2048
MAX_L = 1 << 20
#: sane ranges of the fit options, the same as the pr26 claims' --lr/--steps/--weight-decay (the engine's defaults: lr 0.07 from a grid topping at 0.5, 400 steps,
#: weight decay 1e-4); beyond them Adam's update or the L2 term overflows float64 or the run is hours long
MIN_LR = 1e-6
MAX_LR = 10.0
MAX_STEPS = 20_000
MAX_WEIGHT_DECAY = 1.0
EXIT_INCONCLUSIVE = 3

SCHEMA = "verify-alpha/1"


def _validate(pe_name: str, task_name: str, L0: int, L: int, seed: int = 0, lr: float | None = None,
              steps: int = 400, weight_decay: float = 1e-4):
    """Every option checked before any work (and before torch or a numeric module is imported).

    Returns:
        (family, task) of :mod:`verify.constructions.pe`.
    Raises:
        InputError: one line naming the first bad option.
    """
    from verify.constructions import pe
    from verify.proofs.inputs import check_seed, clip

    try:
        fam = pe.get_family(pe_name)
    except KeyError as e:
        raise InputError(e.args[0]) from None
    try:
        task = pe.get_task(task_name)
    except KeyError as e:
        raise InputError(e.args[0]) from None
    check_seed(seed)
    if lr is not None and not (isinstance(lr, (int, float)) and math.isfinite(lr) and MIN_LR <= lr <= MAX_LR):
        raise InputError(f"--lr must be a number in [{MIN_LR:g}, {MAX_LR:g}], got {clip(lr)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise InputError(f"--steps must be an integer in 1..{MAX_STEPS}, got {clip(steps)}")
    if not (isinstance(weight_decay, (int, float)) and math.isfinite(weight_decay)
            and 0 <= weight_decay <= MAX_WEIGHT_DECAY):
        raise InputError(f"--weight-decay must be a number in [0, {MAX_WEIGHT_DECAY:g}], got {clip(weight_decay)}")
    if L0 < 2:
        raise InputError(f"--L0 must be >= 2, got {clip(L0)}")
    if L <= L0:
        raise InputError(f"--L {clip(L)} must exceed --L0 {clip(L0)}")
    if L0 > MAX_L0:
        raise InputError(f"--L0 {clip(L0)} is too large (the fit is O(400 L0^2 r); at most {MAX_L0})")
    if L > MAX_L:
        raise InputError(f"--L {clip(L)} is too large (at most {MAX_L})")
    if not list(task.rows(L0)):
        raise InputError(f"task {task.name} has no query row at --L0 {L0}")
    from verify.numeric.pr26_sizes import memory_bytes  # torch-free: refusals stay fast

    need = memory_bytes(fam, L0, L)
    if need > MAX_BYTES:
        raise InputError(f"--pe {fam.name} --L0 {L0} --L {L} needs about {need / 2**30:.1f} GiB "
                         f"(limit {MAX_BYTES / 2**30:.0f} GiB); lower --L or --L0")
    return fam, task


def _inconclusive(fmt: str, fam, task, L0: int, L: int, seed: int, reason: str, message: str, fit: dict) -> None:
    """Report a run with no head to measure: one line on stderr (JSON on stdout with --format json), exit 3."""
    from verify.proofs.inputs import clip

    if fmt == "json":
        from verify.evidence import to_jsonable

        doc = {"schema": SCHEMA, "pe": fam.name, "task": task.name, "L0": L0, "L": L, "seed": seed,
               "outcome": "inconclusive", "reason": reason, "message": message, "alpha": None, "fit": fit}
        click.echo(json.dumps(to_jsonable(doc), indent=2))
    click.echo(f"verify: inconclusive: {clip(' '.join(message.split()), 400)}", err=True)
    raise click.exceptions.Exit(EXIT_INCONCLUSIVE)


def _f(x: float) -> str:
    return "nan" if isinstance(x, float) and math.isnan(x) else f"{x:.6g}"


@click.command("alpha")
@click.option("--pe", "pe_name", required=True, help="PE family: affine, alibi, learned-absolute, clamped-absolute, "
              "sinusoidal, rope, free-relative")
@click.option("--task", "task_name", required=True, help="task: prev, skip-K (e.g. skip-3), attend-first, copy, reverse")
@click.option("--L0", "L0", type=int, default=20, show_default=True, help="training length")
@click.option("--L", "L", type=int, default=64, show_default=True, help="evaluation length (> L0)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the init and of untrained features")
@click.option("--lr", type=float, default=None, help="Adam learning rate of the ce fit [default: the engine's LR, "
              "chosen by the joint rule over the published figures]")
@click.option("--steps", type=int, default=400, show_default=True, help="Adam steps of the ce fit")
@click.option("--weight-decay", "weight_decay", type=float, default=1e-4, show_default=True,
              help="L2 weight decay of the ce fit")
@click.option("--selection", type=click.Choice(["ce", "min-norm"]), default="ce", show_default=True,
              help="ce: regularised cross-entropy (Adam); min-norm: minimum ||W||_F with margin >= 1 on every L0 row")
def alpha_cmd(pe_name: str, task_name: str, L0: int, L: int, fmt: str, seed: int, lr: float | None, steps: int,
              weight_decay: float, selection: str) -> None:
    """Select a positional-only head at L0 (ce: Adam, 400 steps, weight decay 1e-4, init
    N(0, 0.02^2), the default learning rate; or min-norm) and report alpha_L, margins and
    failing rows at L (pr26)."""
    fam, task = _validate(pe_name, task_name, L0, L, seed, lr, steps, weight_decay)
    from verify.evidence import to_jsonable
    from verify.numeric.pr26 import LR, FitDiverged, MinNormError, fit, kernel_summary, transfer

    try:
        fr = fit(fam, task, L0, seed, steps=steps, lr=lr, weight_decay=weight_decay, selection=selection)
    except MinNormError as e:
        what = ("the min-norm head could not be certified: the dual shows no head with margin >= 1 exists below its "
                "norm bound" if e.kind == "unrealizable" else "the min-norm head could not be certified")
        _inconclusive(fmt, fam, task, L0, L, seed, f"min-norm {e.kind}", f"{what}: {e}",
                      {"selection": "min-norm", "norm_lower_bound": e.norm_lower_bound})
    except FitDiverged as e:
        _inconclusive(fmt, fam, task, L0, L, seed, "fit diverged", f"no alpha measured: {e}",
                      {"selection": "ce", "lr": LR if lr is None else lr, "steps": steps,
                       "weight_decay": weight_decay})
    import torch

    if not (math.isfinite(fr.loss_last) and bool(torch.isfinite(fr.param).all())):  # second guard: never a NaN alpha
        _inconclusive(fmt, fam, task, L0, L, seed, "fit diverged", "no alpha measured: the selected head has a "
                      f"non-finite loss ({fr.loss_last}) or parameter", dict(fr.settings))
    tr = transfer(fr, L)
    ks = kernel_summary(fr, L)
    if fmt == "json":
        doc = {"schema": SCHEMA, "pe": fam.name, "task": task.name, "L0": L0, "L": L, "seed": seed,
               "outcome": "measured", "alpha": tr.alpha, "new_rows": tr.new_rows, "passed_rows": tr.passed_rows,
               "min_margin_old_rows": tr.g0, "min_margin_new_rows": tr.gL,
               "min_margin_old_rows_at_L": tr.old_margin_at_L,
               "new_rows_with_exact_tie_to_target": tr.new_rows_target_tied,
               "exact_rechecked_rows": tr.exact_rechecked, "interval_rechecked_rows": tr.interval_rechecked,
               "unresolved_rows_counted_as_failures": tr.unresolved, "failing_rows": tr.failing,
               "fit": {**fr.settings, "loss_first": fr.loss_first, "loss_last": fr.loss_last},
               "kernel": ks, "pe_description": fam.description, "task_description": task.description,
               "indexing": "rows and keys 0-indexed; row_i_paper = row_i + 1"}
        click.echo(json.dumps(to_jsonable(doc), indent=2))
        return
    lines = [f"alpha_L (pr26): PE {fam.name}, task {task.name}, fitted at L0 = {L0}, transferred to L = {L}",
             f"  alpha_L = {tr.alpha:.4f}  ({tr.passed_rows}/{tr.new_rows} new query rows i in [L0, L) attend to t_L(i); "
             f"paper rows {L0 + 1}..{L})",
             f"  min margin: old rows (at L0) g0 = {_f(tr.g0)}; new rows gL = {_f(tr.gL)}"]
    if tr.exact_rechecked or tr.interval_rechecked:
        lines.append(f"  near ties: {tr.exact_rechecked} rows re-decided exactly, {tr.interval_rechecked} by interval "
                     "arithmetic (float64 could not certify their sign)")
    if tr.unresolved:
        lines.append(f"  unresolved: {tr.unresolved} near-tie rows beyond the re-check budget, counted as failures")
    if tr.new_rows_target_tied:
        lines.append(f"  exact ties: {tr.new_rows_target_tied} new rows have another key with exactly the target's "
                     "logit (ties fail)")
    if tr.failing:
        lines.append("  failing rows (first {}): ".format(len(tr.failing)) + "; ".join(
            f"row {f['row_i_paper']} -> argmax key {f['argmax'] + 1}, target {f['target'] + 1}, margin {_f(f['margin'])}"
            for f in tr.failing) + "  (paper's 1-indexed positions)")
    else:
        lines.append("  failing rows: none")
    s = fr.settings
    if s["selection"] == "min-norm":
        lines.append(f"  selection: min-norm (minimum ||W||_F = {s['frobenius_norm']:.6g} with margin >= 1 on every L0 "
                     f"row; {s['constraints']} constraints, duality gap {s['relative_duality_gap']:.1e} after "
                     f"{s['iterations']} iterations); cross-entropy of the head {fr.loss_last:.4g}")
    else:
        lines.append(f"  fit: {s['optimizer']} lr {s['lr']}, {s['steps']} steps, weight decay {s['weight_decay']}, "
                     f"init {s['init']}; loss {fr.loss_first:.4g} -> {fr.loss_last:.4g}")
    lines.append("  head: " + ", ".join(f"{k} = {_short(v)}" for k, v in ks.items()))
    lines.append(f"  PE: {fam.description}")
    lines.append(f"  task: {task.description}")
    lines.append("  conclusion: " + _conclusion(fam.name, task.name, L0, L, tr))
    click.echo("\n".join(lines))


def _short(v: object) -> object:
    """Floats to 6 significant digits for the text report (JSON keeps full precision)."""
    if isinstance(v, float):
        return float(f"{v:.6g}")
    if isinstance(v, list):
        return [_short(x) for x in v]
    return v


def _conclusion(pe: str, task: str, L0: int, L: int, tr: object) -> str:
    """One sentence a PE designer can act on (numeric: 'consistent', never 'proved')."""
    g0 = getattr(tr, "g0", None)
    alpha = getattr(tr, "alpha", 0.0)
    if g0 is not None and g0 <= 0:
        return (f"the fitted {pe} head does not even solve {task} at the training length L0 = {L0} (g0 = {_f(g0)} <= 0); "
                f"alpha_L = {alpha:.4f} at L = {L} says the same: no length generalization for this cell")
    if alpha == 1.0:
        return (f"the {pe} head fitted at L0 = {L0} solves {task} on every new row up to L = {L} "
                f"(with margin min(g0, gL) = {_f(min(g0, getattr(tr, 'gL', g0)))}): it length-generalizes here")
    return (f"the {pe} head solves {task} at L0 = {L0} (g0 = {_f(g0)}) but only a fraction {alpha:.4f} of the new rows "
            f"at L = {L}: it does not length-generalize")


__all__ = ["alpha_cmd", "MIN_LR", "MAX_LR", "MAX_STEPS", "MAX_WEIGHT_DECAY", "EXIT_INCONCLUSIVE"]
