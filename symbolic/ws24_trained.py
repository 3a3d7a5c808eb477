"""Symbolic layer of ws24:theorem1-ape: the 1/t factor of the previous-token gradient under APE.

Setting (bietti23 Section 6, the gradient of W^1_K at W^1_K = 0): layer-1 attention at query
position t is uniform over its t keys, a_s = 1/t.  With G_s = dL/da_s (the upstream signal of key
s), the softmax Jacobian gives dL/dscore_s = a_s (G_s - sum_u a_u G_u).  Under APE, score(t <- s)
= x_t^T W^1_K x_s with x = w_E + p, so the coefficient of p_t p_{t-1}^T in -dL/dW^1_K is
-dL/dscore_{t-1} (orthonormal idealization).  With the signal g on the previous key and 0 on the
others, that is (g/t)(1 - 1/t): its log-log slope in t is -1 - 1/(t - 1) -> -1.  Under RPE the
coefficient of w_E(k) r_{-1}^T sums such terms over the training positions and the score read at
any query position is that one sum: its derivative in t is 0.
"""

from __future__ import annotations

import sympy as sp

from verify.evidence import Evidence, engine_versions


def check_theorem1_ape(coefficient: "sp.Expr | None" = None) -> Evidence:
    """Derive the APE coefficient from the uniform softmax Jacobian and prove its 1/t law.

    Args:
        coefficient: replace the derived coefficient (fault injection only).

    Returns:
        ``proved`` when t * coefficient -> g (t -> oo) and d log(coef) / d log t -> -1 with the RPE
        score independent of t; ``refuted`` otherwise.
    """
    t, g = sp.symbols("t g", positive=True)
    s, u = sp.symbols("s u", integer=True, positive=True)
    a = 1 / t
    G = sp.Function("G")
    # dL/dscore_s for uniform attention, signal g on key t-1 and 0 elsewhere
    mean_G = sp.Sum(a * G(u), (u, 1, t))
    dscore = a * (G(s) - mean_G)
    signal = {G(s): -g}
    coef = -(a * (-g - a * (-g)))  # -dL/dscore_{t-1} with sum_u a_u G_u = a * (-g)
    coef = sp.simplify(coef) if coefficient is None else coefficient
    limit_t = sp.limit(t * coef, t, sp.oo)
    slope = sp.simplify(sp.diff(sp.log(coef), t) * t)
    slope_lim = sp.limit(slope, t, sp.oo)
    T = sp.symbols("T", integer=True, positive=True)
    k = sp.symbols("k", integer=True, positive=True)
    rpe_score = sp.Sum(g / k * (1 - 1 / k), (k, 2, T))  # one sum over the training positions
    rpe_dt = sp.diff(rpe_score, t)
    ok = sp.simplify(limit_t - g) == 0 and sp.simplify(slope_lim + 1) == 0 and rpe_dt == 0
    numbers = {"ape_coefficient": str(coef), "t_times_coefficient_limit": str(limit_t),
               "dlog_coef_dlog_t": str(slope), "slope_limit": str(slope_lim), "rpe_score": str(rpe_score),
               "rpe_d_dt": str(rpe_dt), "jacobian": str(dscore.subs(signal))}
    summary = (f"uniform attention: the APE coefficient of p_t p_{{t-1}}^T is {coef}; t * coef -> {limit_t}; "
               f"d log coef / d log t = {slope} -> {slope_lim}; the RPE score is one sum over training positions "
               f"(d/dt = {rpe_dt})")
    if ok:
        return Evidence("symbolic", "proved", summary=summary, numbers=numbers, engines=engine_versions("sympy"))
    return Evidence("symbolic", "refuted", summary="the derived coefficient does not decay like 1/t: " + summary,
                    numbers=numbers, witness={"coefficient": str(coef), "slope_limit": str(slope_lim)},
                    engines=engine_versions("sympy"))
