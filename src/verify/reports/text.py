"""Rendering of claim results: human text and the versioned JSON schema.

JSON schema ``verify/1`` (stable; fields are only ever added):

    {
      "schema": "verify/1",
      "tool_version": str,
      "command": "claim" | "all" | "audit",
      "seed": int,
      "exit_code": int,
      "results": [
        {
          "claim": "paper:name", "variant": str, "display_id": str,
          "paper": str, "title": str,          # added in verify/1 (additive)
          "run_id": str,                       # display id + non-default sizes, re-parseable spec
          "params": {option: value},          # rationals as "p/q" strings
          "verdict": "HOLDS" | "FAILS" | "HOLDS WITH FIX" | "INCONCLUSIVE" | "INCONSISTENT",
          "reason": str, "expected": str | null, "matches_expected": bool | null,
          "source": str, "statement": str, "fix": str | null, "repair": str,
          "provenance": {"kind": "paper" | "reading" | "hazard" | "repair" | "contract",  # whose statement the variant
                         "label": str, "why": str},                          # checks (additive)
          "parts": [{"part": str, "role": "main" | "detail",                 # a claim's parts, each judged
                     "severity": "load-bearing" | "not load-bearing",       # on its own (additive; [] when
                     "statement": str, "verdict": str, "evidence": str,     # the claim has none)
                     "layers": [str], "by_layer": {layer: str}}],      # by_layer: each layer's result (additive)
          "caveats": [str], "findings": [str],
          "figures": [{"figure": str, "paper": value, "ours": value,   # published numbers against ours
                       "reproduced": bool, "note": str, "layer": str,     # (additive; [] when none)
                       "rule": str}],  # exact|rounding|ci|bound|tolerance|not computed ('' unstated)
          "figures_reproduced": "k/n" | null,  # k of the n figures reproduced (additive)
          "layers": {"symbolic" | "solver" | "numeric" | "kernel": {
              "status": str, "outcome": "holds" | "fails" | null, "summary": str,
              "numbers": {...}, "witness": ... | null, "certificate": ... | null,
              "tolerance": str | null, "bound": str | null, "engines": {name: version},
              "seed": int | null, "wall_time_s": float, "details": [str]}}
        }
      ],
      "changes": [str],                       # `all`/`audit`: verdicts that differ from expectations
      "not_checked": [str]                    # `all`/`audit`: run ids with no check in the requested
    }                                         # layers, left out of the results (additive)

``wall_time_s`` (and solver ``seconds`` / ``solver_seconds``) are the only fields that vary between runs with the same inputs;
``--no-timings`` sets them to 0 and removes wall-time notes such as "(0.01 s)" from the prose, so the JSON is
byte-identical across runs.  The layer's wall time is the typed field :attr:`Evidence.wall_time_s`, read
as such; the key-name rule (:func:`is_timing_key`) and the prose pattern (:data:`TIME_NOTE`) are only for
what has no typed field: the measured values inside a layer's free-form ``numbers``/``certificate`` and the
sentences a layer writes.

Published figures are first-class (:class:`verify.evidence.Figure` on each layer's evidence):
they appear once per result under ``figures`` (with the layer that computed them) and are
counted in ``figures_reproduced``; the verdict ``reason`` separates the statement from them
("statement: ...; published figures reproduced k/n").  The layer dicts do not repeat them.

:data:`JSON_SCHEMA` is the schema above as a JSON-Schema (draft 2020-12) dict (shipped as
``verify-1.schema.json``; ``verify schema`` prints it), and :func:`validate` checks a document
against it with the ``jsonschema`` library.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from verify import __version__
from verify.core.model import PART_ROLES, PROVENANCE_KINDS, ClaimResult, Verdict, depends_on
from verify.evidence import FIGURE_COLUMNS, FIGURE_RULES, Evidence, Layer, Outcome, Status, to_jsonable

SCHEMA = "verify/1"


def is_timing_key(key: str) -> bool:
    """Keys of a layer's free-form dicts (``numbers``, ``certificate``, ``witness``) that hold wall-clock
    measurements (``seconds``, ``solver_seconds``, ``certify_seconds``, a trained model's ``train_s`` and
    ``eval_s``, ...): ``--no-timings`` writes them as 0 and the audit leaves them out.  Those dicts have no
    typed timing field, so the key's name is the convention; the layer's own wall time is the typed
    :attr:`Evidence.wall_time_s`."""
    k = key.lower()
    return k.endswith("seconds") or k.endswith("_time_s") or k in ("wall_time", "time_s", "elapsed_s", "train_s", "eval_s")


#: a wall-time note inside prose, such as "(0.01 s)" or "(12 ms)"
TIME_NOTE = re.compile(r"\s*\(\s*\d+(?:\.\d+)?\s*(?:s|sec|seconds|ms)\s*\)")


def untime(text: str) -> str:
    """``text`` without its wall-time notes (for reproducible output).  Only for user-visible prose (a
    layer's summary and details, a reason, a finding) that quotes a time in a sentence; nothing reads a
    time back out of prose, and a wall time with a typed field is read from that field."""
    return TIME_NOTE.sub("", text)


def _zero_timings(obj: Any) -> Any:
    """Timing entries of free-form dicts written as 0 (:func:`is_timing_key`) and wall-time notes removed
    from prose (:func:`untime`), for ``--no-timings``."""
    if isinstance(obj, dict):
        return {k: (0.0 if is_timing_key(str(k)) else _zero_timings(v)) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_zero_timings(v) for v in obj]
    if isinstance(obj, str):
        return untime(obj)
    return obj


#: evidence keys too large for reports; written to files by ``--certificates DIR`` instead
HEAVY_KEYS = frozenset({"farkas_certificate"})


def result_dict(r: ClaimResult, timings: bool = True) -> dict[str, Any]:
    """One claim variant as a JSON-ready dict (an element of ``results`` in ``verify/1``)."""
    layers = {}
    for ev in r.evidence:
        d = ev.to_dict(drop=HEAVY_KEYS)
        d.pop("layer")
        d.pop("figures", None)  # reported once, at the result level
        if not timings:
            # the typed wall time by its field; prose and the free-form dicts by their conventions
            d = {k: (0.0 if k == "wall_time_s" else _zero_timings(v)) for k, v in d.items()}
        layers[ev.layer] = d
    from verify.core.specs import run_id

    doc = to_jsonable({
        "claim": r.claim.id,
        "variant": r.variant,
        "display_id": r.display_id,
        "paper": r.claim.paper,
        "title": r.claim.title,
        "run_id": run_id(r.claim, r.params),
        "params": r.params,
        "verdict": r.verdict,
        "reason": r.reason,
        "expected": r.expected,
        "matches_expected": None if r.expected is None else r.expected == r.verdict,
        "source": r.claim.source,
        "statement": r.claim.statement,
        "fix": r.fix,
        "repair": r.claim.repair,
        "provenance": r.provenance.to_dict(),
        "parts": [part.to_dict() for part in r.parts],
        "protocol": protocol_record(r),
        "caveats": list(r.claim.caveats),
        "findings": r.notes,
        "figures": [{**f.to_dict(), "layer": layer} for layer, f in r.figures],
        "figures_reproduced": r.figures_reproduced,
        "layers": layers,
    })
    if not timings:
        for key in ("reason", "findings"):
            doc[key] = _zero_timings(doc[key])
    return doc


def to_json(results: Sequence[ClaimResult], command: str, seed: int, exit_code: int,
            changes: Sequence[str] = (), timings: bool = True, not_checked: Sequence[str] = ()) -> str:
    """The ``verify/1`` JSON document (indented, deterministic key order)."""
    doc = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "command": command,
        "seed": seed,
        "exit_code": exit_code,
        "results": [result_dict(r, timings) for r in results],
        "changes": list(changes),
        "not_checked": list(not_checked),
    }
    return json.dumps(doc, indent=2, sort_keys=False)


def _status(ev: Evidence) -> str:
    if ev.status == Status.CONSISTENT:
        return f"consistent ({ev.outcome})"
    return ev.status


def _exploratory_banner(r: ClaimResult) -> list[str]:
    """The first line of an exploratory run's report (one that departs from its claim's frozen protocol)."""
    rec = protocol_record(r)
    if rec is None or rec.get("run") != "exploratory":
        return []
    return [f"EXPLORATORY (departs from the frozen protocol {rec['claim']} v{rec['version']} {rec['sha256'][:12]}: "
            f"{'; '.join(rec['departures'])}): not a verdict; the confirmatory run is `{r.claim.protocol.command}`"]


def protocol_record(r: ClaimResult) -> dict[str, Any] | None:
    """The protocol record of a result's evidence (:func:`verify.core.protocol.record_of`), or None."""
    from verify.core.protocol import record_of

    return record_of(r.evidence)


def result_text(r: ClaimResult, verbose: bool = True, timings: bool = True) -> str:
    """The referee-readable text block for one claim variant (``timings=False``: no wall times).  The
    header is the run id (non-default sizes kept), so it can be pasted back as ``verify RUN_ID``."""
    from verify.core.specs import run_id

    lines = _exploratory_banner(r) + [f"{run_id(r.claim, r.params)}: {r.verdict}"]
    lines.append(f"  source:    {r.claim.source}")
    lines.append(f"  statement: {r.claim.statement}")
    lines.append(f"  checks:    {provenance_line(r)}")
    if r.fix:
        lines.append(f"  variant:   {r.variant} (fix: {r.fix})")
    elif r.variant:
        lines.append(f"  variant:   {r.variant}")
    lines.append("  evidence:")
    for ev in r.evidence:
        t = f"{ev.wall_time_s:.2f} s" if ev.status != Status.SKIPPED and timings else ""
        lines.append(f"    {ev.layer:<9} {_status(ev):<20} {t:>8}  {ev.summary if timings else untime(ev.summary)}")
        if verbose and ev.status != Status.SKIPPED:
            if ev.bound:
                lines.append(f"              bound: {ev.bound}")
            if ev.tolerance:
                lines.append(f"              tolerance: {ev.tolerance}")
            for d in ev.details:
                lines.append(f"              - {d}")
    wit = [ev for ev in r.evidence if ev.witness]
    if wit:
        lines.append("  witness:")
        for ev in wit:
            lines.append(f"    {ev.layer}: {_witness_text(ev)}")
    if r.parts:
        lines.append("  parts:")
        lines += [f"    {p.verdict:<15} {p.name} ({p.role}; {p.severity if p.verdict == Verdict.FAILS else 'holds'}): "
                  f"{p.evidence}" for p in r.parts]
    if r.notes:
        lines.append("  findings:")
        lines += [f"    - {n}" for n in r.notes]
    if r.figures:
        lines.append(f"  published figures (reproduced {r.figures_reproduced}):" if r.figures_reproduced else
                     "  figures (no printed number: our derivations from the paper's equations, not counted):")
        lines += [f"    {_figure_mark(f):<8}{f.figure}: {'derived' if f.column == 'derived' else 'paper'} {_fmt(f.paper)}, "
                  f"ours {_fmt(f.ours)}" + (f" ({f.note})" if verbose and f.note else "") for _, f in r.figures]
    if _shows_repair(r):
        lines.append(f"  repair:    {r.claim.repair}")
    if verbose and r.claim.caveats:
        lines.append("  caveats:")
        lines += [f"    - {c}" for c in r.claim.caveats]
    lines.append(f"  verdict:   {r.verdict} ({r.reason})")
    return "\n".join(lines)


#: the short view's lines are cut here (the full view, ``-v``, prints every line whole)
SHORT_WIDTH = 160
#: the most lines the short view prints for one claim variant
SHORT_LINES = 15


def _cut(line: str, width: int = SHORT_WIDTH) -> str:
    return line if len(line) <= width else line[:width - 3].rstrip() + "..."


def _witness_line(r: ClaimResult) -> str | None:
    """The first layer's witness (symbolic, solver, kernel, then numeric: exact ones first), in the paper's names."""
    order = {Layer.SYMBOLIC: 0, Layer.SOLVER: 1, Layer.KERNEL: 2, Layer.NUMERIC: 3}
    wit = sorted((ev for ev in r.evidence if ev.witness), key=lambda ev: order.get(ev.layer, 9))
    if not wit:
        return None
    ev = wit[0]
    return f"  witness:   ({ev.layer}) {_witness_text(ev)}"


def _witness_text(ev: Evidence) -> str:
    return ", ".join(f"{k} = {v}" for k, v in _flat(ev.witness))


def _shows_repair(r: ClaimResult) -> bool:
    """The claim's repair is shown when the variant holds with a fix, or when the statement as written fails."""
    return bool(r.claim.repair) and (r.verdict == Verdict.HOLDS_WITH_FIX or (r.verdict == Verdict.FAILS and not r.fix))


def _figure_mark(f: Any) -> str:
    """A figure row's mark: yes/NO for a counted row ([in] / [out] when it is in-sample or held-out), '(ours)' for
    our derivation, which is never counted as reproduced."""
    if f.column == "derived":
        return "(ours)"
    mark = "yes" if f.reproduced else "NO"
    return mark + (" [in]" if f.column == "in-sample" else " [out]" if f.column == "held-out" else "")


def short_text(r: ClaimResult, timings: bool = True) -> str:
    """The default view of one claim variant, at most :data:`SHORT_LINES` lines: the verdict, the statement, one line
    per layer, the witness, the main finding, the parts and figures in one line each, the repair, and where to look
    next (``-v`` for the full evidence, :func:`result_text`)."""
    from verify.core.specs import run_id

    rid = run_id(r.claim, r.params)
    head = f"{rid}: {r.verdict}"
    dep = depends_on(r.evidence, r.fix) if r.verdict == Verdict.INCONCLUSIVE else None
    if dep is not None:  # both answers on the first line (ws24's score convention)
        head += f" (depends on the {dep[0]}: {dep[2]})"
    lines = _exploratory_banner(r) + [head, f"  statement: {r.claim.statement}", f"  source:    {r.claim.source}"]
    for ev in r.evidence:
        if ev.status == Status.SKIPPED:
            continue
        t = f"{ev.wall_time_s:>6.2f} s  " if timings else ""
        lines.append(f"  {ev.layer:<9} {_status(ev):<19} {t}{ev.summary if timings else untime(ev.summary)}")
    w = _witness_line(r)
    if w:
        lines.append(w)
    if r.notes:
        lines.append(f"  finding:   {r.notes[0]}")
    if r.parts:
        lines.append("  parts:     " + "; ".join(f"{p.name} {p.verdict}" for p in r.parts))
    if r.figures:
        lines.append(f"  figures:   published figures reproduced {r.figures_reproduced} (each listed with -v)"
                     if r.figures_reproduced else
                     f"  figures:   no printed number; {len(r.figures)} derived row(s), not counted (-v lists them)")
    if _shows_repair(r):
        lines.append(f"  repair:    {r.claim.repair}")
    lines.append(f"  verdict:   {r.verdict} ({r.reason})")  # the last two lines: kept by the cut below
    lines.append(f"  next:      verify {rid} -v (every layer's evidence, findings, caveats); verify show {r.claim.id}")
    if len(lines) > SHORT_LINES:  # the verdict and where to look next always stay
        lines = lines[:SHORT_LINES - 2] + lines[-2:]
    return "\n".join(_cut(x) for x in lines)


def provenance_line(r: ClaimResult) -> str:
    """Whose statement the variant checks, in words: "the paper's statement" or "our reading of the paper's
    statement: WHY" (:class:`~verify.core.model.Provenance`); the same words in ``verify show`` and the audit."""
    prov = r.provenance
    return prov.label + (f": {prov.why}" if prov.why and prov.kind != "repair" else "")


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _flat(w: Any) -> list[tuple[str, Any]]:
    if isinstance(w, dict):
        return [(str(k), v) for k, v in w.items()]
    return [("value", w)]


def table_text(results: Sequence[ClaimResult], timings: bool = True) -> str:
    """One row per claim variant: run id, verdict, expected, per-layer statuses, figures, time."""
    from verify.core.specs import run_id

    ids = [run_id(r.claim, r.params) for r in results]
    w = max([34] + [len(i) for i in ids])  # the claim column fits the longest run id
    head = (f"{'claim':<{w}} {'verdict':<15} {'expected':<15} {'symbolic':<12} {'solver':<12} {'numeric':<18} "
            f"{'kernel':<9} {'figures':>7} {'time':>7}")
    rows = [head, "-" * len(head)]
    for rid, r in zip(ids, results):
        st = {ev.layer: _status(ev) for ev in r.evidence}
        total = sum(ev.wall_time_s for ev in r.evidence)
        mark = "" if r.expected in (None, r.verdict) else "  <- changed"
        rows.append(f"{rid:<{w}} {r.verdict:<15} {r.expected or '-':<15} {st.get(Layer.SYMBOLIC, '-'):<12} "
                    f"{st.get(Layer.SOLVER, '-'):<12} {st.get(Layer.NUMERIC, '-'):<18} {st.get(Layer.KERNEL, '-'):<9} "
                    f"{r.figures_reproduced or '-':>7} "
                    + (f"{total:>6.1f}s" if timings else f"{'-':>7}") + mark)
    return "\n".join(rows)


_STR = {"type": "string"}
_NSTR = {"type": ["string", "null"]}
_LAYER_NAMES = [x.value for x in Layer]
_VERDICT_NAMES = [v.value for v in Verdict]
_EVIDENCE = {
    "type": "object",
    "required": ["status", "outcome", "summary", "numbers", "witness", "certificate", "tolerance", "bound",
                 "engines", "seed", "wall_time_s", "details"],
    "properties": {
        "status": {"enum": [s.value for s in Status]},
        "outcome": {"enum": [o.value for o in Outcome] + [None]},
        "summary": _STR,
        "numbers": {"type": "object"},
        "tolerance": _NSTR,
        "bound": _NSTR,
        "engines": {"type": "object", "additionalProperties": _STR},
        "seed": {"type": ["integer", "null"]},
        "wall_time_s": {"type": "number"},
        "details": {"type": "array", "items": _STR},
    },
}
_FIGURE = {
    "type": "object",
    "required": ["figure", "paper", "ours", "reproduced", "note", "layer"],
    "properties": {"figure": _STR, "reproduced": {"type": "boolean"}, "note": _STR,
                   "layer": {"enum": _LAYER_NAMES}, "rule": {"enum": ["", *FIGURE_RULES]},
                   "column": {"enum": list(FIGURE_COLUMNS)}},
}
_PROVENANCE = {
    "type": "object",
    "required": ["kind", "label", "why"],
    "properties": {"kind": {"enum": list(PROVENANCE_KINDS)}, "label": _STR, "why": _STR},
}
_PART = {
    "type": "object",
    "required": ["part", "role", "severity", "statement", "verdict", "evidence", "layers"],
    "properties": {"part": _STR, "role": {"enum": list(PART_ROLES)}, "severity": {"enum": list(PART_ROLES.values())},
                   "statement": _STR, "verdict": {"enum": _VERDICT_NAMES}, "evidence": _STR,
                   "layers": {"type": "array", "items": {"enum": _LAYER_NAMES}},
                   "by_layer": {"type": "object", "additionalProperties": _STR}},
}
_RESULT = {
    "type": "object",
    "required": ["claim", "variant", "display_id", "params", "verdict", "reason", "expected", "matches_expected",
                 "source", "statement", "fix", "repair", "caveats", "findings", "layers"],
    "properties": {
        "claim": {"type": "string", "pattern": "^[^:]+:[^:]+$"},
        "variant": _STR,
        "display_id": _STR,
        "paper": _STR,
        "title": _STR,
        "run_id": _STR,
        "params": {"type": "object"},
        "verdict": {"enum": _VERDICT_NAMES},
        "reason": _STR,
        "expected": {"enum": _VERDICT_NAMES + [None]},
        "matches_expected": {"type": ["boolean", "null"]},
        "source": _STR,
        "statement": _STR,
        "fix": _NSTR,
        "repair": _STR,
        "provenance": _PROVENANCE,
        "parts": {"type": "array", "items": _PART},
        "protocol": {"type": ["object", "null"], "required": ["claim", "version", "sha256", "frozen", "run", "departures"],
                     "properties": {"claim": _STR, "version": {"type": "integer"}, "sha256": _STR, "frozen": _NSTR,
                                    "run": {"enum": ["confirmatory", "exploratory"]},
                                    "departures": {"type": "array", "items": _STR}}},
        "caveats": {"type": "array", "items": _STR},
        "findings": {"type": "array", "items": _STR},
        "figures": {"type": "array", "items": _FIGURE},
        "figures_reproduced": {"type": ["string", "null"], "pattern": "^[0-9]+/[0-9]+$"},
        "layers": {"type": "object", "additionalProperties": _EVIDENCE,
                   "propertyNames": {"enum": _LAYER_NAMES}},
    },
}
#: ``verify/1`` as a JSON-Schema (draft 2020-12) dict, its enums generated from
#: :class:`~verify.evidence.Status`, :class:`~verify.evidence.Outcome`, :class:`~verify.evidence.Layer`
#: and :class:`~verify.core.model.Verdict`; fields are only ever added.  Shipped as the file
#: :data:`SCHEMA_FILE` (``verify schema`` prints it) so users can validate with any JSON-Schema tool.
JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://verify-attention/schema/verify-1.json",
    "title": "verify/1 report",
    "type": "object",
    "required": ["schema", "tool_version", "command", "seed", "exit_code", "results", "changes"],
    "properties": {
        "schema": {"const": SCHEMA},
        "tool_version": _STR,
        "command": {"enum": ["claim", "all", "audit"]},
        "seed": {"type": "integer"},
        "exit_code": {"type": "integer", "minimum": 0, "maximum": 3},
        "results": {"type": "array", "items": _RESULT},
        "changes": {"type": "array", "items": _STR},
        "not_checked": {"type": "array", "items": _STR},
    },
}

#: the schema as a file inside the installed package (kept equal to :data:`JSON_SCHEMA` by a test)
SCHEMA_FILE = Path(__file__).with_name("verify-1.schema.json")


def schema_text() -> str:
    """:data:`JSON_SCHEMA` as the indented JSON text of :data:`SCHEMA_FILE`."""
    return json.dumps(JSON_SCHEMA, indent=2) + "\n"


def validate(doc: Any, schema: dict[str, Any] | None = None) -> list[str]:
    """Check ``doc`` against a JSON-Schema with the ``jsonschema`` library (draft 2020-12).

    Args:
        doc: the parsed JSON document.
        schema: the schema (default :data:`JSON_SCHEMA`).

    Returns:
        The violations as ``"$.path: message"`` lines, in a stable order (empty when valid).
    """
    import jsonschema

    validator = jsonschema.Draft202012Validator(JSON_SCHEMA if schema is None else schema)
    errs = sorted(validator.iter_errors(doc), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [f"{e.json_path}: {e.message}" for e in errs]
