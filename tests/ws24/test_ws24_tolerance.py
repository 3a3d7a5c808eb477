"""ws24's numeric tolerance tau: it matches the measured spread of the float32 readings, and a reading just outside
it fails."""

from __future__ import annotations

import math
import statistics

import pytest


def _tau(d, V, scale):
    """tau as the evidence states it: 4 sqrt((V+3)/(d V)) max|chi| (written again here, not imported)."""
    return 4 * math.sqrt((V + 3) / (d * V)) * scale


def _shifted(delta_in_tau, d, V):
    from verify.constructions.bilinear import PrevTokenConstruction

    tau = _tau(d, V, 1.0)

    class Shifted(PrevTokenConstruction):
        """The reading replaced by chi(v) + delta: its mean sits exactly delta from the target."""

        def displayed_score(self, v, g):
            return float(self.chi[v - 1]) + delta_in_tau * tau

    base = PrevTokenConstruction.uniform(V, "read-score")
    return Shifted(base.V, base.chi, base.orientation)


def test_ws24_tolerance_matches_measured_spread():
    """The derivation of tau checked against the spread it claims to bound: over 40 seeds the mean displayed
    score's standard deviation is 1.5-1.9 x sqrt((V+3)/(d V)) (measured 0.094 against 0.058 at d 512, V 4),
    so tau = 4 of those is 2.1-2.7 measured standard deviations: a tolerance 100x too loose (or too tight)
    would break the ratio."""
    from verify.constructions.bilinear import PrevTokenConstruction
    from verify.numeric import ws24

    V, d, T = 4, 512, 8
    con = PrevTokenConstruction.uniform(V, "read-score")
    means = []
    for seed in range(40):
        g = ws24.TorchGram(ws24.sample_frozen(d, V, T, seed))
        means.append(sum(con.displayed_score(v, g) for v in range(1, V + 1)) / V)
    sd = statistics.stdev(means)
    assert 1.2 <= sd / math.sqrt((V + 3) / (d * V)) <= 2.2, sd
    assert ws24.score_tolerance(d, V, 1.0) == pytest.approx(_tau(d, V, 1.0), rel=1e-12)
    assert 1.5 <= ws24.score_tolerance(d, V, 1.0) / sd <= 3.5


def test_ws24_reading_just_outside_tau_fails(monkeypatch):
    """ws24 Theorem 2 at scale: a reading 0.99 tau from chi holds, 1.01 tau (either side) fails.  Fault:
    tau = 400 sqrt(...) instead of 4 sqrt(...) changes no verdict of the default run; here 1.01 tau holds."""
    from verify.numeric import ws24

    d, V = 512, 4
    kw = dict(d=d, T=8, N=64, seed=0)
    assert ws24.check_theorem2(_shifted(0.99, d, V), **kw).outcome == "holds"
    assert ws24.check_theorem2(_shifted(-0.99, d, V), **kw).outcome == "holds"
    ev = ws24.check_theorem2(_shifted(1.01, d, V), **kw)
    assert ev.outcome == "fails" and ev.numbers["tolerance_tau"] == pytest.approx(_tau(d, V, 1.0), rel=1e-12)
    assert ws24.check_theorem2(_shifted(-1.01, d, V), **kw).outcome == "fails"
    monkeypatch.setattr(ws24, "score_tolerance", lambda d, V, scale: 400 * math.sqrt((V + 3) / (d * V)) * scale)
    assert ws24.check_theorem2(_shifted(1.01, d, V), **kw).outcome == "holds"   # the fault: no longer refused
