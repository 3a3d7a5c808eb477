"""The training lab: deterministic, CPU-only training of small models, several seeds at once, cached.

Every trained-model claim trains through :func:`train`.  A model is described by a
:class:`Recipe` (what to train: its configuration, how to initialise one seed, how to draw
a batch and how to score it); :func:`train` trains the requested seeds *as one batched
model* and returns a :class:`Trained` (the parameters with a leading seed dimension).

Quick reference (``S`` = number of seeds; shapes without ``S`` are one seed's)::

    from verify.numeric import lab

    def init(gen):                      # one seed's parameters, float32, unbatched shapes
        return {"W": 0.02 * torch.randn(8, 8, generator=gen), "E": torch.randn(16, 8, generator=gen)}

    def data(step, gens):               # one batch per seed, stacked: leading dimension S
        return torch.stack([torch.randint(16, (32, 10), generator=g) for g in gens])

    def loss(params, batch):            # params: name -> [S, ...]; returns the per-seed loss [S]
        ...

    recipe = lab.Recipe(name="toy", version="1", config={"V": 16, "d": 8}, init=init, data=data,
                        loss=loss, optim=lab.Optim(kind="adam", lr=0.01, steps=200), frozen=("E",))
    out = lab.train(recipe, seeds=range(15), cache=lab.Cache(tmp_dir), progress=print)
    out.params["W"]          # torch.float32, [15, 8, 8]; out.seed_params(3)["W"] is seed 3's [8, 8]
    out.float64()["W"]       # the same, float64, for evaluation
    out.from_cache           # True when the checkpoint was read back (then nothing was trained)

Determinism
  * Seeds are explicit.  Seed ``s`` of a recipe owns two ``torch.Generator`` streams, one for
    its initial parameters and one for its data (:func:`derive_seed`: sha256 of the recipe's
    name, the seed and the stream name), so seed ``s`` gets the same initialisation and the same
    batches whether it is trained alone or with other seeds.
  * torch runs on one thread inside :func:`train` (:func:`one_thread`): float reductions do not
    depend on the machine's core count or on how many grid workers run.
  * Training is float32; the recipe's evaluation should use :meth:`Trained.float64`.
  * The same recipe and seeds give bit-identical parameters, hence the same JSON, run after run.

Batched seeds
  The seeds' parameters are stacked along a leading seed dimension ``S`` and trained together:
  the recipe's ``loss`` maps ``params[name]`` of shape ``[S, *shape]`` and a batch with leading
  dimension ``S`` to a per-seed loss of shape ``[S]`` (batched matmuls: ``torch.bmm``,
  ``torch.einsum`` with a leading ``s``).  The lab minimises ``loss.sum()``; since seed ``k``'s
  parameters enter only seed ``k``'s loss, each seed receives exactly its own gradient, and the
  optimisers offered (Adam, SGD with momentum; both elementwise, no global-norm clipping) update each
  seed as if it were trained alone.  A loss must therefore never mix seeds (no mean over ``S``
  before returning).  tests/core/test_lab.py checks batched training against seed-by-seed training.

The checkpoint cache
  Keyed by :func:`config_key`: sha256 of a canonical JSON (sorted keys, no whitespace) of
  ``{"lab": LAB_VERSION, "recipe": name, "version": version, "config": config, "optim": optim,
  "seeds": seeds, "frozen": frozen}``.  ``version`` is the recipe's code version tag: bump it
  whenever the training code changes in a way the config does not show.  One file per (recipe,
  seeds), ``<directory>/<name>-<key>.pt``, written atomically (a temporary file in the same
  directory, flushed and fsync'ed, then ``os.replace``).  Reading uses
  ``torch.load(weights_only=True)`` only, and a file is trusted only if it is a dict of the
  expected layout whose key and configuration echo match, whose tensor digest (sha256 over names,
  dtypes, shapes and bytes) matches its contents, and whose tensors have the shapes and dtypes
  the recipe's ``init`` gives and are finite.  Anything else (truncated, corrupt, a file copied
  from another configuration, not a tensor dict) is reported on stderr (one line) and retrained;
  the fresh checkpoint then replaces it.  The default directory is
  ``$XDG_CACHE_HOME/verify/lab`` or, when that variable is unset or empty, ``~/.cache/verify/lab``
  (:func:`default_cache_dir`); nothing is written outside the directory given.

Resumable training (the training state)
  Every optimiser the lab offers runs at a constant learning rate, so the first ``k`` steps of a
  ``steps``-step run are exactly a ``k``-step run: training is a prefix of any longer training.  With a
  cache, :func:`train` keeps the *training state* of a recipe and seeds (its parameters, the
  optimiser's state, each seed's data generator and the loss of every step done) in
  ``<directory>/<name>-<prefix key>.state.pt``, where the prefix key (:func:`prefix_key`) is the cache
  key without the step count.  The state is written atomically every ``Cache.state_every_s`` seconds
  of training and at the end of a run; a run of ``steps`` steps then starts from a saved state of at
  most ``steps`` steps instead of step 0 (a run stopped by Ctrl-C, a killed machine or a session's
  end loses at most ``state_every_s`` of work, and a run of 4n steps after one of n trains only 3n).
  The result is bit-identical to training from step 0 (tests/core/test_lab.py checks resumed runs
  against uninterrupted ones); a state is trusted only under the same checks as a checkpoint (format,
  key and configuration echo, digest over every tensor, shapes, finiteness), and a state further along
  than the run asked for is left as it is (the run then trains from step 0).  A recipe's ``data`` must
  draw from its generators only (as above), so the generators' states carry its stream.

Progress
  ``progress(message)`` (e.g. the claim Context's ``note``) receives a line at the start, every
  ``Optim.report_every`` steps and at the end; the CLI prints it on stderr.

Errors
  :class:`TrainingDiverged` (a non-finite loss or parameter) is raised, never cached.
  ``ValueError`` for an empty or repeated seed list, a bad optimiser kind, or an ``init`` whose
  tensors are not float32.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import torch

from verify.faults import seam
from verify.ledger import default_cache_dir  # torch-free: the run ledger lives beside the cache
from verify.safeio import atomic_write

#: version of the lab's own training loop (part of every cache key): bump when train() changes
LAB_VERSION = "lab-1"
#: what a checkpoint file says it is
CHECKPOINT_FORMAT = "verify-lab-checkpoint-1"
#: what a training-state file says it is
STATE_FORMAT = "verify-lab-state-1"
OPTIMIZERS = ("adam", "sgd")


class TrainingDiverged(ArithmeticError):
    """A non-finite loss or parameter during training (the message names the step and the seeds)."""


@dataclass(frozen=True)
class Optim:
    """The optimiser and schedule (part of the cache key).

    Attributes:
        kind: ``"adam"`` (torch.optim.Adam with ``betas``, ``eps``, L2 ``weight_decay``) or
            ``"sgd"`` (torch.optim.SGD with ``momentum`` and L2 ``weight_decay``).
        lr: learning rate (constant).
        steps: number of full optimiser steps (one batch per step).
        betas, eps: Adam's constants.
        momentum: SGD's momentum.
        weight_decay: L2 weight decay (the torch optimisers' ``weight_decay``).
        report_every: progress line every this many steps (not part of the key).
    """

    kind: str = "adam"
    lr: float = 1e-2
    steps: int = 400
    betas: tuple[float, float] = (0.9, 0.999)
    eps: float = 1e-8
    momentum: float = 0.0
    weight_decay: float = 0.0
    report_every: int = 100

    def key_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("report_every")
        d["betas"] = list(d["betas"])
        return d


@dataclass(frozen=True)
class Recipe:
    """What to train.  Everything that determines the trained weights must be in ``config``,
    ``version``, ``optim`` or ``frozen`` (they form the cache key); the callables are not hashed.

    Attributes:
        name: short identifier (letters, digits, ``-``, ``_``), e.g. ``"pr26-head"``; also names the
            cache file and the seed streams.
        version: code version tag of the recipe's training code; bump it when ``init``/``data``/
            ``loss`` change in a way ``config`` does not show.
        config: JSON-serialisable configuration (sizes, task, PE family, ...).
        init: ``gen -> {name: tensor}``: one seed's initial parameters (float32, unbatched shapes),
            drawn from ``gen`` only (a ``torch.Generator`` on the CPU).
        data: ``(step, gens) -> batch``: the batch of training step ``step`` (0-based) for every
            seed, stacked along a leading seed dimension; ``gens[k]`` is seed ``k``'s data generator
            (draw seed ``k``'s part from ``gens[k]`` only).  Any structure the loss accepts.
        loss: ``(params, batch) -> tensor [S]``: per-seed loss; ``params[name]`` has shape
            ``[S, *shape]`` (float32).  Must not mix seeds.
        optim: the optimiser (:class:`Optim`).
        frozen: names of parameters kept at their initial values (e.g. random embeddings); they are
            stored in the checkpoint like the others.
    """

    name: str
    version: str
    config: Mapping[str, Any]
    init: Callable[[torch.Generator], dict[str, torch.Tensor]]
    data: Callable[[int, list[torch.Generator]], Any]
    loss: Callable[[dict[str, torch.Tensor], Any], torch.Tensor]
    optim: Optim = field(default_factory=Optim)
    frozen: tuple[str, ...] = ()


@dataclass
class Trained:
    """The result of :func:`train`.

    Attributes:
        params: name -> float32 tensor ``[S, *shape]`` (row k is ``seeds[k]``'s parameters).
        seeds: the seeds, in the order of the leading dimension.
        key: the cache key (:func:`config_key`).
        from_cache: True when read back from the cache (nothing trained).
        losses: float32 ``[n_records, S]``: the per-seed training loss at step 0, every
            ``report_every`` steps and at the last step (as recorded when trained).
        train_seconds: wall time of training (0 when read from the cache).
        resumed_from: the step this call's training started from (0: from the start; k: it continued a
            saved training state of k steps, so ``train_seconds`` covers steps k+1..steps only).
        steps_trained: optimiser steps this call ran (0 when read from the cache).
        recorded_seconds_per_step: read from the cache, the seconds per step its training took (0.0 when the
            checkpoint does not record it).
    """

    params: dict[str, torch.Tensor]
    seeds: tuple[int, ...]
    key: str
    from_cache: bool
    losses: torch.Tensor
    train_seconds: float = 0.0
    resumed_from: int = 0
    steps_trained: int = 0
    recorded_seconds_per_step: float = 0.0
    name: str = ""

    def checkpoint(self) -> dict[str, str]:
        """The checkpoint this result is, for a stored result: its file name in the cache and the digest of its
        parameters (:func:`tensor_digest`); :func:`check_checkpoint` re-checks both without training."""
        return {"file": f"{self.name}-{self.key}.pt", "digest": tensor_digest(self.params)}

    @property
    def seconds_per_step(self) -> float:
        """Wall seconds per optimiser step: of this call's training, or, read from the cache, as recorded when the
        checkpoint was written (0 when unknown)."""
        if self.steps_trained > 0:
            return self.train_seconds / self.steps_trained
        return self.recorded_seconds_per_step

    def seed_params(self, k: int) -> dict[str, torch.Tensor]:
        """Seed ``seeds[k]``'s parameters (unbatched shapes, float32)."""
        return {n: t[k] for n, t in self.params.items()}

    def float64(self) -> dict[str, torch.Tensor]:
        """All parameters as float64 ``[S, *shape]`` (for evaluation)."""
        return {n: t.double() for n, t in self.params.items()}


# ----------------------------------------------------------------------------- keys, seeds, threads


def canonical_json(obj: Any) -> str:
    """Canonical JSON: sorted keys, no whitespace, tuples as lists, non-finite floats refused.

    Raises:
        ValueError/TypeError: a value JSON cannot represent exactly (NaN, inf, an object).
    """
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def key_document(recipe: Recipe, seeds: Sequence[int]) -> dict[str, Any]:
    """The dict whose canonical JSON is hashed into the cache key (also echoed in the checkpoint)."""
    return {"lab": LAB_VERSION, "recipe": recipe.name, "version": recipe.version,
            "config": json.loads(canonical_json(recipe.config)), "optim": recipe.optim.key_dict(),
            "seeds": [int(s) for s in seeds], "frozen": sorted(recipe.frozen)}


def config_key(recipe: Recipe, seeds: Sequence[int]) -> str:
    """sha256 (hex) of the canonical JSON of :func:`key_document`."""
    return hashlib.sha256(canonical_json(key_document(recipe, seeds)).encode()).hexdigest()


def prefix_document(recipe: Recipe, seeds: Sequence[int]) -> dict[str, Any]:
    """:func:`key_document` without the step count: what every prefix of a run shares (the schedule is
    constant, so a k-step run is the first k steps of any longer run of the same document)."""
    doc = key_document(recipe, seeds)
    doc["optim"] = {k: v for k, v in doc["optim"].items() if k != "steps"}
    return doc


def prefix_key(recipe: Recipe, seeds: Sequence[int]) -> str:
    """sha256 (hex) of the canonical JSON of :func:`prefix_document` (names the training-state file)."""
    return hashlib.sha256(canonical_json(prefix_document(recipe, seeds)).encode()).hexdigest()


def derive_seed(name: str, seed: int, stream: str) -> int:
    """A 63-bit generator seed for ``stream`` (``"init"``, ``"data"``, ``"eval"``, ...) of seed ``seed``
    of recipe ``name``: the first 8 bytes of sha256(``name:seed:stream``)."""
    digest = hashlib.sha256(f"{name}:{int(seed)}:{stream}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


def generator(name: str, seed: int, stream: str) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded by :func:`derive_seed`."""
    return torch.Generator().manual_seed(derive_seed(name, seed, stream))


@contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one thread inside the block (restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)




def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------- the cache


def check_checkpoint(directory: str | Path, record: Mapping[str, str]) -> str | None:
    """Re-check a stored result's checkpoint (:meth:`Trained.checkpoint`) in the cache ``directory``, without
    training: None when the file is there, loads (``weights_only``) and its parameters' digest is the recorded one;
    else why not (one line)."""
    name = str(record.get("file", ""))
    if "/" in name or "\\" in name or not name.endswith(".pt"):
        return f"{name!r}: not a checkpoint file name"
    path = Path(directory) / name
    if not path.is_file():
        return f"{name}: not in the cache {directory} (re-checking would retrain it)"
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
        got = tensor_digest(obj["params"])
    except Exception as exc:  # noqa: BLE001 - any unreadable file is reported, never trusted
        return f"{name}: unreadable ({type(exc).__name__})"
    return None if got == record.get("digest") else f"{name}: its parameters' digest differs from the stored one"


def tensor_digest(tensors: Mapping[str, torch.Tensor]) -> str:
    """sha256 over (name, dtype, shape, raw bytes) of each tensor, names sorted."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name].detach().contiguous().cpu()
        h.update(f"{name}|{t.dtype}|{list(t.shape)}|".encode())
        h.update(t.numpy().tobytes() if t.numel() else b"")
    return h.hexdigest()


class Cache:
    """A checkpoint directory (see the module docstring for the file layout and the checks).

    Args:
        directory: where checkpoints live (created on first write).  ``None`` means
            :func:`default_cache_dir`.
        warn: receives one line per rejected file (default: stderr).
    """

    #: seconds of training between two writes of the training state (see "Resumable training")
    state_every_s: float = 60.0

    def __init__(self, directory: str | os.PathLike[str] | None = None,
                 warn: Callable[[str], None] | None = None, state_every_s: float | None = None) -> None:
        self.directory = Path(directory) if directory is not None else default_cache_dir()
        self.warn = warn or _stderr
        if state_every_s is not None:
            self.state_every_s = float(state_every_s)
        #: one line per file rejected by this instance (also sent to ``warn``)
        self.rejected: list[str] = []

    def path(self, name: str, key: str) -> Path:
        return self.directory / f"{name}-{key}.pt"

    def state_path(self, name: str, pkey: str) -> Path:
        return self.directory / f"{name}-{pkey}.state.pt"

    def _reject(self, path: Path, reason: str, then: str) -> None:
        line = f"lab cache: rejected {path.name}: {reason}; {then}"
        self.rejected.append(line)
        self.warn(line)

    @staticmethod
    def _read(path: Path) -> tuple[Any, str | None]:
        try:
            return torch.load(path, map_location="cpu", weights_only=True), None
        except Exception as exc:  # noqa: BLE001 - truncated, not a torch file, unsafe content
            first = str(exc).splitlines()[0][:120] if str(exc) else ""
            return None, f"unreadable ({type(exc).__name__}: {first})"

    def _write(self, name: str, path: Path, obj: dict[str, Any]) -> Path:
        """Write ``obj`` atomically at ``path`` (temporary file in the directory, fsync, os.replace)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # the permissions of every other output (0666 less the umask), so a cache shared with Dask workers run by
        # another user can be read
        return atomic_write(path, lambda fh: torch.save(obj, fh))

    def load(self, recipe: Recipe, seeds: Sequence[int], expected: Mapping[str, tuple[tuple[int, ...], torch.dtype]]
             ) -> tuple[dict[str, torch.Tensor], torch.Tensor, float] | None:
        """The cached ``(params, losses, seconds_per_step)`` for this recipe and seeds, or None (missing or rejected);
        ``seconds_per_step`` is what training took per step when the checkpoint was written (0.0 when not recorded).

        Args:
            expected: name -> (batched shape ``[S, *shape]``, dtype) every parameter must have.
        """
        key = config_key(recipe, seeds)
        path = self.path(recipe.name, key)
        if not path.is_file():
            return None
        obj, reason = self._read(path)
        if reason is None:
            reason = self._why_bad(obj, recipe, seeds, key, expected)
        if reason is not None:
            self._reject(path, reason, "retraining")
            return None
        speed = obj.get("seconds_per_step", 0.0)
        return dict(obj["params"]), obj["losses"], float(speed) if isinstance(speed, float) and speed >= 0 else 0.0

    @staticmethod
    def _why_bad(obj: Any, recipe: Recipe, seeds: Sequence[int], key: str,
                 expected: Mapping[str, tuple[tuple[int, ...], torch.dtype]]) -> str | None:
        if not isinstance(obj, dict):
            return f"not a checkpoint dict (a {type(obj).__name__})"
        if obj.get("format") != CHECKPOINT_FORMAT:
            return f"unknown format {str(obj.get('format'))[:60]!r}"
        if obj.get("key") != key:
            return "its key is not this configuration's (a file from another configuration)"
        if obj.get("config_json") != canonical_json(key_document(recipe, seeds)):
            return "its configuration echo differs from this configuration (a file from another configuration)"
        params, losses = obj.get("params"), obj.get("losses")
        if not isinstance(params, dict) or not all(isinstance(v, torch.Tensor) for v in params.values()):
            return "not a tensor dict"
        if not isinstance(losses, torch.Tensor):
            return "no loss record"
        if set(params) != set(expected):
            return f"parameter names {sorted(params)} differ from {sorted(expected)}"
        for n, (shape, dtype) in expected.items():
            t = params[n]
            if tuple(t.shape) != tuple(shape) or t.dtype != dtype:
                return f"parameter {n!r} is {t.dtype} {list(t.shape)}, expected {dtype} {list(shape)}"
            if not bool(torch.isfinite(t).all()):
                return f"parameter {n!r} has non-finite entries"
        if obj.get("digest") != tensor_digest({**params, "__losses__": losses}):
            return "tensor digest mismatch (corrupt contents)"
        return None

    def save(self, recipe: Recipe, seeds: Sequence[int], params: Mapping[str, torch.Tensor],
             losses: torch.Tensor, seconds_per_step: float = 0.0) -> Path:
        """Write the checkpoint atomically (temporary file in the directory, fsync, os.replace), with the wall seconds
        per step its training took (so a later read can say what more steps would cost)."""
        key = config_key(recipe, seeds)
        path = self.path(recipe.name, key)
        params = {n: t.detach().contiguous().clone() for n, t in params.items()}
        losses = losses.detach().contiguous().clone()
        obj = {"format": CHECKPOINT_FORMAT, "key": key,
               "config_json": canonical_json(key_document(recipe, seeds)),
               "params": params, "losses": losses, "seconds_per_step": float(seconds_per_step),
               "digest": tensor_digest({**params, "__losses__": losses})}
        return self._write(recipe.name, path, obj)

    # ------------------------------------------------------------------------- training states

    def load_state(self, recipe: Recipe, seeds: Sequence[int], start: Mapping[str, torch.Tensor]
                   ) -> TrainState | None:
        """The saved training state of this recipe and seeds (any step count), or None (missing or rejected).

        Args:
            start: the initial parameters (name -> ``[S, *shape]``): the shapes and dtypes a state's
                parameters and optimiser tensors must have.
        """
        pkey = prefix_key(recipe, seeds)
        path = self.state_path(recipe.name, pkey)
        if not path.is_file():
            return None
        obj, reason = self._read(path)
        state = None
        if reason is None:
            state, reason = _state_from(obj, recipe, seeds, pkey, start)
        if reason is not None:
            self._reject(path, reason, "training from step 0")
            return None
        return state

    def save_state(self, recipe: Recipe, seeds: Sequence[int], state: TrainState) -> Path:
        """Write the training state atomically (see "Resumable training")."""
        pkey = prefix_key(recipe, seeds)
        tensors = state.tensors()
        obj = {"format": STATE_FORMAT, "key": pkey, "config_json": canonical_json(prefix_document(recipe, seeds)),
               "step": int(state.step), "tensors": tensors, "digest": tensor_digest(tensors)}
        return self._write(recipe.name, self.state_path(recipe.name, pkey), obj)


@dataclass
class TrainState:
    """Where a training run stands after ``step`` completed optimiser steps.

    Attributes:
        step: completed steps.
        params: name -> float32 ``[S, *shape]`` (every parameter, frozen ones included).
        optim: ``"<parameter>.<slot>"`` -> tensor: the optimiser's per-parameter state (Adam: ``step``,
            ``exp_avg``, ``exp_avg_sq``; SGD with momentum: ``momentum_buffer``; empty before the first step).
        gens: each seed's data-generator state (uint8), in the order of the seeds.
        step_losses: float32 ``[step, S]``: the loss of every completed step.
    """

    step: int
    params: dict[str, torch.Tensor]
    optim: dict[str, torch.Tensor]
    gens: list[torch.Tensor]
    step_losses: torch.Tensor

    def tensors(self) -> dict[str, torch.Tensor]:
        """Every tensor of the state under one flat name (what the file stores and the digest covers)."""
        out = {f"param/{n}": t.detach().contiguous().clone() for n, t in self.params.items()}
        out.update({f"optim/{n}": t.detach().contiguous().clone() for n, t in self.optim.items()})
        out.update({f"gen/{k}": g.clone() for k, g in enumerate(self.gens)})
        out["losses"] = self.step_losses.detach().contiguous().clone()
        return out


def _optim_slots(optim: Optim) -> tuple[str, ...]:
    """The per-parameter state slots torch's optimiser keeps after its first step."""
    if optim.kind == "adam":
        return ("step", "exp_avg", "exp_avg_sq")
    return ("momentum_buffer",) if optim.momentum != 0 else ()


def _state_from(obj: Any, recipe: Recipe, seeds: Sequence[int], pkey: str, start: Mapping[str, torch.Tensor]
                ) -> tuple[TrainState | None, str | None]:
    """A :class:`TrainState` from a loaded file, or ``(None, why it is not trusted)``."""
    if not isinstance(obj, dict):
        return None, f"not a training-state dict (a {type(obj).__name__})"
    if obj.get("format") != STATE_FORMAT:
        return None, f"unknown format {str(obj.get('format'))[:60]!r}"
    if obj.get("key") != pkey or obj.get("config_json") != canonical_json(prefix_document(recipe, seeds)):
        return None, "its configuration is not this one (a file from another configuration)"
    step, tensors = obj.get("step"), obj.get("tensors")
    if not isinstance(step, int) or isinstance(step, bool) or step < 1:
        return None, f"bad step count {str(step)[:30]!r}"
    if not isinstance(tensors, dict) or not all(isinstance(v, torch.Tensor) for v in tensors.values()):
        return None, "not a tensor dict"
    trainable = [n for n in start if n not in recipe.frozen]
    slots = _optim_slots(recipe.optim)
    want: dict[str, tuple[tuple[int, ...], torch.dtype]] = {f"param/{n}": (tuple(t.shape), t.dtype)
                                                            for n, t in start.items()}
    for n in trainable:
        for slot in slots:
            want[f"optim/{n}.{slot}"] = (() if slot == "step" else tuple(start[n].shape), torch.float32)
    S = len(seeds)
    want["losses"] = ((step, S), torch.float32)
    gen_names = {f"gen/{k}" for k in range(S)}
    if set(tensors) != set(want) | gen_names:
        return None, f"its tensors {sorted(set(tensors) ^ (set(want) | gen_names))[:4]} differ from this recipe's"
    for n, (shape, dtype) in want.items():
        t = tensors[n]
        if tuple(t.shape) != shape or t.dtype != dtype:
            return None, f"{n!r} is {t.dtype} {list(t.shape)}, expected {dtype} {list(shape)}"
        if not bool(torch.isfinite(t).all()):
            return None, f"{n!r} has non-finite entries"
    if any(tensors[g].dtype != torch.uint8 or tensors[g].dim() != 1 for g in gen_names):
        return None, "a generator state is not a uint8 vector"
    if obj.get("digest") != tensor_digest(tensors):
        return None, "tensor digest mismatch (corrupt contents)"
    params = {n: tensors[f"param/{n}"] for n in start}
    optim = {k[len("optim/"):]: v for k, v in tensors.items() if k.startswith("optim/")}
    return TrainState(step, params, optim, [tensors[f"gen/{k}"] for k in range(S)], tensors["losses"]), None


# ----------------------------------------------------------------------------- training


def init_params(recipe: Recipe, seeds: Sequence[int]) -> dict[str, torch.Tensor]:
    """Every seed's initial parameters stacked: name -> float32 ``[S, *shape]``.

    Raises:
        ValueError: ``init`` returned a non-float32 tensor or different names/shapes across seeds.
    """
    per = [recipe.init(generator(recipe.name, s, "init")) for s in seeds]
    names = list(per[0])
    for s, d in zip(seeds, per):
        if list(d) != names:
            raise ValueError(f"{recipe.name}: init gives different parameter names for seed {s}")
        for n, t in d.items():
            if t.dtype != torch.float32:
                raise ValueError(f"{recipe.name}: init parameter {n!r} is {t.dtype}; the lab trains in float32")
    return {n: torch.stack([d[n] for d in per]).contiguous() for n in names}


def _check_seeds(seeds: Sequence[int]) -> tuple[int, ...]:
    seeds = tuple(int(s) for s in seeds)
    if not seeds:
        raise ValueError("train: no seeds")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"train: repeated seeds in {list(seeds)}")
    return seeds


def train(recipe: Recipe, seeds: Sequence[int], cache: Cache | None = None,
          progress: Callable[[str], None] | None = None) -> Trained:
    """Train ``recipe`` for every seed in ``seeds`` as one batched model (or read it from ``cache``).

    With a cache, the run starts from the saved training state when one of at most ``optim.steps`` steps
    exists, and saves its own state as it goes (module docstring, "Resumable training").

    Args:
        recipe: the model, data and loss (:class:`Recipe`).
        seeds: distinct ints; the leading dimension of every parameter follows this order.
        cache: a :class:`Cache`, or None to train without caching (and without a training state).
        progress: optional callback for progress lines (stderr in the CLI).

    Returns:
        :class:`Trained` (float32 parameters ``[S, *shape]``).

    Raises:
        TrainingDiverged: a non-finite loss or parameter (nothing is cached).
        ValueError: empty or repeated seeds, an unknown optimiser kind, a non-float32 init.
    """
    seeds = _check_seeds(seeds)
    if recipe.optim.kind not in OPTIMIZERS:
        raise ValueError(f"unknown optimiser {recipe.optim.kind!r}; expected one of {OPTIMIZERS}")
    note = progress or (lambda m: None)
    key = config_key(recipe, seeds)
    label = f"{recipe.name} {key[:10]} seeds {seeds[0]}..{seeds[-1]} (S = {len(seeds)})"
    with one_thread():
        start = init_params(recipe, seeds)
        resume: TrainState | None = None
        keep_state = cache is not None
        if cache is not None:
            expected = {n: (tuple(t.shape), t.dtype) for n, t in start.items()}
            hit = cache.load(recipe, seeds, expected)
            if hit is not None:
                note(f"{label}: read from the cache")
                return Trained(hit[0], seeds, key, True, hit[1], 0.0, recorded_seconds_per_step=hit[2],
                               name=recipe.name)
            resume = cache.load_state(recipe, seeds, start)
            if resume is not None and resume.step > recipe.optim.steps:
                note(f"{label}: the saved training state is at step {resume.step}, past this run's "
                     f"{recipe.optim.steps}: training from step 0 (the state is kept)")
                resume, keep_state = None, False
        t0 = time.perf_counter()
        params, losses = _optimise(recipe, seeds, start, note, label, resume,
                                   cache if keep_state else None)
        elapsed = time.perf_counter() - t0
    first = resume.step if resume is not None else 0
    trained = Trained(params, seeds, key, False, losses, round(elapsed, 3), first, recipe.optim.steps - first,
                      name=recipe.name)
    if cache is not None:
        cache.save(recipe, seeds, params, losses, trained.seconds_per_step)
    return trained


def _make_optimizer(o: Optim, trainable: list[torch.Tensor]) -> torch.optim.Optimizer:
    if o.kind == "adam":
        return torch.optim.Adam(trainable, lr=o.lr, betas=o.betas, eps=o.eps, weight_decay=o.weight_decay)
    return torch.optim.SGD(trainable, lr=o.lr, momentum=o.momentum, weight_decay=o.weight_decay)


def _optimizer_state(opt: torch.optim.Optimizer, names: list[str]) -> dict[str, torch.Tensor]:
    """The optimiser's per-parameter state as ``"<parameter>.<slot>"`` -> tensor (``names[i]`` is the i-th
    parameter handed to the optimiser); the optimiser's own tensors, which :meth:`TrainState.tensors` copies."""
    return {f"{names[idx]}.{slot}": value for idx, slots in opt.state_dict()["state"].items()
            for slot, value in slots.items() if isinstance(value, torch.Tensor)}


@seam("numeric.lab.restore_optimizer")
def _restore_optimizer(opt: torch.optim.Optimizer, names: list[str], state: Mapping[str, torch.Tensor]) -> None:
    """Put a saved per-parameter state back into ``opt`` (the inverse of :func:`_optimizer_state`)."""
    per: dict[int, dict[str, torch.Tensor]] = {}
    for flat, value in state.items():
        name, slot = flat.rsplit(".", 1)
        per.setdefault(names.index(name), {})[slot] = value.clone()
    opt.load_state_dict({"state": per, "param_groups": opt.state_dict()["param_groups"]})


def _record_rows(step_losses: torch.Tensor, steps: int, every: int) -> torch.Tensor:
    """The loss record of a ``steps``-step run: the losses of step 0, every ``every`` steps and the last."""
    rows = [k for k in range(steps) if k % every == 0 or k == steps - 1]
    return step_losses[rows].clone() if rows else torch.zeros(0, step_losses.shape[1])


def _optimise(recipe: Recipe, seeds: tuple[int, ...], start: dict[str, torch.Tensor],
              note: Callable[[str], None], label: str, resume: TrainState | None = None,
              cache: Cache | None = None) -> tuple[dict[str, torch.Tensor], torch.Tensor]:
    o = recipe.optim
    first = resume.step if resume is not None else 0
    begin = resume.params if resume is not None else start
    params = {n: t.clone().requires_grad_(n not in recipe.frozen) for n, t in begin.items()}
    names = [n for n in params if n not in recipe.frozen]
    opt = _make_optimizer(o, [params[n] for n in names])
    gens = [generator(recipe.name, s, "data") for s in seeds]
    losses: list[torch.Tensor] = []
    if resume is not None:
        _restore_optimizer(opt, names, resume.optim)
        for g, st in zip(gens, resume.gens):
            g.set_state(st.clone())
        losses = list(resume.step_losses.unbind(0))
        note(f"{label}: resumed from the saved training state at step {first}; training steps "
             f"{first + 1}..{o.steps} ({o.kind})")
    else:
        note(f"{label}: training {o.steps} {o.kind} steps")

    def save(done: int) -> None:
        if cache is not None and done > 0:
            cache.save_state(recipe, seeds, TrainState(
                done, {n: t.detach() for n, t in params.items()}, _optimizer_state(opt, names),
                [g.get_state() for g in gens], torch.stack(losses)))

    last_save = time.monotonic()
    for step in range(first, o.steps):
        batch = recipe.data(step, gens)
        loss = recipe.loss(params, batch)
        if loss.shape != (len(seeds),):
            raise ValueError(f"{recipe.name}: loss must have shape [S] = [{len(seeds)}], got {list(loss.shape)}")
        if not bool(torch.isfinite(loss).all()):
            bad = [seeds[k] for k in (~torch.isfinite(loss)).nonzero().flatten().tolist()]
            raise TrainingDiverged(f"{recipe.name}: non-finite loss at step {step} for seeds {bad}")
        losses.append(loss.detach().clone())
        if step and (step % o.report_every == 0 or step == o.steps - 1):
            note(f"{label}: step {step + 1}/{o.steps}, mean loss {float(loss.detach().mean()):.4f}")
        opt.zero_grad(set_to_none=True)
        loss.sum().backward()
        opt.step()
        if cache is not None and time.monotonic() - last_save >= cache.state_every_s and step + 1 < o.steps:
            save(step + 1)
            last_save = time.monotonic()
    out = {n: t.detach().clone() for n, t in params.items()}
    for n, t in out.items():
        if not bool(torch.isfinite(t).all()):
            raise TrainingDiverged(f"{recipe.name}: parameter {n!r} is non-finite after training")
    save(o.steps)
    step_losses = torch.stack(losses) if losses else torch.zeros(0, len(seeds))
    return out, _record_rows(step_losses, o.steps, o.report_every)


__all__ = ["Recipe", "Optim", "Trained", "Cache", "train", "init_params", "config_key", "key_document",
           "canonical_json", "derive_seed", "generator", "one_thread", "default_cache_dir", "tensor_digest",
           "TrainingDiverged", "LAB_VERSION", "CHECKPOINT_FORMAT", "OPTIMIZERS", "TrainState", "STATE_FORMAT", "prefix_key",
           "prefix_document"]
