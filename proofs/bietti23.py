"""bietti23 — Bietti et al., Birth of a Transformer: A Memory Viewpoint, arXiv 2306.00802 (NeurIPS 2023).

Claims about trained two-layer models (previous-token, induction-key and output-recall probes).
"""

from __future__ import annotations

from verify.proofs.model import Claim, Paper

CLAIMS: list[Claim] = []

#: this paper as a plugin (the registry reads it; see :class:`verify.proofs.model.Paper`)
PAPER = Paper(key="bietti23", title="Bietti et al., Birth of a Transformer: A Memory Viewpoint, arXiv 2306.00802 (NeurIPS 2023)", claims=tuple(CLAIMS))
