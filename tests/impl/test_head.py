"""verify head: rigorous bounds on one head's attention pattern (numeric/head_bounds.py, numeric/heads.py,
src/verify/frontends/head_cli.py), each check shown failing on an injected fault."""

from __future__ import annotations

import copy
import json
import math
import os
from fractions import Fraction

import mpmath
import pytest

from verify.frontends.cli import main
from verify.numeric import head_bounds as hb

HALF = Fraction(1, 2)


# ----------------------------------------------------------------------------- the balls alone (no torch, no model)


def _tiny_program() -> tuple[hb.HeadProgram, hb.PromptInput]:
    """d_model 2, d_head 1: q_i = x_i . (1, 0), k_j = x_j . (0, 1), scale 1/sqrt(1); scores s_ij = x_i[0] x_j[1]."""
    prog = hb.HeadProgram(W_Q=[[1.0], [0.0]], W_K=[[0.0], [1.0]])
    xs = [[0.5, 1.0], [3.0, 2.0], [-1.5, 0.25], [2.0, -0.75]]
    return prog, hb.PromptInput(tokens=[0, 1, 2, 3], components=[xs], rows=[1, 2, 3], targets=[0, 1, 2])


def _exact_mass(xs: list[list[float]], i: int, t: int) -> mpmath.mpf:
    with mpmath.workdps(60):
        s = [mpmath.mpf(xs[i][0]) * mpmath.mpf(xs[j][1]) for j in range(i + 1)]
        return mpmath.exp(s[t]) / sum(mpmath.exp(v) for v in s)


def test_balls_enclose_the_exact_mass_and_decide_by_it():
    prog, prompt = _tiny_program()
    rows = hb.bound_prompt(prog, prompt, HALF)
    xs = prompt.components[0]
    for r in rows:
        exact = _exact_mass(xs, r.row, r.target)
        assert r.mass_lo <= exact <= r.mass_hi
        assert r.mass_hi - r.mass_lo < 1e-15
        assert r.status == ("ge" if exact >= 0.5 else "lt")
    # query 1: s = 3*1 = 3 on key 0 and 3*2 = 6 on key 1: the target (key 0) is certainly not the argmax
    assert rows[0].argmax == "no" and rows[0].status == "lt"


def test_a_wrong_score_scale_moves_the_enclosure_off_the_exact_value():
    """Injected fault: the score scale 1/sqrt(4) in place of 1: the enclosure no longer contains the exact mass."""
    prog, prompt = _tiny_program()
    bad = copy.deepcopy(prog)
    bad.scale_inv_sqrt = 4
    r = hb.bound_prompt(bad, prompt, HALF)[1]
    exact = _exact_mass(prompt.components[0], r.row, r.target)
    assert not (r.mass_lo <= exact <= r.mass_hi)


def test_window_and_alibi_enter_the_scores():
    prog, prompt = _tiny_program()
    win = copy.deepcopy(prog)
    win.window = 1  # each query sees only itself: its target i - 1 is not an admitted key
    with pytest.raises(hb.HeadCertificateError, match="not an admitted key"):
        hb.bound_prompt(win, prompt, HALF)
    steep = copy.deepcopy(prog)
    steep.alibi_slope = 50.0  # the bias slope * (j - i) favours the newest key by far
    assert all(r.status == "lt" for r in hb.bound_prompt(steep, prompt, HALF))


def test_verdict_rule_counts_undecided_rows_both_ways():
    def rows(*st: str) -> hb.HeadBound:
        return hb.HeadBound([hb.RowBound(0, i, i - 1, 0.0, 1.0, 0.0, s, "undecided") for i, s in enumerate(st, 1)])

    assert rows("ge", "ge").verdict(Fraction(1)) == "HOLDS"
    assert rows("ge", "lt").verdict(Fraction(1)) == "FAILS"
    assert rows("ge", "undecided").verdict(Fraction(1)) == "INCONCLUSIVE"
    assert rows("ge", "lt").verdict(HALF) == "HOLDS"
    assert rows("ge", "undecided").verdict(Fraction(1), "argmax") == "INCONCLUSIVE"


def test_directed_decimal_strings_bound_the_value():
    for x in (0.00411819123, 0.5, 123.456, -0.0123456789, 0.99999999999):
        lo, hi = hb.fmt_directed(x, True, 6), hb.fmt_directed(x, False, 6)
        assert Fraction(lo) <= Fraction(x) <= Fraction(hi)
        assert Fraction(hi) - Fraction(lo) <= Fraction(abs(x)) / 10 ** 5


# ----------------------------------------------------------------------------- real models (transformers)

if os.environ.get("CI"):
    import transformers  # noqa: F401
tf = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

from verify.numeric import heads  # noqa: E402


@pytest.mark.parametrize("spec,layer", [("hf:gpt2", 0), ("hf:llama", 0), ("hf:qwen2", 1), ("hf:mistral", 1)])
def test_extracted_head_matches_the_library_and_the_balls_contain_its_attention(spec, layer):
    ex = heads.extract_hf(spec, layer, 1, "prev", None, n=2, length=24, seed=0)
    assert heads.cross_check(ex) < 1e-6
    bound = hb.bound_head(ex.program, ex.prompts, HALF)
    by = {(r.prompt, r.row): r for r in bound.rows}
    for k, (prompt, A) in enumerate(zip(ex.prompts, ex.library_attention)):
        for i, t in zip(prompt.rows, prompt.targets):
            r = by[(k, i)]
            assert r.mass_lo - 1e-6 <= float(A[i, t]) <= r.mass_hi + 1e-6
            if abs(float(A[i, t]) - 0.5) > 1e-6:
                assert r.status == ("ge" if float(A[i, t]) >= 0.5 else "lt")


@pytest.mark.parametrize("fault", ["other head's keys", "RoPE dropped", "no LayerNorm", "MLP dropped",
                                   "activation swapped", "a head below dropped"])
def test_cross_check_catches_a_head_taken_apart_wrongly(fault):
    """Injected faults in the extraction (layer 0's head, or a layer-1 head whose input the balls compute through
    layer 0's attention and MLP): each moves the head's attention far from the library's."""
    spec = "hf:gpt2" if fault in ("no LayerNorm", "activation swapped", "a head below dropped") else "hf:llama"
    layer = 1 if fault in ("MLP dropped", "activation swapped", "a head below dropped") else 0
    ex = heads.extract_hf(spec, layer, 1, "prev", None, n=1, length=24, seed=0)
    assert heads.cross_check(ex) < 1e-6
    if fault == "other head's keys":
        ex.program.W_K = heads.extract_hf(spec, 0, 2, "prev", None, n=1, length=24, seed=0).program.W_K
    elif fault == "RoPE dropped":
        ex.program.rope_inv_freq = None
    elif fault == "no LayerNorm":
        ex.program.norm = "none"
    elif fault == "MLP dropped":
        ex.program.prefix[0].mlp = None
    elif fault == "activation swapped":
        ex.program.prefix[0].mlp.act = "relu"
    else:
        ex.program.prefix[0].heads.pop()
    assert heads.cross_check(ex) > heads.CROSS_CHECK_TOL


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_cli_certificate_rechecks_and_tampering_is_caught(tmp_path, capsys):
    d = tmp_path / "certs"
    code, out, _ = _run(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "1", "--n-prompts", "2",
                         "--length", "24", "--certificates", str(d), "--format", "json"], capsys)
    report = json.loads(out)
    assert code == {"HOLDS": 0, "FAILS": 1}[report["verdict"]]
    assert report["inputs"].startswith("exact")
    deep = heads.extract_hf("hf:gpt2", 1, 0, "prev", None, n=1, length=8, seed=0)
    assert "layers 0..0" in deep.input_kind and deep.program.prefix[0].mlp is not None
    path = d / os.path.basename(report["certificate"])
    assert _run(["recheck", str(d), "--rebuild"], capsys)[0] == 0
    doc = json.loads(path.read_text())
    assert hb.recheck(doc)[0]

    flipped = copy.deepcopy(doc)  # a claimed row decision flipped
    r0 = flipped["claimed"]["rows"][0]
    r0["status"] = "ge" if r0["status"] == "lt" else "lt"
    assert not hb.recheck(flipped)[0]

    edited = copy.deepcopy(doc)  # a weight edited: the content hash no longer matches
    edited["program"]["W_Q"][0][0] = float.hex(3.0)
    assert "content hash" in hb.recheck(edited)[1]

    forged = copy.deepcopy(doc)  # the weights scaled and the hash recomputed: the decisions no longer follow
    forged["program"]["W_Q"] = [[float.hex(50 * float.fromhex(v)) for v in row] for row in forged["program"]["W_Q"]]
    forged["content_sha256"] = hb.content_digest({"program": forged["program"], "prompts": forged["prompts"]})
    ok, why = hb.recheck(forged)
    assert not ok and "differ" in why

    other = copy.deepcopy(doc)  # self-consistent, but not the model's head: only --rebuild sees it
    other["seed"] = 1
    assert hb.recheck(other)[0]
    assert not heads.rebuild_matches(other)[0]


@pytest.mark.parametrize("args,needle", [
    (["--model", "hf:gpt3"], "expected hf:NAME"),
    (["--model", "hf-dir:/nonexistent"], "no config.json"),
    (["--model", "hf:gpt2", "--threshold", "0"], "must be in (0, 1]"),
    (["--model", "hf:gpt2", "--threshold", "abc"], "expected a number"),
    (["--model", "hf:gpt2", "--fraction", "3/2"], "must be in (0, 1]"),
    (["--model", "hf:gpt2", "--rows", "9:2"], "0 <= A <= B"),
    (["--model", "hf:gpt2", "--layer", "7"], "has layers 0..1"),
    (["--model", "trained:ws24-rpe", "--head", "3"], "one head per layer"),
    (["--model", "hf:gpt2", "--n-prompts", "64", "--length", "1024"], "exceed the budget"),
])
def test_cli_refuses_bad_input_in_one_line(args, needle, capsys):
    full = ["head", "--layer", "0", "--head", "0", *args]
    if "--layer" in args:
        full = ["head", "--head", "0", *args]
    if "--head" in args:
        full = ["head", "--layer", "0", *args]
    code, out, err = _run(full, capsys)
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1 and out == ""


def test_cli_refuses_bad_prompt_files(tmp_path, capsys):
    for text, needle in [("not json", "not JSON"), ("[[1]]", "token lists"), ("[[1, 99999]]", "outside the vocabulary")]:
        f = tmp_path / "p.json"
        f.write_text(text)
        code, _, err = _run(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "0", "--prompts", str(f)], capsys)
        assert code == 2 and needle in err, err


def test_induction_targets_follow_the_last_earlier_occurrence():
    assert hb.induction_targets([5, 6, 7, 5, 6, 5]) == ([3, 4, 5], [1, 2, 4])
    toks = heads.draw_prompts("induction", 1, 10, 128, 0)[0]
    assert toks[:5] == toks[5:] and len(set(toks[:5])) == 5


def test_trained_previous_token_head_is_certified(tmp_path, capsys, monkeypatch):
    """ws24:falsifier's RPE model (seed 0, its defaults; trained here in ~15 s into a fresh cache) has a
    previous-token head: the target t - 1 is the certified strict argmax at over half of the rows t in [1, 63], and
    the balls' count agrees with the float64 argmax count of the claim's own probe on the same prompts."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    from verify.numeric import trained_models as tm

    code, out, _ = _run(["head", "--model", "trained:ws24-rpe", "--layer", "0", "--head", "0", "--criterion",
                         "argmax", "--fraction", "1/2", "--rows", "1:63", "--n-prompts", "2", "--format", "json"],
                        capsys)
    report = json.loads(out)
    assert code == 0 and report["verdict"] == "HOLDS", report
    ex = heads.extract_trained("ws24-rpe", 0, 0, "prev", None, n=2, length=64, seed=0, rows=(1, 63))
    toks = torch.tensor([p.tokens for p in ex.prompts])
    from verify.numeric import lab
    from verify.numeric import ws24_trained as wt

    cfg = wt.falsifier_config("rpe", 32, 32, 256, 8, 16, 300, 0.01, 0, "adam")
    p = {k: v[0:1] for k, v in tm.train_two_layer(cfg, [0], lab.Cache(None)).float64().items()}
    recall = float(tm.prev_token_recall(p, toks[None], "rpe", 2, 64)[0])  # paper's t in [2, 64] = rows 1..63
    assert report["counts"]["argmax_yes"] == round(recall * report["counts"]["rows"])
    assert math.isclose(report["counts"]["argmax_yes"] / report["counts"]["rows"], recall)


def test_deeper_layer_input_computed_in_the_balls(tmp_path, monkeypatch):
    """ws24's layer 1 (the induction head) reads layer 0's output, which the program carries as its prefix and the
    balls compute from the embeddings: the extracted head matches the model's own attention, its input is exact.
    Fault: the prefix dropped (layer 1 reading the bare embeddings) is caught by the cross-check."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    ex = heads.extract_trained("ws24-rpe", 1, 0, "induction", None, n=1, length=32, seed=0)
    assert "exact" in ex.input_kind and len(ex.program.prefix) == 1
    assert heads.cross_check(ex) < 1e-9
    bound = hb.bound_head(ex.program, ex.prompts, HALF)
    A = ex.library_attention[0]
    for r in bound.rows:
        assert r.mass_lo - 1e-9 <= float(A[r.row, r.target]) <= r.mass_hi + 1e-9
    ex.program.prefix = []
    assert heads.cross_check(ex) > heads.CROSS_CHECK_TOL


def test_hostile_numbers_and_checkpoints_refused_quickly(tmp_path, capsys):
    """A huge exponent (Fraction would build a 10^8-digit integer), a broken checkpoint directory and an empty
    certificates path: one line, exit 2, at once."""
    import time

    t = time.perf_counter()
    for opt in ("--fraction", "--threshold"):
        code, _, err = _run(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "0", opt, "1e-99999999"], capsys)
        assert code == 2 and "expected a number" in err
    assert time.perf_counter() - t < 5
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text('{"model_type": "gpt2", ')
    code, _, err = _run(["head", "--model", f"hf-dir:{broken}", "--layer", "0", "--head", "0"], capsys)
    assert code == 2 and "cannot load it" in err and len(err.strip().splitlines()) == 1
    code, _, err = _run(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "0", "--certificates", " "], capsys)
    assert code == 2 and "empty path" in err


def test_recheck_refuses_edited_numbers_statement_precision_and_targets(tmp_path, capsys):
    d = tmp_path / "c"
    code, out, _ = _run(["head", "--model", "hf:gpt2", "--layer", "0", "--head", "1", "--n-prompts", "1",
                         "--length", "12", "--certificates", str(d), "--format", "json"], capsys)
    doc = json.loads((d / os.path.basename(json.loads(out)["certificate"])).read_text())
    assert hb.recheck(doc)[0]

    def edited(fn):
        x = copy.deepcopy(doc)
        fn(x)
        return hb.recheck(x)

    def rehash(x):
        x["content_sha256"] = hb.content_digest({"program": x["program"], "prompts": x["prompts"]})

    assert not edited(lambda x: x["claimed"]["rows"][0].update(mass=["0.99", "1"]))[0]
    assert not edited(lambda x: x["claimed"]["rows"][0].update(margin_lower="5"))[0]
    assert not edited(lambda x: x["claimed"]["rows"][0].update(prompt=False))[0]
    assert not edited(lambda x: x.update(precision_bits=1))[0]
    assert not edited(lambda x: x.update(statement="at every checked query row i, the head puts attention mass >= "
                                                   "99/100 on key i - 1"))[0]
    assert not edited(lambda x: x.update(threshold="1e-99999999"))[0]

    def shifted_targets(x):
        x["prompts"][0]["targets"] = [r for r in x["prompts"][0]["rows"]]  # each row its own target: not prev
        rehash(x)

    ok, why = edited(shifted_targets)
    assert not ok and "target" in why

    def float_rows(x):
        x["prompts"][0]["rows"] = [float(r) for r in x["prompts"][0]["rows"]]
        rehash(x)

    assert not edited(float_rows)[0]


def test_sliding_window_rows_whose_target_it_hides_are_left_out(tmp_path):
    """Mistral with window 4: an induction target more than 3 positions back is not a key the query sees; such rows
    are left out (not a crash), and the balls agree with the library on the rest."""
    cfg = tf.MistralConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, sliding_window=4, max_position_embeddings=64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        model = tf.AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(tmp_path / "mis4")
    toks = [5, 1, 2, 3, 4, 6, 5, 1, 8, 9, 8, 9]  # rows 6, 7: targets 1, 2 lie 5 back; rows 10, 11: 2 back
    ex = heads.extract_hf(f"hf-dir:{tmp_path / 'mis4'}", 1, 2, "induction", [toks], n=1, length=0, seed=0)
    assert ex.program.window == 4 and all(r - t < 4 for r, t in zip(ex.prompts[0].rows, ex.prompts[0].targets))
    assert 0 < len(ex.prompts[0].rows) < len(hb.induction_targets(toks)[0])
    assert heads.cross_check(ex) < 1e-6
    hb.bound_head(ex.program, ex.prompts, HALF)
