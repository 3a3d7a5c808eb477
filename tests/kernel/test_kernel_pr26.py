"""The Coq theory of pr26 (kernel/theories/Pr26.v) tied to the Python constructions, and refused when changed.

Tie: the Coq definitions over Q (the affine logit phi(i)^T W phi(j), P_L(W) = Phi_L W Phi_L^T with its
causal mask, ALiBi a - m delta, the exact row margin) evaluated with ``Compute`` on rational parameters,
against ``verify.constructions.pe``'s Fraction values (``pe.logit``, ``pe.exact_row_margin``).
Faults: Prop. 1 with the affine feature replaced by [1, i, i^2] (where prev IS realizable), Theorem 2
with the strict maximiser weakened to a non-strict one, and Theorem 1 with the new rows' boundary moved
must each no longer compile.

Needs coqc: skipped without it, failed under CI.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from kernel_support import compile_theory, need_coq, private_theory

from verify.constructions import pe
from verify.kernel.driver import THEORIES, coq_compute, parse_q_list

AR = pe.FractionArith()
AFFINE, ALIBI = pe.FAMILIES["affine"], pe.FAMILIES["alibi"]
PREV = pe.get_task("prev")
# two rational W (rows), one with every sign pattern
WS = ([[Fraction(1, 2), Fraction(-3)], [Fraction(2), Fraction(5, 3)]],
      [[Fraction(-7, 4), Fraction(1, 5)], [Fraction(-2, 3), Fraction(-1, 6)]])




@pytest.fixture(scope="module")
def theories(tmp_path_factory) -> Path:
    """A private copy of Pr26.v (never compiled inside kernel/theories), compiled once."""
    return private_theory(tmp_path_factory, "Pr26")


PRE = "From Coq Require Import List QArith. Import ListNotations. Open Scope Q_scope."


def compute(theories: Path, exprs: list[str]) -> list[list[Fraction]]:
    return [parse_q_list(o) for o in coq_compute("Pr26", exprs, theories=theories, workdir=theories / "work",
                                                  preamble=PRE)]


def q_lit(x: Fraction) -> str:
    return f"({x.numerator} # {x.denominator})"


def w_lit(W: list[list[Fraction]]) -> str:
    return "(qW [" + "; ".join("[" + "; ".join(q_lit(x) for x in row) + "]" for row in W) + "])"


def masked(fn, L: int) -> list[Fraction]:
    """Row-major causal-masked entries (i, j), j <= i < L."""
    return [fn(i, j) for i in range(L) for j in range(i + 1)]


@pytest.mark.parametrize("w", range(len(WS)))
def test_affine_logits_and_P_L_block_equal_pe(theories, w):
    W, L0, L = WS[w], 3, 7
    lit = w_lit(W)
    logits, PL, PL0 = compute(theories, [f"concat (qmasked_rows {L} (qlogit qphi_aff {lit}))",
                                         f"concat (qmasked_rows {L} (qPL {L} 2 qphi_aff {lit}))",
                                         f"concat (qmasked_rows {L0} (qPL {L0} 2 qphi_aff {lit}))"])
    want = masked(lambda i, j: pe.logit(AFFINE, W, i, j, L0, AR), L)
    assert logits == want
    assert PL == want  # P_L(W) = Phi_L W Phi_L^T, read through the mask
    n0 = L0 * (L0 + 1) // 2
    assert PL0 == want[:n0] == PL[:n0]  # the block identity, on this instance
    # each row is affine in j: constant differences (Prop. 1's premise, on the Python values)
    for i in range(2, L):
        row = [pe.logit(AFFINE, W, i, j, L0, AR) for j in range(i + 1)]
        assert len({b - a for a, b in zip(row, row[1:])}) == 1


def test_alibi_logits_equal_pe(theories):
    a, m, L = Fraction(3, 2), Fraction(2, 7), 6
    [got] = compute(theories, [f"concat (qmasked_rows {L} (qlogit_rel (qalibi {q_lit(a)} {q_lit(m)})))"])
    assert got == masked(lambda i, j: pe.logit(ALIBI, [a, -m], i, j, 4, AR), L)


@pytest.mark.parametrize("w", range(len(WS)))
def test_prev_row_margins_equal_pe_exact_row_margin(theories, w):
    """The exact margin of every prev row (Theorem 1's margins; never positive from row 2 on: Prop. 1)."""
    W, L = WS[w], 7
    rows = range(1, L)
    [got] = compute(theories, ["map (fun o => match o with Some q => q | None => 1000 end) (map (fun i => "
                               f"qrow_margin (qlogit qphi_aff {w_lit(W)} i) i (i - 1)) (seq 1 {L - 1}))"])
    want = [pe.exact_row_margin(AFFINE, PREV, W, i, L, 3, AR) for i in rows]
    assert got == want
    assert all(g <= 0 for g in got[1:])


# --- a changed statement is refused -------------------------------------------------------------------

FAULTS = {
    # Prop. 1 with quadratic features: prev IS realizable there (prop1_quadratic_control)
    "affine feature replaced by [1, i, i^2]": ("Definition phi_aff (i : nat) : list R := [1; INR i].",
                                               "Definition phi_aff (i : nat) : list R := [1; INR i; INR i * INR i]."),
    # Theorem 2 with ties allowed at the maximiser: the deep-row lemma fails (a tie is not a strict argmax)
    "strict maximiser weakened": ("Definition strict_unique_max (k : nat -> R) (ds : nat) : Prop := forall d, d <> ds -> k d < k ds.",
                                  "Definition strict_unique_max (k : nat -> R) (ds : nat) : Prop := forall d, d <> ds -> k d <= k ds."),
    # Theorem 1 with the new rows starting one late: row L0 is left without a margin
    "new rows' boundary moved": ("solves_rows (PL L r phi W) tgt (Nat.max i0 L0) L gL ->\n"
                                 "     solves_rows (PL L r phi W) tgt i0 L (Rmin g0 gL) /\\",
                                 "solves_rows (PL L r phi W) tgt (Nat.max i0 (S L0)) L gL ->\n"
                                 "     solves_rows (PL L r phi W) tgt i0 L (Rmin g0 gL) /\\"),
}


def test_the_shipped_theory_compiles(tmp_path):
    need_coq()
    res = compile_theory(tmp_path, "Pr26", (THEORIES / "Pr26.v").read_text())
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_changed_statement_no_longer_compiles(tmp_path, fault):
    need_coq()
    text = (THEORIES / "Pr26.v").read_text()
    good, bad = FAULTS[fault]
    assert text.count(good) == 1, fault
    res = compile_theory(tmp_path, "Pr26", text.replace(good, bad))
    assert res.returncode != 0, fault
    assert "Error" in res.stdout + res.stderr
