"""Regenerate tests/golden/verify_all_results.json, the default run that tests/core/test_golden.py holds every change to,
and tests/golden/views/*.txt, the text a user reads (the short default view and the full ``-v`` view of a few claims).

    python tests/golden/regenerate.py

Runs ``verify all --jobs 1 --format json --no-timings`` in a fresh interpreter (torch on one thread, the built-in
papers only: an installed claim pack is not pinned) and writes each result whole, keyed by run id; then each command
of :data:`VIEWS` with ``--no-timings --quiet``.  It refuses to write when a verdict differs from its recorded
expectation (exit code != 0: fix that first).  Regenerate only when
a change of output is intended, and say in the commit what changed and why; ``git diff`` of the file shows it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

GOLDEN = Path(__file__).parent / "verify_all_results.json"
COMMAND = ["all", "--jobs", "1", "--format", "json", "--no-timings", "--quiet"]
VIEW_DIR = Path(__file__).parent / "views"
#: file stem -> the claim variant whose text views it holds: STEM.txt the short default view, STEM-verbose.txt the
#: full view (-v)
VIEWS = {
    "ws24-theorem2-transposed": "ws24:theorem2[transposed]",
    "kvshift24-decode-mixed-key": "kvshift24:decode[mixed-key,correct,correct]",
}


def view_text(argv: list[str]) -> tuple[int, str]:
    """The exit code and stdout of ``verify ARGV --no-timings --quiet`` in a fresh interpreter."""
    run = subprocess.run([sys.executable, "-m", "verify", *argv, "--no-timings", "--quiet"], capture_output=True,
                         text=True, check=False)
    return run.returncode, run.stdout


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
    VIEW_DIR.mkdir(exist_ok=True)
    for old in VIEW_DIR.glob("*.txt"):
        old.unlink()
    for stem, run_id in VIEWS.items():
        for suffix, flags in (("", []), ("-verbose", ["-v"])):
            _code, text = view_text([run_id, *flags])
            (VIEW_DIR / f"{stem}{suffix}.txt").write_text(text)
    print(f"wrote {2 * len(VIEWS)} views into {VIEW_DIR}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
