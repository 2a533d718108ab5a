"""How long ``make app`` takes to serve when nothing changed: seconds from the command to the
server answering its health check, with the package already installed. Writes
benchmarks/results/start.json.

    python benchmarks/start.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import time
import urllib.request
from pathlib import Path

from served import free_port

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "benchmarks" / "results"
TARGETS = {"start_seconds": 5}


def one_start() -> float:
    """Seconds from ``make app`` to a health check that answers; the server is then killed."""
    port = free_port()
    env = {**os.environ, "STREAMLIT_SERVER_PORT": str(port),
           "STREAMLIT_SERVER_ADDRESS": "127.0.0.1"}
    started = time.perf_counter()
    proc = subprocess.Popen(["make", "--no-print-directory", "app"], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health",
                                            timeout=2):
                    return time.perf_counter() - started
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"make app ended with {proc.returncode}") from None
                time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    one_start()  # the first may install: the figure is for a start when nothing changed
    starts = []
    for i in range(args.repeats):
        starts.append(one_start())
        print(f"[{i + 1}/{args.repeats}] start_seconds {starts[-1]:.2f}", flush=True)
    out = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
           "targets": TARGETS, "medians": {"start_seconds": statistics.median(starts)},
           "runs": [{"start_seconds": s} for s in starts]}
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "start.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["medians"], indent=2))


if __name__ == "__main__":
    main()
