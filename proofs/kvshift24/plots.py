"""kvshift24's figure (``--plots``): max |KVSA - IH| over the (m, sigma) grid of Theorem 2."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from verify.core.model import ClaimResult
from verify.reports.plots import numbers, save, stem


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


def theorem2_grid(r: ClaimResult, d: Path, plt: Any) -> list[Path]:
    n = numbers(r)
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
    return [save(fig, d / f"{stem(r)}_kvsa_ih.png", plt)]
