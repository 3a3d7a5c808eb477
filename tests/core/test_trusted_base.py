"""Tests written against the mutants that survived the trusted base's suite (tools/mutation.py, docs/mutation.md):
each asserts a value a one-line change in the checker would move.  The mutant each test kills is named in its
docstring; equivalent mutants are listed with their reason in tests/mutation/equivalents.json."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
import z3

from verify.solver import certify
from verify.solver.certify import NonLinear, farkas_certificate, linearize
from verify.solver.recheck import check_certificate


class TestLinearize:
    """solver/certify.py's term reader: exact polynomials from z3 terms, NonLinear for anything else."""

    def test_division_by_a_constant_is_exact(self) -> None:
        """x / 4 - (y - 1) / 2 is x/4 - y/2 + 1/2 (kills x / den -> x + den, x ** den, and set(den) - {""} ->
        set(den) & {""}, which refuses a constant denominator)."""
        x, y = z3.Reals("x y")
        assert linearize(x / 4 - (y - 1) / 2) == {"x": F(1, 4), "y": F(-1, 2), "": F(1, 2)}

    @pytest.mark.parametrize("make", [lambda x, y: x / y, lambda x, y: x / (y + 2), lambda x, y: x / z3.RealVal(0)])
    def test_division_by_a_variable_or_zero_is_not_linear(self, make) -> None:
        """A denominator with a variable, or the zero constant, is refused as NonLinear (kills ``or`` -> ``and`` in
        the denominator test: x / (y + 2) would divide by the 2 and drop y; x / 0 would raise ZeroDivisionError)."""
        x, y = z3.Reals("x y")
        with pytest.raises(NonLinear, match="division by a variable or zero"):
            linearize(make(x, y))

    def test_integer_division_is_not_a_power(self) -> None:
        """n div 2 (Z3_OP_IDIV, numbered below Z3_OP_POWER) is unsupported, not read as n ** 2 (kills k == POWER ->
        k <= POWER)."""
        n = z3.Int("n")
        with pytest.raises(NonLinear, match="unsupported operator"):
            linearize(n / 2)

    def test_an_uninterpreted_function_is_not_a_power(self) -> None:
        """f(x) (Z3_OP_UNINTERPRETED, numbered above Z3_OP_POWER) is unsupported (kills k == POWER -> k >= POWER,
        which unpacks its one argument as base and exponent)."""
        f = z3.Function("f", z3.RealSort(), z3.RealSort())
        with pytest.raises(NonLinear, match="unsupported operator"):
            linearize(f(z3.Real("x")) + 1)


def _chain(n: int) -> list[z3.BoolRef]:
    """x_0 >= 1, x_{i+1} >= x_i + 1, x_{n-1} <= 0: infeasible only as a whole (every row is in the core), n rows."""
    xs = z3.Reals(" ".join(f"x{i}" for i in range(n - 1)))
    return [xs[0] >= 1, *(xs[i + 1] >= xs[i] + 1 for i in range(n - 2)), xs[-1] <= 0]


def test_a_large_system_is_certified_through_its_core() -> None:
    """A 60-row system (over the 40 rows where the multipliers are sought on an unsat core first): certified, and
    the certificate passes the solver-free re-check (kills core is None -> core is not None, which gave up on
    every large system)."""
    cert = farkas_certificate(_chain(60))
    assert cert["checked"] and check_certificate(cert)[0]
    assert len(cert["cases"][0]["multipliers"]) == 60


def test_the_certificate_memo_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The run's memo of checked certificates keeps at most _CERTIFIED_MAX entries, evicting the oldest (kills
    len > MAX -> len is MAX, which never evicts)."""
    monkeypatch.setattr(certify, "_CERTIFIED_MAX", 2)
    x = z3.Real("x")
    for k in range(4):
        assert farkas_certificate([x >= k + 1, x <= k])["checked"]
    table = certify._CERTIFIED.table()
    assert len(table) == 2


def test_a_wrong_core_falls_back_to_every_row() -> None:
    """A core that is not infeasible (row 0 alone) has no multipliers; the certificate is then sought on every row
    and found (kills sub is None -> sub is not None in _multipliers_on_core, which fails on a core without
    multipliers)."""
    cert = farkas_certificate(_chain(5), core=[0])
    assert cert["checked"] and check_certificate(cert)[0]


class TestCases:
    """solver/certify.py's cases_of: the obligation's conjunctions flattened, one case per disjunct."""

    def test_a_nested_conjunction_is_flattened(self) -> None:
        """And(x >= 1, And(y >= 1, x <= 0)) is three rows, in order (kills args + stack -> args - stack, * stack)."""
        x, y = z3.Reals("x y")
        (case,) = certify.cases_of([z3.And(x >= 1, z3.And(y >= 1, x <= 0))])
        assert case == [{"coeffs": {"x": "-1"}, "op": "<=", "rhs": "-1"},
                        {"coeffs": {"y": "-1"}, "op": "<=", "rhs": "-1"},
                        {"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}]

    def test_a_conjunctive_disjunct_joins_the_common_rows(self) -> None:
        """z >= 0 and (x >= 1 and y >= 1, or x <= -1): two cases, the common row first in each (kills base + rows ->
        base - rows, base & rows, base ** rows)."""
        x, y, z = z3.Reals("x y z")
        cases = certify.cases_of([z >= 0, z3.Or(z3.And(x >= 1, y >= 1), x <= -1)])
        assert [[r["coeffs"] for r in c] for c in cases] == [[{"z": "-1"}, {"x": "-1"}, {"y": "-1"}],
                                                              [{"z": "-1"}, {"x": "1"}]]


def test_rationals_are_written_as_smt_lib_reals() -> None:
    """The dual LP's numbers: an integer as 3.0, a fraction as (/ 3.0 4.0), a negative inside (- ...) (kills
    denominator == 1 -> == 0, which writes every integer as a quotient)."""
    assert certify._real(3) == "3.0" and certify._real("-3/4") == "(- (/ 3.0 4.0))" and certify._real(0) == "0.0"


def test_a_strict_infeasibility_is_certified() -> None:
    """x < 0 and x >= 0: infeasible only through the strict row, so its multipliers come from the 'strict' dual (a
    positive weight on a strict row, the combination's right side <= 0), not the 'negative' one (kills mode ==
    'negative' -> mode > 'negative', which asks the negative dual twice)."""
    x = z3.Real("x")
    cert = farkas_certificate([x < 0, x >= 0])
    assert cert["checked"] and check_certificate(cert)[0]


def test_product_rows_come_from_non_strict_bounds_only() -> None:
    """0 <= x < 1, 0 <= y <= 1 and x y >= 2: the McCormick product rows are built from the '<=' bounds (y <= 1 with
    -x <= 0 gives x y <= x < 1), never from the strict x < 1 (kills op == '<=' -> op <= '<=', which feeds the strict
    row to product_row, which refuses it)."""
    x, y = z3.Reals("x y")
    cert = farkas_certificate([x < 1, x >= 0, y <= 1, y >= 0, x * y >= 2])
    assert cert["checked"] and check_certificate(cert)[0]
    rows = cert["cases"][0]["rows"]
    assert all(rows[i]["op"] == "<=" for r in rows for i in r.get("product_of", []))


def test_a_solver_core_is_used_for_one_case_only() -> None:
    """A core from the solve names rows of the single case; with two cases it is ignored (kills len(cases) == 1 ->
    != 1, which applies a core index past a case's rows)."""
    x = z3.Real("x")
    cert = farkas_certificate([z3.Or(x >= 1, x >= 2), x <= 0], core=[5])
    assert cert["checked"] and len(cert["cases"]) == 2
