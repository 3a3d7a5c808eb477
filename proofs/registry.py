"""The claim registry: papers as plugins, claims keyed ``paper:name``, loaded lazily per paper.

A paper is a :class:`~verify.proofs.model.Paper` (key, title, claims, plotters).  The built-in
papers live in ``verify.proofs.<key>`` (each module exports ``PAPER``); third-party packages add
theirs through the ``verify.papers`` entry-point group, one entry point per paper, named by the
paper key, whose value is ``module:PAPER`` (the README's "Adding a claim").  The registry imports
a paper module only when one of its claims is needed, so ``verify list`` stays fast (the layers
pull in sympy, z3 and torch only when checks run).

Name resolution (the README, "Using it"): a full id ``paper:name`` matches exactly;
a short name (``theorem2``) matches every claim with that name; a paper key
(``ws24``) is not a claim.  Options disambiguate: a candidate must accept every option
the user gave, so ``theorem2 --orientation transposed`` means ``ws24:theorem2``.
"""

from __future__ import annotations

import dataclasses
import importlib
import re
import sys
from functools import lru_cache
from typing import Any, Iterable, Mapping

from verify.evidence import Context, Evidence
from verify.proofs.model import Claim, InputError, Paper

#: the built-in papers: key -> module path; the order is the order of ``verify list``/``verify all``
BUILTIN: dict[str, str] = {
    "ws24": "verify.proofs.ws24",
    "bietti23": "verify.proofs.bietti23",
    "kvshift24": "verify.proofs.kvshift24",
    "pr26": "verify.proofs.pr26",
    "fp26": "verify.proofs.fp26",
}

#: the entry-point group third-party claim packs register their papers in
ENTRY_POINT_GROUP = "verify.papers"


@lru_cache(maxsize=None)
def _plugins() -> dict[str, object]:
    """Third-party papers: entry-point name (the paper key) -> the entry point (not yet loaded)."""
    from importlib.metadata import entry_points

    out: dict[str, object] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in BUILTIN or ep.name in out:
            continue  # a plugin never shadows a built-in paper or an earlier plugin of the same key
        out[ep.name] = ep
    return out


def paper_keys() -> list[str]:
    """Every paper key: the built-in papers in their order, then plugins sorted by key."""
    return list(BUILTIN) + sorted(_plugins())


@lru_cache(maxsize=None)
def paper(key: str) -> Paper:
    """The :class:`Paper` with this key (imports its module on first use).

    Raises:
        InputError: unknown paper key, or a plugin that does not load or does not export a
            valid ``Paper`` (the message names the package's entry point).
    """
    if key in BUILTIN:
        module = importlib.import_module(BUILTIN[key])
        obj = with_kernel_layer(module.PAPER)
    elif key in _plugins():
        ep = _plugins()[key]
        try:
            obj = ep.load()  # type: ignore[attr-defined]
        except (Exception, SystemExit) as exc:  # a broken plugin is the user's input: one line, exit 2
            raise InputError(f"the claim pack registering paper {key!r} ({ep.value}) failed to load: "  # type: ignore[attr-defined]
                             f"{type(exc).__name__}: {exc}") from None
        if not isinstance(obj, Paper):
            raise InputError(f"the entry point for paper {key!r} ({ep.value}) is a {type(obj).__name__}, "  # type: ignore[attr-defined]
                             "not a verify.proofs.model.Paper")
        if obj.key != key:
            raise InputError(f"the entry point named {key!r} exports paper {obj.key!r}; the names must match")
        _check_texts(obj)
    else:
        raise InputError(f"unknown paper {key!r}; known papers: {', '.join(paper_keys())}")
    return obj


#: a claim's name (after ``paper:``): what ids may hold, so that every report, terminal and JUnit XML file
#: can show them as they are (no control characters, no markup, no spaces)
CLAIM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")


def _check_texts(p: Paper) -> None:
    """Refuse a plugin paper whose claim ids or texts could not be written as they are: a claim
    name outside :data:`CLAIM_NAME`, or a control character in the title, source or statement
    (both made ``verify all --junit`` write malformed XML and ``verify list`` echo raw bytes).

    Raises:
        InputError: naming the paper and the offending claim (its id shown escaped).
    """
    for c in p.claims:
        name = c.id.split(":", 1)[1]
        if not CLAIM_NAME.fullmatch(name):
            raise InputError(f"paper {p.key!r} registers claim id {c.id[:60]!r}: a claim name is 1-64 letters, digits, "
                             "'_', '.', '+' or '-', starting with a letter or digit")
        for what, text in (("title", c.title), ("source", c.source), ("statement", c.statement), ("paper title", p.title)):
            if isinstance(text, str) and _CONTROL.search(text):
                raise InputError(f"paper {p.key!r}, claim {c.id!r}: its {what} holds a control character")


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


def paper_claims(key: str) -> tuple[Claim, ...]:
    """The claims of one paper (imports its module on first use).

    Raises:
        InputError: unknown paper key.
    """
    return paper(key).claims


def paper_title(key: str) -> str:
    """The paper's citation line (the key itself for an unknown paper)."""
    try:
        return paper(key).title
    except InputError:
        return key


_reported: set[str] = set()


def all_claims() -> list[Claim]:
    """Every registered claim, in registry order.

    A plugin paper that does not load (an exception or exit at import, not a ``Paper``, a bad claim
    id) is reported once on stderr and skipped: it never takes the built-in claims down.  Naming
    that paper itself (``verify audit KEY``) still refuses it in one line, exit 2.
    """
    out: list[Claim] = []
    for key in paper_keys():
        try:
            out.extend(paper_claims(key))
        except InputError as e:
            if key in BUILTIN:
                raise
            if key not in _reported:
                _reported.add(key)
                line = " ".join(_CONTROL.sub("?", str(e)).split())[:300]
                print(f"verify: warning: {line}; its claims are skipped", file=sys.stderr)
    return out


def get(claim_id: str) -> Claim:
    """The claim with this exact ``paper:name`` id.

    Raises:
        InputError: no such claim.
    """
    for c in all_claims():
        if c.id == claim_id:
            return c
    from verify.proofs.inputs import clip

    raise InputError(f"unknown claim {clip(claim_id, 40, quote=True)}")


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
        if key in paper_keys():
            raise InputError(f"{name!r} is a paper, not a claim; try 'verify audit {name}' or one of: "
                             + ", ".join(c.id for c in claims if c.paper == key))
        import difflib

        # a typed short name is matched against short names, and each match suggested by its full id(s)
        # (a short name such as theorem1 may belong to several papers)
        by_short: dict[str, list[str]] = {}
        for c in claims:
            by_short.setdefault(c.name.lower(), []).append(c.id)
        if ":" in key:
            close = difflib.get_close_matches(key, [c.id.lower() for c in claims], n=3, cutoff=0.6)
        else:
            close = [i for n in difflib.get_close_matches(key, list(by_short), n=2, cutoff=0.6) for i in by_short[n]]
            close = close[:4]
        hint = f"did you mean {' or '.join(close)}? " if close else ""
        from verify.proofs.inputs import clip

        raise InputError(f"unknown claim {clip(name, 40, quote=True)}; {hint}known claims: {', '.join(c.id for c in claims)}")
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
        hints.append(c.id + (f" (of these, only it takes {', '.join(own)})" if own else ""))
    shared = f" (every candidate takes {', '.join('--' + g for g in given)})" if given else ""
    raise InputError(f"{name!r} is ambiguous{shared}; candidates: {'; '.join(hints)}")
