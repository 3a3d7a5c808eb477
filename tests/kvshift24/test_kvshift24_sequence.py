"""kvshift24:theorem2 on the user's own sequence / embeddings and under RoPE / ALiBi placements."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import sympy as sp

from verify.constructions.kvshift24 import variant
from verify.constructions.kvshift24_pe import PE
from verify.proofs.kvshift24 import THEOREM2
from verify.symbolic import kvshift24_pe as sym_pe


def test_sequence_exact_difference_and_class():
    from verify.api import kvshift_sequence

    r = kvshift_sequence("A B C A", fix="none")
    assert r["nonzero"] and r["input_class"] == "last two tokens differ, x_L seen before"
    # IH on (A, B, C, A): the two keys A (s = 2) and B (s = 3) score 1/2 - 1 and 0 - 1/2: equal weights
    assert sp.nsimplify(r["IH"]["B"]) == sp.Rational(1, 2) and r["IH"]["A"] == "0"
    r = kvshift_sequence("A B C A", fix="mask+scale")
    assert not r["nonzero"] and r["max_abs_difference"] == 0 and r["table_check"] is True


def test_rope_after_shift_distance_from_ih_exact():
    r = sym_pe.theorem2_on_input(("A", "B", "C", "A"), variant("mask+scale"), Fraction(1, 2), Fraction(2),
                                 PE("after-shift"))
    # slot 2's key A is rotated by 2 - 4 = -2 positions at frequency 1: weight exp(cos(2)/2 - 1)
    w2, w3 = sp.exp(sp.cos(2) / 2 - 1), sp.exp(sp.Rational(-1, 2))
    assert abs(float(sp.N(sp.sympify(r["KVSA"]["B"]) - w2 / (w2 + w3)))) < 1e-30
    assert r["nonzero"] and abs(r["max_abs_difference"] - 0.169975) < 1e-6


def test_alibi_before_shift_is_the_same_construction():
    r = sym_pe.theorem2_on_input(("A", "B", "C", "A"), variant("mask+scale"), Fraction(1, 2), Fraction(2),
                                 PE("none", True, "before-shift"))
    assert not r["nonzero"]


def test_claim_user_path_layers_and_verdict():
    from verify.api import check_claim

    r = check_claim("kvshift24:theorem2", fix="none", sequence="A B C A")
    assert r.verdict == "FAILS"
    assert r.layer("solver").status == "refuted" and "given input" in r.layer("solver").summary
    assert any("Layers run on the given input" in n for n in r.notes)
    r = check_claim("kvshift24:theorem2", fix="mask+scale", sequence="A B C A", layers=("solver",))
    # the given input does not separate: the default proof ran (the masked layer's part holds; Theorem 2 FAILS)
    assert r.verdict == "FAILS" and r.parts[0].verdict == "HOLDS"


def test_embeddings_file_exact_and_numeric(tmp_path):
    from verify.api import kvshift_sequence

    f = tmp_path / "e.npy"
    np.save(f, np.array([[1.0, 0.25], [0.5, -1.0], [0.125, 0.75]]))
    r = kvshift_sequence("A B C A", fix="mask+scale", embeddings=str(f))
    assert not r["nonzero"]
    r = kvshift_sequence("A B C A", fix="none", embeddings=str(f))
    assert r["nonzero"] and r["max_abs_difference"] > 0.01


@pytest.mark.parametrize("arr,msg", [
    (np.zeros((2, 2)), "shape"),
    (np.array([[np.nan, 0.0], [0.0, 1.0], [1.0, 1.0]]), "NaN"),
    (np.zeros((3, 2), dtype=complex), "not numeric"),
])
def test_bad_embeddings_refused(tmp_path, arr, msg):
    from verify.core.model import InputError

    f = tmp_path / "e.npy"
    np.save(f, arr)
    with pytest.raises(InputError, match=msg):
        THEOREM2.parse_params({"sequence": "A B C A", "embeddings": str(f)})


def test_huge_embeddings_file_refused(tmp_path):
    from verify.core.model import InputError

    f = tmp_path / "e.npy"
    f.write_bytes(b"\0" * (9 * 2**20))
    with pytest.raises(InputError, match="limit"):
        THEOREM2.parse_params({"sequence": "A B C A", "embeddings": str(f)})


def test_pt_pickle_refused(tmp_path):
    import torch

    from verify.core.model import InputError

    f = tmp_path / "e.pt"
    torch.save({"a": object.__new__(type("Evil", (), {}))} if False else [1, 2], f)
    with pytest.raises(InputError):
        THEOREM2.parse_params({"sequence": "A B C A", "embeddings": str(f)})


def test_cli_bad_sequence_exit_2(capsys):
    from verify.frontends.cli import main

    assert main(["kvshift24:theorem2", "--fix", "none", "--sequence", "A B C D E F G H"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1


# ----------------------------------------------------------------- fault injection


def test_fault_slot_list_evaluator_sign_error_is_an_error(monkeypatch):
    from verify.constructions import kvshift24_pe as pe_mod

    real = pe_mod.evaluate
    monkeypatch.setattr(sym_pe.pe_mod, "evaluate", lambda q, dot, sigma, m, exp, zero=0:
                        real(q, dot, sigma, -m, exp, zero))
    ev = sym_pe.check_theorem2_input(("A", "B", "C", "A"), variant("none"), Fraction(1, 2), Fraction(2), PE("none"))
    assert ev.status == "error"


def test_fault_rope_ignored_turns_refuted_into_inconclusive(monkeypatch):
    monkeypatch.setattr(sym_pe, "token_dot", lambda x, base=10_000: (lambda t, p, d: sp.Integer(int(x[t - 1] == x[p - 1]))))
    ev = sym_pe.check_theorem2_input(("A", "B", "C", "A"), variant("mask+scale"), Fraction(1, 2), Fraction(2),
                                     PE("after-shift"))
    assert ev.status == "inconclusive"


def test_fault_numeric_rope_dropped_is_consistent():
    from verify import faults
    from verify.numeric import kvshift24_pe as num_pe

    with faults.inject("numeric.kvshift24_pe._rope", lambda X, pos, base: X):
        ev = num_pe.check_theorem2_pe(variant("mask+scale"), PE("after-shift"), Fraction(2), Fraction(1, 2), 32, 8, 0)
    assert ev.status == "consistent"
