"""The shared case table (tests/cases.py) driven through every layer: one parametrized test per layer runs
its rows through the registry, with the row's fault injected by name through :mod:`verify.faults`."""

from __future__ import annotations

import contextlib

import pytest
from cases import CASES, FAULTS, LAYERS, Case, rows

from verify import faults
from verify.core import registry
from verify.core.model import run_claim, run_layer
from verify.evidence import Context

PYTHON_LAYERS = ("symbolic", "solver", "numeric")


def _injected(case: Case) -> contextlib.AbstractContextManager[None]:
    if case.fault is None:
        return contextlib.nullcontext()
    f = FAULTS[case.fault]
    return faults.inject(f.seam, f.make(faults.original(f.seam)))


def _check_layer(case: Case) -> None:
    claim = registry.get(case.claim)
    params = claim.parse_params(case.variant)
    with _injected(case):
        ev = run_layer(claim, params, Context(seed=0), case.layer)
    got = (ev.status, ev.outcome) if case.outcome is not None else ev.status
    want = (case.status, case.outcome) if case.outcome is not None else case.status
    assert got == want, f"{case.id}: {ev.status} ({ev.outcome}): {ev.summary}"
    if case.says:
        assert case.says in f"{ev.summary} {ev.witness}", f"{case.id}: {case.says!r} not in {ev.summary!r} {ev.witness!r}"


@pytest.mark.parametrize("case", rows("symbolic"))
def test_symbolic(case):
    _check_layer(case)


@pytest.mark.parametrize("case", rows("solver"))
def test_solver(case):
    _check_layer(case)


@pytest.mark.parametrize("case", rows("numeric"))
def test_numeric(case):
    _check_layer(case)


@pytest.mark.parametrize("case", rows("kernel"))
def test_kernel(case):
    from kernel_support import need_coq

    need_coq()
    _check_layer(case)


@pytest.mark.parametrize("case", rows("verdict"))
def test_verdict(case):
    """The claim's verdict over the Python layers (the kernel restates the construction in Coq, so a Python
    fault cannot reach it: its own rows say so)."""
    claim = registry.get(case.claim)
    params = claim.parse_params(case.variant)
    with _injected(case):
        r = run_claim(claim, params, Context(seed=0), layers=PYTHON_LAYERS)
    assert r.verdict == case.status, f"{case.id}: {r.verdict}: {r.reason}"


def test_every_row_names_a_layer_a_fault_and_a_seam():
    for c in CASES:
        assert c.layer in LAYERS, c.id
        assert c.fault is None or c.fault in FAULTS, c.id
    assert {f.seam for f in FAULTS.values()} <= set(faults.names())
    assert set(FAULTS) == {c.fault for c in CASES} - {None}, "a fault without a row"


def test_every_fault_row_changes_its_clean_row():
    """A fault row is a check that can fail: the same claim, variant and layer without the fault expects
    something else."""
    clean = {(c.claim, repr(c.variant), c.layer): (c.status, c.outcome) for c in CASES if c.fault is None}
    for c in CASES:
        if c.fault is not None:
            key = (c.claim, repr(c.variant), c.layer)
            assert key in clean, f"{c.id}: no clean row"
            assert clean[key] != (c.status, c.outcome), f"{c.id}: expects what the clean row expects"


def test_an_unknown_seam_is_refused_and_an_injection_is_undone():
    with pytest.raises(KeyError, match="no fault seam named"):
        with faults.inject("kvshift24.no_such_function", lambda: None):
            pass
    from verify.constructions import kvshift24 as kc
    from verify.symbolic import kvshift24 as S

    shipped = kc.logits
    assert S.logits is shipped  # the symbolic layer imported it by name
    with faults.inject("kvshift24.logits", lambda *a, **k: []):
        assert kc.logits is not shipped and S.logits is kc.logits
    assert kc.logits is shipped and S.logits is shipped
    with pytest.raises(RuntimeError):
        with faults.inject("kvshift24.logits", lambda *a, **k: []):
            raise RuntimeError
    assert kc.logits is shipped and S.logits is shipped
