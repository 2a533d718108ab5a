"""The app served by a real ``streamlit run`` on a free loopback port, for the benchmarks and the
browser tests that drive it from headless Chromium: started as ``make app`` starts it."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]


def command(port: int) -> list[str]:
    """``make app``'s command line (the Makefile's ``app`` recipe) on a loopback port. Nothing
    else is passed: every setting comes from .streamlit/config.toml, as it does for a user."""
    return [sys.executable, "-m", "streamlit", "run", "app.py", f"--server.port={port}",
            "--server.address=127.0.0.1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def served(log=subprocess.DEVNULL) -> Iterator[tuple[str, int]]:
    """(URL, server PID) once the server answers its health check; on exit the server and the
    processes it started (joblib workers) are killed. Its privacy account is SYNTH_HOME's if
    that is set (the tests set their own), else a fresh one: a benchmark's runs never charge
    the user's ~/.synth."""
    port = free_port()
    home = contextlib.ExitStack()
    synth_home = os.environ.get("SYNTH_HOME") or home.enter_context(
        tempfile.TemporaryDirectory(prefix="synth-home-"))
    server = subprocess.Popen(command(port), cwd=REPO, stdout=log, stderr=subprocess.STDOUT,
                              start_new_session=True, env={**os.environ,
                                                           "SYNTH_HOME": synth_home})
    url = f"http://127.0.0.1:{port}"
    try:
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2):
                    break
            except OSError:
                time.sleep(0.05)
        yield url, server.pid
    finally:
        os.killpg(server.pid, signal.SIGKILL)
        server.wait()
        home.close()


def unfold(within, label: str, content, wait_s: float = 300) -> None:
    """Open the folded section titled ``label`` and wait for ``content`` in it. A click that
    lands while the page is still being drawn can be undone when the section is drawn again,
    so a section found folded is clicked open again until ``content`` shows; an open one is
    never clicked (that would fold it)."""
    from playwright.sync_api import TimeoutError as Timeout

    title = within.get_by_text(label, exact=False).first
    folded = title.locator("xpath=ancestor::*[@data-testid='stExpander'][1]").get_by_test_id(
        "stExpanderDetails")
    deadline = time.monotonic() + wait_s
    while True:
        if folded.get_attribute("inert") is not None:
            title.click()
        try:
            content.wait_for(state="visible", timeout=10_000)
            return
        except Timeout:
            assert time.monotonic() < deadline, (
                f"the section {label!r} did not show its content within {wait_s:g} s")
