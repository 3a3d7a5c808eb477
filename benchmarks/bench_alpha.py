"""Benchmark of `verify alpha` at long lengths (pr26 alpha_L, issue 25): the streaming engine from L = 64
to 131072, each time as a ratio to the fixed reference workload of bench_all.py timed in the same run.

    python benchmarks/bench_alpha.py [--json FILE] [--quick]

Per (PE, task, L): ``verify.api.alpha`` in a fresh process (so the feature tables and the fit memo of another
length do not help it; torch on one thread), measured inside that process from the call to the result
(``alpha_s``: fit at L0 = 20, decisions, target mass, kernel summary) and as the whole command
(``command_s``: Python start-up and imports included), and the process's peak resident memory
(``maxrss_mib``, resource.getrusage).  The old dense path (every row materialised) is timed where it
finishes in reasonable time (``dense_alpha_s``), and its alpha_L and margins compared with the fast path's.
Results go to benchmarks/results/bench_alpha-<date>.json unless --json says otherwise.

Targets (issue 25): rope/prev, L0 = 20: L = 17665 <= 1x the reference, L = 131072 <= 2x.  On a shared
machine one ratio swings with the load, so at the target lengths the row also holds ``paired_ratios``:
--repeat runs of (reference workload, then the child), each ratio from its own pair, and their median.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
from bench_all import BYTECODE_NOTE, ISSUE_UNIT_IS, issue_unit, precompile, reference_workload, run_child  # noqa: E402

LENGTHS = (64, 512, 4096, 17665, 65536, 131072)
CASES = (("rope", "prev"), ("alibi", "attend-first"), ("sinusoidal", "prev"))
#: the dense path is timed up to this length (it holds chunk x L logits and is O(L^2))
DENSE_MAX_L = 17665
#: absolute heads are O(L^2 r): timed up to this length
ABSOLUTE_MAX_L = 17665

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--json", help="write the measurements here (default benchmarks/results/bench_alpha-<date>.json)")
    ap.add_argument("--quick", action="store_true", help="rope/prev only")
    ap.add_argument("--repeat", type=int, default=5, help="paired (reference, child) runs at the target lengths")
    a = ap.parse_args(argv)
    precompile()
    ref = statistics.median(reference_workload() for _ in range(3))
    print(f"reference workload: {ref:.3f} s (the unit of every ratio)")
    unit = issue_unit()
    print(f"calibration unit: {unit:.3f} s (issue_ratio)")
    rows = []
    cases = CASES[:1] if a.quick else CASES
    print(f"{'pe':<11} {'task':<13} {'L':>7} {'alpha':>8} {'alpha s':>8} {'ratio':>6} {'cmd s':>6} {'cmd ratio':>9} "
          f"{'MiB':>6} {'dense s':>8} {'same':>5}")
    for pe_, task in cases:
        for L in LENGTHS:
            if pe_ == "sinusoidal" and L > ABSOLUTE_MAX_L:
                continue
            d = run_child(pe_, task, L)
            row = {"pe": pe_, "task": task, "L0": 20, "L": L, **{k: round(v, 4) if isinstance(v, float) else v
                                                                for k, v in d.items()},
                   "alpha_ratio": round(d["alpha_s"] / ref, 2), "command_ratio": round(d["command_s"] / ref, 2),
                   "alpha_issue_ratio": round(d["alpha_s"] / unit, 3)}
            if (pe_, task) == ("rope", "prev") and L in (17665, 131072) and a.repeat > 0:
                pairs = []
                for _ in range(a.repeat):
                    r_ = reference_workload()
                    pairs.append(round(run_child(pe_, task, L)["alpha_s"] / r_, 2))
                row["paired_ratios"] = pairs
                row["paired_ratio_median"] = statistics.median(pairs)
            if L <= DENSE_MAX_L:
                o = run_child(pe_, task, L, dense=True)
                row["dense_alpha_s"] = round(o["alpha_s"], 4)
                row["dense_alpha_ratio"] = round(o["alpha_s"] / ref, 2)
                row["dense_maxrss_mib"] = round(o["maxrss_mib"], 1)
                row["same_as_dense"] = (o["alpha"] == d["alpha"] and o["min_margin"] == d["min_margin"]
                                        and o["g0"] == d["g0"]
                                        and abs(o["mass_min"] - d["mass_min"]) <= 1e-12 * max(1.0, o["mass_min"]))
            rows.append(row)
            print(f"{pe_:<11} {task:<13} {L:>7} {d['alpha']:>8.4f} {d['alpha_s']:>8.3f} {row['alpha_ratio']:>6} "
                  f"{d['command_s']:>6.2f} {row['command_ratio']:>9} {d['maxrss_mib']:>6.0f} "
                  f"{row.get('dense_alpha_s', '-'):>8} {str(row.get('same_as_dense', '-')):>5}", flush=True)
    doc = {"reference_s": round(ref, 4), "issue_unit_s": round(unit, 4), "issue_unit_is": ISSUE_UNIT_IS,
           "bytecode": BYTECODE_NOTE, "cores": os.cpu_count(),
           "alpha_s_is": "verify.api.alpha in a fresh process, from the call to the result (fit at L0 = 20 included)",
           "command_s_is": "the same process from start (Python start-up and imports included)",
           "maxrss_is": "peak resident memory of that process (resource.getrusage ru_maxrss), torch included",
           "targets": {"rope prev L=17665": "alpha_s <= 1x reference", "rope prev L=131072": "alpha_s <= 2x reference"},
           "paired_ratios_are": "at the target lengths: --repeat pairs of (reference workload, the child's alpha_s), "
                                "each ratio from its own pair; paired_ratio_median their median",
           "rows": rows}
    path = a.json or os.path.join(os.path.dirname(__file__), "results",
                                  f"bench_alpha-{datetime.date.today().isoformat()}.json")
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2)
    print(f"written to {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
