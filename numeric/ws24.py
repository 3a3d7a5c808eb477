"""Numeric layer for ws24 Theorem 2 (Eq. 13) and Eq. 14: Gaussian embeddings at paper scale.

Source: Wang & Sato, arXiv 2412.11459 v2, Theorem 2 / Eq. 13, Eq. 14, Appendix C.2; the
reviewers' concrete test (d = 1024, V = 64, Gaussian embeddings).  Model reconstructed
from the public Bietti et al. code (see :mod:`verify.numeric.bietti_model`).

Two kinds of numbers:
1. The construction (verify.constructions.bilinear) evaluated on sampled vectors: the
   displayed score r_{-1}^T W^1_K w_E(v) for every v, the model's own score
   w_E(v)^T W^1_K r_{-1}, and the layer-1 score at s = t-1 against s != t-1.  These
   decide the layer's outcome, with the tolerance stated in the evidence.
2. The construction placed in the built model as W^1_K (W^2_K): the model's own score
   (query^T W_K key) at s = t-1 (at the induction target), which must still carry chi
   (psi) for a repair to count.  Both 1 and 2 decide the layer's outcome.
3. The one-step gradient of W^1_K by autograd in the Appendix C.2 setup: on the Gaussian
   model, the share of its Frobenius norm in each orientation; on the orthonormal
   idealization, a Monte-Carlo interval for its coefficient on w_E(k) r_{-1}^T.  They
   describe training; they do not decide the verdict.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from verify import stats
from verify.constructions.bilinear import InductionKeyConstruction, PrevTokenConstruction, Vec, reading_text
from verify.evidence import Evidence, Layer, Outcome, Status, engine_versions, fmt_measured
from verify.faults import seam
from verify.numeric.bietti_model import (
    FrozenParts,
    OneStepWeights,
    layer1_scores,
    one_step_protocol,
    sample_frozen,
    sample_sequences,
)
from verify.runcache import memoize


class TorchGram:
    """<x, y> of sampled vectors in float64 (x, y named as in the construction)."""

    def __init__(self, fr: FrozenParts) -> None:
        self.E = fr.w_E.double()
        self.F = self.E @ fr.Phi_1.double().T  # rows Phi_1 w_E(k)
        self.r = fr.r.double()

    def vec(self, x: Vec) -> torch.Tensor:
        kind, idx = x
        if kind == "w_E":
            return self.E[idx - 1]
        if kind == "Phi_1 w_E":
            return self.F[idx - 1]
        if kind == "r":
            return self.r[-idx]
        raise KeyError(x)

    def __call__(self, x: Vec, y: Vec) -> float:
        table = self._table()
        i, j = table[0].get(x), table[0].get(y)
        if i is None or j is None:
            return float(self.vec(x) @ self.vec(y))
        return table[1][i][j]

    def _table(self) -> tuple[dict, list]:
        """Every inner product of the named family, computed once from :meth:`vec` (one
        float64 matrix product instead of a dot product per call; same lookups, so a fault
        in ``vec`` reaches every score exactly as before)."""
        if getattr(self, "_cache", None) is None:
            names = ([("w_E", k) for k in range(1, self.E.shape[0] + 1)]
                     + [("Phi_1 w_E", k) for k in range(1, self.F.shape[0] + 1)]
                     + [("r", -1)])  # the constructions' only relative vector; others are looked up directly
            X = torch.stack([self.vec(n) for n in names])
            self._cache = ({n: i for i, n in enumerate(names)}, (X @ X.T).tolist())
        return self._cache

    @staticmethod
    def coef(c: Any) -> float:
        return float(c)


@memoize(maxsize=8)
def _protocol(d: int, V: int, T: int, N: int, seed: int, pe: str) -> tuple[FrozenParts, OneStepWeights, torch.Tensor]:
    fr = sample_frozen(d, V, T, seed)
    tokens, y, _ = sample_sequences(V, T, N, seed + 1)
    return fr, one_step_protocol(fr, tokens, y, pe=pe), tokens


def _orientation_shares(G: torch.Tensor, left: torch.Tensor, right: torch.Tensor) -> tuple[float, float]:
    """Share of ||G||_F in span(left rows) (x) span(right rows) and in the transpose."""
    QL, _ = torch.linalg.qr(left.T)  # orthonormal bases (d, V) and (d, T)
    QR, _ = torch.linalg.qr(right.T)
    n = G.norm()  # ||P_L G P_R||_F = ||Q_L^T G Q_R||_F
    return float((QL.T @ G @ QR).norm() / n), float((QR.T @ G @ QL).norm() / n)


def _slope(ts: list[int], vals: list[float]) -> float | None:
    """The least-squares slope of log |val| on log t over the nonzero values (:func:`verify.stats.line_slope`);
    None with fewer than 3 of them or a single t."""
    pts = [(math.log(t), math.log(abs(v))) for t, v in zip(ts, vals) if v != 0]
    if len(pts) < 3 or len({x for x, _ in pts}) == 1:
        return None
    return stats.line_slope([x for x, _ in pts], [y for _, y in pts])


def _slope_if_signal(ts: list[int], vals: list[float]) -> float | None:
    """The log-log slope of |score| against t, or None when the profile changes sign
    (then it is sampling noise, and a slope of its magnitude would mean nothing)."""
    if not vals or not (all(v > 0 for v in vals) or all(v < 0 for v in vals)):
        return None
    return _slope(ts, vals)


def _prev_token_profile(fr: FrozenParts, W: torch.Tensor, tokens: torch.Tensor, pe: str) -> list[float]:
    """Mean over sequences of score1(t <- t-1) minus the mean of score1(t <- s), s < t-1, per t >= 2."""
    return _profile_of_scores(layer1_scores(fr, W, tokens, pe).double())


def _profile_of_scores(S: torch.Tensor) -> list[float]:
    """:func:`_prev_token_profile` from layer-1 scores already computed, S of shape (N, T, T) float64."""
    T = S.shape[1]
    out = []
    for t in range(2, T):
        prev = S[:, t, t - 1].mean()
        others = S[:, t, : t - 1].mean()
        out.append(float(prev - others))
    return out


@seam("numeric.ws24._dense")
def _dense(con: Any, g: TorchGram) -> torch.Tensor:
    """The matrix the built model scores query^T M key with, sum_k c(k) a_k b_k^T on the sampled vectors (float64):
    the construction's W under the query-key convention, W^T under key-query (``con.W_model``)."""
    W = con.W_model
    L = torch.stack([g.vec(a) for _, a, _ in W.terms])
    R = torch.stack([g.vec(b) for _, _, b in W.terms])
    c = torch.tensor([float(x) for x, _, _ in W.terms], dtype=torch.float64)
    return (L.T * c) @ R


@memoize(maxsize=8)
def learning_coefficients(V: int, T: int, n: int, runs: int, seed: int, lr: float = 1.0) -> dict[str, Any]:
    """Monte-Carlo estimate of the population one-step W^1_K's previous-token coefficient.

    The ws24 protocol is run on the orthonormal idealization
    (:func:`~verify.numeric.bietti_model.orthonormal_frozen`, RPE) with independent data per
    step (:func:`~verify.numeric.bietti_model.one_step_protocol_split`: ``n`` Appendix C.2
    sequences per step), ``runs`` times.  Per run: chi_hat = mean_k w_E(k)^T W^1_K r_{-1}
    (exact, the family being orthonormal) and, for specificity, the same with r_{-2}.  The
    interval is mean +- 2 standard errors over runs; a sign is stated only when it excludes 0.
    (With one batch for all three steps the estimate carries an O(1/n) bias that swamps the
    population value; the split protocol removes it.)

    Returns:
        dict with ``lr``, ``n_per_step``, ``runs``, ``chi_hat_mean``, ``chi_hat_se``,
        ``chi_hat_interval``, ``r_minus2_mean``, ``r_minus2_se``, ``sign_resolved``, ``sign``
        (+1, -1 or None).

    Raises:
        ValueError: runs < 2 or n < 1.
    """
    if runs < 2 or n < 1:
        raise ValueError(f"need runs >= 2 and n >= 1, got runs={runs}, n={n}")
    from verify.numeric.bietti_model import one_step_protocol_split, orthonormal_frozen

    fr = orthonormal_frozen(V, T)
    c1, c2 = [], []
    for b in range(runs):
        tokens, y, _ = sample_sequences(V, T, 3 * n, seed + 101 + b)
        G = one_step_protocol_split(fr, tokens, y, pe="rpe", lr=lr).W1K
        c1.append(float((fr.w_E @ G @ fr.r[1]).mean()))
        c2.append(float((fr.w_E @ G @ fr.r[2]).mean()))
    n_all = float(G.norm()) or 1.0
    share_q_left = float((fr.w_E @ G @ fr.r.T).norm()) / n_all  # span(w_E) x span(r): query left, key right
    share_q_right = float((fr.r @ G @ fr.w_E.T).norm()) / n_all

    def mse(xs: list[float]) -> tuple[float, float]:
        m = sum(xs) / len(xs)
        return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1) / len(xs))

    m1, s1 = mse(c1)
    m2, s2 = mse(c2)
    resolved = abs(m1) > 2 * s1
    return {"lr": lr, "n_per_step": n, "runs": runs, "chi_hat_mean": m1, "chi_hat_se": s1,
            "chi_hat_interval": [m1 - 2 * s1, m1 + 2 * s1], "r_minus2_mean": m2, "r_minus2_se": s2,
            "sign_resolved": resolved, "sign": (1 if m1 > 0 else -1) if resolved else None,
            "norm_share_wE_x_r": share_q_left, "norm_share_r_x_wE": share_q_right}


#: the sizes (V, T) at which the population one-step coefficient is computed exactly, by enumerating the
#: whole Appendix C.2 distribution (V (T - 2) (V - 1)^(T - 2) equally likely sequences)
EXACT_SIZES = ((3, 4), (3, 5), (4, 5), (4, 6), (5, 6))


def appendix_c2_sequences(V: int, T: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Every sequence of the Appendix C.2 distribution of :func:`~verify.numeric.bietti_model.sample_sequences`
    (trigger q, first occurrence s0 in [0, T-3], output y != q at s0 + 1, q again last, every other token
    != q), each exactly once: the tuples (q, s0, y, fillers) are equally likely and give distinct sequences,
    so the mean over this batch is the population expectation.  Returns tokens (M, T), targets (M,)."""
    import itertools

    if V < 2 or T < 3:
        raise ValueError(f"need V >= 2 and T >= 3, got V={V}, T={T}")
    seqs, ys = [], []
    for q in range(V):
        others = [k for k in range(V) if k != q]
        for s0 in range(T - 2):
            free = [t for t in range(T - 1) if t not in (s0, s0 + 1)]
            for y in others:
                for fill in itertools.product(others, repeat=len(free)):
                    z = [q] * T
                    z[s0 + 1] = y
                    for t, v in zip(free, fill):
                        z[t] = v
                    seqs.append(z)
                    ys.append(y)
    return torch.tensor(seqs), torch.tensor(ys)


@memoize(maxsize=16)
def population_coefficients_exact(V: int, T: int, lr: float = 1.0) -> dict[str, Any]:
    """The population one-step protocol's W^1_K coefficients, without sampling (orthonormal idealization, RPE).

    ws24's protocol (W^2_O, then W^2_K, then W^1_K, one gradient step each from zero; loss on the final
    token; Appendix C.2 data) with each step's gradient the exact expectation over the data: the mean over
    :func:`appendix_c2_sequences`.  Read off, the family being orthonormal: chi(k) = w_E(k)^T W^1_K r_{-1}
    (Eq. 13's coefficient, model's reading), and the same with r_{-2} and r_0.  The only error is float64
    rounding, about 1e-16 relative to ||W^1_K|| per term over at most 10^5 terms; a sign is stated when
    |chi| exceeds 1e-9 ||W^1_K||, far above that.
    """
    from verify.numeric.bietti_model import one_step_protocol, orthonormal_frozen

    fr = orthonormal_frozen(V, T)
    tokens, y = appendix_c2_sequences(V, T)
    G = one_step_protocol(fr, tokens, y, pe="rpe", lr=lr).W1K
    chi = fr.w_E @ G @ fr.r[1]
    norm = float(G.norm())
    m1 = float(chi.mean())
    resolved = abs(m1) > 1e-9 * norm
    return {"V": V, "T": T, "lr": lr, "sequences": int(tokens.shape[0]),
            "chi": float(f"{m1:.6e}"), "chi_equal_for_every_k": float(chi.max() - chi.min()) <= 1e-9 * norm,
            "r_minus2": float(f"{float((fr.w_E @ G @ fr.r[2]).mean()):.6e}"),
            "r_0": float(f"{float((fr.w_E @ G @ fr.r[0]).mean()):.6e}"),
            "chi_over_norm": float(f"{m1 / norm:.4e}"), "sign_resolved": resolved,
            "sign": (1 if m1 > 0 else -1) if resolved else None}


#: sequences of the built model that the index probe runs through (the per-token regression
#: needs a few thousand positions, not all N x T)
PROBE_SEQUENCES = 256


def probe_tolerance(d: int, V: int) -> float:
    """Four standard errors of the per-token regression coefficient beta = <s, c> / <c, c>
    of sampled scores s(v) on their targets c(v): the near-orthogonality error of s(v) has
    variance about (V + 3) |c|_rms^2 / d per token, so beta has standard error
    sqrt((V + 3) / (d V)).  The same bound as :func:`score_tolerance` at scale 1."""
    return score_tolerance(d, V, 1.0)


def score_tolerance(d: int, V: int, scale: float) -> float:
    """tau = 4 sqrt((V + 3) / (d V)) scale: the one tolerance of this layer's sampled scores (ws24,
    Theorem 2 and Eq. 14 at scale; the reading's mean within tau, the built model's within 2 tau).

    Derivation: with w_E and r drawn N(0, I_d / d) (:func:`sample_frozen`), a product a.b of two
    distinct such vectors has mean 0 and variance 1/d, and a.a has mean 1 and variance 2/d.  A token's
    score is its coefficient (at most ``scale`` = max|chi| or max|psi|) times a sum of such products,
    about V + 3 of them (one per other token, plus the position and squared-norm terms; an estimate,
    not an exact count), so its error has variance about (V + 3) scale^2 / d, and the mean over V
    tokens has standard error sqrt((V + 3) / (d V)) scale.  tau is four of those (a Gaussian tail of 6e-5).
    Measured (tests/ws24/test_ws24_tolerance.py, 40 seeds): the mean's standard deviation is 1.5-1.9 times that
    estimate (0.094 against 0.058 at d = 512, V = 4), so tau is about 2.2-2.7 measured standard errors.
    A test shows a reading 1.01 tau away from its target failing (tests/ws24/test_ws24_tolerance.py).
    """
    return 4 * math.sqrt((V + 3) / (d * V)) * scale


def _beta(scores: torch.Tensor, target: torch.Tensor) -> float:
    """Regression coefficient (through 0) of scores on target: 1 when each score carries its
    own row's coefficient, near 0 when the rows are confused (the probe's coefficients
    correlate weakly under any relabelling)."""
    return float((scores * target).sum() / (target * target).sum())


def _theorem2_probe(con: PrevTokenConstruction, fr: FrozenParts, g: TorchGram, tokens: torch.Tensor, d: int) -> dict:
    """The index probe of Theorem 2 at scale: Eq. 13 with distinct coefficients
    (:func:`~verify.constructions.bilinear.legendre_ramp`, same variant), evaluated token by
    token through the shared construction (the variant's reading) and through the built RPE
    model (layer-1 score at s = t-1 grouped by the query token z_t, on the first
    ``PROBE_SEQUENCES`` sequences).  A coefficient, vector or token read at the wrong row
    drives a regression coefficient beta far from 1; the uniform chi of the data would hide it.
    """
    probe = PrevTokenConstruction.index_probe(con.V, con.orientation, pattern="legendre", convention=con.convention)
    chi = torch.tensor([float(c) for c in probe.chi], dtype=torch.float64)
    reading = torch.tensor([probe.displayed_score(v, g) for v in range(1, con.V + 1)], dtype=torch.float64)
    tok = tokens[:PROBE_SEQUENCES]
    S = layer1_scores(fr, _dense(probe, g).float(), tok, "rpe").double()
    prev = torch.diagonal(S[:, 1:, :-1], dim1=1, dim2=2)  # S[n, t, t-1], t = 1..T-1 (0-indexed)
    tol = probe_tolerance(d, con.V)
    b_read, b_model = _beta(reading, chi), _beta(prev, chi[tok[:, 1:]])
    return {"coefficients": "legendre_ramp (Legendre-symbol signs, magnitudes (V + k - 1)/V)",
            "beta_reading": b_read, "beta_model": b_model, "tolerance": tol, "model_tolerance": 2 * tol,
            "sequences": int(tok.shape[0]),
            "ok": abs(b_read - 1) <= tol and abs(b_model - 1) <= 2 * tol}


def _eq14_probe(con: InductionKeyConstruction, g: TorchGram, tokens: torch.Tensor, s0: torch.Tensor, d: int) -> dict:
    """The index probe of Eq. 14 at scale: distinct psi
    (:func:`~verify.constructions.bilinear.legendre_ramp`); the variant's reading on the
    diagonal z_s = z_T against psi(z_T), and the built model's score of the induction target
    against psi of the trigger z_T (first ``PROBE_SEQUENCES`` sequences), each by its
    regression coefficient beta (1 when every row carries its own psi)."""
    probe = InductionKeyConstruction.index_probe(con.V, con.orientation, pattern="legendre", convention=con.convention)
    psi = torch.tensor([float(p) for p in probe.psi], dtype=torch.float64)
    diag = torch.tensor([probe.displayed_score(v, v, g) for v in range(1, con.V + 1)], dtype=torch.float64)
    tok, first = tokens[:PROBE_SEQUENCES], s0[:PROBE_SEQUENCES]
    target = _induction_target_scores(_dense(probe, g), g, tok, first)[0]
    tol = probe_tolerance(d, con.V)
    b_read, b_model = _beta(diag, psi), _beta(target, psi[tok[:, -1]])
    return {"coefficients": "legendre_ramp (Legendre-symbol signs, magnitudes (V + k - 1)/V)",
            "beta_reading": b_read, "beta_model": b_model, "tolerance": tol, "model_tolerance": 2 * tol,
            "sequences": int(tok.shape[0]), "ok": abs(b_read - 1) <= tol and abs(b_model - 1) <= 2 * tol}


def _induction_target_scores(W: torch.Tensor, g: TorchGram, tokens: torch.Tensor, s0: torch.Tensor
                             ) -> tuple[torch.Tensor, torch.Tensor]:
    """The built model's layer-2 scores h_T^T W^2_K h_s (see :func:`check_eq14`): the score of
    the induction target s0 + 1 per sequence (N,), and the mean over the other keys (N,)."""
    hT = g.E[tokens[:, -1]] + g.F[tokens[:, -2]]  # (N, d)
    q = hT @ W  # rows h_T^T W^2_K
    A, B = q @ g.E.T, q @ g.F.T  # (N, V): against w_E(k) and Phi_1 w_E(k)
    sc = torch.gather(A, 1, tokens[:, :-1])  # keys s < T: h_s = w_E(z_s) + Phi_1 w_E(z_{s-1})
    sc[:, 1:] += torch.gather(B, 1, tokens[:, :-2])
    rows = torch.arange(tokens.shape[0])
    target = sc[rows, s0 + 1]
    others = (sc.sum(1) - target) / (sc.shape[1] - 1)
    return target, others


@dataclass
class Theorem2Result:
    """What :func:`check_theorem2` measured: the variant's reading and the model's own score per token,
    the scores inside the built RPE model, the index probe, and the one-step learning estimates."""

    con: PrevTokenConstruction
    d: int
    T: int
    N: int
    seed: int
    disp: list[float]          # the variant's reading, v = 1..V
    model: list[float]         # the model's own score, v = 1..V
    chi: list[float]
    tau: float
    model_in_net: float        # mean layer-1 score at s = t-1 in the built RPE model
    argmax_rate: float
    probe: dict
    prof: list[float]          # layer-1 previous-token score minus the others, per t
    learn: list[dict]
    exact: list[dict]
    protocol: dict[str, Any]   # with ``full``: the Gaussian protocol's gradient shares and score profiles

    @property
    def mean_disp(self) -> float:
        return sum(self.disp) / self.con.V

    @property
    def mean_chi(self) -> float:
        return sum(self.chi) / self.con.V

    @property
    def disp_ok(self) -> bool:
        """The reading averages within tau of chi, every score > 0, and the spread is small."""
        V, chimax = self.con.V, max(abs(c) for c in self.chi) or 1.0
        return (abs(self.mean_disp - self.mean_chi) <= self.tau and min(self.disp) > 0
                and (max(self.disp) - min(self.disp)) <= 2 * 4 * math.sqrt((V + 3) / self.d) * chimax)

    @property
    def model_ok(self) -> bool:
        return abs(self.model_in_net - self.mean_chi) <= 2 * self.tau and self.model_in_net > 0

    @property
    def holds(self) -> bool:
        return self.disp_ok and self.model_ok and self.probe["ok"]

    @property
    def reading(self) -> str:
        return reading_text(self.con.orientation, self.con.convention)


def check_theorem2(con: PrevTokenConstruction, d: int, T: int, N: int, seed: int, full: bool = False,
                   learning: tuple[int, int] = (128, 12)) -> Evidence:
    """ws24 Theorem 2 at scale: Gaussian w_E, r (N(0, I_d/d)), V = con.V tokens.

    Args:
        con: construction (V, chi, orientation).
        d: width; T: sequence length; N: number of Appendix C.2 sequences for the
            gradients; seed: the generator seed; full: also run the APE protocol and the
            one-step coefficient at larger step sizes (slower).
        learning: (sequences per step, runs) of the one-step learning estimate (the claim passes its
            profile's, ``verify.proofs.ws24.SIZES``).

    Returns:
        ``consistent`` with ``holds`` when (a) the variant's reading of the association
        averages within tau of chi over v, every score > 0 and the spread is small, and (b)
        the model's own layer-1 score at s = t-1, computed in the built RPE model with the
        construction as W^1_K, averages within 2 tau of chi; ``consistent`` with ``fails``
        otherwise.  tau = 4 sqrt((V + 3) / (d V)) max|chi|: four standard errors of the
        mean near-orthogonality error for N(0, I/d) vectors.  Numbers carry
        ``displayed_score`` and ``model_score`` for every variant.
    """
    return _describe_theorem2(_measure_theorem2(con, d, T, N, seed, full, learning))


def _measure_theorem2(con: PrevTokenConstruction, d: int, T: int, N: int, seed: int, full: bool,
                      learning: tuple[int, int]) -> Theorem2Result:
    """Sample the frozen parts and sequences, and measure the scores, the probe and the learning estimates."""
    V = con.V
    fr = sample_frozen(d, V, T, seed)
    tokens, _, _ = sample_sequences(V, T, N, seed + 1)
    g = TorchGram(fr)
    disp = [con.displayed_score(v, g) for v in range(1, V + 1)]
    model = [con.model_score(v, g) for v in range(1, V + 1)]
    chi = [float(c) for c in con.chi]
    tau = score_tolerance(d, V, max(abs(c) for c in chi) or 1.0)
    # the construction inside the built model: layer-1 score at s = t-1 (query^T W_K key)
    W = _dense(con, g)
    S = layer1_scores(fr, W.float(), tokens, "rpe").double()
    prev = torch.stack([S[:, t, t - 1] for t in range(1, T)], dim=1)  # (N, T-1)
    rows = torch.arange(2, T)
    argmax_rate = float((S[:, 2:, :].argmax(-1) == (rows - 1)).double().mean())
    probe = _theorem2_probe(con, fr, g, tokens, d)
    prof = _profile_of_scores(S)  # the same scores as the model check above (computed once)
    n_step, runs = learning
    learn = [learning_coefficients(V, T, n_step, runs, seed)]
    exact = [population_coefficients_exact(v, t) for v, t in EXACT_SIZES]
    return Theorem2Result(con=con, d=d, T=T, N=N, seed=seed, disp=disp, model=model, chi=chi, tau=tau,
                          model_in_net=float(prev.mean()), argmax_rate=argmax_rate, probe=probe, prof=prof,
                          learn=learn, exact=exact,
                          protocol=_theorem2_protocol(d, V, T, N, seed, fr, g, tokens) if full else {})


def _theorem2_protocol(d: int, V: int, T: int, N: int, seed: int, fr: FrozenParts, g: TorchGram,
                       tokens: torch.Tensor) -> dict[str, Any]:
    """The Gaussian protocol's one-step gradient shares and the RPE/APE previous-token profiles against t."""
    _, steps, _ = _protocol(d, V, T, N, seed, "rpe")
    G = steps.W1K.double()
    share_aw, share_tr = _orientation_shares(G, g.E, g.r[:T])
    out: dict[str, Any] = {"gaussian_gradient_norm_share_wE_x_r": share_aw, "gaussian_gradient_norm_share_r_x_wE": share_tr}
    ape = _protocol(d, V, T, N, seed, "ape")
    ts = list(range(2, T))
    fit_ts = [t for t in ts if t >= 8]
    prof_rpe = _prev_token_profile(fr, steps.W1K, tokens, "rpe")
    prof_ape = _prev_token_profile(ape[0], ape[1].W1K, ape[2], "ape")
    out.update({"score_vs_t_rpe": prof_rpe, "score_vs_t_ape": prof_ape,
                "loglog_slope_rpe_t>=8": _slope_if_signal(fit_ts, prof_rpe[len(ts) - len(fit_ts):]),
                "loglog_slope_ape_t>=8": _slope_if_signal(fit_ts, prof_ape[len(ts) - len(fit_ts):])})
    return out


def _theorem2_numbers(r: Theorem2Result) -> dict[str, Any]:
    V, disp, learn = r.con.V, r.disp, r.learn
    numbers = {
        "d": r.d, "V": V, "T": r.T, "N_sequences": r.N,
        "displayed_score": r.mean_disp, "model_score": r.model_in_net,
        "displayed_score_mean": r.mean_disp, "displayed_score_min": min(disp), "displayed_score_max": max(disp),
        "chi_mean": r.mean_chi, "tolerance_tau": r.tau,
        "model_score_mean": sum(r.model) / V,
        "model_score_in_built_model": r.model_in_net,
        "index_probe": r.probe,
        "prev_token_argmax_rate": r.argmax_rate,
        "layer1_prev_minus_others_mean": sum(r.prof) / len(r.prof),
        "gradient_norm_share_wE_x_r": learn[0]["norm_share_wE_x_r"],
        "gradient_norm_share_r_x_wE": learn[0]["norm_share_r_x_wE"],
        "one_step_chi": learn,
        "one_step_chi_exact": r.exact,
    }
    numbers.update(r.protocol)
    return numbers


def _theorem2_details(r: Theorem2Result, numbers: dict[str, Any]) -> list[str]:
    disp, probe = r.disp, r.probe
    details = [
        f"variant's reading {r.reading}: mean {r.mean_disp:.4g} over v (min {min(disp):.4g}, max {max(disp):.4g}); "
        f"chi(v) = {r.mean_chi:.4g}",
        f"model's own layer-1 score at s = t-1 in the built RPE model (query^T W_K key): mean {r.model_in_net:.4g}; "
        f"argmax of the row at t-1 for {r.argmax_rate:.3f} of positions t >= 2",
        f"one-step autograd gradient of W^1_K (orthonormal idealization): share of ||G||_F in span(w_E) x span(r) = "
        f"{numbers['gradient_norm_share_wE_x_r']:.3f}, in span(r) x span(w_E) = {numbers['gradient_norm_share_r_x_wE']:.3f} "
        "(autograd's sum of dL/dscore * query key^T puts the query side on the left)",
    ]
    for L in r.learn:
        details.append(
            f"population one-step coefficient of w_E(k) r_{{-1}}^T (orthonormal idealization, independent data per step, "
            f"lr = {L['lr']:g}, {L['runs']} runs of {L['n_per_step']} sequences per step): "
            f"{L['chi_hat_mean']:.3g} +- {2 * L['chi_hat_se']:.2g} (2 s.e.); same for r_{{-2}}: {L['r_minus2_mean']:.3g}; "
            + (f"sign {'+' if L['sign'] > 0 else '-'} resolved" if L["sign_resolved"] else "sign not resolved (interval contains 0)"))
    details.append("population one-step coefficient of w_E(k) r_{-1}^T, exact (every Appendix C.2 sequence enumerated, "
                   "orthonormal idealization, lr = 1): " + "; ".join(
                       f"V = {x['V']}, T = {x['T']}: {x['chi']:.3g} (r_{{-2}}: {x['r_minus2']:.3g}, r_0: {x['r_0']:.3g})"
                       for x in r.exact))
    if r.protocol:
        details.append("layer-1 previous-token score of the one-step W^1_K against t (numbers 'score_vs_t_rpe', 'score_vs_t_ape'): "
                       + ("sign-consistent; log-log slopes RPE {}, APE {}".format(numbers["loglog_slope_rpe_t>=8"],
                                                                                   numbers["loglog_slope_ape_t>=8"])
                          if numbers["loglog_slope_rpe_t>=8"] is not None and numbers["loglog_slope_ape_t>=8"] is not None
                          else f"the profiles change sign across t: sampling noise dominates at N = {r.N}, so no decay rate is reported"))
    details.append(f"index probe (distinct chi, {probe['coefficients']}): regression of the reading on chi(v) beta = "
                   f"{probe['beta_reading']:.3f}, of the built model's score at s = t-1 on chi(z_t) beta = {probe['beta_model']:.3f} "
                   f"(1 when every token carries its own chi; tolerances {probe['tolerance']:.3g}, {probe['model_tolerance']:.3g})")
    return details


def _describe_theorem2(r: Theorem2Result) -> Evidence:
    """The Evidence of :func:`check_theorem2`: holds when the reading, the built model's score and the index
    probe all agree with chi."""
    d, V, tau, probe, holds = r.d, r.con.V, r.tau, r.probe, r.holds
    numbers = _theorem2_numbers(r)
    why = ("consistent with the statement" if holds else
           "the reading misses chi(v)" if not r.disp_ok else
           "the model's own previous-token score misses chi(v): the head is broken" if not r.model_ok else
           "with distinct chi the scores do not follow chi token by token (index probe)")
    return Evidence(
        layer=Layer.NUMERIC, status=Status.CONSISTENT, outcome=Outcome.HOLDS if holds else Outcome.FAILS,
        summary=(f"d = {d}, V = {V}: {r.reading} averages {r.mean_disp:.4f}, the model's score at s = t-1 averages "
                 f"{r.model_in_net:.4f}, against chi(v) = {r.mean_chi:.4g} (tolerances {tau:.3g}, {2 * tau:.3g}); {why}"),
        numbers=numbers,
        tolerance=(f"tau = 4 sqrt((V+3)/(d V)) max|chi| = {tau:.4g} (four standard errors of the Gaussian near-orthogonality "
                   f"error of the mean) for the reading, every score > 0, spread <= 8 sqrt((V+3)/d); 2 tau for the "
                   "model's score in the built model (adds the w_E(z_t)^T W w_E(z_(t-1)) cross term); index probe: "
                   f"|beta - 1| <= 4 sqrt((V+3)/(d V)) = {probe['tolerance']:.3g} for the reading, twice that in the built model"),
        engines=engine_versions("torch"), seed=r.seed, details=_theorem2_details(r, numbers),
        witness=None if holds else {"d": d, "V": V, "displayed_score_mean": round(r.mean_disp, 6), "chi(v)": r.mean_chi,
                                    "model_score_in_built_model": round(r.model_in_net, 6),
                                    "index_probe_beta_reading": round(probe["beta_reading"], 6),
                                    "index_probe_beta_model": round(probe["beta_model"], 6)},
    )


def _eq14_gradient_fit(d: int, V: int, T: int, N: int, seed: int, g: TorchGram) -> dict[str, float]:
    """psi(k) fitted to the one-step gradient of W^2_K (Gaussian model, one batch), as written and transposed."""
    _, steps, _ = _protocol(d, V, T, N, seed, "rpe")
    G2 = steps.W2K.double()
    nrm = g.E.norm(dim=1) ** 2 * g.F.norm(dim=1) ** 2
    psi_hat = torch.einsum("kd,de,ke->k", g.E, G2, g.F) / nrm
    psi_hat_t = torch.einsum("kd,de,ke->k", g.F, G2, g.E) / nrm
    return {"gradient_psi_hat_mean": float(psi_hat.mean()), "gradient_psi_hat_std": float(psi_hat.std()),
            "gradient_transposed_psi_hat_mean": float(psi_hat_t.mean())}


def _eq14_details(numbers: dict[str, Any], reading: str, full: bool) -> list[str]:
    """The report lines of :func:`check_eq14` from its numbers."""
    probe = numbers["index_probe"]
    details = [
        f"variant's reading {reading}: s = T mean {numbers['displayed_diag_mean']:.4g}, "
        f"s != T mean {numbers['displayed_offdiag_mean']:.4g}; psi = {numbers['psi_mean']:.4g}",
        f"model's own layer-2 score h_T^T W^2_K h_s in the built model (previous-token layer 1): induction target "
        f"{numbers['model_score_in_built_model']:.4g}, other keys {numbers['model_score_other_keys_mean']:.4g}",
    ]
    if full:
        details.append(f"one-step gradient of W^2_K (Gaussian model, one batch for all steps): fitted psi(k) mean "
                       f"{numbers['gradient_psi_hat_mean']:.3g} (std over k {numbers['gradient_psi_hat_std']:.3g}), transposed fit "
                       f"mean {numbers['gradient_transposed_psi_hat_mean']:.3g}; single-batch estimates carry an O(1/N) bias")
    details.append(f"index probe (distinct psi, {probe['coefficients']}): regression of the reading at s = T on psi(T) "
                   f"beta = {probe['beta_reading']:.3f}, of the built model's induction-target score on psi(z_T) beta = "
                   f"{probe['beta_model']:.3f} (1 when every token carries its own psi; tolerances {probe['tolerance']:.3g}, "
                   f"{probe['model_tolerance']:.3g})")
    return details


def check_eq14(con: InductionKeyConstruction, d: int, T: int, N: int, seed: int, full: bool = False) -> Evidence:
    """ws24 Eq. 14 at scale: the variant's reading against psi(T)[s = T], and the model's own
    layer-2 score in the built model.

    The built model's layer 2 sees keys h_s = w_E(z_s) + Phi_1 w_E(z_{s-1}) (a layer 1 that
    attends to the previous token exactly, the premise of the induction step) and the query
    h_T = w_E(q) + Phi_1 w_E(z_{T-1}); its score of the induction target s0 + 1 (the
    position after the first q) is h_T^T W^2_K h_{s0+1}.

    Returns ``consistent`` with ``holds`` when the reading's diagonal mean is within tau of
    psi, the off-diagonal mean within tau of 0, every diagonal score positive, and the
    model's score of the induction target within 2 tau of psi; ``fails`` otherwise.
    """
    V = con.V
    fr = sample_frozen(d, V, T, seed)
    tokens, _, s0 = sample_sequences(V, T, N, seed + 1)
    g = TorchGram(fr)
    psi = torch.tensor([float(p) for p in con.psi], dtype=torch.float64)
    L = torch.stack([g.vec(a) for _, a, _ in con.W.terms])
    R = torch.stack([g.vec(b) for _, _, b in con.W.terms])
    M = (g.E @ L.T) * psi @ (R @ g.F.T)  # M[T, s] = w_E(T)^T W Phi_1 w_E(s)
    Sd = (g.F @ L.T) * psi @ (R @ g.E.T)  # Sd[s, T] = (Phi_1 w_E(s))^T W w_E(T)
    # S[s, T]: the variant's reading (read-score: the model's own score, M.T under query-key, Sd under key-query)
    S = M.T if con.orientation == "read-score" and con.convention == "query-key" else Sd
    spot = con.displayed_score(1, min(2, V), g)
    if abs(spot - float(S[0, min(2, V) - 1])) > 1e-8 * (1 + abs(spot)):
        raise RuntimeError("vectorised Eq. 14 score disagrees with the construction")
    diag = torch.diagonal(S)
    off = S[~torch.eye(V, dtype=torch.bool)]
    mean_psi = float(psi.mean())
    pmax = float(psi.abs().max()) or 1.0
    tau = score_tolerance(d, V, pmax)
    disp_ok = abs(float(diag.mean()) - mean_psi) <= tau and abs(float(off.mean())) <= tau and float(diag.min()) > 0
    # the model's own layer-2 score of the induction target, in the built model
    target, others = _induction_target_scores(_dense(con, g), g, tokens, s0)
    model_in_net = float(target.mean())
    model_ok = abs(model_in_net - mean_psi) <= 2 * tau
    probe = _eq14_probe(con, g, tokens, s0, d)
    holds = disp_ok and model_ok and probe["ok"]
    numbers = {
        "d": d, "V": V, "N_sequences": N, "T": T,
        "displayed_score": float(diag.mean()), "model_score": model_in_net,
        "displayed_diag_mean": float(diag.mean()), "displayed_diag_min": float(diag.min()),
        "displayed_offdiag_mean": float(off.mean()), "psi_mean": mean_psi, "tolerance_tau": tau,
        "model_diag_mean": float(torch.diagonal(M).mean()),
        "model_score_in_built_model": model_in_net,
        "model_score_other_keys_mean": float(others.mean()),
        "index_probe": probe,
    }
    if full:
        numbers.update(_eq14_gradient_fit(d, V, T, N, seed, g))
    reading = ("w_E(T)^T W^2_K Phi_1 w_E(s)" if con.orientation == "read-score" else "(Phi_1 w_E(s))^T W^2_K w_E(T)")
    details = _eq14_details(numbers, reading, full)
    why = ("consistent with the statement" if holds else
           "the reading misses psi(T)[s = T]" if not disp_ok else
           "the model's own induction score misses psi: the head is broken" if not model_ok else
           "with distinct psi the scores do not follow psi token by token (index probe)")
    return Evidence(
        layer=Layer.NUMERIC, status=Status.CONSISTENT, outcome=Outcome.HOLDS if holds else Outcome.FAILS,
        summary=(f"d = {d}, V = {V}: {reading} averages {numbers['displayed_diag_mean']:.4f} at s = T, the model's "
                 f"layer-2 score of the induction target averages {model_in_net:.4f}, against psi = {mean_psi:.4g} "
                 f"(tolerances {tau:.3g}, {2 * tau:.3g}); {why}"),
        numbers=numbers, tolerance=(f"tau = 4 sqrt((V+3)/(d V)) max|psi| = {tau:.4g}; every s = T score > 0; 2 tau for the "
                                    f"model's score; index probe: |beta - 1| <= 4 sqrt((V+3)/(d V)) = {probe['tolerance']:.3g} "
                                    f"for the reading, twice that for the built model"),
        engines=engine_versions("torch"), seed=seed, details=details,
        witness=None if holds else {"d": d, "V": V, "displayed_score_mean_at_s=T": round(float(diag.mean()), 6),
                                    "psi": mean_psi, "model_score_in_built_model": round(model_in_net, 6),
                                    "index_probe_beta_reading": round(probe["beta_reading"], 6),
                                    "index_probe_beta_model": round(probe["beta_model"], 6)},
    )


def check_prop4(d: int, V: int, T: int, seed: int, tol: float = 1e-9) -> Evidence:
    """ws24 Prop. 4 in the built RPE model: attention weight on the previous token.

    The embeddings and r_{-1} are orthonormalised (QR of a seeded Gaussian), so the
    construction W^1_K = sum_k w_E(k) r_{-1}^T gives layer-1 score exactly 1 on the
    previous token and 0 elsewhere (the proposition's premise); the model's causal
    softmax weight at s = t-1 is compared with e/(t + e - 1), t the number of visible keys.

    Returns:
        ``consistent`` with ``holds`` when max |weight - e/(t + e - 1)| <= tol over every
        position of a random sequence, with ``fails`` otherwise.
    """
    import dataclasses

    fr = sample_frozen(d, V, T, seed, dtype=torch.float64)
    g = torch.Generator().manual_seed(seed + 7)
    Q, _ = torch.linalg.qr(torch.randn(d, V + T, generator=g, dtype=torch.float64))
    fr = dataclasses.replace(fr, w_E=Q[:, :V].T.contiguous(), r=Q[:, V:V + T].T.contiguous())
    W = torch.outer(fr.w_E.sum(0), fr.r[1])  # sum_k w_E(k) r_{-1}^T
    tokens, _, _ = sample_sequences(V, T, 1, seed + 1)
    A = torch.softmax(layer1_scores(fr, W, tokens, "rpe"), dim=-1)[0]
    ts = torch.arange(2, T + 1, dtype=torch.float64)  # visible keys at 0-indexed position t-1
    got = torch.stack([A[t - 1, t - 2] for t in range(2, T + 1)])
    want = math.e / (ts + math.e - 1)
    err = float((got - want).abs().max())
    holds = err <= tol
    return Evidence(
        layer=Layer.NUMERIC, status=Status.CONSISTENT, outcome=Outcome.HOLDS if holds else Outcome.FAILS,
        summary=(f"built RPE model, d = {d}, V = {V}, t = 2..{T}: attention on the previous token matches e/(t + e - 1) "
                 f"(max |difference| {fmt_measured(err, '.2e')})" if holds else f"max |weight - e/(t + e - 1)| = {err:.3g} > {tol}"),
        numbers={"d": d, "V": V, "T": T, "max_abs_error": err,
                 "weights_first": [round(float(x), 10) for x in got[:6]], "formula_first": [round(float(x), 10) for x in want[:6]]},
        tolerance=f"{tol} (float64 softmax of exactly orthonormal scores)", engines=engine_versions("torch"), seed=seed)
