"""The claim registry: papers as plugins, claims keyed ``paper:name``, loaded lazily per paper.

A paper is a :class:`~verify.core.model.Paper` (key, title, claims, plotters, api).  Every paper, the
built-in ones included, registers through the ``verify.papers`` entry-point group: one entry point per
paper, named by the paper key, whose value is ``module:PAPER`` (docs/adding-a-claim.md).  The built-in
papers are the entry points of this distribution (``verify-attention``; its pyproject.toml lists
``verify.proofs.<key>:PAPER``), shown first in :data:`BUILTIN_ORDER`; third-party packs follow, sorted by
key, and never shadow a built-in key.  The registry imports a paper only when one of its claims is
needed, so ``verify list`` of one paper loads that paper only (the layers pull in sympy, z3 and torch
only when checks run).

Name resolution (the README, "Using it"): a full id ``paper:name`` matches exactly;
a short name (``theorem2``) matches every claim with that name; a paper key
(``ws24``) is not a claim.  Options disambiguate: a candidate must accept every option
the user gave, so ``theorem2 --orientation transposed`` means ``ws24:theorem2``.
"""

from __future__ import annotations

import re
import sys
from functools import lru_cache
from typing import Any, Iterable

from verify.core.model import Claim, InputError, Paper

#: the entry-point group every paper registers in (the built-in ones and third-party claim packs)
ENTRY_POINT_GROUP = "verify.papers"
#: the distribution whose entry points are the built-in papers
DISTRIBUTION = "verify-attention"
#: the built-in papers' order in ``verify list`` and ``verify all`` (a key not registered is left out)
BUILTIN_ORDER = ("ws24", "bietti23", "kvshift24", "pr26", "fp26", "impl")


def _dist_name(ep: Any) -> str:
    dist = getattr(ep, "dist", None)
    name = getattr(dist, "name", "") or ""
    return name.lower().replace("_", "-")


@lru_cache(maxsize=None)
def _registered() -> tuple[dict[str, Any], dict[str, Any]]:
    """(built-in, third-party): paper key -> its entry point (not yet loaded).

    Raises:
        InputError: this distribution registers no paper (it is not installed: ``pip install -e .``).
    """
    from importlib.metadata import entry_points

    builtin: dict[str, Any] = {}
    others: dict[str, Any] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if _dist_name(ep) == DISTRIBUTION:
            builtin.setdefault(ep.name, ep)
        else:
            others.setdefault(ep.name, ep)  # the first of two plugins with one key wins
    if not builtin:
        raise InputError(f"no built-in paper is registered: the {DISTRIBUTION} distribution's entry points are missing "
                         "(install it: pip install -e .)")
    ordered = {k: builtin[k] for k in BUILTIN_ORDER if k in builtin}
    ordered.update({k: builtin[k] for k in sorted(builtin) if k not in ordered})
    return ordered, {k: v for k, v in others.items() if k not in builtin}


def builtin_keys() -> list[str]:
    """The built-in papers' keys, in :data:`BUILTIN_ORDER`."""
    return list(_registered()[0])


def _plugins() -> dict[str, Any]:
    """Third-party papers: entry-point name (the paper key) -> the entry point (not yet loaded)."""
    return _registered()[1]


def paper_keys() -> list[str]:
    """Every paper key: the built-in papers in their order, then plugins sorted by key."""
    return builtin_keys() + sorted(_plugins())


def paper_module(key: str) -> str:
    """The module that registers paper ``key`` (its entry point's module: ``verify.proofs.pr26`` for pr26).

    Raises:
        InputError: unknown paper key.
    """
    builtin, plugins = _registered()[0], _plugins()
    ep = builtin.get(key) or plugins.get(key)
    if ep is None:
        raise InputError(f"unknown paper {key!r}")
    return str(ep.module)


@lru_cache(maxsize=None)
def paper(key: str) -> Paper:
    """The :class:`Paper` with this key (imports its module on first use).

    Raises:
        InputError: unknown paper key, or a plugin that does not load or does not export a
            valid ``Paper`` (the message names the package's entry point).
    """
    builtin, plugins = _registered()[0], _plugins()
    if key in builtin or key in plugins:
        ep = builtin.get(key) or plugins[key]
        try:
            obj = ep.load()
        except (Exception, SystemExit) as exc:  # a broken plugin is the user's input: one line, exit 2
            if key in builtin:
                raise
            raise InputError(f"the claim pack registering paper {key!r} ({ep.value}) failed to load: "
                             f"{type(exc).__name__}: {exc}") from None
        if not isinstance(obj, Paper):
            raise InputError(f"the entry point for paper {key!r} ({ep.value}) is a {type(obj).__name__}, "
                             "not a verify.core.model.Paper")
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
            if key in builtin_keys():
                raise
            if key not in _reported:
                _reported.add(key)
                line = " ".join(_CONTROL.sub("?", str(e)).split())[:300]
                print(f"verify: warning: {line}; its claims are skipped", file=sys.stderr)
    return out


def get(claim_id: str) -> Claim:
    """The claim with this exact ``paper:name`` id; only that paper is loaded (a worker process resolving
    one claim imports one paper).

    Raises:
        InputError: no such claim.
    """
    key = claim_id.split(":", 1)[0]
    if key in paper_keys():
        for c in paper_claims(key):
            if c.id == claim_id:
                return c
    from verify.core.inputs import clip

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
    paper_key = key.split(":", 1)[0]
    if ":" in key and paper_key in paper_keys():  # a full id: its paper alone is loaded
        claims = list(paper_claims(paper_key))
        if not any(c.id.lower() == key for c in claims):
            claims = all_claims()  # unknown: the message lists (and suggests from) every claim
    else:
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
        from verify.core.inputs import clip

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
