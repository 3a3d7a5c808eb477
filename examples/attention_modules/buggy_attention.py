"""Two attention layers with a planted bug each, behind the attention-module protocol of
``verify impl:* --model module:PKG.MOD:FACTORY`` (docs/impl-module.md); good_attention.py without the bugs.

From this folder::

    verify impl:decode --model module:buggy_attention:make_dropping_cache   # FAILS: prompt length 4, split 1
    verify impl:window --model module:buggy_attention:make_wide_window      # FAILS: 5 keys seen, 4 admitted
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn


class Attention(nn.Module):
    """Sliding-window self-attention (w = 4) with rotary positions and a rolling KV cache; ``bug`` picks the
    planted bug: ``"drop"`` (the rolling cache keeps window - 2 keys, dropping the oldest key the window still
    admits) or ``"wide"`` (the mask admits window + 1 keys, the off-by-one of transformers #39408)."""

    def __init__(self, seed: int, dtype: torch.dtype, bug: str, d_model: int = 32, n_heads: int = 4,
                 window: int = 4) -> None:
        super().__init__()
        self.d_model, self.n_heads, self.window, self.bug = d_model, n_heads, window, bug
        self.head_dim = d_model // n_heads
        g = torch.Generator().manual_seed(seed)
        self.qkv = nn.Parameter((torch.randn(3 * d_model, d_model, generator=g, dtype=torch.float64)
                                 / math.sqrt(d_model)).to(dtype))
        self.proj = nn.Parameter((torch.randn(d_model, d_model, generator=g, dtype=torch.float64)
                                  / math.sqrt(d_model)).to(dtype))

    def rotate(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        half = self.head_dim // 2
        freq = 10000.0 ** (-torch.arange(half, dtype=torch.float64) / half)
        angle = positions[:, None, :, None].to(torch.float64) * freq
        cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
        a, b = x[..., :half], x[..., half:]
        return torch.cat([a * cos - b * sin, a * sin + b * cos], -1)

    def forward(self, x: torch.Tensor, cache: dict[str, Any] | None = None, positions: torch.Tensor | None = None,
                mask: torch.Tensor | None = None) -> tuple[torch.Tensor, dict[str, Any]]:
        B, T, _ = x.shape
        H, hd = self.n_heads, self.head_dim
        start = 0 if cache is None else cache["length"]
        slots = torch.arange(start, start + T)
        if positions is None:
            positions = slots.expand(B, T)
        q, k, v = (x @ self.qkv.T).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4)
        q, k = self.rotate(q, positions), self.rotate(k, positions)
        k_slots = slots
        if cache is not None:
            k = torch.cat([cache["k"], k], 2)
            v = torch.cat([cache["v"], v], 2)
            k_slots = torch.cat([cache["slots"], slots])
        span = self.window + 1 if self.bug == "wide" else self.window  # BUG ("wide"): one key too many
        ok = (k_slots[None, :] <= slots[:, None]) & (slots[:, None] - k_slots[None, :] < span)
        ok = ok[None, None]
        if mask is not None:
            ok = ok & mask[:, k_slots][:, None, None, :]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        weights = torch.softmax(scores.masked_fill(~ok, float("-inf")), -1).nan_to_num(0.0)
        out = (weights @ v).transpose(1, 2).reshape(B, T, self.d_model) @ self.proj.T
        keep = self.window - 2 if self.bug == "drop" else span - 1  # BUG ("drop"): window - 1 keys are needed
        n = min(keep, k.shape[2])
        new = {"k": k[:, :, k.shape[2] - n:], "v": v[:, :, k.shape[2] - n:], "slots": k_slots[k_slots.numel() - n:],
               "length": start + T}
        return out, new


def make_dropping_cache(seed: int, dtype: torch.dtype) -> Attention:
    """The rolling cache drops the oldest key a query still sees: the cache-free pass is right, decoding is not."""
    return Attention(seed, dtype, "drop")


def make_wide_window(seed: int, dtype: torch.dtype) -> Attention:
    """The window admits w + 1 keys, consistently with and without the cache: impl:decode HOLDS, impl:window
    FAILS."""
    return Attention(seed, dtype, "wide")
