"""The CLI contract: exit codes, one-line errors before any work, JSON structure,
determinism, and name resolution (the README's CLI contract)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from verify.core import registry
from verify.core.model import InputError
from verify.frontends.cli import main

SMALL = ["--d", "256", "--V", "16", "--T", "8", "--N", "64", "--Vmax", "4"]


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("orientation,code,verdict", [
    ("read-score", 0, "HOLDS WITH FIX"), ("transposed", 1, "FAILS"), ("as-written", 1, "FAILS")])
def test_theorem2_exit_codes_and_json(capsys, orientation, code, verdict):
    """Under the query-key score convention (the base model's code); the default, both, is tested in tests/ws24."""
    rc, out, err = run(capsys, "theorem2", "--orientation", orientation, "--convention", "query-key", "--format", "json",
                       *SMALL)
    assert rc == code
    doc = json.loads(out)
    assert doc["schema"] == "verify/1" and doc["exit_code"] == code
    (res,) = doc["results"]
    assert res["claim"] == "ws24:theorem2" and res["variant"] == orientation and res["verdict"] == verdict
    assert set(res["layers"]) == {"symbolic", "solver", "numeric", "kernel"}
    for layer in res["layers"].values():
        assert layer["status"] in ("proved", "refuted", "consistent")
        assert isinstance(layer["wall_time_s"], float)
    if orientation == "as-written":
        assert res["layers"]["symbolic"]["witness"]["displayed_score"] == "0"
    elif orientation == "transposed":  # the display is fixed, the model's own score is not
        assert res["layers"]["symbolic"]["witness"]["model_score"] == "0"


def test_text_output_has_witness_and_caveat(capsys):
    rc, out, _ = run(capsys, "ws24:theorem2", *SMALL, "-v")
    assert rc == 1
    assert "FAILS" in out and "witness:" in out and "the ws24 text past its introduction was not reachable" in out
    assert "w_E(v)^T W^1_K r_{-1}" in out  # the equivalent repair is named
    rc, short, _ = run(capsys, "ws24:theorem2", *SMALL)  # the default short view: witness and repair, no caveats
    assert rc == 1 and "witness:" in short and "repair:" in short and "caveats:" not in short
    assert len(short.splitlines()) <= 15 < len(out.splitlines())


@pytest.mark.parametrize("args,needle", [
    (["no-such-claim"], "unknown claim"),
    (["theorem2", "--orientation", "sideways"], "--orientation 'sideways' is not valid"),
    (["ws24:theorem2", "--d", "0"], "--d must be >= 1"),
    (["ws24:theorem2", "--d", "32", "--V", "64"], "exceeds --d"),
    (["ws24:theorem2", "--N", "1000000"], "GiB"),
    (["ws24:theorem2", "--eps", "abc"], "expects a number"),
    (["ws24:theorem2", "--no-such-option", "1"], "No such option"),
    (["ws24"], "is a paper, not a claim"),
    (["eq14", "--layers", "quantum"], "--layers"),
])
def test_bad_input_is_one_line_exit_2(capsys, args, needle):
    rc, out, err = run(capsys, *args)
    assert rc == 2
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and "Traceback" not in err


def test_bad_input_refused_before_work(capsys, monkeypatch):
    # the numeric layer must never start for refused sizes
    import verify.numeric.ws24 as num

    monkeypatch.setattr(num, "check_theorem2", lambda *a, **k: pytest.fail("work started"))
    rc, _, _ = run(capsys, "ws24:theorem2", "--d", "8", "--V", "9")
    assert rc == 2


def test_console_script_no_traceback():
    proc = subprocess.run([sys.executable, "-m", "verify", "theorem2", "--orientation", "sideways"],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.strip().splitlines()) == 1


def test_help_documents_exit_codes(capsys):
    rc, out, _ = run(capsys, "--help")
    assert rc == 0 and "Exit codes" in out and "3  inconclusive" in out


def test_list_and_show(capsys):
    rc, out, _ = run(capsys, "list")
    assert rc == 0 and "ws24:theorem2" in out and "ws24:eq14" in out
    rc, out, _ = run(capsys, "show", "eq14")
    assert rc == 0 and "arXiv 2412.11459" in out and "--orientation" in out


def test_show_lists_quick_and_full_values(capsys):
    """'verify show' prints each option's --full value where it differs, and the sizes that are not options."""
    rc, out, _ = run(capsys, "show", "kvshift24:decode")
    assert rc == 0 and "--L  (default 64; full 1024)" in out and "--d  (default 32) " in out
    rc, out, _ = run(capsys, "show", "kvshift24:theorem3")
    assert rc == 0 and "widths: quick (256, 1024), full (256, 1024, 4096)" in out


def test_same_inputs_same_json(capsys):
    args = ["eq14", "--format", "json", "--no-timings", *SMALL]
    _, a, _ = run(capsys, *args)
    _, b, _ = run(capsys, *args)
    assert a == b


def test_layers_option_skips(capsys):
    rc, out, _ = run(capsys, "theorem2", "--orientation", "read-score", "--convention", "query-key", "--layers",
                     "symbolic", "--format", "json")
    doc = json.loads(out)
    layers = doc["results"][0]["layers"]
    assert layers["symbolic"]["status"] == "proved" and layers["numeric"]["status"] == "skipped"
    assert rc == 0


def test_resolution_by_options():
    assert registry.resolve("theorem2", ["orientation"]).id == "ws24:theorem2"
    assert registry.resolve("WS24:EQ14").id == "ws24:eq14"
    with pytest.raises(InputError):
        registry.resolve("theorem2", ["no_such_option"])


def test_inconclusive_is_exit_3(capsys, monkeypatch):
    # a solver that answers unknown must never pass
    import verify.solver.common as common

    real = common.check

    def unknown(name, build, timeout_ms, seed=0):
        r = real(name, build, timeout_ms, seed)
        r.answer, r.reason = "unknown", "timeout (forced)"
        return r

    import verify.solver.ws24 as sol

    monkeypatch.setattr(sol, "check", unknown)
    rc, out, _ = run(capsys, "theorem2", "--orientation", "read-score", "--layers", "symbolic,solver")
    assert rc == 3 and "INCONCLUSIVE" in out


# ------------------------------------------------------------------ --expect: the user's file wins


def _expect_all(capsys, monkeypatch, tmp_path, text: str, recorded: dict | None = None):
    """'verify all --expect FILE' over ws24:theorem2 alone (symbolic layer: the three variants in under a second),
    with the claim's recorded expectations replaced by ``recorded`` when given."""
    import dataclasses

    from verify.proofs import ws24

    claim = ws24.THEOREM2 if recorded is None else dataclasses.replace(ws24.THEOREM2, expected=recorded)
    monkeypatch.setattr(registry, "all_claims", lambda: [claim])
    exp = tmp_path / "expect.txt"
    exp.write_text(text)
    code, out, _ = run(capsys, "all", "--expect", str(exp), "--layers", "symbolic", "--quiet", "--format", "json",
                       "--no-timings", "--jobs", "1")
    doc = json.loads(out)
    return code, doc["changes"], {r["run_id"]: (r["verdict"], r["expected"]) for r in doc["results"]}


def test_expect_overrides_the_recorded_expectation_that_agrees(capsys, monkeypatch, tmp_path):
    """The recorded expectation (INCONCLUSIVE: it depends on the score convention) equals the verdict; the user's
    file says FAILS: exit 1."""
    code, changes, res = _expect_all(capsys, monkeypatch, tmp_path, "ws24:theorem2[read-score]: FAILS\n")
    assert res["ws24:theorem2[read-score]"] == ("INCONCLUSIVE", "FAILS")
    assert code == 1 and changes == ["ws24:theorem2[read-score]: FAILS -> INCONCLUSIVE"]
    # the variants the file does not name keep their recorded expectation
    assert res["ws24:theorem2[as-written]"] == ("FAILS", "FAILS")
    assert res["ws24:theorem2[transposed]"] == ("INCONCLUSIVE", "INCONCLUSIVE")


def test_expect_overrides_the_recorded_expectation_that_disagrees(capsys, monkeypatch, tmp_path):
    """A stale recorded expectation (HOLDS) that the user's file corrects to the verdict: exit 0, nothing changed;
    without the file the same run exits 1."""
    stale = {"as-written": "FAILS", "transposed": "INCONCLUSIVE", "read-score": "HOLDS"}
    code, changes, res = _expect_all(capsys, monkeypatch, tmp_path, "ws24:theorem2[read-score]: INCONCLUSIVE\n", stale)
    assert (code, changes, res["ws24:theorem2[read-score]"]) == (0, [], ("INCONCLUSIVE", "INCONCLUSIVE"))
    code, changes, _ = _expect_all(capsys, monkeypatch, tmp_path, "# nothing\n", stale)
    assert code == 1 and changes == ["ws24:theorem2[read-score]: HOLDS -> INCONCLUSIVE"]


def test_expect_star_applies_to_every_variant(capsys, monkeypatch, tmp_path):
    code, changes, res = _expect_all(capsys, monkeypatch, tmp_path, "ws24:theorem2[*]: FAILS\n")
    assert {k: e for k, (_, e) in res.items()} == {f"ws24:theorem2[{v}]": "FAILS" for v in ("as-written", "transposed", "read-score")}
    assert code == 1 and changes == ["ws24:theorem2[transposed]: FAILS -> INCONCLUSIVE",
                                     "ws24:theorem2[read-score]: FAILS -> INCONCLUSIVE"]


def test_progress_reaches_a_log_as_plain_lines(capsys, monkeypatch, tmp_path):
    """With stderr not a terminal (a log, nohup, CI) a long run's progress is written as plain lines, at most one
    per PLAIN_PROGRESS_EVERY_S; a short run writes none, and --quiet none at all.  Fault: the terminal-only
    spinner of before (a 6-hour training sent to a log printed nothing until it ended)."""
    from verify.frontends import cli

    tiny = ("bietti23:probes", "--d", "8", "--T", "8", "--batch", "2", "--steps", "2", "--seeds", "1",
            "--layers", "numeric", "--cache-dir")
    rc, _, err = run(capsys, *tiny, str(tmp_path / "a"))
    assert rc in (0, 1, 3) and "verify: " not in err  # short: nothing
    monkeypatch.setattr(cli, "PLAIN_PROGRESS_EVERY_S", 0.0)
    rc, _, err = run(capsys, *tiny, str(tmp_path / "b"))
    lines = [ln for ln in err.splitlines() if ln.startswith("verify: ")]
    assert lines and any("step" in ln for ln in lines), err
    rc, _, err = run(capsys, *tiny, str(tmp_path / "c"), "--quiet")
    assert "verify: " not in err
