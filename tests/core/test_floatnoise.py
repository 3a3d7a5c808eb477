"""verify.floatnoise: the perturbed float path that tests/core/test_golden.py runs the default claims under."""

from __future__ import annotations

import pytest
import torch

from verify import floatnoise
from verify.frontends.cli import main


def test_inexact_results_move_by_a_few_units_exact_ones_do_not():
    g = torch.Generator().manual_seed(0)
    a, b = torch.randn(8, 16, generator=g, dtype=torch.float64), torch.randn(16, 8, generator=g, dtype=torch.float64)
    plain = a @ b
    with floatnoise.perturbed(1):
        moved = a @ b
        again = a @ b
        ints = torch.ones(4, 5, dtype=torch.float64) @ torch.full((5, 3), 2.0, dtype=torch.float64)
        halves = torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64).sum()
        copied = plain.clone()  # not a reduction, product or transcendental function: untouched
    rel = ((moved - plain).abs() / plain.abs()).max()
    assert 0 < float(rel) <= (floatnoise.UNITS + 1) * 2.0 ** -52  # at most UNITS units, and the sum's own rounding
    assert int((moved != plain).sum()) > 32  # most elements move
    assert torch.equal(moved, again)  # a function of the value, as a machine's rounding is
    assert torch.equal(ints, torch.full((4, 3), 10.0, dtype=torch.float64)) and float(halves) == 0.875
    assert torch.equal(copied, plain)
    with floatnoise.perturbed(2):
        other = a @ b
    assert not torch.equal(other, moved)  # another seed, another machine
    assert torch.equal(a @ b, plain)  # gone after the block


def test_float32_and_exp_are_perturbed_at_their_own_unit():
    x = torch.linspace(0.1, 3.0, 50, dtype=torch.float32)
    with floatnoise.perturbed(1):
        e = torch.exp(x)
        s = torch.softmax(x, 0)
    rel = ((e - torch.exp(x)).abs() / torch.exp(x)).max()
    assert 0 < float(rel) <= (floatnoise.UNITS + 1) * 2.0 ** -23
    assert not torch.equal(s, torch.softmax(x, 0))


def test_one_value_rounds_differently_in_a_vector_body_and_in_a_scalar_tail():
    """As float32 softmax does under AVX2 (a row of 8 keys is one vector, a row of 3 all tail): the same
    probabilities computed over rows of two lengths round differently, and the same row twice the same way.  Fault:
    dropping the tail flip (a nudge that is a function of the value alone) leaves the prefix and the full row's
    first three probabilities equal, and the impl claims' 8e-8 under AVX2 unseen by the perturbed golden run."""
    row = torch.tensor([0.3, -1.2, 0.7, -torch.inf, -torch.inf, -torch.inf, -torch.inf, -torch.inf], dtype=torch.float32)
    assert floatnoise._tail(torch.zeros(2, 8)).sum() == 0 and floatnoise._tail(torch.zeros(3)).all()
    assert floatnoise._tail(torch.zeros(11)).tolist() == [False] * 8 + [True] * 3
    with floatnoise.perturbed(1):
        full, prefix = torch.softmax(row, 0)[:3], torch.softmax(row[:3], 0)
        again = torch.softmax(row[:3], 0)
    assert not torch.equal(full, prefix) and torch.equal(prefix, again)


def test_the_environment_switch_and_its_refusal(monkeypatch, capsys):
    monkeypatch.delenv(floatnoise.ENV, raising=False)
    assert floatnoise.seed_from_environment() == 0
    monkeypatch.setenv(floatnoise.ENV, "3")
    assert floatnoise.seed_from_environment() == 3
    monkeypatch.setenv(floatnoise.ENV, "three")
    with pytest.raises(floatnoise.PerturbationSettingError):
        floatnoise.seed_from_environment()
    assert main(["list"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "VERIFY_FLOAT_PERTURBATION='three'" in err[0]
