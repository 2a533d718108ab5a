"""Fingerprints of replayable releases: proof that a refactor changed no behaviour.

Every method (and every DP-Select engine) is fitted on the bundled sample with
:func:`~synth.privacy.mechanisms.replayable_noise` and a post-processing seed, so the same code
gives the same bytes. The SHA-256 of each synthetic table and ledger (minus its timestamps) is
written to JSON; run it before and after a change and compare the files.

    python benchmarks/fingerprint.py [--out benchmarks/results/fingerprint.json]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path

from synth.data import load_sample
from synth.methods import FitContext, make
from synth.privacy.budget import Budget
from synth.privacy.mechanisms import replayable_noise

REPO = Path(__file__).resolve().parent.parent
SMALL_GAN = {"epochs": 1, "batch_size": 256, "components": 16, "critic_hidden": 16,
             "generator_batch": 512}
GAN = {f"gan__{k}": v for k, v in SMALL_GAN.items()}  # DP-Select's pool: the same GAN
CASES = {
    "independent": ("independent", {}),
    "mst": ("mst", {}),
    "aim": ("aim", {"rounds": 2}),
    "dpgan": ("dpgan", SMALL_GAN),
    "dpselect_rows": ("dpselect", {**GAN, "pool_multiplier": 4, "engine": "rows"}),
    "dpselect_ga": ("dpselect", {**GAN, "pool_multiplier": 4, "engine": "ga",
                                 "generations": 5, "population": 40, "parents": 4}),
    "dpselect_measure": ("dpselect", {**GAN, "rounds": 5}),
    "gsd": ("gsd", {"rounds": 3, "max_generations": 300, "rows": 500}),
    "private_sampling": ("private_sampling", {"columns": ["sex", "race", "income"],
                                              "allow_no_guarantee": True}),
}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fingerprint(method: str, params: dict, rows: int = 1500) -> dict:
    table, schema = load_sample()
    table = table.iloc[:rows]
    if method == "private_sampling":
        schema = schema.drop(c for c in schema.names if c not in params["columns"])
        table = table[params["columns"]]
        params = {k: v for k, v in params.items() if k != "columns"}
    started = time.perf_counter()
    with replayable_noise(11):
        model = make(method, params).fit(table, schema, Budget(2.0, 1e-5),
                                         FitContext(postprocessing_seed=5))
    synthetic = model.sample()
    ledger = model.ledger_.to_dict()
    ledger.pop("created", None)
    for entry in ledger.get("entries", []):
        entry.pop("time", None)
    return {"table": _sha(synthetic.to_csv(index=False).encode()),
            "ledger": _sha(json.dumps(ledger, sort_keys=True, default=str).encode()),
            "seconds": round(time.perf_counter() - started, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/fingerprint.json")
    args = parser.parse_args()
    result = {name: fingerprint(method, dict(params))
              for name, (method, params) in CASES.items()}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
