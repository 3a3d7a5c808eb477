"""fp26: D_head and the random-orientation null, with faults."""

from __future__ import annotations

import numpy as np

from verify.numeric import fingerprint as fp


def test_d_head_rotation_and_symmetric():
    th = 0.3
    R = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    assert abs(fp.d_head(R) - abs(np.sin(th))) < 1e-12
    S = np.array([[2.0, 1.0], [1.0, 3.0]])
    assert fp.d_head(S) == 0.0
    assert fp.d_head(np.zeros((3, 3))) == 0.0


def test_null_is_between_and_fault_changes_it(monkeypatch):
    M = np.diag(np.linspace(1, 2, 16))
    n = fp.null_d_head(M, 60, 0)
    assert 0.3 < n["mean"] < 0.8 and n["lo"] <= n["mean"] <= n["hi"]
    # fault: the 'random' rotation replaced by the identity gives a symmetric M: D_head 0
    monkeypatch.setattr(fp, "haar", lambda k, rng: np.eye(k))
    assert fp.null_d_head(M, 10, 0)["mean"] == 0.0


def test_rope_relative():
    """The same vector at every position: rotated scores depend only on the offset (a broken rotation fails)."""
    import torch

    x = torch.randn(4, dtype=torch.float64).expand(1, 1, 1, 6, 4)
    r = fp._rope(x)
    a, b = (r[..., 1, :] * r[..., 0, :]).sum(), (r[..., 4, :] * r[..., 3, :]).sum()
    assert torch.allclose(a, b)


def test_copy_batch_offsets_vary_and_mask_marks_the_copy():
    import torch

    g = torch.Generator().manual_seed(0)
    tok, mask = fp.copy_batch(64, 32, 64, g)
    L = 8
    starts = set()
    for r in range(64):
        idx = mask[r].nonzero().flatten().tolist()
        assert len(idx) == L - 1 and idx == list(range(idx[0], idx[0] + L - 1))
        b = idx[0]
        row = tok[r].tolist()
        src = [a for a in range(0, b - L + 1) if row[a:a + L] == row[b:b + L]]
        assert src, "the copied segment has a source"
        starts.add(b - src[0])
    assert len(starts) > 5  # the offset varies: no fixed-offset head predicts the copy


def test_fingerprint_rule_and_faults():
    """Rotational RoPE heads and symmetric absolute/ALiBi heads hold; swapping them (fault) fails; a weak head
    under any PE leaves the verdict inconclusive."""
    null = {"mean": 0.5, "lo": 0.3, "hi": 0.7}
    strong = {pe: [0.9, 0.8] for pe in fp.PES}
    th = 1.2
    R = np.kron(np.eye(4), np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]))
    S = np.diag(np.linspace(1, 2, 8))
    good = {"rope": fp.d_head(R), "absolute": fp.d_head(S), "alibi": fp.d_head(S)}
    assert fp.fingerprint_verdict(strong, good, null) == "holds"
    swapped = {"rope": fp.d_head(S), "absolute": fp.d_head(R), "alibi": fp.d_head(S)}
    assert fp.fingerprint_verdict(strong, swapped, null) == "fails"
    assert fp.fingerprint_verdict({**strong, "alibi": [0.9, 0.2]}, good, null) is None


def test_paper_null_near_published():
    n = fp.paper_null(60, 0)
    assert abs(n["mean"] - fp.PUBLISHED_NULL) <= fp.NULL_TOL
    small = fp.null_d_head(np.random.default_rng(0).standard_normal((8, 32)).T @ np.random.default_rng(1)
                           .standard_normal((8, 32)), 60, 0)
    assert small["mean"] < n["mean"] - 0.05  # the null depends on d and rank
