"""ws24's figure (``--plots``): the layer-1 score against position t, APE against RPE."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from verify.core.model import ClaimResult
from verify.reports.plots import numbers, save, stem


def theorem2_score_vs_t(r: ClaimResult, d: Path, plt: Any) -> list[Path]:
    n = numbers(r)
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
    return [save(fig, d / f"{stem(r)}_score_vs_t.png", plt)]
