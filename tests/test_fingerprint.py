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
