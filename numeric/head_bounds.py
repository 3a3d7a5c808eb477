"""Rigorous bounds on one attention head's pattern in arb ball arithmetic (python-flint): every quantity is a ball
that contains the exact-real value for the stored weights and inputs, so "the head puts at least tau on its target"
is decided without trusting a floating-point rounding.

The head (one query/key head of a causal self-attention layer), as :class:`HeadProgram` stores it:

    x_i in R^{d_model}                      the layer's input at query/key position i (see :class:`PromptInput`)
    n(x)                                    LayerNorm  (x - mean) / sqrt(var + eps) * g + b,
                                            RMSNorm    x / sqrt(mean(x^2) + eps) * g, or none
    q_i = n(x_i) W_Q + b_Q,  k_j = n(x_j) W_K + b_K                                       [d_head]
    RoPE (rotate-half pairs (m, m + r/2), angle i * inv_freq[m], cos and sin times attention_scaling)
    s_ij = scale * (q_i . k_j + q_i . r_{i-j}) + slope * (j - i)
           (r_delta: relative key vectors, the RPE of ws24/bietti23; slope: ALiBi's m_h)
    a_ij = exp(s_ij) / sum_{j' admitted} exp(s_ij')     admitted: j <= i and i - j < window

The target mass is enclosed as 1 / sum_j exp(s_ij - s_it) (one exp per key, no overflow whatever the logits'
size), and "argmax on target" is decided on the ball s_it - s_ij > 0 for every admitted j != t.

Imports no torch and no solver: ``verify recheck`` re-derives a certificate's every bound from the file alone.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Callable, Sequence

FORMAT = "verify-head-certificate/1"
#: working precision of the balls (bits); the weights are float32/float64 values, exact at this precision
PRECISION = 128
NORMS = ("layernorm", "rmsnorm", "none")
PATTERNS = ("prev", "induction")
#: what a row must show: the mass on the target >= tau, or the target the strict argmax
CRITERIA = ("mass", "argmax")


class HeadCertificateError(ValueError):
    """A head certificate that cannot be read (malformed, inconsistent sizes)."""


def _hex(x: float) -> str:
    return float(x).hex()


def _unhex(s: Any) -> float:
    if not isinstance(s, str):
        raise HeadCertificateError(f"expected a float in hex notation, got {type(s).__name__}")
    v = float.fromhex(s)
    if not math.isfinite(v):
        raise HeadCertificateError(f"non-finite value {s!r}")
    return v


def _hexes(rows: Sequence[Sequence[float]]) -> list[list[str]]:
    return [[_hex(v) for v in r] for r in rows]


def _unhexes(rows: Any, ncols: int | None = None) -> list[list[float]]:
    if not isinstance(rows, list):
        raise HeadCertificateError("expected a matrix (a list of rows)")
    out = [[_unhex(v) for v in r] for r in rows]
    if ncols is not None and any(len(r) != ncols for r in out):
        raise HeadCertificateError(f"a matrix row does not have {ncols} entries")
    return out


@dataclass
class HeadProgram:
    """One head's query/key side, exactly as stored (Python floats: float32/float64 values, exact).

    W_Q, W_K: ``[d_model, d_head]``; b_Q, b_K: ``[d_head]`` or None; norm: one of :data:`NORMS` with
    ``norm_weight``/``norm_bias`` ``[d_model]`` (None: 1 and 0) and ``norm_eps``; scale_inv_sqrt: the score scale is
    1/sqrt(scale_inv_sqrt) times ``scale_factor``; rope_inv_freq ``[r/2]`` (None: no RoPE) with
    ``rope_attention_scaling``; relative_keys ``[n_delta, d_head]`` (r_delta, row delta = i - j) or None;
    alibi_slope or None; window (keys with i - j < window) or None."""

    W_Q: list[list[float]]
    W_K: list[list[float]]
    b_Q: list[float] | None = None
    b_K: list[float] | None = None
    norm: str = "none"
    norm_weight: list[float] | None = None
    norm_bias: list[float] | None = None
    norm_eps: float = 0.0
    scale_inv_sqrt: int = 1
    scale_factor: float = 1.0
    rope_inv_freq: list[float] | None = None
    rope_attention_scaling: float = 1.0
    relative_keys: list[list[float]] | None = None
    alibi_slope: float | None = None
    window: int | None = None
    prefix: list["PrefixLayer"] = field(default_factory=list)

    @property
    def d_model(self) -> int:
        return len(self.W_Q)

    @property
    def norm_spec(self) -> tuple[str, list[float] | None, list[float] | None, float]:
        """(kind, gain, bias, eps) of the norm before the query/key projections."""
        return self.norm, self.norm_weight, self.norm_bias, self.norm_eps

    @property
    def d_head(self) -> int:
        return len(self.W_Q[0])

    def to_json(self) -> dict[str, Any]:
        def vec(v: list[float] | None) -> list[str] | None:
            return None if v is None else [_hex(x) for x in v]

        return {"W_Q": _hexes(self.W_Q), "W_K": _hexes(self.W_K), "b_Q": vec(self.b_Q), "b_K": vec(self.b_K),
                "norm": self.norm, "norm_weight": vec(self.norm_weight), "norm_bias": vec(self.norm_bias),
                "norm_eps": _hex(self.norm_eps), "scale_inv_sqrt": self.scale_inv_sqrt,
                "scale_factor": _hex(self.scale_factor), "rope_inv_freq": vec(self.rope_inv_freq),
                "rope_attention_scaling": _hex(self.rope_attention_scaling),
                "relative_keys": None if self.relative_keys is None else _hexes(self.relative_keys),
                "alibi_slope": None if self.alibi_slope is None else _hex(self.alibi_slope), "window": self.window,
                "prefix": [layer.to_json() for layer in self.prefix]}

    @classmethod
    def from_json(cls, d: Any) -> "HeadProgram":
        if not isinstance(d, dict):
            raise HeadCertificateError("'program' must be an object")
        try:
            WQ = _unhexes(d["W_Q"])
            if not WQ or not WQ[0]:
                raise HeadCertificateError("W_Q is empty")
            dm, dh = len(WQ), len(WQ[0])
            WK = _unhexes(d["W_K"], dh)
            if len(WK) != dm or any(len(r) != dh for r in WQ):
                raise HeadCertificateError("W_Q and W_K must both be [d_model, d_head]")

            def vec(key: str, n: int) -> list[float] | None:
                v = d.get(key)
                if v is None:
                    return None
                out = [_unhex(x) for x in v]
                if len(out) != n:
                    raise HeadCertificateError(f"{key} must have {n} entries")
                return out

            norm = d.get("norm", "none")
            if norm not in NORMS:
                raise HeadCertificateError(f"unknown norm {norm!r}")
            rope = d.get("rope_inv_freq")
            inv = None if rope is None else [_unhex(x) for x in rope]
            if inv is not None and (2 * len(inv) > dh or not inv):
                raise HeadCertificateError("rope_inv_freq has more than d_head/2 entries")
            rel = d.get("relative_keys")
            window = d.get("window")
            if window is not None and (not isinstance(window, int) or isinstance(window, bool) or window < 1):
                raise HeadCertificateError("window must be a positive integer")
            sis = d.get("scale_inv_sqrt", 1)
            if not isinstance(sis, int) or isinstance(sis, bool) or sis < 1:
                raise HeadCertificateError("scale_inv_sqrt must be a positive integer")
            return cls(W_Q=WQ, W_K=WK, b_Q=vec("b_Q", dh), b_K=vec("b_K", dh), norm=norm,
                       norm_weight=vec("norm_weight", dm), norm_bias=vec("norm_bias", dm),
                       norm_eps=_unhex(d.get("norm_eps", "0x0.0p+0")), scale_inv_sqrt=sis,
                       scale_factor=_unhex(d.get("scale_factor", "0x1.0p+0")), rope_inv_freq=inv,
                       rope_attention_scaling=_unhex(d.get("rope_attention_scaling", "0x1.0p+0")),
                       relative_keys=None if rel is None else _unhexes(rel, dh),
                       alibi_slope=None if d.get("alibi_slope") is None else _unhex(d["alibi_slope"]), window=window,
                       prefix=[PrefixLayer.from_json(x, dm) for x in (d.get("prefix") or [])])
        except (KeyError, TypeError, AttributeError) as e:
            raise HeadCertificateError(f"malformed head: {type(e).__name__}: {str(e)[:100]}") from None


def _vec(v: list[float] | None) -> list[str] | None:
    return None if v is None else [_hex(x) for x in v]


def _unvec(v: Any, n: int, what: str) -> list[float] | None:
    if v is None:
        return None
    if not isinstance(v, list) or len(v) != n:
        raise HeadCertificateError(f"{what} must have {n} entries")
    return [_unhex(x) for x in v]


@dataclass
class PrefixHead:
    """One head of a layer below the certified one, whole: its query/key side ``qk`` (norm, W_Q, W_K, RoPE, ...) and
    its value and output maps, v = n(x) W_V + b_V ``[d_model, d_head]``, out = (A v) W_O ``[d_head, d_model]``."""

    qk: HeadProgram
    W_V: list[list[float]]
    W_O: list[list[float]]
    b_V: list[float] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"qk": self.qk.to_json(), "W_V": _hexes(self.W_V), "W_O": _hexes(self.W_O), "b_V": _vec(self.b_V)}

    @classmethod
    def from_json(cls, d: Any, d_model: int) -> "PrefixHead":
        if not isinstance(d, dict):
            raise HeadCertificateError("a prefix head must be an object")
        qk = HeadProgram.from_json(d.get("qk"))
        WV, WO = _unhexes(d.get("W_V")), _unhexes(d.get("W_O"), d_model)
        if qk.d_model != d_model or len(WV) != d_model or not WV or len(WO) != len(WV[0]) or any(
                len(r) != len(WV[0]) for r in WV):
            raise HeadCertificateError("a prefix head's W_V must be [d_model, d_head] and W_O [d_head, d_model]")
        return cls(qk, WV, WO, _unvec(d.get("b_V"), len(WV[0]), "b_V"))


#: the MLP activations a prefix block may use (GPT-2's tanh GELU, SiLU, ReLU, erf GELU)
ACTIVATIONS = ("gelu_tanh", "silu", "relu", "gelu")


@dataclass
class MLP:
    """A block's MLP: m = norm(x) (the norm's kind, gain, bias, eps), h = act(m W_gate + b_gate) * (m W_in + b_in)
    (gated, SwiGLU) or act(m W_in + b_in); out = h W_out + b_out."""

    norm: str
    norm_weight: list[float] | None
    norm_bias: list[float] | None
    norm_eps: float
    W_in: list[list[float]]
    W_out: list[list[float]]
    act: str
    b_in: list[float] | None = None
    W_gate: list[list[float]] | None = None
    b_gate: list[float] | None = None
    b_out: list[float] | None = None

    @property
    def norm_spec(self) -> tuple[str, list[float] | None, list[float] | None, float]:
        """(kind, gain, bias, eps) of the norm before the MLP."""
        return self.norm, self.norm_weight, self.norm_bias, self.norm_eps

    def to_json(self) -> dict[str, Any]:
        return {"norm": self.norm, "norm_weight": _vec(self.norm_weight), "norm_bias": _vec(self.norm_bias),
                "norm_eps": _hex(self.norm_eps), "W_in": _hexes(self.W_in), "W_out": _hexes(self.W_out),
                "act": self.act, "b_in": _vec(self.b_in),
                "W_gate": None if self.W_gate is None else _hexes(self.W_gate), "b_gate": _vec(self.b_gate),
                "b_out": _vec(self.b_out)}

    @classmethod
    def from_json(cls, d: Any, d_model: int) -> "MLP":
        if not isinstance(d, dict):
            raise HeadCertificateError("an MLP must be an object")
        if d.get("norm") not in NORMS or d.get("act") not in ACTIVATIONS:
            raise HeadCertificateError(f"MLP norm must be one of {NORMS} and act one of {ACTIVATIONS}")
        W_in = _unhexes(d.get("W_in"))
        if len(W_in) != d_model or not W_in or not W_in[0]:
            raise HeadCertificateError("W_in must be [d_model, d_ff]")
        f = len(W_in[0])
        W_in = _unhexes(d.get("W_in"), f)
        W_out = _unhexes(d.get("W_out"), d_model)
        if len(W_out) != f:
            raise HeadCertificateError("W_out must be [d_ff, d_model]")
        W_gate = None if d.get("W_gate") is None else _unhexes(d["W_gate"], f)
        if W_gate is not None and len(W_gate) != d_model:
            raise HeadCertificateError("W_gate must be [d_model, d_ff]")
        return cls(d["norm"], _unvec(d.get("norm_weight"), d_model, "norm_weight"),
                   _unvec(d.get("norm_bias"), d_model, "norm_bias"), _unhex(d.get("norm_eps", "0x0.0p+0")), W_in,
                   W_out, d["act"], _unvec(d.get("b_in"), f, "b_in"), W_gate, _unvec(d.get("b_gate"), f, "b_gate"),
                   _unvec(d.get("b_out"), d_model, "b_out"))


@dataclass
class PrefixLayer:
    """A layer below the certified head, computed in balls: x <- x + sum over its heads of (A_h (n(x) W_V^h + b_V^h))
    W_O^h + out_bias, then, when it has one, x <- x + MLP(x) (the residual stream the certified head reads is then
    exact from the weights)."""

    heads: list[PrefixHead]
    out_bias: list[float] | None = None
    mlp: MLP | None = None

    def to_json(self) -> dict[str, Any]:
        return {"heads": [h.to_json() for h in self.heads], "out_bias": _vec(self.out_bias),
                "mlp": None if self.mlp is None else self.mlp.to_json()}

    @classmethod
    def from_json(cls, d: Any, d_model: int) -> "PrefixLayer":
        if not isinstance(d, dict) or not isinstance(d.get("heads"), list) or not d["heads"]:
            raise HeadCertificateError("a prefix layer must list its heads")
        return cls([PrefixHead.from_json(h, d_model) for h in d["heads"]],
                   _unvec(d.get("out_bias"), d_model, "out_bias"),
                   None if d.get("mlp") is None else MLP.from_json(d["mlp"], d_model))


@dataclass
class PromptInput:
    """One prompt: its tokens, the layer's input rows x_i (``[pos, d_model]``, the sum of the listed components,
    added exactly), which query rows are checked and each row's target key."""

    tokens: list[int]
    components: list[list[list[float]]]
    rows: list[int]
    targets: list[int]

    def to_json(self) -> dict[str, Any]:
        return {"tokens": self.tokens, "components": [_hexes(c) for c in self.components], "rows": self.rows,
                "targets": self.targets}

    @classmethod
    def from_json(cls, d: Any, d_model: int) -> "PromptInput":
        try:
            comps = [_unhexes(c, d_model) for c in d["components"]]
            toks, rows, targets = _ints(d["tokens"]), _ints(d["rows"]), _ints(d["targets"])
        except (KeyError, TypeError, ValueError) as e:
            raise HeadCertificateError(f"malformed prompt: {type(e).__name__}: {str(e)[:100]}") from None
        if not comps or any(len(c) != len(toks) for c in comps):
            raise HeadCertificateError("each input component must have one row per token")
        if len(rows) != len(targets) or any(not (0 <= t <= r < len(toks)) for r, t in zip(rows, targets)):
            raise HeadCertificateError("rows and targets must pair up, with 0 <= target <= row < positions")
        return cls(toks, comps, rows, targets)


def _ints(v: Any) -> list[int]:
    if not isinstance(v, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        raise TypeError("expected a list of integers")
    return list(v)


@dataclass
class RowBound:
    """One query row's enclosures: the target mass (lo, hi), the score margin's lower end (s_it - max_j s_ij,
    rigorous), and the decisions: mass >= tau 'ge', < tau 'lt', else 'undecided'; the target the strict argmax
    'yes', certainly not (some key scores at least as high) 'no', else 'undecided'."""

    prompt: int
    row: int
    target: int
    mass_lo: float
    mass_hi: float
    margin_lo: float
    status: str
    argmax: str
    #: with ``enclose`` bits: the target's score enclosure and the other admitted keys' (key order), as integers z
    #: standing for z / 2^bits, rounded outward from the balls (the data ``verify head --kernel`` hands to Coq)
    scores: "Enclosure | None" = None

    def to_json(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "row": self.row, "target": self.target, "status": self.status,
                "argmax": self.argmax, "mass": [_fmt_down(self.mass_lo), _fmt_up(self.mass_hi)],
                "margin_lower": _fmt_down(self.margin_lo)}


@dataclass(frozen=True)
class Enclosure:
    """One row's scores in fixed point (z / 2^bits): the target's [lo, hi] and, for every other admitted key j in
    increasing order, [lo_j, hi_j]."""

    bits: int
    target: tuple[int, int]
    keys: tuple[int, ...]
    others: tuple[tuple[int, int], ...]


def _fixed(ball: Any, bits: int) -> tuple[int, int]:
    """[floor(lower * 2^bits), ceil(upper * 2^bits)] of an arb ball, from its exact endpoints."""
    out = []
    for end, down in ((ball.lower(), True), (ball.upper(), False)):
        man, exp = (int(v) for v in end.man_exp())
        k = exp + bits
        if k >= 0:
            out.append(man << k)
        else:
            out.append(man >> -k if down else -((-man) >> -k))
    return out[0], out[1]


def _fmt_down(x: float) -> str:
    return fmt_directed(x, down=True)


def _fmt_up(x: float) -> str:
    return fmt_directed(x, down=False)


def fmt_directed(x: float, down: bool, digits: int = 12) -> str:
    """A decimal string of ``digits`` significant digits not above x (``down``) or not below it."""
    if not math.isfinite(x):
        return "-inf" if down else "inf"
    if x == 0:
        return "0"
    f = Fraction(x)
    e = math.floor(math.log10(abs(x))) - digits + 1
    q = Fraction(10) ** e
    n = (f / q).__floor__() if down else (f / q).__ceil__()
    if e >= 0:
        return str(n * 10 ** e)
    digits_ = str(abs(n)).rjust(-e + 1, "0")
    text = f"{digits_[:e]}.{digits_[e:]}".rstrip("0").rstrip(".")
    return ("-" if n < 0 else "") + text


@dataclass
class HeadBound:
    """The bounds of every checked row and the decision at threshold tau and fraction f."""

    rows: list[RowBound] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        return {"rows": len(self.rows), "ge": sum(r.status == "ge" for r in self.rows),
                "lt": sum(r.status == "lt" for r in self.rows),
                "undecided": sum(r.status == "undecided" for r in self.rows),
                "argmax_yes": sum(r.argmax == "yes" for r in self.rows),
                "argmax_no": sum(r.argmax == "no" for r in self.rows)}

    def verdict(self, fraction: Fraction, criterion: str = "mass") -> str:
        """Criterion ``mass``: HOLDS when at least ceil(f n) rows are certified to put >= tau on the target;
        ``argmax``: when at least ceil(f n) rows certify the target as the strict argmax.  FAILS when even counting
        every undecided row as a success leaves fewer; else INCONCLUSIVE."""
        c = self.counts()
        yes, no = (c["ge"], c["lt"]) if criterion == "mass" else (c["argmax_yes"], c["argmax_no"])
        return decide(c["rows"], yes, no, fraction)


def decide(rows: int, yes: int, no: int, fraction: Fraction) -> str:
    """The verdict on ``rows`` rows of which ``yes`` are certified to succeed and ``no`` to fail: HOLDS when
    yes >= ceil(f rows), FAILS when even every other row succeeding leaves fewer, else INCONCLUSIVE."""
    need = math.ceil(fraction * rows)
    if yes >= need:
        return "HOLDS"
    if rows - no < need:
        return "FAILS"
    return "INCONCLUSIVE"


def _arb() -> Any:
    import flint

    return flint


def _norm_rows(fl: Any, X: list[list[Any]], kind: str, weight: list[float] | None, bias: list[float] | None,
               eps_: float) -> list[list[Any]]:
    """Each row through the norm ``kind`` (LayerNorm, RMSNorm or none) with gain ``weight`` and ``bias``."""
    arb = fl.arb
    if kind == "none":
        return X
    d = len(X[0])
    g = [arb(v) for v in weight] if weight is not None else None
    b = [arb(v) for v in bias] if bias is not None else None
    eps = arb(eps_)
    out = []
    for x in X:
        if kind == "layernorm":
            mean = sum(x, arb(0)) / d
            c = [v - mean for v in x]
            inv = (sum((v * v for v in c), arb(0)) / d + eps).rsqrt()
        else:
            c = x
            inv = (sum((v * v for v in x), arb(0)) / d + eps).rsqrt()
        row = [v * inv for v in c]
        if g is not None:
            row = [v * w for v, w in zip(row, g)]
        if b is not None:
            row = [v + w for v, w in zip(row, b)]
        out.append(row)
    return out


def _project(fl: Any, N: list[list[Any]], W: list[list[float]], bias: list[float] | None) -> list[list[Any]]:
    M = fl.arb_mat(N) * fl.arb_mat(W)
    rows, cols = M.nrows(), M.ncols()
    out = [[M[i, j] for j in range(cols)] for i in range(rows)]
    if bias is not None:
        bb = [fl.arb(v) for v in bias]
        out = [[v + w for v, w in zip(r, bb)] for r in out]
    return out


def _rope(fl: Any, Y: list[list[Any]], prog: HeadProgram) -> list[list[Any]]:
    if prog.rope_inv_freq is None:
        return Y
    arb = fl.arb
    h = len(prog.rope_inv_freq)
    att = arb(prog.rope_attention_scaling)
    inv = [arb(v) for v in prog.rope_inv_freq]
    out = []
    for i, y in enumerate(Y):
        row = list(y)
        for m in range(h):
            ang = inv[m] * i
            c, s = ang.cos() * att, ang.sin() * att
            a, b = y[m], y[m + h]
            row[m], row[m + h] = a * c - b * s, b * c + a * s
        out.append(row)
    return out


def _down(x: Any) -> float:
    """A float not above the exact point ``x`` (float() rounds to nearest; one step down makes it a bound)."""
    return math.nextafter(float(x), -math.inf)


def _up(x: Any) -> float:
    return math.nextafter(float(x), math.inf)


def _admitted(prog: HeadProgram, i: int) -> range:
    lo = 0 if prog.window is None else max(0, i - prog.window + 1)
    return range(lo, i + 1)


def _score_fn(fl: Any, prog: HeadProgram, X: list[list[Any]]) -> tuple[list[list[Any]], Callable[[int, int], Any]]:
    """The normalised rows n(x_i) and s(i, j), the pre-softmax score of query i on key j, as balls."""
    arb = fl.arb
    N = _norm_rows(fl, X, *prog.norm_spec)
    Q = _rope(fl, _project(fl, N, prog.W_Q, prog.b_Q), prog)
    K = _rope(fl, _project(fl, N, prog.W_K, prog.b_K), prog)
    S = fl.arb_mat(Q) * fl.arb_mat(K).transpose()
    QR = fl.arb_mat(Q) * fl.arb_mat(prog.relative_keys).transpose() if prog.relative_keys is not None else None
    scale = arb(prog.scale_inv_sqrt).rsqrt() * arb(prog.scale_factor)
    slope = None if prog.alibi_slope is None else arb(prog.alibi_slope)

    def score(i: int, j: int) -> Any:
        v = S[i, j]
        if QR is not None:
            if i - j >= QR.ncols():
                raise HeadCertificateError(f"no relative key vector for offset {i - j}")
            v = v + QR[i, i - j]
        v = v * scale
        return v if slope is None else v + slope * (j - i)

    return N, score


def _apply_prefix(fl: Any, prefix: Sequence["PrefixLayer"], X: list[list[Any]]) -> list[list[Any]]:
    """The residual stream after the prefix layers, in balls: x <- x + sum_h (A_h (n_h(x) W_V^h)) W_O^h."""
    arb = fl.arb
    L = len(X)
    for layer in prefix:
        add = None
        for ph in layer.heads:
            N, score = _score_fn(fl, ph.qk, X)
            A = [[arb(0)] * L for _ in range(L)]
            for i in range(L):
                keys = list(_admitted(ph.qk, i))
                e = [(score(i, j) - score(i, i)).exp() for j in keys]
                tot = sum(e, arb(0))
                for j, v in zip(keys, e):
                    A[i][j] = v / tot
            V = fl.arb_mat(_project(fl, N, ph.W_V, ph.b_V))
            out = fl.arb_mat(A) * V * fl.arb_mat(ph.W_O)
            add = out if add is None else add + out
        if add is not None:
            bias = [arb(v) for v in layer.out_bias] if layer.out_bias is not None else None
            X = [[X[i][k] + add[i, k] + (bias[k] if bias else 0) for k in range(len(X[i]))] for i in range(L)]
        if layer.mlp is not None:
            X = _apply_mlp(fl, layer.mlp, X)
    return X


def _act(fl: Any, kind: str, x: Any) -> Any:
    arb = fl.arb
    if kind == "silu":
        return x / (1 + (-x).exp())
    if kind == "relu":
        return (x + abs(x)) / 2  # max(x, 0) exactly, so the ball encloses it however x straddles 0
    if kind == "gelu":
        return x * (1 + (x / arb(2).sqrt()).erf()) / 2
    c = (arb(2) / arb.pi()).sqrt()
    return x * (1 + (c * (x + arb("0.044715") * x * x * x)).tanh()) / 2


def _apply_mlp(fl: Any, m: "MLP", X: list[list[Any]]) -> list[list[Any]]:
    N = _norm_rows(fl, X, *m.norm_spec)
    H = _project(fl, N, m.W_in, m.b_in)
    if m.W_gate is not None:
        G = _project(fl, N, m.W_gate, m.b_gate)
        H = [[_act(fl, m.act, g) * h for g, h in zip(gr, hr)] for gr, hr in zip(G, H)]
    else:
        H = [[_act(fl, m.act, h) for h in hr] for hr in H]
    out = _project(fl, H, m.W_out, m.b_out)
    return [[x + o for x, o in zip(xr, orow)] for xr, orow in zip(X, out)]


def bound_prompt(prog: HeadProgram, prompt: PromptInput, tau: Fraction, index: int = 0,
                 precision: int = PRECISION, enclose: int | None = None) -> list[RowBound]:
    """The rigorous enclosures of every checked row of one prompt (see the module docstring); with ``enclose``
    bits each row also carries its scores' fixed-point :class:`Enclosure`."""
    fl = _arb()
    old = fl.ctx.prec
    fl.ctx.prec = precision
    try:
        arb = fl.arb
        L = len(prompt.tokens)
        X = [[sum((arb(c[i][k]) for c in prompt.components), arb(0)) for k in range(prog.d_model)] for i in range(L)]
        X = _apply_prefix(fl, prog.prefix, X)
        _, score = _score_fn(fl, prog, X)
        tau_b = arb(tau.numerator) / tau.denominator
        out = []
        for i, t in zip(prompt.rows, prompt.targets):
            keys = _admitted(prog, i)
            if t not in keys:
                raise HeadCertificateError(f"row {i}: target {t} is not an admitted key")
            st = score(i, t)
            diffs = [score(i, j) - st for j in keys if j != t]
            total = sum((dd.exp() for dd in diffs), arb(1))
            mass = 1 / total
            margin_lo = min((_down((-dd).lower()) for dd in diffs), default=math.inf)
            status = mass_status(mass, tau_b)
            argmax = argmax_status(diffs)
            enc = None
            if enclose is not None:
                others = [j for j in keys if j != t]
                enc = Enclosure(enclose, _fixed(st, enclose), tuple(others),
                                tuple(_fixed(score(i, j), enclose) for j in others))
            out.append(RowBound(index, i, t, _down(mass.lower()), _up(mass.upper()), margin_lo, status, argmax, enc))
        return out
    finally:
        fl.ctx.prec = old


def mass_status(mass: Any, tau: Any) -> str:
    """A row's mass decision from the balls: ``ge`` when every point of ``mass`` is >= every point of ``tau``, ``lt``
    when every point is below, else ``undecided`` (a ball touching tau from below may hold tau itself)."""
    return "ge" if mass >= tau else ("lt" if mass < tau else "undecided")


def argmax_status(diffs: Sequence[Any]) -> str:
    """A row's argmax decision from the balls s_ij - s_it (every admitted j != t): ``yes`` when every one is certainly
    negative (the target the strict argmax), ``no`` when one is certainly >= 0, else ``undecided``."""
    return "yes" if all(dd < 0 for dd in diffs) else ("no" if any(dd >= 0 for dd in diffs) else "undecided")


def bound_head(prog: HeadProgram, prompts: Sequence[PromptInput], tau: Fraction,
               precision: int = PRECISION, enclose: int | None = None) -> HeadBound:
    hb = HeadBound()
    for k, p in enumerate(prompts):
        hb.rows.extend(bound_prompt(prog, p, tau, k, precision, enclose))
    return hb


# ----------------------------------------------------------------------------- certificates


def certificate(prog: HeadProgram, prompts: Sequence[PromptInput], hb: HeadBound, *, tau: Fraction,
                fraction: Fraction, criterion: str, meta: dict[str, Any]) -> dict[str, Any]:
    """The certificate document: the head, the prompts, the threshold and fraction, every row's decision and the
    verdict; ``meta`` (model, layer, head, pattern, input provenance) is carried for the reader."""
    body = {"program": prog.to_json(), "prompts": [p.to_json() for p in prompts]}
    return {"format": FORMAT, "kind": "head-bound", **meta, "threshold": str(tau), "fraction": str(fraction),
            "criterion": criterion, "precision_bits": PRECISION, "content_sha256": content_digest(body), **body,
            "claimed": {"counts": hb.counts(), "verdict": hb.verdict(fraction, criterion),
                        "rows": [r.to_json() for r in hb.rows]}}


def content_digest(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


#: a rational as typed: integer or decimal, optionally /integer or an exponent of at most 3 digits (a text such as
#: 1e-99999999 would make Fraction build a 10^8-digit integer)
_RATIONAL = re.compile(r"^[+-]?(\d{1,40}(\.\d{0,40})?|\.\d{1,40})([eE][+-]?\d{1,3}|/\d{1,40})?$")


def parse_rational(text: Any) -> Fraction | None:
    """``text`` as an exact Fraction, or None when it is not a short decimal, fraction or exponent form."""
    t = str(text).strip()
    if len(t) > 100 or not _RATIONAL.match(t):
        return None
    try:
        return Fraction(t)
    except (ValueError, ZeroDivisionError):
        return None


def _fraction(s: Any, what: str) -> Fraction:
    f = parse_rational(s) if isinstance(s, str) else None
    if f is None:
        raise HeadCertificateError(f"{what} {str(s)[:40]!r} is not a rational number such as 1/2")
    if not (0 < f <= 1):
        raise HeadCertificateError(f"{what} {s} is not in (0, 1]")
    return f


def prev_targets(tokens: Sequence[int]) -> tuple[list[int], list[int]]:
    """prev: query i -> key i - 1 (i >= 1)."""
    return list(range(1, len(tokens))), list(range(0, len(tokens) - 1))


def induction_targets(tokens: Sequence[int]) -> tuple[list[int], list[int]]:
    """Rows i whose token x_i occurred before; the target is j + 1 for the most recent earlier occurrence j < i
    (the token that followed it, the key an induction head copies from; j + 1 <= i)."""
    last: dict[int, int] = {}
    rows, targets = [], []
    for i, t in enumerate(tokens):
        if t in last:
            rows.append(i)
            targets.append(last[t] + 1)
        last[t] = i
    return rows, targets


TARGETS: dict[str, Callable[[Sequence[int]], tuple[list[int], list[int]]]] = {
    "prev": prev_targets, "induction": induction_targets}


def statement(pattern: str, criterion: str, tau: Fraction, fraction: Fraction) -> str:
    """The statement a head certificate decides, in words."""
    target = "key i - 1" if pattern == "prev" else "the key after the last earlier occurrence of x_i"
    share = "at every checked query row i" if fraction == 1 else f"at a share >= {fraction} of the checked query rows i"
    what = (f"puts attention mass >= {tau} on {target}" if criterion == "mass" else f"has {target} as the strict argmax")
    return f"{share}, the head {what}"


def _check_targets(pattern: Any, prompts: Sequence["PromptInput"]) -> None:
    if pattern not in TARGETS:
        raise HeadCertificateError(f"unknown pattern {pattern!r}")
    for k, p in enumerate(prompts):
        derived = dict(zip(*TARGETS[pattern](p.tokens)))
        bad = next(((r, t) for r, t in zip(p.rows, p.targets) if derived.get(r) != t), None)
        if bad is not None:
            raise HeadCertificateError(f"prompt {k}: row {bad[0]}'s target {bad[1]} is not its {pattern} target in the "
                                       "prompt's tokens")
        if len(set(p.rows)) != len(p.rows):
            raise HeadCertificateError(f"prompt {k}: a row is listed twice")


_KERNEL_CLAIM = {("mass", "ge"): "ge", ("mass", "lt"): "lt", ("argmax", "yes"): "argmax", ("argmax", "no"): "argmax_no"}
_INT = re.compile(r"-?[0-9]{1,40}")


def kernel_claim(r: RowBound, criterion: str) -> str | None:
    """What a decided row claims for the kernel (``verify head --kernel``): mass >= tau ``ge`` or < tau ``lt``; for
    ``argmax``, the target the strict argmax ``argmax`` or certainly not ``argmax_no``; None when undecided."""
    return _KERNEL_CLAIM.get((criterion, r.status if criterion == "mass" else r.argmax))


def _check_kernel_section(section: dict[str, Any], hb: "HeadBound", criterion: str) -> str | None:
    """The kernel section's rows are rows decided here (those Coq accepted when the file was written), with their
    claims, keys and bounds that contain the fixed-point enclosures re-derived from the weights; None when so, else
    what differs."""
    rows = section.get("rows")
    if not isinstance(rows, list):
        return "no list of rows"
    decided: dict[Any, RowBound] = {(r.prompt, r.row): r for r in hb.rows if kernel_claim(r, criterion)}
    seen = set()
    for k, d in enumerate(rows):
        if not isinstance(d, dict):
            return f"row {k} is not an object"
        r = decided.get((d.get("prompt"), d.get("row")))
        if r is None or (r.prompt, r.row) in seen:
            return f"row {k} (prompt {str(d.get('prompt'))[:10]}, query {str(d.get('row'))[:10]}) is not a decided row"
        seen.add((r.prompt, r.row))
        want = kernel_claim(r, criterion)
        enc = r.scores
        assert enc is not None
        if d.get("claim") != want or d.get("target") != r.target or d.get("keys") != list(enc.keys):
            return f"row {k}: its claim, target or keys differ from the decided row's ({want}, key {r.target})"
        pairs = [d.get("target_score")] + list(d.get("others") or [])
        if len(pairs) != 1 + len(enc.others):
            return f"row {k}: {len(pairs) - 1} key bounds for {len(enc.others)} keys"
        for got, (lo, hi) in zip(pairs, [enc.target, *enc.others]):
            if (not isinstance(got, list) or len(got) != 2 or not all(isinstance(x, str) and _INT.fullmatch(x)
                                                                        for x in got)):
                return f"row {k}: a bound is not two integer strings"
            if not int(got[0]) <= lo <= hi <= int(got[1]):
                return (f"row {k} (prompt {r.prompt}, query {r.row}): [{got[0]}, {got[1]}] does not contain the "
                        f"re-derived enclosure [{lo}, {hi}] (2^-{enc.bits})")
    return None


#: a hostile file cannot make the checker run for hours: positions x keys x prompts is capped
MAX_WORK = 50_000_000


def recheck(doc: dict[str, Any]) -> tuple[bool, str]:
    """Re-derive every row's enclosure from the certificate's head and prompts (arb, this module's code path; no
    torch) and compare the decisions and the verdict with what the file claims."""
    try:
        if doc.get("format") != FORMAT:
            return False, f"not a head certificate (format {doc.get('format')!r})"
        prog = HeadProgram.from_json(doc.get("program"))
        raw = doc.get("prompts")
        if not isinstance(raw, list) or not raw:
            return False, "no prompts"
        prompts = [PromptInput.from_json(p, prog.d_model) for p in raw]
        per_head = [(prog.d_model, prog.d_head, 2)] + [(h.qk.d_model, h.qk.d_head, 3) for layer in prog.prefix
                                                        for h in layer.heads]
        mlps = [len(layer.mlp.W_in[0]) * prog.d_model * (3 if layer.mlp.W_gate else 2) for layer in prog.prefix
                if layer.mlp is not None]
        work = sum(len(p.tokens) ** 2 * (dh + 1) + len(p.tokens) * dm * dh * k
                   for p in prompts for dm, dh, k in per_head) + sum(len(p.tokens) * m for p in prompts for m in mlps)
        if work > MAX_WORK:
            return False, f"too large to re-check here ({work} > {MAX_WORK} multiply-adds)"
        if doc.get("content_sha256") != content_digest({"program": doc["program"], "prompts": raw}):
            return False, "the head or prompts do not match the recorded content hash (edited)"
        tau, frac = _fraction(doc.get("threshold"), "threshold"), _fraction(doc.get("fraction"), "fraction")
        crit = doc.get("criterion")
        if crit not in CRITERIA:
            return False, f"unknown criterion {crit!r} (one of {', '.join(CRITERIA)})"
        if doc.get("precision_bits") != PRECISION:
            return False, f"precision_bits {doc.get('precision_bits')!r}: the balls are re-derived at {PRECISION}"
        _check_targets(doc.get("pattern"), prompts)
        if doc.get("statement") != statement(doc["pattern"], crit, tau, frac):
            return False, "the statement does not say what the pattern, criterion, threshold and fraction decide"
        section = doc.get("kernel")
        bits = section.get("bits") if isinstance(section, dict) else None
        if section is not None and (isinstance(bits, bool) or not isinstance(bits, int) or not 8 <= bits <= 60):
            return False, "the kernel section is not {'bits': 8..60, 'rows': [...]}"
        hb = bound_head(prog, prompts, tau, enclose=bits)
        claimed = doc.get("claimed") or {}
        got_rows = [json.dumps(r.to_json(), sort_keys=True) for r in hb.rows]
        want = claimed.get("rows")
        want_rows = [json.dumps(r, sort_keys=True) for r in want] if isinstance(want, list) else []
        if got_rows != want_rows:
            bad = next((w for g, w in zip(got_rows, want_rows) if g != w), "a row missing or added")
            return False, f"the rows' decisions or enclosures differ from the re-derived ones (first: {bad[:160]})"
        if json.dumps(claimed.get("counts"), sort_keys=True) != json.dumps(hb.counts(), sort_keys=True):
            return False, "the claimed counts differ from the re-derived ones"
        verdict = hb.verdict(frac, crit)
        if claimed.get("verdict") != verdict:
            return False, f"the claimed verdict {claimed.get('verdict')!r} differs from {verdict!r}"
        if section is not None:
            why = _check_kernel_section(section, hb, crit)
            if why is not None:
                return False, f"kernel section: {why}"
        c = hb.counts()
        return True, (f"head bound re-derived in arb: {c['ge']}/{c['rows']} rows with mass >= {tau} on the target, "
                      f"{c['lt']} below, the target the strict argmax at {c['argmax_yes']}; verdict {verdict} "
                      f"({crit}, fraction {frac})")
    except HeadCertificateError as e:
        return False, str(e)
    except (KeyError, TypeError, ValueError, AttributeError, RecursionError, ZeroDivisionError) as e:
        return False, f"malformed head certificate: {type(e).__name__}: {str(e)[:120]}"
