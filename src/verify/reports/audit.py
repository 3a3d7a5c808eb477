"""The referee-style audit of one paper, in Markdown (``verify audit PAPER --report FILE.md``).

The report is written for a reader who has the paper open: a summary verdict table;
then, per claim, the statement as written with its source, and per variant what each
layer did and found (numbers, witness, certificate, bound, tolerance), the verdict, the
findings, a paper-against-ours table of published figures (the layers' typed
:class:`~verify.evidence.Figure` entries, each marked reproduced or not), the repair and the caveats.

The output is deterministic for given inputs: no timestamps, and wall times (the layers'
``wall_time_s``, measured values named ``*seconds``/``*_time_s``, certificate ``seconds``
columns) only with ``timings=True``.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from verify import __version__
from verify.core.model import FAILS, HOLDS, HOLDS_WITH_FIX, INCONCLUSIVE, INCONSISTENT, ClaimResult, Verdict
from verify.evidence import LAYERS, Evidence, Layer, Outcome, Status, to_jsonable
from verify.reports.text import HEAVY_KEYS, is_timing_key, untime

__all__ = ["audit_markdown", "fmt_value"]

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


def _kv_table(d: dict[str, Any], head: tuple[str, str] = ("quantity", "value")) -> list[str]:
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    for k, v in d.items():
        lines.append(f"| {_cell(k)} | {_cell(fmt_value(v))} |")
    return lines


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


def _dict_rows_table(rows: list[dict[str, Any]]) -> list[str]:
    cols: list[str] = []
    for o in rows:
        for k in o:
            if k not in cols:
                cols.append(str(k))
    lines = ["| " + " | ".join(_cell(c) for c in cols) + " |", "|" + "---|" * len(cols)]
    for o in rows:
        lines.append("| " + " | ".join(_cell(fmt_value(o.get(c, ""), 1)) for c in cols) + " |")
    return lines


def _is_rows(v: Any) -> bool:
    return isinstance(v, list) and bool(v) and all(isinstance(o, dict) for o in v)


def _certificate(cert: Any, timings: bool) -> list[str]:
    cert = _scrub(to_jsonable(cert, HEAVY_KEYS), timings)
    if isinstance(cert, dict):
        lines = ["Certificate (each solver obligation is answered independently: unsat = no counterexample "
                 "exists within the bound; sat = a model was found and re-checked):", ""]
        rest = {k: v for k, v in cert.items() if not _is_rows(v)}
        for k, v in cert.items():
            if _is_rows(v):
                lines += [f"*{k}* ({len(v)}):", ""] + _dict_rows_table(v) + [""]
        if rest:
            lines += _kv_table(rest) + [""]
        return lines[:-1] if lines[-1] == "" else lines
    if _is_rows(cert):
        return ["Certificate:", ""] + _dict_rows_table(cert)
    return ["Certificate:", "", "```", json.dumps(cert, indent=2, sort_keys=True), "```"]




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


def _layer_section(ev: Evidence, timings: bool) -> list[str]:
    title = LAYER_NAMES[ev.layer]
    lines = [f"#### {title}: {_status_word(ev)}", ""]
    if ev.status == Status.SKIPPED:
        lines += [f"Not run: {ev.summary or 'skipped'}.", ""]
        return lines
    if ev.summary:
        lines += [_untime(ev.summary, timings), ""]
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
    for d in ev.details:
        facts.append(f"- {_untime(d, timings)}")
    if facts:
        lines += facts + [""]
    numbers = _scrub(dict(ev.numbers), timings)
    if numbers:
        lines += ["Measured values:", ""] + _kv_table(numbers) + [""]
    if ev.witness:
        w = _scrub(to_jsonable(ev.witness), timings)
        lines += ["Witness (a concrete case that decides the statement, re-checked outside the engine that found it):", ""]
        lines += (_kv_table(w) if isinstance(w, dict) else ["```", json.dumps(w, indent=2, sort_keys=True), "```"])
        lines.append("")
    if ev.certificate:
        lines += _certificate(ev.certificate, timings) + [""]
    return lines


def _figures_table(r: ClaimResult) -> list[str]:
    lines = ["| figure | paper | ours | reproduced | note | layer |", "|---|---|---|---|---|---|"]
    for layer, f in r.figures:
        lines.append(f"| {_cell(f.figure)} | {_cell(fmt_value(f.paper))} | {_cell(fmt_value(f.ours))} | "
                     f"{'yes' if f.reproduced else '**no**'} | {_cell(f.note)} | {layer} |")
    return lines


def _variant_title(r: ClaimResult) -> str:
    if r.fix:
        return f"Variant `{r.variant}`: with the change ({r.fix})"
    if r.variant:
        return f"Variant `{r.variant}`: the statement as written"
    return "The statement as written"


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
        changes: verdicts that differ from their expectations (``"ID: EXPECTED -> GOT"``).
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
    from verify.core.specs import run_id

    ref = title or paper_title(paper)
    out = [f"# Referee audit: {ref}", ""]
    out += [f"Paper key `{paper}`; checked by verify {__version__} with seed {seed}; "
            f"layers requested: {', '.join(layers)}.", ""]
    out += ["Each claim is checked in independent layers: an exact symbolic computation, a bounded "
            "solver search for counterexamples, a floating-point experiment at the paper's scale, and, for the "
            "exact statements, a theorem for every size checked by Coq's kernel. Not every claim has every layer: "
            "the summary says which ran. A verdict needs every layer that ran to agree.", ""]
    out += ["| verdict | meaning |", "|---|---|"]
    out += [f"| {v} | {VERDICT_MEANING[v]} |" for v in (HOLDS, HOLDS_WITH_FIX, FAILS, INCONCLUSIVE, INCONSISTENT)]
    out += [""]

    # summary
    out += ["## Summary", ""]
    out += ["| claim | variant | verdict | expected | symbolic | solver | numeric | kernel | figures reproduced |",
            "|---|---|---|---|---|---|---|---|---|"]
    ordered = sorted(results, key=lambda r: 0 if r.verdict == INCONSISTENT else 1)
    for r in ordered:
        st = {ev.layer: _status_word(ev) for ev in r.evidence}
        exp = r.expected or "-"
        if r.expected and r.expected != r.verdict:
            exp += " (changed)"
        out.append(f"| {_cell(r.claim.id)} | {_cell(r.variant or '-')} | **{r.verdict}** | {_cell(exp)} | "
                   f"{_cell(st.get(Layer.SYMBOLIC, '-'))} | {_cell(st.get(Layer.SOLVER, '-'))} | {_cell(st.get(Layer.NUMERIC, '-'))} | "
                   f"{_cell(st.get(Layer.KERNEL, '-'))} | {r.figures_reproduced or '-'} |")
    out.append("")
    if changes:
        out += ["Verdicts that differ from their recorded expectations:", ""]
        out += [f"- {c}" for c in changes] + [""]
    elif results:
        out += [f"All {len(results)} verdicts equal their recorded expectations.", ""]
    elif not not_checked:
        out += ["No claims of this paper are registered yet.", ""]
    if not_checked:
        out += [f"Not checked (no check in the requested layers {', '.join(layers)}): "
                + ", ".join(f"`{x}`" for x in not_checked) + ".", ""]

    # per claim
    claims: list[Any] = []
    for r in results:
        if r.claim not in claims:
            claims.append(r.claim)
    for c in claims:
        rs = [r for r in results if r.claim is c]
        out += [f"## {c.id}: {c.title}", ""]
        out += [f"**Source:** {c.source}", ""]
        out += ["**Statement as written:**", "", f"> {c.statement}", ""]
        out += _kernel_statements(c.id)
        for r in rs:
            out += [f"### {_variant_title(r)}", ""]
            exp = f" Expected: {r.expected}." if r.expected else ""
            if r.expected and r.expected != r.verdict:
                exp = f" Expected: {r.expected} (**changed**)."
            out += [f"**Verdict: {r.verdict}**: {r.reason}.{exp}", ""]
            out += [f"Run id `{run_id(r.claim, r.params)}`; parameters: {_param_list(r)}.", ""]
            for ev in r.evidence:
                out += _layer_section(ev, timings)
            if r.notes:
                out += ["#### Findings", ""] + [f"- {n}" for n in r.notes] + [""]
            if r.figures:
                out += [f"#### Paper against ours (published figures reproduced {r.figures_reproduced})", "",
                        "The verdict above is about the statement; the paper's printed numbers are counted "
                        "separately here.", ""] + _figures_table(r) + [""]
        if c.repair:
            needs = any(r.verdict in (FAILS, HOLDS_WITH_FIX) for r in rs)
            out += ["### Repair", "", c.repair if needs else f"(not needed by these results) {c.repair}", ""]
        if c.caveats:
            out += ["### Caveats", ""] + [f"- {cav}" for cav in c.caveats] + [""]
    if plots:
        out += ["## Figures", ""] + [f"- ![{p}]({p})" for p in plots] + [""]
    out += ["## How the layers report", ""] + [f"- {v}" for v in STATUS_MEANING.values()] + [""]
    return "\n".join(out).rstrip("\n") + "\n"
