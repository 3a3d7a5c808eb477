"""Frozen protocols: the decision rule of a claim that rests on training, sampling or a statistical test, fixed
and hashed before the run it decides.

A :class:`Protocol` is data: the statistic (what is measured, in the statement's terms), the test and its level,
every threshold with its source (the paper's number with its section, or ours with the reason and a sensitivity
range), the sizes, optimiser and horizon of the confirmatory run (``fixed``: option name -> value), its seeds
(a block disjoint from every seed used while developing) and the stopping rule.  Its canonical form (sorted-key
JSON) is hashed; the hash and the date it was frozen are committed in the paper package's ``protocols.json``, and a
test fails when a protocol changes without a new version (:func:`registered`).

A run is *confirmatory* when every fixed option has the protocol's value under the run's profile and its seeds
are the protocol's; anything else is EXPLORATORY (:func:`assess`): its evidence is never HOLDS or FAILS
(inconclusive, with what the run showed), and its report's first line says so.  Each run, exploratory or
confirmatory, is appended to the run ledger beside the lab cache (:mod:`verify.ledger`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from verify.core.model import InputError
from verify.evidence import Evidence, Status
from verify.thresholds import Threshold, sensitivity  # noqa: F401  (re-exported: the protocol's vocabulary)

#: the registry file of a paper package: claim id -> version -> {"sha256", "frozen"}
REGISTRY_FILE = "protocols.json"
#: how a run relates to its claim's protocol
CONFIRMATORY, EXPLORATORY = "confirmatory", "exploratory"


@dataclass(frozen=True)
class Protocol:
    """A claim's confirmatory protocol (see the module docstring).

    Attributes:
        claim: the claim id (``paper:name``).
        version: bumped whenever anything below changes (the registry holds one hash per version).
        statistic: what is measured, in the statement's terms.
        test: the test or decision rule, with its level where it has one.
        thresholds: every threshold the rule uses (:class:`Threshold`).
        fixed: option name -> the value the confirmatory run uses (under its profile), as sorted pairs; a run
            with another value is exploratory.
        profile: the size profile of the confirmatory run (``quick``: the default command; ``full``: ``--full``).
        first_seed: the confirmatory seeds are ``first_seed .. first_seed + seeds - 1`` (a run with ``--seed`` other
            than 0 is exploratory and uses the seeds it names).
        development_seeds: ``(lo, hi)``: every seed used while the claim was developed (the exploratory range);
            disjoint from the confirmatory block (:meth:`__post_init__`).
        horizon: the training horizon in words (steps, with their source).
        stopping: the stopping rule (fixed horizon unless a sequential rule valid under repeated looks is declared).
        arms: the arms, variants or conditions the run compares.
        command: the confirmatory command.
        cost: the measured or estimated cost of the confirmatory run.
        layer: the layer whose evidence the protocol decides.
    """

    claim: str
    version: int
    statistic: str
    test: str
    thresholds: tuple[Threshold, ...]
    fixed: tuple[tuple[str, Any], ...]
    profile: str
    first_seed: int
    development_seeds: tuple[int, int]
    horizon: str
    stopping: str
    arms: str
    command: str
    cost: str
    layer: str = "numeric"

    def __post_init__(self) -> None:
        n = self.seed_count
        lo, hi = self.development_seeds
        if n < 1:
            raise ValueError(f"{self.claim}: the protocol must fix 'seeds' (a count >= 1)")
        if not (self.first_seed > hi or self.first_seed + n - 1 < lo):
            raise ValueError(f"{self.claim}: confirmatory seeds {self.first_seed}..{self.first_seed + n - 1} meet the "
                             f"development seeds {lo}..{hi}")

    @property
    def values(self) -> dict[str, Any]:
        return dict(self.fixed)

    @property
    def seed_count(self) -> int:
        return int(self.values.get("seeds", 0))

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(range(self.first_seed, self.first_seed + self.seed_count))

    def canonical(self) -> str:
        """The protocol as sorted-key JSON without whitespace (what is hashed)."""
        return json.dumps(dataclasses.asdict(self), sort_keys=True, separators=(",", ":"), default=str)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.canonical().encode()).hexdigest()

    @property
    def short(self) -> str:
        """``claim v<version> <first 12 hex digits>``: how reports name the protocol."""
        return f"{self.claim} v{self.version} {self.sha256[:12]}"

    def threshold(self, name: str) -> Threshold:
        for t in self.thresholds:
            if t.name == name:
                return t
        raise KeyError(name)

    def departures(self, values: Mapping[str, Any], seed: int) -> list[str]:
        """What a run with effective option ``values`` and ``--seed seed`` changes in the protocol."""
        out = [f"--{k} {_show(values[k])} (the protocol: {_show(v)})" for k, v in self.fixed
               if k in values and _norm(values[k]) != _norm(v)]
        if seed:
            n = int(values.get("seeds", self.seed_count))
            out.append(f"--seed {seed}: seeds {seed}..{seed + n - 1} (the protocol: "
                       f"{self.first_seed}..{self.first_seed + self.seed_count - 1}, with --seed 0)")
        return out


def _norm(v: Any) -> Any:
    if isinstance(v, (list, tuple)):
        return [_norm(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _show(v: Any) -> str:
    return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)


def registry_path(claim_id: str) -> Path:
    """The ``protocols.json`` beside the module that registers the claim's paper (``verify/proofs/<paper>/`` for
    the built-in papers; a claim pack ships its own)."""
    import importlib

    from verify.core import registry

    module = importlib.import_module(registry.paper_module(claim_id.split(":", 1)[0]))
    return Path(str(module.__file__)).parent / REGISTRY_FILE


def registered(protocol: Protocol) -> dict[str, Any] | None:
    """The registry's entry for the protocol's claim and version (``{"sha256", "frozen"}``), or None."""
    try:
        doc = json.loads(registry_path(protocol.claim).read_text())
    except (OSError, ValueError):
        return None
    entry = doc.get(protocol.claim, {}).get(str(protocol.version)) if isinstance(doc, dict) else None
    return entry if isinstance(entry, dict) else None


def check_frozen(protocol: Protocol) -> None:
    """Refuse a protocol that is not the registered one.

    Raises:
        InputError: its version is not in the registry, or its hash differs from the one frozen for that version
            (the protocol was edited without a new version).
    """
    entry = registered(protocol)
    if entry is None:
        raise InputError(f"{protocol.claim}: protocol version {protocol.version} is not registered in "
                         f"{registry_path(protocol.claim).name}: freeze it (tools/freeze_protocol.py) before it decides")
    if entry.get("sha256") != protocol.sha256:
        raise InputError(f"{protocol.claim}: protocol v{protocol.version} changed since it was frozen on "
                         f"{entry.get('frozen')} (sha256 {protocol.sha256[:12]}, registered {str(entry.get('sha256'))[:12]}):"
                         " give it a new version and freeze that")


@dataclass(frozen=True)
class Assessment:
    """How one run relates to its claim's protocol (:func:`assess`)."""

    protocol: Protocol
    kind: str
    departures: tuple[str, ...]
    seeds: tuple[int, ...]

    @property
    def confirmatory(self) -> bool:
        return self.kind == CONFIRMATORY

    def record(self) -> dict[str, Any]:
        """What reports carry: the protocol's name, hash and date, and this run's kind and departures."""
        entry = registered(self.protocol) or {}
        return {"claim": self.protocol.claim, "version": self.protocol.version, "sha256": self.protocol.sha256,
                "frozen": entry.get("frozen"), "run": self.kind, "departures": list(self.departures),
                "seeds": [self.seeds[0], self.seeds[-1]] if self.seeds else []}

    def apply(self, ev: Evidence) -> Evidence:
        """The layer's evidence under the protocol: it carries :meth:`record`; an exploratory run's finished
        evidence becomes inconclusive, saying what the run showed."""
        ev.numbers["protocol"] = self.record()
        if self.confirmatory:
            return ev
        showed = (f"this run showed {ev.outcome}" if ev.outcome is not None else f"this run was {ev.status}")
        if ev.status.finished and ev.outcome is not None:
            ev.status, ev.outcome = Status.INCONCLUSIVE, None
        ev.summary = (f"EXPLORATORY ({'; '.join(self.departures)}): not a verdict, {showed}; the confirmatory run is "
                      f"`{self.protocol.command}`; " + ev.summary)
        return ev


def assess(protocol: Protocol, values: Mapping[str, Any], seed: int) -> Assessment:
    """Confirmatory when ``values`` (the run's effective options) match the protocol and ``--seed`` is 0: its seeds are
    then the protocol's block.  An exploratory run keeps the seeds ``--seed`` names (0, 1, ...: the development
    range by default), so exploring never trains or reads the confirmatory seeds' models."""
    dep = protocol.departures(values, seed)
    n = int(values.get("seeds", protocol.seed_count))
    first = seed if dep else protocol.first_seed
    return Assessment(protocol, EXPLORATORY if dep else CONFIRMATORY, tuple(dep), tuple(range(first, first + n)))


def record_of(evidence: Sequence[Evidence]) -> dict[str, Any] | None:
    """The protocol record a layer's evidence carries (:meth:`Assessment.record`), or None (no protocol)."""
    for ev in evidence:
        rec = ev.numbers.get("protocol") if isinstance(ev.numbers, dict) else None
        if isinstance(rec, dict):
            return rec
    return None


def exploratory_reason(evidence: Sequence[Evidence]) -> str | None:
    """The departures of an exploratory run, from its evidence (None: confirmatory, or no protocol)."""
    rec = record_of(evidence)
    return "; ".join(rec.get("departures", [])) if rec is not None and rec.get("run") == EXPLORATORY else None


def run_under(protocol: Protocol, values: Mapping[str, Any], ctx: Any, check: Any, variant: str = "") -> Evidence:
    """Run one layer's ``check(ctx)`` under ``protocol``: refuse an unregistered or edited protocol, assess the run
    (``values``: its effective options), give the check the run's seeds (``ctx.seed`` becomes the first of them:
    the protocol's block when confirmatory), record the run in the ledger and mark its evidence
    (:meth:`Assessment.apply`).

    Raises:
        InputError: :func:`check_frozen`.
    """
    from verify import ledger

    check_frozen(protocol)
    a = assess(protocol, values, ctx.seed)
    run = ledger.start(ctx.cache_dir, {"claim": protocol.claim, "variant": variant, "version": protocol.version,
                                       "sha256": protocol.sha256,
                                       "kind": a.kind, "departures": list(a.departures), "seeds": list(a.seeds),
                                       "options": {k: values[k] for k in sorted(values)}})
    ev = check(ctx.replace(seed=a.seeds[0] if a.seeds else ctx.seed))
    ledger.end(ctx.cache_dir, run, None if ev.outcome is None else str(ev.outcome), str(ev.status))
    return a.apply(ev)


def refuse_unless_confirmatory(protocol: Protocol | None, claim_id: str, values: Mapping[str, Any],
                               seed: int) -> None:
    """``--confirmatory``: refuse, before any work, a run that is not the claim's confirmatory run.

    Raises:
        InputError: the claim has no protocol, its protocol is not the registered one, or the run departs from it
            (an exploratory seed first: a seed of the development range is named as such).
    """
    if protocol is None:
        raise InputError(f"--confirmatory: {claim_id} has no protocol (only claims decided by training, sampling or "
                         "a statistical test have one)")
    check_frozen(protocol)
    lo, hi = protocol.development_seeds
    last = seed + int(values.get("seeds", protocol.seed_count)) - 1
    if seed and seed <= hi and last >= lo:
        raise InputError(f"--confirmatory: --seed {seed} gives seeds {seed}..{last}, in the development "
                         f"range {lo}..{hi}; the protocol's seeds are "
                         f"{protocol.first_seed}..{protocol.first_seed + protocol.seed_count - 1} (--seed 0)")
    dep = protocol.departures(values, seed)
    if dep:
        raise InputError(f"--confirmatory: this run departs from {protocol.short}: {dep[0]}")
