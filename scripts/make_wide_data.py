"""Generate a wide table (100 columns of mixed kinds) and its public schema, for scale tests.

The generative description is public and fixed: a latent-class model. Each row belongs to
one of ``CLASSES`` hidden classes (shares from a Dirichlet draw); given its class, every
column is drawn independently:

* 60 categorical columns with 2 to 12 categories (``cat_00`` … ``cat_59``), each class with
  its own category shares (Dirichlet, concentration 0.5: skewed, as real codes are);
* 20 integer columns on public bounds (``int_00`` … ``int_19``): a class-specific Poisson
  count, shifted by the lower bound and clipped, with a spike at the lower bound in a third
  of them (no capital gain, say);
* 19 continuous columns on [0, 1000] (``num_00`` … ``num_18``): class-specific normals,
  clipped;
* ``label``, the binary target: a class-specific probability of "yes".

The description is drawn from ``--description-seed`` (default 21), the rows from ``--seed``;
the schema is written from the description (its categories and bounds), never from the
rows, so it is public knowledge by construction. Rows are written as Parquet in pieces, so a
table of millions of rows never sits in memory whole.

    python scripts/make_wide_data.py --rows 50000 --out /tmp/wide.parquet \\
        [--schema /tmp/wide.schema.json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd

CLASSES = 8
CATEGORICAL, INTEGER, CONTINUOUS = 60, 20, 19
PIECE = 200_000  # rows generated and written at a time


def description(seed: int = 21) -> dict:
    """The model's parameters, from a fixed seed: the public generative description."""
    rng = np.random.default_rng(seed)
    columns = []
    for j in range(CATEGORICAL):
        k = int(rng.integers(2, 13))
        columns.append({"name": f"cat_{j:02d}", "kind": "categorical",
                        "categories": [f"c{j:02d}_{v}" for v in range(k)],
                        "shares": rng.dirichlet(np.full(k, 0.5), CLASSES).tolist()})
    for j in range(INTEGER):
        upper = int(rng.choice([10, 50, 100, 1000]))
        columns.append({"name": f"int_{j:02d}", "kind": "integer", "lower": 0, "upper": upper,
                        "means": (rng.random(CLASSES) * upper * 0.6).tolist(),
                        "spike": float(rng.random() * 0.6) if j % 3 == 0 else 0.0})
    for j in range(CONTINUOUS):
        columns.append({"name": f"num_{j:02d}", "kind": "continuous", "lower": 0.0,
                        "upper": 1000.0, "means": (rng.random(CLASSES) * 1000).tolist(),
                        "sds": (50 + rng.random(CLASSES) * 150).tolist()})
    return {"classes": CLASSES, "class_shares": rng.dirichlet(np.full(CLASSES, 2.0)).tolist(),
            "label_yes": rng.beta(1, 2, CLASSES).tolist(), "columns": columns}


def schema_of(desc: dict) -> dict:
    """The public schema: every domain from the description."""
    columns = []
    for col in desc["columns"]:
        if col["kind"] == "categorical":
            columns.append({"name": col["name"], "kind": "categorical",
                            "categories": col["categories"], "public": True})
        else:
            columns.append({"name": col["name"], "kind": "numeric", "lower": col["lower"],
                            "upper": col["upper"], "integer": col["kind"] == "integer",
                            "public": True})
    columns.append({"name": "label", "kind": "categorical", "categories": ["no", "yes"],
                    "public": True})
    return {"target": "label", "columns": columns}


def rows(desc: dict, n: int, rng: np.random.Generator) -> pd.DataFrame:
    """``n`` rows drawn from the description."""
    cls = rng.choice(desc["classes"], size=n, p=desc["class_shares"])
    data = {}
    for col in desc["columns"]:
        if col["kind"] == "categorical":
            shares = np.asarray(col["shares"])[cls]
            u = rng.random(n)[:, None]
            pick = np.minimum((u > np.cumsum(shares, axis=1)).sum(axis=1), shares.shape[1] - 1)
            data[col["name"]] = np.asarray(col["categories"], dtype=object)[pick]
        elif col["kind"] == "integer":
            values = col["lower"] + rng.poisson(np.asarray(col["means"])[cls])
            values[rng.random(n) < col["spike"]] = col["lower"]
            data[col["name"]] = np.clip(values, col["lower"], col["upper"]).astype(np.int64)
        else:
            values = rng.normal(np.asarray(col["means"])[cls], np.asarray(col["sds"])[cls])
            data[col["name"]] = np.clip(values, col["lower"], col["upper"]).round(2)
    yes = rng.random(n) < np.asarray(desc["label_yes"])[cls]
    data["label"] = np.where(yes, "yes", "no").astype(object)
    return pd.DataFrame(data)


def write(n: int, out: Path, seed: int = 0, description_seed: int = 21) -> dict:
    """``n`` rows as Parquet at ``out`` (written to a temporary file, then renamed); returns
    the schema."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    desc = description(description_seed)
    rng = np.random.default_rng(seed)
    partial = out.with_name(out.name + ".partial")
    writer = None
    for start in range(0, n, PIECE):
        piece = pa.Table.from_pandas(rows(desc, min(PIECE, n - start), rng),
                                     preserve_index=False)
        writer = writer or pq.ParquetWriter(partial, piece.schema)
        writer.write_table(piece)
    if writer is not None:
        writer.close()
    partial.replace(out)
    return schema_of(desc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--description-seed", type=int, default=21)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--schema", type=Path)
    args = parser.parse_args()
    schema = write(args.rows, args.out, args.seed, args.description_seed)
    if args.schema is not None:
        args.schema.write_text(json.dumps(schema, indent=1) + "\n")
    print(f"wrote {args.rows:,} rows × {len(schema['columns'])} columns to {args.out}")


if __name__ == "__main__":
    main()
