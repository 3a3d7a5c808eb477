"""fp26 — Fingerprint, Not Blueprint, arXiv 2607.06621.

The rotational fingerprint D_head of trained previous-token heads.
"""

from __future__ import annotations

from verify.proofs.model import Claim, Paper

CLAIMS: list[Claim] = []

#: this paper as a plugin (the registry reads it; see :class:`verify.proofs.model.Paper`)
PAPER = Paper(key="fp26", title="Fingerprint, Not Blueprint, arXiv 2607.06621", claims=tuple(CLAIMS))
