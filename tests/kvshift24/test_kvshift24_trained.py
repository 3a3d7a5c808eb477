"""kvshift24:falsifier: the induction data, the layer, the verdict rule and its fault injections.

Small sizes (d = 16, V = T = 32, 4 pairs, 200 Adam steps, one seed: a few seconds per check)."""

from __future__ import annotations

import pytest
import torch

from verify.core.model import InputError
from verify.numeric import kvshift24_trained as k

SMALL = k.FalsifierSizes(d=16, H=1, V=32, T=32, n_pairs=4, batch=32, steps=200, lr=5e-3, n_eval=32)


def test_data_targets_are_the_earlier_successor():
    g = torch.Generator().manual_seed(3)
    tok, tgt = k.induction_batch(64, 64, 8, 16, g)
    for r in range(16):
        row, t = tok[r].tolist(), tgt[r].tolist()
        scored = [i for i, y in enumerate(t) if y >= 0]
        assert len(scored) == 8 and all(i >= 32 for i in scored)
        for i in scored:
            first = row.index(row[i])
            assert first < i and row[first + 1] == t[i] == row[i + 1]
        # every token other than the pairs' is used once
        counts = {x: row.count(x) for x in row}
        assert sorted(c for c in counts.values() if c > 1) == [2] * 16


def test_shift_and_rope():
    X = torch.arange(12.0).view(1, 3, 4)
    S = k.shift(X)
    assert S[0, 0].abs().sum() == 0 and torch.equal(S[0, 1:], X[0, :2])
    v = torch.randn(4, dtype=torch.float64).expand(6, 4)
    r = k.rope(v)
    assert torch.allclose((r[1] * r[0]).sum(), (r[5] * r[4]).sum())  # scores depend on the offset only
    assert not torch.allclose((r[2] * r[0]).sum(), (r[1] * r[0]).sum())


def test_vanilla_is_the_unshifted_layer():
    """With (a1, a2, b1, b2) = (1, 0, 1, 0) the layer is plain causal attention (computed directly here)."""
    g = torch.Generator().manual_seed(0)
    cfg = k.IHConfig("vanilla1", 8, 1, 16, 8, 1, 1, 1, 0.1)
    p = {n: t[None].double() for n, t in k.init_params(cfg, g).items()}
    X = torch.randn(1, 2, 8, 8, dtype=torch.float64)
    out, _ = k.attention_layer(p, 1, X, 1)
    q, kk, v = (X @ p[f"{n}1"][0].T for n in "QKV")
    sc = k.rope(q) @ k.rope(kk).transpose(-1, -2) / 8 ** 0.5
    A = torch.softmax(sc.masked_fill(~torch.ones(8, 8, dtype=torch.bool).tril(), float("-inf")), -1)
    assert torch.allclose(out, (A @ v) @ p["O1"][0].T)


def test_holds_and_fault_no_key_shift_falls_to_vanilla_level():
    ev = k.check_falsifier(SMALL, [0], None)
    assert ev.status == "consistent" and ev.outcome == "holds", ev.summary
    acc = ev.numbers["mean_accuracy"]
    assert acc["kvshift1"] >= 0.9 and acc["vanilla1"] <= ev.numbers["context_baseline"] + k.CHANCE_MARGIN
    # fault: a2 pinned at 0 (no key shift): the KV-shift layer must fall to the vanilla level
    bad = k.check_falsifier(SMALL, [0], None, pin={"a2": 0.0})
    assert bad.outcome != "holds"
    assert bad.numbers["mean_accuracy"]["kvshift1"] <= bad.numbers["context_baseline"] + k.CHANCE_MARGIN


def test_fault_shifted_vanilla_is_caught(monkeypatch):
    """If the 'vanilla' layer secretly shifted its keys (a1 = 0, a2 = 1 frozen), one vanilla layer would learn
    induction: the rule must then say FAILS (the statement's 'one vanilla layer cannot' is refuted)."""
    monkeypatch.setattr(k, "VANILLA_COEFS", {"a1": 0.0, "a2": 1.0, "b1": 1.0, "b2": 0.0})
    ev = k.check_falsifier(SMALL, [0], None)
    assert ev.outcome == "fails" and "one vanilla layer learns" in ev.summary


def test_rule_branches(monkeypatch):
    """The two remaining branches, with the measured accuracies replaced: nobody learns -> inconclusive; the
    two-layer model learns but the KV-shift layer does not -> fails."""
    two_layer = {"acc": 0.0}

    def fake(p, tok, tgt, H, layers):
        S = p["E"].shape[0]
        if layers == 2:
            return torch.full((S,), two_layer["acc"], dtype=torch.float64)
        return torch.zeros(S, dtype=torch.float64)  # both one-layer models at 0

    monkeypatch.setattr(k, "accuracy", fake)
    one_step = k.FalsifierSizes(**{**SMALL.__dict__, "steps": 1})
    two_layer["acc"] = 0.95
    assert k.check_falsifier(one_step, [0], None).outcome == "fails"
    two_layer["acc"] = 0.1
    assert k.check_falsifier(one_step, [0], None).status == "inconclusive"


def test_cache_reuse(tmp_path):
    from verify.numeric import lab

    sz = k.FalsifierSizes(**{**SMALL.__dict__, "steps": 5})
    a = k.check_falsifier(sz, [0], lab.Cache(tmp_path))
    b = k.check_falsifier(sz, [0], lab.Cache(tmp_path))
    assert not a.numbers["from_cache"] and b.numbers["from_cache"]
    assert a.numbers["mean_accuracy"] == b.numbers["mean_accuracy"]


def test_claim_registered_and_hostile_options():
    from verify.core import registry

    c = registry.resolve("kvshift24:falsifier", [])
    assert c.heavy and c.expected == {"": "HOLDS"}
    for bad in ({"d": "30", "H": "4"}, {"n_pairs": "20"}, {"V": "16"}, {"batch": "1024", "T": "512", "seeds": "16"}):
        with pytest.raises(InputError):
            c.validate(c.parse_params(bad))
