"""The papers' claims: one package per paper (``ws24``, ``bietti23``, ``kvshift24``, ``pr26``, ``fp26``).

Each package exports ``PAPER`` (a :class:`verify.core.model.Paper`), registered under the ``verify.papers``
entry-point group exactly as a third-party claim pack is; it imports the layers it wires, by reference.
The one thing the papers share lives here: :func:`with_kernel_layer`, which attaches the kernel layer
(Coq) to every claim its catalog answers.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Mapping

from verify.core.model import Claim, Paper
from verify.evidence import Context, Evidence


def with_kernel_layer(p: Paper) -> Paper:
    """The paper with the kernel layer registered on every claim that the kernel catalog
    (:mod:`verify.kernel.catalog`) answers: a fourth check beside the claim's own three, reached by
    the claim id and variant label (reading the catalog imports no Coq and runs nothing)."""
    from verify.kernel import catalog

    answered = {s.claim for s in catalog.statements()}
    if not answered & {c.id for c in p.claims}:
        return p
    return dataclasses.replace(p, claims=tuple(_kernel_wired(c) if c.id in answered else c for c in p.claims))


def _kernel_wired(claim: Claim) -> Claim:
    def kernel(params: Mapping[str, Any], ctx: Context) -> Evidence:
        from verify.kernel.check import check

        changed = [o.name for o in claim.options if not o.variant and params.get(o.name) != o.default]
        return check(claim.id, claim.variant_label(params), changed, ctx)

    kernel.__qualname__ = f"kernel check of {claim.id}"
    return dataclasses.replace(claim, checks={**claim.checks, "kernel": kernel})
