"""Benchmark of `verify head` (issue 22): the certified attention pattern of one head, per model, each time as a ratio
to the fixed reference workload of bench_all.py timed in the same run.

    python benchmarks/bench_head.py [--json FILE]

Per case, in a fresh process: the whole command (``command_s``: start-up, imports, building or reading the model,
the cross-check, the balls) and, inside the process, the balls alone (``balls_s``: ``head_bounds.bound_head`` on the
extracted head and prompts) with the row count; then the certificate's checks (issue 41): ``recheck_s``, the Python
re-check of the certificate with its kernel section (``head_bounds.recheck``: the balls re-derived from the file),
and ``kernel_s``, the Coq check of the same rows (``verify head --kernel``'s step: the tables chosen, the file written
and compiled; HeadSoftmax compiled beforehand, once per Coq version, not counted), with ``kernel_over_recheck``.
The trained model is read from a lab cache in a temporary
directory that the first case fills (its training time is reported as ``train_s`` and not counted in the others).
Results go to benchmarks/results/bench_head-<date>.json unless --json says otherwise.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(__file__))
from bench_all import BYTECODE_NOTE, precompile, reference_workload  # noqa: E402

#: (model, layer, head, pattern, extra options)
CASES = (
    ("trained:ws24-rpe", 0, 0, "prev", ["--criterion", "argmax", "--fraction", "1/2", "--rows", "1:63"]),
    ("trained:ws24-rpe", 1, 0, "induction", []),
    ("hf:gpt2", 0, 1, "prev", []),
    ("hf:llama", 1, 0, "induction", []),
)

CHILD = r"""
import json, sys, time
from fractions import Fraction
from verify.numeric import heads, head_bounds as hb
spec, layer, head, pattern = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
ex = heads.extract(spec, layer, head, pattern, None, n=4, length=64, seed=0)
t = time.perf_counter()
b = hb.bound_head(ex.program, ex.prompts, Fraction(1, 2))
out = {"balls_s": round(time.perf_counter() - t, 4), "rows": b.counts()["rows"]}
import shutil
if shutil.which("coqc"):
    from verify.frontends.head_cli import kernel_rows
    from verify.kernel import head_replay as hr
    crit = "argmax" if "--criterion" in sys.argv[5:] else "mass"
    frac = Fraction(sys.argv[sys.argv.index("--fraction") + 1]) if "--fraction" in sys.argv else Fraction(1)
    b = hb.bound_head(ex.program, ex.prompts, Fraction(1, 2), enclose=hr.BITS)
    rows = kernel_rows(b, crit)
    hr.trust(hr.coq_version())  # HeadSoftmax compiled once, not counted
    t = time.perf_counter()
    tb, stated, missed = hr.choose(rows, Fraction(1, 2))
    res = hr.check(tb, stated, Fraction(1, 2))
    out["kernel_s"] = round(time.perf_counter() - t, 4)
    out["kernel"] = {"status": res.status, "rows": len(stated), "not_checked": len(missed), "step": f"2^-{tb['G']}"}
    meta = {"model": {"model": spec}, "layer": layer, "head": head, "pattern": pattern, "seed": 0, "inputs": "",
            "statement": hb.statement(pattern, crit, Fraction(1, 2), frac), "rows_filter": None}
    doc = json.loads(json.dumps(hb.certificate(ex.program, ex.prompts, b, tau=Fraction(1, 2), fraction=frac,
                                               criterion=crit, meta=meta)))
    doc["kernel"] = {"bits": hr.BITS, "rows": [r.to_json() for r, _ in stated]}
    t = time.perf_counter()
    ok, why = hb.recheck(doc)
    out["recheck_s"] = round(time.perf_counter() - t, 4)
    assert ok, why
    out["kernel_over_recheck"] = round(out["kernel_s"] / out["recheck_s"], 1)
print(json.dumps(out))
"""


def _run(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    t = time.perf_counter()
    out = subprocess.run(args, capture_output=True, text=True, env=env)
    return time.perf_counter() - t, out.stdout


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", default=None)
    a = ap.parse_args(argv)
    precompile()
    ref = reference_workload()
    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "XDG_CACHE_HOME": cache, "OMP_NUM_THREADS": "1"}
        t, _ = _run([sys.executable, "-c", "from verify.numeric import heads; heads.extract('trained:ws24-rpe', 0, 0, "
                     "'prev', None, n=1, length=8, seed=0)"], env)
        train_s = round(t, 2)
        for spec, layer, head, pattern, extra in CASES:
            cmd_s, out = _run([sys.executable, "-m", "verify", "head", "--model", spec, "--layer", str(layer), "--head",
                               str(head), "--pattern", pattern, *extra, "--format", "json"], env)
            report = json.loads(out)
            _, inner = _run([sys.executable, "-c", CHILD, spec, str(layer), str(head), pattern, *extra], env)
            balls = json.loads(inner)
            rows.append({"model": spec, "layer": layer, "head": head, "pattern": pattern, "options": " ".join(extra),
                         "verdict": report["verdict"], "counts": report["counts"], "inputs": report["inputs"],
                         "command_s": round(cmd_s, 3), "command_ratio": round(cmd_s / ref, 2), **balls,
                         "balls_ratio": round(balls["balls_s"] / ref, 2)})
            print(json.dumps(rows[-1]), flush=True)
    doc = {"reference_s": round(ref, 4), "bytecode": BYTECODE_NOTE, "cores": os.cpu_count(), "train_s_ws24_rpe_seed0": train_s,
           "command_s_is": "python -m verify head ... in a fresh process (start-up, imports, model, cross-check, balls)",
           "balls_s_is": "head_bounds.bound_head alone on 4 prompts of 64 tokens (the command's defaults)",
           "recheck_s_is": "head_bounds.recheck of the certificate with its kernel section (arb re-derivation)",
           "kernel_s_is": "the decided rows checked in Coq (tables chosen, file written, coqc), HeadSoftmax precompiled",
           "rows": rows}
    path = a.json or os.path.join(os.path.dirname(__file__), "results",
                                  f"bench_head-{datetime.date.today().isoformat()}.json")
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
