"""pr26's min-norm selection (the margin-1 minimum-norm head): the duality gap is re-derived exactly, and an
unconverged, forged or float-only certificate is refused."""

from __future__ import annotations

import sys

import pytest
import torch

import verify.numeric.pr26 as num
from verify import faults
from verify.constructions.pe import get_family, get_task


def test_min_norm_gap_is_rederived_exactly():
    """pr26's min-norm selection (the margin-1 minimum-norm head): the reported gap is the exact one."""
    fr = num.fit_min_norm(get_family("rope"), get_task("prev"), 20)
    gap = fr.settings["relative_duality_gap"]
    assert 0 <= gap <= 1e-6
    # the returned head is the rescaled primal point: margin 1 on every row at L0 (up to float rounding)
    C = num.constraint_matrix(get_family("rope"), get_task("prev"), 20)
    assert float((C @ fr.param.reshape(-1)).min()) == pytest.approx(1.0, abs=1e-9)
    assert fr.settings["frobenius_norm"] == pytest.approx(2.0513, abs=1e-3)


def test_exact_gap_refuses_an_unconverged_or_forged_certificate():
    C = num.constraint_matrix(get_family("rope"), get_task("prev"), 20)
    fr = num.fit_min_norm(get_family("rope"), get_task("prev"), 20)
    theta = fr.param.reshape(-1)
    # a dual point far from optimal: the exact gap is large (not certified), and never negative
    lam = torch.full((C.shape[0],), 1e-3, dtype=torch.float64)
    gap, upper, dual = num.exact_duality_gap(C, lam, theta)
    assert gap > 0.5 and upper > dual
    # a negative multiplier, or a primal point that is not strictly feasible, is refused
    with pytest.raises(num.DualityGapError, match="negative dual"):
        num.exact_duality_gap(C, -lam, theta)
    with pytest.raises(num.DualityGapError, match="not strictly feasible"):
        num.exact_duality_gap(C, lam, -theta)


def test_min_norm_wrong_primal_bound_refused():
    """Fault: U = ||theta||^2 / (2 s) instead of / (2 s^2).  Unchecked it stops after 50 iterations with a
    gap of -0.119 (norm 2.17 instead of 2.05); a negative gap is an error."""
    with faults.inject("numeric.pr26._primal_upper", lambda sq, s: sq / (2 * s)):
        with pytest.raises(num.DualityGapError, match=r"gap -1\.18\de-01 < 0 after 50 iterations"):
            num.fit_min_norm(get_family("rope"), get_task("prev"), 20)


def test_min_norm_float_gap_not_trusted(monkeypatch):
    """Fault: a float primal bound that claims a gap inside the tolerance while the true gap is not (U forged
    to D (1 + 5e-7), D read from the solver's frame).  The exact re-derivation does not confirm it, so the run
    never stops on it: not certified within 200 iterations (the honest run needs 250)."""
    real = num.exact_duality_gap
    exact_gaps = []

    def spy(C, lam, theta):
        out = real(C, lam, theta)
        exact_gaps.append(out[0])
        return out

    def forged_upper(sq, s):
        return sys._getframe(1).f_locals["dual"] * (1 + 5e-7)

    monkeypatch.setattr(num, "exact_duality_gap", spy)
    with faults.inject("numeric.pr26._primal_upper", forged_upper):
        with pytest.raises(num.MinNormError, match="not certified"):
            num.fit_min_norm(get_family("rope"), get_task("prev"), 20, max_iter=200)
        assert len(exact_gaps) == 4 and min(exact_gaps) > 1e-6   # each float "certificate" refused by the exact gap
        # without the exact net (it echoes the float claim) the forged certificate is accepted at iteration 50
        monkeypatch.setattr(num, "exact_duality_gap", lambda C, lam, theta: (0, None, None))
        assert num.fit_min_norm(get_family("rope"), get_task("prev"), 20, max_iter=200).settings["iterations"] == 50
