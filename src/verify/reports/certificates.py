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

A completed run writes ``MANIFEST.json`` last (atomically): every file's SHA-256 and run id.
``verify recheck`` requires it, so a partial set from an interrupted run, a file overwritten by a
run with other parameters, or a foreign file is reported invalid.

Rows are the encoding in exact rationals (strings ``"p/q"``); product rows carry
``product_of`` and are re-derived by the checker.  ``verify recheck DIR`` re-checks every
file with :mod:`verify.solver.recheck`, which imports no solver.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from verify.core.model import ClaimResult, InputError
from verify.evidence import Layer, to_jsonable
from verify.safeio import UnsafeInput, read_regular_file

FORMAT = "verify-certificate/1"


MANIFEST = "MANIFEST.json"
MANIFEST_FORMAT = "verify-certificate-manifest/1"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-").lower()[:60]


def _stem(rid: str) -> str:
    """File stem of a run id: readable slug plus a hash of the whole id (distinct parameters,
    distinct names, however long the id)."""
    return f"{_slug(rid)}__{hashlib.sha256(rid.encode()).hexdigest()[:10]}"


def write_certificates(result: ClaimResult, directory: str | Path) -> list[tuple[Path, str]]:
    """Write one file per certified obligation of the result's solver evidence, atomically.

    File names derive from the run id (claim, variant and every non-default parameter), so two
    runs with different parameters never share a file.  The files count only once
    :func:`write_manifest` has listed them.

    Returns:
        ``(path, run id)`` per file written, in obligation order
        (``<run-id slug>__<hash>__<NNN>.json``).

    Raises:
        InputError: the directory cannot be created (its parent must exist) or a file cannot be written.
    """
    from verify.core.inputs import atomic_write_text
    from verify.core.specs import run_id

    out = Path(directory)
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise InputError(f"--certificates {directory}: cannot create the directory ({e.strerror})") from None
    ev = result.layer(Layer.SOLVER)
    if ev is None or not isinstance(ev.certificate, dict):
        return []
    written = []
    rid = run_id(result.claim, result.params)
    stem = _stem(rid)
    for k, ob in enumerate(_obligations(ev.certificate)):
        cert = ob.get("farkas_certificate")
        if not cert or not cert.get("cases"):
            continue
        doc = {
            "format": FORMAT,
            "claim": result.claim.id,
            "variant": result.variant,
            "run_id": rid,
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
        atomic_write_text(path, json.dumps(doc, indent=1, sort_keys=True), "--certificates")
        written.append((path, rid))
    return written


def _read_cert(path: Path) -> tuple[bytes, str]:
    """A certificate file's bytes (regular files only) and their SHA-256."""
    data = read_regular_file(path, follow_symlinks=False)
    return data, hashlib.sha256(data).hexdigest()


def _read_manifest(directory: Path) -> dict[str, dict]:
    """The manifest's ``files`` map (file name -> {sha256, run_id}).

    Raises:
        UnsafeInput / ValueError: no manifest, or one that is not ours.
    """
    doc = json.loads(read_regular_file(directory / MANIFEST, follow_symlinks=False).decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT or not isinstance(doc.get("files"), dict):
        raise ValueError(f"{MANIFEST} is not a {MANIFEST_FORMAT} document")
    files = doc["files"]
    if not all(isinstance(k, str) and isinstance(v, dict) and isinstance(v.get("sha256"), str)
               for k, v in files.items()):
        raise ValueError(f"{MANIFEST}: malformed file entry")
    outside = [k for k in files if k != Path(k).name or k in ("", ".", "..") or not k.endswith(".json")]
    if outside:
        raise ValueError(f"{MANIFEST}: entry {outside[0][:60]!r} is not a certificate file name in this directory")
    return files


def write_manifest(directory: str | Path, written: list[tuple[Path, str]]) -> Path:
    """Record the files of this run in ``MANIFEST.json`` (written last, atomically).

    Entries of earlier runs with other run ids are kept; those of the run ids written now
    are replaced, and their stale files removed.  A run interrupted before this call leaves
    files the manifest does not list, and ``verify recheck`` reports them as such.

    Returns:
        The manifest path.
    """
    from verify.core.inputs import atomic_write_text

    d = Path(directory)
    try:
        files = _read_manifest(d)
    except (UnsafeInput, ValueError, RecursionError):
        files = {}
    now = {rid for _, rid in written}
    for name, entry in list(files.items()):
        if entry.get("run_id") in now:
            del files[name]
            stale = d / name
            if stale.is_file() and stale not in {p for p, _ in written}:
                stale.unlink()
    for path, rid in written:
        files[path.name] = {"sha256": _read_cert(path)[1], "run_id": rid}
    doc = {"format": MANIFEST_FORMAT, "files": dict(sorted(files.items()))}
    atomic_write_text(d / MANIFEST, json.dumps(doc, indent=1, sort_keys=True) + "\n", "--certificates")
    return d / MANIFEST


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


def recheck_bytes(path: Path, data: bytes) -> tuple[bool, str]:
    """Re-check one certificate's bytes by its format: a head bound (``verify head``) is re-derived in arb balls
    (:mod:`verify.numeric.head_bounds`), every other file is a Farkas certificate (:mod:`verify.solver.recheck`)."""
    from verify.numeric import head_bounds
    from verify.solver.recheck import recheck_file

    if head_bounds.FORMAT.encode() in data:
        try:
            doc = json.loads(data.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError) as e:
            return False, f"unreadable: {type(e).__name__}: {str(e)[:120]}"
        if isinstance(doc, dict) and doc.get("format") == head_bounds.FORMAT:
            return head_bounds.recheck(doc)
    return recheck_file(path, data)


def recheck_dir(directory: str | Path) -> list[tuple[Path, bool, str]]:
    """Re-check every ``*.json`` certificate in a directory (no solver involved).

    The directory must carry the ``MANIFEST.json`` a completed ``--certificates`` run writes
    last: a file it does not list (an interrupted run, a foreign file), a file whose bytes
    differ from the listed hash (overwritten), or a listed file that is missing is invalid.
    Only regular files are read (a FIFO or device is reported, never opened for reading).

    Returns:
        ``(path, ok, message)`` per file, sorted by path (missing listed files included).

    Raises:
        InputError: the directory does not exist or holds no certificate file.
    """
    d = Path(directory)
    if not d.is_dir():
        raise InputError(f"{directory}: not a directory")
    files = sorted(f for f in d.glob("*.json") if f.name != MANIFEST)
    if not files:
        try:
            if not _read_manifest(d):
                return []  # a completed run whose claims had no certified obligation: nothing to check
        except (UnsafeInput, ValueError, RecursionError):
            pass
        raise InputError(f"{directory}: no certificate files (*.json)")
    try:
        listed: dict[str, dict] | None = _read_manifest(d)
        why_no = ""
    except (UnsafeInput, ValueError, RecursionError) as e:
        listed, why_no = None, str(e)
    rows: list[tuple[Path, bool, str]] = []
    for f in files:
        try:
            data, digest = _read_cert(f)
        except UnsafeInput as e:
            rows.append((f, False, str(e)))
            continue
        if listed is None:
            rows.append((f, False, f"no valid {MANIFEST} in the directory ({why_no}): an interrupted run or files "
                                   "from elsewhere; rerun with --certificates"))
            continue
        entry = listed.get(f.name)
        if entry is None:
            rows.append((f, False, f"not listed in {MANIFEST} (an interrupted run, or a file from elsewhere)"))
            continue
        if digest != entry["sha256"]:
            rows.append((f, False, f"its bytes differ from the hash in {MANIFEST} (overwritten or edited)"))
            continue
        rows.append((f, *recheck_bytes(f, data)))
    if listed is not None:
        rows += [(d / name, False, f"listed in {MANIFEST} but missing")
                 for name in sorted(listed) if not (d / name).exists()]
    return sorted(rows, key=lambda r: str(r[0]))


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
    from verify.core import registry
    from verify.core.model import run_claim
    from verify.evidence import Context
    from verify.numeric.head_bounds import FORMAT as HEAD_FORMAT
    from verify.numeric.heads import rebuild_matches

    groups: dict[tuple[str, str], list[tuple[Path, dict]]] = {}
    heads: list[tuple[Path, dict]] = []
    for f in sorted(Path(directory).glob("*.json")):
        if f.name == MANIFEST:
            continue
        try:
            doc = json.loads(read_regular_file(f, follow_symlinks=False).decode("utf-8"))
            if isinstance(doc, dict) and doc.get("format") == HEAD_FORMAT:
                heads.append((f, doc))
                continue
            if not isinstance(doc.get("params", {}), dict) or not isinstance(doc["claim"], str):
                continue
            key = (doc["claim"], json.dumps(doc.get("params", {}), sort_keys=True))
        except (UnsafeInput, ValueError, KeyError, TypeError, AttributeError, RecursionError):
            continue  # unreadable files are reported by recheck_dir
        groups.setdefault(key, []).append((f, doc))
    bad: list[tuple[Path, bool, str]] = []
    missing: list[str] = []
    for f, doc in heads:
        ok, why = rebuild_matches(doc)
        if not ok:
            bad.append((f, False, why))
    for (claim_id, params_json), files in groups.items():
        try:
            claim = registry.get(claim_id)
            raw = {k: (None if v is None else str(v)) for k, v in json.loads(params_json).items()}
            params = claim.parse_params(raw)
        except InputError as e:
            why = (f"{claim_id!r} is not a registered claim: its certificates (e.g. from 'verify realizable') can be "
                   "checked for self-consistency only (run recheck without --rebuild)"
                   if claim_id not in {c.id for c in registry.all_claims()} else str(e))
            bad += [(f, False, f"cannot tie to a claim's encoding: {why}") for f, _ in files]
            continue
        result = run_claim(claim, params, Context(seed=seed), layers=(Layer.SOLVER,))
        ev = result.layer(Layer.SOLVER)
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

