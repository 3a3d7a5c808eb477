"""The documented Python API: the functions the command line calls, for use from code and notebooks.

Each function validates its inputs the way the CLI does (raising
:class:`verify.core.model.InputError` with the one-line message the CLI would print) and returns
plain result objects whose ``to_dict()`` is the JSON the CLI writes.  Heavy modules (sympy, z3,
torch) are imported on first use only.

============================  ==================================================================
:func:`check_claim`           run one registered claim variant: ``check_claim("ws24:theorem2",
                              orientation="transposed")`` -> ``ClaimResult``
:func:`alpha`                 pr26's alpha_L for a positional feature map (built-in family, sympy
                              expressions in the position i, or a Python callable), a task and lengths
:func:`realizable`            can any head with these features do this task at every length <= N?
:func:`identifiability`       rank of Phi_L0 and the range of alpha_L over W with equal L0 logits
:func:`kvshift_sequence`      IH and KV-shift attention on the user's own token sequence (exact)
:func:`decode_check`          incremental decoding with a stated KV-cache policy against the full pass
============================  ==================================================================
"""

from __future__ import annotations

from typing import Any

from verify.evidence import DEFAULT_TIMEOUT_S, Layer

# the names after check_claim are provided lazily by __getattr__ (below)
__all__ = ["check_claim", "alpha", "realizable", "identifiability", "kvshift_sequence", "decode_check"]  # noqa: F822

#: public name -> the paper whose ``Paper.api`` provides it (the paper is loaded through the registry on first use)
_PAPER_API = {
    "alpha": "pr26",
    "realizable": "pr26",
    "identifiability": "pr26",
    "kvshift_sequence": "kvshift24",
    "decode_check": "kvshift24",
}


def check_claim(claim: str, *, seed: int = 0, timeout_s: float = DEFAULT_TIMEOUT_S, full: bool = False,
                layers: tuple[str, ...] = (Layer.SYMBOLIC, Layer.SOLVER, Layer.NUMERIC), **options: Any) -> Any:
    """Run one claim variant, as ``verify CLAIM --OPTION VALUE ...`` does.

    Args:
        claim: ``paper:name`` or a short name (``theorem2``; options disambiguate).
        seed: master seed (every random choice derives from it).
        timeout_s: per-solver-call budget in seconds.
        full: the heavier ``--full`` sizes.
        layers: the layers to run; the others are recorded as skipped.
        **options: the claim's options by name, as strings or numbers (``orientation="transposed"``,
            ``d=64``).

    Returns:
        :class:`verify.core.model.ClaimResult` (``.verdict``, ``.reason``, ``.evidence``).

    Raises:
        InputError: unknown claim or option, bad value, a claim with no check in ``layers``.
    """
    from verify.core import registry
    from verify.core.inputs import check_seed, check_timeout
    from verify.core.model import InputError, run_claim
    from verify.evidence import Context, profile_for

    claim_obj = registry.resolve(claim, [k for k, v in options.items() if v is not None])
    params = claim_obj.parse_params({k: (None if v is None else str(v)) for k, v in options.items()})
    if not claim_obj.checked_layers(layers):
        raise InputError(f"{claim_obj.id} has no check in the layers {', '.join(layers)}")
    ctx = Context(seed=check_seed(seed), timeout_ms=check_timeout(timeout_s), profile=profile_for(full))
    return run_claim(claim_obj, params, ctx, layers)


def __getattr__(name: str) -> Any:
    if name in _PAPER_API:
        from verify.core import registry

        return getattr(registry.paper(_PAPER_API[name]).api, name)
    raise AttributeError(f"module 'verify.api' has no attribute {name!r}")
