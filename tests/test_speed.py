"""The speed work changes how a result is computed, never the result: each faster path is held
bit for bit (or decision for decision) against the slower definition it replaces, and shown to
notice a fault.  The whole default run is pinned by tests/test_golden.py."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import verify.constructions.pe as pe


@given(st.lists(st.tuples(st.integers(0, 10**15), st.integers(0, 10**4)), min_size=1, max_size=40),
       st.integers(1, 41))
def test_rand_block_is_the_scalar_features_bit_for_bit(keys, r):
    block = pe.rand_block(keys, r)
    scalar = np.array([pe._rand_vec(seed, n, r) for seed, n in keys])
    assert block.shape == (len(keys), r) and block.tobytes() == scalar.tobytes()


def test_rand_block_self_check_catches_a_different_stream(monkeypatch):
    # a generator whose words came out in another order would give other numbers: the spot check refuses
    real = pe._rand_vec
    monkeypatch.setattr(pe, "_rand_vec", lambda seed, n, r: [float(np.nextafter(x, 2.0)) if i == 0 else x
                                                            for i, x in enumerate(real(seed, n, r))])  # one ulp
    pe._RAND_CACHE.clear()
    with pytest.raises(RuntimeError, match="differs from the scalar"):
        pe.rand_block([(1, 30), (2, 31)], 20)


def test_limit_at_zero_agrees_with_sympy_limit():
    from verify.symbolic.kvshift24 import R, _limit_at_zero

    cases = [(1 - R) / (1 - R**4), R**3 / (1 + R + R**2), (R**2 - R) / (R - R**3),  # removable 0/0 at r = 0
             sp.Integer(7) / 3, (2 + R) / (1 - R)]
    for f in cases:
        assert _limit_at_zero(f) == sp.limit(f, R, 0, "+"), f
    assert _limit_at_zero(1 / R) == sp.oo  # a pole: sympy's limit decides


def test_closed_form_decision_by_cancel_is_simplify_s():
    # the Theorem 1 layer-1 closed form: cancel(...) == 0 decides as simplify(...) == 0 did, both ways
    from verify.constructions.kvshift24 import t1_layer1_weights, t1_masks
    from verify.symbolic.kvshift24 import R

    for name in ("as-displayed", "causal"):
        masks = t1_masks(name)
        for s in range(2, 7):
            w = t1_layer1_weights(s, R, masks, sp.Integer(1))[s - 1]
            for closed in ((1 - R) / (1 - R ** (s - 1)), (1 - R) / (1 - R**s)):
                assert (sp.cancel(w - closed) == 0) == (sp.simplify(w - closed) == 0)


def test_no_claim_imports_torch_to_parse_or_refuse_options():
    """Planning `verify all` parses every variant in the parent process: no torch there (it cost
    1.5 s of every run when kvshift24:theorem2's size check imported the numeric layer)."""
    code = ("import sys\n"
            "from verify.proofs import registry\n"
            "from verify.proofs.cli import main\n"
            "for c in registry.all_claims():\n"
            "    for v in c.variants:\n"
            "        c.parse_params(dict(v))\n"
            "assert main(['kvshift24:theorem2', '--L', '1000', '--d', '100000']) == 2\n"
            "print(sorted(m for m in ('torch', 'sympy', 'z3') if m in sys.modules))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "[]", r.stdout
