"""The run's settings (:class:`verify.evidence.Context`): the two size profiles, each size declared once with
its quick and its full value (on the option, or in its paper's SIZES table), one default solver budget for
every front end, and the worker count of ``verify CLAIM`` as a setting rather than a module global."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from verify.core import registry
from verify.core.model import Params, Times, param
from verify.evidence import DEFAULT_TIMEOUT_S, PROFILES, Context, Sized, current_settings, profile_for, using

ROOT = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]


def test_profiles_and_the_full_property():
    assert PROFILES == ("quick", "full")
    assert Context().profile == "quick" and not Context().full
    assert Context(profile="full").full
    assert profile_for(True) == "full" and profile_for(False) == "quick"
    with pytest.raises(ValueError, match="profile"):
        Context(profile="paper")
    with pytest.raises(ValueError, match="claim_jobs"):
        Context(claim_jobs=0)


def test_a_sized_entry_gives_each_profile_its_value():
    s = Sized(500, 4000, "draws")
    assert (s.at("quick"), s.at("full")) == (500, 4000)
    assert Context(profile="full").size(s) == 4000 and Context().size(s) == 500
    with pytest.raises(ValueError):
        s.at("paper")


@dataclass(frozen=True)
class _Demo(Params):
    steps: int = param(400, "steps", kind="int", full=Times(4))
    L: int = param(64, "length", kind="int", full=1024)
    d: int = param(32, "width", kind="int")


def test_an_option_declares_its_full_value():
    opts = {o.name: o for o in _Demo.options()}
    assert opts["steps"].full == Times(4) and opts["L"].full == 1024 and opts["d"].full is None
    quick, full = Context(), Context(profile="full")
    p = _Demo(steps=250)
    assert [p.profiled(n, quick) for n in ("steps", "L", "d")] == [250, 64, 32]
    # Times scales the value given; a plain value replaces it; no declaration keeps it
    assert [p.profiled(n, full) for n in ("steps", "L", "d")] == [1000, 1024, 32]
    with pytest.raises(KeyError):
        p.profiled("nosuch", full)


#: the values the checks used before the sizes were declared (claim -> size or option -> (quick, full)),
#: read off the inline conditionals they replace
DECLARED = {
    # the frozen protocols' sizes at --full (ws24:falsifier's protocol is its default run: no --full sizes)
    "bietti23:probes": {"--steps": (400, 1000), "--seeds": (2, 5)},
    "fp26:fingerprint": {"--steps": (800, 6000), "--seeds": (2, 5)},
    "kvshift24:falsifier": {"--steps": (300, 1200)},
    "pr26:prop2": {"--trials": (24000, 96000), "lr_band": (False, True)},
    "kvshift24:decode": {"--L": (64, 1024)},
    "kvshift24:theorem2": {"extra_sizes": ((), ((4096, 1024),))},
    "kvshift24:theorem3": {"widths": ((256, 1024), (256, 1024, 4096))},
    "kvshift24:theorem1": {"lengths": ((8, 64, 256), (8, 64, 256, 1024))},
    "ws24:theorem2": {"protocol": (False, True), "learning": ((128, 12), (512, 16))},
    "ws24:eq14": {"protocol": (False, True)},
    "pr26:prop1": {"samples": (500, 4000), "opt_lengths": ((64, 256), (64, 256, 1024))},
    "pr26:theorem2": {"solver_lengths": (((8, 16), (10, 24)), ((8, 16), (10, 24), (16, 40))),
                      "length_factors": ((3, 6, 12), (3, 6, 12, 25, 50)), "horizon": (2048, 4096)},
    "pr26:theorem1": {"draws": (4, 16)},
    "pr26:prop3": {"lengths": ((60, 128, 256, 512), (60, 128, 256, 512, 1024, 2048)), "sensitivity_seeds": (1, 5),
                   "min_norm": (False, True)},
    "pr26:prop4": {"extra_lengths": ((), (1024, 2048)), "sensitivity_seeds": (1, 5), "horizon": (1024, 4096),
                   "min_norm": (False, True)},
    "pr26:auc": {"seeds": (3, 15), "lengths": ((30, 60, 128), (30, 40, 60, 128, 256)), "ablation": (False, True)},
}


@pytest.mark.parametrize("claim_id", sorted(DECLARED))
def test_each_claim_declares_the_sizes_its_checks_used(claim_id):
    c = registry.get(claim_id)
    assert c.params_type is not None
    for name, (quick, full) in DECLARED[claim_id].items():
        if name.startswith("--"):
            o = c.option(name[2:])
            assert o is not None and (o.at(o.default, "quick"), o.at(o.default, "full")) == (quick, full), name
        else:
            s = c.params_type.sizes[name]
            assert (s.quick, s.full) == (quick, full), name
    assert set(c.params_type.sizes) == {n for n in DECLARED[claim_id] if not n.startswith("--")}


def test_no_inline_profile_conditionals_in_the_papers():
    """Sizes are read from their declaration, never chosen inline (``X if ctx.full else Y``)."""
    pattern = re.compile(r"\bif (ctx\.)?full else\b|\(\d+ if ctx\.full")
    # the command that reproduces a run names the --full flag; it chooses no size
    allowed = {("proofs/ws24/trained.py", 'command = "verify ws24:falsifier" + (" --full" if ctx.full else "")')}
    found = []
    # the papers only: a layer's own ``full`` argument (an extra pass the claim turns on) is not a size choice
    for f in sorted((ROOT / "proofs").rglob("*.py")):
        rel = str(f.relative_to(ROOT))
        for line in f.read_text().splitlines():
            if pattern.search(line) and not any(rel == a and s in line for a, s in allowed):
                found.append(f"{rel}: {line.strip()}")
    assert found == []


def test_verify_show_lists_both_values(capsys):
    from verify.frontends.cli import main

    assert main(["show", "kvshift24:falsifier"]) == 0
    out = capsys.readouterr().out
    assert "--steps  (default 300; full 1200 (4x the value given))" in out
    assert main(["show", "bietti23:probes"]) == 0
    out = capsys.readouterr().out
    assert "--steps  (default 400; full 1000)" in out
    assert main(["show", "pr26:prop1"]) == 0
    out = capsys.readouterr().out
    assert "samples: quick 500, full 4000" in out and "opt_lengths: quick (64, 256), full (64, 256, 1024)" in out


def test_one_default_budget():
    from verify.api import check_claim
    from verify.frontends import pytest_plugin
    from verify.frontends.cli import cli

    assert DEFAULT_TIMEOUT_S == 20.0 and Context().timeout_ms == 20_000
    assert inspect.signature(check_claim).parameters["timeout_s"].default == DEFAULT_TIMEOUT_S
    all_cmd = cli.commands["all"]
    assert next(p for p in all_cmd.params if p.name == "timeout").default == DEFAULT_TIMEOUT_S

    class _Group:
        def __init__(self):
            self.options = {}

        def addoption(self, name, **kw):
            self.options[name] = kw

    class _Parser:
        group = _Group()

        def getgroup(self, *a, **k):
            return self.group

    parser = _Parser()
    pytest_plugin.pytest_addoption(parser)  # type: ignore[arg-type]
    assert parser.group.options["--verify-timeout"]["default"] == DEFAULT_TIMEOUT_S
    assert parser.group.options["--verify-profile"]["choices"] == PROFILES


def test_claim_jobs_is_a_setting(monkeypatch, capsys):
    """The suite's default settings carry claim_jobs = 1 (tests/conftest.py); 'verify CLAIM' reads it from the
    run's Context, which takes the current defaults for what the command line does not set."""
    from verify.frontends import cli
    from verify.pipeline.run import context

    assert current_settings().claim_jobs == 1
    assert context(0, 5.0, None).claim_jobs == 1
    with using(Context(claim_jobs=3)):
        ctx = context(7, 5.0, None, full=True)
        assert (ctx.claim_jobs, ctx.seed, ctx.profile, ctx.timeout_ms) == (3, 7, "full", 5000)
        seen = []
        monkeypatch.setattr(cli, "run_one", lambda c, p, ctx, lay, jobs: seen.append(jobs) or (_ for _ in ()).throw(
            KeyboardInterrupt))
        assert cli.main(["ws24:prop4", "--layers", "symbolic"]) != 0  # stopped before any work
        assert seen == [3]


def test_plugin_profile_option(pytester: pytest.Pytester, monkeypatch) -> None:
    """--verify-profile reaches the claim items' Context; any other value is a usage error (exit 4)."""
    from verify.pipeline import run

    seen = []
    real = run.run_one
    monkeypatch.setattr(run, "run_one", lambda c, p, ctx, *a: seen.append(ctx.profile) or real(c, p, ctx, *a))
    args = ["-p", "no:cacheprovider", "--verify-claims=ws24:prop4", "--verify-layers=symbolic"]
    assert pytester.runpytest(*args, "--verify-profile=full").ret == 0
    assert pytester.runpytest(*args).ret == 0
    assert seen == ["full", "quick"]
    res = pytester.runpytest(*args, "--verify-profile=paper")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    res.stderr.fnmatch_lines(["*--verify-profile*invalid choice*paper*"])


# ----------------------------------------------------------------------------- run-scoped memos


class _StandIn:
    """A claim for :func:`verify.pipeline.run.execute` whose check only asks the obligation memo."""

    id = "stand-in:memo"

    def checked_layers(self, layers=None):
        return ["solver"]


def _box(ctx):
    import z3

    x = z3.Real("x", ctx)
    return [x >= 1, x <= 2]


def _pipeline_solves(monkeypatch, runs: int, variants: int, shared_scope: bool) -> list[str]:
    """The solves (memo misses) of ``runs`` pipeline runs of ``variants`` variants each, every variant checking the
    same obligation twice; the runs in one :func:`verify.runcache.scope` when ``shared_scope``, else with no
    scope open around them (a fresh ``contextvars`` context: the test fixture's scope is not visible)."""
    import contextvars

    from verify import runcache
    from verify.pipeline import run
    from verify.solver import common

    solves: list[str] = []
    real = common._check_built
    monkeypatch.setattr(common, "_check_built", lambda name, *a, **k: solves.append(name) or real(name, *a, **k))
    monkeypatch.setattr(run, "run_claim", lambda c, p, ctx, layers: [common.check(f"{p} {i}", _box, 5000)
                                                                     for i in range(2)])

    def all_runs() -> None:
        for _ in range(runs):
            run.execute([(_StandIn(), f"v{k}") for k in range(variants)], Context(), ["solver"], 1)

    def in_scope() -> None:
        with runcache.scope():
            all_runs()

    contextvars.Context().run(in_scope if shared_scope else all_runs)
    return solves


def test_a_memo_hit_inside_one_run(monkeypatch):
    """One run: each variant asks the same obligation twice, and two variants ask it too: solved once."""
    assert _pipeline_solves(monkeypatch, runs=1, variants=2, shared_scope=False) == ["v0 0"]


def test_two_runs_share_memos_only_in_one_scope(monkeypatch):
    from verify import runcache

    default = runcache._DEFAULT
    before = len(default)
    assert _pipeline_solves(monkeypatch, runs=2, variants=1, shared_scope=False) == ["v0 0", "v0 0"]
    assert len(default) == before  # a run's memos ended with it; the process-wide default saw none
    assert _pipeline_solves(monkeypatch, runs=2, variants=1, shared_scope=True) == ["v0 0"]


def test_two_runs_sharing_memos_are_caught(monkeypatch):
    """Injected fault: runs that keep their memos in the process-wide cache (module globals) solve the second
    run's obligation from the first one's memo, and the check above sees it."""
    import contextlib

    from verify import runcache

    monkeypatch.setattr(runcache, "run_scope", lambda: contextlib.nullcontext(runcache.current()))
    try:
        assert _pipeline_solves(monkeypatch, runs=2, variants=1, shared_scope=False) == ["v0 0"]
    finally:
        runcache._DEFAULT.clear()


def test_a_memo_that_never_hits_is_caught(monkeypatch):
    """Injected fault: a scope per memo lookup (no memo at all) solves every ask, and the hit check sees it."""
    from verify import runcache

    monkeypatch.setattr(runcache, "current", lambda: runcache.RunCache())
    assert _pipeline_solves(monkeypatch, runs=1, variants=2, shared_scope=False) == ["v0 0", "v0 1", "v1 0", "v1 1"]


def test_outside_every_scope_the_memos_still_hit(monkeypatch):
    """A caller of the layer functions with no scope open (an API user) gets the process-wide default scope."""
    import contextvars

    from verify import runcache
    from verify.solver import common

    solves: list[str] = []
    real = common._check_built
    monkeypatch.setattr(common, "_check_built", lambda name, *a, **k: solves.append(name) or real(name, *a, **k))

    def twice() -> None:
        assert runcache.current() is runcache._DEFAULT
        try:
            common.check("a", _box, 5000)
            common.check("b", _box, 5000)
        finally:
            common.forget()

    contextvars.Context().run(twice)
    assert solves == ["a"]


def test_a_worker_keeps_one_scope_for_its_run(monkeypatch):
    """A worker process (started for one run) enters a fresh scope at start-up and its tasks share it; a task
    run where no scope is open gets a fresh one, never the process-wide default."""
    import atexit
    import contextvars
    import signal
    from types import SimpleNamespace

    from verify import runcache
    from verify.pipeline import pool

    seen: list[runcache.RunCache] = []
    claim = SimpleNamespace(params_type=SimpleNamespace(from_options=lambda v: v))
    monkeypatch.setattr(pool.registry, "get", lambda claim_id: claim)
    monkeypatch.setattr(pool, "run_layer", lambda c, p, ctx, layer, layers: seen.append(runcache.current()))
    monkeypatch.setattr(atexit, "register", lambda *a: None)   # start-up's process-wide effects, kept off this process
    monkeypatch.setattr(signal, "signal", lambda *a: None)
    monkeypatch.setenv("OMP_NUM_THREADS", "2")

    def worker() -> None:
        pool._worker_init(2)
        pool._layer_in_worker([("x", {}), ("x", {})], Context(), "solver", ["solver"])
        pool._layer_in_worker([("y", {})], Context(), "solver", ["solver"])

    def tasks_alone() -> None:
        pool._layer_in_worker([("x", {})], Context(), "solver", ["solver"])
        pool._layer_in_worker([("y", {})], Context(), "solver", ["solver"])

    contextvars.Context().run(worker)
    assert seen[0] is seen[1] is seen[2] and seen[0] is not runcache._DEFAULT
    contextvars.Context().run(tasks_alone)
    assert seen[3] is not seen[4] and runcache._DEFAULT not in seen[3:] and seen[0] not in seen[3:]


def test_memoize_keeps_lru_cache_semantics():
    from verify import runcache

    calls: list[tuple] = []

    @runcache.memoize(maxsize=2)
    def f(a, b=0):
        calls.append((a, b))
        return [a, b]

    first = f(1)
    assert f(1) is first and f(1, b=0) == first and f(1.0) is first  # keyword calls are another key, as in lru_cache
    f(2), f(3)                                                         # past maxsize: the least recently used (1) goes
    f(1)
    assert calls == [(1, 0), (1, 0), (2, 0), (3, 0), (1, 0)]
    with runcache.scope():                                             # another scope: its own entries
        f(3)
    f.cache_clear()
    f(3)
    assert calls[-2:] == [(3, 0), (3, 0)]
    with pytest.raises(TypeError):
        f([1])


def test_claims_of_one_worker_group_share_one_task():
    """The impl claims (transformers) run their numeric layer as one worker task, so one worker imports
    transformers instead of each; every other claim keeps a task per (claim, layer).  Fault: a group ignored
    gives one task per impl claim."""
    from verify.core import registry
    from verify.evidence import LAYERS
    from verify.pipeline.run import plan_tasks

    planned = [(c, p) for c in registry.all_claims() if not c.heavy for p in c.variants]
    groups = plan_tasks(planned, LAYERS)
    impl = [i for i, (c, _) in enumerate(planned) if c.id.startswith("impl:")]
    assert len(impl) == 6
    assert groups[("group:transformers", "numeric")] == impl
    assert not any(k[0].startswith("impl:") for k in groups)
    others = {(c.id, layer) for c, _ in planned if not c.worker_group for layer in c.checked_layers(LAYERS)}
    assert others <= set(groups)
    import dataclasses

    ungrouped = plan_tasks([(dataclasses.replace(c, worker_group=""), p) for c, p in planned], LAYERS)
    assert sum(k[0].startswith("impl:") and k[1] == "numeric" for k in ungrouped) == 6


def test_tasks_go_out_longest_first_by_the_measured_costs():
    """plan_tasks hands the tasks out longest first by the shipped cost table (so no long task starts last while
    a worker idles); a task the table does not list counts as the median; without costs the claim order stays.
    Faults: an ignored table leaves the claim order (the first assertion fails), an unknown task sorted as
    cost 0 would go last (the median assertion fails)."""
    from verify.core import registry
    from verify.evidence import LAYERS
    from verify.pipeline.run import plan_tasks, task_costs

    planned = [(c, p) for c in registry.all_claims() if not c.heavy for p in c.variants]
    costs = task_costs()
    assert costs, "the shipped task cost table is missing or unreadable"
    keys = list(plan_tasks(planned, LAYERS))
    listed = [k for k in keys if k in costs]
    assert [costs[k] for k in listed] == sorted((costs[k] for k in listed), reverse=True)
    assert keys[0] == max(costs, key=lambda k: costs[k])
    # the same tasks and variants in any order
    plain = plan_tasks(planned, LAYERS, costs={})
    assert sorted(plain) == sorted(keys) and all(plain[k] == plan_tasks(planned, LAYERS)[k] for k in plain)
    first, second = list(plain)[:2]
    swapped = list(plan_tasks(planned, LAYERS, costs={second: 9.0, first: 1.0}))  # median 9: the rest tie with second
    assert swapped[0] == second and swapped[-1] == first
    # an unlisted task sits at the median: after the longer half, before the shorter
    some = {k: float(i) for i, k in enumerate(list(plain)[1:6], 1)}  # costs 1..5, median 3
    order = list(plan_tasks(planned, LAYERS, costs=some))
    unknown = list(plain)[0]
    assert order.index(unknown) > order.index(list(plain)[5]) and order.index(unknown) > order.index(list(plain)[4])
    assert order.index(unknown) < order.index(list(plain)[2])


def test_shipped_task_costs_cover_the_default_run():
    """The cost table lists exactly the tasks of the default verify all on the built-in papers (a new claim or
    layer without a measured cost fails here: rerun python tools/task_costs.py)."""
    import importlib.util
    import json
    from pathlib import Path

    from verify.pipeline.run import TASK_COSTS_FILE

    spec = importlib.util.spec_from_file_location("task_costs_tool", Path(__file__).parents[2] / "tools" / "task_costs.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert set(json.loads(TASK_COSTS_FILE.read_text())["seconds"]) == tool.planned_keys()
