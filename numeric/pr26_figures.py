"""Numeric layer for pr26's figures: Prop. 2 (learned absolute at chance), Prop. 3
(sinusoidal: existence is not selection) and Prop. 4 (the absolute/relative duality table).

Source: pr26 ("A Positional Realizability Theory of Length Generalization in Single-Head
Attention", TMLR 2026), Propositions 2-4 and the numbers the paper prints beside them (known
here from the paper's summary only: the full text was not reachable, so the protocols below
are reconstructed and say so).  The PE families, tasks, fit and transfer are the engine of
:mod:`verify.numeric.pr26` and the shared table :mod:`verify.constructions.pe`.  The one fit
setting the summary leaves open, the learning rate, is chosen once by the joint rule of
:data:`verify.numeric.pr26.LR` (every published figure at once, :func:`lr_selection_table`),
never per figure.

Published figures are first-class: each number the paper prints is a
:class:`verify.evidence.Figure` on the evidence of this (numeric) layer, with ``reproduced``
decided by the rule it states (``Figure.rule``): a value the paper asserts exactly (alpha_L = 1, the
maximiser 8833): exact equality; a printed measurement (alpha_60 = 0.45, 0.055): ours, exactly
passed/rows, inside the rounding interval of the printed digits; a printed Monte-Carlo rate (0.115,
"30%"): that rounding interval meets our 95% Wilson interval.  Every number the summary prints
beside Props. 2-4 is a Figure; one we cannot compute (Prop. 2's "a rescuing W exists with
probability roughly 20-35%") is listed as not computed, with the reason, and counts as not reproduced.

Prop. 2 Monte Carlo (definitions).  The head is fitted to prev at L0 (the engine protocol);
the query row is the last row i = L - 1 of a length-L sequence.  Its visible *new* (untrained)
keys are positions L0..L-1, k = L - L0 of them, the query's own position included.  The
untrained features phi(L0..L-1) are i.i.d. N(0, I/L0) and independent of W (W depends only on
trained rows), so the k - 1 new keys other than the query are exchangeable: given that the
winner (strict masked argmax) is one of them, it is each with probability 1/(k-1), and the
target i - 1 = L - 2 is one of them.  One trial = one fresh draw of the untrained features
(feature seed from the trial index) for one of ``fits`` fitted heads (fit seeds seed..seed+fits-1).
"""

from __future__ import annotations

import math
import time
import tracemalloc
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Sequence

import torch

from verify import stats
from verify.constructions.pe import N_FREQ, Family, FloatArith, get_family, get_task, learned_feature, rand_block
from verify.evidence import Figure, Outcome, Status, rounding_interval
from verify.numeric import pr26 as eng

DTYPE = torch.float64


def _ev(**kw):
    from verify.evidence import Evidence, Layer, engine_versions

    return Evidence(layer=Layer.NUMERIC, engines=engine_versions("torch"), **kw)


def _dec(q: Fraction | float) -> str:
    """A short decimal of an exact or float value, for notes only (decisions use the exact value)."""
    return f"{float(q):.6g}"


def printed_value(figure: str, printed: str, ours: Fraction | float, extra: str = "", shown: str = "") -> Figure:
    """A value against a printed one by the rounding interval of the printed digits (rule ``rounding``).

    ``ours``: exact (a Fraction, e.g. passed/rows) or a float; compared exactly with the interval's ends.
    ``shown``: how ours is written in the note (default: its decimal)."""
    v, lo, hi = rounding_interval(printed)
    ok = lo <= ours <= hi
    return Figure(figure, float(v), round(float(ours), 6), ok,
                  f"rule: ours inside the rounding interval of the printed {printed}, [{_dec(lo)}, {_dec(hi)}]; ours "
                  f"{shown or _dec(ours)}: " + ("inside" if ok else "outside") + (f"; {extra}" if extra else ""),
                  rule="rounding")


def printed_alpha(figure: str, printed: str, passed: int, rows: int, extra: str = "") -> Figure:
    """A printed alpha_L (a multiple of 1/rows) against ours by the rounding interval of its digits; the note
    names the row counts the printed digits allow (``0.12`` of 108 rows allows 13/108 only)."""
    if rows <= 0:
        return Figure(figure, float(rounding_interval(printed)[0]), None, False,
                      f"rule: the rounding interval of the printed {printed}; no new rows to count", rule="rounding")
    _, lo, hi = rounding_interval(printed)
    kmin, kmax = math.ceil(lo * rows), math.floor(hi * rows)
    allowed = (f"{kmin}/{rows}" if kmin == kmax else f"{kmin}..{kmax} of {rows}" if kmin < kmax
               else f"no count of {rows} rows")
    return printed_value(figure, printed, Fraction(passed, rows),
                         f"the printed digits allow {allowed}" + (f"; {extra}" if extra else ""),
                         shown=f"{passed}/{rows} = {passed / rows:.4f}")


def in_ci(figure: str, printed: str, ours: float, ci: Sequence[float], events: int, extra: str = "") -> Figure:
    """A Monte-Carlo rate against a printed one (rule ``ci``): reproduced iff the rounding interval of the printed
    digits meets our 95% Wilson interval (the paper's own rate is an estimate known to its printed digits)."""
    v, plo, phi = rounding_interval(printed)
    lo, hi = ci
    ok = lo <= phi and plo <= hi
    return Figure(figure, float(v), round(ours, 4), ok,
                  f"rule: the printed {printed} (rounding interval [{_dec(plo)}, {_dec(phi)}]) meets our 95% Wilson "
                  f"interval [{lo:.4f}, {hi:.4f}] ({events} events): " + ("meets" if ok else "disjoint")
                  + (f"; {extra}" if extra else ""), rule="ci")


def exact_alpha(figure: str, paper: int | Fraction, passed: int, rows: int, extra: str = "") -> Figure:
    """An alpha_L the source asserts exactly (1 or 0, a statement, not a measurement) against ours: exact
    rational equality passed/rows == paper (rule ``exact``)."""
    ours = Fraction(passed, rows) if rows else None
    ok = ours is not None and ours == Fraction(paper)
    return Figure(figure, float(paper), None if ours is None else round(float(ours), 4), ok,
                  f"rule: exact equality alpha_L = {paper}; ours {passed}/{rows}" + (f"; {extra}" if extra else ""),
                  rule="exact")


#: the declared split of the printed figures the fitted learning rate affects (frozen 2026-12-06, before the selection
#: below was rerun on it): the figures at lengths L <= LR_FIT_MAX_L are the rule's in-sample set, those at longer
#: lengths are held out (the length-generalization question itself: choose on the short lengths, score on the long)
LR_FIT_MAX_L = 60


def fit_column(L: int) -> str:
    """``in-sample`` when the learning-rate rule is chosen on the figure at length L, else ``held-out``."""
    return "in-sample" if L <= LR_FIT_MAX_L else "held-out"


def _fitted(f: Figure, L: int) -> Figure:
    """A printed figure the fitted learning rate affects, in its column (:func:`fit_column`)."""
    import dataclasses

    return dataclasses.replace(f, column=fit_column(L))


def not_computed(figure: str, printed: str, why: str) -> Figure:
    """A printed figure we have no value for (rule ``not computed``; counted as not reproduced), with the reason."""
    return Figure(figure, printed, None, False, f"not computed: {why}", rule="not computed")


def figure_error(f: Figure) -> float:
    """|ours - paper| / |paper| of a numeric figure (0 when the paper's value is 0 and ours equals it)."""
    p, o = float(f.paper), float(f.ours)
    if p == 0:
        return 0.0 if o == 0 else abs(o)
    return abs(o - p) / abs(p)


# ----------------------------------------------------------------------------- statistics


# ----------------------------------------------------------------------------- Prop. 2


def prop2_mc(L: int, L0: int = 20, trials: int = 8000, seed: int = 0, fits: int = 5,
             fit_kw: dict | None = None) -> dict:
    """Monte Carlo of Prop. 2 at length L (module docstring for the definitions).

    Returns:
        dict with k, trials, counts (winner trained / self / other new key, hits), the rates
        and their 95% Wilson intervals.
    Raises:
        ValueError: L < L0 + 3 (need k - 1 >= 2 new keys other than the query).
    """
    if L < L0 + 3:
        raise ValueError(f"L = {L} must be >= L0 + 3 = {L0 + 3}")
    fam = get_family("learned-absolute")
    task = get_task("prev")
    k = L - L0
    heads = [eng.fit(fam, task, L0, seed + f, **(fit_kw or {})).param for f in range(fits)]
    counts = {"winner_trained": 0, "winner_self": 0, "winner_other_new": 0, "hits": 0}
    per_fit_cond = []
    for f, W in enumerate(heads):
        idx = [t for t in range(trials) if t % fits == f]
        F = _new_slot_features(fam, L0, L, [_feature_seed(seed, L, t) for t in idx])  # (T, k, L0)
        q = F[:, -1, :]                                             # phi(L-1)
        qW = q @ W                                                  # logit(L-1, j) = (phi^T W)_j for j < L0
        new = torch.einsum("ts,tns->tn", qW, F)                     # logit(L-1, j), j = L0..L-1
        logits = torch.cat([qW, new], dim=1)                        # keys 0..L-1 (all visible)
        win = logits.argmax(dim=1)
        top2 = logits.topk(2, dim=1).values
        assert bool((top2[:, 0] > top2[:, 1]).all()), "an exact tie in a continuous draw"
        trained = int((win < L0).sum())
        self_ = int((win == L - 1).sum())
        other = len(idx) - trained - self_
        hits = int((win == L - 2).sum())
        counts["winner_trained"] += trained
        counts["winner_self"] += self_
        counts["winner_other_new"] += other
        counts["hits"] += hits
        per_fit_cond.append(round(hits / other, 4) if other else None)
    T = trials
    newwin = counts["winner_self"] + counts["winner_other_new"]
    h = counts["hits"]
    res = {
        "L": L, "L0": L0, "k": k, "chance_1_over_k_minus_1": 1 / (k - 1), "trials": T, "fits": fits, **counts,
        "conditional_hit_rate_nonself": h / counts["winner_other_new"] if counts["winner_other_new"] else float("nan"),
        "conditional_hit_rate_nonself_ci95": stats.wilson_interval(h, counts["winner_other_new"]),
        "conditional_hit_rate_nonself_ci_decision": stats.wilson_interval(h, counts["winner_other_new"], 0.975),
        "conditional_hit_rate_new": h / newwin if newwin else float("nan"),
        "conditional_hit_rate_new_ci95": stats.wilson_interval(h, newwin),
        "unconditional_hit_rate": h / T, "unconditional_hit_rate_ci95": stats.wilson_interval(h, T),
        "winner_new_fraction": newwin / T, "winner_new_fraction_ci95": stats.wilson_interval(newwin, T),
        "conditional_hit_rate_per_fit": per_fit_cond,
    }
    return res


def _new_slot_features(fam: Family, L0: int, L: int, seeds: Sequence[int]) -> torch.Tensor:
    """phi(n) for the untrained slots n = L0..L-1 of one draw per seed, shape (len(seeds), L - L0, r),
    float64: ``fam.features(n, L0, FloatArith(seed))``.  For the built-in learned-absolute map every
    slot of every draw comes from one :func:`~verify.constructions.pe.rand_block` call (bit for bit
    the same numbers, each draw's stream drawn once); any other map is evaluated slot by slot."""
    if fam.feature is learned_feature:
        block = rand_block([(fs, n) for fs in seeds for n in range(L0, L)], L0)
        return torch.from_numpy(block).reshape(len(seeds), L - L0, L0)
    return torch.tensor([[fam.features(n, L0, FloatArith(fs)) for n in range(L0, L)] for fs in seeds], dtype=DTYPE)


def _feature_seed(seed: int, L: int, t: int) -> int:
    # distinct per (seed, L, trial); the engine's fits use seeds seed..seed+fits-1, whose
    # learned-absolute features at L0 are all one-hot (no random draws), so no overlap matters
    return 1_000_000_007 * (seed + 1) + 100_003 * L + t


PROP2_PUBLISHED_L = 30
#: the Monte-Carlo rates Prop. 2 prints, as printed (digits matter: each is compared by its rounding interval)
PROP2_PUBLISHED = {30: {"conditional": "0.115", "chance": "0.111", "unconditional": "0.034", "winner_new": "30%"},
                   60: {"conditional": "0.025", "chance": "0.026", "unconditional": "0.016", "winner_new": "65%"}}
#: printed beside the Monte Carlo; not computed here (:data:`PROP2_RESCUE_WHY`)
PROP2_RESCUE = "roughly 20-35%"
PROP2_RESCUE_WHY = (
    "the summary prints the probability but not what 'rescuing' quantifies over (which rows must reach their "
    "target, which entries of W may change, with what margin or norm), and the readings it admits give no such "
    "number: with W free, the query row alone is rescued iff phi(L-2) is a vertex of the convex hull of the other "
    "L - 1 feature vectors (W's row 0 is seen by no trained row of prev, so W^T phi(L-1) is arbitrary), which "
    "generic random points in R^20 almost always are; a restricted reading that gives 20-35% is not in any text "
    "we can reach")


def prop2_figures(r: dict) -> list[Figure]:
    """The paper's Prop. 2 Monte-Carlo figures at r's length (L = 30 or 60; none at another length or L0 != 20)
    against one :func:`prop2_mc` result."""
    L = r["L"]
    if L not in PROP2_PUBLISHED or r["L0"] != 20:
        return []
    P = PROP2_PUBLISHED[L]
    k = r["k"]
    return [
        _fitted(in_ci(f"Prop. 2 (L = {L}): conditional hit rate, winner a new key", P["conditional"],
                      r["conditional_hit_rate_nonself"], r["conditional_hit_rate_nonself_ci95"], r["winner_other_new"]),
                L),
        printed_value(f"Prop. 2 (L = {L}): chance 1/(k-1)", P["chance"], Fraction(1, k - 1),
                      f"k = L - L0 = {k}", shown=f"1/{k - 1} = {1 / (k - 1):.5f}"),
        _fitted(in_ci(f"Prop. 2 (L = {L}): unconditional hit rate", P["unconditional"], r["unconditional_hit_rate"],
                      r["unconditional_hit_rate_ci95"], r["trials"],
                      "= P(new winner) x conditional rate: depends on the fitted W's scale against the untrained "
                      "features"), L),
        _fitted(in_ci(f"Prop. 2 (L = {L}): winner among new keys", P["winner_new"], r["winner_new_fraction"],
                      r["winner_new_fraction_ci95"], r["trials"],
                      "depends on the fitted W's scale against the N(0, I/L0) untrained features (learning rate, "
                      "feature-map reconstruction)"), L),
    ]


@eng.single_threaded
def check_prop2(Ls: Sequence[int] = (30, 60), L0: int = 20, trials: int = 8000, seed: int = 0, fits: int = 5,
                fit_kw: dict | None = None, sens_lrs: Sequence[float] = (), sens_trials: int = 2000):
    """pr26 Prop. 2: the conditional hit rate among non-self new-key winners is 1/(k-1).

    ``trials`` applies to Ls[0]; a later length L gets trials * Ls[0] // L trials.  ``fit_kw``: the
    fit settings (lr, steps, weight_decay, selection).  ``sens_lrs``: learning rates of a
    sensitivity band of the L = 30 rates (``sens_trials`` trials each; empty = none).

    Outcome holds when 1/(k-1) lies in the Wilson interval of the conditional hit rate at every
    L, at level 97.5% each (Bonferroni over the two lengths: family-wise 95%), and the negative control, the
    competing rate 1/(k-2) (an off-by-one in k), lies outside the interval at the first length; fails when 1/(k-1)
    is outside at some L; inconclusive when neither: the check could not have told 1/(k-1) from 1/(k-2).  Power
    statement per length (:data:`PROP2_POWER`): the conditional events at which the interval excludes 1/(k-2) with
    that probability when the rate is 1/(k-1), and the exact probability at this run's events.  95% intervals are
    reported.  The published L = 30 rates are Figures (``figures``), not part of the verdict.
    """
    # trials at the first length; later lengths get trials * Ls[0] / L (at least fits): a trial at L
    # costs ~(L - L0) feature draws, and the conditional events grow with k, so the intervals stay tight
    res = [prop2_mc(L, L0, max(fits, trials * Ls[0] // L) if n else trials, seed, fits, fit_kw)
           for n, L in enumerate(Ls)]
    bad = []
    for r in res:
        lo, hi = r["conditional_hit_rate_nonself_ci_decision"]
        if not lo <= r["chance_1_over_k_minus_1"] <= hi:
            bad.append(f"L = {r['L']}: 1/(k-1) = {r['chance_1_over_k_minus_1']:.4f} outside [{lo:.4f}, {hi:.4f}]")
    # resolution: which neighbouring chance formulas the same interval also admits
    unresolved = []
    for r in res:
        lo, hi = r["conditional_hit_rate_nonself_ci_decision"]
        k = r["k"]
        alts = {"1/k": 1 / k, "1/(k-2)": 1 / (k - 2) if k > 2 else None}
        inside = [name for name, v in alts.items() if v is not None and lo <= v <= hi]
        if inside:
            unresolved.append(f"L = {r['L']}: the interval also admits {', '.join(inside)}")
    control = [prop2_control(r) for r in res]
    separated = control[0]["rejected"]
    figures = [f for r in res for f in prop2_figures(r)]
    if L0 == 20:
        figures.append(not_computed("Prop. 2: a rescuing W exists (Monte Carlo)", PROP2_RESCUE, PROP2_RESCUE_WHY))
    sens = []
    for lr in sens_lrs:
        r = prop2_mc(PROP2_PUBLISHED_L, L0, sens_trials, seed, fits, {**(fit_kw or {}), "lr": lr})
        sens.append({"lr": lr, "conditional": round(r["conditional_hit_rate_nonself"], 4),
                     "unconditional": round(r["unconditional_hit_rate"], 4),
                     "winner_new": round(r["winner_new_fraction"], 4)})
    details = []
    for r in res:
        details.append(
            f"L = {r['L']}: k = {r['k']}, {r['trials']} trials ({r['fits']} fits x fresh untrained features): winner "
            f"trained {r['winner_trained']}, self {r['winner_self']}, other new {r['winner_other_new']}; hits "
            f"{r['hits']}; conditional {r['conditional_hit_rate_nonself']:.4f} (95% CI "
            "[{:.4f}, {:.4f}]) vs 1/(k-1) = {:.4f}; per fit {}".format(
                *r["conditional_hit_rate_nonself_ci95"], r["chance_1_over_k_minus_1"], r["conditional_hit_rate_per_fit"]))
    if unresolved:
        details.append("resolution: " + "; ".join(unresolved) + " (more trials, e.g. --full, narrow the interval; "
                       "the check cannot tell these formulas apart at this sample size)")
    details += [control_line(c) for c in control]
    if sens:
        details.append(f"learning-rate band at L = 30 ({sens_trials} trials each): " + "; ".join(
            f"lr {x['lr']}: conditional {x['conditional']}, unconditional {x['unconditional']}, winner new "
            f"{x['winner_new']}" for x in sens))
    settings = eng.fit(get_family("learned-absolute"), get_task("prev"), L0, seed, **(fit_kw or {})).settings
    status, outcome = ((Status.CONSISTENT, Outcome.FAILS) if bad else (Status.CONSISTENT, Outcome.HOLDS) if separated
                       else (Status.INCONCLUSIVE, None))
    cannot = ("" if bad or separated else "; the check cannot separate 1/(k-1) from the negative control 1/(k-2) at "
              f"L = {res[0]['L']} with {res[0]['winner_other_new']} events (exact power "
              f"{control[0]['power_at_this_run']:.2f}; {control[0]['events_for_power']} events give "
              f"{PROP2_POWER:.0%}): " + control_line(control[0]))
    return _ev(status=status, outcome=outcome, seed=seed, figures=figures,
               numbers={"runs": res, "problems": bad, "fit_settings": settings, "lr_sensitivity": sens,
                        "negative_control": control},
               tolerance=("1/(k-1) must lie in the 97.5% Wilson interval of the conditional hit rate at each L "
                          "(Bonferroni over the lengths: family-wise 95%); 95% intervals reported"),
               summary=("; ".join(f"L = {r['L']}: conditional hit rate {r['conditional_hit_rate_nonself']:.4f} vs "
                                  f"1/(k-1) = {r['chance_1_over_k_minus_1']:.4f} (k = {r['k']}, "
                                  f"{r['winner_other_new']} events), unconditional {r['unconditional_hit_rate']:.4f}, "
                                  f"winner new {100 * r['winner_new_fraction']:.1f}%" for r in res)
                        + ("" if not bad else "; problems: " + "; ".join(bad))
                        + ("; negative control 1/(k-2) rejected at L = " + str(res[0]["L"]) if separated else "")
                        + cannot),
               details=details)


#: the power a Prop. 2 run is sized for: the probability that the interval excludes the negative control 1/(k-2)
#: when the rate is 1/(k-1) (the --trials default, 24000 at L = 30, gives it at the event rate 0.29 of the 8000-trial
#: runs: events_for_power(1/9, 1/8, 0.975, 0.9) = 6599 events, i.e. 22 800 trials, rounded up)
PROP2_POWER = 0.9


def prop2_control(r: dict) -> dict:
    """The negative control of one length's run: the competing rate 1/(k-2) against the same 97.5% interval, with
    the power statement (:data:`PROP2_POWER`): the events needed, the trials they take at this run's event rate, and
    the exact probability of rejecting 1/(k-2) at this run's events."""
    k, n = r["k"], r["winner_other_new"]
    p1, p2 = 1 / (k - 1), 1 / (k - 2)
    lo, hi = r["conditional_hit_rate_nonself_ci_decision"]
    need = stats.events_for_power(p1, p2, 0.975, PROP2_POWER)
    rate = n / r["trials"] if r["trials"] else 0.0
    return {"L": r["L"], "k": k, "rate": p2, "inside": lo <= p2 <= hi, "rejected": not lo <= p2 <= hi, "events": n,
            "events_for_power": need, "trials_for_power": math.ceil(need / rate) if rate else None,
            "power_at_this_run": round(stats.wilson_exclusion_power(n, p1, p2, 0.975), 4)}


def control_line(c: dict) -> str:
    return (f"negative control at L = {c['L']} (k = {c['k']}): 1/(k-2) = {c['rate']:.4f} "
            f"{'rejected (outside' if c['rejected'] else 'NOT rejected (inside'} the 97.5% interval); power "
            f"{c['power_at_this_run']:.2f} at {c['events']} events, {PROP2_POWER:.0%} needs {c['events_for_power']} "
            f"events (~{c['trials_for_power']} trials at this event rate)")


# ----------------------------------------------------------------------------- Prop. 3


def sin_offset_W(k: int = N_FREQ - 1) -> torch.Tensor:
    """The sinusoidal W (32 x 32) whose logits are phi(i)^T W phi(j) = sin((i - j) theta_k).

    phi(i) = [sin(i th_0), cos(i th_0), ..., sin(i th_15), cos(i th_15)] (pe._trig), and
    sin(a - b) = sin a cos b - cos a sin b, so W[2k, 2k+1] = 1, W[2k+1, 2k] = -1.
    """
    W = torch.zeros(2 * N_FREQ, 2 * N_FREQ, dtype=DTYPE)
    W[2 * k, 2 * k + 1] = 1.0
    W[2 * k + 1, 2 * k] = -1.0
    return W


def alpha_fixed(family: Family, task_name: str, param: torch.Tensor, L: int, L0: int = 20, chunk: int = 512,
                measure_memory: bool = False) -> dict:
    """alpha_L of a given (not fitted) parameter at length L, evaluated in row chunks by the engine
    (:func:`verify.numeric.pr26.evaluate_rows`: memory O(chunk x L), never the L x L matrix).

    Tie handling: strict masked argmax (margin > 0); an exact tie fails.  The logits are float64 with
    the engine's stated rounding bound E (:func:`verify.numeric.pr26.logit_error_bound`, ~8e-12 for the
    sinusoidal kernel); rows within 4 E of a tie are re-decided by interval arithmetic.  The result
    reports the smallest |margin|, E and the number of re-decided rows.
    """
    task = get_task(task_name)
    rows = [i for i in task.rows(L) if i >= L0]
    t0 = time.perf_counter()
    if measure_memory:
        tracemalloc.start()
    ev = eng.evaluate_rows(family, task, param, L0, L, rows, 0, chunk)
    peak_py = None
    if measure_memory:  # Python-heap peak only: torch's buffers are invisible to tracemalloc (see the benchmark)
        peak_py = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    secs = time.perf_counter() - t0
    tgt_off = sorted({int(i) - int(task.target(int(i), L)) for i in ev.rows[:1].tolist() + ev.rows[-1:].tolist()})
    return {"L": L, "L0": L0, "task": task_name, "family": family.name, "rows": len(rows),
            "passed": int(ev.passed.sum()), "alpha": int(ev.passed.sum()) / len(rows) if rows else float("nan"),
            "min_margin": float(ev.margin.min()), "max_margin": float(ev.margin.max()),
            "argmax_offsets": _short(sorted({int(i) - int(a) for i, a in zip(ev.rows.tolist(), ev.argmax.tolist())})),
            "target_offsets": tgt_off, "ties": int(ev.target_tied.sum()), "chunk": chunk,
            "logit_error_bound": ev.error_bound, "exact_rechecked": ev.exact_rechecked,
            "interval_rechecked": ev.interval_rechecked, "unresolved": ev.unresolved,
            "seconds": round(secs, 3), **({"tracemalloc_peak_bytes": peak_py} if measure_memory else {}),
            "engine_memory_bound_bytes": eng.memory_bytes(family, L0, L, chunk)}


def _short(vals: list, keep: int = 6) -> list:
    """A sorted list, shortened to its first and last values around a '... (n values)' marker."""
    if len(vals) <= 2 * keep:
        return vals
    return vals[:keep] + [f"... ({len(vals)} values)"] + vals[-keep:]


def fit_sensitivity(family: Family, task_name: str, L0: int, Ls: Sequence[int], seeds: Sequence[int],
                    lrs: Sequence[float], fit_kw: dict | None = None) -> list[dict]:
    """alpha_L of the cross-entropy fit across seeds and learning rates (every other setting from
    ``fit_kw`` or the engine's defaults: Adam, 400 steps, weight decay 1e-4, N(0, 0.02^2) init).

    Returns:
        one dict per (lr, seed): lr, seed, final loss, alpha {L: alpha_L} (rounded to 4 decimals), passed and
        rows {L: count} (the exact alpha_L = passed / rows).
    """
    task = get_task(task_name)
    kw = {k: v for k, v in (fit_kw or {}).items() if k not in ("lr", "selection")}
    out = []
    for lr in lrs:
        for s in seeds:
            fr = eng.fit(family, task, L0, s, lr=lr, **kw)
            trs = {L: eng.transfer(fr, L) for L in Ls}
            out.append({"lr": lr, "seed": s, "final_loss": round(fr.loss_last, 5),
                        "alpha": {L: round(t.alpha, 4) for L, t in trs.items()},
                        "passed": {L: t.passed_rows for L, t in trs.items()}, "rows": {L: t.new_rows for L, t in trs.items()}})
    return out


def _band(sens: list[dict], L: int, paper: str | None = None) -> str:
    """min..max of alpha_L over a sensitivity run, and the learning rates whose alpha_L lies in the rounding
    interval of the paper's printed value."""
    vals = [r["alpha"][L] for r in sens]
    lrs = sorted({r["lr"] for r in sens})
    txt = (f"alpha_{L} over {len(vals)} fits ({len(lrs)} learning rates {lrs[0]}..{lrs[-1]} x "
           f"{len(vals) // len(lrs)} seeds): {min(vals):.3f}..{max(vals):.3f}")
    if paper is not None:
        _, lo, hi = rounding_interval(paper)
        hit = sorted({r["lr"] for r in sens if lo <= Fraction(r["passed"][L], r["rows"][L]) <= hi})
        txt += f"; the paper's {paper} at lr {hit}" if hit else f"; the paper's {paper} at no lr of the grid"
    return txt


def _settings_text(st: dict) -> str:
    if st.get("selection") == "min-norm":
        return "min-norm selection (minimum ||W||_F with margin >= 1 at L0)"
    return f"cross-entropy, Adam lr {st['lr']}, {st['steps']} steps, weight decay {st['weight_decay']}"


#: Prop. 3's printed alpha_L of the sinusoidal head fitted on prev, by length, as printed
SIN_PREV_PUBLISHED = {60: "0.45", 128: "0.34"}


def sin_prev_figure(L: int, tr: Any, extra: str = "") -> Figure:
    """Prop. 3's printed alpha_L (L = 60: 0.45, L = 128: 0.34) of the sinusoidal head fitted on prev, against a
    Transfer at L (rounding interval of the printed digits)."""
    return _fitted(printed_alpha(f"Prop. 3: alpha_{L} of prev, sinusoidal, L0-fit", SIN_PREV_PUBLISHED[L],
                                 tr.passed_rows, tr.new_rows, extra), L)


def check_prop3(L_big: int = 17665, L0: int = 20, Ls: Sequence[int] = (60, 128, 256, 512), seed: int = 0,
                sens_seeds: Sequence[int] = (0,), sens_lrs: Sequence[float] = eng.LR_GRID,
                chunk: int = 512, offset_k: int = N_FREQ - 1, fit_kw: dict | None = None, min_norm: bool = False):
    """pr26 Prop. 3 numerically: (b) alpha_L of copy at L_big for the kernel sin(delta theta_min)
    (sinusoidal W of :func:`sin_offset_W`), chunked; (c) alpha_L of prev after the L0 fit
    (``fit_kw``: the fit settings), with a sensitivity band over ``sens_lrs`` x ``sens_seeds``.

    Outcome holds when alpha_{L_big} = 1 with every row's argmax at offset ceil(L_big/2) and the
    fitted head does not transfer (alpha_60 < 1 at the run's seed).  Figures: alpha_17665 = 1 (when
    L_big = 17665; exact equality) and the printed alpha_60 = 0.45, alpha_128 = 0.34 (for those of ``Ls``;
    rounding interval of the printed digits).
    """
    fam = get_family("sinusoidal")
    big = alpha_fixed(fam, "copy", sin_offset_W(offset_k), L_big, L0, chunk)
    fr = eng.fit(fam, get_task("prev"), L0, seed, **(fit_kw or {}))
    fitted = {L: eng.transfer(fr, L) for L in Ls}
    pub = [L for L in Ls if L in SIN_PREV_PUBLISHED] if L0 == 20 else []
    sens = fit_sensitivity(fam, "prev", L0, tuple(dict.fromkeys([Ls[0], *pub])), sens_seeds, sens_lrs, fit_kw) \
        if sens_lrs else []
    a60 = fitted[Ls[0]].alpha
    ok_big = big["alpha"] == 1.0 and big["min_margin"] > 0
    ok_sel = a60 < 1.0
    figures = []
    if L_big == 17665 and offset_k == N_FREQ - 1:
        figures.append(exact_alpha("Prop. 3: alpha_17665 of copy, kernel sin(delta theta_min)", 1, big["passed"],
                                   big["rows"], f"full size, chunk {chunk}; smallest margin {big['min_margin']:.3e}"))
    for L in pub:
        figures.append(sin_prev_figure(L, fitted[L], _settings_text(fr.settings)
                                       + ("; " + _band(sens, L, SIN_PREV_PUBLISHED[L]) if sens else "")))
    details = [f"copy at L = {L_big}: alpha = {big['alpha']} ({big['passed']}/{big['rows']} rows), argmax offsets "
               f"{big['argmax_offsets']}, margins [{big['min_margin']:.3e}, {big['max_margin']:.3e}], exact ties "
               f"{big['ties']}, row chunks of {chunk} (memory O(chunk x L); the time is in numbers['alpha_big']['seconds'])",
               "prev after the L0 = %d fit (seed %d, %s): " % (L0, seed, _settings_text(fr.settings))
               + ", ".join(f"alpha_{L} = {t.alpha:.4f} ({t.passed_rows}/{t.new_rows})" for L, t in fitted.items())]
    if sens:
        details.append("sensitivity band: " + _band(sens, Ls[0], SIN_PREV_PUBLISHED.get(Ls[0]) if L0 == 20 else None)
                       + "; " + "; ".join(f"lr {r['lr']} seed {r['seed']}: {r['alpha'][Ls[0]]}" for r in sens))
    mn: dict = {}
    if min_norm:
        try:
            fm = eng.fit(fam, get_task("prev"), L0, seed, selection="min-norm")
            tm = eng.transfer(fm, Ls[0])
            mn = {"alpha": tm.alpha, "passed": tm.passed_rows, "rows": tm.new_rows, "L": Ls[0], "settings": fm.settings}
            details.append(f"min-norm selection (finding): alpha_{Ls[0]} = {tm.alpha:.4f} ({tm.passed_rows}/"
                           f"{tm.new_rows}), ||W||_F = {fm.settings['frobenius_norm']:.3f}")
        except eng.MinNormError as e:
            mn = {"error": str(e)}
            details.append(f"min-norm selection: {e}")
    return _ev(status=Status.CONSISTENT, outcome=Outcome.HOLDS if ok_big and ok_sel else Outcome.FAILS, seed=seed, figures=figures,
               numbers={"min_norm": mn, "alpha_big": big, "fitted_prev": {str(L): {"alpha": t.alpha, "passed": t.passed_rows,
                                                                   "rows": t.new_rows, "gL": t.gL}
                                                          for L, t in fitted.items()},
                        "fit_settings": fr.settings, "sensitivity": sens},
               tolerance=("strict argmax (a tie fails); the smallest margin at L = %d is %.2e, far above the stated "
                          "float64 rounding bound of a logit E = %.1e (rows within 4 E of a tie would be re-decided by "
                          "interval arithmetic: %d were)" % (L_big, big["min_margin"], big["logit_error_bound"],
                                                              big["interval_rechecked"])),
               summary=(f"kernel sin(delta theta_min) on copy at L = {L_big}: alpha = {big['alpha']} (every argmax at "
                        f"offset {big['argmax_offsets']}); the L0-fit on prev: alpha_{Ls[0]} = {a60:.3f} (paper 0.45), "
                        + ", ".join(f"alpha_{L} = {t.alpha:.3f}" for L, t in list(fitted.items())[1:])),
               details=details)


# ----------------------------------------------------------------------------- Prop. 4

#: Prop. 4's RoPE attend-first row, as printed (every length of the table prints a number)
ROPE_AF_PUBLISHED = {30: "0.80", 40: "0.40", 60: "0.20", 128: "0.12", 256: "0.055", 512: "0.039"}
#: the lengths of the paper's table (RoPE on attend-first is reported at 30, 40, 60, 128, 256, 512)
PROP4_TABLE_LENGTHS = (30, 40, 60, 128, 256, 512)


def passing_runs(tr: Any, L: int) -> list[dict]:
    """The new rows of a Transfer at L that pass, as runs of consecutive rows (0-indexed) with the margins of
    each run's first and last row and of the failing rows just outside it (the rows a slightly different fit
    would gain or lose first)."""
    fr = tr.fit
    rows = [i for i in fr.task.rows(L) if i >= fr.L0]
    ev = eng.evaluate_rows(fr.family, fr.task, fr.param, fr.L0, L, rows, fr.seed)
    margin = {int(i): float(m) for i, m in zip(ev.rows.tolist(), ev.margin.tolist())}
    ok = [int(i) for i, p in zip(ev.rows.tolist(), ev.passed.tolist()) if p]
    runs: list[list[int]] = []
    for i in ok:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    return [{"rows": [r[0], r[-1]], "margin_first": round(margin[r[0]], 3), "margin_last": round(margin[r[-1]], 3),
             "margin_before": round(margin[r[0] - 1], 3) if r[0] - 1 in margin else "-",
             "margin_after": round(margin[r[-1] + 1], 3) if r[-1] + 1 in margin else "-"} for r in runs]


def _runs_text(runs: list[dict]) -> str:
    return ", ".join(f"{r['rows'][0]}..{r['rows'][1]} (edge margins {r['margin_first']}, {r['margin_last']}; "
                     f"outside {r['margin_before']}, {r['margin_after']})" for r in runs)


def rope_af_figures(trs: dict, extra: dict | None = None) -> list[Figure]:
    """Prop. 4's RoPE attend-first row against Transfers {L: Transfer} of the RoPE head fitted on attend-first:
    every printed value (0.80, 0.40, 0.20, 0.12, 0.055, 0.039 at L = 30, 40, 60, 128, 256, 512) by the
    rounding interval of its digits; the note names the row counts the digits allow and our passing rows."""
    out = []
    for L, t in trs.items():
        if L not in ROPE_AF_PUBLISHED:
            continue
        note = (extra or {}).get(L, "")
        runs = _runs_text(passing_runs(t, L)) if t.passed_rows else "none"
        out.append(_fitted(printed_alpha(f"Prop. 4: RoPE on attend-first, alpha_{L}", ROPE_AF_PUBLISHED[L],
                                         t.passed_rows, t.new_rows,
                                         f"our passing rows (0-indexed): {runs}" + (f"; {note}" if note else "")), L))
    return out


def rope_af_every_printed(sens: list[dict]) -> list[tuple[float, int]]:
    """The (lr, seed) fits of a RoPE attend-first sensitivity run whose alpha_L lies in the rounding interval of
    the printed value at every printed length (lengths the run did not measure are skipped)."""
    out = []
    for r in sens:
        Ls = [L for L in ROPE_AF_PUBLISHED if L in r["passed"]]
        if Ls and all(rounding_interval(ROPE_AF_PUBLISHED[L])[1] <= Fraction(r["passed"][L], r["rows"][L])
                      <= rounding_interval(ROPE_AF_PUBLISHED[L])[2] for L in Ls):
            out.append((r["lr"], r["seed"]))
    return out


def clamped_tie_control(L0: int, Ls: Sequence[int], seed: int = 0) -> dict:
    """Prop. 4's clamped prev at its best: the head W = e_{L0-1} e_{L0-1}^T puts logit 1 on every key j >= L0 - 1
    of a new row i >= L0 (they share the clamped feature e_{L0-1}) and 0 elsewhere, so prev's target i - 1 is
    tied with key i (and every key from L0 - 1 on), never beaten: margin exactly 0 on every new row.

    Expected: alpha_L = 0 with every new row tied and every margin 0 (decided exactly: rational features).
    Counting ties as successes would give alpha_L = 1; un-clamping the family would break the ties.

    Returns:
        {"head", "per_L": {L: {"alpha", "rows", "tied", "min_margin", "max_margin"}}, "problems": [...]}.
    """
    fam = get_family("clamped-absolute")
    W = torch.zeros(fam.param_shape(L0), dtype=DTYPE)
    W[L0 - 1, L0 - 1] = 1.0
    task = get_task("prev")
    out: dict[str, Any] = {"head": f"clamped absolute, W = e_{L0 - 1} e_{L0 - 1}^T (0-indexed)", "per_L": {},
                           "problems": []}
    for L in Ls:
        rows = [i for i in task.rows(L) if i >= L0]
        ev = eng.evaluate_rows(fam, task, W, L0, L, rows, seed)
        rec = {"alpha": int(ev.passed.sum()) / len(rows), "rows": len(rows), "tied": int(ev.target_tied.sum()),
               "min_margin": float(ev.margin.min()), "max_margin": float(ev.margin.max())}
        out["per_L"][L] = rec
        if rec["alpha"] != 0 or rec["tied"] != len(rows) or rec["min_margin"] != 0 or rec["max_margin"] != 0:
            out["problems"].append(f"clamped tie control at L = {L}: alpha {rec['alpha']}, {rec['tied']}/{len(rows)} "
                                   f"rows tied, margins {rec['min_margin']}..{rec['max_margin']} (expected 0, all "
                                   "tied, margin 0)")
    return out


@eng.single_threaded
@eng.with_feature_cache
@dataclass
class Prop4Result:
    """What :func:`check_prop4` measured: the fitted heads' alpha_L table and the controls beside it."""

    L0: int
    Ls: Sequence[int]
    K: int
    seed: int
    cells: list[tuple[str, str]]
    fits: dict[str, Any]                # "family/task" -> the L0 fit
    transfers: dict[str, dict]          # "family/task" -> L -> eng.transfer
    table: dict[str, dict]              # "family/task" -> alpha, passed, rows, gL, target_tied, first_failing
    tie: dict                           # clamped_tie_control
    sens: list                          # fit_sensitivity of RoPE attend-first
    extrap: list                        # eng.first_failing_length of the relative cells
    min_norm: dict                      # "family/task" -> alpha_L of the min-norm head (or why none)
    min_norm_asked: bool

    @property
    def in_table(self) -> list[int]:
        return [L for L in self.Ls if L in PROP4_TABLE_LENGTHS]

    @property
    def beyond(self) -> list[int]:
        return [L for L in self.Ls if L not in PROP4_TABLE_LENGTHS]

    @property
    def rel(self) -> tuple[str, ...]:
        """The relative cells with an interior peak, on prev and skip-K."""
        return ("rope/prev", f"rope/skip-{self.K}", "free-relative/prev", f"free-relative/skip-{self.K}")

    @property
    def rope_af(self) -> list[float]:
        """RoPE attend-first alpha_L at every L."""
        return [self.table["rope/attend-first"]["alpha"][L] for L in self.Ls]


def check_prop4(L0: int = 20, Ls: Sequence[int] = PROP4_TABLE_LENGTHS, K: int = 3, seed: int = 0,
                sens_seeds: Sequence[int] = (0,), sens_lrs: Sequence[float] = eng.LR_GRID,
                fit_kw: dict | None = None, horizon: int = 1024, min_norm: bool = False):
    """pr26 Prop. 4: the duality table alpha_L (family x task) after the L0 fit (``fit_kw``: settings).

    The statement is read over the paper's table lengths (:data:`PROP4_TABLE_LENGTHS`, L <= 512);
    longer L in ``Ls`` (``--full``) and the fitted relative heads' first failing lengths (scanned up
    to ``horizon``) are findings, because alpha_L = 1 of a fitted head beyond the table is a
    property of the selected kernel (selection), which the existence result (Theorem 2) does not
    promise.

    Outcome holds when: relative families with an interior peak (rope, free-relative) have alpha_L = 1
    on prev and skip-K at every table length; clamped absolute has 1 on attend-first and 0 on prev with
    the target tied exactly on every new row (every L); free relative has 0 on attend-first (every L);
    RoPE on attend-first is non-increasing in L and lower at the largest L than at the smallest.
    ``min_norm``: also report alpha_L of the min-norm heads at the table lengths (a finding; ALiBi prev is
    skipped: not realizable at L0, Prop. 1).
    """
    return _describe_prop4(_measure_prop4(L0, Ls, K, seed, sens_seeds, sens_lrs, fit_kw, horizon, min_norm))


def _measure_prop4(L0: int, Ls: Sequence[int], K: int, seed: int, sens_seeds: Sequence[int],
                   sens_lrs: Sequence[float], fit_kw: dict | None, horizon: int, min_norm: bool) -> Prop4Result:
    """Fit every cell of the table at L0, transfer to each L, and run the controls of :func:`check_prop4`."""
    cells = [("rope", "prev"), ("rope", f"skip-{K}"), ("free-relative", "prev"), ("free-relative", f"skip-{K}"),
             ("alibi", "prev"), ("clamped-absolute", "attend-first"), ("clamped-absolute", "prev"),
             ("free-relative", "attend-first"), ("rope", "attend-first")]
    table: dict[str, dict] = {}
    trs_all: dict[str, dict] = {}
    fits: dict[str, Any] = {}
    for fname, tname in cells:
        fr = eng.fit(get_family(fname), get_task(tname), L0, seed, **(fit_kw or {}))
        fits[f"{fname}/{tname}"] = fr
        trs = {L: eng.transfer(fr, L) for L in Ls}
        trs_all[f"{fname}/{tname}"] = trs
        table[f"{fname}/{tname}"] = {
            "alpha": {L: round(t.alpha, 4) for L, t in trs.items()},
            "passed": {L: t.passed_rows for L, t in trs.items()}, "rows": {L: t.new_rows for L, t in trs.items()},
            "gL": {L: t.gL for L, t in trs.items()}, "target_tied": {L: t.new_rows_target_tied for L, t in trs.items()},
            "first_failing": trs[Ls[-1]].failing[:1]}
    in_table = [L for L in Ls if L in PROP4_TABLE_LENGTHS]
    tie = clamped_tie_control(L0, [L for L in in_table if L <= 128] or in_table[:1])
    sens = fit_sensitivity(get_family("rope"), "attend-first", L0, tuple(ROPE_AF_PUBLISHED), sens_seeds,
                           sens_lrs, fit_kw) if sens_lrs else []
    r = Prop4Result(L0=L0, Ls=Ls, K=K, seed=seed, cells=cells, fits=fits, transfers=trs_all, table=table, tie=tie,
                    sens=sens, extrap=[], min_norm={}, min_norm_asked=min_norm)
    r.extrap = [eng.first_failing_length(fits[c], max(horizon, max(Ls))) for c in r.rel]
    if min_norm:
        for fname, tname in cells:
            if fname == "alibi":
                continue
            try:
                fm = eng.fit(get_family(fname), get_task(tname), L0, seed, selection="min-norm")
                r.min_norm[f"{fname}/{tname}"] = {L: round(eng.transfer(fm, L).alpha, 4) for L in in_table}
            except eng.MinNormError as e:
                r.min_norm[f"{fname}/{tname}"] = str(e)
    return r


def _prop4_problems(r: Prop4Result) -> list[str]:
    """Where the table departs from Prop. 4's statement (empty: the statement holds)."""
    table, in_table = r.table, r.in_table
    bad = []
    for c in r.rel:
        if any(table[c]["alpha"][L] != 1 for L in in_table):
            bad.append(f"{c}: {table[c]['alpha']} (expected 1 at L = {in_table})")
    ca, cp = table["clamped-absolute/attend-first"], table["clamped-absolute/prev"]
    if any(a != 1 for a in ca["alpha"].values()):
        bad.append(f"clamped/attend-first: {ca['alpha']}")
    if any(a != 0 for a in cp["alpha"].values()) or any(cp["target_tied"][L] != cp["rows"][L] for L in r.Ls):
        bad.append(f"clamped/prev: {cp['alpha']}, tied {cp['target_tied']}")
    if any(a != 0 for a in table["free-relative/attend-first"]["alpha"].values()):
        bad.append(f"free-relative/attend-first: {table['free-relative/attend-first']['alpha']}")
    bad += r.tie["problems"]
    ra = r.rope_af
    if any(b > a for a, b in zip(ra, ra[1:])) or not ra[-1] < ra[0]:
        bad.append(f"rope/attend-first does not decay: {ra}")
    return bad


def _table_cell(r: Prop4Result, figure: str, printed: str | int, cells: Sequence[str], fn: Any,
                extra: str = "") -> Figure:
    """A table cell over cells x table lengths: every (cell, L) must meet the rule; the extreme is shown."""
    in_table = r.in_table
    vals = [(Fraction(r.table[c]["passed"][L], r.table[c]["rows"][L]), f"{c} at L = {L}") for c in cells
            for L in in_table]
    ext = fn(vals, key=lambda x: x[0])
    if isinstance(printed, int):
        ok = all(v == printed for v, _ in vals)
        return Figure(figure, float(printed), round(float(ext[0]), 4), ok,
                      f"rule: exact equality alpha_L = {printed} at every table length L = {in_table} ("
                      f"{'lowest' if fn is min else 'highest'}: {ext[1]}, {_dec(ext[0])})" + extra, rule="exact")
    v, lo, hi = rounding_interval(printed)
    ok = all(lo <= x <= hi for x, _ in vals)
    return Figure(figure, float(v), round(float(ext[0]), 4), ok,
                  f"rule: ours inside the rounding interval of the printed {printed}, [{_dec(lo)}, {_dec(hi)}], "
                  f"at every table length L = {in_table} ({'lowest' if fn is min else 'highest'}: {ext[1]}, "
                  f"{_dec(ext[0])})" + extra, rule="rounding")


def _prop4_figures(r: Prop4Result) -> list[Figure]:
    """The printed table cells of Prop. 4 against ours (at the paper's L0 = 20 and table lengths only)."""
    in_table, sens = r.in_table, r.sens
    if not (in_table and r.L0 == 20):
        return []
    ff = r.table["clamped-absolute/prev"]["first_failing"]
    fail = ff[0] if ff else None
    fail_txt = f"; in our fit another key (j = {fail['argmax']}) wins by {-fail['margin']:.2f}" if fail else ""
    figures = [
        _table_cell(r, f"Prop. 4: relative (RoPE, free relative) on prev, skip-{r.K}", 1, r.rel, min),
        _table_cell(r, "Prop. 4: clamped absolute on attend-first", "1.00", ["clamped-absolute/attend-first"], min),
        _table_cell(r, "Prop. 4: clamped absolute on prev", "0.00", ["clamped-absolute/prev"], max, fail_txt),
        _table_cell(r, "Prop. 4: relative (free relative) on attend-first", "0.00", ["free-relative/attend-first"], max),
    ]
    notes = {L: _band(sens, L, ROPE_AF_PUBLISHED[L]) for L in ROPE_AF_PUBLISHED if L in in_table} if sens else {}
    figures += rope_af_figures({L: t for L, t in r.transfers["rope/attend-first"].items() if L in PROP4_TABLE_LENGTHS},
                               notes)
    return figures


def _prop4_details(r: Prop4Result) -> list[str]:
    """The report lines of :func:`check_prop4`: the table, the tie control, the findings beyond the table."""
    tie, sens, beyond = r.tie, r.sens, r.beyond
    details = [f"{c}: alpha_L = {d['alpha']}" for c, d in r.table.items()]
    details.append(f"tie control: {tie['head']}: " + "; ".join(
        f"L = {L}: alpha {t['alpha']}, margin {t['min_margin']}..{t['max_margin']} (exact), {t['tied']}/{t['rows']} rows "
        "tied" for L, t in tie["per_L"].items()) + " (the best a clamped head can do on prev: a tie, which fails)")
    details.append("fit: " + _settings_text(r.fits["rope/prev"].settings) + f", seed {r.seed}")
    if beyond:
        details += [f"beyond the paper's table (finding, not judged): {c} alpha_L at L = {beyond}: "
                    f"{[r.table[c]['alpha'][L] for L in beyond]}" for c in r.rel]
    for ff in r.extrap:
        if ff["first_failing_length"] is not None:
            details.append(f"finding: the fitted {ff['family']} head on {ff['task']} first fails at L = "
                           f"{ff['first_failing_length']} (row {ff['failing_row_paper']} attends to key "
                           f"{ff['argmax_key_paper']}; its kernel's global peak moved to offset "
                           f"{ff['hypothesis_break_offset']})")
        else:
            details.append(f"fitted {ff['family']} head on {ff['task']}: alpha_L = 1 up to L = {ff['horizon']}")
    if sens:
        details.append("RoPE attend-first sensitivity: " + "; ".join(
            f"lr {s['lr']} seed {s['seed']}: {s['alpha']}" for s in sens))
        every = rope_af_every_printed(sens)
        details.append("RoPE attend-first, the whole printed row (0.80, 0.40, 0.20, 0.12, 0.055, 0.039) inside its "
                       f"rounding intervals: at (lr, seed) {every or 'none of the grid'}; counted by the same rule (new "
                       "rows i in [L0, L), strict argmax at key 0, ties fail), so a difference is the fit's, not the "
                       "count's")
    if r.min_norm_asked:
        details.append("min-norm selection (finding), alpha_L at L = %s: " % r.in_table
                       + "; ".join(f"{c} {v}" for c, v in r.min_norm.items()))
    return details


def _describe_prop4(r: Prop4Result):
    """The Evidence of :func:`check_prop4` from what it measured."""
    table, in_table, beyond, rel, ra = r.table, r.in_table, r.beyond, r.rel, r.rope_af
    ca, cp = table["clamped-absolute/attend-first"], table["clamped-absolute/prev"]
    bad = _prop4_problems(r)
    figures = _prop4_figures(r)
    details = _prop4_details(r)
    return _ev(status=Status.CONSISTENT, outcome=Outcome.FAILS if bad else Outcome.HOLDS, seed=r.seed, figures=figures,
               numbers={"min_norm": r.min_norm, "L0": r.L0, "L": list(r.Ls), "table_lengths": in_table,
                        "beyond_table": beyond, "table": table,
                        "problems": bad, "sensitivity": r.sens, "fitted_extrapolation": r.extrap,
                        "tie_control": {k: v for k, v in r.tie.items() if k != "problems"},
                        "fit_settings": r.fits["rope/prev"].settings},
               tolerance="alpha_L exact counts of rows (strict argmax, a tie fails; rows within the stated float64 "
                         "rounding bound of a tie re-decided exactly for rational families, by interval arithmetic for "
                         "trigonometric ones); 'decays' = non-increasing in L and lower at the largest L",
               summary=(f"L0 = {r.L0}, table L = {in_table}: relative prev/skip-{r.K} alpha = "
                        f"{min(table[c]['alpha'][L] for c in rel for L in in_table) if in_table else '-'}; clamped "
                        f"attend-first {min(ca['alpha'].values())}, prev {max(cp['alpha'].values())} (target tied on "
                        f"every new row); free relative attend-first "
                        f"{max(table['free-relative/attend-first']['alpha'].values())}; RoPE attend-first {ra}"
                        + (f"; beyond the table (L = {beyond}) reported as findings" if beyond else "")
                        + ("" if not bad else "; problems: " + "; ".join(bad))),
               details=details)


# ----------------------------------------------------------------------------- the learning-rate rule

LR_RULE = ("the learning rate of the cross-entropy fit is the one of the fixed grid LR_GRID that reproduces the most "
           "of the ten in-sample printed figures the fit affects (those at L <= 60, LR_FIT_MAX_L: RoPE attend-first "
           "alpha_30/40/60 = 0.80/0.40/0.20, sinusoidal prev alpha_60 = 0.45, Prop. 2 at L = 30: conditional hit rate "
           "0.115, unconditional 0.034, winner among new keys 30%; at L = 60: 0.025, 0.016, 65%), each by its own "
           "stated rule (alpha: ours inside the rounding interval of the printed digits; Monte-Carlo rates: that "
           "interval meets our 95% Wilson interval); ties broken by the smaller sum of normalised errors |ours - paper| "
           "/ paper over the ten, then by the smaller learning rate; seed 0, L0 = 20, 8000 trials at L = 30 and 4000 "
           "at L = 60 over 5 fits. The four held-out figures (RoPE alpha_128/256/512 = 0.12/0.055/0.039, sinusoidal "
           "alpha_128 = 0.34) are scored at the chosen rate, never used to choose it. (Until 2026-12-06 the rule chose "
           "on all fourteen; the split was declared before this rule was rerun on it.)")


def lr_figures(lr: float, seed: int = 0, trials: int = 8000, fits: int = 5, L0: int = 20) -> list[Figure]:
    """Every printed figure the cross-entropy fit affects, at learning rate ``lr``, built by the functions the
    claims use: RoPE attend-first alpha_L at the six table lengths, sinusoidal prev alpha_60 and alpha_128, and
    Prop. 2's three fit-dependent rates at L = 30 and 60 (``trials`` at 30, trials x 30 / 60 at 60, as the claim)."""
    kw: dict[str, Any] = {"lr": lr}
    fr = eng.fit(get_family("rope"), get_task("attend-first"), L0, seed, **kw)
    figs = rope_af_figures({L: eng.transfer(fr, L) for L in ROPE_AF_PUBLISHED})
    fs = eng.fit(get_family("sinusoidal"), get_task("prev"), L0, seed, **kw)
    figs += [sin_prev_figure(L, eng.transfer(fs, L)) for L in SIN_PREV_PUBLISHED]
    for L in PROP2_PUBLISHED:
        r = prop2_mc(L, L0, trials if L == PROP2_PUBLISHED_L else max(fits, trials * PROP2_PUBLISHED_L // L), seed,
                     fits, kw)
        figs += [f for f in prop2_figures(r) if "chance" not in f.figure]
    return figs


@eng.single_threaded
def lr_selection_table(grid: Sequence[float] = eng.LR_GRID, seed: int = 0, trials: int = 8000, fits: int = 5,
                       L0: int = 20) -> dict:
    """Score every learning rate of ``grid`` against the in-sample printed figures the fit affects, jointly
    (:data:`LR_RULE`, :func:`lr_figures`), and report the held-out ones beside them.  Cost: ~2 s per learning rate
    (two fits, transfers, two Monte Carlos).

    Returns:
        {"rule": LR_RULE, "rows": [{"lr", "reproduced", "n", "error", "held_out_reproduced", "held_out_n",
        "figures": [...]}], "chosen": lr, "held_out_at_chosen": "k/n"}.
    """
    rows: list[dict[str, Any]] = []
    for lr in grid:
        figs = lr_figures(lr, seed, trials, fits, L0)
        ins = [f for f in figs if f.column == "in-sample"]
        out = [f for f in figs if f.column == "held-out"]
        rows.append({"lr": lr, "reproduced": sum(f.reproduced for f in ins), "n": len(ins),
                     "error": round(sum(figure_error(f) for f in ins), 4),
                     "held_out_reproduced": sum(f.reproduced for f in out), "held_out_n": len(out),
                     "figures": [f.to_dict() for f in figs]})
    best = sorted(rows, key=lambda x: (-x["reproduced"], x["error"], x["lr"]))[0]
    return {"rule": LR_RULE, "rows": rows, "chosen": best["lr"],
            "held_out_at_chosen": f"{best['held_out_reproduced']}/{best['held_out_n']}"}


__all__ = ["prop2_mc", "check_prop2", "sin_offset_W", "alpha_fixed", "fit_sensitivity", "check_prop3",
           "check_prop4", "in_ci", "exact_alpha", "printed_alpha", "printed_value", "not_computed", "rounding_interval",
           "figure_error", "prop2_figures", "sin_prev_figure", "rope_af_figures", "rope_af_every_printed", "passing_runs",
           "lr_figures", "lr_selection_table", "clamped_tie_control", "LR_RULE", "ROPE_AF_PUBLISHED", "LR_FIT_MAX_L",
           "fit_column",
           "PROP4_TABLE_LENGTHS", "PROP2_PUBLISHED", "SIN_PREV_PUBLISHED"]
