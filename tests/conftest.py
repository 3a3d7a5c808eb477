"""Shared test configuration: a derandomized hypothesis profile with no deadline (CI)."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "2")  # torch's threads, read when a test first imports it (not here: a
# mutation run of a module that needs no torch starts in a second, not three)

import pytest  # noqa: E402
from hypothesis import HealthCheck, settings  # noqa: E402

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture(autouse=True)
def _run_cache_per_test():
    """Each test has its own memo scope (:mod:`verify.runcache`): it searches its own Farkas certificates,
    solves its own obligations and fits its own heads (a fault injected into the search must not be hidden
    by a result another test found); the runs inside one test share the scope."""
    from verify import runcache

    with runcache.scope():
        yield


@pytest.fixture(autouse=True)
def _claims_in_this_process():
    """``verify CLAIM`` runs a claim's layers on worker processes by default; a test's monkeypatched
    fault lives in this process, so claim commands run here (tests of the concurrent path run it in a
    subprocess, or through ``verify all --jobs 2``): the run's default settings carry ``claim_jobs=1``."""
    from verify.evidence import Context, using

    with using(Context(claim_jobs=1)):
        yield


@pytest.fixture(autouse=True)
def _ledger_per_test(monkeypatch, tmp_path_factory):
    """The run ledger a run without --cache-dir appends to is this test's own (never the user's ledger beside the lab
    cache, which records real runs); runs with a cache directory write beside it, as users' do.  CLI subprocesses get
    XDG_CACHE_HOME only where a test sets it."""
    from verify import ledger

    where = tmp_path_factory.mktemp("ledger")
    monkeypatch.setattr(ledger, "default_cache_dir", lambda: where)
