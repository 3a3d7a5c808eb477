"""kvshift24:decode: incremental decoding with a KV-cache policy against the full forward pass."""

from __future__ import annotations

from fractions import Fraction

import pytest
import sympy as sp

from verify.constructions import kvshift24_pe as pe_mod
from verify.constructions.kvshift24 import variant
from verify.constructions.kvshift24_pe import PE, Decode
from verify.proofs.kvshift24 import DECODE
from verify.symbolic import kvshift24_pe as sym_pe

X4 = ("A", "B", "C", "B")


def _example(cache):
    return sym_pe.decode_on_input(X4, variant("mask+scale"), Fraction(0), Fraction(2), PE("none", alibi=False),
                                  Decode(2, cache))


def test_issue_example_mixed_key_gives_half_B_half_C():
    r = _example("mixed-key")
    last = r["last"]
    assert last["t"] == 4 and last["decoded"] == "0.5 B + 0.5 C" and last["nonzero"]
    assert r["full_equals_ih"] is True


def test_issue_example_raw_key_is_exact():
    r = _example("raw-key")
    assert not r["nonzero"] and all(row["max_abs_difference"] == 0 for row in r["rows"])
    assert r["full_equals_ih"] is True


def test_exact_value_of_mixed_key_last_step():
    # decoded keys at t = 4 are (A, A) for slots 2, 3 (mixed state) against query B: equal weights exactly
    full = pe_mod.full_forward(4, "mask+scale", PE("none", alibi=False), sp.Integer(2))
    dec = pe_mod.decode(4, "mask+scale", PE("none", alibi=False), Decode(2, "mixed-key"), sp.Integer(2))
    dot = sym_pe.token_dot(X4)
    out = pe_mod.evaluate(dec[-1], dot, sp.Integer(2), sp.Integer(0), sp.exp)
    assert sp.simplify(out[2] - sp.Rational(1, 2)) == 0 and sp.simplify(out[3] - sp.Rational(1, 2)) == 0
    ref = pe_mod.evaluate(full[-1], dot, sp.Integer(2), sp.Integer(0), sp.exp)
    assert sp.simplify(ref[3] - sp.exp(sp.Rational(1, 2)) / (1 + sp.exp(sp.Rational(1, 2)))) == 0


@pytest.mark.parametrize("label,verdict", list(DECODE.expected.items()))
def test_decode_known_verdicts_symbolic(label, verdict):
    from verify.api import check_claim

    cache, offset, distance = label.split(",")
    r = check_claim("kvshift24:decode", layers=("symbolic",), cache=cache,
                    **{"rope-offset": offset, "alibi-distance": distance})
    assert r.verdict == verdict, r.reason
    assert r.expected == verdict


def test_decode_numeric_holds_for_raw_fails_for_mixed():
    from verify.api import check_claim

    ok = check_claim("kvshift24:decode", layers=("numeric",), L=16, d=8)
    bad = check_claim("kvshift24:decode", layers=("numeric",), cache="mixed-key", L=16, d=8)
    assert ok.verdict == "HOLDS" and bad.verdict == "FAILS"
    low = bad.layer("numeric").numbers["reduced_precision"]
    for v in low.values():  # rounding of a correct cache stays below the tolerance, the bug does not
        assert v["policy_beyond_tolerance"]
    assert all(v["correct_within_tolerance"] for v in ok.layer("numeric").numbers["reduced_precision"].values())


def test_off_by_one_alibi_is_harmless_when_the_current_slot_is_masked():
    ev = sym_pe.check_decode(X4, variant("mask+scale"), Fraction(1, 2), Fraction(2), PE("after-shift"),
                             Decode(2, alibi_distance="off-by-one"))
    assert ev.status == "proved"
    ev = sym_pe.check_decode(X4, variant("none"), Fraction(1, 2), Fraction(2), PE("after-shift"),
                             Decode(2, alibi_distance="off-by-one"))
    assert ev.status == "refuted"


def test_unwritten_first_witness_found_when_given_input_does_not_separate():
    ev = sym_pe.check_decode(X4, variant("mask+scale"), Fraction(1, 2), Fraction(2), PE("after-shift"),
                             Decode(2, "unwritten-first"))
    assert ev.status == "refuted" and ev.numbers["witness_is_given_input"] is False


def test_api_decode_check():
    from verify.api import decode_check

    r = decode_check(cache="mixed-key", fix="mask+scale", rope="none", m=0, layers=("symbolic",))
    assert r.verdict == "FAILS"
    assert r.layer("symbolic").witness["decoded"] == "0.5 B + 0.5 C"


# ----------------------------------------------------------------- fault injection


def test_fault_cache_policy_ignored_turns_refuted_into_proved(monkeypatch):
    real = pe_mod.decode
    monkeypatch.setattr(sym_pe, "decode", lambda L, var, pe, dec, sigma=1, co=None:
                        real(L, var, pe, Decode(dec.prefill), sigma, co or pe_mod.Coefs()))
    ev = sym_pe.check_decode(X4, variant("none"), Fraction(1, 2), Fraction(2), PE("after-shift"),
                             Decode(2, "mixed-key"))
    assert ev.status == "proved"


def test_fault_broken_decoder_fails_the_positive_control(monkeypatch):
    real = pe_mod.decode

    def broken(L, var, pe, dec, sigma=1, co=None):
        return real(L, var, pe, Decode(dec.prefill, "mixed-key"), sigma, co or pe_mod.Coefs())

    monkeypatch.setattr(sym_pe, "decode", broken)
    ev = sym_pe.check_decode(X4, variant("none"), Fraction(1, 2), Fraction(2), PE("after-shift"), Decode(2))
    assert ev.status == "error"


def test_fault_numeric_decoder_ignoring_policy_is_consistent(monkeypatch):
    from verify.numeric import kvshift24_pe as num_pe

    real = num_pe.decode_pass
    monkeypatch.setattr(num_pe, "decode_pass", lambda X, var, pe, dec, sigma, m, **kw:
                        real(X, var, pe, Decode(dec.prefill), sigma, m, **kw))
    ev = num_pe.check_decode(variant("none"), PE("after-shift"), Decode(2, "mixed-key"), Fraction(2), Fraction(1, 2),
                             16, 8, 0, B=1)
    assert (ev.status, ev.outcome) == ("consistent", "holds")  # unpatched: consistent with FAILS
    monkeypatch.setattr(num_pe, "decode_pass", real)
    ev = num_pe.check_decode(variant("none"), PE("after-shift"), Decode(2, "mixed-key"), Fraction(2), Fraction(1, 2),
                             16, 8, 0, B=1)
    assert (ev.status, ev.outcome) == ("consistent", "fails")


def test_fault_numeric_rope_at_wrong_position_breaks_raw_key():
    from verify import faults
    from verify.numeric import kvshift24_pe as num_pe

    real = num_pe._rope
    with faults.inject("numeric.kvshift24_pe._rope", lambda X, pos, base: real(X, pos + (1 if len(pos) == 1 else 0), base)):
        ev = num_pe.check_decode(variant("none"), PE("after-shift"), Decode(2), Fraction(2), Fraction(1, 2), 16, 8, 0,
                                 B=1)
    assert ev.outcome != "holds"


def test_fault_normal_form_without_distance_shift_rule_is_seen():
    # the constant-shift rule must not hide a real distance change: off-by-one under fix none differs
    full = pe_mod.full_forward(4, "none", PE("none"))
    dec = pe_mod.decode(4, "none", PE("none"), Decode(2, alibi_distance="off-by-one"))
    assert pe_mod.first_mismatch(full, dec) == 3


# ----------------------------------------------------------------- hostile inputs


@pytest.mark.parametrize("raw,msg", [
    ({"sequence": "A"}, "at least 3 tokens"),
    ({"sequence": " ".join("A" * 13)}, "at most 12 tokens"),
    ({"sequence": "A B C D E F G H"}, "at most 6 distinct"),
    ({"sequence": "A B $"}, "ASCII letters"),
    ({"sequence": "A B\x07 C"}, "printable"),
    ({"prefill": "4"}, "--prefill must be below"),
    ({"rope": "after-shift", "d": "7"}, "even"),
    ({"sigma": "0"}, "--sigma"),
    ({"embeddings": "/nonexistent.npy"}, "--embeddings"),
])
def test_decode_bad_input_refused(raw, msg):
    from verify.core.model import InputError

    with pytest.raises(InputError, match=msg.replace("$", r"\$")):
        DECODE.parse_params(raw)


def test_cli_decode_bad_sequence_exit_2_one_line(capsys):
    from verify.frontends.cli import main

    assert main(["kvshift24:decode", "--sequence", "A"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "at least 3 tokens" in err
