"""Reports and CI: JSON schema, JUnit, Markdown audit, --expect regression,
plots, claim specs and the pytest plugin.

Claims run with the symbolic and solver layers only (the numeric layer is not needed to
exercise the output formats); figures and published-figure tables use a synthetic
numeric Evidence so no heavy work runs.
"""

from __future__ import annotations

import dataclasses
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from verify.core import registry
from verify.core.model import ClaimResult, InputError, run_claim
from verify.evidence import Context, Evidence, Figure
from verify.frontends.cli import main
from verify.reports.text import JSON_SCHEMA, SCHEMA_FILE, validate

pytest_plugins = ["pytester"]

FAST = ["--layers", "symbolic,solver", "--quiet"]


@pytest.fixture
def only_theorem2(monkeypatch: pytest.MonkeyPatch):
    """Restrict the registry to ws24:theorem2 so `all` and `audit` stay quick and do not
    depend on the papers being built elsewhere."""
    claim = small_theorem2()
    monkeypatch.setattr(registry, "all_claims", lambda: [claim])
    real = registry.paper_claims
    monkeypatch.setattr(registry, "paper_claims", lambda p: (claim,) if p == "ws24" else real(p))
    return claim


def small_theorem2():
    """ws24:theorem2 with a smaller default solver vocabulary (Vmax = 3): same verdicts, less work."""
    from verify.proofs import ws24

    return ws24.THEOREM2.with_defaults(Vmax=3)


@pytest.fixture(scope="module")
def t2_results() -> list[ClaimResult]:
    c = small_theorem2()
    return [run_claim(c, c.parse_params(dict(v)), Context(), ("symbolic", "solver")) for v in c.variants]


# ------------------------------------------------------------------ JSON


def test_json_validates_against_schema(capsys: pytest.CaptureFixture[str]) -> None:
    rc = main(["theorem2", "--orientation", "read-score", "--convention", "query-key", "--Vmax", "3", "--format", "json",
               "--no-timings", *FAST])
    assert rc == 0
    out = capsys.readouterr()
    doc = json.loads(out.out)  # stdout carries only the report
    assert validate(doc) == []
    assert doc["schema"] == "verify/1"
    r = doc["results"][0]
    assert (r["display_id"], r["verdict"], r["run_id"], r["paper"]) == (
        "ws24:theorem2[read-score]", "HOLDS WITH FIX", "ws24:theorem2[read-score,convention=query-key,Vmax=3]", "ws24")
    # the shipped schema file is the schema the tool validates with
    assert json.loads(SCHEMA_FILE.read_text()) == JSON_SCHEMA
    # the checker is not vacuous
    bad = json.loads(out.out)
    bad["results"][0]["verdict"] = "PROBABLY"
    del bad["results"][0]["layers"]["solver"]["status"]
    bad["schema"] = "verify/0"
    errs = validate(bad)
    assert any("verdict" in e for e in errs) and any("status" in e for e in errs) and any("schema" in e for e in errs)


# ------------------------------------------------------------------ JUnit + regression


def test_all_junit_one_testcase_per_variant(only_theorem2, tmp_path: Path) -> None:
    j = tmp_path / "j.xml"
    assert main(["all", "--junit", str(j), *FAST]) == 0
    root = ET.parse(j).getroot()
    assert root.tag == "testsuites"
    cases = list(root.iter("testcase"))
    assert [(c.get("classname"), c.get("name")) for c in cases] == [
        ("ws24", "ws24:theorem2[as-written]"), ("ws24", "ws24:theorem2[transposed]"),
        ("ws24", "ws24:theorem2[read-score]")]
    assert root.find("testsuite").get("tests") == "3"
    assert root.find("testsuite").get("failures") == "0"
    props = {p.get("name"): p.get("value") for p in cases[0].find("properties")}
    assert props["verdict"] == "FAILS" and props["expected"] == "FAILS" and props["seed"] == "0"
    assert "engine.z3" in props and "engine.sympy" in props


def test_expect_file_changed_expectation_exits_1(only_theorem2, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    exp = tmp_path / "expect.txt"
    exp.write_text("# my expectations\nws24:theorem2[read-score]: FAILS\n")
    j = tmp_path / "j.xml"
    assert main(["all", "--expect", str(exp), "--junit", str(j), *FAST]) == 1
    out = capsys.readouterr().out
    assert "ws24:theorem2[read-score]: FAILS -> INCONCLUSIVE" in out
    failures = [tc for tc in ET.parse(j).getroot().iter("testcase")
                if tc.find("failure") is not None or tc.find("error") is not None]
    assert [tc.get("name") for tc in failures] == ["ws24:theorem2[read-score]"]
    f = failures[0].find("failure") if failures[0].find("failure") is not None else failures[0].find("error")
    assert f.get("type") == "INCONCLUSIVE" and "FAILS -> INCONCLUSIVE" in f.get("message")

    # JSON form; a user variant not run by default is added, an expectation that holds exits 0
    exp2 = tmp_path / "expect.json"
    exp2.write_text(json.dumps({"ws24:theorem2[read-score,convention=query-key,Vmax=4]": "HOLDS WITH FIX"}))
    assert main(["all", "--expect", str(exp2), "--format", "json", "--no-timings", *FAST]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["run_id"] for r in doc["results"]][-1] == "ws24:theorem2[read-score,convention=query-key,Vmax=4]"
    assert doc["changes"] == [] and validate(doc) == []


def test_junit_claim_failure_carries_witness(t2_results: list[ClaimResult]) -> None:
    from verify.reports.junit import junit_xml

    root = ET.fromstring(junit_xml(t2_results, mode="holds"))
    cases = {c.get("name"): c for c in root.iter("testcase")}
    fail = cases["ws24:theorem2[as-written]"].find("failure")
    assert fail is not None and fail.get("type") == "FAILS"
    assert "witness (symbolic)" in fail.text and "chi(v)" in fail.text
    # the repairs depend on the score convention: INCONCLUSIVE is an <error>, never a pass or a failure
    assert cases["ws24:theorem2[read-score]"].find("failure") is None
    assert cases["ws24:theorem2[read-score]"].find("error") is not None


# ------------------------------------------------------------------ Markdown audit


def test_audit_report_markdown(only_theorem2, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rep, letter = tmp_path / "r.md", tmp_path / "letter.md"
    assert main(["audit", "ws24", "--report", str(letter), "--appendix", str(rep), *FAST]) == 0
    md = rep.read_text()  # the appendix: the full evidence
    assert "(r.md#ws24-theorem2)" in letter.read_text()
    c = only_theorem2
    assert md.startswith("# Referee audit: Wang & Sato")
    assert "Summary" in md and "| **FAILS** | [theorem2[as-written]](#ws24-theorem2-as-written) | paper |" in md
    assert "| expected |" not in md and "Expected:" not in md  # recorded expectations are for CI outputs only
    assert f"> {c.statement}" in md and c.source in md
    assert "**Verdict: FAILS**" in md and "**Verdict: INCONCLUSIVE**" in md and "depends on the score convention" in md
    assert "r_{-1}^T W^1_K w_E(v) = 0" in md  # the finding
    assert "Witness" in md and "Certificate" in md and c.repair in md
    assert all(cav in md for cav in c.caveats)
    assert "wall time" not in md.lower()  # deterministic without --timings
    assert "ws24:theorem2[as-written]" in capsys.readouterr().out  # summary table on stdout
    # without --report: the letter on stdout (its evidence link the JSON), and it is reproducible
    assert main(["audit", "ws24", *FAST]) == 0
    first = capsys.readouterr().out
    assert first.startswith("# Audit of Wang & Sato") and "Evidence: the JSON of this run" in first
    assert main(["audit", "ws24", *FAST]) == 0
    assert capsys.readouterr().out == first


def test_audit_errors_are_one_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["audit", "nosuchpaper"]) == 2
    assert capsys.readouterr().err.strip().startswith("verify: error: unknown paper 'nosuchpaper'")
    assert main(["audit", "ws24", "--report", str(tmp_path / "missing" / "r.md")]) == 2
    assert "does not exist" in capsys.readouterr().err


def _synthetic(t2_results: list[ClaimResult]) -> ClaimResult:
    r = t2_results[1]
    num = Evidence(layer="numeric", status="consistent", outcome="holds", summary="synthetic",
                   numbers={"d": 64, "V": 8, "T": 8,
                            "score_vs_t_rpe": [0.5, 0.25, 0.125, 0.0625, 0.03, 0.01],
                            "score_vs_t_ape": [0.4, 0.3, 0.2, 0.1, 0.05, 0.02]},
                   figures=[Figure("Fig. 3, t = 16", 1.0, 0.9489, False, "one-step gradient"),
                            Figure("Fig. 3, t = 32", 0.5, 0.5, True, "exact")],
                   tolerance="0.128 (4 standard errors)", seed=0)
    ev = [e for e in r.evidence if e.layer != "numeric"] + [num]
    return ClaimResult(r.claim, r.params, r.verdict, r.reason, ev, r.fix, r.expected, r.notes)


def test_published_table_and_numbers(t2_results: list[ClaimResult]) -> None:
    from verify.reports.audit import audit_markdown

    r = _synthetic(t2_results)
    md = audit_markdown("ws24", [r])
    assert "**Paper against ours** (published figures reproduced 1/2;" in md
    assert "| Fig. 3, t = 16 | 1 |  |  | 0.9489 | **no** | one-step gradient | numeric |" in md
    assert "| Fig. 3, t = 32 | 0.5 |  |  | 0.5 | yes | exact | numeric |" in md
    assert "Tolerance: 0.128 (4 standard errors)" in md
    assert r.figures_reproduced == "1/2"


def test_figures_in_json_text_and_reason(t2_results: list[ClaimResult]) -> None:
    """Figures are first-class: listed once per result with their layer, counted k/n, and kept
    out of the statement's verdict; the unreproduced one becomes a finding."""
    import json

    from verify.core.model import run_claim
    from verify.reports.text import result_text, to_json, validate

    r = _synthetic(t2_results)
    doc = json.loads(to_json([r], "claim", 0, 0))
    assert validate(doc) == []
    res = doc["results"][0]
    assert res["figures_reproduced"] == "1/2"
    assert [f["reproduced"] for f in res["figures"]] == [False, True]
    assert res["figures"][0]["layer"] == "numeric" and "figures" not in res["layers"]["numeric"]
    text = result_text(r)
    assert "published figures (reproduced 1/2):" in text and "NO      Fig. 3, t = 16" in text
    # through run_claim: the reason separates the statement from its figures
    num = [e for e in r.evidence if e.layer == "numeric"][0]
    claim = dataclasses.replace(r.claim, checks={"numeric": lambda p, c: num}, explain=None)
    out = run_claim(claim, r.params, Context(), layers=("numeric",))
    assert out.reason.endswith("published figures reproduced 1/2")
    assert out.reason.startswith("statement: ")
    assert any(n.startswith("Published figure not reproduced: Fig. 3, t = 16") for n in out.notes)
    assert not any("t = 32" in n for n in out.notes)


def test_plots(t2_results: list[ClaimResult], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from verify.reports.plots import write_plots

    files, notes = write_plots([_synthetic(t2_results), t2_results[0]], tmp_path / "figs")
    assert [f.name for f in files] == ["ws24_theorem2_transposed_score_vs_t.png"]
    assert files[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert notes == ["ws24:theorem2[as-written]: no figure (the numbers it plots were not measured; "
                     "run the numeric layer)"]


def test_plot_registry_other_papers(t2_results: list[ClaimResult], tmp_path: Path) -> None:
    """kvshift24's (m, sigma) grid and pr26's alpha_L table, from the numbers those papers report."""
    pytest.importorskip("matplotlib")
    import dataclasses

    from verify.reports.plots import write_plots

    def fake(cid: str, numbers: dict) -> ClaimResult:
        c = dataclasses.replace(t2_results[0].claim, id=cid)
        ev = [Evidence(layer="numeric", status="consistent", outcome="fails", numbers=numbers)]
        return ClaimResult(c, t2_results[0].params, "FAILS", "synthetic", ev, None)

    kv = fake("kvshift24:theorem2", {"grid_at_largest_size": {"m=0,sigma=1/2": 0.05, "m=0,sigma=2": 0.03,
                                                              "m=1/2,sigma=1/2": 0.3, "m=1/2,sigma=2": 0.17}})
    pr = fake("pr26:theorem2", {"L0": 20, "L": [64, 128], "alpha": {"rope": {"copy": [0.1, 0.0], "prev": [1, 1]}}})
    files, notes = write_plots([kv, pr], tmp_path)
    assert sorted(f.name.rsplit("_", 1)[-1] for f in files) == ["L.png", "ih.png"] and notes == []


# ------------------------------------------------------------------ specs


def test_specs() -> None:
    from verify.core.specs import parse_specs, run_id, split_specs

    assert split_specs("ws24:theorem2[orientation=transposed,d=64],ws24:eq14") == [
        "ws24:theorem2[orientation=transposed,d=64]", "ws24:eq14"]
    got = [run_id(c, p) for c, p in parse_specs(
        "ws24:theorem2[orientation=transposed],theorem2[transposed],ws24:theorem2,ws24:eq14[*],theorem2[as-written,d=64]")]
    assert got == ["ws24:theorem2[transposed]", "ws24:theorem2[as-written]", "ws24:eq14[as-written]",
                   "ws24:eq14[transposed]", "ws24:eq14[read-score]", "ws24:theorem2[as-written,d=64]"]
    assert {c.paper for c, _ in parse_specs("ws24")} == {"ws24"}
    for bad in ("ws24:theorem2[sideways]", "ws24:theorem2[d=-1]", "ws24:nothing", "ws24:theorem2[", "x[y]z"):
        with pytest.raises(InputError):
            parse_specs(bad)


def test_expectations_file_errors(tmp_path: Path) -> None:
    from verify.core.specs import load_expectations

    f = tmp_path / "e.txt"
    f.write_text("ws24:theorem2[transposed]: MAYBE\n")
    with pytest.raises(InputError, match="MAYBE"):
        load_expectations(f)
    f.write_text("ws24:theorem2[transposed] = holds with fix\nws24:theorem2 FAILS\n")
    assert [(c.id, v) for c, _, v in load_expectations(f)] == [("ws24:theorem2", "HOLDS WITH FIX"),
                                                                ("ws24:theorem2", "FAILS")]


# ------------------------------------------------------------------ pytest plugin


def test_plugin_passing_variant(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("-p", "no:cacheprovider",
                             "--verify-claims=ws24:theorem2[orientation=read-score,convention=query-key]",
                             "--verify-layers=symbolic,solver", "-v")
    res.assert_outcomes(passed=1)
    assert res.ret == 0
    res.stdout.fnmatch_lines(["*verify-claims::ws24:theorem2[[]read-score*[]] PASSED*"])


def test_plugin_failing_claim_shows_witness(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("-p", "no:cacheprovider", "--verify-claims=ws24:theorem2",
                             "--verify-layers=symbolic,solver")
    res.assert_outcomes(failed=1)
    assert res.ret == 1
    res.stdout.fnmatch_lines(["*claim ws24:theorem2[[]as-written[]] does not hold: FAILS*", "*witness:*"])


def test_plugin_bad_spec_is_usage_error(pytester: pytest.Pytester) -> None:
    res = pytester.runpytest("-p", "no:cacheprovider", "--verify-claims=ws24:nosuch")
    assert res.ret == pytest.ExitCode.USAGE_ERROR


def test_plugin_inactive_without_option(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x():\n    assert True\n")
    res = pytester.runpytest("-p", "no:cacheprovider")
    res.assert_outcomes(passed=1)


def test_no_timings_reads_the_typed_wall_time(t2_results: list[ClaimResult]) -> None:
    """--no-timings zeroes the typed Evidence.wall_time_s by its field, the free-form dicts' timing keys by
    their name and the prose's time notes by the pattern; every other value is kept."""
    from verify.reports.text import result_dict, result_text, table_text

    r = t2_results[0]
    ev = Evidence(layer="numeric", status="consistent", outcome="holds", summary="agrees (0.25 s)",
                  numbers={"solver_seconds": 2.5, "n": 3}, wall_time_s=1.5, details=["ran (12 ms)"])
    r = ClaimResult(r.claim, r.params, r.verdict, r.reason, [ev], r.fix, r.expected, r.notes)
    d = result_dict(r, timings=False)["layers"]["numeric"]
    assert (d["wall_time_s"], d["numbers"], d["summary"], d["details"]) == (0.0, {"solver_seconds": 0.0, "n": 3},
                                                                             "agrees", ["ran"])
    assert result_dict(r, timings=True)["layers"]["numeric"]["wall_time_s"] == 1.5
    assert "1.50 s" in result_text(r) and "1.50 s" not in result_text(r, timings=False)
    assert table_text([r]).splitlines()[-1].endswith("1.5s") and "1.5s" not in table_text([r], timings=False)
