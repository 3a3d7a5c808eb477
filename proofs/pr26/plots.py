"""pr26's figure (``--plots``): alpha_L against L, one panel per task, one line per positional encoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify.core.model import ClaimResult
from verify.reports.plots import clip_title, numbers, plot_dir, save, stem


def alpha_vs_L(r: ClaimResult, d: Path, plt: Any) -> list[Path]:
    n = numbers(r)
    a = n.get("alpha_vs_L")
    if isinstance(a, dict) and "L" in a and isinstance(a.get("alpha"), dict):
        by_task = {str(a.get("task") or "task"): a["alpha"]}
        Ls = a["L"]
    elif isinstance(n.get("L"), list) and isinstance(n.get("alpha"), dict) and all(
            isinstance(v, dict) for v in n["alpha"].values()):
        Ls = n["L"]  # numbers["alpha"] = {PE: {task: [alpha_L per L]}}
        by_task = {}
        for pe, tasks in n["alpha"].items():
            for task, ys in tasks.items():
                by_task.setdefault(str(task), {})[str(pe)] = ys
    else:
        return []
    tasks = list(by_task)
    fig, axes = plt.subplots(1, len(tasks), figsize=(3.2 * len(tasks) + 0.8, 3.6), squeeze=False, sharey=True)
    for ax, task in zip(axes[0], tasks):
        for pe in sorted(by_task[task]):
            ys = by_task[task][pe]
            if all(y is None for y in ys):  # no head selected (e.g. min-norm on an unrealizable cell)
                ax.plot([], [], "o-", ms=3, label=f"{pe} (no head)")
                continue
            ax.plot([float(x) for x in Ls], [float("nan") if y is None else float(y) for y in ys], "o-", ms=3,
                    label=pe)
        ax.set_xscale("log", base=2)
        ax.set_ylim(-0.05, 1.05)
        ax.set_xlabel("sequence length L")
        ax.set_title(f"task: {task}", fontsize=9)
    axes[0][0].set_ylabel("alpha_L (fraction of new rows solved)")
    axes[0][-1].legend(fontsize=7)
    l0 = f", fitted at L0 = {n['L0']}" if "L0" in n else ""
    fig.suptitle(f"{r.display_id}: alpha_L against L per positional encoding{l0}", fontsize=9)
    return [save(fig, d / f"{stem(r)}_alpha_vs_L.png", plt)]


def realizable_plots(plt: Any, directory: str | Path, res: Any) -> list[str]:
    """``verify realizable --plots``: the witness head W1 (when one was found) drawn from its exact parameter.

    * ``realizable_kernel.png``: k(delta) (relative) or the last row's logits against the offset i - j
      (absolute), with the target offset of that row marked;
    * ``realizable_margins.png``: the exact margin of every query row at the length W1 was found at, the
      margin G demanded, and the five weakest rows marked.

    Returns the paths written ([] without a witness).
    """
    from fractions import Fraction

    from verify.constructions import pe
    from verify.solver import realizable as R

    doc = res.doc
    w = doc["witnesses"].get("W1")
    if w is None or res.family is None:
        return []
    out = plot_dir(directory)
    fam, task, L0, N = res.family, res.task, res.window, int(w["found_at_length"])
    param = [[Fraction(x) for x in row] for row in w["param"]] if fam.kind != "relative" else [
        Fraction(x) for x in w["param"]]
    ar = pe.FractionArith(0)
    feats = [fam.features(m, L0, ar) for m in range(N)]
    i = N - 1
    t = pe.target_in_window(task, i, N)
    offs = list(range(N))
    if fam.kind == "relative":
        ys = [float(sum((a * b for a, b in zip(param, feats[d])), Fraction(0))) for d in offs]
        ylabel = "k(delta)"
    else:
        ys = [float(pe.logit(fam, param, i, i - d, L0, ar, feats)) for d in offs]
        ylabel = f"logit(i = {i}, j = i - delta)"
    written = []

    def emit(fig: Any, name: str) -> None:
        written.append(str(save(fig, out / name, plt, dpi=100)))

    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(offs, ys, ".-", ms=2)
    ax.axvline(i - t, color="red", ls="--", label=f"target offset i - t = {i - t} (row i = {i})")
    ax.set_xlabel("offset delta = i - j")
    ax.set_ylabel(ylabel)
    ax.set_title(f"{clip_title(fam.name, 44)}, {clip_title(task.name, 24)}: witness W1 at L = {N}", fontsize=9)
    ax.legend(fontsize=7)
    emit(fig, "realizable_kernel.png")
    margins = R.exact_margins(fam, task, param, N, L0, feats).margins
    rows = sorted(margins)
    mg = [float(margins[r]) for r in rows]
    weakest = sorted(rows, key=lambda r: margins[r])[:5]
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    ax.plot(rows, mg, ".", ms=2, label="exact margin of row i")
    ax.axhline(float(Fraction(doc["margin"])), color="grey", ls=":", label=f"margin demanded G = {doc['margin']}")
    ax.plot(weakest, [float(margins[r]) for r in weakest], "x", color="red", ms=7, label="5 weakest rows")
    ax.set_xlabel("query row i (0-indexed)")
    ax.set_ylabel("logit(target) - max other logit")
    if mg and min(mg) > 0 and max(mg) / min(mg) > 100:
        ax.set_yscale("log")
    ax.set_title(f"{clip_title(fam.name, 44)}, {clip_title(task.name, 24)}: W1's margins at L = {N}", fontsize=9)
    ax.legend(fontsize=7)
    emit(fig, "realizable_margins.png")
    return written
