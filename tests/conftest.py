"""Shared fixtures: the Adult table from ../shared (read once) and the bundled sample."""

from __future__ import annotations

from pathlib import Path

import pytest

from synth.data import load_sample, read_table
from synth.protocol import adult_schema, protocol_split

REPO = Path(__file__).resolve().parent.parent
ADULT = REPO.parent / "shared" / "data" / "adult.csv"


@pytest.fixture(scope="session")
def adult():
    assert ADULT.exists(), f"the Adult table is expected at {ADULT} (../shared beside the repo)"
    return read_table(ADULT)


@pytest.fixture(scope="session")
def adult_parts(adult):
    return protocol_split(adult)


@pytest.fixture(scope="session")
def adult_public(adult):
    return adult_schema(adult)


@pytest.fixture(scope="session")
def sample():
    return load_sample()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """Keep each phase's report on the test item, so fixtures can tell a failed test."""
    report = yield
    setattr(item, f"rep_{report.when}", report)
    return report
