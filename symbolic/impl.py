"""The impl claims' symbolic layer: the ALiBi slope schedules, exact (sympy).

Checks for a head count n: that the geometric form of Press et al.'s power-of-two rule (start 2^(-8/n), ratio
2^(-8/n), as fairseq's get_slopes_power_of_2 computes it) equals the closed form 2^(-8i/n); that the rule for other
n is the closest-power-of-two interleaving; and whether the convention the library's code follows (MPT's or Press
et al.'s, :mod:`verify.constructions.impl_alibi`) gives Press et al.'s schedule at n, with the largest difference.
"""

from __future__ import annotations

import math

import sympy as sp

from verify.constructions.impl_alibi import mpt_slopes, press_slopes, slopes
from verify.evidence import Evidence, Layer, Outcome, Status, engine_versions


def check_schedule(n: int, convention: str) -> Evidence:
    """Exact: the library convention's slopes for n heads against Press et al.'s schedule."""
    c = 2 ** int(math.floor(math.log2(n)))
    start = sp.Integer(2) ** (-sp.Integer(2) ** (-(sp.log(c, 2) - 3)))
    geometric = [sp.simplify(start ** i) for i in range(1, c + 1)]
    closed = press_slopes(c)
    geo_ok = all(sp.simplify(a - b) == 0 for a, b in zip(geometric, closed))
    ref = press_slopes(n)
    lib = slopes(convention, n)
    diffs = [sp.nsimplify(a - b) for a, b in zip(lib, ref)]
    nonzero = [(i + 1, d) for i, d in enumerate(diffs) if sp.simplify(d) != 0]
    mpt_gap = max((abs(float(sp.N(a - b, 30))) for a, b in zip(mpt_slopes(n), ref)), default=0.0)
    numbers = {"heads": n, "convention": convention, "closest_power_of_two": c,
               "press": [str(e) for e in ref], "library": [str(e) for e in lib],
               "geometric_form_equals_closed_form": geo_ok, "max_abs_press_minus_mpt": mpt_gap}
    eng = engine_versions("sympy")
    if not geo_ok:
        return Evidence(Layer.SYMBOLIC, Status.REFUTED, Outcome.FAILS, numbers=numbers, engines=eng,
                        summary=f"the geometric power-of-two rule differs from 2^(-8i/{c})")
    if nonzero:
        i, d = max(nonzero, key=lambda x: abs(float(sp.N(x[1], 30))))
        return Evidence(Layer.SYMBOLIC, Status.REFUTED, Outcome.FAILS, numbers=numbers, engines=eng,
                        witness={"heads": n, "head": i, "library": str(lib[i - 1]), "press": str(ref[i - 1]),
                                 "difference": float(sp.N(d, 30))},
                        summary=(f"{n} heads, {convention} convention: head {i} gets {lib[i - 1]} where Press et al.'s "
                                 f"schedule gives {ref[i - 1]} (difference {float(sp.N(d, 30)):.4g}, exact); "
                                 f"{len(nonzero)} of {n} heads differ"))
    return Evidence(Layer.SYMBOLIC, Status.PROVED, Outcome.HOLDS, numbers=numbers, engines=eng,
                    summary=(f"{n} heads, {convention} convention: every slope equals Press et al.'s schedule exactly "
                             f"(power-of-two rule 2^(-8i/{c}) = the geometric form" + (
                                 f"; the other {n - c} heads from the {2 * c}-head rule's odd powers" if c != n else "")
                             + f"); Press vs MPT at {n} heads: max difference {mpt_gap:.4g}"))
