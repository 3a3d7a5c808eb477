"""kernel/head_replay.py without Coq: the exp tables and the Python mirror of HeadSoftmax's checkers against exact
reals (mpmath at 50 digits), the shortest statement each row gets, the Coq text handed to coqc, and how ``check``,
``replay_document`` and the HeadSoftmax cache read coqc's answers (coqc and the theories' build replaced by fakes).

The mirror only chooses what to state; Coq accepts or refuses (tests/kernel/test_head_kernel.py compiles these
files).  A mirror that accepted too much would send Coq rows it refuses; one that accepted too little would leave
rows unchecked: both are asserted here against the exact values, fast enough for the module's mutation pass.
"""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import mpmath
import pytest

from verify.kernel import head_replay as hr
from verify.kernel.driver import INSTALL_HINT, KernelUnavailable
from verify.kernel.head_replay import KernelDataError, KernelRow, Stated

mpmath.mp.dps = 50
S = 1 << hr.BITS


def _exp(z: int) -> Any:
    """2^BITS exp(z / 2^BITS), exactly enough."""
    return mpmath.exp(mpmath.mpf(z) / S) * S


# ----------------------------------------------------------------------------- tables


@pytest.mark.parametrize("G", hr.STEPS)
def test_every_table_entry_bounds_exp_from_its_side_and_is_tight(G):
    K = hr.squarings(G)
    for up, pos in [(True, True), (True, False), (False, True), (False, False)]:
        sd = hr.side(hr.BITS, G, K, 40, up, pos)
        assert sd["n"] == 2 ** G and len(sd["chain"]) == K and len(sd["entries"]) == 40
        sign = 1 if pos else -1
        y0 = mpmath.mpf(sign) / 2 ** (G + K)
        assert (sd["chain0"] >= mpmath.exp(y0) * S) if up else (sd["chain0"] <= mpmath.exp(y0) * S)
        for i, c in enumerate(sd["chain"], start=1):
            exact = mpmath.exp(y0 * 2 ** i) * S
            assert (c >= exact) if up else (c <= exact), (G, up, pos, i)
        for k, e in enumerate(sd["entries"], start=1):
            exact = mpmath.exp(mpmath.mpf(sign * k) / 2 ** G) * S
            assert (e >= exact) if up else (e <= exact), (G, up, pos, k)
            assert abs(e - exact) <= exact * mpmath.mpf(2) ** -16 + 64, (G, up, pos, k, e - exact)
    assert [hr.squarings(g) for g in (4, 6, 8, 10, 17)] == [15, 13, 11, 9, 4]
    assert hr.squarings(6, bits=20) == 4 and hr.squarings(4, bits=41) == 16  # floor((41 - 8 - 1) / 2)


def _row(claim: str, target: tuple[int, int], others: list[tuple[int, int]], prompt: int = 0, row: int = 5,
         tgt: int = 4) -> KernelRow:
    keys = tuple(k for k in range(len(others) + 1) if k != tgt)[:len(others)]
    return KernelRow(prompt, row, tgt, claim, target, keys, tuple(others))


def _u(x: float) -> int:
    return int(x * S)


def test_tables_are_as_long_as_the_rows_need_and_capped():
    rows = [_row("ge", (_u(0.0), _u(0.01)), [(_u(-3.0), _u(-2.5)), (_u(0.5), _u(1.2))]),
            _row("lt", (_u(-1.0), _u(-0.9)), [(_u(2.0), _u(2.1)), (_u(-4.0), _u(-3.9))]),
            _row("argmax", (_u(9.0), _u(9.1)), [(_u(-100.0), _u(50.0))])]
    tb = hr.tables(rows, 4)
    assert (tb["P"], tb["G"], tb["K"]) == (40, 4, 15)
    # ge: ceil((h - lo_t) 2^4): 1.2 -> 20 above 0, -2.5 -> 40 below; lt: floor((lo - hi_t) 2^4): 2.9 -> 46, -3.1 -> 50
    assert [len(tb[k]["entries"]) for k in ("up_pos", "up_neg", "dn_pos", "dn_neg")] == [20, 40, 46, 50]
    far = hr.tables([_row("ge", (0, 0), [(-S * 100, -S * 90), (S * 40, S * 41)]),
                     _row("lt", (0, 0), [(S * 70, S * 71), (-S * 80, -S * 79)])], 6)
    assert [len(far[k]["entries"]) for k in ("up_pos", "up_neg", "dn_pos", "dn_neg")] == [
        hr.RANGE_UP * 64, hr.RANGE * 64, hr.RANGE_UP * 64, hr.RANGE * 64]
    assert (hr.RANGE, hr.RANGE_UP, hr.STEPS, hr.BITS, hr.LIMIT) == (30, 15, (4, 6, 8, 10), 40, 2 ** 62)


def test_the_exp_lookups_bound_exp_on_their_side():
    rows = [_row("ge", (0, 0), [(-S * 31, S * 3), (0, -S * 31)]), _row("lt", (0, 0), [(-S * 31, S * 3), (S * 3, 0)])]
    tb = hr.tables(rows, 6)
    for x in [-31.0, -29.99, -3.3, -1 / 64, -1e-9, 0.0, 1e-9, 1 / 64, 0.7, 2.999]:
        u = _u(x)
        up, dn = hr._exp_up(tb, u), hr._exp_dn(tb, u)
        assert up is not None and up >= _exp(u) and dn <= _exp(u), x
        # within a table step (2^-6 relative) and the chain's rounding (a few hundred units of 2^-40)
        assert x < -30 or (up - _exp(u) <= _exp(u) / 32 + 256 and _exp(u) - dn <= _exp(u) / 32 + 256), x
    assert hr._exp_up(tb, 0) == S and hr._exp_dn(tb, 0) == S
    assert hr._exp_up(tb, _u(3.1)) is None  # above the table: no upper bound
    assert hr._exp_dn(tb, _u(-31.0)) == 0  # below the table: 0 bounds from below
    assert hr._exp_up(tb, _u(-40.0)) == tb["up_neg"]["entries"][-1]  # clamped to the last entry
    assert hr._exp_dn(tb, _u(5.0)) == tb["dn_pos"]["entries"][-1]
    assert [hr._cdiv(a, b) for a, b in [(7, 2), (-7, 2), (6, 3)]] == [4, -3, 2]
    assert [hr._ceil_shift(u, 2) for u in (5, -5, 4)] == [2, -1, 1]
    assert [hr._floor_shift(u, 2) for u in (5, -5, 4)] == [1, -2, 1]


# ----------------------------------------------------------------------------- the mirror against exact reals


def _mass(t: int, others: list[int], rest: int = 0, count: int = 0) -> Any:
    e = [mpmath.exp(mpmath.mpf(h - t) / S) for h in others]
    return 1 / (1 + mpmath.fsum(e) + count * mpmath.exp(mpmath.mpf(rest - t) / S))


def test_ge_and_lt_are_accepted_only_when_the_worst_case_mass_says_so():
    tb = hr.tables([_row("ge", (0, 0), [(-S * 20, S * 5), (0, -S * 20)]), _row("lt", (0, 0), [(-S * 20, S * 5)])], 8)
    tau = Fraction(1, 2)
    seen = {True: 0, False: 0}
    for t, ends, rest, count in [(0, [_u(-0.1)], 0, 0), (0, [_u(-0.01)], _u(-5.0), 3), (_u(1.0), [_u(1.0)], 0, 0),
                                 (0, [_u(-0.001)], 0, 0), (0, [_u(0.001)], 0, 0), (0, [], _u(-0.2), 1),
                                 (0, [], _u(0.2), 1), (0, [_u(-2.0)] * 3, _u(-3.0), 4)]:
        st = Stated(t, tuple(range(len(ends))), tuple(ends), rest, count)
        exact = _mass(t, ends, rest, count)
        got = hr.ok(tb, "ge", st, tau)
        seen[got] += 1
        assert (exact >= 0.5 if got else exact < 0.51), (ends, rest, count, exact)  # sound, and complete past 2%
        lt_exact = _mass(t, ends)
        lt_got = hr.ok(tb, "lt", Stated(t, tuple(range(len(ends))), tuple(ends)), tau)
        assert (lt_exact < 0.5 if lt_got else lt_exact > 0.49), (ends, lt_exact)
    assert seen == {True: 5, False: 3}
    assert not hr.ok(tb, "ge", Stated(0, (), (), 0, -1), tau)  # a negative count is not a row
    assert not hr.ok(tb, "ge", Stated(0, (1,), (S * 6,), 0, 0), Fraction(1, 10 ** 9))  # past the table: no bound
    assert not hr.ok(tb, "ge", Stated(0, (), (), S * 6, 1), Fraction(1, 10 ** 9))
    assert hr.ok(tb, "ge", Stated(0, (), (), 0, 0), Fraction(1))  # the target alone: mass 1
    assert not hr.ok(tb, "lt", Stated(0, (), ()), Fraction(1))  # mass 1 is not < 1
    assert hr.ok(tb, "lt", Stated(0, (1,), (0,)), Fraction(3, 5)) and not hr.ok(tb, "lt", Stated(0, (1,), (0,)),
                                                                                  Fraction(1, 2))
    assert not hr.ok(tb, "lt", Stated(0, (1,), (0,)), Fraction(0))  # tau 0: no mass is below it
    assert not hr.ok(tb, "ge", Stated(0, (), (), 0, 0), Fraction(3, 2)) and hr.ok(tb, "ge", Stated(0, (), (), 0, 0),
                                                                                  Fraction(1))


def test_argmax_checks_are_strict_where_the_statement_is():
    tb = hr.tables([], 4)
    assert hr.ok(tb, "argmax", Stated(10, (1, 2), (9, 8), 9, 5), Fraction(1))
    assert not hr.ok(tb, "argmax", Stated(10, (1, 2), (10, 8), 9, 5), Fraction(1))  # a tie is not strict
    assert not hr.ok(tb, "argmax", Stated(10, (1,), (9,), 10, 1), Fraction(1))
    assert hr.ok(tb, "argmax_no", Stated(10, (1,), (10,)), Fraction(1))  # a key at least the target
    assert hr.ok(tb, "argmax_no", Stated(10, (1, 2), (3, 11)), Fraction(1))
    assert not hr.ok(tb, "argmax_no", Stated(10, (1,), (9,)), Fraction(1))
    assert not hr.ok(tb, "argmax_no", Stated(10, (), ()), Fraction(1))


def test_each_row_gets_its_shortest_accepted_statement():
    big = [(_u(-9.0) - k, _u(-8.0) - k) for k in range(70)]
    tb = hr.tables([_row("ge", (0, 1), big), _row("lt", (0, 1), big)], 6)
    # 70 far keys: one shared bound suffices (0 stated)
    st = hr.state(tb, _row("ge", (0, 1), big), Fraction(1, 2))
    assert st == Stated(0, (), (), _u(-8.0), 70)
    near = [(_u(-0.5), _u(-0.4)), (_u(-0.45), _u(-0.3))] + big[:10]
    r = _row("ge", (_u(1.0), _u(1.1)), near, tgt=20)
    tb = hr.tables([r], 6)
    st = hr.state(tb, r, Fraction(1, 4))
    # the two near keys are the largest upper ends; stated one by one (4 at a time), the rest shares -8.0
    assert st is not None and st.which == (1, 0, 2, 3) and st.ends == (_u(-0.3), _u(-0.4), _u(-8.0), _u(-8.0) - 1)
    assert (st.t, st.rest, st.count) == (_u(1.0), _u(-8.0) - 2, 8)
    assert hr.state(tb, r, Fraction(99, 100)) is None  # no statement makes mass >= 0.99 true
    am = _row("argmax", (_u(1.0), _u(1.1)), near)
    assert hr.state(tb, am, Fraction(1)) == Stated(_u(1.0), (), (), _u(-0.3), 12)
    assert hr.state(tb, _row("argmax", (0, 1), [(0, 0)]), Fraction(1)) is None
    assert hr.state(tb, _row("argmax", (0, 1), []), Fraction(1)) == Stated(0, (), (), -1, 0)
    no = _row("argmax_no", (5, 9), [(3, 4), (9, 12), (10, 11)])
    assert hr.state(tb, no, Fraction(1)) == Stated(9, (2,), (10,))
    assert hr.state(tb, _row("argmax_no", (5, 9), [(3, 4)]), Fraction(1)) is None
    lt = _row("lt", (0, _u(0.1)), [(_u(1.0), _u(1.2)), (_u(-5.0), _u(-4.0)), (_u(0.5), _u(0.6))])
    tb = hr.tables([lt], 6)
    # mass < 1/2 needs the key at 1.0 only (exp(0.9) > 1); < 1/4 needs 1.0 and 0.5 (1 + e^0.9 + e^0.4 > 4 > 1 + e^0.9)
    assert hr.state(tb, lt, Fraction(1, 2)) == Stated(_u(0.1), (0,), (_u(1.0),))
    assert hr.state(tb, lt, Fraction(1, 4)) == Stated(_u(0.1), (0, 2), (_u(1.0), _u(0.5)))
    assert hr.state(tb, lt, Fraction(1, 5)) is None
    assert hr.full(lt) == Stated(_u(0.1), lt.keys, (_u(1.0), _u(-5.0), _u(0.5)))
    assert hr.full(r) == Stated(_u(1.0), r.keys, tuple(h for _, h in near), _u(1.0), 0)
    assert hr.full(am).rest == _u(1.0) - 1


def test_choose_takes_the_coarsest_step_that_decides_every_row():
    tau = Fraction(49, 100)
    easy = _row("ge", (0, 1), [(_u(-5.0), _u(-4.0))])
    assert hr.choose([easy], tau)[0]["G"] == 4
    # mass 1 / (1 + e^0.035) = 0.49125 >= 0.49: exp(0.035) bounded by exp(9 / 256) first at step 2^-8
    tight = _row("ge", (0, 1), [(_u(0.03), _u(0.035))])
    tb, stated, missed = hr.choose([easy, tight], tau)
    assert (tb["G"], [r for r, _ in stated], missed) == (8, [easy, tight], [])
    # mass 0.49003: no step of the tables resolves it (exp(41 / 1024) is already too much)
    lost = _row("ge", (0, 1), [(_u(0.0399), _u(0.0399))])
    tb, stated, missed = hr.choose([easy, lost], tau)
    assert (tb["G"], [r for r, _ in stated], missed) == (10, [easy], [lost])
    tb, stated, missed = hr.choose([], Fraction(1, 2))
    assert (tb["G"], stated, missed) == (4, [], [])


# ----------------------------------------------------------------------------- rows as data


def test_kernel_rows_read_and_write_their_json():
    r = KernelRow(1, 7, 6, "lt", (-3, 4), (0, 5), ((-9, -8), (2, 3)))
    d = r.to_json()
    assert d == {"prompt": 1, "row": 7, "target": 6, "claim": "lt", "target_score": ["-3", "4"], "keys": [0, 5],
                 "others": [["-9", "-8"], ["2", "3"]]}
    assert KernelRow.from_json(json.loads(json.dumps(d))) == r
    bad = [({**d, "claim": "gt"}, "a kernel row is not an object with a claim in ge, lt, argmax, argmax_no"),
           ([], "a kernel row is not an object"), ({**d, "keys": [0]}, "a kernel row's keys and others do not pair up"),
           ({**d, "others": "x"}, "a kernel row's keys and others do not pair up"),
           ({**d, "keys": 3}, "a kernel row's keys and others do not pair up"),
           ({**d, "prompt": -1}, "expected an index in [0, 1000000), got '-1'"),
           ({**d, "prompt": 10 ** 6}, "expected an index in [0, 1000000)"),
           ({**d, "row": True}, "expected an index in [0, 10000000), got 'True'"),
           ({**d, "target": 1.0}, "expected an index"), ({**d, "keys": [0, 10 ** 7]}, "expected an index"),
           ({**d, "target_score": ["1", "2", "3"]}, "a score enclosure is not two integer strings [lo, hi] of at most "
                                                    "40 digits"),
           ({**d, "target_score": [1, 2]}, "a score enclosure is not two"),
           ({**d, "target_score": ["1" * 41, "2"]}, "a score enclosure is not two"),
           ({**d, "target_score": "12"}, "a score enclosure is not two"),
           ({**d, "target_score": [str(-2 ** 62), "0"]}, f"an enclosure [{-2 ** 62}, 0] lies outside the kernel's "
                                                       "fixed-point range (|z| < 2^62)"),
           ({**d, "target_score": ["0", str(2 ** 62)]}, f"an enclosure [0, {2 ** 62}] lies outside the kernel's"),
           ({**d, "others": [["5", "4"], ["2", "3"]]}, "an enclosure [5, 4] is empty")]
    for raw, why in bad:
        with pytest.raises(KernelDataError) as e:
            KernelRow.from_json(raw)
        assert str(e.value).startswith(why), (raw, str(e.value))
    assert KernelRow.from_json({**d, "target_score": [str(-2 ** 62 + 1), str(2 ** 62 - 1)], "prompt": 999_999,
                                "others": [["4", "4"], ["2", "3"]]}).target_score == (-2 ** 62 + 1, 2 ** 62 - 1)


# ----------------------------------------------------------------------------- the Coq text


def test_the_file_states_the_tables_and_one_forall_theorem_per_claim():
    ge = _row("ge", (0, 1), [(-S, -S + 1)], prompt=2, row=7, tgt=6)
    am = _row("argmax_no", (5, 9), [(10, 11)], prompt=0, row=1, tgt=0)
    tb = hr.tables([ge], 4)
    stated = [(ge, Stated(0, (0,), (-S + 1,), -5, 2)), (am, Stated(9, (1,), (10,)))]
    text, spans = hr.coq_text(tb, stated, Fraction(1, 3), header='model "x" *) Fail')
    lines = text.splitlines()
    assert lines[:6] == ["(* model ?x? ?) Fail", "   written by verify (kernel/head_replay.py); the statements: "
                         "HeadSoftmax.v *)", "From Coq Require Import ZArith Reals List Sint63.", "Import ListNotations.",
                         "Require Import Verify.HeadSoftmax.", "Open Scope Z_scope."]
    assert lines[7] == "Definition tb : tables := {| P := 40; G := 4;"
    up = tb["up_pos"]
    assert lines[8] == f"  up_pos := {{| n := 16; chain0 := {up['chain0']};"
    assert lines[9] == "     chain := (map Sint63.to_Z [" + "; ".join(map(str, up["chain"])) + "]%sint63);"
    assert "Lemma tb_ok : tables_ok tb = true.\nProof. vm_cast_no_check (eq_refl true). Qed." in text
    assert ("Definition rows_ge : list row := ([\n  (* 0: prompt 2, query 7 -> key 6: 1 other keys, stated [0]; 2 more "
            f"<= rest *)\n  mk 0 [({-S + 1})] (-5) 2\n])%sint63.\n(** 1 rows: mass >= 1/3 *)\n"
            "Theorem head_ge : Forall (ge_row tb 1 3) rows_ge.\n"
            "Proof. refine (rows_ge_sound tb 1 3 rows_ge tb_ok _). vm_cast_no_check (eq_refl true). Qed.\n") in text
    assert ("Theorem head_argmax_no : Forall (argmax_no_row (P tb)) rows_argmax_no.\n"
            "Proof. refine (rows_argmax_no_sound (P tb) rows_argmax_no _). vm_cast_no_check (eq_refl true). Qed.") in text
    assert "head_lt" not in text and "head_argmax " not in text
    assert [w for _, _, w in spans] == ["the exp tables (tables_ok)", "the 1 rows with mass >= 1/3",
                                        "the 1 rows with the target not the strict argmax"]
    for first, last, what in spans:  # each span is the lines of its theorem
        block = "\n".join(lines[first - 1:last])
        assert ("tb_ok" if what.startswith("the exp") else "Theorem head_") in block
        assert lines[last - 1] == "" and lines[first - 2] == ""
    per_row, row_spans = hr.coq_text(tb, stated, Fraction(1, 3), per_row=True)
    assert ("(** prompt 2, query 7 -> key 6: 1 other keys, stated [0]; 2 more <= rest: mass >= 1/3 *)\n"
            f"Definition row_2_7_ge_data : row := (mk 0 [({-S + 1})] (-5) 2)%sint63.\n"
            "Theorem row_2_7_ge : ge_row tb 1 3 row_2_7_ge_data.\n"
            "Proof. refine (row_ge_sound tb 1 3 row_2_7_ge_data tb_ok _). vm_cast_no_check (eq_refl true). Qed.\n"
            ) in per_row
    assert "Theorem row_0_1_argmax_no : argmax_no_row (P tb) row_0_1_argmax_no_data." in per_row
    assert [w for _, _, w in row_spans][1:] == [
        "prompt 2, query 7 -> key 6: 1 other keys, stated [0]; 2 more <= rest: mass >= 1/3",
        "prompt 0, query 1 -> key 0: 1 other keys, stated [1]: the target not the strict argmax"]
    lt = _row("lt", (0, 1), [(0, 0)] * 8, row=9, tgt=9)
    many, _ = hr.coq_text(tb, [(lt, Stated(1, tuple(range(8)), (0,) * 8))], Fraction(2, 5), per_row=True)
    assert "stated [0, 1, 2, 3, 4, 5, ...]: mass < 2/5" in many and "Theorem row_0_9_lt : lt_row tb 2 5 " in many
    am2 = _row("argmax", (3, 4), [(0, 1)])
    assert "argmax_row (P tb)" in hr.coq_text(tb, [(am2, Stated(3, (), (), 1, 1))], Fraction(1))[0]
    with pytest.raises(KernelDataError, match=r"lies outside the kernel's fixed-point range"):
        hr._z(2 ** 62)
    assert (hr._z(-(2 ** 62) + 1), hr._z(0), hr._z(7)) == (f"({-(2 ** 62) + 1})", "0", "7")
    assert hr._comment("a" * 400) == "a" * 300 and hr.theorem_name(ge) == "row_2_7_ge"


# ----------------------------------------------------------------------------- check and replay, coqc faked


class FakeCoqc:
    """coqc replaced: answers by whether the file is the per-row one; records what it was given."""

    def __init__(self, first: tuple[int, str], per_row: tuple[int, str] = (0, "")) -> None:
        self.first, self.per_row, self.seen = first, per_row, []  # type: ignore[var-annotated]

    def __call__(self, cmd: list[str], cwd: Path, timeout: float = 0) -> tuple[int, str]:
        text = (cwd / cmd[-1]).read_text()
        self.seen.append((list(cmd), text))
        return self.per_row if "_data : row" in text else self.first


def _setup(monkeypatch, fake: FakeCoqc, version: str | None = "8.16.1") -> None:
    monkeypatch.setattr(hr, "coq_version", lambda: version)
    monkeypatch.setattr(hr, "_theory_dir", lambda v: Path("/theory") / v)
    monkeypatch.setattr(hr, "_run", fake)


def _line_of(text: str, needle: str) -> int:
    return next(i for i, x in enumerate(text.splitlines(), start=1) if needle in x)


GE = _row("ge", (0, 1), [(_u(-5.0), _u(-4.0))], prompt=0, row=3, tgt=2)
LT = _row("lt", (0, 1), [(_u(3.0), _u(3.5))], prompt=1, row=4, tgt=1)


def _stated() -> tuple[dict[str, Any], list[tuple[KernelRow, Stated]]]:
    tb, stated, missed = hr.choose([GE, LT], Fraction(1, 2))
    assert missed == []
    return tb, stated


def test_check_accepts_what_coqc_compiles(monkeypatch, tmp_path):
    fake = FakeCoqc((0, ""))
    _setup(monkeypatch, fake)
    tb, stated = _stated()
    res = hr.check(tb, stated, Fraction(1, 2), header="h", keep=tmp_path / "kept.v")
    assert (res.status, res.coq_version, res.rows, res.first_refused, res.G) == ("checked", "8.16.1", 2, None, 4)
    assert res.message == ("Coq 8.16.1: head_ge by rows_ge_sound, head_lt by rows_lt_sound; HeadSoftmax "
                           "coqchk-checked, assumptions only the standard library's")
    assert len(fake.seen) == 1 and fake.seen[0][0] == ["coqc", "-q", "-Q", "/theory/8.16.1", "Verify", "HeadCert.v"]
    assert fake.seen[0][1] == hr.coq_text(tb, stated, Fraction(1, 2), "h")[0] == (tmp_path / "kept.v").read_text()
    assert res.seconds >= 0


def test_check_names_the_row_coq_refuses(monkeypatch, tmp_path):
    tb, stated = _stated()
    text, spans = hr.coq_text(tb, stated, Fraction(1, 2))
    per_row, _ = hr.coq_text(tb, stated, Fraction(1, 2), per_row=True)
    bad_line = _line_of(text, "Theorem head_lt")
    row_line = _line_of(per_row, "Theorem row_1_4_lt")
    fake = FakeCoqc((1, f'File "/tmp/x/HeadCert.v", line {bad_line}, characters 0-5:\nError: refused'),
                    (1, f'File "./HeadCert.v", line {row_line}, characters 0-5:\nError: refused'))
    _setup(monkeypatch, fake)
    res = hr.check(tb, stated, Fraction(1, 2), keep=tmp_path / "kept.v")
    assert (res.status, res.first_refused) == ("refuted", "prompt 1, query 4 -> key 1: 1 other keys, stated [0]: "
                                                          "mass < 1/2")
    assert res.message == "the Coq kernel refuses prompt 1, query 4 -> key 1: 1 other keys, stated [0]: mass < 1/2"
    assert len(fake.seen) == 2 and (tmp_path / "kept.v").read_text() == text  # the kept file is the one-theorem one
    tables_line = _line_of(text, "Lemma tb_ok")
    _setup(monkeypatch, FakeCoqc((1, f'File "HeadCert.v", line {tables_line}, characters 1-2:\nError: no')))
    res = hr.check(tb, stated, Fraction(1, 2))
    assert (res.status, res.message, res.G) == ("refuted", "the Coq kernel refuses the exp tables (tables_ok)", 4)
    _setup(monkeypatch, FakeCoqc((1, "Error: Cannot find a physical path bound to logical path Verify.\n" + "x " * 200)))
    res = hr.check(tb, stated, Fraction(1, 2))
    assert res.status == "error" and res.message.startswith(
        "coqc failed: Error: Cannot find a physical path bound to logical path Verify. x x") and len(res.message) == 313
    _setup(monkeypatch, FakeCoqc((1, f'File "HeadCert.v", line {len(text.splitlines()) + 5}, characters 1-2:\nE')))
    assert hr.check(tb, stated, Fraction(1, 2)).status == "error"


def test_check_refuses_too_many_keys_and_needs_coq(monkeypatch):
    tb, stated = _stated()
    _setup(monkeypatch, FakeCoqc((0, "")))
    assert sum(len(st.ends) for _, st in stated) == 1  # GE through its shared bound, LT's one key stated
    monkeypatch.setattr(hr, "MAX_KEYS", 1)
    assert hr.check(tb, stated, Fraction(1, 2)).status == "checked"  # at the budget
    monkeypatch.setattr(hr, "MAX_KEYS", 0)
    res = hr.check(tb, stated, Fraction(1, 2))
    assert (res.status, res.message, res.rows) == ("error", "1 keys exceed the kernel file's budget of 0", 2)
    _setup(monkeypatch, FakeCoqc((0, "")), version=None)
    with pytest.raises(KernelUnavailable) as e:
        hr.check(tb, stated, Fraction(1, 2))
    assert str(e.value) == INSTALL_HINT
    assert hr.MAX_KEYS == 0 and hr.CLAIMS == ("ge", "lt", "argmax", "argmax_no")


def _doc(rows: list[KernelRow], **kw: Any) -> dict[str, Any]:
    return {"threshold": "1/2", "statement": "s", "kernel": {"bits": 40, "rows": [r.to_json() for r in rows]}, **kw}


def test_replay_document_reads_the_kernel_section(monkeypatch):
    fake = FakeCoqc((0, ""))
    _setup(monkeypatch, fake)
    ok, msg = hr.replay_document(_doc([GE, LT]))
    assert ok and msg.startswith("Coq 8.16.1: head_ge by rows_ge_sound, head_lt by rows_lt_sound; HeadSoftmax "
                                 "coqchk-checked, assumptions only the standard library's: 2 rows (")
    assert fake.seen[0][1].startswith("(* s\n")
    assert hr.replay_document({"threshold": "1/2"}) == (
        True, "a head bound without a kernel section (written without --kernel): not replayed in Coq")
    assert hr.replay_document(_doc([])) == (True, "no decided row to replay")
    for doc, why in [({"kernel": []}, "the kernel section is not {'bits': 40, 'rows': [...]}"),
                     ({"kernel": {"bits": 39, "rows": []}}, "the kernel section is not"),
                     ({"kernel": {"bits": 40, "rows": {}}}, "the kernel section is not"),
                     ({"kernel": {"bits": 40, "rows": [3]}}, "a kernel row is not an object"),
                     (_doc([GE], threshold="0"), "the threshold is not in (0, 1]"),
                     (_doc([GE], threshold="3/2"), "the threshold is not in (0, 1]"),
                     (_doc([GE], threshold="1/0"), "Fraction(1, 0)"), (_doc([GE], threshold="x"), "Invalid literal")]:
        ok, msg = hr.replay_document(doc)
        assert not ok and msg.startswith("not replayed in the kernel: " + why), (doc, msg)


def test_replay_document_sends_a_row_the_mirror_rejects_to_coq_whole(monkeypatch):
    """A section row the mirror no longer accepts (tampered after Coq accepted the file) goes to Coq with every key
    stated, for the kernel to refuse and name; the replay is then invalid."""
    lost = _row("ge", (0, 1), [(_u(0.5), _u(0.6))], prompt=0, row=8, tgt=7)  # mass < 1/2: not >= 1/2
    tb, stated, missed = hr.choose([GE, lost], Fraction(1, 2))
    assert missed == [lost]
    text, _ = hr.coq_text(tb, stated + [(lost, hr.full(lost))], Fraction(1, 2), "s")
    per_row, _ = hr.coq_text(tb, stated + [(lost, hr.full(lost))], Fraction(1, 2), "s", per_row=True)
    fake = FakeCoqc((1, f'File "HeadCert.v", line {_line_of(text, "Theorem head_ge")}, characters 0-1:\nError'),
                    (1, f'File "HeadCert.v", line {_line_of(per_row, "Theorem row_0_8_ge")}, characters 0-1:\nError'))
    _setup(monkeypatch, fake)
    ok, msg = hr.replay_document(_doc([GE, lost]))
    assert (ok, msg) == (False, "refuted in the kernel: the Coq kernel refuses prompt 0, query 8 -> key 7: 1 other "
                                "keys, stated [0]; 0 more <= rest: mass >= 1/2")
    assert fake.seen[0][1] == text


# ----------------------------------------------------------------------------- HeadSoftmax's cached build


def _fake_build(monkeypatch, tmp_path, **over: Any) -> list[Any]:
    calls: list[Any] = []
    facts = {f"Verify.HeadSoftmax.{n}": SimpleNamespace(found=True, untrusted=[], assumptions=["Classical"])
             for n in hr.SOUNDNESS}
    build = SimpleNamespace(compiled={"HeadSoftmax": True}, errors={}, coqchk={"HeadSoftmax": "ok"}, theorems=facts,
                            coqchk_axioms={"HeadSoftmax": ["ax"]}, untrusted_axioms=lambda name: [])
    for k, v in over.items():
        setattr(build, k, v)

    def fake(wanted, theories, workdir):
        calls.append(([s.qualified for s in wanted], (theories / "_CoqProject").read_text()))
        workdir.mkdir(parents=True)
        (workdir / "HeadSoftmax.vo").write_text("vo")
        return build

    monkeypatch.setattr(hr, "build_theories", fake)
    monkeypatch.setattr(hr, "default_cache_dir", lambda: tmp_path / "cache")
    return calls


def test_headsoftmax_is_built_once_per_version_and_its_trust_recorded(monkeypatch, tmp_path):
    calls = _fake_build(monkeypatch, tmp_path)
    d = hr._theory_dir("8.16.1")
    assert d.parent == tmp_path / "cache" and d.name.startswith("headsoftmax-") and len(d.name) == 12 + 16
    assert calls == [([f"Verify.HeadSoftmax.{n}" for n in hr.SOUNDNESS], "-Q . Verify\nHeadSoftmax.v\n")]
    assert hr.SOUNDNESS == ("row_ge_sound", "rows_ge_sound", "row_lt_sound", "rows_lt_sound", "row_argmax_sound",
                            "rows_argmax_sound", "row_argmax_no_sound", "rows_argmax_no_sound")
    t = hr.trust("8.16.1")
    assert t == {"coq_version": "8.16.1", "coqchk": "ok", "coqchk_axioms": ["ax"],
                 "assumptions": {n: ["Classical"] for n in hr.SOUNDNESS}}
    assert hr._theory_dir("8.16.1") == d and len(calls) == 1  # cached
    assert hr._theory_dir("8.17.0") != d and len(calls) == 2  # another version, another build
    assert [p.name for p in (tmp_path / "cache").iterdir() if not p.name.startswith("headsoftmax-")] == []
    assert len(list((tmp_path / "cache").iterdir())) == 2  # no temporary directory left behind


@pytest.mark.parametrize("over,why", [
    ({"compiled": {"HeadSoftmax": False}, "errors": {"HeadSoftmax": "line 3"}},
     "Verify.HeadSoftmax does not compile: line 3"),
    ({"coqchk": {"HeadSoftmax": "refused: x"}}, "coqchk refuses Verify.HeadSoftmax: refused: x"),
    ({"untrusted_axioms": lambda name: ["Verify.HeadSoftmax.cheat"]},
     "Verify.HeadSoftmax rests on assumptions of ours: Verify.HeadSoftmax.cheat"),
])
def test_a_headsoftmax_build_that_is_not_clean_is_refused_and_not_cached(monkeypatch, tmp_path, over, why):
    _fake_build(monkeypatch, tmp_path, **over)
    with pytest.raises(RuntimeError) as e:
        hr._theory_dir("8.16.1")
    assert str(e.value) == why
    assert list((tmp_path / "cache").iterdir()) == []


def test_a_missing_or_untrusted_soundness_theorem_is_refused(monkeypatch, tmp_path):
    calls = _fake_build(monkeypatch, tmp_path)
    build_facts = {f"Verify.HeadSoftmax.{n}": SimpleNamespace(found=n != "rows_lt_sound", untrusted=[],
                                                              assumptions=[]) for n in hr.SOUNDNESS}
    _fake_build(monkeypatch, tmp_path, theorems=build_facts)
    with pytest.raises(RuntimeError, match="^Print Assumptions on Verify.HeadSoftmax found no rows_lt_sound$"):
        hr._theory_dir("8.16.1")
    facts = {f"Verify.HeadSoftmax.{n}": SimpleNamespace(found=True, untrusted=["b", "a"] if n == "row_ge_sound" else
                                                        ["a"], assumptions=[]) for n in hr.SOUNDNESS}
    _fake_build(monkeypatch, tmp_path, theorems=facts, untrusted_axioms=lambda name: ["z"])
    with pytest.raises(RuntimeError, match="^Verify.HeadSoftmax rests on assumptions of ours: a, b, z$"):
        hr._theory_dir("8.16.1")
    assert calls == []


# ----------------------------------------------------------------------------- survivors of the mutation pass, killed


def test_a_status_made_at_run_time_reads_as_its_value(monkeypatch):
    """Kills ``res.status != "checked"`` -> ``is not`` in replay_document (a status string built at run time, as a
    future caller may, is not the interned literal)."""
    checked = "".join(["chec", "ked"])
    monkeypatch.setattr(hr, "check", lambda *a, **k: hr.KernelResult(checked, "m", "8.16.1", 2, 0.5))
    assert hr.replay_document(_doc([GE, LT])) == (True, "m: 2 rows (0.50 s)")


def test_a_short_enclosure_and_an_lt_row_at_tau_2_5():
    """Kills ``len(v) != 2`` -> ``> 2`` (a one-number enclosure would index past it) and, in state's lt loop,
    ``tn * (S + total)`` -> ``tn | (S + total)`` (tau = 2/5: tn = 2)."""
    with pytest.raises(KernelDataError, match="^a score enclosure is not two integer strings"):
        KernelRow.from_json({**KernelRow(0, 1, 0, "lt", (0, 1), (), ()).to_json(), "target_score": ["1"]})
    lt = _row("lt", (0, _u(0.1)), [(_u(1.0), _u(1.2)), (_u(-5.0), _u(-4.0)), (_u(0.5), _u(0.6))])
    tb = hr.tables([lt], 6)
    # mass < 2/5 needs 1 + sum exp > 5/2: exp(0.9) = 2.46 alone suffices
    assert hr.state(tb, lt, Fraction(2, 5)) == Stated(_u(0.1), (0,), (_u(1.0),))
