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

import contextlib
import contextvars
import dataclasses
import enum
import math
import time
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, Callable, Iterator, Mapping


class _StrEnum(str, enum.Enum):
    """A string-valued enum that *is* its value everywhere a string is expected: it compares,
    hashes, formats and serialises (``json.dumps``) as the plain string, so ``status == "proved"``,
    ``{"proved": 1}[Status.PROVED]`` and f-strings all read the value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    def __hash__(self) -> int:
        return hash(self.value)

    def __eq__(self, other: object) -> bool:
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return str.__ne__(self, other)


class Layer(_StrEnum):
    """The verification layers, in the order they are reported (the kernel layer, Coq, last)."""

    SYMBOLIC = "symbolic"
    SOLVER = "solver"
    NUMERIC = "numeric"
    KERNEL = "kernel"

    @property
    def heading(self) -> str:
        """The layer's heading in reports."""
        return {"symbolic": "Exact symbolic check (sympy)", "solver": "Bounded solver check (SMT)",
                "numeric": "Numerical experiment (floating point)",
                "kernel": "Proof checked by a trusted kernel (Coq)"}[self.value]


class Status(_StrEnum):
    """What kind of evidence one layer produced (the taxonomy in the module docstring), from the
    strongest to none.  ``finished`` is False for the statuses that block a verdict."""

    PROVED = "proved"
    PROVED_IDEALISED = "proved (idealised)"
    REFUTED = "refuted"
    CONSISTENT = "consistent"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    SKIPPED = "skipped"

    @property
    def meaning(self) -> str:
        """One line for the audit legend and the README."""
        return _STATUS_MEANING[self.value]

    @property
    def finished(self) -> bool:
        """True when the layer reached an answer (or was not asked): not inconclusive, not an error."""
        return self.value not in ("inconclusive", "error")


_STATUS_MEANING = {
    "proved": ("proved (a theorem checked by Coq's kernel, an exact symbolic identity, or the solver showed no "
               "counterexample exists within the stated bound)"),
    "proved (idealised)": ("proved (idealised): a theorem checked by Coq's kernel under a hypothesis the paper does not "
                           "make (exactly orthonormal embeddings where it draws random ones); evidence, not a proof of "
                           "the statement"),
    "refuted": "refuted (a concrete counterexample, re-checked in exact arithmetic or checked by Coq's kernel)",
    "consistent": "consistent (floating-point agreement within the stated tolerance; evidence, not proof)",
    "inconclusive": "inconclusive (the solver answered unknown or a budget ran out)",
    "error": "error (the check raised an exception)",
    "skipped": "skipped (not run)",
}


class Outcome(_StrEnum):
    """Which way a layer's evidence points for the statement."""

    HOLDS = "holds"
    FAILS = "fails"


STATUSES = tuple(s.value for s in Status)
OUTCOMES = tuple(o.value for o in Outcome)
LAYERS = tuple(x.value for x in Layer)


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
        reproduced: True when ours agrees with the paper's by ``rule``, applied as the
            note states it; False otherwise.
        note: the agreement rule with its numbers and, when not reproduced, the mechanism we see.
        rule: the kind of comparison, one of :data:`FIGURE_RULES` (``""``: not stated by the
            layer that made the figure).  Only a number the source prints goes under ``paper``;
            a value we compute from a printed formula is ours, never the paper's.
        column: which column of a figure table the row stands in (:data:`FIGURE_COLUMNS`): ``paper`` (a number the
            source prints, set against ours), ``derived`` (the 'paper' side is our derivation from its equations: shown,
            never counted as reproduced), ``in-sample`` / ``held-out`` (a printed number our fitted parameter was, or
            was not, chosen on: both counted, each tallied apart).
    """

    figure: str
    paper: Any
    ours: Any
    reproduced: bool
    note: str = ""
    rule: str = ""
    column: str = "paper"

    def __post_init__(self) -> None:
        if self.rule and self.rule not in FIGURE_RULES:
            raise ValueError(f"unknown figure rule {self.rule!r}; valid: {', '.join(FIGURE_RULES)}")
        if self.column not in FIGURE_COLUMNS:
            raise ValueError(f"unknown figure column {self.column!r}; valid: {', '.join(FIGURE_COLUMNS)}")

    @property
    def counted(self) -> bool:
        """Whether the row counts in 'published figures reproduced': every column but ``derived``."""
        return self.column != "derived"

    def to_dict(self) -> dict[str, Any]:
        return {"figure": self.figure, "paper": to_jsonable(self.paper), "ours": at_resolution(to_jsonable(self.ours, digits=FLOAT_DIGITS)),
                "reproduced": bool(self.reproduced), "note": self.note, "rule": self.rule, "column": self.column}


#: the columns of a figure table (``Figure.column``)
FIGURE_COLUMNS = {
    "paper": "a number the paper prints, with its location, set against ours",
    "derived": "a value we derive from the paper's equations (no number printed): shown, never counted as reproduced",
    "in-sample": "a printed number a parameter we fitted was chosen on (counted, tallied apart: it cannot fail alone)",
    "held-out": "a printed number the fitted parameter was not chosen on (counted, tallied apart)",
}

#: the comparison rules a :class:`Figure` states (``Figure.rule``); one rounding rule for every printed decimal: a
#: printed 0.12 is reproduced when ours lies in the interval its digits round from, [0.115, 0.125] (or within a
#: stated tolerance where the rule says so); confidence intervals (Wilson) only for proportions
FIGURE_RULES = {
    "exact": "exact equality (a rational, an integer or a point the source asserts exactly)",
    "rounding": "ours inside the rounding interval of the printed digits (the printed value +- half a unit of its "
                "last digit, ends included)",
    "ci": "the printed value's rounding interval meets our 95% confidence interval",
    "bound": "ours satisfies the inequality the source prints",
    "tolerance": "ours within a stated tolerance of a value the source asserts (an identity's 0) or that we compute "
                 "from a formula it prints (then both values are ours)",
    "not computed": "the source prints it; we have no value of ours (counted as not reproduced)",
}


def rounding_interval(printed: str) -> tuple[Fraction, Fraction, Fraction]:
    """The value a printed decimal stands for and the interval its digits round from, exactly.

    ``"0.055"`` -> (0.055, 0.0545, 0.0555); ``"30%"`` -> (0.30, 0.295, 0.305); ``"1.78e-4"`` ->
    (1.78e-4, 1.775e-4, 1.785e-4): the printed value +- half a unit of its last printed digit.  Both
    ends are included (the printed digits are consistent with either rounding of a tie).

    Raises:
        ValueError: ``printed`` is not a decimal numeral (with an optional trailing ``%``).
    """
    text = str(printed).strip()
    pct = text.endswith("%")
    try:
        d = Decimal(text.rstrip("%").strip())
    except InvalidOperation:
        raise ValueError(f"not a printed decimal: {printed!r}") from None
    exp = d.as_tuple().exponent
    if not isinstance(exp, int):
        raise ValueError(f"not a finite printed decimal: {printed!r}")
    v = Fraction(d)
    half = Fraction(1, 2) * Fraction(10) ** exp
    if pct:
        v, half = v / 100, half / 100
    return v, v - half, v + half


@dataclass
class SolverProvenance:
    """How the solver layer's answers were obtained: a typed slot the verdict logic reads (the
    ``numbers`` dict is for display only).

    Each list holds obligation names (in the paper's notation).

    Attributes:
        solvers: the engines that answered (``["z3"]`` or ``["z3", "cvc5"]``).
        obligations: how many obligations were checked.
        farkas_rechecked: UNSAT answers whose Farkas certificate passed the exact re-check.
        cvc5_confirmed: UNSAT answers without a re-checked certificate that cvc5 also answered UNSAT.
        z3_only: UNSAT answers with neither (z3 alone is not "proved": the layer reports inconclusive).
        disagreements: obligations where z3 and cvc5 contradict each other (sat against unsat): the
            claim becomes INCONSISTENT.
        farkas_failed: UNSAT answers whose certificate FAILED its exact re-check (an error).
        cvc5_agrees: obligations where cvc5 gave z3's answer.
        cvc5_unknown: obligations where cvc5 answered unknown.
    """

    solvers: list[str] = field(default_factory=lambda: ["z3"])
    obligations: int = 0
    farkas_rechecked: list[str] = field(default_factory=list)
    cvc5_confirmed: list[str] = field(default_factory=list)
    z3_only: list[str] = field(default_factory=list)
    disagreements: list[str] = field(default_factory=list)
    farkas_failed: list[str] = field(default_factory=list)
    cvc5_agrees: int = 0
    cvc5_unknown: int = 0

    def merged(self, other: "SolverProvenance", prefix: str = "") -> "SolverProvenance":
        """The provenance of both sets of obligations (``prefix`` labels the other's names)."""
        def names(xs: list[str]) -> list[str]:
            return [prefix + x for x in xs]

        return SolverProvenance(
            solvers=sorted(set(self.solvers) | set(other.solvers), key=["z3", "cvc5"].index),
            obligations=self.obligations + other.obligations,
            farkas_rechecked=self.farkas_rechecked + names(other.farkas_rechecked),
            cvc5_confirmed=self.cvc5_confirmed + names(other.cvc5_confirmed),
            z3_only=self.z3_only + names(other.z3_only),
            disagreements=self.disagreements + names(other.disagreements),
            farkas_failed=self.farkas_failed + names(other.farkas_failed),
            cvc5_agrees=self.cvc5_agrees + other.cvc5_agrees,
            cvc5_unknown=self.cvc5_unknown + other.cvc5_unknown)


@dataclass
class Evidence:
    """The result of one layer's check of one claim variant.

    The constructor takes each of ``layer``, ``status`` and ``outcome`` as the enum or as its string
    value (``status="proved"`` and ``status=Status.PROVED`` build the same Evidence, so a claim pack
    written with strings keeps working); the fields always hold the enums, and every reader compares
    them with the enum members.

    Attributes:
        layer: the layer (:class:`Layer`).
        status: what kind of evidence it is (:class:`Status`).
        outcome: which way it points (:class:`Outcome`), or ``None`` (for inconclusive/error/skipped).
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
        solver: for the solver layer, how its answers were obtained (:class:`SolverProvenance`);
            the verdict logic reads it (a z3-only UNSAT is not proved, a z3/cvc5 contradiction is
            INCONSISTENT).  Shown through ``numbers``; not repeated in the JSON.
    """

    layer: Layer
    status: Status
    outcome: Outcome | None = None
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
    solver: SolverProvenance | None = None

    def __init__(self, layer: Layer | str, status: Status | str, outcome: Outcome | str | None = None,
                 summary: str = "", numbers: dict[str, Any] | None = None, witness: Any = None,
                 certificate: Any = None, tolerance: str | None = None, bound: str | None = None,
                 engines: dict[str, str] | None = None, seed: int | None = None, wall_time_s: float = 0.0,
                 details: list[str] | None = None, figures: list[Figure] | None = None,
                 solver: SolverProvenance | None = None) -> None:
        if layer not in LAYERS:
            raise ValueError(f"unknown layer {layer!r}; expected one of {LAYERS}")
        if status not in STATUSES:
            raise ValueError(f"unknown status {status!r}; expected one of {STATUSES}")
        self.layer = Layer(layer)
        self.status = Status(status)
        self.outcome = _outcome(self.status, outcome)
        self.summary = summary
        self.numbers = {} if numbers is None else numbers
        self.witness = witness
        self.certificate = certificate
        self.tolerance = tolerance
        self.bound = bound
        self.engines = {} if engines is None else engines
        self.seed = seed
        self.wall_time_s = wall_time_s
        self.details = [] if details is None else details
        self.figures = [] if figures is None else figures
        self.solver = solver

    def to_dict(self, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
        """A JSON-ready dict (sympy numbers and Fractions become strings/floats); the typed
        ``solver`` slot is shown through ``numbers`` and left out here.  Keys in ``drop`` are left
        out at every depth (a report leaves out heavy certificates without converting them).

        Measured floats are written to :data:`FLOAT_DIGITS` significant digits, and a numeric layer's
        ``numbers`` and ``witness`` at the resolution :data:`ROUNDING_LEVEL` (:func:`at_resolution`): the
        JSON carries no digit that depends on the CPU's vector width (README, "JSON schema `verify/1`",
        lists the fields that still may)."""
        d = to_jsonable({f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "solver"},
                        drop, digits=FLOAT_DIGITS)
        if self.layer == Layer.NUMERIC:
            for k in ("numbers", "witness"):
                if k in d:
                    d[k] = at_resolution(d[k])
        return d


def _outcome(status: Status, outcome: Outcome | str | None) -> Outcome | None:
    """The outcome an Evidence of ``status`` carries: ``proved`` implies holds and ``refuted`` fails,
    ``consistent`` must state one, the statuses that decide nothing carry none.

    Raises:
        ValueError: an outcome that contradicts the status, or a ``consistent`` result without one.
    """
    given = Outcome(outcome) if outcome is not None and outcome in OUTCOMES else outcome
    if status == Status.PROVED and given not in (None, Outcome.HOLDS):
        raise ValueError("a 'proved' result supports the statement (outcome 'holds')")
    if status == Status.REFUTED and given not in (None, Outcome.FAILS):
        raise ValueError("a 'refuted' result contradicts the statement (outcome 'fails')")
    if status == Status.PROVED_IDEALISED and given not in (None, Outcome.HOLDS):
        raise ValueError("a 'proved (idealised)' result supports the statement (outcome 'holds')")
    if status in (Status.PROVED, Status.PROVED_IDEALISED):
        return Outcome.HOLDS
    if status == Status.REFUTED:
        return Outcome.FAILS
    if status == Status.CONSISTENT:
        if not isinstance(given, Outcome):
            raise ValueError("a 'consistent' result must say which outcome it agrees with")
        return given
    return None


#: significant digits of a measured float in the JSON (:meth:`Evidence.to_dict`, :meth:`Figure.to_dict`).  float64
#: carries 15-17; in these checks the digits past the 10th differ between CPUs (a reduction's order follows the
#: vector width: pr26 margins by up to 3e-12 relative, kvshift24:theorem1's fitted rates by 2e-11), so they are
#: rounded away.  Inputs (``params``) and exact values (Fractions: ``"p/q"``; ints) are never rounded.  A value computed
#: in float32 (ws24's layer-1 scores) still differs from about its 7th digit: README, "JSON schema `verify/1`".
FLOAT_DIGITS = 10

#: a float computed in float64 from O(1) quantities (logits, probabilities, relative deviations) cannot be resolved
#: below this magnitude (a few thousand units of float64 rounding, 2^-53 = 1.1e-16): a numeric layer's value under it
#: is a rounding-level quantity whose digits are noise (ws24:prop4's max_abs_error was 1.6653345369377348e-16 on one
#: CPU, kvshift24:decode's float64 deviation 1.8e-16 on one and 1.2e-16 on another)
ROUNDING_LEVEL = 1e-12

#: how a rounding-level value is written: a bound on its magnitude (its sign and digits are noise)
ROUNDING_BOUND = "|x| < 1e-12"


def fmt_measured(x: float, spec: str = ".2g") -> str:
    """A measured float64 value for a sentence: ``format(x, spec)``, or ``"< 1e-12"`` when it is nonzero and at
    rounding level (:data:`ROUNDING_LEVEL`), so that a summary quoting it reads the same on every CPU."""
    return f"< {ROUNDING_LEVEL:g}" if 0 < abs(x) < ROUNDING_LEVEL else format(x, spec)


def recorded_within(x: float, bound: float, digits: int = 3) -> float | str:
    """A measured value as recorded when a check bounds it: at or below ``bound``, the bound itself (``"<= 1e-06"``:
    below it the digits follow the CPU), above it ``digits`` significant digits (a real excess)."""
    return f"<= {bound:g}" if x <= bound else float(f"{x:.{digits}g}")


#: the resolution of a value a library computes in float32 from O(1) quantities (ALiBi slopes read from a model's
#: float32 softmax, a RoPE score spread from float32 cos and sin): about 170 units of float32 rounding (2^-24), since
#: a chain of float32 kernels moves such a value by 1e-7 to 1e-6 between CPUs (measured under
#: :mod:`verify.floatnoise`)
FLOAT32_LEVEL = 1e-5


def at_resolution(obj: Any, level: float = ROUNDING_LEVEL) -> Any:
    """``obj`` (JSON-ready) with its floats at the absolute resolution ``level`` (default :data:`ROUNDING_LEVEL`): a
    nonzero float of magnitude below it becomes the bound ``"|x| < level"`` (:data:`ROUNDING_BOUND` at the default),
    any other is rounded to the decimal places of ``level`` (12 by default: so 7.4245289065e-07, whose last digits
    moved with the CPU, is written 7.42453e-07).  Exact zeros, ints, bools and strings (exact rationals) are kept."""
    if isinstance(obj, float):
        if obj != 0.0 and abs(obj) < level:
            return ROUNDING_BOUND if level == ROUNDING_LEVEL else f"|x| < {level:g}"
        return round(obj, max(0, -math.floor(math.log10(level))))
    if isinstance(obj, dict):
        return {k: at_resolution(v, level) for k, v in obj.items()}
    if isinstance(obj, list):
        return [at_resolution(v, level) for v in obj]
    return obj


def to_jsonable(obj: Any, drop: frozenset[str] = frozenset(), digits: int | None = None) -> Any:
    """Convert nested values (dataclasses, sympy, Fraction, numpy, torch scalars) to JSON types.

    Exact rationals are written as strings ``"p/q"`` so that no precision is lost; ints stay ints;
    floats stay floats, rounded to ``digits`` significant digits when given (measured values:
    :data:`FLOAT_DIGITS`; ``None`` keeps every digit, for inputs); a dataclass instance becomes the dict
    of its fields, in order (as ``dataclasses.asdict`` gives, without its deep copy); anything else
    unknown becomes ``str(obj)``.  Mapping keys in ``drop`` are left out at every depth.
    """
    if isinstance(obj, enum.Enum):
        return to_jsonable(obj.value)
    if obj is None or isinstance(obj, (bool, int, str)):
        return obj
    if isinstance(obj, float):
        if obj != obj or obj in (float("inf"), float("-inf")):
            return str(obj)
        return obj if digits is None else float(f"{obj:.{digits}g}")
    if isinstance(obj, Fraction):
        return str(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_jsonable(v, drop, digits) for k, v in obj.items() if str(k) not in drop}
    if isinstance(obj, (list, tuple)):
        return [to_jsonable(v, drop, digits) for v in obj]
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: to_jsonable(getattr(obj, f.name), drop, digits) for f in dataclasses.fields(obj)}
    # numpy / torch scalars
    item = getattr(obj, "item", None)
    if callable(item) and getattr(obj, "ndim", 1) == 0:
        return to_jsonable(item(), drop, digits)
    tolist = getattr(obj, "tolist", None)
    if callable(tolist):
        return to_jsonable(tolist(), drop, digits)
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


def timed(layer: Layer | str, fn: Callable[[], Evidence]) -> Evidence:
    """Run ``fn`` and return its Evidence with ``wall_time_s`` set.

    An exception inside ``fn`` becomes an ``error`` Evidence carrying the exception
    text: a layer that errors is shown as such and never silently dropped.
    """
    t0 = time.perf_counter()
    try:
        ev = fn()
    except Exception as exc:  # noqa: BLE001 - converted into visible evidence
        ev = Evidence(layer=layer, status=Status.ERROR, summary=f"{type(exc).__name__}: {exc}")
    ev.wall_time_s = round(time.perf_counter() - t0, 4)
    return ev


#: the size profiles (:attr:`Context.profile`): the default sizes, and the paper-scale ones of ``--full``
PROFILES = ("quick", "full")
#: the per-obligation solver budget, seconds, of every front end (the CLI's ``--timeout``, the pytest plugin's
#: ``--verify-timeout``, :func:`verify.api.check_claim`'s ``timeout_s``)
DEFAULT_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class Context:
    """The run's settings, built once (by the CLI, the pytest plugin or :func:`verify.api.check_claim`)
    and passed to every layer check, as Hypothesis passes ``settings``.

    Attributes:
        seed: the master seed; every random choice derives from it explicitly.
        profile: the size profile, one of :data:`PROFILES`: ``"quick"`` (the default sizes) or ``"full"`` (the
            paper-scale sizes of ``--full``).  Each size that differs between them is declared once with both
            values: on the claim option (``param(..., full=...)``) or in its paper's :class:`Sized` table, and
            ``verify show CLAIM`` lists both.
        timeout_ms: per-obligation solver budget in milliseconds (default :data:`DEFAULT_TIMEOUT_S`).
        certify: solver layer: derive a Farkas certificate for every linear UNSAT and re-check it in
            exact rationals (on by default; off only to measure its cost).
        second_opinion: solver layer: when cvc5 re-solves an obligation: ``"auto"`` (every obligation
            without a re-checked certificate), ``"always"`` or ``"never"``.
        cache_dir: checkpoint cache of the trained-model claims (None: the user cache directory,
            ``$XDG_CACHE_HOME/verify/lab`` or ``~/.cache/verify/lab``).
        progress: optional callback ``progress(message)`` for long work (stderr).
        claim_jobs: worker processes of ``verify CLAIM`` (None: one per core).  The test suite makes 1 the
            default (``using(Context(claim_jobs=1))``): its in-process fault injections would not reach workers.

    Raises:
        ValueError: an unknown profile or ``second_opinion`` policy, a non-positive budget or job count.
    """

    seed: int = 0
    profile: str = "quick"
    timeout_ms: int = round(DEFAULT_TIMEOUT_S * 1000)
    certify: bool = True
    second_opinion: str = "auto"
    cache_dir: str | None = None
    progress: Callable[[str], None] | None = field(default=None, compare=False)
    claim_jobs: int | None = None

    def __post_init__(self) -> None:
        if self.profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {self.profile!r}")
        if self.claim_jobs is not None and self.claim_jobs < 1:
            raise ValueError(f"claim_jobs must be >= 1, got {self.claim_jobs}")
        if self.second_opinion not in SECOND_OPINION_POLICIES:
            raise ValueError(f"second_opinion must be one of {SECOND_OPINION_POLICIES}, got {self.second_opinion!r}")
        if self.timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be > 0, got {self.timeout_ms}")

    @property
    def full(self) -> bool:
        """True under the paper-scale profile (``--full``)."""
        return self.profile == "full"

    def size(self, declared: "Sized") -> Any:
        """A declared size's value under this run's profile."""
        return declared.at(self.profile)

    def note(self, message: str) -> None:
        if self.progress is not None:
            self.progress(message)

    def replace(self, **changes: Any) -> "Context":
        """A copy with some settings changed (the original is frozen)."""
        return dataclasses.replace(self, **changes)


#: cvc5 second-opinion policies (:attr:`Context.second_opinion`)
SECOND_OPINION_POLICIES = ("auto", "always", "never")


def profile_for(full: bool) -> str:
    """The profile a ``--full`` flag (or ``full=`` argument) selects."""
    return PROFILES[1] if full else PROFILES[0]


@dataclass(frozen=True)
class Sized:
    """A work size that is not a claim option (a sample count, a list of lengths, an extra pass on or off),
    declared once with its value under each profile of :data:`PROFILES`.  A paper keeps its sizes in one
    table; a claim's typed parameters name theirs (``Params.sizes``), so ``verify show CLAIM`` lists both values.

    Attributes:
        quick: the value under the default profile.
        full: the value under ``--full``.
        help: one line: what the size counts.
    """

    quick: Any
    full: Any
    help: str = ""

    def at(self, profile: str) -> Any:
        """The value under ``profile``.

        Raises:
            ValueError: a profile not in :data:`PROFILES`.
        """
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
        return self.full if profile == "full" else self.quick


_DEFAULT_SETTINGS = Context()
_CURRENT: contextvars.ContextVar[Context | None] = contextvars.ContextVar("verify_settings", default=None)


def current_settings() -> Context:
    """The settings of the layer check running now (:func:`using`), or the defaults outside one.
    Deep solver helpers read ``certify``/``second_opinion`` here instead of module globals."""
    return _CURRENT.get() or _DEFAULT_SETTINGS


@contextlib.contextmanager
def using(ctx: Context) -> Iterator[Context]:
    """Make ``ctx`` the current settings for the duration of a ``with`` block (restored after)."""
    token = _CURRENT.set(ctx)
    try:
        yield ctx
    finally:
        _CURRENT.reset(token)


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
                # a plain str: torch's TorchVersion would import torch into whatever unpickles the evidence
                out[name] = str(getattr(mod, "__version__", "?"))
        except Exception:  # noqa: BLE001
            out[name] = "unavailable"
    return out
