"""``verify head --kernel``: a head's decided rows checked in Coq (kernel/theories/HeadSoftmax.v,
kernel/head_replay.py), each check shown failing on an injected fault.

Needs coqc: skipped without it, failed under CI.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from fractions import Fraction
from pathlib import Path

import mpmath
import pytest
from kernel_support import compile_theory, need_coq

from verify.kernel import head_replay as hr
from verify.kernel.driver import THEORIES
from verify.numeric import head_bounds as hb

HALF = Fraction(1, 2)


def _program() -> tuple[hb.HeadProgram, hb.PromptInput]:
    """d_model 2, d_head 1: scores s_ij = x_i[0] x_j[1]; queries 1, 2, 3 put mass < 1/2 on keys 0, 1, 2 (about 0.05,
    0.18, 0.24), query 4 puts about 0.64 on key 3 among five keys."""
    prog = hb.HeadProgram(W_Q=[[1.0], [0.0]], W_K=[[0.0], [1.0]])
    xs = [[0.5, 1.0], [3.0, 2.0], [1.5, 3.0], [1.0, 4.0], [1.0, -1.0]]
    return prog, hb.PromptInput(tokens=[0, 1, 2, 3, 4], components=[xs], rows=[1, 2, 3, 4], targets=[0, 1, 2, 3])


def _rows(criterion: str = "mass", tau: Fraction = HALF) -> tuple[list[hb.RowBound], list[hr.KernelRow]]:
    prog, prompt = _program()
    bound = hb.bound_prompt(prog, prompt, tau, enclose=hr.BITS)
    from verify.frontends.head_cli import kernel_rows

    return bound, kernel_rows(hb.HeadBound(bound), criterion)


def _exact_mass(i: int, t: int) -> mpmath.mpf:
    xs = _program()[1].components[0]
    with mpmath.workdps(60):
        s = [mpmath.mpf(xs[i][0]) * mpmath.mpf(xs[j][1]) for j in range(i + 1)]
        return mpmath.exp(s[t]) / sum(mpmath.exp(v) for v in s)


def test_enclosures_are_outward_fixed_point_bounds_of_the_exact_scores():
    """The integers handed to Coq bound the exact score s_ij = x_i[0] x_j[1] from both sides at 2^-40."""
    bound, _ = _rows()
    xs = _program()[1].components[0]
    for r in bound:
        enc = r.scores
        for j, (lo, hi) in [(r.target, enc.target), *zip(enc.keys, enc.others)]:
            exact = Fraction(xs[r.row][0]) * Fraction(xs[j][1]) * 2**hr.BITS
            assert lo <= exact <= hi and hi - lo <= 2
        assert r.target not in enc.keys and list(enc.keys) == [j for j in range(r.row + 1) if j != r.target]


def test_the_kernel_accepts_each_decided_row_and_agrees_with_the_exact_mass():
    need_coq()
    bound, krows = _rows()
    tb, stated, missed = hr.choose(krows, HALF)
    assert not missed and len(stated) == 4
    res = hr.check(tb, stated, HALF)
    assert res.status == "checked", res.message
    for (r, _), b in zip(stated, bound):
        assert r.claim == ("ge" if _exact_mass(b.row, b.target) >= 0.5 else "lt")
    assert [r.claim for r, _ in stated] == ["lt", "lt", "lt", "ge"]


def test_argmax_rows_are_checked_too():
    need_coq()
    _, krows = _rows("argmax")
    tb, stated, missed = hr.choose(krows, HALF)
    assert {r.claim for r, _ in stated} == {"argmax", "argmax_no"} and not missed
    assert hr.check(tb, stated, HALF).status == "checked"


@pytest.mark.parametrize("claim_from, claim_to", [("lt", "ge"), ("ge", "lt")])
def test_a_row_claimed_the_wrong_way_is_refused_by_the_kernel_and_named(claim_from, claim_to):
    """Injected fault: one row's claim flipped (mass >= 1/2 where the balls say < 1/2, or the reverse), stated with
    every key: the Python mirror rejects it and Coq refuses exactly that row."""
    need_coq()
    _, krows = _rows()
    k = next(i for i, r in enumerate(krows) if r.claim == claim_from)
    bad = dataclasses.replace(krows[k], claim=claim_to)
    tb, stated, missed = hr.choose([*krows[:k], bad, *krows[k + 1:]], HALF)
    assert missed == [bad]
    res = hr.check(tb, stated + [(bad, hr.full(bad))], HALF)
    assert res.status == "refuted"
    assert res.first_refused is not None and f"query {bad.row} -> key {bad.target}" in res.first_refused


@pytest.mark.parametrize("side", ["up_pos", "up_neg", "dn_pos", "dn_neg"])
def test_an_exp_table_one_unit_too_tight_is_refused(side):
    """Injected fault: the start of one table's squaring chain one unit (2^-40) below its checked bound."""
    need_coq()
    _, krows = _rows()
    tb, stated, _ = hr.choose(krows, HALF)
    assert hr.check(tb, stated, HALF).status == "checked"
    bad = copy.deepcopy(tb)
    bad[side]["chain0"] += -1 if side.startswith("up") else 1
    res = hr.check(bad, stated, HALF)
    assert res.status == "refuted" and res.first_refused == "the exp tables (tables_ok)"


def test_the_python_mirror_computes_the_coq_checker():
    """ok() on random rows against Coq's verdict on the same rows, one theorem each (a disagreement either way
    fails: a row ok() accepts must compile, a row it rejects must be the one refused)."""
    need_coq()
    import random

    rng = random.Random(7)
    S = 1 << hr.BITS
    rows = []
    for k in range(12):
        n = rng.randint(1, 5)
        t = rng.randint(-3 * S, 3 * S)
        others = tuple(sorted((v, v + rng.randint(0, S // 8)) for v in (rng.randint(-6 * S, 3 * S) for _ in range(n))))
        rows.append(hr.KernelRow(0, k, 0, rng.choice(hr.CLAIMS), (t, t + rng.randint(0, S // 8)),
                                 tuple(range(1, n + 1)), others))
    tau = Fraction(1, 3)
    tb = hr.tables(rows, 6)
    verdicts = [hr.ok(tb, r.claim, hr.full(r), tau) for r in rows]
    assert 0 < sum(verdicts) < len(rows)
    good = [(r, hr.full(r)) for r, v in zip(rows, verdicts) if v]
    assert hr.check(tb, good, tau).status == "checked"
    for r, v in zip(rows, verdicts):
        if not v:
            res = hr.check(tb, [*good, (r, hr.full(r))], tau)
            assert res.status == "refuted" and f"query {r.row} " in (res.first_refused or "")


def test_coq_missing_is_skipped_with_the_install_line(monkeypatch):
    from verify.frontends.head_cli import kernel_check

    bound, krows = _rows()
    monkeypatch.setattr(hr, "coq_version", lambda: None)
    out, accepted = kernel_check(krows, hb.HeadBound(bound), HALF, Fraction(1), "mass", "t")
    assert out["status"] == "skipped" and "apt-get install -y coq" in out["message"] and accepted is None


def test_a_hostile_kernel_section_is_refused_before_coq():
    doc = {"threshold": "1/2", "kernel": {"bits": hr.BITS, "rows": [
        {"prompt": 0, "row": 1, "target": 0, "claim": "ge", "target_score": ["1" * 41, "2"], "keys": [1],
         "others": [["0", "1"]]}]}}
    ok, why = hr.replay_document(doc)
    assert not ok and "40 digits" in why
    doc["kernel"]["rows"][0]["target_score"] = [str(2**62), str(2**62)]
    ok, why = hr.replay_document(doc)
    assert not ok and "fixed-point range" in why
    doc["kernel"]["bits"] = 12
    assert "not {'bits': 40" in hr.replay_document(doc)[1]


# ----------------------------------------------------------------------------- the theory: each hypothesis is needed

WEAKENED = {
    # ge: the target's score may lie 1 below its stated lower end
    "ge target": ("forall st so so', dy (P tb) (t r) <= st -> Forall2 (fun x h => x <= dy (P tb) h) so (keys r) ->\n"
                  "  Forall (fun x => x <= dy (P tb) (rest r)) so' -> (Z.of_nat (length so') <= count r)%Z ->",
                  "forall st so so', dy (P tb) (t r) - 1 <= st -> Forall2 (fun x h => x <= dy (P tb) h) so (keys r) ->\n"
                  "  Forall (fun x => x <= dy (P tb) (rest r)) so' -> (Z.of_nat (length so') <= count r)%Z ->"),
    # ge: the further keys may number one more than counted
    "ge count": ("(Z.of_nat (length so') <= count r)%Z ->\n  IZR tn", "(Z.of_nat (length so') <= count r + 1)%Z ->\n  IZR tn"),
    # ge: a further key may score 1 above the shared bound
    "ge rest": ("  Forall (fun x => x <= dy (P tb) (rest r)) so' -> (Z.of_nat (length so') <= count r)%Z ->\n  IZR",
                "  Forall (fun x => x <= dy (P tb) (rest r) + 1) so' -> (Z.of_nat (length so') <= count r)%Z ->\n  IZR"),
    # lt: the target's score may lie 1 above its stated upper end
    "lt target": ("forall st so so', st <= dy (P tb) (t r) -> Forall2 (fun x l => dy (P tb) l <= x) so (keys r) ->\n"
                  "  mass st (so ++ so') < IZR tn / IZR td.",
                  "forall st so so', st <= dy (P tb) (t r) + 1 -> Forall2 (fun x l => dy (P tb) l <= x) so (keys r) ->\n"
                  "  mass st (so ++ so') < IZR tn / IZR td."),
    # argmax: the target's score may lie 1 below its lower end
    "argmax target": ("  forall st so so', dy P (t r) <= st -> Forall2 (fun x h => x <= dy P h) so (keys r) ->\n"
                      "  Forall (fun x => x <= dy P (rest r)) so' -> Forall (fun x => x < st) (so ++ so').",
                      "  forall st so so', dy P (t r) - 1 <= st -> Forall2 (fun x h => x <= dy P h) so (keys r) ->\n"
                      "  Forall (fun x => x <= dy P (rest r)) so' -> Forall (fun x => x < st) (so ++ so')."),
    # the tables' checker: an entry may lie one unit below the product it must bound
    "table step": ("  | c' :: cs' => Z.leb (c * e) (c' * S) && steps_up S e c' cs'",
                   "  | c' :: cs' => Z.leb (c * e) (c' * S + S) && steps_up S e c' cs'"),
}


def test_the_theory_compiles_as_shipped(tmp_path):
    need_coq()
    res = compile_theory(tmp_path, "HeadSoftmax", (THEORIES / "HeadSoftmax.v").read_text())
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("which", sorted(WEAKENED))
def test_the_theory_fails_with_a_weaker_hypothesis(tmp_path, which):
    """HeadSoftmax.v with one row statement's hypothesis weakened by 1 (or the tables' check loosened) no longer
    compiles: each bound is used."""
    need_coq()
    text = (THEORIES / "HeadSoftmax.v").read_text()
    good, bad = WEAKENED[which]
    assert text.count(good) == 1, f"the fault must hit exactly one place: {good!r}"
    res = compile_theory(tmp_path, "HeadSoftmax", text.replace(good, bad))
    assert res.returncode != 0


# ----------------------------------------------------------------------------- the command line (tiny gpt2)


def _cli(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from verify.frontends.cli import main

    code = main(args)
    return code, capsys.readouterr().out


def test_verify_head_kernel_on_tiny_gpt2_and_a_widened_bound_refused_by_the_kernel(tmp_path, capsys):
    """The done-when command: every decided row of hf:gpt2 layer 0 head 1 checked in Coq, the verdict kernel-checked;
    then the certificate's kernel section tampered (one ge row's target lower end moved 3 down: it still contains the
    arb enclosure, so the Python re-check passes) and refused by the kernel, naming the row, exit 1."""
    need_coq()
    pytest.importorskip("transformers")
    d = tmp_path / "certs"
    code, out = _cli(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "1", "--kernel", "--certificates",
                      str(d), "--format", "json"], capsys)
    r = json.loads(out)
    k = r["kernel"]
    assert code == 1 and r["verdict"] == "FAILS" and k["status"] == "checked" and k["verdict"] == "FAILS"
    assert k["counts"] == {"success": r["counts"]["ge"], "failure": r["counts"]["lt"], "rows": r["counts"]["rows"]}
    cert = Path(r["certificate"])
    assert cert.with_suffix(".v").is_file()
    assert _cli(["recheck", "--kernel", str(d)], capsys)[0] == 0
    doc = json.loads(cert.read_text())
    row = next(x for x in doc["kernel"]["rows"] if x["claim"] == "ge")
    row["target_score"][0] = str(int(row["target_score"][0]) - 3 * 2**hr.BITS)
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True))
    manifest = json.loads((d / "MANIFEST.json").read_text())
    manifest["files"][cert.name]["sha256"] = hashlib.sha256(cert.read_bytes()).hexdigest()
    (d / "MANIFEST.json").write_text(json.dumps(manifest))
    assert _cli(["recheck", str(d)], capsys)[0] == 0  # the Python re-check: the bound still contains arb's
    code, out = _cli(["recheck", "--kernel", str(d)], capsys)
    assert code == 1 and "refuted in the kernel" in out
    assert f"prompt {row['prompt']}, query {row['row']} -> key {row['target']}" in out
    # a bound that no longer contains the re-derived enclosure is refused by the Python re-check already
    row["target_score"][0] = str(int(row["target_score"][0]) + 4 * 2**hr.BITS)
    cert.write_text(json.dumps(doc, indent=1, sort_keys=True))
    manifest["files"][cert.name]["sha256"] = hashlib.sha256(cert.read_bytes()).hexdigest()
    (d / "MANIFEST.json").write_text(json.dumps(manifest))
    code, out = _cli(["recheck", str(d)], capsys)
    assert code == 1 and "does not contain the re-derived enclosure" in out


def test_a_row_coq_refuses_makes_verify_head_inconclusive(capsys, monkeypatch):
    """Injected fault: Coq refuses a row the balls decided (the kernel check replaced by one that refuses): the
    verdict is not confirmed, exit 3, the refused row in the kernel line."""
    pytest.importorskip("transformers")
    need_coq()

    def refuse(tb, rows, tau, header="", keep=None):
        return hr.KernelResult("refuted", "the Coq kernel refuses prompt 0, query 1 -> key 0: mass < 1/2", "8.16.1",
                               len(rows), 0.1, "prompt 0, query 1 -> key 0: mass < 1/2", tb["G"])

    monkeypatch.setattr(hr, "check", refuse)
    code, out = _cli(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "1", "--n-prompts", "1", "--length", "8",
                      "--kernel"], capsys)
    assert code == 3 and "kernel: REFUTED: the Coq kernel refuses prompt 0, query 1 -> key 0" in out
