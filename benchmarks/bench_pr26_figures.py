"""Benchmark for pr26's figures : alpha_L at L = 17665 (time, peak memory), the interval
proof, the Prop. 2 Monte Carlo, and the whole pr26 default run.

    python benchmarks/bench_pr26_figures.py [--quick]
    python benchmarks/bench_pr26_figures.py --select-lr [--json FILE]

``--select-lr`` reruns the rule that chose the default learning rate (verify.numeric.pr26.LR;
the rule is verify.numeric.pr26_figures.LR_RULE): every rate of the fixed grid LR_GRID scored on
the ten in-sample printed figures the fit affects (L <= 60), jointly, with the four held-out ones
(L > 60) beside them; prints the table, the chosen rate and its held-out score (~25 s).

Peak memory: torch's allocations are invisible to tracemalloc, so each alpha measurement runs in
a fresh subprocess and reports its peak resident set size (resource.getrusage ru_maxrss); the
baseline row is the same subprocess doing everything but the evaluation (Python + torch + verify).
Targets: alpha_17665 < 60 s and < 4 GB; the whole pr26 default run < 60 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

CHILD = r"""
import json, resource, sys, time
from verify.constructions.pe import get_family
from verify.numeric import pr26_figures as fig
L, chunk, run = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1"
out = {"L": L, "chunk": chunk}
if run:
    t = time.perf_counter()
    r = fig.alpha_fixed(get_family("sinusoidal"), "copy", fig.sin_offset_W(), L, chunk=chunk)
    out.update(seconds=time.perf_counter() - t, alpha=r["alpha"], rows=r["rows"], min_margin=r["min_margin"])
out["maxrss_mib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""


def child(L: int, chunk: int, run: bool) -> dict:
    res = subprocess.run([sys.executable, "-c", CHILD, str(L), str(chunk), "1" if run else "0"],
                         capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def select_lr() -> None:
    from verify.numeric import pr26 as eng
    from verify.numeric import pr26_figures as fig

    t = time.perf_counter()
    res = fig.lr_selection_table()
    print("rule:", res["rule"])
    names = [f["figure"] for f in res["rows"][0]["figures"]]
    print(f"\n{'lr':>6} {'in':>5} {'error':>7} {'out':>5}  " + "  ".join(f"F{i + 1}" for i in range(len(names))))
    for r in res["rows"]:
        marks = "  ".join(("yes" if f["reproduced"] else " no") + f"({f['ours']})" for f in r["figures"])
        print(f"{r['lr']:>6} {r['reproduced']:>2}/{r['n']:<2} {r['error']:7.4f} {r['held_out_reproduced']:>2}/"
              f"{r['held_out_n']:<2}  {marks}")
    print("\n" + "\n".join(f"F{i + 1} = {n} (paper {res['rows'][0]['figures'][i]['paper']}, "
                           f"{res['rows'][0]['figures'][i]['column']})" for i, n in enumerate(names)))
    print(f"held-out at the chosen rate: {res['held_out_at_chosen']}")
    print(f"\nchosen lr = {res['chosen']} (engine default LR = {eng.LR}; "
          f"{'equal' if res['chosen'] == eng.LR else 'DIFFERENT: update verify.numeric.pr26.LR'}); "
          f"{time.perf_counter() - t:.1f} s")
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as fh:
            json.dump(res, fh, indent=2)


def main() -> None:
    if "--select-lr" in sys.argv:
        select_lr()
        return
    quick = "--quick" in sys.argv
    base = child(17665, 512, False)
    print("alpha_L of copy at L = 17665, kernel sin(delta theta_min), sinusoidal W, chunked (fresh process each)")
    print(f"{'chunk':>6} {'alpha':>6} {'rows':>6} {'seconds':>8} {'peak RSS MiB':>13} {'minus baseline':>15}")
    print(f"{'-':>6} {'-':>6} {'-':>6} {'-':>8} {base['maxrss_mib']:13.0f} {'(baseline)':>15}")
    for chunk in ((512,) if quick else (256, 512, 1024, 2048)):
        r = child(17665, chunk, True)
        print(f"{chunk:>6} {r['alpha']:>6} {r['rows']:>6} {r['seconds']:8.2f} {r['maxrss_mib']:13.0f} "
              f"{r['maxrss_mib'] - base['maxrss_mib']:15.0f}")

    from verify.numeric import pr26_figures as fig
    from verify.symbolic import pr26_figures as sf

    print("\nother pieces (this process)")
    print(f"{'piece':<58} {'seconds':>8}")
    t = time.perf_counter()
    sf.sin_maximiser_proof(17665, 8833)
    print(f"{'interval proof, 17664 interval sines (40 digits)':<58} {time.perf_counter() - t:8.2f}")
    t = time.perf_counter()
    fig.check_prop2((30, 60), 20, 8000, 0)
    print(f"{'Prop. 2 Monte Carlo (8000 trials at L=30, 4000 at L=60)':<58} {time.perf_counter() - t:8.2f}")
    t = time.perf_counter()
    fig.check_prop4(20, (30, 40, 60, 128, 256, 512), 3, 0)
    print(f"{'Prop. 4 table + lr band (20 fits, L up to 512)':<58} {time.perf_counter() - t:8.2f}")
    if not quick:
        t = time.perf_counter()
        rc = subprocess.run(["verify", "audit", "pr26"], capture_output=True, text=True).returncode
        print(f"{'verify audit pr26 (all six claims, default run), rc ' + str(rc):<58} {time.perf_counter() - t:8.2f}")


if __name__ == "__main__":
    main()
