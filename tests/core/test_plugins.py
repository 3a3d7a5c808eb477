"""Papers as plugins: the ``verify.papers`` entry-point group, the example claim pack, and how the
registry treats a broken or hostile plugin (one line, exit 2, never a traceback)."""

from __future__ import annotations

import json
import sys
import types
from importlib.metadata import EntryPoint

import pytest

from verify.core import registry
from verify.core.model import Claim, InputError, Paper
from verify.frontends.cli import main


@pytest.fixture
def fake_plugins(monkeypatch):
    """Install entry points that point into an in-memory module ``fake_pack``."""
    mod = types.ModuleType("fake_pack")
    monkeypatch.setitem(sys.modules, "fake_pack", mod)

    def install(**entry_points: str) -> types.ModuleType:
        eps = {name: EntryPoint(name, value, registry.ENTRY_POINT_GROUP) for name, value in entry_points.items()}
        monkeypatch.setattr(registry, "_plugins", lambda: eps)
        registry.paper.cache_clear()
        return mod

    yield install
    registry.paper.cache_clear()


def _claim(cid: str) -> Claim:
    from verify.evidence import Evidence

    def sym(p, ctx):
        return Evidence(layer="symbolic", status="proved", summary="1 + 1 = 2")

    return Claim(id=cid, title="t", source="s", statement="1 + 1 = 2", options=(), checks={"symbolic": sym},
                 expected={"": "HOLDS"})


def test_example_pack_is_installed_and_runs(capsys):
    """The README's test command installs examples/verify-example-pack: its claim is listed and
    `verify all` runs it against its recorded expectations."""
    assert "example" in registry.paper_keys(), "pip install -e examples/verify-example-pack (the README's test command)"
    assert main(["list", "--format", "json"]) == 0
    ids = [c["claim"] for c in json.loads(capsys.readouterr().out)]
    assert "example:prev-weight" in ids and ids.index("example:prev-weight") > ids.index("pr26:prop1")
    rc = main(["example:prev-weight", "--threshold", "log(t)", "--format", "json", "--no-timings"])
    doc = json.loads(capsys.readouterr().out)
    assert rc == 1 and doc["results"][0]["verdict"] == "FAILS"
    assert {x: v["status"] for x, v in doc["results"][0]["layers"].items()} == {
        "symbolic": "refuted", "solver": "refuted", "numeric": "consistent", "kernel": "skipped"}


def test_a_plugin_paper_is_found_and_resolved(fake_plugins, capsys):
    mod = fake_plugins(toy=("fake_pack:PAPER"))
    mod.PAPER = Paper(key="toy", title="Toy paper", claims=(_claim("toy:sum"),))
    assert registry.paper_keys()[-1] == "toy"
    assert registry.resolve("sum").id == "toy:sum"
    assert main(["toy:sum", "--format", "json", "--no-timings"]) == 0
    assert json.loads(capsys.readouterr().out)["results"][0]["verdict"] == "HOLDS"


@pytest.mark.parametrize("setup, message", [
    (lambda m: None, "failed to load"),                                  # no PAPER attribute
    (lambda m: setattr(m, "PAPER", [1, 2]), "is a list, not a verify.core.model.Paper"),
    (lambda m: setattr(m, "PAPER", Paper(key="other", title="x", claims=())), "exports paper 'other'"),
])
def test_a_broken_plugin_is_one_line_exit_2(fake_plugins, capsys, setup, message):
    setup(fake_plugins(toy="fake_pack:PAPER"))
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        registry.paper("toy")
    assert main(["audit", "toy"]) == 2  # naming the broken paper is refused; other commands skip it
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message.split(" ")[0] in err[0] and "Traceback" not in err[0]


def test_a_plugin_cannot_shadow_a_builtin_paper(monkeypatch):
    """The built-in papers are this distribution's own entry points; another package registering the key
    ws24 (listed first, to make it win if order decided) is ignored, and the built-in ws24 is loaded."""
    import importlib.metadata as md

    real = md.entry_points
    monkeypatch.setattr(md, "entry_points", lambda group=None: [EntryPoint("ws24", "fake_pack:PAPER", group),
                                                               *real(group=group)])
    registry._registered.cache_clear()
    registry.paper.cache_clear()
    try:
        assert "ws24" not in registry._plugins()
        assert registry.builtin_keys()[0] == "ws24"
        assert registry.paper("ws24").title.startswith("Wang & Sato")
    finally:
        registry._registered.cache_clear()
        registry.paper.cache_clear()


def test_without_its_entry_points_verify_says_to_install_it(monkeypatch):
    """Injected fault: the distribution's metadata is missing (run from a bare checkout): one line saying
    what to run, never an empty claim list."""
    import importlib.metadata as md

    monkeypatch.setattr(md, "entry_points", lambda group=None: [])
    registry._registered.cache_clear()
    try:
        with pytest.raises(InputError, match="pip install -e"):
            registry.paper_keys()
    finally:
        registry._registered.cache_clear()


@pytest.mark.parametrize("key", ["Bad", "", "a:b", "x" * 41, "ws 24"])
def test_paper_keys_are_checked(key):
    with pytest.raises(ValueError):
        Paper(key=key, title="t", claims=())


def test_a_claim_may_not_redeclare_a_common_option():
    import dataclasses

    from verify.core.model import Params, param

    @dataclasses.dataclass(frozen=True)
    class Clashing(Params):
        seed: int = param(0, "clashes with --seed", kind="int")

    bad = dataclasses.replace(_claim("toy:sum"), options=(), params_type=Clashing)
    with pytest.raises(ValueError, match="--seed, an option every claim command already has"):
        Paper(key="toy", title="t", claims=(bad,))


def test_a_claim_of_another_paper_is_refused():
    with pytest.raises(ValueError, match="does not belong"):
        Paper(key="toy", title="t", claims=(_claim("other:sum"),))


def test_reserved_option_names_are_the_claim_commands_common_options():
    """The names a claim may not declare are exactly the options every claim command adds (plus help and
    version): the two lists cannot drift apart."""
    from verify.core.model import RESERVED_OPTION_NAMES
    from verify.frontends.cli import _claim_command

    cmd = _claim_command("ws24:prop4")
    own = {o.name for o in registry.get("ws24:prop4").options}
    long = {p: max(p.opts, key=len).lstrip("-") for p in cmd.params}  # -v/--verbose: its long name
    common = {name for p, name in long.items() if name not in own}
    assert common | {"help", "version"} == set(RESERVED_OPTION_NAMES)
