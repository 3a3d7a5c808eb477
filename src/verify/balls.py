"""python-flint's arb balls as exact rationals: the one place an enclosure leaves ball arithmetic.

Every rigorous enclosure in the engine is an arb ball (pr26's interval re-checks and Prop. 3's maximiser proof,
kvshift24's exp and RoPE cos enclosures, custom feature maps); a consumer that needs rational bounds (a
certificate, a Fraction comparison, a printed figure's rounding interval) takes them here, exactly: a ball's
``lower()`` and ``upper()`` are exact dyadic numbers (outward-rounded at the working precision), and so is its
``mid()``.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any


def bits(digits: int) -> int:
    """arb's working precision (bits) for ``digits`` decimal digits, with 16 guard bits."""
    return int(digits * 3.33) + 16


def exact(x: Any) -> Fraction:
    """The value of an exact arb (radius 0: a ball's ``lower()``, ``upper()`` or ``mid()``), as a Fraction.

    Raises:
        ValueError: ``x`` is not exact (a ball of positive radius has no single value), or not finite.
    """
    if not x.is_exact() or not x.is_finite():
        raise ValueError(f"not an exact finite arb: {x}")
    man, exp = x.man_exp()
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def ends(ball: Any) -> tuple[Fraction, Fraction]:
    """Rational lo <= every point of ``ball`` <= hi: its outward-rounded ends, exactly."""
    return exact(ball.lower()), exact(ball.upper())


def mid(ball: Any) -> Fraction:
    """The ball's midpoint, exactly."""
    return exact(ball.mid())


__all__ = ["bits", "exact", "ends", "mid"]
