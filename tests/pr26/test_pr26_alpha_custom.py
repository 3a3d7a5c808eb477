"""verify alpha for a PE designer: custom feature maps, NoPE, fixed-slope ALiBi, a custom base, a user W,
the margin/mass report, identifiability, the CI gate and hostile inputs (CLI and API)."""

from __future__ import annotations

import json
import math
import pickle
from fractions import Fraction

import numpy as np
import pytest
import torch
from cli_support import json_report as _json
from cli_support import refused as _refused

from verify.constructions import features as F
from verify.constructions import pe
from verify.frontends.cli import main
from verify.proofs.pr26 import alpha as A

# ----------------------------------------------------------------------------- custom polynomial features


def test_polynomial_features_exact_with_realizable_W(capsys, tmp_path):
    # the realizable W for [1, i, i^2] on prev up to 64, fed back as an exact .json W: alpha 1, exact margin >= 1
    res = A.realizable(features="1, i, i**2", task="prev", L=64)
    assert res.realizable is True
    W = res.doc["witnesses"]["W1"]["param"]
    f = tmp_path / "W.json"
    f.write_text(json.dumps({"W": W}))
    doc = _json(capsys, ["alpha", "--pe-features", "1, i, i**2", "--task", "prev", "--L0", "20", "--L", "64",
                         "--W", str(f)])
    assert doc["alpha"] == 1.0 and doc["passed_rows"] == 44 and doc["param_source"] == "file"
    assert doc["arithmetic"].startswith("exact") and Fraction(doc["min_margin_exact"]) >= 1
    # the API gives the same numbers
    r = A.alpha(features="1, i, i**2", task="prev", L0=20, L=64, W=str(f))
    assert r.alpha == 1.0 and r.min_margin_exact == doc["min_margin_exact"]
    # fault: a W scaled by -1 (the sign flipped): every new row fails
    f2 = tmp_path / "Wneg.json"
    f2.write_text(json.dumps({"W": [[str(-Fraction(x)) for x in row] for row in W]}))
    assert A.alpha(features="1, i, i**2", task="prev", L0=20, L=64, W=str(f2)).alpha == 0.0


def test_polynomial_features_fit_from_cli_and_api(capsys):
    doc = _json(capsys, ["alpha", "--pe-features", "1, i, i**2", "--task", "prev", "--L0", "20", "--L", "64"])
    r = A.alpha(features="1, i, i**2", task="prev", L0=20, L=64)
    assert doc["alpha"] == r.alpha and doc["min_margin_exact"] == r.min_margin_exact is not None
    assert doc["pe_source"] == "expressions in i: 1, i, i**2" and doc["kernel"]["param_shape"] == [3, 3]


def test_relative_expression_features():
    spec = F.expression_family("1, d")
    assert spec.family.kind == "relative" and spec.exact
    # [1, d] is the learned-slope ALiBi kernel a + b d: the same as the built-in alibi family feature by feature
    for n in range(10):
        assert spec.family.features(n, 20, pe.FractionArith()) == pe.FAMILIES["alibi"].features(n, 20,
                                                                                                  pe.FractionArith())


# ----------------------------------------------------------------------------- NoPE and fixed ALiBi


def test_nope_is_a_tie_on_every_row(capsys):
    doc = _json(capsys, ["alpha", "--pe", "nope", "--task", "prev", "--L0", "20", "--L", "64"])
    assert doc["alpha"] == 0.0 and doc["new_rows_with_exact_tie_to_target"] == doc["new_rows"] == 44
    assert doc["min_margin_exact"] == "0" and doc["weak"]
    assert A.alpha("nope", "attend-first", 20, 40).alpha == 0.0


def test_nope_fault_ties_counted_as_passes(monkeypatch):
    # fault: the decision rule counts an exact tie as attending: NoPE would "solve" prev
    monkeypatch.setattr(pe, "attends", lambda m: m >= 0)
    assert A.alpha("nope", "prev", 20, 64).alpha == 1.0


def test_alibi_fixed_against_learned_sign(capsys):
    # canonical ALiBi (fixed positive slope) attends to the most recent key: attend-first fails on every row ...
    doc = _json(capsys, ["alpha", "--pe", "alibi-fixed", "--slope", "1/2", "--task", "attend-first", "--L0", "20",
                         "--L", "64"])
    assert doc["alpha"] == 0.0 and doc["param_source"] == "fixed" and doc["min_margin_exact"] == "-63/2"
    # ... while the learned-slope family flips the sign and reports 1.0
    assert A.alpha("alibi", "attend-first", 20, 64).alpha == 1.0
    # the fixed head realizes 'attend to itself' (target i) with margin exactly the slope
    r = A.alpha("alibi-fixed", None, 20, 64, slope="1/2", target="i")
    assert r.alpha == 1.0 and r.min_margin_exact == "1/2"
    want = (1 - math.exp(-0.5)) / (1 - math.exp(-32))  # mass on the target at the last row (64 keys)
    assert r.target_mass_min == pytest.approx(want, rel=1e-12) and r.weak  # mass 0.39 < 0.5
    # fault: a negative slope reverses the bias and the head attends to the first key instead
    assert A.alpha("alibi-fixed", "attend-first", 20, 64, slope="-1/2").alpha == 1.0


def test_alibi_fixed_needs_slope(capsys):
    assert "--slope" in _refused(capsys, ["alpha", "--pe", "alibi-fixed", "--task", "prev"])
    assert "--slope applies" in _refused(capsys, ["alpha", "--pe", "rope", "--slope", "1", "--task", "prev"])


# ----------------------------------------------------------------------------- base and frequencies


def test_rope_base_default_equals_builtin():
    spec = F.trig_family("rope", 10000, 16)
    builtin = pe.FAMILIES["rope"]
    for n in (0, 1, 7, 100, 5000):
        a = spec.family.features(n, 20, pe.FloatArith())
        b = builtin.features(n, 20, pe.FloatArith())
        assert max(abs(x - y) for x, y in zip(a, b)) < 1e-9
        assert spec.family.features(n, 20, pe.FractionArith()) == builtin.features(n, 20, pe.FractionArith())
    r1 = A.alpha("rope", "prev", 20, 64)
    r2 = A.alpha("rope", "prev", 20, 64, base=10000, frequencies=16)
    assert r1.alpha == r2.alpha == 1.0 and r2.min_margin == pytest.approx(r1.min_margin, rel=1e-6)


def test_wrong_frequency_schedule_is_visible():
    # a schedule with the exponent doubled (theta_k = base^(-2k/F), a known bug class) is a different map
    good = F.trig_family("sinusoidal", 10000, 16).family
    bad = F.trig_family("sinusoidal", 10000 ** 2, 16).family
    assert good.features(5, 20, pe.FloatArith()) != bad.features(5, 20, pe.FloatArith())
    a_good = A.alpha("sinusoidal", "prev", 20, 64).alpha
    a_bad = A.alpha("sinusoidal", "prev", 20, 64, base=10000 ** 2)
    assert a_bad.doc["pe"] == "sinusoidal(base=100000000,F=16)" and a_bad.alpha != a_good


# ----------------------------------------------------------------------------- a user W; weak heads


def _near_uniform(tmp_path, suffix=".npy"):
    w = np.zeros(20)
    w[1] = 1e-9  # free relative kernel: k(1) = 1e-9, every other offset 0
    path = tmp_path / f"w{suffix}"
    if suffix == ".npy":
        np.save(path, w)
    else:
        torch.save(torch.tensor(w), path)
    return path


def test_near_uniform_kernel_is_weak(capsys, tmp_path):
    path = _near_uniform(tmp_path)
    doc = _json(capsys, ["alpha", "--pe", "free-relative", "--task", "prev", "--L0", "20", "--L", "64", "--W",
                         str(path)])
    assert doc["alpha"] == 1.0 and doc["weak"] and len(doc["weak_reasons"]) == 2
    assert doc["min_margin"] == pytest.approx(1e-9) and doc["target_mass"]["min"] == pytest.approx(1 / 64, rel=1e-6)
    assert main(["alpha", "--pe", "free-relative", "--task", "prev", "--W", str(path)]) == 0
    out = capsys.readouterr().out
    assert "not reported as length-generalizing" in out and "it length-generalizes" not in out
    # the CI gate fails on a weak head and passes once both thresholds are lowered
    assert main(["alpha", "--pe", "free-relative", "--task", "prev", "--W", str(path), "--require-alpha", "1"]) == 1
    assert "FAILED" in capsys.readouterr().out
    assert main(["alpha", "--pe", "free-relative", "--task", "prev", "--W", str(path), "--require-alpha", "1",
                 "--min-margin", "0", "--min-mass", "0"]) == 0


def test_weak_flag_faults(monkeypatch, tmp_path):
    path = _near_uniform(tmp_path)
    # margin alone: below a stated threshold it is weak, above it not
    assert A.alpha("free-relative", "prev", W=str(path), min_mass=0).weak
    assert not A.alpha("free-relative", "prev", W=str(path), min_mass=0, min_margin=1e-10).weak
    # fault: a mass computation that puts all mass on the target: the flag then rests on the margin alone
    monkeypatch.setattr(A, "_target_mass", lambda *a, **k: [1.0] * 44)
    r = A.alpha("free-relative", "prev", W=str(path), min_margin=1e-10)
    assert not r.weak and r.target_mass_min == 1.0


def test_pt_file_and_require_alpha_gate(capsys, tmp_path):
    path = _near_uniform(tmp_path, ".pt")
    assert A.alpha("free-relative", "prev", W=str(path)).alpha == 1.0
    assert main(["alpha", "--pe", "rope", "--task", "attend-first", "--L", "60", "--require-alpha", "0.5"]) == 1
    assert main(["alpha", "--pe", "rope", "--task", "prev", "--require-alpha", "0.9"]) == 0


class _Evil:
    def __reduce__(self):
        import os

        return (os.system, ("touch EVIL_RAN",))


def test_hostile_W_files(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    base = ["alpha", "--pe", "free-relative", "--task", "prev"]
    np.save(tmp_path / "wrong.npy", np.zeros(7))
    assert "shape [7]" in _refused(capsys, base + ["--W", "wrong.npy"])
    np.save(tmp_path / "nan.npy", np.full(20, np.nan))
    assert "non-finite" in _refused(capsys, base + ["--W", "nan.npy"])
    np.save(tmp_path / "obj.npy", np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert "not a numpy array file" in _refused(capsys, base + ["--W", "obj.npy"])
    (tmp_path / "code.pt").write_bytes(pickle.dumps(_Evil()))
    assert "weights_only" in _refused(capsys, base + ["--W", "code.pt"])
    assert not (tmp_path / "EVIL_RAN").exists()
    assert "expected a .npy" in _refused(capsys, base + ["--W", "w.txt"])
    assert "cannot read" in _refused(capsys, base + ["--W", "missing.npy"])
    (tmp_path / "bad.json").write_text('{"W": [1e999]}')
    assert "exact rationals" in _refused(capsys, base + ["--W", "bad.json"])
    assert "no trained parameter" in _refused(capsys, ["alpha", "--pe", "alibi-fixed", "--slope", "1", "--task",
                                                       "prev", "--W", "wrong.npy"])


# ----------------------------------------------------------------------------- hostile expressions


@pytest.mark.parametrize("expr,needle", [
    ("__import__('os')", "'__'"),
    ("i.__class__", "."),
    ("lambda: 1", "lambda"),
    ("x" * 10_000, "at most 1000 characters"),
    ("1/0", "not finite"),
    ("i**i**i**i", "not finite"),
    ("9**9**9**9", "not finite"),
    ("open('x')", "open"),
    ("'a'", "string"),
    ("[i]", "["),
    ("i; 1", ";"),
    ("(" * 40 + "i" + ")" * 40, "nested"),
    ("i**100", "exponent"),
    (", ".join(["i"] * 70), "expressions"),
    ("log(i)", "not finite"),
    ("i.real", "."),
    ("getattr(i, 'x')", "getattr"),
    ("", "empty"),
])
def test_hostile_expressions(capsys, expr, needle):
    err = _refused(capsys, ["alpha", "--pe-features", expr, "--task", "prev"])
    assert needle in err, err


@pytest.mark.parametrize("argv,needle", [
    (["--pe", "rope", "--target", "i - 1", "--task", "prev"], "not both"),
    (["--pe", "rope", "--target", "__import__('os')"], "'__'"),
    (["--pe", "rope", "--target", "i/2"], "not an integer"),
    (["--pe", "rope", "--target", "i + 1"], "has no query row"),
    (["--pe", "rope", "--target", "i + 1", "--rows", "0"], "outside its causal window"),
    (["--pe", "rope", "--target", "sin(i)"], "integer expression"),
    (["--pe", "rope", "--task", "prev", "--rows", "3"], "--rows applies"),
    (["--pe", "rope", "--base", "1", "--task", "prev"], "--base must exceed 1"),
    (["--pe", "affine", "--base", "100", "--task", "prev"], "apply to --pe sinusoidal or rope"),
    (["--pe", "rope", "--frequencies", "99", "--task", "prev"], "--frequencies"),
    (["--pe", "rope", "--task", "prev", "--require-alpha", "2"], "--require-alpha"),
    (["--pe", "rope", "--task", "prev", "--min-mass", "-1"], "--min-mass"),
    (["--pe-features", "1, i", "--pe", "rope", "--task", "prev"], "exactly one"),
])
def test_hostile_options(capsys, argv, needle):
    assert needle in _refused(capsys, ["alpha", *argv])


def test_custom_target_task(capsys):
    # 'i - 1' as an expression is the built-in prev task
    a = _json(capsys, ["alpha", "--pe", "rope", "--target", "i - 1", "--L0", "20", "--L", "64"])
    b = _json(capsys, ["alpha", "--pe", "rope", "--task", "prev", "--L0", "20", "--L", "64"])
    assert a["alpha"] == b["alpha"] == 1.0 and a["min_margin"] == b["min_margin"]
    # a region: rows from ceiling(L/2), target i - ceiling(L/2) (copy) as expressions equals the built-in copy
    c = A.alpha("free-relative", None, 20, 40, target="i - ceiling(L/2)", rows="ceiling(L/2)")
    d = A.alpha("free-relative", "copy", 20, 40)
    assert c.alpha == d.alpha and c.doc["new_rows"] == d.doc["new_rows"] == 20


# ----------------------------------------------------------------------------- MODULE:CALLABLE


_MOD = '''
import torch

def phi(pos):
    p = pos.double()
    return torch.stack([torch.ones_like(p), p, p * p], dim=1)

def bad_shape(pos):
    return torch.zeros(len(pos))

def nan_feats(pos):
    out = torch.ones(len(pos), 2, dtype=torch.float64)
    out[5, 1] = float("nan")
    return out

def by_length(pos):
    return (pos.double() / len(pos))[:, None]

def boom(pos):
    raise RuntimeError("kaboom")

not_callable = 3
'''


def test_callable_feature_map(capsys, tmp_path, monkeypatch):
    (tmp_path / "mypes_t.py").write_text(_MOD)
    monkeypatch.chdir(tmp_path)
    a = _json(capsys, ["alpha", "--pe", "mypes_t:phi", "--task", "prev", "--L0", "20", "--L", "64"])
    b = _json(capsys, ["alpha", "--pe-features", "1, i, i**2", "--task", "prev", "--L0", "20", "--L", "64"])
    assert a["alpha"] == b["alpha"] and a["min_margin_exact"] == b["min_margin_exact"]
    assert a["arithmetic"].startswith("exact")
    r = A.alpha(feature_map="mypes_t:phi", task="prev", L0=20, L=64)
    assert r.alpha == a["alpha"]
    for spec, needle in [("mypes_t:bad_shape", "shape"), ("mypes_t:nan_feats", "non-finite feature value at "
                                                                                 "position 5"),
                         ("mypes_t:by_length", "must not depend on the length"), ("mypes_t:boom", "kaboom"),
                         ("mypes_t:not_callable", "no callable"), ("nonexistent_mod_q:phi", "cannot import"),
                         ("mypes_t:__class__", "MODULE:CALLABLE"), ("os.path:join;x", "MODULE:CALLABLE")]:
        assert needle in _refused(capsys, ["alpha", "--pe", spec, "--task", "prev"]), spec


# ----------------------------------------------------------------------------- identifiability


def test_identifiability_rope_prev_4_to_8(capsys):
    doc = _json(capsys, ["alpha", "--pe", "rope", "--task", "prev", "--L0", "4", "--L", "8", "--identifiability"])
    idf = doc["identifiability"]
    assert idf["rank"] == 4 and idf["null_space_dim"] == 28 and idf["rank_how"].startswith("exact")
    assert idf["L0_logit_map_null_space_dim"] == 28 and not idf["identifiable"]
    ar = idf["alpha_range"]
    # two heads with identical L0 logits transfer differently: 1.0 and 0.75 are both attained
    assert ar["max"] == 1.0 and ar["min"] == 0.0 and {0.75, 1.0} <= set(ar["attainable"])
    assert ar["witnesses"]["max"]["same_L0_logits_exact"] and ar["witnesses"]["min"]["same_L0_logits_exact"]
    assert "solver bound" in ar["how"] and "exact enumeration" in ar["attainable_how"]
    out = A.identifiability("rope", "prev", 4, 8)
    assert out["alpha"] == doc["alpha"] and out["alpha_range"]["max"] == 1.0


def test_identifiability_full_rank_pins_alpha():
    # [1, i] relative-style check: with an identifiable map (null space 0) alpha_L cannot move
    out = A.identifiability(features="1, d", task="prev", L0=6, L=10)
    assert out["null_space_dim"] == 0 and out["identifiable"]
    assert out["alpha_range"]["min"] == out["alpha_range"]["max"] == out["alpha"]
    assert out["alpha_range"]["attainable"] == [out["alpha"]]


def test_plots(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    assert main(["alpha", "--pe", "rope", "--task", "prev", "--L", "40", "--plots", str(tmp_path / "p")]) == 0
    assert (tmp_path / "p" / "kernel.png").stat().st_size > 1000 and (tmp_path / "p" / "alpha.png").exists()


def test_plots_without_matplotlib(monkeypatch, capsys):
    import builtins

    real = builtins.__import__

    def fake(name, *a, **k):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real(name, *a, **k)

    monkeypatch.setattr(builtins, "__import__", fake)
    assert "matplotlib" in _refused(capsys, ["alpha", "--pe", "rope", "--task", "prev", "--plots", "/tmp/x_plots"])


def test_api_reexports():
    import verify.api as api

    assert api.alpha is A.alpha and api.realizable is A.realizable and api.identifiability is A.identifiability


def test_float_table_min_max_matches_exact(monkeypatch):
    # the float64 table (what fits and alpha_L use) against the exact evaluator, on Min/Max of several arguments
    exprs = F.parse_expressions("Min(i, 3, 7 - i), Max(i - 2, 1), Min(Max(i, 2), 4)")
    table = F.evaluate_table(exprs, "i", 9)
    exact = [[float(F.evaluate(e, {"i": n})) for e in exprs] for n in range(9)]
    assert table.tolist() == exact
    # fault: Min evaluated as Max in the float path: the two evaluators part
    monkeypatch.setattr(np, "minimum", np.maximum)
    assert F.evaluate_table(exprs, "i", 9).tolist() != exact
