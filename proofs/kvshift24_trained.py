"""kvshift24: claims about trained models (the falsifier: learned KV-shift against vanilla attention).

Kept apart from :mod:`verify.proofs.kvshift24` (the constructions); that module appends these
claims to its ``CLAIMS``.  Heavy: not in the default ``verify all``.
"""

from __future__ import annotations

from verify.proofs.model import Claim

CLAIMS: list[Claim] = []
