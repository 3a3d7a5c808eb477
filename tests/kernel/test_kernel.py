"""The kernel layer's machinery: the build, the assumption audit, the evidence it yields, the Farkas
replay, and the verdict rules around it.

Tests that need Coq skip when coqc is missing, and fail instead under ``CI`` (where ``.ci/run``
installs Coq first), so a CI machine without Coq cannot pass by skipping."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from kernel_support import need_coq

from verify.core.model import aggregate
from verify.evidence import Evidence
from verify.kernel import catalog
from verify.kernel.check import evidence_from_build, statements_for
from verify.kernel.driver import (
    THEORIES,
    build_theories,
    cached_build,
    forbidden_vernacular,
    parse_assumptions,
    parse_coqchk_axioms,
    parse_q,
    parse_q_list,
    statement_text,
    theory_names,
)
from verify.kernel.replay import NotReplayable, certificate_text, replay_documents
from verify.kernel.spec import KernelStatement


@pytest.fixture(scope="module")
def shipped_build(tmp_path_factory):
    """One cold build of the shipped theories in a private cache (what a first `verify all` does)."""
    need_coq()
    cache = tmp_path_factory.mktemp("kernel-cache")
    return cached_build(catalog.statements(), cache_dir=cache), cache


# --- the shipped theories -----------------------------------------------------------------------------

def test_every_shipped_theory_compiles_passes_coqchk_and_rests_on_no_assumption_of_ours(shipped_build):
    build, _ = shipped_build
    names = theory_names()
    assert "Farkas" in names
    assert all(build.compiled[n] for n in names), build.errors
    assert all(build.coqchk[n] == "ok" for n in names), build.coqchk
    assert all(not build.untrusted_axioms(n) for n in names)
    for s in catalog.statements():
        fact = build.theorems[s.qualified]
        assert fact.found, s.qualified
        assert fact.untrusted == [], (s.qualified, fact.untrusted)
        assert fact.statement, f"{s.qualified}: the statement is not found in the source"


def test_no_theory_admits_or_assumes():
    for name in theory_names():
        assert forbidden_vernacular((THEORIES / f"{name}.v").read_text()) == [], name


def test_the_cache_is_reused_and_keyed_on_the_sources(shipped_build, tmp_path):
    build, cache = shipped_build
    again = cached_build(catalog.statements(), cache_dir=cache)
    assert again.key == build.key and again.compile_s == build.compile_s  # read back, not rebuilt
    assert len(list(cache.glob("*/build.json"))) == 1


def test_every_catalog_entry_names_a_registered_claim_variant():
    from verify.core import registry

    for s in catalog.statements():
        claim = registry.get(s.claim)
        labels = {claim.variant_label(claim.parse_params(v)) for v in claim.variants}
        assert s.variant in labels, (s.claim, s.variant, labels)
        assert "kernel" in claim.checks
        unknown = [o for o in s.covers if claim.option(o) is None]
        assert not unknown, (s.qualified, unknown)


# --- the assumption audit and the refusals ------------------------------------------------------------

def _theories(tmp_path: Path, files: dict[str, str]) -> Path:
    d = tmp_path / "theories"
    d.mkdir()
    (d / "_CoqProject").write_text("-Q . Verify\n" + "".join(f"{n}.v\n" for n in files))
    for n, text in files.items():
        (d / f"{n}.v").write_text(text)
    return d


GOOD = "Require Import Reals Lra.\nOpen Scope R_scope.\nTheorem t (x : R) : x + 0 = x.\nProof. lra. Qed.\n"


@pytest.mark.parametrize("fault", ["Axiom cheat : 1 = 0.", "Lemma l : 1 = 0. Admitted.",
                                   "Parameter p : nat.", "Unset Guard Checking."])
def test_an_assumption_of_ours_is_refused_before_compiling(tmp_path, fault):
    need_coq()
    d = _theories(tmp_path, {"T": GOOD + fault + "\n"})
    s = KernelStatement("x:y", "", "T", "t", "proves", "x + 0 = x")
    build = build_theories([s], theories=d)
    assert not build.compiled["T"] and "refused before compiling" in build.errors["T"]
    ev = evidence_from_build(build, [s])
    assert ev.status == "error" and "did not compile" in ev.summary


def test_print_assumptions_catches_an_axiom_the_text_guard_misses(tmp_path, monkeypatch):
    """The textual guard is a convenience; the kernel's own answer decides: with the guard switched
    off, a theorem resting on an axiom of ours is refused from Print Assumptions and coqchk."""
    need_coq()
    import verify.kernel.driver as driver

    monkeypatch.setattr(driver, "forbidden_vernacular", lambda text: [])
    d = _theories(tmp_path, {"T": GOOD + "Axiom cheat : forall x : R, x = 0.\n"
                                          "Theorem bad : 1 = 0 :> R.\nProof. apply cheat. Qed.\n"})
    s = KernelStatement("x:y", "", "T", "bad", "proves", "1 = 0")
    build = build_theories([s], theories=d)
    assert build.compiled["T"]
    assert build.theorems["Verify.T.bad"].untrusted == ["T.cheat"] or any(
        "cheat" in a for a in build.theorems["Verify.T.bad"].untrusted)
    assert any(a.endswith("cheat") for a in build.untrusted_axioms("T"))
    ev = evidence_from_build(build, [s])
    assert ev.status == "error" and "assumptions of ours" in ev.summary


def test_a_missing_theorem_and_a_compile_error_are_errors_not_passes(tmp_path):
    need_coq()
    d = _theories(tmp_path, {"T": GOOD, "U": "Theorem u : 1 = 2.\nProof. reflexivity. Qed.\n"})
    ok = KernelStatement("x:y", "", "T", "t", "proves", "x + 0 = x")
    missing = KernelStatement("x:y", "", "T", "nope", "proves", "nothing")
    broken = KernelStatement("x:y", "", "U", "u", "proves", "1 = 2")
    build = build_theories([ok, missing, broken], theories=d)
    assert evidence_from_build(build, [ok]).status == "proved"
    assert evidence_from_build(build, [ok, missing]).status == "error"
    assert evidence_from_build(build, [broken]).status == "error"
    refuting = KernelStatement("x:y", "", "T", "t", "refutes", "a counterexample")
    ev = evidence_from_build(build, [ok, refuting])
    assert ev.status == "refuted" and ev.outcome == "fails"
    assert ev.engines["coq"] and ev.certificate["theorems"][0]["assumptions"] is not None


def test_a_theorem_under_an_idealisation_is_proved_idealised_not_proved(tmp_path):
    """A proving theorem flagged idealised gives 'proved (idealised)', names its hypothesis and says it is not a
    proof of the statement; with one refuting theorem beside it the variant is refuted; unflagged, 'proved'
    (injected fault: the flag dropped turns the status back to 'proved')."""
    need_coq()
    d = _theories(tmp_path, {"T": GOOD})
    ideal = KernelStatement("x:y", "", "T", "t", "proves", "x + 0 = x", hypothesis="orthonormal tokens",
                            tag="idealised: orthonormal", idealised=True)
    build = build_theories([ideal], theories=d)
    ev = evidence_from_build(build, [ideal])
    assert ev.status == "proved (idealised)" and ev.outcome == "holds"
    assert ", idealised: orthonormal (Coq" in ev.summary and "(not of the statement)" in ev.summary
    assert any("hypothesis: orthonormal tokens" in d for d in ev.details)
    assert evidence_from_build(build, [KernelStatement("x:y", "", "T", "t", "proves", "x + 0 = x",
                                                       hypothesis="orthonormal tokens", tag="o")]).status == "proved"
    assert evidence_from_build(build, [ideal, KernelStatement("x:y", "", "T", "t", "refutes", "c")]).status == "refuted"
    with pytest.raises(ValueError, match="must name its hypothesis"):
        KernelStatement("x:y", "", "T", "t", "proves", "r", idealised=True)
    with pytest.raises(ValueError, match="short tag"):
        KernelStatement("x:y", "", "T", "t", "proves", "r", hypothesis="h")


def test_every_catalog_proof_resting_on_an_orthonormal_family_is_flagged():
    """A proving catalog entry whose hypothesis or reading assumes orthonormal embeddings is idealised unless its
    theorem is the near-orthogonal one; only kvshift24:theorem3[appendix-c] is, today."""
    from verify.kernel import catalog

    flagged = sorted(f"{s.claim}[{s.variant}]" for s in catalog.statements() if s.idealised)
    assert flagged == ["kvshift24:theorem3[appendix-c]"]
    for s in catalog.statements():
        if s.role == "proves" and "orthonormal" in s.hypothesis and not s.idealised:
            raise AssertionError(f"{s.qualified} assumes an orthonormal family without the idealised flag")


def test_without_coqc_the_layer_is_skipped_with_the_install_line(monkeypatch):
    import verify.kernel.driver as driver
    from verify.evidence import Context
    from verify.kernel.check import check

    s = catalog.statements()
    assert s, "the kernel catalog is empty"
    monkeypatch.setattr(driver.shutil, "which", lambda name: None)
    ev = check(s[0].claim, s[0].variant, [], Context())
    assert ev.status == "skipped" and "apt-get install -y coq" in ev.summary


def test_a_run_at_options_the_theorem_does_not_cover_gets_no_kernel_answer():
    from verify.evidence import Context
    from verify.kernel.check import check

    s = catalog.statements()
    assert s, "the kernel catalog is empty"
    ev = check(s[0].claim, s[0].variant, ["an-option-no-theorem-covers"], Context())
    assert ev.status == "skipped" and "do not quantify over" in ev.summary


# --- parsing Coq's output -----------------------------------------------------------------------------

def test_parsers_read_coq_output():
    out = ("@@verify-begin Verify.A.x\nAxioms:\nClassicalDedekindReals.sig_forall_dec\n  : forall P, ...\n"
           "A.cheat : 1 = 0\n@@verify-begin Verify.A.y\nClosed under the global context\n")
    assert parse_assumptions(out) == {"Verify.A.x": ["ClassicalDedekindReals.sig_forall_dec", "A.cheat"],
                                      "Verify.A.y": []}
    chk = "* Theory: Set is predicative\n  \n* Axioms:\n    Coq.Logic.Classical_Prop.classic\n    Verify.T.ax\n  \n* Constants"
    assert parse_coqchk_axioms(chk) == ["Coq.Logic.Classical_Prop.classic", "Verify.T.ax"]
    assert parse_q("(-3 # 4)%Q") == Fraction(-3, 4) and parse_q("5") == 5 and parse_q("3 # 4") == Fraction(3, 4)
    assert parse_q_list("[1 # 2; -3; 0]%list") == [Fraction(1, 2), -3, 0]
    with pytest.raises(ValueError):
        parse_q("3.5")
    src = "(* c *) Theorem foo (n : nat) :\n  n + 0 = n.\nProof. lia. Qed.\nLemma bar : True.\nProof. easy. Qed."
    assert statement_text(src, "foo") == "(n : nat) : n + 0 = n"
    assert statement_text(src, "bar") == "True" and statement_text(src, "baz") == ""


# --- verdict rules ------------------------------------------------------------------------------------

def test_a_kernel_result_that_disagrees_with_another_layer_is_inconsistent():
    sym = Evidence(layer="symbolic", status="proved")
    kern = Evidence(layer="kernel", status="refuted")
    verdict, reason = aggregate([sym, kern], None)
    assert verdict == "INCONSISTENT" and "kernel" in reason
    verdict, _ = aggregate([Evidence(layer="symbolic", status="proved"), Evidence(layer="kernel", status="error")], None)
    assert verdict == "INCONCLUSIVE"
    verdict, reason = aggregate([Evidence(layer="symbolic", status="proved"), Evidence(layer="kernel", status="proved")],
                                None)
    assert verdict == "HOLDS" and "kernel" in reason


# --- Farkas replay ------------------------------------------------------------------------------------

ROWS = [{"coeffs": {"theta_1": "1", "theta_3": "1"}, "op": "<=", "rhs": "-1"},
        {"coeffs": {"theta_1": "-1", "theta_3": "-2"}, "op": "<=", "rhs": "-1"},
        {"coeffs": {"theta_1": "1", "theta_3": "2"}, "op": "<=", "rhs": "-1"}]


def _doc(rows, ys):
    return json.dumps({"claim": "pr26:prop1", "obligation": "test",
                       "certificate": {"kind": "farkas", "cases": [{"rows": rows, "multipliers": ys}]}}).encode()


def test_a_valid_certificate_replays_and_each_forgery_is_refused_by_the_kernel():
    """One forged certificate per rule of the checker; each must be refused by Coq itself."""
    need_coq()
    strict = [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}, {"coeffs": {"x": "-1"}, "op": "<", "rhs": "0"}]
    docs = [("valid", _doc(ROWS, ["0", "1/2", "1/2"])),
            ("valid-strict", _doc(strict, ["1", "1"])),
            ("all-zero", _doc(ROWS, ["0", "0", "0"])),                      # 0 <= 0, no strict row
            ("negative-multiplier", _doc(ROWS, ["-1", "0", "0"])),          # sign of an inequality multiplier
            ("no-cancellation", _doc(ROWS, ["1", "0", "0"])),               # theta_1 and theta_3 remain
            ("strictness-relaxed", _doc([dict(strict[0]), dict(strict[1], op="<=")], ["1", "1"])),  # 0 <= 0 only
            ("edited-row", _doc([dict(ROWS[0], rhs="5")] + ROWS[1:], ["0", "1/2", "1/2"])),  # valid rows differ
            ]
    got = {label: (ok, msg) for label, ok, msg in replay_documents(docs)}
    assert got["valid"][0] and got["valid-strict"][0], got
    for label in ("all-zero", "negative-multiplier", "no-cancellation", "strictness-relaxed"):
        assert not got[label][0] and "refuses" in got[label][1], (label, got[label])
    # the edited row still has a contradiction with these multipliers (rows 2 + 3): the kernel accepts
    # it, which is why `verify recheck` checks the rows' hash against the claim before any replay
    assert got["edited-row"][0]


def test_non_linear_or_malformed_certificates_are_not_replayable():
    product = [dict(ROWS[0], product_of=[0, 1])] + ROWS[1:]
    with pytest.raises(NotReplayable, match="degree-2"):
        certificate_text(json.loads(_doc(product, ["0", "1", "1"])))
    with pytest.raises(NotReplayable, match="rational"):
        certificate_text(json.loads(_doc(ROWS, ["0.5", "1", "1"])))
    with pytest.raises(NotReplayable, match="relation"):
        certificate_text(json.loads(_doc([dict(ROWS[0], op=">=")] + ROWS[1:], ["1", "1", "1"])))
    with pytest.raises(NotReplayable, match="multipliers"):
        certificate_text(json.loads(_doc(ROWS, ["1"])))


def test_recheck_kernel_replays_prop1_certificates_end_to_end(tmp_path):
    need_coq()
    from click.testing import CliRunner

    from verify.frontends.cli import cli

    out = tmp_path / "certs"
    r = CliRunner().invoke(cli, ["pr26:prop1", "--layers", "solver", "--certificates", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(cli, ["recheck", "--kernel", str(out), "--format", "json"])
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output)
    assert doc["kernel"] and doc["valid"] and all("Coq" in f["message"] for f in doc["files"])


def test_recheck_kernel_refuses_a_forgery_the_python_checker_was_made_to_accept(tmp_path, monkeypatch):
    """A faulty Python re-check (every file accepted) does not make a forged certificate valid."""
    need_coq()
    from click.testing import CliRunner

    import verify.solver.recheck as recheck
    from verify.frontends.cli import cli

    out = tmp_path / "certs"
    r = CliRunner().invoke(cli, ["pr26:prop1", "--layers", "solver", "--certificates", str(out), "--quiet"])
    assert r.exit_code == 0, r.output
    f = next(p for p in out.glob("*.json") if p.name != "MANIFEST.json")
    doc = json.loads(f.read_text())
    doc["certificate"]["cases"][0]["multipliers"] = ["0"] * len(doc["certificate"]["cases"][0]["multipliers"])
    f.write_text(json.dumps(doc))
    import hashlib

    manifest = json.loads((out / "MANIFEST.json").read_text())
    manifest["files"][f.name]["sha256"] = hashlib.sha256(f.read_bytes()).hexdigest()
    (out / "MANIFEST.json").write_text(json.dumps(manifest))
    monkeypatch.setattr(recheck, "check_certificate", lambda cert: (True, "accepted by a faulty checker"))
    r = CliRunner().invoke(cli, ["recheck", str(out)])
    assert r.exit_code == 0  # the faulty Python checker alone lets it through
    r = CliRunner().invoke(cli, ["recheck", "--kernel", str(out)])
    assert r.exit_code == 1 and "refuses" in r.output, r.output


def test_show_prints_the_coq_statement_of_each_kernel_theorem():
    from click.testing import CliRunner

    from verify.frontends.cli import cli

    for claim_id in sorted({s.claim for s in catalog.statements()}):
        r = CliRunner().invoke(cli, ["show", claim_id])
        assert r.exit_code == 0
        for s in catalog.statements():
            if s.claim == claim_id:
                assert s.qualified in r.output
        assert "(not found in the theory source)" not in r.output
        assert statements_for(claim_id, catalog.statements()[0].variant) is not None
