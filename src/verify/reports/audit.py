"""The referee-style audit of one paper, in Markdown (``verify audit PAPER --report FILE.md``).

The report is written for a reader who has the paper open.  Its first page is one line per claim variant
(:func:`summary_page`; on a terminal ``verify audit PAPER --summary``, :func:`summary_text`): the verdict,
whose statement the variant checks (the paper's, our reading, an implementation hazard or our repair:
:class:`~verify.core.model.Provenance`), the reason in one sentence (the failing parts and whether the
paper's main conclusion stands, or the most exact layer's finding: the witness for a refutation) and a link
to the repair.  A table of contents with links follows.  Per claim: the source, the quoted statement, the
repair; per variant: a heading that says whose statement it is, the verdict, the parts' verdicts, the
witness once, the findings and the published figures, and only then the evidence (which layers ran,
kernel-checked or not, and per layer its bound, tolerance, engines and a small table of measured values).
Large measured values (grids as two-way tables) and the Coq statements go to an appendix the body links to;
certificates are named, and kept in full in the JSON output.  Recorded expectations are left to the CI
outputs (JUnit, ``verify all``).

The output is deterministic for given inputs: no timestamps, and wall times (the layers'
``wall_time_s``, measured values named ``*seconds``/``*_time_s``) only with ``timings=True``.
"""

from __future__ import annotations

import json
import re
from typing import Any, Sequence

from verify import __version__
from verify.core.model import FAILS, HOLDS, HOLDS_WITH_FIX, INCONCLUSIVE, INCONSISTENT, PROVENANCE_KINDS, ClaimResult, Verdict
from verify.evidence import LAYERS, Evidence, Layer, Outcome, Status, to_jsonable
from verify.reports.text import HEAVY_KEYS, is_timing_key, protocol_record, untime

__all__ = ["audit_markdown", "fmt_value", "one_line_reason", "summary_page", "summary_text"]

VERDICT_MEANING = {v: v.meaning for v in Verdict}
STATUS_MEANING = {s: s.meaning for s in Status}
LAYER_NAMES = {x: x.heading for x in Layer}

_MAX_LIST = 8


def _cell(text: Any) -> str:
    """Escape a value for a Markdown table cell."""
    return str(text).replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def fmt_value(v: Any, _depth: int = 0) -> str:
    """A compact, deterministic rendering of a measured value (floats to 4 significant digits,
    long lists abbreviated with their length, dicts as ``key: value`` pairs, nested ones in braces)."""
    v = to_jsonable(v)
    if isinstance(v, bool) or v is None:
        return json.dumps(v)
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, list):
        if len(v) > _MAX_LIST:
            head = ", ".join(fmt_value(x, _depth + 1) for x in v[:4])
            tail = ", ".join(fmt_value(x, _depth + 1) for x in v[-2:])
            return f"[{head}, ..., {tail}] ({len(v)} values)"
        return "[" + ", ".join(fmt_value(x, _depth + 1) for x in v) + "]"
    if isinstance(v, dict):
        if not v:
            return "(none)" if _depth == 0 else "{}"
        if _depth == 0:
            return "; ".join(f"{k}: {fmt_value(x, 1)}" for k, x in v.items())
        return "{" + ", ".join(f"{k}: {fmt_value(x, _depth + 1)}" for k, x in v.items()) + "}"
    return str(v)


def _status_word(ev: Evidence) -> str:
    if ev.status == Status.CONSISTENT:
        return f"consistent with {'the statement' if ev.outcome == Outcome.HOLDS else 'its failure'} (numeric)"
    return ev.status


def _untime(text: str, timings: bool) -> str:
    """Remove wall-time notes such as ``(0.01 s)`` from a layer's prose unless ``timings``."""
    return text if timings else untime(text)


def _scrub(v: Any, timings: bool) -> Any:
    """Drop wall-time entries (see :func:`verify.reports.text.is_timing_key`) from nested values unless ``timings``."""
    if timings:
        return v
    if isinstance(v, dict):
        return {k: _scrub(x, timings) for k, x in v.items() if not is_timing_key(str(k))}
    if isinstance(v, list):
        return [_scrub(x, timings) for x in v]
    return v


def _slug(text: str) -> str:
    """An anchor id for a heading (lower-case letters, digits and ``-``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def _anchor(name: str) -> str:
    return f'<a id="{name}"></a>'


def _clause(text: str, limit: int = 170) -> str:
    """``text`` cut to its first clause that ends within ``limit`` characters (at ``"; "``), else to ``limit``."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cuts = [m.start() for m in re.finditer(r"; |(?<=[A-Za-z0-9]) \(", text[:limit]) if m.start() >= 60]
    if cuts:
        return text[:cuts[0]]
    return text[:limit].rsplit(" ", 1)[0] + " ..."


#: the order in which a result's layers are read for its one-line reason and its witness (exact ones first)
_READ_ORDER = (Layer.SYMBOLIC, Layer.SOLVER, Layer.NUMERIC, Layer.KERNEL)


def _deciding(r: ClaimResult) -> list[Evidence]:
    """The layers that finished, exact ones first."""
    return [ev for layer in _READ_ORDER for ev in r.evidence if ev.layer == layer and ev.status.finished
            and ev.status != Status.SKIPPED]


def _layers_line(r: ClaimResult) -> str:
    """Which layers ran, what each said, and whether the result is kernel-checked."""
    ran = [f"{ev.layer} {ev.status}" for ev in r.evidence if ev.status != Status.SKIPPED]
    kernel = any(ev.layer == Layer.KERNEL and ev.status in (Status.PROVED, Status.REFUTED) for ev in r.evidence)
    ideal = any(ev.layer == Layer.KERNEL and ev.status == Status.PROVED_IDEALISED for ev in r.evidence)
    skipped = [str(ev.layer) for ev in r.evidence if ev.status == Status.SKIPPED]
    said = ("; kernel-checked (Coq, every size)" if kernel else
            "; kernel-checked only under an idealisation the paper does not make" if ideal else "; not kernel-checked")
    return (", ".join(ran) or "none") + said + (f"; not run: {', '.join(skipped)}" if skipped else "")


def one_line_reason(r: ClaimResult, timings: bool = False) -> str:
    """The reason for a result's verdict in one sentence: its failing parts when it has parts, else the first
    clause of the most exact deciding layer's summary (the witness, for a refutation)."""
    failing = [p for p in r.parts if p.verdict == FAILS]
    if failing:
        mains = [p for p in r.parts if p.role == "main"]
        stands = ("the main conclusion does not stand" if any(p.verdict == FAILS for p in mains)
                  else "the main conclusion (" + ", ".join(f"{p.name}: {p.verdict}" for p in mains) + ") stands")
        return "; ".join(f"{p.name} {p.verdict} ({p.severity})" for p in failing) + f"; {stands}"
    for ev in _deciding(r):
        if ev.summary:
            return _clause(_untime(ev.summary, timings))
    return r.reason


def _result_anchor(r: ClaimResult) -> str:
    return _slug(r.display_id)


def summary_page(paper: str, results: Sequence[ClaimResult], *, links: bool = True, timings: bool = False,
                 not_checked: Sequence[str] = ()) -> list[str]:
    """The audit's first page: one line per claim variant (verdict, claim, whose statement, the reason in one
    sentence, the repair where one applies).  ``links``: Markdown links to the sections (off on a terminal)."""
    lines = ["| verdict | claim | whose statement | reason (witness) | repair |", "|---|---|---|---|---|"]
    for r in sorted(results, key=lambda r: 0 if r.verdict == INCONSISTENT else 1):
        name = r.display_id.split(":", 1)[1]
        claim = f"[{name}](#{_result_anchor(r)})" if links else name
        repair = "-"
        if r.claim.repair and r.verdict == FAILS and r.provenance.kind in ("paper", "reading"):
            repair = f"[repair](#{_slug(r.claim.id)}-repair)" if links else "see the report"
        lines.append(f"| **{r.verdict}** | {claim} | {r.provenance.kind} | {_cell(one_line_reason(r, timings))} | "
                     f"{repair} |")
    if not results and not not_checked:
        lines.append("| - | no claims of this paper are registered yet | | | |")
    return lines


def summary_text(paper: str, results: Sequence[ClaimResult], timings: bool = False,
                 not_checked: Sequence[str] = ()) -> str:
    """The audit's first page for a terminal (``verify audit PAPER --summary``): one line per claim variant."""
    from verify.core.registry import paper_title

    out = [f"{paper_title(paper)}: {len(results)} claim variants", ""]
    w = max([12] + [len(r.display_id.split(':', 1)[1]) for r in results])
    for r in sorted(results, key=lambda r: 0 if r.verdict == INCONSISTENT else 1):
        name = r.display_id.split(":", 1)[1]
        out.append(f"{r.verdict:<14} {name:<{w}} {r.provenance.kind:<7} {one_line_reason(r, timings)}")
        if r.claim.repair and r.verdict == FAILS and r.provenance.kind in ("paper", "reading"):
            out.append(f"{'':<14} {'':<{w}} {'':<7} repair: {_clause(r.claim.repair, 150)}")
    if not_checked:
        out += ["", "Not checked: " + ", ".join(not_checked)]
    return "\n".join(out) + "\n"


def _flatten(v: Any, prefix: str = "") -> list[tuple[str, Any]]:
    """Nested dicts as ``(path, value)`` rows (lists and scalars are leaves)."""
    if isinstance(v, dict) and v:
        out: list[tuple[str, Any]] = []
        for k, x in v.items():
            out += _flatten(x, f"{prefix} / {k}" if prefix else str(k))
        return out
    return [(prefix, v)]


#: a measured value with more cells than this goes to the appendix
_SMALL = 8


class _Appendix:
    """The report's appendix: large measured values and certificates, each with an anchor the body links to."""

    def __init__(self) -> None:
        self.sections: list[list[str]] = []

    def add(self, title: str, body: list[str]) -> str:
        n = len(self.sections) + 1
        anchor = f"appendix-{n}"
        self.sections.append([f"### {_anchor(anchor)}A{n}. {title}", ""] + body + [""])
        return f"[appendix A{n}](#{anchor})"

    def lines(self) -> list[str]:
        if not self.sections:
            return []
        return [f"## {_anchor('appendix')}Appendix: large measured values and kernel statements", ""] + [
            x for s in self.sections for x in s]


def _measured(numbers: dict[str, Any], where: str, appendix: _Appendix) -> list[str]:
    """Measured values as a small two-column table; a value with more than :data:`_SMALL` cells goes to the
    appendix, linked from its row.  Keys naming a witness are left out (the witness is shown once)."""
    rows: list[tuple[str, str]] = []
    for k, v in numbers.items():
        if "witness" in str(k) or v in ([], {}, "", None):
            continue
        flat = _flatten(v, str(k))
        if len(flat) > _SMALL:
            link = appendix.add(f"{where}: {k}", _grid_table(v) or ["| entry | value |", "|---|---|"]
                                + [f"| {_cell(p)} | {_cell(fmt_value(x))} |" for p, x in _flatten(v)])
            rows.append((str(k), f"{len(flat)} values, {link}"))
        else:
            rows.append((str(k), _cell(fmt_value(v))))
    if not rows:
        return []
    return ["Measured values:", "", "| quantity | value |", "|---|---|"] + [
        f"| {_cell(p)} | {x} |" for p, x in rows] + [""]


_GRID_KEY = re.compile(r"([^=,]+)=([^=,]+),([^=,]+)=([^=,]+)")


def _grid_table(v: Any) -> list[str]:
    """A dict keyed ``"a=x,b=y"`` (a measured grid) as a table with one row per ``b`` and one column per ``a``;
    ``[]`` for anything else."""
    if not isinstance(v, dict) or not v:
        return []
    keys = [_GRID_KEY.fullmatch(str(k)) for k in v]
    if not all(keys) or len({(m.group(1), m.group(3)) for m in keys if m}) != 1:
        return []
    first = keys[0]
    assert first is not None
    a, b = first.group(1), first.group(3)
    cols = list(dict.fromkeys(m.group(2) for m in keys if m))
    rows = list(dict.fromkeys(m.group(4) for m in keys if m))
    cell = {(m.group(2), m.group(4)): x for m, x in zip(keys, v.values()) if m}
    out = [f"| {b} \\ {a} | " + " | ".join(f"{a} = {c}" for c in cols) + " |", "|---|" + "---|" * len(cols)]
    for r in rows:
        out.append(f"| {b} = {r} | " + " | ".join(_cell(fmt_value(cell[(c, r)])) if (c, r) in cell else ""
                                                 for c in cols) + " |")
    return out


def _fresh(text: str, shown: list[str]) -> str:
    """``text`` without a leading part already shown (a layer repeating the witness sentence): the repeated
    prefix is replaced by a pointer; ``""`` when all of it was shown."""
    if any(len(s) >= 60 and s[:80] in text and len(text) <= len(s) + 40 for s in shown):
        return ""
    for s in shown:
        if len(s) >= 40 and s in text:
            text = text.replace(s, "(the witness above)")
    best = 0
    for s in shown:
        n = 0
        for a, b in zip(text, s):
            if a != b:
                break
            n += 1
        best = max(best, n)
    if best < 40:
        return text
    if best >= len(text) - 2:
        return ""
    cut = text.rfind("; ", 0, best)
    return "(the witness above)" + (text[cut:] if cut > 0 else " " + text[best:])


def _kernel_statements(claim_id: str) -> list[str]:
    """The Coq theorems that answer the claim, each as its source states it, beside the paper's statement."""
    from verify.kernel.check import kernel_statements
    from verify.kernel.driver import THEORIES, statement_text

    by_variant = kernel_statements(claim_id)
    if not by_variant:
        return []
    lines = ["**Kernel statements** (Coq theorems, for every size they quantify over; the kernel layer below "
             "says whether Coq's kernel accepted them in this run):", ""]
    for variant, statements in by_variant.items():
        for s in statements:
            role = "proves the variant" if s.role == "proves" else "refutes the variant (a counterexample)"
            src = THEORIES / f"{s.theory}.v"
            text = statement_text(src.read_text(), s.theorem) if src.exists() else ""
            lines += [f"- `{variant or 'default'}`: `{s.qualified}` {role}: {s.reading}", "",
                      "  ```coq", f"  {s.theorem} : {text}", "  ```", ""]
    return lines


def _layer_section(ev: Evidence, timings: bool, where: str, appendix: _Appendix, shown: list[str]) -> list[str]:
    title = LAYER_NAMES[ev.layer]
    lines = [f"#### {title}: {_status_word(ev)}", ""]
    if ev.status == Status.SKIPPED:
        return []
    summary = _fresh(_untime(ev.summary, timings), shown) if ev.summary else ""
    if summary:
        lines += [summary, ""]
        shown.append(_untime(ev.summary, timings))
    facts = []
    if ev.bound:
        facts.append(f"- Bound (the result holds within): {ev.bound}")
    if ev.tolerance:
        facts.append(f"- Tolerance: {ev.tolerance}")
    if ev.engines:
        facts.append("- Engines: " + ", ".join(f"{k} {v}" for k, v in sorted(ev.engines.items())))
    if ev.seed is not None:
        facts.append(f"- Seed: {ev.seed}")
    if timings:
        facts.append(f"- Wall time: {ev.wall_time_s:.2f} s")
    if ev.layer == Layer.KERNEL:
        # the theorems' statements are printed once per claim (its kernel statements); here only what ran
        lines[2:] = [_clause(summary, 120) + f" ({', '.join(str(t) for t in _theorems(ev))}).", ""] if summary else []
    else:
        for d in ev.details:
            d = _fresh(_untime(d, timings), shown)
            if d:
                facts.append(f"- {d}")
    if ev.certificate:
        facts.append("- Certificate: " + _certificate_line(ev.certificate))
    if facts:
        lines += facts + [""]
    if ev.layer != Layer.KERNEL:
        lines += _measured(_scrub(dict(ev.numbers), timings), f"{where}, {ev.layer}", appendix)
    return lines


def _theorems(ev: Evidence) -> list[str]:
    t = ev.numbers.get("theorems", "")
    return [x for x in (t if isinstance(t, list) else str(t).split(", ")) if x]


def _certificate_line(cert: Any) -> str:
    """What a certificate holds, in one line; the certificate itself is in the JSON output and in the files
    ``--certificates DIR`` writes (``verify recheck DIR`` re-checks them)."""
    cert = to_jsonable(cert, HEAVY_KEYS)
    if isinstance(cert, dict):
        parts = [f"{len(v)} {k}" for k, v in cert.items() if isinstance(v, list)]
        held = ", ".join(parts) or ", ".join(str(k) for k in cert)
    elif isinstance(cert, list):
        held = f"{len(cert)} entries"
    else:
        held = "one entry"
    return f"{held} (in the JSON output and with `--certificates DIR`; `verify recheck DIR` re-checks them)"




def _figures_table(r: ClaimResult) -> list[str]:
    """Paper against ours: a printed number under 'paper', our derivation from its equations under 'derived' (never
    counted), and for a printed number a fitted parameter was chosen on (or not) 'in-sample' ('held-out')."""
    lines = ["| figure | paper | derived | fit | ours | reproduced | note | layer |", "|---|---|---|---|---|---|---|---|"]
    for layer, f in r.figures:
        printed, derived = ("", fmt_value(f.paper)) if f.column == "derived" else (fmt_value(f.paper), "")
        fit = f.column if f.column in ("in-sample", "held-out") else ""
        said = "not counted" if not f.counted else "yes" if f.reproduced else "**no**"
        lines.append(f"| {_cell(f.figure)} | {_cell(printed)} | {_cell(derived)} | {fit} | {_cell(fmt_value(f.ours))} | "
                     f"{said} | {_cell(f.note)} | {layer} |")
    return lines


def _witness(r: ClaimResult, timings: bool) -> tuple[list[str], list[str]]:
    """The variant's witness, once: the most exact layer's, with its summary sentence; the other layers'
    witnesses stay in the JSON.  Returns the lines and the texts shown (later prose that repeats them points
    back instead)."""
    evs = [ev for ev in _deciding(r) if ev.witness]
    if not evs:
        return [], []
    ev = evs[0]
    w = _scrub(to_jsonable(ev.witness), timings)
    sentence = _untime(ev.summary, timings)
    shown = [sentence] + [x for _, x in _flatten(w) if isinstance(x, str) and len(x) >= 40]
    others = [str(e.layer) for e in evs[1:]]
    lines = [f"**Witness** ({ev.layer}; re-checked outside the engine that found it"
             + (f"; the {', '.join(others)} layer{'s' if len(others) > 1 else ''} found one too, kept in the JSON"
                if others else "") + f"): {sentence}", ""]
    flat = _flatten(w) if isinstance(w, dict) else [("value", w)]
    lines += ["| entry | value |", "|---|---|"] + [f"| {_cell(p)} | {_cell(fmt_value(x))} |" for p, x in flat] + [""]
    return lines, shown


def _parts_table(r: ClaimResult) -> list[str]:
    lines = ["The statement has parts, each judged on its own (the claim fails when any part fails; a failing "
             "`main` part is load-bearing, a failing `detail` part is not):", "",
             "| part | role | verdict | if it fails | evidence | layers |", "|---|---|---|---|---|---|"]
    for p in r.parts:
        lines.append(f"| {_cell(p.name)} | {p.role} | **{p.verdict}** | {p.severity} | {_cell(p.evidence)} | "
                     f"{', '.join(p.layers) or '-'} |")
    return lines + [""]


def _variant_title(r: ClaimResult) -> str:
    """The heading of a variant: its label and whose statement it checks (never "as written" for ours)."""
    prov = r.provenance
    label = f"Variant `{r.variant}`" if r.variant else "The claim"
    if prov.kind == "repair":
        return f"{label}: {prov.label} ({r.fix or prov.why})"
    return f"{label}: {prov.label}"


def _param_list(r: ClaimResult) -> str:
    parts = [f"{o.name} = {r.params[o.name]}" for o in r.claim.options if o.name in r.params]
    return ", ".join(parts)


def audit_markdown(paper: str, results: Sequence[ClaimResult], changes: Sequence[str] = (), *,
                   seed: int = 0, layers: Sequence[str] = LAYERS,
                   timings: bool = False, title: str | None = None, plots: Sequence[str] = (),
                   not_checked: Sequence[str] = ()) -> str:
    """The Markdown referee report for one paper.

    Args:
        paper: the paper key (``ws24``).
        results: the claim variants run, in order.
        changes: verdicts that differ from their expectations (``"ID: EXPECTED -> GOT"``); not printed: recorded
            expectations are for CI outputs (JUnit, ``verify all``), not for a referee.
        seed: the master seed used.
        layers: the layers that were requested.
        timings: include wall times (off by default so the report is reproducible).
        title: the paper's full reference (default: the registry's title or the key).
        plots: paths of figures written for this audit, listed at the end.
        not_checked: run ids left out because none of the requested layers checks them.

    Returns:
        The report text, ending with a newline.
    """
    from verify.core.registry import paper_title

    del changes  # CI outputs report them
    ref = title or paper_title(paper)
    out = [f"# Referee audit: {ref}", ""]
    out += [f"Paper key `{paper}`; checked by verify {__version__} with seed {seed}; layers requested: "
            f"{', '.join(layers)}. One line per claim variant; \"whose statement\" says whether the variant checks "
            "the paper's statement, our reading of it, an implementation hazard or our repair. "
            "[How to read this report](#how-to-read).", ""]
    out += [f"## {_anchor('summary')}Summary", ""]
    out += summary_page(paper, results, timings=timings, not_checked=not_checked) + [""]
    if not_checked:
        out += [f"Not checked (no check in the requested layers {', '.join(layers)}): "
                + ", ".join(f"`{x}`" for x in not_checked) + ".", ""]

    claims: list[Any] = []
    for r in results:
        if r.claim not in claims:
            claims.append(r.claim)
    toc = [f"## {_anchor('contents')}Contents", ""]
    for c in claims:
        toc.append(f"- [{c.id}: {c.title}](#{_slug(c.id)})")
        toc += [f"  - [{_variant_title(r)}](#{_result_anchor(r)})" for r in results if r.claim is c]
    appendix = _Appendix()
    body: list[str] = []
    for c in claims:
        body += _claim_section(c, [r for r in results if r.claim is c], timings, appendix)
    if plots:
        toc.append("- [Figures](#figures)")
        body += [f"## {_anchor('figures')}Figures", ""] + [f"- ![{p}]({p})" for p in plots] + [""]
    app = appendix.lines()
    if app:
        toc.append("- [Appendix: large measured values and kernel statements](#appendix)")
    toc.append("- [How to read this report](#how-to-read)")
    out += toc + [""] + body + app
    out += [f"## {_anchor('how-to-read')}How to read this report", ""]
    out += ["Each claim variant is checked in the layers that have a check for it (the Evidence line of each variant "
            "says which ran): an exact symbolic computation, a bounded solver search for counterexamples, a "
            "floating-point experiment, and, for exact statements, a theorem for every size checked by Coq's "
            "kernel. A verdict needs every layer that ran to agree.", ""]
    out += ["| verdict | meaning |", "|---|---|"]
    out += [f"| {v} | {VERDICT_MEANING[v]} |" for v in (HOLDS, HOLDS_WITH_FIX, FAILS, INCONCLUSIVE, INCONSISTENT)]
    out += ["", "| whose statement | meaning |", "|---|---|"]
    out += [f"| {k} | {v} |" for k, v in PROVENANCE_KINDS.items()]
    out += [""] + [f"- {v}" for v in STATUS_MEANING.values()] + [""]
    return "\n".join(out).rstrip("\n") + "\n"


def _claim_section(c: Any, rs: Sequence[ClaimResult], timings: bool, appendix: "_Appendix") -> list[str]:
    """One claim's section: its source, the paper's statement (or ours, labelled), the repair, each variant's
    section (:func:`_variant_section`), the kernel statements (to the appendix) and the caveats."""
    body = [f"## {_anchor(_slug(c.id))}{c.id}: {c.title}", ""]
    body += [f"**Source:** {c.source}", ""]
    if any(r.provenance.kind in ("paper", "repair") for r in rs):
        body += ["**The paper's statement** (as the source states it; variants that are ours say so in their "
                 "heading):", "", f"> {c.statement}", ""]
    else:
        body += ["**Our statement** (the paper states none; each variant says whose it is):", "",
                 f"> {c.statement}", ""]
    if c.repair:
        needs = any(r.verdict in (FAILS, HOLDS_WITH_FIX) for r in rs)
        said = c.repair if needs else f"(not needed by these results) {c.repair}"
        body += [_anchor(f"{_slug(c.id)}-repair") + f"**Repair:** {said}", ""]
    for r in rs:
        body += _variant_section(r, timings, appendix)
    kernel = _kernel_statements(c.id)
    if kernel:
        link = appendix.add(f"{c.id}: kernel statements", kernel[2:])
        body += [f"**Kernel statements:** the Coq theorems that answer this claim are quoted in {link}.", ""]
    if c.caveats:
        body += ["### Caveats", ""] + [f"- {cav}" for cav in c.caveats] + [""]
    return body


def _variant_section(r: ClaimResult, timings: bool, appendix: "_Appendix") -> list[str]:
    """One variant: why it exists (when it is ours), the verdict, its parts, the witness once, the findings and the
    published figures, then the evidence layer by layer."""
    from verify.core.specs import run_id

    where = r.display_id.split(":", 1)[1]
    body = [f"### {_anchor(_result_anchor(r))}{_variant_title(r)}", ""]
    if r.provenance.why and r.provenance.kind != "repair":
        body += [f"*Why this variant exists:* {r.provenance.why}.", ""]
    body += [f"**Verdict: {r.verdict}**: {_untime(r.reason, timings)}.", ""]
    rec = protocol_record(r)
    if rec is not None:
        body += [f"**Protocol:** {rec['claim']} v{rec['version']}, sha256 `{rec['sha256']}` (frozen {rec['frozen']}); "
                 + ("this is its confirmatory run" if rec["run"] == "confirmatory" else
                    "EXPLORATORY run (" + "; ".join(rec["departures"]) + "): not a verdict; the confirmatory run is `"
                    + r.claim.protocol.command + "`") + ". `verify show " + r.claim.id + "` prints the protocol.", ""]
    if r.parts:
        body += _parts_table(r)
    wit, shown = _witness(r, timings)
    body += wit
    findings = [f for f in (_fresh(_untime(n, timings), shown) for n in r.notes) if f]
    if findings:
        body += ["**Findings:**", ""] + [f"- {n}" for n in findings] + [""]
    if r.figures:
        tally = (f"published figures reproduced {r.figures_reproduced}" if r.figures_reproduced else
                 "no printed number: our derivations from the paper's equations, not counted")
        body += [f"**Paper against ours** ({tally}; the verdict is about the statement, the printed numbers are "
                 "counted here):", ""] + _figures_table(r) + [""]
    body += [f"#### Evidence: {_layers_line(r)}", "",
             f"Run id `{run_id(r.claim, r.params)}`; parameters: {_param_list(r)}.", ""]
    for ev in r.evidence:
        body += _layer_section(ev, timings, where, appendix, shown)
    return body
