"""The claim registry: claims keyed ``paper:name``, loaded lazily per paper.

Each paper module (``verify.proofs.ws24``, ...) exposes ``CLAIMS: list[Claim]``.  The
registry imports a paper module only when one of its claims is needed, so ``verify
list`` stays fast (the layers pull in sympy, z3 and torch only when checks run).

Name resolution (the README, "Using it"): a full id ``paper:name`` matches exactly;
a short name (``theorem2``) matches every claim with that name; a paper key
(``ws24``) is not a claim.  Options disambiguate: a candidate must accept every option
the user gave, so ``theorem2 --orientation transposed`` means ``ws24:theorem2``.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Iterable

from verify.proofs.model import Claim, InputError

#: paper key -> module path; the order is the order of ``verify list``/``verify all``
PAPERS: dict[str, str] = {
    "ws24": "verify.proofs.ws24",
    "kvshift24": "verify.proofs.kvshift24",
    "pr26": "verify.proofs.pr26",
}

PAPER_TITLES: dict[str, str] = {
    "ws24": "Wang & Sato, Rethinking Associative Memory Mechanism in Induction Head, arXiv 2412.11459 v2 (COLM 2025)",
    "bietti23": "Bietti et al., Birth of a Transformer: A Memory Viewpoint, arXiv 2306.00802 (NeurIPS 2023)",
    "kvshift24": "Xu et al., KV Shifting Attention Enhances Language Modeling, arXiv 2411.19574 v2",
    "pr26": "A Positional Realizability Theory of Length Generalization in Single-Head Attention (TMLR 2026)",
    "fp26": "Fingerprint, Not Blueprint, arXiv 2607.06621",
}


@lru_cache(maxsize=None)
def paper_claims(paper: str) -> tuple[Claim, ...]:
    """The claims of one paper (imports its module on first use).

    Raises:
        InputError: unknown paper key.
    """
    if paper not in PAPERS:
        raise InputError(f"unknown paper {paper!r}; known papers: {', '.join(PAPERS)}")
    module = importlib.import_module(PAPERS[paper])
    return tuple(module.CLAIMS)


def all_claims() -> list[Claim]:
    """Every registered claim, in registry order."""
    out: list[Claim] = []
    for paper in PAPERS:
        out.extend(paper_claims(paper))
    return out


def get(claim_id: str) -> Claim:
    """The claim with this exact ``paper:name`` id.

    Raises:
        InputError: no such claim.
    """
    for c in all_claims():
        if c.id == claim_id:
            return c
    raise InputError(f"unknown claim {claim_id!r}")


def resolve(name: str, given_options: Iterable[str] = ()) -> Claim:
    """Resolve a full or short claim name, using the given option names to disambiguate.

    Args:
        name: ``paper:name`` or a short ``name`` (case-insensitive).
        given_options: option names the user passed (without dashes).

    Returns:
        The unique matching claim.

    Raises:
        InputError: unknown name (listing the known ids) or ambiguous name (listing the
            candidates and the options that would tell them apart).
    """
    key = name.strip().lower()
    claims = all_claims()
    if ":" in key:
        candidates = [c for c in claims if c.id.lower() == key]
    else:
        candidates = [c for c in claims if c.name.lower() == key]
    if not candidates:
        if key in PAPERS:
            raise InputError(f"{name!r} is a paper, not a claim; try 'verify audit {name}' or one of: "
                             + ", ".join(c.id for c in claims if c.paper == key))
        import difflib

        names = [c.id for c in claims] + sorted({c.name for c in claims})
        close = difflib.get_close_matches(key, [n.lower() for n in names], n=3, cutoff=0.6)
        # a short name whose full id is already suggested adds nothing
        close = [n for n in close if not any(x.endswith(":" + n) for x in close)]
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        from verify.proofs.inputs import clip

        raise InputError(f"unknown claim {clip(repr(name), 40)}; {hint}known claims: {', '.join(c.id for c in claims)}")
    given = [g for g in given_options]
    fitting = [c for c in candidates if all(c.option(g) is not None for g in given)]
    if len(fitting) == 1:
        return fitting[0]
    if not fitting:
        if len(candidates) == 1:
            bad = [g for g in given if candidates[0].option(g) is None]
            raise InputError(f"{candidates[0].id} takes no option {', '.join('--' + b for b in bad)}")
        raise InputError(f"no claim named {name!r} takes options {', '.join('--' + g for g in given)}; "
                         f"candidates: {', '.join(c.id for c in candidates)}")
    hints = []
    for c in fitting:
        own = [o.flag for o in c.options if all(other.option(o.name) is None for other in fitting if other is not c)]
        hints.append(c.id + (f" (takes {', '.join(own)})" if own else ""))
    shared = f" (every candidate takes {', '.join('--' + g for g in given)})" if given else ""
    raise InputError(f"{name!r} is ambiguous{shared}; candidates: {'; '.join(hints)}")
