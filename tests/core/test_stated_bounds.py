"""Every bound a bounded solver check states is derived from the lengths it actually solved.

Each test runs a check, then injects the fault 'the loop stops one length short' (the list of lengths the check
iterates over loses its last entry) and asserts the stated bound, the summary and ``numbers`` follow the lengths
checked, and the layer is no longer 'proved' up to the asked bound.  Checks: kvshift24 Theorem 2 (arXiv 2411.19574
v2, Sec. 2.2 Theorem 2: KVSA[mask+scale] = IH for every L), kvshift24:decode (the same paper's Appendix F inference
branch against the full pass), pr26 Prop. 1 (affine features cannot realize prev for any n) and pr26 Theorem 2 (copy
and reverse under condition (ii) at every length pair and peak).
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from verify.constructions import kvshift24 as kc
from verify.constructions import pe
from verify.constructions.kvshift24_pe import PE, Decode
from verify.solver import kvshift24 as kv_sol
from verify.solver import kvshift24_decode as dec_sol
from verify.solver import pr26 as pr_sol

M, S = Fraction(1, 2), Fraction(2)


def test_decided_through_and_span():
    assert kv_sol.decided_through(3, [3, 4, 5]) == 5 and kv_sol.decided_through(3, [3, 5]) == 3
    assert kv_sol.decided_through(3, [4, 5]) == 2 and kv_sol.decided_through(1, []) == 0
    assert kv_sol.span([3, 4, 5, 7]) == "3..5, 7" and kv_sol.span([]) == "none" and kv_sol.span(range(3, 4)) == "3"


def test_kvshift24_theorem2_bound_follows_the_lengths_solved(monkeypatch):
    ev = kv_sol.check_theorem2(kc.variant("mask+scale"), M, S, Lmax=5)
    assert ev.status == "proved", ev.summary
    assert ev.bound.startswith("every L in 3..5,") and ev.summary.startswith("UNSAT for every L <= 5:")
    assert ev.numbers["lengths_checked"] == "3..5" and len(ev.numbers["equality_answers"]) == 3

    monkeypatch.setattr(kv_sol, "equality_lengths", lambda Lmax: list(range(3, Lmax)))  # the loop one short
    ev = kv_sol.check_theorem2(kc.variant("mask+scale"), M, S, Lmax=5)
    assert ev.status == "inconclusive", ev.summary
    assert ev.bound.startswith("every L in 3..4,") and "L = 5 not checked (L <= 5 asked)" in ev.bound
    assert ev.summary == "UNSAT for every L <= 4 only: L = 5 not checked (L <= 5 asked)"
    assert ev.numbers["lengths_checked"] == "3..4" and "L <= 5" not in ev.summary.split(" only")[0]

    monkeypatch.setattr(kv_sol, "equality_lengths", lambda Lmax: [3, 5])  # a gap: only 3..3 is covered
    ev = kv_sol.check_theorem2(kc.variant("mask+scale"), M, S, Lmax=5)
    assert ev.status == "inconclusive" and ev.bound.startswith("every L in 3,") and "L = 4 not checked" in ev.bound


def _decode(Lmax: int):
    return dec_sol.check_decode(("A", "B", "C", "B"), kc.variant("none"), M, S, PE(rope="after-shift"), Decode(2), Lmax)


def test_decode_bound_follows_the_prefills_solved(monkeypatch):
    ev = _decode(4)
    assert ev.status == "proved", ev.summary
    assert ev.bound.startswith("every L <= 4, every prefill 1..L-1,") and ev.summary.startswith("UNSAT for every prefill k < 4:")
    assert ev.numbers["prefills_checked"] == 3

    monkeypatch.setattr(dec_sol, "prefill_lengths", lambda Lmax: list(range(1, Lmax - 1)))  # the loop one short
    ev = _decode(4)
    assert ev.status == "inconclusive", ev.summary
    assert ev.bound.startswith("every L <= 3, every prefill 1..L-1,") and "prefills k = 3 not checked (L <= 4 asked)" in ev.bound
    assert ev.summary == "UNSAT for every prefill k < 3 only: prefills k = 3 not checked (L <= 4 asked)"
    assert ev.numbers["prefills_checked"] == 2


def test_pr26_prop1_bound_follows_the_lengths_decided(monkeypatch):
    ev = pr_sol.check_prop1(pe.FAMILIES["affine"], 6)
    assert ev.status == "proved", ev.summary
    assert ev.bound.startswith("n = 3..6 ") and ev.summary.startswith("UNSAT for every n = 3..6:")
    assert ev.numbers["n_reached"] == 6

    monkeypatch.setattr(pr_sol, "prop1_lengths", lambda N: list(range(3, N)))  # the loop one short
    ev = pr_sol.check_prop1(pe.FAMILIES["affine"], 6)
    assert ev.status == "inconclusive" and ev.summary == "n = 6 not checked (N = 6 asked)", ev.summary
    assert ev.bound.startswith("n = 3..5 ") and ev.numbers["n_reached"] == 5

    monkeypatch.setattr(pr_sol, "prop1_lengths", lambda N: [3, 4, 6])  # a gap: only 3..4 is covered
    ev = pr_sol.check_prop1(pe.FAMILIES["affine"], 6)
    assert ev.status == "inconclusive" and ev.summary == "n = 5 not checked (N = 6 asked)", ev.summary
    assert ev.bound.startswith("n = 3..4 ") and ev.numbers["n_reached"] == 4


def test_pr26_theorem2_names_only_the_pairs_solved_at_every_peak(monkeypatch):
    lengths = ((3, 6), (4, 8))
    ev = pr_sol.check_theorem2(lengths, K=2)
    assert ev.status == "proved", ev.summary
    assert ev.bound.startswith("(L0, L) in [(3, 6), (4, 8)];") and "not checked" not in ev.bound
    assert "both lengths of [(3, 6), (4, 8)];" in ev.summary and ev.numbers["lengths_checked"] == [[3, 6], [4, 8]]

    real = pr_sol.default_t2_obligations

    def one_peak_short(K, lengths):  # the peak loop of the last pair stops one short
        obs = real(K, lengths)
        L0, L = lengths[-1]
        return [o for o in obs if not (o.L0 == L0 and o.peak == L0 - 1 and o.expect == "unsat")]

    monkeypatch.setattr(pr_sol, "default_t2_obligations", one_peak_short)
    ev = pr_sol.check_theorem2(lengths, K=2)
    assert ev.status == "inconclusive", ev.summary
    assert ev.bound.startswith("(L0, L) in [(3, 6)];") and "(L0, L) = [(4, 8)] not checked" in ev.bound
    assert ev.numbers["lengths_checked"] == [[3, 6]] and "[(4, 8)] asked but not checked" in ev.summary


@pytest.mark.parametrize("Lmax", [3, 4])
def test_kvshift24_refuted_layer_keeps_its_witness_bound(Lmax):
    """The as-written layer is refuted at L = 3 whatever Lmax: the bound names the structure's first SAT length."""
    ev = kv_sol.check_theorem2(kc.variant("none"), M, S, Lmax=Lmax)
    assert ev.status == "refuted" and "structure differs from L = 3" in ev.bound and ev.numbers["lengths_checked"] == "3"
