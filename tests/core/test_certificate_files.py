"""src/verify/reports/certificates.py, the certificate files and their manifest, without a solver run: names, the
manifest's bookkeeping and refusals, the directory re-check's verdict per file, all asserted by value (the mutation
pass of the module runs against this file; tests/core/test_certificates.py covers the same on real claims)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from verify.core.model import InputError
from verify.reports import certificates as C

ROWS = [{"coeffs": {"x": "-1"}, "op": "<=", "rhs": "-1"}, {"coeffs": {"x": "1"}, "op": "<=", "rhs": "0"}]


def _doc(rows=ROWS, ys=("1", "1")) -> dict:
    from verify.solver.recheck import encoding_hash

    return {"format": C.FORMAT, "claim": "x:y", "answer": "unsat", "encoding_sha256": encoding_hash([rows]),
            "certificate": {"kind": "farkas", "cases": [{"rows": rows, "multipliers": list(ys)}]}}


def _dir(tmp_path: Path, docs: dict[str, dict], listed: dict[str, str] | None = None) -> Path:
    """Files with the given documents and a manifest listing each (or ``listed``: name -> sha to record)."""
    d = tmp_path / "certs"
    d.mkdir()
    files = {}
    for name, doc in docs.items():
        (d / name).write_text(json.dumps(doc))
        files[name] = {"sha256": hashlib.sha256((d / name).read_bytes()).hexdigest(), "run_id": "r"}
    if listed is not None:
        files = {n: {"sha256": s, "run_id": "r"} for n, s in listed.items()}
    (d / C.MANIFEST).write_text(json.dumps({"format": C.MANIFEST_FORMAT, "files": files}))
    return d


def test_names() -> None:
    assert C._slug("ws24:theorem2 [transposed]  V=8") == "ws24-theorem2-transposed-v-8"
    assert C._slug("--x--") == "x" and len(C._slug("a" * 100)) == 60
    rid = "pr26:prop1 n=5"
    assert C._stem(rid) == f"pr26-prop1-n-5__{hashlib.sha256(rid.encode()).hexdigest()[:10]}"


def test_obligations_depth_first() -> None:
    tree = {"name": "a", "answer": "unsat", "kids": [{"name": "b", "answer": "sat"}, {"x": {"name": "c",
                                                                                            "answer": "unsat"}}],
            "other": "name"}
    assert [o["name"] for o in C._obligations(tree)] == ["a", "b", "c"]
    assert C._obligations([{"name": "d", "answer": "u"}, 3, "s"]) == [{"name": "d", "answer": "u"}]
    assert C._obligations({"name": "only a name"}) == [] and C._obligations(None) == []


def _result(obligations: list[dict] | None, tmp_claim_id: str = "pr26:prop1") -> SimpleNamespace:
    from verify.core import registry

    claim = registry.get(tmp_claim_id)
    params = claim.parse_params({})
    ev = None if obligations is None else SimpleNamespace(certificate={"obligations": obligations},
                                                          engines={"z3": "4", "cvc5": "1"})
    return SimpleNamespace(claim=claim, params=params, variant="", layer=lambda layer: ev)


def test_write_certificates_one_file_per_certified_obligation(tmp_path: Path) -> None:
    cert = {"kind": "farkas", "cases": [{"rows": ROWS, "multipliers": ["1", "1"]}], "encoding_sha256": "h"}
    obs = [{"name": "o1", "answer": "unsat", "farkas_certificate": cert, "cvc5": "unsat"},
           {"name": "o2", "answer": "unsat", "farkas_certificate": {"cases": []}},
           {"name": "o3", "answer": "unsat"},
           {"name": "o4", "answer": "unsat", "farkas_certificate": cert}]
    written = C.write_certificates(_result(obs), tmp_path / "out")
    from verify.core.specs import run_id

    r = _result(obs)
    rid = run_id(r.claim, r.params)
    assert [(p.name, x) for p, x in written] == [(f"{C._stem(rid)}__000.json", rid), (f"{C._stem(rid)}__003.json", rid)]
    doc = json.loads(written[0][0].read_text())
    assert doc == {"format": C.FORMAT, "claim": "pr26:prop1", "variant": "", "run_id": rid, "params": doc["params"],
                   "obligation": "o1", "answer": "unsat", "solvers": {"z3": "4", "cvc5": "1"}, "cvc5_answer": "unsat",
                   "seed": 0, "encoding_sha256": "h", "certificate": {"kind": "farkas", "cases": cert["cases"]}}
    assert json.loads(written[1][0].read_text())["cvc5_answer"] == "not run"
    assert C.write_certificates(_result(None), tmp_path / "none") == []
    with pytest.raises(InputError, match="cannot create the directory"):
        C.write_certificates(_result(obs), tmp_path / "no" / "such")


def test_the_manifest_is_read_only_when_it_is_ours(tmp_path: Path) -> None:
    d = _dir(tmp_path, {"a.json": _doc()})
    assert set(C._read_manifest(d)) == {"a.json"}
    for bad, why in ((["x"], "is not a"), ({"format": "other", "files": {}}, "is not a"),
                     ({"format": C.MANIFEST_FORMAT, "files": []}, "is not a"),
                     ({"format": C.MANIFEST_FORMAT, "files": {"a.json": {"sha256": 1}}}, "malformed file entry"),
                     ({"format": C.MANIFEST_FORMAT, "files": {"a.json": "x"}}, "malformed file entry"),
                     ({"format": C.MANIFEST_FORMAT, "files": {"../a.json": {"sha256": "s"}}}, "is not a certificate"),
                     ({"format": C.MANIFEST_FORMAT, "files": {"a.txt": {"sha256": "s"}}}, "is not a certificate")):
        (d / C.MANIFEST).write_text(json.dumps(bad))
        with pytest.raises(ValueError, match=why):
            C._read_manifest(d)


def test_write_manifest_replaces_this_run_and_keeps_the_others(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    old, other, new = d / "old.json", d / "other.json", d / "new.json"
    for p in (old, other, new):
        p.write_text(p.name)
    C.write_manifest(d, [(old, "run A"), (other, "run B")])
    C.write_manifest(d, [(new, "run A")])
    files = json.loads((d / C.MANIFEST).read_text())["files"]
    assert list(files) == ["new.json", "other.json"]  # sorted; run A's old file dropped and deleted
    assert files["new.json"] == {"sha256": hashlib.sha256(b"new.json").hexdigest(), "run_id": "run A"}
    assert not old.exists() and other.exists() and new.exists()
    (d / C.MANIFEST).write_text("not json")
    C.write_manifest(d, [(other, "run B")])  # an unreadable manifest is started afresh
    assert list(json.loads((d / C.MANIFEST).read_text())["files"]) == ["other.json"]


def test_rewriting_a_run_keeps_a_file_it_writes_again(tmp_path: Path) -> None:
    d = tmp_path / "m"
    d.mkdir()
    f = d / "same.json"
    f.write_text("1")
    C.write_manifest(d, [(f, "run A")])
    f.write_text("2")
    C.write_manifest(d, [(f, "run A")])
    assert f.exists() and json.loads((d / C.MANIFEST).read_text())["files"]["same.json"]["sha256"] == \
        hashlib.sha256(b"2").hexdigest()


def test_recheck_dir_judges_every_file(tmp_path: Path) -> None:
    good, bad = _doc(), _doc(ys=("1", "0"))
    d = _dir(tmp_path, {"good.json": good, "bad.json": bad})
    (d / "stray.json").write_text(json.dumps(good))
    m = json.loads((d / C.MANIFEST).read_text())
    m["files"]["gone.json"] = {"sha256": "0" * 64, "run_id": "r"}
    (d / C.MANIFEST).write_text(json.dumps(m))
    (d / "good.json").write_text(json.dumps(good))  # same bytes as listed
    rows = {p.name: (ok, why) for p, ok, why in C.recheck_dir(d)}
    assert rows["good.json"] == (True, "1 case(s), each a Farkas contradiction")
    assert not rows["bad.json"][0] and rows["bad.json"][1].startswith("case 0:")
    assert rows["stray.json"] == (False, f"not listed in {C.MANIFEST} (an interrupted run, or a file from elsewhere)")
    assert rows["gone.json"] == (False, f"listed in {C.MANIFEST} but missing")
    assert list(rows) == sorted(rows)
    (d / "good.json").write_text(json.dumps(good) + " ")
    assert {p.name: ok for p, ok, _ in C.recheck_dir(d)}["good.json"] is False
    assert dict((p.name, w) for p, _, w in C.recheck_dir(d))["good.json"] == (
        f"its bytes differ from the hash in {C.MANIFEST} (overwritten or edited)")


def test_recheck_dir_without_a_manifest_or_files(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        C.recheck_dir(tmp_path / "nope")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="no certificate files"):
        C.recheck_dir(empty)
    (empty / C.MANIFEST).write_text(json.dumps({"format": C.MANIFEST_FORMAT, "files": {}}))
    assert C.recheck_dir(empty) == []  # a completed run with nothing certified
    (empty / C.MANIFEST).write_text(json.dumps({"format": C.MANIFEST_FORMAT,
                                                "files": {"a.json": {"sha256": "s", "run_id": "r"}}}))
    with pytest.raises(InputError, match="no certificate files"):
        C.recheck_dir(empty)
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "a.json").write_text(json.dumps(_doc()))
    (p, ok, why), = C.recheck_dir(loose)
    assert not ok and why.startswith(f"no valid {C.MANIFEST} in the directory (") and \
        why.endswith("): an interrupted run or files from elsewhere; rerun with --certificates")


def test_a_fifo_is_reported_not_read(tmp_path: Path) -> None:
    d = _dir(tmp_path, {"a.json": _doc()})
    os.mkfifo(d / "b.json")
    rows = {p.name: (ok, why) for p, ok, why in C.recheck_dir(d)}
    assert rows["a.json"][0] and not rows["b.json"][0] and "regular file" in rows["b.json"][1]


def test_recheck_bytes_routes_head_bounds_by_format(tmp_path: Path) -> None:
    from verify.numeric import head_bounds

    assert C.recheck_bytes(tmp_path / "a.json", json.dumps(_doc()).encode()) == (
        True, "1 case(s), each a Farkas contradiction")
    head = json.dumps({"format": head_bounds.FORMAT, "program": None}).encode()
    assert C.recheck_bytes(tmp_path / "h.json", head) == (False, "'program' must be an object")
    broken = head_bounds.FORMAT.encode() + b"\xff{"
    assert C.recheck_bytes(tmp_path / "h.json", broken) == (
        False, "unreadable: UnicodeDecodeError: 'utf-8' codec can't decode byte 0xff in position 25: invalid start byte")
    # the format string inside another document's text is not a head bound
    farkas_mentioning = {**_doc(), "note": head_bounds.FORMAT}
    assert C.recheck_bytes(tmp_path / "a.json", json.dumps(farkas_mentioning).encode())[0] is True
