"""The referee's letter: a short Markdown audit of one paper, with the full evidence in an appendix.

``verify audit PAPER --report LETTER.md --appendix APPENDIX.md`` writes both: the letter is what a referee
attaches, the appendix (:func:`verify.reports.audit.audit_markdown`) holds every layer's evidence.  The letter:

* page one (at most :data:`PAGE_ONE_LINES` lines): the paper, what was checked and what was not, one row per claim
  (the heavy ones included, from their stored confirmatory result or "not run here") with its verdicts and one
  sentence of reason, and the trusted base (Coq and its checker, the solvers, which claims rest on numerics only);
* one section per claim (at most :data:`CLAIM_LINES` lines): the paper's words quoted verbatim from the paper's
  stored excerpts (``proofs/<paper>/quotes.json``, with their location and source) or, where the text is not
  reachable, our reading labelled as ours; each variant's verdict; one witness; the layers' results in one line
  with a link to the appendix; for a claim decided under a frozen protocol, its hash and the confirmatory run;
* a closing section "Hazards for implementers (not claims of the paper)" for the variants whose provenance is
  ``hazard``;
* at most :data:`LETTER_LINES` lines in all.

Quotes are data: the letter prints only stored excerpts, character for character (a test reads every quote back).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

from verify.core.model import FAILS, ClaimResult
from verify.evidence import Layer, Status
from verify.reports.audit import _cell as _audit_cell
from verify.reports.audit import _slug  # the appendix's anchors: the letter links to them

PAGE_ONE_LINES = 60
CLAIM_LINES = 25
LETTER_LINES = 300
QUOTES_FILE = "quotes.json"
#: per claim, at most three lines of arithmetic a reader can redo by hand (ours, written once beside the claims)
BY_HAND_FILE = "by_hand.json"
BY_HAND_LINES = 3


def _paper_data(paper: str, name: str) -> dict[str, Any]:
    """A JSON file beside the module that registers ``paper`` ({} when there is none)."""
    import importlib

    from verify.core import registry

    module = importlib.import_module(registry.paper_module(paper))
    path = Path(module.__file__ or "").with_name(name)
    return json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}


def stored_quotes(paper: str) -> dict[str, list[dict[str, str]]]:
    """``{claim id: [{"text", "where", "source", "ref"}]}`` from the paper package's ``quotes.json`` ({} when it
    has none): short verbatim excerpts of the paper with their location and the copy they were read from."""
    return _paper_data(paper, QUOTES_FILE)


def by_hand(paper: str) -> dict[str, list[str]]:
    """``{claim id: [line, ...]}``: the arithmetic a reader can redo by hand (``by_hand.json``, ours)."""
    return _paper_data(paper, BY_HAND_FILE)


def read_stored(folder: str | Path, paper: str) -> list[dict[str, Any]]:
    """The stored confirmatory results of ``paper``'s claims in ``folder`` (``verify CLAIM --confirmatory --format
    json`` documents, one or more results each); [] when the folder does not exist.

    Raises:
        InputError: a file there that is not such a document (one line, before any work).
    """
    from verify.core.model import InputError

    out: list[dict[str, Any]] = []
    base = Path(folder)
    if not base.is_dir():
        return out
    for f in sorted(base.glob("*.json")):
        try:
            doc = json.loads(f.read_text(encoding="utf-8"))
            rows = [r for r in doc["results"] if r["paper"] == paper]
            for r in rows:
                r["verdict"], r["reason"], r["claim"]  # noqa: B018 - the fields the letter reads
                r["stored_file"] = str(f)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(f"--stored: {f} is not a stored verify result ({type(exc).__name__}: {exc})") from None
        out += rows
    return out


def _clip(text: str, n: int = 160) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3].rstrip() + "..."


def _layers_word(r: ClaimResult) -> str:
    return " · ".join(f"{ev.layer} {ev.status}" for ev in r.evidence if ev.status != Status.SKIPPED) or "no layer ran"


def _witness_line(r: ClaimResult) -> str:
    """One witness in the paper's notation: the most exact finished layer's summary, clipped."""
    order = (Layer.KERNEL, Layer.SYMBOLIC, Layer.SOLVER, Layer.NUMERIC)
    for layer in order:
        for ev in r.evidence:
            if ev.layer == layer and ev.status in (Status.REFUTED, Status.PROVED, Status.CONSISTENT) and ev.summary:
                return f"{ev.layer}: {_clip(ev.summary, 230)}"
    return _clip(r.reason, 230)


def _heavy_rows(stored: Sequence[Mapping[str, Any]], claim_id: str) -> list[Mapping[str, Any]]:
    return [d for d in stored if d.get("claim") == claim_id]


def letter_markdown(paper: str, results: Sequence[ClaimResult], stored: Sequence[Mapping[str, Any]] = (), *,
                    appendix: str = "", not_checked: Sequence[str] = ()) -> str:
    """The letter for ``paper`` from this run's ``results`` and the ``stored`` confirmatory results (JSON result
    dicts of heavy claims, e.g. ``results/confirmatory/*.json``); ``appendix``: the appendix's file name, linked from
    every claim (the JSON when empty)."""
    from verify.core import registry

    quotes = stored_quotes(paper)
    hand = by_hand(paper)
    claims = registry.paper_claims(paper)
    by_claim: dict[str, list[ClaimResult]] = {}
    for r in results:
        by_claim.setdefault(r.claim.id, []).append(r)
    hazards = [r for r in results if r.provenance.kind == "hazard"]
    lines = _page_one(paper, claims, by_claim, stored, not_checked)
    for c in claims:
        lines += _claim_section(c, [r for r in by_claim.get(c.id, []) if r.provenance.kind != "hazard"],
                                _heavy_rows(stored, c.id), quotes.get(c.id, []), appendix,
                                hand.get(c.id, [])[:BY_HAND_LINES])
    if hazards:
        lines += ["## Hazards for implementers (not claims of the paper)", "",
                  "Implementation mistakes a decoder or a port can make; the paper does not claim them, so their "
                  "verdicts say what such a mistake does, not whether the paper is right.", ""]
        lines += [f"- `{r.display_id}`: **{r.verdict}**: {_clip(r.provenance.why or r.reason, 150)}" for r in hazards]
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def _page_one(paper: str, claims: Sequence[Any], by_claim: Mapping[str, list[ClaimResult]],
              stored: Sequence[Mapping[str, Any]], not_checked: Sequence[str]) -> list[str]:
    from verify.core.registry import paper_title

    ran = [r for rs in by_claim.values() for r in rs]
    engines: dict[str, str] = {}
    for r in ran:
        for ev in r.evidence:
            engines.update(ev.engines)
    numeric_only = sorted({c.id for c in claims if set(c.checks) <= {"numeric"}})
    not_run = [c.id for c in claims if c.id not in by_claim and not _heavy_rows(stored, c.id)]
    out = [f"# Audit of {paper_title(paper)}", "",
           f"Checked here: {len(ran)} variants of {len(by_claim)} claims in this run"
           + (f"; {len(stored)} stored confirmatory result{'s' if len(stored) != 1 else ''} for the claims that rest "
              "on training" if stored else "")
           + (f"; not run here: {', '.join(not_run)}" if not_run else "")
           + (f"; not checked: {', '.join(not_checked)}" if not_checked else "") + ". "
           "Every verdict is about the statement in the scope the paper states; the numbers the paper prints are "
           "compared in the appendix, counted apart.", "",
           "| claim | verdicts | reason, in one sentence |", "|---|---|---|"]
    for c in claims:
        rs = [r for r in by_claim.get(c.id, []) if r.provenance.kind != "hazard"]
        heavy = _heavy_rows(stored, c.id)
        if rs:
            verdicts = " · ".join(f"`{r.variant or 'default'}` {r.verdict}" for r in rs)
            reason = _first_clause(_reason(max(rs, key=lambda r: r.verdict)))
        elif heavy:
            verdicts = " · ".join(f"`{d.get('variant') or 'default'}` {d['verdict']}" for d in heavy)
            reason = _stored_reason(heavy[0])
        elif c.heavy:
            verdicts, reason = "not run here", "heavy (`--full`): " + _clip(
                c.protocol.cost if c.protocol is not None else c.cost, 110)
        else:
            verdicts, reason = "not checked", "no check in the layers this run asked for (--layers)"
        out.append(f"| [{c.id}](#{_slug(c.id)}) | {verdicts} | {_audit_cell(_clip(reason, 200))} |")
    out += ["", "**Trusted base.** " + _trusted(engines, numeric_only), ""]
    return out


def _reason(r: ClaimResult) -> str:
    """One sentence of reason: the verdict's own reason when the claim did not decide (it says why: a layer that did
    not finish, a convention the text leaves open), else the most exact deciding layer's first clause."""
    from verify.core.model import INCONCLUSIVE, INCONSISTENT
    from verify.reports.audit import one_line_reason

    if r.verdict in (INCONCLUSIVE, INCONSISTENT):
        return _first_clause(r.reason)
    return one_line_reason(r)


def _stored_reason(d: Mapping[str, Any]) -> str:
    """A stored result's reason in one sentence: its deciding layer's summary, first clause."""
    for layer in ("kernel", "symbolic", "solver", "numeric"):
        ev = (d.get("layers") or {}).get(layer) or {}
        if ev.get("summary") and ev.get("status") != "skipped":
            return _clip("; ".join(ev["summary"].split("; ")[:2]), 190)
    return _first_clause(d["reason"])


def _first_clause(reason: str) -> str:
    text = reason.removeprefix("statement: ")
    return text.split("; ", 1)[0]


def _trusted(engines: Mapping[str, str], numeric_only: Sequence[str]) -> str:
    coq = engines.get("coq")
    said = [f"Coq {coq}, each module re-checked by coqchk (a kernel result is 'for every size the theorem states')"
            if coq else "no kernel layer ran"]
    solvers = [f"{k} {v}" for k, v in sorted(engines.items()) if k in ("z3", "cvc5")]
    if solvers:
        said.append("solvers " + ", ".join(solvers) + " (a refutation's witness and an UNSAT's certificate are "
                    "re-checked in exact rationals outside them)")
    if "sympy" in engines:
        said.append(f"sympy {engines['sympy']}")
    if numeric_only:
        said.append("numeric only (agreement there is 'consistent', never 'proved'): " + ", ".join(numeric_only))
    return "; ".join(said) + "."


def _claim_section(c: Any, rs: Sequence[ClaimResult], heavy: Sequence[Mapping[str, Any]],
                   quotes: Sequence[Mapping[str, str]], appendix: str, hand: Sequence[str] = ()) -> list[str]:
    out = [f"## {c.id}", f"<a id=\"{_slug(c.id)}\"></a>", ""]
    paper_words = [q for q in quotes if q.get("source") == "paper" and "context only" not in q.get("where", "")]
    for q in quotes:
        out.append(f"> \"{q['text']}\"")
        out.append(f"> ({q['where']}; {q['source']}: {q['ref']})")
        out.append(">" if q is not quotes[-1] else "")
    if not paper_words:
        out += ["*The paper's words for this claim are not reachable here; our reading (ours, not a quote):* "
                + _clip(c.statement, 400), ""]
    else:
        out += [f"*Our reading:* {_clip(c.statement, 300)}", ""]
    for r in rs:
        prov = "" if r.provenance.is_paper else f" ({r.provenance.label})"
        out.append(f"- `{r.variant or 'default'}`{prov}: **{r.verdict}**, {_clip(_reason(r), 160)}")
    for d in heavy:
        proto = d.get("protocol") or {}
        out.append(f"- `{d.get('variant') or 'default'}`: **{d['verdict']}** (stored {proto.get('run', '?')} run, "
                   f"protocol v{proto.get('version', '?')} sha256 {str(proto.get('sha256', ''))[:12]}, seeds "
                   f"{proto.get('seeds', '?')})")
    if not rs and not heavy and not c.heavy:
        out.append(f"- not checked: no check in the layers this run asked for; run it with `verify {c.id}`")
    elif not rs and not heavy:
        cost = c.protocol.cost if c.protocol is not None else c.cost
        command = c.protocol.command if c.protocol is not None else f"verify {c.id}"
        out.append(f"- not run here: {_clip(cost, 160)}; run it with `{command}`")
    if hand:
        out += ["", "By hand (ours):"] + [f"    {line}" for line in hand]
    failing = [r for r in rs if r.verdict == FAILS] or list(rs)
    if failing:
        out += ["", f"Witness ({failing[0].display_id}): {_witness_line(failing[0])}",
                "Layers: " + "; ".join(f"`{r.variant or 'default'}` {_layers_word(r)}" for r in rs)]
    link = f"{appendix}#{_slug(c.id)}" if appendix and rs else ""
    if heavy and not rs:
        out += ["", "Evidence: the stored result " + ", ".join(f"`{d['stored_file']}`" for d in heavy)
                + f" (re-check it without retraining: `verify recheck {heavy[0]['stored_file']}`)", ""]
    else:
        out += ["", f"Evidence: [appendix]({link})" if link else "Evidence: the JSON of this run (`--format json`).",
                ""]
    return out[:3] + _cap(out[3:], CLAIM_LINES - 3)


def _cap(lines: list[str], n: int) -> list[str]:
    """At most ``n`` lines, the last two kept (the link to the evidence and the blank line after it)."""
    return lines if len(lines) <= n else lines[: n - 3] + ["(more in the appendix)", lines[-2], lines[-1]]


#: the suffixes of an output file that is written as HTML instead of Markdown
HTML_SUFFIXES = (".html", ".htm")


def as_html(markdown: str, title: str) -> str:
    """``markdown`` (a letter or an appendix) as one HTML page: CommonMark with tables, rendered by markdown-it-py
    (the renderer rich already installs); the anchors and links stay as written, so a letter written as .html
    links an appendix written as .html."""
    import html

    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{html.escape(title)}</title>\n<style>body{{max-width:60rem;margin:2rem auto;font-family:sans-serif;"
            "line-height:1.4}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2rem .4rem;"
            "vertical-align:top}blockquote{color:#333;border-left:3px solid #999;margin-left:0;padding-left:1rem}"
            "</style>\n</head>\n<body>\n" + body + "</body>\n</html>\n")


def written_as(path: str, markdown: str, title: str) -> str:
    """What goes into ``path``: HTML (:func:`as_html`) when its suffix is one of :data:`HTML_SUFFIXES`, else the
    Markdown as it is."""
    return as_html(markdown, title) if Path(path).suffix.lower() in HTML_SUFFIXES else markdown


__all__ = ["letter_markdown", "stored_quotes", "read_stored", "by_hand", "as_html", "written_as", "HTML_SUFFIXES",
           "PAGE_ONE_LINES", "CLAIM_LINES", "LETTER_LINES"]
