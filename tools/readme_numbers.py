"""The documentation's measured numbers, generated from runs and checked against them.

Every number in README.md and docs/ (:func:`documents`: the per-paper pages, the costs, ...) that a run of
``verify`` produces stands between markers:

    <!--n RUN_ID PATH [FORMAT]-->VALUE<!--/n-->

- RUN_ID: a result's ``run_id`` in ``verify ... --format json`` (``pr26:prop4``,
  ``kvshift24:theorem3[as-printed]``).
- PATH: keys into that result, separated by dots; an integer indexes a list; ``[key=value]`` picks
  the list element whose ``key`` equals ``value``, ``[key~text]`` the first whose ``key`` contains
  ``text`` (no spaces in either), e.g. ``figures[figure~alpha_128].ours``; on a mapping, ``[~text]`` picks
  the value whose key contains ``text``; ``*`` maps the rest of the path over a list's elements
  (``claims.*.alone_s``, for ``min:``/``max:``).
- FORMAT (optional): a format spec for the value (``.3f``, ``.2g``), after an optional reduction of a
  list, ``mean:``, ``min:``, ``max:`` or ``count:`` (``mean:.3f``, ``count:d``); without it, ``str(value)``.

- RUN_ID ``bench:FILE``: a benchmark's JSON committed at FILE (``bench:benchmarks/results/bench_all-2026-12-02.json``):
  the README's costs are read from the file the benchmark wrote (:data:`BENCH_COMMANDS` names the command), never
  rerun here (timings differ from run to run; the committed file is the run the README quotes).

Which run gives a marker's number: a *quick* claim (one ``verify all`` runs) is run here, variant by
variant (``verify CLAIM --VARIANT-OPTION value --format json``); a *heavy* claim (``--full`` only)
comes from a run's JSON given with ``--run FILE`` (the command is in :data:`HEAVY_COMMANDS`).  The
values written last are kept in :data:`SNAPSHOT` (``tools/readme_numbers.json``) with the command
that produced each, so a number changed by hand in the README is caught without rerunning a heavy
claim, and a heavy number is only ever written from a run.

    python tools/readme_numbers.py --write [--run FILE ...]   # rerun the quick claims, fill every marker
    python tools/readme_numbers.py --check [--run FILE ...]   # exit 1 listing every number that differs
    python tools/readme_numbers.py --write --no-quick --run F # only the given runs' numbers (e.g. a heavy claim's)
    python tools/readme_numbers.py --list                     # markers, their runs and commands

``--check`` without ``--run`` compares heavy markers with the snapshot only (say so in its output);
give the heavy run's JSON to compare them with a fresh run.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"


def documents() -> list[Path]:
    """The files whose markers this tool fills and checks: README.md, then every Markdown file under docs/."""
    return [README, *sorted(DOCS.rglob("*.md"))]


def all_text(paths: Sequence[Path] | None = None) -> str:
    """The documents' texts, one after another (markers are parsed and checked across all of them)."""
    return "\n".join(p.read_text() for p in (paths if paths is not None else documents()))
SNAPSHOT = Path(__file__).resolve().with_suffix(".json")

#: <!--n RUN_ID PATH [FORMAT]-->VALUE<!--/n-->
MARKER = re.compile(r"<!--n (?P<args>[^>]*?)-->(?P<value>.*?)<!--/n-->")

#: the run id of the learning-rate selection table (a JSON of verify.numeric.pr26_figures.lr_selection_table)
LR_SELECTION = "lr-selection"

#: run ids that name a committed benchmark JSON
BENCH = "bench:"
#: the benchmark command that writes each kind of committed JSON (by the file name's prefix)
BENCH_COMMANDS = {
    "bench_all-": "python benchmarks/bench_all.py --json FILE",
    "bench_alpha-quick-": "python benchmarks/bench_alpha.py --quick --json FILE",
    "bench_alpha-": "python benchmarks/bench_alpha.py --json FILE",
    "bench_realizable-": "python benchmarks/bench_realizable.py --quick --json FILE",
    "bench_head-": "python benchmarks/bench_head.py --json FILE",
}


def bench_command(run_id: str) -> str:
    """The command that wrote a ``bench:FILE`` run id's JSON."""
    name = Path(run_id[len(BENCH):]).name
    for prefix, cmd in BENCH_COMMANDS.items():
        if name.startswith(prefix):
            return cmd.replace("FILE", run_id[len(BENCH):])
    raise KeyError(f"{run_id}: no benchmark writes a file named like {name!r}")


#: the command that produces the JSON of a heavy claim's numbers (its run is not repeated by --write)
HEAVY_COMMANDS = {
    "bietti23:probes": "verify bietti23:probes --full --confirmatory --format json",
    # the run the --full answer names (a run id of its own: its markers are filled from that run)
    "bietti23:probes[steps=6400]": "verify bietti23:probes --steps 6400 --format json",
    "bietti23:probes[steps=25600]": "verify bietti23:probes --steps 25600 --format json",
    # the README run of the authors' code at its own size (ihead_basic_main.py's README command)
    "bietti23:probes[d=256,T=256,batch=512,steps=1000,lr=0.03,seeds=1]": (
        "verify bietti23:probes --d 256 --T 256 --batch 512 --lr 0.03 --steps 1000 --seeds 1 --format json"),
    "kvshift24:falsifier": "verify kvshift24:falsifier --format json",
    "ws24:falsifier": "verify ws24:falsifier --confirmatory --format json",
    "pr26:auc": "verify pr26:auc --full --confirmatory --format json",
    "pr26:auc[with-content]": "verify pr26:auc --full --confirmatory --scores with-content --format json",
    "fp26:fingerprint": "verify fp26:fingerprint --full --format json",
    # the confirmatory run of protocol v1 (its arms on 2 Dask workers)
    "fp26:fingerprint[scheduler=local]": (
        "verify fp26:fingerprint --full --confirmatory --scheduler local --jobs 2 --format json"),
    "fp26:fingerprint[steps=7200]": ("verify fp26:fingerprint --d 64 --H 4 --V 32 --T 64 --batch 32 --seeds 2 --arms "
                                     "absolute/free,absolute/sym,rope/sym --steps 7200 --format json"),
    "fp26:fingerprint[steps=21600]": ("verify fp26:fingerprint --d 64 --H 4 --V 32 --T 64 --batch 32 --seeds 2 --arms "
                                      "absolute/free,absolute/sym,rope/sym --steps 21600 --format json"),
    # the run that decides it: the shortest continuing the 64800-step run's saved states past 2 x 11875 steps
    "fp26:fingerprint[steps=48800,scheduler=local,jobs=3]": (
        "verify fp26:fingerprint --d 64 --H 4 --V 32 --T 64 --batch 32 --seeds 2 --arms absolute/free,absolute/sym,"
        "rope/sym --steps 48800 --scheduler local --jobs 3 --format json"),
    "ws24:theorem1-ape": "verify ws24:theorem1-ape --format json",
    "ws24:prop3": "verify ws24:prop3 --format json",
    # not a claim: the learning-rate rule of pr26's fit (verify.numeric.pr26_figures.LR_RULE), ~60 s
    LR_SELECTION: "python benchmarks/bench_pr26_figures.py --select-lr --json FILE",
}


@dataclass(frozen=True)
class Marker:
    run_id: str
    path: str
    fmt: str
    value: str
    start: int
    end: int

    @property
    def key(self) -> str:
        return " ".join(x for x in (self.run_id, self.path, self.fmt) if x)

    @property
    def claim(self) -> str:
        return self.run_id.split("[", 1)[0]

    @property
    def bench(self) -> bool:
        return self.run_id.startswith(BENCH)

    @property
    def heavy(self) -> bool:
        return self.bench or self.claim in HEAVY_COMMANDS

    @property
    def command(self) -> str:
        if self.bench:
            return bench_command(self.run_id)
        if self.heavy:
            return HEAVY_COMMANDS.get(self.run_id, HEAVY_COMMANDS[self.claim])
        return " ".join(["verify", self.claim, *variant_args(self.run_id), "--format", "json"])


def parse(text: str) -> list[Marker]:
    """Every marker of ``text``, in order.

    Raises:
        ValueError: a marker without RUN_ID and PATH, or with more than three arguments.
    """
    out = []
    for m in MARKER.finditer(text):
        args = m.group("args").split()
        if not 2 <= len(args) <= 3:
            raise ValueError(f"marker <!--n {m.group('args')}--> needs RUN_ID PATH [FORMAT]")
        out.append(Marker(args[0], args[1], args[2] if len(args) == 3 else "", m.group("value"), m.start(), m.end()))
    return out


_STEP = re.compile(r"^(?P<key>[^\[\]]+)?(?:\[(?P<sel>[^\]]+)\])?$")


def _steps(path: str) -> list[str]:
    # dots inside a [selector] belong to it
    out, depth, cur = [], 0, ""
    for ch in path:
        if ch == "." and depth == 0:
            out.append(cur)
            cur = ""
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        cur += ch
    return out + [cur]


def lookup(result: Any, path: str) -> Any:
    """The value at ``path`` in one result (module docstring for the syntax).

    Raises:
        KeyError: a key, index or selector that finds nothing.
    """
    obj = result
    steps = _steps(path)
    for n, step in enumerate(steps):
        if step == "*":  # every element of a list: the rest of the path in each (a list, for min:/max:/mean:)
            rest = ".".join(steps[n + 1:])
            return [lookup(x, rest) if rest else x for x in obj]
        m = _STEP.match(step)
        if m is None:
            raise KeyError(f"bad path step {step!r} in {path!r}")
        key, sel = m.group("key"), m.group("sel")
        if key is not None:
            if isinstance(obj, list):
                obj = obj[int(key)]
            elif isinstance(obj, Mapping) and key in obj:
                obj = obj[key]
            else:
                raise KeyError(f"{key!r} not found (path {path!r})")
        if sel is not None and isinstance(obj, Mapping):  # [~text]: the value whose key contains text
            hits = [v for k, v in obj.items() if sel.startswith("~") and sel[1:] in str(k)]
            if not hits:
                raise KeyError(f"no key containing {sel[1:]!r} (path {path!r})")
            obj = hits[0]
        elif sel is not None:
            op = "=" if "=" in sel else "~"
            k, _, v = sel.partition(op)
            hits = [x for x in obj if isinstance(x, Mapping) and k in x
                    and (str(x[k]) == v if op == "=" else v in str(x[k]))]
            if not hits:
                raise KeyError(f"no element with {sel!r} (path {path!r})")
            obj = hits[0]
    return obj


def render(value: Any, fmt: str) -> str:
    """``value`` written as the marker's FORMAT says (module docstring)."""
    red, _, spec = fmt.rpartition(":") if ":" in fmt else ("", "", fmt)
    if red:
        fn = {"mean": statistics.fmean, "min": min, "max": max, "count": len}[red]
        value = fn(value)
    if not spec:
        return str(value)
    return format(value, spec)


def results_of(doc: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """{run_id: result} of one ``verify ... --format json`` document (or {"lr-selection": doc} for the
    learning-rate table that ``bench_pr26_figures.py --select-lr --json`` writes)."""
    if "rule" in doc and "chosen" in doc and "rows" in doc:
        return {LR_SELECTION: doc}
    return {r["run_id"]: r for r in doc.get("results", [])}


def variant_args(run_id: str) -> list[str]:
    """The command-line options that select a run id's variant (``kvshift24:theorem3[as-printed]`` ->
    ``--eq10 as-printed``), from the claim's recorded variants."""
    from verify.core import registry

    claim = registry.get(run_id.split("[", 1)[0])
    for v in claim.variants:
        params = claim.parse_params(dict(v))
        if claim.display_id(params) == run_id:
            return [a for k, val in v.items() for a in (f"--{k}", str(val))]
    raise KeyError(f"{run_id} is none of {claim.id}'s recorded variants")


def run_quick(run_ids: Iterable[str]) -> dict[str, Mapping[str, Any]]:
    """Run each quick run id here (in process, seed 0, no timings) and return {run_id: result}."""
    from verify.frontends.cli import main

    out: dict[str, Mapping[str, Any]] = {}
    for rid in sorted(set(run_ids)):
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            main([rid.split("[", 1)[0], *variant_args(rid), "--format", "json", "--no-timings", "--quiet"])
        out.update(results_of(json.loads(buf.getvalue())))
    return out


def bench_result(run_id: str) -> Mapping[str, Any]:
    """The committed JSON a ``bench:FILE`` run id names (FILE relative to the repository root).

    Raises:
        FileNotFoundError: the file is not there.
    """
    path = (ROOT / run_id[len(BENCH):]).resolve()
    if ROOT not in path.parents:
        raise FileNotFoundError(f"{run_id}: outside the repository")
    return json.loads(path.read_text())


def load_snapshot() -> dict[str, Any]:
    return json.loads(SNAPSHOT.read_text()) if SNAPSHOT.exists() else {"numbers": {}}


def values(markers: Sequence[Marker], results: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """{marker key: value} for every marker whose run is in ``results``.

    Raises:
        KeyError: a marker's path finds nothing in its run.
    """
    out = {}
    for m in markers:
        if m.run_id in results:
            out[m.key] = render(lookup(results[m.run_id], m.path), m.fmt)
    return out


def fill(text: str, new: Mapping[str, str]) -> str:
    """``text`` with each marker's VALUE replaced by ``new[key]`` (markers not in ``new`` unchanged)."""
    def sub(m: re.Match) -> str:
        mk = parse(m.group(0))[0]
        return m.group(0) if mk.key not in new else f"<!--n {m.group('args')}-->{new[mk.key]}<!--/n-->"
    return MARKER.sub(sub, text)


def differences(text: str, now: Mapping[str, str]) -> list[str]:
    """One line per marker whose README value differs from ``now`` (markers not in ``now`` skipped)."""
    return [f"{m.key}: README {m.value!r}, run {now[m.key]!r} ({m.command})"
            for m in parse(text) if m.key in now and m.value != now[m.key]]


def gather(markers: Sequence[Marker], run_files: Sequence[Path], quick: bool = True) -> tuple[dict[str, str], dict[str, str]]:
    """(values from runs, source command per value): quick claims run here (unless ``quick`` is False),
    heavy ones, and any run given, from ``run_files``."""
    given: dict[str, Mapping[str, Any]] = {}
    for m in markers:  # benchmark numbers: the committed JSON the benchmark wrote
        if m.bench and m.run_id not in given:
            given[m.run_id] = bench_result(m.run_id)
    for f in run_files:
        given.update(results_of(json.loads(Path(f).read_text())))
    quick_results = run_quick({m.run_id for m in markers if not m.heavy and m.run_id not in given}) if quick else {}
    results = {**quick_results, **given}
    now = {}
    for m in markers:  # a run that lacks a marker's path leaves that marker to the snapshot (reported)
        if m.run_id in results:
            try:
                now[m.key] = render(lookup(results[m.run_id], m.path), m.fmt)
            except (KeyError, IndexError, TypeError) as e:
                print(f"not in the run: {m.key} ({e})", file=sys.stderr)
    return now, {m.key: m.command for m in markers if m.key in now}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", action="store_true", help="fill the README's markers from the runs")
    g.add_argument("--check", action="store_true", help="exit 1 when a README number differs from its run")
    g.add_argument("--list", action="store_true", help="list the markers, their runs and commands")
    ap.add_argument("--run", action="append", default=[], type=Path, help="a verify --format json file (heavy runs)")
    ap.add_argument("--doc", action="append", default=None, type=Path,
                    help="a document to fill or check (repeatable; default README.md and every docs/**/*.md)")
    ap.add_argument("--no-quick", action="store_true", help="do not rerun the quick claims (their values are kept from "
                    "the snapshot; for adding a heavy run's numbers)")
    a = ap.parse_args(argv)
    docs = a.doc if a.doc else documents()
    text = all_text(docs)
    markers = parse(text)
    if a.list:
        for m in markers:
            print(f"{m.value:>12}  {m.key}  <- {m.command}{'  (heavy)' if m.heavy else ''}")
        return 0
    now, cmds = gather(markers, a.run, quick=not a.no_quick)
    snap = load_snapshot()
    missing = [m for m in markers if m.key not in now]
    if a.write:
        kept = {m.key: snap["numbers"][m.key]["value"] for m in missing if m.key in snap["numbers"]}
        # the README as it is now (the runs take minutes; others may have edited it meanwhile): only the
        # markers' values change
        for doc in docs:
            old = doc.read_text()
            if (new_text := fill(old, {**kept, **now})) != old:
                doc.write_text(new_text)
        numbers = {m.key: snap["numbers"][m.key] for m in missing if m.key in snap["numbers"]}
        numbers.update({k: {"value": v, "command": cmds[k]} for k, v in now.items()})
        SNAPSHOT.write_text(json.dumps({"about": "the README's generated numbers as last written by "
                                                 "tools/readme_numbers.py --write, with the command each comes from",
                                        "numbers": dict(sorted(numbers.items()))}, indent=1) + "\n")
        changed = sum(1 for m in markers if m.key in now and m.value != now[m.key])
        print(f"{len(now)} numbers from runs ({changed} changed); {len(kept)} kept from the snapshot (give their run "
              "with --run to refresh)" + "".join(f"\n  {'kept' if m.key in kept else 'NO VALUE'}: {m.key} <- {m.command}"
                                                 for m in missing))
        return 0
    diffs = differences(text, now)
    snap_diffs = [f"{m.key}: README {m.value!r}, snapshot {snap['numbers'][m.key]['value']!r} (no run given: "
                  f"{m.command})" for m in missing if m.key in snap["numbers"] and snap["numbers"][m.key]["value"] != m.value]
    unknown = [f"{m.key}: in no run and not in the snapshot ({m.command})" for m in missing
               if m.key not in snap["numbers"]]
    for line in diffs + snap_diffs + unknown:
        print(line)
    print(f"{len(now)} numbers checked against runs, {len(missing)} against the snapshot only"
          + ("" if diffs or snap_diffs or unknown else ": all equal"))
    return 1 if diffs or snap_diffs or unknown else 0


if __name__ == "__main__":
    sys.exit(main())
