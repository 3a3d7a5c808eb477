"""kernel/driver.py without Coq: the build of the theories against a fake toolchain (coqc and coqchk replaced by a
function that answers as they do, from the files they are given), so that what the build records (compiled, errors,
assumptions, trusted or not, coqchk's axioms, statements) and the cache are asserted value by value; and the parsers
of Coq's output (Print Assumptions, coqchk's summary, Compute, Q literals, theorem statements) on their texts.
tests/kernel/ runs the real Coq; this file is what the module's mutation pass runs (tools/mutation.py).
"""

from __future__ import annotations

import json
import re
import sys
import time
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from process_support import assert_gone

from verify.kernel import driver as D
from verify.kernel.spec import KernelStatement

COQCHK_OUT = """
CONTEXT SUMMARY
===============

* Theory: Set is predicative

* Axioms:
    Coq.Reals.Rdefinitions.R
    {extra}
* Constants/Inductives relying on type-in-type: <none>
"""


class FakeCoq:
    """coqc and coqchk as functions of the files: a theory compiles unless its text says FAIL; ``Print
    Assumptions Q`` answers from ``axioms`` (an unknown Q fails the whole probe, as Coq does); coqchk lists
    ``coqchk_extra`` under its axioms; ``Compute (e)`` answers ``answers[e]``."""

    def __init__(self, axioms: dict[str, list[str]], coqchk_extra: dict[str, str] | None = None,
                 answers: dict[str, str] | None = None) -> None:
        self.axioms, self.extra, self.answers = axioms, coqchk_extra or {}, answers or {}
        self.calls: list[list[str]] = []

    def __call__(self, cmd: list[str], cwd: Path, timeout: float = 0) -> tuple[int, str]:
        self.calls.append(list(cmd))
        if cmd[0] == "coqchk":
            theory = cmd[-1].split(".")[-1]
            src = (cwd / f"{theory}.v").read_text()
            rc = 1 if "BADCHK" in src else -9 if "CHKKILL" in src else 0
            return rc, ("Error: bad module\n" if rc else "") + COQCHK_OUT.format(extra=self.extra.get(theory, ""))
        name = cmd[-1]
        text = (cwd / name).read_text()
        if name.startswith("VerifyAssumptions"):
            out = []
            for q in re.findall(r"Print Assumptions (\S+)\.", text):
                out.append(f"{D._MARK}{q}")  # the idtac before each Print Assumptions runs first, as in Coq
                if self.axioms.get(q) == ["KILL"]:  # coqc killed by a signal after printing the marker
                    return -9, "\n".join(out)
                if q not in self.axioms:
                    return 1, "\n".join(out + [f"Error: The reference {q} was not found in the current environment."])
                if self.axioms[q]:
                    out.append("Axioms:")
                    for a in self.axioms[q]:
                        out += [f"{a} : Prop", "  continued type line"]
                else:
                    out.append("Closed under the global context")
            return 0, "\n".join(out) + "\n"
        if name == "VerifyCompute.v":
            out = []
            for i, e in re.findall(r'idtac "@@verify-begin (\d+)". Abort.\nCompute \((.*)\)\.', text):
                if e == "KILL":
                    return -9, "\n".join(out)
                if e not in self.answers:
                    return 1, f"Error: unknown {e}"
                out += [f"{D._MARK}{i}", f"     = {self.answers[e]}", "     : Q"]
            return 0, "\n".join(out) + "\n"
        if "SIGKILL" in text:  # coqc killed by a signal: a negative code
            return -9, ""
        if "FAIL" in text:
            return 1, f'File "./{name}", line 1, characters 0-4:\nError: The command has not ended.\nmore\n'
        (cwd / name.replace(".v", ".vo")).write_text("vo")
        return 0, ""


def _theories(tmp_path: Path, a: str = "", b: str = "", c: str = "") -> Path:
    d = tmp_path / "theories"
    d.mkdir(exist_ok=True)
    (d / "_CoqProject").write_text("-Q . Verify\n# the order\nB.v\nA.v  # a comment\n-arg x.v\nC.v\n")
    (d / "A.v").write_text(a or "(* A *)\nTheorem ta : forall n : nat,\n  n = n.\nProof. reflexivity. Qed.\n"
                                "Lemma tb (* the lemma *) : 1 = 1.\nProof. auto. Qed.\n")
    (d / "B.v").write_text(b or "Require Import Verify.C.\nTheorem tc : True.\nProof. exact I. Qed.\n")
    (d / "C.v").write_text(c or "Theorem td : 0 = 0.\nProof. auto. Qed.\n")
    return d


def _st(theory: str, theorem: str) -> KernelStatement:
    return KernelStatement("p:c", "", theory, theorem, "proves", "r")


@pytest.fixture
def coq(monkeypatch):
    monkeypatch.setattr(D, "coq_version", lambda: "8.16.1")
    monkeypatch.setattr(D.shutil, "which", lambda name: f"/usr/bin/{name}")

    def install(fake: FakeCoq) -> FakeCoq:
        monkeypatch.setattr(D, "_run", fake)
        return fake

    return install


def test_a_build_compiles_in_waves_and_records_what_the_kernel_checked(tmp_path, coq):
    th = _theories(tmp_path)
    assert D.theory_names(th) == ["B", "A", "C"]
    fake = coq(FakeCoq({"Verify.A.ta": [], "Verify.A.tb": ["Classical_Prop.classic", "Verify.A.cheat", "mine"],
                        "Verify.C.td": ["Coq.Reals.Raxioms.completeness"]},
                       coqchk_extra={"A": "Verify.A.cheat\n", "C": "mathcomp.ssreflect.x\n"}))
    said: list[str] = []
    wanted = [_st("A", "ta"), _st("A", "tb"), _st("C", "td"), _st("B", "missing")]
    t0 = time.perf_counter()
    build = D.build_theories(wanted, theories=th, workdir=tmp_path / "work", progress=said.append)
    wall = time.perf_counter() - t0
    assert build.coq_version == "8.16.1" and build.compiled == {"A": True, "B": True, "C": True}
    assert build.sources == D.source_hashes(th) and len(build.sources["A"]) == 64
    assert build.errors == {} and build.coqchk == {"A": "ok", "B": "ok", "C": "ok"}
    assert build.coqchk_axioms == {"A": ["Coq.Reals.Rdefinitions.R", "Verify.A.cheat"],
                                   "B": ["Coq.Reals.Rdefinitions.R"],
                                   "C": ["Coq.Reals.Rdefinitions.R", "mathcomp.ssreflect.x"]}
    assert build.untrusted_axioms("A") == ["Verify.A.cheat"] and build.untrusted_axioms("C") == []
    assert build.untrusted_axioms("Z") == []
    ta, tb, td, missing = (build.theorems[s.qualified] for s in wanted)
    assert (ta.found, ta.assumptions, ta.untrusted, ta.statement) == (True, [], [], "forall n : nat, n = n")
    assert (tb.found, tb.assumptions, tb.untrusted, tb.statement) == (
        True, ["Classical_Prop.classic", "Verify.A.cheat", "mine"], ["Verify.A.cheat", "mine"], "1 = 1")
    assert (td.found, td.untrusted) == (True, [])
    assert (missing.found, missing.statement, missing.assumptions) == (False, "", [])
    # C before B (B requires Verify.C); A beside C in the first wave
    compiled = [c[-1] for c in fake.calls if c[0] == "coqc" and not c[-1].startswith("Verify")]
    assert set(compiled[:2]) == {"A.v", "C.v"} and compiled[2] == "B.v"
    assert ["coqc", *D.COQC_ARGS, "A.v"] in fake.calls and ["coqchk", *D.COQCHK_ARGS, "Verify.A"] in fake.calls
    assert sorted(said) == sorted(["kernel: coqc A.v", "kernel: coqc B.v", "kernel: coqc C.v", "kernel: coqchk Verify.A",
                                   "kernel: coqchk Verify.B", "kernel: coqchk Verify.C"])
    assert (tmp_path / "work" / "A.v").read_text() == (th / "A.v").read_text()
    # B's probe failed as a whole (Verify.B.missing is not there), so B was asked again theorem by theorem
    probes = [c[-1] for c in fake.calls if c[-1].startswith("VerifyAssumptions")]
    assert sorted(probes) == ["VerifyAssumptionsA.v", "VerifyAssumptionsB.v", "VerifyAssumptionsB.v",
                              "VerifyAssumptionsC.v"]
    assert 0 <= build.compile_s <= wall + 0.01 and build.key == ""  # seconds of this build, not a ratio


def test_a_theory_that_fails_or_cheats_is_recorded_so(tmp_path, coq):
    th = _theories(tmp_path, a="Theorem ta : True.\nAdmitted.\n(* Axiom in a comment *)\nAxiom cheat : False.\n",
                   c="Theorem td : 0 = 0.\nProof. FAIL. Qed.\n")
    fake = coq(FakeCoq({"Verify.B.tc": []}))
    build = D.build_theories([_st("A", "ta"), _st("B", "tc"), _st("C", "td")], theories=th)
    assert build.compiled == {"A": False, "B": True, "C": False}
    assert build.errors["A"] == "refused before compiling: the theory uses Admitted, Axiom"
    assert build.errors["C"] == ('File "./C.v", line 1, characters 0-4:\nError: The command has not ended.\nmore')
    assert "A" not in build.coqchk and "C" not in build.coqchk and build.coqchk["B"] == "ok"
    assert build.theorems["Verify.A.ta"].statement == "" and not build.theorems["Verify.C.td"].found  # no Proof
    assert ["coqc", *D.COQC_ARGS, "A.v"] not in fake.calls
    edited = D.build_theories([], theories=th, sources={"C": "Theorem td : 0 = 0.\nProof. BADCHK. Qed.\n"})
    assert edited.compiled["C"] and edited.coqchk["C"].startswith("Error: bad module")
    assert edited.sources["C"] == D.source_hashes(th, {"C": "Theorem td : 0 = 0.\nProof. BADCHK. Qed.\n"})["C"]
    assert edited.sources["C"] != build.sources["C"] and edited.theorems == {}


def test_no_coq_means_unavailable(tmp_path, monkeypatch):
    monkeypatch.setattr(D, "coq_version", lambda: None)
    with pytest.raises(D.KernelUnavailable) as e:
        D.build_theories([], theories=_theories(tmp_path))
    assert str(e.value) == D.INSTALL_HINT
    with pytest.raises(D.KernelUnavailable):
        D.cached_build([], cache_dir=tmp_path)
    monkeypatch.setattr(D, "coq_version", lambda: "8.16.1")
    monkeypatch.setattr(D.shutil, "which", lambda name: None if name == "coqchk" else f"/usr/bin/{name}")
    for call in (lambda: D.build_theories([], theories=_theories(tmp_path)), lambda: D.cached_build([], tmp_path)):
        with pytest.raises(D.KernelUnavailable):
            call()
    monkeypatch.setattr(D.shutil, "which", lambda name: None)
    with pytest.raises(D.KernelUnavailable):
        D.coq_compute("A", "1", theories=_theories(tmp_path))


def test_the_cache_builds_once_per_key_and_reads_back(tmp_path, coq, monkeypatch):
    th = _theories(tmp_path)
    monkeypatch.setattr(D, "THEORIES", th)
    builds: list[Any] = []
    real = D.build_theories

    def counting(statements, workdir=None, progress=None):
        builds.append(workdir)
        return real(statements, theories=th, workdir=workdir, progress=progress)

    monkeypatch.setattr(D, "build_theories", counting)
    coq(FakeCoq({"Verify.A.ta": ["Verify.A.x"]}))
    said: list[str] = []
    first = D.cached_build([_st("A", "ta")], cache_dir=tmp_path / "cache", progress=said.append)
    key = D.cache_key("8.16.1", D.source_hashes(), [_st("A", "ta")])  # the key hashes the shipped theories
    assert first.key == key and len(key) == 32 and builds == [tmp_path / "cache" / key / "theories"]
    assert said[0] == "kernel: compiling the Coq theories (once per Coq version and source hash)"
    stored = D.Build.from_json((tmp_path / "cache" / key / "build.json").read_text())
    assert stored == first and stored.theorems["Verify.A.ta"].untrusted == ["Verify.A.x"]
    again = D.cached_build([_st("A", "ta")], cache_dir=tmp_path / "cache")
    assert again == first and len(builds) == 1
    (tmp_path / "cache" / key / "build.json").write_text("{broken")
    (tmp_path / "cache" / key / "theories" / "stale.v").write_text("x")
    rebuilt = D.cached_build([_st("A", "ta")], cache_dir=tmp_path / "cache")
    assert replace(rebuilt, compile_s=0) == replace(first, compile_s=0) and len(builds) == 2
    assert not (tmp_path / "cache" / key / "theories" / "stale.v").exists()
    other = D.cached_build([_st("C", "td")], cache_dir=tmp_path / "cache")
    assert other.key != key and len(builds) == 3
    assert (tmp_path / "cache" / ".lock").exists()


def test_cache_keys_change_with_each_input():
    st = [_st("A", "ta"), _st("A", "tb")]
    k = D.cache_key("8.16.1", {"A": "h"}, st)
    assert k == D.cache_key("8.16.1", {"A": "h"}, list(reversed(st)) + st[:1])  # order and repeats do not matter
    assert len({k, D.cache_key("8.17.0", {"A": "h"}, st), D.cache_key("8.16.1", {"A": "g"}, st),
                D.cache_key("8.16.1", {"B": "h"}, st), D.cache_key("8.16.1", {"A": "h"}, st[:1]),
                D.cache_key("8.16.1", {"A": "h", "B": "h"}, st)}) == 6
    import hashlib

    h = hashlib.sha256(b"driver 2\ncoq 8.16.1\nA h\ntheorem Verify.A.ta\ntheorem Verify.A.tb\n").hexdigest()[:32]
    assert k == h and D.DRIVER_VERSION == "2"


def test_the_build_reads_and_writes_its_json():
    b = D.Build("8.16.1", {"A": "h"}, {"A": True}, {"B": "err"}, {"A": "ok"}, {"A": ["x"]},
                {"Verify.A.t": D.TheoremFact("Verify.A.t", "True", ["a"], ["a"], True)}, 1.5, "k")
    text = b.to_json()
    assert json.loads(text)["theorems"]["Verify.A.t"] == {"qualified": "Verify.A.t", "statement": "True",
                                                           "assumptions": ["a"], "untrusted": ["a"], "found": True}
    assert D.Build.from_json(text) == b and text == json.dumps(json.loads(text), indent=1, sort_keys=True)


def test_assumption_names_are_trusted_only_from_the_libraries():
    ours = ["Ws24", "Pr26"]
    trusted = ["Classical_Prop.classic", "ClassicalDedekindReals.sig_forall_dec", "Coq.Reals.Raxioms.R",
               "mathcomp.ssreflect.ssrnat.x", "Interval.x", "Flocq.y", "Coquelicot.z", "Bignums.w",
               "FunctionalExtensionality.functional_extensionality_dep", "Uint63.add_spec", "Sint63.x"]
    untrusted = ["Ws24.cheat", "Verify.Ws24.cheat", "Pr26.x", "my_axiom", "Coqx.y", "Verify.Other.z", "ssrunderx",
                 "Classical_Propx.y"]
    assert [D._trusted_short(n, ours) for n in trusted] == [True] * len(trusted)
    assert [D._trusted_short(n, ours) for n in untrusted] == [False] * len(untrusted)
    assert D._trusted_short("Classical_Prop.classic : forall P, P \\/ ~P", ours)
    assert not D._trusted_short("Coq.Ws24.x", ["Coq"])  # a theory of ours named like a library is still ours


def test_print_assumptions_and_coqchk_outputs_are_parsed():
    out = ("noise before\n" + D._MARK + "Verify.A.t\nAxioms:\nClassical_Prop.classic : forall P : Prop, P \\/ ~ P\n"
           "  continued\n\tmore\nR : Set\n\n" + D._MARK + "Verify.A.u  \nClosed under the global context\n"
           + D._MARK + "Verify.A.v\nOpaque x\nTransparent y\nAxioms:\nz:w\n")
    assert D.parse_assumptions(out) == {"Verify.A.t": ["Classical_Prop.classic", "R"], "Verify.A.u": [],
                                        "Verify.A.v": ["z:w"]}
    assert D.parse_assumptions("x : y\n") == {}
    assert D.parse_coqchk_axioms(COQCHK_OUT.format(extra="Verify.A.c\n")) == ["Coq.Reals.Rdefinitions.R", "Verify.A.c"]
    assert D.parse_coqchk_axioms("* Theory: x\n  a\n* Axioms:\n\n  b\n* Other\n  c\n* Axioms here\n d\n") == ["b", "d"]
    assert D.parse_coqchk_axioms("") == []


def test_statements_are_read_as_written_without_comments():
    src = ("(* Theorem fake : False. Proof. *)\nLemma l1 (* a (* nested *) comment *) :\n  forall x,\n   x = x .\n"
           "Proof. auto. Qed.\nTheorem l10 : 10 = 10.\nProof. auto. Qed.\nCorollary c (n : nat) : n = n.\nProof. auto. Qed."
           "\nFact f : True.\n\nProof. exact I. Qed.\nDefinition l2 := 1.\n")
    assert D.statement_text(src, "l1") == "forall x, x = x"
    assert D.statement_text(src, "l10") == "10 = 10" and D.statement_text(src, "l") == ""
    assert D.statement_text(src, "c") == "(n : nat) : n = n" and D.statement_text(src, "f") == "True"
    assert D.statement_text(src, "fake") == "" and D.statement_text(src, "l2") == ""
    assert D._strip_comments("a (* b (* c *) d *) e *) f") == "a  e *) f"
    assert D._strip_comments("(* open") == "" and D._strip_comments("x*)y") == "x*)y"
    assert D._strip_comments("a (**) b (*x*) c") == "a  b  c"  # an empty comment closes right after it opens
    assert D._strip_comments("a (* (* (* x *) *) y *) b") == "a  b"  # three deep: each close takes one level
    assert D._strip_comments("a (*) b *) c") == "a  c"  # '(*)' opens a comment; its ')' does not close it


def test_forbidden_vernacular_outside_comments():
    src = ("(* Admitted *) Axiom a : False. Parameters p q : nat. Conjecture c : True.\nUnset  Guard Checking.\n"
           "Unset Positivity\nChecking. Unset Universe Checking. admit. Admitted. Axioms x : nat. Parameter y : nat.\n"
           "Variable ok : nat. Hypothesis h : True. Definition Axiomatic := 1. (* Parameter *)")
    assert D.forbidden_vernacular(src) == ["Admitted", "Axiom", "Axioms", "Conjecture", "Parameter", "Parameters",
                                           "Unset  Guard Checking", "Unset Positivity\nChecking",
                                           "Unset Universe Checking", "admit"]
    assert D.forbidden_vernacular("Variable v : nat. Definition AxiomX := 1.") == []


def test_dependency_waves_and_cycles():
    texts = {"A": "Require Import Verify.B Verify.C.", "B": "Require Verify.C. (* Verify.A *)", "C": "",
             "D": "Require Import Verify.Outside Verify.D."}
    assert D.dependency_waves(texts) == [["C", "D"], ["B"], ["A"]]
    with pytest.raises(ValueError) as e:
        D.dependency_waves({"A": "Verify.B", "B": "Verify.A", "C": ""})
    assert str(e.value) == "the theories require each other in a cycle: ['A', 'B']"
    assert D.dependency_waves({}) == []


def test_first_error_shows_the_lines_around_coqs_error():
    out = "\n".join(["l1", "", "l2", "l3", 'File "x.v", line 3', "Error: no", "e1", "e2", "e3", "e4", "e5", "e6"])
    assert D._first_error(out) == 'l3\nFile "x.v", line 3\nError: no\ne1\ne2\ne3\ne4\ne5'  # blank lines dropped
    assert D._first_error(out, 2) == 'l3\nFile "x.v", line 3\nError: no\ne1'
    assert D._first_error("a\nToplevel input: Error: bad\nb") == "a\nToplevel input: Error: bad\nb"
    assert D._first_error("\n".join(f"w{i}" for i in range(9))) == "w0\nw1\nw2\nw3\nw4\nw5"
    assert D._first_error("Error first\nx", 1) == "Error first"


def test_run_returns_the_code_and_both_streams_and_times_out(tmp_path):
    assert D._run([sys.executable, "-c", "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"],
                  tmp_path) == (3, "out\nerr\n")
    assert D._run([sys.executable, "-c", "import time; time.sleep(5)"], tmp_path, timeout=0.3) == (
        124, "timed out after 0 s")
    assert D.COQC_TIMEOUT_S == 300


def test_the_cache_directory_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert D.default_cache_dir() == tmp_path / "verify" / "kernel"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert D.default_cache_dir() == tmp_path / "home" / ".cache" / "verify" / "kernel"


def test_coq_version_reads_the_first_word(monkeypatch, tmp_path):
    exe = tmp_path / "coqc"
    exe.write_text("#!/bin/sh\necho '8.16.1 compiled with OCaml 4.14'\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))
    D._version_of.cache_clear()
    assert D.coq_version() == "8.16.1"
    exe.write_text("#!/bin/sh\n")
    D._version_of.cache_clear()
    assert D.coq_version() is None
    assert D._version_of(str(tmp_path / "nothing")) is None
    D._version_of.cache_clear()


def test_compute_reads_coqs_answers(tmp_path, coq):
    th = _theories(tmp_path)
    fake = coq(FakeCoq({}, answers={"f 1": "3 # 4", "g": "[1 # 2; -3]%list", "h": "(-3 # 4)%Q"}))
    work = tmp_path / "w"
    work.mkdir()
    assert D.coq_compute("C", ["f 1", "g", "h"], theories=th, workdir=work, preamble="Open Scope Q_scope.") == [
        "3 # 4", "[1 # 2; -3]%list", "(-3 # 4)%Q"]
    assert (work / "VerifyCompute.v").read_text().startswith("Require Import Verify.C.\nOpen Scope Q_scope.\n")
    # B, A before C in _CoqProject: all three compiled once, then reused
    assert [c[-1] for c in fake.calls] == ["B.v", "A.v", "C.v", "VerifyCompute.v"]
    assert D.coq_compute("C", "f 1", theories=th, workdir=work) == ["3 # 4"]
    assert [c[-1] for c in fake.calls][4:] == ["VerifyCompute.v"]
    (th / "Z.v").write_text("Definition z := 1.\n")
    assert D.coq_compute("Z", "f 1", theories=th) == ["3 # 4"]  # not in _CoqProject: compiled alone
    with pytest.raises(RuntimeError, match="^Compute failed:\nError: unknown nope$"):
        D.coq_compute("C", "nope", theories=th)
    bad = _theories(tmp_path / "x" if (tmp_path / "x").mkdir() is None else tmp_path,
                    c="Theorem td : 0 = 0.\nProof. FAIL. Qed.\n")
    with pytest.raises(RuntimeError, match=r"^Verify.C does not compile:\nFile \"./C.v\""):
        D.coq_compute("C", "f 1", theories=bad)


def test_coq_rationals_and_lists_are_read_exactly():
    cases = {"3 # 4": Fraction(3, 4), "(-3 # 4)%Q": Fraction(-3, 4), "5": Fraction(5), " ((7 # 2)) ": Fraction(7, 2),
             "-0": Fraction(0), "(6 # 4)": Fraction(3, 2), "(2)%Q": Fraction(2)}
    assert {k: D.parse_q(k) for k in cases} == cases
    for bad in ("3 / 4", "x", "", "3 # -4", "1.5", "3 # 4 # 5"):
        with pytest.raises(ValueError, match="not a Coq rational"):
            D.parse_q(bad)
    assert D.parse_q_list("[1 # 2; -3; 0]%list") == [Fraction(1, 2), Fraction(-3), Fraction(0)]
    assert D.parse_q_list(" [] ") == [] and D.parse_q_list("[ 5 ]") == [Fraction(5)]
    for bad in ("1; 2", "[1; 2", "1]"):
        with pytest.raises(ValueError, match="not a Coq list"):
            D.parse_q_list(bad)


def test_the_build_arguments_trust_no_vm():
    assert D.COQC_ARGS == ("-q", "-Q", ".", "Verify")
    assert D.COQCHK_ARGS == ("-silent", "-o", "-Q", ".", "Verify", "-norec")
    assert D.THEORIES.name == "theories" and (D.THEORIES / "_CoqProject").is_file()
    assert D.theory_names()[:1] and all((D.THEORIES / f"{n}.v").is_file() for n in D.theory_names())


# ----------------------------------------------------------------------------- survivors of the mutation pass, killed


def test_a_theorem_found_by_the_per_theorem_probe_is_kept(tmp_path, coq):
    """Kills ``if r == 0`` -> ``r == 1`` in the per-theorem fallback: when one theorem of a theory is missing, the
    others are still read from their own probes."""
    th = _theories(tmp_path)
    coq(FakeCoq({"Verify.B.tc": ["Classical_Prop.classic"]}))
    build = D.build_theories([_st("B", "tc"), _st("B", "missing")], theories=th)
    tc, missing = build.theorems["Verify.B.tc"], build.theorems["Verify.B.missing"]
    assert (tc.found, tc.assumptions, tc.untrusted, missing.found) == (True, ["Classical_Prop.classic"], [], False)


def test_cached_build_without_coq_does_no_work(tmp_path, monkeypatch):
    """Kills ``version is None or coqchk missing`` -> ``and`` in cached_build: no cache directory, no lock, no
    build when coqc is missing even though coqchk is there."""
    monkeypatch.setattr(D, "coq_version", lambda: None)
    monkeypatch.setattr(D.shutil, "which", lambda name: f"/usr/bin/{name}")
    monkeypatch.setattr(D, "build_theories", lambda *a, **k: pytest.fail("built without Coq"))
    with pytest.raises(D.KernelUnavailable):
        D.cached_build([], cache_dir=tmp_path / "cache")
    assert not (tmp_path / "cache").exists()


def test_a_q_literal_with_a_long_denominator():
    """Kills the ``%Q`` strip ``t[:-2]`` -> ``t[:-3]`` (it would eat the denominator's last digit)."""
    assert D.parse_q("3 # 45%Q") == Fraction(1, 15) and D.parse_q("-7 # 10%Q") == Fraction(-7, 10)



def test_the_cache_directory_is_made_with_its_parents(tmp_path, coq, monkeypatch):
    """Kills ``mkdir(parents=True)`` -> ``False`` for the lock: a cache under directories that do not exist yet."""
    th = _theories(tmp_path)
    real = D.build_theories
    monkeypatch.setattr(D, "build_theories", lambda st, workdir=None, progress=None: real(st, theories=th,
                                                                                            workdir=workdir))
    coq(FakeCoq({}))
    build = D.cached_build([], cache_dir=tmp_path / "a" / "b" / "c")
    assert build.compiled == {"A": True, "B": True, "C": True} and (tmp_path / "a" / "b" / "c" / ".lock").exists()


def test_a_coq_tool_killed_by_a_signal_is_not_a_success(tmp_path, coq):
    """Kills ``rc == 0`` -> ``rc <= 0`` and ``rc != 0`` -> ``rc > 0`` for coqc and coqchk: a negative return code (a
    tool killed by a signal) is a failure."""
    th = _theories(tmp_path, a="Theorem ta : True.\nProof. SIGKILL. Qed.\n", c="Theorem td : 0 = 0.\nProof. CHKKILL. Qed.\n")
    coq(FakeCoq({}))
    build = D.build_theories([], theories=th)
    assert (build.compiled["A"], "A" in build.coqchk) == (False, False)
    assert build.compiled["C"] and build.coqchk["C"] != "ok"


def test_compute_stops_at_its_theory_and_keeps_colons_inside_the_answer(tmp_path, coq):
    """Kills ``names.index(theory) + 1`` -> ``+ 2`` (a theory after the one asked compiled too) and the type's split
    ``rsplit(" : ", 1)`` -> ``2`` (an answer with ' : ' inside)."""
    th = _theories(tmp_path)
    fake = coq(FakeCoq({}, answers={"f": "fun x : nat => x"}))
    assert D.coq_compute("B", "f", theories=th) == ["fun x : nat => x"]
    assert [c[-1] for c in fake.calls] == ["B.v", "VerifyCompute.v"]
    D.coq_compute("A", "f", theories=th)
    assert [c[-1] for c in fake.calls][2:] == ["B.v", "A.v", "VerifyCompute.v"]
    (th / "C.v").write_text("Theorem td : 0 = 0.\nProof. SIGKILL. Qed.\n")
    with pytest.raises(RuntimeError, match="^Verify.C does not compile:"):
        D.coq_compute("C", "f", theories=th)


def test_a_fresh_build_records_nothing_yet():
    """Kills the defaults of Build (``compile_s = 0.0``)."""
    b = D.Build("8.16.1", {"A": "h"})
    assert (b.compiled, b.errors, b.coqchk, b.coqchk_axioms, b.theorems, b.compile_s, b.key) == ({}, {}, {}, {}, {},
                                                                                                  0.0, "")


def test_the_coq_child_dies_with_the_process_that_started_it(tmp_path):
    """_die_with_parent (PR_SET_PDEATHSIG): a process running coqc through _run is killed; its child must not run on
    (kills ``prctl(1, ...)`` -> ``prctl(2, ...)``, which sets nothing)."""
    import os
    import signal
    import subprocess

    pidfile = tmp_path / "child.pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import sys; from pathlib import Path; from verify.kernel.driver import _run; "
        f"_run(['sh', '-c', 'echo $$ > {pidfile}; exec sleep 30'], Path('.'))")])
    try:
        deadline = time.time() + 20
        while not (pidfile.exists() and pidfile.read_text().strip()) and time.time() < deadline:
            time.sleep(0.05)
        child = int(pidfile.read_text())
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        assert_gone(child, "the child outlived its parent")
    finally:
        if parent.poll() is None:
            parent.kill()


def test_probes_and_computes_killed_by_a_signal(tmp_path, coq):
    """Kills ``rc != 0`` -> ``rc > 0`` (the whole probe killed: ask theorem by theorem) and ``r == 0`` -> ``r <= 0``
    (a killed per-theorem probe's partial output is not an answer) in _read_assumptions, and ``rc != 0`` -> ``> 0``
    for Compute."""
    th = _theories(tmp_path)
    coq(FakeCoq({"Verify.A.ta": ["Classical_Prop.classic"], "Verify.A.tb": ["KILL"]}, answers={"f": "1"}))
    build = D.build_theories([_st("A", "ta"), _st("A", "tb")], theories=th)
    ta, tb = build.theorems["Verify.A.ta"], build.theorems["Verify.A.tb"]
    assert (ta.found, ta.assumptions, tb.found) == (True, ["Classical_Prop.classic"], False)
    with pytest.raises(RuntimeError, match="^Compute failed:"):
        D.coq_compute("C", ["f", "KILL"], theories=th)


def test_more_of_the_parsers_edges():
    """Kills: a statement whose colon has no space after it (``body[1:]`` -> ``[2:]``); an 'Error' line without a
    colon (``or`` -> ``and``) and the two lines above an error far down (``i - 2`` -> ``i // 2``); a theory that names
    itself (``m != n`` -> ``is not``, names longer than one letter are not interned); 300 theories in one wave
    (``len(done) < len(texts)`` -> ``is not``)."""
    assert D.statement_text("Theorem t :True.\nProof. exact I. Qed.", "t") == "True"
    assert D._first_error("a\nError first\nb", 1) == "a\nError first"
    assert D._first_error("\n".join(["p0", "p1", "p2", "p3", "p4", "Error: x"]), 0) == "p3\np4"
    assert D.dependency_waves({"Dee": "Require Verify.Dee.", "Eff": "Require Verify.Dee."}) == [["Dee"], ["Eff"]]
    many = {f"T{i}": "" for i in range(300)}
    assert D.dependency_waves(many) == [list(many)]
