"""The shared mechanism behind claim parts, figure columns and convention-dependent reasons: each line a refactor
could break is held to a value here (the mutation pass over kernel/check.py and core/model.py found these unreached
by the claims' own tests)."""

from __future__ import annotations

import pytest

from verify.core.model import Claim, Part, aggregate, only_part, run_claim
from verify.evidence import Context, Evidence, Figure, Layer, Outcome, Status
from verify.kernel.spec import KernelStatement


def test_part_keys_join_words_with_hyphens():
    from verify.core import registry

    assert [p.key for p in registry.get("fp26:fingerprint").parts] == ["algebra", "toy-training"]
    assert [p.key for p in registry.get("kvshift24:theorem3").parts] == ["formula", "minimiser"]


def test_a_timeout_beside_a_convention_answer_is_not_called_a_dependence():
    dep = Evidence(layer=Layer.SOLVER, status=Status.INCONCLUSIVE, summary="d",
                   numbers={"depends_on": {"option": "convention", "values": {"a": "fails", "b": "holds"}}})
    late = Evidence(layer=Layer.NUMERIC, status=Status.INCONCLUSIVE, summary="timeout")
    assert aggregate([dep], None)[1].startswith("depends on the convention (--convention): a FAILS, b HOLDS")
    assert aggregate([dep, late], None)[1] == "not every layer finished: solver inconclusive, numeric inconclusive"


def _claim(evs: list[Evidence], parts: tuple[Part, ...] = ()) -> Claim:
    checks = {str(e.layer): (lambda p, c, e=e: e) for e in evs}
    return Claim(id="x:y", title="t", source="s", statement="st", options=(), checks=checks, parts=parts)


def test_a_derived_figure_is_never_a_finding_and_only_part_keeps_an_unfinished_layer():
    fig = Figure("ours", 0, 1, False, column="derived")
    ev = Evidence(layer=Layer.NUMERIC, status=Status.CONSISTENT, outcome=Outcome.HOLDS, summary="n", figures=[fig])
    r = run_claim(_claim([ev]), {}, Context(seed=0), layers=("numeric",))
    assert not any(n.startswith("Published figure not reproduced") for n in r.notes)
    part = Part("whole", "main", "s", lambda p, evs: (Outcome.HOLDS, "holds", ["numeric"], {}))
    late = Evidence(layer=Layer.NUMERIC, status=Status.INCONCLUSIVE, summary="timeout")
    r = run_claim(_claim([late], (part,)), {}, Context(seed=0), layers=("numeric",))
    assert only_part(r, "whole").verdict == "INCONCLUSIVE"  # the part holds, the layer did not finish


def test_kernel_part_statements_are_reported_apart(tmp_path, monkeypatch):
    from verify.kernel import check as kc
    from verify.kernel.driver import build_theories, coq_version

    if coq_version() is None:
        pytest.skip("coqc not installed")
    d = tmp_path / "theories"
    d.mkdir()
    (d / "T.v").write_text("Require Import Reals Lra.\nOpen Scope R_scope.\nTheorem t (x : R) : x + 0 = x.\n"
                           "Proof. lra. Qed.\n")
    (d / "_CoqProject").write_text("-Q . Verify\nT.v\n")
    main = KernelStatement("x:y", "", "T", "t", "proves", "main", covers=("a", "b"))
    part = KernelStatement("x:y", "", "T", "t", "refutes", "part", covers=("a",), part="p")
    build = build_theories([main, part], theories=d)
    ev = kc.evidence_from_build(build, [main, part], ("b",))
    assert ev.status == "proved"  # the part's refutation does not set the layer's status
    assert ev.numbers["parts"]["p"]["status"] == "skipped" and "--b" in ev.numbers["parts"]["p"]["reading"]
    assert kc.evidence_from_build(build, [main, part]).numbers["parts"]["p"]["status"] == "refuted"
    # a changed option only the part does not cover leaves the main theorem's answer standing
    monkeypatch.setattr(kc, "statements_for", lambda claim, variant: [main, part])
    monkeypatch.setattr(kc, "cached_build", lambda *a, **k: build)
    ev = kc.check("x:y", "", ["b"], Context(seed=0))
    assert ev.status == "proved" and ev.numbers["parts"]["p"]["status"] == "skipped"
