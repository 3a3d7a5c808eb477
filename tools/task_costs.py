"""Measure the worker tasks of the default ``verify all`` and write their typical seconds to
``src/verify/pipeline/task_costs.json``, which :func:`verify.pipeline.run.plan_tasks` reads to hand the tasks
out longest first.  Only the order of work depends on the file; no result does.

    python tools/task_costs.py                 # runs `verify all --format json --quiet` three times (medians)
    python tools/task_costs.py --from RUN.json # reads a run's JSON instead (one run)
    python tools/task_costs.py --check         # exit 1 when the file lists other tasks than verify all has

A task is (claim id, layer), or (``group:NAME``, layer) for the claims of one worker group; its cost is the sum
of its variants' ``wall_time_s`` for that layer.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from verify.core import registry  # noqa: E402
from verify.pipeline.run import TASK_COSTS_FILE, task_key  # noqa: E402


def costs_of(run: dict[str, Any]) -> dict[str, float]:
    """Task -> seconds from one ``verify all --format json`` document (skipped layers are not tasks)."""
    out: dict[str, float] = {}
    for r in run["results"]:
        claim = registry.get(r["claim"])
        for layer, ev in r["layers"].items():
            if ev.get("status") == "skipped":
                continue
            key = "|".join(task_key(claim, layer))
            out[key] = out.get(key, 0.0) + float(ev.get("wall_time_s") or 0.0)
    return out


def planned_keys() -> set[str]:
    """The tasks of the default ``verify all`` on the built-in papers (plugins' tasks count as the median)."""
    from verify.evidence import LAYERS
    from verify.pipeline.run import plan_tasks

    planned = [(c, c.parse_params(dict(v))) for key in registry.builtin_keys() for c in registry.paper_claims(key)
               if not c.heavy and not c.missing_requirements() for v in c.variants]
    return {"|".join(k) for k in plan_tasks([(c, p) for c, p in planned if c.checked_layers(LAYERS)], LAYERS,
                                             costs={})}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--from", dest="source", help="a `verify all --format json` output to read instead of running")
    ap.add_argument("--runs", type=int, default=3, help="runs to take the median of (default 3)")
    ap.add_argument("--check", action="store_true", help="only check that the file lists the planned tasks")
    args = ap.parse_args(argv)
    if args.check:
        have = set(json.loads(TASK_COSTS_FILE.read_text())["seconds"])
        want = planned_keys()
        if have != want:
            print(f"{TASK_COSTS_FILE.name}: missing {sorted(want - have)}, stale {sorted(have - want)}; "
                  "rerun python tools/task_costs.py", file=sys.stderr)
            return 1
        print(f"{TASK_COSTS_FILE.name}: the {len(want)} tasks of verify all")
        return 0
    if args.source:
        runs = [json.loads(Path(args.source).read_text())]
    else:
        runs = []
        for _ in range(max(1, args.runs)):
            out = subprocess.run([sys.executable, "-m", "verify", "all", "--format", "json", "--quiet"],
                                 capture_output=True, text=True, check=False)
            if out.returncode not in (0, 1):
                print(out.stderr, file=sys.stderr)
                return 2
            runs.append(json.loads(out.stdout))
    builtin = planned_keys()
    measured = [{k: v for k, v in costs_of(r).items() if k in builtin} for r in runs]
    keys = sorted(set().union(*measured))
    seconds = {k: round(statistics.median(m.get(k, 0.0) for m in measured), 2) for k in keys}
    doc = {"about": "typical seconds per worker task of the default verify all (median of "
                    f"{len(measured)} run(s)); written by tools/task_costs.py; orders the work only",
           "seconds": seconds}
    TASK_COSTS_FILE.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {TASK_COSTS_FILE.relative_to(ROOT)}: {len(seconds)} tasks, {sum(seconds.values()):.1f} s in all")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
