"""ws24: claims about trained models (the trained two-layer model: APE decay, the falsifier, Prop. 3).

Kept apart from :mod:`verify.proofs.ws24` (the constructions); that module appends these
claims to its ``CLAIMS``.  Heavy: not in the default ``verify all``.
"""

from __future__ import annotations

from verify.proofs.model import Claim

CLAIMS: list[Claim] = []
