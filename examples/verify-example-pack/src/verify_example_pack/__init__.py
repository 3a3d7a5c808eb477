"""An example claim pack for ``verify`` (the guide: docs/adding-a-claim.md).

The claim, in the notation of softmax attention over ``t`` visible keys: with score ``g`` on the
previous token and ``0`` on the other ``t - 1`` keys, the attention weight on the previous token is

    w(g, t) = e^g / (e^g + t - 1),

and the previous token holds the majority of the attention (``w > 1/2``) exactly when
``g > log(t - 1)``.  The variant ``--threshold "log(t)"`` is the same statement with the threshold a
sloppy write-up might print; it is false (at ``g = log(t - 1/2)`` the weight is already above 1/2).

Each layer is a plain function ``(params, ctx) -> Evidence``; the :class:`Paper` at the bottom is
what the ``verify.papers`` entry point names.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Mapping

from verify.core.model import Claim, InputError, Paper, Params, param
from verify.evidence import Context, Evidence, engine_versions

#: the thresholds the statement may name (the variant option's choices)
THRESHOLDS = ("log(t-1)", "log(t)")


@dataclass(frozen=True)
class PrevWeightParams(Params):
    """The claim's options: the threshold (a variant) and the sizes of the bounded checks."""

    threshold: str = param("log(t-1)", "the majority threshold the statement names", choices=THRESHOLDS,
                           variant=True)
    tmax: int = param(16, "largest number of visible keys t of the solver and numeric checks", kind="int",
                      minimum=2, maximum=4096)


def _validate(p: Mapping[str, Any]) -> None:
    if p["tmax"] < 3:
        raise InputError(f"--tmax must be >= 3 (the threshold log(t - 1) needs t >= 2 other keys), got {p['tmax']}")


def _symbolic(p: Mapping[str, Any], ctx: Context) -> Evidence:
    """Exact: softmax of (g, 0, ..., 0) gives w; w > 1/2 <=> e^g > t - 1; compare with the threshold."""
    import sympy as sp

    g, t = sp.symbols("g t", real=True)
    w = sp.exp(g) / (sp.exp(g) + (t - 1))
    scores = [g] + [sp.Integer(0)] * 3  # t = 4 keys: the softmax itself, not the formula, at a concrete size
    soft = sp.exp(scores[0]) / sum(sp.exp(s) for s in scores)
    formula_ok = sp.simplify(soft - w.subs(t, 4)) == 0
    # w > 1/2  <=>  e^g > t - 1  <=>  g > log(t - 1); the claimed threshold must equal log(t - 1)
    claimed = sp.log(t - 1) if p["threshold"] == "log(t-1)" else sp.log(t)
    exact_threshold = sp.log(t - 1)
    gap = sp.simplify(claimed - exact_threshold)
    numbers = {"w": str(w), "softmax_matches_formula_at_t_4": bool(formula_ok), "threshold_gap": str(gap)}
    if not formula_ok:
        return Evidence(layer="symbolic", status="error", summary="softmax((g, 0, 0, 0))[0] != e^g/(e^g + 3)",
                        numbers=numbers, engines=engine_versions("sympy"))
    if gap == 0:
        return Evidence(layer="symbolic", status="proved", numbers=numbers, engines=engine_versions("sympy"),
                        summary="w(g, t) = e^g/(e^g + t - 1) and w > 1/2 <=> g > log(t - 1), exactly")
    return Evidence(layer="symbolic", status="refuted", numbers=numbers, engines=engine_versions("sympy"),
                    witness={"t": 3, "g": "log(5/2)", "w(g, t)": "5/9"},
                    summary=f"the threshold {p['threshold']} differs from log(t - 1) by {gap}; at t = 3, "
                            "g = log(5/2) < log(3): w = 5/9 > 1/2")


def _solver(p: Mapping[str, Any], ctx: Context) -> Evidence:
    """Bounded (t = 3..tmax): with E = e^g > 0 a free positive real, no E makes 'w > 1/2' and
    'g <= threshold' hold together (UNSAT), i.e. the threshold is sufficient and necessary."""
    import z3

    from verify.solver.common import check, solver_evidence

    results = []
    witness = None
    for t in range(3, p["tmax"] + 1):
        bound = Fraction(t - 1) if p["threshold"] == "log(t-1)" else Fraction(t)  # e^threshold

        def build(c: z3.Context, t: int = t, bound: Fraction = bound) -> list[z3.BoolRef]:
            E = z3.Real("E", c)  # E = e^g
            majority = 2 * E > E + (t - 1)  # w > 1/2 after clearing the positive denominator
            below = E <= z3.RealVal(f"{bound.numerator}/{bound.denominator}", c)  # g <= threshold
            return [E > 0, z3.Or(z3.And(majority, below), z3.And(z3.Not(majority), z3.Not(below)))]

        r = check(f"w > 1/2 xor g > threshold at t = {t}", build, ctx.timeout_ms)
        results.append(r)
        if r.answer == "sat" and witness is None:
            E = r.model["E"]
            if (2 * E > E + (t - 1)) != (E > bound):  # re-checked exactly in fractions.Fraction
                witness = {"t": t, "e^g": str(E), "w": str(E / (E + t - 1))}
            break
    refuted = (f"SAT at t = {witness['t']}: e^g = {witness['e^g']} gives w = {witness['w']} on the wrong side of "
               f"{p['threshold']} (re-checked exactly)", witness) if witness else None
    return solver_evidence(results, refuted=refuted, bound=f"t = 3..{p['tmax']}, every real g",
                           proved=f"UNSAT for every t = 3..{p['tmax']}: w > 1/2 exactly when g > {p['threshold']}",
                           engines=engine_versions("z3", "cvc5"),
                           problems=[] if witness or all(r.answer != "sat" for r in results)
                           else ["a SAT answer did not re-check exactly"])


def _numeric(p: Mapping[str, Any], ctx: Context) -> Evidence:
    """float64 softmax at t = 3..tmax, g on a grid around the threshold: majority on the right side."""
    import math

    import torch

    wrong = []
    for t in range(3, p["tmax"] + 1):
        thr = math.log(t - 1) if p["threshold"] == "log(t-1)" else math.log(t)
        for delta in (-0.05, 0.05):
            g = thr + delta
            scores = torch.zeros(t, dtype=torch.float64)
            scores[0] = g
            w = torch.softmax(scores, 0)[0].item()
            if (w > 0.5) != (delta > 0):
                wrong.append({"t": t, "g": round(g, 6), "w": round(w, 6)})
    numbers = {"checked_points": 2 * (p["tmax"] - 2), "wrong_side": len(wrong)}
    if wrong:
        return Evidence(layer="numeric", status="consistent", outcome="fails", numbers=numbers, witness=wrong[0],
                        tolerance="threshold +- 0.05 (far above float64 rounding)",
                        summary=f"{len(wrong)} points on the wrong side of {p['threshold']}, e.g. t = {wrong[0]['t']}")
    return Evidence(layer="numeric", status="consistent", outcome="holds", numbers=numbers,
                    tolerance="threshold +- 0.05 (far above float64 rounding)",
                    summary=f"softmax weight crosses 1/2 at {p['threshold']} for every t = 3..{p['tmax']}")


PREV_WEIGHT = Claim(
    id="example:prev-weight",
    title="previous-token softmax weight and its majority threshold",
    source="verify example pack (a worked example for claim authors)",
    statement="With score g on the previous token and 0 on the other t - 1 keys, w = e^g/(e^g + t - 1), and w > 1/2 "
              "exactly when g > the threshold (--threshold: log(t-1), the true one, or log(t), a sloppy write-up's).",
    quantifiers=("for every t >= 2 and every score g: w > 1/2 exactly when g > the threshold",
                 "symbolic: symbolic t and g; solver: t = 3..--tmax; numeric: sampled g"),
    options=(),
    params_type=PrevWeightParams,
    checks={"symbolic": _symbolic, "solver": _solver, "numeric": _numeric},
    variants=({"threshold": "log(t-1)"}, {"threshold": "log(t)"}),
    expected={"log(t-1)": "HOLDS", "log(t)": "FAILS"},
    validate=_validate,
    caveats=("The solver layer abstracts e^g as a free positive real E, which is exact here: g ranges over all reals, "
             "so E ranges over all positive reals.",),
    cost="symbolic < 1 s; solver < 1 s (t = 3..16 by default, --tmax); numeric < 0.1 s",
)

#: what the ``verify.papers`` entry point ``example`` names
PAPER = Paper(key="example", title="verify example pack: softmax attention facts", claims=(PREV_WEIGHT,))
