"""ALiBi slope schedules for any head count, exact (sympy), shared by the impl claims' symbolic and numeric layers.

Press, Smith and Lewis, "Train Short, Test Long: Attention with Linear Biases Enables Input Length Extrapolation",
ICLR 2022 (arXiv 2108.12409), Sec. 3: for n heads, n a power of two, the slopes are the geometric sequence
starting at 2^(-8/n) with that ratio, m_i = 2^(-8i/n), i = 1..n.  For other n the authors' code
(fairseq get_slopes) takes the n' = 2^floor(log2 n) slopes of n' heads, then every other slope of 2n' heads
(the odd-indexed powers 2^(-8(2j-1)/(2n'))), j = 1..n - n'.

MPT's code (mosaicml attention.py gen_slopes, copied by transformers' build_mpt_alibi_tensor) rounds n up to
n'' = 2^ceil(log2 n), takes m_i = 2^(-i * max_bias / n''), i = 1..n'', and for n'' != n keeps the odd-indexed
ones first, then the even-indexed ones, the first n of them.  With max_bias = 8 this is the same schedule by
another route (the 2n''-head rule's odd-indexed slopes are the n''/2-head rule's): the symbolic layer checks it
for the head count asked, exactly.
"""

from __future__ import annotations

import math

import sympy as sp

#: the conventions: Press et al. (fairseq; BLOOM's and Falcon's code follow it) and MPT's
CONVENTIONS = ("press", "mpt")


def _pow2_slopes(n: int, max_bias: int = 8) -> list[sp.Expr]:
    return [sp.Integer(2) ** sp.Rational(-max_bias * i, n) for i in range(1, n + 1)]


def press_slopes(n: int) -> list[sp.Expr]:
    """Press et al.'s schedule for n heads, exact."""
    if n < 1:
        raise ValueError(f"head count must be >= 1, got {n}")
    c = 2 ** int(math.floor(math.log2(n)))
    out = _pow2_slopes(c)
    if c != n:
        out += _pow2_slopes(2 * c)[0::2][:n - c]
    return out


def mpt_slopes(n: int, max_bias: int = 8) -> list[sp.Expr]:
    """MPT's schedule for n heads, exact."""
    if n < 1:
        raise ValueError(f"head count must be >= 1, got {n}")
    c = 2 ** int(math.ceil(math.log2(n)))
    s = _pow2_slopes(c, max_bias)
    if c != n:
        s = (s[1::2] + s[0::2])[:n]
    return s


def slopes(convention: str, n: int) -> list[sp.Expr]:
    return press_slopes(n) if convention == "press" else mpt_slopes(n)


def floats(exprs: list[sp.Expr]) -> list[float]:
    return [float(sp.N(e, 30)) for e in exprs]
