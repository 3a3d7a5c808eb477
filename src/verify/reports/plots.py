"""Figures for claim runs (``--plots DIR``): each paper declares its plotters (``Paper.plotters``, keyed by
claim id or ``paper:*``), and this module writes them.

A plotter is ``plot(result, out_dir, plt) -> list[Path]``; it reads the result's evidence numbers and returns the PNG
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

from verify.core.model import ClaimResult, InputError
from verify.evidence import Layer, Status

__all__ = ["Plotter", "write_plots", "require_matplotlib", "numbers", "save", "stem", "plot_dir", "clip_title"]

Plotter = Callable[[ClaimResult, Path, Any], list[Path]]


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


def stem(r: ClaimResult) -> str:
    from verify.core.specs import run_id

    return re.sub(r"[^A-Za-z0-9._+=-]+", "_", run_id(r.claim, r.params)).strip("_")


def numbers(r: ClaimResult, layer: Layer | str = Layer.NUMERIC) -> dict[str, Any]:
    ev = r.layer(layer)
    return ev.numbers if ev is not None and isinstance(ev.numbers, dict) else {}


def save(fig: Any, path: Path, plt: Any, dpi: int = 120) -> Path:
    """Render the figure to PNG (no software version in its metadata, so the bytes depend only on the figure) and
    write it atomically (temporary file, then rename)."""
    import io

    from verify.core.inputs import atomic_write_bytes

    fig.tight_layout()  # keeps the axis labels inside the image
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None})
    plt.close(fig)
    atomic_write_bytes(path, buf.getvalue(), "--plots")
    return path


def plot_dir(directory: str | Path) -> Path:
    """The ``--plots`` directory of ``verify alpha``/``verify realizable``, created if missing (its parent exists).

    Raises:
        InputError: it cannot be created.
    """
    out = Path(directory)
    try:
        out.mkdir(parents=False, exist_ok=True)
    except OSError as e:
        raise InputError(f"--plots {directory}: cannot create the directory ({e.strerror})") from None
    return out


def clip_title(name: str, n: int) -> str:
    """A name shortened to n characters for a plot title (an ellipsis marks the cut)."""
    return name if len(name) <= n else name[:n - 3] + "..."


def _find(r: ClaimResult) -> Plotter | None:
    from verify.core import registry

    plotters = registry.paper(r.claim.paper).plotters
    return plotters.get(r.claim.id) or plotters.get(f"{r.claim.paper}:*")


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
            num = r.layer(Layer.NUMERIC)
            if num is None or num.status in (Status.SKIPPED, Status.ERROR):
                notes.append(f"{r.display_id}: no figure (the numbers it plots were not measured; run the numeric layer)")
            else:
                notes.append(f"{r.display_id}: no figure for this claim (its numeric evidence has no series to plot)")
        files.extend(made)
    return files, notes
