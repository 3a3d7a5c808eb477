"""verify alpha --pe rope --rope-scaling linear|dynamic|yarn|llama3: the closed forms of each rule's frequencies
(verify.constructions.rope_scaling), their cross-check against transformers' ROPE_INIT_FUNCTIONS, alpha_L with
them, and the refusals of bad options."""

from __future__ import annotations

import math

import numpy as np
import pytest
from cli_support import json_report as _json
from cli_support import refused as _refused

from verify import faults, hfcompat
from verify.constructions import pe
from verify.constructions import rope_scaling as RS
from verify.frontends.cli import main
from verify.proofs.pr26 import alpha as A

#: the library's ROPE_INIT_FUNCTIONS to compare with (transformers 4.43 and later; hfcompat.ROPE_RULES_SINCE)
HAS_TF = RS.library_version() is not None and hfcompat.release() >= hfcompat.ROPE_RULES_SINCE
needs_tf = pytest.mark.skipif(not HAS_TF, reason="transformers >= 4.43 (the impl extra) is not installed")




# ----------------------------------------------------------------------------- the closed forms


def test_closed_forms_at_their_defining_points():
    plain = RS.plain_inv_freq(10000.0, 32)
    assert plain == [pe.theta(k) for k in range(16)]  # pr26's rope family is dim 32 with these frequencies
    lin = RS.inv_freq(RS.make("linear", 4), 10000.0, 32, 64)
    assert lin == [x / 4 for x in plain]
    dyn = RS.make("dynamic", 2, original_max=20)
    assert RS.inv_freq(dyn, 10000.0, 32, 20) == plain  # L <= L_orig: no scaling
    b = 10000.0 * (2 * 64 / 20 - 1) ** (32 / 30)
    assert RS.inv_freq(dyn, 10000.0, 32, 64) == [b ** (-(2 * k) / 32) for k in range(16)]
    yarn = RS.make("yarn", 4, original_max=20)
    assert RS.attention_factor(yarn) == 0.1 * math.log(4) + 1
    ramp = RS.yarn_ramp(yarn, 10000.0, 32)
    w = RS.inv_freq(yarn, 10000.0, 32, 64)
    assert ramp[0] == 0 and ramp[-1] == 1 and w[0] == plain[0] and w[-1] == plain[-1] / 4
    ll = RS.inv_freq(RS.make("llama3", 8, original_max=20), 10000.0, 32, 64)
    for x, y in zip(plain, ll):
        wl = 2 * math.pi / x
        if wl < 20 / 4:
            assert y == x
        elif wl > 20 / 1:
            assert y == x / 8
        else:
            assert x / 8 <= y <= x


# ----------------------------------------------------------------------------- the library cross-check


@needs_tf
def test_each_rule_equals_the_library():
    worst = 0.0
    for rule in RS.RULES:
        for factor in (1.0, 2.0, 3.7, 8.0):
            for om in ((None,) if rule == "linear" else (20, 64, 4096)):
                extra = {}
                if rule == "yarn":
                    extra = {"beta_fast": 16, "beta_slow": 2} if factor == 3.7 else {}
                if rule == "llama3" and factor == 3.7:
                    extra = {"low_freq_factor": 2, "high_freq_factor": 8}
                sc = RS.make(rule, factor, om, **extra)
                for base, F in ((10000.0, 16), (500000.0, 32), (10.0, 4)):
                    for L in (64, 100_000):
                        c = RS.cross_check(sc, base, 2 * F, L)
                        assert c["checked"] and c["agrees"], (rule, factor, om, base, F, L, c["findings"][:3])
                        worst = max(worst, c["max_relative_difference"])
    assert 0 < worst <= RS.FREQ_RTOL  # float32 on the library's side: not bit-equal, far inside the tolerance
    assert worst < 1e-6


@needs_tf
def test_a_wrong_dynamic_exponent_is_a_finding():
    sc = RS.make("dynamic", 2, original_max=20)
    assert RS.cross_check(sc, 10000.0, 32, 64)["agrees"]

    def wrong(base, dim, factor, seq_len, original_max):
        L = max(seq_len, original_max)
        return base * ((factor * L / original_max) - (factor - 1)) ** (dim / (dim - 1))

    with faults.inject("rope_scaling.dynamic_base", wrong):
        c = RS.cross_check(sc, 10000.0, 32, 64)
    assert not c["agrees"]
    f = c["findings"][-1]
    assert f["rule"] == "dynamic" and f["what"] == "inv_freq" and f["index"] == 15
    assert f["ours"] != f["library"] and f["relative_difference"] > 1e-3


@needs_tf
def test_yarn_without_its_attention_factor_is_a_finding(capsys):
    with faults.inject("rope_scaling.attention_factor", lambda sc: 1.0):
        c = RS.cross_check(RS.make("yarn", 4, original_max=20), 10000.0, 32, 64)
        assert not c["agrees"]
        assert [f["what"] for f in c["findings"]] == ["attention_factor"]
        assert c["findings"][0]["ours"] == 1.0 and c["findings"][0]["library"] == 0.1 * math.log(4) + 1
        rc = main(["alpha", "--pe", "rope", "--task", "prev", "--rope-scaling", "yarn", "--factor", "4",
                   "--original-max-position", "20", "--steps", "50"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "DISAGREE" in out and "finding: yarn attention_factor: ours 1.0, library 1.13862943" in out


def test_without_the_library_it_says_so(monkeypatch, capsys):
    monkeypatch.setattr(RS, "library_version", lambda: None)
    rc = main(["alpha", "--pe", "rope", "--task", "prev", "--rope-scaling", "linear", "--factor", "2", "--steps", "50"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "not cross-checked: transformers is not installed" in out


# ----------------------------------------------------------------------------- alpha_L with the scaled frequencies


@pytest.mark.parametrize("task", ["attend-first", "copy"])
def test_factor_one_is_plain_rope_exactly(capsys, task):
    plain = _json(capsys, ["alpha", "--pe", "rope", "--task", task])
    one = _json(capsys, ["alpha", "--pe", "rope", "--task", task, "--rope-scaling", "linear", "--factor", "1"])
    for k in ("alpha", "passed_rows", "min_margin_old_rows", "min_margin_new_rows", "target_mass"):
        assert one[k] == plain[k], k
    assert one["rope_scaling"]["inv_freq"] == one["rope_scaling"]["plain_inv_freq"]
    if HAS_TF:
        assert one["rope_scaling"]["cross_check"]["library"].startswith("transformers ")
        assert one["rope_scaling"]["cross_check"]["agrees"]


def test_linear_alpha_against_the_definition():
    """alpha_L of the fitted head recomputed from the definition: positions divided by the factor, the kernel
    k(delta) = sum_k a_k cos(delta / f theta_k) + b_k sin(delta / f theta_k), a row passes iff its target's logit
    strictly exceeds every other causal logit."""
    f, L0, L = 4.0, 20, 64
    res = A.alpha("rope", "attend-first", L0, L, rope_scaling={"rule": "linear", "factor": f})
    w = res.head.param.detach().double().numpy()
    d = np.arange(L, dtype=np.float64)[:, None] / f
    th = np.array([pe.theta(k) for k in range(16)])
    psi = np.empty((L, 32))
    psi[:, 0::2], psi[:, 1::2] = np.cos(d * th), np.sin(d * th)
    kern = psi @ w
    task = pe.get_task("attend-first")
    margins = []
    for i in range(L0, L):
        t = int(task.target(i, L))
        logits = kern[i - np.arange(i + 1)]
        margins.append(logits[t] - np.delete(logits, t).max())
    assert min(abs(m) for m in margins) > 1e-6  # no near tie: float64 decides every row
    assert res.alpha == sum(m > 0 for m in margins) / len(margins)
    assert 0 < res.alpha < 1  # a cell where the scaling matters (plain rope: 0.18)


def test_dynamic_states_its_length(capsys):
    doc = _json(capsys, ["alpha", "--pe", "rope", "--task", "prev", "--rope-scaling", "dynamic", "--factor", "2",
                         "--original-max-position", "20", "--steps", "50"])
    rs = doc["rope_scaling"]
    assert rs["seq_len"] == 64 and "evaluated length L = 64" in rs["length_dependence"]
    assert rs["inv_freq"] == RS.inv_freq(RS.make("dynamic", 2, 20), 10000.0, 32, 64)
    assert rs["inv_freq"] != rs["plain_inv_freq"]


# ----------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("argv,needle", [
    (["--rope-scaling", "linear", "--factor", "0"], "--factor must be a finite number >= 1"),
    (["--rope-scaling", "linear", "--factor", "-2"], "--factor must be a finite number >= 1"),
    (["--rope-scaling", "yarn", "--factor", "nan"], "--factor must be a finite number >= 1"),
    (["--rope-scaling", "yarn", "--factor", "inf"], "--factor must be a finite number >= 1"),
    (["--rope-scaling", "dynamic", "--factor", "two"], "--factor expects a number, got 'two'"),
    (["--rope-scaling", "yarn"], "needs --factor"),
    (["--factor", "2"], "--factor goes with --rope-scaling"),
    (["--rope-scaling", "ntk", "--factor", "2"], "--rope-scaling must be one of linear, dynamic, yarn, llama3"),
    (["--rope-scaling", "linear", "--factor", "2", "--original-max-position", "8"], "does not apply to"),
    (["--rope-scaling", "linear", "--factor", "2", "--beta-fast", "8"], "apply to --rope-scaling yarn only"),
    (["--rope-scaling", "yarn", "--factor", "2", "--beta-fast", "1", "--beta-slow", "2"], "must exceed --beta-slow"),
    (["--rope-scaling", "llama3", "--factor", "2", "--low-freq-factor", "4"], "must exceed --low-freq-factor"),
    (["--rope-scaling", "dynamic", "--factor", "2", "--frequencies", "1"], "needs --frequencies >= 2"),
])
def test_bad_options_one_line(capsys, argv, needle):
    err = _refused(capsys, ["alpha", "--pe", "rope", "--task", "prev"] + argv)
    assert needle in err, err


def test_other_families_and_tasks_refused(capsys):
    assert "applies to --pe rope only" in _refused(
        capsys, ["alpha", "--pe", "sinusoidal", "--task", "prev", "--rope-scaling", "linear", "--factor", "2"])
    assert "not with --tasks" in _refused(
        capsys, ["alpha", "--pe", "rope", "--tasks", "all", "--rope-scaling", "linear", "--factor", "2"])
    with pytest.raises(A.InputError, match="--factor must be"):
        A.prepare("rope", "prev", 20, 64, rope_scaling={"rule": "linear", "factor": 0.5})
