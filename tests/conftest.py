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
    """Each test searches its own Farkas certificates and solves its own obligations (a fault injected
    into the search must not be hidden by a certificate or an answer another test found)."""
    from verify.solver import certify, common

    certify._CERTIFIED.clear()
    common._ANSWERED.clear()
    yield
    certify._CERTIFIED.clear()
    common._ANSWERED.clear()
