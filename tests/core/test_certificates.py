"""Certificates and the second solver: every UNSAT re-proved, tampering caught, solver
disagreement surfaced."""

from __future__ import annotations

import copy
import json
from fractions import Fraction as F

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from verify import faults
from verify.constructions.bilinear import InductionKeyConstruction, PrevTokenConstruction
from verify.core.model import aggregate, run_claim
from verify.evidence import Context, Evidence, SolverProvenance, using
from verify.proofs import ws24 as paper
from verify.reports.certificates import recheck_dir, write_certificates, write_manifest
from verify.solver import common
from verify.solver import ws24 as sol
from verify.solver.certify import NonLinear, cases_of, farkas_certificate, linearize
from verify.solver.recheck import check_certificate, check_farkas, product_row, recheck_file


def _write(result, directory):
    """What a completed '--certificates DIR' run does: the files, then the manifest."""
    written = write_certificates(result, directory)
    write_manifest(directory, written)
    return [p for p, _ in written]


def _reseal(directory):
    """A forger who also rewrites the manifest (hashes of whatever is there now)."""
    import hashlib

    files = {f.name: {"sha256": hashlib.sha256(f.read_bytes()).hexdigest(), "run_id": "forged"}
             for f in sorted(directory.glob("*.json")) if f.name != "MANIFEST.json"}
    (directory / "MANIFEST.json").write_text(json.dumps({"format": "verify-certificate-manifest/1", "files": files}))


def _lin_obligation(ctx):
    x, y = z3.Reals("x y", ctx)
    return [x + y <= 1, x >= 1, y > 0]


class TestFarkas:
    def test_linear_unsat_certificate_checks(self):
        ctx = z3.Context()
        cert = farkas_certificate(_lin_obligation(ctx))
        assert cert["checked"], cert["check"]
        ok, why = check_certificate(cert)
        assert ok and "Farkas" in why

    def test_changed_multiplier_is_rejected(self):
        cert = farkas_certificate(_lin_obligation(z3.Context()))
        bad = copy.deepcopy(cert)
        ys = bad["cases"][0]["multipliers"]
        ys[0] = str(F(ys[0]) + 1)
        assert not check_certificate(bad)[0]

    def test_negative_multiplier_on_inequality_is_rejected(self):
        rows = [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}, {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "-1"}]
        assert check_farkas(rows, ["1", "1"])[0]
        assert not check_farkas(rows, ["-1", "-1"])[0]

    def test_feasible_system_has_no_certificate(self):
        ctx = z3.Context()
        x = z3.Real("x", ctx)
        cert = farkas_certificate([x <= 1, x >= 0])
        assert not cert["checked"]

    def test_product_rows_are_rederived(self):
        # x in [-1/2, 1/2], y in [-1/2, 1/2], x*y > 1/4 is infeasible (degree 2)
        ctx = z3.Context()
        x, y = z3.Reals("x y", ctx)
        h = z3.RealVal("1/2", ctx)
        cert = farkas_certificate([x <= h, x >= -h, y <= h, y >= -h, x * y > z3.RealVal("1/4", ctx)])
        assert cert["checked"], cert["check"]
        forged = copy.deepcopy(cert)
        for row in forged["cases"][0]["rows"]:
            if "product_of" in row:
                row["rhs"] = str(F(row["rhs"]) + 1)  # a row that is not the product it claims
                break
        ok, why = check_certificate(forged)
        assert not ok and "not the product" in why

    def test_degree_three_is_refused(self):
        ctx = z3.Context()
        x = z3.Real("x", ctx)
        with pytest.raises(NonLinear):
            cases_of([x * x * x > 1])

    @given(a=st.fractions(-5, 5), b=st.fractions(-5, 5), c=st.fractions(-5, 5))
    def test_linearize_matches_evaluation(self, a, b, c):
        ctx = z3.Context()
        x, y = z3.Reals("x y", ctx)
        rv = lambda q: z3.RealVal(f"{q.numerator}/{q.denominator}", ctx)  # noqa: E731
        poly = linearize(rv(a) * x * y - rv(b) * (x - rv(c)) + x * x)
        val = lambda X, Y: sum(k * (1 if m == "" else {"x": X, "y": Y, "x*y": X * Y, "x*x": X * X}[m])  # noqa: E731
                               for m, k in poly.items())
        for X, Y in [(F(1), F(2)), (F(-3, 2), F(1, 3))]:
            assert val(X, Y) == a * X * Y - b * (X - c) + X * X

    def test_product_row_is_sound(self):
        r1 = {"coeffs": {"x": "1"}, "op": "<=", "rhs": "2"}
        r2 = {"coeffs": {"y": "-1"}, "op": "<=", "rhs": "3"}
        pr = product_row(r1, r2)
        # (2 - x)(3 + y) >= 0 for x <= 2, y >= -3
        for X, Y in [(F(0), F(0)), (F(2), F(-3)), (F(-1), F(5))]:
            lhs = sum(F(c) * {"x": X, "y": Y, "x*y": X * Y}[m] for m, c in pr["coeffs"].items())
            assert lhs <= F(pr["rhs"])


class TestWs24Obligations:
    @pytest.mark.parametrize("orientation", ["as-written", "transposed"])
    def test_every_unsat_is_certified_and_cvc5_never_contradicts(self, orientation):
        ev = sol.check_theorem2(PrevTokenConstruction.uniform(4, orientation), F(1, 16))
        n = ev.numbers
        assert n["solvers_disagree"] == [] and n["farkas_failed"] == []
        unsat = [o for o in ev.certificate["obligations"] if o["answer"] == "unsat"]
        assert n["unsat_without_certificate"] == 0 and n["farkas_rechecked"] == len(unsat) >= 4
        assert all(o["farkas_checked"] for o in unsat)
        for ob in ev.certificate["obligations"]:
            # auto policy: cvc5 runs where nothing was re-checked without a solver (a SAT model that was
            # re-checked exactly in fractions needs no second solver)
            assert (ob["answer"] == "unsat" or ob["cvc5"].startswith(ob["answer"]) or "unknown" in ob["cvc5"]
                    or (ob["answer"] == "sat" and "re-checked exactly" in ob["cvc5"]))

    def test_cvc5_agrees_with_z3_on_every_obligation(self):
        for orientation in ("as-written", "transposed"):
            with using(Context(second_opinion="always")):
                ev = sol.check_theorem2(PrevTokenConstruction.uniform(4, orientation), F(1, 16))
            obs = ev.certificate["obligations"]
            assert all(ob["cvc5"] == ob["answer"] for ob in obs), obs
            assert ev.numbers["cvc5_agrees"] == len(obs)

    def test_eq14_every_unsat_certified(self):
        ev = sol.check_eq14(InductionKeyConstruction.uniform(3, "read-score"), F(1, 16))
        assert ev.status == "proved"
        assert ev.numbers["unsat_without_certificate"] == 0 and ev.numbers["solvers_disagree"] == []


class TestFiles:
    def test_write_and_recheck_then_tamper(self, tmp_path):
        p = paper.THEOREM2.parse_params({"orientation": "transposed", "convention": "query-key", "Vmax": "3"})
        r = run_claim(paper.THEOREM2, p, Context(seed=0), layers=("solver",))
        paths = _write(r, tmp_path)
        assert paths, "no certificate written"
        results = recheck_dir(tmp_path)
        assert all(ok for _, ok, _ in results)
        # change one number in one file
        victim = paths[len(paths) // 2]
        doc = json.loads(victim.read_text())
        row = doc["certificate"]["cases"][0]["rows"][0]
        row["rhs"] = str(F(row["rhs"]) + F(1, 7))
        victim.write_text(json.dumps(doc))
        bad = [(f, why) for f, ok, why in recheck_dir(tmp_path) if not ok]
        assert [f for f, _ in bad] == [victim] and "MANIFEST.json" in bad[0][1]
        _reseal(tmp_path)  # with a resealed manifest the file's own encoding hash still catches it
        bad = [(f, why) for f, ok, why in recheck_dir(tmp_path) if not ok]
        assert [f for f, _ in bad] == [victim] and "recorded hash" in bad[0][1]
        # a multiplier change with a recomputed hash is still caught by the Farkas check
        target = paths[-1]  # the largest V: rows with variables
        doc = json.loads(target.read_text())
        case = doc["certificate"]["cases"][0]
        k = next(i for i, y in enumerate(case["multipliers"]) if F(y) != 0 and case["rows"][i]["coeffs"])
        case["multipliers"][k] = "0"  # drop one row that the contradiction needs
        target.write_text(json.dumps(doc))
        assert not recheck_file(target)[0]


def test_solver_disagreement_makes_the_claim_inconsistent():
    ev = Evidence(layer="solver", status="proved",
                  solver=SolverProvenance(disagreements=["|S - target| > A(eps) at v = 1"]))
    verdict, reason = aggregate([ev], None)
    assert verdict == "INCONSISTENT" and "cvc5" in reason


def test_forced_timeout_is_never_a_pass(monkeypatch):
    real = common.check

    def timeout(name, build, timeout_ms, seed=0, **kw):
        r = real(name, build, timeout_ms, seed, second_opinion=False, certify=False)
        r.answer, r.reason = "unknown", "timeout (forced)"
        return r

    monkeypatch.setattr(sol, "check", timeout)
    ev = sol.check_theorem2(PrevTokenConstruction.uniform(3, "transposed"), F(1, 16))
    assert ev.status == "inconclusive" and "timeout" in ev.summary


def test_forged_self_consistent_file_is_caught_by_rebuild(tmp_path):
    from verify.reports.certificates import rebuild_check
    from verify.solver.recheck import encoding_hash

    p = paper.THEOREM2.parse_params({"orientation": "transposed", "convention": "query-key", "Vmax": "3"})
    r = run_claim(paper.THEOREM2, p, Context(seed=0), layers=("solver",))
    paths = _write(r, tmp_path)
    assert rebuild_check(tmp_path) == ([], [])
    forged = paths[-1]
    doc = json.loads(forged.read_text())
    doc["certificate"]["cases"] = [{"rows": [{"coeffs": {}, "op": "<=", "rhs": "-1"}], "multipliers": ["1"]}]
    doc["encoding_sha256"] = encoding_hash([c["rows"] for c in doc["certificate"]["cases"]])
    forged.write_text(json.dumps(doc))
    paths[0].unlink()
    assert {f for f, ok, _ in recheck_dir(tmp_path) if not ok} == {forged, paths[0]}  # the manifest tells
    _reseal(tmp_path)
    assert all(ok for _, ok, _ in recheck_dir(tmp_path))  # self-consistent and resealed: plain recheck cannot tell
    bad, missing = rebuild_check(tmp_path)
    assert [f for f, _, _ in bad] == [forged] and len(missing) == 1


def test_unsat_without_a_second_way_is_not_proved(monkeypatch):
    """An UNSAT that neither a re-checked certificate nor cvc5 confirmed downgrades the
    solver layer to inconclusive (z3 alone is not 'proved')."""
    import verify.solver.certify as certify

    monkeypatch.setattr(certify, "cvc5_opinion", lambda smt2, t, seed=0: ("unknown", "forced"))
    p = paper.THEOREM2.parse_params({"orientation": "read-score", "convention": "query-key", "Vmax": "3"})
    r = run_claim(paper.THEOREM2, p, Context(seed=0, certify=False), layers=("solver",))
    ev = r.layer("solver")
    assert ev.status == "inconclusive" and "z3 only" in ev.summary and r.verdict == "INCONCLUSIVE"


def test_cvc5_wall_clock_limit_is_enforced():
    import time

    import verify.solver.certify as certify

    def hang(smt2, timeout_ms, seed):
        time.sleep(60)

    t0 = time.perf_counter()
    with faults.inject("solver.certify._cvc5_solve", hang):
        answer, reason = certify.cvc5_opinion("(declare-fun x () Real)", 200, 0)
    assert answer == "unknown" and "wall-clock" in reason and time.perf_counter() - t0 < 5


def test_cvc5_helper_is_reused_and_replaced_when_it_must_be():
    """One cvc5 helper answers obligation after obligation (forking a process that holds torch and sympy per
    obligation cost 30-60 ms); it is replaced after an overrun (killed) and when a fault is injected into, or
    removed from, the solve seam, so an injected fault always reaches cvc5's answer.  Faults: a helper kept
    across the seam change answers 'unsat' under the injected 'sat' (the second assertion block fails); a
    helper forked per obligation changes the pid between the first two calls."""
    import verify.solver.certify as certify

    unsat = "(declare-fun x () Real)\n(assert (> x 1))\n(assert (< x 0))\n(check-sat)"
    sat = "(declare-fun x () Real)\n(assert (> x 1))\n(check-sat)"
    assert certify.cvc5_opinion(unsat, 2000)[0] == "unsat"
    pid = certify._Cvc5Helper._current.proc.pid
    assert certify.cvc5_opinion(sat, 2000)[0] == "sat"
    assert certify._Cvc5Helper._current.proc.pid == pid  # the same helper
    import os

    if os.path.isdir(f"/proc/{pid}/fd"):  # it holds stdio and its own two pipe ends, nothing of its parent's
        assert len(os.listdir(f"/proc/{pid}/fd")) == 5
    with faults.inject("solver.certify._cvc5_solve", lambda smt2, t, seed: ("sat", "forced")):
        assert certify.cvc5_opinion(unsat, 2000) == ("sat", "forced")
        assert certify._Cvc5Helper._current.proc.pid != pid
    assert certify.cvc5_opinion(unsat, 2000)[0] == "unsat"  # the fault is gone from the helper too
    old = certify._Cvc5Helper._current.proc
    old.kill()
    old.join()
    assert certify.cvc5_opinion(unsat, 2000)[0] == "unsat"  # a dead helper is replaced
    assert certify._Cvc5Helper._current.proc.pid != old.pid


def test_a_forked_child_gets_its_own_cvc5_helper():
    """A process forked after its parent started a helper starts without one and forks its own (the parent's
    pipes are not the child's to use).  Fault: without the at-fork hook the child writes into its parent's
    helper (the pids are equal)."""
    import os

    import verify.solver.certify as certify

    sat = "(declare-fun x () Real)\n(assert (> x 1))\n(check-sat)"
    assert certify.cvc5_opinion(sat, 2000)[0] == "sat"
    parent_helper = certify._Cvc5Helper._current.proc.pid
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(r)
            answer = certify.cvc5_opinion(sat, 2000)[0]
            os.write(w, f"{answer} {certify._Cvc5Helper._current.proc.pid}".encode())
        finally:
            os._exit(0)
    os.close(w)
    os.waitpid(pid, 0)
    answer, child_helper = os.read(r, 100).decode().split()
    os.close(r)
    assert answer == "sat" and int(child_helper) != parent_helper


def test_cvc5_helper_answers_each_thread_its_own_obligation():
    """Threads of one process share its helper one exchange at a time: each gets the answer to its own
    obligation.  Fault: without the lock, requests and answers of different threads cross (wrong answers)."""
    from concurrent.futures import ThreadPoolExecutor

    import verify.solver.certify as certify

    unsat = "(declare-fun x () Real)\n(assert (> x 1))\n(assert (< x 0))\n(check-sat)"
    sat = "(declare-fun x () Real)\n(assert (> x 1))\n(check-sat)"
    jobs = [(sat, "sat") if i % 2 else (unsat, "unsat") for i in range(48)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(lambda job: certify.cvc5_opinion(job[0], 2000)[0], jobs))
    assert got == [want for _, want in jobs]


def test_cvc5_helper_leaves_a_command_line_run_clean():
    """A run of the command line that started a cvc5 helper ends at once and quietly: the helper drops the
    inherited write end of the Ctrl-C watcher's pipe (held there, the watcher never read EOF: its join waited
    1 s and it then died on a closed descriptor) and the inherited SIGTERM handler (multiprocessing terminates
    daemonic children at exit: the handler raised KeyboardInterrupt in the helper, printing a traceback).
    Faults: either line removed from the helper fails this test."""
    import subprocess
    import sys

    code = ("import time\nfrom verify import interrupts\nfrom verify.solver.certify import cvc5_opinion\n"
            "with interrupts.watching():\n"
            "    print(cvc5_opinion('(declare-fun x () Real)\\n(assert (> x 1))\\n(check-sat)', 2000)[0])\n"
            "    t = time.perf_counter()\n"
            "print(round(time.perf_counter() - t, 3))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    answer, left = out.stdout.split()
    assert answer == "sat" and out.returncode == 0
    assert float(left) < 0.5, f"leaving the watched block took {left} s"
    assert "Traceback" not in out.stderr and "KeyboardInterrupt" not in out.stderr, out.stderr


# ---------------------------------------------------------------------------------------------------------------------
# One forged certificate per rule of the checker.  Each forgery breaks one rule and would be accepted
# as a contradiction by a checker without that rule (the systems are feasible, or a product row claims to be what it is
# not), and each is refused for that rule's reason; VALID shows the same shapes accepted when they are sound.


def _r(coeffs: dict, op: str, rhs: str) -> dict:
    return {"coeffs": coeffs, "op": op, "rhs": rhs}


#: sound certificates using every row kind: x + y + z <= 1, x >= 1, y > 0, z = 0 (multiplier -1 on the equality)
#: sums to 0 < 0; x <= 0, x >= 1 sums to 0 <= -1
VALID = {
    "strict, equality taken negatively": ([_r({"x": "1", "y": "1", "z": "1"}, "<=", "1"), _r({"x": "-1"}, "<=", "-1"),
                                          _r({"y": "-1"}, "<", "0"), _r({"z": "1"}, "=", "0")], ["1", "1", "1", "-1"]),
    "negative right-hand side": ([_r({"x": "1"}, "<=", "0"), _r({"x": "-1"}, "<=", "-1")], ["1/2", "1/2"]),
}

FORGED = {
    # sign of each multiplier by row kind: x <= 1 and x <= 2 (feasible), weighted 1 and -1: 0 <= -1
    "negative multiplier on '<='": ([_r({"x": "1"}, "<=", "1"), _r({"x": "1"}, "<=", "2")], ["1", "-1"], "negative"),
    "negative multiplier on '<'": ([_r({"x": "1"}, "<", "1"), _r({"x": "1"}, "<", "2")], ["1", "-1"], "negative"),
    # a '>=' row is not a relation of the format: read as '<=' it would refute x >= 0, x >= 1
    "unknown relation '>='": ([_r({"x": "1"}, ">=", "0"), _r({"x": "-1"}, "<=", "-1")], ["1", "1"], "unknown relation"),
    # cancellation of every variable: the one left over appears only in the last row / is sorted last / a monomial
    "variable left in the last row": ([_r({"x": "1"}, "<=", "0"), _r({"x": "-1", "w": "1"}, "<=", "-1")], ["1", "1"],
                                      "variable w"),
    "variable sorted last left": ([_r({"a": "1", "zz": "1"}, "<=", "0"), _r({"a": "-1"}, "<=", "-1")], ["1", "1"],
                                  "variable zz"),
    "variable left with a partial cancellation": ([_r({"x": "1", "y": "1"}, "<=", "0"), _r({"x": "-1", "y": "-1/2"}, "<=", "-1")],
                                                  ["1", "1"], "variable y with coefficient 1/2"),
    "monomial left": ([_r({"x": "1", "x*y": "1"}, "<=", "0"), _r({"x": "-1"}, "<=", "-1")], ["1", "1"], "variable x*y"),
    # strict right-hand side: 0 <= 0 is no contradiction, nor 0 < c for c > 0
    "every multiplier zero": ([_r({"x": "1"}, "<=", "0"), _r({"x": "-1"}, "<", "0")], ["0", "0"], "0 <= 0"),
    "rhs 0, no strict row": ([_r({"x": "1"}, "<=", "0"), _r({"x": "-1"}, "<=", "0")], ["1", "1"], "no strict row"),
    "rhs 0, strict row weighted 0": ([_r({"x": "1"}, "<=", "0"), _r({"x": "-1"}, "<=", "0"), _r({"y": "-1"}, "<", "0")],
                                     ["1", "1", "0"], "no strict row"),
    "strict row but rhs positive": ([_r({"x": "1"}, "<", "1"), _r({"x": "-1"}, "<", "0")], ["1", "1"], "0 <= 1"),
    # the rows are the rows: a product row must be the product it names, of earlier base rows
    "product row not the product": ([_r({"x": "1"}, "<=", "1"), _r({"y": "1"}, "<=", "1"),
                                     {**_r({}, "<=", "-1"), "product_of": [0, 1]}], ["0", "0", "1"], "not the product"),
    "product of a later row": ([{**_r({"x": "1"}, "<=", "-1"), "product_of": [0, 1]}, _r({"x": "1"}, "<=", "1")],
                               ["1", "0"], "earlier base rows"),
}


@pytest.mark.parametrize("name", VALID)
def test_sound_certificate_of_every_row_kind_is_accepted(name):
    rows, ys = VALID[name]
    ok, why = check_farkas(rows, ys)
    assert ok, why


@pytest.mark.parametrize("name", FORGED)
def test_each_rule_refuses_its_forgery(name):
    rows, ys, reason = FORGED[name]
    ok, why = check_farkas(rows, ys)
    assert not ok and reason in why, why
    ok, why = check_certificate({"kind": "farkas", "cases": [{"rows": rows, "multipliers": ys}]})
    assert not ok and why.startswith("case 0:")


def test_every_case_must_refute():
    good_rows, good_ys = VALID["negative right-hand side"]
    bad_rows, bad_ys, _ = FORGED["every multiplier zero"]
    cases = [{"rows": good_rows, "multipliers": good_ys}, {"rows": bad_rows, "multipliers": bad_ys}]
    ok, why = check_certificate({"kind": "farkas", "cases": cases})
    assert not ok and why.startswith("case 1:")
    assert not check_certificate({"kind": "farkas", "cases": []})[0]


def _zeroed(path):
    """A forger who sets every multiplier of a real file to 0 (the rows, hence the encoding hash, unchanged)."""
    doc = json.loads(path.read_text())
    for case in doc["certificate"]["cases"]:
        case["multipliers"] = ["0"] * len(case["multipliers"])
    path.write_text(json.dumps(doc))


def test_all_zero_multipliers_refused_with_resealed_manifest_and_under_rebuild(tmp_path, capsys):
    """The issue's forgery: a real certificate's multipliers all 0, manifest re-hashed.  Its rows are the claim's own
    encoding, so only the strict right-hand-side rule can refuse it: plain recheck, --rebuild and the CLI all must."""
    from verify.frontends.cli import main
    from verify.reports.certificates import rebuild_check

    p = paper.THEOREM2.parse_params({"orientation": "transposed", "convention": "query-key", "Vmax": "3"})
    paths = _write(run_claim(paper.THEOREM2, p, Context(seed=0), layers=("solver",)), tmp_path)
    victim = paths[-1]
    _zeroed(victim)
    _reseal(tmp_path)
    assert rebuild_check(tmp_path) == ([], [])  # the rows are genuine: the encoding tie cannot see this forgery
    bad = [(f, why) for f, ok, why in recheck_dir(tmp_path) if not ok]
    assert [f for f, _ in bad] == [victim] and "no contradiction" in bad[0][1]
    for extra in ([], ["--rebuild"]):
        code = main(["recheck", str(tmp_path), "--format", "json", *extra])
        doc = json.loads(capsys.readouterr().out)
        assert code == 1 and doc["valid"] is False
        assert [f["file"] for f in doc["files"] if not f["valid"]] == [str(victim)]


def test_each_field_of_a_row_is_tied_to_the_encoding(tmp_path):
    """The row set tied to the encoding: a coefficient, a relation or a right-hand side edited in one row of a real
    file is refused by the file's own hash; re-hashed and resealed, by --rebuild (the claim's encoding differs)."""
    import shutil

    from verify.reports.certificates import rebuild_check
    from verify.solver.recheck import encoding_hash

    p = paper.THEOREM2.parse_params({"orientation": "transposed", "convention": "query-key", "Vmax": "3"})
    base = tmp_path / "base"
    paths = _write(run_claim(paper.THEOREM2, p, Context(seed=0), layers=("solver",)), base)
    victim = paths[-1].name

    def coeff(row):
        var = sorted(row["coeffs"])[0]
        row["coeffs"][var] = str(F(row["coeffs"][var]) * 2)

    edits = {"coeffs": coeff, "op": lambda row: row.update(op="<" if row["op"] == "<=" else "<="),
             "rhs": lambda row: row.update(rhs=str(F(row["rhs"]) - 1))}
    for field_name, edit in edits.items():
        d = tmp_path / field_name
        shutil.copytree(base, d)
        doc = json.loads((d / victim).read_text())
        edit(next(r for r in doc["certificate"]["cases"][0]["rows"] if r["coeffs"] and r["op"] != "="))
        (d / victim).write_text(json.dumps(doc))
        _reseal(d)
        assert "recorded hash" in recheck_file(d / victim)[1], field_name
        doc["encoding_sha256"] = encoding_hash([c["rows"] for c in doc["certificate"]["cases"]])
        (d / victim).write_text(json.dumps(doc))
        _reseal(d)
        bad, missing = rebuild_check(d)
        assert [(f.name, "not the encoding" in why) for f, _, why in bad] == [(victim, True)] and not missing, field_name


def test_a_cvc5_helper_whose_owner_is_gone_exits_quietly():
    """The owner stopped mid-obligation (SIGTERM or Ctrl-C to a parallel run: the worker dies first) leaves its
    helper an answer to send into a closed pipe: the helper ends quietly (exit 0, nothing on stderr) instead of
    printing a BrokenPipeError traceback under 'verify: aborted'.  Fault: the send unguarded (exit 1, a traceback)."""
    import subprocess
    import sys

    code = ("import multiprocessing as mp, time\n"
            "import verify.solver.certify as c\n"
            "from verify import faults\n"
            "def slow(smt2, t, seed):\n"
            "    time.sleep(0.5)\n"
            "    return ('sat', 'slow')\n"
            "with faults.inject('solver.certify._cvc5_solve', slow):\n"
            "    ctx = mp.get_context('fork')\n"
            "    req_r, req_w = ctx.Pipe(duplex=False)\n"
            "    ans_r, ans_w = ctx.Pipe(duplex=False)\n"
            "    p = ctx.Process(target=c._cvc5_helper_loop, args=(req_r, ans_w, req_w, ans_r))\n"
            "    p.start()\n"
            "    req_r.close(); ans_w.close()\n"
            "    req_w.send(('(check-sat)', 1000, 0))\n"
            "    ans_r.close()\n"
            "    p.join(10)\n"
            "    print(p.exitcode)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["0"] and "Traceback" not in out.stderr, (out.stdout, out.stderr)


def test_the_term_reader_names_z3_symbols_as_z3_does():
    """The raw-AST reader's names (z3's public C API since _symbol2py, a private name, went): an integer symbol
    reads as z3 prints it (k!7), a string symbol as itself, and an unsupported term is quoted in the refusal
    (fault: a missing 'k!' prefix, or an empty quotation, fails here)."""
    import z3

    from verify.solver.certify import NonLinear, linearize

    ctx = z3.Context()
    c = ctx.ref()
    decl = z3.Z3_mk_func_decl(c, z3.Z3_mk_int_symbol(c, 7), 0, (z3.Sort * 0)(), z3.RealSort(ctx).ast)
    k7 = z3.ArithRef(z3.Z3_mk_app(c, decl, 0, (z3.Ast * 0)()), ctx)
    y = z3.Real("y", ctx)
    assert str(k7) == "k!7" and linearize(k7 + 2 * y) == {"k!7": 1, "y": 2}
    with pytest.raises(NonLinear, match=r"unsupported term \(:var 0\)"):  # a bound variable, quoted
        linearize(y + z3.Var(0, z3.RealSort(ctx)))
