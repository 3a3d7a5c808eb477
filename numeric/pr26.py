"""Numeric layer for pr26: fit at L0, transfer to L, strict masked argmax, margins, alpha_L.

Source: pr26 ("A Positional Realizability Theory of Length Generalization in
Single-Head Attention", TMLR 2026): the fit / transfer protocol of the paper's
experiments, Prop. 1, Theorem 1 and Theorem 2.  The PE families and tasks are the
shared definitions of :mod:`verify.constructions.pe`, evaluated here in torch float64.

Protocol (the engine other claims reuse):
* fit: parameter W (absolute, r x r) or w (relative, r), initialised N(0, INIT_STD^2)
  from ``torch.Generator().manual_seed(seed)``; loss = mean cross-entropy of the causal
  masked softmax of each query row at L0 against t_L0(i); Adam (lr = LR = 0.05,
  betas (0.9, 0.999)) with weight decay 1e-4 (L2, torch's Adam ``weight_decay``),
  STEPS = 400 full-batch steps, float64.
* transfer: keep the parameter, evaluate P_L(W) = Phi_L W Phi_L^T (or k(i - j)) in
  row chunks (memory O(chunk x L), so large L is possible).
* strict masked argmax: row i passes iff logit(i, t) > max_{j <= i, j != t} logit(i, j)
  (margin > 0); an exact tie fails.  Rows with |margin| <= TIE_TOL * scale are
  re-decided in exact rational arithmetic (the float64 parameter taken as exact
  rationals) when the family's features are rational; for trigonometric families the
  float64 margin decides (stated in the result).
* alpha_L: fraction of new query rows i in [L0, L) that pass.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Sequence

import torch

from verify.constructions.pe import Family, FloatArith, FractionArith, Task, exact_row_margin

LR = 0.05
INIT_STD = 0.02
STEPS = 400
WEIGHT_DECAY = 1e-4
TIE_TOL = 1e-12
DTYPE = torch.float64


def feature_matrix(family: Family, n: int, L0: int, seed: int = 0, start: int = 0) -> torch.Tensor:
    """Phi (absolute; rows = positions start..n-1) or Psi (relative; rows = offsets), float64.

    Returns:
        tensor of shape (n - start, r), dtype float64.
    """
    ar = FloatArith(seed)
    rows = [family.features(m, L0, ar) for m in range(start, n)]
    r = family.dim(L0)
    if not rows:
        return torch.zeros((0, r), dtype=DTYPE)
    return torch.tensor(rows, dtype=DTYPE)


def init_param(family: Family, L0: int, seed: int) -> torch.Tensor:
    """N(0, INIT_STD^2) init of shape ``family.param_shape(L0)`` from an explicit torch.Generator."""
    g = torch.Generator().manual_seed(int(seed))
    return torch.randn(family.param_shape(L0), generator=g, dtype=DTYPE) * INIT_STD


def full_logits(family: Family, param: torch.Tensor, feats: torch.Tensor, n: int) -> torch.Tensor:
    """The (n, n) positional logit matrix with -inf above the diagonal (causal mask).

    feats: Phi_n (absolute) or Psi over offsets 0..n-1 (relative).
    """
    if family.kind == "absolute":
        P = feats[:n] @ param @ feats[:n].T
    else:
        k = feats[:n] @ param
        idx = torch.arange(n)
        off = (idx[:, None] - idx[None, :]).clamp(min=0)
        P = k[off]
    mask = torch.ones(n, n, dtype=torch.bool).tril()
    return P.masked_fill(~mask, float("-inf"))


@dataclass
class FitResult:
    """A fitted head. param: float64 tensor, shape family.param_shape(L0)."""

    family: Family
    task: Task
    L0: int
    seed: int
    param: torch.Tensor
    loss_first: float
    loss_last: float
    settings: dict = field(default_factory=dict)


def fit(family: Family, task: Task, L0: int, seed: int = 0, steps: int = STEPS, lr: float = LR,
        weight_decay: float = WEIGHT_DECAY, init_std: float = INIT_STD) -> FitResult:
    """Fit the head at length L0 (see :func:`_fit`); runs torch single-threaded (tiny tensors:
    thread start-up dominates otherwise) and restores the thread count afterwards."""
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _fit(family, task, L0, seed, steps, lr, weight_decay, init_std)
    finally:
        torch.set_num_threads(n)


def _fit(family: Family, task: Task, L0: int, seed: int, steps: int, lr: float,
         weight_decay: float, init_std: float) -> FitResult:
    """Fit the head at length L0 (pr26 protocol: regularised cross-entropy, Adam).

    Args:
        family, task: the PE family and the task.
        L0: training length (>= 2 and the task must have a query row at L0).
        seed: seeds the init (torch.Generator) and the untrained features.
    Returns:
        FitResult with the float64 parameter.
    Raises:
        ValueError: no query row at L0.
    """
    rows = list(task.rows(L0))
    if not rows:
        raise ValueError(f"task {task.name} has no query rows at L0 = {L0}")
    feats = feature_matrix(family, L0, L0, seed)
    g = torch.Generator().manual_seed(int(seed))
    param = (torch.randn(family.param_shape(L0), generator=g, dtype=DTYPE) * init_std).requires_grad_(True)
    ridx = torch.tensor(rows)
    tgt = torch.tensor([int(task.target(i, L0)) for i in rows])
    # Adam written out (identical to torch.optim.Adam with L2 weight_decay, eps = 1e-8);
    # avoids torch.optim's first-call import cost (~7 s) and keeps the update explicit.
    b1, b2, eps = 0.9, 0.999, 1e-8
    m = torch.zeros_like(param)
    v = torch.zeros_like(param)
    first = last = float("nan")
    idx = torch.arange(L0)
    off = (idx[:, None] - idx[None, :]).clamp(min=0)[ridx]
    causal = (idx[None, :] > idx[:, None])[ridx]
    featsT = feats.T.contiguous()
    fq = feats[ridx]
    for step in range(1, steps + 1):
        if family.kind == "absolute":
            P = fq @ param @ featsT
        else:
            P = (feats @ param)[off]
        P = P.masked_fill(causal, float("-inf"))
        loss = torch.nn.functional.cross_entropy(P, tgt)
        (grad,) = torch.autograd.grad(loss, param)
        with torch.no_grad():
            grad = grad + weight_decay * param
            m.mul_(b1).add_(grad, alpha=1 - b1)
            v.mul_(b2).addcmul_(grad, grad, value=1 - b2)
            mhat = m / (1 - b1 ** step)
            vhat = v / (1 - b2 ** step)
            param -= lr * mhat / (vhat.sqrt() + eps)
        if step == 1:
            first = float(loss.detach())
        last = float(loss.detach())
    return FitResult(family, task, L0, seed, param.detach(), first, last,
                     {"optimizer": "Adam", "lr": lr, "betas": (0.9, 0.999), "weight_decay": weight_decay,
                      "steps": steps, "init": f"N(0, {init_std}^2), torch.Generator seed {seed}", "dtype": "float64"})


@dataclass
class RowEval:
    """Per-row results on rows[]: margin (float64), argmax (first maximiser), pass flags."""

    rows: torch.Tensor
    margin: torch.Tensor
    argmax: torch.Tensor
    passed: torch.Tensor
    exact_rechecked: int = 0
    target_tied: torch.Tensor | None = None  # bool: another key has exactly the target's logit


def evaluate_rows(family: Family, task: Task, param: torch.Tensor, L0: int, L: int, rows: Sequence[int],
                  seed: int = 0, chunk: int = 1024, exact_ties: bool = True) -> RowEval:
    """Margins and strict masked argmax of the given rows at length L, in row chunks.

    Args:
        param: fitted parameter (float64).
        rows: 0-indexed query rows (< L).
        chunk: rows per chunk (memory ~ chunk x L float64).
        exact_ties: re-decide near-tie rows exactly when the family's features are rational.
    Returns:
        RowEval (tensors of shape (len(rows),); margin float64, argmax int64, passed bool).
    """
    rows_t = torch.tensor(list(rows), dtype=torch.long)
    if len(rows_t) == 0:
        e = torch.zeros(0)
        return RowEval(rows_t, e.double(), e.long(), e.bool(), 0, e.bool())
    n = int(rows_t.max()) + 1
    feats = feature_matrix(family, n, L0, seed)
    param = param.to(DTYPE)
    if family.kind == "absolute":
        K = feats @ param.T  # row j: W phi(j)   -> logit(i, j) = phi(i) . (W phi(j))
    else:
        kern = feats @ param
    margins, argmaxes, ties = [], [], []
    cols = torch.arange(n)
    for s in range(0, len(rows_t), chunk):
        rc = rows_t[s:s + chunk]
        if family.kind == "absolute":
            P = feats[rc] @ K.T
        else:
            P = kern[(rc[:, None] - cols[None, :]).clamp(min=0)]
        P = P.masked_fill(cols[None, :] > rc[:, None], float("-inf"))
        tgt = torch.tensor([int(task.target(int(i), L)) for i in rc])
        lt = P.gather(1, tgt[:, None]).squeeze(1)
        other = P.scatter(1, tgt[:, None], float("-inf"))
        margins.append(lt - other.max(dim=1).values)
        ties.append((other == lt[:, None]).any(dim=1))
        argmaxes.append(P.argmax(dim=1))
    margin = torch.cat(margins)
    passed = margin > 0
    rechecked = 0
    if exact_ties and family.rational:
        scale = float(param.abs().max()) * max(1.0, float(n)) ** 2 + 1e-300
        near = (margin.abs() <= TIE_TOL * scale).nonzero().flatten().tolist()
        if near:
            ar = FractionArith(seed)
            P_ex = _exact_param(param)
            feats_ex = [family.features(m, L0, ar) for m in range(n)]
            for idx in near[:256]:
                i = int(rows_t[idx])
                m = exact_row_margin(family, task, P_ex, i, L, L0, ar, feats_ex)
                passed[idx] = m is not None and m > 0
                margin[idx] = float(m) if m is not None else float("inf")
                rechecked += 1
    return RowEval(rows_t, margin, torch.cat(argmaxes), passed, rechecked, torch.cat(ties))


def _exact_param(param: torch.Tensor) -> Any:
    vals = param.tolist()
    if param.ndim == 1:
        return [Fraction(v) for v in vals]
    return [[Fraction(v) for v in row] for row in vals]


@dataclass
class Transfer:
    """The transfer of a fit from L0 to L (pr26 alpha_L and margins)."""

    alpha: float
    new_rows: int
    passed_rows: int
    g0: float          # min margin over query rows at L0 (old rows)
    gL: float          # min margin over new query rows [L0, L)
    old_margin_at_L: float
    failing: list[dict]
    exact_rechecked: int
    fit: FitResult
    new_rows_target_tied: int = 0  # new rows where another key's logit equals the target's exactly


def transfer(fr: FitResult, L: int, chunk: int = 1024, max_failing: int = 5) -> Transfer:
    """Evaluate a fit at length L: alpha_L over new query rows in [L0, L), margins.

    Returns:
        Transfer; ``alpha`` is nan when the task has no new query row in [L0, L).
    Raises:
        ValueError: L <= L0.
    """
    fam, task, L0 = fr.family, fr.task, fr.L0
    if L <= L0:
        raise ValueError(f"L = {L} must exceed L0 = {L0}")
    old = evaluate_rows(fam, task, fr.param, L0, L0, list(task.rows(L0)), fr.seed, chunk)
    new_rows = [i for i in task.rows(L) if i >= L0]
    new = evaluate_rows(fam, task, fr.param, L0, L, new_rows, fr.seed, chunk)
    old_at_L_rows = [i for i in task.rows(L) if i < L0]
    old_L = evaluate_rows(fam, task, fr.param, L0, L, old_at_L_rows, fr.seed, chunk)
    failing = []
    for k in (~new.passed).nonzero().flatten().tolist()[:max_failing]:
        i = int(new.rows[k])
        failing.append({"row_i": i, "row_i_paper": i + 1, "target": int(task.target(i, L)),
                        "argmax": int(new.argmax[k]), "margin": float(new.margin[k])})
    npass = int(new.passed.sum())
    return Transfer(
        alpha=npass / len(new_rows) if new_rows else float("nan"),
        new_rows=len(new_rows), passed_rows=npass,
        g0=float(old.margin.min()) if len(old.margin) else float("nan"),
        gL=float(new.margin.min()) if len(new.margin) else float("nan"),
        old_margin_at_L=float(old_L.margin.min()) if len(old_L.margin) else float("nan"),
        failing=failing, exact_rechecked=old.exact_rechecked + new.exact_rechecked, fit=fr,
        new_rows_target_tied=int(new.target_tied.sum()))


def alpha(family: Family, task: Task, L0: int, L: int, seed: int = 0) -> Transfer:
    """fit at L0 then transfer to L (pr26 alpha_L)."""
    return transfer(fit(family, task, L0, seed), L)


def kernel_summary(fr: FitResult, L: int, show: int = 8) -> dict:
    """A short description of the fitted head (relative: k(delta) values and maximisers)."""
    fam, L0 = fr.family, fr.L0
    p = fr.param
    out: dict[str, Any] = {"kind": fam.kind, "param_shape": list(p.shape), "frobenius_norm": float(p.norm())}
    if fam.kind == "relative":
        k = feature_matrix(fam, L, L0, fr.seed) @ p
        out["k(delta) for delta = 0.."] = [round(float(x), 6) for x in k[:show]]
        out["argmax_delta_trained (delta < L0)"] = int(k[:L0].argmax())
        out["argmax_delta_all (delta < L)"] = int(k.argmax())
    else:
        feats = feature_matrix(fam, L0, L0, fr.seed)
        P = full_logits(fam, p, feats, L0)
        out["row argmax at L0 (rows 0..)"] = [int(x) for x in P.argmax(dim=1)[:show]]
    return out


def memory_bytes(family: Family, L0: int, L: int, chunk: int = 1024) -> int:
    """Peak bytes of a transfer evaluation (features, parameter, one chunk of logits)."""
    r = family.dim(L0)
    return 8 * (L * r + r * r + L * r + 3 * min(chunk, L) * L) + 16 * L0 * L0 * 4


# ----------------------------------------------------------------------------- Prop. 1


def prop1_search(family: Family, n: int, seed: int, samples: int = 2000, opt_lengths: Sequence[int] = (64, 256),
                 tol: float = 1e-9) -> dict:
    """Random and optimised W for an absolute family: count rows with a strict interior argmax.

    A row i has a strict interior argmax when its masked maximiser j* satisfies 0 < j* < i
    and beats every other key by more than tol * (|row| scale) (float-noise ties excluded).

    Returns:
        dict with counts over random W (``samples`` draws at length n) and for W fitted to
        prev (Adam protocol) at each length in opt_lengths (alpha and interior rows).
    """
    g = torch.Generator().manual_seed(int(seed))
    feats = feature_matrix(family, n, n, seed)
    r = family.dim(n)
    Ws = torch.randn((samples, r, r), generator=g, dtype=DTYPE)
    interior = 0
    rows_checked = 0
    idx = torch.arange(n)
    mask = idx[None, :] <= idx[:, None]
    worst = 0.0
    for s in range(0, samples, 64):
        W = Ws[s:s + 64]
        P = torch.einsum("ia,bac,jc->bij", feats, W, feats).masked_fill(~mask, float("-inf"))
        top2 = P.topk(2, dim=2)
        am = top2.indices[:, :, 0]
        gap = top2.values[:, :, 0] - top2.values[:, :, 1]
        scale = P.masked_fill(~mask, 0).abs().amax(dim=2) + 1e-300
        strict = gap > tol * scale
        strict[:, 0] = False
        inter = strict & (am > 0) & (am < idx[None, :])
        interior += int(inter.sum())
        rows_checked += W.shape[0] * (n - 1)
        if inter.any():
            worst = max(worst, float((gap / scale)[inter].max()))
    from verify.constructions.pe import get_task

    prev = get_task("prev")
    opt = []
    for Lf in opt_lengths:
        fr = fit(family, prev, Lf, seed)
        ev = evaluate_rows(family, prev, fr.param, Lf, Lf, list(range(2, Lf)), seed)
        featsf = feature_matrix(family, Lf, Lf, seed)
        P = full_logits(family, fr.param, featsf, Lf)
        top2 = P.topk(2, dim=1)
        gap = top2.values[:, 0] - top2.values[:, 1]
        scale = P.masked_fill(torch.isinf(P), 0).abs().amax(dim=1) + 1e-300
        am = top2.indices[:, 0]
        ii = torch.arange(Lf)
        inter = (gap > tol * scale) & (am > 0) & (am < ii)
        inter[0] = False
        opt.append({"n": Lf, "prev_rows_passed": int(ev.passed.sum()), "rows": Lf - 2,
                    "interior_strict_argmax_rows": int(inter.sum()), "final_loss": fr.loss_last})
    return {"n": n, "random_W": samples, "random_rows_checked": rows_checked,
            "random_interior_strict_argmax_rows": interior, "optimised": opt,
            "largest_interior_gap_over_scale": worst}


__all__ = ["fit", "transfer", "alpha", "evaluate_rows", "feature_matrix", "full_logits", "kernel_summary",
           "FitResult", "Transfer", "RowEval", "memory_bytes", "prop1_search", "LR", "INIT_STD", "STEPS",
           "WEIGHT_DECAY"]


# ----------------------------------------------------------------------------- claim checks


def _ev(**kw):
    from verify.evidence import Evidence, engine_versions

    return Evidence(layer="numeric", engines=engine_versions("torch"), **kw)


def check_prop1(family: Family, n: int = 256, seed: int = 0, samples: int = 2000,
                opt_lengths: Sequence[int] = (64, 256)):
    """pr26 Prop. 1 at scale: random W (``samples`` draws, N(0, 1) entries) at length n and W
    fitted to prev (the Adam protocol) at each length in opt_lengths never give a strict
    interior argmax (tolerance 1e-9 relative to the row's largest |logit|).

    Returns:
        Evidence ``consistent`` with outcome holds (no interior strict argmax, prev rows
        passed = 0) or fails (with the counts).
    """
    res = prop1_search(family, n, seed, samples, opt_lengths)
    interior = res["random_interior_strict_argmax_rows"] + sum(o["interior_strict_argmax_rows"] for o in res["optimised"])
    passed = sum(o["prev_rows_passed"] for o in res["optimised"])
    holds = interior == 0 and passed == 0
    return _ev(status="consistent", outcome="holds" if holds else "fails", numbers=res, seed=seed,
               tolerance="a row's argmax counts as strict when it beats the runner-up by > 1e-9 x the row's max |logit| (float64)",
               summary=(f"{samples} random W at n = {n} ({res['random_rows_checked']} rows) and prev-fitted W at n = "
                        f"{list(opt_lengths)}: {interior} rows with a strict interior argmax, {passed} prev rows (i >= 2) right"),
               details=[f"fitted at n = {o['n']}: prev rows right {o['prev_rows_passed']}/{o['rows']}, interior strict "
                        f"argmax rows {o['interior_strict_argmax_rows']}, final loss {o['final_loss']:.4f}"
                        for o in res["optimised"]])


def check_theorem2(families: Sequence[Family], L0: int = 20, Ls: Sequence[int] = (64, 128, 256), K: int = 3,
                   seed: int = 0, min_fail: float = 0.5):
    """pr26 Theorem 2 at scale: alpha_L of copy and reverse (and prev, skip-K) as L grows.

    Outcome holds when copy and reverse fail on at least ``min_fail`` of the new rows at every
    L (non-vanishing) for every family, and prev and skip-K transfer with alpha_L = 1 for every
    family whose kernel can peak at an interior offset (not ALiBi: affine, Prop. 1).
    """
    from verify.constructions.pe import get_task

    table: dict[str, dict[str, list]] = {}
    bad = []
    for fam in families:
        table[fam.name] = {}
        for tname in ("copy", "reverse", "prev", f"skip-{K}"):
            task = get_task(tname)
            fr = fit(fam, task, L0, seed)
            alphas = [transfer(fr, L).alpha for L in Ls]
            table[fam.name][tname] = [round(a, 4) for a in alphas]
            if tname in ("copy", "reverse") and any(1 - a < min_fail for a in alphas):
                bad.append(f"{fam.name}/{tname}: alpha = {alphas}")
            if tname not in ("copy", "reverse") and fam.name != "alibi" and any(a != 1 for a in alphas):
                bad.append(f"{fam.name}/{tname}: alpha = {alphas} (expected 1)")
    details = [f"{f}: " + "; ".join(f"{t} alpha_L = {v}" for t, v in d.items()) for f, d in table.items()]
    return _ev(status="consistent", outcome="fails" if bad else "holds", seed=seed,
               numbers={"L0": L0, "L": list(Ls), "alpha": table, "problems": bad},
               tolerance=f"non-vanishing = failing fraction >= {min_fail} at every L; fixed offsets need alpha_L = 1 exactly",
               details=details,
               summary=(f"fitted at L0 = {L0}, transferred to L = {list(Ls)}: copy/reverse alpha_L <= "
                        f"{max(max(d['copy'] + d['reverse']) for d in table.values()):.3f}; prev/skip-{K} alpha_L = 1 for "
                        + ", ".join(f for f in table if f != "alibi")
                        + ("" if not bad else "; problems: " + "; ".join(bad))))


def check_theorem1(families: Sequence[Family], tasks: Sequence[Task], L0: int = 20, L: int = 64, seed: int = 0,
                   draws: int = 8):
    """pr26 Theorem 1 on random parameters: block identity and margin = min(g0, gL).

    For each family, task (length-stable) and draw: a random parameter (N(0, 1), torch.Generator
    seeded from seed), max |P_L[:L0, :L0] - P_L0| and |min margin over all query rows at L -
    min(g0, gL)|, both required <= 1e-12 x scale.
    """
    g = torch.Generator().manual_seed(int(seed))
    worst_block = worst_margin = 0.0
    count = 0
    for fam in families:
        featsL = feature_matrix(fam, L, L0, seed)
        for task in tasks:
            for _ in range(draws):
                p = torch.randn(fam.param_shape(L0), generator=g, dtype=DTYPE)
                PL = full_logits(fam, p, featsL, L)
                P0 = full_logits(fam, p, featsL[:L0] if fam.kind == "absolute" else feature_matrix(fam, L0, L0, seed), L0)
                fin = torch.isfinite(P0)
                scale = float(P0[fin].abs().max()) + 1e-300
                worst_block = max(worst_block, float((PL[:L0, :L0][fin] - P0[fin]).abs().max()) / scale)
                allr = evaluate_rows(fam, task, p, L0, L, list(task.rows(L)), seed, exact_ties=False)
                old = evaluate_rows(fam, task, p, L0, L0, list(task.rows(L0)), seed, exact_ties=False)
                new = evaluate_rows(fam, task, p, L0, L, [i for i in task.rows(L) if i >= L0], seed, exact_ties=False)
                want = min(float(old.margin.min()), float(new.margin.min()))
                worst_margin = max(worst_margin, abs(float(allr.margin.min()) - want) / scale)
                count += 1
    ok = worst_block <= 1e-12 and worst_margin <= 1e-12
    return _ev(status="consistent", outcome="holds" if ok else "fails", seed=seed,
               numbers={"draws": count, "max_block_difference_rel": worst_block, "max_margin_difference_rel": worst_margin,
                        "L0": L0, "L": L, "families": [f.name for f in families], "tasks": [t.name for t in tasks]},
               tolerance="1e-12 relative to the largest |logit| (float64; matrix products of different sizes)",
               summary=(f"{count} random parameters over {len(families)} families x {len(tasks)} tasks: block difference "
                        f"{worst_block:.1e}, |margin_L - min(g0, gL)| {worst_margin:.1e} (relative)"))
