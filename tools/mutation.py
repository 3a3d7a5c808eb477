"""Mutation testing of the trusted base with cosmic-ray: ``python tools/mutation.py [MODULE ...] [--changed]``.

The trusted base is the code that stands behind "proved": the certificate writers and their solver-free re-checks,
the kernel's checks, and the verdict aggregation.  Each module's mutants (cosmic-ray 8.7, every core operator) run
against the tests that cover it (:data:`TRUSTED`), not the whole suite.  cosmic-ray mutates the file on disk, so
each run works in a copy of the tree (tracked and untracked, not ignored, files) whose ``src/verify`` links the
layer folders in as pyproject's package-dir maps them, imported through ``PYTHONPATH`` ahead of the editable
install; the checkout is never touched.  ``--jobs N`` splits one module's mutants over N copies (each copy's session
marks the others' share SKIPPED through cosmic-ray's WorkDB, the filters' interface).

A surviving mutant is a defect of the tests unless it is listed in tests/mutation/equivalents.json with a reason
(it computes what the original does, or what it changes cannot be observed).  A mutant is named by its module, its
operator and the source line before and after (stripped), not by a line number, so that the list survives edits; a
line the module has more than once (``continue``) is pinned by ``context``, a line just above it.

- ``python tools/mutation.py`` runs every module of :data:`TRUSTED` and writes docs/mutation.md;
- ``python tools/mutation.py --changed [--base REV]`` runs only the mutants on lines changed since REV (default:
  the commit of each module's recorded pass, docs/mutation.json) in trusted modules: the gate (exit 1 on a survivor that is not
  listed as equivalent or on a trusted module with no recorded full pass, 0 otherwise, 0 with nothing to run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
EQUIVALENTS = ROOT / "tests" / "mutation" / "equivalents.json"
DOC = ROOT / "docs" / "mutation.md"
RESULTS = ROOT / "docs" / "mutation.json"
#: the layer folders pyproject.toml's package-dir maps into verify
LINKED = ("symbolic", "solver", "numeric", "kernel", "proofs")
#: trusted module -> the tests that cover it
TRUSTED: dict[str, tuple[str, ...]] = {
    "solver/certify.py": ("tests/core/test_trusted_base.py", "tests/core/test_certificates.py"),
    "solver/recheck.py": ("tests/core/test_trusted_base.py", "tests/core/test_certificates.py"),
    "src/verify/reports/certificates.py": ("tests/core/test_certificate_files.py",),
    "src/verify/core/verdicts.py": ("tests/core/test_verdict_rules.py", "tests/core/test_verdicts.py",
                                    "tests/core/test_parts_mechanism.py"),
    "numeric/head_bounds.py": ("tests/core/test_head_bounds.py",),
    "kernel/replay.py": ("tests/core/test_kernel_replay_text.py",),
    "kernel/driver.py": ("tests/core/test_kernel_driver.py",),
    "kernel/check.py": ("tests/core/test_kernel_check.py", "tests/core/test_parts_mechanism.py",
                        "tests/core/test_verdicts.py"),
}
#: seconds one mutant's tests may take before it counts as killed by a timeout (cosmic-ray's rule)
TIMEOUT = 120.0
#: the same for modules whose tests run in a few seconds (a mutant that loops, say a table grown without bound, is
#: then counted killed after 45 s instead of 120; the slowest of these test files takes 5 s)
FAST_TIMEOUT = {"src/verify/core/verdicts.py": 45.0, "numeric/head_bounds.py": 45.0, "kernel/replay.py": 45.0,
                "kernel/driver.py": 15.0}  # its tests take about 1 s; 31 of its mutants loop


def _copy_tree(dest: Path) -> None:
    """The checkout's tracked and untracked-but-not-ignored files, as they are now, copied to ``dest``."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True,
                           capture_output=True).stdout.decode().split("\0")
    for f in filter(None, files):
        src = ROOT / f
        if src.is_file():
            (dest / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f)
    for name in LINKED:
        (dest / "src" / "verify" / name).symlink_to(Path("..", "..", name))


#: the cosmic-ray sessions running now, each the leader of its own process group (see :func:`_exec`)
_RUNNING: list[subprocess.Popen] = []


def _exec(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    """Run ``cmd`` (cosmic-ray's exec) as the leader of a new process group and kill the whole group when it ends or
    this run stops: a mutant's test process outlived its stopped runner once and looped for an hour."""
    p = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    _RUNNING.append(p)
    try:
        _, err = p.communicate()
    finally:
        _kill_group(p)
        _RUNNING.remove(p)
    if p.returncode:
        raise subprocess.CalledProcessError(p.returncode, cmd, stderr=err)


def _kill_group(p: subprocess.Popen) -> None:
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _stop(signum: int, frame: Any) -> None:
    """SIGTERM or Ctrl-C: every running session's process group killed, then exit (128 + the signal)."""
    for p in list(_RUNNING):
        _kill_group(p)
    os._exit(128 + signum)


def _config(module: str, tests: tuple[str, ...]) -> str:
    cmd = f"{sys.executable} -m pytest -x -q -p no:cacheprovider -p no:randomly {' '.join(tests)}"
    return (f'[cosmic-ray]\nmodule-path = "{module}"\ntimeout = {FAST_TIMEOUT.get(module, TIMEOUT)}\nexcluded-modules = []\n'
            f'test-command = "{cmd}"\n\n[cosmic-ray.distributor]\nname = "local"\n')


def _changed_lines(module: str, base: str) -> set[int]:
    """The lines of ``module`` (in the working tree) that differ from ``base``."""
    out = subprocess.run(["git", "diff", "-U0", base, "--", module], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout
    lines: set[int] = set()
    for m in re.finditer(r"^@@ -\S+ \+(\d+)(?:,(\d+))? @@", out, re.M):
        start, n = int(m.group(1)), int(m.group(2) or 1)
        lines.update(range(start, start + n))
    return lines


def annotation_spans(path: Path) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """The source spans of every annotation in ``path`` (parameters, returns, annotated assignments): with ``from
    __future__ import annotations`` (every trusted module has it) an annotation is never evaluated, so a mutant inside
    one is equivalent by that rule and is not run."""
    import ast

    tree = ast.parse(path.read_text())
    if not any(isinstance(n, ast.ImportFrom) and n.module == "__future__" and any(a.name == "annotations"
                                                                                  for a in n.names)
               for n in tree.body):
        return []
    spans = []
    for node in ast.walk(tree):
        notes: list[Any] = []
        if isinstance(node, ast.arg):
            notes = [node.annotation]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            notes = [node.returns]
        elif isinstance(node, ast.AnnAssign):
            notes = [node.annotation]
        spans += [((n.lineno, n.col_offset), (n.end_lineno, n.end_col_offset)) for n in notes if n is not None]
    return spans


def in_annotation(start: tuple[int, int], end: tuple[int, int], spans: list[Any]) -> bool:
    return any(lo <= tuple(start) and tuple(end) <= hi for lo, hi in spans)


def row_in_annotation(row: dict[str, Any], spans: list[Any], source: list[str]) -> bool:
    """Whether a recorded mutant (line, and the stripped lines before and after) changes an annotation: the first
    column where before and after differ, placed on the source line, inside an annotation's span."""
    before, after = row["before"], row["after"]
    line = source[row["line"] - 1] if 0 < row["line"] <= len(source) else ""
    if not before or line.strip() != before:
        return False
    i = next((k for k, (p, q) in enumerate(zip(before, after)) if p != q), min(len(before), len(after)))
    col = len(line) - len(line.lstrip()) + i
    return in_annotation((row["line"], col), (row["line"], col), spans)


def _identity(item: Any) -> tuple[str, int, tuple[int, int], tuple[int, int]]:
    """A work item's mutation, the same in every session made from the same module."""
    m = item.mutations[0]
    return (m.operator_name, m.occurrence, tuple(m.start_pos), tuple(m.end_pos))


def _pending(db: Path) -> list[Any]:
    from cosmic_ray.work_db import WorkDB, use_db

    with use_db(str(db), WorkDB.Mode.open) as wdb:
        return list(wdb.pending_work_items)


def _skip(db: Path, keep: Any) -> int:
    """Mark the pending work items ``keep(item)`` rejects SKIPPED (cosmic-ray's filter interface); the kept count."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    kept = 0
    with use_db(str(db), WorkDB.Mode.open) as wdb:
        for item in list(wdb.pending_work_items):
            if keep(item):
                kept += 1
            else:
                wdb.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    return kept


def _mutant_key(item: dict[str, Any], result: dict[str, Any] | None) -> tuple[str, str, str]:
    """(operator, line before, line after), stripped, from the result's diff."""
    op = item["mutations"][0]["operator_name"]
    diff = (result or {}).get("diff") or ""
    before = next((x[1:].strip() for x in diff.splitlines() if x.startswith("-") and not x.startswith("---")), "")
    after = next((x[1:].strip() for x in diff.splitlines() if x.startswith("+") and not x.startswith("+++")), "")
    return op, before, after


def run_module(module: str, tests: tuple[str, ...], jobs: int, lines: set[int] | None,
               only: set[tuple[int, str]] | None = None) -> list[dict[str, Any]]:
    """Every mutant of ``module`` (or those on ``lines``, or the (line, operator) pairs ``only``) against ``tests``:
    one row per mutant, with its outcome (killed, survived, incompetent) and key."""
    with tempfile.TemporaryDirectory(prefix="verify-mutation-") as tmp:
        rows: list[dict[str, Any]] = []

        def share(i: int) -> list[dict[str, Any]]:
            copy = Path(tmp) / f"copy{i}"
            copy.mkdir()
            _copy_tree(copy)
            cfg, db = copy / "cosmic-ray.toml", copy / "session.sqlite"
            cfg.write_text(_config(module, tests))
            # no third-party pytest plugin is loaded (the mapped tests need none): half of each mutant's run was
            # pytest importing plugins
            env = {**os.environ, "PYTHONPATH": str(copy / "src"), "CI": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
            subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "init", str(cfg), str(db)], cwd=copy, env=env,
                           check=True, capture_output=True)
            spans = annotation_spans(copy / module)
            skipped_notes = []
            # each copy's session names its work items by fresh random ids: the share is decided by the mutation
            # itself (operator, occurrence, position), sorted, so that the copies split the same list
            order = {k: n for n, k in enumerate(sorted(_identity(w) for w in _pending(db)))}

            def keep(item: Any) -> bool:
                m = item.mutations[0]
                n = order[_identity(item)]
                if n % jobs != i or (lines is not None and m.start_pos[0] not in lines) or (
                        only is not None and (m.start_pos[0], m.operator_name) not in only):
                    return False
                if in_annotation(m.start_pos, m.end_pos, spans):
                    skipped_notes.append({"module": module, "line": m.start_pos[0], "operator": m.operator_name,
                                          "before": "", "after": "", "outcome": "annotation"})
                    return False
                return True

            if _skip(db, keep) == 0:
                return skipped_notes
            _exec([sys.executable, "-m", "cosmic_ray.cli", "exec", str(cfg), str(db)], copy, env)
            dump = subprocess.run([sys.executable, "-m", "cosmic_ray.cli", "dump", str(db)], cwd=copy, env=env,
                                  check=True, capture_output=True, text=True).stdout
            out = list(skipped_notes)
            for line in dump.splitlines():
                item, result = json.loads(line)
                if result is None or result.get("worker_outcome") == "skipped":
                    continue
                op, before, after = _mutant_key(item, result)
                m0 = item["mutations"][0]
                if in_annotation(tuple(m0["start_pos"]), tuple(m0["end_pos"]), spans):
                    continue  # skipped above; a session made before the rule
                outcome = result.get("test_outcome") if result.get("worker_outcome") == "normal" else (
                    "killed" if result.get("worker_outcome") == "timeout" else "incompetent")
                out.append({"module": module, "line": item["mutations"][0]["start_pos"][0], "operator": op,
                            "before": before, "after": after, "outcome": outcome})
            return out

        with ThreadPoolExecutor(jobs) as pool:
            for part in pool.map(share, range(jobs)):
                rows.extend(part)
    return sorted(rows, key=lambda r: (r["line"], r["operator"], r["after"]))


def equivalents() -> list[dict[str, str]]:
    """The listed equivalent mutants, each with module, operator, before, after and a reason.

    Raises:
        SystemExit: an entry without a reason or a field missing.
    """
    if not EQUIVALENTS.exists():
        return []
    out = json.loads(EQUIVALENTS.read_text())["equivalent"]
    for e in out:
        missing = [k for k in ("module", "operator", "before", "after", "reason") if not str(e.get(k, "")).strip()]
        if missing:
            raise SystemExit(f"{EQUIVALENTS.name}: an entry lacks {', '.join(missing)}: {e}")
    return out


#: lines above a mutated line that an entry's ``context`` may name
CONTEXT_LINES = 3


def _above(module: str, line: int) -> list[str]:
    """The stripped source lines just above ``line`` (1-based) of a trusted module, as the checkout has it."""
    try:
        src = (ROOT / module).read_text().splitlines()
    except OSError:
        return []
    return [x.strip() for x in src[max(0, line - 1 - CONTEXT_LINES):max(0, line - 1)]]


def is_equivalent(row: dict[str, Any], listed: list[dict[str, str]]) -> bool:
    """Whether a survivor is a listed equivalent: module, operator and the lines before and after all equal; an entry
    with ``context`` (for a line the module has more than once, such as ``continue``) also needs that stripped line
    among the CONTEXT_LINES lines above the mutant's."""
    return any(e["module"] == row["module"] and e["operator"] == row["operator"] and e["before"] == row["before"]
               and e["after"] == row["after"]
               and (not e.get("context") or e["context"] in _above(row["module"], int(row.get("line") or 0)))
               for e in listed)


def recorded() -> dict[str, Any]:
    """docs/mutation.json: per module, the last full pass (its commit, counts and time)."""
    return json.loads(RESULTS.read_text()) if RESULTS.exists() else {"modules": {}}


def _head() -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                          check=True).stdout.strip()


def write_doc(results: dict[str, Any]) -> None:
    """docs/mutation.json and docs/mutation.md from the recorded passes (a module never run says so)."""
    from verify.safeio import atomic_write

    mods = results["modules"]
    text = json.dumps(results, indent=1, sort_keys=True) + "\n"
    atomic_write(RESULTS, lambda fh: fh.write(text.encode()))
    lines = ["# Mutation testing of the trusted base", "",
             "Generated by `python tools/mutation.py MODULE ...` (cosmic-ray 8.7, every core operator; each module's "
             "mutants against the tests that cover it, in a copy of the tree). A survivor is a defect of the tests "
             "unless tests/mutation/equivalents.json lists it with a reason; `annotation`: mutants inside a type "
             "annotation, equivalent by rule (every trusted module has `from __future__ import annotations`, so no "
             "annotation is evaluated) and not run. `python tools/mutation.py --changed` is the gate: it runs the "
             "mutants on the lines of each module changed since that module's recorded pass and fails on a new "
             "survivor.", "",
             "| module | tests | mutants | killed | annotation | equivalent | survived | incompetent | seconds | commit |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for m in TRUSTED:
        r = mods.get(m)
        tests = ", ".join(f"`{t}`" for t in TRUSTED[m])
        if r is None:
            lines.append(f"| `{m}` | {tests} | not run yet | | | | | | | |")
            continue
        lines.append(f"| `{m}` | {tests} | {r['mutants']} | {r['killed']} | {r['annotation']} | {r['equivalent']} | "
                     f"{r['survived']} | {r['incompetent']} | {r['seconds']:.0f} | {r['commit'][:10]} |")
    done = [mods[m] for m in TRUSTED if m in mods]
    lines += ["", f"Run so far: {len(done)} of {len(TRUSTED)} modules, {sum(r['mutants'] for r in done)} mutants, "
              f"{sum(r['survived'] for r in done)} surviving non-equivalent, "
              f"{sum(r['seconds'] for r in done) / 60:.0f} min on {os.cpu_count()} cores."]
    survivors = [s for r in done for s in r.get("survivors", [])]
    if survivors:
        lines += ["", "## Surviving mutants", ""]
        lines += [f"- `{r['module']}`:{r['line']} {r['operator']}: `{r['before']}` -> `{r['after']}`"
                  for r in survivors]
    atomic_write(DOC, lambda fh: fh.write(("\n".join(lines) + "\n").encode()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help=f"trusted modules (default: all of {', '.join(TRUSTED)})")
    ap.add_argument("--changed", action="store_true",
                    help="the gate: only the mutants on lines changed since each module's recorded pass")
    ap.add_argument("--base", default=None, help="with --changed: diff against this revision instead")
    ap.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 1)), help="copies working at once")
    ap.add_argument("--json", default=None, help="write every mutant's row here")
    ap.add_argument("--rerun", default=None, help="a --json file of a full pass: run again only the mutants that "
                    "survived in it (after tests were added) and record the pass with their new outcomes")
    ap.add_argument("--record", default=None, help="a --json file of a full (or merged) pass: record it again without "
                    "running anything, its survivors judged against today's equivalents list")
    a = ap.parse_args(argv)
    if argv is None:  # the script's own process: stopping it stops the sessions it started
        signal.signal(signal.SIGTERM, _stop)
        signal.signal(signal.SIGINT, _stop)
    unknown = [m for m in a.modules if m not in TRUSTED]
    if unknown:
        ap.error(f"{unknown[0]} is not a trusted module: {', '.join(TRUSTED)}")
    if a.jobs < 1:
        ap.error("--jobs must be >= 1")
    listed = equivalents()
    results = recorded()
    source_rows = json.loads(Path(a.rerun or a.record).read_text()) if (a.rerun or a.record) else None
    # a --rerun or --record file speaks for the modules it holds rows of, and only those: another module's recorded
    # pass is never replaced by an empty one
    modules = a.modules or ([m for m in TRUSTED if any(r["module"] == m for r in source_rows)]
                            if source_rows is not None else list(TRUSTED))
    rows_all: list[dict[str, Any]] = []
    survivors: list[dict[str, Any]] = []
    unrecorded: list[str] = []
    again, before_rows = None, []
    if source_rows is not None:
        before_rows = [r for r in source_rows if r["module"] in modules]
        again = {(r["line"], r["operator"]) for r in before_rows if r["outcome"] == "survived"}
    for m in modules:
        if source_rows is not None and not any(r["module"] == m for r in before_rows):
            print(f"{m}: no rows in {a.rerun or a.record}; its recorded pass is kept", file=sys.stderr)
            continue
        lines = None
        if a.changed:
            base = a.base or results["modules"].get(m, {}).get("commit")
            if base is None:  # a module mapped but never passed: the gate cannot vouch for it
                print(f"{m}: no recorded pass to diff against; run python tools/mutation.py {m}", file=sys.stderr)
                unrecorded.append(m)
                continue
            lines = _changed_lines(m, base)
            if not lines:
                continue
        t0 = time.perf_counter()
        rows = [] if a.record else run_module(m, TRUSTED[m], a.jobs, lines, again)
        if again is not None:  # the earlier pass's rows, each survivor's outcome replaced by its rerun's
            new = {(r["line"], r["operator"], r["after"]): r for r in rows}
            spans, source = annotation_spans(ROOT / m), (ROOT / m).read_text().splitlines()
            rows = [{**r, "outcome": "annotation"} if r["outcome"] == "survived" and row_in_annotation(r, spans, source)
                    else new.get((r["line"], r["operator"], r["after"]), r) for r in before_rows if r["module"] == m]
        for r in rows:
            r["equivalent"] = r["outcome"] == "survived" and is_equivalent(r, listed)
        bad = [r for r in rows if r["outcome"] == "survived" and not r["equivalent"]]
        survivors += bad
        rows_all += rows
        seconds = round(time.perf_counter() - t0, 1)
        if again is not None:  # a merged pass: the earlier pass's time plus this run's
            seconds = round(results["modules"].get(m, {}).get("seconds", 0) + seconds, 1)
        summary = {"mutants": len(rows), "killed": sum(r["outcome"] == "killed" for r in rows),
                   "annotation": sum(r["outcome"] == "annotation" for r in rows),
                   "equivalent": sum(r["equivalent"] for r in rows), "survived": len(bad),
                   "incompetent": sum(r["outcome"] == "incompetent" for r in rows),
                   "seconds": seconds, "commit": _head() if not a.record else results["modules"].get(m, {}).get(
                       "commit", _head()), "survivors": bad}
        print(f"{m}: {({k: v for k, v in summary.items() if k != 'survivors'})}", file=sys.stderr)
        if a.json:
            Path(a.json).write_text(json.dumps(rows_all, indent=1) + "\n")
        if not a.changed:  # read again: another module's pass may have been recorded while this one ran
            results = recorded()
            results["modules"][m] = summary
            write_doc(results)
    if a.json:
        Path(a.json).write_text(json.dumps(rows_all, indent=1) + "\n")
    for r in survivors:
        print(f"SURVIVED {r['module']}:{r['line']} {r['operator']}: {r['before']!r} -> {r['after']!r}")
    for m in unrecorded:
        print(f"NO PASS {m}: trusted, but no full pass is recorded (docs/mutation.json)")
    return 1 if survivors or unrecorded else 0


if __name__ == "__main__":
    raise SystemExit(main())
