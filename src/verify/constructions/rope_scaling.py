"""RoPE frequency scaling rules (linear, dynamic NTK, YaRN, Llama 3) as closed forms, and their cross-check.

A RoPE head of rotary dimension ``dim`` rotates pair k (k = 0..dim/2-1) by the angle ``n * inv_freq[k]``
at position n, with the plain inverse frequencies ``inv_freq[k] = base^(-2k/dim)``.  pr26's ``rope``
family is this map with ``dim = 2F`` (F = --frequencies, 16 by default: theta_k = base^(-k/F)).  A
scaling rule replaces the inverse frequencies (and YaRN also scales cos and sin, hence the logits):

* ``linear`` (position interpolation): ``inv_freq[k] / factor``, i.e. positions divided by the factor
  (Chen et al., "Extending Context Window of Large Language Models via Positional Interpolation",
  arXiv 2306.15595; transformers' ``_compute_linear_scaling_rope_parameters``);
* ``dynamic`` (dynamic NTK-aware scaling, as implemented in transformers'
  ``_compute_dynamic_ntk_parameters``, credited there to /u/bloc97 and /u/emozilla): at sequence length
  L > L_orig the base becomes ``base * ((factor * L / L_orig) - (factor - 1)) ** (dim / (dim - 2))``;
  at L <= L_orig the frequencies are the plain ones.  YaRN's paper describes the rule in its Sec. 3.3
  ("Dynamic NTK");
* ``yarn`` (Peng et al., "YaRN: Efficient Context Window Extension of Large Language Models",
  arXiv 2309.00071): "NTK-by-parts" (Sec. 3.2) interpolates pair k by the ramp
  ``gamma_k = clamp((k - low) / (high - low), 0, 1)`` between the correction dimensions of beta_fast
  and beta_slow rotations over L_orig (``low`` floored, ``high`` ceiled, the library's ``truncate``
  default): ``inv_freq[k] * (1 - gamma_k) + inv_freq[k] / factor * gamma_k``; and YaRN (Sec. 3.4)
  scales the attention by ``sqrt(1/t) = 0.1 ln(factor) + 1`` (the ``attention_factor``, 1 for factor
  <= 1), applied to cos and sin of both query and key, so the logits are multiplied by its square;
* ``llama3`` (the rule of the Llama 3.1 release, meta-llama's ``apply_scaling``; transformers'
  ``_compute_llama3_parameters``): with wavelength ``2 pi / inv_freq[k]``, frequencies of wavelength
  below ``L_orig / high_freq_factor`` are kept, those above ``L_orig / low_freq_factor`` divided by the
  factor, and those between smoothly interpolated: ``(1 - s) inv_freq / factor + s inv_freq`` with
  ``s = (L_orig / wavelength - low_freq_factor) / (high_freq_factor - low_freq_factor)``.

The closed forms are float64 (:func:`inv_freq`).  :func:`cross_check` compares them with the installed
transformers library's ``ROPE_INIT_FUNCTIONS``, which compute the frequencies in float32 (``dtype=torch.float``)
and the attention factor in float64: the frequencies agree to :data:`FREQ_RTOL`, the attention factor to
:data:`FACTOR_RTOL`.  A disagreement is returned as a finding (rule, index, both values), never raised.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from verify.faults import seam

RULES = ("linear", "dynamic", "yarn", "llama3")
#: the original (pre-training) context length L_orig when --original-max-position is not given
DEFAULT_ORIGINAL_MAX = 4096
#: YaRN's ramp boundaries in rotations (the paper's alpha = 1, beta = 32 for Llama; transformers' defaults)
DEFAULT_BETA_FAST = 32.0
DEFAULT_BETA_SLOW = 1.0
#: Llama 3.1's low/high frequency factors (the release's values; transformers has no defaults for them)
DEFAULT_LOW_FREQ_FACTOR = 1.0
DEFAULT_HIGH_FREQ_FACTOR = 4.0
#: the largest scaling factor accepted
MAX_FACTOR = 1e6
#: the largest --original-max-position accepted
MAX_ORIGINAL = 1 << 24
#: relative agreement of our float64 frequencies with the library's float32 ones: the library rounds the
#: exponent 2k/dim to float32 before base ** (.), a relative error up to ln(base) 2^-24 (about 1.6e-6 for
#: base 1e12), plus a few float32 roundings after it
FREQ_RTOL = 1e-5
#: relative agreement of the attention factor (float64 on both sides)
FACTOR_RTOL = 1e-12


class ScalingError(ValueError):
    """A bad scaling option (the message is the one-line error the command line prints)."""


@dataclass(frozen=True)
class RopeScaling:
    """One scaling rule with its parameters (validated by :func:`make`).

    Attributes:
        rule: ``linear``, ``dynamic``, ``yarn`` or ``llama3``.
        factor: the scaling factor (>= 1, as transformers' configuration validation requires).
        original_max: L_orig, the pre-training context (dynamic: ``max_position_embeddings``; yarn/llama3:
            ``original_max_position_embeddings``); unused by ``linear``.
        beta_fast, beta_slow: YaRN's ramp boundaries (rotations over L_orig).
        low_freq_factor, high_freq_factor: Llama 3's wavelength boundaries L_orig / factor.
    """

    rule: str
    factor: float
    original_max: int = DEFAULT_ORIGINAL_MAX
    beta_fast: float = DEFAULT_BETA_FAST
    beta_slow: float = DEFAULT_BETA_SLOW
    low_freq_factor: float = DEFAULT_LOW_FREQ_FACTOR
    high_freq_factor: float = DEFAULT_HIGH_FREQ_FACTOR

    def parameters(self) -> dict[str, Any]:
        """The parameters that apply to the rule (for reports)."""
        out: dict[str, Any] = {"rule": self.rule, "factor": self.factor}
        if self.rule != "linear":
            out["original_max_position"] = self.original_max
        if self.rule == "yarn":
            out.update(beta_fast=self.beta_fast, beta_slow=self.beta_slow)
        if self.rule == "llama3":
            out.update(low_freq_factor=self.low_freq_factor, high_freq_factor=self.high_freq_factor)
        return out


def _number(x: Any, flag: str, low: float, high: float, low_open: bool = False) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ScalingError(f"{flag} expects a number, got {str(x)[:40]!r}")
    try:
        v = float(x)
    except ValueError:
        raise ScalingError(f"{flag} expects a number, got {str(x)[:40]!r}") from None
    ok = math.isfinite(v) and (v > low if low_open else v >= low) and v <= high
    if not ok:
        lo = f"> {low:g}" if low_open else f">= {low:g}"
        raise ScalingError(f"{flag} must be a finite number {lo} and <= {high:g}, got {str(x)[:40]}")
    return v


def make(rule: Any, factor: Any = None, original_max: Any = None, beta_fast: Any = None, beta_slow: Any = None,
         low_freq_factor: Any = None, high_freq_factor: Any = None) -> RopeScaling:
    """A validated :class:`RopeScaling` (``None`` options take the defaults).

    Raises:
        ScalingError: an unknown rule, a factor that is not a finite number in [1, MAX_FACTOR], an option of
            another rule, beta_fast <= beta_slow, high_freq_factor <= low_freq_factor (one line each).
    """
    if rule not in RULES:
        raise ScalingError(f"--rope-scaling must be one of {', '.join(RULES)}, got {str(rule)[:40]!r}")
    if factor is None:
        raise ScalingError(f"--rope-scaling {rule} needs --factor F (a number >= 1)")
    f = _number(factor, "--factor", 1.0, MAX_FACTOR)
    if original_max is not None and rule == "linear":
        raise ScalingError("--original-max-position does not apply to --rope-scaling linear")
    if (beta_fast is not None or beta_slow is not None) and rule != "yarn":
        raise ScalingError("--beta-fast and --beta-slow apply to --rope-scaling yarn only")
    if (low_freq_factor is not None or high_freq_factor is not None) and rule != "llama3":
        raise ScalingError("--low-freq-factor and --high-freq-factor apply to --rope-scaling llama3 only")
    om = DEFAULT_ORIGINAL_MAX
    if original_max is not None:
        if isinstance(original_max, bool) or not isinstance(original_max, int) or not 1 <= original_max <= MAX_ORIGINAL:
            raise ScalingError(f"--original-max-position must be an integer in 1..{MAX_ORIGINAL}, got "
                               f"{str(original_max)[:40]}")
        om = original_max
    bf = DEFAULT_BETA_FAST if beta_fast is None else _number(beta_fast, "--beta-fast", 0.0, 1e6, low_open=True)
    bs = DEFAULT_BETA_SLOW if beta_slow is None else _number(beta_slow, "--beta-slow", 0.0, 1e6, low_open=True)
    if not bf > bs:
        raise ScalingError(f"--beta-fast ({bf:g}) must exceed --beta-slow ({bs:g})")
    lo = DEFAULT_LOW_FREQ_FACTOR if low_freq_factor is None else _number(low_freq_factor, "--low-freq-factor", 0.0,
                                                                            1e6, low_open=True)
    hi = DEFAULT_HIGH_FREQ_FACTOR if high_freq_factor is None else _number(high_freq_factor, "--high-freq-factor",
                                                                             0.0, 1e6, low_open=True)
    if not hi > lo:
        raise ScalingError(f"--high-freq-factor ({hi:g}) must exceed --low-freq-factor ({lo:g})")
    return RopeScaling(rule, f, om, bf, bs, lo, hi)


def check_dim(sc: RopeScaling, dim: int) -> None:
    """Refuse a rotary dimension the rule cannot use (dynamic's exponent dim / (dim - 2) needs dim > 2).

    Raises:
        ScalingError: dynamic with dim = 2 (--frequencies 1).
    """
    if sc.rule == "dynamic" and dim <= 2:
        raise ScalingError("--rope-scaling dynamic needs --frequencies >= 2 (its exponent is dim / (dim - 2), "
                           "dim = 2 F)")


# ----------------------------------------------------------------------------- closed forms


def plain_inv_freq(base: float, dim: int) -> list[float]:
    """inv_freq[k] = base^(-2k/dim), k = 0..dim/2-1 (for base 10000, dim 32: pr26's theta_k = 10000^(-k/16))."""
    return [base ** (-(2 * k) / dim) for k in range(dim // 2)]


@seam("rope_scaling.dynamic_base")
def dynamic_base(base: float, dim: int, factor: float, seq_len: int, original_max: int) -> float:
    """Dynamic NTK's base at sequence length ``seq_len``: base * ((factor L / L_orig) - (factor - 1))^(dim/(dim-2))
    with L = max(seq_len, L_orig) (the plain base up to L_orig), as transformers' ``_compute_dynamic_ntk_parameters``."""
    L = max(seq_len, original_max)
    return base * ((factor * L / original_max) - (factor - 1)) ** (dim / (dim - 2))


def _yarn_correction_dim(rotations: float, dim: int, base: float, original_max: int) -> float:
    """The dimension index whose wavelength makes ``rotations`` turns over L_orig (YaRN Sec. 3.2's r(d) inverted)."""
    return (dim * math.log(original_max / (rotations * 2 * math.pi))) / (2 * math.log(base))


def yarn_ramp(sc: RopeScaling, base: float, dim: int) -> list[float]:
    """gamma_k in [0, 1] per pair: 0 keeps the frequency (fast, many rotations), 1 divides it by the factor."""
    low = max(math.floor(_yarn_correction_dim(sc.beta_fast, dim, base, sc.original_max)), 0)
    high = min(math.ceil(_yarn_correction_dim(sc.beta_slow, dim, base, sc.original_max)), dim - 1)
    hi = high + 0.001 if low == high else high  # the library's guard against a zero-width ramp
    return [min(max((k - low) / (hi - low), 0.0), 1.0) for k in range(dim // 2)]


@seam("rope_scaling.attention_factor")
def attention_factor(sc: RopeScaling) -> float:
    """The factor on cos and sin (so the logits scale by its square): YaRN's 0.1 ln(factor) + 1 (1 for factor <= 1,
    arXiv 2309.00071 Sec. 3.4); 1 for the other rules."""
    if sc.rule != "yarn" or sc.factor <= 1:
        return 1.0
    return 0.1 * math.log(sc.factor) + 1.0


def inv_freq(sc: RopeScaling, base: float, dim: int, seq_len: int) -> list[float]:
    """The scaled inverse frequencies (float64) of rotary dimension ``dim`` at sequence length ``seq_len``
    (only ``dynamic`` depends on it)."""
    plain = plain_inv_freq(base, dim)
    f = sc.factor
    if sc.rule == "linear":
        return [x / f for x in plain]
    if sc.rule == "dynamic":
        return plain_inv_freq(dynamic_base(base, dim, f, seq_len, sc.original_max), dim)
    if sc.rule == "yarn":
        return [x * (1 - g) + (x / f) * g for x, g in zip(plain, yarn_ramp(sc, base, dim))]
    low_wl, high_wl = sc.original_max / sc.low_freq_factor, sc.original_max / sc.high_freq_factor
    out = []
    for x in plain:
        wl = 2 * math.pi / x
        if wl < high_wl:
            out.append(x)
        elif wl > low_wl:
            out.append(x / f)
        else:
            s = (sc.original_max / wl - sc.low_freq_factor) / (sc.high_freq_factor - sc.low_freq_factor)
            out.append((1 - s) * x / f + s * x)
    return out


# ----------------------------------------------------------------------------- the feature map


def scaled_rope_family(sc: RopeScaling, base: Fraction | int = 10000, frequencies: int = 16,
                       seq_len: int = 64) -> Any:
    """pr26's ``rope`` features with the scaled frequencies: psi(d) = a^2 [cos(d w_k), sin(d w_k)]_k, w_k the
    rule's inverse frequencies at ``seq_len`` (:func:`inv_freq`, dim = 2 F) taken as the exact rationals of
    their float64 values, a the attention factor (YaRN; 1 otherwise), a^2 rounded to a multiple of
    2^-32.

    The head is fitted at L0 and evaluated at L with this one map: the frequencies a real implementation
    uses for every position of a pass of length ``seq_len`` (dynamic: computed at that length, also for
    the L0 rows the head is fitted on; the other rules do not depend on it).

    Returns:
        (:class:`~verify.constructions.features.FeatureSpec`, the frequencies, the attention factor).

    Raises:
        ScalingError: :func:`check_dim`.
        FeatureError: a base <= 1 or F outside 1..32 (as :func:`~verify.constructions.features.trig_family`).
    """
    import sympy as sp

    from verify.constructions import features as F

    b = Fraction(base)
    if not b > 1:
        raise F.FeatureError(f"--base must exceed 1, got {b}")
    if not 1 <= frequencies <= F.MAX_FEATURES // 2:
        raise F.FeatureError(f"--frequencies must be in 1..{F.MAX_FEATURES // 2}, got {frequencies}")
    dim = 2 * frequencies
    check_dim(sc, dim)
    w = inv_freq(sc, float(b), dim, seq_len)
    a = attention_factor(sc)
    x = sp.Symbol("d", integer=True, nonnegative=True)
    # a^2 to a multiple of 2^-32 (relative error < 2^-32): a dyadic rational with a decimal expansion short enough
    # (33 digits) for features.cross_check's 40-digit reference to hold it exactly; the float64 square's 53-digit
    # expansion is refused there as an interval that does not enclose its (rounded) value
    a2 = Fraction(round(a * a * 2**32), 2**32)
    scale = sp.Rational(a2.numerator, a2.denominator)
    exprs = []
    for wk in w:
        q = Fraction(wk)
        arg = sp.Mul(x, sp.Rational(q.numerator, q.denominator), evaluate=False)
        pair = [sp.cos(arg, evaluate=False), sp.sin(arg, evaluate=False)]
        exprs += pair if a2 == 1 else [sp.Mul(scale, e, evaluate=False) for e in pair]
    p = sc.parameters()
    shown = ", ".join(f"{k} {v:g}" if isinstance(v, float) else f"{k} {v}" for k, v in p.items() if k != "rule")
    desc = (f"rope with {sc.rule} scaling ({shown}) of theta_k = {b}^(-k/{frequencies}): k(delta) = "
            + ("" if a2 == 1 else f"{a * a:.6g} (attention factor {a:.6g} squared) x ")
            + "sum_k a_k cos(delta w_k) + b_k sin(delta w_k), w_k the scaled frequencies"
            + (f" at L = {seq_len}" if sc.rule == "dynamic" else ""))
    name = f"rope-{sc.rule}(factor={sc.factor:g})"
    spec = F._from_exprs(exprs, "d", "relative", name,
                         f"rope, base {b}, {frequencies} frequencies, {sc.rule} scaling factor {sc.factor:g}", desc)
    return spec, w, a


# ----------------------------------------------------------------------------- the library cross-check


def library_version() -> str | None:
    """transformers' version, or None when it is not installed (the cross-check is then skipped)."""
    from verify import hfcompat

    return hfcompat.installed()


def library_inv_freq(sc: RopeScaling, base: float, dim: int, seq_len: int) -> tuple[list[float], float]:
    """transformers' ``ROPE_INIT_FUNCTIONS[rule]`` on a one-head Llama configuration of head size ``dim``.

    ``max_position_embeddings`` is L_orig for dynamic (the length its rule scales from) and
    ceil(factor L_orig) for yarn/llama3 (which read ``original_max_position_embeddings``).

    Raises:
        verify.hfcompat.UnsupportedRelease: the installed release has no such rule (before 4.43), or is outside
            the supported range.
    """
    from verify import hfcompat

    why = hfcompat.rope_init_refusal()  # before the configuration, which such a release would refuse for yarn
    if why is not None:
        raise hfcompat.UnsupportedRelease(why)
    rp: dict[str, Any] = {"rope_type": sc.rule, "rope_theta": float(base), "factor": float(sc.factor)}
    max_pos = sc.original_max
    if sc.rule in ("yarn", "llama3"):
        rp["original_max_position_embeddings"] = sc.original_max
        max_pos = max(math.ceil(sc.factor * sc.original_max), sc.original_max + 1)
    if sc.rule == "yarn":
        rp.update(beta_fast=float(sc.beta_fast), beta_slow=float(sc.beta_slow))
    if sc.rule == "llama3":
        rp.update(low_freq_factor=float(sc.low_freq_factor), high_freq_factor=float(sc.high_freq_factor))
    tf = hfcompat.load()  # configuration warnings are not part of this report: its logging stays at errors
    cfg = tf.LlamaConfig(hidden_size=dim, num_attention_heads=1, num_key_value_heads=1, head_dim=dim,
                         **hfcompat.rope_config(rp, max_pos))
    inv, att = hfcompat.rope_init(sc.rule, cfg, seq_len)
    return [float(v) for v in inv.tolist()], att


def compare(sc: RopeScaling, ours: list[float], ours_att: float, lib: list[float], lib_att: float) -> dict:
    """Index-by-index comparison: the largest relative differences and every disagreement beyond the tolerances."""
    findings: list[dict] = []
    if len(ours) != len(lib):
        findings.append({"rule": sc.rule, "what": "number of inverse frequencies", "ours": len(ours),
                         "library": len(lib)})
    rel = [abs(a - b) / abs(a) if a != 0 else abs(b) for a, b in zip(ours, lib)]
    for k, (r, a, b) in enumerate(zip(rel, ours, lib)):
        if not r <= FREQ_RTOL:
            findings.append({"rule": sc.rule, "what": "inv_freq", "index": k, "ours": a, "library": b,
                             "relative_difference": r})
    att_rel = abs(ours_att - lib_att) / abs(ours_att) if ours_att != 0 else abs(lib_att)
    if not att_rel <= FACTOR_RTOL:
        findings.append({"rule": sc.rule, "what": "attention_factor", "ours": ours_att, "library": lib_att,
                         "relative_difference": att_rel})
    return {"max_relative_difference": max(rel, default=0.0), "attention_factor_relative_difference": att_rel,
            "tolerance": FREQ_RTOL, "attention_factor_tolerance": FACTOR_RTOL, "agrees": not findings,
            "findings": findings}


def cross_check(sc: RopeScaling, base: float, dim: int, seq_len: int) -> dict:
    """Our closed forms against the installed library (``{"library": None, ...}`` when it is not installed)."""
    ver = library_version()
    if ver is None:
        return {"library": None, "checked": False, "note": "not cross-checked: transformers is not installed "
                "(pip install 'verify-attention[impl]')"}
    from verify import hfcompat

    ours, att = inv_freq(sc, base, dim, seq_len), attention_factor(sc)
    try:
        lib, lib_att = library_inv_freq(sc, base, dim, seq_len)
    except hfcompat.UnsupportedRelease as e:
        return {"library": f"transformers {ver}", "checked": False, "note": f"not cross-checked: {e}"}
    return {"library": f"transformers {ver}", "checked": True, "function": f"ROPE_INIT_FUNCTIONS[{sc.rule!r}]",
            "seq_len": seq_len, **compare(sc, ours, att, lib, lib_att)}


__all__ = ["RULES", "RopeScaling", "ScalingError", "make", "check_dim", "plain_inv_freq", "dynamic_base",
           "yarn_ramp", "attention_factor", "inv_freq", "scaled_rope_family", "library_version", "library_inv_freq",
           "compare", "cross_check", "DEFAULT_ORIGINAL_MAX", "FREQ_RTOL", "FACTOR_RTOL"]
