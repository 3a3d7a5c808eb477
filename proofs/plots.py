"""Figures for claim runs (``--plots DIR``): a registry of plotters keyed by claim id.

A plotter is ``plot(result, out_dir, plt) -> list[Path]`` registered with
``@plotter("paper:name")``; it reads the result's evidence numbers and returns the PNG
files it wrote, or ``[]`` when the numbers it needs are absent (e.g. the numeric layer
was skipped).  A claim without a plotter, or whose plotter wrote nothing, gets a note
(on stderr from the CLI), never an error.  matplotlib is an optional extra
(``pip install 'verify-attention[plots]'``); it is imported only when plots are asked
for, and its absence is a one-line InputError.

Number conventions the built-in plotters read (from the numeric layer's ``numbers``):

* ``ws24:theorem2``: ``score_vs_t_rpe`` and ``score_vs_t_ape``, lists indexed by the
  0-indexed position t = 2, ..., T-1 (layer-1 score against position t).
* ``kvshift24:theorem2``: ``kvsa_ih_grid = {"m": [...], "sigma": [...], "values":
  [[|KVSA - IH| for sigma] for m]}``, or ``grid_at_largest_size = {"m=M,sigma=S": value}``
  (a heat map over (m, sigma), log10 when every value is positive).
* ``pr26:*``: ``L = [...]`` with ``alpha = {PE: {task: [alpha_L per L]}}`` (one panel per
  task), or ``alpha_vs_L = {"L": [...], "alpha": {PE: [alpha_L per L]}, "task": str}``
  (alpha_L against L, one line per positional encoding).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Sequence

from verify.proofs.model import ClaimResult, InputError

__all__ = ["PLOTTERS", "plotter", "write_plots", "require_matplotlib"]

Plotter = Callable[[ClaimResult, Path, Any], list[Path]]

#: claim id (``paper:name``) or paper pattern (``paper:*``) -> plotter
PLOTTERS: dict[str, Plotter] = {}


def plotter(claim_id: str) -> Callable[[Plotter], Plotter]:
    """Register a plotter for a claim id (``paper:name``) or every claim of a paper (``paper:*``)."""

    def deco(fn: Plotter) -> Plotter:
        PLOTTERS[claim_id] = fn
        return fn

    return deco


def require_matplotlib() -> Any:
    """``matplotlib.pyplot`` with the non-interactive Agg backend.

    Raises:
        InputError: matplotlib is not installed.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plots needs matplotlib: pip install 'verify-attention[plots]'") from None
    return plt


def _stem(r: ClaimResult) -> str:
    from verify.proofs.specs import run_id

    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", run_id(r.claim, r.params)).strip("_")


def _numbers(r: ClaimResult, layer: str = "numeric") -> dict[str, Any]:
    ev = r.layer(layer)
    return ev.numbers if ev is not None and isinstance(ev.numbers, dict) else {}


def _save(fig: Any, path: Path, plt: Any) -> Path:
    """Render the figure to PNG and write it atomically (temporary file, then rename)."""
    import io

    from verify.proofs.inputs import atomic_write_bytes

    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue(), "--plots")
    return path


def _find(r: ClaimResult) -> Plotter | None:
    return PLOTTERS.get(r.claim.id) or PLOTTERS.get(f"{r.claim.paper}:*")


def write_plots(results: Sequence[ClaimResult], out_dir: str | Path) -> tuple[list[Path], list[str]]:
    """Write every available figure for ``results`` into ``out_dir``.

    Returns:
        (files written, notes about claims that have no figure).

    Raises:
        InputError: matplotlib missing or the directory cannot be created.
    """
    plt = require_matplotlib()
    d = Path(out_dir)
    try:
        d.mkdir(exist_ok=True)  # its parent was checked before any work
    except OSError as e:
        raise InputError(f"--plots {out_dir}: cannot create directory ({e.strerror or e})") from None
    files: list[Path] = []
    notes: list[str] = []
    for r in results:
        fn = _find(r)
        if fn is None:
            notes.append(f"{r.display_id}: no figure is defined for this claim")
            continue
        made = fn(r, d, plt)
        if not made:
            num = r.layer("numeric")
            if num is None or num.status in ("skipped", "error"):
                notes.append(f"{r.display_id}: no figure (the numbers it plots were not measured; run the numeric layer)")
            else:
                notes.append(f"{r.display_id}: no figure for this claim (its numeric evidence has no series to plot)")
        files.extend(made)
    return files, notes


# ---------------------------------------------------------------------------- ws24


@plotter("ws24:theorem2")
def _ws24_theorem2(r: ClaimResult, d: Path, plt: Any) -> list[Path]:
    n = _numbers(r)
    rpe, ape = n.get("score_vs_t_rpe"), n.get("score_vs_t_ape")
    if not isinstance(rpe, list) and not isinstance(ape, list):
        return []
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for name, ys, style in (("RPE", rpe, "o-"), ("APE", ape, "s--")):
        if isinstance(ys, list) and ys:
            ax.plot(range(2, 2 + len(ys)), [float(y) for y in ys], style, ms=3, label=name)
    ax.axhline(0.0, color="grey", lw=0.6)
    ax.set_xlabel("position t (0-indexed)")
    ax.set_ylabel("layer-1 score (one-step gradient)")
    ax.set_title(f"{r.display_id}: layer-1 score against position t, APE vs RPE\n"
                 f"(d = {n.get('d', '?')}, V = {n.get('V', '?')}, T = {n.get('T', '?')})", fontsize=9)
    ax.legend()
    return [_save(fig, d / f"{_stem(r)}_score_vs_t.png", plt)]


# ---------------------------------------------------------------------------- kvshift24


def _grid_from_cells(cells: Any) -> dict[str, Any] | None:
    """``{"m=0,sigma=1/64": value, ...}`` -> ``{"m": [...], "sigma": [...], "values": [[...]]}``."""
    from fractions import Fraction

    if not isinstance(cells, dict) or not cells:
        return None
    parsed: dict[tuple[str, str], float] = {}
    for key, value in cells.items():
        m = re.fullmatch(r"\s*m\s*=\s*([^,]+?)\s*,\s*sigma\s*=\s*(.+?)\s*", str(key))
        if m is None:
            return None
        try:
            parsed[(m.group(1), m.group(2))] = float(value)
        except (TypeError, ValueError):
            return None
    try:
        ms = sorted({k[0] for k in parsed}, key=lambda x: Fraction(x))
        sig = sorted({k[1] for k in parsed}, key=lambda x: Fraction(x))
    except (ValueError, ZeroDivisionError):
        return None
    vals = [[parsed.get((a, b), float("nan")) for b in sig] for a in ms]
    return {"m": ms, "sigma": sig, "values": vals}


@plotter("kvshift24:theorem2")
def _kvshift24_theorem2(r: ClaimResult, d: Path, plt: Any) -> list[Path]:
    n = _numbers(r)
    g = n.get("kvsa_ih_grid")
    if not isinstance(g, dict) or not all(k in g for k in ("m", "sigma", "values")):
        g = _grid_from_cells(n.get("grid_at_largest_size"))
    if g is None:
        return []
    vals = [[float(x) for x in row] for row in g["values"]]
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    import math

    log = all(v > 0 for row in vals for v in row if not math.isnan(v))
    shown = [[math.log10(v) if log and not math.isnan(v) else v for v in row] for row in vals]
    im = ax.imshow(shown, origin="lower", aspect="auto", cmap="viridis")
    ax.set_xticks(range(len(g["sigma"])), [str(s) for s in g["sigma"]])
    ax.set_yticks(range(len(g["m"])), [str(m) for m in g["m"]])
    ax.set_xlabel("sigma (softmax temperature)")
    ax.set_ylabel("m (ALiBi slope)")
    fig.colorbar(im, ax=ax, label="log10 max |KVSA - IH|" if log else "max |KVSA - IH|")
    ax.set_title(f"{r.display_id}: |KVSA - IH| over (m, sigma)", fontsize=9)
    return [_save(fig, d / f"{_stem(r)}_kvsa_ih.png", plt)]


# ---------------------------------------------------------------------------- pr26


@plotter("pr26:*")
def _pr26_alpha(r: ClaimResult, d: Path, plt: Any) -> list[Path]:
    n = _numbers(r)
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
    return [_save(fig, d / f"{_stem(r)}_alpha_vs_L.png", plt)]
