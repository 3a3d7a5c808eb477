"""Benchmark for ``verify realizable``, pr26:prop1's solver layer and the designer's question (issue 25).

    python benchmarks/bench_realizable.py [--quick] [--json FILE]

Every time is also printed as a ratio to the fixed single-thread reference workload of
benchmarks/bench_all.py, timed in the same run (the unit of every ratio), with the peak resident
memory of this process (ru_maxrss) after each row.  Rows:

* realizable, features [1, i, i^2] on prev, N = 64 .. 131072 as the work budget allows (cutting
  planes, one exact decision at N by the block identity); the full LP (every row to z3) at the sizes
  it still runs, as the reference path;
* realizable, features [1, i] on prev (not realizable from L = 3, with a Farkas certificate);
* realizable, relative features cos/sin(d/4), cos/sin(d/64) on each of the five tasks up to 4096;
* pr26:prop1's solver layer at N = 64 .. 131072;
* ``verify alpha --tasks all --up-to 4096`` with those relative features (one command).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_all import reference_workload  # noqa: E402

REL = "cos(d/4), sin(d/4), cos(d/64), sin(d/64)"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _time(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="stop at 4096 and skip the designer command")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    from verify.constructions.pe import FAMILIES
    from verify.proofs.pr26 import alpha as A
    from verify.solver import pr26 as sol

    ref = statistics.median(reference_workload() for _ in range(3))
    print(f"reference workload: {ref:.3f} s (the unit of every ratio)")
    rows: list[dict] = []

    def row(what: str, secs: float, answer: object) -> None:
        rows.append({"what": what, "seconds": round(secs, 3), "ratio": round(secs / ref, 1), "answer": str(answer),
                     "peak_mib": round(_peak_mib(), 1)})
        print(f"{what:<70} {secs:8.2f} s {secs / ref:7.1f} x  {str(answer):<14} peak {_peak_mib():7.1f} MiB",
              flush=True)

    top = 4096 if a.quick else 131072
    N = 64
    from verify.core.model import InputError

    while N <= top:
        try:
            secs, res = _time(lambda: A.realizable(features="1, i, i**2", task="prev", L=N, margin=1))
        except InputError as e:
            print(f"realizable [1, i, i^2] prev N = {N}: refused before any work ({e})")
            break
        row(f"realizable [1, i, i^2] prev N = {N} (cutting planes)", secs, res.realizable)
        if N <= 128:
            secs, res = _time(lambda: A.realizable(features="1, i, i**2", task="prev", L=N, margin=1, method="full"))
            row(f"realizable [1, i, i^2] prev N = {N} (full LP, the reference path)", secs, res.realizable)
        if secs > 120:
            break
        N *= 4
    secs, res = _time(lambda: A.realizable(features="1, i", task="prev", L=4096))
    row("realizable [1, i] prev N = 4096", secs, f"first bad {res.doc['first_unrealizable_length']}")
    for task in ("prev", "skip-3", "attend-first", "copy", "reverse"):
        secs, res = _time(lambda: A.realizable(features=REL, task=task, L=4096))
        row(f"realizable cos/sin(d/4, d/64) {task} N = 4096", secs,
            res.realizable if res.realizable else f"first bad {res.doc['first_unrealizable_length']}")
    for N in (64, 4096) if a.quick else (64, 4096, 131072):
        secs, ev = _time(lambda: sol.check_prop1(FAMILIES["affine"], N))
        row(f"pr26:prop1 solver layer N = {N}", secs, ev.status)
    if not a.quick:
        secs, evs = _time(lambda: list(A.designer(features=REL, up_to=4096)))
        row("verify alpha --pe-features REL --tasks all --up-to 4096 (designer)", secs,
            "; ".join(f"{e['task']}: {e['selection_up_to']}/{e['existence_up_to']}" for e in evs
                      if e["event"] == "task"))
    if a.json:
        Path(a.json).write_text(json.dumps({"reference_s": round(ref, 4), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
