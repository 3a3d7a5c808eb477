"""bietti23:probes on constructed models: the probes find planted memories, the verdict rule and its accuracy gate,
and probes that fail only once training converged.  Small sizes only."""

from __future__ import annotations

import pytest
import torch

from verify.numeric import trained_models as tm


def test_probes_detect_planted_memories():
    """Probes read planted associations: an identity-like output map recalls every token; a random one does not."""
    g = torch.Generator().manual_seed(0)
    p = {k: v[None].double() for k, v in tm.init_two_layer(64, 8, 16, "ape", g).items()}
    assert float(tm.wo1_recall(p)[0]) < 1.0
    p["W2V"] = torch.eye(64, dtype=torch.float64)[None]
    p["W2O"] = (p["U"][0].T @ p["E"][0].pinverse().T)[None] * 0 + (p["U"][0].T @ p["E"][0])[None]
    assert float(tm.wo1_recall(p)[0]) == 1.0
    # previous-token probe: W1K = sum_t p_{t+1} p_t^T recalls every position, causal or not
    P = p["POS"][0]
    p["W1K"] = (P[1:].T @ P[:-1])[None]
    assert float(tm.wk0_recall(p, causal=False)[0]) == 1.0
    p["W1K"] = (P[:-1].T @ P[1:])[None]  # the transposed association points forward: fails
    assert float(tm.wk0_recall(p, causal=True)[0]) < 0.5


def test_probe_verdict_rule_and_gate():
    from verify.numeric import bietti_probes as bp

    good = {k: 0.95 for k in bp.DECIDING}
    assert bp.probe_verdict(0.9, good, 0.9) == "holds"
    assert bp.probe_verdict(0.9, {**good, "induction_key": 0.5}, 0.9) == "fails"
    assert bp.probe_verdict(0.3, good, 0.9) is None          # task not learned
    assert bp.probe_verdict(0.9, good, 0.2) == "holds"       # the attention probe is reported, not gated


def test_long_exploratory_runs_are_accepted():
    """Exploratory runs longer than the protocol's horizon (25600 after 6400, up to 409600) parse; a fault the cap had
    (20000 refused the 25600 run) is what this guards."""
    from verify.core.model import InputError
    from verify.proofs.bietti23 import MAX_STEPS, PROBES

    for steps in (6400, 25600, 102400, MAX_STEPS):
        assert PROBES.parse_params({"steps": str(steps)})["steps"] == steps
    with pytest.raises(InputError):
        PROBES.parse_params({"steps": str(MAX_STEPS + 1)})


def test_on_a_scheduler_the_half_steps_run_trains_beside_the_full_one(monkeypatch):
    """With --scheduler the full run and the half-steps run are two grid tasks (same batched seeds) and the
    convergence check reads the half run's result instead of training again.  Faults: the tasks swapped (the
    verdict would read the half run as the full one) or a second training in this process."""
    from verify.numeric import bietti_probes as bp
    from verify.numeric import grid

    seen: list[list[int]] = []

    class FakeTrained:
        def __init__(self, steps):
            self.steps, self.from_cache = steps, True
            self.losses = [torch.zeros(1)]

        def checkpoint(self):
            return {"file": f"fake-{self.steps}.pt", "digest": "0"}

    def fake_grid(fn, specs, scheduler, n_workers, progress, name):
        assert fn is bp.train_task and scheduler == "local" and n_workers == 3 and name == "bietti23"
        seen.append([s["cfg"].steps for s in specs])
        assert all(s["seeds"] == [0] and s["cache_dir"] is None for s in specs)
        return [FakeTrained(s["cfg"].steps) for s in specs]

    def no_training(*a, **k):
        raise AssertionError("trained in this process although the grid trained both runs")

    def fake_measure(cfg, tr, seeds, n_eval):
        assert tr.steps == cfg.steps  # each run is measured on its own weights
        v = 0.55 if cfg.steps == 400 else 0.545
        probes = {"prev_token_all_positions": [v], "prev_token_causal": [v],
                  "prev_token_first_64": [v], "induction_key": [v], "output": [1.0]}
        return probes, {k: x[0] for k, x in probes.items()}, [0.95], [0.8]

    monkeypatch.setattr(grid, "run_grid", fake_grid)
    monkeypatch.setattr(bp, "_train", no_training)
    monkeypatch.setattr(bp, "_measure", fake_measure)
    ev = bp.check_probes(16, 16, 1, 4, 400, 0.01, [0], 4, None, optimizer="adam", scheduler="local", jobs=3)
    assert seen == [[400, 200]]
    assert (ev.status, ev.outcome) == ("consistent", "fails")
    assert ev.numbers["probe_means_at_half_steps"]["prev_token_all_positions"] == 0.545


def test_a_local_scheduler_trains_the_same_weights_as_in_process(tmp_path):
    """The grid task is the same batched lab run: a tiny fixed-trigger model trained on a LocalCluster gives the
    in-process numbers exactly (probes, accuracy, loss)."""
    from verify.numeric import bietti_probes as bp

    args = (16, 16, 2, 4, 30, 0.05, [0, 1], 4, None)
    a = bp.check_probes(*args, optimizer="adam", fixed_triggers=True)
    b = bp.check_probes(*args, optimizer="adam", fixed_triggers=True, scheduler="local", jobs=2)
    keys = ("probes", "probe_means", "in_context_accuracy", "final_loss", "attention_prev_token_recall")
    assert {k: a.numbers[k] for k in keys} == {k: b.numbers[k] for k in keys}
    assert (a.status, a.outcome) == (b.status, b.outcome)


def test_a_bad_scheduler_is_refused_before_any_work():
    from verify.core.model import InputError
    from verify.proofs.bietti23 import PROBES

    for bad in ("udp://x:1", "tcp://host:0", "elsewhere"):
        with pytest.raises(InputError, match="--scheduler"):
            PROBES.parse_params({"scheduler": bad})


def test_in_process_the_full_run_continues_the_half_steps_run(tmp_path):
    """With the lab cache, the convergence check's half-steps run trains first and the full run continues its saved
    training state (steps 16..30 only), with the numbers of a run without the cache (trained from step 0)."""
    from verify.numeric import bietti_probes as bp
    from verify.numeric import lab

    lines: list[str] = []
    args = (16, 16, 2, 4, 30, 0.05, [0, 1], 4)
    a = bp.check_probes(*args, lab.Cache(tmp_path), progress=lines.append, optimizer="adam", fixed_triggers=True)
    b = bp.check_probes(*args, None, optimizer="adam", fixed_triggers=True)
    assert any("resumed from the saved training state at step 15; training steps 16..30" in ln for ln in lines)
    keys = ("probes", "probe_means", "in_context_accuracy", "final_loss", "attention_prev_token_recall")
    assert {k: a.numbers[k] for k in keys} == {k: b.numbers[k] for k in keys}
