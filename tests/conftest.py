"""Shared fixtures: the Adult table from ../shared (read once) and the bundled sample."""

from __future__ import annotations

import os
import signal
import tempfile
from pathlib import Path

import pytest

from benchmarks.tables import script
from synth.data import load_sample, read_table
from synth.protocol import adult_schema, protocol_split

# every run charges the persistent privacy account under SYNTH_HOME: the tests (and the CLI
# and servers they start, which inherit it) keep theirs apart from the user's ~/.synth
os.environ["SYNTH_HOME"] = tempfile.mkdtemp(prefix="synth-home-")

REPO = Path(__file__).resolve().parent.parent
ADULT = REPO.parent / "shared" / "data" / "adult.csv"


def given(table) -> int:
    """Rows the app gives a method: the protocol split's train and validation parts (its test
    sixth is held out)."""
    train, validation, _ = protocol_split(table)
    return len(train) + len(validation)


@pytest.fixture
def app(monkeypatch, tmp_path):
    """The app on its bundled sample, as a browser first opens it (Streamlit's AppTest; a
    page's rerun may take long on a loaded machine), with a SYNTH_HOME of its own: the run
    store lists a table's runs, so another test's runs of the sample must not show."""
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("SYNTH_HOME", str(tmp_path / "home"))

    at = AppTest.from_file(str(REPO / "app.py"), default_timeout=600)
    at.run()
    assert not at.exception
    return at


@pytest.fixture(scope="session")
def bank():
    """A 45,000-row table shaped like UCI Bank (scripts/make_bank_data.py): negative and
    heavy-tailed balances, ages to 95, blanks in pdays, a rare target."""
    return script("make_bank_data").generate(45_000, 0)


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


class Timeout(Exception):
    """A call ran past :func:`within`'s limit: a loop that never ends."""


def within(seconds: float, f, *args):
    """f(*args), or Timeout after a generous limit (the calls take milliseconds): a loop that
    never ends, or a search for an impossible size, is the bug such tests look for."""
    def alarm(*_):
        raise Timeout(f"still running after {seconds:g} s: a hang")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return f(*args)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def changes(steps: list) -> list:
    """``steps`` without consecutive repeats: a stage slower than the heartbeat repeats its
    last step (synth.methods.base.HEARTBEAT), which a loaded machine must not turn red."""
    return [t for i, t in enumerate(steps) if i == 0 or t != steps[i - 1]]
