"""Shared test configuration: a derandomized hypothesis profile with no deadline (CI)."""

import os

import pytest
import torch
from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, max_examples=60)
settings.load_profile("ci" if os.environ.get("CI") else "dev")
torch.set_num_threads(2)


@pytest.fixture(autouse=True)
def _fresh_certificate_memo():
    """Each test searches its own Farkas certificates, solves its own obligations and fits its own heads
    (a fault injected into the search must not be hidden by a result another test found)."""
    from verify.numeric import pr26
    from verify.solver import certify, common

    memos = (certify._CERTIFIED, common._ANSWERED, pr26._FITTED)
    for memo in memos:
        memo.clear()
    yield
    for memo in memos:
        memo.clear()
