"""The streaming alpha_L engine (pr26: alpha_L, margins and target mass at long lengths) against its
definition: verify.numeric.pr26.evaluate_rows / target_mass against evaluate_rows_dense /
target_mass_dense (every row's logits materialised) on a grid of families, tasks, lengths and seeds,
with near and exact ties and custom feature maps; the comparison shown failing on injected faults;
the size budgets refused before any work."""

from __future__ import annotations

import itertools

import pytest
import torch

from verify import faults
from verify.constructions import pe
from verify.constructions.pe import FAMILIES, get_task
from verify.core.model import InputError
from verify.numeric import pr26 as num
from verify.proofs.pr26 import alpha as A

TASKS = ("prev", "skip-2", "attend-first", "copy", "reverse")
CUSTOM = ("1, i, i**2", "cos(d/4), sin(d/4), cos(d/64), sin(d/64)", "1, d")


def _family(name: str):
    return FAMILIES[name] if name in FAMILIES else A.resolve_pe(features=name).family


def _params(fam, L0: int, seed: int) -> list[torch.Tensor]:
    """A random head, and heads with exact and near ties (flat kernels, repeated values, a tiny tilt)."""
    g = torch.Generator().manual_seed(seed)
    shape = fam.param_shape(L0)
    out = [torch.randn(shape, generator=g, dtype=torch.float64)]
    flat = torch.zeros(shape, dtype=torch.float64)
    flat.view(-1)[0] = 1.0                                   # constant logits on the first feature: ties
    out.append(flat)
    tilt = flat.clone()
    tilt.view(-1)[-1] = 1e-17 if seed % 2 else -3e-16         # within the rounding bound of a tie
    out.append(tilt)
    out.append(torch.randint(-2, 3, shape, generator=g).to(torch.float64))  # small integers: exact repeats
    return out


def _same(a: num.RowEval, b: num.RowEval, tol: float = 0.0) -> bool:
    """Equal row results; ``tol``: float margins may differ by that much (absolute heads in blocks of another
    height than the definition's chunks: the BLAS product may round differently; decisions stay exact)."""
    margins = torch.equal(a.margin, b.margin) if tol == 0 else bool(((a.margin - b.margin).abs() <= tol).all())
    return (margins and torch.equal(a.argmax, b.argmax) and torch.equal(a.passed, b.passed)
            and torch.equal(a.target_tied, b.target_tied) and a.error_bound == b.error_bound
            and (a.exact_rechecked, a.interval_rechecked, a.unresolved)
            == (b.exact_rechecked, b.interval_rechecked, b.unresolved))


def _grid(names, Ls=((5, 31), (20, 97)), seeds=(0, 1)):
    for name, tname, (L0, L), seed in itertools.product(names, TASKS, Ls, seeds):
        fam = _family(name)
        task = get_task(tname)
        for p in _params(fam, L0, seed):
            yield fam, task, L0, L, seed, p


def _mismatches(grid, exact_ties=(True, False)) -> list:
    bad = []
    for fam, task, L0, L, seed, p in grid:
        rows = list(task.rows(L))
        for et in exact_ties:
            a = num.evaluate_rows(fam, task, p, L0, L, rows, seed, exact_ties=et)
            b = num.evaluate_rows_dense(fam, task, p, L0, L, rows, seed, exact_ties=et)
            blocks_differ = fam.kind == "absolute" and num.block_rows(L, 1024) < min(1024, len(rows))
            if not _same(a, b, 2 * b.error_bound if blocks_differ else 0.0):
                bad.append((fam.name, task.name, L0, L, seed, et))
    return bad


@pytest.fixture
def small_blocks(monkeypatch):
    """Blocks of a few rows: every streaming path crosses many block boundaries at these lengths."""
    monkeypatch.setattr(num, "BLOCK_BYTES", 8 * 97 * 3)


def test_fast_rows_equal_the_definition_builtin(small_blocks):
    assert _mismatches(_grid(list(FAMILIES))) == []


def test_fast_rows_equal_the_definition_custom_features(small_blocks):
    assert _mismatches(_grid(CUSTOM)) == []


def test_fast_rows_equal_the_definition_at_a_longer_length():
    grid = [(FAMILIES[f], get_task(t), 20, 3001, 0, _params(FAMILIES[f], 20, 0)[0])
            for f in ("rope", "alibi", "free-relative", "sinusoidal") for t in ("prev", "copy")]
    assert _mismatches(grid, exact_ties=(True,)) == []


def test_near_ties_are_rechecked_in_the_fast_path():
    fam, task = FAMILIES["free-relative"], get_task("prev")
    p = torch.zeros(20, dtype=torch.float64)
    p[1] = 1.0
    p[3] = 1.0  # k(1) = k(3): rows i >= 3 tie the target exactly and fail
    ev = num.evaluate_rows(fam, task, p, 20, 200, list(task.rows(200)), 0)
    assert not bool(ev.passed[2:].any()) and bool(ev.passed[:2].all())
    assert int(ev.target_tied.sum()) == 199 - 2 and ev.exact_rechecked > 0


def test_target_mass_equals_the_definition(small_blocks):
    for fam, task, L0, L, seed, p in _grid(list(FAMILIES) + list(CUSTOM), Ls=((20, 97),), seeds=(0,)):
        rows = [i for i in task.rows(L) if i >= L0]
        a = num.target_mass(fam, task, p, L0, L, rows, seed)
        b = num.target_mass_dense(fam, task, p, L0, L, rows, seed)
        assert len(a) == len(b)
        assert all(abs(x - y) <= 1e-12 * max(1.0, abs(y)) for x, y in zip(a, b)), (fam.name, task.name)


def test_range_max_against_brute_force():
    g = torch.Generator().manual_seed(3)
    for n in (1, 2, 3, 7, 64, 100):
        v = torch.randint(-3, 4, (n,), generator=g).to(torch.float64)
        rm = num.RangeMax(v)
        lo, hi = zip(*[(a, b) for a in range(-1, n + 1) for b in range(-1, n + 1)])
        got = rm.query(torch.tensor(lo), torch.tensor(hi))
        for a, b, x in zip(lo, hi, got.tolist()):
            a_, b_ = max(a, 0), min(b, n - 1)
            want = max(v[a_:b_ + 1].tolist()) if a_ <= b_ and a <= b else float("-inf")
            assert x == want, (n, a, b)


def _dense_alpha(monkeypatch, **kw):
    with monkeypatch.context() as m:
        m.setattr(num, "evaluate_rows", num.evaluate_rows_dense)
        m.setattr(num, "target_mass", num.target_mass_dense)
        return A.alpha(**kw)


@pytest.mark.parametrize("kw", [
    dict(pe="rope", task="prev", L0=20, L=2000),
    dict(pe="sinusoidal", task="copy", L0=20, L=600),
    dict(pe="alibi", task="attend-first", L0=20, L=5000),
    dict(pe="learned-absolute", task="prev", L0=20, L=400, seed=1),
    dict(features="cos(d/4), sin(d/4), cos(d/64), sin(d/64)", task="prev", L0=20, L=3000),
    dict(features="1, i, i**2", target="i - 2", L0=20, L=3000),
])
def test_alpha_same_document_as_the_old_path(monkeypatch, kw):
    fast = A.alpha(**kw).doc
    slow = _dense_alpha(monkeypatch, **kw).doc
    mf, ms = fast.pop("target_mass"), slow.pop("target_mass")
    assert repr(fast) == repr(slow)  # repr: nan entries compare equal
    assert mf["over"] == ms["over"]
    for k in ("min", "mean"):
        assert abs(mf[k] - ms[k]) <= 1e-12 * max(1.0, abs(ms[k]))


# ----------------------------------------------------------------------------- the oracle catches faults


def test_fault_off_by_one_in_the_prefix_range_is_caught(monkeypatch, small_blocks):
    orig = num.RangeMax.query
    monkeypatch.setattr(num.RangeMax, "query", lambda self, lo, hi: orig(self, lo, hi - 1))
    assert _mismatches(_grid(["rope", "alibi", "free-relative"], Ls=((20, 97),), seeds=(0,)))


def test_fault_in_the_running_argmax_is_caught():
    def first_maximiser(kern):  # a fault: the smallest maximising offset (the last key) instead of the largest
        out, best, arg = [], float("-inf"), -1
        for d, v in enumerate(kern.tolist()):
            if v > best:
                best, arg = v, d
            out.append(arg)
        return torch.tensor(out)

    with faults.inject("numeric.pr26._last_max_offset", first_maximiser):
        assert _mismatches(_grid(["free-relative", "alibi"], Ls=((20, 97),), seeds=(0,)), exact_ties=(False,))


def test_fault_in_the_streamed_target_mass_is_caught(monkeypatch):
    monkeypatch.setattr(num.torch, "logcumsumexp", lambda x, d: torch.cumsum(x, d))
    fam, task = FAMILIES["rope"], get_task("prev")
    p = _params(fam, 20, 0)[0]
    rows = list(range(20, 200))
    a = num.target_mass(fam, task, p, 20, 200, rows, 0)
    b = num.target_mass_dense(fam, task, p, 20, 200, rows, 0)
    assert any(abs(x - y) > 1e-6 for x, y in zip(a, b))


# ----------------------------------------------------------------------------- budgets


def test_sizes_beyond_the_budgets_are_refused_with_the_budget_and_the_size():
    with pytest.raises(InputError) as e:
        A.prepare("sinusoidal", "prev", 20, 200_000)
    assert "time budget 600 s" in str(e.value) and "--L 200000" in str(e.value)
    with pytest.raises(InputError) as e:
        A.prepare("learned-absolute", "prev", 2000, 100_000)
    assert "memory budget 4 GiB" in str(e.value) and "--L 100000" in str(e.value)
    A.prepare("rope", "prev", 20, 131072)  # a relative head at 128k positions is within both


def test_pe_seam_untouched():
    # the vectorised sin/cos tables are the numbers FloatArith gives
    ar = pe.FloatArith(0)
    for name in ("rope", "sinusoidal"):
        fam = FAMILIES[name]
        want = torch.tensor([fam.features(m, 20, ar) for m in range(5, 700)], dtype=torch.float64)
        assert torch.equal(num._feature_rows(fam, 700, 20, 0, 5), want)


def _trig_rows_one_by_one(order, n: int, start: int) -> torch.Tensor:
    """The RoPE/sinusoidal rows by their definition: ``math.sin``/``math.cos`` of each float64 m * theta_k."""
    import math

    rows = []
    for m in range(start, n):
        row = []
        for k in range(pe.N_FREQ):
            a = float(m) * pe.theta(k)
            row += [getattr(math, order[0])(a), getattr(math, order[1])(a)]
        rows.append(row)
    return torch.tensor(rows, dtype=torch.float64)


@pytest.mark.parametrize("order", [("cos", "sin"), ("sin", "cos")])
@pytest.mark.parametrize("span", [(0, 3000), (131000, 131072), (1 << 20, (1 << 20) + 40)])
def test_trig_table_bit_equal_to_the_scalar_definition(order, span):
    """The vectorised RoPE/sinusoidal table equals math.sin/math.cos of each product, bit for bit."""
    fast = num._trig_rows(order, span[1], span[0])
    assert torch.equal(fast, _trig_rows_one_by_one(order, span[1], span[0]))


def test_trig_table_falls_back_to_the_scalar_sine_when_numpy_differs(monkeypatch):
    """Fault: numpy's sine off by one ulp (a SIMD polynomial).  The probe sees it and the table takes
    math.sin's values, still bit-equal to the definition."""
    import numpy as np

    real_sin = np.sin
    monkeypatch.setattr(np, "sin", lambda x: np.nextafter(real_sin(x), np.inf))
    num._numpy_trig_is_libm.cache_clear()
    try:
        assert not num._numpy_trig_is_libm()
        assert torch.equal(num._trig_rows(("cos", "sin"), 500, 0), _trig_rows_one_by_one(("cos", "sin"), 500, 0))
    finally:
        monkeypatch.undo()
        num._numpy_trig_is_libm.cache_clear()


def _targets_one_by_one(task, rows, L):
    return torch.tensor([pe.target_in_window(task, i, L) for i in rows.tolist()], dtype=torch.long)


@pytest.mark.parametrize("task", TASKS + ("skip-7",))
@pytest.mark.parametrize("L", [2, 97, 131072])
def test_targets_equal_the_per_row_definition(task, L):
    tsk = get_task(task)
    rows = torch.tensor(list(tsk.rows(L)), dtype=torch.long)
    assert torch.equal(num._targets(tsk, rows, L), _targets_one_by_one(tsk, rows, L))


def test_targets_of_an_expression_task_and_an_out_of_window_target():
    """A target evaluated exactly (Python ints) takes the per-row path; a target outside its row's window
    raises the per-row ValueError naming the first such row."""
    from verify.constructions import features as F

    tsk = F.expression_task("floor(i/2)")
    rows = torch.arange(1, 50)
    assert torch.equal(num._targets(tsk, rows, 50), _targets_one_by_one(tsk, rows, 50))
    bad = pe.Task("bad", lambda L: 0, lambda i, L: i - 1, "t = i - 1 from row 0")
    with pytest.raises(ValueError, match=r"t_L\(i\) = -1 of row i = 0"):
        num._targets(bad, torch.arange(0, 10), 10)


# ----------------------------------------------------------------------------- running maxima and the head memo


def _others_max_brute(kern: torch.Tensor, off: torch.Tensor, rows_t: torch.Tensor) -> list[float]:
    k = kern.tolist()
    out = []
    for o, i in zip(off.tolist(), rows_t.tolist()):
        vals = [k[d] for d in range(0, i + 1) if d != o]
        out.append(max(vals) if vals else float("-inf"))
    return out


@pytest.mark.parametrize("n", [1, 2, 3, 9, 64])
def test_others_max_equals_the_definition(n):
    g = torch.Generator().manual_seed(n)
    kern = torch.randint(-3, 4, (n,), generator=g).to(torch.float64)
    rows_t = torch.arange(n)
    cases = [rows_t.clone(),                                   # attend-first: o = i (second range empty)
             (rows_t - rows_t.clamp(max=0)) * 0,               # o = 0 on every row (first range empty)
             torch.full((n,), min(1, n - 1)), torch.full((n,), n - 1),  # prev-like constant offsets
             (2 * rows_t - n + 1).clamp(min=0).minimum(rows_t)]  # reverse-like: varies by row (the sparse table)
    for off in cases:
        keep = off <= rows_t
        got = num._others_max(kern, off[keep], rows_t[keep]).tolist()
        assert got == _others_max_brute(kern, off[keep], rows_t[keep]), (n, off.tolist())


def test_fault_in_the_running_maximum_is_caught():
    real = num._others_max

    def off_by_one(kern, off, rows_t):  # a fault: the second range stops one offset short of the row
        return real(kern, off, (rows_t - 1).maximum(off))

    with faults.inject("numeric.pr26._others_max", off_by_one):
        assert _mismatches(_grid(["rope", "alibi", "free-relative"], Ls=((20, 97),), seeds=(0,)),
                           exact_ties=(False,))


def _memo_mismatches() -> list:
    """Two heads of one family evaluated in one feature-cache block (where the table and kernel are memoized)
    against the same evaluations outside it."""
    bad = []
    for name in ("rope", "free-relative", CUSTOM[1]):
        fam, task = _family(name), get_task("prev")
        heads = _params(fam, 20, 0)[:2]
        rows = range(20, 300)
        outside = [(num.evaluate_rows(fam, task, p, 20, 300, rows), num.target_mass(fam, task, p, 20, 300, rows))
                   for p in heads]
        with num.feature_cache():
            inside = [(num.evaluate_rows(fam, task, p, 20, 300, rows), num.target_mass(fam, task, p, 20, 300, rows))
                      for p in heads]
        for (a, ma), (b, mb) in zip(outside, inside):
            if not (_same(a, b) and ma == mb):
                bad.append(name)
    return bad


def test_head_memo_equals_fresh_tables(monkeypatch):
    assert _memo_mismatches() == []
    real = num._head_tables
    stale: dict = {}

    def keyed_without_the_head(family, param, n, L0, seed):  # a fault: the memo forgets the head in its key
        if num._FEATURE_CACHE is None:
            return real(family, param, n, L0, seed)
        return stale.setdefault((id(family), n, L0, seed), real(family, param, n, L0, seed))

    monkeypatch.setattr(num, "_head_tables", keyed_without_the_head)
    assert _memo_mismatches() != []


def test_rows_within_keeps_ranges_and_lists():
    assert num._rows_within(range(3, 50), 20, 50) == range(20, 50)
    assert num._rows_within(range(3, 50), 0, 20) == range(3, 20)
    assert list(num._rows_within(range(30, 50), 0, 20)) == []
    assert num._rows_within([1, 5, 30, 40], 5, 40) == [5, 30]
    assert torch.equal(num._rows_tensor(range(4, 9)), torch.tensor([4, 5, 6, 7, 8]))
    assert num._rows_tensor(range(9, 4)).shape == (0,)
