"""JUnit XML for claim runs (``--junit FILE`` on ``verify CLAIM``, ``verify all``, ``verify audit``).

One ``<testcase>`` per claim variant: ``classname`` = the paper key, ``name`` = the
display id (plus non-default sizes, see :func:`verify.core.specs.run_id`).

What passes depends on the command:

* ``mode="holds"`` (``verify CLAIM``): the case passes when the verdict is HOLDS or
  HOLDS WITH FIX;
* ``mode="expect"`` (``verify all``/``audit``): the case passes when the verdict equals
  its recorded expectation (a claim that is *expected* to fail and fails passes).

A case that does not pass carries ``<failure>`` (FAILS, or a changed verdict) or
``<error>`` (INCONSISTENT or INCONCLUSIVE) with the verdict and reason in ``message``
and the witness, findings and full text block in the body.  Properties carry the
verdict, expectation, seed, layer statuses and engine versions.  Written with
``xml.etree.ElementTree``; deterministic unless ``timings=True``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Sequence

from verify import __version__
from verify.core.model import HOLDS, HOLDS_WITH_FIX, INCONCLUSIVE, INCONSISTENT, ClaimResult
from verify.evidence import Status

__all__ = ["junit_tree", "junit_xml", "write_junit"]


def _outcome(r: ClaimResult, mode: str) -> tuple[str | None, str]:
    """(``None`` | ``"failure"`` | ``"error"``, message) for one result."""
    if mode == "expect":
        if r.expected is None:
            kind = "failure"
            msg = f"{r.display_id}: no expectation recorded (got {r.verdict})"
        elif r.expected == r.verdict:
            return None, ""
        else:
            kind = "failure"
            msg = f"{r.display_id}: {r.expected} -> {r.verdict}"
    else:
        if r.verdict in (HOLDS, HOLDS_WITH_FIX):
            return None, ""
        kind = "failure"
        msg = f"{r.display_id}: {r.verdict}"
    if r.verdict in (INCONSISTENT, INCONCLUSIVE):
        kind = "error"
    return kind, f"{msg} ({r.reason})"


def junit_tree(results: Sequence[ClaimResult], *, suite: str = "verify", mode: str = "holds", seed: int = 0,
               layers: Sequence[str] = (), timings: bool = True, not_checked: Sequence[str] = ()) -> ET.ElementTree:
    """The JUnit document as an ElementTree (``<testsuites><testsuite>...``).

    ``not_checked``: run ids with no check in the requested layers; each becomes a
    ``<skipped>`` testcase (never a failure, never a pass)."""
    from verify.core.specs import run_id
    from verify.reports.text import result_text

    if mode not in ("holds", "expect"):
        raise ValueError(f"mode {mode!r}")
    root = ET.Element("testsuites", name="verify")
    ts = ET.SubElement(root, "testsuite", name=suite)
    props = ET.SubElement(ts, "properties")
    for k, v in (("verify.version", __version__), ("seed", str(seed)), ("layers", ",".join(layers)),
                 ("mode", mode)):
        ET.SubElement(props, "property", name=k, value=v)
    n_fail = n_err = 0
    total = 0.0
    for r in results:
        t = sum(ev.wall_time_s for ev in r.evidence) if timings else 0.0
        total += t
        tc = ET.SubElement(ts, "testcase", classname=r.claim.paper, name=run_id(r.claim, r.params),
                           time=f"{t:.3f}")
        tp = ET.SubElement(tc, "properties")
        items = [("claim", r.claim.id), ("variant", r.variant), ("verdict", r.verdict),
                 ("expected", r.expected or ""), ("seed", str(seed)), ("source", r.claim.source),
                 ("figures_reproduced", r.figures_reproduced or "")]
        engines: dict[str, str] = {}
        for ev in r.evidence:
            items.append((f"layer.{ev.layer}", ev.status if ev.status != Status.CONSISTENT else f"consistent ({ev.outcome})"))
            if ev.seed is not None:
                items.append((f"seed.{ev.layer}", str(ev.seed)))
            engines.update(ev.engines)
        items += [(f"engine.{k}", v) for k, v in sorted(engines.items())]
        for k, v in items:
            ET.SubElement(tp, "property", name=k, value=v)
        kind, msg = _outcome(r, mode)
        if kind is not None:
            if kind == "failure":
                n_fail += 1
            else:
                n_err += 1
            el = ET.SubElement(tc, kind, message=msg, type=r.verdict)
            body = [msg, ""]
            wit = [ev for ev in r.evidence if ev.witness]
            for ev in wit:
                body.append(f"witness ({ev.layer}): {ev.witness}")
            if wit:
                body.append("")
            body.append(result_text(r, verbose=True, timings=timings))
            el.text = "\n".join(body)
        out = ET.SubElement(tc, "system-out")
        out.text = result_text(r, verbose=False, timings=timings)
    for rid in not_checked:
        tc = ET.SubElement(ts, "testcase", classname=rid.split(":", 1)[0], name=rid, time="0.000")
        ET.SubElement(tc, "skipped", message=f"{rid}: no check in the requested layers ({','.join(layers)})")
    ts.set("tests", str(len(results) + len(not_checked)))
    ts.set("failures", str(n_fail))
    ts.set("errors", str(n_err))
    ts.set("skipped", str(len(not_checked)))
    ts.set("time", f"{total:.3f}")
    for k in ("tests", "failures", "errors", "skipped", "time"):
        root.set(k, ts.get(k, ""))
    ET.indent(root)
    return ET.ElementTree(root)


def junit_xml(results: Sequence[ClaimResult], **kw) -> str:
    """The JUnit document as a string (with the XML declaration)."""
    tree = junit_tree(results, **kw)
    root = tree.getroot()
    assert root is not None  # junit_tree always builds a root
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def write_junit(path: str | Path, results: Sequence[ClaimResult], **kw) -> None:
    """Write the JUnit document to ``path`` atomically (temporary file, then rename).

    Raises:
        InputError: the file cannot be written.
    """
    from verify.core.inputs import atomic_write_text

    atomic_write_text(path, junit_xml(results, **kw), "--junit")
