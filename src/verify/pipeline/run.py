"""The run pipeline, one path for every front end (the CLI, :mod:`verify.api`, the pytest plugin):

    resolve -> parse -> validate -> plan -> execute -> aggregate

* resolve: a claim name (``theorem2``, ``ws24:theorem2``, a run id ``ws24:theorem2[transposed]``) and the
  options given -> the claim (:func:`resolve_variant`, through :mod:`verify.core.registry`);
* parse: option strings -> the claim's typed parameters (``Claim.parse_params``);
* validate: every size and budget checked before any work (the claim's own validator, :func:`require_checks`,
  :func:`context`);
* plan: the variants to run, each once, with their expectations (:func:`plan`);
* execute: each (claim, layer) in this process or on the worker pool (:func:`execute`, :mod:`verify.pipeline.pool`);
* aggregate: each claim's evidence -> its verdict (:func:`verify.core.model.finish_claim`, one documented maximum).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from verify import runcache
from verify.core import registry
from verify.core.inputs import check_cache_dir, check_seed, check_timeout, clip
from verify.core.model import Claim, ClaimResult, InputError, Verdict, finish_claim, run_claim, run_layer
from verify.core.verdicts import expectation_change
from verify.evidence import LAYERS, Context, Layer, current_settings, profile_for
from verify.pipeline.pool import lost, pool_round


def context(seed: int, timeout: float, progress: Callable[[str], None] | None, full: bool = False,
             cache_dir: str | None = None) -> Context:
    """The run's settings, built once from the command line (options checked before any work).  The settings
    the command line does not set (``claim_jobs``, ``certify``, ``second_opinion``) are the current defaults
    (:func:`verify.evidence.current_settings`: :class:`Context`'s own, or those of an enclosing ``using`` block,
    as the test suite sets ``claim_jobs=1``)."""
    return current_settings().replace(seed=check_seed(seed), profile=profile_for(full),
                                      timeout_ms=check_timeout(timeout), progress=progress,
                                      cache_dir=check_cache_dir(cache_dir))


def resolve_variant(name: str, raw: Mapping[str, Any]) -> tuple[Claim, Mapping[str, Any]]:
    """Resolve and parse: a claim name (short, ``paper:name``, or a run id ``paper:name[label]`` as ``verify all``
    and JUnit print it) and the options given (``{name: string or None}``) -> the claim and its typed parameters.

    Raises:
        InputError: an unknown or ambiguous name, a run id naming several variants, an option that
            contradicts the run id, or a bad option value.
    """
    given = [k for k, v in raw.items() if v is not None]
    if "[" not in name:
        claim = registry.resolve(name, given)
        return claim, claim.parse_params({k: raw[k] for k in given})
    from verify.core.specs import parse_spec, split_specs

    if len(split_specs(name)) > 1:
        raise InputError(f"{name!r} names several claims; 'verify CLAIM' checks one (use 'verify all --expect "
                         "FILE' or the pytest plugin for several)")
    named = parse_spec(name)
    if len(named) != 1:
        raise InputError(f"{name!r} names {len(named)} variants; 'verify CLAIM' checks one "
                         "(use 'verify all --expect FILE' or the pytest plugin for several)")
    claim, spec_params = named[0]
    picked = {o.name: str(spec_params[o.name]) for o in claim.options if spec_params[o.name] != o.default}
    for k in given:
        opt = claim.option(k)
        if opt is None:
            raise InputError(f"{claim.id} takes no option --{k}")
        if k in picked and str(opt.parse(raw[k])) != picked[k]:
            raise InputError(f"--{k} {raw[k]} contradicts {name!r}")
    return claim, claim.parse_params({**picked, **{k: raw[k] for k in given}})


def run_one(claim: Claim, params: Mapping[str, Any], ctx: Context, layers: Sequence[str], jobs: int = 1) -> ClaimResult:
    """Validate and execute one claim variant (``verify CLAIM``, :func:`verify.api.check_claim`, the pytest plugin).

    Raises:
        InputError: the claim has no check in ``layers``.
    """
    require_checks(claim, layers)
    (result,) = execute([(claim, params)], ctx, layers, jobs)
    return result


def require_checks(claim: Claim, layers: Sequence[str]) -> None:
    """``verify CLAIM --layers X`` where the claim has no check in X: refuse before any work."""
    if not claim.checked_layers(layers):
        raise InputError(f"{claim.id} has no check in --layers {','.join(layers)}; its layers: "
                         f"{', '.join(claim.checked_layers())}")


@dataclasses.dataclass
class RunAll:
    """What ``verify all``/``audit`` ran: the results, the changed verdicts (``"ID: EXPECTED -> GOT"``),
    the run ids left out because none of the requested layers has a check for them, and the claims left
    out because an optional package they need is not installed (``"ID (install hint)"``)."""

    results: list[ClaimResult]
    changes: list[str]
    not_checked: list[str]
    unavailable: list[str] = dataclasses.field(default_factory=list)


def _numbered(progress: Callable[[str], None], i: int, n: int) -> Callable[[str], None]:
    """A progress callback that prefixes ``[i/n]``."""
    return lambda msg: progress(f"[{i}/{n}] {msg}")


#: the order a claim's layers are handed to the workers
SUBMIT_ORDER = (Layer.KERNEL, Layer.SOLVER, Layer.NUMERIC, Layer.SYMBOLIC)


def execute(planned: Sequence[tuple[Claim, Mapping[str, Any]]], ctx: Context, layers: Sequence[str],
                 jobs: int) -> list[ClaimResult]:
    """Run claim variants in order, or concurrently on ``jobs`` worker processes (the standard
    library's ProcessPoolExecutor, spawn context), one task per (claim, layer) holding all of that
    claim's planned variants (per (worker group, layer) for claims with a ``worker_group``), so that
    the layers of one long claim run side by side while its variants still share cached work; each
    claim's evidence is assembled in layer order and its verdict reached here, so results and their
    order do not depend on ``jobs``.  One variant with several layers (``verify CLAIM``) is spread the
    same way; a single task runs in this process.
    Tasks are handed out longest first (:func:`plan_tasks`).

    A worker that dies (killed, out of memory, a crash in a library) breaks the whole pool; the
    tasks it left unanswered run once more on fresh workers, and a task lost twice becomes an
    error (the claim INCONCLUSIVE, never a verdict).

    Concurrency needs every claim to be the registry's own (a worker looks it up by id); any
    other claim (a test's stand-in) runs in this process.

    The layers' memos (:mod:`verify.runcache`) live as long as the run: in the caller's scope where one
    is open (runs in it share memos), else in a fresh one that ends here; a worker opens one per task."""
    with runcache.run_scope():
        return _execute(planned, ctx, layers, jobs)


#: typical seconds of each (claim id or ``group:NAME``, layer) task of the default ``verify all``, measured by
#: ``python tools/task_costs.py`` (a run's own layer timings, summed over the task's variants); only the order
#: in which tasks are handed out depends on it (longest first), never a result
TASK_COSTS_FILE = Path(__file__).with_name("task_costs.json")


@functools.lru_cache(maxsize=1)
def task_costs() -> dict[tuple[str, str], float]:
    """The measured task costs (:data:`TASK_COSTS_FILE`), or {} when the file is missing or unreadable (tasks
    are then handed out in claim order)."""
    try:
        raw = json.loads(TASK_COSTS_FILE.read_text())
        return {tuple(k.split("|", 1)): float(v) for k, v in raw["seconds"].items()}  # type: ignore[misc]
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return {}


def task_key(c: Claim, layer: str) -> tuple[str, str]:
    """The worker task a claim's layer belongs to: (claim id, layer), or (``group:NAME``, layer) for claims of
    one ``worker_group``."""
    group = getattr(c, "worker_group", "")
    return (f"group:{group}" if group else c.id, layer)


def plan_tasks(planned: Sequence[tuple[Claim, Mapping[str, Any]]], layers: Sequence[str],
               costs: Mapping[tuple[str, str], float] | None = None) -> dict[tuple[str, str], list[int]]:
    """The worker tasks of a run: (claim id, layer) -> the indices of that claim's planned variants, in the order
    they are handed out; claims of one ``worker_group`` share a (``group:NAME``, layer) task instead.

    Tasks go out longest first by ``costs`` (default :func:`task_costs`; a task it does not list counts as
    the median cost), so that no long task starts last while the other workers idle (measured: the claim
    order left one core idle for the last 1.5 s of a 17 s ``verify all``).  Ties, and every task when no
    costs are known, keep the claim order, each claim's layers in :data:`SUBMIT_ORDER` (the order of work
    changes no result)."""
    groups: dict[tuple[str, str], list[int]] = {}
    for i, (c, _) in enumerate(planned):
        for layer in sorted(c.checked_layers(layers), key=SUBMIT_ORDER.index):
            groups.setdefault(task_key(c, layer), []).append(i)
    costs = task_costs() if costs is None else costs
    if not costs:
        return groups
    known = sorted(costs.values())
    typical = known[len(known) // 2]
    return dict(sorted(groups.items(), key=lambda kv: -costs.get(kv[0], typical)))


def _execute(planned: Sequence[tuple[Claim, Mapping[str, Any]]], ctx: Context, layers: Sequence[str],
             jobs: int) -> list[ClaimResult]:
    base = ctx.progress
    n = len(planned)
    groups = plan_tasks(planned, layers)
    if jobs <= 1 or len(groups) <= 1 or not all(_registered(c) for c, _ in planned):
        out = []
        for i, (c, p) in enumerate(planned, 1):
            step = ctx if base is None else ctx.replace(progress=_numbered(base, i, n))
            out.append(run_claim(c, p, step, layers))
        return out
    answers = pool_round(groups, planned, ctx, layers, jobs)
    unanswered = {key: groups[key] for key, evs in answers.items() if evs is None}
    if unanswered:  # one dead worker breaks the whole pool: the layers it never answered get one more try
        ctx.note(f"a worker process died: {len(unanswered)} claim layers rerun on fresh workers")
        answers.update(pool_round(unanswered, planned, ctx, layers, jobs))
    got: dict[tuple[int, str], Any] = {}
    for key, idx in groups.items():
        evs = answers[key]
        for i, ev in zip(idx, evs if evs is not None else [lost(key[1]) for _ in idx]):
            got[(i, key[1])] = ev
    out = []
    for i, (c, p) in enumerate(planned):
        evidence = [got[(i, layer)] if (i, layer) in got else run_layer(c, p, ctx, layer, layers)
                    for layer in LAYERS]
        out.append(finish_claim(c, p, evidence))
    return out


def _registered(c: Claim) -> bool:
    try:
        return registry.get(c.id) is c
    except InputError:
        return False


def run_all(claims: Sequence[Claim], ctx: Context, layers: Sequence[str],
            expectations: Sequence[tuple[Claim, Mapping[str, Any], Verdict]] = (), jobs: int = 1) -> RunAll:
    """Run every variant of every claim and compare each verdict with its expectation.

    Args:
        claims: the claims whose recorded variants (``Claim.variants``) are run.
        ctx: seed, budgets, progress callback (messages are prefixed ``[i/n]``).
        layers: the layers to run.
        expectations: ``(claim, params, verdict)`` from ``--expect``: they override the
            recorded expectation of the same variant; a variant not among the recorded
            ones is added to the run.
        jobs: worker processes (1: in this process); the results and their order do not
            depend on it.

    Returns:
        A :class:`RunAll`.  A variant none of whose checks is among ``layers`` is not run
        (:meth:`~verify.core.model.Claim.checked_layers`) and appears only in ``not_checked``; so does a
        claim that needs an optional package this environment lacks (``Claim.requires``), with the hint.
    """
    from verify.core.specs import run_id

    planned: list[tuple[Claim, Mapping[str, Any]]] = []
    keys: set[str] = set()
    unavailable: list[str] = []
    for c in claims:
        missing = c.missing_requirements()
        if missing:  # an optional package is not installed: listed, never a stop of the whole run
            unavailable.append(f"{c.id} ({'; '.join(missing)})")
            continue
        for v in c.variants:
            p = c.parse_params(dict(v))
            k = run_id(c, p)
            if k not in keys:
                keys.add(k)
                planned.append((c, p))
    override: dict[str, Verdict] = {}
    for c, p, verdict in expectations:
        k = run_id(c, p)
        override[k] = verdict
        if k not in keys:
            keys.add(k)
            planned.append((c, p))
    not_checked = [run_id(c, p) for c, p in planned if not c.checked_layers(layers)]
    planned = [(c, p) for c, p in planned if c.checked_layers(layers)]
    results: list[ClaimResult] = []
    changes: list[str] = []
    for (c, p), r in zip(planned, execute(planned, ctx, layers, jobs)):
        k = run_id(c, p)
        r.expected = override.get(k, c.expected_verdict(c.variant_label(p)))
        results.append(r)
        change = expectation_change(k, r.expected, r.verdict)
        if change is not None:
            changes.append(change)
    return RunAll(results, changes, not_checked, unavailable)


def load_expect(path: str | None) -> list[tuple[Claim, Mapping[str, Any], Verdict]]:
    if path is None:
        return []
    from verify.core.specs import load_expectations

    return load_expectations(path)


def jobs(value: int | None) -> int:
    if value is None:
        return os.cpu_count() or 1
    if not 1 <= value <= 256:
        raise InputError(f"--jobs must be between 1 and 256, got {clip(value)}")
    return value


