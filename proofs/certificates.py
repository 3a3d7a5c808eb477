"""Certificate files: ``verify CLAIM --certificates DIR`` and ``verify recheck DIR``.

One JSON file per UNSAT proof obligation that carries a certificate:

    {
      "format": "verify-certificate/1",
      "claim": "ws24:theorem2", "variant": "transposed", "params": {...},
      "obligation": "<the obligation in words>",
      "answer": "unsat",
      "solvers": {"z3": version, "cvc5": version}, "cvc5_answer": "unsat" | "unknown (...)",
      "seed": 0,
      "encoding_sha256": "<hash of the rows below>",
      "certificate": {"kind": "farkas", "cases": [{"rows": [...], "multipliers": [...]}]}
    }

Rows are the encoding in exact rationals (strings ``"p/q"``); product rows carry
``product_of`` and are re-derived by the checker.  ``verify recheck DIR`` re-checks every
file with :mod:`verify.solver.recheck`, which imports no solver.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from verify.evidence import to_jsonable
from verify.proofs.model import ClaimResult, InputError

FORMAT = "verify-certificate/1"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def write_certificates(result: ClaimResult, directory: str | Path) -> list[Path]:
    """Write one file per certified obligation of the result's solver evidence.

    Returns:
        The paths written (sorted, stable names: ``<claim>__<variant>__<NNN>.json``).

    Raises:
        InputError: the directory cannot be created.
    """
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"--certificates {directory}: cannot create the directory ({e.strerror})") from None
    ev = result.layer("solver")
    if ev is None or not isinstance(ev.certificate, dict):
        return []
    written = []
    stem = f"{_slug(result.claim.id)}__{_slug(result.variant or 'default')}"
    for k, ob in enumerate(_obligations(ev.certificate)):
        cert = ob.get("farkas_certificate")
        if not cert or not cert.get("cases"):
            continue
        doc = {
            "format": FORMAT,
            "claim": result.claim.id,
            "variant": result.variant,
            "params": to_jsonable(result.params),
            "obligation": ob["name"],
            "answer": ob["answer"],
            "solvers": ev.engines,
            "cvc5_answer": ob.get("cvc5", "not run"),
            "seed": 0,
            "encoding_sha256": cert["encoding_sha256"],
            "certificate": {"kind": cert["kind"], "cases": cert["cases"]},
        }
        path = out / f"{stem}__{k:03d}.json"
        path.write_text(json.dumps(doc, indent=1, sort_keys=True))
        written.append(path)
    return written


def _obligations(obj) -> list[dict]:
    """Every obligation record (a dict with a ``name`` and an ``answer``) inside a
    layer's certificate, depth first, in a stable order."""
    out: list[dict] = []
    if isinstance(obj, dict):
        if "name" in obj and "answer" in obj:
            out.append(obj)
        for v in obj.values():
            if isinstance(v, (dict, list)):
                out += _obligations(v)
    elif isinstance(obj, list):
        for v in obj:
            out += _obligations(v)
    return out


def recheck_dir(directory: str | Path) -> list[tuple[Path, bool, str]]:
    """Re-check every ``*.json`` certificate in a directory (no solver involved).

    Returns:
        ``(path, ok, message)`` per file, sorted by path.

    Raises:
        InputError: the directory does not exist or holds no certificate file.
    """
    from verify.solver.recheck import recheck_file

    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"{directory}: not a directory")
    files = sorted(d.glob("*.json"))
    if not files:
        raise InputError(f"{directory}: no certificate files (*.json)")
    return [(f, *recheck_file(f)) for f in files]
