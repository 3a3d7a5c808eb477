"""The two-layer Bietti-style induction model and the Appendix C.2 data, in torch.

Sources, element by element (what the reachable text settles, and what stays a caveat):
* layer scores query^T W_K key with W_Q the identity: bietti23's public code
  (``ihead_basic_model.py``, ``Attention.forward``: scores = x_t . (W_K x_s); its memory
  probe ``test_wk0`` queries p_t against W_K p_{t-1});
* frozen value path Phi_1 = W^1_O W^1_V, frozen W^2_V, trained W^1_K, W^2_K, W^2_O, frozen
  random embeddings: bietti23's simplified model (the same code: layer 1 freezes wv, wo;
  layer 2 freezes wv; ``freeze_embeddings``, ``freeze_output``);
* RPE layer-1 score w_E(z_t)^T W^1_K (w_E(z_s) + r_{s-t}), the three one-step gradient
  steps (W^2_O, W^2_K, W^1_K) and the Appendix C.2 data: ws24 Theorem 2 / appendix
  Theorem 3 and Appendix C.2 as the review record describes them.  The ws24 text past its
  introduction was not reachable for this build, so these stay reconstructed and are
  printed as such; the step size of each gradient step is not settled either (``lr``).
* loss on the final token only: reconstructed (the analysed sequences put the second
  trigger at the last position); bietti23's code trains on every output token
  (``loss_head_only``), which differs.

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

import contextlib
from dataclasses import dataclass
from typing import Iterator

import torch

from verify.faults import seam
from verify.numeric.bietti_sizes import memory_bytes  # noqa: F401  (torch-free; re-exported)


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


@seam("numeric.bietti_model._project")
def _project(fr: FrozenParts, tokens: torch.Tensor, pe: str, M: torch.Tensor) -> torch.Tensor:
    """x_t^T M for every sequence and position, shape (N, T, d).

    Computed on the embedding tables ((w_E M)[z_t] + (p M)[t]) and gathered: V d^2
    instead of N T d^2 multiply-adds; exact same values, autograd flows through M.
    """
    out = (fr.w_E @ M)[tokens]
    return out + (fr.p[: tokens.shape[1]] @ M) if pe == "ape" else out


def layer1_scores(fr: FrozenParts, W1K: torch.Tensor, tokens: torch.Tensor, pe: str,
                  X: torch.Tensor | None = None) -> torch.Tensor:
    """Layer-1 attention scores score1(t <- s), shape (N, T, T), -inf above the diagonal.

    RPE: w_E(z_t)^T W^1_K (w_E(z_s) + r_{s-t}); APE: x_t^T W^1_K x_s (ws24 / bietti23).  ``X``: the inputs
    :func:`_inputs` gives for these tokens, when the caller holds them.
    """
    N, T = tokens.shape
    if X is None:
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


def uniform_causal(T: int, dtype: torch.dtype) -> torch.Tensor:
    """The causal softmax of an all-zero score matrix, (T, T): row t is 1/(t+1) on s <= t, 0 above the diagonal.
    The same floats ``torch.softmax`` gives on zero scores (exp(0) = 1 summed exactly: fl(1/(t+1)))."""
    t = torch.arange(T)
    w = (1.0 / (t + 1).to(dtype))[:, None].expand(T, T)
    return torch.where(t[None, :] <= t[:, None], w, torch.zeros((), dtype=dtype))


def _zero_constant(W: torch.Tensor) -> bool:
    """W is a constant (no gradient asked) whose entries are all 0: its bilinear scores are then exactly 0."""
    return not W.requires_grad and not bool(W.any())


def forward(fr: FrozenParts, W1K: torch.Tensor, W2K: torch.Tensor, W2O: torch.Tensor,
            tokens: torch.Tensor, pe: str = "rpe", X: torch.Tensor | None = None,
            PhiX: torch.Tensor | None = None) -> torch.Tensor:
    """Logits at the final position, shape (N, V).

    ``X`` (:func:`_inputs`) and ``PhiX`` (the frozen value path applied to it, ``_project(..., Phi_1.T)``) may be
    passed when the caller already holds them for these tokens (the same tensors: they do not depend on any
    trained matrix).  A constant zero W^1_K gives zero layer-1 scores, whose causal softmax is
    :func:`uniform_causal` (the scores are then not formed; the same floats).
    """
    if X is None:
        X = _inputs(fr, tokens, pe)
    if PhiX is None:
        PhiX = _project(fr, tokens, pe, fr.Phi_1.T)
    if _zero_constant(W1K):
        A1 = uniform_causal(tokens.shape[1], X.dtype)
    else:
        A1 = torch.softmax(layer1_scores(fr, W1K, tokens, pe, X), dim=-1)
    H = X + A1 @ PhiX
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
    with _deterministic():
        return _one_step(fr, tokens, targets, pe, lr)


@contextlib.contextmanager
def _deterministic() -> Iterator[None]:
    """Bit-identical gradients for a seed.  The embedding-table gathers backpropagate through
    index_put(accumulate=True), whose multithreaded CPU kernel sums in a varying order.  On one
    thread (how the numeric layer always runs) that kernel is already sequential, so nothing is
    switched; with more threads the deterministic kernel is switched on for the block (its first
    use imports torch._inductor, about 1 s)."""
    if torch.get_num_threads() == 1:
        yield
        return
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)


def _one_step(fr: FrozenParts, tokens: torch.Tensor, targets: torch.Tensor, pe: str, lr: float,
              split: bool = False) -> OneStepWeights:
    """The three steps; with ``split`` the batch is cut into three equal thirds and step i
    uses third i only (independent data per step, see :func:`one_step_protocol_split`)."""
    d = fr.d
    zero = torch.zeros(d, d, dtype=fr.w_E.dtype)
    if split:
        n = tokens.shape[0] // 3
        data = [(tokens[i * n:(i + 1) * n], targets[i * n:(i + 1) * n]) for i in range(3)]
    else:
        data = [(tokens, targets)] * 3

    # x_t and Phi_1 x_t depend on the batch only: formed once per distinct batch
    held: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

    def grad(which: str, W1K: torch.Tensor, W2K: torch.Tensor, W2O: torch.Tensor, step: int) -> torch.Tensor:
        mats = {"W1K": W1K.clone(), "W2K": W2K.clone(), "W2O": W2O.clone()}
        mats[which].requires_grad_(True)
        tok, y = data[step]
        if id(tok) not in held:
            held[id(tok)] = (_inputs(fr, tok, pe), _project(fr, tok, pe, fr.Phi_1.T))
        X, PhiX = held[id(tok)]
        logits = forward(fr, mats["W1K"], mats["W2K"], mats["W2O"], tok, pe, X, PhiX)
        loss = torch.nn.functional.cross_entropy(logits, y)
        (g,) = torch.autograd.grad(loss, mats[which])
        return g

    W2O = -lr * grad("W2O", zero, zero, zero, 0)
    W2K = -lr * grad("W2K", zero, zero, W2O, 1)
    W1K = -lr * grad("W1K", zero, W2K, W2O, 2)
    return OneStepWeights(W2O=W2O, W2K=W2K, W1K=W1K)


def one_step_protocol_split(fr: FrozenParts, tokens: torch.Tensor, targets: torch.Tensor,
                            pe: str = "rpe", lr: float = 1.0) -> OneStepWeights:
    """The ws24 protocol with independent data per step (thirds of the batch, in order).

    With one batch for all three steps, the third step's gradient is a product of three
    sample means, whose expectation carries an O(1/n) bias (the covariance of the means)
    that can swamp the population value; with independent thirds the steps are
    conditionally unbiased, so averaging runs estimates the population protocol (up to the
    softmax's curvature in W^2_O, W^2_K, which is small at small step sizes).

    Raises:
        ValueError: fewer than 3 sequences.
    """
    if tokens.shape[0] < 3:
        raise ValueError(f"need at least 3 sequences, got {tokens.shape[0]}")
    with _deterministic():
        return _one_step(fr, tokens, targets, pe, lr, split=True)


def orthonormal_frozen(V: int, T: int, dtype: torch.dtype = torch.float64) -> FrozenParts:
    """The model's frozen parts with Assumption 1 idealized as an exact orthonormal family.

    Coordinates of R^d, d = 5V + 2T, are split into blocks: w_E(k) = e_k; Phi_1 w_E(k) = f_k
    (a fresh block); W^2_V maps w_E(k) and f_k to two further fresh blocks; w_U(k), r_{-i}
    and p_t get their own blocks.  Every vector the forward pass touches is then a member of
    one orthonormal family, so the one-step gradient has no near-orthogonality noise left:
    what remains is the sampling of the data, which a Monte-Carlo interval measures.

    Args:
        V: vocabulary size; T: sequence length (both >= 1).

    Returns:
        FrozenParts with w_E, w_U (V, d), r, p (T, d), Phi_1, W2V (d, d); float64 by default.

    Raises:
        ValueError: V or T not positive.
    """
    if V <= 0 or T <= 0:
        raise ValueError(f"V, T must be positive, got V={V}, T={T}")
    d = 5 * V + 2 * T
    eye = torch.eye(d, dtype=dtype)
    E, F, G1, G2, U = (eye[i * V:(i + 1) * V] for i in range(5))
    R, P = eye[5 * V:5 * V + T], eye[5 * V + T:5 * V + 2 * T]
    return FrozenParts(w_E=E, w_U=U, r=R, p=P, Phi_1=F.T @ E, W2V=G1.T @ E + G2.T @ F)
