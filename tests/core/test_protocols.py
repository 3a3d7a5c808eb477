"""Frozen protocols (verify.core.protocol): every claim decided by training, sampling or a statistical test carries a
protocol whose hash is registered before its confirmatory run; a run that departs from it is EXPLORATORY; the
confirmatory command is confirmatory; the ledger records every run."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tests.cli_support import refused
from verify import ledger
from verify.core import registry
from verify.core.model import InputError
from verify.core.protocol import CONFIRMATORY, EXPLORATORY, Protocol, Threshold, assess, check_frozen, registered, sensitivity
from verify.evidence import Context, Outcome

PROTOCOL_CLAIMS = ("fp26:fingerprint", "ws24:falsifier", "bietti23:probes", "pr26:auc")


def _protocol(cid: str) -> Protocol:
    return registry.get(cid).protocol


def test_the_claims_decided_by_training_or_a_test_each_carry_a_registered_protocol():
    """Each of the four has a protocol whose hash is the one frozen for its version, with the date; the confirmatory
    seeds are disjoint from the development seeds; every threshold of ours has a sensitivity range."""
    have = sorted(c.id for c in registry.all_claims() if c.protocol is not None)
    assert have == sorted(PROTOCOL_CLAIMS)
    for cid in PROTOCOL_CLAIMS:
        p = _protocol(cid)
        entry = registered(p)
        assert entry is not None and entry["sha256"] == p.sha256 and entry["frozen"] == "2026-12-06", cid
        check_frozen(p)
        lo, hi = p.development_seeds
        assert not set(p.seeds) & set(range(lo, hi + 1)), cid
        assert all(t.low is not None for t in p.thresholds if t.source.startswith("ours")), cid


def test_a_protocol_edited_without_a_new_version_is_refused():
    """Fault: one threshold changed in place (the edit an after-the-fact rule makes) -> the hash differs from the
    registry and the protocol is refused; a version never frozen is refused too."""
    p = _protocol("pr26:auc")
    edited = dataclasses.replace(p, thresholds=(Threshold("AUC", 0.9, "ours: lowered", 0.85, 0.99),) + p.thresholds[1:])
    with pytest.raises(InputError, match="changed since it was frozen on 2026-12-06"):
        check_frozen(edited)
    with pytest.raises(InputError, match="protocol version 9 is not registered"):
        check_frozen(dataclasses.replace(p, version=9))
    assert edited.sha256 != p.sha256


def test_confirmatory_seeds_may_not_meet_the_development_seeds():
    p = _protocol("bietti23:probes")
    with pytest.raises(ValueError, match="meet the development seeds"):
        dataclasses.replace(p, first_seed=0)


@pytest.mark.parametrize("cid", PROTOCOL_CLAIMS)
def test_the_confirmatory_command_is_confirmatory_and_any_departure_is_exploratory(cid):
    """The protocol's profile at the default options is the confirmatory run, on the protocol's seeds; an extended
    horizon, another seed count or --seed is exploratory and keeps the seeds it names (never the confirmatory
    block).  Fault: a protocol whose values are read from the run would call every run confirmatory."""
    c = registry.get(cid)
    p = c.protocol
    ctx = Context(profile=p.profile)
    values = c.protocol_run_values(c.parse_params({}), ctx)
    a = assess(p, values, 0)
    assert a.kind == CONFIRMATORY and a.seeds == p.seeds and a.departures == ()
    for change in ({"seeds": p.seed_count + 1}, {"steps": 10 ** 6} if "steps" in values else {"threshold": 0.5}):
        (k, v), = change.items()
        b = assess(p, {**values, **change}, 0)
        assert b.kind == EXPLORATORY and b.departures[0].startswith(f"--{k} {v} (the protocol: ")
        assert not set(b.seeds) & set(p.seeds)
    s = assess(p, values, 3)
    assert s.kind == EXPLORATORY and s.seeds[0] == 3 and "--seed 3" in s.departures[0]


def test_exploratory_evidence_never_holds_or_fails():
    from verify.evidence import Evidence

    p = _protocol("ws24:falsifier")
    a = assess(p, {**p.values, "steps": 1200}, 0)
    ev = a.apply(Evidence("numeric", "consistent", "fails", summary="late falls"))
    assert ev.status == "inconclusive" and ev.outcome is None
    assert ev.summary.startswith("EXPLORATORY (--steps 1200 (the protocol: 300)): not a verdict, this run showed fails")
    assert ev.numbers["protocol"]["run"] == EXPLORATORY and ev.numbers["protocol"]["sha256"] == p.sha256
    ok = assess(p, p.values, 0).apply(Evidence("numeric", "consistent", "fails", summary="late falls"))
    assert (ok.status, ok.outcome) == ("consistent", "fails") and ok.numbers["protocol"]["run"] == CONFIRMATORY


def test_sensitivity_flips_are_inconclusive():
    ts = (Threshold("x", 0.9, "ours: t", 0.8, 0.95), Threshold("n", 3, "paper: Sec. 1"))
    assert sensitivity(lambda t: Outcome.HOLDS if 0.85 >= t["x"] else Outcome.FAILS, ts)[0] is None
    out, lines = sensitivity(lambda t: Outcome.FAILS, ts)
    assert out == Outcome.FAILS and lines == ["x: fails at 0.8, fails at 0.9, fails at 0.95"]
    # a verdict at the declared value that differs from both ends (which agree) is a flip too
    assert sensitivity(lambda t: Outcome.FAILS if t["x"] == 0.9 else Outcome.HOLDS, ts)[0] is None


def test_the_numeric_ranges_are_the_protocols():
    """The thresholds the numeric layers decide at are the frozen protocols' (values and ranges), and the torch-free
    recipe copy is the numeric module's."""
    from verify.numeric import bietti_probes as bp
    from verify.numeric import fingerprint as fp
    from verify.numeric import pr26_trained as pt
    from verify.numeric import ws24_trained as ws
    from verify.proofs.pr26 import trained as pr26_claim

    def rng(cid, name):
        t = _protocol(cid).threshold(name)
        return t.value, (t.low, t.high)

    assert rng("pr26:auc", "AUC") == (pt.AUC_RULE, pt.AUC_RANGE)
    assert rng("pr26:auc", "accuracy_L") == (pt.THRESHOLD, pt.ACCURACY_RANGE)
    assert pr26_claim.RECIPE_VERSION == pt.RECIPE_VERSION
    assert rng("ws24:falsifier", "level") == (ws.ALPHA, ws.ALPHA_RANGE)
    assert rng("ws24:falsifier", "gate") == (ws.FORMED, ws.FORMED_RANGE)
    assert rng("ws24:falsifier", "drop") == (ws.DELTA, ws.DELTA_RANGE)
    assert rng("bietti23:probes", "recalled") == (bp.RECALLED, bp.RECALLED_RANGE)
    assert rng("bietti23:probes", "learned") == (bp.LEARNED, bp.LEARNED_RANGE)
    assert rng("fp26:fingerprint", "prev_head") == (fp.PREV_HEAD, fp.PREV_HEAD_RANGE)
    assert rng("fp26:fingerprint", "level") == (fp.SLOW_LEVEL, fp.SLOW_LEVEL_RANGE)
    assert rng("fp26:fingerprint", "symmetric") == (fp.SYMMETRIC, fp.SYMMETRIC_RANGE)
    assert rng("fp26:fingerprint", "phase_used") == (fp.PHASE_USED, fp.PHASE_USED_RANGE)


def test_confirmatory_refuses_a_departure_before_any_work(capsys, tmp_path):
    """--confirmatory: an extended horizon, a development seed, a claim without a protocol: one line, exit 2, and
    nothing in the ledger (no run started)."""
    cache = ["--cache-dir", str(tmp_path)]
    err = refused(capsys, ["ws24:falsifier", "--confirmatory", "--steps", "1200"] + cache)
    assert "departs from ws24:falsifier v2" in err and "--steps 1200 (the protocol: 300)" in err
    err = refused(capsys, ["ws24:falsifier", "--confirmatory", "--seed", "3"] + cache)
    assert "in the development range 0..15" in err
    err = refused(capsys, ["bietti23:probes", "--confirmatory"] + cache)      # the quick profile: 400 steps, 2 seeds
    assert "departs from bietti23:probes v1" in err
    assert "has no protocol" in refused(capsys, ["ws24:theorem2", "--confirmatory"] + cache)
    assert not (tmp_path / ledger.LEDGER_FILE).exists()


def test_an_edited_protocol_is_refused_by_the_command(capsys, tmp_path):
    """The registry says what was frozen: a protocol whose hash no longer matches is refused before any work."""
    from verify.proofs.ws24 import trained

    edited = dataclasses.replace(trained.PROTOCOL, stopping="look again after more steps")
    object.__setattr__(trained.FALSIFIER, "protocol", edited)
    try:
        err = refused(capsys, ["ws24:falsifier", "--cache-dir", str(tmp_path)])
    finally:
        object.__setattr__(trained.FALSIFIER, "protocol", trained.PROTOCOL)
    assert "changed since it was frozen" in err and "give it a new version" in err


def test_show_prints_the_protocol_and_its_hash(capsys):
    from verify.frontends.cli import main

    assert main(["show", "pr26:auc"]) == 0
    out = capsys.readouterr().out
    p = _protocol("pr26:auc")
    assert f"protocol:  pr26:auc v1, sha256 {p.sha256} (frozen 2026-12-06)" in out
    assert "seeds 1000..1014 (development seeds 0..14, never confirmatory)" in out
    assert "threshold: AUC = 0.95 (ours:" in out and "ledger (" in out


def test_the_ledger_marks_an_interrupted_run_incomplete(tmp_path):
    """A run that started and never ended (Ctrl-C, a killed machine) is counted incomplete, never as deciding; a
    foreign line is counted unreadable."""
    d = str(tmp_path)
    a = ledger.start(d, {"claim": "x:y", "variant": "v", "kind": "confirmatory"})
    ledger.end(d, a, "holds", "consistent")
    ledger.start(d, {"claim": "x:y", "variant": "v", "kind": "confirmatory"})
    ledger.start(d, {"claim": "x:y", "kind": "exploratory"})
    with open(tmp_path / ledger.LEDGER_FILE, "a") as f:
        f.write("{not json\n")
    s = ledger.summary(d, "x:y")
    assert (s["runs"], s["confirmatory"], s["exploratory"], s["incomplete"], s["unreadable_lines"]) == (3, 2, 1, 2, 1)
    assert s["deciding"]["v"]["run"] == a and s["deciding"]["v"]["outcome"] == "holds"   # the unfinished one never decides
    lines = [json.loads(x) for x in (tmp_path / ledger.LEDGER_FILE).read_text().splitlines()[:2]]
    assert [x["event"] for x in lines] == ["start", "end"]


def _stored_fp26(monkeypatch, tmp_path):
    """A confirmatory fp26:fingerprint result stored as `verify ... --format json` writes it, its toy replaced by
    planted numbers whose checkpoint is a real (tiny) lab checkpoint in ``tmp_path``."""
    import torch

    from verify.core.model import run_claim
    from verify.numeric import fingerprint as fp
    from verify.numeric import lab
    from verify.proofs import fp26 as claim
    from verify.reports.text import to_json

    rec = lab.Recipe(name="toy", version="1", config={"n": 2}, init=lambda g: {"W": torch.randn(2, 2, generator=g)},
                     data=lambda step, gens: torch.zeros(len(gens), 1),
                     loss=lambda p, b: (p["W"] ** 2).sum((1, 2)), optim=lab.Optim(kind="adam", lr=0.01, steps=3))
    ckpt = lab.train(rec, [0], cache=lab.Cache(tmp_path)).checkpoint()
    head = {"prev_weight": 0.9, "dir_frac": 0.01, "rope_imag_share": 0.5, "pair_asymmetry": 0.1}
    arms = {"absolute/free": {"formation": [550, 575, 600, 525, 500], "heads": [{**head, "dir_frac": 0.7}] * 5},
            "absolute/sym": {"formation": [1500, 1700, 1800, 1400, 1650], "heads": [head] * 5},
            "rope/sym": {"formation": [1400, 1600, 1500, 1450, 1550], "heads": [head] * 5, "checkpoint": ckpt}}
    outcome, reasons, lines = fp.toy_decision(arms, 6000, 25)
    toy = {"arms": arms, "verdict": outcome, "reasons": reasons, "sensitivity": lines, "formation_threshold": 2.42,
           "loss_floor": 1.0}
    monkeypatch.setattr(fp, "check_toy", lambda *a, **k: toy)
    monkeypatch.setattr(fp, "gpt2_null", lambda *a, **k: {"mean": 0.608, "lo": 0.6, "hi": 0.62})
    c = claim.FINGERPRINT
    r = run_claim(c, c.parse_params({}), Context(profile="full", cache_dir=str(tmp_path)), layers=("numeric",))
    path = tmp_path / "fp26.json"
    path.write_text(to_json([r], "claim", 0, r.exit_code))
    return path, ckpt


def test_a_stored_confirmatory_result_is_rechecked_without_retraining(monkeypatch, tmp_path):
    """`verify recheck FILE.json`: the protocol hash is the registry's, each checkpoint's digest is re-checked in the
    cache, and the claim re-derives the same verdict from them.  Faults: a stored verdict edited (DIFFERENT); a
    checkpoint file changed in the cache (refused: re-checking would retrain); a stored protocol hash edited
    (refused)."""
    from verify.reports import stored

    path, ckpt = _stored_fp26(monkeypatch, tmp_path)
    (rid, same, msg), = stored.recheck_stored(str(path), str(tmp_path))
    assert same and "same verdict HOLDS under fp26:fingerprint v1" in msg and "1 checkpoint(s)" in msg
    doc = json.loads(path.read_text())
    doc["results"][0]["verdict"] = "FAILS"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(doc))
    (_, same, msg), = stored.recheck_stored(str(edited), str(tmp_path))
    assert not same and "verdict FAILS stored, HOLDS now" in msg
    doc["results"][0]["protocol"]["sha256"] = "0" * 64
    edited.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="stored protocol hash 000000000000 differs from the registry"):
        stored.load_stored(str(edited))
    import torch

    f = tmp_path / ckpt["file"]
    obj = torch.load(f, weights_only=True)
    obj["params"]["W"] = obj["params"]["W"] + 1
    torch.save(obj, f)
    with pytest.raises(InputError, match="digest differs from the stored one"):
        stored.recheck_stored(str(path), str(tmp_path))


def test_recheck_refuses_what_is_not_a_stored_confirmatory_result(capsys, tmp_path):
    bad = tmp_path / "x.json"
    bad.write_text('{"schema": "verify/1", "results": []}')
    assert "no confirmatory result in it" in refused(capsys, ["recheck", str(bad)])
    bad.write_text("not json")
    assert "not JSON" in refused(capsys, ["recheck", str(bad)])


def test_each_recorded_expectation_is_a_stored_confirmatory_result():
    """The expected verdict of a claim under a protocol is the verdict of its confirmatory run, shipped in
    results/confirmatory/ with the protocol's hash (checked against the registry); a claim whose confirmatory run has
    not been made records no expectation.  Fault: an expectation typed by hand with no run behind it."""
    from pathlib import Path

    from verify.reports.stored import load_stored

    root = Path(__file__).resolve().parents[2] / "results" / "confirmatory"
    stored = {}
    for f in sorted(root.glob("*.json")):
        for r in load_stored(str(f)):
            stored[(r["claim"], r["variant"])] = r["verdict"]
    for cid in PROTOCOL_CLAIMS:
        c = registry.get(cid)
        for v in c.variants:
            label = c.variant_label(c.parse_params(dict(v)))
            want = c.expected_verdict(label)
            assert want == stored.get((cid, label)), (cid, label, want, stored.get((cid, label)))
