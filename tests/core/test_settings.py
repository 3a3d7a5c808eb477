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
    "bietti23:probes": {"--steps": (400, 1600)},
    "fp26:fingerprint": {"--steps": (800, 2400)},
    "kvshift24:falsifier": {"--steps": (300, 1200)},
    "ws24:falsifier": {"--steps": (300, 1200)},
    "pr26:prop2": {"--trials": (8000, 32000), "lr_band": (False, True)},
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

    assert main(["show", "bietti23:probes"]) == 0
    out = capsys.readouterr().out
    assert "--steps  (default 400; full 1600 (4x the value given))" in out
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
