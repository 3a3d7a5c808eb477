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
Exit codes: 0 measured; 2 bad input (one line on stderr: unknown family/task, L <= L0,
L0 < 2, sizes too large, non-positive lr/steps, negative weight decay) or no head to select
(min-norm: no parameter reaches margin 1 at L0, or the solver could not certify its optimum).
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

SCHEMA = "verify-alpha/1"


def _validate(pe_name: str, task_name: str, L0: int, L: int):
    from verify.constructions import pe

    try:
        fam = pe.get_family(pe_name)
    except KeyError as e:
        raise InputError(e.args[0]) from None
    try:
        task = pe.get_task(task_name)
    except KeyError as e:
        raise InputError(e.args[0]) from None
    if L0 < 2:
        raise InputError(f"--L0 must be >= 2, got {L0}")
    if L <= L0:
        raise InputError(f"--L {L} must exceed --L0 {L0}")
    if L0 > MAX_L0:
        raise InputError(f"--L0 {L0} is too large (the fit is O(400 L0^2 r); at most {MAX_L0})")
    if L > MAX_L:
        raise InputError(f"--L {L} is too large (at most {MAX_L})")
    if not list(task.rows(L0)):
        raise InputError(f"task {task.name} has no query row at --L0 {L0}")
    from verify.numeric.pr26 import memory_bytes

    need = memory_bytes(fam, L0, L)
    if need > MAX_BYTES:
        raise InputError(f"--pe {fam.name} --L0 {L0} --L {L} needs about {need / 2**30:.1f} GiB "
                         f"(limit {MAX_BYTES / 2**30:.0f} GiB); lower --L or --L0")
    return fam, task


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
    fam, task = _validate(pe_name, task_name, L0, L)
    if lr is not None and not (math.isfinite(lr) and lr > 0):
        raise InputError(f"--lr must be a positive number, got {lr}")
    if steps < 1 or steps > 20_000:
        raise InputError(f"--steps must be in 1..20000, got {steps}")
    if not (math.isfinite(weight_decay) and weight_decay >= 0):
        raise InputError(f"--weight-decay must be >= 0, got {weight_decay}")
    from verify.evidence import to_jsonable
    from verify.numeric.pr26 import MinNormError, fit, kernel_summary, transfer

    try:
        fr = fit(fam, task, L0, seed, steps=steps, lr=lr, weight_decay=weight_decay, selection=selection)
    except MinNormError as e:
        raise InputError(str(e)) from None
    tr = transfer(fr, L)
    ks = kernel_summary(fr, L)
    if fmt == "json":
        doc = {"schema": SCHEMA, "pe": fam.name, "task": task.name, "L0": L0, "L": L, "seed": seed,
               "alpha": tr.alpha, "new_rows": tr.new_rows, "passed_rows": tr.passed_rows,
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


__all__ = ["alpha_cmd"]
