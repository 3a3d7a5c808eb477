"""Public API for kvshift24 on the user's own inputs (re-exported lazily by :mod:`verify.api`).

* :func:`kvshift_sequence`: IH, KV-shift attention and their difference on a given token sequence
  (orthonormal symbols) or embedding file, exactly, under a positional-encoding placement.
* :func:`decode_check`: incremental decoding with a stated KV-cache policy against the full pass
  (the ``kvshift24:decode`` claim, all its layers).
* :func:`read_input`: the sequence / embeddings reader the claims' layers and the CLI use.

Source: Xu et al., "KV Shifting Attention Enhances Language Modeling", arXiv 2411.19574 v2:
Definition 1 (IH), Sec. 2.2 Eqs. 4-6, Appendix B (Theorem 2's parameters), Appendix F (reference code).
"""

from __future__ import annotations

import io
import math
from fractions import Fraction
from typing import Any

from verify.core.model import InputError

#: largest embeddings file read, bytes
MAX_EMBEDDINGS_BYTES = 8 * 2**20
#: largest embedding width accepted
MAX_WIDTH = 4096


def read_input(sequence: str, embeddings: str = "", flag: str = "--sequence") -> tuple[tuple[str, ...], list | None]:
    """Parse a token sequence and, optionally, read its embeddings.

    Args:
        sequence: whitespace-separated symbols, e.g. ``"A B C A"`` (3..12 tokens, at most 6 distinct
            symbols of 1-16 ASCII letters, digits, '_' or '-').
        embeddings: path of a ``.npy`` (numpy, no pickles) or ``.pt`` (``torch.load(weights_only=True)``)
            file holding a float array of shape (V, d): one row per distinct symbol in order of first
            appearance, finite, d <= 4096, file <= 8 MiB; '' for orthonormal symbols.
        flag: the option name used in messages.

    Returns:
        (symbols, rows) with rows the per-position embeddings as exact Fractions (each float converted
        exactly), or None without a file.

    Raises:
        InputError: one line naming the problem (the CLI exits 2).
    """
    from verify.constructions.kvshift24_pe import parse_sequence, symbols_in_order

    try:
        x = parse_sequence(sequence)
    except ValueError as e:
        raise InputError(f"{flag} {e}") from None
    if not embeddings:
        return x, None
    from verify.safeio import UnsafeInput, read_regular_file

    name = embeddings.lower()
    if not (name.endswith(".npy") or name.endswith(".pt")):
        raise InputError("--embeddings must name a .npy or .pt file")
    try:
        data = read_regular_file(embeddings, limit=MAX_EMBEDDINGS_BYTES)
    except UnsafeInput as e:
        raise InputError(f"--embeddings: {e}") from None
    try:
        if name.endswith(".npy"):
            import numpy as np

            arr = np.load(io.BytesIO(data), allow_pickle=False)
            if arr.dtype.kind not in "fiu":
                raise ValueError(f"dtype {arr.dtype} is not numeric")
            rows = arr.astype("float64").tolist()
            shape = tuple(arr.shape)
        else:
            import torch

            t = torch.load(io.BytesIO(data), weights_only=True, map_location="cpu")
            if not isinstance(t, torch.Tensor):
                raise ValueError(f"holds a {type(t).__name__}, not one tensor")
            if t.is_complex() or not (t.is_floating_point() or t.dtype in (torch.int32, torch.int64)):
                raise ValueError(f"dtype {t.dtype} is not real")
            shape = tuple(t.shape)
            rows = t.to(torch.float64).tolist()
    except InputError:
        raise
    except Exception as e:  # noqa: BLE001 - any reader failure is bad input
        raise InputError(f"--embeddings cannot be read: {str(e).splitlines()[0][:120] if str(e) else type(e).__name__}") from None
    V = len(symbols_in_order(x))
    if len(shape) != 2 or shape[0] != V or not 1 <= shape[1] <= MAX_WIDTH:
        raise InputError(f"--embeddings must have shape (V, d) = ({V}, d) with 1 <= d <= {MAX_WIDTH} (one row per "
                         f"distinct symbol, in order of first appearance), got {shape}")
    if not all(math.isfinite(v) for r in rows for v in r):
        raise InputError("--embeddings holds a NaN or infinite value")
    by_sym = dict(zip(symbols_in_order(x), rows))
    return x, [[Fraction(v) for v in by_sym[s]] for s in x]


def kvshift_sequence(sequence: str, *, fix: str = "mask+scale", m: Any = Fraction(1, 2), sigma: Any = 2,
                     rope: str = "none", alibi: str = "yes", embeddings: str = "") -> dict[str, Any]:
    """IH and KV-shift attention at the last position of the user's input, and their difference, exactly.

    Args:
        sequence: symbols, e.g. ``"A B C A"`` (see :func:`read_input`); orthonormal embeddings, one
            symbol per RoPE plane (width 2V), unless ``embeddings`` is given.
        fix: Theorem 2 variant: ``none`` (as written), ``mask`` or ``mask+scale``.
        m: ALiBi slope (rational >= 0; a string such as ``"1/2"`` is accepted).
        sigma: score scale sqrt(D) (rational > 0).
        rope: ``none``, ``before-shift`` or ``after-shift`` (Appendix F's code rotates the shifted key).
        alibi: ``yes`` (distance to the slot s, Eq. 7 / Appendix B), ``before-shift`` (distance to the
            shifted key's source position s - 1) or ``no`` (Eq. 6 as printed).
        embeddings: a .npy/.pt file of shape (V, d) (floats converted to rationals exactly).

    Returns:
        dict: ``IH``, ``KVSA``, ``difference`` (symbol -> exact expression text, or per-coordinate
        values with embeddings), ``max_abs_difference`` (float), ``nonzero`` (bool; the rule is in
        ``rule``), ``input_class``, ``text``.

    Raises:
        InputError: a bad sequence, file or value.
    """
    from verify.constructions.kvshift24 import FIXES, variant
    from verify.constructions.kvshift24_pe import ROPE_PLACEMENTS
    from verify.symbolic.kvshift24_pe import theorem2_on_input

    if fix not in FIXES:
        raise InputError(f"fix must be one of {', '.join(FIXES)}, got {fix!r}")
    if rope not in ROPE_PLACEMENTS:
        raise InputError(f"rope must be one of {', '.join(ROPE_PLACEMENTS)}, got {rope!r}")
    if alibi not in ALIBI_CHOICES:
        raise InputError(f"alibi must be one of {', '.join(ALIBI_CHOICES)}, got {alibi!r}")
    mm, sg = _rational(m, "m", 0), _rational(sigma, "sigma", None)
    x, X = read_input(sequence, embeddings)
    if X is not None and rope != "none" and len(X[0]) % 2:
        raise InputError("--rope needs an even embedding width (RoPE rotates coordinate pairs)")
    return theorem2_on_input(x, variant(fix, alibi=alibi != "no"), mm, sg, pe_for(rope, alibi), X)


#: ``--alibi`` choices of kvshift24:theorem2 (yes = the slot distance t - s of Eq. 7 / Appendix B)
ALIBI_CHOICES = ("yes", "no", "before-shift")


def pe_for(rope: str, alibi: str):
    """The :class:`~verify.constructions.kvshift24_pe.PE` of a ``--rope`` and ``--alibi`` choice."""
    from verify.constructions.kvshift24_pe import PE

    return PE(rope=rope, alibi=alibi != "no", alibi_placement="before-shift" if alibi == "before-shift" else "after-shift")


def _rational(v: Any, name: str, minimum: Any) -> Fraction:
    try:
        f = Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        raise InputError(f"{name} must be a rational number, got {v!r}") from None
    if minimum is not None and f < minimum:
        raise InputError(f"{name} must be >= {minimum}, got {v}")
    if minimum is None and f <= 0:
        raise InputError(f"{name} must be > 0, got {v}")
    return f


def decode_check(sequence: str = "A B C B", *, prefill: int = 2, cache: str = "raw-key", offset: str = "correct",
                 distance: str = "correct", fix: str = "none", rope: str = "after-shift", m: Any = Fraction(1, 2),
                 sigma: Any = 2, seed: int = 0, layers: tuple[str, ...] = ("symbolic", "solver", "numeric"),
                 **options: Any) -> Any:
    """Incremental decoding with a stated KV-cache policy against the full forward pass (``kvshift24:decode``).

    Args:
        sequence: the input shown exactly (symbols; see :func:`read_input`).
        prefill: tokens of the first call k (1 <= k < number of tokens); then one token per call.
        cache: ``raw-key`` (correct), ``mixed-key`` (Appendix F's inference code: the shift state after
            the prefill is the shifted key/value), ``unwritten-first`` (the first one-token call leaves
            the state unwritten).
        offset: RoPE position of a decoded token: ``correct`` or ``zero`` (the claim's ``--rope-offset``).
        distance: ALiBi query position during decoding: ``correct`` or ``off-by-one`` (t - 1; the claim's
            ``--alibi-distance``).
        fix: Theorem 2 variant of the layer (``none``, ``mask``, ``mask+scale``).
        rope: ``none``, ``before-shift``, ``after-shift`` (Appendix F).
        m, sigma: ALiBi slope and score scale.
        seed: seed of the numeric layer's random inputs.
        layers: the layers to run.
        **options: other options of the claim (``L``, ``d``, ``Lmax``, ``embeddings``).

    Returns:
        :class:`verify.core.model.ClaimResult`; ``.verdict`` is HOLDS when decoding equals the full
        pass, FAILS when an input separates them (the witness is in the symbolic evidence).

    Raises:
        InputError: bad options (one line).
    """
    from verify.api import check_claim

    options = {"rope-offset": offset, "alibi-distance": distance, **options}
    return check_claim("kvshift24:decode", seed=seed, layers=layers, sequence=sequence, prefill=prefill, cache=cache,
                       fix=fix, rope=rope, m=m, sigma=sigma, **options)
