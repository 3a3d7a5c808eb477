"""Regenerate tests/golden/verify_all_results.json, the default run that tests/core/test_golden.py holds every change to.

    python tests/golden/regenerate.py

Runs ``verify all --jobs 1 --format json --no-timings`` in a fresh interpreter (torch on one thread, the built-in
papers only: an installed claim pack is not pinned) and writes each result whole, keyed by run id.  It refuses to
write when a verdict differs from its recorded expectation (exit code != 0: fix that first).  Regenerate only when
a change of output is intended, and say in the commit what changed and why; ``git diff`` of the file shows it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "verify_all_results.json"
COMMAND = ["all", "--jobs", "1", "--format", "json", "--no-timings", "--quiet"]


def main() -> int:
    from verify.core.registry import builtin_keys

    run = subprocess.run([sys.executable, "-m", "verify", *COMMAND], capture_output=True, text=True, check=False)
    if run.returncode != 0:
        sys.stderr.write(run.stderr[-4000:])
        sys.stderr.write(f"verify {' '.join(COMMAND)} exited {run.returncode}; golden file not written\n")
        return 1
    doc = json.loads(run.stdout)
    results = {r["run_id"]: r for r in doc["results"] if r["paper"] in builtin_keys()}
    GOLDEN.write_text(json.dumps({
        "about": ("every built-in result of 'verify " + " ".join(COMMAND[:-1]) + "', whole; tests/test_golden.py "
                  "compares a fresh run with it field by field (the rules are in its docstring). Regenerate with "
                  "'python tests/golden/regenerate.py' only when a change of output is intended, and say why"),
        "tool_version": doc["tool_version"],
        "results": results,
    }, indent=1, sort_keys=True) + "\n")
    print(f"wrote {GOLDEN} ({len(results)} results)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
