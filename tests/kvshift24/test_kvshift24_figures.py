"""kvshift24's published figures and citations: only printed numbers stand under 'paper', the decode hazards
are labelled as implementation hazards, the falsifier cites its settings."""

from __future__ import annotations

import json

from verify.core import registry
from verify.frontends.cli import main


def _cli_json(capsys, *args):
    rc = main([*args, "--format", "json"])
    return rc, json.loads(capsys.readouterr().out)


def test_kvshift24_formula_figures_put_no_value_of_ours_under_paper(capsys):
    from verify.numeric.kvshift24 import check_theorem3

    rc, doc = _cli_json(capsys, "kvshift24:theorem1", "--masks", "as-displayed")
    (f1,) = doc["results"][0]["figures"]
    assert f1["rule"] == "bound" and isinstance(f1["paper"], str) and "no value printed" in f1["paper"]
    assert "0.001573" in f1["ours"] and f1["reproduced"]  # the evaluated bound is ours
    ev = check_theorem3(8, (256,), 32, 0, grid=5)
    assert [f.rule for f in ev.figures] == ["exact", "tolerance", "tolerance"]
    assert ev.figures[0].paper == "(0, 1)"  # the point the paper names
    for f in ev.figures[1:]:
        assert isinstance(f.paper, str) and "no value printed" in f.paper and "evaluated by us" in f.ours


def test_kvshift24_decode_hazards_labelled_and_falsifier_cites_the_settings():
    dec, fal = registry.get("kvshift24:decode"), registry.get("kvshift24:falsifier")
    assert "implementation hazards a decoder must avoid, not claims of the paper" in dec.statement
    assert dec.caveats[0].startswith("Implementation hazards, not claims of the paper")
    text = " ".join(fal.caveats) + fal.source
    for cite in ("Sec. 3.2", "hidden size 1024", "Appendix D", "length-512", "Appendix G", "2e-4 with 1000 warm-up",
                 "5 Dec 2024"):
        assert cite in text, cite
    assert "not reachable" not in fal.caveats[0] and "ICML 2025" not in text
