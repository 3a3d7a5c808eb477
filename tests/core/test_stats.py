"""verify.stats: each wrapper equals the scipy.stats call it names, and the values it gives match independent
textbook formulas (so a wrapper that passes the wrong argument, sidedness or level fails here)."""

from __future__ import annotations

import math

import pytest
from scipy import stats as ss

from verify import stats


def test_wilson_interval_is_scipys_and_the_textbook_formula():
    lo, hi = stats.wilson_interval(50, 100)
    z = 1.959963984540054
    p, n = 0.5, 100
    c, h = (p + z * z / (2 * n)) / (1 + z * z / n), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    assert (lo, hi) == pytest.approx((c - h, c + h), abs=1e-12)
    assert stats.wilson_interval(0, 0) == (0.0, 1.0) and stats.wilson_interval(0, 100)[0] == 0.0
    lo99, hi99 = stats.wilson_interval(50, 100, 0.99)
    assert lo99 < lo and hi99 > hi  # the level is passed through
    with pytest.raises(ValueError):
        stats.wilson_interval(5, 3)


def test_spearman_with_ties_and_degenerate_inputs():
    x, y = [1.0, 2.0, 2.0, 3.0, 5.0], [0.3, 0.1, 0.2, 0.2, 0.9]
    assert stats.spearman(x, y) == pytest.approx(ss.spearmanr(x, y).statistic, abs=1e-15)
    assert stats.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert stats.spearman([1.0, 1.0, 1.0], [0.1, 0.2, 0.3]) is None and stats.spearman([1, 2], [2, 1]) is None
    with pytest.raises(ValueError):
        stats.spearman([1, 2, 3], [1, 2])


def test_paired_t_less_is_one_sided_and_paired():
    late, early = [0.60, 0.55, 0.62, 0.58, 0.50], [0.70, 0.66, 0.61, 0.69, 0.62]
    t, p = stats.paired_t_less(late, early)
    d = [a - b for a, b in zip(late, early)]
    m = sum(d) / len(d)
    sd = math.sqrt(sum((x - m) ** 2 for x in d) / (len(d) - 1))
    assert t == pytest.approx(m / (sd / math.sqrt(len(d))), rel=1e-12)
    assert p == pytest.approx(ss.t.cdf(t, len(d) - 1), rel=1e-12)  # the lower tail: one-sided "less"
    assert stats.paired_t_less(early, late)[1] == pytest.approx(1 - p, rel=1e-9)  # the other side
    assert stats.paired_t_less([0.5, 0.5], [0.6, 0.6]) == (-math.inf, 0.0)  # zero spread: the sign decides
    assert stats.paired_t_less([0.6, 0.6], [0.6, 0.6]) == (0.0, 1.0)
    with pytest.raises(ValueError):
        stats.paired_t_less([0.5], [0.6])


def test_power_and_fewest_pairs_are_exact():
    assert stats.t_quantile(0.05, 9) == pytest.approx(-1.833113, abs=1e-6)
    assert stats.paired_t_less_power(10, 0.05, 0.05, 0.05) == pytest.approx(0.897517, abs=1e-6)
    assert stats.paired_t_less_power(1, 0.05, 0.05, 0.05) == 0.0 and stats.paired_t_less_power(5, 0.0, 0.05, 0.05) == 1.0
    for sd in (0.03, 0.1, 0.2):
        n = stats.fewest_pairs_for_power(sd, 0.8, 0.05, 0.05)
        first = next(k for k in range(2, 4097) if stats.paired_t_less_power(k, sd, 0.05, 0.05) >= 0.8)
        assert n == first  # the bisection finds what a scan finds
    assert stats.fewest_pairs_for_power(5.0, 0.8, 0.05, 0.05, cap=64) is None


def test_line_slope():
    assert stats.line_slope([0, 1, 2, 3], [1, 3, 5, 7]) == pytest.approx(2.0)
    with pytest.raises(ValueError):
        stats.line_slope([1, 1], [0, 1])


def test_bootstrap_percentile_is_scipys_and_counts_undefined_resamples():
    import numpy as np
    from scipy.stats import bootstrap

    vals = [0.1, 0.4, 0.35, 0.8, 0.2, 0.55]
    out = stats.bootstrap_percentile(len(vals), lambda idx: sum(vals[i] for i in idx) / len(idx), seed=3)
    ref = bootstrap((np.array(vals),), np.mean, n_resamples=400, method="percentile", rng=np.random.default_rng(3))
    assert out["undefined_fraction"] == 0.0
    assert out["interval"] == pytest.approx([ref.confidence_interval.low, ref.confidence_interval.high], rel=1e-12)
    assert out == stats.bootstrap_percentile(len(vals), lambda idx: sum(vals[i] for i in idx) / len(idx), seed=3)
    # undefined where unit 0 is drawn: counted, and the interval is over the rest
    part = stats.bootstrap_percentile(len(vals), lambda idx: None if 0 in idx else max(vals[i] for i in idx), seed=3)
    assert 0.5 < part["undefined_fraction"] < 0.8 and part["interval"][1] <= 0.8
    assert stats.bootstrap_percentile(3, lambda idx: None, seed=0) == {"interval": None, "undefined_fraction": 1.0}
