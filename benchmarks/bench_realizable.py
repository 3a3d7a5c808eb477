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
* the designer's question, ``verify alpha --pe-features REL --tasks all --up-to 4096`` (REL the relative
  features above), measured two ways (also with --quick): ``designer_s``, the API call
  ``verify.proofs.pr26.alpha.designer`` in a fresh process from the call to its last event (torch and the
  package imported before the clock starts, as ``alpha_s`` in bench_alpha.py; the lazy imports inside the call,
  sympy's, highspy's and z3's, counted), and ``command_s``, the whole command in a fresh process (Python start-up and
  every import included), with the estimate the command printed before any work.

Results go to benchmarks/results/bench_realizable-<date>.json unless --json says otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_all import BYTECODE_NOTE, ISSUE_UNIT_IS, issue_unit, precompile, reference_workload  # noqa: E402

REL = "cos(d/4), sin(d/4), cos(d/64), sin(d/64)"


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


DESIGNER_CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from verify.proofs.pr26 import alpha as A
t1, c1 = time.perf_counter(), time.process_time()
evs = list(A.designer(features=sys.argv[1], up_to=int(sys.argv[2])))
t2, c2 = time.perf_counter(), time.process_time()
print(json.dumps({"designer_s": t2 - t1, "designer_cpu_s": c2 - c1,
                  "answers": {e["task"]: [e["selection_up_to"], e["existence_up_to"]]
                                                     for e in evs if e["event"] == "task"}}))
"""


PARTS_CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads(1)
from verify.proofs.pr26 import alpha as A
from verify.solver import realizable as R
t0 = time.perf_counter()
spec = A.resolve_pe(features=sys.argv[1], max_positions=int(sys.argv[2]))
t1 = time.perf_counter()
R.feature_table(spec.family, 20, int(sys.argv[2]))
t2 = time.perf_counter()
from highspy import _core  # noqa: F401
t3 = time.perf_counter()
print(json.dumps({"parse_and_check_s": t1 - t0, "exact_feature_table_s": t2 - t1, "lp_solver_import_s": t3 - t2}))
"""


def designer_parts(up_to: int = 4096) -> dict:
    """Three parts of the designer's call, each in a fresh process as there: resolving the expressions (the sympy
    import, the parse, the finite and cross checks), the exact feature table of up_to offsets (the solver module,
    with z3, imported before its clock), importing the LP solver's binding (highspy)."""
    out = subprocess.run([sys.executable, "-c", PARTS_CHILD, REL, str(up_to)], capture_output=True, text=True,
                         check=True)
    return {k: round(v, 3) for k, v in json.loads(out.stdout.strip().splitlines()[-1]).items()}


def designer_timing(up_to: int = 4096, repeat: int = 3) -> dict:
    """The designer's question timed as the in-process call (fresh process) and as the command, each the median
    of ``repeat`` fresh processes (the call's CPU seconds too: on a loaded machine the wall clock waits for a core)."""
    docs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", DESIGNER_CHILD, REL, str(up_to)], capture_output=True, text=True,
                             check=True)
        docs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    doc = dict(docs[0])
    doc["designer_s"] = statistics.median(d["designer_s"] for d in docs)
    doc["designer_cpu_s"] = statistics.median(d["designer_cpu_s"] for d in docs)
    verify = shutil.which("verify") or "verify"
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        cmd = subprocess.run([verify, "alpha", "--pe-features", REL, "--tasks", "all", "--up-to", str(up_to)],
                             capture_output=True, text=True)
        times.append(time.perf_counter() - t0)
    doc["command_s"] = statistics.median(times)
    doc["command_rc"] = cmd.returncode
    est = re.search(r"^estimated ~([0-9.e+]+) s", cmd.stdout, re.M)
    doc["estimate_s"] = float(est.group(1)) if est else None
    return doc


def _cpu(fn) -> float:
    """CPU seconds of ``fn()`` in this process."""
    c = time.process_time()
    fn()
    return time.process_time() - c


def _time(fn) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="stop at 4096")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    from verify.constructions.pe import FAMILIES
    from verify.proofs.pr26 import alpha as A
    from verify.solver import pr26 as sol

    precompile()
    ref = statistics.median(reference_workload() for _ in range(3))
    print(f"reference workload: {ref:.3f} s (the unit of every ratio)")
    unit = issue_unit()
    print(f"calibration unit: {unit:.3f} s (issue_ratio)")
    rows: list[dict] = []

    def row(what: str, secs: float, answer: object, key: str = "") -> None:
        rows.append({"id": key, "what": what, "seconds": round(secs, 3), "ratio": round(secs / ref, 1),
                     "issue_ratio": round(secs / unit, 2), "answer": str(answer), "peak_mib": round(_peak_mib(), 1)})
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
        row(f"realizable [1, i, i^2] prev N = {N} (cutting planes)", secs, res.realizable, f"quadratic-prev-{N}")
        if N <= 128:
            secs, res = _time(lambda: A.realizable(features="1, i, i**2", task="prev", L=N, margin=1, method="full"))
            row(f"realizable [1, i, i^2] prev N = {N} (full LP, the reference path)", secs, res.realizable,
                f"quadratic-prev-{N}-full-lp")
        if secs > 120:
            break
        N *= 4
    secs, res = _time(lambda: A.realizable(features="1, i", task="prev", L=4096))
    row("realizable [1, i] prev N = 4096", secs, f"first bad {res.doc['first_unrealizable_length']}", "affine-prev-4096")
    for task in ("prev", "skip-3", "attend-first", "copy", "reverse"):
        secs, res = _time(lambda: A.realizable(features=REL, task=task, L=4096))
        row(f"realizable cos/sin(d/4, d/64) {task} N = 4096", secs,
            res.realizable if res.realizable else f"first bad {res.doc['first_unrealizable_length']}",
            f"rel-{task}-4096")
    for N in (64, 4096) if a.quick else (64, 4096, 131072):
        secs, ev = _time(lambda: sol.check_prop1(FAMILIES["affine"], N))
        row(f"pr26:prop1 solver layer N = {N}", secs, ev.status, f"prop1-solver-{N}")
    d = designer_timing(4096)
    answers = "; ".join(f"{t}: {s_}/{e_}" for t, (s_, e_) in d["answers"].items())
    row("designer (verify.proofs.pr26.alpha.designer, REL, all tasks, up to 4096; fresh process, the call)",
        d["designer_s"], answers, "designer-call")
    row("designer command (verify alpha --pe-features REL --tasks all --up-to 4096; start-up and imports)",
        d["command_s"], f"rc {d['command_rc']}, estimated {d['estimate_s']} s", "designer-command")
    ref_cpu = statistics.median(_cpu(reference_workload) for _ in range(3))
    designer = {"designer_s": round(d["designer_s"], 3), "designer_ratio": round(d["designer_s"] / ref, 1),
                "designer_cpu_s": round(d["designer_cpu_s"], 3), "reference_cpu_s": round(ref_cpu, 4),
                "designer_cpu_ratio": round(d["designer_cpu_s"] / ref_cpu, 1),
                "command_s": round(d["command_s"], 3), "command_ratio": round(d["command_s"] / ref, 1),
                "designer_issue_ratio": round(d["designer_s"] / unit, 2),
                "command_issue_ratio": round(d["command_s"] / unit, 2),
                "estimate_s": d["estimate_s"], "answers": d["answers"],
                "designer_s_is": "verify.proofs.pr26.alpha.designer(features=REL, up_to=4096) in a fresh process, "
                                 "from the call to its last event (torch and the package imported before the clock); "
                                 "the median of 3 processes, wall and CPU seconds",
                "command_s_is": "verify alpha --pe-features REL --tasks all --up-to 4096 as a command (start-up and "
                                "every import included)",
                "target": "within 10x the reference for relative families (issue 25)",
                "parts_of_the_call": designer_parts(4096)}
    print(f"designer parts (fresh process): {designer['parts_of_the_call']}")
    path = a.json or str(Path(__file__).resolve().parent / "results"
                         / f"bench_realizable-{datetime.date.today().isoformat()}.json")
    Path(path).write_text(json.dumps({"reference_s": round(ref, 4), "issue_unit_s": round(unit, 4),
                                      "issue_unit_is": ISSUE_UNIT_IS, "bytecode": BYTECODE_NOTE, "rel": REL, "rows": rows,
                                      "designer": designer}, indent=1))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
