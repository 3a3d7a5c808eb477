"""The training lab: determinism, batched seeds against seed-by-seed training, the checkpoint cache."""

from __future__ import annotations

import json
import os
import shutil

import pytest
import torch

from verify.numeric import lab

V, D, T = 12, 8, 6


def _recipe(lr: float = 0.05, steps: int = 30, version: str = "1", kind: str = "adam") -> lab.Recipe:
    """A toy next-token model: logits = E W E^T of the previous token; loss on a fixed bigram rule."""

    def init(gen: torch.Generator) -> dict[str, torch.Tensor]:
        return {"E": torch.randn(V, D, generator=gen) / D**0.5, "W": 0.02 * torch.randn(D, D, generator=gen)}

    def data(step: int, gens: list[torch.Generator]) -> torch.Tensor:
        return torch.stack([torch.randint(V, (16, T), generator=g) for g in gens])  # [S, B, T]

    def loss(p: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
        E, W = p["E"], p["W"]                       # [S, V, D], [S, D, D]
        table = torch.bmm(torch.bmm(E, W), E.transpose(1, 2))  # [S, V, V]
        prev = x[:, :, :-1]
        tgt = (prev + 1) % V
        logits = torch.stack([table[k][prev[k]] for k in range(x.shape[0])])  # [S, B, T-1, V]
        ce = torch.nn.functional.cross_entropy(logits.flatten(1, 2).transpose(1, 2), tgt.flatten(1), reduction="none")
        return ce.mean(dim=1)

    return lab.Recipe(name="toy", version=version, config={"V": V, "d": D, "T": T}, init=init, data=data, loss=loss,
                      optim=lab.Optim(kind=kind, lr=lr, steps=steps, momentum=0.9 if kind == "sgd" else 0.0,
                                      weight_decay=1e-4, report_every=10),
                      frozen=("E",))


def _summary(tr: lab.Trained) -> str:
    return json.dumps({"W": tr.params["W"].tolist(), "losses": tr.losses.tolist(), "key": tr.key})


def test_same_configuration_same_json_twice():
    a, b = lab.train(_recipe(), [0, 1, 2]), lab.train(_recipe(), [0, 1, 2])
    assert _summary(a) == _summary(b)
    # and training actually moved W and lowered the loss (the test is not vacuous)
    start = lab.init_params(_recipe(), [0, 1, 2])
    assert not torch.equal(a.params["W"], start["W"])
    assert torch.equal(a.params["E"], start["E"])  # frozen
    assert bool((a.losses[-1] < a.losses[0]).all())


def test_batched_seeds_equal_seed_by_seed():
    for kind in ("adam", "sgd"):
        batched = lab.train(_recipe(kind=kind), [3, 5, 7])
        for k, s in enumerate([3, 5, 7]):
            alone = lab.train(_recipe(kind=kind), [s])
            torch.testing.assert_close(batched.params["W"][k], alone.params["W"][0], rtol=0, atol=1e-6)
            torch.testing.assert_close(batched.losses[:, k], alone.losses[:, 0], rtol=0, atol=1e-6)


def test_batched_equality_check_can_fail():
    """Fault: a loss that mixes seeds breaks the batched/seed-by-seed equality (the check can fail)."""
    good = _recipe()

    def mixing(p, x):
        # seed k's loss reads seed k+1's parameters: a coupling a correct loss never has
        return good.loss(p, x) + 0.1 * (p["W"] * p["W"].roll(1, dims=0)).sum(dim=(1, 2))

    bad = lab.Recipe(**{**good.__dict__, "loss": mixing})
    batched = lab.train(bad, [3, 5, 7])
    alone = lab.train(bad, [5])
    assert not torch.allclose(batched.params["W"][1], alone.params["W"][0], atol=1e-6)


def test_key_changes_with_every_part_of_the_configuration():
    base = lab.config_key(_recipe(), [0, 1])
    assert lab.config_key(_recipe(), [0, 1]) == base
    assert lab.config_key(_recipe(lr=0.01), [0, 1]) != base
    assert lab.config_key(_recipe(version="2"), [0, 1]) != base
    assert lab.config_key(_recipe(), [0, 2]) != base
    assert lab.config_key(_recipe(steps=31), [0, 1]) != base


def test_cache_hit_reuses_and_is_identical(tmp_path):
    cache = lab.Cache(tmp_path)
    first = lab.train(_recipe(), [0, 1], cache=cache)
    second = lab.train(_recipe(), [0, 1], cache=cache)
    assert not first.from_cache and second.from_cache
    assert _summary(first) == _summary(second)
    files = sorted(f.name for f in tmp_path.iterdir())
    # the checkpoint and the training state, no temporary left behind
    assert files == sorted([f"toy-{first.key}.pt", f"toy-{lab.prefix_key(_recipe(), [0, 1])}.state.pt"])


def test_a_cached_run_knows_what_its_training_cost(tmp_path):
    """The checkpoint records the seconds per step its training took, so an answer built on a cached run can still
    say what more steps would cost; a checkpoint without the record reads as 0 (unknown), never as free."""
    cache = lab.Cache(tmp_path)
    first = lab.train(_recipe(), [0, 1], cache=cache)
    again = lab.train(_recipe(), [0, 1], cache=cache)
    assert first.seconds_per_step > 0 and again.from_cache
    assert again.seconds_per_step == first.seconds_per_step
    path = cache.path("toy", first.key)
    obj = torch.load(path, weights_only=True)
    del obj["seconds_per_step"]
    torch.save(obj, path)
    assert lab.train(_recipe(), [0, 1], cache=cache).seconds_per_step == 0.0


def _corrupt_and_reload(tmp_path, damage, capsys):
    cache = lab.Cache(tmp_path)
    good = lab.train(_recipe(), [0, 1], cache=cache)
    path = cache.path("toy", good.key)
    damage(path)
    again = lab.train(_recipe(), [0, 1], cache=lab.Cache(tmp_path))
    err = capsys.readouterr().err
    return good, again, err


def test_truncated_file_detected_and_retrained(tmp_path, capsys):
    def truncate(path):
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])

    good, again, err = _corrupt_and_reload(tmp_path, truncate, capsys)
    assert not again.from_cache and "rejected" in err and "retraining" in err
    assert _summary(again) == _summary(good)
    # the fresh checkpoint replaced the damaged one: the next run reads it
    assert lab.train(_recipe(), [0, 1], cache=lab.Cache(tmp_path)).from_cache


def test_file_from_another_configuration_detected(tmp_path, capsys):
    cache = lab.Cache(tmp_path)
    other = lab.train(_recipe(lr=0.01), [0, 1], cache=cache)
    key = lab.config_key(_recipe(), [0, 1])
    shutil.copy(cache.path("toy", other.key), cache.path("toy", key))  # swap in a foreign file
    again = lab.train(_recipe(), [0, 1], cache=lab.Cache(tmp_path))
    err = capsys.readouterr().err
    assert not again.from_cache and "another configuration" in err
    assert not torch.equal(again.params["W"], other.params["W"])


def test_flipped_tensor_bytes_detected(tmp_path, capsys):
    """A checkpoint whose key and echo are right but whose weights were edited: the digest catches it."""
    def edit(path):
        obj = torch.load(path, weights_only=True)
        obj["params"]["W"][0, 0, 0] += 1.0
        torch.save(obj, path)

    good, again, err = _corrupt_and_reload(tmp_path, edit, capsys)
    assert not again.from_cache and "digest" in err
    assert _summary(again) == _summary(good)


def test_not_a_tensor_dict_detected(tmp_path, capsys):
    def replace(path):
        torch.save([1, 2, 3], path)

    _, again, err = _corrupt_and_reload(tmp_path, replace, capsys)
    assert not again.from_cache and "not a checkpoint dict" in err


def test_unsafe_pickle_refused(tmp_path, capsys):
    import pickle

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned",))

    def replace(path):
        path.write_bytes(pickle.dumps(Evil()))

    _, again, err = _corrupt_and_reload(tmp_path, replace, capsys)
    assert not again.from_cache and "unreadable" in err


def test_default_cache_dir_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert lab.default_cache_dir() == tmp_path / "verify" / "lab"
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert lab.default_cache_dir() == tmp_path / "home" / ".cache" / "verify" / "lab"


def test_bad_inputs_refused():
    with pytest.raises(ValueError):
        lab.train(_recipe(), [])
    with pytest.raises(ValueError):
        lab.train(_recipe(), [1, 1])
    with pytest.raises(ValueError):
        lab.train(_recipe(kind="rmsprop"), [0])


def test_divergence_raises_and_is_not_cached(tmp_path):
    r = _recipe()
    bad = lab.Recipe(**{**r.__dict__, "loss": lambda p, x: r.loss(p, x) * float("nan")})
    with pytest.raises(lab.TrainingDiverged):
        lab.train(bad, [0], cache=lab.Cache(tmp_path))
    assert not [f for f in tmp_path.iterdir() if f.suffix == ".pt"]


def test_progress_lines_and_one_thread():
    lines: list[str] = []
    torch.set_num_threads(2)
    lab.train(_recipe(), [0], progress=lines.append)
    assert torch.get_num_threads() == 2  # restored
    assert any("training" in ln for ln in lines) and any("step" in ln for ln in lines)


# ----------------------------------------------------------------------------- resumable training


class _Stop(Exception):
    """Raised by a recipe's data to stop training mid-run (a stand-in for Ctrl-C or a killed process)."""


def _stopping(recipe: lab.Recipe, at: int) -> lab.Recipe:
    def data(step, gens):
        if step == at:
            raise _Stop(step)
        return recipe.data(step, gens)

    return lab.Recipe(**{**recipe.__dict__, "data": data})


@pytest.mark.parametrize("kind", ["adam", "sgd"])
def test_interrupted_run_resumes_bit_identical(tmp_path, kind):
    """A run stopped at step 13 (state written after every step) and run again ends bit-identical to an
    uninterrupted run: parameters, loss record, and the state's per-step losses."""
    plain = lab.train(_recipe(kind=kind), [0, 1])
    cache = lab.Cache(tmp_path, state_every_s=0.0)
    with pytest.raises(_Stop):
        lab.train(_stopping(_recipe(kind=kind), 13), [0, 1], cache=cache)
    assert not cache.path("toy", plain.key).exists()  # no checkpoint from a stopped run
    state = cache.load_state(_recipe(kind=kind), [0, 1], lab.init_params(_recipe(kind=kind), [0, 1]))
    assert state is not None and state.step == 13 and state.step_losses.shape == (13, 2)
    lines: list[str] = []
    again = lab.train(_recipe(kind=kind), [0, 1], cache=cache, progress=lines.append)
    assert any("resumed from the saved training state at step 13" in ln for ln in lines)
    assert not again.from_cache
    assert _summary(again) == _summary(plain)


def test_longer_run_continues_a_shorter_one(tmp_path):
    """A 30-step run after a 12-step one trains steps 13..30 only, and equals a 30-step run from step 0;
    the 12-step run's own checkpoint is unchanged (its record has its own last step)."""
    cache = lab.Cache(tmp_path)
    short = lab.train(_recipe(steps=12), [0, 1], cache=cache)
    lines: list[str] = []
    long = lab.train(_recipe(steps=30), [0, 1], cache=cache, progress=lines.append)
    assert any("at step 12; training steps 13..30" in ln for ln in lines)
    assert _summary(long) == _summary(lab.train(_recipe(steps=30), [0, 1]))
    assert _summary(short) == _summary(lab.train(_recipe(steps=12), [0, 1]))
    # a shorter run than the saved state trains from step 0 and leaves the state where it was
    lines.clear()
    shorter = lab.train(_recipe(steps=7), [0, 1], cache=cache, progress=lines.append)
    assert any("past this run's 7: training from step 0" in ln for ln in lines)
    assert _summary(shorter) == _summary(lab.train(_recipe(steps=7), [0, 1]))
    assert cache.load_state(_recipe(), [0, 1], lab.init_params(_recipe(), [0, 1])).step == 30


def test_resume_check_can_fail(tmp_path):
    """Fault: resuming without the optimiser's state (Adam's moments, SGD's momentum) gives different weights,
    and the bit-identity check above sees it."""
    from verify import faults

    for kind in ("adam", "sgd"):
        plain = lab.train(_recipe(kind=kind), [0, 1])
        cache = lab.Cache(tmp_path / kind, state_every_s=0.0)
        with pytest.raises(_Stop):
            lab.train(_stopping(_recipe(kind=kind), 13), [0, 1], cache=cache)
        with faults.inject("numeric.lab.restore_optimizer", lambda opt, names, state: None):
            again = lab.train(_recipe(kind=kind), [0, 1], cache=cache)
        assert _summary(again) != _summary(plain)


@pytest.mark.parametrize("damage", ["truncate", "flip", "other-config", "bad-step"])
def test_damaged_state_rejected_and_trained_from_step_0(tmp_path, capsys, damage):
    cache = lab.Cache(tmp_path, state_every_s=0.0)
    with pytest.raises(_Stop):
        lab.train(_stopping(_recipe(), 13), [0, 1], cache=cache)
    path = cache.state_path("toy", lab.prefix_key(_recipe(), [0, 1]))
    if damage == "truncate":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    elif damage == "other-config":
        # a state file from another configuration (lr 0.01) under this configuration's name
        other = lab.Cache(tmp_path / "o", state_every_s=0.0)
        with pytest.raises(_Stop):
            lab.train(_stopping(_recipe(lr=0.01), 13), [0, 1], cache=other)
        shutil.copy(other.state_path("toy", lab.prefix_key(_recipe(lr=0.01), [0, 1])), path)
    else:
        obj = torch.load(path, weights_only=True)
        if damage == "flip":
            obj["tensors"]["optim/W.exp_avg"][0, 0, 0] += 1.0
        else:
            obj["step"] = 14  # the per-step losses say 13
        torch.save(obj, path)
    capsys.readouterr()
    again = lab.train(_recipe(), [0, 1], cache=lab.Cache(tmp_path))
    err = capsys.readouterr().err
    assert "rejected" in err and "training from step 0" in err
    assert _summary(again) == _summary(lab.train(_recipe(), [0, 1]))
