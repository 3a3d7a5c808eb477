"""The PE designer's questions about pr26's positional-only head, as Python functions.

* :func:`alpha` -- alpha_L of a head (fitted at L0, read from a file, or fixed) for a feature map
  (a built-in family, expressions in the position, a Python callable, NoPE, fixed-slope ALiBi,
  sinusoidal/RoPE with a chosen base) on a task (built-in or a target expression), with the
  margin and the softmax mass on the target next to it.
* :func:`realizable` -- can any head with these features do the task at every length up to N?
  An exact linear feasibility question: a re-checked parameter or a Farkas certificate.
* :func:`identifiability` -- the rank of Phi_L0 and the range of alpha_L over every parameter with
  the same L0 logits.

``verify alpha`` and ``verify realizable`` call these functions; ``verify.api`` re-exports them.
Every function validates its inputs first and raises :class:`verify.core.model.InputError` with
the one-line message the command line prints (exit 2); no work starts before that.

Source: pr26 (TMLR 2026): alpha_L is the fraction of new query rows i in [L0, L) whose strict causal
masked argmax is the target (ties fail); the realizability programme and the identifiability
question are the paper's (full text not reachable; reconstructed: see verify.constructions.pe).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Callable, Sequence

from verify.core.model import InconclusiveError, InputError
from verify.evidence import Status
from verify.numeric.pr26_sizes import MEMORY_BUDGET_BYTES, SELECTIONS, TIME_BUDGET_S

#: a head is "weak" when its smallest margin on the new rows is below this (logit units) ...
DEFAULT_MIN_MARGIN = 0.01
#: ... or when the softmax mass on the target is below this on some new row
DEFAULT_MIN_MASS = 0.5
#: exact evaluation (Fractions) when the features are exact and about L^2 r / 2 <= this many products
#: the fit's limits (also those of the pr26 claims' --lr/--steps/--weight-decay; the engine's defaults: lr 0.07 from
#: a grid topping at 0.5, 400 steps, weight decay 1e-4); beyond them Adam's update or the L2 term overflows float64 or
#: the run is hours long
#: ``verify alpha``'s budgets (verify.numeric.pr26_sizes: the streaming evaluation's memory and time estimates,
#: from unit costs measured by benchmarks/bench_alpha.py); sizes beyond either are refused before any work
MAX_BYTES = MEMORY_BUDGET_BYTES
MAX_SECONDS = TIME_BUDGET_S
MAX_L0 = 2048
#: a ceiling above the budgets: feature tables are built position by position (user maps call Python per position)
MAX_L = 1 << 20
#: sane ranges of the fit options, the same as the pr26 claims' --lr/--steps/--weight-decay (the engine's defaults:
#: lr 0.07 from a grid topping at 0.5, 400 steps, weight decay 1e-4); beyond them Adam's update or the L2 term
#: overflows float64 or the run is hours long
MIN_LR = 1e-6
MAX_LR = 10.0
MAX_STEPS = 20_000
MAX_WEIGHT_DECAY = 1.0

MAX_EXACT_WORK = 3_000_000
#: realizable: largest N (lengths 2..N).  The exact check of one parameter at length N holds
#: FILTER_BLOCK x N float64 logits (256 x 131072 x 8 bytes = 256 MiB at the cap) and does about N^2 r / 2
#: multiply-adds for an absolute family of rank r (N r for a relative one), which must stay within
#: MAX_REALIZABLE_WORK (about 10 s of numpy on one core); each cutting-plane round does one such check.
#: Copy, reverse and targets depending on L check every length <= ell per round (up to N^3 r / 6): those
#: runs are bounded by --budget / --timeout (what is undecided then is inconclusive), not refused.
MAX_REALIZABLE_L = 131072
MAX_REALIZABLE_WORK = 2**32
#: realizable: most LP unknowns (r^2 absolute, r relative); z3's simplex on the rows held stays within seconds
MAX_REALIZABLE_PARAMS = 4096
#: identifiability: largest L, largest parameter count.  The range of alpha_L is a z3 Optimize over one Boolean per
#: new row with about L constraints each (no cutting-plane shortcut: the optimum is over which rows pass); measured
#: 1.1 s at L = 64 and 4.5 s at L = 128 (peak 0.8 GB) for [1, i, i^2] on prev at L0 = 20, growing faster than L^2,
#: so L = 128 keeps one call within the default 20 s solver budget
MAX_IDENT_L = 128
MAX_IDENT_PARAMS = 1024
#: --W files: largest size
MAX_W_BYTES = 64 * 2**20

SCHEMA = "verify-alpha/1"
REALIZABLE_SCHEMA = "verify-realizable/1"


class Inconclusive(InconclusiveError):
    """No head to measure (a diverged fit, an uncertified min-norm head) or a solver that did not answer."""

    def __init__(self, reason: str, message: str, fit: dict | None = None) -> None:
        super().__init__(message)
        self.reason, self.message, self.fit = reason, message, fit or {}


# ----------------------------------------------------------------------------- inputs


def resolve_pe(pe: str | None = None, *, features: str | None = None, feature_map: str | Callable | None = None,
               slope: Any = None, base: Any = None, frequencies: int | None = None, max_positions: int = 64,
               check_prefix: int | None = None, user_timeout: float = 60.0, rope_scaling: Any = None) -> Any:
    """The feature map named by the arguments, as a :class:`verify.constructions.features.FeatureSpec`.

    Exactly one of: ``pe`` (a built-in family name, ``nope``, ``alibi-fixed`` with ``slope``,
    ``sinusoidal``/``rope`` optionally with ``base``/``frequencies``, or ``MODULE:CALLABLE``),
    ``features`` (expressions in i or d) or ``feature_map`` (a callable or ``MODULE:CALLABLE``).
    ``rope_scaling`` (``rope`` only): a :class:`verify.constructions.rope_scaling.RopeScaling` or the dict of
    its options (:func:`rope_scaling_of`); the frequencies are the rule's at length ``max_positions``.

    Raises:
        InputError: none or several given, unknown name, a bad expression or callable, an option
            that does not apply to the family.
    """
    from verify.constructions import features as F
    from verify.constructions import pe as pemod

    given = [x for x in (pe, features, feature_map) if x is not None]
    if len(given) != 1:
        raise InputError("give exactly one of --pe NAME, --pe MODULE:CALLABLE or --pe-features EXPRS")
    if isinstance(pe, str) and ":" in pe:
        feature_map, pe = pe, None
    if slope is not None and pe != "alibi-fixed":
        raise InputError("--slope applies to --pe alibi-fixed only")
    if (base is not None or frequencies is not None) and pe not in ("sinusoidal", "rope"):
        raise InputError("--base and --frequencies apply to --pe sinusoidal or rope only")
    if rope_scaling is not None and pe != "rope":
        raise InputError("--rope-scaling applies to --pe rope only")
    try:
        if features is not None:
            spec = F.expression_family(features)
            F.ensure_finite(spec, max_positions)
            return spec
        if feature_map is not None:
            return F.callable_family(feature_map, max_positions, check_prefix, user_timeout)
        if pe == "nope":
            return F.nope_family()
        if pe == "alibi-fixed":
            if slope is None:
                raise InputError("--pe alibi-fixed needs --slope M (the bias is -M (i - j))")
            return F.alibi_fixed_family(_rational(slope, "--slope"))
        if pe == "rope" and rope_scaling is not None:
            from verify.constructions import rope_scaling as RS

            b = _rational(base, "--base", 10**12) if base is not None else Fraction(10000)
            try:
                spec = RS.scaled_rope_family(rope_scaling_of(rope_scaling), b,
                                             16 if frequencies is None else int(frequencies), max_positions)[0]
            except RS.ScalingError as e:
                raise InputError(str(e)) from None
            F.ensure_finite(spec, max_positions, "--base")
            return spec
        if pe in ("sinusoidal", "rope") and (base is not None or frequencies is not None):
            b = _rational(base, "--base", 10**12) if base is not None else Fraction(10000)
            spec = F.trig_family(pe, b, 16 if frequencies is None else int(frequencies))
            F.ensure_finite(spec, max_positions, "--base")
            return spec
        fam = pemod.get_family(str(pe))
    except F.FeatureError as e:
        raise InputError(str(e)) from None
    except KeyError as e:
        raise InputError(e.args[0] + ", nope, alibi-fixed (--slope M), MODULE:CALLABLE, or --pe-features") from None
    return F.FeatureSpec(fam, None, fam.rational, f"family {fam.name}",
                         "exact: rational features" if fam.rational else
                         "irrational features: decisions by float64 with interval re-checks of near ties")


def _rational(x: Any, flag: str, maximum: Any = None) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, bool):
        raise InputError(f"{flag} expects a number")
    try:
        if isinstance(x, float):
            if not math.isfinite(x):
                raise ValueError
            return Fraction(x)
        from verify.core.model import Option

        return Option(flag.lstrip("-"), "", None, kind="rational", maximum=maximum).parse(str(x))
    except InputError:
        raise
    except (ValueError, ZeroDivisionError):
        raise InputError(f"{flag} expects a finite number such as 0.5 or 1/2, got {str(x)[:40]!r}") from None


def rope_scaling_of(options: Any) -> Any:
    """A validated :class:`verify.constructions.rope_scaling.RopeScaling` from one (returned as is) or from a dict
    of :func:`verify.constructions.rope_scaling.make`'s arguments (``rule``, ``factor``, ``original_max``,
    ``beta_fast``, ``beta_slow``, ``low_freq_factor``, ``high_freq_factor``).

    Raises:
        InputError: a bad option, in one line.
    """
    from verify.constructions import rope_scaling as RS

    if isinstance(options, RS.RopeScaling):
        return options
    if not isinstance(options, dict):
        raise InputError("rope_scaling must be a RopeScaling or a dict of its options")
    try:
        return RS.make(**options)
    except TypeError as e:
        raise InputError(f"rope_scaling: {e}") from None
    except RS.ScalingError as e:
        raise InputError(str(e)) from None


def _rope_doc(sc: Any, base: Any, frequencies: int | None, L: int) -> dict:
    """The scaling rule's frequencies and attention factor as used, and their cross-check against transformers."""
    from verify.constructions import rope_scaling as RS

    b = float(_rational(base, "--base", 10**12)) if base is not None else 10000.0
    dim = 2 * (16 if frequencies is None else int(frequencies))
    a = RS.attention_factor(sc)
    doc = {**sc.parameters(), "rotary_dim": dim, "base": b, "inv_freq": RS.inv_freq(sc, b, dim, L),
           "plain_inv_freq": RS.plain_inv_freq(b, dim), "attention_factor": a, "logit_scale": a * a,
           "features": "psi(d) = attention_factor^2 [cos(d w_k), sin(d w_k)]_k, w_k = inv_freq[k] as the exact "
                       "rational of its float64 value; the head is fitted at L0 and evaluated at L with this map"}
    if sc.rule == "dynamic":
        doc["seq_len"] = L
        doc["length_dependence"] = (
            f"frequencies computed at the evaluated length L = {L} and used for every position of that pass, the "
            f"L0 rows the head is fitted on included" + (f" (L <= original max {sc.original_max}: the plain "
                                                          "frequencies)" if L <= sc.original_max else "")
            + "; keys cached before the scaling starts keep their old rotation in an implementation with a KV "
            "cache (the impl:rope claim's finding, not measured here)")
    doc["cross_check"] = RS.cross_check(sc, b, dim, L)
    return doc


def resolve_task(task: str | None = None, *, target: str | None = None, rows: str | None = None) -> Any:
    """A built-in task by name, or a custom one from ``target`` (expression in i, L) and ``rows`` (first row, in L).

    Raises:
        InputError: unknown name, both or neither of ``task``/``target``, a bad expression.
    """
    from verify.constructions import features as F
    from verify.constructions import pe as pemod

    if target is not None:
        if task is not None:
            raise InputError("give --task NAME or --target EXPR, not both")
        try:
            return F.expression_task(target, rows)
        except F.FeatureError as e:
            raise InputError(str(e)) from None
    if rows is not None:
        raise InputError("--rows applies to a --target task only")
    if task is None:
        raise InputError("give --task NAME or --target EXPR")
    try:
        return pemod.get_task(task)
    except KeyError as e:
        raise InputError(e.args[0] + ", or --target EXPR") from None


def _require_rows(task: Any, L: int, flag: str) -> None:
    """One rule for ``verify alpha`` and ``verify realizable``: a task with no query row at the length
    that decides (alpha: --L0, where the head is fitted; realizable: --L, the largest length) is refused;
    its answer would hold vacuously (no row, no constraint: W = 0 "realizes" it).

    Raises:
        InputError: the task has no query row at ``L``.
    """
    if not list(task.rows(L)):
        raise InputError(f"task {task.name} has no query row at {flag} {L} (a target inside the causal window 0..i "
                         "is needed; check --target and --rows)")


def _check_task_at(task: Any, L: int, flag: str = "--target") -> None:
    from verify.constructions import features as F

    try:
        F.check_task(task, L, flag)
    except F.FeatureError as e:
        raise InputError(str(e)) from None


def load_param(path: str | Path, shape: tuple[int, ...]) -> tuple[Any, Any, str]:
    """A head's parameter from a file: ``.npy`` (numpy, no pickle), ``.pt`` (torch.load with
    weights_only=True: tensors only, never code) or ``.json`` (nested lists of exact rationals "p/q").

    Read through :func:`verify.safeio.read_regular_file` (regular files, at most 64 MiB).

    Returns:
        (exact parameter as nested lists of Fractions, float64 torch tensor, how it was read).
    Raises:
        InputError: unreadable, unsupported suffix, not a numeric array, wrong shape, non-finite values.
    """
    import io

    from verify.safeio import UnsafeInput, read_regular_file

    p = Path(path)
    flag = f"--W {p.name[:60]}"
    suffix = p.suffix.lower()
    if suffix not in (".npy", ".pt", ".json"):
        raise InputError(f"{flag}: expected a .npy, .pt or .json file")
    try:
        data = read_regular_file(p, MAX_W_BYTES)
    except UnsafeInput as e:
        raise InputError(f"{flag}: {e}") from None
    exact: Any = None
    if suffix == ".json":
        exact, arr = _json_param(data, flag)
        how = "json (exact rationals)"
    elif suffix == ".npy":
        import numpy as np

        try:
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        except Exception as e:  # noqa: BLE001 - any unreadable file is a refusal
            raise InputError(f"{flag}: not a numpy array file ({type(e).__name__}: {str(e)[:80]})") from None
        how = "npy"
    else:
        import torch

        try:
            obj = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
        except Exception as e:  # noqa: BLE001 - a pickle of code is refused here, never run
            raise InputError(f"{flag}: not a tensor file torch can load with weights_only=True "
                             f"({type(e).__name__}: {str(e).splitlines()[0][:80] if str(e) else ''})") from None
        if isinstance(obj, dict) and len(obj) == 1:
            obj = next(iter(obj.values()))
        if not isinstance(obj, torch.Tensor):
            raise InputError(f"{flag}: expected one tensor, got {type(obj).__name__}")
        arr = obj.detach().cpu().numpy()
        how = "pt (weights_only)"
    import numpy as np
    import torch

    if arr.dtype.kind not in "fiu":
        raise InputError(f"{flag}: expected a real numeric array, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if tuple(arr.shape) != tuple(shape):
        raise InputError(f"{flag}: shape {list(arr.shape)} does not match the head's parameter shape {list(shape)}")
    if not np.isfinite(arr).all():
        raise InputError(f"{flag}: non-finite values")
    if exact is None:
        exact = _nested(arr.tolist(), Fraction)
    return exact, torch.tensor(arr, dtype=torch.float64), how


def _json_param(data: bytes, flag: str) -> tuple[Any, Any]:
    """A parameter file's JSON (nested lists of exact rationals "p/q", or a dict with ``W`` or ``param``):
    the exact nested Fractions and the float64 numpy array.

    Raises:
        InputError: not JSON of exact rationals, ragged rows, a value beyond float64.
    """
    import json

    import numpy as np

    from verify.solver.recheck import frac

    try:
        doc = json.loads(data.decode("utf-8"))
        doc = doc.get("W", doc.get("param")) if isinstance(doc, dict) else doc
        exact = _nested(doc, frac)
    except (ValueError, UnicodeDecodeError, TypeError, RecursionError, AttributeError) as e:
        raise InputError(f"{flag}: not a JSON array of exact rationals ({str(e)[:80]})") from None
    try:
        arr = np.array(_nested(exact, float), dtype=np.float64)
    except ValueError:  # ragged lists: numpy cannot make one array of them
        raise InputError(f"{flag}: not a rectangular array (rows of different lengths)") from None
    except OverflowError:  # an exact rational beyond float64 (a 1999-digit integer)
        raise InputError(f"{flag}: a value beyond the float64 range (at most about 1.8e308 in magnitude)") from None
    return exact, arr


def _nested(x: Any, fn: Callable) -> Any:
    if isinstance(x, list):
        return [_nested(v, fn) for v in x]
    return fn(x)


# ----------------------------------------------------------------------------- alpha


@dataclass
class AlphaResult:
    """What :func:`alpha` measured; ``to_dict()`` is the JSON of ``verify alpha --format json``.

    Attributes:
        alpha: fraction of new query rows i in [L0, L) that attend to their target (strict argmax).
        min_margin: smallest margin over the new rows (logit units; float; nan without new rows).
        min_margin_exact: the same as an exact rational string when computed in Fractions, else None.
        target_mass_min / target_mass_mean: softmax probability of the target key over the new rows.
        weak: True when min_margin < the margin threshold or target_mass_min < the mass threshold.
        doc: the full JSON document.
    """

    alpha: float
    min_margin: float
    min_margin_exact: str | None
    target_mass_min: float
    target_mass_mean: float
    weak: bool
    doc: dict = field(default_factory=dict)
    head: Any = field(default=None, repr=False)  # the verify.numeric.pr26.FitResult measured (for plots)

    def to_dict(self) -> dict:
        return self.doc


def _validate_sizes(spec: Any, task: Any, L0: int, L: int) -> None:
    from verify.core.inputs import clip

    for name, v in (("--L0", L0), ("--L", L)):
        if isinstance(v, bool) or not isinstance(v, int):
            raise InputError(f"{name} must be an integer, got {clip(v)}")
    if L0 < 2:
        raise InputError(f"--L0 must be >= 2, got {clip(L0)}")
    if L <= L0:
        raise InputError(f"--L {clip(L)} must exceed --L0 {clip(L0)}")
    if L0 > MAX_L0:
        raise InputError(f"--L0 {clip(L0)} is too large (the fit is O(400 L0^2 r); at most {MAX_L0})")
    if L > MAX_L:
        raise InputError(f"--L {clip(L)} is too large (at most {MAX_L}: the feature table is built position by "
                         "position)")
    from verify.numeric.pr26_sizes import fast_memory_bytes, time_estimate_s  # torch-free

    fam = spec.family
    need = fast_memory_bytes(fam, L0, L)
    if need > MAX_BYTES:
        raise InputError(f"--pe {fam.name} --L0 {L0} --L {L} needs about {need / 2**30:.1f} GiB "
                         f"(memory budget {MAX_BYTES / 2**30:.0f} GiB); lower --L or --L0")
    secs = time_estimate_s(fam, L0, L)
    if secs > MAX_SECONDS:
        how = ("an absolute head evaluates about L^2 r / 2 logits" if fam.kind == "absolute" else
               "a relative head costs O(L) rows")
        raise InputError(f"--pe {fam.name} --L0 {L0} --L {L} needs about {secs:.0f} s on this machine's unit costs "
                         f"(time budget {MAX_SECONDS:.0f} s; {how}, r = {fam.dim(L0)}); lower --L")


def _validate_fit(seed: int, lr: float | None, steps: int, weight_decay: float, selection: str) -> None:
    from verify.core.inputs import check_seed, clip

    check_seed(seed)
    if lr is not None and not (isinstance(lr, (int, float)) and math.isfinite(lr) and MIN_LR <= lr <= MAX_LR):
        raise InputError(f"--lr must be a number in [{MIN_LR:g}, {MAX_LR:g}], got {clip(lr)}")
    if isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps <= MAX_STEPS:
        raise InputError(f"--steps must be an integer in 1..{MAX_STEPS}, got {clip(steps)}")
    if not (isinstance(weight_decay, (int, float)) and math.isfinite(weight_decay)
            and 0 <= weight_decay <= MAX_WEIGHT_DECAY):
        raise InputError(f"--weight-decay must be a number in [0, {MAX_WEIGHT_DECAY:g}], got {clip(weight_decay)}")
    if selection not in SELECTIONS:
        raise InputError(f"--selection must be {' or '.join(SELECTIONS)}, got {clip(selection)}")


def _validate_thresholds(min_margin: float, min_mass: float) -> None:
    for flag, v, hi in (("--min-margin", min_margin, 1e6), ("--min-mass", min_mass, 1.0)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 <= v <= hi:
            raise InputError(f"{flag} must be a number in [0, {hi:g}], got {str(v)[:40]}")


def prepare(pe: str | None = None, task: str | None = None, L0: int = 20, L: int = 64, *, features: str | None = None,
            feature_map: str | Callable | None = None, slope: Any = None, base: Any = None,
            frequencies: int | None = None, target: str | None = None, rows: str | None = None,
            W: str | Path | None = None, seed: int = 0, lr: float | None = None, steps: int = 400,
            weight_decay: float = 1e-4, selection: str = "ce", min_margin: float = DEFAULT_MIN_MARGIN,
            min_mass: float = DEFAULT_MIN_MASS, user_timeout: float = 60.0, _spec: Any = None,
            rope_scaling: Any = None) -> dict:
    """Validate every input of :func:`alpha` (no fit, no evaluation); returns the resolved pieces.

    Built-in families and tasks are validated without importing torch or sympy.  ``_spec``: a feature map
    already resolved (and checked finite) for these arguments at a length >= L, used instead of resolving
    it again.

    Raises:
        InputError: the first bad input, in one line.
    """
    _validate_fit(seed, lr, steps, weight_decay, selection)
    _validate_thresholds(min_margin, min_mass)
    sc = rope_scaling_of(rope_scaling) if rope_scaling is not None else None
    tsk = resolve_task(task, target=target, rows=rows)
    if not isinstance(L, int) or isinstance(L, bool) or not isinstance(L0, int) or isinstance(L0, bool):
        raise InputError("--L0 and --L must be integers")
    spec = _spec if _spec is not None else resolve_pe(
        pe, features=features, feature_map=feature_map, slope=slope, base=base, frequencies=frequencies,
        max_positions=max(L, 1) if 2 <= L <= (1 << 20) else 64, check_prefix=L0 if 0 < L0 < L else None,
        user_timeout=user_timeout, rope_scaling=sc)
    _validate_sizes(spec, tsk, L0, L)
    if target is not None:
        _check_task_at(tsk, L0)
        _check_task_at(tsk, L)
    _require_rows(tsk, L0, "--L0")
    param = None
    if W is not None:
        if spec.fixed_param is not None:
            raise InputError(f"--W: {spec.family.name} has no trained parameter")
        param = load_param(W, spec.family.param_shape(L0))
    return {"spec": spec, "task": tsk, "param": param,
            **({"rope": (sc, base, frequencies)} if sc is not None else {})}


def _exact_eval(family: Any, task: Any, param: Any, L0: int, L: int,
                rows: Sequence[int]) -> list[tuple[int, Fraction | None, int, bool]]:
    """(row, exact margin or None, argmax key (first maximiser), another key ties the target exactly) per row."""
    from verify.constructions import pe
    from verify.constructions.pe import FractionArith

    ar = FractionArith(0)
    n = (max(rows) + 1) if rows else 0
    feats = [family.features(m, L0, ar) for m in range(n)]
    out: list[tuple[int, Fraction | None, int, bool]] = []
    if family.kind == "relative":
        k = [sum((a * b for a, b in zip(param, feats[d])), Fraction(0)) for d in range(n)]

        def lg(i: int, j: int) -> Fraction:
            return k[i - j]
    else:
        r = family.dim(L0)
        wphi = [[sum((param[a][b] * feats[j][b] for b in range(r) if feats[j][b] != 0), Fraction(0)) for a in range(r)]
                for j in range(n)]

        def lg(i: int, j: int) -> Fraction:
            return sum((feats[i][a] * wphi[j][a] for a in range(r) if feats[i][a] != 0), Fraction(0))
    for i in rows:
        t = pe.target_in_window(task, i, L)
        vals = [lg(i, j) for j in range(i + 1)]
        others = [v for j, v in enumerate(vals) if j != t]
        top = max(vals)
        am = vals.index(top)
        if not others:
            out.append((i, None, am, False))
            continue
        out.append((i, vals[t] - max(others), am, any(v == vals[t] for v in others)))
    return out


def _target_mass(family: Any, task: Any, param_f: Any, L0: int, L: int, rows: Sequence[int], seed: int) -> list[float]:
    """Softmax probability of the target key per row (float64, causal mask), streamed
    (verify.numeric.pr26.target_mass: prefix log-sum-exp for relative heads, causal row blocks otherwise)."""
    from verify.numeric import pr26 as num

    return num.target_mass(family, task, param_f, L0, L, rows, seed)


def alpha(pe: str | None = None, task: str | None = None, L0: int = 20, L: int = 64, *, features: str | None = None,
          feature_map: str | Callable | None = None, slope: Any = None, base: Any = None, frequencies: int | None = None,
          target: str | None = None, rows: str | None = None, W: str | Path | None = None, seed: int = 0,
          lr: float | None = None, steps: int = 400, weight_decay: float = 1e-4, selection: str = "ce",
          min_margin: float = DEFAULT_MIN_MARGIN, min_mass: float = DEFAULT_MIN_MASS,
          identifiability: bool = False, timeout_s: float = 20.0, _prepared: dict | None = None,
          user_timeout: float = 60.0, rope_scaling: Any = None) -> AlphaResult:
    """alpha_L of a positional-only head, with its margins and the softmax mass on the target (pr26).

    Args:
        pe: a family name (``affine``, ``alibi``, ``learned-absolute``, ``clamped-absolute``,
            ``sinusoidal``, ``rope``, ``free-relative``, ``nope``, ``alibi-fixed``) or
            ``MODULE:CALLABLE``; or give ``features`` (comma-separated expressions in the position
            i, e.g. ``"1, i, i**2"``, or in the offset d for a relative kernel) or ``feature_map``
            (a callable ``f(LongTensor[n]) -> Tensor[n, k]``; importing a module runs its code).
        task: ``prev``, ``skip-K``, ``attend-first``, ``copy``, ``reverse``; or ``target`` (the target
            key as an expression in i and L, e.g. ``"i - 1"``) with optional ``rows`` (first query
            row, an expression in L).
        L0, L: training and evaluation lengths (positions; 2 <= L0 < L).
        slope: fixed ALiBi slope m (``alibi-fixed``; the bias is -m (i - j)).
        base, frequencies: theta_k = base^(-k/F), k < F, for ``sinusoidal``/``rope``.
        rope_scaling: ``rope`` only: a scaling rule (:func:`rope_scaling_of`: a
            :class:`verify.constructions.rope_scaling.RopeScaling` or a dict such as ``{"rule": "yarn",
            "factor": 4}``); the head is fitted and evaluated with the rule's frequencies (dynamic: those at L),
            and the document's ``rope_scaling`` entry cross-checks them against transformers when installed.
        W: a parameter file (.npy, .pt weights-only, .json exact rationals) of the head's shape
            (absolute r x r, relative r) instead of a fit.
        seed, lr, steps, weight_decay, selection: the fit at L0 (pr26's protocol, verify.numeric.pr26.fit).
        min_margin: a head whose smallest new-row margin is below this is flagged weak (logit units).
        min_mass: ... or whose softmax mass on the target is below this on some new row.
        identifiability: also compute :func:`identifiability` for the head.
    Returns:
        :class:`AlphaResult`.  Decisions are exact: Fractions where the features are exact and the
        size allows (about L^2 r / 2 <= 3e6), otherwise float64 with every near tie re-decided in
        Fractions or by mpmath intervals (verify.numeric.pr26.evaluate_rows).
    Raises:
        InputError: bad input (one line; before any work).
        Inconclusive: the fit diverged or the min-norm head could not be certified (no alpha).
    """
    prep = _prepared or prepare(pe, task, L0, L, features=features, feature_map=feature_map, slope=slope, base=base,
                                frequencies=frequencies, target=target, rows=rows, W=W, seed=seed, lr=lr, steps=steps,
                                weight_decay=weight_decay, selection=selection, min_margin=min_margin,
                                min_mass=min_mass, user_timeout=user_timeout, rope_scaling=rope_scaling)
    from verify.numeric.pr26 import feature_cache

    with feature_cache():  # the features of positions 0..L-1 computed once for every evaluation below
        return _alpha(prep, L0, L, seed, lr, steps, weight_decay, selection, min_margin, min_mass, identifiability,
                      timeout_s)


def _alpha(prep: dict, L0: int, L: int, seed: int, lr: float | None, steps: int, weight_decay: float,
           selection: str, min_margin: float, min_mass: float, identifiability: bool, timeout_s: float) -> AlphaResult:
    """The body of :func:`alpha` on validated inputs: the head, the decisions, the mass and the document."""
    spec, tsk = prep["spec"], prep["task"]
    fam = spec.family
    head = _head(prep, L0, seed, lr, steps, weight_decay, selection)
    # ---- decisions
    new_rows = [i for i in tsk.rows(L) if i >= L0]
    r = fam.dim(L0)
    work = L * L * max(r, 1) // 2 + (0 if fam.kind == "relative" else L * r * r)
    doc: dict[str, Any] = {"schema": SCHEMA, "pe": fam.name, "task": tsk.name, "L0": L0, "L": L, "seed": seed,
                           "outcome": "measured"}
    min_exact: str | None = None
    if spec.exact and work <= MAX_EXACT_WORK:
        alpha_v, min_exact = _decide_exact(doc, head, fam, tsk, L0, L, new_rows)
    else:
        alpha_v = _decide_float(doc, head, fam, L, prep)
    # ---- the target mass, the weak flag and the document
    gL_f = doc["min_margin_new_rows"]
    mass = _target_mass(fam, tsk, head.param_f, L0, L, new_rows, seed)
    mmin = min(mass) if mass else float("nan")
    mmean = sum(mass) / len(mass) if mass else float("nan")
    reasons = _weak_reasons(bool(new_rows), gL_f, mmin, min_margin, min_mass)
    weak = bool(reasons)
    fr, source = head.fr, head.source
    fit_doc = {**fr.settings, "loss_first": fr.loss_first, "loss_last": fr.loss_last}
    doc.update({"min_margin": gL_f, "min_margin_exact": min_exact,
                "target_mass": {"min": mmin, "mean": mmean, "over": "new rows i in [L0, L), float64 softmax"},
                "weak": weak, "weak_reasons": reasons,
                "thresholds": {"min_margin": min_margin, "min_mass": min_mass},
                "param_source": source, "fit": fit_doc, "pe_source": spec.source, "pe_exact": spec.note,
                "kernel": (_kernel(fr, L) if source != "fixed" else
                           {"kind": fam.kind, "param": [str(x) for x in head.exact_param]}),
                "pe_description": fam.description, "task_description": tsk.description,
                "indexing": "rows and keys 0-indexed; row_i_paper = row_i + 1"})
    if prep.get("rope") is not None:
        sc, base, frequencies = prep["rope"]
        doc["rope_scaling"] = _rope_doc(sc, base, frequencies, L)
    if identifiability:
        from verify.numeric import pr26 as num

        doc["identifiability"] = _identifiability(spec, tsk, L0, L, head.exact_param if head.exact_param is not None
                                                  else num._exact_param(head.param_f), timeout_s)
    return AlphaResult(alpha_v, gL_f, min_exact, mmin, mmean, weak, doc, fr)


def _weak_reasons(has_new_rows: bool, gL: float, mass_min: float, min_margin: float, min_mass: float) -> list[str]:
    """Why the head is flagged weak: its smallest new-row margin or its smallest softmax mass on the target
    below the thresholds (none without new rows)."""
    reasons = []
    if has_new_rows and not (gL >= min_margin):
        reasons.append(f"smallest new-row margin {gL:.3g} < --min-margin {min_margin:g}")
    if has_new_rows and not (mass_min >= min_mass):
        reasons.append(f"softmax mass on the target {mass_min:.3g} < --min-mass {min_mass:g} on some new row")
    return reasons


@dataclass
class _Head:
    """The head alpha is measured on: its fit record, float64 parameter, exact parameter (fixed, from a
    file, or after the exact evaluation the fitted float64 taken as the number it is) and source."""

    fr: Any
    param_f: Any
    exact_param: Any
    source: str


def _head(prep: dict, L0: int, seed: int, lr: float | None, steps: int, weight_decay: float,
          selection: str) -> _Head:
    """The family's fixed parameter, the parameter file's, or a fit at L0 (pr26's protocol).

    Raises:
        Inconclusive: the fit diverged or the min-norm head could not be certified.
    """
    import torch

    from verify.numeric import pr26 as num

    spec, tsk = prep["spec"], prep["task"]
    fam = spec.family
    if spec.fixed_param is not None:
        exact_param = list(spec.fixed_param)
        param_f = torch.tensor([float(x) for x in exact_param], dtype=torch.float64)
        fr = num.FitResult(fam, tsk, L0, seed, param_f, float("nan"), float("nan"),
                           {"selection": "fixed", "note": "no trained parameter"})
        return _Head(fr, param_f, exact_param, "fixed")
    if prep["param"] is not None:
        exact_param, param_f, how = prep["param"]
        # the designer passes the loss it already computed for this head, task and L0 (one value per task)
        loss = prep["param_loss"] if prep.get("param_loss") is not None else num._ce_loss(fam, tsk, L0, param_f, seed)
        fr = num.FitResult(fam, tsk, L0, seed, param_f, loss, loss, {"selection": "file", "file_format": how})
        return _Head(fr, param_f, exact_param, "file")
    try:
        fr = num.fit(fam, tsk, L0, seed, steps=steps, lr=lr, weight_decay=weight_decay, selection=selection)
    except num.MinNormError as e:
        what = ("the min-norm head could not be certified: the dual shows no head with margin >= 1 exists below "
                "its norm bound" if e.kind == "unrealizable" else "the min-norm head could not be certified")
        raise Inconclusive(f"min-norm {e.kind}", f"{what}: {e}",
                           {"selection": "min-norm", "norm_lower_bound": e.norm_lower_bound}) from None
    except num.FitDiverged as e:
        raise Inconclusive("fit diverged", f"no alpha measured: {e}",
                           {"selection": "ce", "lr": num.LR if lr is None else lr, "steps": steps,
                            "weight_decay": weight_decay}) from None
    if not (math.isfinite(fr.loss_last) and bool(torch.isfinite(fr.param).all())):
        raise Inconclusive("fit diverged", "no alpha measured: the selected head has a non-finite loss "
                           f"({fr.loss_last}) or parameter", dict(fr.settings))
    return _Head(fr, fr.param, None, "fit")


def _decide_exact(doc: dict[str, Any], head: _Head, fam: Any, tsk: Any, L0: int, L: int,
                  new_rows: list[int]) -> tuple[float, str | None]:
    """Every row decided in Fractions; the decisions go into ``doc``.  Returns alpha and the exact smallest
    new-row margin (a string; None without margins).  A fitted head's exact parameter is its float64
    parameter taken as the exact number it is (kept on ``head``)."""
    from verify.constructions import pe as pemod
    from verify.numeric import pr26 as num

    if head.exact_param is None:
        head.exact_param = num._exact_param(head.param_f)
    exact_param = head.exact_param
    new_ev = _exact_eval(fam, tsk, exact_param, L0, L, new_rows)
    old_ev = _exact_eval(fam, tsk, exact_param, L0, L0, list(tsk.rows(L0)))
    old_L = _exact_eval(fam, tsk, exact_param, L0, L, [i for i in tsk.rows(L) if i < L0])
    passed = [e for e in new_ev if e[1] is None or bool(pemod.attends(e[1]))]
    mg_new = [e[1] for e in new_ev if e[1] is not None]
    mg_old = [e[1] for e in old_ev if e[1] is not None]
    mg_oldL = [e[1] for e in old_L if e[1] is not None]
    alpha_v = len(passed) / len(new_rows) if new_rows else float("nan")
    gL = min(mg_new) if mg_new else None
    failing = [{"row_i": i, "row_i_paper": i + 1, "target": int(tsk.target(i, L)), "argmax": am,
                "margin": float(m)} for i, m, am, _ in new_ev if not (m is None or pemod.attends(m))][:5]
    doc.update({"alpha": alpha_v, "new_rows": len(new_rows), "passed_rows": len(passed),
                "min_margin_old_rows": float(min(mg_old)) if mg_old else float("nan"),
                "min_margin_new_rows": float(gL) if gL is not None else float("nan"),
                "min_margin_old_rows_at_L": float(min(mg_oldL)) if mg_oldL else float("nan"),
                "new_rows_with_exact_tie_to_target": sum(e[3] for e in new_ev),
                "exact_rechecked_rows": len(new_ev) + len(old_ev), "interval_rechecked_rows": 0,
                "unresolved_rows_counted_as_failures": 0, "failing_rows": failing,
                "arithmetic": "exact: every logit and margin in fractions.Fraction" + (
                    "" if head.source != "fit" else " (the fitted float64 parameter taken as the exact number it is)")})
    return alpha_v, None if gL is None else str(gL)


def _decide_float(doc: dict[str, Any], head: _Head, fam: Any, L: int, prep: dict) -> float:
    """Every row decided in float64, near ties re-decided exactly (verify.numeric.pr26.transfer); the
    decisions go into ``doc``.  Returns alpha."""
    from verify.numeric import pr26 as num

    tr = num.transfer(head.fr, L)
    doc.update({"alpha": tr.alpha, "new_rows": tr.new_rows, "passed_rows": tr.passed_rows,
                "min_margin_old_rows": tr.g0, "min_margin_new_rows": tr.gL,
                "min_margin_old_rows_at_L": tr.old_margin_at_L,
                "new_rows_with_exact_tie_to_target": tr.new_rows_target_tied,
                "exact_rechecked_rows": tr.exact_rechecked, "interval_rechecked_rows": tr.interval_rechecked,
                "unresolved_rows_counted_as_failures": tr.unresolved, "failing_rows": tr.failing,
                "arithmetic": "float64 logits; rows within the stated rounding bound of a tie re-decided "
                              + ("in fractions.Fraction" if fam.rational else "by mpmath interval arithmetic")
                              + ("" if head.exact_param is None or head.source != "file" or prep["param"][2] != "json "
                                 "(exact rationals)" else "; the rational W rounded to float64")})
    return tr.alpha


def _kernel(fr: Any, L: int) -> dict:
    from verify.numeric import pr26 as num

    return num.kernel_summary(fr, L)


# ----------------------------------------------------------------------------- identifiability


def _identifiability(spec: Any, tsk: Any, L0: int, L: int, theta_exact: Any, timeout_s: float) -> dict:
    from verify.constructions.pe import FractionArith
    from verify.solver import realizable as R

    fam = spec.family
    r = fam.dim(L0)
    nparam = r if fam.kind == "relative" else r * r
    if L > MAX_IDENT_L or nparam > MAX_IDENT_PARAMS:
        return {"computed": False, "why": f"sizes beyond the identifiability caps (L <= {MAX_IDENT_L}, at most "
                                          f"{MAX_IDENT_PARAMS} parameters)"}
    ar = FractionArith(0)
    phi = [fam.features(m, L0, ar) for m in range(L0)]
    rank, how = R.matrix_rank(phi)
    lrows = R.logit_rows(fam, L0, L0)
    lrank, lhow = R.matrix_rank(lrows)
    theta = [Fraction(x) for x in theta_exact] if fam.kind == "relative" else [Fraction(x) for row in theta_exact
                                                                              for x in row]
    rng = R.alpha_range(fam, tsk, L0, L, L0, theta, int(timeout_s * 1000))
    what = "Psi_L0 (offsets 0..L0-1)" if fam.kind == "relative" else "Phi_L0 (positions 0..L0-1)"
    return {"computed": True, "matrix": what, "shape": [L0, r], "rank": rank, "null_space_dim": r - rank,
            "rank_how": how, "parameters": nparam, "L0_logit_map_rank": lrank,
            "L0_logit_map_null_space_dim": nparam - lrank, "L0_logit_map_rank_how": lhow,
            "identifiable": nparam - lrank == 0,
            "alpha_range": {"min": rng.get("min"), "max": rng.get("max"), "how": rng["how"],
                            "attainable": rng.get("attainable"), "attainable_how": rng.get("attainable_how"),
                            "new_rows": rng["new_rows"], "witnesses": rng["witnesses"], "seconds": rng["seconds"]},
            "arithmetic": spec.note}


def identifiability(pe: str | None = None, task: str | None = None, L0: int = 20, L: int = 64, *,
                    features: str | None = None, feature_map: str | Callable | None = None, slope: Any = None,
                    base: Any = None, frequencies: int | None = None, target: str | None = None,
                    rows: str | None = None, W: str | Path | None = None, seed: int = 0, lr: float | None = None,
                    steps: int = 400, weight_decay: float = 1e-4, selection: str = "ce",
                    timeout_s: float = 20.0) -> dict:
    """Rank and null space of Phi_L0 and of the L0 logit map, and the range of alpha_L over every
    parameter with the same masked L0 logits as the head (fitted, from ``W``, or fixed).

    Arguments as :func:`alpha`.  Sizes: L <= 128 and at most 1024 parameters (exact LPs over
    every new row).

    Returns:
        dict: ``rank``, ``null_space_dim`` (of Phi_L0, or Psi_L0 for relative families),
        ``L0_logit_map_rank`` / ``..._null_space_dim`` (the linear map parameter -> masked L0 logits),
        ``alpha_range`` {min, max, how (a solver bound: z3 Optimize, witnesses re-checked in Fractions),
        attainable (exact enumeration of every attainable alpha_L when there are <= 16 new rows)},
        and ``alpha`` of the head itself.
    Raises:
        InputError: bad input; Inconclusive: no head to measure.
    """
    res = alpha(pe, task, L0, L, features=features, feature_map=feature_map, slope=slope, base=base,
                frequencies=frequencies, target=target, rows=rows, W=W, seed=seed, lr=lr, steps=steps,
                weight_decay=weight_decay, selection=selection, identifiability=True, timeout_s=timeout_s)
    return {"alpha": res.alpha, **res.doc["identifiability"]}


# ----------------------------------------------------------------------------- realizable


@dataclass
class RealizableResult:
    """What :func:`realizable` decided; ``to_dict()`` is the JSON of ``verify realizable --format json``.

    Attributes:
        realizable: True when one parameter realizes the task at every length <= N; False when a
            checked certificate shows none does; None when the solver did not answer (inconclusive).
        per_length: one entry per length: its answer and the id of its witness or certificate.
        doc: the full JSON document (witness parameters as exact rational strings; certificates in
            the format ``verify recheck`` reads).
    """

    realizable: bool | None
    per_length: list[dict]
    doc: dict
    certificate_files: list[str] = field(default_factory=list)
    family: Any = field(default=None, repr=False)  # the feature map and task decided (for plots)
    task: Any = field(default=None, repr=False)
    window: int = 20

    def to_dict(self) -> dict:
        return self.doc


def realizable(pe: str | None = None, task: str | None = None, L: int = 8, *, features: str | None = None,
               feature_map: str | Callable | None = None, slope: Any = None, base: Any = None,
               frequencies: int | None = None, target: str | None = None, rows: str | None = None,
               margin: Any = 1, L0: int = 20, timeout_s: float = 20.0,
               certificates: str | Path | None = None, user_timeout: float = 60.0, budget_s: float | None = None,
               progress: Callable[[str], None] | None = None, method: str = "cutting",
               _spec: Any = None) -> RealizableResult:
    """Can any head with these features do the task at every length up to L (pr26's realizability)?

    For each length ell = 2..L: is there one parameter theta with logit(i, t(i)) >= logit(i, j) +
    margin for every query row i and key j <= i, j != t(i), of every length <= ell?  The constraints
    are linear in theta, so this is decided exactly (z3, linear real arithmetic over the exact
    rational features; sin/cos rounded to multiples of 2^-40): realizable with a parameter
    re-checked in fractions.Fraction outside the solver, or not with a Farkas certificate checked
    without a solver.  Because the constraints are homogeneous, every margin > 0 gives the same
    answer (a fixed family, alibi-fixed, has no scale: its parameter is pinned to 1).

    Args:
        pe / features / feature_map / slope / base / frequencies: the feature map (as :func:`alpha`).
        task / target / rows: the task (as :func:`alpha`).
        L: the largest length N (2 <= N <= :data:`MAX_REALIZABLE_L`, and one exact check at N within
            :data:`MAX_REALIZABLE_WORK`).
        margin: G > 0 (a rational).
        L0: the window of the learned families (their trained slots); other maps ignore it.
        timeout_s: budget per solver call (a timeout is inconclusive).
        certificates: a directory to write each certificate to (``verify recheck DIR`` re-checks it).
        budget_s: total seconds; the lengths undecided when it runs out are inconclusive, never realizable.
        progress: called with one line per solve (length, answer, constraints held, seconds).
        method: ``cutting`` (cutting planes with the block identity) or ``full`` (every row to the solver:
            the reference definition, for small N).

    For prev, skip-K, attend-first and a target in i alone (targets independent of L) a head realizing
    length N realizes every shorter length (pr26 Theorem 1's causal-mask block identity), so every
    length <= N is one exact decision at N, with a bisection for the first failing length when it
    fails; copy, reverse and targets depending on L are decided on the rows of every length <= ell.
    Returns:
        :class:`RealizableResult`.
    Raises:
        InputError: bad input.
    """
    from verify.core.inputs import check_timeout

    G = _realizable_checked(L, L0, margin)
    timeout_ms = check_timeout(timeout_s)
    tsk = resolve_task(task, target=target, rows=rows)
    spec = _spec or resolve_pe(pe, features=features, feature_map=feature_map, slope=slope, base=base,
                               frequencies=frequencies, max_positions=max(L, L0), check_prefix=None,
                               user_timeout=user_timeout)
    fam = spec.family
    r = fam.dim(L0)
    nparam = r if fam.kind == "relative" else r * r
    if nparam > MAX_REALIZABLE_PARAMS:
        raise InputError(f"--L {L} with {nparam} parameters is too large for the exact LP (at most "
                         f"{MAX_REALIZABLE_PARAMS} unknowns); lower --L0 or the feature dimension")
    work = realizable_work(fam.kind, r, L)
    if work > MAX_REALIZABLE_WORK or (method == "full" and nparam * L * L > 40_000_000):
        raise InputError(f"--L {L} with features of dimension {r} is beyond the exact check's budget (about {work:.1e} "
                         f"multiply-adds per check, at most {MAX_REALIZABLE_WORK:.1e}: about 10 s of one core)"
                         if method != "full" else f"--L {L} with {nparam} parameters is too large for the full LP")
    if target is not None:
        for ell in (range(2, L + 1) if not tsk.length_stable or L <= 512 else sorted({2, 3, L // 2, L - 1, L})):
            _check_task_at(tsk, ell)
    _require_rows(tsk, L, "--L")
    import time as _time

    from verify.solver import realizable as R

    deadline = None if budget_s is None else _time.perf_counter() + budget_s
    try:
        dec = R.decide_lengths(fam, tsk, L, L0, G, timeout_ms, fixed=spec.fixed_param, method=method,
                               deadline=deadline, progress=progress)
    except ValueError as e:
        raise InputError(str(e)) from None
    shown = R.fraction_strings(a.min_margin for a in dec.answers)
    per = [{"L": a.L, "realizable": a.realizable, "witness": a.witness, "certificate": a.certificate,
            "min_margin_exact": m, **({"note": a.note} if a.note else {})} for a, m in zip(dec.answers, shown)]
    overall: bool | None
    if any(a.realizable is None for a in dec.answers):
        overall = None
    else:
        overall = all(a.realizable for a in dec.answers)
    doc = _realizable_doc(spec, tsk, L, G, overall, per, dec)
    files: list[str] = []
    if certificates is not None and dec.certificates:
        files = _write_certificates(certificates, doc, dec)
    doc["certificate_files"] = files
    return RealizableResult(overall, per, doc, files, fam, tsk, L0)


# ----------------------------------------------------------------------------- the designer's question

#: the tasks of ``--tasks all``
DESIGNER_TASKS = ("prev", "skip-3", "attend-first", "copy", "reverse")


def designer_lengths(L0: int, up_to: int) -> list[int]:
    """The lengths the fitted head is measured at: 2 L0, 4 L0, ... below ``up_to``, then ``up_to``."""
    out, ell = [], 2 * L0
    while ell < up_to:
        out.append(ell)
        ell *= 2
    return out + [up_to]


def designer(pe: str | None = None, tasks: Sequence[str] = DESIGNER_TASKS, L0: int = 20, up_to: int = 4096, *,
             features: str | None = None, feature_map: str | Callable | None = None, slope: Any = None,
             base: Any = None, frequencies: int | None = None, seed: int = 0, lr: float | None = None,
             steps: int = 400, weight_decay: float = 1e-4, selection: str = "ce",
             min_margin: float = DEFAULT_MIN_MARGIN, min_mass: float = DEFAULT_MIN_MASS, timeout_s: float = 20.0,
             budget_s: float | None = None, user_timeout: float = 60.0) -> Any:
    """A PE designer's question, per task: up to what length does it length-generalize?  (pr26)

    Two answers per task, the paper's own distinction:

    * selection: the head the fit picks at L0 (``selection``: pr26's cross-entropy fit, or min-norm),
      measured at the lengths :func:`designer_lengths` (alpha_L, its smallest new-row margin, the softmax
      mass on the target).  For a target independent of L (prev, skip-K, attend-first) a row's decision
      does not depend on L, so the first failing row i at ``up_to`` gives "alpha_L = 1 at every L <= i";
      for copy and reverse only the lengths measured are claimed.
    * existence: is there any head with these features that does the task at every length <= L?
      (:func:`realizable`: exact, a re-checked head or a Farkas certificate.)

    Returns a generator of one dict per event, as it is decided (every input is validated before it is
    returned): ``{"event": "existence", ...}`` (per task),
    ``{"event": "length", ...}`` (per task and measured length), ``{"event": "task", ...}`` (the task's
    summary), then ``{"event": "done", ...}``.  With ``budget_s`` every length not decided when it runs
    out is reported inconclusive (never a pass).

    Raises:
        InputError: bad input (before any work).
    """
    import time

    t0 = time.perf_counter()
    deadline = None if budget_s is None else t0 + budget_s
    if isinstance(up_to, bool) or not isinstance(up_to, int) or not 2 * L0 <= up_to <= MAX_REALIZABLE_L:
        raise InputError(f"--up-to must be an integer in {2 * L0}..{MAX_REALIZABLE_L} (at least 2 L0), got {up_to}")
    kw: dict[str, Any] = dict(features=features, feature_map=feature_map, slope=slope, base=base,
                              frequencies=frequencies, user_timeout=user_timeout)
    fit_kw: dict[str, Any] = dict(seed=seed, lr=lr, steps=steps, weight_decay=weight_decay, selection=selection,
                                  min_margin=min_margin, min_mass=min_mass)
    # an expression map resolved once (parse, evaluator cross-check, finite up to up_to) for every task and
    # length: one family object, so its exact table is computed once for the run
    shared = None
    if features is not None:
        shared = resolve_pe(pe, features=features, feature_map=feature_map, slope=slope, base=base,
                            frequencies=frequencies, max_positions=up_to, check_prefix=None, user_timeout=user_timeout)
    preps = {t: prepare(pe, t, L0, up_to, **kw, **fit_kw, _spec=shared) for t in tasks}  # refused before any work
    for prep in preps.values():
        fam = prep["spec"].family
        r = fam.dim(L0)
        if realizable_work(fam.kind, r, up_to) > MAX_REALIZABLE_WORK:
            raise InputError(f"--up-to {up_to} with features of dimension {r} is beyond the exact check's budget")
    return _frozen_steps(_designer_events(pe, list(tasks), L0, up_to, preps, kw, fit_kw, selection, timeout_s, t0,
                                          deadline, shared))


def _frozen_steps(events: Any) -> Any:
    """``events`` with each step run inside :func:`verify.solver.realizable.gc_frozen` (the process's older
    objects out of the cyclic collector's walks while the step allocates; not while the caller prints) and
    inside one feature cache for the whole question (:func:`verify.numeric.pr26.feature_cache`: the float
    features of the shared map computed once for every task and length, not per alpha_L)."""
    from verify.numeric.pr26 import feature_cache
    from verify.solver.realizable import gc_frozen

    store: dict = {}
    while True:
        with gc_frozen(), feature_cache(store):
            try:
                ev = next(events)
            except StopIteration:
                return
        yield ev


def _designer_events(pe: str | None, tasks: list[str], L0: int, up_to: int, preps: dict, kw: dict, fit_kw: dict,
                     selection: str, timeout_s: float, t0: float, deadline: float | None, shared: Any = None) -> Any:
    """The events of :func:`designer` (its inputs already validated), one at a time as decided.  ``shared``:
    the expression map resolved once for every task and length (None: resolved per call)."""
    import time

    lengths = designer_lengths(L0, up_to)
    # one feature map for every task's realizability (its exact feature table is then computed once)
    spec = shared if shared is not None else resolve_pe(
        pe, features=kw["features"], feature_map=kw["feature_map"], slope=kw["slope"], base=kw["base"],
        frequencies=kw["frequencies"], max_positions=max(up_to, L0), check_prefix=None,
        user_timeout=kw["user_timeout"])

    def left() -> float | None:
        return None if deadline is None else deadline - time.perf_counter()

    for k, t in enumerate(tasks):
        tsk = preps[t]["task"]
        # ---- existence
        ex: dict[str, Any] = {"event": "existence", "task": t, "up_to": up_to}
        rem = left()
        if rem is not None and rem <= 0:
            ex.update(realizable_up_to=None, first_unrealizable=None, answer=None, why="--budget ran out")
        else:
            try:
                rz = realizable(pe, t, up_to, **kw, L0=L0, timeout_s=timeout_s, budget_s=rem, _spec=spec)
                per = {p["L"]: p["realizable"] for p in rz.per_length}
                good = 1
                while good + 1 in per and per[good + 1] is True:
                    good += 1
                ex.update(answer=rz.realizable, realizable_up_to=good if good >= 2 else None,
                          first_unrealizable=rz.doc["first_unrealizable_length"],
                          why=None if rz.realizable is not None else next(
                              (p.get("note") for p in rz.per_length if p["realizable"] is None), "undecided"),
                          witness_min_margin=(rz.doc["witnesses"].get("W1") or {}).get("min_margin_by_length", {}).get(
                              str(good)), per_length=per)
            except InputError as e:
                ex.update(answer=None, realizable_up_to=None, first_unrealizable=None, why=str(e), per_length={})
        yield {k2: v for k2, v in ex.items() if k2 != "per_length"}
        # ---- selection
        head_param = None
        head_loss: float | None = None  # the cross-entropy at L0 of head_param (the same at every length)
        sel: list[dict] = []
        fail_row: int | None = None
        for ell in lengths:
            rem = left()
            row: dict[str, Any] = {"event": "length", "task": t, "L": ell,
                                   "existence": ex.get("per_length", {}).get(ell)}
            if rem is not None and rem <= 0:
                row.update(alpha=None, outcome=Status.INCONCLUSIVE, why="--budget ran out")
                sel.append(row)
                yield row
                continue
            prep = prepare(pe, t, L0, ell, **kw, **fit_kw, _spec=shared)
            if head_param is not None:
                prep["param"], prep["param_loss"] = head_param, head_loss
            try:
                res = alpha(pe, t, L0, ell, **kw, **fit_kw, _prepared=prep)
            except Inconclusive as e:
                row.update(alpha=None, outcome=Status.INCONCLUSIVE, why=e.message)
                sel.append(row)
                yield row
                break
            if prep["param"] is head_param is not None and head_loss is None and res.head is not None:
                head_loss = res.head.loss_first
            if head_param is None and res.head is not None and prep["spec"].fixed_param is None:
                from verify.numeric import pr26 as num

                head_param = (num._exact_param(res.head.param), res.head.param,
                              f"the head fitted at L0 = {L0} ({selection}), reused at every length")
            d = res.doc
            row.update(alpha=res.alpha, outcome="measured", passed=d["passed_rows"], new_rows=d["new_rows"],
                       min_margin=res.min_margin, min_margin_exact=res.min_margin_exact,
                       mass_min=res.target_mass_min, weak=res.weak, weak_reasons=d["weak_reasons"],
                       first_failing_row=(d["failing_rows"][0]["row_i"] if d["failing_rows"] else None),
                       g0=d["min_margin_old_rows"])
            if fail_row is None and row["first_failing_row"] is not None:
                fail_row = row["first_failing_row"]
            sel.append(row)
            yield row
        yield _designer_summary(t, tsk, L0, up_to, ex, sel, fail_row, selection)
        el = time.perf_counter() - t0
        if k + 1 < len(tasks):
            yield {"event": "estimate", "elapsed_s": round(el, 1),
                   "remaining_s_estimate": round(el / (k + 1) * (len(tasks) - k - 1), 1)}
    yield {"event": "done", "seconds": round(time.perf_counter() - t0, 2)}


def _designer_summary(t: str, tsk: Any, L0: int, up_to: int, ex: dict, sel: list[dict], fail_row: int | None,
                      selection: str) -> dict:
    """One task's answer: the largest length the fitted head generalizes to (selection), the largest some
    head does (existence), in words that state the bound checked, and why the two differ."""
    measured = [r for r in sel if r["outcome"] == "measured"]
    undecided = any(r["outcome"] != "measured" for r in sel)
    g0_bad = bool(measured) and not (measured[0]["g0"] > 0)
    if tsk.length_stable and measured and not undecided:
        # a row's target does not move with L: the first failing row at up_to bounds every length
        sel_upto: int | None = L0 if g0_bad else (fail_row if fail_row is not None else up_to)
        sel_words = (f"the fitted head does not solve {t} at L0 = {L0}" if g0_bad else
                     f"alpha_L = 1 at every L <= {sel_upto}" + ("" if fail_row is None else
                                                               f" (row {fail_row + 1}, 1-indexed, fails)"))
    else:
        ok = [r["L"] for r in measured]
        run = []
        for r in sel:
            if r["outcome"] != "measured" or r["alpha"] != 1.0:
                break
            run.append(r["L"])
        sel_upto = run[-1] if run else None
        sel_words = (f"alpha_L = 1 at the measured lengths L = {', '.join(map(str, run))}" if run else
                     f"alpha_L < 1 already at L = {ok[0]}" if ok else "not measured")
        if undecided:
            sel_words += " (the rest inconclusive)"
    weak = [r["L"] for r in measured if r["weak"]]
    eu, ans = ex.get("realizable_up_to"), ex.get("answer")
    if ans is True:
        ex_words = f"some head realizes {t} at every L <= {up_to}"
    elif ans is False:
        ex_words = (f"some head realizes {t} at every L <= {eu}; none at any L from {ex['first_unrealizable']} to "
                    f"{up_to} (Farkas certificate)" if eu else f"no head realizes {t} at any L from "
                    f"{ex['first_unrealizable']} to {up_to} (Farkas certificate)")
    else:
        ex_words = f"inconclusive ({ex.get('why')})"
    if ans is None or sel_upto is None:
        why = ""
    elif (eu or 0) > sel_upto:
        why = (f"selection vs existence: a head that works up to L = {eu} exists (existence, what `verify "
               f"realizable` decides), but the head the {selection} fit selects at L0 = {L0} is another one of the "
               f"heads that fit L0, and it stops at L = {sel_upto} (selection, what alpha_L measures): pr26's "
               "distinction between what the features can represent and what training picks")
    else:
        why = ("selection and existence agree: the fitted head goes as far as any head does"
               + (f" (margins/mass weak at L = {', '.join(map(str, weak))})" if weak else ""))
    return {"event": "task", "task": t, "selection_up_to": sel_upto, "selection": sel_words,
            "existence_up_to": up_to if ans is True else eu, "existence": ex_words, "weak_at": weak,
            "explanation": why}


def realizable_work(kind: str, r: int, L: int) -> int:
    """Multiply-adds of one exact check of a parameter at length L (:func:`verify.solver.realizable.exact_margins`):
    about L^2 r / 2 for an absolute family of rank r, L r for a relative one."""
    return L * r if kind == "relative" else L * L * max(r, 1) // 2


def _realizable_checked(L: Any, L0: Any, margin: Any) -> Fraction:
    """Check the lengths and the margin of :func:`realizable`; the margin as a Fraction.

    Raises:
        InputError: a length out of range, a margin that is not a positive rational.
    """
    from verify.core.inputs import clip

    if isinstance(L, bool) or not isinstance(L, int) or not 2 <= L <= MAX_REALIZABLE_L:
        raise InputError(f"--L must be an integer in 2..{MAX_REALIZABLE_L}, got {clip(L)}")
    if isinstance(L0, bool) or not isinstance(L0, int) or not 2 <= L0 <= 256:
        raise InputError(f"--L0 must be an integer in 2..256, got {clip(L0)}")
    G = _rational(margin, "--margin")
    if not G > 0:
        raise InputError(f"--margin must be positive (a tie is a failure), got {G}")
    return G


def _realizable_doc(spec: Any, tsk: Any, L: int, G: Fraction, overall: bool | None, per: list[dict],
                    dec: Any) -> dict[str, Any]:
    """The JSON document of :func:`realizable` (without the certificate files)."""
    fam = spec.family
    return {
        "schema": REALIZABLE_SCHEMA, "pe": fam.name, "pe_source": spec.source, "kind": fam.kind, "task": tsk.name,
        "task_description": tsk.description, "L": L, "margin": str(G), "realizable": overall,
        "question": (f"one parameter with margin >= {G} on every query row of every length 2..ell, for each ell <= {L} "
                     "(strict argmax: ties fail; the constraints are homogeneous, so any margin > 0 gives the same "
                     "answer)" if spec.fixed_param is None else
                     f"the fixed head (no trained parameter) has margin >= {G} on every query row of every length <= ell"),
        "per_length": per,
        "first_unrealizable_length": next((a.L for a in dec.answers if a.realizable is False), None),
        "witnesses": dec.witnesses,
        "certificates": {k: {**{kk: vv for kk, vv in v.items() if kk != "certificate"},
                             "checked": v["certificate"].get("checked"), "check": v["certificate"].get("check"),
                             "certificate": v["certificate"]} for k, v in dec.certificates.items()},
        "arithmetic": spec.note,
        "solver": ("cutting planes: the LP on the violated rows only, each round's parameter a float64 LP proposal "
                   "(HiGHS) kept only when its exact rationals meet every held row, else z3 linear real "
                   "arithmetic (exact rationals, fresh context, seed 0); the parameter re-checked on every row in "
                   "exact arithmetic; an infeasible subset refuted by a Farkas certificate, its multipliers solved "
                   "exactly on the float LP's dual support or found by z3, checked without a solver either way"
                   if dec.method == "cutting" else
                   "z3 linear real arithmetic (exact rationals), fresh context, seed 0, every row"),
        "obligations": [{k: v for k, v in ob.items() if k != "farkas_certificate"} for ob in dec.obligations],
        "indexing": "rows and keys 0-indexed; parameter W row-major (absolute) or w (relative)",
    }


def _write_certificates(directory: str | Path, doc: dict, dec: Any) -> list[str]:
    """One verify-certificate/1 file per certificate, then the manifest (``verify recheck DIR`` reads them)."""
    import hashlib
    import json

    from verify.core.inputs import atomic_write_text
    from verify.reports.certificates import FORMAT, write_manifest
    from verify.solver.common import SOLVER_SEED, SolverAnswer

    out = Path(directory)
    try:
        out.mkdir(exist_ok=True)
    except OSError as e:
        raise InputError(f"--certificates {directory}: cannot create the directory ({e.strerror})") from None
    params = {"pe": doc["pe_source"], "task": doc["task"], "L": doc["L"], "margin": doc["margin"]}
    rid = "realizable:" + json.dumps(params, sort_keys=True)
    stem = "realizable__" + hashlib.sha256(rid.encode()).hexdigest()[:12]
    written = []
    for k, c in dec.certificates.items():
        cert = c["certificate"]
        body = {"format": FORMAT, "claim": "realizable", "variant": "", "run_id": rid, "params": params,
                "obligation": c["obligation"], "answer": SolverAnswer.UNSAT, "solvers": {"z3": _z3_version()},
                "cvc5_answer": "not run: the answer carries a Farkas certificate", "seed": SOLVER_SEED,
                "encoding_sha256": cert["encoding_sha256"], "certificate": {"kind": cert["kind"], "cases": cert["cases"]}}
        path = out / f"{stem}__{k}.json"
        atomic_write_text(path, json.dumps(body, indent=1, sort_keys=True), "--certificates")
        written.append((path, rid))
    write_manifest(out, written)
    return [str(p) for p, _ in written]


def _z3_version() -> str:
    import z3

    return z3.get_version_string()


__all__ = ["alpha", "realizable", "identifiability", "designer", "designer_lengths", "DESIGNER_TASKS",
           "prepare", "load_param", "resolve_pe", "resolve_task",
           "AlphaResult", "RealizableResult", "Inconclusive", "DEFAULT_MIN_MARGIN", "DEFAULT_MIN_MASS"]


def realizable_plots(plt: Any, directory: str | Path, res: Any) -> list[str]:
    """``verify realizable --plots``: the witness kernel with the target offset and the margins per row
    (:func:`verify.proofs.pr26.plots.realizable_plots`), reached through the paper's API."""
    from verify.proofs.pr26.plots import realizable_plots as draw

    return draw(plt, directory, res)
