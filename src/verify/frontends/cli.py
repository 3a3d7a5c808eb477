"""The ``verify`` command line (the CLI contract in the README).

    verify list                      the registered claims
    verify show CLAIM                a claim's statement, source, options, cost
    verify CLAIM [options]           check one claim variant
    verify all                       every claim and variant against its expectation
    verify audit PAPER               the referee-style Markdown audit of one paper

Exit codes: 0 the verdict is what was asked (a claim holds or holds with its fix; in
``all``/``audit``, every verdict equals its expectation); 1 a claim does not hold
(FAILS or INCONSISTENT) or, in ``all``/``audit``, a verdict changed; 2 usage or input
error; 3 inconclusive (a solver said unknown, a budget ran out, or a layer errored).

stdout carries only the report (text, Markdown or ``--format json``); progress goes to
stderr when it is a terminal, and never with ``--quiet``.  Side outputs: ``--junit
FILE`` (JUnit XML, :mod:`verify.reports.junit`), ``--plots DIR`` (PNG figures,
:mod:`verify.reports.plots`), ``--report FILE.md`` (``audit``, :mod:`verify.reports.audit`),
``--expect FILE`` (``all``/``audit``, expectations for your own variants,
:mod:`verify.core.specs`).
"""

from __future__ import annotations

import os
import shutil
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import click

from verify import __version__, floatnoise, interrupts
from verify.core import registry
from verify.core.inputs import (
    atomic_write_text,
    check_distinct_outputs,
    check_duplicate_flags,
    check_seed,
    check_timeout,
    clip,
    parse_layers,
    probe_output_dir,
    probe_output_file,
)
from verify.core.model import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
    PART_ROLES,
    VERDICT_EXIT,
    Claim,
    ClaimResult,
    InconclusiveError,
    InputError,
    Option,
    Times,
    VerifyError,
    figures_tally,
    only_part,
    part_named,
)
from verify.evidence import DEFAULT_TIMEOUT_S, LAYERS
from verify.pipeline import run
from verify.pipeline.pool import ignore_further_interrupts
from verify.pipeline.run import context, jobs, load_expect, require_checks, resolve_variant, run_all, run_one
from verify.reports.text import result_text, short_text, table_text, to_json

SERIAL_HELP = ("run the claim's layers one after another in this process (default: side by side on worker "
               "processes, one per core, when more than one layer runs); the output does not depend on it")
JOBS_HELP = ("claim variants run concurrently on this many worker processes (default: the number of cores; "
             "1 runs in this process); the output does not depend on it")


EXIT_HELP = """\b
Exit codes:
  0  the verdict is what was asked: the claim holds (or holds with the
     requested fix); for 'all'/'audit', every verdict equals its expectation
  1  the claim does not hold (FAILS / INCONSISTENT); for 'all'/'audit', a
     verdict changed
  2  usage or input error (unknown claim, bad option, sizes that cannot fit)
  3  inconclusive (solver unknown, budget exhausted, a layer errored)
  130  interrupted (Ctrl-C)
  143  stopped by SIGTERM (taken like Ctrl-C: workers stopped, one line)
"""

EXPECT_HELP = ("expectations for your own variants: JSON {\"ws24:theorem2[read-score]\": \"HOLDS WITH FIX\"} "
               "or text lines 'SPEC: VERDICT' (or a previous --format json output); they override the "
               "recorded ones, and variants not run by default are added")


def _common(f: Callable) -> Callable:
    opts = [
        click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                     help="report format on stdout"),
        click.option("--seed", type=int, default=0, show_default=True, help="master seed for every random choice"),
        click.option("--timeout", type=float, default=DEFAULT_TIMEOUT_S, show_default=True,
                     help="per-obligation solver budget in seconds"),
        click.option("--layers", default=",".join(LAYERS), show_default=True,
                     help="comma-separated layers to run (others are reported as skipped)"),
        click.option("--quiet", is_flag=True, help="no progress or notes on stderr"),
        click.option("--no-timings", is_flag=True, help="write wall times as 0 (byte-identical JSON across runs)"),
        click.option("--brief", is_flag=True, help="text: the short view (the default; kept for scripts)"),
        click.option("-v", "--verbose", is_flag=True,
                     help="text: the full evidence of each claim (every layer's details and tolerances, every finding, "
                          "figure and caveat) instead of the short view"),
        click.option("--junit", type=click.Path(dir_okay=False), default=None,
                     help="also write JUnit XML here (one testcase per claim variant)"),
        click.option("--plots", type=click.Path(file_okay=False), default=None,
                     help="also write PNG figures into this directory (needs matplotlib)"),
        click.option("--certificates", type=click.Path(file_okay=False), default=None,
                     help="write one JSON certificate per certified UNSAT obligation here "
                          "(re-check them with 'verify recheck DIR')"),
        click.option("--full", is_flag=True, help="paper-scale numeric work (and, for all/audit, the heavy claims)"),
        click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
                     help="checkpoint cache of the trained-model claims (default $XDG_CACHE_HOME/verify/lab, "
                          "else ~/.cache/verify/lab); a corrupt or foreign file in it is retrained, never trusted"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


#: when stderr is not a terminal (a log, CI, nohup), a progress message is written as a plain line only once
#: this many seconds have passed since the start or since the last line: a short command writes none, a long
#: training writes a line per report
PLAIN_PROGRESS_EVERY_S = 30.0


class _Progress:
    """Progress on stderr for long work, never with --quiet: a spinner when stderr is a terminal, otherwise a
    plain ``verify: ...`` line at most every :data:`PLAIN_PROGRESS_EVERY_S` seconds (so a run sent to a log
    shows that it is alive and where it is, and a short one writes nothing)."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.enabled = not quiet and sys.stderr.isatty()

    @contextmanager
    def running(self) -> Iterator[Callable[[str], None] | None]:
        if self.quiet:
            yield None
            return
        if not self.enabled:
            import time

            last = [time.monotonic()]

            def plain(msg: str) -> None:
                now = time.monotonic()
                if now - last[0] >= PLAIN_PROGRESS_EVERY_S:
                    last[0] = now
                    click.echo(f"verify: {msg}", err=True)
            yield plain
            return
        from rich.console import Console

        console = Console(stderr=True)
        with console.status("starting", spinner="dots") as status:
            yield lambda msg: status.update(msg)

    def note(self, message: str) -> None:
        """A one-line note on stderr (never with --quiet)."""
        if not self.quiet:
            click.echo(f"verify: {message}", err=True)


def _write_certificates(results: Sequence[ClaimResult], directory: str | None, prog: "_Progress") -> None:
    if directory is None:
        return
    from verify.reports.certificates import write_certificates, write_manifest

    written = [w for r in results for w in write_certificates(r, directory)]
    write_manifest(directory, written)
    prog.note(f"{len(written)} certificate file(s) and their manifest written to {directory}")


def _preflight(seed: int, timeout: float, junit: str | None, plots: str | None, certificates: str | None,
               report: str | None = None, appendix: str | None = None) -> None:
    """Every option and output path checked before any work starts (one line, exit 2)."""
    check_seed(seed)
    check_timeout(timeout)
    check_distinct_outputs(report=report, junit=junit, plots=plots, certificates=certificates, appendix=appendix)
    probe_output_file(junit, "--junit")
    probe_output_file(report, "--report")
    probe_output_file(appendix, "--appendix")
    if appendix == "-":
        raise InputError("--appendix -: the appendix goes to a file; stdout carries the letter")
    probe_output_dir(certificates, "--certificates")
    if junit == "-":
        raise InputError("--junit -: JUnit goes to a file; stdout carries the report")
    if plots is not None:
        from verify.reports.plots import require_matplotlib

        require_matplotlib()
        probe_output_dir(plots, "--plots")


def _side_outputs(results: Sequence[ClaimResult], *, junit: str | None, plots: str | None, mode: str,
                  suite: str, seed: int, layers: Sequence[str], timings: bool, prog: _Progress,
                  not_checked: Sequence[str] = ()) -> list[Path]:
    """Write the JUnit file and the figures; return the figures written."""
    files: list[Path] = []
    if plots is not None:
        from verify.reports.plots import write_plots

        files, notes = write_plots(results, plots)
        for n in notes:
            prog.note(n)
    if junit is not None:
        from verify.reports.junit import write_junit

        write_junit(junit, results, suite=suite, mode=mode, seed=seed, layers=layers, timings=timings,
                    not_checked=not_checked)
    return files


def _emit(results: Sequence[ClaimResult], command: str, fmt: str, seed: int, code: int,
          changes: Sequence[str], timings: bool, verbose: bool, not_checked: Sequence[str] = ()) -> None:
    if fmt == "json":
        click.echo(to_json(results, command, seed, code, changes, timings, not_checked))
        return
    if command in ("all", "audit"):
        click.echo(table_text(results, timings))
        if changes:
            click.echo("\nverdicts that changed from their expectations:")
            for c in changes:
                click.echo(f"  {c}")
        else:
            click.echo(f"\nall {len(results)} verdicts equal their expectations")
        if not_checked:
            click.echo(f"not checked (no check in the requested layers, or a package missing): {', '.join(not_checked)}")
        tallies = [figures_tally(r.evidence) for r in results]
        k, n = sum(t[0] for t in tallies), sum(t[1] for t in tallies)
        if n:
            click.echo(f"published figures reproduced {k}/{n} (counted apart from the verdicts; "
                       "'verify CLAIM' lists each)")
    else:
        for r in results:
            click.echo(result_text(r, verbose=True, timings=timings) if verbose else short_text(r, timings))


class ClaimGroup(click.Group):
    """A group whose unknown sub-command names are claim names (``verify theorem2 ...``)."""

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        cmd = super().get_command(ctx, cmd_name)
        if cmd is not None:
            return cmd
        return _claim_command(cmd_name)

    def resolve_command(self, ctx: click.Context, args: list[str]):
        name, cmd, rest = super().resolve_command(ctx, args)
        return name, cmd, rest


def _claim_command(name: str) -> click.Command:
    base = name.split("[", 1)[0].strip().lower()
    claims = [c for c in registry.all_claims() if base in (c.id.lower(), c.name.lower())] or registry.all_claims()
    seen: dict[str, Any] = {}
    owners: dict[str, list[str]] = {}
    for c in claims:
        for o in c.options:
            seen.setdefault(o.name, o)
            owners.setdefault(o.name, []).append(c.id)
    several = len(claims) > 1

    def _help(o: Any) -> str:
        return o.help + (f" [{', '.join(owners[o.name])}]" if several else "")

    # click keyword names cannot hold '-': a claim option 'weight-decay' travels as weight_decay
    dest = {o.name.replace("-", "_"): o.name for o in seen.values()}
    params = [click.Option([o.flag, o.name.replace("-", "_")], default=None, help=_help(o)) for o in seen.values()]
    params.append(click.Option(["--serial", "__serial"], is_flag=True, default=False, help=SERIAL_HELP))
    params.append(click.Option(["--confirmatory", "__confirmatory"], is_flag=True, default=False,
                               help="refuse (exit 2, before any work) unless this is the claim's confirmatory run: "
                                    "every option its frozen protocol fixes at the protocol's value, its seeds "
                                    "(see 'verify show CLAIM')"))
    params.append(click.Option(["--part", "__part"], default=None,
                               help="judge one part of a claim whose statement says several things (the verdict is "
                                    "that part's; 'verify show CLAIM' lists the parts)"))

    @_common
    def callback(fmt: str, seed: int, timeout: float, layers: str, quiet: bool, no_timings: bool,
                 brief: bool, verbose: bool, junit: str | None, plots: str | None, certificates: str | None,
                 full: bool, cache_dir: str | None, **raw: Any) -> None:
        serial = bool(raw.pop("__serial", False))
        confirmatory = bool(raw.pop("__confirmatory", False))
        part = raw.pop("__part", None)
        raw = {dest.get(k, k): v for k, v in raw.items()}
        claim, p = resolve_variant(name, raw)
        if part is not None:
            part_named(claim, part)  # an unknown part: the list of parts, exit 2, before any work
        lay = parse_layers(layers)
        _preflight(seed, timeout, junit, plots, certificates)
        require_checks(claim, lay)
        prog = _Progress(quiet)
        with prog.running() as progress:
            ctx = context(seed, timeout, progress, full, cache_dir)
            _protocol_preflight(claim, p, ctx, confirmatory)
            result = run_one(claim, p, ctx, lay, 1 if serial else jobs(ctx.claim_jobs))
        if part is not None:
            result = only_part(result, part)
        code = result.exit_code
        _write_certificates([result], certificates, prog)
        _emit([result], "claim", fmt, seed, code, [], not no_timings, verbose and not brief)
        _side_outputs([result], junit=junit, plots=plots, mode="holds", suite=claim.id, seed=seed, layers=lay,
                      timings=not no_timings, prog=prog)
        raise click.exceptions.Exit(code)

    cmd = click.Command(name, params=list(params), callback=callback,
                        help=f"Check the claim {name!r} (see 'verify show {name}').", epilog=EXIT_HELP)
    cmd.params = list(getattr(callback, "__click_params__", [])) + list(params)
    return cmd


def _protocol_preflight(claim: Any, p: Any, ctx: Any, confirmatory: bool) -> None:
    """Before any work: an edited or unregistered protocol is refused; with ``--confirmatory`` so is any departure
    from it (InputError: exit 2)."""
    from verify.core import protocol as proto

    if confirmatory:
        values = claim.protocol_run_values(p, ctx) if claim.protocol is not None else {}
        proto.refuse_unless_confirmatory(claim.protocol, claim.id, values, ctx.seed)
    elif claim.protocol is not None:
        proto.check_frozen(claim.protocol)


@click.group(cls=ClaimGroup, epilog=EXIT_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="verify")
def cli() -> None:
    """verify: check published claims about transformer attention, three ways
    (symbolic / solver / numeric), and say with evidence whether each holds as written.

    \b
    verify list                                  the registered claims
    verify show CLAIM                            statement, source, options, cost
    verify CLAIM [options]                       check one claim, e.g.
        verify theorem2 --orientation read-score
    verify all [--expect FILE] [--junit FILE]    every claim against its expectation
    verify audit PAPER [--report FILE.md]        referee-style Markdown audit of a paper
    verify alpha --pe rope --task prev --L0 20 --L 64   positional realizability (pr26)
    verify recheck DIR                           re-check certificate files, no solver
    verify schema                                the JSON-Schema of the reports
    """


@cli.command("list")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def list_cmd(fmt: str) -> None:
    """List the registered claims."""
    claims = registry.all_claims()
    if fmt == "json":
        import json

        click.echo(json.dumps([{"claim": c.id, "title": c.title, "source": c.source,
                                "variants": [c.variant_label(v) for v in c.variants],
                                "options": [o.name for o in c.options], "heavy": c.heavy} for c in claims], indent=2))
        return
    for c in claims:
        variants = [c.variant_label(v) for v in c.variants if c.variant_label(v)]
        extra = f"  [variants: {', '.join(variants)}]" if variants else ""
        click.echo(f"{c.id:<24} {c.title}{extra}")


@cli.command("schema")
def schema_cmd() -> None:
    """Print the JSON-Schema (draft 2020-12) of the ``verify/1`` reports (the file shipped with the
    package, ``verify-1.schema.json``), for validating reports with any JSON-Schema tool."""
    from verify.reports.text import schema_text

    click.echo(schema_text(), nl=False)


@cli.command("show")
@click.argument("claim")
def show_cmd(claim: str) -> None:
    """Show a claim's statement, source, options, expectations and cost."""
    if "[" in claim:  # a run id as 'verify all' prints it: the claim it names
        from verify.core.specs import parse_spec

        named = parse_spec(claim)
        if len({id(x) for x, _ in named}) != 1:
            raise InputError(f"{claim!r} names {len(named)} claims; 'verify show' shows one")
        c = named[0][0]
    else:
        c = registry.resolve(claim)
    click.echo(f"{c.id}: {c.title}")
    click.echo(f"  source:    {c.source}")
    click.echo(f"  statement: {c.statement}")
    if c.quantifiers[0]:
        click.echo(f"  quantifiers of the statement: {c.quantifiers[0]}")
        click.echo(f"  quantifiers of the check:     {c.quantifiers[1]}")
    for part in c.parts:
        click.echo(f"  part {part.key} ({part.role}, {PART_ROLES[part.role]}): {part.statement}")
        if part.quantifiers:
            click.echo(f"    quantifiers: {part.quantifiers}")
    click.echo("  options:")
    for o in c.options:
        allowed = f" {{{'|'.join(o.choices)}}}" if o.choices else ""
        click.echo(f"    {o.flag}{allowed}  ({_option_profiles(o)}) {o.help}")
    sizes = c.params_type.sizes
    if sizes:
        click.echo("  sizes that are not options (quick, and full with --full):")
        for name, size in sizes.items():
            click.echo(f"    {name}: quick {size.quick}, full {size.full}  {size.help}")
    click.echo("  variants (whose statement each checks):")
    for v in c.variants:
        params = {**{o.name: o.default for o in c.options}, **v}
        prov = c.provenance_of(params)
        why = f": {prov.why}" if prov.why else ""
        click.echo(f"    {c.variant_label(params) or '(default)'}: {prov.label}{why}")
    if c.expected:
        click.echo("  expected verdicts: " + "; ".join(f"{k or '(default)'}: {v}" for k, v in c.expected.items()))
    if c.repair:
        click.echo(f"  repair:    {c.repair}")
    if c.cost:
        click.echo(f"  cost:      {c.cost}")
    _show_protocol(c)
    for cav in c.caveats:
        click.echo(f"  caveat:    {cav}")
    _show_kernel(c)


def _show_protocol(c: Claim) -> None:
    """The claim's frozen protocol: its hash and date, every field, and the runs the local ledger has seen."""
    if c.protocol is None:
        return
    from verify import ledger
    from verify.core.protocol import registered

    p = c.protocol
    entry = registered(p)
    frozen = (f"frozen {entry['frozen']}" if entry and entry.get("sha256") == p.sha256 else
              "NOT the registered protocol (edited without a new version, or never frozen)")
    click.echo(f"  protocol:  {p.claim} v{p.version}, sha256 {p.sha256} ({frozen})")
    click.echo(f"    confirmatory run: {p.command}; seeds {p.seeds[0]}..{p.seeds[-1]} (development seeds "
               f"{p.development_seeds[0]}..{p.development_seeds[1]}, never confirmatory)")
    click.echo(f"    statistic: {p.statistic}")
    click.echo(f"    test:      {p.test}")
    for t in p.thresholds:
        rng = f"; sensitivity range {t.low:g}..{t.high:g}" if t.low is not None and t.high is not None else ""
        click.echo(f"    threshold: {t.name} = {t.value:g} ({t.source}{rng})")
    click.echo("    fixed:     " + ", ".join(f"--{k} {','.join(map(str, v)) if isinstance(v, (list, tuple)) else v}"
                                           for k, v in p.fixed))
    click.echo(f"    horizon:   {p.horizon}")
    click.echo(f"    stopping:  {p.stopping}")
    click.echo(f"    arms:      {p.arms}")
    click.echo(f"    cost:      {p.cost}")
    led = ledger.summary(None, p.claim)
    decided = "; ".join(f"{label or 'the claim'}: run {d['run']} of {d['time']} ({d.get('outcome') or d.get('status')})"
                        for label, d in sorted(led["deciding"].items()))
    decided = f"; deciding: {decided}" if decided else "; no confirmatory run has finished here"
    click.echo(f"    ledger ({ledger.ledger_path(None)}): {led['runs']} run(s), {led['confirmatory']} confirmatory, "
               f"{led['exploratory']} exploratory, {led['incomplete']} incomplete{decided}")


def _option_profiles(o: Option) -> str:
    """An option's default, and its value under ``--full`` where that differs."""
    if o.full is None:
        return f"default {o.default}"
    return f"default {o.default}; full {o.at(o.default, 'full')}" + (f" ({o.full})" if isinstance(o.full, Times) else "")


def _show_kernel(c: Claim) -> None:
    """The Coq theorems that answer the claim's variants, each as its source states it (nothing is compiled)."""
    from verify.kernel.check import kernel_statements
    from verify.kernel.driver import THEORIES, statement_text

    by_variant = kernel_statements(c.id)
    if not by_variant:
        return
    click.echo("  kernel (Coq theorems, for every size they quantify over):")
    for variant, statements in by_variant.items():
        for s in statements:
            role = "proves" if s.role == "proves" else "refutes (a counterexample)"
            part = f" (part {s.part})" if s.part else ""
            click.echo(f"    [{variant or 'default'}]{part} {s.qualified} {role}: {s.reading}")
            source = (THEORIES / f"{s.theory}.v")
            text = statement_text(source.read_text(), s.theorem) if source.exists() else ""
            click.echo(f"      Coq: {text or '(not found in the theory source)'}")


@cli.command("all", epilog=EXIT_HELP)
@_common
@click.option("--expect", "expect_file", type=click.Path(dir_okay=False), default=None, help=EXPECT_HELP)
@click.option("--jobs", "jobs_opt", type=int, default=None, help=JOBS_HELP)
def all_cmd(fmt: str, seed: int, timeout: float, layers: str, quiet: bool, no_timings: bool, brief: bool,
            verbose: bool, junit: str | None, plots: str | None, certificates: str | None, full: bool,
            cache_dir: str | None, expect_file: str | None, jobs_opt: int | None) -> None:
    """Run every registered claim and variant and compare each verdict with its expectation."""
    lay = parse_layers(layers)
    expectations = load_expect(expect_file)
    _preflight(seed, timeout, junit, plots, certificates)
    n_jobs = run.jobs(jobs_opt)
    claims = [c for c in registry.all_claims() if full or not c.heavy]
    prog = _Progress(quiet)
    with prog.running() as progress:
        ran = run_all(claims, context(seed, timeout, progress, full, cache_dir), lay, expectations, n_jobs)
    results, changes = ran.results, ran.changes
    code = EXIT_FAIL if changes else EXIT_OK
    _write_certificates(results, certificates, prog)
    left_out = ran.not_checked + ran.unavailable
    for line in ran.unavailable:
        prog.note(f"not checked, a package is missing: {line}")
    _emit(results, "all", fmt, seed, code, changes, not no_timings, verbose, left_out)
    _side_outputs(results, junit=junit, plots=plots, mode="expect", suite="verify all", seed=seed, layers=lay,
                  timings=not no_timings, prog=prog, not_checked=left_out)
    raise click.exceptions.Exit(code)


@cli.command("audit", epilog=EXIT_HELP)
@click.argument("paper")
@_common
@click.option("--report", type=click.Path(dir_okay=False), default=None,
              help="write the referee's letter here (Markdown, <= 300 lines; HTML when FILE ends in .html; default: "
                   "print it on stdout)")
@click.option("--appendix", type=click.Path(dir_okay=False), default=None,
              help="write the full evidence here (Markdown, or HTML when FILE ends in .html; every layer of every "
                   "variant), linked from the letter")
@click.option("--stored", type=click.Path(file_okay=False), default="results/confirmatory", show_default=True,
              help="a folder of stored confirmatory results (verify CLAIM --confirmatory --format json) the letter "
                   "reports for the claims that rest on training")
@click.option("--expect", "expect_file", type=click.Path(dir_okay=False), default=None, help=EXPECT_HELP)
@click.option("--timings", is_flag=True, help="include wall times in the Markdown report")
@click.option("--summary", is_flag=True, help="print the report's first page on the terminal (one line per claim "
              "variant: verdict, whose statement, the reason, the repair)")
@click.option("--jobs", "jobs_opt", type=int, default=None, help=JOBS_HELP)
def audit_cmd(paper: str, fmt: str, seed: int, timeout: float, layers: str, quiet: bool, no_timings: bool,
              brief: bool, verbose: bool, junit: str | None, plots: str | None, certificates: str | None,
              full: bool, cache_dir: str | None, report: str | None, appendix: str | None, stored: str,
              expect_file: str | None, timings: bool, summary: bool, jobs_opt: int | None) -> None:
    """Referee's audit of one PAPER (a key from 'verify list', e.g. ws24): a letter (page one: every claim with its
    verdict and one sentence; per claim the paper's words, the verdict, a witness, the layers; hazards apart) and,
    with --appendix, the full evidence of every variant.

    \b
    Without --report the letter goes to stdout (or JSON with --format json);
    with --report, stdout gets the summary table; --summary prints one line per
    claim variant with its reason.
    """
    key = paper.strip().lower()
    claims = [c for c in registry.paper_claims(key) if full or not c.heavy]
    lay = parse_layers(layers)
    expectations = [e for e in load_expect(expect_file) if e[0].paper == key]
    _preflight(seed, timeout, junit, plots, certificates, report, appendix)
    from verify.reports.letter import letter_markdown, read_stored, written_as

    heavy_stored = read_stored(stored, key)  # a malformed stored result is refused before any work
    n_jobs = run.jobs(jobs_opt)
    prog = _Progress(quiet)
    with prog.running() as progress:
        ran = run_all(claims, context(seed, timeout, progress, full, cache_dir), lay, expectations, n_jobs)
    results, changes = ran.results, ran.changes
    code = EXIT_FAIL if changes else EXIT_OK
    _write_certificates(results, certificates, prog)
    figures = _side_outputs(results, junit=junit, plots=plots, mode="expect", suite=f"verify audit {key}",
                            seed=seed, layers=lay, timings=not no_timings, prog=prog, not_checked=ran.not_checked)
    from verify.reports.audit import audit_markdown

    rel_to = Path(report).resolve().parent if report else Path.cwd()
    figs = [os.path.relpath(f.resolve(), rel_to) for f in figures]
    link = os.path.relpath(Path(appendix).resolve(), rel_to) if appendix else ""
    md = letter_markdown(key, results, heavy_stored, appendix=link, not_checked=ran.not_checked)
    if appendix is not None:  # the full evidence, built only when it is written
        atomic_write_text(appendix, written_as(appendix, audit_markdown(
            key, results, changes, seed=seed, layers=lay, timings=timings, plots=figs, not_checked=ran.not_checked),
            f"verify audit {key}: appendix"), "--appendix")
        prog.note(f"appendix written to {appendix}")
    if report is not None and report != "-":
        atomic_write_text(report, written_as(report, md, f"verify audit {key}"), "--report")
        if summary and fmt != "json":
            from verify.reports.audit import summary_text

            click.echo(summary_text(key, results, timings, ran.not_checked), nl=False)
        elif fmt == "json":
            click.echo(to_json(results, "audit", seed, code, changes, not no_timings, ran.not_checked))
        else:
            _emit(results, "audit", fmt, seed, code, changes, not no_timings, verbose, ran.not_checked)
        prog.note(f"report written to {report}")
    elif fmt == "json":
        click.echo(to_json(results, "audit", seed, code, changes, not no_timings, ran.not_checked))
    elif summary:
        from verify.reports.audit import summary_text

        click.echo(summary_text(key, results, timings, ran.not_checked), nl=False)
    else:
        click.echo(md, nl=False)
    raise click.exceptions.Exit(code)


def _recheck_stored(path: str, fmt: str, cache_dir: str | None) -> None:
    from verify.reports.stored import recheck_stored

    prog = _Progress(False)
    with prog.running() as progress:
        rows = recheck_stored(path, cache_dir, progress)
    if fmt == "json":
        import json

        click.echo(json.dumps({"file": path, "valid": all(ok for _, ok, _ in rows),
                               "results": [{"run_id": r, "same": ok, "message": m} for r, ok, m in rows]}, indent=2))
    else:
        for r, ok, m in rows:
            click.echo(f"{'same     ' if ok else 'DIFFERENT'} {r}: {m}")
    raise click.exceptions.Exit(0 if all(ok for _, ok, _ in rows) else 1)


@cli.command("recheck", epilog="Exit codes: 0 every certificate is valid (a stored result: re-derived the same); 1 some "
                               "file is not (named); 2 no such directory, or a stored result that cannot be re-checked.")
@click.argument("directory")
@click.option("--cache-dir", type=click.Path(file_okay=False), default=None,
              help="the lab cache a stored result's checkpoints are read from (default $XDG_CACHE_HOME/verify/lab)")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option("--rebuild", is_flag=True,
              help="also regenerate each claim's encodings (re-running its solver layer) and require every file "
                   "to carry exactly the claim's rows, with no certified obligation missing")
@click.option("--kernel", is_flag=True,
              help="also replay every certificate in Coq: each case becomes a theorem '~ feasible rows' proved by "
                   "farkas_sound (kernel/theories/Farkas.v) on the file's multipliers, so Coq's kernel accepts or "
                   "refuses it (needs coqc)")
def recheck_cmd(directory: str, fmt: str, rebuild: bool, kernel: bool, cache_dir: str | None) -> None:
    """Re-check every certificate file in DIRECTORY with no solver involved (exact rationals); or, given a stored
    confirmatory result FILE.json (`verify CLAIM --confirmatory --format json`), re-check it on the lab cache without
    retraining: its protocol hash against the registry, each checkpoint's digest, then the same verdict from them.

    \b
    Without --rebuild this shows each file is self-consistent: its multipliers refute its
    own rows, and the rows match the file's recorded hash. With --rebuild it also shows
    the rows are the encoding the claim produces today and that no certificate is missing.
    With --kernel each file that passes is replayed in Coq as well, and is valid only if
    the kernel accepts it too.
    """
    from verify.reports.certificates import rebuild_check, recheck_dir

    if directory.endswith(".json") and Path(directory).is_file():
        _recheck_stored(directory, fmt, cache_dir)
        return
    if kernel and shutil.which("coqc") is None:
        from verify.kernel.driver import INSTALL_HINT

        raise InputError(f"--kernel: {INSTALL_HINT}")
    rows = recheck_dir(directory)
    if kernel:
        replayed = {Path(label): (ok, m) for label, ok, m in _replay_checked([f for f, ok, _ in rows if ok])}
        rows = [(f, ok and replayed[f][0], m + "; " + replayed[f][1]) if f in replayed else (f, ok, m)
                for f, ok, m in rows]
    missing: list[str] = []
    if rebuild:
        mismatched, missing = rebuild_check(directory)
        why = {f: m for f, _, m in mismatched}
        rows = [(f, ok and f not in why, m if f not in why else why[f]) for f, ok, m in rows]
    bad = [r for r in rows if not r[1]] + [(m, False, m) for m in missing]
    if fmt == "json":
        import json

        click.echo(json.dumps({"directory": directory, "valid": not bad, "rebuilt": rebuild, "kernel": kernel,
                               "missing": missing,
                               "files": [{"file": str(f), "valid": ok, "message": m} for f, ok, m in rows]}, indent=2))
    else:
        for f, ok, m in rows:
            click.echo(f"{'valid  ' if ok else 'INVALID'} {f}: {m}")
        for m in missing:
            click.echo(f"MISSING {m}")
        n_ok = sum(ok for _, ok, _ in rows)
        click.echo(f"{n_ok}/{len(rows)} certificates valid"
                   + (f"; {len(missing)} missing" if missing else "")
                   + ("" if rebuild else " (self-consistency only; --rebuild also ties a registered claim's "
                                         "certificates to the claim's own encoding)"))
    raise click.exceptions.Exit(EXIT_FAIL if bad else EXIT_OK)


def _replay_checked(files: Sequence[Path]) -> list[tuple[str, bool, str]]:
    """Replay in Coq exactly the bytes that pass the exact re-check: each file is read once, re-checked
    from those bytes, and only those bytes are replayed (a file swapped after ``recheck_dir`` read it
    is judged on what is replayed)."""
    import json

    from verify.kernel.head_replay import replay_document
    from verify.kernel.replay import replay_documents
    from verify.numeric.head_bounds import FORMAT as HEAD_FORMAT
    from verify.reports.certificates import recheck_bytes
    from verify.safeio import UnsafeInput, read_regular_file

    docs, out = [], []
    for f in files:
        try:
            data = read_regular_file(f, follow_symlinks=False)
        except UnsafeInput as e:
            out.append((str(f), False, str(e)))
            continue
        ok, why = recheck_bytes(f, data)
        if ok and HEAD_FORMAT.encode() in data:
            valid, why = replay_document(json.loads(data.decode("utf-8")))
            out.append((str(f), valid, why))
        elif ok:
            docs.append((str(f), data))
        else:
            out.append((str(f), False, f"changed since it was checked: {why}"))
    return out + replay_documents(docs)


#: the exit code of each kind of :class:`~verify.core.model.VerifyError` that reaches the command line (the
#: first entry the error is an instance of); each prints one line on stderr
ERROR_EXIT: tuple[tuple[type[VerifyError], int], ...] = (
    (InputError, EXIT_USAGE),
    (InconclusiveError, EXIT_INCONCLUSIVE),
)


def error_exit_code(exc: VerifyError) -> int | None:
    """The exit code :data:`ERROR_EXIT` gives ``exc`` (None: a kind it does not map, raised as a defect)."""
    return next((code for kind, code in ERROR_EXIT if isinstance(exc, kind)), None)


def _error(message: str) -> None:
    """One line on stderr, never longer than a screen line or two."""
    # what the user typed is clipped inside each message; this cap only bounds the line (a claim list fits)
    click.echo(f"verify: error: {clip(' '.join(message.split()), 1500)}", err=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``verify`` console script; returns the exit code."""
    args = list(argv) if argv is not None else sys.argv[1:]
    if argv is None:  # the console script's own process (a caller's interpreter keeps its settings)
        from verify.pipeline.pool import tune_gc

        tune_gc()
    with interrupts.watching():
        code = _main(args)
    if argv is None and code in (130, 143):  # the console script ends now: a second key must not print a
        ignore_further_interrupts()  # traceback from the interpreter's exit (the pool's exit-time join)
    return code


def _main(args: list[str]) -> int:
    """The exit code; after a Ctrl-C always 130 and one line, whatever the run did after the key (a
    destructor swallowed its exception, or an import it cut short failed with another error)."""
    try:
        code = _dispatch(args)
    except Exception:
        if not interrupts.pressed():
            raise
        code = None
    if code is None or interrupts.pressed():
        ignore_further_interrupts()  # while stopping (watching() restores the handler when main returns)
        click.echo("verify: aborted", err=True)
        return interrupts.exit_code()  # 130 after Ctrl-C, 143 after SIGTERM (taken the same way)
    return code


def _dispatch(args: list[str]) -> int | None:
    """The exit code of one command line, or None when it was aborted (Ctrl-C)."""
    try:
        check_duplicate_flags(args)
        floatnoise.seed_from_environment()  # a malformed VERIFY_FLOAT_PERTURBATION: refused before any work
        rv = cli.main(args=args, prog_name="verify", standalone_mode=False)
        if isinstance(rv, int):  # click returns Exit codes instead of raising when not standalone
            return rv
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except VerifyError as e:
        code = error_exit_code(e)
        if code is None:
            raise
        _error(str(e))
        return code
    except click.exceptions.NoArgsIsHelpError as e:  # bare 'verify': the help, whole
        click.echo(e.ctx.get_help() if e.ctx is not None else e.format_message(), err=True)
        return EXIT_USAGE
    except click.UsageError as e:
        _error(e.format_message())
        return EXIT_USAGE
    except floatnoise.PerturbationSettingError as e:
        _error(str(e))
        return EXIT_USAGE
    except click.Abort:
        return None
    return EXIT_OK


__all__ = ["main", "cli", "audit_cmd", "EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_INCONCLUSIVE", "VERDICT_EXIT"]

from verify.frontends.alpha_cli import alpha_cmd  # noqa: E402

cli.add_command(alpha_cmd, "alpha")
from verify.frontends.alpha_cli import realizable_cmd  # noqa: E402

cli.add_command(realizable_cmd, "realizable")
from verify.frontends.head_cli import head_cmd  # noqa: E402

cli.add_command(head_cmd, "head")
