"""Thresholds of a decision rule and the sensitivity line of a verdict: the verdict at each declared threshold and at
both ends of the range of each threshold of ours (a verdict that flips inside a range is undecided).  Torch-free and
import-free, so the layers that decide (numeric/) and the protocols that declare (verify.core.protocol) share it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence


@dataclass(frozen=True)
class Threshold:
    """One number the decision rule compares with.

    Attributes:
        name: what it bounds, in the statement's terms.
        value: the declared value.
        source: ``"paper: <section>"`` when the paper prints it, else ``"ours: <reason>"``.
        low, high: for a threshold of ours, the range its sensitivity line covers (the verdict is recomputed at
            both ends; a verdict that flips inside the range is INCONCLUSIVE).
    """

    name: str
    value: float
    source: str
    low: float | None = None
    high: float | None = None

    def __post_init__(self) -> None:
        if not self.source.startswith(("paper:", "ours:")):
            raise ValueError(f"threshold {self.name!r}: source must start 'paper:' or 'ours:'")
        if self.source.startswith("ours:") and (self.low is None or self.high is None
                                                or not self.low <= self.value <= self.high):
            raise ValueError(f"threshold {self.name!r} is ours: it needs a sensitivity range low <= value <= high")

    @property
    def ends(self) -> tuple[float, ...]:
        """The values the sensitivity line decides at: the declared one, then the range's ends (ours only)."""
        return (self.value,) if self.low is None or self.high is None else (self.value, self.low, self.high)


def sensitivity(decide: Any, thresholds: Sequence[Threshold]) -> tuple[Any, list[str]]:
    """The verdict at every declared threshold and at each end of each range of ours (the others at their declared
    values), and its sensitivity lines; INCONCLUSIVE (None) when it flips inside a range.

    Args:
        decide: ``{name: value} -> outcome | None`` (an :class:`verify.evidence.Outcome`, or None: undecided).
        thresholds: the protocol's thresholds.
    """
    base = {t.name: t.value for t in thresholds}
    at = decide(base)
    lines, flips = [], []
    for t in thresholds:
        if t.low is None or t.high is None:
            continue
        lo, hi = decide({**base, t.name: t.low}), decide({**base, t.name: t.high})
        said = [("inconclusive" if v is None else str(v)) for v in (lo, at, hi)]
        lines.append(f"{t.name}: {said[0]} at {t.low:g}, {said[1]} at {t.value:g}, {said[2]} at {t.high:g}")
        if len({lo, at, hi}) > 1:
            flips.append(t.name)
    if flips:
        lines.append("the verdict flips inside the declared range of " + ", ".join(flips) + ": INCONCLUSIVE")
        return None, lines
    return at, lines
