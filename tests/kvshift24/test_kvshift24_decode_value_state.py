"""kvshift24:decode: a decoder fault in the value state is seen once the decode runs with b2 = 1 (b2 = 0 hides it)."""

from __future__ import annotations

import pytest
import sympy as sp


def test_decode_value_state_seen_with_b2():
    """kvshift24 decode (KV-shift Eqs. 4-5, V^ = b1 V + b2 Shift(V)): with b2 = 1 the raw-key decode equals the
    full pass at every prefill (variant none: the query's own slot s = t enters, so slot k + 1's value is
    read at t = k + 1).  Fault: the value state after the prefill holding x_{k-1}
    instead of x_k -- invisible at Appendix B's b2 = 0, seen here at the first decoded token k + 1."""
    from verify.constructions import kvshift24_pe as kp

    pe = kp.PE("none", alibi=False)
    co = kp.Coefs(b2=1)
    L = 6

    def mismatches():
        full = kp.full_forward(L, "none", pe, sp.Integer(2), co)
        return [kp.first_mismatch(full, kp.decode(L, "none", pe, kp.Decode(k), sp.Integer(2), co))
                for k in range(1, L)]

    assert mismatches() == [None] * (L - 1)
    real = kp._raw_state
    monkey = pytest.MonkeyPatch()
    with monkey.context() as mp:
        mp.setattr(kp, "_raw_state", lambda k, pe_: (real(k, pe_)[0], ((1, k - 1),)))
        assert mismatches() == [k + 1 for k in range(1, L)]
        # at b2 = 0 (the default) the same fault changes nothing: why the b2 = 1 case is needed
        assert all(kp.first_mismatch(kp.full_forward(L, "none", pe, sp.Integer(2)),
                                     kp.decode(L, "none", pe, kp.Decode(k), sp.Integer(2))) is None
                   for k in range(1, L))
