"""Stored confirmatory results re-checked without retraining (``verify recheck FILE.json``).

A confirmatory run's ``verify CLAIM --confirmatory --format json`` is its stored result: it carries the protocol's
hash (``protocol``) and the checkpoints it read or trained (``checkpoints``: each file of the lab cache with the
digest of its parameters).  :func:`recheck_stored` refuses a file whose protocol hash is not the registry's, checks
every checkpoint in the lab cache (present, loadable, the same digest), then runs the claim again at the protocol's
sizes on those checkpoints and requires the same verdict, the same decision and the same checkpoints.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Iterator

from verify.core.model import InputError

#: a stored result is at most this large (the confirmatory JSONs are 10-100 KB)
MAX_STORED_BYTES = 8 * 1024 * 1024


def _checkpoints(obj: Any) -> Iterator[dict[str, str]]:
    """Every ``{"file", "digest"}`` record inside a result's evidence, in order."""
    if isinstance(obj, dict):
        if set(obj) == {"file", "digest"} and all(isinstance(v, str) for v in obj.values()):
            yield obj
            return
        for v in obj.values():
            yield from _checkpoints(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _checkpoints(v)


def load_stored(path: str) -> list[dict[str, Any]]:
    """The confirmatory results of a stored ``verify/1`` file, each checked against the protocol registry.

    Raises:
        InputError: not a readable ``verify/1`` JSON file, no confirmatory result in it, a claim without a protocol,
            a protocol version that is not the claim's, a hash that differs from the registry's, no checkpoints.
    """
    from verify.core import registry
    from verify.core.protocol import registered
    from verify.reports.text import SCHEMA
    from verify.safeio import UnsafeInput, read_regular_file

    try:
        doc = json.loads(read_regular_file(path, limit=MAX_STORED_BYTES))
    except UnsafeInput as exc:
        raise InputError(f"{path}: {exc}") from None
    except ValueError:
        raise InputError(f"{path}: not JSON") from None
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("results"), list):
        raise InputError(f"{path}: not a verify report ({SCHEMA})")
    stored = [r for r in doc["results"] if isinstance(r, dict) and isinstance(r.get("protocol"), dict)
              and r["protocol"].get("run") == "confirmatory"]
    if not stored:
        raise InputError(f"{path}: no confirmatory result in it (only a run under a claim's protocol is stored)")
    for r in stored:
        claim = registry.get(str(r.get("claim")))
        rec, proto = r["protocol"], claim.protocol
        if proto is None:
            raise InputError(f"{path}: {claim.id} has no protocol")
        if rec.get("version") != proto.version:
            raise InputError(f"{path}: {claim.id}'s stored result is of protocol version {rec.get('version')!r}, not the "
                             f"registry's current v{proto.version} (re-checking runs today's code)")
        entry = registered(proto) or {}
        if rec.get("sha256") != entry.get("sha256") or rec.get("sha256") != proto.sha256:
            raise InputError(f"{path}: {claim.id}'s stored protocol hash {str(rec.get('sha256'))[:12]} differs from the "
                             f"registry's {str(entry.get('sha256'))[:12]} for v{proto.version}")
        if not list(_checkpoints(r.get("layers"))):
            raise InputError(f"{path}: {claim.id}'s stored result records no checkpoints; rerun `{proto.command}`")
    return stored


def recheck_stored(path: str, cache_dir: str | None, progress: Callable[[str], None] | None = None
                   ) -> list[tuple[str, bool, str]]:
    """Re-check each confirmatory result of ``path`` (:func:`load_stored`) on the lab cache: ``(run id, same,
    message)`` per result.

    Raises:
        InputError: :func:`load_stored`; a checkpoint missing or changed in the cache (re-checking would retrain).
    """
    from verify.core import registry
    from verify.core.model import run_claim
    from verify.evidence import Context
    from verify.ledger import default_cache_dir
    from verify.numeric.lab import check_checkpoint
    from verify.reports.text import result_dict

    stored = load_stored(path)
    directory = cache_dir or str(default_cache_dir())
    for r in stored:
        for c in _checkpoints(r["layers"]):
            why = check_checkpoint(directory, c)
            if why is not None:
                raise InputError(f"{r['claim']}: {why}")
    out = []
    for r in stored:
        claim = registry.get(r["claim"])
        params = claim.parse_params({o.name: str(r["params"][o.name]) if not isinstance(r["params"][o.name], list)
                                     else ",".join(map(str, r["params"][o.name]))
                                     for o in claim.options if o.name in r["params"]})
        ctx = Context(seed=0, profile=claim.protocol.profile, cache_dir=directory, progress=progress)
        ran = [layer for layer, ev in r["layers"].items() if isinstance(ev, dict) and ev.get("status") != "skipped"]
        again = result_dict(run_claim(claim, params, ctx, layers=ran))
        now = list(_checkpoints(again["layers"]))
        was = list(_checkpoints(r["layers"]))
        diffs = []
        if again["verdict"] != r["verdict"]:
            diffs.append(f"verdict {r['verdict']} stored, {again['verdict']} now")
        if (again.get("protocol") or {}).get("run") != "confirmatory":
            diffs.append("the rerun is not confirmatory")
        if now != was:
            diffs.append(f"checkpoints differ ({len(was)} stored, {len(now)} now)")
        for layer, ev in r["layers"].items():
            new = again["layers"].get(layer, {})
            if (ev.get("status"), ev.get("outcome")) != (new.get("status"), new.get("outcome")):
                diffs.append(f"{layer}: {ev.get('status')}/{ev.get('outcome')} stored, "
                             f"{new.get('status')}/{new.get('outcome')} now")
            s_old = (ev.get("numbers") or {}).get("sensitivity")
            if s_old is not None and s_old != (new.get("numbers") or {}).get("sensitivity"):
                diffs.append(f"{layer}: the sensitivity lines differ")
        rid = str(r.get("run_id", r["claim"]))
        out.append((rid, not diffs, "; ".join(diffs) if diffs else
                    f"same verdict {r['verdict']} under {claim.protocol.short}, from the same {len(was)} checkpoint(s)"
                    " (digests re-checked; nothing retrained)"))
    return out
