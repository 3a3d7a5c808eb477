"""kernel/replay.py without Coq: the exact Coq text a Farkas certificate becomes (rows as data, the theorem
``~ feasible rows_k`` by ``farkas_sound``), every refusal before Coq, and how ``replay_documents`` reads coqc's
answers (coqc replaced by a recording fake).  tests/kernel/test_kernel_replay_hostile.py compiles such files with
the real Coq; this file pins what is handed to it, fast enough for the module's mutation pass (tools/mutation.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from verify.kernel import replay
from verify.kernel.driver import COQC_ARGS, INSTALL_HINT, KernelUnavailable
from verify.kernel.replay import NotReplayable, _comment, _q, case_text, certificate_text


def _doc(cases: Any, **extra: Any) -> dict[str, Any]:
    return {"format": "verify-certificate/1", "claim": "pr26:prop1", "obligation": "x <= 1",
            "certificate": {"kind": "farkas", "cases": cases}, **extra}


#: x - y <= 1, y < -2/4, x = 3: refuted by 1, 1, -1 (x - y + y - x ... as Farkas.v checks)
CASE = {"rows": [{"coeffs": {"x": "1", "y": "-1"}, "op": "<=", "rhs": "1"},
                 {"coeffs": {"y": "1"}, "op": "<", "rhs": "-2/4"},
                 {"coeffs": {"x": 1}, "op": "=", "rhs": "3"}],
        "multipliers": ["1", "1", "-1"]}


def test_rationals_become_hexadecimal_q_literals():
    assert [_q(v) for v in ("3/4", "-3/4", "6/8", 5, "-0", "0", "255/1", "-16")] == [
        "(0x3 # 0x4)", "(-0x3 # 0x4)", "(0x3 # 0x4)", "(0x5 # 0x1)", "(0x0 # 0x1)", "(0x0 # 0x1)", "(0xff # 0x1)",
        "(-0x10 # 0x1)"]
    assert _q("1" * 2000) == f"(0x{int('1' * 2000):x} # 0x1)" and _q("1/" + "7" * 2000).startswith("(0x1 # 0x")
    for bad, why in [(True, "not an exact rational: 'True'"), (1.5, "not an exact rational: '1.5'"),
                     (None, "not an exact rational: 'None'"), ("1.5", "not an exact rational 'p' or 'p/q': '1.5'"),
                     ("x", "'p' or 'p/q'"), (" 1", "'p' or 'p/q'"), ("1/-2", "'p' or 'p/q'"), ("+1", "'p' or 'p/q'"),
                     ("1" * 2001, "'p' or 'p/q'"), ("1/" + "1" * 2001, "'p' or 'p/q'"),
                     ("1/0", "a zero denominator: '1/0'"), ("-0/0", "a zero denominator: '-0/0'")]:
        with pytest.raises(NotReplayable) as e:
            _q(bad)
        assert why in str(e.value), (bad, str(e.value))
    with pytest.raises(NotReplayable, match=r"'p' or 'p/q': '" + "1" * 40 + "'$"):
        _q("1" * 2001)  # the message quotes at most 40 characters


def test_text_from_the_file_is_clipped_and_cannot_close_a_comment():
    assert _comment('a*b"c(d)', 100) == "a?b?c(d)"
    assert _comment("abcdef", 4) == "abcd" and _comment("", 3) == ""
    safe = "AZaz09 _.,:;=<>+-/[]()'!?#%&|^~@$"
    assert _comment(safe, 100) == safe and _comment("é\n\t{}\\`", 100) == "???????"


def test_a_case_is_its_rows_multipliers_and_theorem():
    text, order = case_text(CASE["rows"], CASE["multipliers"], 2)
    assert order == ["x", "y"]
    assert text == (
        "Definition rows_2 : list row := [\n"
        "    {| coeffs := [(1%positive, (0x1 # 0x1)); (2%positive, (-0x1 # 0x1))]; op := Le; rhs := (0x1 # 0x1) |};\n"
        "    {| coeffs := [(2%positive, (0x1 # 0x1))]; op := Lt; rhs := (-0x1 # 0x2) |};\n"
        "    {| coeffs := [(1%positive, (0x1 # 0x1))]; op := Eq; rhs := (0x3 # 0x1) |}\n"
        "  ].\n"
        "Definition multipliers_2 : list Q := [(0x1 # 0x1); (0x1 # 0x1); (-0x1 # 0x1)].\n\n"
        "(** the system rows_2 has no real solution *)\n"
        "Theorem case_2_infeasible : ~ feasible rows_2.\n"
        "Proof. apply (farkas_sound rows_2 multipliers_2). vm_compute. reflexivity. Qed.\n")
    empty, none = case_text([], [], 0)
    assert none == [] and empty.startswith("Definition rows_0 : list row := [\n\n  ].\n")


@pytest.mark.parametrize("rows,multipliers,why", [
    ("x", [], "a case holds a list of rows and a list of multipliers"),
    ([], {}, "a case holds a list of rows and a list of multipliers"),
    ([{"coeffs": {}, "op": "<=", "rhs": "0"}], [], "case 4: 1 rows but 0 multipliers"),
    ([], ["1"], "case 4: 0 rows but 1 multipliers"),
    ([3], [1], "case 4: a row is not {'coeffs', 'op', 'rhs'}"),
    ([{"coeffs": [1], "op": "<=", "rhs": "0"}], [1], "case 4: a row is not {'coeffs', 'op', 'rhs'}"),
    ([{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0", "product_of": [0, 1]}], [1],
     "a degree-2 certificate (product rows): only linear certificates replay in the kernel"),
    ([{"coeffs": {"x*y": "1"}, "op": "<=", "rhs": "0"}], [1],
     "a degree-2 certificate (monomials x*y): only linear certificates replay in the kernel"),
    ([{"coeffs": {"x": "1"}, "op": ">=", "rhs": "0"}], [1], "case 4: unknown relation '>='"),
    ([{"coeffs": {"x": "1"}, "rhs": "0"}], [1], "case 4: unknown relation 'None'"),
    ([{"coeffs": {"x": "1"}, "op": "<" * 30, "rhs": "0"}], [1], "case 4: unknown relation '<<<<<<<<<<'"),
    ([{"coeffs": {"x": "1.0"}, "op": "<", "rhs": "0"}], [1], "not an exact rational 'p' or 'p/q': '1.0'"),
    ([{"coeffs": {"x": "1"}, "op": "<", "rhs": None}], [1], "not an exact rational: 'None'"),
    ([{"coeffs": {"x": "1"}, "op": "<", "rhs": "0"}], [0.5], "not an exact rational: '0.5'"),
])
def test_a_case_that_is_not_a_linear_system_is_refused_by_name(rows, multipliers, why):
    with pytest.raises(NotReplayable) as e:
        case_text(rows, multipliers, 4)
    assert str(e.value) == why


def test_a_certificate_is_one_file_of_every_case():
    second = {"rows": [{"coeffs": {"z[1]": "0", "a b": "0"}, "op": "<=", "rhs": "-1"}], "multipliers": ["1"]}
    text = certificate_text(_doc([CASE, second], claim="ws24:*) Fail (*", obligation='say "x"'))
    head, case0 = case_text(CASE["rows"], CASE["multipliers"], 0)[0], case_text(second["rows"], ["1"], 1)[0]
    assert text == "\n".join([
        "(* Replay of a Farkas certificate written by verify", "   claim: ws24:?) Fail (?",
        "   obligation: say ?x? *)", "From Coq Require Import QArith List.", "Import ListNotations.",
        "Require Import Verify.Farkas.", "", "(* case 0: variables 1: x, 2: y *)", head,
        "(* case 1: variables 1: 'a b', 2: z[1] *)", case0])
    long = certificate_text(_doc([CASE], claim="c" * 150, obligation="o" * 400))
    assert f"   claim: {'c' * 100}\n" in long and f"   obligation: {'o' * 300} *)\n" in long
    assert "claim: \n" in certificate_text({"certificate": {"kind": "farkas", "cases": [CASE]}})
    odd = {"rows": [{"coeffs": {"9" * 60: "1"}, "op": "<=", "rhs": "-1"}], "multipliers": ["1"]}
    assert f"(* case 0: variables 1: '{'9' * 39} *)" in certificate_text(_doc([odd]))  # repr clipped to 40


@pytest.mark.parametrize("doc,why", [
    ({"certificate": {"kind": "sos", "cases": [CASE]}}, "not a Farkas certificate"),
    ({"certificate": [CASE]}, "not a Farkas certificate"), ({}, "not a Farkas certificate"),
    (_doc([]), "a Farkas certificate with no cases"), (_doc({"0": CASE}), "a Farkas certificate with no cases"),
    (_doc([CASE, 3]), "case 1 is not an object"),
    (_doc([CASE, {"rows": CASE["rows"]}]), "a case holds a list of rows and a list of multipliers"),
])
def test_a_document_that_is_not_a_farkas_certificate_is_refused(doc, why):
    with pytest.raises(NotReplayable) as e:
        certificate_text(doc)
    assert str(e.value) == why


def test_the_rows_over_all_cases_are_capped(monkeypatch):
    assert (replay.MAX_ROWS, replay.MAX_DIGITS) == (5_000, 2_000)
    monkeypatch.setattr(replay, "MAX_ROWS", 6)
    with pytest.raises(NotReplayable, match="^case 2 is not an object$"):  # 6 rows counted: read on, case by case
        certificate_text(_doc([CASE, CASE, "not a case", {"rows": "x"}]))
    with pytest.raises(NotReplayable, match="^more than 6 rows$"):
        certificate_text(_doc([CASE, CASE, {"rows": [{}], "multipliers": [1]}]))


class FakeCoq:
    """coqc replaced: records each command and the file it was given, answers ``rc`` per file name."""

    def __init__(self, answers: dict[str, tuple[int, str]]) -> None:
        self.answers, self.calls = answers, []  # type: ignore[var-annotated]

    def __call__(self, cmd: list[str], cwd: Path, timeout: float = 0) -> tuple[int, str]:
        name = cmd[-1]
        self.calls.append((list(cmd), (cwd / name).read_text()))
        return self.answers.get(name, (0, ""))


def _fake(monkeypatch, answers: dict[str, tuple[int, str]], version: str | None = "8.16.1") -> FakeCoq:
    fake = FakeCoq(answers)
    monkeypatch.setattr(replay, "_run", fake)
    monkeypatch.setattr(replay, "coq_version", lambda: version)
    return fake


def test_replay_hands_each_file_to_coqc_and_reads_its_answer(monkeypatch):
    fake = _fake(monkeypatch, {"Replay1.v": (1, "File \"Replay1.v\", line 9\nnoise\nError: Unable to unify\n  x\n")})
    said: list[str] = []
    good, bad = _doc([CASE, CASE]), _doc([CASE])
    out = replay.replay_documents([("a.json", json.dumps(good).encode()), ("b.json", json.dumps(bad).encode())],
                                  progress=said.append)
    assert out == [("a.json", True, "Coq 8.16.1 kernel: 2 case(s), each ~ feasible rows by farkas_sound"),
                   ("b.json", False, 'the Coq kernel refuses the certificate: File "Replay1.v", line 9 noise Error: '
                                     "Unable to unify x")]
    assert said == ["kernel replay 1/2: a.json", "kernel replay 2/2: b.json"]
    assert [c for c, _ in fake.calls] == [["coqc", *COQC_ARGS, "Farkas.v"], ["coqc", *COQC_ARGS, "Replay0.v"],
                                          ["coqc", *COQC_ARGS, "Replay1.v"]]
    assert "Theorem farkas_sound" in fake.calls[0][1]
    assert fake.calls[1][1] == certificate_text(good) and fake.calls[2][1] == certificate_text(bad)
    assert replay.replay_documents([]) == []


def test_replay_refuses_unreadable_files_before_coq(monkeypatch):
    fake = _fake(monkeypatch, {})
    long_error = json.dumps(_doc([{"rows": [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "1" * 300}],
                                   "multipliers": ["1"]}]))
    out = replay.replay_documents([("bytes", b"\xff\xfe"), ("json", b"{"), ("list", b"[1]"),
                                   ("deep", b"[" * 100_000), ("sos", json.dumps({"certificate": {}}).encode()),
                                   ("long", long_error.replace('"1' + "1" * 299, '"1' + "1" * 299 + ".0").encode())])
    assert [ok for _, ok, _ in out] == [False] * 6 and len(fake.calls) == 1  # only Farkas.v was compiled
    msgs = [m for _, _, m in out]
    assert msgs[0].startswith("not replayed in the kernel: 'utf-8' codec can't decode byte 0xff")
    assert msgs[1].startswith("not replayed in the kernel: Expecting property name")
    assert msgs[2] == "not replayed in the kernel: a certificate file holds a JSON object"
    assert msgs[3].startswith("not replayed in the kernel: ") and msgs[4] == (
        "not replayed in the kernel: not a Farkas certificate")
    assert msgs[5] == "not replayed in the kernel: not an exact rational 'p' or 'p/q': '" + "1" * 40 + "'"


def test_replay_without_coq_or_with_a_broken_farkas_theory(monkeypatch):
    _fake(monkeypatch, {}, version=None)
    with pytest.raises(KernelUnavailable) as e:
        replay.replay_documents([("a", b"{}")])
    assert str(e.value) == INSTALL_HINT
    _fake(monkeypatch, {"Farkas.v": (1, "ok\nFile \"Farkas.v\", line 3\nError: Syntax error\nmore")})
    with pytest.raises(RuntimeError) as r:
        replay.replay_documents([("a", b"{}")])
    assert str(r.value) == 'Verify.Farkas does not compile: ok\nFile "Farkas.v", line 3\nError: Syntax error\nmore'


def test_a_refusal_is_clipped_to_one_line_of_200_characters(monkeypatch):
    _fake(monkeypatch, {"Replay0.v": (1, "Error: " + "y" * 500 + "\n" + "\n".join(f"l{i}" for i in range(9)))})
    (_, ok, msg), = replay.replay_documents([("a", json.dumps(_doc([CASE])).encode())])
    assert not ok and msg == "the Coq kernel refuses the certificate: Error: " + "y" * 193


# ----------------------------------------------------------------------------- survivors of the mutation pass, killed


def test_refusals_quote_40_characters_of_what_they_refuse():
    """Kills the 40-character quotes of a non-rational and of a zero denominator."""
    with pytest.raises(NotReplayable) as e:
        _q([1] * 30)
    assert str(e.value) == "not an exact rational: " + repr(str([1] * 30)[:40])
    with pytest.raises(NotReplayable) as e:
        _q("1" * 45 + "/0")
    assert str(e.value) == "a zero denominator: " + repr("1" * 40)


def test_three_hundred_rows_pair_with_three_hundred_multipliers():
    """Kills ``len(rows) != len(multipliers)`` -> ``is not`` (equal ints above 256 are distinct objects)."""
    rows = [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "1"}] * 300
    text, order = case_text(rows, ["0"] * 300, 0)
    assert order == ["x"] and text.count("{| coeffs := [(1%positive, (0x1 # 0x1))]; op := Le") == 300


def test_the_variable_list_is_clipped_at_2000_characters():
    """Kills the 2000-character clip of a case's variable list."""
    names = {f"v{i:04d}": "0" for i in range(400)}
    text = certificate_text(_doc([{"rows": [{"coeffs": names, "op": "<=", "rhs": "-1"}], "multipliers": ["1"]}]))
    line = next(x for x in text.splitlines() if x.startswith("(* case 0: variables "))
    assert len(line) == len("(* case 0: variables ") + 2000 + len(" *)")


def test_a_coqc_killed_by_a_signal_is_not_an_answer(monkeypatch):
    """Kills ``rc != 0`` -> ``rc > 0`` (Farkas.v) and ``rc == 0`` -> ``rc <= 0`` (a replay): a coqc killed by a signal
    returns a negative code, which must never read as compiled."""
    _fake(monkeypatch, {"Farkas.v": (-9, "")})
    with pytest.raises(RuntimeError, match="^Verify.Farkas does not compile: $"):
        replay.replay_documents([("a", b"{}")])
    _fake(monkeypatch, {"Replay0.v": (-9, "Killed")})
    (_, ok, msg), = replay.replay_documents([("a", json.dumps(_doc([CASE])).encode())])
    assert (ok, msg) == (False, "the Coq kernel refuses the certificate: Killed")


def test_a_refusal_shows_three_lines_after_the_error_and_a_long_reason_200_characters(monkeypatch):
    """Kills ``_first_error(msg, 3)`` -> 4 and the 200-character clip of a reason the file is not replayed."""
    _fake(monkeypatch, {"Replay0.v": (1, "a\nb\nError: bad\nl0\nl1\nl2\nl3\nl4")})
    (_, ok, msg), = replay.replay_documents([("a", json.dumps(_doc([CASE])).encode())])
    assert msg == "the Coq kernel refuses the certificate: a b Error: bad l0 l1"

    def refuse(doc: Any) -> str:
        raise NotReplayable("r" * 300)

    monkeypatch.setattr(replay, "certificate_text", refuse)
    (_, ok, msg), = replay.replay_documents([("a", b"{}")])
    assert msg == "not replayed in the kernel: " + "r" * 200
