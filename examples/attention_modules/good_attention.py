"""A causal multi-head self-attention layer with rotary positions and a KV cache, behind the attention-module
protocol of ``verify impl:* --model module:PKG.MOD:FACTORY`` (docs/impl-module.md).

From this folder::

    verify impl:decode --model module:good_attention:make             # HOLDS
    verify impl:window --model module:good_attention:make_windowed    # HOLDS: each query sees w = 4 keys
    verify impl:padding --model module:good_attention:make            # HOLDS
    verify impl:reference --model module:good_attention:make          # HOLDS: the attention its spec defines
    verify impl:reference --model module:good_attention:make_gqa      # HOLDS: 4 query heads, 2 key/value heads
    verify impl:reference --model module:good_attention:make_alibi6   # HOLDS: ALiBi, 6 heads (not a power of two)
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


class Attention(nn.Module):
    """Self-attention over ``x: [batch, pos, d_model]``; ``window`` (keys at distance 0..window-1) or causal.

    The cache is a dict: rotated keys and values ``[batch, heads, keys, head_dim]``, the slot index of each
    cached key, and the number of slots seen.  Under a window it keeps only the last ``window - 1`` keys, all
    that a later query can reach."""

    def __init__(self, seed: int, dtype: torch.dtype, d_model: int = 32, n_heads: int = 4,
                 window: int | None = None, n_kv_heads: int | None = None, rope_base: float = 10000.0,
                 positional: str = "rope", computes: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.window = d_model, n_heads, window
        self.n_kv_heads = n_kv_heads or n_heads
        self.head_dim = d_model // n_heads
        #: what the layer declares (impl:reference computes the attention this defines)
        self.attention_spec = {"d_model": d_model, "n_heads": n_heads, "n_kv_heads": self.n_kv_heads,
                               "head_dim": self.head_dim, "window": window, "positional": positional,
                               "rope_base": rope_base, "rope_layout": "half"}
        #: what forward computes: the declaration, unless an example plants a bug in one choice
        self.computes = {"scale": "1/sqrt(head_dim)", "grouping": "consecutive", "rope_layout": "half",
                         "rope_base": rope_base, "rope_factor": 1.0, "window": window, "softmax_dtype": None,
                         "positional": positional, "alibi_schedule": "press", "alibi_order": "listed",
                         **(computes or {})}
        g = torch.Generator().manual_seed(seed)  # float64 draws, rounded to dtype: one seed, one set of weights
        rows = (n_heads + 2 * self.n_kv_heads) * self.head_dim  # W_q, W_k, W_v stacked
        self.qkv = nn.Parameter((torch.randn(rows, d_model, generator=g, dtype=torch.float64)
                                 / math.sqrt(d_model)).to(dtype))
        self.proj = nn.Parameter((torch.randn(d_model, d_model, generator=g, dtype=torch.float64)
                                  / math.sqrt(d_model)).to(dtype))

    def projections(self) -> dict[str, torch.Tensor]:
        """W_q, W_k, W_v, W_o (``y = x W^T``), for impl:reference."""
        H, KV, hd = self.n_heads, self.n_kv_heads, self.head_dim
        w = self.qkv.detach()
        return {"W_q": w[:H * hd], "W_k": w[H * hd:(H + KV) * hd], "W_v": w[(H + KV) * hd:], "W_o": self.proj.detach()}

    def rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        """RoPE on ``x: [batch, heads, pos, head_dim]`` at ``positions: [batch, pos]``."""
        half = self.head_dim // 2
        freq = self.computes["rope_base"] ** (-torch.arange(half, dtype=torch.float64) / half)
        angle = (positions[:, None, :, None].to(torch.float64) / self.computes["rope_factor"]) * freq
        cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
        if self.computes["rope_layout"] == "interleaved":  # pairs (2i, 2i + 1)
            a, b = x[..., 0::2], x[..., 1::2]
            return torch.stack([a * cos - b * sin, a * sin + b * cos], -1).flatten(-2)
        a, b = x[..., :half], x[..., half:]  # pairs (i, i + half): rotate-half
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    def slopes(self) -> torch.Tensor:
        """ALiBi's slope per head (Press et al., Sec. 3 and their code): for H a power of two 2^(-8i/H), i = 1..H;
        otherwise the 2^floor(log2 H) slopes of that many heads, then every other slope of twice as many."""
        def geometric(n: int) -> list[float]:
            return [2.0 ** (-8.0 * i / n) for i in range(1, n + 1)]

        H = self.n_heads
        if self.computes["alibi_schedule"] == "geometric":
            m = geometric(H)
        else:
            p = 2 ** int(math.floor(math.log2(H)))
            m = geometric(p) + geometric(2 * p)[0::2][:H - p]
        if self.computes["alibi_order"] == "reversed":
            m = m[::-1]
        return torch.tensor(m, dtype=torch.float64)

    def admitted(self, q_slots: torch.Tensor, k_slots: torch.Tensor) -> torch.Tensor:
        """[queries, keys]: key slot j is visible to query slot t (j <= t, and t - j < window under a window)."""
        ok = k_slots[None, :] <= q_slots[:, None]
        if self.computes["window"] is not None:
            ok &= q_slots[:, None] - k_slots[None, :] < self.computes["window"]
        return ok

    def cache_keep(self) -> int | None:
        """How many keys the cache keeps (None: all)."""
        return None if self.computes["window"] is None else self.computes["window"] - 1

    def forward(self, x: torch.Tensor, cache: dict[str, Any] | None = None, positions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, Any]]:
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
        start = 0 if cache is None else cache["length"]
        slots = torch.arange(start, start + T)
        if positions is None:
            positions = slots.expand(B, T)
        KV = self.n_kv_heads
        qkv = x @ self.qkv.T
        q = qkv[..., :H * hd].view(B, T, H, hd).transpose(1, 2)
        k = qkv[..., H * hd:(H + KV) * hd].view(B, T, KV, hd).transpose(1, 2)
        v = qkv[..., (H + KV) * hd:].view(B, T, KV, hd).transpose(1, 2)
        if self.computes["positional"] == "rope":
            q, k = self.rotate(q, positions), self.rotate(k, positions)
        k_pos = positions
        k_slots = slots
        if cache is not None:
            k = torch.cat([cache["k"], k], 2)
            v = torch.cat([cache["v"], v], 2)
            k_slots = torch.cat([cache["slots"], slots])
            k_pos = torch.cat([cache["pos"], positions], 1)
        ok = self.admitted(slots, k_slots)[None, None]  # [1, 1, T, keys]
        if mask is not None:  # mask: [batch, every slot so far]; padding is never attended
            ok = ok & mask[:, k_slots][:, None, None, :]
        if KV != H:  # query head h reads key/value head h // (H / KV) (consecutive), or h % KV (strided)
            idx = torch.arange(H) // (H // KV) if self.computes["grouping"] == "consecutive" else torch.arange(H) % KV
            k_all, v_all = k[:, idx], v[:, idx]
        else:
            k_all, v_all = k, v
        scale = 1 / hd if self.computes["scale"] == "1/head_dim" else 1 / math.sqrt(hd)
        scores = (q @ k_all.transpose(-1, -2)) * scale
        if self.computes["positional"] == "alibi":  # bias -m_h (t - s)
            dist = (positions[:, None, :, None] - k_pos[:, None, None, :]).to(torch.float64)
            scores = scores - (self.slopes()[None, :, None, None] * dist).to(scores.dtype)
        low = self.computes["softmax_dtype"]  # None: the scores' own dtype
        weights = torch.softmax(scores.masked_fill(~ok, float("-inf")).to(low or scores.dtype), -1)
        weights = weights.to(scores.dtype).nan_to_num(0.0)  # a pad query: zeros
        out = (weights @ v_all).transpose(1, 2).reshape(B, T, self.d_model) @ self.proj.T
        keep = self.cache_keep()
        n = k.shape[2] if keep is None else min(keep, k.shape[2])
        new = {"k": k[:, :, k.shape[2] - n:], "v": v[:, :, k.shape[2] - n:], "slots": k_slots[k_slots.numel() - n:],
               "pos": k_pos[:, k_pos.shape[1] - n:], "length": start + T}
        return out, new


def make(seed: int, dtype: torch.dtype) -> Attention:
    """Causal attention, d_model 32, 4 heads."""
    return Attention(seed, dtype)


def make_windowed(seed: int, dtype: torch.dtype) -> Attention:
    """Sliding-window attention, w = 4 keys (the query's own included)."""
    return Attention(seed, dtype, window=4)


def make_gqa(seed: int, dtype: torch.dtype) -> Attention:
    """Grouped-query attention: 4 query heads over 2 key/value heads (heads 0, 1 read kv head 0; 2, 3 kv head 1)."""
    return Attention(seed, dtype, n_kv_heads=2)


def make_alibi(seed: int, dtype: torch.dtype) -> Attention:
    """Causal attention with ALiBi (no RoPE), 4 heads: slopes 1/4, 1/16, 1/64, 1/256."""
    return Attention(seed, dtype, positional="alibi")


def make_alibi6(seed: int, dtype: torch.dtype) -> Attention:
    """ALiBi with 6 heads of size 8 (d_model 48): slopes 2^-2, 2^-4, 2^-6, 2^-8, then 2^-1, 2^-3."""
    return Attention(seed, dtype, d_model=48, n_heads=6, positional="alibi")
