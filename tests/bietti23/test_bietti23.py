"""bietti23:probes: the README run's data (fixed triggers), the authors' probes as the code computes them, and the
verdict's convergence rule, each with an injected fault that changes the answer."""

from __future__ import annotations

import torch

from verify.numeric import bietti_probes as bp
from verify.numeric import trained_models as tm


def _cfg(**kw):
    base = dict(d=16, T=24, K=3, batch=4, steps=4, lr=0.2)
    base.update(kw)
    return bp.FixedConfig(**base)


def test_fixed_triggers_are_the_most_frequent_and_outputs_follow_them():
    cfg = _cfg()
    src = cfg.bigram_source()
    trig = cfg.triggers()
    assert sorted(trig.tolist()) == sorted(src.marginal.argsort(descending=True)[:3].tolist())
    tok, cnt = bp.fixed_trigger_batch(src, trig, 64, 16, torch.Generator().manual_seed(0))
    for b in range(16):
        out: dict[int, int] = {}
        seen: dict[int, int] = {}
        for t in range(64):
            a = int(tok[b, t])
            if a in trig.tolist():
                assert out.setdefault(a, int(tok[b, t + 1])) == int(tok[b, t + 1])  # one output per trigger
                seen[a] = seen.get(a, 0) + 1
                assert int(cnt[b, t]) == seen[a]
            else:
                assert int(cnt[b, t]) == 0


def test_wk1_over_triggers_planted_and_fault():
    """W^2_K = (W^1_O W^1_V)^{-1} makes every trigger its own induction key: probe 1; W^2_K = 0 (fault) ties every
    score, the argmax falls on the first trigger: 1 / K."""
    g = torch.Generator().manual_seed(0)
    cfg = _cfg()
    p = {k: v[None].double() for k, v in tm.init_two_layer(16, cfg.bigram_source().V, 24, "ape", g).items()}
    p["W2K"] = torch.linalg.inv(p["W1O"][0] @ p["W1V"][0])[None]
    assert float(bp.wk1_triggers(p, cfg.triggers())[0]) == 1.0
    p["W2K"] = torch.zeros_like(p["W2K"])
    assert abs(float(bp.wk1_triggers(p, cfg.triggers())[0]) - 1 / 3) < 1e-12


def test_after_trigger_prev_reads_the_attention_after_triggers(monkeypatch):
    """Layer-1 scores that peak on t - 1 give 1; peaking on t (fault) gives 0; only positions after a trigger
    count."""
    S, B, T = 1, 2, 10
    tok = torch.zeros(S, B, T, dtype=torch.long)
    cnt = torch.zeros(S, B, T, dtype=torch.long)
    cnt[0, 0, 3] = 1
    cnt[0, 1, 6] = 2
    ti = torch.arange(T)

    def peaked(offset):
        def scores(p, tok, pe):
            sc = -(ti[:, None] - offset - ti[None, :]).abs().double()
            return sc.masked_fill(ti[None, :] > ti[:, None], float("-inf")).expand(S, B, T, T)
        return scores

    monkeypatch.setattr(tm, "layer1_scores", peaked(1))
    assert float(bp.after_trigger_prev({}, tok, cnt)[0]) == 1.0
    monkeypatch.setattr(tm, "layer1_scores", peaked(0))
    assert float(bp.after_trigger_prev({}, tok, cnt)[0]) == 0.0


def test_inconclusive_names_the_command_that_decides(monkeypatch):
    """A probe still rising between half and all the steps leaves the verdict open and names the run that
    decides it (4x the steps)."""
    class FakeTrained:
        from_cache = True
        losses = [torch.zeros(2)]

    monkeypatch.setattr(bp, "_train", lambda cfg, seeds, cache, progress: FakeTrained())

    def fake(cfg, tr, seeds, n_eval):
        v = 0.55 if cfg.steps == 400 else 0.40
        probes = {"prev_token_all_positions": [v], "prev_token_causal": [v], "induction_key": [1.0], "output": [1.0]}
        return probes, {k: x[0] for k, x in probes.items()}, [0.95], [0.8]

    monkeypatch.setattr(bp, "_measure", fake)
    ev = bp.check_probes(16, 16, 3, 4, 400, 0.2, [0], 4, None, fixed_triggers=True, command="verify bietti23:probes")
    assert ev.status == "inconclusive" and "verify bietti23:probes --steps 1600" in ev.summary


def test_claim_defaults_are_the_fixed_trigger_run():
    from verify.proofs import bietti23 as claim

    p = claim.ProbeParams()
    assert (p.triggers, p.K, p.optimizer) == ("fixed", 5, "sgd")
    assert claim.OPTIMIZERS == tm.OPTIMIZERS


def test_accuracy_gate_end_to_end(monkeypatch):
    """At a tiny size: a model forced to in-context accuracy 0 (fault) is never judged on its memories; the same
    model at accuracy 1 is judged (the first-layer attention probe is reported, whatever it reads)."""
    monkeypatch.setattr(bp, "after_trigger_prev", lambda p, tok, cnt: torch.zeros(p["E"].shape[0], dtype=torch.float64))
    monkeypatch.setattr(tm, "in_context_accuracy", lambda p, tok, cnt, pe: torch.zeros(p["E"].shape[0],
                                                                                       dtype=torch.float64))
    ev = bp.check_probes(16, 16, 2, 2, 2, 0.01, [0], 2, None, fixed_triggers=True)
    assert ev.status == "inconclusive" and "did not learn" in ev.summary
    monkeypatch.setattr(tm, "in_context_accuracy", lambda p, tok, cnt, pe: torch.ones(p["E"].shape[0],
                                                                                      dtype=torch.float64))
    ev = bp.check_probes(16, 16, 2, 2, 2, 0.01, [0], 2, None, fixed_triggers=True)
    assert "did not learn" not in ev.summary and ev.numbers["attention_prev_token_recall"] == [0.0]
