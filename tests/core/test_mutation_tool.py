"""tools/mutation.py's bookkeeping (the mutation runs themselves take minutes: docs/mutation.md): the equivalents
list gives a reason for every entry and names lines the module still has, the annotation rule finds annotations
only under ``from __future__ import annotations``, and a survivor matches an entry only on every field."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))

import mutation as M  # noqa: E402


def test_every_equivalent_has_a_reason_and_a_live_line() -> None:
    """An entry without a reason, or whose line the module no longer has (a stale entry that would excuse a new
    mutant on another line with the same text after an edit), fails here."""
    entries = M.equivalents()
    assert entries, "the list is empty"
    for e in entries:
        assert e["module"] in M.TRUSTED, e
        assert len(e["reason"].split()) >= 4, e
        source = [line.strip() for line in (ROOT / e["module"]).read_text().splitlines()]
        assert e["before"] in source, f"stale entry: {e['module']} has no line {e['before']!r}"
        assert e["before"] != e["after"], e
        if source.count(e["before"]) > 1:  # a line the module has more than once is pinned by its context
            hits = [i for i, x in enumerate(source) if x == e["before"]
                    and e.get("context") in source[max(0, i - M.CONTEXT_LINES):i]]
            assert len(hits) == 1, f"{e['module']}: {e['before']!r} occurs {source.count(e['before'])} times; " \
                                   f"its context {e.get('context')!r} must pick exactly one"


def test_a_missing_reason_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "equivalents.json"
    bad.write_text(json.dumps({"equivalent": [{"module": "solver/certify.py", "operator": "x", "before": "a",
                                               "after": "b", "reason": " "}]}))
    monkeypatch.setattr(M, "EQUIVALENTS", bad)
    with pytest.raises(SystemExit, match="lacks reason"):
        M.equivalents()


def test_annotations_are_found_only_when_unevaluated(tmp_path: Path) -> None:
    src = "def f(a: int | None, b=1) -> list[int] | None:\n    x: int | str = a | b\n    return [x]\n"
    lazy, eager = tmp_path / "lazy.py", tmp_path / "eager.py"
    lazy.write_text("from __future__ import annotations\n\n" + src)
    eager.write_text(src)
    spans = M.annotation_spans(lazy)
    assert M.in_annotation((3, 9), (3, 19), spans)        # int | None of a
    assert M.in_annotation((3, 29), (3, 45), spans)       # the return annotation
    assert not M.in_annotation((3, 29), (3, 46), spans)   # one past its end
    assert M.in_annotation((4, 7), (4, 16), spans)        # int | str
    assert not M.in_annotation((4, 19), (4, 24), spans)   # a | b is code
    assert M.annotation_spans(eager) == []


def test_a_survivor_matches_an_entry_on_every_field() -> None:
    e = {"module": "solver/certify.py", "operator": "op", "before": "a", "after": "b", "reason": "r"}
    row = {"module": "solver/certify.py", "operator": "op", "before": "a", "after": "b"}
    assert M.is_equivalent(row, [e])
    for k, other in (("module", "solver/recheck.py"), ("operator", "op2"), ("before", "c"), ("after", "c")):
        assert not M.is_equivalent({**row, k: other}, [e])


def test_a_context_pins_a_repeated_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """'continue' -> 'break' listed for one 'continue' (by the line above it) does not excuse another one."""
    mod = tmp_path / "solver" / "m.py"
    mod.parent.mkdir()
    mod.write_text("for a in x:\n    if a:\n        continue\nfor b in y:\n    if b > 1:\n        continue\n")
    monkeypatch.setattr(M, "ROOT", tmp_path)
    e = {"module": "solver/m.py", "operator": "core/ReplaceContinueWithBreak", "before": "continue", "after": "break",
         "context": "if b > 1:", "reason": "r"}
    row = {"module": "solver/m.py", "operator": "core/ReplaceContinueWithBreak", "before": "continue", "after": "break"}
    assert M.is_equivalent({**row, "line": 6}, [e])
    assert not M.is_equivalent({**row, "line": 3}, [e])


def test_the_trusted_modules_and_their_tests_exist() -> None:
    for module, tests in M.TRUSTED.items():
        assert (ROOT / module).is_file(), module
        assert all((ROOT / t).is_file() for t in tests), tests
    assert set(M.FAST_TIMEOUT) <= set(M.TRUSTED) and "timeout = 45.0" in M._config("kernel/replay.py", ("t",))
    assert "timeout = 15.0" in M._config("kernel/driver.py", ("t",))
    assert "timeout = 120.0" in M._config("solver/certify.py", ("t",))


def test_two_sessions_of_a_module_split_the_same_list(tmp_path: Path) -> None:
    """Each copy makes its own cosmic-ray session, whose work items get fresh random ids: the split must come from
    the mutations themselves, identical in both sessions and one per mutant (a split by id ran some mutants twice
    and others never)."""
    pytest.importorskip("cosmic_ray")
    import subprocess

    lists = []
    for i in range(2):
        cfg, db = tmp_path / f"c{i}.toml", tmp_path / f"s{i}.sqlite"
        cfg.write_text(M._config("kernel/check.py", M.TRUSTED["kernel/check.py"]))
        subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "init", str(cfg), str(db)], cwd=ROOT, check=True,
                       capture_output=True)
        lists.append(sorted(M._identity(w) for w in M._pending(db)))
    assert lists[0] == lists[1] and len(set(lists[0])) == len(lists[0]) > 100


def test_record_keeps_the_modules_its_file_does_not_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--record (and --rerun) with rows of solver/certify.py only: that module's pass is recorded from the rows, a
    listed equivalent counted as such, and every other module's recorded pass is kept as it was (the tool once
    recorded them as empty passes)."""
    results = {"modules": {"solver/recheck.py": {"mutants": 481, "killed": 400, "annotation": 22, "equivalent": 0,
                                                 "survived": 59, "incompetent": 0, "seconds": 900.0,
                                                 "commit": "abc", "survivors": []}}}
    monkeypatch.setattr(M, "RESULTS", tmp_path / "mutation.json")
    monkeypatch.setattr(M, "DOC", tmp_path / "mutation.md")
    (tmp_path / "mutation.json").write_text(json.dumps(results))
    e = next(x for x in M.equivalents() if x["module"] == "solver/certify.py" and not x.get("context"))
    rows = [{"module": "solver/certify.py", "line": 1, "operator": "op", "before": "a", "after": "b",
             "outcome": "killed"},
            {"module": e["module"], "line": 0, "operator": e["operator"], "before": e["before"], "after": e["after"],
             "outcome": "survived"}]
    f = tmp_path / "rows.json"
    f.write_text(json.dumps(rows))
    assert M.main(["--record", str(f)]) == 0
    after = json.loads((tmp_path / "mutation.json").read_text())["modules"]
    assert after["solver/recheck.py"] == results["modules"]["solver/recheck.py"]
    got = after["solver/certify.py"]
    assert (got["mutants"], got["killed"], got["equivalent"], got["survived"]) == (2, 1, 1, 0)
    assert set(after) == {"solver/recheck.py", "solver/certify.py"}


def test_the_gate_fails_on_a_trusted_module_never_passed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """A module mapped in TRUSTED whose full pass was never recorded: the gate has no commit to diff against and
    used to pass it silently; it now fails and names it (exit 1), while a recorded module with no changed line
    passes."""
    head = M._head()
    results = {"modules": {"kernel/check.py": {"mutants": 1, "killed": 1, "annotation": 0, "equivalent": 0,
                                               "survived": 0, "incompetent": 0, "seconds": 1.0, "commit": head,
                                               "survivors": []}}}
    monkeypatch.setattr(M, "RESULTS", tmp_path / "mutation.json")
    (tmp_path / "mutation.json").write_text(json.dumps(results))
    monkeypatch.setattr(M, "_changed_lines", lambda module, base: set())
    assert M.main(["--changed", "kernel/check.py"]) == 0
    assert M.main(["--changed", "kernel/check.py", "solver/recheck.py"]) == 1
    out = capsys.readouterr().out
    assert out == "NO PASS solver/recheck.py: trusted, but no full pass is recorded (docs/mutation.json)\n"


def test_a_session_s_process_group_dies_with_it(tmp_path: Path) -> None:
    """A process a session leaves behind (a mutant's test still looping) is killed with the session's group."""
    import os

    from process_support import assert_gone

    pidfile = tmp_path / "pid"
    M._exec(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; exit 0"], tmp_path, dict(os.environ))
    assert_gone(int(pidfile.read_text()), "a process of the session outlived it")
    assert M._RUNNING == []
    import subprocess

    with pytest.raises(subprocess.CalledProcessError):
        M._exec(["sh", "-c", "exit 3"], tmp_path, dict(os.environ))
