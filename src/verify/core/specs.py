"""Claim specs: naming one claim variant (or many) in one string, and expectation files.

A *spec* names what to run, in the syntax shared by ``pytest --verify-claims`` and
``verify all --expect``:

==========================================  ==================================================
``ws24``                                    every claim of the paper, every recorded variant
``ws24:theorem2`` or ``theorem2``           the claim with its default options (as written)
``ws24:theorem2[transposed]``               a variant by its label (the display id's form)
``ws24:theorem2[orientation=transposed]``   a variant by option name
``ws24:theorem2[transposed,d=64,V=8]``      any option, including sizes, ``name=value``
``ws24:theorem2[*]``                        every recorded variant of the claim
==========================================  ==================================================

Several specs are separated by commas outside brackets:
``ws24:theorem2[orientation=transposed,d=64],ws24:eq14``.

:func:`run_id` is the canonical, re-parseable id of a claim variant: the display id
(``ws24:theorem2[transposed]``) when every size is at its default, otherwise the
non-default options are appended inside the brackets
(``ws24:theorem2[transposed,d=64,V=8]``).

An *expectations file* (``verify all --expect FILE``) maps specs to expected verdicts:

* JSON: ``{"ws24:theorem2[transposed]": "HOLDS WITH FIX", ...}``; or a previous
  ``verify all --format json`` document (its results' verdicts become the baseline);
* text: one ``SPEC: VERDICT`` (or ``SPEC = VERDICT`` or ``SPEC VERDICT``) per line;
  blank lines and ``#`` comments are ignored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

from verify.core.model import VERDICTS, Claim, InputError, Verdict

__all__ = ["split_specs", "parse_spec", "parse_specs", "run_id", "load_expectations"]


def split_specs(text: str) -> list[str]:
    """Split a comma-separated list of specs, ignoring commas inside ``[...]``.

    Raises:
        InputError: unbalanced brackets.
    """
    out: list[str] = []
    depth = 0
    cur = ""
    for ch in text:
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth < 0:
                raise InputError(f"unbalanced ']' in claim spec {text!r}")
        if ch == "," and depth == 0:
            if cur.strip():
                out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if depth != 0:
        raise InputError(f"unbalanced '[' in claim spec {text!r}")
    if cur.strip():
        out.append(cur.strip())
    return out


_SPEC = re.compile(r"^(?P<name>[^\[\]\s]+)(?:\[(?P<body>[^\[\]]*)\])?$")


def parse_spec(text: str) -> list[tuple[Claim, Mapping[str, Any]]]:
    """The claim variants one spec names, as ``(claim, parsed params)`` pairs.

    Raises:
        InputError: unknown paper or claim, unknown option or label, bad value.
    """
    from verify.core import registry

    m = _SPEC.match(text.strip())
    if not m:
        raise InputError(f"cannot read claim spec {text!r}; expected e.g. ws24:theorem2[orientation=transposed]")
    name, body = m.group("name"), m.group("body")
    if body is None and name.lower() in registry.paper_keys():
        return [(c, c.parse_params(dict(v))) for c in registry.paper_claims(name.lower()) for v in c.variants]
    items = [x.strip() for x in (body or "").split(",") if x.strip()]
    every = "*" in items
    items = [x for x in items if x != "*"]
    keyed: dict[str, str] = {}
    bare: list[str] = []
    for it in items:
        if "=" in it:
            k, v = (s.strip() for s in it.split("=", 1))
            k = k.lstrip("-")
            if k in keyed:
                raise InputError(f"{text!r} sets --{k} twice")
            keyed[k] = v
        else:
            bare.append(it)
    claim = _resolve(name, list(keyed), bare)
    # a bare value fills the first variant option (in declaration order) that takes it and is not yet
    # set: a run id lists its variant values in that order, so one value may name two options
    # (kvshift24:decode[raw-key,correct,correct]: --rope-offset correct, --alibi-distance correct)
    by_bare: set[str] = set()
    for value in bare:
        opts = [o for o in claim.options if o.variant and value in o.choices]
        if not opts:
            labels = [claim.variant_label(claim.parse_params(dict(v))) for v in claim.variants]
            raise InputError(f"{claim.id} has no variant {value!r}; variants: "
                             f"{', '.join(x for x in labels if x) or '(none)'}; or use name=value")
        free = [o for o in opts if o.name not in by_bare and o.name not in keyed]
        if not free:
            if all(o.name in by_bare for o in opts):
                raise InputError(f"{text!r} names the variant {value!r} twice")
            clash = next(o.name for o in opts if o.name in keyed)
            if keyed[clash] != value:
                raise InputError(f"{text!r} sets --{clash} twice")
            continue
        keyed[free[0].name] = value
        by_bare.add(free[0].name)
    if every:
        fixed = [o.name for o in claim.options if o.variant and o.name in keyed]
        if fixed:
            raise InputError(f"{text!r}: '*' means every recorded variant, but --{fixed[0]} picks one; drop one of them")
        out = []
        for v in claim.variants:
            raw = {**dict(v), **keyed}
            out.append((claim, claim.parse_params(raw)))
        return out
    return [(claim, claim.parse_params(keyed))]


def _resolve(name: str, keyed: list[str], bare: list[str]) -> Claim:
    """registry.resolve, where bare variant labels also disambiguate (``theorem2[transposed]``)."""
    from verify.core import registry

    try:
        return registry.resolve(name, keyed)
    except InputError:
        if not bare or ":" in name:
            raise
        fitting = [c for c in registry.all_claims() if c.name.lower() == name.strip().lower()
                   and all(c.option(k) is not None for k in keyed)
                   and all(any(o.variant and b in o.choices for o in c.options) for b in bare)]
        if len(fitting) == 1:
            return fitting[0]
        raise


def parse_specs(text: str) -> list[tuple[Claim, Mapping[str, Any]]]:
    """:func:`parse_spec` over a comma-separated list, duplicates (same :func:`run_id`) dropped."""
    out: list[tuple[Claim, Mapping[str, Any]]] = []
    seen: set[str] = set()
    for spec in split_specs(text):
        for claim, params in parse_spec(spec):
            rid = run_id(claim, params)
            if rid not in seen:
                seen.add(rid)
                out.append((claim, params))
    return out


def _fmt(v: Any) -> str:
    return str(v)


def run_id(claim: Claim, params: Mapping[str, Any]) -> str:
    """The canonical, re-parseable id of a claim variant (see the module docstring)."""
    parts = [_fmt(params[o.name]) for o in claim.options if o.variant and o.name in params]
    parts += [f"{o.name}={_fmt(params[o.name])}" for o in claim.options
              if not o.variant and o.name in params and params[o.name] != o.default]
    return f"{claim.id}[{','.join(parts)}]" if parts else claim.id


_TEXT_LINE = re.compile(r"^(?P<spec>\S+?)\s*(?:[:=]\s*|\s+)(?P<verdict>[A-Za-z][A-Za-z ]*?)\s*$")


def _check_verdict(v: Any, where: str) -> Verdict:
    if not isinstance(v, str) or v.strip().upper() not in VERDICTS:
        from verify.core.inputs import clip

        raise InputError(f"{where}: expected verdict {clip(repr(v))} is not one of: {', '.join(VERDICTS)}")
    return Verdict(v.strip().upper())


def load_expectations(path: str | Path) -> list[tuple[Claim, Mapping[str, Any], Verdict]]:
    """Read an expectations file (JSON or text; see the module docstring).

    Returns:
        ``(claim, params, expected verdict)`` triples; a paper key or ``[*]`` spec
        expands to each of its variants with the same expectation.

    Raises:
        InputError: unreadable file, bad syntax, unknown claim or verdict.
    """
    from verify.core.inputs import clip, read_input_file

    raw = read_input_file(path, "--expect")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"--expect {clip(path)}: not UTF-8 text (byte {e.start})") from None
    text = text.removeprefix("\ufeff")  # a UTF-8 byte-order mark is not part of the first spec
    pairs: list[tuple[Any, Any, str]] = []  # spec, verdict, where (checked below)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        def no_duplicates(items: list[tuple[str, Any]]) -> dict[str, Any]:
            keys = [k for k, _ in items]
            dup = next((k for k in keys if keys.count(k) > 1), None)
            if dup is not None:
                raise InputError(f"--expect {clip(path)}: the key {clip(dup)!r} appears twice")
            return dict(items)

        try:
            doc = json.loads(text, object_pairs_hook=no_duplicates)
        except json.JSONDecodeError as e:
            raise InputError(f"--expect {clip(path)}: invalid JSON at line {e.lineno}: {e.msg}") from None
        except (ValueError, RecursionError) as e:
            raise InputError(f"--expect {clip(path)}: unreadable JSON ({clip(e)})") from None
        if not isinstance(doc, dict):
            raise InputError(f"--expect {clip(path)}: expected a JSON object")
        if isinstance(doc.get("results"), list) and "schema" in doc:
            for r in doc["results"]:
                if not isinstance(r, dict):
                    raise InputError(f"--expect {clip(path)}: every result must be an object")
                spec = r.get("run_id") or r.get("display_id")
                pairs.append((spec, r.get("verdict"), f"{clip(path)}: {clip(spec)}"))
        else:
            for k in sorted(doc):
                pairs.append((k, doc[k], f"{clip(path)}: {clip(k)}"))
    else:
        for n, line in enumerate(text.splitlines(), 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            m = _TEXT_LINE.match(line)
            if not m:
                raise InputError(f"{clip(path)}:{n}: expected 'CLAIM: VERDICT', got {clip(line)!r}")
            pairs.append((m.group("spec"), m.group("verdict"), f"{clip(path)}:{n}"))
    out: list[tuple[Claim, Mapping[str, Any], Verdict]] = []
    first: dict[str, str] = {}
    for spec, verdict, where in pairs:
        v = _check_verdict(verdict, where)
        if not isinstance(spec, str):
            raise InputError(f"{where}: claim spec must be a string")
        try:
            named = parse_spec(spec)
        except InputError as e:
            raise InputError(f"{where}: {e}") from None
        for claim, params in named:
            rid = run_id(claim, params)
            if rid in first:
                raise InputError(f"{where}: {rid} already has an expectation ({first[rid]}); give each variant once")
            first[rid] = where
            out.append((claim, params, v))
    return out
