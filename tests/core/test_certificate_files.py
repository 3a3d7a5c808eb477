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


# ------------------------------------------------------------------ the first pass's survivors


def test_files_are_written_as_indented_sorted_json_and_a_directory_is_reused(tmp_path: Path) -> None:
    """The certificate and manifest texts, byte for byte (kills indent=1 -> 0 / 2 and sort_keys dropped); writing
    twice into one directory works (kills mkdir(exist_ok=True) -> False)."""
    cert = {"kind": "farkas", "cases": [{"rows": ROWS, "multipliers": ["1", "1"]}], "encoding_sha256": "h"}
    obs = [{"name": "o1", "answer": "unsat", "farkas_certificate": cert}]
    out = tmp_path / "out"
    (p, rid), = C.write_certificates(_result(obs), out)
    C.write_certificates(_result(obs), out)
    doc = json.loads(p.read_text())
    assert p.read_text() == json.dumps(doc, indent=1, sort_keys=True)
    m = C.write_manifest(out, [(p, rid)])
    assert m.read_text() == json.dumps(json.loads(m.read_text()), indent=1, sort_keys=True) + "\n"
    assert m.read_text().startswith('{\n "files": {\n  "')


def test_symlinks_are_not_followed(tmp_path: Path) -> None:
    """A certificate that is a symlink, and a manifest that is one, are not read (kills follow_symlinks=False ->
    True on each)."""
    d = _dir(tmp_path, {"a.json": _doc()})
    real = tmp_path / "real.json"
    real.write_text(json.dumps(_doc()))
    (d / "b.json").symlink_to(real)
    rows = {p.name: (ok, why) for p, ok, why in C.recheck_dir(d)}
    assert rows["a.json"][0] and rows["b.json"] == (False, rows["b.json"][1]) and "regular file" in rows["b.json"][1]
    m = tmp_path / "manifest-elsewhere.json"
    (d / C.MANIFEST).rename(m)
    (d / C.MANIFEST).symlink_to(m)
    with pytest.raises(Exception, match="regular file"):
        C._read_manifest(d)


def test_the_manifest_s_format_and_names_are_checked_exactly(tmp_path: Path) -> None:
    """A later format is refused (kills != MANIFEST_FORMAT -> <); a name in a subdirectory is refused (kills
    k != Path(k).name -> <); a long name is quoted to 60 characters (kills each change of the 60)."""
    d = _dir(tmp_path, {"a.json": _doc()})
    (d / C.MANIFEST).write_text(json.dumps({"format": "verify-certificate-manifest/2", "files": {}}))
    with pytest.raises(ValueError, match="is not a verify-certificate-manifest/1 document"):
        C._read_manifest(d)
    for name in ("sub/a.json", "d/" + "a" * 70 + ".json"):
        files = {name: {"sha256": "s"}, "../last.json": {"sha256": "s"}}  # the first offending entry is quoted
        (d / C.MANIFEST).write_text(json.dumps({"format": C.MANIFEST_FORMAT, "files": files}))
        with pytest.raises(ValueError) as e:
            C._read_manifest(d)
        assert str(e.value) == f"{C.MANIFEST}: entry {name[:60]!r} is not a certificate file name in this directory"


def test_a_later_head_format_is_not_read_as_a_head_bound(tmp_path: Path) -> None:
    """A document whose format sorts after the head format (and mentions it) goes to the Farkas checker, which
    refuses its format (kills == head_bounds.FORMAT -> >=)."""
    from verify.numeric import head_bounds

    later = {"format": head_bounds.FORMAT[:-1] + "2", "note": head_bounds.FORMAT}
    assert C.recheck_bytes(tmp_path / "x.json", json.dumps(later).encode()) == (
        False, f"unknown certificate format {later['format']!r}")


def test_every_file_is_judged_whatever_comes_before_it(tmp_path: Path) -> None:
    """A FIFO, an unlisted file, a changed file first in name order: the files after each are still judged (kills
    each 'continue' -> 'break'); a file named before MANIFEST.json is checked (kills != MANIFEST -> >); a file
    whose digest sorts after the recorded one is changed, not equal (kills != -> <)."""
    good = json.dumps(_doc())
    d = _dir(tmp_path, {"b.json": _doc(), "A.json": _doc()})
    os.mkfifo(d / "a-fifo.json")
    (d / "a-stray.json").write_text(good)
    m = json.loads((d / C.MANIFEST).read_text())
    (d / "a-changed.json").write_text(good)
    m["files"]["a-changed.json"] = {"sha256": "0" * 64, "run_id": "r"}
    (d / C.MANIFEST).write_text(json.dumps(m))
    rows = {p.name: ok for p, ok, _ in C.recheck_dir(d)}
    assert rows == {"A.json": True, "a-changed.json": False, "a-fifo.json": False, "a-stray.json": False,
                    "b.json": True}
    (d / C.MANIFEST).unlink()
    (d / "a-fifo.json").unlink()
    assert [ok for _, ok, _ in C.recheck_dir(d)] == [False, False, False, False]  # every file, no manifest


class _Claim:
    def __init__(self, cid: str) -> None:
        self.id = cid
        self.raw: list[dict] = []

    def parse_params(self, raw: dict) -> dict:
        self.raw.append(raw)
        if raw.get("n") == "bad":
            raise InputError("--n bad: not an integer")
        return raw


def test_rebuild_ties_each_file_to_its_claim_s_encoding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """rebuild_check with the solver run replaced by its result: a matching file passes, a file of another
    encoding, of an obligation the claim lacks, of an unregistered claim or of bad parameters is named, an
    obligation without a file is missing, a head certificate is tied to its model, unreadable files and the
    manifest are left to recheck_dir, and the seed reaches the run (kills every mutant of the first pass in
    rebuild_check)."""
    from verify.core import model, registry
    from verify.numeric import head_bounds, heads

    claim = _Claim("x:y")
    monkeypatch.setattr(registry, "get", lambda cid: claim if cid == "x:y" else (_ for _ in ()).throw(
        InputError(f"unknown claim {cid!r}")))
    monkeypatch.setattr(registry, "all_claims", lambda: [claim, SimpleNamespace(id="x:z")])
    runs: list[int] = []
    obligations = [{"name": n, "answer": "unsat", "farkas_certificate": {"cases": [1], "encoding_sha256": h}}
                   for n, h in (("o1", "h1"), ("o2", "h2"), ("o3", "h3"))]
    obligations.append({"name": "o4", "answer": "unsat", "farkas_certificate": {"cases": [], "encoding_sha256": "h4"}})

    def run_claim(c, params, ctx, layers):
        runs.append(ctx.seed)
        ev = SimpleNamespace(certificate={"obligations": obligations})
        return SimpleNamespace(layer=lambda layer: ev)

    monkeypatch.setattr(model, "run_claim", run_claim)
    monkeypatch.setattr(heads, "rebuild_matches", lambda doc: (doc["ok"], "the weights differ"))
    d = tmp_path / "r"
    d.mkdir()

    def put(name: str, doc) -> None:
        (d / name).write_text(json.dumps(doc))

    base = {"claim": "x:y", "params": {"n": 5, "m": None}}
    put("f1.json", {**base, "obligation": "o1", "encoding_sha256": "h1"})
    put("f2.json", {**base, "obligation": "o2", "encoding_sha256": "zz-forged"})
    put("f4.json", {"claim": "x:y", "params": {"m": None, "n": 5}, "obligation": "o1", "encoding_sha256": "h1"})
    put("A.json", {**base, "obligation": "o1", "encoding_sha256": "zz"})
    put("a-head.json", {"format": head_bounds.FORMAT, "ok": True})
    put("a-s1.json", {"claim": 3, "obligation": "o1"})
    (d / "a-broken.json").write_text("{not json")
    outside = tmp_path / "forged.json"
    outside.write_text(json.dumps({**base, "obligation": "o1", "encoding_sha256": "zz"}))
    (d / "f9.json").symlink_to(outside)
    put("f3.json", {**base, "obligation": "oX", "encoding_sha256": "h1"})
    put("g1.json", {"claim": "x:z", "params": {}, "obligation": "o1"})
    put("g2.json", {"claim": "x:y", "params": {"n": "bad"}, "obligation": "o1"})
    put("g3.json", {"claim": "nope:q", "params": {}, "obligation": "o1"})
    put("h1.json", {"format": head_bounds.FORMAT, "ok": False})
    put("h2.json", {"format": head_bounds.FORMAT, "ok": True})
    put("s1.json", {"claim": 3, "obligation": "o1"})
    put("s2.json", {"claim": "x:y", "params": [1], "obligation": "o1"})
    put("s3.json", [1, 2])
    (d / "s4.json").write_text("{not json")
    put(C.MANIFEST, {"claim": "x:y", "params": {}, "obligation": "o9"})
    bad, missing = C.rebuild_check(d, seed=7)
    assert {p.name: (ok, why) for p, ok, why in bad} == {
        "A.json": (False, "the rows are not the encoding x:y produces for 'o1'"),
        "f2.json": (False, "the rows are not the encoding x:y produces for 'o2'"),
        "f3.json": (False, "x:y has no certified obligation named 'oX'"),
        "g1.json": (False, "cannot tie to a claim's encoding: unknown claim 'x:z'"),
        "g2.json": (False, "cannot tie to a claim's encoding: --n bad: not an integer"),
        "g3.json": (False, "cannot tie to a claim's encoding: 'nope:q' is not a registered claim: its certificates "
                           "(e.g. from 'verify realizable') can be checked for self-consistency only (run recheck "
                           "without --rebuild)"),
        "h1.json": (False, "the weights differ")}
    assert missing == ["x:y: no file for certified obligation 'o3'"]  # o4 has no cases: not certified
    assert runs == [7] and claim.raw[0] == {"n": "5", "m": None}
    C.rebuild_check(d)
    assert runs == [7, 0]
