"""Rotary position embedding (RoPE), once, for every numeric rebuild that rotates queries and keys and for the
reference of impl:reference (:mod:`verify.constructions.attention_spec`).

RoPE (Su et al., RoFormer, Sec. 3.4) rotates each coordinate pair of a query or key at position p by the angle
p theta_k.  Two pair layouts are in use and both are here, as an argument:

- ``interleaved``: pairs (2k, 2k + 1), as RoFormer writes it (KV-shift attention's Appendix F code);
- ``half``: pairs (k, k + h) with h the number of rotated pairs ("rotate half", as Hugging Face's Llama-family
  models and GPT-NeoX apply it).

Coordinates past the 2h rotated ones (partial rotary) pass through unchanged.  The angles are formed in
``angle_dtype`` (float64 by default; a caller that trains in float32 keeps its own dtype so that its runs stay
bit-identical), and cos and sin are scaled by ``scale`` (the attention scaling of YaRN-style rules) before the
rotation.
"""

from __future__ import annotations

import torch

LAYOUTS = ("interleaved", "half")


def inverse_frequencies(base: float, dim: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    """theta_k = base^(-2k/dim) for k = 0..dim/2 - 1 (RoFormer Eq. 15), shape ``[dim // 2]``."""
    return base ** (-2 * torch.arange(dim // 2, dtype=dtype) / dim)


def rotate(x: torch.Tensor, positions: torch.Tensor, inv_freq: torch.Tensor, layout: str = "interleaved", *,
           angle_dtype: torch.dtype = torch.float64, scale: float = 1.0) -> torch.Tensor:
    """RoPE of ``x`` ``[..., pos, head_dim]`` at ``positions`` ``[pos]`` (or ``[batch, pos]`` for x ``[batch, heads,
    pos, head_dim]``: each batch entry its own positions) with frequencies ``inv_freq`` ``[h]`` (the first 2h
    coordinates rotated in ``layout``'s pairs, the rest unchanged); a fresh tensor of x's shape and dtype.

    Raises:
        ValueError: an unknown layout, or 2h larger than head_dim.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"unknown RoPE pair layout {layout!r}; expected one of {LAYOUTS}")
    h = inv_freq.numel()
    if 2 * h > x.shape[-1]:
        raise ValueError(f"{h} rotated pairs do not fit a head of dimension {x.shape[-1]}")
    ang = positions.to(angle_dtype)[..., None] * inv_freq.to(angle_dtype)
    if positions.dim() == 2:
        ang = ang[:, None]  # [batch, 1, pos, h]: the same positions for every head
    c, s = torch.cos(ang), torch.sin(ang)
    if scale != 1.0:
        c, s = c * scale, s * scale
    c, s = c.to(x.dtype), s.to(x.dtype)
    rest = x[..., 2 * h:]
    if layout == "half":
        a, b = x[..., :h], x[..., h:2 * h]
        return torch.cat([a * c - b * s, a * s + b * c, rest], -1)
    a, b = x[..., 0:2 * h:2], x[..., 1:2 * h:2]
    return torch.cat([torch.stack([a * c - b * s, a * s + b * c], -1).flatten(-2), rest], -1)


__all__ = ["LAYOUTS", "inverse_frequencies", "rotate"]
