"""pytest plugin: published claims as test items (``pytest --verify-claims=...``).

Registered as the ``pytest11`` entry point ``verify_claims``, so installing
``verify-attention`` makes the options available in every pytest run.  Without
``--verify-claims`` the plugin does nothing (and imports nothing heavy).

    pytest --verify-claims=ws24                                   # every variant of every ws24 claim
    pytest --verify-claims=ws24:theorem2                          # the claim as written (defaults)
    pytest --verify-claims='ws24:theorem2[orientation=transposed]'
    pytest --verify-claims='ws24:theorem2[transposed,d=64,V=8]' --verify-layers=symbolic,solver

The spec syntax is documented in :mod:`verify.core.specs`.  Each claim variant is
one test item (node id ``verify-claims::<run id>``); it passes when the verdict is
HOLDS or HOLDS WITH FIX and fails otherwise (FAILS, INCONSISTENT, INCONCLUSIVE),
showing the verdict, the reason, the witness and the findings.  A bad spec is a usage
error (pytest exit code 4).  Options: ``--verify-layers``, ``--verify-seed``,
``--verify-timeout`` (seconds per solver obligation), ``--verify-profile`` (``quick`` sizes, or the
paper-scale ``full`` sizes of ``verify --full``).
"""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from verify.evidence import DEFAULT_TIMEOUT_S, PROFILES


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add the ``--verify-*`` options."""
    group = parser.getgroup("verify", "published claims as tests (verify-attention)")
    group.addoption("--verify-claims", action="append", default=[], metavar="ID[,ID...]",
                    help="collect these claims as test items: paper keys (ws24), claim ids (ws24:theorem2), "
                         "variants (ws24:theorem2[orientation=transposed]); repeatable")
    group.addoption("--verify-layers", default="symbolic,solver,numeric,kernel", metavar="LAYERS",
                    help="comma-separated layers to run for --verify-claims (default: all four)")
    group.addoption("--verify-seed", type=int, default=0, help="master seed for --verify-claims (default 0)")
    group.addoption("--verify-timeout", type=float, default=DEFAULT_TIMEOUT_S,
                    help=f"per-obligation solver budget in seconds for --verify-claims (default {DEFAULT_TIMEOUT_S:g})")
    group.addoption("--verify-profile", choices=PROFILES, default=PROFILES[0],
                    help="size profile for --verify-claims: quick (the default sizes) or full (the paper-scale sizes "
                         "of 'verify --full'; 'verify show CLAIM' lists both)")


class ClaimFailed(Exception):
    """Raised by a claim item whose verdict is not HOLDS / HOLDS WITH FIX."""

    def __init__(self, result: Any) -> None:
        super().__init__(f"{result.display_id}: {result.verdict}")
        self.result = result


class ClaimItem(pytest.Item):
    """One claim variant run as a test."""

    def __init__(self, *, claim: Any, params: dict[str, Any], **kw: Any) -> None:
        super().__init__(**kw)
        self.claim = claim
        self.params = params
        self.result: Any = None

    def runtest(self) -> None:
        from verify.core.model import HOLDS, HOLDS_WITH_FIX
        from verify.evidence import Context
        from verify.pipeline.run import run_one

        cfg = self.config
        layers = _layers(cfg.getoption("verify_layers"))
        if not self.claim.checked_layers(layers):
            # the rule of 'verify all': a claim with no check in the requested layers is not run
            pytest.skip(f"{self.claim.id} has no check in --verify-layers {','.join(layers)}")
        ctx = Context(seed=cfg.getoption("verify_seed"), timeout_ms=cfg._verify_timeout_ms,  # type: ignore[attr-defined]
                      profile=cfg.getoption("verify_profile"))
        self.result = run_one(self.claim, self.params, ctx, layers)
        self.user_properties.append(("verdict", self.result.verdict))
        if self.result.verdict not in (HOLDS, HOLDS_WITH_FIX):
            raise ClaimFailed(self.result)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, ClaimFailed):
            from verify.reports.text import result_text

            r = excinfo.value.result
            return (f"claim {r.display_id} does not hold: {r.verdict} ({r.reason})\n\n"
                    + result_text(r, verbose=False))
        return str(super().repr_failure(excinfo, style))

    def reportinfo(self) -> tuple[Any, int | None, str]:
        return self.path, None, f"verify claim {self.name}"


class ClaimCollector(pytest.Collector):
    """The virtual collector holding the ``--verify-claims`` items."""

    def __init__(self, *, specs: list[tuple[Any, Mapping[str, Any]]], **kw: Any) -> None:
        super().__init__(**kw)
        self.specs = specs

    def collect(self) -> list[pytest.Item]:
        from verify.core.specs import run_id

        return [ClaimItem.from_parent(self, name=run_id(c, p), claim=c, params=p) for c, p in self.specs]


def _layers(raw: str) -> tuple[str, ...]:
    """``--verify-layers``, parsed by the CLI's own parser; a bad value stops pytest with a usage error."""
    from verify.core.inputs import parse_layers
    from verify.core.model import InputError

    try:
        return parse_layers(raw, "--verify-layers")
    except InputError as e:
        raise pytest.UsageError(str(e)) from None


def _specs(config: pytest.Config) -> list[tuple[Any, Mapping[str, Any]]]:
    from verify.core.model import InputError
    from verify.core.specs import parse_specs

    out: list[tuple[Any, Mapping[str, Any]]] = []
    try:
        for raw in config.getoption("verify_claims"):
            out.extend(parse_specs(raw))
    except InputError as e:
        raise pytest.UsageError(f"--verify-claims: {e}") from None
    return out


def pytest_configure(config: pytest.Config) -> None:
    """Validate the options early (usage errors before any collection)."""
    if config.getoption("verify_claims", default=None):
        from verify.core.inputs import check_seed, check_timeout
        from verify.core.model import InputError

        _layers(config.getoption("verify_layers"))
        try:
            check_seed(config.getoption("verify_seed"), "--verify-seed")
            config._verify_timeout_ms = check_timeout(config.getoption("verify_timeout"),  # type: ignore[attr-defined]
                                                      "--verify-timeout")
        except InputError as e:
            raise pytest.UsageError(str(e)) from None
        config._verify_specs = _specs(config)  # type: ignore[attr-defined]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """Append one item per claim variant (before -k/-m deselection runs)."""
    specs = getattr(config, "_verify_specs", None)
    if not specs:
        return
    collector = ClaimCollector.from_parent(session, name="verify-claims", nodeid="verify-claims", specs=specs)
    new = collector.collect()
    # report them like any collected items (the "collected N items" count, -v listings)
    config.hook.pytest_collectreport(report=pytest.CollectReport(collector.nodeid, "passed", None, list[Any](new)))
    items.extend(new)


@pytest.fixture
def attention_conforms() -> Any:
    """``verify.testing.assert_attention_conforms``, as a fixture: ``attention_conforms(layer, spec=..., dtype=...)``
    raises AssertionError with the witness when the layer's attention is not the one its specification defines."""
    from verify.testing import assert_attention_conforms

    return assert_attention_conforms
