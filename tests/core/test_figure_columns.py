"""Figures only where printed: a row under 'paper' holds a number the paper prints; our derivations stand under
'derived' and are never counted as reproduced; a figure a fitted parameter was chosen on is 'in-sample', the rest
'held-out', tallied apart."""

from __future__ import annotations

import pytest

from verify.core.model import figures_tally
from verify.evidence import FIGURE_COLUMNS, Evidence, Figure, Layer, Outcome, Status


def _ev(*figs: Figure) -> Evidence:
    return Evidence(layer=Layer.NUMERIC, status=Status.CONSISTENT, outcome=Outcome.HOLDS, figures=list(figs))


def test_columns_are_checked_and_derived_rows_never_count():
    assert set(FIGURE_COLUMNS) == {"paper", "derived", "in-sample", "held-out"}
    with pytest.raises(ValueError):
        Figure("x", 1, 1, True, column="printed")
    ev = _ev(Figure("a", 1, 1, True), Figure("b", 0, 0, True, column="derived"),
             Figure("c", 2, 3, False, column="held-out"), Figure("d", 2, 2, True, column="in-sample"))
    assert figures_tally([ev]) == (2, 3)  # the derived row is shown, not counted
    assert figures_tally([ev], "held-out") == (0, 1) and figures_tally([ev], "in-sample") == (1, 1)
    assert figures_tally([_ev(Figure("b", 0, 0, True, column="derived"))]) == (0, 0)


def test_kvshift24_derivations_are_not_counted_and_the_loose_bound_says_its_factor():
    from verify.core import registry
    from verify.core.model import run_claim
    from verify.evidence import Context

    c = registry.get("kvshift24:theorem1")
    r = run_claim(c, c.parse_params({}), Context(seed=0), layers=("numeric",))
    (f,) = [f for _, f in r.figures]
    assert f.column == "derived" and r.figures_reproduced is None
    assert "loose by a factor of at least 2.1" in f.note  # 2120x at p = 12 (bound 1.6e-3, error 7.4e-7)
    assert "published figures reproduced" not in r.reason
    t2 = registry.get("kvshift24:theorem2")
    r2 = run_claim(t2, t2.parse_params({"L": 16, "d": 8, "Lmax": 4}), Context(seed=0), layers=("numeric",))
    assert [f.column for _, f in r2.figures] == ["derived"] and "our reading" in r2.figures[0][1].figure


def test_pr26_fit_affected_figures_are_split_by_length():
    from verify.numeric import pr26_figures as fig

    figs = fig.lr_figures(0.07, trials=1000)
    cols = {f.figure: f.column for f in figs}
    assert sum(c == "in-sample" for c in cols.values()) == 10 and sum(c == "held-out" for c in cols.values()) == 4
    assert cols["Prop. 4: RoPE on attend-first, alpha_128"] == "held-out"
    assert cols["Prop. 3: alpha_60 of prev, sinusoidal, L0-fit"] == "in-sample"
    assert fig.fit_column(fig.LR_FIT_MAX_L) == "in-sample" and fig.fit_column(fig.LR_FIT_MAX_L + 1) == "held-out"


def test_audit_table_has_the_four_columns():
    from verify.reports.audit import _figures_table

    class R:
        figures = [("numeric", Figure("printed", 0.12, 0.13, False, rule="rounding", column="held-out")),
                   ("numeric", Figure("ours", 0, 0, True, rule="tolerance", column="derived"))]

    head, _, printed, derived = _figures_table(R())  # type: ignore[arg-type]
    assert head.startswith("| figure | paper | derived | fit | ours | reproduced |")
    assert "| printed | 0.12 |  | held-out |" in printed and "**no**" in printed
    assert "| ours |  | 0 |  |" in derived and "not counted" in derived
