"""pr26: claims about trained models (the AUC of alpha_L against trained heads).

Kept apart from :mod:`verify.proofs.pr26` (the constructions); that module appends these
claims to its ``CLAIMS``.  Heavy: not in the default ``verify all``.
"""

from __future__ import annotations

from verify.proofs.model import Claim

CLAIMS: list[Claim] = []
