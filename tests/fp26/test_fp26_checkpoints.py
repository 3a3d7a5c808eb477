"""fp26's static part on local checkpoints (``verify fp26:fingerprint --checkpoint DIR``): tiny gpt2 (learned absolute
positions) and llama (RoPE) models saved to disk here, read back with ``local_files_only`` (never a download)."""

from __future__ import annotations

import os

import numpy as np
import pytest

if os.environ.get("CI"):
    import transformers  # noqa: F401
pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from verify.numeric import fingerprint as fp  # noqa: E402
from verify.numeric import heads  # noqa: E402
from verify.numeric import impl_models as im  # noqa: E402


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """gpt2 and llama saved with non-unit norm gains (so a gain left unfolded shows)."""
    out = {}
    for name in ("gpt2", "llama"):
        b = im.build(f"hf:{name}", dtype="float32", seed=3)
        g = torch.Generator().manual_seed(5)
        with torch.no_grad():
            for n, prm in b.model.named_parameters():
                if n.endswith(("ln_1.weight", "input_layernorm.weight")):
                    prm.copy_(0.5 + torch.rand(prm.shape, generator=g))
        path = tmp_path_factory.mktemp(name)
        b.model.save_pretrained(path)
        out[name] = str(path)
    return out


def test_static_profile_reads_each_scheme_and_measures_prev_from_the_model(checkpoints):
    for name, scheme in (("gpt2", "absolute"), ("llama", "rope")):
        prof = fp.static_profile(checkpoints[name], seed=0, n_seq=2, T=16)
        assert prof["model_type"] == name and prof["scheme"] == scheme and prof["heads"] == 8
        top = prof["top_prev_heads"][0]
        # the same head's attention on t - 1, measured independently through verify head's extraction (float64)
        ex = heads.extract_hf(f"hf-dir:{checkpoints[name]}", top["layer"], top["head"], "prev", None, n=1,
                              length=16, seed=0)
        assert heads.cross_check(ex) < 1e-4
        assert 0.0 <= top["prev"] <= 1.0 and 0.0 < prof["median_percentile"] <= 1.0


def test_static_d_head_agrees_with_the_head_extraction(checkpoints):
    """D_head from fingerprint's own weight reading (gain folded, LayerNorm centring) equals D_head of the head that
    verify head takes apart (independent code: HeadProgram's W_Q, W_K and norm gain).  Fault: the gain left
    unfolded gives another D_head."""
    for name in ("gpt2", "llama"):
        model = im.transformers_module().AutoModelForCausalLM.from_pretrained(checkpoints[name], local_files_only=True)
        mine = fp._qk_heads(model, name, 2, 4)
        for layer, head, Wq, Wk in mine[:8:3]:
            prog = heads.extract_hf(f"hf-dir:{checkpoints[name]}", layer, head, "prev", None, n=1, length=4,
                                    seed=0).program
            g = np.array(prog.norm_weight)
            d = len(g)
            C = np.eye(d) - np.ones((d, d)) / d if prog.norm == "layernorm" else np.eye(d)
            q = C @ (g[:, None] * np.array(prog.W_Q))
            k = C @ (g[:, None] * np.array(prog.W_K))
            assert fp.core_d_head(Wq, Wk) == pytest.approx(fp.core_d_head(q, k), rel=1e-5, abs=1e-6)
            unfolded = fp.core_d_head(C @ np.array(prog.W_Q), C @ np.array(prog.W_K))
            assert abs(unfolded - fp.core_d_head(Wq, Wk)) > 1e-4
