"""Hostile input: every bad option or file is refused in one line with exit 2 before any work,
nothing hangs, nothing is half-written; and the safety nets of the verdict logic and of the
solver-free certificate checker each fail on the case they exist for.

One fuzz test per input kind (option values, certificate JSON, expectation files) asserts a
refusal (or an INVALID line) within a time bound, never a traceback or a hang.
"""

from __future__ import annotations

import itertools
import json
import os
import time
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.core import registry
from verify.core.model import FAILS, HOLDS, HOLDS_WITH_FIX, InputError, Option, aggregate
from verify.evidence import STATUSES, Context, Evidence
from verify.frontends.cli import main
from verify.solver.recheck import check_farkas, recheck_file

FAST_CLAIM = "pr26:theorem1"


def run(capsys, *args: str) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    rc = main(list(args))
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, time.perf_counter() - t0


def refused(capsys, *args: str, within: float = 2.0) -> str:
    """The command exits 2 with exactly one stderr line, in under ``within`` seconds."""
    rc, out, err, secs = run(capsys, *args)
    assert rc == 2, (args, rc, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("verify: error: "), err
    assert "Traceback" not in err and out == ""
    assert secs < within, (args, secs)
    return err


# ------------------------------------------------------------------ options, before any work

@pytest.mark.parametrize("args", [
    ("--timeout", "nan"), ("--timeout", "inf"), ("--timeout", "1e308"), ("--timeout", "0.0009"),
    ("--timeout", "-1"), ("--seed", "99999999999999999999"), ("--seed", "-1"),
    ("--seed", "1", "--seed", "2"), ("--format", "json", "--format", "text"),
])
def test_bad_run_settings_are_refused_before_work(capsys, args):
    refused(capsys, FAST_CLAIM, *args)


def test_option_values_no_layer_can_use(capsys):
    assert "--m must be <= 1000000" in refused(capsys, "kvshift24:theorem2", "--m", "1e400")
    assert "expects" in refused(capsys, "kvshift24:theorem2", "--m", "1e999999999")
    assert "expects" in refused(capsys, "kvshift24:theorem2", "--sigma", "nan")


def test_long_arguments_are_not_echoed_in_full(capsys):
    err = refused(capsys, "kvshift24:theorem2", "--m", "9" * 100_000)
    assert len(err) < 500 and "100000 characters" in err


@pytest.mark.parametrize("flag", ["--report", "--junit", "--certificates", "--plots"])
def test_unwritable_outputs_are_found_before_work(capsys, flag):
    if flag == "--plots":
        pytest.importorskip("matplotlib")
    args = ("audit", "ws24", flag, "/proc/verify-x") if flag == "--report" else (FAST_CLAIM, flag, "/proc/verify-x")
    assert "/proc" in refused(capsys, *args, within=3.0)


def test_output_path_rules(capsys, tmp_path):
    same = str(tmp_path / "same.out")
    assert "name the same path" in refused(capsys, "audit", "ws24", "--report", same, "--junit", same)
    # one rule for files and directories: the parent must exist
    assert "does not exist" in refused(capsys, FAST_CLAIM, "--certificates", str(tmp_path / "no" / "a" / "b"))
    assert "does not exist" in refused(capsys, FAST_CLAIM, "--junit", str(tmp_path / "no" / "j.xml"))
    assert not (tmp_path / "no").exists()


def test_report_dash_is_stdout(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rc, out, _, _ = run(capsys, "audit", "pr26", "--layers", "symbolic", "--report", "-", "--quiet")
    assert rc in (0, 1) and out.startswith("# Audit of ")  # the letter
    assert not (tmp_path / "-").exists()


def test_no_check_in_requested_layers_one_rule(capsys):
    """'verify CLAIM' refuses it; 'all' leaves it out of the verdicts and lists it as not checked."""
    numeric_only = [c for c in registry.all_claims() if set(c.checks) == {"numeric"} and not c.heavy]
    assert numeric_only, "the rule needs a numeric-only claim to test against"
    c = numeric_only[0]
    assert "has no check in --layers symbolic" in refused(capsys, c.id, "--layers", "symbolic")
    from verify.core.specs import run_id
    from verify.pipeline.run import run_all

    ran = run_all([c], Context(), ("symbolic",))
    want = [run_id(c, c.parse_params(dict(v))) for v in c.variants]
    assert ran.results == [] and ran.changes == [] and ran.not_checked == want
    from verify.reports.junit import junit_xml

    xml = junit_xml([], mode="expect", layers=("symbolic",), not_checked=ran.not_checked)
    assert f'skipped="{len(want)}"' in xml and "no expectation recorded" not in xml


# ------------------------------------------------------------------ numeric option grammar (fuzz)

@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=60), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                 st.integers().map(str), st.from_regex(r"[0-9eE+\-./]{1,30}", fullmatch=True)))
def test_option_parse_fuzz(raw):
    """Any text either parses to a finite value inside the bounds or is one InputError, fast."""
    for kind in ("int", "float", "rational"):
        o = Option("x", "fuzz", 1, kind=kind, minimum=0)
        t0 = time.perf_counter()
        try:
            v = o.parse(raw)
        except InputError as e:
            assert "\n" not in str(e) and len(str(e)) < 200
        else:
            assert 0 <= v <= 10**6
            if kind == "float":
                assert v == v and abs(v) != float("inf")
        assert time.perf_counter() - t0 < 0.1


# ------------------------------------------------------------------ certificate files

def _cert(rows, mult):
    from verify.solver.recheck import encoding_hash

    cases = [{"rows": rows, "multipliers": mult}]
    return {"format": "verify-certificate/1", "answer": "unsat", "encoding_sha256": encoding_hash([rows]),
            "certificate": {"kind": "farkas", "cases": cases}}


def test_recheck_hostile_files(tmp_path):
    f = tmp_path / "a.json"
    f.write_text("[1,2,3]")
    ok, why = recheck_file(f)
    assert not ok and "JSON object" in why
    f.write_text("[" * 100_000 + "]" * 100_000)
    ok, why = recheck_file(f)
    assert not ok and "unreadable" in why
    # exponent notation would build 10^999999999 before any digit guard
    f.write_text(json.dumps(_cert([{"coeffs": {}, "op": "<=", "rhs": "-1"}], ["1e999999999"])))
    t0 = time.perf_counter()
    ok, why = recheck_file(f)
    assert not ok and "p/q" in why and time.perf_counter() - t0 < 1


def test_recheck_fifo_does_not_block(capsys, tmp_path):
    good = tmp_path / "c.json"
    good.write_text(json.dumps(_cert([{"coeffs": {}, "op": "<=", "rhs": "-1"}], ["1"])))
    os.mkfifo(tmp_path / "x.json")
    rc, out, _, secs = run(capsys, "recheck", str(tmp_path))
    assert rc == 1 and secs < 2
    assert "not a regular file" in out and "no valid MANIFEST.json" in out


@settings(max_examples=200, deadline=None)
@given(st.recursive(st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
                              st.text(max_size=12)),
                    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids,
                                                                                    max_size=4)),
                    max_leaves=20))
def test_recheck_fuzz_never_raises(tmp_path_factory, doc):
    f = tmp_path_factory.mktemp("fz") / "c.json"
    f.write_text(json.dumps(doc))
    t0 = time.perf_counter()
    ok, why = recheck_file(f)
    assert isinstance(ok, bool) and isinstance(why, str) and "\n" not in why
    assert not ok  # nothing random is a valid certificate
    assert time.perf_counter() - t0 < 1


def test_certificate_runs_with_other_parameters_do_not_collide(capsys, tmp_path):
    d = tmp_path / "C"
    assert main(["pr26:prop1", "--layers", "solver", "--N", "4", "--certificates", str(d), "--quiet"]) == 0
    first = sorted(p.name for p in d.glob("*.json"))
    assert main(["pr26:prop1", "--layers", "solver", "--N", "5", "--certificates", str(d), "--quiet"]) == 0
    capsys.readouterr()
    both = sorted(p.name for p in d.glob("*.json"))
    assert set(first) < set(both)  # nothing of the first run was overwritten
    assert main(["recheck", str(d)]) == 0
    # an interrupted run: a certificate file written, the manifest not updated
    extra = d / "pr26-prop1-N-6__0000000000__000.json"
    extra.write_bytes((d / first[1]).read_bytes())
    assert main(["recheck", str(d)]) == 1
    assert "not listed in MANIFEST.json" in capsys.readouterr().out


# ------------------------------------------------------------------ expectation files

def test_expect_file_rules(capsys, tmp_path):
    bad = tmp_path / "e.txt"
    bad.write_bytes(b"\xff\xfe pr26:prop1: HOLDS\n")
    assert "not UTF-8" in refused(capsys, "all", "--expect", str(bad))
    dup = tmp_path / "d.txt"
    dup.write_text("pr26:prop1: HOLDS\n# comment\npr26:prop1: FAILS\n")
    err = refused(capsys, "all", "--expect", str(dup))
    assert f"{dup}:3" in err and "already has an expectation" in err and f"{dup}:1" in err
    js = tmp_path / "d.json"
    js.write_text('{"pr26:prop1": "HOLDS", "pr26:prop1": "FAILS"}')
    assert "appears twice" in refused(capsys, "all", "--expect", str(js))
    os.mkfifo(tmp_path / "fifo")
    assert "not a regular file" in refused(capsys, "all", "--expect", str(tmp_path / "fifo"))


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=200))
def test_expect_file_fuzz(tmp_path_factory, data):
    from verify.core.specs import load_expectations

    f = tmp_path_factory.mktemp("ex") / "e"
    f.write_bytes(data)
    t0 = time.perf_counter()
    try:
        load_expectations(f)
    except InputError as e:
        assert "\n" not in str(e)
    assert time.perf_counter() - t0 < 1


# ------------------------------------------------------------------ verdict aggregation truth table

def _ev(layer, status, outcome=None):
    if status == "consistent":
        return Evidence(layer=layer, status=status, outcome=outcome)
    return Evidence(layer=layer, status=status)


_KINDS = [("proved", None), ("proved (idealised)", None), ("refuted", None), ("consistent", "holds"),
          ("consistent", "fails"), ("inconclusive", None), ("error", None), ("skipped", None)]


def _table_violations(agg, fix) -> list[str]:
    """Every pair of layer statuses against the rules: no HOLDS / HOLDS WITH FIX while a layer refutes
    or fails; a failing layer beside an unfinished one is never FAILS; and the precedence
    INCONSISTENT > INCONCLUSIVE > FAILS > HOLDS WITH FIX > HOLDS."""
    bad = []
    for (a, oa), (b, ob) in itertools.product(_KINDS, repeat=2):
        evs = [_ev("symbolic", a, oa), _ev("numeric", b, ob)]
        verdict, _ = agg(evs, fix)
        outs = {e.outcome for e in evs if e.status != "skipped"}
        unfinished = any(e.status in ("inconclusive", "error") for e in evs)
        if outs == {"holds", "fails"}:
            want = "INCONSISTENT"
        elif unfinished or not outs:
            want = "INCONCLUSIVE"
        elif outs == {"fails"}:
            want = FAILS
        else:
            want = HOLDS_WITH_FIX if fix else HOLDS
        if verdict != want:
            bad.append(f"{a}/{oa} + {b}/{ob}: {verdict}, want {want}")
    return bad


@pytest.mark.parametrize("fix", [None, "a repair"])
def test_aggregation_truth_table(fix):
    assert {s for s, _ in _KINDS} == set(STATUSES)
    assert _table_violations(aggregate, fix) == []


def test_aggregation_fault_fix_before_fails_is_caught():
    """The injected fault 'decide HOLDS WITH FIX before FAILS' (a false HOLDS WITH FIX with every
    layer refuting) is what the table rejects."""
    def broken(evidence, fix):
        if fix and not any(e.status in ("inconclusive", "error") for e in evidence):
            return HOLDS_WITH_FIX, "fix first"
        return aggregate(evidence, fix)

    bad = _table_violations(broken, "a repair")
    assert "refuted/None + refuted/None: HOLDS WITH FIX, want FAILS" in bad


# ------------------------------------------------------------------ certificate checker soundness

FEASIBLE = [  # x <= 1, -x <= 0, x = 1/2 is feasible: no certificate may "refute" it
    {"coeffs": {"x": "1"}, "op": "<=", "rhs": "1"},
    {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "0"},
    {"coeffs": {"x": "1"}, "op": "=", "rhs": "1/2"},
]


@pytest.mark.parametrize("mult,why", [
    (["-1", "0", "0"], "negative multiplier"),            # negative weight on a '<=' row
    (["1", "1", "0"], "no contradiction"),                 # 0 <= 1: a true combination
    (["1", "0", "-1"], "no contradiction"),                # x - x: 0 <= 1/2
    (["1", "0"], "rows but"),                              # length mismatch
    (["1", "1", "1"], "keeps variable"),                   # x survives
])
def test_forged_certificates_of_a_feasible_system_are_rejected(mult, why):
    ok, msg = check_farkas(FEASIBLE, mult)
    assert not ok and why in msg


def test_strict_rows_and_products_rules():
    # 0 < 0 only through a strict row with positive weight
    rows = [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}, {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "0"}]
    assert not check_farkas(rows, ["1", "1"])[0]  # x <= 0 and x >= 0 is feasible (x = 0)
    strict = [{"coeffs": {"x": "1"}, "op": "<", "rhs": "0"}, rows[1]]
    assert check_farkas(strict, ["1", "1"]) == (True, "0 < 0")
    # a product row the checker does not re-derive is rejected
    prod = rows + [{"coeffs": {"x*x": "1"}, "op": "<=", "rhs": "-1", "product_of": [0, 1]}]
    ok, msg = check_farkas(prod, ["0", "0", "1"])
    assert not ok and "not the product" in msg
    prod[2]["product_of"] = [0, 2]
    assert "earlier base rows" in check_farkas(prod, ["0", "0", "1"])[1]


def test_sound_checker_accepts_a_real_refutation_and_a_weakened_one_would_not():
    """Positive control: a genuine infeasible system (x <= 0, x >= 1) is refuted; and the
    'negative multipliers allowed' fault makes the feasible system above look refuted."""
    rows = [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}, {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "-1"}]
    assert check_farkas(rows, ["1", "1"])[0]
    # the fault: drop the sign rule, then [-1, 0, 0]... x <= 1 times -1 with x = 1/2 times 1:
    # -x + x = 0 and -1 + 1/2 < 0 "refutes" a feasible system; the sound checker refuses it
    assert not check_farkas(FEASIBLE, ["-1", "0", "1"])[0]
    total = -Fraction(1) + Fraction(1, 2)
    assert total < 0  # what an unsound checker would have accepted


# ------------------------------------------------------------------ the solver wrapper's unknown

def test_wrapper_maps_a_timeout_to_unknown_not_unsat():
    """z3 cannot decide x^3 + y^3 = z^3 over positive integers in 50 ms: the wrapper itself must say
    'unknown' with z3's reason (no monkeypatching of the wrapper)."""
    import z3

    from verify.solver import common

    def build(ctx):
        x, y, z = (z3.Int(n, ctx) for n in "xyz")
        return [x > 0, y > 0, z > 0, x * x * x + y * y * y == z * z * z]

    r = common.check("Fermat n = 3", build, timeout_ms=50, second_opinion=False, certify=False)
    assert r.answer == "unknown" and r.reason
    summary = common.provenance_numbers(common.provenance([r]), [r])
    assert summary["second_way"]["neither"] == [] and summary["farkas_rechecked"] == 0


def test_size_refusals_do_not_import_torch() -> None:
    """Sizes that cannot fit are refused before torch is loaded (refusals stay ~0.1 s), and planning
    `verify all` parses every variant in the parent process with no torch, sympy or z3 there (it cost
    1.5 s of every run when kvshift24:theorem2's size check imported the numeric layer)."""
    import subprocess
    import sys

    code = ("import sys\n"
            "from verify.core import registry\n"
            "from verify.frontends.cli import main\n"
            "for c in registry.all_claims():\n"
            "    for v in c.variants:\n"
            "        c.parse_params(dict(v))\n"
            "for argv in (['ws24:theorem2', '--V', '2000'], ['ws24:eq14', '--d', '100000'],\n"
            "             ['kvshift24:theorem2', '--L', '1000', '--d', '100000']):\n"
            "    assert main(argv) == 2, argv\n"
            "print(sorted(m for m in ('torch', 'sympy', 'z3') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout


def test_specs_refuse_repeated_options():
    from verify.core.specs import parse_specs

    for bad in ("ws24:theorem2[orientation=transposed,orientation=read-score]", "ws24:theorem2[d=64,d=128]",
                "ws24:theorem2[transposed,transposed]", "ws24:theorem2[*,transposed]"):
        with pytest.raises(InputError):
            parse_specs(bad)
    assert len(parse_specs("ws24:theorem2[*,d=64]")) == 3  # sizes may accompany '*'


def test_expect_file_byte_order_mark_is_not_part_of_the_spec(tmp_path):
    from verify.core.specs import load_expectations

    f = tmp_path / "e.txt"
    f.write_bytes("\ufeffpr26:prop1: HOLDS\n".encode("utf-8"))
    assert [(c.id, v) for c, _, v in load_expectations(f)] == [("pr26:prop1", "HOLDS")]


def test_recheck_stays_inside_its_directory(tmp_path):
    from verify.reports.certificates import recheck_dir

    outside = tmp_path / "outside.json"
    outside.write_text(json.dumps(_cert([{"coeffs": {}, "op": "<=", "rhs": "-1"}], ["1"])))
    d = tmp_path / "C"
    d.mkdir()
    (d / "a.json").write_bytes(outside.read_bytes())
    import hashlib

    digest = hashlib.sha256(outside.read_bytes()).hexdigest()
    man = {"format": "verify-certificate-manifest/1", "files": {"a.json": {"sha256": digest, "run_id": "x"},
                                                                "../outside.json": {"sha256": digest, "run_id": "x"}}}
    (d / "MANIFEST.json").write_text(json.dumps(man))
    rows = recheck_dir(d)
    assert not any(ok for _, ok, _ in rows) and "not a certificate file name in this directory" in rows[0][2]
    # a symbolic link (to a manifest or a certificate) is not a regular file of the directory
    del man["files"]["../outside.json"]
    real = tmp_path / "real-manifest.json"
    real.write_text(json.dumps(man))
    (d / "MANIFEST.json").unlink()
    (d / "MANIFEST.json").symlink_to(real)
    rows = recheck_dir(d)
    assert not any(ok for _, ok, _ in rows) and "no valid MANIFEST.json" in rows[0][2]
    (d / "MANIFEST.json").unlink()
    (d / "MANIFEST.json").write_text(json.dumps(man))
    assert all(ok for _, ok, _ in recheck_dir(d))  # the control: the same manifest as a regular file
    (d / "b.json").symlink_to(outside)
    bad = {f.name: why for f, ok, why in recheck_dir(d) if not ok}
    assert list(bad) == ["b.json"] and "not a regular file" in bad["b.json"]
