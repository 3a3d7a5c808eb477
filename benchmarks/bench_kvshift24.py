"""Benchmark for kvshift24 (arXiv 2411.19574 v2): each layer of Theorem 2 at its defaults,
the numeric sweep at L = 4096, d = 1024 (target <= 60 s), KVSA without ALiBi, Theorem 1 under both
key-range readings (Appendix A as displayed, standard causal) and Theorem 3.

Run:  python benchmarks/bench_kvshift24.py
"""

from __future__ import annotations

import time
from fractions import Fraction

from verify.constructions.kvshift24 import variant
from verify.core import registry
from verify.core.model import run_claim
from verify.evidence import Context


def _time(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main() -> None:
    from verify.numeric import kvshift24 as num
    from verify.solver import kvshift24 as sol
    from verify.symbolic import kvshift24 as sym

    rows = []
    m, sigma = Fraction(1, 2), Fraction(2)
    for fix in ("none", "mask", "mask+scale"):
        v = variant(fix)
        for name, fn in (("symbolic", lambda: sym.check_theorem2(v, m, sigma)),
                         ("solver (L <= 12)", lambda: sol.check_theorem2(v, m, sigma, 12)),
                         ("numeric (L <= 256, d = 64)", lambda: num.check_theorem2(v, m, sigma, 256, 64, 0))):
            t, ev = _time(fn)
            rows.append((f"theorem2[{fix}] {name}", t, f"{ev.status}/{ev.outcome}"))
    c = registry.get("kvshift24:theorem2")
    t, r = _time(lambda: run_claim(c, c.parse_params({}), Context(seed=0)))
    rows.append(("verify kvshift24:theorem2 (default, all layers)", t, r.verdict))
    t, g = _time(lambda: num.sweep(variant("none"), 4096, 1024, 4, 64, 0))
    rows.append((f"numeric sweep L = 4096, d = 1024, {len(g)} (m, sigma) cells", t, f"max err {max(g.values()):.3g}"))
    t, g = _time(lambda: num.sweep(variant("mask+scale"), 4096, 1024, 4, 64, 0))
    rows.append(("numeric sweep L = 4096, d = 1024 [mask+scale]", t, f"max err {max(g.values()):.3g}"))
    for cid, raw in (("kvshift24:theorem1", {"masks": "as-displayed"}), ("kvshift24:theorem1", {"masks": "causal"}),
                     ("kvshift24:theorem3", {})):
        c = registry.get(cid)
        t, r = _time(lambda: run_claim(c, c.parse_params(raw), Context(seed=0)))
        rows.append((f"{r.display_id} (default)", t, r.verdict))
    c = registry.get("kvshift24:theorem2")
    t, r = _time(lambda: run_claim(c, c.parse_params({"fix": "mask+scale", "alibi": "no"}), Context(seed=0)))
    rows.append(("kvshift24:theorem2[mask+scale] --alibi no", t, r.verdict))
    t, ev = _time(lambda: num.check_theorem3(16, (4096,), 128, 0))
    rows.append(("theorem3 numeric at d = 4096 (full)", t, ev.outcome))
    w = max(len(r[0]) for r in rows)
    print(f"{'check':<{w}}  {'seconds':>8}  result")
    print("-" * (w + 30))
    for name, t, res in rows:
        print(f"{name:<{w}}  {t:8.2f}  {res}")


if __name__ == "__main__":
    main()
