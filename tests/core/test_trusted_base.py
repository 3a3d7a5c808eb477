"""Tests written against the mutants that survived the trusted base's suite (tools/mutation.py, docs/mutation.md):
each asserts a value a one-line change in the checker would move.  The mutant each test kills is named in its
docstring; equivalent mutants are listed with their reason in tests/mutation/equivalents.json."""

from __future__ import annotations

import json
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


class TestLinearizeOperators:
    """Each arithmetic operator linearize reads, by value (kills the comparisons that route one operator into
    another's branch: UMINUS, MUL, POWER, DIV and TO_REAL read as <=, >=, != or 'is')."""

    def test_negation_and_conversion(self) -> None:
        x, n = z3.Real("x"), z3.Int("n")
        assert linearize(-x + 3) == {"x": F(-1), "": F(3)}
        assert linearize(z3.ToReal(n) / 2 + 1) == {"n": F(1, 2), "": F(1)}

    def test_powers(self) -> None:
        """x^2 is the monomial x*x (kills the loop over the exponent run zero times); x^0 is 1."""
        x = z3.Real("x")
        assert linearize(x ** 2) == {"x*x": F(1)}
        assert linearize(x ** 0 + x) == {"": F(1), "x": F(1)}

    @pytest.mark.parametrize("make", [lambda x, y: x ** z3.RealVal("1/2"), lambda x, y: x ** -1, lambda x, y: x ** y])
    def test_a_fractional_negative_or_variable_exponent_is_not_linear(self, make) -> None:
        """x^(1/2) and x^-1 are refused (kills 'or' -> 'and' between the denominator and sign tests, which would
        read x^(1/2) as x^0 = 1)."""
        x, y = z3.Reals("x y")
        with pytest.raises(NonLinear, match="non-constant or fractional power"):
            linearize(make(x, y))

    def test_degree_four_in_one_step_is_refused(self) -> None:
        """(x y)(z w) reaches degree 4 in one product (three '*' in the monomial), refused as well as degree 3 (kills
        count('*') >= 2 -> == 2)."""
        x, y, z, w = z3.Reals("x y z w")
        with pytest.raises(NonLinear, match="degree above 2"):
            linearize((x * y) * (z * w))

    def test_a_conditional_term_is_not_linear(self) -> None:
        """If(x > 0, x, y): its condition x > 0 (Z3_OP_GT, numbered below UMINUS and MUL) is no arithmetic term."""
        x, y = z3.Reals("x y")
        with pytest.raises(NonLinear, match="unsupported operator"):
            linearize(z3.If(x > 0, x, y))


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


def test_rows_without_a_constant_and_equalities() -> None:
    """x <= y has right side 0 (kills the default constant 0 -> 1); x == 1 is one '=' row, not a conjunction
    (kills k == AND -> k < AND: Z3_OP_EQ is numbered below it)."""
    x, y = z3.Reals("x y")
    assert certify.cases_of([x <= y]) == [[{"coeffs": {"x": "1", "y": "-1"}, "op": "<=", "rhs": "0"}]]
    assert certify.cases_of([x == 1]) == [[{"coeffs": {"x": "1"}, "op": "=", "rhs": "1"}]]


def test_two_strict_rows_alone() -> None:
    """y < 0 and y > 0: every row strict, the certificate is the 'strict' dual on both (kills op == '<' -> op is
    not '<', which leaves no strict row to weigh)."""
    y = z3.Real("y")
    cert = farkas_certificate([y < 0, y > 0])
    assert cert["checked"] and check_certificate(cert)[0]


def test_product_rows_skip_equalities() -> None:
    """x == 1, 0 <= x, y <= 1, 0 <= y, x y >= 2: the product rows come from the '<=' bounds only (kills op == '<='
    -> op >= '<=', which takes the equality x == 1 as a bound and product_row refuses it)."""
    x, y = z3.Reals("x y")
    cert = farkas_certificate([x == 1, x >= 0, x <= 1, y <= 1, y >= 0, x * y >= 2])
    assert cert["checked"] and check_certificate(cert)[0]


class TestCvc5:
    """solver/certify.py's cvc5 second opinion: the logic it picks, the wall-clock guard, a helper that dies."""

    def test_uninterpreted_functions_get_logic_all(self) -> None:
        """f(1) > 2 and f(1) < 1: unsat, read under logic ALL (kills the 'and' -> 'or' and the negation in the
        logic choice, which send a declared function to QF_NRA, where cvc5 refuses it)."""
        smt2 = "(declare-fun f (Real) Real)\n(assert (> (f 1.0) 2.0))\n(assert (< (f 1.0) 1.0))\n(check-sat)"
        assert certify.cvc5_opinion(smt2, 5000)[0] == "unsat"
        assert certify.cvc5_opinion("(declare-fun x () Real)\n(assert (> (* x x) (- 1.0)))\n(check-sat)", 5000)[0] == "sat"

    def test_the_wall_clock_limit_is_the_budget_plus_one_second(self) -> None:
        """A 200 ms budget waits 1.2 s: an answer after 0.5 s is kept, a hang is cut at 1.2 s and says so (kills
        the limit's arithmetic: 200 - 1000 + 1 gives up at once, 200 / 1000 ** 1 waits 0.2 s, + 2.0 waits 2.2 s)."""
        import time

        from verify import faults

        def slow(smt2, timeout_ms, seed):
            time.sleep(0.5)
            return "unsat", ""

        def hang(smt2, timeout_ms, seed):
            time.sleep(60)

        with faults.inject("solver.certify._cvc5_solve", slow):
            assert certify.cvc5_opinion("(check-sat)", 200) == ("unsat", "")
        with faults.inject("solver.certify._cvc5_solve", hang):
            assert certify.cvc5_opinion("(check-sat)", 200) == (
                "unknown", "wall-clock limit of 1.2 s exceeded (cvc5 stopped)")

    def test_a_helper_that_dies_is_an_unknown_answer(self) -> None:
        """The helper exits mid-obligation: the answer is unknown with the reason, and the next obligation gets a
        new helper (kills the EOFError handler replaced: the error would reach the caller)."""
        import os

        from verify import faults

        with faults.inject("solver.certify._cvc5_solve", lambda *a: os._exit(3)):
            assert certify.cvc5_opinion("(check-sat)", 2000) == ("unknown", "cvc5 exited without an answer")
        assert certify.cvc5_opinion("(declare-fun x () Real)\n(assert (> x 1.0))\n(check-sat)", 2000)[0] == "sat"


class TestRows:
    """solver/certify.py's atoms as rows: each relation, each negation flipped, the right side moved over."""

    @pytest.mark.parametrize("atom, row", [
        (lambda x, y: x + 1 <= 2 * y, ({"x": "1", "y": "-2"}, "<=", "-1")),
        (lambda x, y: x + 1 < 2 * y, ({"x": "1", "y": "-2"}, "<", "-1")),
        (lambda x, y: x + 1 >= 2 * y, ({"x": "-1", "y": "2"}, "<=", "1")),
        (lambda x, y: x + 1 > 2 * y, ({"x": "-1", "y": "2"}, "<", "1")),
        (lambda x, y: x + 1 == 2 * y, ({"x": "1", "y": "-2"}, "=", "-1")),
        (lambda x, y: z3.Not(x + 1 <= 2 * y), ({"x": "-1", "y": "2"}, "<", "1")),     # x + 1 > 2y
        (lambda x, y: z3.Not(x + 1 < 2 * y), ({"x": "-1", "y": "2"}, "<=", "1")),    # x + 1 >= 2y
        (lambda x, y: z3.Not(x + 1 >= 2 * y), ({"x": "1", "y": "-2"}, "<", "-1")),   # x + 1 < 2y
        (lambda x, y: z3.Not(x + 1 > 2 * y), ({"x": "1", "y": "-2"}, "<=", "-1"))])  # x + 1 <= 2y
    def test_each_relation_and_its_negation(self, atom, row) -> None:
        """A negated strict atom becomes the non-strict opposite and back (kills Z3_OP_NOT read as 'is', <= or
        another kind, and a flip table entry changed)."""
        x, y = z3.Reals("x y")
        coeffs, op, rhs = row
        assert certify.cases_of([atom(x, y)]) == [[{"coeffs": coeffs, "op": op, "rhs": rhs}]]

    @pytest.mark.parametrize("atom", [lambda x, y: z3.Not(x == y), lambda x, y: x != y,
                                      lambda x, y: z3.Not(z3.Not(x <= y)), lambda x, y: z3.Implies(x <= y, y <= x)])
    def test_other_atoms_are_refused(self, atom) -> None:
        x, y = z3.Reals("x y")
        with pytest.raises(NonLinear):
            certify.cases_of([atom(x, y)])

    def test_two_disjunctions_are_refused(self) -> None:
        x, y = z3.Reals("x y")
        with pytest.raises(NonLinear, match="more than one disjunction"):
            certify.cases_of([z3.Or(x <= 0, x >= 1), z3.Or(y <= 0, y >= 1)])


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


# ------------------------------------------------------------------ solver/recheck.py: the solver-free checker

from verify.solver import recheck as R  # noqa: E402


def _row(coeffs: dict, op: str, rhs: str) -> dict:
    return {"coeffs": coeffs, "op": op, "rhs": rhs}


class TestFrac:
    def test_the_grammar(self) -> None:
        assert (R.frac("3/4"), R.frac("-3"), R.frac(5), R.frac("0")) == (F(3, 4), F(-3), F(5), F(0))
        for bad in (True, 1.5, "1e3", "1.5", "3/-4", " 3", "", None, "0x10"):
            with pytest.raises(ValueError):
                R.frac(bad)
        with pytest.raises(ValueError, match="zero denominator"):
            R.frac("1/0")

    def test_the_size_caps_at_their_edges(self) -> None:
        """MAX_DIGITS digits per part pass and one more fails; the longest string allowed (sign, two full parts and
        the slash) parses; an int of MAX_DIGITS * 10 // 3 bits passes and one bit more fails."""
        n = R.MAX_DIGITS
        assert R.frac("9" * n) == 10 ** n - 1
        with pytest.raises(ValueError):
            R.frac("9" * (n + 1))
        longest = "-" + "9" * n + "/" + "9" * n
        assert len(longest) == 2 * n + 2 and R.frac(longest) == -1
        bits = n * 10 // 3
        assert R.frac(2 ** bits - 1) == 2 ** bits - 1
        with pytest.raises(ValueError, match="more than"):
            R.frac(2 ** bits)


def test_monomials_multiply_to_sorted_names() -> None:
    assert (R.mono_mul("y", "x"), R.mono_mul("x", "y"), R.mono_mul("", "x"), R.mono_mul("", "")) == (
        "x*y", "x*y", "x", "")
    assert R.mono_mul("b*c", "a") == "a*b*c"


class TestProductRow:
    def test_the_expansion(self) -> None:
        """x <= 2 and -y <= -1: (2 - x)(y - 1) >= 0 is -x - 2y + x y <= -2."""
        got = R.product_row(_row({"x": "1"}, "<=", "2"), _row({"y": "-1"}, "<=", "-1"))
        assert got == _row({"x": "-1", "x*y": "1", "y": "-2"}, "<=", "-2")

    def test_a_square_collects_its_terms(self) -> None:
        """x - y <= 1 twice: (1 - x + y)^2 >= 0 gives 2x - 2y - x^2 + 2xy - y^2 <= 1."""
        r = _row({"x": "1", "y": "-1"}, "<=", "1")
        assert R.product_row(r, r) == _row({"x": "2", "x*x": "-1", "x*y": "2", "y": "-2", "y*y": "-1"}, "<=", "1")

    @pytest.mark.parametrize("r", [_row({"x": "1"}, "<", "1"), _row({"x": "1"}, "=", "1"),
                                   _row({"x*y": "1"}, "<=", "1")])
    def test_only_linear_non_strict_factors(self, r: dict) -> None:
        with pytest.raises(ValueError, match="linear '<=' rows only"):
            R.product_row(r, _row({"z": "1"}, "<=", "1"))
        with pytest.raises(ValueError, match="linear '<=' rows only"):
            R.product_row(_row({"z": "1"}, "<=", "1"), r)

    def test_the_term_cap_at_its_edge(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(R, "MAX_PRODUCT_TERMS", 4)
        two, three = _row({"a": "1", "b": "1"}, "<=", "1"), _row({"c": "1", "d": "1", "e": "1"}, "<=", "1")
        assert R.product_row(two, two)["op"] == "<="
        with pytest.raises(ValueError, match="more than 4 terms"):
            R.product_row(two, three)


class TestExpand:
    BASE = [_row({"x": "1"}, "<=", "2"), _row({"y": "-1"}, "<=", "-1")]

    def test_a_true_product_row_is_kept(self) -> None:
        pr = {**R.product_row(*self.BASE), "product_of": [0, 1]}
        out, why = R._expand([*self.BASE, pr])
        assert out == [*self.BASE, pr] and why == ""

    def test_an_equivalent_spelling_is_accepted(self) -> None:
        """Coefficients written as other spellings of the same rationals, and an explicit zero, are the product."""
        pr = {"coeffs": {"x": "-2/2", "x*y": "1", "y": "-2", "z": "0"}, "op": "<=", "rhs": "-4/2", "product_of": [1, 0]}
        assert R._expand([*self.BASE, pr])[0] is not None

    @pytest.mark.parametrize("pair, why", [([0, 2], "two earlier base rows"), ([2, 0], "two earlier base rows"),
                                           ([-1, 0], "two earlier base rows"), ([0, 3], "two earlier base rows")])
    def test_a_product_must_name_earlier_base_rows(self, pair: list, why: str) -> None:
        pr = {**R.product_row(*self.BASE), "product_of": pair}
        out, msg = R._expand([*self.BASE, pr, {**pr, "product_of": [0, 1]}])
        assert out is None and why in msg and msg.startswith("row 2:")

    def test_a_product_of_a_product_is_refused(self) -> None:
        pr = {**R.product_row(*self.BASE), "product_of": [0, 1]}
        out, msg = R._expand([*self.BASE, pr, {**pr, "product_of": [0, 2]}])
        assert out is None and msg == "row 3: product_of must name two earlier base rows"

    @pytest.mark.parametrize("edit", [{"rhs": "-3"}, {"op": "<"}, {"coeffs": {"x": "-1", "x*y": "1", "y": "-1"}}])
    def test_a_false_product_row_is_refused(self, edit: dict) -> None:
        pr = {**R.product_row(*self.BASE), **edit, "product_of": [0, 1]}
        out, msg = R._expand([*self.BASE, pr])
        assert out is None and msg == "row 2: is not the product of rows 0 and 1"

    def test_a_product_of_a_strict_row_is_refused_with_the_reason(self) -> None:
        rows = [_row({"x": "1"}, "<", "2"), self.BASE[1]]
        out, msg = R._expand([*rows, {"coeffs": {}, "op": "<=", "rhs": "0", "product_of": [0, 1]}])
        assert out is None and msg == "row 2: products are formed from linear '<=' rows only"


class TestCheckFarkas:
    def test_a_negative_combination(self) -> None:
        """x >= 1 (-x <= -1) and x <= 0: 1 x row 0 + 1 x row 1 gives 0 <= -1."""
        rows = [_row({"x": "-1"}, "<=", "-1"), _row({"x": "1"}, "<=", "0")]
        assert R.check_farkas(rows, ["1", "1"]) == (True, "0 <= -1")
        assert R.check_farkas(rows, ["2", "2"]) == (True, "0 <= -2")

    def test_a_strict_combination(self) -> None:
        """x < 0 and -x <= 0: the sum is 0 < 0, valid only with a positive weight on the strict row."""
        rows = [_row({"x": "1"}, "<", "0"), _row({"x": "-1"}, "<=", "0")]
        assert R.check_farkas(rows, ["1", "1"]) == (True, "0 < 0")
        non_strict = [_row({"x": "1"}, "<=", "0"), rows[1]]
        assert R.check_farkas(non_strict, ["1", "1"]) == (
            False, "the combination gives 0 <= 0 (no strict row used): no contradiction")

    def test_no_contradiction_is_refused(self) -> None:
        rows = [_row({"x": "-1"}, "<=", "1"), _row({"x": "1"}, "<=", "0")]
        assert R.check_farkas(rows, ["1", "1"]) == (False, "the combination gives 0 <= 1: no contradiction")

    def test_a_leftover_variable_is_named(self) -> None:
        rows = [_row({"x": "-1", "b": "1"}, "<=", "-1"), _row({"x": "1", "a": "2"}, "<=", "0")]
        assert R.check_farkas(rows, ["1", "1"]) == (False, "the combination keeps variable a with coefficient 2")

    def test_signs_of_multipliers(self) -> None:
        """A negative weight is refused on an inequality and allowed on an equality."""
        rows = [_row({"x": "1"}, "=", "1"), _row({"x": "1"}, "<=", "0")]
        assert R.check_farkas(rows, ["-1", "1"]) == (True, "0 <= -1")
        assert R.check_farkas([rows[1], rows[0]], ["-1", "1"]) == (False, "row 0: negative multiplier -1 on an inequality")
        assert R.check_farkas([_row({"x": "1"}, "<", "1"), rows[0]], ["-1", "1"])[1].startswith("row 0: negative")

    def test_the_shape(self) -> None:
        rows = [_row({"x": "1"}, "<=", "0")]
        assert R.check_farkas(rows, ["1", "1"]) == (False, "1 rows but 2 multipliers")
        assert R.check_farkas([_row({"x": "1"}, ">=", "0")], ["1"]) == (False, "row 0: unknown relation '>='")

    def test_a_zero_weight_on_the_strict_row_is_no_strictness(self) -> None:
        rows = [_row({"x": "1"}, "<", "0"), _row({"x": "-1"}, "<=", "0"), _row({}, "<=", "0")]
        assert R.check_farkas(rows, ["0", "0", "1"])[0] is False


def test_certificates_and_their_cases() -> None:
    good = {"rows": [_row({"x": "-1"}, "<=", "-1"), _row({"x": "1"}, "<=", "0")], "multipliers": ["1", "1"]}
    bad = {**good, "multipliers": ["1", "2"]}
    assert R.check_certificate({"kind": "farkas", "cases": [good, good]}) == (
        True, "2 case(s), each a Farkas contradiction")
    assert R.check_certificate({"kind": "farkas", "cases": [good, bad]}) == (
        False, "case 1: the combination keeps variable x with coefficient 1")
    assert R.check_certificate({"kind": "farkas", "cases": []}) == (False, "no cases")
    assert R.check_certificate({"kind": "witness", "cases": [good]}) == (False, "unsupported certificate kind 'witness'")


def test_a_certificate_file_is_checked_against_its_own_hash(tmp_path) -> None:
    import json

    case = {"rows": [_row({"x": "-1"}, "<=", "-1"), _row({"x": "1"}, "<=", "0")], "multipliers": ["1", "1"]}
    doc = {"format": "verify-certificate/1", "answer": "unsat", "encoding_sha256": R.encoding_hash([case["rows"]]),
           "certificate": {"kind": "farkas", "cases": [case]}}
    p = tmp_path / "c.json"

    def check(d: object) -> tuple[bool, str]:
        return R.recheck_file(p, json.dumps(d).encode())

    assert check(doc) == (True, "1 case(s), each a Farkas contradiction")
    assert check({k: v for k, v in doc.items() if k not in ("format", "answer")})[0]  # both fields optional
    assert check({**doc, "format": "verify-certificate/2"}) == (False, "unknown certificate format 'verify-certificate/2'")
    assert check({**doc, "answer": "sat"}) == (False, "a certificate file must record an UNSAT answer, not 'sat'")
    assert check({**doc, "encoding_sha256": "0" * 64}) == (
        False, "the encoding does not match its recorded hash (edited constraints)")
    assert check([doc]) == (False, "a certificate file holds a JSON object, not list")
    assert check({**doc, "certificate": {"kind": "farkas"}})[1].startswith("malformed certificate: KeyError")
    assert R.recheck_file(p, b"\xff")[1].startswith("unreadable: UnicodeDecodeError")
    p.write_bytes(json.dumps(doc).encode())
    assert R.recheck_file(p) == (True, "1 case(s), each a Farkas contradiction")
    assert R.encoding_hash([case["rows"]]) != R.encoding_hash([case["rows"][::-1]])


def test_the_cvc5_helper_keeps_no_inherited_descriptor() -> None:
    """The helper closes every descriptor it inherits but stdio and its own pipe ends: with a pipe's write end at
    fd 3 in the parent when the helper is forked, the parent's reader sees EOF as soon as the parent closes its
    end (a helper holding fd 3 would keep it open; kills keep {0, 1, 2, ...} -> {0, 1, 3, ...})."""
    import subprocess
    import sys

    script = "\n".join([
        "import os, select",
        "r, w = os.pipe()",
        "r2 = os.dup(r); os.dup2(w, 3); [os.close(f) for f in {r, w} - {3}]; r = r2",  # the write end at fd 3
        "from verify.solver import certify",
        "assert certify.cvc5_opinion('(declare-fun x () Real)\\n(assert (> x 1.0))\\n(check-sat)', 5000)[0] == 'sat'",
        "os.close(3)",
        "ready = select.select([r], [], [], 10)[0]",
        "print('eof' if ready and os.read(r, 1) == b'' else 'held')",
    ])
    got = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert got.stdout.strip() == "eof", got.stdout + got.stderr


def test_a_true_constraint_is_skipped_and_the_rest_kept() -> None:
    """True among the constraints adds no row and does not stop the others (kills k == TRUE -> k < TRUE, which sends
    True to the row reader, and continue -> break, which drops every constraint after it)."""
    x = z3.Real("x")
    assert certify.cases_of([z3.BoolVal(True), x <= 1, z3.And(z3.BoolVal(True), x >= 0)]) == [
        [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "1"}, {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "0"}]]


def test_an_error_while_waiting_stops_the_helper(monkeypatch: pytest.MonkeyPatch) -> None:
    """An exception while the parent waits for cvc5 (Ctrl-C, any error) stops the helper before it propagates: a
    helper left mid-obligation would answer the next question with this one's answer (kills the BaseException
    handler narrowed)."""
    h = certify._Cvc5Helper.current()

    def boom(*a, **k):
        raise RuntimeError("interrupted")

    monkeypatch.setattr(h.answers, "poll", boom)
    with pytest.raises(RuntimeError, match="interrupted"):
        certify.cvc5_opinion("(declare-fun x () Real)\n(assert (> x 1.0))\n(check-sat)", 2000)
    assert certify._Cvc5Helper._current is not h and not h.proc.is_alive()


def test_an_equality_disjunct_is_one_row() -> None:
    """Or(x == 1, x <= 0): two cases, the first one '=' row (kills kind(d) == AND -> <= AND: Z3_OP_EQ is numbered
    below AND and would be split as a conjunction)."""
    x = z3.Real("x")
    assert certify.cases_of([z3.Or(x == 1, x <= 0)]) == [[{"coeffs": {"x": "1"}, "op": "=", "rhs": "1"}],
                                                          [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}]]


def test_an_equality_may_take_a_negative_multiplier() -> None:
    """x == 1 and x <= 0: the only certificate weighs the equality by a negative number (-1 (x = 1) + (x <= 0) gives
    0 <= -1), so the dual must leave equality multipliers free (kills op != '=' -> op <= '=', which makes them >= 0)."""
    x = z3.Real("x")
    cert = farkas_certificate([x == 1, x <= 0])
    assert cert["checked"] and F(cert["cases"][0]["multipliers"][0]) < 0


# ------------------------------------------------------------------ certify.py: the survivors of its first full pass


def test_an_algebraic_number_is_not_a_variable() -> None:
    """sqrt(2) as z3 simplifies it (root-obj, a 0-argument application of kind Z3_OP_AGNUM) is refused, not read as
    a variable named after it (kills k == Z3_OP_UNINTERPRETED -> k is not Z3_OP_UNINTERPRETED)."""
    root = z3.simplify(z3.Sqrt(z3.RealVal(2)), algebraic_number_evaluator=True)
    assert z3.is_algebraic_value(root)
    with pytest.raises(NonLinear, match="unsupported operator"):
        linearize(root + z3.Real("x"))


def test_division_by_a_negative_constant() -> None:
    """x / -2 is -x/2 (kills den == 0 -> den <= 0, which refuses every negative constant denominator)."""
    x = z3.Real("x")
    assert linearize(x / z3.RealVal(-2) + 1) == {"x": F(-1, 2), "": F(1)}


def test_a_quantified_constraint_is_refused_not_skipped() -> None:
    """A quantifier (term kind -1) in an obligation is refused as NonLinear, never dropped like a True constraint
    (kills k == Z3_OP_TRUE -> k <= Z3_OP_TRUE: -1 <= Z3_OP_TRUE would skip it, and a certificate would then refute
    the remaining rows alone)."""
    x, y = z3.Reals("x y")
    with pytest.raises(NonLinear):
        certify.cases_of([x <= 0, z3.ForAll([y], y * y >= 0), x >= 1])


def test_the_core_alone_is_solved_and_the_other_rows_get_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over 40 rows the dual LP is solved on the unsat core only (one LP, on the core's rows) and every row outside
    the core gets the multiplier 0 (kills full is not None -> full is None, which solves the whole system again,
    and [Fraction(0)] -> [Fraction(1)] / [Fraction(-1)] outside the core)."""
    x = z3.Real("x")
    filler = [x <= 100 + k for k in range(50)]
    solved: list[int] = []
    real = certify._multipliers_on

    def spy(rows, timeout_ms, ctx):
        solved.append(len(rows))
        return real(rows, timeout_ms, ctx)

    monkeypatch.setattr(certify, "_multipliers_on", spy)
    cert = farkas_certificate([*filler, x >= 1, x <= 0])
    assert cert["checked"] and solved == [2]
    ys = [F(y) for y in cert["cases"][0]["multipliers"]]
    rows = cert["cases"][0]["rows"]
    core = [i for i, r in enumerate(rows) if r["rhs"] in ("-1", "0")]
    assert len(ys) == 52 and all(ys[i] == 0 for i in range(52) if i not in core) and all(ys[i] > 0 for i in core)


def test_a_non_strict_feasible_system_has_no_strict_certificate() -> None:
    """x <= 0 and -x <= 0 hold at x = 0: no multipliers exist; the 'strict' goal weighs the strict rows only (kills
    op == '<' -> op >= '<', which counts every row as strict and finds y = (1, 1) with y^T b = 0)."""
    rows = [{"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}, {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "0"}]
    assert certify._multipliers_on(rows, 5000, z3.Context()) is None


def test_the_negative_goal_is_tried_before_the_strict_one(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a strict row present, the LP is first asked for y^T b <= -1 and only then for the strict form (kills
    mode == 'negative' -> mode > 'negative' and -> mode != 'negative', which ask in the other order)."""
    goals: list[str] = []
    real = certify.seeded_solver

    def spy(ctx, timeout_ms):
        s = real(ctx, timeout_ms)
        orig = s.from_string

        def record(text):
            goals.append("negative" if "(- 1.0)))" in text.splitlines()[-1] else "strict")
            return orig(text)

        s.from_string = record
        return s

    monkeypatch.setattr(certify, "seeded_solver", spy)
    rows = [{"coeffs": {"x": "1"}, "op": "<", "rhs": "0"}, {"coeffs": {"x": "-1"}, "op": "<=", "rhs": "0"}]
    ys = certify._multipliers_on(rows, 5000, z3.Context())
    assert ys is not None and goals == ["negative", "strict"]


def test_a_row_without_variables_is_no_bound() -> None:
    """A '<=' row with no variable left (0 <= 3) beside a monomial is not taken as a bound of anything (kills
    len(coeffs) == 1 -> <= 1, which unpacks the empty row and raises)."""
    rows = [{"coeffs": {}, "op": "<=", "rhs": "3"}, {"coeffs": {"x": "1"}, "op": "<=", "rhs": "1"},
            {"coeffs": {"x*x": "1"}, "op": "<=", "rhs": "5"}]
    out = certify.with_products(rows)
    assert [r.get("product_of") for r in out] == [None, None, None, [1, 1]]


def test_a_solver_core_is_what_the_single_case_is_solved_on(monkeypatch: pytest.MonkeyPatch) -> None:
    """With one case, the core the caller passes is where the multipliers are sought first (kills len(cases) == 1
    -> == 0, which never uses it)."""
    cores: list[list[int]] = []
    real = certify._multipliers_on_core

    def spy(rows, core, timeout_ms, ctx):
        cores.append(list(core))
        return real(rows, core, timeout_ms, ctx)

    monkeypatch.setattr(certify, "_multipliers_on_core", spy)
    x = z3.Real("x")
    cert = farkas_certificate([x <= 5, x >= 1, x <= 0], core=[1, 2])
    assert cert["checked"] and cores == [[1, 2]]


def test_without_cvc5_the_answer_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    """No cvc5 package: the opinion is 'unavailable' with the reason, not an ImportError (kills the ImportError
    handler replaced)."""
    import sys

    monkeypatch.setitem(sys.modules, "cvc5", None)
    assert certify.cvc5_opinion("(check-sat)", 1000) == ("unavailable", "the cvc5 package is not installed")


def test_the_helper_exits_cleanly_when_its_owner_closes_the_pipe() -> None:
    """The parent closes its request end: the helper reads EOF and returns, exit code 0 (kills the EOFError handler
    replaced: the helper would die with a traceback, exit code 1)."""
    h = certify._Cvc5Helper()
    h.requests.close()
    h.proc.join(10)
    assert h.proc.exitcode == 0
    h.answers.close()


def test_an_error_inside_cvc5_is_an_unknown_answer_with_its_reason() -> None:
    """cvc5 raising inside the helper: the answer is unknown, naming the error, and the helper lives on (kills the
    Exception handler replaced: the helper would die and the reason would be lost)."""
    from verify import faults

    def boom(*a):
        raise RuntimeError("parser broke")

    with faults.inject("solver.certify._cvc5_solve", boom):
        assert certify.cvc5_opinion("(check-sat)", 2000) == ("unknown", "cvc5 error: RuntimeError: parser broke")
        assert certify._Cvc5Helper.current().proc.is_alive()


# ------------------------------------------------------------------ recheck.py: the survivors of its first full pass


class TestRecheckSurvivors:
    """solver/recheck.py's first full pass (481 mutants) left these alive; each test names the mutants it kills."""

    LATER = _row({"z": "3"}, "<=", "5")

    @pytest.mark.parametrize("pair", [[0, 3], [3, 0], [-1, 0], [0, -1]])
    def test_a_product_of_a_later_or_negatively_indexed_base_row_is_refused(self, pair: list) -> None:
        """The product row (row 2) names a base row after it (row 3) or row -1 (the last row, a base row), with the
        true product as its content: refused by the index range alone (kills 0 <= i < k -> -1 <= i, i is not k,
        i != k, the same for j, 'and' -> 'or' between the two ranges and 'or' -> 'and' after them)."""
        base = TestExpand.BASE
        rows = [*base, None, self.LATER]
        pr = {**R.product_row(rows[pair[0]], rows[pair[1]]), "product_of": pair}
        rows[2] = pr
        out, msg = R._expand(rows)
        assert out is None and msg == "row 2: product_of must name two earlier base rows"

    def test_the_expansion_with_other_than_unit_numbers(self) -> None:
        """2x <= 3 and 5y <= 7: (3 - 2x)(7 - 5y) >= 0 is 14x + 15y - 10xy <= 21 (kills b2 * a -> b2 / a, b1 * a ->
        b1 / a and -a1 * a2 -> -a1 / a2, -a1 // a2, which agree with '*' on the unit values of the other tests)."""
        got = R.product_row(_row({"x": "2"}, "<=", "3"), _row({"y": "5"}, "<=", "7"))
        assert got == _row({"x": "14", "x*y": "-10", "y": "15"}, "<=", "21")

    @pytest.mark.parametrize("n1, n2", [(2, 3), (1, 6)])
    def test_the_cap_counts_product_terms(self, monkeypatch: pytest.MonkeyPatch, n1: int, n2: int) -> None:
        """Under a cap of 5 terms, rows of 2 and 3 terms (6 products) and of 1 and 6 (6 products) are refused (kills
        len1 * len2 -> len1 + len2, 5 terms, and -> len1 ** len2, 1 term)."""
        monkeypatch.setattr(R, "MAX_PRODUCT_TERMS", 5)
        r1 = _row({f"a{i}": "1" for i in range(n1)}, "<=", "1")
        r2 = _row({f"b{i}": "1" for i in range(n2)}, "<=", "1")
        with pytest.raises(ValueError, match="more than 5 terms"):
            R.product_row(r1, r2)

    def test_the_digit_cap_is_2000_as_documented(self) -> None:
        """docs/trust.md promises 'at most 2000 digits per part' (kills MAX_DIGITS = 1999 and = 2001)."""
        assert R.frac("9" * 2000) == 10 ** 2000 - 1 and R.frac("1/" + "9" * 2000) == F(1, 10 ** 2000 - 1)
        with pytest.raises(ValueError, match="at most 2000 digits"):
            R.frac("9" * 2001)

    def test_the_messages_show_40_characters_and_an_ellipsis_past_them(self) -> None:
        """A refused string is quoted to 40 characters, '...' only when it is longer (kills every change of the 40s
        and of the comparison); a refused non-string likewise (kills str(s)[:40] -> [:39], [:41])."""
        head = "not an exact rational 'p' or 'p/q' (at most 2000 digits each): "
        for s, shown in (("x" * 40, repr("x" * 40)), ("x" * 41, repr("x" * 40) + "..."), ("x" * 39, repr("x" * 39))):
            with pytest.raises(ValueError) as e:
                R.frac(s)
            assert str(e.value) == head + shown
        with pytest.raises(ValueError) as e:
            R.frac([1] * 30)
        assert str(e.value) == f"not an exact rational: {str([1] * 30)[:40]!r} (write rationals as strings 'p/q')"

    def test_300_rows_and_their_300_multipliers(self) -> None:
        """A valid chain of 300 rows (x0 >= 1, x_{i+1} >= x_i + 1, x_299 <= 0) checks (kills len(rows) !=
        len(multipliers) -> 'is not', which refuses equal lengths past CPython's small-int cache)."""
        n = 300
        rows = [_row({"x0": "-1"}, "<=", "-1")] + [_row({f"x{i}": "1", f"x{i + 1}": "-1"}, "<=", "-1")
                                                   for i in range(n - 2)] + [_row({f"x{n - 2}": "1"}, "<=", "0")]
        assert R.check_farkas(rows, ["1"] * n) == (True, f"0 <= {-(n - 1)}")

    def test_more_rows_than_multipliers_is_refused(self) -> None:
        """Three rows, two multipliers (kills != -> <, which lets zip drop the third row)."""
        rows = [_row({"x": "-1"}, "<=", "-1"), _row({"x": "1"}, "<=", "0"), _row({"y": "1"}, "<=", "0")]
        assert R.check_farkas(rows, ["1", "1"]) == (False, "3 rows but 2 multipliers")

    def test_a_negative_leftover_coefficient_is_refused(self) -> None:
        """-x <= -1 alone with y = 1 keeps -x: no contradiction (kills c != 0 -> c > 0, which would drop the -1 and
        accept 0 <= -1)."""
        assert R.check_farkas([_row({"x": "-1"}, "<=", "-1")], ["1"]) == (
            False, "the combination keeps variable x with coefficient -1")

    def test_another_kind_is_refused(self) -> None:
        """A certificate of kind 'dual' (sorting before 'farkas') is refused (kills != 'farkas' -> > 'farkas')."""
        assert R.check_certificate({"kind": "dual", "cases": [{"rows": [], "multipliers": []}]}) == (
            False, "unsupported certificate kind 'dual'")

    def test_unreadable_unsafe_and_malformed_files_are_refused(self, tmp_path) -> None:
        """Not a regular file, not UTF-8 and a certificate without cases: each (False, reason) (kills each
        'return False' -> 'return True' of recheck_file)."""
        import os

        fifo = tmp_path / "fifo.json"
        os.mkfifo(fifo)
        ok, why = R.recheck_file(fifo)
        assert not ok and "regular file" in why
        assert R.recheck_file(tmp_path / "x.json", b"\xff\xfe{}") == (
            False, "unreadable: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 0: invalid start "
                   "byte")
        doc = json.dumps({"format": "verify-certificate/1", "answer": "unsat", "certificate": {"kind": "farkas"}})
        assert R.recheck_file(tmp_path / "x.json", doc.encode()) == (False, "malformed certificate: KeyError: 'cases'")
