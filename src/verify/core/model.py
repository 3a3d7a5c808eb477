"""Claims, options, and the run of one claim variant.

The core objects.  A :class:`Claim` is one published statement (``paper:name``) with its source, its statement as
written, its options (variants such as ``--orientation``) and one check per layer.  Running a claim variant yields
one :class:`~verify.evidence.Evidence` per layer; :func:`finish_claim` turns them into a :class:`ClaimResult` by the
rules of :mod:`verify.core.verdicts` (the verdict order, :func:`~verify.core.verdicts.aggregate`, parts), whose
names this module re-exports.  A claim with parts (:class:`Part`: a formula and its minimiser) has a verdict per part
from the same evidence; the claim FAILS when any part fails, and its reason says whether the failing parts are
load-bearing (the paper's main conclusion) or not.
"""

from __future__ import annotations

import dataclasses
import math
import re
from contextlib import contextmanager
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, ClassVar, Iterator, Mapping, Sequence

from verify import floatnoise, interrupts
from verify.core.verdicts import (  # noqa: F401  (re-exported: the verdict names live in verify.core.model too)
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
    FAILS,
    HOLDS,
    HOLDS_WITH_FIX,
    INCONCLUSIVE,
    INCONSISTENT,
    VERDICT_EXIT,
    VERDICTS,
    Verdict,
    aggregate,
    depends_on,
    layer_verdict,
    only_part_verdict,
    part_verdict,
    second_way_required,
    with_parts,
)
from verify.evidence import LAYERS, PROFILES, Context, Evidence, Figure, Layer, Outcome, Sized, Status, timed, using


class VerifyError(Exception):
    """The root of the errors this package raises on purpose; the CLI maps each kind to its exit
    code in one place (:data:`verify.frontends.cli.ERROR_EXIT`)."""


class InputError(VerifyError, ValueError):
    """Bad user input (unknown claim, bad option value, sizes that cannot fit).

    The CLI prints the message as one line and exits 2 before any work starts.
    """


class InconclusiveError(VerifyError):
    """A computation could not reach an answer (a diverged fit, a solver that did not answer): not a
    pass and not a failure.  The CLI exits 3, as for an INCONCLUSIVE verdict."""


@dataclass(frozen=True)
class Option:
    """One claim option, exposed on the command line as ``--NAME VALUE``.

    Attributes:
        name: the flag without dashes, in the paper's symbol where there is one
            (``orientation``, ``d``, ``V``, ``T``, ``m``, ``sigma``, ``L``).
        help: one line.
        default: the parsed default value.
        kind: ``"choice"``, ``"int"``, ``"float"``, ``"rational"`` (Fraction; accepts
            ``0.5`` or ``1/2``) or ``"text"`` (a printable one-line string of at most
            ``maximum`` characters, default :data:`MAX_TEXT_CHARS`; the claim's ``validate``
            reads it, e.g. a token sequence or a file path).
        choices: allowed values for ``"choice"``.
        minimum, maximum: inclusive bounds for numeric kinds (None = unbounded).
        variant: True when the option selects a variant of the statement (e.g. the
            orientation or the fix); such options label results and expectations.
        full: the option's value under the ``full`` profile (``--full``): a value that replaces the
            one given, or :class:`Times` (the value given, scaled); None: the same under every profile.
    """

    name: str
    help: str
    default: Any
    kind: str = "choice"
    choices: tuple[str, ...] = ()
    minimum: Any = None
    maximum: Any = None
    variant: bool = False
    full: Any = None

    @property
    def flag(self) -> str:
        return "--" + self.name

    def at(self, value: Any, profile: str) -> Any:
        """The value the checks use under ``profile`` when the option holds ``value``."""
        if profile not in PROFILES:
            raise ValueError(f"profile must be one of {PROFILES}, got {profile!r}")
        if profile == "quick" or self.full is None:
            return value
        return self.full.scale(value) if isinstance(self.full, Times) else self.full

    def parse(self, raw: Any) -> Any:
        """Parse and range-check a raw command-line value.

        Numbers follow a strict grammar (decimal integers; decimals with an optional
        exponent of at most three digits for floats and rationals; ``p/q`` for rationals),
        at most :data:`MAX_OPTION_CHARS` characters, finite, and inside the option's bounds;
        an option with no stated maximum is capped at :data:`DEFAULT_MAX_MAGNITUDE` in
        absolute value (no layer can use a larger size, slope or scale).

        Raises:
            InputError: with a one-line message naming the flag and what is allowed.
        """
        if raw is None:
            return self.default
        text = str(raw).strip()
        shown = text if len(text) <= 40 else text[:20] + "..." + f" ({len(text)} characters)"
        if self.kind == "choice":
            if text not in self.choices:
                raise InputError(
                    f"{self.flag} {shown!r} is not valid; choose one of: {', '.join(self.choices)}"
                )
            return text
        if self.kind == "text":
            cap = self.maximum if self.maximum is not None else MAX_TEXT_CHARS
            if len(text) > cap:
                raise InputError(f"{self.flag} takes at most {cap} characters, got {len(text)}")
            if not text.isprintable():
                raise InputError(f"{self.flag} must be one line of printable characters, got {shown!r}")
            return text
        grammar = {"int": _INT, "float": _FLOAT, "rational": _RATIONAL_OPT}[self.kind]
        if len(text) > MAX_OPTION_CHARS or not grammar.fullmatch(text):
            want = {"int": "an integer", "float": "a decimal number (e.g. 0.5 or 1e-3)",
                    "rational": "a number such as 0.5, 1e-3 or 1/2"}[self.kind]
            raise InputError(f"{self.flag} expects {want}, got {shown!r}")
        try:
            if self.kind == "int":
                val: Any = int(text)
            elif self.kind == "float":
                val = float(text)
            else:
                val = Fraction(text)
        except (ValueError, ZeroDivisionError):
            raise InputError(f"{self.flag} expects a finite number, got {shown!r}") from None
        if self.kind == "float" and not math.isfinite(val):
            raise InputError(f"{self.flag} expects a finite number, got {shown!r}")
        if self.minimum is not None and val < self.minimum:
            raise InputError(f"{self.flag} must be >= {self.minimum}, got {shown}")
        top = self.maximum if self.maximum is not None else DEFAULT_MAX_MAGNITUDE
        if val > top:
            raise InputError(f"{self.flag} must be <= {top}, got {shown}")
        if self.minimum is None and val < -DEFAULT_MAX_MAGNITUDE:
            raise InputError(f"{self.flag} must be >= {-DEFAULT_MAX_MAGNITUDE}, got {shown}")
        return val


#: longest numeric option value accepted, characters
MAX_OPTION_CHARS = 40
#: longest ``"text"`` option value accepted unless the option states its own ``maximum``
MAX_TEXT_CHARS = 1000
#: cap on |value| for numeric options that state no maximum of their own
DEFAULT_MAX_MAGNITUDE = 10**6
_INT = re.compile(r"[+-]?[0-9]{1,18}")
_FLOAT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")
_RATIONAL_OPT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?|[+-]?[0-9]{1,18}/[0-9]{1,18}")


@dataclass(frozen=True)
class Times:
    """An option's ``full`` value that scales the value given (``param(400, ..., full=Times(4))``: 400 steps by
    default, 1600 under ``--full``, and ``--steps 250 --full`` runs 1000)."""

    factor: int

    def scale(self, value: Any) -> Any:
        return value * self.factor

    def __str__(self) -> str:
        return f"{self.factor}x the value given"


def param(default: Any, help: str, *, kind: str = "choice", choices: Sequence[str] = (),
          minimum: Any = None, maximum: Any = None, variant: bool = False, name: str | None = None,
          full: Any = None) -> Any:
    """A field of a claim's typed parameters (:class:`Params`) that is also a command-line option.

    The field's name becomes the flag (``--NAME``) unless ``name`` gives another one (for flags
    that are not identifiers, such as ``weight-decay``); the mapping view and the JSON use the
    option name.  The other arguments are those of :class:`Option`.  Use it as ``fix: str = param("none", "KVSA variant", choices=VARIANTS,
    variant=True)``; keep ``choices`` shared with the construction that reads the value.  ``full`` declares
    the value under ``--full`` (:attr:`Option.full`); the checks read it with :meth:`Params.profiled`.
    """
    meta = {"option": dict(help=help, kind=kind, choices=tuple(choices), minimum=minimum, maximum=maximum,
                           variant=variant, full=full), "name": name}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Params(Mapping[str, Any]):
    """Base class of a claim's typed parameters: a frozen dataclass whose fields, declared with
    :func:`param`, carry the option's help, kind, range and variant flag.

    An instance is what every layer check receives.  It reads as attributes (``p.sigma``) and,
    for code written against plain dicts, as a read-only mapping (``p["sigma"]``,
    ``p.get("alibi")``, ``dict(p)``).  :meth:`options` generates the claim's command-line
    options from the fields, so a claim declares each option once.

    ``sizes`` names the claim's work sizes that are not options (entries of its paper's table of
    :class:`~verify.evidence.Sized`, read under the run's profile with ``ctx.size``); ``verify show`` lists them.
    """

    sizes: ClassVar[Mapping[str, Sized]] = {}

    @classmethod
    def options(cls) -> tuple["Option", ...]:
        """The command-line options, one per field, in field order."""
        out = []
        for f in dataclasses.fields(cls):
            meta = f.metadata.get("option")
            if meta is None:
                raise TypeError(f"{cls.__name__}.{f.name} is not declared with param()")
            out.append(Option(f.metadata.get("name") or f.name, default=f.default, **meta))
        return tuple(out)

    @classmethod
    def from_options(cls, values: Mapping[str, Any]) -> "Params":
        """An instance from option-name -> parsed value (as :meth:`Claim.parse_params` builds it)."""
        return cls(**{field: values[name] for name, field in cls._fields_by_name().items() if name in values})

    @classmethod
    def _fields_by_name(cls) -> dict[str, str]:
        return {f.metadata.get("name") or f.name: f.name for f in dataclasses.fields(cls)}

    def __getitem__(self, key: str) -> Any:
        field_name = self._fields_by_name().get(key)
        if field_name is None:
            raise KeyError(key)
        return getattr(self, field_name)

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    @classmethod
    def _names(cls) -> tuple[str, ...]:
        return tuple(cls._fields_by_name())

    def profiled(self, name: str, ctx: Context) -> Any:
        """Option ``name``'s value under the run's profile: the value given, or under ``--full`` the option's
        declared ``full`` value (:attr:`Option.full`)."""
        opt = next((o for o in self.options() if o.name == name), None)
        if opt is None:
            raise KeyError(name)
        return opt.at(self[name], ctx.profile)


@dataclass(frozen=True)
class NoParams(Params):
    """The parameters of a claim that takes no option."""


#: the provenance kinds of a claim variant's statement, each with the words reports label it by
PROVENANCE_KINDS: dict[str, str] = {
    "paper": "the paper's statement",
    "reading": "our reading of the paper's statement",
    "hazard": "an implementation hazard (ours, not the paper's)",
    "repair": "our repair of the paper's statement",
    "outside": "a different construction, outside the form the paper quantifies over (a finding, not a repair)",
    "contract": "an implementation's contract (what the library promises; no paper states it)",
}

#: a part's role in its claim: ``main`` carries the paper's conclusion, ``detail`` does not
PART_ROLES: dict[str, str] = {"main": "load-bearing", "detail": "not load-bearing"}


@dataclass(frozen=True)
class Provenance:
    """Whose words a claim variant's statement is: the paper's (quoted in :attr:`Claim.statement` with its
    :attr:`Claim.source`), our reading of an ambiguous statement, an implementation hazard we added, or our
    repair.  ``why`` says why a reading, hazard or repair exists (empty for the paper's statement)."""

    kind: str
    why: str = ""

    def __post_init__(self) -> None:
        if self.kind not in PROVENANCE_KINDS:
            raise ValueError(f"provenance {self.kind!r} is not one of {', '.join(PROVENANCE_KINDS)}")

    @property
    def label(self) -> str:
        """The words reports put in a heading (:data:`PROVENANCE_KINDS`)."""
        return PROVENANCE_KINDS[self.kind]

    @property
    def is_paper(self) -> bool:
        return self.kind == "paper"

    def to_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "label": self.label, "why": self.why}


#: a part's judge: ``(params, evidence) -> (outcome, or None when undecided; the evidence in one sentence;
#: the layers it read; each layer's result in one line, by layer)``
PartJudge = Callable[[Any, Sequence[Evidence]], "tuple[Outcome | None, str, Sequence[str], Mapping[str, str]]"]


@dataclass(frozen=True)
class Part:
    """One part of a claim whose statement says several things (Theorem 3: a formula and its minimiser),
    judged on its own from the claim's evidence.

    Attributes:
        name: short name (``printed formula``).
        role: ``main`` when the paper's conclusion rests on it (a failure is load-bearing), ``detail`` otherwise.
        statement: what the part says, in the paper's terms.
        judge: reads the layers' evidence (:data:`PartJudge`).
        repairable: a variant's repair applies to this part (a holding part is then HOLDS WITH FIX); False for a part
            whose statement does not change with the variant (an existence statement over every layer of the paper's
            form), or that names the changed construction itself: a holding part is HOLDS.
        quantifiers: what the part's statement quantifies ("there exists a layer of Eqs. 4-6 ... for every input")
            and what the check decides it over, printed by ``verify show``.
    """

    name: str
    role: str
    statement: str
    judge: PartJudge
    repairable: bool = True
    quantifiers: str = ""

    def __post_init__(self) -> None:
        if self.role not in PART_ROLES:
            raise ValueError(f"part {self.name!r}: role must be one of {', '.join(PART_ROLES)}, got {self.role!r}")

    @property
    def key(self) -> str:
        """The part's name as ``--part`` takes it: its words before a parenthesis, spaces as hyphens
        (``minimiser (0, 1)`` -> ``minimiser``)."""
        return self.name.split(" (", 1)[0].strip().replace(" ", "-")


@dataclass
class PartResult:
    """One part's verdict and its evidence (:attr:`ClaimResult.parts`)."""

    name: str
    role: str
    statement: str
    verdict: Verdict
    evidence: str
    layers: list[str]
    by_layer: dict[str, str] = field(default_factory=dict)

    @property
    def severity(self) -> str:
        """``load-bearing`` / ``not load-bearing``, from the part's declared role (:data:`PART_ROLES`)."""
        return PART_ROLES[self.role]

    def to_dict(self) -> dict[str, Any]:
        return {"part": self.name, "role": self.role, "severity": self.severity, "statement": self.statement,
                "verdict": self.verdict.value, "evidence": self.evidence, "layers": list(self.layers),
                "by_layer": dict(self.by_layer)}


def missing_packages(requires: Sequence[tuple[str, str]]) -> list[str]:
    """The hints of the ``(module, install hint)`` pairs whose module this environment cannot import (a broken or
    blocked install counts as missing); the module is located, never imported."""
    import importlib.util

    def absent(module: str) -> bool:
        try:
            return importlib.util.find_spec(module) is None
        except (ImportError, ValueError):
            return True

    return [hint for module, hint in requires if absent(module)]


#: a layer check: ``(params, ctx) -> Evidence``; params is the claim's :class:`Params` instance
LayerCheck = Callable[[Any, Context], Evidence]


@dataclass(frozen=True)
class Claim:
    """One published statement and its three checks.

    Attributes:
        id: ``paper:name`` (e.g. ``ws24:theorem2``).
        title: short title.
        source: paper, arXiv id, theorem/equation.
        statement: the statement as written, one sentence in the paper's notation.
        options: the claim's options, generated from ``params_type`` (pass ``options=()``).
        checks: layer name -> check function ``(params, ctx) -> Evidence``.
        variants: the variants ``verify all`` runs, as dicts of variant-option values.
        expected: variant label -> expected verdict (the catalog's known answer); a verdict may be
            given as its string value, and is stored as the :class:`Verdict`
            (:meth:`expected_verdict` reads it).
        fix: ``params -> description`` of the repair a variant applies, or None when the
            variant is the statement as written.
        validate: ``params -> None``; raises InputError for inconsistent or too large sizes.
        repair: the repair in words (for reports).
        caveats: reconstruction notes and other caveats the audit must print.
        explain: optional ``(params, evidence) -> lines`` with the claim's key finding.
        cost: the stated cost of the default check (for ``verify show``).
        heavy: True for claims left out of the default ``verify all``.
        requires: ``(module, install hint)`` pairs: optional packages the claim's checks import (impl's
            transformers).  Without one, ``verify CLAIM`` refuses in one line (the claim's validator) and
            ``verify all`` lists the claim as not checked, with the hint, instead of stopping the run.
        params_type: the claim's typed parameters (a :class:`Params` subclass, :class:`NoParams` by
            default); ``options`` is generated from it and the checks receive an instance of it.
        provenance: variant label -> :class:`Provenance` for variants that are not the paper's statement
            (a reading, a hazard), with ``"*"`` for every variant not listed; without either, a variant is the
            paper's statement, or our repair when ``fix`` gives one (:meth:`provenance_of`).
        parts: the statement's parts, each judged on its own (:class:`Part`); the claim's verdict is its
            layers' verdict, and FAILS whenever a part fails (:func:`finish_claim`).
        layers_check_parts: each layer checks a different part of the statement (its ``parts`` say which layer
            judges which part: fp26's symbolic layer the algebra, its numeric layer the toy training), so one
            layer's holds and another's fails are no contradiction: the worst stands (:func:`aggregate`).
        worker_group: claims with the same non-empty group run each layer as one task on one worker process
            when a run spreads layers over workers (they share an expensive import or construction, e.g. the
            impl claims' transformers, imported once instead of once per worker); results do not depend on it.
        protocol: the frozen :class:`verify.core.protocol.Protocol` that decides the claim's training, sampling or
            statistical layer (None: the claim is exact); ``protocol_values(params, ctx)``, when the effective values
            of the options it fixes are not simply their values under the run's profile (:meth:`protocol_run_values`).
            A run that departs from it is EXPLORATORY (never HOLDS or FAILS).
        quantifiers: ``(statement, check)``: what the paper's statement quantifies (for all / there exists / at
            which sizes) and what the check decides it over, so a reader sees where they differ (``verify show``).
    """

    id: str
    title: str
    source: str
    statement: str
    options: tuple[Option, ...]
    checks: Mapping[str, LayerCheck]
    variants: tuple[Mapping[str, Any], ...] = ({},)
    expected: Mapping[str, Verdict | str] = field(default_factory=dict)
    fix: Callable[[Any], str | None] = lambda p: None
    validate: Callable[[Any], None] = lambda p: None
    repair: str = ""
    caveats: tuple[str, ...] = ()
    explain: Callable[[Any, Sequence[Evidence]], list[str]] | None = None
    cost: str = ""
    heavy: bool = False
    params_type: type[Params] = NoParams
    provenance: Mapping[str, Provenance] = field(default_factory=dict)
    parts: tuple[Part, ...] = ()
    requires: tuple[tuple[str, str], ...] = ()
    layers_check_parts: bool = False
    worker_group: str = ""
    protocol: Any = None
    protocol_values: Callable[[Any, Context], dict[str, Any]] | None = None
    quantifiers: tuple[str, str] = ("", "")

    def __post_init__(self) -> None:
        generated = self.params_type.options()
        if self.options and tuple(self.options) != generated:  # (a dataclasses.replace copy passes them back)
            raise TypeError(f"{self.id}: options come from params_type (declare them with param() on a Params class)")
        object.__setattr__(self, "options", generated)
        object.__setattr__(self, "expected", self._checked_expected())
        for label in self.provenance:
            if label != "*":
                self._check_label(label, f"provenance[{label!r}]")
        if self.layers_check_parts and not self.parts:
            raise ValueError(f"{self.id}: layers_check_parts needs parts that say which layer judges what")

    def _checked_expected(self) -> dict[str, Verdict]:
        """``expected`` with each value a :class:`Verdict` and each key a variant label this claim can
        produce (checked when every variant option is a choice whose values hold no comma).

        Raises:
            ValueError: a value that is not a verdict, or a label no variant of this claim has.
        """
        out = {}
        for label, verdict in self.expected.items():
            out[label] = Verdict.parse(verdict, f"claim {self.id}: expected[{label!r}]")
            self._check_label(label, f"expected[{label!r}]")
        return out

    def _check_label(self, label: str, where: str) -> None:
        """Raise ValueError when ``label`` names no variant of this claim (checked when every variant option
        is a choice whose values hold no comma)."""
        variant_opts = [o for o in self.options if o.variant]
        if all(o.kind == "choice" and not any("," in c for c in o.choices) for o in variant_opts):
            parts = label.split(",") if variant_opts else [] if label == "" else [label]
            if len(parts) != len(variant_opts) or any(p not in o.choices for p, o in zip(parts, variant_opts)):
                shape = ",".join(o.name.upper() for o in variant_opts) or "'' (the claim has no variant option)"
                raise ValueError(f"claim {self.id}: {where} names no variant of this claim (labels are {shape})")

    def provenance_of(self, params: Mapping[str, Any]) -> Provenance:
        """Whose statement the variant ``params`` checks: the declared :attr:`provenance` of its label, else
        our repair when :attr:`fix` gives one, else the paper's statement."""
        declared = self.provenance.get(self.variant_label(params), self.provenance.get("*"))
        if declared is not None:
            return declared
        fix = self.fix(params)
        return Provenance("repair", fix) if fix else Provenance("paper")

    def protocol_run_values(self, params: Any, ctx: Context) -> dict[str, Any]:
        """A run's effective values of the options the claim's protocol fixes: ``protocol_values(params, ctx)``
        when the claim gives it, else each fixed option's value under the run's profile."""
        if self.protocol_values is not None:
            return self.protocol_values(params, ctx)
        return {k: params.profiled(k, ctx) for k, _ in self.protocol.fixed}

    def missing_requirements(self) -> list[str]:
        """The install hints of the optional packages this claim needs and this environment lacks."""
        return missing_packages(self.requires)

    def expected_verdict(self, label: str) -> Verdict | None:
        """The recorded expectation of the variant labelled ``label`` (None: none recorded)."""
        v = self.expected.get(label)
        return None if v is None else Verdict(v)

    @property
    def paper(self) -> str:
        return self.id.split(":", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split(":", 1)[1]

    def checked_layers(self, layers: Sequence[str] = LAYERS) -> tuple[str, ...]:
        """The layers among ``layers`` in which this claim has a check (in layer order).  A claim
        variant with none is not run: ``verify CLAIM`` refuses it, ``all``/``audit`` list it as not
        checked and the pytest plugin skips it."""
        return tuple(x for x in LAYERS if x in layers and self.checks.get(x))

    def with_defaults(self, **defaults: Any) -> "Claim":
        """A copy of this claim whose options have other defaults (by option name), e.g. a smaller
        solver bound for a quick test: ``claim.with_defaults(Vmax=3)``.  Recorded expectations apply
        at the defaults, so a copy with other sizes keeps them only as the author's assertion.

        Raises:
            InputError: an option this claim does not have.
        """
        unknown = [k for k in defaults if self.option(k) is None]
        if unknown:
            raise InputError(f"{self.id} takes no option --{unknown[0]}")
        by_field = {f: n for n, f in self.params_type._fields_by_name().items()}
        spec = [(f.name, f.type, field(default=defaults.get(by_field[f.name], f.default), metadata=f.metadata))
                for f in dataclasses.fields(self.params_type)]
        derived = dataclasses.make_dataclass(self.params_type.__name__, spec, bases=(Params,), frozen=True)
        return dataclasses.replace(self, options=(), params_type=derived)  # type: ignore[arg-type]

    def option(self, name: str) -> Option | None:
        for o in self.options:
            if o.name == name:
                return o
        return None

    def parse_params(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Parse raw option values (None = not given) into the full parameter dict.

        Raises:
            InputError: unknown option for this claim, bad value, or sizes refused by
                the claim's ``validate``.
        """
        params: dict[str, Any] = {}
        for key, value in raw.items():
            if value is not None and self.option(key) is None:
                raise InputError(f"{self.id} takes no option --{key}")
        for o in self.options:
            params[o.name] = o.parse(raw.get(o.name))
        params = self.params_type.from_options(params)  # type: ignore[assignment]
        self.validate(params)
        return params

    def variant_label(self, params: Mapping[str, Any]) -> str:
        """The variant's label, e.g. ``transposed`` or ``mask+scale`` ('' when none)."""
        parts = [str(params[o.name]) for o in self.options if o.variant and o.name in params]
        return ",".join(parts)

    def display_id(self, params: Mapping[str, Any]) -> str:
        label = self.variant_label(params)
        return f"{self.id}[{label}]" if label else self.id


#: option names every claim command already has (the CLI's common options); a claim may not declare them
RESERVED_OPTION_NAMES = frozenset({"format", "seed", "timeout", "layers", "quiet", "no-timings", "brief", "verbose", "junit",
                                   "plots", "certificates", "full", "cache-dir", "serial", "confirmatory", "part", "help",
                                   "version"})


@dataclass(frozen=True)
class Paper:
    """One paper's claims, as a plugin: what a paper module (or a third-party package) exports.

    Every paper, the built-in ones (``verify.proofs.<key>``) and third-party ones alike, registers
    through the ``verify.papers`` entry-point group (the entry point's value is ``module:PAPER``);
    docs/adding-a-claim.md is the guide.

    Attributes:
        key: the paper key used in claim ids (``kvshift24`` in ``kvshift24:theorem2``): lower-case
            letters, digits, ``-`` and ``_``.
        title: authors, title, venue and arXiv id, as reports cite it.
        claims: the paper's claims, each id starting with ``key:``.
        plotters: claim id (or ``key:*``) -> ``(result, out_dir, plt) -> [paths]`` for ``--plots``
            (:mod:`verify.reports.plots` writes them).
        api: the paper's Python API beyond its claims (a module whose public functions ``verify.api``
            re-exports and paper-specific commands call, e.g. pr26's ``alpha``), or None.

    Raises:
        ValueError: a bad key or a claim whose id does not start with ``key:``.
    """

    key: str
    title: str
    claims: tuple[Claim, ...]
    plotters: Mapping[str, Callable[..., list[Any]]] = field(default_factory=dict)
    api: Any = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z][a-z0-9_-]{0,39}", self.key):
            raise ValueError(f"paper key {self.key!r} must be 1-40 lower-case letters, digits, '-' or '_'")
        object.__setattr__(self, "claims", tuple(self.claims))
        for c in self.claims:
            if c.paper != self.key:
                raise ValueError(f"claim {c.id!r} does not belong to paper {self.key!r} (ids are '{self.key}:NAME')")
        if len({c.id for c in self.claims}) != len(self.claims):
            raise ValueError(f"paper {self.key!r} registers a claim id twice")
        for c in self.claims:
            taken = [o.flag for o in c.options if o.name in RESERVED_OPTION_NAMES]
            if taken:
                raise ValueError(f"claim {c.id!r} declares {taken[0]}, an option every claim command already has "
                                 f"({', '.join('--' + n for n in sorted(RESERVED_OPTION_NAMES))})")


@dataclass
class ClaimResult:
    """One claim variant's verdict with its evidence."""

    claim: Claim
    params: dict[str, Any]
    verdict: Verdict
    reason: str
    evidence: list[Evidence]
    fix: str | None
    expected: Verdict | None = None
    notes: list[str] = field(default_factory=list)
    parts: list[PartResult] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.verdict = Verdict.parse(self.verdict, f"{self.claim.id}: verdict")
        if self.expected is not None:
            self.expected = Verdict.parse(self.expected, f"{self.claim.id}: expected")

    @property
    def variant(self) -> str:
        return self.claim.variant_label(self.params)

    @property
    def display_id(self) -> str:
        return self.claim.display_id(self.params)

    @property
    def provenance(self) -> Provenance:
        """Whose statement this variant checks (:meth:`Claim.provenance_of`)."""
        return self.claim.provenance_of(self.params)

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def figures(self) -> list[tuple[Layer, Figure]]:
        """The published figures set against ours, as ``(layer, Figure)``."""
        return figure_rows(self.evidence)

    @property
    def figures_reproduced(self) -> str | None:
        """``"k/n"``: how many of the n published figures our run reproduced (None when n = 0)."""
        k, n = figures_tally(self.evidence)
        return f"{k}/{n}" if n else None

    def layer(self, name: Layer | str) -> Evidence | None:
        for ev in self.evidence:
            if ev.layer == name:
                return ev
        return None


def figure_rows(evidence: Sequence[Evidence]) -> list[tuple[Layer, Figure]]:
    """Every published figure the layers set against ours, as ``(layer, Figure)`` in layer order."""
    return [(ev.layer, f) for ev in evidence for f in ev.figures]


def figures_tally(evidence: Sequence[Evidence], column: str | None = None) -> tuple[int, int]:
    """``(reproduced, total)`` over the published figures of one claim variant: the rows that count (every column
    but ``derived``: our derivations are shown, never counted), or those of one ``column``."""
    rows = [f for _, f in figure_rows(evidence) if (f.counted if column is None else f.column == column)]
    return sum(1 for f in rows if f.reproduced), len(rows)


def _split_tally(evidence: Sequence[Evidence]) -> str:
    """`` (held-out k/n, in-sample k/n)`` when some figures were the ones a fitted parameter was chosen on."""
    said = [f"{col} {k}/{n}" for col in ("held-out", "in-sample") for k, n in [figures_tally(evidence, col)] if n]
    return f" ({', '.join(said)})" if said else ""


def _unreproduced(evidence: Sequence[Evidence]) -> list[str]:
    """One finding per published figure our run did not reproduce, so a HOLDS about the
    statement is never read as 'the paper's numbers reproduced'."""
    # ours as the JSON writes it (measured digits only, rounding-level values as a bound)
    return [f"Published figure not reproduced: {f.figure}: paper {f.paper}, ours {f.to_dict()['ours']}"
            + (f" ({f.note})" if f.note else "") + " (the verdict is about the statement, not this figure)."
            for _, f in figure_rows(evidence) if not f.reproduced and f.counted]


@contextmanager
def _fixed_threads(layer: str) -> Iterator[None]:
    """The numeric layer always runs torch on one thread: float reductions then do not depend on
    the machine's core count or on ``--jobs``, so the same inputs give the same JSON everywhere."""
    if layer != Layer.NUMERIC:
        yield
        return
    with interrupts.deferred():  # torch's import cannot be interrupted half-way (it aborts the process)
        import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_layer(claim: Claim, params: Mapping[str, Any], ctx: Context, layer: str,
              layers: Sequence[str] = LAYERS) -> Evidence:
    """One layer's evidence for one claim variant (``skipped`` when the claim has no check in
    that layer or the layer was not requested).  Layers of a claim are independent, so they may
    run in any order or in different processes.

    Returns:
        The Evidence (an exception inside the check becomes an ``error`` Evidence).
    """
    check = claim.checks.get(layer)
    if check is None:
        return Evidence(layer=layer, status=Status.SKIPPED, summary="this claim has no check in this layer")
    if layer not in layers:
        return Evidence(layer=layer, status=Status.SKIPPED, summary="not requested (--layers)")
    interrupts.check()  # a Ctrl-C swallowed inside a destructor (z3's, torch's) stops the run here
    ctx.note(f"{claim.display_id(params)}: {layer} layer")
    # VERIFY_FLOAT_PERTURBATION: another CPU's rounding, for the test that no recorded output depends on it
    with _fixed_threads(layer), using(ctx), floatnoise.from_environment():
        run: Callable[[], Evidence] = lambda: check(params, ctx)  # noqa: E731
        if claim.protocol is not None and layer == claim.protocol.layer:  # decided under its frozen protocol
            from verify.core.protocol import run_under

            values = claim.protocol_run_values(params, ctx)
            run = lambda: run_under(claim.protocol, values, ctx, lambda c: check(params, c),  # noqa: E731
                                    claim.variant_label(params))
        return second_way_required(timed(layer, run))


def finish_claim(claim: Claim, params: Mapping[str, Any], evidence: Sequence[Evidence]) -> ClaimResult:
    """The verdict, reason, findings and expectation of one claim variant from its per-layer
    evidence (in layer order)."""
    evidence = list(evidence)
    fix = claim.fix(params)
    verdict, reason = aggregate(evidence, fix, claim.layers_check_parts)
    parts = judge_parts(claim, params, evidence, fix)
    verdict, reason = with_parts(verdict, reason, parts)
    k, n = figures_tally(evidence)
    if n:
        # the verdict is about the statement; its published numbers are counted apart (held-out apart from in-sample)
        reason = f"statement: {reason}; published figures reproduced {k}/{n}" + _split_tally(evidence)
    expected = None
    from verify.core.protocol import exploratory_reason

    exploratory = exploratory_reason(evidence)
    if exploratory is not None:
        reason = f"EXPLORATORY run ({exploratory}): never HOLDS or FAILS; {reason}"
    elif all(params.get(o.name) == o.default for o in claim.options if not o.variant) or claim.protocol is not None:
        # the recorded expectation applies to the variant at its default sizes, or to its confirmatory run
        expected = claim.expected_verdict(claim.variant_label(params))
    notes = claim.explain(params, evidence) if claim.explain else []
    notes += _unreproduced(evidence)
    return ClaimResult(claim, dict(params), verdict, reason, evidence, fix, expected, notes, parts)


def judge_parts(claim: Claim, params: Mapping[str, Any], evidence: Sequence[Evidence],
                fix: str | None) -> list[PartResult]:
    """Each of the claim's parts judged from the layers' evidence: FAILS or HOLDS (HOLDS WITH FIX under a
    repair) from the outcome its judge reads, INCONCLUSIVE when the judge cannot decide (its layers did not
    run)."""
    out = []
    for part in claim.parts:
        outcome, said, layers, by_layer = part.judge(params, evidence)
        out.append(PartResult(part.name, part.role, part.statement, part_verdict(outcome, fix, part.repairable), said,
                              [str(x) for x in layers],
                              {str(k): v for k, v in by_layer.items()}))
    return out


def part_named(claim: Claim, key: str) -> Part:
    """The claim's part ``key`` (:attr:`Part.key`), for ``--part``.

    Raises:
        InputError: the claim has no parts, or none of that key (the message lists the parts).
    """
    keys = [p.key for p in claim.parts]
    if key not in keys:
        listed = f"its parts: {', '.join(keys)}" if keys else "it has no parts"
        raise InputError(f"--part {key!r}: {claim.id} has no such part; {listed}")
    return claim.parts[keys.index(key)]


def only_part(result: ClaimResult, key: str) -> ClaimResult:
    """The result judged on one part (``--part``): that part's verdict (a layer that did not finish, or
    layers that disagree, still win), its evidence as the reason, no expectation (one is recorded per variant)."""
    part = next(p for p in result.parts if p.name == part_named(result.claim, key).name)
    layers_said = aggregate(result.evidence, result.fix, result.claim.layers_check_parts)[0]
    verdict = only_part_verdict(layers_said, part.verdict)
    reason = f"part {part.name} ({part.severity}): {part.evidence}"
    return dataclasses.replace(result, verdict=verdict, reason=reason, expected=None, parts=[part])


def run_claim(
    claim: Claim,
    params: Mapping[str, Any],
    ctx: Context,
    layers: Sequence[str] = LAYERS,
) -> ClaimResult:
    """Run every requested layer's check of one claim variant and aggregate.

    Args:
        claim: the claim.
        params: parsed parameters (see :meth:`Claim.parse_params`).
        ctx: seed, budgets, progress callback.
        layers: which layers to run; the others are recorded as ``skipped``.

    Returns:
        The ClaimResult (never raises for a failing layer: an exception becomes an
        ``error`` Evidence).
    """
    return finish_claim(claim, params, [run_layer(claim, params, ctx, layer, layers) for layer in LAYERS])
