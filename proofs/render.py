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
          "params": {option: value},          # rationals as "p/q" strings
          "verdict": "HOLDS" | "FAILS" | "HOLDS WITH FIX" | "INCONCLUSIVE" | "INCONSISTENT",
          "reason": str, "expected": str | null, "matches_expected": bool | null,
          "source": str, "statement": str, "fix": str | null, "repair": str,
          "caveats": [str], "findings": [str],
          "layers": {"symbolic" | "solver" | "numeric": {
              "status": str, "outcome": "holds" | "fails" | null, "summary": str,
              "numbers": {...}, "witness": ... | null, "certificate": ... | null,
              "tolerance": str | null, "bound": str | null, "engines": {name: version},
              "seed": int | null, "wall_time_s": float, "details": [str]}}
        }
      ],
      "changes": [str]                        # `all`/`audit`: verdicts that differ from expectations
    }

``wall_time_s`` is the only field that varies between runs with the same inputs;
``--no-timings`` sets it to 0 so the JSON is byte-identical across runs.
"""

from __future__ import annotations

import json
from typing import Any, Sequence

from verify import __version__
from verify.evidence import to_jsonable
from verify.proofs.model import ClaimResult

SCHEMA = "verify/1"


def result_dict(r: ClaimResult, timings: bool = True) -> dict[str, Any]:
    layers = {}
    for ev in r.evidence:
        d = ev.to_dict()
        d.pop("layer")
        if not timings:
            d["wall_time_s"] = 0.0
        layers[ev.layer] = d
    return to_jsonable({
        "claim": r.claim.id,
        "variant": r.variant,
        "display_id": r.display_id,
        "params": r.params,
        "verdict": r.verdict,
        "reason": r.reason,
        "expected": r.expected,
        "matches_expected": None if r.expected is None else r.expected == r.verdict,
        "source": r.claim.source,
        "statement": r.claim.statement,
        "fix": r.fix,
        "repair": r.claim.repair,
        "caveats": list(r.claim.caveats),
        "findings": r.notes,
        "layers": layers,
    })


def to_json(results: Sequence[ClaimResult], command: str, seed: int, exit_code: int,
            changes: Sequence[str] = (), timings: bool = True) -> str:
    doc = {
        "schema": SCHEMA,
        "tool_version": __version__,
        "command": command,
        "seed": seed,
        "exit_code": exit_code,
        "results": [result_dict(r, timings) for r in results],
        "changes": list(changes),
    }
    return json.dumps(doc, indent=2, sort_keys=False)


def _status(ev) -> str:
    if ev.status == "consistent":
        return f"consistent ({ev.outcome})"
    return ev.status


def result_text(r: ClaimResult, verbose: bool = True) -> str:
    """The referee-readable text block for one claim variant."""
    lines = [f"{r.display_id}: {r.verdict}"]
    lines.append(f"  source:    {r.claim.source}")
    lines.append(f"  statement: {r.claim.statement}")
    if r.fix:
        lines.append(f"  variant:   {r.variant} (fix: {r.fix})")
    elif r.variant:
        lines.append(f"  variant:   {r.variant} (the statement as written)")
    lines.append("  evidence:")
    for ev in r.evidence:
        t = f"{ev.wall_time_s:.2f} s" if ev.status != "skipped" else ""
        lines.append(f"    {ev.layer:<9} {_status(ev):<20} {t:>8}  {ev.summary}")
        if verbose and ev.status != "skipped":
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
            lines.append(f"    {ev.layer}: " + ", ".join(f"{k} = {v}" for k, v in _flat(ev.witness)))
    if r.notes:
        lines.append("  findings:")
        lines += [f"    - {n}" for n in r.notes]
    if r.claim.repair and r.verdict in ("FAILS", "HOLDS WITH FIX"):
        lines.append(f"  repair:    {r.claim.repair}")
    if verbose and r.claim.caveats:
        lines.append("  caveats:")
        lines += [f"    - {c}" for c in r.claim.caveats]
    lines.append(f"  verdict:   {r.verdict} ({r.reason})")
    return "\n".join(lines)


def _flat(w: Any) -> list[tuple[str, Any]]:
    if isinstance(w, dict):
        return [(str(k), v) for k, v in w.items()]
    return [("value", w)]


def table_text(results: Sequence[ClaimResult]) -> str:
    """One row per claim variant: id, verdict, expected, per-layer statuses, time."""
    head = f"{'claim':<34} {'verdict':<15} {'expected':<15} {'symbolic':<12} {'solver':<12} {'numeric':<18} {'time':>7}"
    rows = [head, "-" * len(head)]
    for r in results:
        st = {ev.layer: _status(ev) for ev in r.evidence}
        total = sum(ev.wall_time_s for ev in r.evidence)
        mark = "" if r.expected in (None, r.verdict) else "  <- changed"
        rows.append(f"{r.display_id:<34} {r.verdict:<15} {r.expected or '-':<15} {st.get('symbolic', '-'):<12} "
                    f"{st.get('solver', '-'):<12} {st.get('numeric', '-'):<18} {total:>6.1f}s{mark}")
    return "\n".join(rows)
