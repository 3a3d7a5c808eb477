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


def rebuild_check(directory: str | Path, seed: int = 0) -> tuple[list[tuple[Path, bool, str]], list[str]]:
    """Tie every certificate file to the claim it speaks for.

    A file is self-consistent when its multipliers refute its own rows; that alone does
    not show the rows are the claim's encoding (a forged file with one row '0 <= -1'
    is self-consistent).  This re-runs the solver layer of each (claim, params) found in
    the directory, recomputes each obligation's encoding hash, and compares.  The
    solver is used only to regenerate the encodings; validity is still decided by the
    solver-free checker.

    Returns:
        (per-file ``(path, ok, message)`` for files whose encoding does not match or whose
        obligation the claim does not have; messages for obligations with no file).
    """
    from verify.evidence import Context
    from verify.proofs import registry
    from verify.proofs.model import run_claim

    groups: dict[tuple[str, str], list[tuple[Path, dict]]] = {}
    for f in sorted(Path(directory).glob("*.json")):
        try:
            doc = json.loads(f.read_text())
            key = (doc["claim"], json.dumps(doc.get("params", {}), sort_keys=True))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # unreadable files are reported by recheck_dir
        groups.setdefault(key, []).append((f, doc))
    bad: list[tuple[Path, bool, str]] = []
    missing: list[str] = []
    for (claim_id, params_json), files in groups.items():
        try:
            claim = registry.get(claim_id)
            raw = {k: (None if v is None else str(v)) for k, v in json.loads(params_json).items()}
            params = claim.parse_params(raw)
        except InputError as e:
            bad += [(f, False, f"cannot rebuild: {e}") for f, _ in files]
            continue
        result = run_claim(claim, params, Context(seed=seed), layers=("solver",))
        ev = result.layer("solver")
        expected = {ob["name"]: ob["farkas_certificate"]["encoding_sha256"]
                    for ob in _obligations(ev.certificate if ev else None)
                    if ob.get("farkas_certificate") and ob["farkas_certificate"].get("cases")}
        seen = set()
        for f, doc in files:
            name = doc.get("obligation")
            seen.add(name)
            if name not in expected:
                bad.append((f, False, f"{claim_id} has no certified obligation named {name!r}"))
            elif doc.get("encoding_sha256") != expected[name]:
                bad.append((f, False, f"the rows are not the encoding {claim_id} produces for {name!r}"))
        missing += [f"{claim_id}: no file for certified obligation {n!r}" for n in expected if n not in seen]
    return bad, missing

