"""fp26's exact algebra: a symmetric static M is directional under RoPE, never under absolute positions.

Source: fp26 = Li Hengyu, "Fingerprint, Not Blueprint: How Positional Schemes Set the Default Spectral
Algebra of Attention", arXiv 2607.06621 v1 (abstract; the paper's text, paper/qk_spectral.tex of the
authors' bundle github HengyuLi-Ozaki-lab/qk-spectral-fingerprint).  Sec. "Mechanism" defines, per RoPE
frequency theta_t, the rank-1 complex sub-operator M_t = w_q^t conj(w_k^t)^T, the static operator
M = W_q^T W_k = sum_t Re(M_t), and the identity (its unnumbered display)

    score(Delta) - score(-Delta) = sum_t 2 sin(Delta theta_t) n^T Im(M_t) n ;

Sec. "Is the rotational channel necessary?" states that symmetrising the static M does not zero
Im(M_t), so "a RoPE head with a fully symmetric static M still routes directionally via the phase
channel, impossible under absolute positions" (also the abstract).

Conventions (ours, stated): a head's query/key rows are W_q, W_k (d_k x d); RoPE pairs rows
(2t, 2t+1) into frequency t (the interleaved pairing; the paper's models use rotate-half, which is the
same algebra after a fixed permutation of rows); w^t = row_{2t} + i row_{2t+1}; a query at position
i and a key at position j score (R(i theta) W_q x_i) . (R(j theta) W_k x_j), so Delta = j - i (key
minus query; a previous-token head peaks at Delta = -1).  "Directional" means the pair score is
asymmetric: score(query i, key j) != score(query j, key i) for some contents and positions.  Under
absolute positions x_i = e_i + p_i enters a single bilinear form x_i^T M x_j.

Everything here is exact (sympy, symbolic entries); nothing is sampled.
"""

from __future__ import annotations

from fractions import Fraction
from math import comb
from typing import Any, Sequence

import sympy as sp


def rot(phi: sp.Expr) -> sp.Matrix:
    """The 2 x 2 rotation by phi (RoPE's rotation of one frequency pair)."""
    return sp.Matrix([[sp.cos(phi), -sp.sin(phi)], [sp.sin(phi), sp.cos(phi)]])


def rope_block(pos: sp.Expr, thetas: Sequence[sp.Expr], phase: bool = True) -> sp.Matrix:
    """Block-diagonal RoPE rotation of a d_k = 2 len(thetas) head at position ``pos``.

    ``phase=False`` is the fault "RoPE phase dropped": every rotation angle set to 0 (the identity)."""
    blocks = [rot(pos * th) if phase else sp.eye(2) for th in thetas]
    return sp.diag(*blocks)


def rope_score(WQ: sp.Matrix, WK: sp.Matrix, x_q: sp.Matrix, x_k: sp.Matrix, i: sp.Expr, j: sp.Expr,
               thetas: Sequence[sp.Expr], phase: bool = True) -> sp.Expr:
    """(R(i theta) W_q x_q) . (R(j theta) W_k x_k): the RoPE score of a query at i on a key at j."""
    q = rope_block(i, thetas, phase) * WQ * x_q
    k = rope_block(j, thetas, phase) * WK * x_k
    return (q.T * k)[0, 0]


def absolute_score(M: sp.Matrix, x_i: sp.Matrix, x_j: sp.Matrix) -> sp.Expr:
    """x_i^T M x_j (absolute positions: x = e + p enters the one bilinear form)."""
    return (x_i.T * M * x_j)[0, 0]


def complex_operators(WQ: sp.Matrix, WK: sp.Matrix) -> list[sp.Matrix]:
    """M_t = w_q^t conj(w_k^t)^T with w^t = row_{2t} + i row_{2t+1} (fp26, Sec. Mechanism)."""
    out = []
    for t in range(WQ.rows // 2):
        wq = WQ.row(2 * t) + sp.I * WQ.row(2 * t + 1)
        wk = WK.row(2 * t) - sp.I * WK.row(2 * t + 1)
        out.append(wq.T * wk)
    return out


def re_im(Mt: sp.Matrix) -> tuple[sp.Matrix, sp.Matrix]:
    """Real and imaginary parts of a complex matrix with real symbols (exact)."""
    return Mt.applyfunc(lambda z: sp.expand(sp.re(z))), Mt.applyfunc(lambda z: sp.expand(sp.im(z)))


def _zero(expr: sp.Expr) -> bool:
    """Exact zero test: the expression rewritten in exponentials and expanded is 0."""
    return sp.simplify(sp.expand(sp.expand(expr).rewrite(sp.exp))) == 0


def _symbolic_head(name: str, rows: int, cols: int) -> sp.Matrix:
    return sp.Matrix(rows, cols, lambda r, c: sp.Symbol(f"{name}{r}{c}", real=True))


def check_identities(d: int = 2, dk: int = 4) -> dict[str, bool]:
    """Exact identities with fully symbolic W_q, W_k (d_k x d), content n, positions i, j and
    frequencies theta_t:

    * ``static_is_sum_re``: W_q^T W_k = sum_t Re(M_t);
    * ``rope_relative``: the RoPE score of same-content tokens depends on j - i only;
    * ``phase_identity``: score(Delta) - score(-Delta) = sum_t 2 sin(Delta theta_t) n^T Im(M_t) n
      (Delta = j - i), fp26's display in Sec. Mechanism;
    * ``absolute_pair_symmetric``: for a symmetric M (symbolic entries) x_i^T M x_j = x_j^T M x_i for
      all contents and absolute positions;
    * ``absolute_asymmetry_is_MA``: for a general M the pair asymmetry is 2 x_i^T M_A x_j, M_A the
      antisymmetric part (so symmetry of M is exactly what removes it).
    """
    WQ, WK = _symbolic_head("q", dk, d), _symbolic_head("k", dk, d)
    n = sp.Matrix([sp.Symbol(f"n{r}", real=True) for r in range(d)])
    i, j = sp.symbols("i j", real=True)
    thetas = [sp.Symbol(f"theta{t}", positive=True) for t in range(dk // 2)]
    Ms = complex_operators(WQ, WK)
    parts = [re_im(Mt) for Mt in Ms]
    static = sp.zeros(d, d)
    for re_, _ in parts:
        static += re_
    out: dict[str, bool] = {"static_is_sum_re": (WQ.T * WK - static).expand() == sp.zeros(d, d)}
    s_ij = rope_score(WQ, WK, n, n, i, j, thetas)
    s_0d = rope_score(WQ, WK, n, n, sp.Integer(0), j - i, thetas)
    out["rope_relative"] = _zero(s_ij - s_0d)
    D = sp.Symbol("Delta", real=True)
    lhs = rope_score(WQ, WK, n, n, 0, D, thetas) - rope_score(WQ, WK, n, n, 0, -D, thetas)
    rhs = sum((2 * sp.sin(D * th) * (n.T * im_ * n)[0, 0] for th, (_, im_) in zip(thetas, parts)), sp.Integer(0))
    out["phase_identity"] = _zero(lhs - rhs)
    a = [sp.Symbol(f"m{r}{c}", real=True) for r in range(d) for c in range(r, d)]
    it = iter(a)
    Msym = sp.zeros(d, d)
    for r in range(d):
        for c in range(r, d):
            Msym[r, c] = Msym[c, r] = next(it)
    e_i, p_i, e_j, p_j = (sp.Matrix([sp.Symbol(f"{nm}{r}", real=True) for r in range(d)]) for nm in ("ei", "pi", "ej", "pj"))
    x_i, x_j = e_i + p_i, e_j + p_j
    out["absolute_pair_symmetric"] = sp.expand(absolute_score(Msym, x_i, x_j) - absolute_score(Msym, x_j, x_i)) == 0
    Mgen = _symbolic_head("g", d, d)
    MA = (Mgen - Mgen.T) / 2
    out["absolute_asymmetry_is_MA"] = sp.expand(absolute_score(Mgen, x_i, x_j) - absolute_score(Mgen, x_j, x_i)
                                                - 2 * absolute_score(MA, x_i, x_j)) == 0
    return out


#: the exact witness: one frequency pair, W_q = I, W_k = diag(1, 2) (static M = diag(1, 2), symmetric), n = (1, 1)
WITNESS_WQ = ((1, 0), (0, 1))
WITNESS_WK = ((1, 0), (0, 2))
WITNESS_N = (1, 1)


def symmetric_m_witness(WQ: Sequence[Sequence[int]] = WITNESS_WQ, WK: Sequence[Sequence[int]] = WITNESS_WK,
                        n: Sequence[int] = WITNESS_N, phase: bool = True) -> dict[str, Any]:
    """A RoPE head with a fully symmetric static M that routes directionally, evaluated exactly.

    Returns the static M, whether it is symmetric, Im(M_t), the exact pair asymmetry
    score(query i, key i-1) - score(query i-1, key i) as a function of theta (positions i symbolic),
    whether it is nonzero for every theta in (0, pi) (proved by its closed form c sin(theta), c != 0),
    and the same pair asymmetry of the same M under absolute positions (symbolic contents and
    positions; 0 when M is symmetric).  ``phase=False`` is the fault "RoPE phase dropped"."""
    Q, K, nv = sp.Matrix(WQ), sp.Matrix(WK), sp.Matrix(n)
    M = Q.T * K
    th = sp.Symbol("theta", positive=True)
    i = sp.Symbol("i", real=True)
    prev = rope_score(Q, K, nv, nv, i, i - 1, [th], phase)      # query at i, key at i - 1
    nxt = rope_score(Q, K, nv, nv, i - 1, i, [th], phase)       # query at i - 1, key at i
    asym = sp.simplify(sp.expand_trig(sp.expand(sp.trigsimp(prev - nxt))))
    coeff = sp.simplify(asym / sp.sin(th))
    free_of = coeff.free_symbols == set()
    nonzero = bool(free_of and coeff != 0)
    ims = [re_im(Mt)[1] for Mt in complex_operators(Q, K)]
    d = M.rows
    x_i = sp.Matrix([sp.Symbol(f"x{r}", real=True) for r in range(d)])
    x_j = sp.Matrix([sp.Symbol(f"y{r}", real=True) for r in range(d)])
    abs_asym = sp.expand(absolute_score(M, x_i, x_j) - absolute_score(M, x_j, x_i))
    return {"M": M.tolist(), "M_symmetric": M == M.T, "Im_M_t": [m.tolist() for m in ims],
            "rope_pair_asymmetry": asym, "rope_directional_all_theta": nonzero,
            "rope_asymmetry_coefficient": coeff if free_of else None,
            "absolute_pair_asymmetry": abs_asym, "absolute_directional": abs_asym != 0}


def permutation_p(n_models: int = 7, n_rope: int = 3) -> Fraction:
    """The smallest p of an exact one-sided model-level permutation test with ``n_rope`` of
    ``n_models`` models in one group: 1 / C(n_models, n_rope) (fp26, Sec. "The architecture-conditional
    signature": p = 1/C(7,3) = 0.029, "the minimum attainable with seven models")."""
    return Fraction(1, comb(n_models, n_rope))


def in_rounding_interval(value: Fraction, printed: str) -> bool:
    """True when ``value`` rounds to ``printed`` (a decimal, "0.029", "1.78e-4", "30%"): inside the interval its
    digits round from, ends included (:func:`verify.evidence.rounding_interval`, exact rationals)."""
    from verify.evidence import rounding_interval

    _, lo, hi = rounding_interval(printed)
    return lo <= value <= hi


__all__ = ["rot", "rope_block", "rope_score", "absolute_score", "complex_operators", "re_im", "check_identities",
           "symmetric_m_witness", "permutation_p", "in_rounding_interval", "WITNESS_WQ", "WITNESS_WK", "WITNESS_N"]
