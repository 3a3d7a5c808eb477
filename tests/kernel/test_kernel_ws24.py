"""The Coq theory of ws24 (kernel/theories/Ws24.v) tied to the Python constructions, and refused when changed.

Tie: the Coq definitions of Eq. 13 / Eq. 14 / Prop. 4 over Q, evaluated with ``Compute`` on the standard
basis (w_E(k) = e_(k-1), r_{-1} = e_V, Phi_1 w_E(k) = e_(V+k-1)) at V = 3 with the index-probe
coefficients chi(k) = (-1)^(k+1) k, against ``verify.constructions.bilinear``'s Fraction values (its
``OuterSum`` terms laid on the same basis, and its scores under the exact orthonormal Gram).
Faults: the read-score theorems with the orientation flipped back must no longer compile.

Needs coqc: skipped without it, failed under CI.
"""

from __future__ import annotations

import subprocess
from fractions import Fraction
from pathlib import Path

import pytest
from kernel_support import compile_theory, need_coq, private_theory

from verify.constructions.bilinear import InductionKeyConstruction, PrevTokenConstruction, prev_token_weight
from verify.kernel.driver import THEORIES, coq_compute, parse_q, parse_q_list
from verify.symbolic.ws24 import FractionOrthonormalGram

V = 3
GRAM = FractionOrthonormalGram()




@pytest.fixture(scope="module")
def theories(tmp_path_factory) -> Path:
    """A private copy of Ws24.v (never compiled inside kernel/theories), compiled once."""
    return private_theory(tmp_path_factory, "Ws24")


def compute(theories: Path, exprs: list[str], preamble: str = "") -> list[str]:
    return coq_compute("Ws24", exprs, theories=theories, workdir=theories / "work", preamble=preamble)


def q_lit(x: Fraction) -> str:
    return f"({x.numerator} # {x.denominator})"


def coef_preamble(name: str, coefs: tuple[Fraction, ...]) -> str:
    """A Coq function k -> coefs[k-1] (tokens 1-indexed as in the paper)."""
    return (f"Definition {name} (k : nat) : Q := nth (k - 1) (" + " :: ".join(q_lit(c) for c in coefs)
            + " :: nil) 0%Q.")


def basis_index(vec: tuple, V: int) -> int:
    """Where the Coq instance puts a named vector of the construction: w_E(k) -> e_(k-1), r_{-1} -> e_V,
    Phi_1 w_E(k) -> e_(V+k-1)."""
    kind, idx = vec
    if kind == "w_E":
        return idx - 1
    if kind == "r":
        assert idx == -1
        return V
    assert kind == "Phi_1 w_E"
    return V + idx - 1


def python_matrix(con, dim: int) -> list[Fraction]:
    """The construction's W = sum_k c(k) a_k b_k^T on the standard basis, row-major."""
    M = [[Fraction(0)] * dim for _ in range(dim)]
    for c, left, right in con.W.terms:
        M[basis_index(left, con.V)][basis_index(right, con.V)] += c
    return [x for row in M for x in row]


PROBE = PrevTokenConstruction.index_probe(V).chi
PRE = "From Coq Require Import List QArith. Import ListNotations. Open Scope Q_scope. " + coef_preamble("chi_py", PROBE)


def test_probe_coefficients_are_distinct():
    assert PROBE == (Fraction(1), Fraction(-2), Fraction(3))


@pytest.mark.parametrize("orientation, coq_w", [("as-written", "qW1K"), ("transposed", "qW1K_transposed")])
def test_eq13_matrix_entries_equal_the_python_construction(theories, orientation, coq_w):
    con = PrevTokenConstruction.index_probe(V, orientation)
    [out] = compute(theories, [f"concat (qmatrix {V + 1} ({coq_w} {V} chi_py))"], PRE)
    assert parse_q_list(out) == python_matrix(con, V + 1)


def test_eq13_scores_equal_the_python_construction(theories):
    """Each variant's reading and the model's own score, token by token (the symbolic layer's values)."""
    W, WT = f"(qW1K {V} chi_py)", f"(qW1K_transposed {V} chi_py)"
    disp, model, disp_t, model_t = (parse_q_list(x) for x in compute(theories, [
        f"q_displayed {V} {W}", f"q_model {V} {W}", f"q_displayed {V} {WT}", f"q_model {V} {WT}"], PRE))
    tokens = range(1, V + 1)
    aw, tr, rs = (PrevTokenConstruction.index_probe(V, o) for o in ("as-written", "transposed", "read-score"))
    assert disp == [aw.displayed_score(v, GRAM) for v in tokens] == [0, 0, 0]
    assert model == [aw.model_score(v, GRAM) for v in tokens] == list(PROBE)
    assert model == [rs.displayed_score(v, GRAM) for v in tokens]  # read-score reads the model's score
    assert disp_t == [tr.displayed_score(v, GRAM) for v in tokens] == list(PROBE)
    assert model_t == [tr.model_score(v, GRAM) for v in tokens] == [0, 0, 0]


@pytest.mark.parametrize("orientation, coq_w", [("as-written", "qW2K"), ("transposed", "qW2K_transposed")])
def test_eq14_matrix_and_scores_equal_the_python_construction(theories, orientation, coq_w):
    con = InductionKeyConstruction.index_probe(V, orientation)
    pre = "From Coq Require Import List QArith. Import ListNotations. Open Scope Q_scope. " + coef_preamble("psi_py", con.psi)
    W = f"({coq_w} {V} psi_py)"
    mat, disp, model = compute(theories, [f"concat (qmatrix {2 * V} {W})", f"concat (q_eq14_displayed {V} {W})",
                                          f"concat (q_eq14_model {V} {W})"], pre)
    assert parse_q_list(mat) == python_matrix(con, 2 * V)
    pairs = [(s, T) for T in range(1, V + 1) for s in range(1, V + 1)]
    assert parse_q_list(disp) == [con.displayed_score(s, T, GRAM) for s, T in pairs]
    assert parse_q_list(model) == [con.model_score(s, T, GRAM) for s, T in pairs]
    target = [con.target(s, T) for s, T in pairs]
    if orientation == "as-written":
        assert parse_q_list(disp) == [0] * len(pairs) and parse_q_list(model) == target
    else:
        assert parse_q_list(disp) == target and parse_q_list(model) == [0] * len(pairs)


def test_prop4_weight_equals_the_python_formula(theories):
    """Prop. 4 with a rational stand-in e1 for exp(1): Coq's softmax of (1 on the previous key, 0 on the
    others) against bilinear.prev_token_weight with the same exponential."""
    e1 = Fraction(27, 10)

    def exp(x: int) -> Fraction:
        return e1 if x == 1 else Fraction(1)

    ts = list(range(1, 7))
    outs = compute(theories, [f"qprev_weight {t} {q_lit(e1)}" for t in ts], "From Coq Require Import QArith. Open Scope Q_scope.")
    assert [parse_q(o) for o in outs] == [prev_token_weight(t, exp) for t in ts]
    assert parse_q(outs[0]) == 1 and parse_q(outs[3]) == e1 / (4 + e1 - 1)


# --- a changed statement is refused -------------------------------------------------------------------

READ_SCORE_13 = "      bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) = chi v /\\\n"
FLIPPED_13 = "      bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v) = chi v /\\\n"
READ_SCORE_14 = "      bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)) = (if Nat.eqb s T then psi T else 0).\n"
FLIPPED_14 = "      bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T) = (if Nat.eqb s T then psi T else 0).\n"


@pytest.mark.parametrize("theorem, good, bad", [("theorem2_read_score", READ_SCORE_13, FLIPPED_13),
                                                ("eq14_read_score", READ_SCORE_14, FLIPPED_14)])
def test_read_score_with_the_orientation_flipped_back_no_longer_compiles(tmp_path, theorem, good, bad):
    need_coq()
    text = (THEORIES / "Ws24.v").read_text()
    start = text.index(f"Theorem {theorem} :")
    end = text.index("Qed.", start)
    assert text.count(good) == 1 and start < text.index(good) < end, "the fault must hit the theorem's statement"
    ok = compile_theory(tmp_path, "Ws24", text)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    res = compile_theory(tmp_path, "Ws24", text.replace(good, bad))
    assert res.returncode != 0
    line = int((res.stdout + res.stderr).split('File "./Ws24.v", line ')[1].split(",")[0])
    assert text[:start].count("\n") < line <= text[:end].count("\n") + 1  # refused inside that theorem


# --- Theorem 2 for near-orthogonal embeddings (Ws24Near.v): each hypothesis is needed -------------------------

NEAR_HYPOTHESES = {
    # an inner product of two distinct embeddings up to 2 eps instead of eps
    "distinct": ("k <> l -> Rabs (dot d (wE k) (wE l)) <= eps)", "k <> l -> Rabs (dot d (wE k) (wE l)) <= 2 * eps)"),
    # an embedding's inner product with r_{-1} up to 2 eps
    "with r": ("Rabs (dot d (wE k) (r (-1)%Z)) <= eps)", "Rabs (dot d (wE k) (r (-1)%Z)) <= 2 * eps)"),
    # |r_{-1}|^2 within 2 eps of 1
    "norm of r": ("  Rabs (dot d (r (-1)%Z) (r (-1)%Z) - 1) <= eps.\n", "  Rabs (dot d (r (-1)%Z) (r (-1)%Z) - 1) <= 2 * eps.\n"),
    # an embedding's squared norm within 2 eps of 1
    "norm of w_E": ("Rabs (dot d (wE k) (wE k) - 1) <= eps)", "Rabs (dot d (wE k) (wE k) - 1) <= 2 * eps)"),
    # Eq. 14: two distinct Phi_1 w_E up to 2 eps; an embedding against a Phi_1 w_E up to 2 eps; orientation flipped
    "eq14 Phi": ("Rabs (dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE l))) <= eps)",
                 "Rabs (dot d (mv d Phi1 (wE k)) (mv d Phi1 (wE l))) <= 2 * eps)"),
    "eq14 cross": ("Rabs (dot d (wE k) (mv d Phi1 (wE l))) <= eps).", "Rabs (dot d (wE k) (mv d Phi1 (wE l))) <= 2 * eps)."),
    "eq14 orientation": ("      Rabs (bilin d (wE T) (W2K d V psi wE Phi1) (mv d Phi1 (wE s)) - (if",
                         "      Rabs (bilin d (mv d Phi1 (wE s)) (W2K d V psi wE Phi1) (wE T) - (if"),
    # the model's score read back as the display (the orientation flipped)
    "orientation": ("      Rabs (bilin d (wE v) (W1K V Q chi wE (r (-1)%Z)) (r (-1)%Z) - chi v) <= M * eps * (INR V + 1 + INR V",
                    "      Rabs (bilin d (r (-1)%Z) (W1K V Q chi wE (r (-1)%Z)) (wE v) - chi v) <= M * eps * (INR V + 1 + INR V"),
}


def _compiles_near(tmp_path: Path, near: str) -> subprocess.CompletedProcess:
    base = compile_theory(tmp_path, "Ws24", (THEORIES / "Ws24.v").read_text())
    assert base.returncode == 0, base.stdout + base.stderr
    return compile_theory(tmp_path, "Ws24Near", near)


@pytest.mark.parametrize("which", sorted(NEAR_HYPOTHESES))
def test_the_near_orthogonal_theorem_fails_with_a_weaker_hypothesis(tmp_path, which):
    """Ws24Near.v compiles as shipped; with one hypothesis of theorem2_read_score_near or eq14_read_score_near
    weakened (a bound of 2 eps where the proof uses eps) or the orientation of its first bound flipped, it no longer
    does."""
    need_coq()
    text = (THEORIES / "Ws24Near.v").read_text()
    good, bad = NEAR_HYPOTHESES[which]
    assert good in text, f"the fault must hit a line: {good!r}"
    ok = _compiles_near(tmp_path, text)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert _compiles_near(tmp_path, text.replace(good, bad, 1)).returncode != 0  # the first: Theorem 2's, then Eq. 14's


def test_the_read_score_kernel_result_carries_eps_star_at_the_run_sizes():
    """verify ws24:theorem2 --orientation read-score --format json: the kernel layer proved, with eps*(V) of the
    near-orthogonal theorem at the run's V and Vmax (0.0950 at V = 8, 0.0149 at V = 64), and Eq. 14's (0.217 at
    V = 6); the as-written variant (a refutation) carries none."""
    need_coq()
    import math

    from verify.api import check_claim

    only = ("kernel",)
    r = check_claim("ws24:theorem2", orientation="read-score", convention="query-key", layers=only)
    k = next(e for e in r.evidence if e.layer == "kernel")
    assert k.status == "proved" and k.numbers["eps_star"]["at"] == {"8": 0.0950498, "64": 0.0149448}
    V = 8
    assert abs((math.sqrt((V + 1) ** 2 + 8 * V) - (V + 1)) / (4 * V) - 0.0950498) < 1e-7
    r14 = check_claim("ws24:eq14", orientation="read-score", convention="query-key", layers=only)
    assert next(e for e in r14.evidence if e.layer == "kernel").numbers["eps_star"]["at"]["6"] == 0.217129
    written = check_claim("ws24:theorem2", orientation="as-written", layers=only)
    assert "eps_star" not in next(e for e in written.evidence if e.layer == "kernel").numbers
