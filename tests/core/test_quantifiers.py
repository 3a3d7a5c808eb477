"""Every claim says what its statement quantifies and what its check decides it over (``verify show``)."""

from __future__ import annotations

import dataclasses

from verify.core import registry
from verify.frontends.cli import main


def _missing(claims) -> list[str]:
    return [c.id for c in claims if not (c.quantifiers[0].strip() and c.quantifiers[1].strip())]


def test_every_claim_states_its_quantifiers():
    claims = registry.all_claims()
    assert _missing(claims) == []
    # fault: a claim that drops them is named
    bad = dataclasses.replace(claims[0], quantifiers=("", ""))
    assert _missing([bad, *claims[1:]]) == [claims[0].id]


def test_show_prints_statement_and_check_quantifiers_and_parts(capsys):
    assert main(["show", "kvshift24:theorem2"]) == 0
    out = capsys.readouterr().out
    assert "quantifiers of the statement: there exists a layer of Eqs. 4-6" in out
    assert "quantifiers of the check:" in out and "part existence (main, load-bearing)" in out
    assert "(part existence) Verify.Kvshift24Exists.theorem2_no_eq46_layer_equals_ih refutes" in out
