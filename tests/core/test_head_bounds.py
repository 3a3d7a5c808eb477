"""numeric/head_bounds.py against an independent reference: the head of its module docstring written again in
mpmath at 60 digits (norm, W_Q/W_K with biases, RoPE, relative keys, ALiBi, the sliding window, prefix layers with
heads and MLPs of each activation), and every row's ball asserted to contain the exact value and to be tight.  Then
the certificate's reading and writing, the verdict rule, the directed decimals and every refusal of ``recheck``,
each by the value or message it must give.  Torch-free and Coq-free: the module's mutation pass runs this file
(tools/mutation.py), so a one-line fault in the balls must move a number asserted here.
"""

from __future__ import annotations

import copy
import json
import math
from fractions import Fraction
from typing import Any

import mpmath
import pytest

from verify.numeric import head_bounds as hb

mpmath.mp.dps = 60
M = mpmath.mpf


# ----------------------------------------------------------------------------- the reference, in mpmath


def _norm(x: list[Any], kind: str, g: list[float] | None, b: list[float] | None, eps: float) -> list[Any]:
    if kind == "none":
        return list(x)
    d = len(x)
    if kind == "layernorm":
        mean = mpmath.fsum(x) / d
        c = [v - mean for v in x]
    else:
        c = list(x)
    inv = 1 / mpmath.sqrt(mpmath.fsum(v * v for v in c) / d + M(eps))
    return [c[k] * inv * (M(g[k]) if g else 1) + (M(b[k]) if b else 0) for k in range(d)]


def _matvec(x: list[Any], W: list[list[float]], bias: list[float] | None) -> list[Any]:
    cols = len(W[0])
    return [mpmath.fsum(x[r] * M(W[r][c]) for r in range(len(W))) + (M(bias[c]) if bias else 0) for c in range(cols)]


def _rot(y: list[Any], i: int, prog: hb.HeadProgram) -> list[Any]:
    if prog.rope_inv_freq is None:
        return y
    h, att, out = len(prog.rope_inv_freq), M(prog.rope_attention_scaling), list(y)
    for m in range(h):
        ang = M(prog.rope_inv_freq[m]) * i
        c, s = mpmath.cos(ang) * att, mpmath.sin(ang) * att
        out[m], out[m + h] = y[m] * c - y[m + h] * s, y[m + h] * c + y[m] * s
    return out


def _keys(prog: hb.HeadProgram, i: int) -> list[int]:
    return [j for j in range(i + 1) if prog.window is None or i - j < prog.window]


def ref_scores(prog: hb.HeadProgram, X: list[list[Any]]) -> tuple[list[list[Any]], dict[tuple[int, int], Any]]:
    """s_ij = scale (q_i . k_j + q_i . r_{i-j}) + slope (j - i) for every admitted (i, j), with the normalised rows."""
    N = [_norm(x, *prog.norm_spec) for x in X]
    Q = [_rot(_matvec(n, prog.W_Q, prog.b_Q), i, prog) for i, n in enumerate(N)]
    K = [_rot(_matvec(n, prog.W_K, prog.b_K), i, prog) for i, n in enumerate(N)]
    scale = M(prog.scale_factor) / mpmath.sqrt(prog.scale_inv_sqrt)
    S = {}
    for i in range(len(X)):
        for j in _keys(prog, i):
            v = mpmath.fsum(a * b for a, b in zip(Q[i], K[j]))
            if prog.relative_keys is not None:
                v += mpmath.fsum(a * M(b) for a, b in zip(Q[i], prog.relative_keys[i - j]))
            S[i, j] = scale * v + (M(prog.alibi_slope) * (j - i) if prog.alibi_slope is not None else 0)
    return N, S


def _act(kind: str, x: Any) -> Any:
    if kind == "silu":
        return x / (1 + mpmath.exp(-x))
    if kind == "relu":
        return max(x, M(0))
    if kind == "gelu":
        return x * (1 + mpmath.erf(x / mpmath.sqrt(2))) / 2
    return x / 2 * (1 + mpmath.tanh(mpmath.sqrt(2 / mpmath.pi) * (x + M("0.044715") * x ** 3)))


def ref_stream(prog: hb.HeadProgram, prompt: hb.PromptInput) -> list[list[Any]]:
    """The residual stream the certified head reads: the components summed, then every prefix layer."""
    L, d = len(prompt.tokens), prog.d_model
    X = [[mpmath.fsum(M(c[i][k]) for c in prompt.components) for k in range(d)] for i in range(L)]
    for layer in prog.prefix:
        add = [[M(0)] * d for _ in range(L)]
        for ph in layer.heads:
            N, S = ref_scores(ph.qk, X)
            V = [_matvec(n, ph.W_V, ph.b_V) for n in N]
            for i in range(L):
                ks = _keys(ph.qk, i)
                tot = mpmath.fsum(mpmath.exp(S[i, j]) for j in ks)
                mix = [mpmath.fsum(mpmath.exp(S[i, j]) / tot * V[j][c] for j in ks) for c in range(len(V[0]))]
                out = _matvec(mix, ph.W_O, None)
                add[i] = [a + o for a, o in zip(add[i], out)]
        X = [[X[i][k] + add[i][k] + (M(layer.out_bias[k]) if layer.out_bias else 0) for k in range(d)] for i in range(L)]
        m = layer.mlp
        if m is not None:
            N = [_norm(x, *m.norm_spec) for x in X]
            H = [_matvec(n, m.W_in, m.b_in) for n in N]
            if m.W_gate is not None:
                G = [_matvec(n, m.W_gate, m.b_gate) for n in N]
                H = [[_act(m.act, g) * h for g, h in zip(gr, hr)] for gr, hr in zip(G, H)]
            else:
                H = [[_act(m.act, h) for h in hr] for hr in H]
            X = [[x + o for x, o in zip(xr, _matvec(hr, m.W_out, m.b_out))] for xr, hr in zip(X, H)]
    return X


def ref_rows(prog: hb.HeadProgram, prompt: hb.PromptInput) -> list[tuple[Any, Any, dict[int, Any]]]:
    """(exact target mass, exact margin s_it - max_j s_ij, every admitted key's score) per checked row."""
    _, S = ref_scores(prog, ref_stream(prog, prompt))
    out = []
    for i, t in zip(prompt.rows, prompt.targets):
        ks = _keys(prog, i)
        mass = mpmath.exp(S[i, t]) / mpmath.fsum(mpmath.exp(S[i, j]) for j in ks)
        margin = min((S[i, t] - S[i, j] for j in ks if j != t), default=mpmath.inf)
        out.append((mass, margin, {j: S[i, j] for j in ks}))
    return out


# ----------------------------------------------------------------------------- the heads


def _mat(rows: int, cols: int, seed: int, scale: float = 1.0) -> list[list[float]]:
    """A fixed matrix of dyadic-free floats (no two entries alike), from a small congruential sequence."""
    out, v = [], seed
    for _ in range(rows):
        row = []
        for _ in range(cols):
            v = (v * 1103515245 + 12345) % 2 ** 31
            row.append(scale * (v / 2 ** 31 * 2 - 1) * 1.37)
        out.append(row)
    return out


def _vec(n: int, seed: int, scale: float = 1.0) -> list[float]:
    return _mat(1, n, seed, scale)[0]


def _prompt(L: int, d: int, seed: int, pattern: str = "prev", tokens: list[int] | None = None) -> hb.PromptInput:
    toks = tokens if tokens is not None else [(seed + 3 * i) % 7 for i in range(L)]
    rows, targets = hb.TARGETS[pattern](toks)
    return hb.PromptInput(toks, [_mat(L, d, seed), _mat(L, d, seed + 1, 0.5)], rows, targets)


#: every feature of the certified head at once: LayerNorm with gain, bias and eps, biases, scale 0.75/sqrt(4),
#: RoPE with attention scaling, relative keys, ALiBi, a window of 3
FULL = hb.HeadProgram(W_Q=_mat(4, 4, 1), W_K=_mat(4, 4, 2), b_Q=_vec(4, 3, 0.3), b_K=_vec(4, 4, 0.2),
                      norm="layernorm", norm_weight=_vec(4, 5), norm_bias=_vec(4, 6, 0.1), norm_eps=0.25,
                      scale_inv_sqrt=4, scale_factor=0.75, rope_inv_freq=[1.0, 0.1], rope_attention_scaling=1.25,
                      relative_keys=_mat(3, 4, 7, 0.4), alibi_slope=0.5, window=3)


def _mlp(d: int, f: int, act: str, seed: int, gated: bool, norm: str = "rmsnorm") -> hb.MLP:
    return hb.MLP(norm, _vec(d, seed), _vec(d, seed + 1, 0.1) if norm == "layernorm" else None, 0.125,
                  _mat(d, f, seed + 2, 0.6), _mat(f, d, seed + 3, 0.6), act, _vec(f, seed + 4, 0.2),
                  _mat(d, f, seed + 5, 0.6) if gated else None, _vec(f, seed + 6, 0.2) if gated else None,
                  _vec(d, seed + 7, 0.1))


def _prefix_head(seed: int, window: int | None, norm: str) -> hb.PrefixHead:
    qk = hb.HeadProgram(W_Q=_mat(4, 2, seed), W_K=_mat(4, 2, seed + 1), norm=norm, norm_weight=_vec(4, seed + 2),
                        norm_eps=0.0625, window=window, alibi_slope=0.25 if window else None)
    return hb.PrefixHead(qk, _mat(4, 2, seed + 3, 0.7), _mat(2, 4, seed + 4, 0.7), _vec(2, seed + 5, 0.1))


#: an RMSNorm head reading a residual stream two prefix layers deep: two heads and a gated SiLU MLP, then one head
#: and a plain ReLU MLP
DEEP = hb.HeadProgram(W_Q=_mat(4, 2, 11), W_K=_mat(4, 2, 12), norm="rmsnorm", norm_weight=_vec(4, 13), norm_eps=0.5,
                      scale_inv_sqrt=2, prefix=[
                          hb.PrefixLayer([_prefix_head(20, None, "layernorm"), _prefix_head(30, 2, "rmsnorm")],
                                         _vec(4, 40, 0.1), _mlp(4, 3, "silu", 50, True, "layernorm")),
                          hb.PrefixLayer([_prefix_head(60, None, "none")], None, _mlp(4, 3, "relu", 70, False))])


def _stack(act: str, gated: bool) -> hb.HeadProgram:
    """A plain head over one prefix layer whose MLP uses ``act``."""
    return hb.HeadProgram(W_Q=_mat(4, 2, 81), W_K=_mat(4, 2, 82),
                          prefix=[hb.PrefixLayer([_prefix_head(90, None, "none")], None, _mlp(4, 5, act, 95, gated))])


def _assert_rows_enclose(prog: hb.HeadProgram, prompt: hb.PromptInput, tau: Fraction, bits: int = 30) -> list[Any]:
    rows = hb.bound_prompt(prog, prompt, tau, index=3, enclose=bits)
    ref = ref_rows(prog, prompt)
    assert [(r.prompt, r.row, r.target) for r in rows] == [(3, i, t) for i, t in zip(prompt.rows, prompt.targets)]
    for r, (mass, margin, scores) in zip(rows, ref):
        assert r.mass_lo <= mass <= r.mass_hi and r.mass_hi - r.mass_lo < 1e-13, (r, mass)
        assert 0 < r.mass_lo and r.mass_hi <= 1  # a probability
        assert r.margin_lo <= margin and (margin == mpmath.inf or margin - r.margin_lo < 1e-13), (r, margin)
        want_status = "ge" if mass >= M(tau.numerator) / tau.denominator else "lt"
        assert r.status == want_status
        assert r.argmax == ("yes" if margin > 0 else "no")
        enc = r.scores
        assert enc is not None and enc.bits == bits and list(enc.keys) == [j for j in scores if j != r.target]
        for j, (lo, hi) in [(r.target, enc.target), *zip(enc.keys, enc.others)]:
            exact = scores[j] * 2 ** bits
            assert lo <= exact <= hi and hi - lo <= 2, (j, lo, exact, hi)
    return rows


def test_every_feature_of_the_certified_head_enclosed_tightly():
    prompt = _prompt(6, 4, 9)
    rows = _assert_rows_enclose(FULL, prompt, Fraction(1, 3))
    # the window of 3 admits keys i-2..i: row 5 compares its target with keys 3 and 5 only
    assert rows[-1].scores is not None and rows[-1].scores.keys == (3, 5)
    assert [r.status for r in rows] == ["ge", "lt", "ge", "ge", "ge"] and [r.argmax for r in rows] == [
        "no", "no", "no", "yes", "no"]


def test_a_head_two_prefix_layers_deep_enclosed_tightly():
    _assert_rows_enclose(DEEP, _prompt(5, 4, 17), Fraction(1, 4))


@pytest.mark.parametrize("act,gated", [("gelu_tanh", False), ("gelu", True), ("silu", False), ("relu", True)])
def test_each_mlp_activation_enclosed_tightly(act, gated):
    _assert_rows_enclose(_stack(act, gated), _prompt(4, 4, 23), Fraction(1, 2))


def test_induction_rows_and_rows_with_one_key():
    """An induction prompt's rows, and a window of 1: a row with only its target admitted has mass 1 and no margin."""
    tokens = [1, 2, 3, 1, 2, 1]
    prompt = _prompt(6, 4, 5, "induction", tokens)
    assert (prompt.rows, prompt.targets) == ([3, 4, 5], [1, 2, 4])
    _assert_rows_enclose(FULL, prompt, Fraction(1, 2))
    one = hb.HeadProgram(W_Q=_mat(4, 2, 1), W_K=_mat(4, 2, 2), window=1)
    r = hb.bound_prompt(one, hb.PromptInput([0, 1], [_mat(2, 4, 3)], [1], [1]), Fraction(1))[0]
    assert (r.mass_lo < 1 < r.mass_hi, r.margin_lo, r.status, r.argmax) == (True, math.inf, "ge", "yes")  # exactly 1
    with pytest.raises(hb.HeadCertificateError, match="row 1: target 0 is not an admitted key"):
        hb.bound_prompt(one, hb.PromptInput([0, 1], [_mat(2, 4, 3)], [1], [0]), Fraction(1))


def test_tied_scores_are_undecided_and_exact_ties_are_not_the_argmax():
    """Equal scores: through an inexact scale (1/sqrt(3)) the differences are balls around 0, so neither the mass at
    tau = 1/3 nor the argmax is decided; with an exact scale the differences are exactly 0: certainly not the strict
    argmax."""
    zero = [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    prompt = hb.PromptInput([0, 1, 2], [_mat(3, 4, 3)], [2], [1])
    fuzzy = hb.bound_prompt(hb.HeadProgram(W_Q=zero, W_K=zero, b_Q=[1.0, 2.0], b_K=[0.5, 0.5], scale_inv_sqrt=3),
                            prompt, Fraction(1, 3))[0]
    assert (fuzzy.status, fuzzy.argmax) == ("undecided", "undecided")
    assert fuzzy.mass_lo <= 1 / 3 <= fuzzy.mass_hi and fuzzy.margin_lo <= 0
    exact = hb.bound_prompt(hb.HeadProgram(W_Q=zero, W_K=zero), prompt, Fraction(1, 4))[0]
    assert (exact.status, exact.argmax, exact.margin_lo) == ("ge", "no", -5e-324)
    assert hb.bound_prompt(hb.HeadProgram(W_Q=zero, W_K=zero), prompt, Fraction(1, 2))[0].status == "lt"


def test_relative_keys_must_cover_every_offset():
    prog = hb.HeadProgram(W_Q=_mat(4, 2, 1), W_K=_mat(4, 2, 2), relative_keys=_mat(2, 2, 3))
    with pytest.raises(hb.HeadCertificateError, match="no relative key vector for offset 2"):
        hb.bound_prompt(prog, _prompt(3, 4, 1), Fraction(1, 2))
    prog.relative_keys = _mat(3, 2, 3)
    assert len(hb.bound_prompt(prog, _prompt(3, 4, 1), Fraction(1, 2))) == 2


def test_the_working_precision_is_restored_and_decides_the_width():
    import flint

    before = flint.ctx.prec
    wide = hb.bound_prompt(FULL, _prompt(4, 4, 9), Fraction(1, 2), precision=30, enclose=40)[0]
    assert flint.ctx.prec == before
    tight = hb.bound_prompt(FULL, _prompt(4, 4, 9), Fraction(1, 2), enclose=40)[0]
    assert wide.scores is not None and tight.scores is not None
    assert tight.scores.target[1] - tight.scores.target[0] <= 2 < wide.scores.target[1] - wide.scores.target[0]


def test_bound_head_numbers_the_prompts():
    got = hb.bound_head(FULL, [_prompt(3, 4, 1), _prompt(4, 4, 2)], Fraction(1, 2))
    assert [(r.prompt, r.row) for r in got.rows] == [(0, 1), (0, 2), (1, 1), (1, 2), (1, 3)]
    assert got.rows[0].scores is None


# ----------------------------------------------------------------------------- small exact helpers


def test_fixed_point_ends_round_outward_on_both_signs():
    import flint

    for value in (Fraction(1, 3), Fraction(-1, 3), Fraction(5, 2), Fraction(-7, 1)):
        ball = flint.arb(value.numerator) / value.denominator
        lo, hi = hb._fixed(ball, 10)
        exact = value * 1024
        assert lo <= exact <= hi and hi - lo == (0 if exact.denominator == 1 else 1), (value, lo, hi)
    assert hb._fixed(flint.arb(3) * 2 ** 20, 4) == (3 * 2 ** 24, 3 * 2 ** 24)  # a positive exponent: shifted left
    assert hb._fixed(flint.arb(1) / 3, 2) == (1, 2) and hb._fixed(-flint.arb(1) / 3, 2) == (-2, -1)


def test_directed_floats_and_decimals_bound_the_value():
    import flint

    third, two_thirds = flint.arb(1) / 3, flint.arb(2) / 3
    assert Fraction(hb._down(third)) < Fraction(1, 3) < Fraction(hb._up(third))
    assert Fraction(hb._down(two_thirds)) < Fraction(2, 3) < Fraction(hb._up(two_thirds))
    assert hb._up(third) - hb._down(third) < 2e-16
    cases = [(1 / 3, True, "0.333333333333"), (1 / 3, False, "0.333333333334"), (-1 / 3, True, "-0.333333333334"),
             (-1 / 3, False, "-0.333333333333"), (0.5, True, "0.5"), (0.0, False, "0"), (math.inf, True, "-inf"),
             (-math.inf, False, "inf"), (123456789012345.0, True, "123456789012000"),
             (123456789012345.0, False, "123456789013000"), (2.5e-20, True, "0.0000000000000000000249999999999")]
    assert [hb.fmt_directed(x, d) for x, d, _ in cases] == [want for _, _, want in cases]
    assert hb.fmt_directed(math.pi, True, digits=3) == "3.14" and hb.fmt_directed(math.pi, False, digits=3) == "3.15"
    assert hb._fmt_down(2 / 3) == "0.666666666666" and hb._fmt_up(2 / 3) == "0.666666666667"


def test_verdict_rule_and_counts():
    assert [hb.decide(10, y, n, Fraction(4, 5)) for y, n in [(8, 0), (7, 0), (7, 3), (7, 2), (0, 10)]] == [
        "HOLDS", "INCONCLUSIVE", "FAILS", "INCONCLUSIVE", "FAILS"]
    assert hb.decide(3, 1, 1, Fraction(1, 2)) == "INCONCLUSIVE" and hb.decide(3, 2, 1, Fraction(1, 2)) == "HOLDS"
    assert hb.decide(0, 0, 0, Fraction(1)) == "HOLDS"

    def row(status: str, argmax: str) -> hb.RowBound:
        return hb.RowBound(0, 1, 0, 0.1, 0.2, 0.0, status, argmax)

    bound = hb.HeadBound([row("ge", "yes"), row("ge", "no"), row("lt", "no"), row("undecided", "undecided"),
                          row("lt", "yes")])
    assert bound.counts() == {"rows": 5, "ge": 2, "lt": 2, "undecided": 1, "argmax_yes": 2, "argmax_no": 2}
    assert bound.verdict(Fraction(2, 5)) == "HOLDS" and bound.verdict(Fraction(3, 5)) == "INCONCLUSIVE"
    assert bound.verdict(Fraction(4, 5)) == "FAILS"
    assert bound.verdict(Fraction(2, 5), "argmax") == "HOLDS"
    bound.rows[0].argmax = "undecided"
    assert bound.verdict(Fraction(2, 5), "argmax") == "INCONCLUSIVE" and bound.verdict(Fraction(2, 5)) == "HOLDS"
    assert bound.verdict(Fraction(4, 5), "argmax") == "FAILS"


def test_row_json_and_kernel_claims():
    r = hb.RowBound(2, 5, 4, 1 / 3, 2 / 3, -0.25, "ge", "no")
    assert r.to_json() == {"prompt": 2, "row": 5, "target": 4, "status": "ge", "argmax": "no",
                           "mass": ["0.333333333333", "0.666666666667"], "margin_lower": "-0.25"}
    got = [hb.kernel_claim(hb.RowBound(0, 1, 0, 0, 1, 0, s, a), c) for s, a in
           [("ge", "no"), ("lt", "yes"), ("undecided", "yes"), ("ge", "yes"), ("lt", "no"), ("ge", "undecided")]
           for c in hb.CRITERIA]
    assert got == ["ge", "argmax_no", "lt", "argmax", None, "argmax", "ge", "argmax", "lt", "argmax_no", "ge", None]


def test_targets_and_statements():
    assert hb.prev_targets([5, 6, 7]) == ([1, 2], [0, 1]) and hb.prev_targets([5]) == ([], [])
    assert hb.induction_targets([4, 4, 9, 4, 9]) == ([1, 3, 4], [1, 2, 3])
    assert hb.statement("prev", "mass", Fraction(1, 2), Fraction(1)) == (
        "at every checked query row i, the head puts attention mass >= 1/2 on key i - 1")
    assert hb.statement("induction", "argmax", Fraction(1, 2), Fraction(9, 10)) == (
        "at a share >= 9/10 of the checked query rows i, the head has the key after the last earlier occurrence of "
        "x_i as the strict argmax")


def test_rationals_as_typed():
    good = {"1/2": Fraction(1, 2), " 0.25 ": Fraction(1, 4), "-3": Fraction(-3), "1e-3": Fraction(1, 1000),
            ".5": Fraction(1, 2), "+2.": Fraction(2), "1E+2": Fraction(100), "7/" + "1" * 40: Fraction(7, int("1" * 40))}
    assert {k: hb.parse_rational(k) for k in good} == good
    assert [hb.parse_rational(t) for t in ("1/0", "1e-9999", "x", "", "1/2/3", "1" * 41, "1" * 101, "0x10", "1e")] == [
        None] * 9
    assert hb._fraction("1/2", "threshold") == Fraction(1, 2) and hb._fraction("1", "fraction") == 1
    for bad, why in [("0", "is not in"), ("3/2", "is not in"), ("-1/2", "is not in"), ("a", "is not a rational"),
                     (0.5, "is not a rational")]:
        with pytest.raises(hb.HeadCertificateError, match=f"threshold .* {why}"):
            hb._fraction(bad, "threshold")


# ----------------------------------------------------------------------------- reading and writing


def test_programs_round_trip_through_json():
    for prog in (FULL, DEEP, _stack("gelu", True)):
        text = json.dumps(prog.to_json())
        assert hb.HeadProgram.from_json(json.loads(text)) == prog
    d = FULL.to_json()
    assert (d["norm_eps"], d["scale_inv_sqrt"], d["scale_factor"], d["window"]) == ("0x1.0000000000000p-2", 4,
                                                                                    "0x1.8000000000000p-1", 3)
    prompt = _prompt(3, 4, 2)
    assert hb.PromptInput.from_json(json.loads(json.dumps(prompt.to_json())), 4) == prompt
    bare = hb.HeadProgram.from_json({"W_Q": [["0x1p+0"]], "W_K": [["0x1p+1"]]})
    assert bare == hb.HeadProgram(W_Q=[[1.0]], W_K=[[2.0]])  # every default: no norm, eps 0, scales 1, no RoPE
    assert (bare.d_model, bare.d_head, bare.norm_spec) == (1, 1, ("none", None, None, 0.0))


def _refusal(d: dict[str, Any]) -> str:
    with pytest.raises(hb.HeadCertificateError) as e:
        hb.HeadProgram.from_json(d)
    return str(e.value)


def test_every_malformed_program_is_refused_by_name():
    base = FULL.to_json()

    def edit(**kw: Any) -> dict[str, Any]:
        return {**copy.deepcopy(base), **kw}

    without_wk = copy.deepcopy(base)
    del without_wk["W_K"]
    cases = [
        (edit(W_Q=[]), "W_Q is empty"), (edit(W_Q=[[]]), "W_Q is empty"),
        (edit(W_K=base["W_K"][:3]), "W_Q and W_K must both be [d_model, d_head]"),
        (edit(W_Q=[base["W_Q"][0], base["W_Q"][1][:3]] + base["W_Q"][2:]), "W_Q and W_K must both be"),
        (edit(W_K=[r[:3] for r in base["W_K"]]), "a matrix row does not have 4 entries"),
        (edit(b_Q=base["b_Q"][:3]), "b_Q must have 4 entries"),
        (edit(norm_weight=base["norm_weight"] + ["0x1p+0"]), "norm_weight must have 4 entries"),
        (edit(norm="batchnorm"), "unknown norm 'batchnorm'"),
        (edit(rope_inv_freq=["0x1p+0"] * 3), "rope_inv_freq has more than d_head/2 entries"),
        (edit(rope_inv_freq=[]), "rope_inv_freq has more than d_head/2 entries"),
        (edit(window=0), "window must be a positive integer"), (edit(window=True), "window must be a positive"),
        (edit(window="3"), "window must be a positive"), (edit(scale_inv_sqrt=0), "scale_inv_sqrt must be a positive"),
        (edit(scale_inv_sqrt=False), "scale_inv_sqrt must be"), (edit(scale_inv_sqrt=2.0), "scale_inv_sqrt must be"),
        (edit(norm_eps="inf"), "non-finite value 'inf'"), (edit(norm_eps=0.5), "expected a float in hex notation"),
        (edit(W_Q="x"), "expected a matrix"), (without_wk, "malformed head: KeyError: 'W_K'"),
        (edit(relative_keys=[["0x1p+0"] * 3]), "a matrix row does not have 4 entries"),
        (edit(prefix=[{"heads": []}]), "a prefix layer must list its heads"),
    ]
    got = [_refusal(d) for d, _ in cases]
    assert [g[:len(why)] for g, (_, why) in zip(got, cases)] == [why for _, why in cases], got
    with pytest.raises(hb.HeadCertificateError, match="'program' must be an object"):
        hb.HeadProgram.from_json([])


def test_malformed_prefix_layers_heads_and_mlps_are_refused():
    deep = DEEP.to_json()

    def prefix_edit(fn: Any) -> str:
        d = copy.deepcopy(deep)
        fn(d["prefix"])
        return _refusal(d)

    def set_(path: list[Any], value: Any) -> Any:
        def fn(p: Any) -> None:
            for k in path[:-1]:
                p = p[k]
            p[path[-1]] = value
        return fn

    assert prefix_edit(set_([0], "x")) == "a prefix layer must list its heads"
    assert prefix_edit(set_([0, "heads"], "x")) == "a prefix layer must list its heads"
    assert prefix_edit(set_([0, "heads", 0], 1)) == "a prefix head must be an object"
    shape = "a prefix head's W_V must be [d_model, d_head] and W_O [d_head, d_model]"
    assert prefix_edit(set_([0, "heads", 0, "W_V"], deep["prefix"][0]["heads"][0]["W_V"][:3])) == shape
    assert prefix_edit(set_([0, "heads", 0, "W_O"], deep["prefix"][0]["heads"][0]["W_O"][:1])) == shape
    assert prefix_edit(set_([0, "heads", 0, "W_V"], [])) == shape
    ragged = copy.deepcopy(deep["prefix"][0]["heads"][0]["W_V"])
    ragged[3] = ragged[3][:1]
    assert prefix_edit(set_([0, "heads", 0, "W_V"], ragged)) == shape
    small_qk = hb.HeadProgram(W_Q=[[1.0]], W_K=[[1.0]]).to_json()
    assert prefix_edit(set_([0, "heads", 0, "qk"], small_qk)) == shape
    assert prefix_edit(set_([0, "heads", 0, "b_V"], ["0x1p+0"])) == "b_V must have 2 entries"
    assert prefix_edit(set_([0, "heads", 0, "b_V"], "0x1p+0")) == "b_V must have 2 entries"
    assert prefix_edit(set_([0, "out_bias"], ["0x1p+0"])) == "out_bias must have 4 entries"
    assert prefix_edit(set_([0, "mlp"], [])) == "an MLP must be an object"
    mlp_kinds = "MLP norm must be one of ('layernorm', 'rmsnorm', 'none') and act one of ('gelu_tanh', 'silu', 'relu', 'gelu')"
    assert prefix_edit(set_([0, "mlp", "act"], "tanh")) == mlp_kinds
    assert prefix_edit(set_([0, "mlp", "norm"], "batch")) == mlp_kinds
    W_in = deep["prefix"][0]["mlp"]["W_in"]
    assert prefix_edit(set_([0, "mlp", "W_in"], W_in[:3])) == "W_in must be [d_model, d_ff]"
    assert prefix_edit(set_([0, "mlp", "W_in"], [[]] * 4)) == "W_in must be [d_model, d_ff]"
    assert prefix_edit(set_([0, "mlp", "W_in"], [W_in[0][:2]] + W_in[1:])) == "a matrix row does not have 2 entries"
    assert prefix_edit(set_([0, "mlp", "W_out"], deep["prefix"][0]["mlp"]["W_out"][:2])) == "W_out must be [d_ff, d_model]"
    assert prefix_edit(set_([0, "mlp", "W_gate"], deep["prefix"][0]["mlp"]["W_gate"][:3])) == (
        "W_gate must be [d_model, d_ff]")
    assert prefix_edit(set_([0, "mlp", "b_gate"], ["0x1p+0"])) == "b_gate must have 3 entries"
    assert prefix_edit(set_([0, "mlp", "b_in"], ["0x1p+0"])) == "b_in must have 3 entries"
    assert prefix_edit(set_([0, "mlp", "b_out"], ["0x1p+0"])) == "b_out must have 4 entries"
    assert prefix_edit(set_([0, "mlp", "norm_weight"], ["0x1p+0"])) == "norm_weight must have 4 entries"
    assert prefix_edit(set_([0, "mlp", "norm_bias"], ["0x1p+0"])) == "norm_bias must have 4 entries"
    no_eps = copy.deepcopy(deep)
    del no_eps["prefix"][0]["mlp"]["norm_eps"]
    assert hb.HeadProgram.from_json(no_eps).prefix[0].mlp.norm_eps == 0.0  # type: ignore[union-attr]


def test_malformed_prompts_are_refused():
    good = _prompt(3, 4, 2).to_json()
    cases = [({**good, "tokens": [0, 1, True]}, "malformed prompt: TypeError: expected a list of integers"),
             ({**good, "rows": "1"}, "malformed prompt: TypeError"), ({"tokens": [1]}, "malformed prompt: KeyError"),
             ({**good, "components": []}, "each input component must have one row per token"),
             ({**good, "tokens": [0, 1]}, "each input component must have one row per token"),
             ({**good, "targets": [0]}, "rows and targets must pair up"),
             ({**good, "rows": [1, 3]}, "rows and targets must pair up"),
             ({**good, "targets": [0, 3]}, "rows and targets must pair up"),
             ({**good, "targets": [-1, 1]}, "rows and targets must pair up")]
    for d, why in cases:
        with pytest.raises(hb.HeadCertificateError) as e:
            hb.PromptInput.from_json(d, 4)
        assert str(e.value).startswith(why), (d, str(e.value))
    assert hb.PromptInput.from_json({**good, "rows": [2, 2], "targets": [2, 0]}, 4).targets == [2, 0]


# ----------------------------------------------------------------------------- certificates and recheck


def _document(prog: hb.HeadProgram, prompts: list[hb.PromptInput], pattern: str, criterion: str, tau: Fraction,
              fraction: Fraction, bits: int | None) -> dict[str, Any]:
    """The certificate `verify head --certificates` writes, through the functions it calls: with ``bits``, the kernel
    section of every decided row as `verify head --kernel` keeps it (head_cli.kernel_rows)."""
    from verify.frontends.head_cli import kernel_rows

    bound = hb.bound_head(prog, prompts, tau, enclose=bits)
    doc = hb.certificate(prog, prompts, bound, tau=tau, fraction=fraction, criterion=criterion,
                         meta={"pattern": pattern, "statement": hb.statement(pattern, criterion, tau, fraction)})
    if bits is not None:
        doc["kernel"] = {"bits": bits, "rows": [r.to_json() for r in kernel_rows(bound, criterion)]}
    return doc


def _certificate(prog: hb.HeadProgram = FULL, pattern: str = "prev", criterion: str = "mass",
                 tau: Fraction = Fraction(1, 3), fraction: Fraction = Fraction(1, 2), bits: int | None = None
                 ) -> dict[str, Any]:
    tokens = [1, 2, 3, 1, 2, 1] if pattern == "induction" else None
    prompts = [_prompt(6 if tokens else 4, prog.d_model, 9, pattern, tokens), _prompt(6, prog.d_model, 4, pattern, tokens)]
    return _document(prog, prompts, pattern, criterion, tau, fraction, bits)


def test_a_certificate_states_its_decisions_and_rechecks():
    doc = _certificate()
    assert (doc["format"], doc["kind"], doc["threshold"], doc["fraction"], doc["criterion"], doc["precision_bits"]) == (
        "verify-head-certificate/1", "head-bound", "1/3", "1/2", "mass", 128)
    assert doc["claimed"]["counts"] == {"rows": 8, "ge": 4, "lt": 4, "undecided": 0, "argmax_yes": 1, "argmax_no": 7}
    assert doc["claimed"]["verdict"] == "HOLDS"  # 4 of 8 rows, ceil(8 / 2) = 4 needed
    assert doc["content_sha256"] == hb.content_digest({"program": doc["program"], "prompts": doc["prompts"]})
    assert len(doc["content_sha256"]) == 64
    assert hb.recheck(doc) == (True, "head bound re-derived in arb: 4/8 rows with mass >= 1/3 on the target, 4 below, "
                                     "the target the strict argmax at 1; verdict HOLDS (mass, fraction 1/2)")
    ind = _certificate(DEEP, "induction", "argmax", Fraction(1, 4), Fraction(1, 4), bits=24)
    ok, why = hb.recheck(ind)
    assert ok and why.endswith("the target the strict argmax at 1; verdict FAILS (argmax, fraction 1/4)"), why


def _rehash(doc: dict[str, Any]) -> dict[str, Any]:
    doc["content_sha256"] = hb.content_digest({"program": doc["program"], "prompts": doc["prompts"]})
    return doc


def test_recheck_refuses_each_kind_of_edit():
    doc = _certificate()

    def edited(fn: Any, rehash: bool = False) -> str:
        d = copy.deepcopy(doc)
        fn(d)
        if rehash:
            _rehash(d)
        ok, why = hb.recheck(d)
        assert not ok
        return why

    def put(key: str, value: Any) -> Any:
        return lambda d: d.__setitem__(key, value)

    assert edited(put("format", "verify-head-certificate/2")) == (
        "not a head certificate (format 'verify-head-certificate/2')")
    assert edited(put("program", [])) == "'program' must be an object"
    assert edited(put("prompts", [])) == "no prompts"
    assert edited(put("prompts", {})) == "no prompts"
    assert edited(lambda d: d["program"]["W_Q"][0].__setitem__(0, "0x1p+0")) == (
        "the head or prompts do not match the recorded content hash (edited)")
    assert edited(lambda d: d["prompts"][0]["tokens"].__setitem__(0, 5)) == (
        "the head or prompts do not match the recorded content hash (edited)")
    assert edited(put("content_sha256", None)) == "the head or prompts do not match the recorded content hash (edited)"
    assert edited(put("threshold", "2")) == "threshold 2 is not in (0, 1]"
    assert edited(put("fraction", "0")) == "fraction 0 is not in (0, 1]"
    assert edited(put("criterion", "max")) == "unknown criterion 'max' (one of mass, argmax)"
    assert edited(put("precision_bits", 64)) == "precision_bits 64: the balls are re-derived at 128"
    assert edited(put("pattern", "next")) == "unknown pattern 'next'"
    assert edited(put("statement", doc["statement"] + ".")) == (
        "the statement does not say what the pattern, criterion, threshold and fraction decide")
    assert edited(put("threshold", "1/4")).startswith("the statement does not say")
    assert edited(lambda d: d["prompts"][1]["targets"].__setitem__(0, 1), rehash=True) == (
        "prompt 1: row 1's target 1 is not its prev target in the prompt's tokens")
    assert edited(lambda d: d["prompts"][1].update(rows=[1, 1], targets=[0, 0]), rehash=True) == (
        "prompt 1: a row is listed twice")
    flipped = {"ge": "lt", "lt": "ge"}[doc["claimed"]["rows"][2]["status"]]
    assert edited(lambda d: d["claimed"]["rows"][2].__setitem__("status", flipped)).startswith(
        "the rows' decisions or enclosures differ from the re-derived ones (first: {\"argmax\": ")
    assert edited(lambda d: d["claimed"]["rows"].pop()) == (
        "the rows' decisions or enclosures differ from the re-derived ones (first: a row missing or added)")
    assert edited(lambda d: d["claimed"]["rows"][0]["mass"].__setitem__(0, "0.1")).startswith("the rows' decisions")
    assert edited(lambda d: d["claimed"]["counts"].__setitem__("ge", 5)) == (
        "the claimed counts differ from the re-derived ones")
    assert edited(lambda d: d["claimed"].__setitem__("verdict", "FAILS")) == (
        "the claimed verdict 'FAILS' differs from 'HOLDS'")
    assert edited(lambda d: d.pop("claimed")) == (
        "the rows' decisions or enclosures differ from the re-derived ones (first: a row missing or added)")
    assert edited(put("kernel", {"bits": 7, "rows": []})) == "the kernel section is not {'bits': 8..60, 'rows': [...]}"
    assert edited(put("kernel", {"bits": 61, "rows": []})).startswith("the kernel section is not")
    assert edited(put("kernel", {"bits": True, "rows": []})).startswith("the kernel section is not")
    assert edited(put("kernel", {"rows": []})).startswith("the kernel section is not")
    assert edited(put("kernel", [])).startswith("the kernel section is not")
    assert edited(lambda d: d["program"].__setitem__("W_Q", "x"), rehash=True) == "expected a matrix (a list of rows)"
    assert edited(lambda d: d["program"].__setitem__("relative_keys", [["0x0p+0"] * 4]), rehash=True) == (
        "no relative key vector for offset 1")
    assert edited(put("threshold", None)) == "threshold 'None' is not a rational number such as 1/2"
    assert hb.recheck({**doc, "kernel": {"bits": 8, "rows": []}})[0]  # an empty kernel section: nothing to check


def test_recheck_caps_the_work_a_file_can_ask_for(monkeypatch):
    """positions^2 (d_head + 1) + positions d_model d_head k per prompt and head (k = 2 for the certified head, 3 for
    a prefix head), plus positions d_ff d_model (3 when gated, else 2) per MLP; refused above MAX_WORK."""
    doc = _certificate(DEEP, "prev", fraction=Fraction(1))
    sizes = [4, 6]
    heads = [(4, 2, 2), (4, 2, 3), (4, 2, 3), (4, 2, 3)]
    work = sum(L * L * (dh + 1) + L * dm * dh * k for L in sizes for dm, dh, k in heads)
    work += sum(L * 3 * 4 * g for L in sizes for g in (3, 2))
    assert work == 2104  # 12 L^2 + 148 L at L = 4 and 6, by hand
    monkeypatch.setattr(hb, "MAX_WORK", work)
    assert hb.recheck(doc)[0]
    monkeypatch.setattr(hb, "MAX_WORK", work - 1)
    assert hb.recheck(doc) == (False, f"too large to re-check here ({work} > {work - 1} multiply-adds)")


def test_recheck_reads_the_kernel_section_against_the_rederived_rows():
    doc = _certificate(bits=20)
    assert len(doc["kernel"]["rows"]) == 8 and hb.recheck(doc)[0]

    def why(fn: Any) -> str:
        d = copy.deepcopy(doc)
        fn(d["kernel"])
        ok, reason = hb.recheck(d)
        assert not ok
        return reason

    row0 = doc["kernel"]["rows"][0]
    assert why(lambda k: k.__setitem__("rows", {})) == "kernel section: no list of rows"
    assert why(lambda k: k["rows"].__setitem__(0, [])) == "kernel section: row 0 is not an object"
    assert why(lambda k: k["rows"].append(dict(row0))) == (
        "kernel section: row 8 (prompt 0, query 1) is not a decided row")
    assert why(lambda k: k["rows"][1].__setitem__("row", 9)) == (
        "kernel section: row 1 (prompt 0, query 9) is not a decided row")
    assert why(lambda k: k["rows"][1].__setitem__("prompt", "0" * 20)) == (
        "kernel section: row 1 (prompt 0000000000, query 2) is not a decided row")
    differ = "kernel section: row 0: its claim, target or keys differ from the decided row's (ge, key 0)"
    assert why(lambda k: k["rows"][0].__setitem__("claim", "lt")) == differ
    assert why(lambda k: k["rows"][0].__setitem__("target", 1)) == differ
    assert why(lambda k: k["rows"][0].__setitem__("keys", [0])) == differ
    assert why(lambda k: k["rows"][0].__setitem__("others", [])) == "kernel section: row 0: 0 key bounds for 1 keys"
    assert why(lambda k: k["rows"][0].__setitem__("target_score", ["1", "2", "3"])) == (
        "kernel section: row 0: a bound is not two integer strings")
    assert why(lambda k: k["rows"][0].__setitem__("target_score", [1, 2])) == (
        "kernel section: row 0: a bound is not two integer strings")
    assert why(lambda k: k["rows"][0].__setitem__("target_score", "12")) == (
        "kernel section: row 0: a bound is not two integer strings")
    assert why(lambda k: k["rows"][0]["others"].__setitem__(0, ["1.5", "2"])) == (
        "kernel section: row 0: a bound is not two integer strings")
    lo, hi = (int(v) for v in row0["target_score"])
    assert why(lambda k: k["rows"][0].__setitem__("target_score", [str(lo + 1), str(hi + 5)])) == (
        f"kernel section: row 0 (prompt 0, query 1): [{lo + 1}, {hi + 5}] does not contain the re-derived enclosure "
        f"[{lo}, {hi}] (2^-20)")
    assert why(lambda k: k["rows"][0].__setitem__("target_score", [str(lo), str(hi - 1)])).startswith(
        f"kernel section: row 0 (prompt 0, query 1): [{lo}, {hi - 1}] does not contain")
    olo, ohi = (int(v) for v in row0["others"][0])
    assert why(lambda k: k["rows"][0]["others"].__setitem__(0, [str(olo), str(ohi - 1)])).startswith(
        f"kernel section: row 0 (prompt 0, query 1): [{olo}, {ohi - 1}] does not contain")
    # wider bounds, fewer rows: what Coq accepted may be a subset, and outward rounding is allowed
    wider = copy.deepcopy(doc)
    wider["kernel"]["rows"] = wider["kernel"]["rows"][3:] + wider["kernel"]["rows"][:1]
    wider["kernel"]["rows"][-1]["target_score"] = [str(lo - 5), str(hi + 5)]
    assert hb.recheck(wider)[0]
    argmax = _certificate(criterion="argmax", bits=16)
    assert [r["claim"] for r in argmax["kernel"]["rows"]] == ["argmax_no"] * 4 + ["argmax"] + ["argmax_no"] * 3
    assert hb.recheck(argmax)[0]


def test_hostile_values_inside_a_certificate_are_refused_not_raised():
    doc = _certificate()
    for fn, why in [(lambda d: d["prompts"].__setitem__(0, 3), "malformed prompt: TypeError"),
                    (lambda d: d["claimed"].__setitem__("rows", 3), "the rows' decisions"),
                    (lambda d: d.__setitem__("claimed", [1]), "malformed head certificate: AttributeError")]:
        d = copy.deepcopy(doc)
        fn(d)
        if why.startswith("malformed prompt"):
            _rehash(d)
        ok, reason = hb.recheck(d)
        assert not ok and reason.startswith(why), reason


# ----------------------------------------------------------------------------- survivors of the mutation pass, killed


def test_rope_with_three_frequencies_and_partial_rotary():
    """Kills ``y[m + h]`` -> ``y[m | h]`` (equal while h is a power of two and m < h) with h = 3, and the refusal
    ``2 len(inv) > d_head`` -> ``is not`` (a rotary part narrower than the head, GPT-NeoX's rotary_pct, is valid)."""
    prog = hb.HeadProgram(W_Q=_mat(4, 6, 31), W_K=_mat(4, 6, 32), rope_inv_freq=[1.0, 0.3, 0.05],
                          rope_attention_scaling=0.9)
    _assert_rows_enclose(prog, _prompt(5, 4, 33), Fraction(1, 2))
    partial = hb.HeadProgram(W_Q=_mat(4, 6, 31), W_K=_mat(4, 6, 32), rope_inv_freq=[1.0])
    assert hb.HeadProgram.from_json(partial.to_json()) == partial
    _assert_rows_enclose(partial, _prompt(4, 4, 34), Fraction(1, 2))


def test_vectors_are_checked_by_length_not_identity():
    """Kills ``len(v) != n`` -> ``is not`` in _unvec: equal ints above 256 are distinct objects in CPython."""
    assert hb._unvec(["0x1p+0"] * 300, 300, "b_out") == [1.0] * 300
    with pytest.raises(hb.HeadCertificateError, match="^b_out must have 300 entries$"):
        hb._unvec(["0x1p+0"] * 299, 300, "b_out")


def test_the_decisions_on_balls():
    """Each decision on balls that hold points on both sides, one side, or one exact point: a mass exactly tau is
    'ge' (kills ``>=`` -> ``>``), a difference exactly 0 makes the target certainly not the strict argmax (kills
    ``dd >= 0`` -> ``> 0`` and ``dd < 0`` -> ``<= 0``)."""
    import flint

    half, quarter = flint.arb(1) / 2, flint.arb(1) / 4
    cross, above, below = flint.arb(0.5, 0.25), flint.arb(0.8, 0.1), flint.arb(0.2, 0.1)
    assert [hb.mass_status(b, half) for b in (cross, above, below, half, quarter)] == [
        "undecided", "ge", "lt", "ge", "lt"]
    neg, straddle, pos, zero = flint.arb(-1.5, 0.5), flint.arb(0, 1), flint.arb(1.5, 0.5), flint.arb(0)
    assert [hb.argmax_status(d) for d in ([neg], [neg, straddle], [straddle, neg], [neg, zero], [pos, straddle], [],
                                         [neg, neg])] == ["yes", "undecided", "undecided", "no", "no", "yes", "yes"]


def test_the_work_of_a_gated_and_a_plain_mlp(monkeypatch):
    """Kills ``3 if W_gate else 2`` -> ``3 if not W_gate else 2`` (a gated MLP costs three d_ff x d_model products)
    with MLPs of different widths: a gated one of d_ff 5 and a plain one of d_ff 3."""
    prog = hb.HeadProgram(W_Q=_mat(4, 2, 81), W_K=_mat(4, 2, 82), prefix=[
        hb.PrefixLayer([_prefix_head(90, None, "none")], None, _mlp(4, 5, "silu", 95, True)),
        hb.PrefixLayer([_prefix_head(60, None, "none")], None, _mlp(4, 3, "relu", 70, False))])
    doc = _certificate(prog, fraction=Fraction(1))
    # per prompt: 3 heads L^2 3, the certified head's L 4 2 2, two prefix heads' L 4 2 3; MLPs L 5 4 3 + L 3 4 2
    work = sum(3 * L * L * 3 + L * 16 + 2 * L * 24 + L * 60 + L * 24 for L in (4, 6))
    assert work == 1948  # 9 L^2 + 148 L at L = 4 and 6, by hand
    monkeypatch.setattr(hb, "MAX_WORK", work - 1)
    assert hb.recheck(doc) == (False, f"too large to re-check here ({work} > {work - 1} multiply-adds)")


def test_an_unexpected_error_is_reported_in_one_clipped_line(monkeypatch):
    """Kills the 120-character clip of an unexpected error's message."""
    def boom(d: Any) -> Any:
        raise ValueError("v" * 300)

    monkeypatch.setattr(hb.HeadProgram, "from_json", staticmethod(boom))
    assert hb.recheck({"format": hb.FORMAT}) == (False, "malformed head certificate: ValueError: " + "v" * 120)


def test_positions_past_256_compare_by_value():
    """Kills ``j != t`` -> ``is not`` (equal ints above 256 are distinct objects: the target would count as another
    key, exp(0) added to the mass's denominator)."""
    L = 260
    prog = hb.HeadProgram(W_Q=_mat(2, 2, 3), W_K=_mat(2, 2, 4), window=3)
    prompt = hb.PromptInput(list(range(L)), [_mat(L, 2, 5)], [L - 1], [L - 2])
    _assert_rows_enclose(prog, prompt, Fraction(1, 2))


def test_a_certificate_read_from_json_rechecks_and_a_wrong_claim_is_refused():
    """Kills ``doc.get("format") != FORMAT`` -> ``is not`` (a format read from a file is another str object) and the
    kernel row's ``claim != want`` -> ``>`` ('argmax' sorts before 'ge')."""
    doc = json.loads(json.dumps(_certificate(bits=20)))
    assert hb.recheck(doc)[0]
    doc["kernel"]["rows"][0]["claim"] = "argmax"
    assert hb.recheck(doc) == (False, "kernel section: row 0: its claim, target or keys differ from the decided row's "
                                      "(ge, key 0)")


def test_wide_programs_and_longer_rows_are_read_by_length():
    """Kills ``len(WK) != dm`` and ``len(out) != n`` -> ``is not`` (a 300-wide model: equal ints above 256 are
    distinct objects), ``len(r) != dh`` -> ``<`` (a W_Q row longer than the first), ``len(W_gate) != d_model`` ->
    ``<`` (W_gate with a row too many) and ``len(rows) != len(targets)`` -> ``>`` (more targets than rows)."""
    wide = hb.HeadProgram(W_Q=_mat(300, 1, 1), W_K=_mat(300, 1, 2), norm="rmsnorm", norm_weight=_vec(300, 3))
    assert hb.HeadProgram.from_json(json.loads(json.dumps(wide.to_json()))) == wide
    d = FULL.to_json()
    d["W_Q"] = [d["W_Q"][0], d["W_Q"][1] + ["0x1p+0"]] + d["W_Q"][2:]
    assert _refusal(d) == "W_Q and W_K must both be [d_model, d_head]"
    deep = DEEP.to_json()
    deep["prefix"][0]["mlp"]["W_gate"] = deep["prefix"][0]["mlp"]["W_gate"] + [deep["prefix"][0]["mlp"]["W_gate"][0]]
    assert _refusal(deep) == "W_gate must be [d_model, d_ff]"
    with pytest.raises(hb.HeadCertificateError, match="^rows and targets must pair up"):
        hb.PromptInput.from_json({**_prompt(3, 4, 2).to_json(), "rows": [1], "targets": [0, 1]}, 4)


def test_certificates_read_from_json_recheck_with_every_norm_and_activation():
    """Kills ``kind == "silu"`` -> ``is`` (and its siblings): kinds read from a file are not the interned literals."""
    for prog in (DEEP, _stack("gelu_tanh", False), _stack("gelu", True), _stack("relu", False), FULL):
        doc = json.loads(json.dumps(_certificate(prog, fraction=Fraction(1, 8))))
        assert hb.recheck(doc)[0], prog.prefix[0].mlp.act if prog.prefix else "FULL"  # type: ignore[union-attr]


def test_counts_read_decisions_by_value():
    """Kills ``r.argmax == "yes"`` -> ``is`` (and the other counts'): decisions read back from JSON."""
    rows = [hb.RowBound(0, 1, 0, 0.1, 0.2, 0.0, *json.loads('["ge", "yes"]')),
            hb.RowBound(0, 2, 1, 0.1, 0.2, 0.0, *json.loads('["lt", "no"]')),
            hb.RowBound(0, 3, 2, 0.1, 0.2, 0.0, *json.loads('["undecided", "undecided"]'))]
    assert hb.HeadBound(rows).counts() == {"rows": 3, "ge": 1, "lt": 1, "undecided": 1, "argmax_yes": 1,
                                           "argmax_no": 1}


def test_the_content_hash_is_of_the_canonical_json():
    """Kills ``sort_keys=True`` -> ``False``: the hash is sha256 of the sorted, compact JSON (a file written with
    another key order has the same hash)."""
    import hashlib

    assert hb.content_digest({"b": [1, {"d": 2, "c": 3}], "a": "x"}) == hashlib.sha256(
        b'{"a":"x","b":[1,{"c":3,"d":2}]}').hexdigest()


def test_more_edges_of_the_decimals_messages_and_bits():
    """Kills ``e >= 0`` -> ``e > 0`` in fmt_directed (12 digits before the point), the query's 10-character clip in
    the kernel section's message, and ``bits <= 60`` -> ``< 60``."""
    assert hb.fmt_directed(123456789012.5, True) == "123456789012" and hb.fmt_directed(123456789012.5, False) == (
        "123456789013")
    doc = _certificate(bits=20)
    doc["kernel"]["rows"][1]["row"] = "9" * 20
    assert hb.recheck(doc) == (False, "kernel section: row 1 (prompt 0, query 9999999999) is not a decided row")
    assert hb.recheck(_certificate(bits=60))[0] and hb.recheck(_certificate(bits=8))[0]


def test_wide_heads_long_prompts_and_more_shapes_are_read_by_length():
    """Kills, past CPython's small ints, ``len(r) != ncols``, ``len(r) != len(WV[0])``, ``len(W_in) != d_model``,
    ``len(c) != len(toks)``, ``derived.get(r) != t`` and ``len(set(p.rows)) != len(p.rows)`` -> ``is not``; and
    d_head taken from W_Q's last row, W_K with a row too many, a window of 1."""
    wide_head = hb.HeadProgram(W_Q=_mat(1, 300, 1), W_K=_mat(1, 300, 2), relative_keys=_mat(2, 300, 3), prefix=[
        hb.PrefixLayer([hb.PrefixHead(hb.HeadProgram(W_Q=[[1.0]], W_K=[[0.5]]), _mat(1, 300, 4), _mat(300, 1, 5))])])
    assert hb.HeadProgram.from_json(json.loads(json.dumps(wide_head.to_json()))) == wide_head
    wide_mlp = hb.HeadProgram(W_Q=_mat(300, 1, 1), W_K=_mat(300, 1, 2), prefix=[hb.PrefixLayer(
        [hb.PrefixHead(hb.HeadProgram(W_Q=_mat(300, 1, 6), W_K=_mat(300, 1, 7)), _mat(300, 1, 8), _mat(1, 300, 9))],
        None, hb.MLP("none", None, None, 0.0, _mat(300, 2, 10), _mat(2, 300, 11), "relu"))])
    assert hb.HeadProgram.from_json(json.loads(json.dumps(wide_mlp.to_json()))) == wide_mlp
    long = hb.PromptInput(list(range(301)), [_mat(301, 1, 12)], list(range(1, 300)), list(range(0, 299)))
    assert hb.PromptInput.from_json(json.loads(json.dumps(long.to_json())), 1) == long
    hb._check_targets("prev", [hb.PromptInput.from_json(json.loads(json.dumps(long.to_json())), 1)])
    d = FULL.to_json()
    assert _refusal({**d, "W_Q": d["W_Q"][:3] + [d["W_Q"][3][:3]]}) == "W_Q and W_K must both be [d_model, d_head]"
    assert _refusal({**d, "W_K": d["W_K"] + [d["W_K"][0]]}) == "W_Q and W_K must both be [d_model, d_head]"
    assert hb.HeadProgram.from_json({**d, "window": 1}).window == 1


def test_targets_smaller_than_derived_are_refused_by_name():
    """Kills ``derived.get(r) != t`` -> ``<`` and the message's ``bad[0]`` / ``bad[1]`` read from the wrong end."""
    p = hb.PromptInput([5, 6, 7], [_mat(3, 4, 1)], [2], [0])
    with pytest.raises(hb.HeadCertificateError) as e:
        hb._check_targets("prev", [p])
    assert str(e.value) == "prompt 0: row 2's target 0 is not its prev target in the prompt's tokens"


def test_relative_keys_are_checked_per_offset_inside_the_window():
    """Kills ``i - j >= ncols`` -> ``i >> j`` / ``is`` and the offset in the message read as ``i | j`` or ``i << j``:
    row 5, its own target, with a window of 3 reaches offsets 2, 1, 0; there is one relative key vector."""
    prog = hb.HeadProgram(W_Q=_mat(4, 2, 1), W_K=_mat(4, 2, 2), relative_keys=_mat(1, 2, 3), window=3)
    with pytest.raises(hb.HeadCertificateError) as e:
        hb.bound_prompt(prog, hb.PromptInput(list(range(6)), [_mat(6, 4, 4)], [5], [5]), Fraction(1, 2))
    assert str(e.value) == "no relative key vector for offset 2"


def test_defaults_counts_signs_and_the_work_of_an_odd_head(monkeypatch):
    """Kills bound_prompt's default ``index = 0`` -> ``-1``; the 'lt' count's ``==`` -> ``<`` ('ge' sorts before
    'lt'); the sign of a decimal whose digits are ``-1`` (``n < 0`` -> ``n < -1``); ``dh + 1`` -> ``dh ^ 1`` (an
    odd d_head); the cap MAX_WORK itself."""
    assert hb.bound_prompt(FULL, _prompt(3, 4, 1), Fraction(1, 2))[0].prompt == 0
    rows = [hb.RowBound(0, k, 0, 0.1, 0.2, 0.0, s, "no") for k, s in enumerate(["ge", "ge", "ge", "lt"])]
    assert hb.HeadBound(rows).counts()["lt"] == 1
    assert hb.fmt_directed(-0.1, False, digits=1) == "-0.1" and hb.fmt_directed(-0.1, True, digits=1) == "-0.2"
    odd = hb.HeadProgram(W_Q=_mat(4, 3, 1), W_K=_mat(4, 3, 2))
    doc = _certificate(odd, fraction=Fraction(1))
    work = sum(L * L * (3 + 1) + L * 4 * 3 * 2 for L in (4, 6))
    monkeypatch.setattr(hb, "MAX_WORK", work - 1)
    assert hb.recheck(doc) == (False, f"too large to re-check here ({work} > {work - 1} multiply-adds)")
    monkeypatch.undo()
    assert hb.MAX_WORK == 50_000_000


def test_more_refusals_of_recheck():
    """Kills ``format != FORMAT`` -> ``>`` (an earlier format version), the kernel row's target ``!=`` -> ``>`` and
    keys ``!=`` -> ``<``, the key-bound count ``len(pairs) - 1`` -> ``% 1``, exact enclosures (``lo <= hi`` -> ``<``,
    ``is not``), a one-wide model with an MLP (``W_in[0]`` -> ``W_in[1]``), and the 160-character clip of a
    differing row."""
    doc = _certificate(bits=20)
    assert hb.recheck({**doc, "format": "verify-head-certificate/0"}) == (
        False, "not a head certificate (format 'verify-head-certificate/0')")

    def why(fn: Any) -> str:
        d = copy.deepcopy(doc)
        fn(d["kernel"]["rows"])
        return hb.recheck(d)[1]

    r1 = doc["kernel"]["rows"][1]
    assert (r1["row"], r1["target"]) == (2, 1)
    assert why(lambda rows: rows[1].__setitem__("target", 0)) == (
        f"kernel section: row 1: its claim, target or keys differ from the decided row's ({r1['claim']}, key 1)")
    assert why(lambda rows: rows[1].__setitem__("keys", [7, 8])).startswith("kernel section: row 1: its claim, target")
    assert why(lambda rows: rows[0].__setitem__("others", rows[0]["others"] * 2)) == (
        "kernel section: row 0: 2 key bounds for 1 keys")
    zero = [[0.0, 0.0], [0.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    flat = _certificate(hb.HeadProgram(W_Q=zero, W_K=zero), tau=Fraction(1, 3), fraction=Fraction(1, 8), bits=20)
    assert flat["kernel"]["rows"] and all(r["target_score"] == ["0", "0"] for r in flat["kernel"]["rows"])
    assert hb.recheck(flat)[0]
    one = hb.HeadProgram(W_Q=[[1.0]], W_K=[[0.5]], prefix=[hb.PrefixLayer(
        [hb.PrefixHead(hb.HeadProgram(W_Q=[[0.25]], W_K=[[0.75]]), [[0.5]], [[2.0]])], None,
        hb.MLP("none", None, None, 0.0, [[1.0, -1.0]], [[0.5], [0.25]], "relu"))])
    assert hb.recheck(_certificate(one, fraction=Fraction(1, 8)))[0]
    long = copy.deepcopy(doc)
    long["claimed"]["rows"][0]["status"] = "x" * 300
    ok, reason = hb.recheck(long)
    assert not ok and len(reason) == len("the rows' decisions or enclosures differ from the re-derived ones (first: )") + 160


def test_still_more_shapes_clips_and_rules():
    """Kills: W_Q's emptiness read from its last row; vectors and W_out longer than they must be (``!=`` -> ``<``);
    the 100-character clips of a malformed head or prompt and the 40-character quote of a bad rational; ``yes >=
    need`` -> ``is`` (more rows than needed); a one-token prompt through a norm (``len(X[0])`` -> ``X[1]``); a
    one-number bound in the kernel section (``len(got) != 2`` -> ``> 2``); a precision above 128 (``!=`` -> ``<``);
    the first differing row named even when it sorts before the re-derived one (``g != w`` -> ``<``)."""
    d = FULL.to_json()
    assert _refusal({**d, "W_Q": d["W_Q"][:3] + [[]]}) == "W_Q and W_K must both be [d_model, d_head]"
    deep = DEEP.to_json()
    deep["prefix"][0]["out_bias"] = deep["prefix"][0]["out_bias"] + ["0x1p+0"]
    assert _refusal(deep) == "out_bias must have 4 entries"
    deep = DEEP.to_json()
    deep["prefix"][0]["mlp"]["W_out"] = deep["prefix"][0]["mlp"]["W_out"] + [deep["prefix"][0]["mlp"]["W_out"][0]]
    assert _refusal(deep) == "W_out must be [d_ff, d_model]"
    assert hb.decide(10, 9, 1, Fraction(4, 5)) == "HOLDS" and hb.decide(10, 10, 0, Fraction(1, 2)) == "HOLDS"
    assert hb.bound_prompt(FULL, hb.PromptInput([0], [_mat(1, 4, 1)], [], []), Fraction(1, 2)) == []
    with pytest.raises(hb.HeadCertificateError, match=r"^threshold '" + "x" * 40 + "' is not a rational number"):
        hb._fraction("x" * 50, "threshold")
    doc = _certificate(bits=20)
    bad = copy.deepcopy(doc)
    bad["kernel"]["rows"][0]["target_score"] = ["1"]
    assert hb.recheck(bad) == (False, "kernel section: row 0: a bound is not two integer strings")
    assert hb.recheck({**doc, "precision_bits": 256}) == (
        False, "precision_bits 256: the balls are re-derived at 128")
    first = copy.deepcopy(doc)
    first["claimed"]["rows"][0]["argmax"] = "a"
    ok, why = hb.recheck(first)
    assert not ok and why.startswith("the rows' decisions or enclosures differ from the re-derived ones (first: "
                                     '{"argmax": "a"')


def test_unexpected_errors_while_reading_are_clipped(monkeypatch):
    """Kills the 100-character clips of 'malformed head' and 'malformed prompt'."""
    def long_type_error(*a: Any, **k: Any) -> Any:
        raise TypeError("t" * 300)

    monkeypatch.setattr(hb, "_unhexes", long_type_error)
    assert _refusal(FULL.to_json()) == "malformed head: TypeError: " + "t" * 100
    monkeypatch.undo()
    monkeypatch.setattr(hb, "_ints", long_type_error)
    with pytest.raises(hb.HeadCertificateError) as e:
        hb.PromptInput.from_json(_prompt(3, 4, 1).to_json(), 4)
    assert str(e.value) == "malformed prompt: TypeError: " + "t" * 100


def test_the_last_shapes_and_tamperings():
    """Kills ``!=`` -> ``<`` on a prefix head's qk width, W_V's rows, W_O's rows and a W_V row; W_in's emptiness read
    from its last row and W_in with a row too many; a component with a row too few; a row past the prompt (``r <
    len(toks)`` -> ``!=``); a frozen Enclosure; 11-digit decimals (``e >= 0`` -> ``>= -1``); the key-bound count
    with 3 extra (``len(pairs) - 1`` -> ``^ 1``); claimed counts and verdicts that sort before or after the
    re-derived ones (``!=`` -> ``>`` / ``<``)."""
    import dataclasses

    def prefix_refusal(edit: Any) -> str:
        d = DEEP.to_json()
        edit(d["prefix"][0])
        return _refusal(d)

    shape = "a prefix head's W_V must be [d_model, d_head] and W_O [d_head, d_model]"
    wide_qk = hb.HeadProgram(W_Q=_mat(5, 2, 1), W_K=_mat(5, 2, 2)).to_json()
    assert prefix_refusal(lambda p: p["heads"][0].__setitem__("qk", wide_qk)) == shape
    assert prefix_refusal(lambda p: p["heads"][0].__setitem__("W_V", p["heads"][0]["W_V"] * 2)) == shape
    assert prefix_refusal(lambda p: p["heads"][0].__setitem__("W_O", p["heads"][0]["W_O"] * 2)) == shape
    assert prefix_refusal(lambda p: p["heads"][0]["W_V"].__setitem__(2, p["heads"][0]["W_V"][2] * 2)) == shape
    assert prefix_refusal(lambda p: p["mlp"]["W_in"].__setitem__(3, [])) == "a matrix row does not have 3 entries"
    assert prefix_refusal(lambda p: p["mlp"].__setitem__("W_in", p["mlp"]["W_in"] * 2)) == "W_in must be [d_model, d_ff]"
    good = _prompt(3, 4, 2).to_json()
    for d, why in [({**good, "components": [good["components"][0][:2]]}, "each input component must have one row"),
                   ({**good, "rows": [1, 5], "targets": [0, 4]}, "rows and targets must pair up")]:
        with pytest.raises(hb.HeadCertificateError, match="^" + why):
            hb.PromptInput.from_json(d, 4)
    enc = hb.Enclosure(10, (1, 2), (0,), ((3, 4),))
    with pytest.raises(dataclasses.FrozenInstanceError):
        enc.bits = 11  # type: ignore[misc]
    assert hb.fmt_directed(12345678901.25, True) == "12345678901.2"
    doc = _certificate(bits=20)
    more = copy.deepcopy(doc)
    more["kernel"]["rows"][0]["others"] = more["kernel"]["rows"][0]["others"] * 3
    assert hb.recheck(more)[1] == "kernel section: row 0: 3 key bounds for 1 keys"
    assert hb.fmt_directed(0.25, False, digits=1) == "0.3"  # e = -1: the decimal path, not str(3 * 10 ** -1)
    for counts in ({**doc["claimed"]["counts"], "ge": 3}, {**doc["claimed"]["counts"], "ge": 5}):
        assert hb.recheck({**doc, "claimed": {**doc["claimed"], "counts": counts}}) == (
            False, "the claimed counts differ from the re-derived ones")
    for verdict in ("INCONCLUSIVE", "FAILS"):
        assert hb.recheck({**doc, "claimed": {**doc["claimed"], "verdict": verdict}}) == (
            False, f"the claimed verdict {verdict!r} differs from 'HOLDS'")


def test_rotary_widths_read_from_json():
    """Kills ``2 * len(inv) > d_head`` -> ``2 + len(inv)`` (one frequency on a 2-wide head) and -> ``2 ** len(inv)``
    (three frequencies on a 6-wide head): both programs are valid."""
    for prog in (hb.HeadProgram(W_Q=_mat(4, 2, 1), W_K=_mat(4, 2, 2), rope_inv_freq=[0.5]),
                 hb.HeadProgram(W_Q=_mat(4, 6, 31), W_K=_mat(4, 6, 32), rope_inv_freq=[1.0, 0.3, 0.05])):
        assert hb.HeadProgram.from_json(json.loads(json.dumps(prog.to_json()))) == prog


def test_wide_mlps_read_by_length():
    """Kills ``len(W_out) != f`` and ``len(W_gate) != d_model`` -> ``is not`` (d_ff 300 and d_model 300)."""
    head = hb.PrefixHead(hb.HeadProgram(W_Q=[[1.0]], W_K=[[0.5]]), [[0.5]], [[2.0]])
    wide_ff = hb.HeadProgram(W_Q=[[1.0]], W_K=[[0.5]], prefix=[hb.PrefixLayer([head], None, hb.MLP(
        "none", None, None, 0.0, _mat(1, 300, 1), _mat(300, 1, 2), "relu"))])
    head300 = hb.PrefixHead(hb.HeadProgram(W_Q=_mat(300, 1, 3), W_K=_mat(300, 1, 4)), _mat(300, 1, 5), _mat(1, 300, 6))
    gated = hb.HeadProgram(W_Q=_mat(300, 1, 7), W_K=_mat(300, 1, 8), prefix=[hb.PrefixLayer([head300], None, hb.MLP(
        "none", None, None, 0.0, _mat(300, 2, 9), _mat(2, 300, 10), "silu", W_gate=_mat(300, 2, 11)))])
    for prog in (wide_ff, gated):
        assert hb.HeadProgram.from_json(json.loads(json.dumps(prog.to_json()))) == prog


def test_a_kernel_row_past_position_256_with_259_keys():
    """Kills, in the kernel section's check, ``target != r.target`` and ``len(pairs) != 1 + len(others)`` ->
    ``is not``: a target at position 258 and 259 other keys, read back from JSON."""
    L = 260
    prog = hb.HeadProgram(W_Q=_mat(2, 2, 3), W_K=_mat(2, 2, 4))
    prompt = hb.PromptInput(list(range(L)), [_mat(L, 2, 5)], [L - 1], [L - 2])
    doc = _document(prog, [prompt], "prev", "mass", Fraction(1, 1000), Fraction(1), 20)
    (row,) = doc["kernel"]["rows"]
    assert (row["row"], row["target"], row["claim"], len(row["others"])) == (L - 1, L - 2, "ge", 259)
    assert hb.recheck(json.loads(json.dumps(doc)))[0]
