"""verify.constructions.rope: the one RoPE of the rebuilds and of impl:reference, against its definition (a complex rotation per pair)."""

from __future__ import annotations

import pytest
import torch

from verify.constructions import rope


def _by_complex(x: torch.Tensor, pos: torch.Tensor, inv: torch.Tensor, layout: str) -> torch.Tensor:
    """RoFormer's definition: pair k as the complex number z_k, rotated to z_k e^{i p theta_k}."""
    h = inv.numel()
    if layout == "half":
        re, im = x[..., :h], x[..., h:2 * h]
    else:
        re, im = x[..., 0:2 * h:2], x[..., 1:2 * h:2]
    z = torch.complex(re, im) * torch.exp(1j * pos.double()[:, None] * inv[None, :])
    out = x.clone()
    if layout == "half":
        out[..., :h], out[..., h:2 * h] = z.real, z.imag
    else:
        out[..., 0:2 * h:2], out[..., 1:2 * h:2] = z.real, z.imag
    return out


@pytest.mark.parametrize("layout", rope.LAYOUTS)
def test_rotate_is_the_complex_rotation_and_scores_depend_on_the_offset_only(layout):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 9, 10, generator=g, dtype=torch.float64)
    pos = torch.arange(9)
    inv = rope.inverse_frequencies(10000.0, 8)  # partial rotary: 8 of 10 coordinates
    got = rope.rotate(x, pos, inv, layout)
    assert torch.allclose(got, _by_complex(x, pos, inv, layout), atol=1e-14)
    assert torch.equal(got[..., 8:], x[..., 8:])
    q, k = torch.randn(10, generator=g, dtype=torch.float64), torch.randn(10, generator=g, dtype=torch.float64)
    Q = rope.rotate(q.expand(9, 10), pos, inv, layout)
    K = rope.rotate(k.expand(9, 10), pos, inv, layout)
    S = Q @ K.T
    for off in range(-8, 9):
        d = torch.diagonal(S, off)
        assert float(d.max() - d.min()) < 1e-12  # score(i, j) depends on i - j only


def test_the_layouts_differ_by_a_permutation_and_faults_are_seen():
    g = torch.Generator().manual_seed(2)
    x = torch.randn(5, 8, generator=g, dtype=torch.float64)
    pos, inv = torch.arange(5), rope.inverse_frequencies(500.0, 8)
    perm = torch.tensor([0, 2, 4, 6, 1, 3, 5, 7])  # interleaved pair k = (2k, 2k+1) -> half pair (k, k + 4)
    assert torch.allclose(rope.rotate(x[:, perm], pos, inv, "half"), rope.rotate(x, pos, inv, "interleaved")[:, perm])
    # the checkpoint-conversion bug: one layout read as the other gives other numbers
    assert not torch.allclose(rope.rotate(x, pos, inv, "half"), rope.rotate(x, pos, inv, "interleaved"))
    assert torch.allclose(rope.rotate(x, pos, inv, "half", scale=2.0)[0], x[0] * 2.0)  # position 0: scaled identity
    with pytest.raises(ValueError, match="pair layout"):
        rope.rotate(x, pos, inv, "pairs")
    with pytest.raises(ValueError, match="do not fit"):
        rope.rotate(x, pos, rope.inverse_frequencies(500.0, 10), "half")
