"""good_attention.py's layer with one choice of its cache-free pass computed other than it declares: bugs that the
cache and window checks cannot see (the full pass is their reference) and impl:reference does.

From this folder::

    verify impl:reference --model module:full_pass_bugs:make_scale_head_dim   # FAILS: scale 1/sqrt(8) -> 1/8
    verify impl:reference --model module:full_pass_bugs:make_gqa_strided      # FAILS: grouping consecutive -> strided
    verify impl:reference --model module:full_pass_bugs:make_rope_interleaved # FAILS: rope_layout half -> interleaved
    verify impl:reference --model module:full_pass_bugs:make_rope_base        # FAILS: rope_base 10000 -> 500000
    verify impl:reference --model module:full_pass_bugs:make_rope_factor      # FAILS: rope_factor 1 -> 2
    verify impl:reference --model module:full_pass_bugs:make_window_off_by_one  # FAILS: window 4 -> 5
    verify impl:reference --model module:full_pass_bugs:make_half_softmax     # FAILS: softmax_dtype same -> float16
    verify impl:reference --model module:full_pass_bugs:make_alibi_reversed   # FAILS: alibi_order listed -> reversed
    verify impl:reference --model module:full_pass_bugs:make_alibi_geometric  # FAILS: alibi_schedule press -> geometric
"""

from __future__ import annotations

import torch
from good_attention import Attention


def make_scale_head_dim(seed: int, dtype: torch.dtype) -> Attention:
    """Scores divided by head_dim instead of sqrt(head_dim)."""
    return Attention(seed, dtype, computes={"scale": "1/head_dim"})


def make_gqa_strided(seed: int, dtype: torch.dtype) -> Attention:
    """Grouped-query attention with the key/value heads repeated in the wrong order (torch.repeat's h % KV where
    the layout is repeat_interleave's h // (H / KV))."""
    return Attention(seed, dtype, n_kv_heads=2, computes={"grouping": "strided"})


def make_rope_interleaved(seed: int, dtype: torch.dtype) -> Attention:
    """RoPE pairs (2i, 2i + 1) where the declared layout is rotate-half's (i, i + head_dim / 2): the
    checkpoint-conversion bug."""
    return Attention(seed, dtype, computes={"rope_layout": "interleaved"})


def make_rope_base(seed: int, dtype: torch.dtype) -> Attention:
    """RoPE base 500000 where 10000 is declared."""
    return Attention(seed, dtype, computes={"rope_base": 500000.0})


def make_rope_factor(seed: int, dtype: torch.dtype) -> Attention:
    """Positions divided by 2 (a linear RoPE scaling factor the layer does not declare)."""
    return Attention(seed, dtype, computes={"rope_factor": 2.0})


def make_window_off_by_one(seed: int, dtype: torch.dtype) -> Attention:
    """A declared window of 4 keys computed as 5, in the full pass and the cache alike (impl:decode HOLDS)."""
    return Attention(seed, dtype, window=4, computes={"window": 5})


def make_half_softmax(seed: int, dtype: torch.dtype) -> Attention:
    """The softmax computed in float16 whatever the layer's dtype."""
    return Attention(seed, dtype, computes={"softmax_dtype": torch.float16})


def make_alibi_reversed(seed: int, dtype: torch.dtype) -> Attention:
    """ALiBi's slopes given to the heads in reverse order (head 0 gets the shallowest)."""
    return Attention(seed, dtype, positional="alibi", computes={"alibi_order": "reversed"})


def make_alibi_geometric(seed: int, dtype: torch.dtype) -> Attention:
    """ALiBi for 6 heads with the power-of-two formula 2^(-8i/6) where Press et al.'s rule for other head counts
    applies (the slopes 2^-2, 2^-4, 2^-6, 2^-8, 2^-1, 2^-3)."""
    return Attention(seed, dtype, d_model=48, n_heads=6, positional="alibi", computes={"alibi_schedule": "geometric"})
