"""The referee report (issue 26): whose statement each variant checks, verdicts by part, and an audit a
person reads (a first page of one line per variant, working links, each witness once).  Each check is also
run on an injected fault and must catch it."""

from __future__ import annotations

import dataclasses
import functools
import re
from typing import Any

import pytest

from verify.core import registry
from verify.core.model import FAILS, HOLDS, Claim, ClaimResult, Provenance, finish_claim
from verify.evidence import Evidence, Layer, Outcome, Status

#: the most lines the audit's first page (title to the end of the summary table) may take
SCREEN_LINES = 30


def _defaults(c: Claim, variant: dict[str, Any]) -> dict[str, Any]:
    return {**{o.name: o.default for o in c.options}, **variant}


def _t3_numeric(exact_ok: bool = False, argmin_ok: bool = True) -> Evidence:
    """theorem3's numeric evidence with the measurements its parts read (the printed formula off the exact
    limit by 0.0119; the minimiser at (0, 1) unless ``argmin_ok`` is False)."""
    arg = [0.0, 1.0] if argmin_ok else [0.1, 0.9]
    numbers = {"reading": "Eq. 10 as printed (a2*beta2)", "grid": 11,
               "exact_limit_check": {"ok": exact_ok, "max_abs_diff": 0.0 if exact_ok else 0.0119, "tolerance": 1e-9,
                                     "witness": {"alpha1_beta1": [0.0, 0.0], "exact_limit": 2.7786, "reading": 2.7905}},
               "empirical_check": {"ok": exact_ok, "tolerance": 0.0014, "d": 1024},
               "argmin_ok": argmin_ok, "per_d": {"1024": {"argmin_alpha1_beta1": arg}},
               "exact_limit": {"argmin": [0.0, 1.0]}}
    ok = exact_ok and argmin_ok
    return Evidence(layer=Layer.NUMERIC, status=Status.CONSISTENT, outcome=Outcome.HOLDS if ok else Outcome.FAILS,
                    summary="synthetic theorem3 measurements", numbers=numbers)


@functools.cache
def _t3_claim() -> Claim:
    """kvshift24:theorem3 without its findings (they read measurements the synthetic evidence leaves out)."""
    return dataclasses.replace(registry.resolve("kvshift24:theorem3"), explain=None)


def _t3(**kw: Any) -> ClaimResult:
    c = _t3_claim()
    params = c.parse_params({})
    skipped = [Evidence(layer=x, status=Status.SKIPPED) for x in (Layer.SYMBOLIC, Layer.SOLVER, Layer.KERNEL)]
    return finish_claim(c, params, skipped[:2] + [_t3_numeric(**kw)] + skipped[2:])


# ------------------------------------------------------------------ provenance labels


def test_kvshift24_labels_follow_the_claims_provenance() -> None:
    """theorem1[causal] is our standard-mask reading; every decode variant is ours and four are implementation
    hazards; theorem2's masked layers are outside Eqs. 4-6; the rest are the paper's statement or our repair of it."""
    got = {}
    for c in registry.paper_claims("kvshift24"):
        for v in c.variants:
            p = _defaults(c, v)
            got[c.display_id(p)] = c.provenance_of(p).kind
    assert got["kvshift24:theorem1[causal]"] == "reading"
    assert got["kvshift24:theorem1[as-displayed]"] == "paper"
    assert got["kvshift24:theorem3[as-printed]"] == "paper" and got["kvshift24:theorem3[appendix-c]"] == "repair"
    # the masked layers are outside Eqs. 4-6: a finding about a different layer, never a repair of Theorem 2
    assert got["kvshift24:theorem2[none]"] == "paper" and got["kvshift24:theorem2[mask+scale]"] == "outside"
    decode = {k: v for k, v in got.items() if k.startswith("kvshift24:decode[")}
    assert len(decode) == 5 and "paper" not in decode.values()
    assert sorted(decode.values()).count("hazard") == 4


def test_every_declared_label_is_a_variant_and_ours_say_why() -> None:
    for c in registry.all_claims():
        for label, prov in c.provenance.items():
            assert prov.kind != "paper", f"{c.id}[{label}]: only our statements need declaring"
            assert prov.why, f"{c.id}[{label}]: a reading or hazard says why it exists"


def test_a_label_naming_no_variant_is_refused() -> None:
    c = registry.resolve("kvshift24:theorem1")
    with pytest.raises(ValueError, match="names no variant"):
        dataclasses.replace(c, provenance={"strict": Provenance("reading", "x")})
    with pytest.raises(ValueError, match="provenance"):
        Provenance("ours")


def _heading_problems(md: str, results: list[ClaimResult]) -> list[str]:
    """Variant headings whose provenance words are not the result's, or that call ours the paper's."""
    problems = []
    for r in results:
        line = next((x for x in md.splitlines() if x.startswith("### ") and f'id="{_anchor(r)}"' in x), "")
        if r.provenance.label not in line:
            problems.append(f"{r.display_id}: heading {line!r} lacks {r.provenance.label!r}")
        if not r.provenance.is_paper and ("paper's statement" in line.replace("of the paper's statement", "")
                                          or "as written" in line):
            problems.append(f"{r.display_id}: our statement headed as the paper's: {line!r}")
    return problems


def _anchor(r: ClaimResult) -> str:
    return re.sub(r"[^a-z0-9]+", "-", r.display_id.lower()).strip("-")


def test_audit_headings_show_the_provenance(kv_results: list[ClaimResult], kv_md: str) -> None:
    assert _heading_problems(kv_md, kv_results) == []
    # injected fault: a report that heads our reading as the statement as written
    bad = kv_md.replace("our reading of the paper's statement", "the statement as written")
    assert any("theorem1[causal]" in p for p in _heading_problems(bad, kv_results))


def test_json_and_text_carry_the_provenance(kv_results: list[ClaimResult]) -> None:
    from verify.reports.text import result_dict, result_text, validate

    causal = next(r for r in kv_results if r.display_id == "kvshift24:theorem1[causal]")
    d = result_dict(causal, timings=False)
    assert d["provenance"]["kind"] == "reading" and d["provenance"]["why"]
    assert validate({"schema": "verify/1", "tool_version": "x", "command": "claim", "seed": 0, "exit_code": 1,
                     "results": [d], "changes": []}) == []
    assert "checks:    our reading of the paper's statement" in result_text(causal, timings=False)
    d["provenance"]["kind"] = "ours"  # injected fault: a kind the schema does not know
    assert validate({"schema": "verify/1", "tool_version": "x", "command": "claim", "seed": 0, "exit_code": 1,
                     "results": [d], "changes": []}) != []


def test_show_lists_each_variants_provenance(capsys: pytest.CaptureFixture[str]) -> None:
    from verify.frontends.cli import main

    assert main(["show", "kvshift24:decode"]) == 0
    out = capsys.readouterr().out
    assert "raw-key,correct,correct: our reading of the paper's statement" in out
    assert out.count(": an implementation hazard (ours, not the paper's)") == 4


# ------------------------------------------------------------------ verdicts by part


def test_theorem3_parts_have_their_own_verdicts() -> None:
    r = _t3()
    parts = {p.name: p for p in r.parts}
    assert parts["formula (Eq. 10)"].verdict == FAILS and parts["formula (Eq. 10)"].role == "detail"
    assert parts["minimiser (0, 1)"].verdict == HOLDS and parts["minimiser (0, 1)"].role == "main"
    assert r.verdict == FAILS
    assert "formula (Eq. 10), not load-bearing" in r.reason and "main conclusion, minimiser (0, 1), stands" in r.reason
    assert "0.0119" in parts["formula (Eq. 10)"].evidence


def test_a_failing_main_part_is_load_bearing() -> None:
    # injected fault: the empirical minimiser moves off the induction head
    r = _t3(argmin_ok=False)
    parts = {p.name: p for p in r.parts}
    assert parts["minimiser (0, 1)"].verdict == FAILS and parts["minimiser (0, 1)"].severity == "load-bearing"
    assert "main conclusion does not stand" in r.reason


def test_a_failing_part_fails_the_claim() -> None:
    """The documented rule: the claim FAILS when any part fails, even where its layers say holds."""
    c = _t3_claim()
    params = c.parse_params({})
    ev = _t3_numeric(exact_ok=True, argmin_ok=False)
    ev.outcome = Outcome.HOLDS  # injected fault: a layer whose outcome ignores the minimiser
    r = finish_claim(c, params, [ev])
    assert r.verdict == FAILS and "minimiser (0, 1), load-bearing" in r.reason


def test_parts_in_json_and_text() -> None:
    from verify.reports.text import result_dict, result_text

    r = _t3()
    d = result_dict(r, timings=False)
    assert [(p["part"], p["verdict"], p["severity"]) for p in d["parts"]] == [
        ("formula (Eq. 10)", "FAILS", "not load-bearing"), ("minimiser (0, 1)", "HOLDS", "load-bearing")]
    text = result_text(r, timings=False)
    assert "FAILS           formula (Eq. 10) (detail; not load-bearing)" in text


# ------------------------------------------------------------------ the audit a person reads


@pytest.fixture(scope="module")
def kv_results() -> list[ClaimResult]:
    """Every default kvshift24 variant with its exact layers only (symbolic and solver: quick), and theorem3 on
    synthetic numeric evidence."""
    from verify.core.model import run_claim
    from verify.evidence import Context

    out = []
    for c in registry.paper_claims("kvshift24"):
        if c.heavy:
            continue
        for v in c.variants:
            params = c.parse_params(v)
            if c.name == "theorem3":
                out.append(_t3() if v["eq10"] == "as-printed" else finish_claim(_t3_claim(), params, [_t3_numeric(True)]))
            else:
                out.append(run_claim(c, params, Context(seed=0), layers=("symbolic",)))
    return out


@pytest.fixture(scope="module")
def kv_md(kv_results: list[ClaimResult]) -> str:
    from verify.reports.audit import audit_markdown

    return audit_markdown("kvshift24", kv_results, layers=("symbolic",))


def _first_page(md: str) -> list[str]:
    lines = md.splitlines()
    end = next(i for i, x in enumerate(lines) if "Contents" in x and x.startswith("## "))
    return lines[:end]


def test_first_page_fits_a_screen_with_one_line_per_variant(kv_results: list[ClaimResult], kv_md: str) -> None:
    page = _first_page(kv_md)
    assert len([x for x in page if x.strip()]) <= SCREEN_LINES
    rows = [x for x in page if x.startswith("| **")]
    assert len(rows) == len(kv_results)
    for r, row in zip(kv_results, rows):
        cells = [c.strip() for c in row.strip("|").split(" | ")]
        assert cells[0] == f"**{r.verdict}**" and cells[2] == r.provenance.kind and len(cells[3]) > 10
    t3 = next(x for x in rows if "theorem3[as-printed]" in x)
    assert "formula (Eq. 10) FAILS (not load-bearing)" in t3 and "stands" in t3
    assert "expected" not in "\n".join(page).lower()


def _broken_links(md: str) -> list[str]:
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', md))
    return sorted({x for x in re.findall(r"\]\(#([^)]+)\)", md) if x not in anchors})


def test_links_resolve(kv_md: str) -> None:
    assert "## " in kv_md and "](#kvshift24-theorem1-causal)" in kv_md
    assert _broken_links(kv_md) == []
    # injected fault: a section that lost its anchor
    assert _broken_links(kv_md.replace('<a id="kvshift24-theorem1-causal"></a>', "")) == ["kvshift24-theorem1-causal"]


def _witness_counts(md: str) -> dict[str, int]:
    """Per variant section, how many witness tables it prints."""
    counts: dict[str, int] = {}
    for section in md.split("\n### ")[1:]:
        head = section.splitlines()[0]
        counts[head] = section.count("**Witness**")
    return counts


def test_each_witness_once(kv_md: str) -> None:
    counts = _witness_counts(kv_md)
    assert counts and max(counts.values()) <= 1
    assert sum(counts.values()) >= 5  # the refuted variants show theirs
    assert kv_md.count("Witness (a concrete case") == 0  # no per-layer witness dumps
    # injected fault: a section that prints its witness twice
    bad = kv_md.replace("**Witness** (", "**Witness** (x) **Witness** (", 1)
    assert max(_witness_counts(bad).values()) == 2


def test_findings_and_repair_before_the_evidence(kv_md: str) -> None:
    sec = kv_md.split('id="kvshift24-theorem2"')[1].split('id="kvshift24-theorem1"')[0]
    assert sec.index("**Repair:**") < sec.index("#### Evidence")
    assert sec.index("**Findings:**") < sec.index("#### Evidence")
    assert "Layers:" not in sec.split("#### Evidence")[0]  # the layer line heads the evidence


def test_large_values_go_to_the_appendix() -> None:
    from verify.reports.audit import _Appendix, _measured

    app = _Appendix()
    grid = {f"m={m},sigma={s}": 0.5 for m in range(5) for s in range(7)}
    rows = _measured({"grid_at_largest_size": grid, "cells_total": 35}, "theorem2[none], numeric", app)
    assert any("35 values, [appendix A1](#appendix-1)" in x for x in rows) and len(rows) < 10
    table = [x for x in app.lines() if x.startswith("| ")]
    assert table[0] == "| sigma \\ m | m = 0 | m = 1 | m = 2 | m = 3 | m = 4 |" and len(table) == 1 + 7  # a 7 x 5 grid
    # keys that are not a grid's (injected: one key without its second coordinate) stay one row each
    app2 = _Appendix()
    _measured({"grid": {**grid, "m=9": 1.0}}, "x", app2)
    assert len([x for x in app2.lines() if x.startswith("| ")]) == 1 + 36


def test_summary_on_the_terminal(kv_results: list[ClaimResult]) -> None:
    from verify.reports.audit import summary_text

    text = summary_text("kvshift24", kv_results)
    lines = text.splitlines()
    assert len(lines) <= SCREEN_LINES
    assert any(x.startswith("FAILS") and "theorem1[causal]" in x and "reading" in x for x in lines)
    assert "](#" not in text  # no Markdown links on a terminal
