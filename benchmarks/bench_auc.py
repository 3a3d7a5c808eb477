"""Benchmark for pr26:auc: the paper-scale grid (7 PE families x 5 tasks x 15 seeds x 5 lengths = 2625
measurements) on a 2-worker local Dask cluster, run twice on one cache directory: the first run trains
every cell (target: within 10 minutes on a 2-core machine), the second reads the trained heads back
from the cache (only the measurements are recomputed).  Prints wall and CPU seconds, the AUC and the
counts, and checks that both runs give the same numbers.

Run:  python benchmarks/bench_auc.py [--reduced] [--jobs N] [--cache-dir DIR] [--scheduler ADDRESS]
(without --cache-dir a fresh temporary directory is used and removed afterwards)
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time


def _cpu() -> float:
    """CPU seconds of this process and its finished children (the Dask workers, once shut down)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _run(args, cache_dir: str) -> tuple[float, float, dict]:
    from verify.numeric import pr26_trained as pt

    seeds = range(pt.DEFAULT_SEEDS if args.reduced else pt.FULL_SEEDS)
    lengths = pt.DEFAULT_LENGTHS if args.reduced else pt.FULL_LENGTHS
    c0, t0 = _cpu(), time.perf_counter()
    ev = pt.check_auc(list(seeds), lengths, cache_dir=cache_dir, scheduler=args.scheduler, jobs=args.jobs,
                      progress=lambda m: print(m, file=sys.stderr, flush=True) if "cells read" in m else None,
                      paper_scale=not args.reduced)
    return time.perf_counter() - t0, _cpu() - c0, ev


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reduced", action="store_true", help="the default reduced grid (3 seeds, 3 lengths)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--scheduler", default="local")
    ap.add_argument("--cache-dir", default=None)
    args = ap.parse_args()
    tmp = None
    cache_dir = args.cache_dir
    if cache_dir is None:
        tmp = cache_dir = tempfile.mkdtemp(prefix="bench-auc-")
    try:
        rows = []
        for label in ("first run (trains)", "second run (cache)"):
            wall, cpu, ev = _run(args, cache_dir)
            rows.append((label, wall, cpu, ev))
            print(f"{label:22s} wall {wall:7.1f} s  cpu {cpu:7.1f} s  {ev.status}/{ev.outcome}  "
                  f"n = {ev.numbers.get('n_measurements')}  AUC = {ev.numbers.get('auc')}", flush=True)
        strip = lambda ev: json.dumps({k: v for k, v in ev.numbers.items() if not k.endswith("seconds")},  # noqa: E731
                                      sort_keys=True, default=str)
        same = strip(rows[0][3]) == strip(rows[1][3])
        print(f"same numbers on both runs: {same}; cores: {os.cpu_count()}; load average: "
              f"{', '.join(f'{x:.1f}' for x in os.getloadavg())}")
        n = rows[0][3].numbers
        print(f"counts: {n['n_generalizing']} generalizing, {n['n_not_generalizing']} not, threshold {n['threshold']}; "
              f"{len(n['disagreements'])} disagreement(s)")
        for d in rows[0][3].details:
            if d.startswith("disagree "):
                print("  " + d)
        if not same:
            raise SystemExit(1)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
