"""The ``verify`` command line (DESIGN.md, CLI contract).

    verify list                      the registered claims
    verify show CLAIM                a claim's statement, source, options, cost
    verify CLAIM [options]           check one claim variant
    verify all                       every claim and variant against its expectation

Exit codes: 0 the verdict is what was asked (a claim holds or holds with its fix; in
``all``, every verdict equals its recorded expectation); 1 a claim does not hold
(FAILS or INCONSISTENT) or, in ``all``, a verdict changed; 2 usage or input error;
3 inconclusive (a solver said unknown, a budget ran out, or a layer errored).

stdout carries only the report (text or ``--format json``); progress goes to stderr
when it is a terminal, and never with ``--quiet``.
"""

from __future__ import annotations

import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Sequence

import click

from verify import __version__
from verify.evidence import LAYERS, Context
from verify.proofs import registry
from verify.proofs.model import (
    EXIT_FAIL,
    EXIT_INCONCLUSIVE,
    EXIT_OK,
    EXIT_USAGE,
    VERDICT_EXIT,
    Claim,
    ClaimResult,
    InputError,
    run_claim,
)
from verify.proofs.render import result_text, table_text, to_json

EXIT_HELP = """\b
Exit codes:
  0  the verdict is what was asked: the claim holds (or holds with the
     requested fix); for 'all', every verdict equals its expectation
  1  the claim does not hold (FAILS / INCONSISTENT); for 'all', a verdict
     changed
  2  usage or input error (unknown claim, bad option, sizes that cannot fit)
  3  inconclusive (solver unknown, budget exhausted, a layer errored)
"""


def _common(f: Callable) -> Callable:
    opts = [
        click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
                     help="report format on stdout"),
        click.option("--seed", type=int, default=0, show_default=True, help="master seed for every random choice"),
        click.option("--timeout", type=float, default=20.0, show_default=True,
                     help="per-obligation solver budget in seconds"),
        click.option("--layers", default=",".join(LAYERS), show_default=True,
                     help="comma-separated layers to run (others are reported as skipped)"),
        click.option("--quiet", is_flag=True, help="no progress on stderr"),
        click.option("--no-timings", is_flag=True, help="write wall times as 0 (byte-identical JSON across runs)"),
        click.option("--brief", is_flag=True, help="text: statuses and summaries only"),
    ]
    for o in reversed(opts):
        f = o(f)
    return f


class _Progress:
    """Progress lines on stderr for long work, only when stderr is a terminal."""

    def __init__(self, quiet: bool) -> None:
        self.enabled = not quiet and sys.stderr.isatty()
        self._status = None

    @contextmanager
    def running(self) -> Iterator[Callable[[str], None] | None]:
        if not self.enabled:
            yield None
            return
        from rich.console import Console

        console = Console(stderr=True)
        with console.status("starting") as status:
            yield lambda msg: status.update(msg)


def _context(seed: int, timeout: float, progress: Callable[[str], None] | None) -> Context:
    if timeout <= 0:
        raise InputError(f"--timeout must be positive, got {timeout}")
    return Context(seed=seed, timeout_ms=int(timeout * 1000), progress=progress)


def _layers(raw: str) -> tuple[str, ...]:
    names = tuple(x.strip() for x in raw.split(",") if x.strip())
    bad = [n for n in names if n not in LAYERS]
    if bad or not names:
        raise InputError(f"--layers {raw!r}: choose from {', '.join(LAYERS)}")
    return names


def _emit(results: Sequence[ClaimResult], command: str, fmt: str, seed: int, code: int,
          changes: Sequence[str], timings: bool, brief: bool) -> None:
    if fmt == "json":
        click.echo(to_json(results, command, seed, code, changes, timings))
        return
    if command == "all":
        click.echo(table_text(results))
        if changes:
            click.echo("\nverdicts that changed from their expectations:")
            for c in changes:
                click.echo(f"  {c}")
        else:
            click.echo(f"\nall {len(results)} verdicts equal their expectations")
    else:
        for r in results:
            click.echo(result_text(r, verbose=not brief))


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
    claims = registry.all_claims()
    seen: dict[str, Any] = {}
    for c in claims:
        for o in c.options:
            seen.setdefault(o.name, o)
    params = [click.Option([o.flag, o.name], default=None, help=o.help) for o in seen.values()]

    @_common
    def callback(fmt: str, seed: int, timeout: float, layers: str, quiet: bool, no_timings: bool,
                 brief: bool, **raw: Any) -> None:
        given = [k for k, v in raw.items() if v is not None]
        claim = registry.resolve(name, given)
        p = claim.parse_params({k: raw[k] for k in given})
        lay = _layers(layers)
        prog = _Progress(quiet)
        with prog.running() as progress:
            result = run_claim(claim, p, _context(seed, timeout, progress), lay)
        code = result.exit_code
        _emit([result], "claim", fmt, seed, code, [], not no_timings, brief)
        raise click.exceptions.Exit(code)

    cmd = click.Command(name, params=params, callback=callback,
                        help=f"Check the claim {name!r} (see 'verify show {name}').")
    cmd.params = callback.__click_params__ + params if hasattr(callback, "__click_params__") else params
    return cmd


@click.group(cls=ClaimGroup, epilog=EXIT_HELP, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="verify")
def cli() -> None:
    """verify: check published claims about transformer attention, three ways
    (symbolic / solver / numeric), and say with evidence whether each holds as written.

    \b
    verify list                                  the registered claims
    verify show CLAIM                            statement, source, options, cost
    verify CLAIM [options]                       check one claim, e.g.
        verify theorem2 --orientation transposed
    verify all                                   every claim against its expectation
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


@cli.command("show")
@click.argument("claim")
def show_cmd(claim: str) -> None:
    """Show a claim's statement, source, options, expectations and cost."""
    c = registry.resolve(claim)
    click.echo(f"{c.id}: {c.title}")
    click.echo(f"  source:    {c.source}")
    click.echo(f"  statement: {c.statement}")
    click.echo("  options:")
    for o in c.options:
        allowed = f" {{{'|'.join(o.choices)}}}" if o.choices else ""
        click.echo(f"    {o.flag}{allowed}  (default {o.default}) {o.help}")
    if c.expected:
        click.echo("  expected verdicts: " + "; ".join(f"{k or '(default)'}: {v}" for k, v in c.expected.items()))
    if c.repair:
        click.echo(f"  repair:    {c.repair}")
    if c.cost:
        click.echo(f"  cost:      {c.cost}")
    for cav in c.caveats:
        click.echo(f"  caveat:    {cav}")


def run_all(claims: Sequence[Claim], ctx: Context, layers: Sequence[str]) -> tuple[list[ClaimResult], list[str]]:
    """Run every variant of every claim; return results and the list of changed verdicts."""
    results: list[ClaimResult] = []
    changes: list[str] = []
    for c in claims:
        for v in c.variants:
            p = c.parse_params(dict(v))
            r = run_claim(c, p, ctx, layers)
            expected = c.expected.get(c.variant_label(p))
            r.expected = expected
            results.append(r)
            if expected is not None and expected != r.verdict:
                changes.append(f"{r.display_id}: {expected} -> {r.verdict}")
            elif expected is None:
                changes.append(f"{r.display_id}: no expectation recorded (got {r.verdict})")
    return results, changes


@cli.command("all", epilog=EXIT_HELP)
@_common
@click.option("--full", is_flag=True, help="also run the heavy claims")
def all_cmd(fmt: str, seed: int, timeout: float, layers: str, quiet: bool, no_timings: bool, brief: bool,
            full: bool) -> None:
    """Run every registered claim and variant and compare each verdict with its expectation."""
    lay = _layers(layers)
    claims = [c for c in registry.all_claims() if full or not c.heavy]
    prog = _Progress(quiet)
    with prog.running() as progress:
        results, changes = run_all(claims, _context(seed, timeout, progress), lay)
    code = EXIT_FAIL if changes else EXIT_OK
    _emit(results, "all", fmt, seed, code, changes, not no_timings, brief)
    raise click.exceptions.Exit(code)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``verify`` console script; returns the exit code."""
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="verify", standalone_mode=False)
    except click.exceptions.Exit as e:
        return int(e.exit_code)
    except InputError as e:
        click.echo(f"verify: error: {e}", err=True)
        return EXIT_USAGE
    except click.UsageError as e:
        click.echo(f"verify: error: {e.format_message()}", err=True)
        return EXIT_USAGE
    except click.Abort:
        click.echo("verify: aborted", err=True)
        return 130
    return EXIT_OK


__all__ = ["main", "cli", "run_all", "EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_INCONCLUSIVE", "VERDICT_EXIT"]
