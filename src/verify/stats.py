"""The project's statistical vocabulary: each function a thin wrapper over one scipy.stats call, stating its
assumptions (paired or not, sided, level) and citing the call.

Nothing here is our own statistics: the tests hold each wrapper to the call it names, and a decision rule that a
claim states (ws24:falsifier's paired test, pr26:prop2's intervals, pr26:auc's rank correlation) reads these
functions only.  scipy.stats is imported on first use (its import costs 0.3-0.5 s, which ``verify list`` and
``verify show`` must not pay).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Sequence


def wilson_interval(hits: int, n: int, conf: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a binomial proportion ``hits / n`` at confidence ``conf`` (two-sided;
    ``scipy.stats.binomtest(hits, n).proportion_ci(conf, method="wilson")``); n = 0 gives (0, 1), no information.

    Raises:
        ValueError: hits outside 0..n, or conf outside (0, 1).
    """
    if n == 0:
        return (0.0, 1.0)
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=conf, method="wilson")
    return (max(0.0, float(ci.low)), min(1.0, float(ci.high)))


def wilson_exclusion_power(n: int, p_true: float, p_alt: float, conf: float) -> float:
    """The probability that the Wilson interval (:func:`wilson_interval`, level ``conf``) of ``Binomial(n, p_true)``
    hits excludes ``p_alt``: exact, the binomial tails (``scipy.stats.binom.cdf`` / ``sf``) beyond the hit counts whose
    interval ends on the far side of ``p_alt`` (found by bisection: the interval's ends increase with the hits)."""
    from scipy.stats import binom

    if n <= 0:
        return 0.0

    def first(pred: Callable[[int], bool]) -> int:  # the smallest h in 0..n+1 with pred(h), pred monotone
        lo, hi = 0, n + 1
        while lo < hi:
            mid = (lo + hi) // 2
            if pred(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    below = first(lambda h: h > n or wilson_interval(h, n, conf)[1] >= p_alt) - 1  # largest h with high < p_alt
    above = first(lambda h: h > n or wilson_interval(h, n, conf)[0] > p_alt)      # smallest h with low > p_alt
    power = float(binom.cdf(below, n, p_true)) if below >= 0 else 0.0
    return power + (float(binom.sf(above - 1, n, p_true)) if above <= n else 0.0)


def events_for_power(p_true: float, p_alt: float, conf: float, power: float) -> int:
    """The events n at which a two-sided level-``conf`` interval of a binomial proportion excludes ``p_alt`` with
    probability ``power`` when the rate is ``p_true``: the one-sample binomial sample size of the normal approximation,
    ``((z_{(1+conf)/2} sqrt(p0 q0) + z_power sqrt(p1 q1)) / |p1 - p0|)^2`` (``scipy.stats.norm.ppf``), rounded up;
    :func:`wilson_exclusion_power` gives the exact power at any n.

    Raises:
        ValueError: p_true == p_alt (no n separates them), or a probability outside (0, 1).
    """
    from scipy.stats import norm

    if not (0 < p_true < 1 and 0 < p_alt < 1 and 0 < conf < 1 and 0 < power < 1):
        raise ValueError(f"probabilities must be in (0, 1): {p_true}, {p_alt}, {conf}, {power}")
    if p_true == p_alt:
        raise ValueError("p_true == p_alt: no number of events separates them")
    za, zb = float(norm.ppf((1 + conf) / 2)), float(norm.ppf(power))
    n = ((za * math.sqrt(p_true * (1 - p_true)) + zb * math.sqrt(p_alt * (1 - p_alt))) / abs(p_alt - p_true)) ** 2
    return math.ceil(n)


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rank correlation of paired samples, ties at their average rank (``scipy.stats.spearmanr``);
    None when there are fewer than 3 pairs or either side is constant (no correlation is defined).

    Raises:
        ValueError: x and y differ in length.
    """
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} and {len(y)}")
    if len(x) < 3 or len(set(x)) == 1 or len(set(y)) == 1:
        return None
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic)


def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (``scipy.stats.t.ppf``)."""
    from scipy.stats import t

    return float(t.ppf(p, df))


def paired_t_less(late: Sequence[float], early: Sequence[float]) -> tuple[float, float]:
    """The one-sided paired t-test of H0 "mean(late - early) >= 0" against H1 "late is below early"
    (``scipy.stats.ttest_rel(late, early, alternative="less")``): (t, p).  Assumes the per-pair differences are
    independent and roughly normal; with zero spread, t is -inf, 0 or +inf by the sign of the mean difference.

    Raises:
        ValueError: fewer than 2 pairs, or samples of different lengths.
    """
    if len(late) != len(early):
        raise ValueError(f"late and early differ in length: {len(late)} and {len(early)}")
    if len(late) < 2:
        raise ValueError("a paired test needs at least 2 pairs")
    d = [a - b for a, b in zip(late, early)]
    if max(d) == min(d):  # zero spread: scipy returns nan; the sign of the mean decides
        mean = d[0]
        return (-math.inf if mean < 0 else math.inf if mean > 0 else 0.0), (0.0 if mean < 0 else 1.0)
    from scipy.stats import ttest_rel

    res = ttest_rel(late, early, alternative="less")
    return float(res.statistic), float(res.pvalue)


def paired_t_less_power(n: int, sd: float, delta: float, alpha: float) -> float:
    """Power of :func:`paired_t_less` with ``n`` pairs at level ``alpha`` against a true drop ``delta`` > 0 (mean
    difference -delta) when the differences have standard deviation ``sd``: P(T' <= t_{alpha, n-1}) for the
    noncentral t with n - 1 degrees of freedom and noncentrality -delta sqrt(n) / sd (``scipy.stats.nct.cdf``).
    0 below 2 pairs; 1 when sd = 0 (every difference is the mean)."""
    if n < 2:
        return 0.0
    if sd == 0:
        return 1.0
    from scipy.stats import nct

    return float(nct.cdf(t_quantile(alpha, n - 1), n - 1, -delta * math.sqrt(n) / sd))


def fewest_pairs_for_power(sd: float, power: float, delta: float, alpha: float, cap: int = 4096) -> int | None:
    """The fewest pairs n (2 <= n <= ``cap``) whose :func:`paired_t_less` reaches ``power`` against ``delta``: the
    power rises with n, so a bisection on the first n that reaches it is exact (None: not within ``cap``)."""
    if paired_t_less_power(cap, sd, delta, alpha) < power:
        return None
    lo, hi = 2, cap  # the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi) // 2
        if paired_t_less_power(mid, sd, delta, alpha) >= power:
            hi = mid
        else:
            lo = mid + 1
    return lo


def margin_t_tests(x: Sequence[float], margin: float) -> dict[str, float]:
    """The two one-sided one-sample t-tests of a mean against ``-margin`` (a non-inferiority margin): ``p_below`` of H1
    "mean < -margin" (``scipy.stats.ttest_1samp(x, -margin, alternative="less")``) and ``p_within`` of H1 "mean >
    -margin" (``alternative="greater"``), with the mean and the standard deviation.  Assumes independent, roughly
    normal values; with zero spread the sign of ``mean + margin`` decides (p 0 or 1).

    Raises:
        ValueError: fewer than 2 values.
    """
    if len(x) < 2:
        raise ValueError("a t-test needs at least 2 values")
    mean = sum(x) / len(x)
    sd = math.sqrt(sum((v - mean) ** 2 for v in x) / (len(x) - 1))
    if max(x) == min(x):
        gap = mean + margin
        return {"mean": mean, "sd": 0.0, "p_below": 0.0 if gap < 0 else 1.0, "p_within": 0.0 if gap > 0 else 1.0}
    from scipy.stats import ttest_1samp

    below = ttest_1samp(x, -margin, alternative="less")
    within = ttest_1samp(x, -margin, alternative="greater")
    return {"mean": mean, "sd": sd, "t": float(below.statistic), "p_below": float(below.pvalue),
            "p_within": float(within.pvalue)}


def line_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """The least-squares line ys = slope xs + intercept (``scipy.stats.linregress``): (slope, intercept).

    Raises:
        ValueError: fewer than 2 points, or every x equal.
    """
    if len(xs) < 2 or len(set(xs)) == 1:
        raise ValueError("a line fit needs at least 2 distinct x")
    from scipy.stats import linregress

    fit = linregress(xs, ys)
    return float(fit.slope), float(fit.intercept)


def line_slope(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The slope of :func:`line_fit`."""
    return line_fit(xs, ys)[0]


def bootstrap_percentile(n_units: int, statistic: Callable[[Sequence[int]], float | None], seed: int,
                         n_resamples: int = 400, conf: float = 0.95) -> dict[str, Any]:
    """A percentile bootstrap interval of ``statistic`` over ``n_units`` independent units (runs, seeds), each
    resample drawing the units' indices with replacement (``scipy.stats.bootstrap(..., method="percentile")`` on
    the index vector, with ``numpy.random.default_rng(seed)``).  ``statistic(indices)`` may return None where it is
    undefined on a resample (a fit with nothing to fit); such resamples are counted (``undefined_fraction``) and the
    interval is the same percentiles of the defined ones.

    Returns:
        {"interval": [lo, hi] or None (no resample defined), "undefined_fraction": float}.
    Raises:
        ValueError: fewer than 2 units.
    """
    if n_units < 2:
        raise ValueError("a bootstrap needs at least 2 units")
    import warnings

    import numpy as np
    from scipy.stats import DegenerateDataWarning, bootstrap

    def stat(idx: Any) -> float:
        v = statistic([int(i) for i in idx])
        return math.nan if v is None else float(v)

    with warnings.catch_warnings():  # a resample where the statistic is undefined (nan) is counted below
        warnings.simplefilter("ignore", DegenerateDataWarning)
        res = bootstrap((np.arange(n_units),), stat, vectorized=False, n_resamples=n_resamples,
                        confidence_level=conf, method="percentile", rng=np.random.default_rng(seed))
    dist = np.asarray(res.bootstrap_distribution, dtype=float)
    defined = dist[np.isfinite(dist)]
    undefined = 1.0 - len(defined) / len(dist)
    if len(defined) == 0:
        return {"interval": None, "undefined_fraction": undefined}
    if undefined == 0.0:
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
    else:  # the same percentiles, over the resamples where the statistic is defined
        lo, hi = (float(x) for x in np.percentile(defined, [50 * (1 - conf), 50 * (1 + conf)]))
    return {"interval": [lo, hi], "undefined_fraction": undefined}


__all__ = ["margin_t_tests", "events_for_power", "wilson_exclusion_power", "bootstrap_percentile", "wilson_interval",
           "spearman", "t_quantile", "paired_t_less", "paired_t_less_power",
           "fewest_pairs_for_power", "line_slope"]
