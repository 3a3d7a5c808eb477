"""Evidence: what one verification layer returns for one claim variant.

This module is shared by the three layers (``verify.symbolic``, ``verify.solver``,
``verify.numeric``) and by ``verify.proofs``; it imports none of them, so the import
arrows of the layout ("proofs imports the layers; the layers never import proofs")
hold.

Status taxonomy (the README, "Verdicts and evidence"), kept apart in the CrossHair manner:

========== =====================================================================
proved      a symbolic identity, or an UNSAT answer (bounded results state the bound)
refuted     a concrete witness that was re-checked in exact arithmetic
consistent  numeric agreement within a stated tolerance; never upgraded to proved
inconclusive a solver said ``unknown`` or a budget ran out; never read as a pass
error       the layer raised; shown as such, never dropped
skipped     the layer did not run (by request or because it has nothing to say)
========== =====================================================================

``outcome`` says which way the evidence points for the statement being checked:
``"holds"`` or ``"fails"``.  ``proved`` implies ``holds`` and ``refuted`` implies
``fails``; a ``consistent`` result carries the outcome its numbers agree with (for
example "consistent with FAILS: the displayed score is 1e-3 where chi(v) = 1").
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Mapping

STATUSES = ("proved", "refuted", "consistent", "inconclusive", "error", "skipped")
OUTCOMES = ("holds", "fails")
LAYERS = ("symbolic", "solver", "numeric")


@dataclass(frozen=True)
class Figure:
    """One published number set against ours (paper-against-ours, first-class).

    A claim's verdict is about its *statement*; the numbers a paper prints beside it
    (a table cell, a Monte-Carlo rate, a figure's data point) are reported separately as
    Figures, so "HOLDS" is never read as "the paper's numbers reproduced".

    Attributes:
        figure: what the number is, with its place in the paper (``"Prop. 4: RoPE on
            attend-first, alpha_30"``).
        paper: the published value (number or string as printed).
        ours: our value (number or string).
        reproduced: True when ours agrees with the paper's within the rule stated in
            ``note`` (an interval, an exact match, a stated tolerance); False otherwise.
        note: the agreement rule and, when not reproduced, the mechanism we see.
    """

    figure: str
    paper: Any
    ours: Any
    reproduced: bool
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"figure": self.figure, "paper": to_jsonable(self.paper), "ours": to_jsonable(self.ours),
                "reproduced": bool(self.reproduced), "note": self.note}


@dataclass
class Evidence:
    """The result of one layer's check of one claim variant.

    Attributes:
        layer: one of ``LAYERS``.
        status: one of ``STATUSES``.
        outcome: ``"holds"``, ``"fails"`` or ``None`` (for inconclusive/error/skipped).
        summary: one human sentence, in the paper's notation.
        numbers: measured values (JSON-serialisable after :func:`to_jsonable`).
        witness: a counterexample or satisfying assignment in the paper's notation, or None.
        certificate: a checkable certificate (e.g. the UNSAT obligations proved), or None.
        tolerance: the tolerance used and why (numeric layers), or None.
        bound: for bounded results, the bound (e.g. ``"V <= 8, eps = 1/128"``).
        engines: engine name -> version string.
        seed: the seed used (None when the layer is deterministic without one).
        wall_time_s: wall-clock seconds of the check (the only non-deterministic field).
        details: free-form lines for the report.
        figures: published numbers set against ours (:class:`Figure`); the verdict
            reason counts them separately from the statement.
    """

    layer: str
    status: str
    outcome: str | None = None
    summary: str = ""
    numbers: dict[str, Any] = field(default_factory=dict)
    witness: Any = None
    certificate: Any = None
    tolerance: str | None = None
    bound: str | None = None
    engines: dict[str, str] = field(default_factory=dict)
    seed: int | None = None
    wall_time_s: float = 0.0
    details: list[str] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.layer not in LAYERS:
            raise ValueError(f"unknown layer {self.layer!r}; expected one of {LAYERS}")
        if self.status not in STATUSES:
            raise ValueError(f"unknown status {self.status!r}; expected one of {STATUSES}")
        if self.status == "proved" and self.outcome not in (None, "holds"):
            raise ValueError("a 'proved' result supports the statement (outcome 'holds')")
        if self.status == "refuted" and self.outcome not in (None, "fails"):
            raise ValueError("a 'refuted' result contradicts the statement (outcome 'fails')")
        if self.status == "proved":
            self.outcome = "holds"
        elif self.status == "refuted":
            self.outcome = "fails"
        elif self.status == "consistent":
            if self.outcome not in OUTCOMES:
                raise ValueError("a 'consistent' result must say which outcome it agrees with")
        else:
            self.outcome = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (sympy numbers and Fractions become strings/floats)."""
        return to_jsonable(dataclasses.asdict(self))


def to_jsonable(obj: Any) -> Any:
    """Convert nested values (sympy, Fraction, numpy, torch scalars) to JSON types.

    Exact rationals are written as strings ``"p/q"`` so that no precision is lost;
    floats stay floats; anything else unknown becomes ``str(obj)``.
    """
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            return str(obj)
        return obj
    if isinstance(obj, Fraction):
        return str(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v) for v in obj]
    # numpy / torch scalars
    item = getattr(obj, "item", None)
    if callable(item) and getattr(obj, "ndim", 1) == 0:
        return to_jsonable(item())
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return to_jsonable(tolist())
    # sympy numbers
    try:
        import sympy

        if isinstance(obj, sympy.Basic):
            if obj.is_Integer:
                return int(obj)
            if obj.is_Rational:
                return str(obj)
            return str(obj)
    except ImportError:  # pragma: no cover
        pass
    return str(obj)


def timed(layer: str, fn: Callable[[], Evidence]) -> Evidence:
    """Run ``fn`` and return its Evidence with ``wall_time_s`` set.

    An exception inside ``fn`` becomes an ``error`` Evidence carrying the exception
    text: a layer that errors is shown as such and never silently dropped.
    """
    t0 = time.perf_counter()
    try:
        ev = fn()
    except Exception as exc:  # noqa: BLE001 - converted into visible evidence
        ev = Evidence(layer=layer, status="error", summary=f"{type(exc).__name__}: {exc}")
    ev.wall_time_s = round(time.perf_counter() - t0, 4)
    return ev


@dataclass(frozen=True)
class Context:
    """Run settings passed to every layer check.

    Attributes:
        seed: the master seed; every random choice derives from it explicitly.
        full: run the heavier (paper-scale) variants of numeric work.
        timeout_ms: per-obligation solver budget in milliseconds.
        progress: optional callback ``progress(message)`` for long work (stderr).
    """

    seed: int = 0
    full: bool = False
    timeout_ms: int = 20_000
    progress: Callable[[str], None] | None = None

    def note(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)


def engine_versions(*names: str) -> dict[str, str]:
    """Versions of the named engines (``sympy``, ``z3``, ``cvc5``, ``torch``, ``numpy``, ``mpmath``)."""
    out: dict[str, str] = {}
    for name in names:
        try:
            if name == "z3":
                import z3

                out["z3"] = z3.get_version_string()
            elif name == "cvc5":
                from importlib.metadata import version

                out["cvc5"] = version("cvc5")
            else:
                mod = __import__(name)
                out[name] = getattr(mod, "__version__", "?")
        except Exception:  # noqa: BLE001
            out[name] = "unavailable"
    return out
