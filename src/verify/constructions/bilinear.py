"""Key matrices built as sums of outer products, and bilinear attention scores.

Source: Wang & Sato, arXiv 2412.11459 v2 (ws24), Theorem 2 / appendix Theorem 3,
Eq. 13 (first layer) and Eq. 14 (second layer).  Both learned key matrices have the
form

    W = sum_k  c(k) * a_k b_k^T                                            (*)

with a_k, b_k members of a (near-)orthonormal family of embeddings, and the scores
the papers evaluate are bilinear forms  u^T W v.  Expanding (*),

    u^T W v = sum_k c(k) <u, a_k> <b_k, v>.                                (**)

(**) is the one definition of the construction.  It is written against an abstract
Gram function ``gram(x, y) -> <x, y>`` so that each layer evaluates it in its own
arithmetic: ``verify.symbolic`` passes the exact orthonormal Gram (Kronecker delta),
``verify.solver`` passes z3 real variables bounded by |<x, y>| <= eps, and
``verify.numeric`` passes inner products of sampled torch vectors.

Vectors are named by pairs ``(kind, index)``: ``("w_E", 3)`` is w_E(3), ``("r", -1)``
is r_{-1}, ``("Phi_1 w_E", 3)`` is Phi_1 w_E(3); :func:`show` prints them in the
paper's notation.  The index may be a sympy Symbol, which is how the symbolic layer
proves statements for a symbolic vocabulary size V.  Tokens are 1-indexed as in the
paper.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Callable

from verify.faults import seam

ORIENTATIONS = ("as-written", "transposed", "read-score")
"""The variants of the orientation question (ws24 Eq. 13 / Eq. 14):

* ``as-written``: the matrix as the equation prints it, the score as the proof displays it;
* ``transposed``: the matrix transposed, the displayed score kept (repairs the display);
* ``read-score``: the matrix as printed, the score read the model's way, query^T W_K key
  (the convention of the base model: in the public bietti23 code the layer-1 and layer-2
  scores are x_t . (W_K x_s) with W_Q the identity).
"""


CONVENTIONS = ("query-key", "key-query")
"""What the score w^T W_K v of a key matrix means (``--convention``): ``query-key``, the model scores key s for
query t as query^T W_K key (the base model's public code, bietti23 ihead_basic_model.py, Attention.forward:
x_t . (W_K x_s)); ``key-query``, as key^T W_K query, the order ws24's displays r_{-1}^T W^1_K w_E(v) and
(Phi_1 w_E(z_s))^T W^2_K w_E(z_T) write.  The model's own score under ``key-query`` is the ``query-key`` score of
W_K^T (:attr:`PrevTokenConstruction.W_model`)."""


def model_score_text(convention: str, layer: int = 1) -> str:
    """The model's own score in the paper's notation under a convention (layer 1: Eq. 13; layer 2: Eq. 14)."""
    if layer == 1:
        return "w_E(v)^T W^1_K r_{-1}" if convention == "query-key" else "r_{-1}^T W^1_K w_E(v)"
    return ("w_E(z_T)^T W^2_K Phi_1 w_E(z_s)" if convention == "query-key"
            else "(Phi_1 w_E(z_s))^T W^2_K w_E(z_T)")


def reading_text(orientation: str, convention: str, layer: int = 1) -> str:
    """The variant's reading of the association: the display as printed, or (``read-score``) the model's score."""
    if orientation == "read-score":
        return model_score_text(convention, layer)
    return "r_{-1}^T W^1_K w_E(v)" if layer == 1 else "(Phi_1 w_E(z_s))^T W^2_K w_E(z_T)"


def check_convention(convention: str) -> None:
    if convention not in CONVENTIONS:
        raise ValueError(f"convention must be one of {CONVENTIONS}, got {convention!r}")


def matrix_orientation(orientation: str) -> str:
    """The orientation of the matrix itself: ``read-score`` keeps the printed matrix."""
    return "transposed" if orientation == "transposed" else "as-written"


Vec = tuple  # (kind: str, index)


def alternating_ramp(V: int) -> tuple[Fraction, ...]:
    """The index-probe coefficients c(k) = (-1)^(k+1) k, k = 1..V: (1, -2, 3, -4, ...).

    Uniform coefficients hide index bugs: with c constant, reading row k as row k' (a wrong
    offset, an off-by-one, a swapped query and key token) changes no number.  These are
    distinct and nonzero, so every such confusion changes an exact value; at V = 3 any two
    of them differ by more than half the largest (|c(i) - c(j)| >= 2 > 3/2), so the
    confusion also leaves a solver allowance of REL_TOL * max|c| = 3/2.

    Raises:
        ValueError: V < 1.
    """
    if V < 1:
        raise ValueError(f"V must be >= 1, got {V}")
    return tuple(Fraction((-1) ** (k + 1) * k) for k in range(1, V + 1))


def wE(k: Any) -> Vec:
    """The input embedding w_E(k) (token k, 1-indexed)."""
    return ("w_E", k)


def phi_wE(k: Any) -> Vec:
    """The layer-1 value-path image Phi_1 w_E(k)."""
    return ("Phi_1 w_E", k)


R_PREV: Vec = ("r", -1)


def show(x: Vec) -> str:
    """The paper's notation for a named vector: ``w_E(3)``, ``r_{-1}``, ``Phi_1 w_E(3)``."""
    kind, idx = x
    if kind == "r":
        return f"r_{{{idx}}}"
    return f"{kind}({idx})"


def legendre_ramp(V: int) -> tuple[Fraction, ...]:
    """Index-probe coefficients for noisy layers: c(k) = L(k) (V + k - 1) / V, k = 1..V.

    L(k) is the Legendre symbol (k | p) for the smallest prime p > V with p = 3 (mod 4), a
    sign sequence with small autocorrelation at every lag; the magnitudes (1 to 2 - 1/V) are
    distinct.  So the coefficients read through any shift or other relabelling of the
    tokens correlate weakly with the true ones (their regression coefficient on c is far
    from 1), which a sampled layer can see through its noise, where the alternating ramp's
    lag-2 shift would not be seen.

    Raises:
        ValueError: V < 1.
    """
    if V < 1:
        raise ValueError(f"V must be >= 1, got {V}")
    p = V + 1
    while p % 4 != 3 or any(p % q == 0 for q in range(2, int(p ** 0.5) + 1)):
        p += 1
    return tuple(Fraction(1 if pow(k, (p - 1) // 2, p) == 1 else -1) * Fraction(V + k - 1, V)
                 for k in range(1, V + 1))


def _ramp(V: int, pattern: str) -> tuple[Fraction, ...]:
    if pattern == "alternating":
        return alternating_ramp(V)
    if pattern == "legendre":
        return legendre_ramp(V)
    raise ValueError(f"pattern must be 'alternating' or 'legendre', got {pattern!r}")


@dataclass(frozen=True)
class OuterSum:
    """A matrix W = sum_k coef_k * left_k right_k^T, kept as named terms.

    Attributes:
        terms: tuple of (coef, left_name, right_name); coef is a Fraction (exact).
        label: the paper's display of the matrix (for printed statements).
    """

    terms: tuple[tuple[Fraction, Vec, Vec], ...]
    label: str

    def transposed(self) -> "OuterSum":
        """W^T = sum_k coef_k * right_k left_k^T."""
        return OuterSum(tuple((c, r, l) for c, l, r in self.terms), self.label + "^T")


def bilinear(u: Vec, W: OuterSum, v: Vec, gram: Callable[[Vec, Vec], Any]) -> Any:
    """u^T W v = sum_k c(k) <u, a_k> <b_k, v>  (Eq. ** above), in gram's arithmetic.

    Args:
        u, v: vector names.
        W: the outer-product sum.
        gram: inner product of two named vectors, in the caller's arithmetic
            (sympy, z3 ArithRef, Fraction, float or torch scalar).

    Returns:
        The score, in the caller's arithmetic.
    """
    total: Any = 0
    for c, left, right in W.terms:
        total = total + _coef(c, gram) * gram(u, left) * gram(right, v)
    return total


def _coef(c: Fraction, gram: Callable[[Vec, Vec], Any]) -> Any:
    conv = getattr(gram, "coef", None)
    return conv(c) if conv is not None else c


# ----------------------------------------------------------------------------- ws24


@dataclass(frozen=True)
class PrevTokenConstruction:
    """ws24 Theorem 2 / Eq. 13: the learned first-layer key matrix under RPE.

    As written:  W^1_K = sum_{k in Q} chi(k) w_E(k) r_{-1}^T        (Eq. 13)
    Transposed:  W^1_K = sum_{k in Q} chi(k) r_{-1} w_E(k)^T
    Displayed score (as written, transposed):  r_{-1}^T W^1_K w_E(v)
    Read-score:  Eq. 13 kept, the display read as w_E(v)^T W^1_K r_{-1}
    Model's own score (query^T W_K key, query w_E(z_t), key part r_{s-t}):
        w_E(v)^T W^1_K r_{-1}

    Attributes:
        V: vocabulary size |Q| (tokens 1..V, every token a trigger as in the
           uniform Appendix C.2 data).
        chi: chi(k) for k = 1..V, exact rationals (the uniform data give a constant
           chi; normalised to 1 by default).
        orientation: one of ``ORIENTATIONS``.

    Raises:
        ValueError: V < 1, chi of the wrong length, unknown orientation.
    """

    V: int
    chi: tuple[Fraction, ...]
    orientation: str = "as-written"
    convention: str = "query-key"

    def __post_init__(self) -> None:
        if self.V < 1:
            raise ValueError(f"V must be >= 1, got {self.V}")
        if len(self.chi) != self.V:
            raise ValueError(f"chi must have V = {self.V} entries, got {len(self.chi)}")
        if self.orientation not in ORIENTATIONS:
            raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {self.orientation!r}")
        check_convention(self.convention)

    @classmethod
    def uniform(cls, V: int, orientation: str = "as-written", chi: Fraction = Fraction(1),
                convention: str = "query-key") -> "PrevTokenConstruction":
        """chi(k) = chi for every k (the symmetric Appendix C.2 data)."""
        return cls(V=V, chi=tuple(Fraction(chi) for _ in range(V)), orientation=orientation, convention=convention)

    @classmethod
    def index_probe(cls, V: int, orientation: str = "as-written", pattern: str = "alternating",
                    convention: str = "query-key") -> "PrevTokenConstruction":
        """Eq. 13 with distinct coefficients: chi(k) = (-1)^(k+1) k (:func:`alternating_ramp`,
        the exact layers) or, with ``pattern="legendre"``, :func:`legendre_ramp` (sampled layers).

        Not the uniform data's chi (whose constancy gives the statement's 'equal for every v'):
        the layers use it to check the per-token identity 'association = chi(v)', which Eq. 13
        gives for any chi, in a configuration where a wrong row changes the number compared.
        """
        return cls(V=V, chi=_ramp(V, pattern), orientation=orientation, convention=convention)

    @staticmethod
    @seam("ws24.PrevTokenConstruction.term")
    def term(k: Any, coef: Any, orientation: str) -> tuple[Any, Vec, Vec]:
        """The k-th term of W^1_K: chi(k) w_E(k) r_{-1}^T (as written) or its transpose.

        ``k`` may be a sympy Symbol (the symbolic layer sums the term over k = 1..V).
        ``read-score`` keeps the printed matrix (only the reading of the score changes).
        """
        return (coef, wE(k), R_PREV) if matrix_orientation(orientation) == "as-written" else (coef, R_PREV, wE(k))

    @property
    def W(self) -> OuterSum:
        return OuterSum(
            tuple(self.term(k, self.chi[k - 1], self.orientation) for k in range(1, self.V + 1)),
            "W^1_K",
        )

    @property
    def W_model(self) -> OuterSum:
        """The matrix M with which the model scores query^T M key: W under ``query-key``, W^T under
        ``key-query`` (key^T W query = query^T W^T key)."""
        return self.W if self.convention == "query-key" else self.W.transposed()

    def family(self) -> list[Vec]:
        """The near-orthonormal family the construction lives in."""
        return [wE(k) for k in range(1, self.V + 1)] + [R_PREV]

    def displayed_score(self, v: int, gram: Callable[[Vec, Vec], Any]) -> Any:
        """The variant's reading of the previous-token association.

        ``as-written`` and ``transposed``: r_{-1}^T W^1_K w_E(v), the score Theorem 2
        displays; ``read-score``: the display read the model's way, the model's own score (w_E(v)^T W^1_K r_{-1}
        under ``query-key``; under ``key-query`` that is the display itself).
        """
        if self.orientation == "read-score":
            return self.model_score(v, gram)
        return bilinear(R_PREV, self.W, wE(v), gram)

    @seam("ws24.PrevTokenConstruction.model_score")
    def model_score(self, v: int, gram: Callable[[Vec, Vec], Any]) -> Any:
        """The model's own score at s = t-1 (the key-side part r_{s-t} of w_E(z_s) + r_{s-t}), whatever the
        variant: w_E(v)^T W^1_K r_{-1} under ``query-key``, r_{-1}^T W^1_K w_E(v) under ``key-query``."""
        return bilinear(wE(v), self.W_model, R_PREV, gram)

    @staticmethod
    @seam("ws24.PrevTokenConstruction.rel_offset")
    def rel_offset(t: Any, s: Any) -> Any:
        """The relative index of the RPE key vector r_{s-t} (query position t, key s)."""
        return s - t

    @seam("ws24.PrevTokenConstruction.layer1_score")
    def layer1_score(self, t: Any, s: Any, z_t: Any, z_s: Any, gram: Callable[[Vec, Vec], Any]) -> Any:
        """The model's layer-1 score w_E(z_t)^T W^1_K (w_E(z_s) + r_{s-t}) of key s for query t.

        ``t``, ``s`` may be sympy expressions (the symbolic layer passes a symbolic t and
        s = t - 1, so the score is built as a function of the position).
        """
        return (bilinear(wE(z_t), self.W_model, wE(z_s), gram)
                + bilinear(wE(z_t), self.W_model, ("r", self.rel_offset(t, s)), gram))

    def target(self, v: int) -> Fraction:
        """What the statement says the displayed score equals: chi(v)."""
        return self.chi[v - 1]


@dataclass(frozen=True)
class InductionKeyConstruction:
    """ws24 Eq. 14: the learned second-layer key matrix.

    As written:  W^2_K = sum_k psi(k) w_E(k) (Phi_1 w_E(k))^T        (Eq. 14)
    Transposed:  W^2_K = sum_k psi(k) (Phi_1 w_E(k)) w_E(k)^T
    Displayed score (kept in both):  (Phi_1 w_E(z_s))^T W^2_K w_E(z_T)
    Model's own score (query w_E(z_T), key Phi_1 w_E(z_s)):
        w_E(z_T)^T W^2_K Phi_1 w_E(z_s)
    Statement: the displayed score equals psi(z_T) [z_s = z_T].

    Attributes:
        V: vocabulary size.
        psi: psi(k), k = 1..V, exact rationals.
        orientation: one of ``ORIENTATIONS``.

    Raises:
        ValueError: V < 1, psi of the wrong length, unknown orientation.
    """

    V: int
    psi: tuple[Fraction, ...]
    orientation: str = "as-written"
    convention: str = "query-key"

    def __post_init__(self) -> None:
        if self.V < 1:
            raise ValueError(f"V must be >= 1, got {self.V}")
        if len(self.psi) != self.V:
            raise ValueError(f"psi must have V = {self.V} entries, got {len(self.psi)}")
        if self.orientation not in ORIENTATIONS:
            raise ValueError(f"orientation must be one of {ORIENTATIONS}, got {self.orientation!r}")
        check_convention(self.convention)

    @classmethod
    def uniform(cls, V: int, orientation: str = "as-written", psi: Fraction = Fraction(1),
                convention: str = "query-key") -> "InductionKeyConstruction":
        """psi(k) = psi for every k (the symmetric Appendix C.2 data)."""
        return cls(V=V, psi=tuple(Fraction(psi) for _ in range(V)), orientation=orientation, convention=convention)

    @classmethod
    def index_probe(cls, V: int, orientation: str = "as-written", pattern: str = "alternating",
                    convention: str = "query-key") -> "InductionKeyConstruction":
        """Eq. 14 with distinct coefficients psi(k) = (-1)^(k+1) k (:func:`alternating_ramp`;
        ``pattern="legendre"``: :func:`legendre_ramp`),
        so that a wrong row (a coefficient, a target or a vector looked up at the wrong index)
        changes a compared number."""
        return cls(V=V, psi=_ramp(V, pattern), orientation=orientation, convention=convention)

    @staticmethod
    def term(k: Any, coef: Any, orientation: str) -> tuple[Any, Vec, Vec]:
        """The k-th term of W^2_K: psi(k) w_E(k) (Phi_1 w_E(k))^T (as written, and ``read-score``)
        or its transpose."""
        return (coef, wE(k), phi_wE(k)) if matrix_orientation(orientation) == "as-written" else (coef, phi_wE(k), wE(k))

    @property
    def W(self) -> OuterSum:
        return OuterSum(
            tuple(self.term(k, self.psi[k - 1], self.orientation) for k in range(1, self.V + 1)),
            "W^2_K",
        )

    @property
    def W_model(self) -> OuterSum:
        """W under ``query-key``, W^T under ``key-query`` (see :attr:`PrevTokenConstruction.W_model`)."""
        return self.W if self.convention == "query-key" else self.W.transposed()

    def family(self) -> list[Vec]:
        return [wE(k) for k in range(1, self.V + 1)] + [phi_wE(k) for k in range(1, self.V + 1)]

    def displayed_score(self, s_tok: int, T_tok: int, gram: Callable[[Vec, Vec], Any]) -> Any:
        """The variant's reading: (Phi_1 w_E(z_s))^T W^2_K w_E(z_T) (as written, transposed) or
        the model's own score (``read-score``: the display read the model's way), with z_s = s_tok, z_T = T_tok."""
        if self.orientation == "read-score":
            return self.model_score(s_tok, T_tok, gram)
        return bilinear(phi_wE(s_tok), self.W, wE(T_tok), gram)

    def model_score(self, s_tok: int, T_tok: int, gram: Callable[[Vec, Vec], Any]) -> Any:
        """The model's own score of key Phi_1 w_E(z_s) for query w_E(z_T): w_E(z_T)^T W^2_K Phi_1 w_E(z_s) under
        ``query-key``, (Phi_1 w_E(z_s))^T W^2_K w_E(z_T) under ``key-query``."""
        return bilinear(wE(T_tok), self.W_model, phi_wE(s_tok), gram)

    @seam("ws24.InductionKeyConstruction.target")
    def target(self, s_tok: int, T_tok: int) -> Fraction:
        """psi(z_T) [z_s = z_T]."""
        return self.psi[T_tok - 1] if s_tok == T_tok else Fraction(0)


# ----------------------------------------------------------------------------- ws24 Prop. 4


def prev_token_weight(t: Any, exp: Callable[[Any], Any]) -> Any:
    """ws24 Prop. 4: softmax weight on the previous token over t visible keys when the
    layer-1 score is 1 on the previous token and 0 on the other t - 1 keys.

    weight = exp(1) / (exp(1) + (t - 1) exp(0)); the paper states e / (t + e - 1).
    ``exp`` is the caller's exponential (sympy.exp, math.exp, torch.exp).
    """
    return exp(1) / (exp(1) + (t - 1) * exp(0))
