"""The two-layer Bietti-style induction model and the Appendix C.2 data, in torch.

Sources: Bietti et al., arXiv 2306.00802 (the public ``transformer-birth`` model), and
Wang & Sato, arXiv 2412.11459 v2, Appendix C.2 (RPE variant, one-step training
protocol).  The model is RECONSTRUCTED from the public Bietti et al. code and the
review record of ws24; the printed output says so.

Shapes (all float32 unless noted):
  tokens  (N, T) int64, 0-indexed token ids (the paper's token v is id v-1);
  w_E, w_U (V, d): frozen input / output embeddings, rows N(0, I_d/d);
  r       (T, d): relative vectors, r[i] = r_{-i} (offset s - t = -i), N(0, I_d/d);
  p       (T, d): absolute positions (APE), N(0, I_d/d);
  Phi_1 = W^1_O W^1_V, W^2_V (d, d): frozen, entries N(0, 1/d).

Forward (final position only for layer 2; positions 0-indexed, t = 0..T-1):
  APE: x_t = w_E(z_t) + p_t; score1(t <- s) = x_t^T W^1_K x_s
  RPE: x_t = w_E(z_t);       score1(t <- s) = x_t^T W^1_K (x_s + r_{s-t})
  causal softmax over s <= t;  h_t = x_t + sum_s a1(t, s) Phi_1 x_s
  score2(T <- s) = h_T^T W^2_K h_s;  o = h_T + W^2_O W^2_V sum_s a2(s) h_s
  logits = W_U o  (W_U rows w_U(u));  loss = cross-entropy of the final token.

Every random choice takes an explicit ``torch.Generator`` seeded by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class FrozenParts:
    """The frozen random matrices of the model (see module docstring for shapes)."""

    w_E: torch.Tensor
    w_U: torch.Tensor
    r: torch.Tensor
    p: torch.Tensor
    Phi_1: torch.Tensor
    W2V: torch.Tensor

    @property
    def d(self) -> int:
        return self.w_E.shape[1]

    @property
    def V(self) -> int:
        return self.w_E.shape[0]


def sample_frozen(d: int, V: int, T: int, seed: int, dtype: torch.dtype = torch.float32) -> FrozenParts:
    """Frozen Gaussian embeddings and matrices, N(0, 1/d) entries (Assumption 1).

    Args:
        d: width; V: vocabulary size; T: sequence length; seed: generator seed.

    Raises:
        ValueError: d, V or T not positive.
    """
    if d <= 0 or V <= 0 or T <= 0:
        raise ValueError(f"d, V, T must be positive, got d={d}, V={V}, T={T}")
    g = torch.Generator().manual_seed(seed)
    s = d ** -0.5

    def gauss(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=g, dtype=dtype) * s

    return FrozenParts(w_E=gauss(V, d), w_U=gauss(V, d), r=gauss(T, d), p=gauss(T, d),
                       Phi_1=gauss(d, d), W2V=gauss(d, d))


def sample_sequences(V: int, T: int, N: int, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Appendix C.2 sequences: one trigger q twice, the second time at the last position.

    Each sequence: q uniform over [V]; a first occurrence at a uniform position
    s0 in [0, T-3]; the output y (uniform over [V] minus q) at s0 + 1; q again at T-1;
    every other token uniform over [V] minus q (the uniform bigram rows).

    Returns:
        tokens (N, T) int64, targets y (N,) int64, first positions s0 (N,) int64.

    Raises:
        ValueError: V < 2 or T < 3.
    """
    if V < 2 or T < 3:
        raise ValueError(f"need V >= 2 and T >= 3, got V={V}, T={T}")
    g = torch.Generator().manual_seed(seed)
    q = torch.randint(0, V, (N,), generator=g)
    other = torch.randint(0, V - 1, (N, T), generator=g)
    tokens = other + (other >= q[:, None]).long()  # uniform over [V] minus q
    y_raw = torch.randint(0, V - 1, (N,), generator=g)
    y = y_raw + (y_raw >= q).long()
    s0 = torch.randint(0, T - 2, (N,), generator=g)
    rows = torch.arange(N)
    tokens[rows, s0] = q
    tokens[rows, s0 + 1] = y
    tokens[:, T - 1] = q
    return tokens, y, s0


def _inputs(fr: FrozenParts, tokens: torch.Tensor, pe: str) -> torch.Tensor:
    """x_t for every sequence and position, shape (N, T, d)."""
    X = fr.w_E[tokens]
    return X + fr.p[: tokens.shape[1]] if pe == "ape" else X


def _project(fr: FrozenParts, tokens: torch.Tensor, pe: str, M: torch.Tensor) -> torch.Tensor:
    """x_t^T M for every sequence and position, shape (N, T, d).

    Computed on the embedding tables ((w_E M)[z_t] + (p M)[t]) and gathered: V d^2
    instead of N T d^2 multiply-adds; exact same values, autograd flows through M.
    """
    out = (fr.w_E @ M)[tokens]
    return out + (fr.p[: tokens.shape[1]] @ M) if pe == "ape" else out


def layer1_scores(fr: FrozenParts, W1K: torch.Tensor, tokens: torch.Tensor, pe: str) -> torch.Tensor:
    """Layer-1 attention scores score1(t <- s), shape (N, T, T), -inf above the diagonal.

    RPE: w_E(z_t)^T W^1_K (w_E(z_s) + r_{s-t}); APE: x_t^T W^1_K x_s (ws24 / bietti23).
    """
    N, T = tokens.shape
    X = _inputs(fr, tokens, pe)
    Q = _project(fr, tokens, pe, W1K)  # rows x_t^T W^1_K
    S = Q @ X.transpose(1, 2)
    if pe == "rpe":
        QR = Q @ fr.r[:T].T  # [n, t, i] = query_t^T W r_{-i}
        t_idx = torch.arange(T)
        off = (t_idx[:, None] - t_idx[None, :]).clamp(min=0)  # i = t - s
        S = S + torch.gather(QR, 2, off.expand(N, T, T))
    mask = torch.ones(T, T, dtype=torch.bool).tril()
    return S.masked_fill(~mask, float("-inf"))


def forward(fr: FrozenParts, W1K: torch.Tensor, W2K: torch.Tensor, W2O: torch.Tensor,
            tokens: torch.Tensor, pe: str = "rpe") -> torch.Tensor:
    """Logits at the final position, shape (N, V)."""
    X = _inputs(fr, tokens, pe)
    A1 = torch.softmax(layer1_scores(fr, W1K, tokens, pe), dim=-1)
    H = X + A1 @ _project(fr, tokens, pe, fr.Phi_1.T)
    hT = H[:, -1]
    a2 = torch.softmax(torch.einsum("nd,de,nse->ns", hT, W2K, H), dim=-1)
    ctx = torch.einsum("ns,nsd->nd", a2, H)
    o = hT + ctx @ fr.W2V.T @ W2O.T
    return o @ fr.w_U.T


@dataclass(frozen=True)
class OneStepWeights:
    """The three matrices after the ws24 protocol (each one gradient step from zero)."""

    W2O: torch.Tensor
    W2K: torch.Tensor
    W1K: torch.Tensor


def one_step_protocol(fr: FrozenParts, tokens: torch.Tensor, targets: torch.Tensor,
                      pe: str = "rpe", lr: float = 1.0) -> OneStepWeights:
    """ws24 training protocol: W^2_O, then W^2_K, then W^1_K, one step each from zero.

    Each step is ``W = -lr * dL/dW`` evaluated with the earlier matrices set and the
    later ones at zero; gradients by autograd, matrix order preserved (dL/dW has the
    shape and orientation of W as used in ``query^T W key``).

    Args:
        fr: frozen parts; tokens (N, T); targets (N,); pe: ``"rpe"`` or ``"ape"``;
        lr: the step size of all three steps.
    """
    previous = torch.are_deterministic_algorithms_enabled()
    # the embedding-table gathers backpropagate through index_put(accumulate=True), whose
    # multithreaded CPU kernel sums in a varying order; the deterministic kernel makes the
    # result (and the JSON) bit-identical across runs for a seed
    torch.use_deterministic_algorithms(True)
    try:
        return _one_step(fr, tokens, targets, pe, lr)
    finally:
        torch.use_deterministic_algorithms(previous)


def _one_step(fr: FrozenParts, tokens: torch.Tensor, targets: torch.Tensor, pe: str, lr: float) -> OneStepWeights:
    d = fr.d
    zero = torch.zeros(d, d, dtype=fr.w_E.dtype)

    def grad(which: str, W1K: torch.Tensor, W2K: torch.Tensor, W2O: torch.Tensor) -> torch.Tensor:
        mats = {"W1K": W1K.clone(), "W2K": W2K.clone(), "W2O": W2O.clone()}
        mats[which].requires_grad_(True)
        logits = forward(fr, mats["W1K"], mats["W2K"], mats["W2O"], tokens, pe)
        loss = torch.nn.functional.cross_entropy(logits, targets)
        (g,) = torch.autograd.grad(loss, mats[which])
        return g

    W2O = -lr * grad("W2O", zero, zero, zero)
    W2K = -lr * grad("W2K", zero, zero, W2O)
    W1K = -lr * grad("W1K", zero, W2K, W2O)
    return OneStepWeights(W2O=W2O, W2K=W2K, W1K=W1K)


def cosine(a: torch.Tensor, b: torch.Tensor) -> float:
    """Cosine similarity of two matrices as vectors (float64)."""
    a, b = a.double().flatten(), b.double().flatten()
    return float(a @ b / (a.norm() * b.norm()))


def memory_bytes(d: int, V: int, T: int, N: int) -> int:
    """Rough peak memory of :func:`one_step_protocol` (float32, autograd kept)."""
    per = 4
    acts = N * T * d * 6 + N * T * T * 6
    return per * (acts + 6 * d * d + (2 * V + 2 * T) * d)
