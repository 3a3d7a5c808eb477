"""Hostile certificates against ``verify recheck --kernel``'s Coq replay (kernel/replay.py, issue 24).

The replay writes each certificate as a Coq file; everything taken from the file (claim, obligation,
variable names, numbers) is data and must never change what Coq checks.  A forged case must be refused
by the kernel on its own, whatever the Python re-check in front of it says.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from fractions import Fraction

import pytest

from verify.kernel.replay import NotReplayable, _q, certificate_text, replay_documents


def _need_coqc() -> None:
    if shutil.which("coqc") is None:
        if os.environ.get("CI"):
            pytest.fail("coqc is required in CI (apt-get install coq)")
        pytest.skip("coqc not installed (apt-get install coq); the replay needs it")


def _doc(cases, **extra) -> dict:
    doc = {"format": "verify-certificate/1", "answer": "unsat", "claim": "pr26:prop1", "obligation": "test",
           "certificate": {"kind": "farkas", "cases": cases}}
    doc.update(extra)
    return doc


#: a feasible system (x <= 1) whose "multiplier" 1 refutes nothing: a forgery
_FORGED = {"rows": [{"coeffs": {'a"': "1"}, "op": "<=", "rhs": "1"}], "multipliers": ["1"]}
#: a genuine refutation: 0 <= -1
_GENUINE = {"rows": [{"coeffs": {'b"': "0"}, "op": "<=", "rhs": "-1"}], "multipliers": ["1"]}


def test_a_quote_in_a_variable_name_cannot_hide_a_forged_case() -> None:
    """A '"' in case 0's names opened a Coq string inside its comment that ran to case 1's comment, so
    case 0's rows and theorem were never compiled and the kernel replay accepted the forgery."""
    doc = _doc([_FORGED, _GENUINE])
    text = certificate_text(doc)
    assert '"' not in text  # the generated file has no string literal; a name never brings one
    _need_coqc()
    (label, ok, message), = replay_documents([("forged", json.dumps(doc).encode())])
    assert not ok, message
    assert "refuses" in message


def test_the_claim_field_is_never_coq_code() -> None:
    """The claim went into the header comment unescaped: '*) CMD (*' ran CMD in Coq."""
    doc = _doc([_GENUINE], claim="*) Fail Check 1. (*", obligation="x *) y (* z \" w")
    text = certificate_text(doc)
    header = text.split("From Coq Require", 1)[0]
    assert header.count("(*") == 1 and header.count("*)") == 1 and '"' not in header
    _need_coqc()
    (label, ok, message), = replay_documents([("inject", json.dumps(doc).encode())])
    assert ok, message  # a genuine certificate, whatever its claim text says


@pytest.mark.parametrize("bad", ["1/0", "-1/0", "0/0"])
def test_a_zero_denominator_is_not_replayable(bad: str) -> None:
    with pytest.raises(NotReplayable, match="zero denominator"):
        _q(bad)
    doc = _doc([{"rows": [{"coeffs": {"x": "1"}, "op": "<=", "rhs": bad}], "multipliers": ["1"]}])
    if shutil.which("coqc") is None:
        return
    (label, ok, message), = replay_documents([("zero", json.dumps(doc).encode())])
    assert not ok and "zero denominator" in message


@pytest.mark.parametrize("rows", [5, "rows", None, {"a": 1}])
def test_a_case_whose_rows_are_not_a_list_is_not_replayable(rows) -> None:
    with pytest.raises(NotReplayable):
        certificate_text(_doc([{"rows": rows, "multipliers": []}]))


def _hex_value(literal: str) -> Fraction:
    m = re.fullmatch(r"\((-?)0x([0-9a-f]+) # 0x([0-9a-f]+)\)", literal)
    assert m, literal
    return Fraction(int(m.group(2), 16) * (-1 if m.group(1) else 1), int(m.group(3), 16))


@pytest.mark.parametrize("text", ["0", "-7", "3/4", "-12/8", "9" * 2000, "-1/" + "7" * 2000])
def test_numbers_are_written_in_hexadecimal_with_their_value(text: str) -> None:
    """Coq reads a decimal numeral in time quadratic in its digits (about 10 s for 2000 digits on this
    machine); the replay writes hexadecimal, which Coq reads in linear time."""
    literal = _q(text)
    assert _hex_value(literal) == Fraction(text)
    assert len(literal) < 0.9 * len(text) + 20


def test_huge_rationals_replay_and_a_huge_forgery_is_refused() -> None:
    _need_coqc()
    big = "9" * 2000
    genuine = {"rows": [{"coeffs": {"x": big}, "op": "<=", "rhs": "-" + big},
                        {"coeffs": {"x": "-" + big}, "op": "<=", "rhs": "-1/" + big}], "multipliers": ["1", "1"]}
    forged = {"rows": [{"coeffs": {"x": big}, "op": "<=", "rhs": big}], "multipliers": ["1"]}
    out = replay_documents([("genuine", json.dumps(_doc([genuine])).encode()),
                            ("forged", json.dumps(_doc([forged])).encode())])
    assert [ok for _, ok, _ in out] == [True, False], out
