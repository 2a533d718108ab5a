"""What the generators of the project's own test tables share (make_bank_data.py,
make_churn_data.py): per-row draws, the codebook-less schema, the command line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd


def pick(rng: np.random.Generator, options, weights) -> np.ndarray:
    """One draw per row from per-row weights (rows of ``weights`` are normalised here)."""
    w = np.asarray(weights, dtype=float)
    w = w / w.sum(axis=-1, keepdims=True)
    idx = (rng.random(w.shape[0])[:, None] > np.cumsum(w, axis=1)).sum(axis=1)
    return np.asarray(options, dtype=object)[np.minimum(idx, len(options) - 1)]


def without_bounds(schema: dict) -> dict:
    """The schema of a steward without a codebook: categories public, bounds to be learned."""
    for col in schema["columns"]:
        if col["kind"] == "numeric":
            col.pop("lower"), col.pop("upper")
            col["public"] = False
    return schema


def main(doc: str, generate: Callable[[int, int], pd.DataFrame], public_schema: Callable[[], dict],
         rows: int, stem: str, argv: list[str] | None = None) -> None:
    """``python scripts/make_X.py [--rows N] [--seed S] [--out-dir DIR]``: the table as
    ``stem``.csv and its codebook as ``stem``.schema.json."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--rows", type=int, default=rows)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    args.out_dir.mkdir(parents=True, exist_ok=True)
    generate(args.rows, args.seed).to_csv(args.out_dir / f"{stem}.csv", index=False)
    (args.out_dir / f"{stem}.schema.json").write_text(json.dumps(public_schema(), indent=2)
                                                      + "\n")
