"""Runs: what is shared by every way of making a release (the CLI, the app, sweeps).

For now the command that reproduces a run's configuration; issue 17 gathers the rest here.
"""

from __future__ import annotations

import json
import shlex
from typing import Any


def run_command(method: str, epsilon: float, delta: float, seed: int | None,
                params: dict[str, Any], shares: dict[str, float], data: str = "DATA.csv",
                schema: str = "schema.json") -> str:
    """The ``python -m synth run`` line that runs the same configuration (for the app and
    reports). Its noise is fresh, so it makes another release from the same distribution."""
    words = ["python", "-m", "synth", "run", data, "--schema", schema, "--method", method,
             "--epsilon", f"{epsilon:g}", "--delta", f"{delta:g}",
             "--out", "synth.csv", "--ledger", "ledger.json"]
    if seed is not None:
        words += ["--postprocessing-seed", str(seed)]
    for key, value in params.items():
        words += ["--set", f"{key}={json.dumps(value)}"]
    for stage, share in shares.items():
        words += ["--set", f"share.{stage}={float(share)!r}"]  # shortest exact: 0.1
    return shlex.join(words)
