"""Benchmark: wall time of each layer of ws24:theorem2 and ws24:eq14.

Fixed sizes, one run each (the numeric layer's one-step protocol is cached per
process, so each configuration runs in a fresh process to time it honestly).

    python benchmarks/bench_ws24.py            # table on stdout

Sizes: 'small' (d = 256, V = 16, T = 8, N = 64, Vmax = 4) is the baseline; 'default'
is the claims' defaults (d = 1024, V = 64, T = 32, N = 1024; Vmax 8 for theorem2 and
6 for eq14), i.e. the paper's scale.  The last column is the ratio to the baseline.
"""

from __future__ import annotations

import json
import subprocess
import sys

CONFIGS = {
    "small": ["--d", "256", "--V", "16", "--T", "8", "--N", "64", "--Vmax", "4"],
    "default": [],
}
CLAIMS = [(c, o) for c in ("ws24:theorem2", "ws24:eq14") for o in ("as-written", "transposed", "read-score")]


def run(claim: str, orientation: str, extra: list[str]) -> dict[str, float]:
    cmd = [sys.executable, "-m", "verify", claim, "--orientation", orientation, "--format", "json", "--quiet", *extra]
    out = subprocess.run(cmd, capture_output=True, text=True, check=False).stdout
    res = json.loads(out)["results"][0]
    return {k: v["wall_time_s"] for k, v in res["layers"].items()} | {"verdict": res["verdict"]}


def main() -> None:
    rows = []
    base: dict[tuple[str, str], float] = {}
    for name, extra in CONFIGS.items():
        for claim, orientation in CLAIMS:
            t = run(claim, orientation, extra)
            total = t["symbolic"] + t["solver"] + t["numeric"]
            if name == "small":
                base[(claim, orientation)] = total
            ratio = total / base[(claim, orientation)] if base.get((claim, orientation)) else float("nan")
            rows.append((f"{claim}[{orientation}]", name, t["symbolic"], t["solver"], t["numeric"], total, ratio, t["verdict"]))
    print(f"{'claim':<28} {'sizes':<8} {'symbolic':>9} {'solver':>8} {'numeric':>8} {'total':>8} {'x small':>8}  verdict")
    for r in rows:
        print(f"{r[0]:<28} {r[1]:<8} {r[2]:>8.2f}s {r[3]:>7.2f}s {r[4]:>7.2f}s {r[5]:>7.2f}s {r[6]:>8.1f}  {r[7]}")


if __name__ == "__main__":
    main()
