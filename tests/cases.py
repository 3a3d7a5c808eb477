"""One table of cases for every layer: (claim, variant, layer, injected fault, expected status / verdict).

Each row runs one layer of one claim variant, through the registry as ``verify CLAIM`` runs it, either on the
shipped construction (``fault=None``) or with one named fault injected through :mod:`verify.faults`, and
states the status (and outcome) that layer must give.  ``tests/core/test_case_table.py`` drives the rows, one
parametrized test per layer; a row whose fault a layer does not see is not listed (the row would show nothing).

A fault is a construction corrupted in one place, named after what it does; ``make`` receives the shipped
function and returns the corrupted one.  Every fault row has a clean row of the same claim, variant and layer
with a different expectation (``test_every_fault_row_changes_its_clean_row`` checks it), so each row can fail
both ways.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import sympy as sp

from verify.constructions import bilinear, pe  # noqa: F401 (importing a construction registers its seams)
from verify.constructions import kvshift24 as kc
from verify.numeric import bietti_model, ws24  # noqa: F401 (importing a layer module registers its seams)


@dataclass(frozen=True)
class Fault:
    """One corruption of a construction: the seam it replaces and how (``make(shipped) -> corrupted``)."""

    seam: str
    make: Callable[[Callable[..., Any]], Callable[..., Any]]
    doc: str


FAULTS: dict[str, Fault] = {
    "alibi sign flipped in the shared logits": Fault(
        "kvshift24.logits", lambda f: lambda terms, dq, sigma, m, zero=0: f(terms, dq, sigma, -m, zero),
        "kvshift24 (arXiv 2411.19574 v2) Eqs. 4-6: the exponent <x_L, k>/sigma + m dist for IH and KVSA alike, "
        "so KVSA - IH of the repaired table stays 0 and only the per-side comparison sees it"),
    "KVSA reads key x_s": Fault(
        "kvshift24.kvsa_term", lambda f: lambda s, L, a1, a2, b1, b2: f(s, L, a2, a1, b1, b2),
        "kvshift24 Definition 1: KVSA's summand reads key x_s instead of x_{s-1} (a1 and a2 swapped)"),
    "layer 1 attends to tau = s": Fault(
        "kvshift24.t1_layer1_weights",
        lambda f: lambda s, r, masks, one=1: f(s, r, kc.T1Masks(masks.name, False, masks.layer2_interior), one),
        "kvshift24 Theorem 1 / Appendix A: the as-displayed layer 1 also attends to the current position"),
    "model score lost": Fault(
        "ws24.PrevTokenConstruction.model_score", lambda f: lambda self, v, gram: 0,
        "ws24 Theorem 2 (Eq. 13): the model's own previous-token score is 0 while the display still reads chi(v)"),
    "RPE index off by one at t = 3": Fault(
        "ws24.PrevTokenConstruction.rel_offset", lambda f: lambda t, s: s - t - sp.KroneckerDelta(t, 3),
        "ws24 Theorem 2: the layer-1 score at (t, t-1) reads r_{-2} at t = 3, so it depends on t"),
    "association scaled by 1/4": Fault(
        "ws24.PrevTokenConstruction.term", lambda f: lambda k, coef, o: (coef / 4,) + f(k, coef, o)[1:],
        "ws24 Eq. 13: every term of W^1_K carries chi(k)/4 (a scale bug inside each term's own triangle bound)"),
    "W^1_K transposed in the built model": Fault(
        "numeric.ws24._dense", lambda f: lambda con, g: f(con, g).T,
        "ws24 Theorem 2 (Eq. 13): the built model's W^1_K is the transpose of the displayed matrix, so the "
        "model's own previous-token score loses chi(v) while the display still reads it"),
    "layer-1 query read from the previous position": Fault(
        "numeric.bietti_model._project", lambda f: lambda fr, tokens, enc, M: f(fr, tokens.roll(1, dims=1), enc, M),
        "ws24 Theorem 2: the built model's layer-1 query reads z_(t-1) for z_t; with chi constant the score at "
        "s = t-1 is unchanged, so only the index probe (distinct chi) sees it"),
    "copy offset floor(L/2)": Fault(
        "pe.ceil_half", lambda f: lambda L: L // 2,
        "pr26 Theorem 2: copy's target offset floor(L/2) instead of ceil(L/2)"),
    "an exact tie counts as attending": Fault(
        "pe.attends", lambda f: lambda m: m >= 0,
        "pr26: a row attends to its target iff its margin is > 0; the fault accepts a margin of 0"),
}


@dataclass(frozen=True)
class Case:
    """One row: run ``layer`` of ``claim`` at ``variant`` with ``fault`` injected (None: the shipped code).

    ``status``/``outcome`` are what the layer must give (``layer="verdict"``: ``status`` is the claim's verdict
    over the symbolic, solver and numeric layers); ``says``, when given, must appear in the evidence's
    summary or witness."""

    claim: str
    variant: dict[str, Any]
    layer: str
    fault: str | None
    status: str
    outcome: str | None = None
    says: str = ""
    note: str = field(default="", compare=False)

    @property
    def id(self) -> str:
        v = ",".join(f"{k}={val}" for k, val in self.variant.items() if k in VARIANT_KEYS)
        return f"{self.claim}[{v}]-{self.layer}-{self.fault or 'clean'}"


#: the options that name a variant in a row's test id (the others only size the run)
VARIANT_KEYS = ("fix", "masks", "orientation")

KV2_FIXED = {"fix": "mask+scale", "L": 32, "d": 16, "Lmax": 5}
KV2_NONE = {"fix": "none", "L": 32, "d": 16, "Lmax": 5}
KV1 = {"masks": "as-displayed", "pmax": 12, "d": 64}
WS24 = {"orientation": "read-score", "convention": "query-key", "Vmax": 4, "V": 16, "d": 512, "T": 8, "N": 64}

C = Case
CASES: list[Case] = [
    # ---- kvshift24:theorem2 (KVSA equals IH once the fix repairs it; Eqs. 4-6)
    C("kvshift24:theorem2", KV2_FIXED, "symbolic", None, "proved", "holds"),
    C("kvshift24:theorem2", KV2_FIXED, "solver", None, "proved", "holds"),
    C("kvshift24:theorem2", KV2_FIXED, "numeric", None, "consistent", "holds"),
    C("kvshift24:theorem2", KV2_FIXED, "kernel", None, "proved", "holds"),
    C("kvshift24:theorem2", KV2_FIXED, "verdict", None, "FAILS"),  # the existence part: no Eqs. 4-6 layer equals IH
    C("kvshift24:theorem2", KV2_NONE, "symbolic", None, "refuted", "fails"),
    C("kvshift24:theorem2", KV2_NONE, "solver", None, "refuted", "fails"),
    C("kvshift24:theorem2", KV2_FIXED, "symbolic", "alibi sign flipped in the shared logits", "error"),
    C("kvshift24:theorem2", KV2_FIXED, "solver", "alibi sign flipped in the shared logits", "error"),
    C("kvshift24:theorem2", KV2_FIXED, "verdict", "alibi sign flipped in the shared logits", "INCONCLUSIVE"),
    C("kvshift24:theorem2", KV2_NONE, "symbolic", "alibi sign flipped in the shared logits", "error"),
    C("kvshift24:theorem2", KV2_NONE, "solver", "alibi sign flipped in the shared logits", "error"),
    C("kvshift24:theorem2", KV2_FIXED, "symbolic", "KVSA reads key x_s", "error", says="independent evaluation"),
    C("kvshift24:theorem2", KV2_FIXED, "solver", "KVSA reads key x_s", "error"),
    C("kvshift24:theorem2", KV2_FIXED, "numeric", "KVSA reads key x_s", "error"),
    C("kvshift24:theorem2", KV2_FIXED, "verdict", "KVSA reads key x_s", "INCONCLUSIVE"),
    # ---- kvshift24:theorem1 (the as-displayed masks give the induction head; Appendix A)
    C("kvshift24:theorem1", KV1, "symbolic", None, "proved", "holds"),
    C("kvshift24:theorem1", KV1, "numeric", None, "consistent", "holds"),
    C("kvshift24:theorem1", KV1, "symbolic", "layer 1 attends to tau = s", "error", says="independent evaluation"),
    C("kvshift24:theorem1", KV1, "numeric", "layer 1 attends to tau = s", "error"),
    # ---- ws24:theorem2 (Eq. 13 read as the model's score)
    C("ws24:theorem2", WS24, "symbolic", None, "proved", "holds"),
    C("ws24:theorem2", WS24, "solver", None, "proved", "holds"),
    C("ws24:theorem2", WS24, "numeric", None, "consistent", "holds"),
    # read-score reads the display the model's way: losing the model's score loses the reading with it
    C("ws24:theorem2", WS24, "symbolic", "model score lost", "refuted", "fails", says="the score is 0"),
    C("ws24:theorem2", WS24, "symbolic", "RPE index off by one at t = 3", "refuted", "fails",
      says="independent of the position t"),
    C("ws24:theorem2", WS24, "symbolic", "association scaled by 1/4", "refuted", "fails"),
    C("ws24:theorem2", WS24, "solver", "association scaled by 1/4", "refuted", "fails", says="|score - target|"),
    C("ws24:theorem2", WS24, "numeric", "association scaled by 1/4", "consistent", "fails"),
    C("ws24:theorem2", WS24, "numeric", "W^1_K transposed in the built model", "consistent", "fails",
      says="the model's own previous-token score misses chi(v)"),
    C("ws24:theorem2", WS24, "numeric", "layer-1 query read from the previous position", "consistent", "fails",
      says="(index probe)"),
    # ---- pr26:theorem2 and pr26:prop1 (strict attention: a tie is a failure)
    C("pr26:theorem2", {}, "numeric", None, "consistent", "holds"),
    C("pr26:theorem2", {}, "numeric", "copy offset floor(L/2)", "consistent", "fails"),
    C("pr26:theorem2", {}, "numeric", "an exact tie counts as attending", "consistent", "fails"),
    C("pr26:prop1", {}, "symbolic", None, "proved", "holds"),
    C("pr26:prop1", {}, "numeric", None, "consistent", "holds"),
    C("pr26:prop1", {}, "symbolic", "an exact tie counts as attending", "refuted", "fails"),
    C("pr26:prop1", {}, "numeric", "an exact tie counts as attending", "consistent", "fails"),
]

LAYERS = ("symbolic", "solver", "numeric", "kernel", "verdict")


def rows(layer: str) -> list[Any]:
    """The rows of one layer as pytest params (ids name claim, variant, layer and fault)."""
    import pytest

    return [pytest.param(c, id=c.id) for c in CASES if c.layer == layer]


__all__ = ["Case", "Fault", "FAULTS", "CASES", "LAYERS", "rows"]
