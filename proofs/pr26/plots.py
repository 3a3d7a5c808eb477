"""pr26's figure (``--plots``): alpha_L against L, one panel per task, one line per positional encoding."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify.core.model import ClaimResult
from verify.reports.plots import numbers, save, stem


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
