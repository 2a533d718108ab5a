"""Our SDMetrics figures against SDMetrics 0.32 itself, run side by side (issue 48, item 5).

SDMetrics needs pandas < 3, so it runs in an environment of its own (made here on first use
with pip, or given as ``--sdmetrics-python``). On three tables, each with a release made by a
method here (Adult's protocol training split and an ``independent`` release; the census
sample and an MST release; a Bank-shaped table with blanks and heavy tails and a GSD
release), the same rows as SDMetrics reads them (numbers and dates as numbers, a blank as
missing) go to both: the Quality Report's overall score, its two properties and the
Diagnostic Report's data validity. Target: every figure within 0.01.
Results go to benchmarks/results/sdmetrics.json.

    python benchmarks/sdmetrics_agreement.py [--sdmetrics-python PATH]
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
from datetime import date
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "benchmarks/results/sdmetrics.json"
ENV = Path(tempfile.gettempdir()) / "synth-sdmetrics"  # SDMetrics' own environment
TARGET = 0.01

# what runs in SDMetrics' environment: the two reports on the files given, as JSON
REPORTS = """
import json, sys, warnings
import pandas as pd
from sdmetrics.reports.single_table import DiagnosticReport, QualityReport
warnings.simplefilter("ignore")
real, synth = pd.read_parquet(sys.argv[1]), pd.read_parquet(sys.argv[2])
metadata = json.load(open(sys.argv[3]))
quality = QualityReport()
quality.generate(real, synth, metadata, verbose=False)
properties = quality.get_properties().set_index("Property")["Score"]
diagnostic = DiagnosticReport()
diagnostic.generate(real, synth, metadata, verbose=False)
validity = diagnostic.get_properties().set_index("Property")["Score"]
print(json.dumps({"quality": quality.get_score(),
                  "column_shapes": properties["Column Shapes"],
                  "column_pair_trends": properties["Column Pair Trends"],
                  "data_validity": validity["Data Validity"]}))
"""


def sdmetrics_python(given: str | None) -> Path:
    """SDMetrics' interpreter: as given, or a fresh environment with sdmetrics 0.32 (and
    pyarrow, to read the tables)."""
    if given:
        return Path(given)
    python = ENV / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", str(ENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", "sdmetrics==0.32.*",
                        "pandas<3", "pyarrow"], check=True)
    return python


def cases() -> dict[str, tuple[pd.DataFrame, pd.DataFrame, object]]:
    """(real rows, a release of them, the release's schema) per table."""
    import importlib.util

    from synth.data import load_sample, read_table
    from synth.protocol import adult_schema, protocol_split
    from synth.runs import run
    from synth.schema import Schema

    adult = read_table(REPO.parent / "shared/data/adult.csv")
    train = protocol_split(adult)[0]
    census, census_schema = load_sample("census")
    spec = importlib.util.spec_from_file_location("bank", REPO / "scripts/make_bank_data.py")
    bank = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bank)
    bank_rows, bank_schema = bank.generate(20_000, 0), Schema.from_dict(bank.public_schema())
    made = {}
    for name, rows, schema, method in (("adult", train, adult_schema(adult), "independent"),
                                       ("census", census, census_schema, "mst"),
                                       ("bank", bank_rows, bank_schema, "gsd")):
        record = run(rows, schema, method, 1.0, 1e-6, postprocessing_seed=0, measure=False,
                     params={"rounds": 10} if method == "gsd" else None)
        made[name] = (rows, record.synthetic, record.schema.reading(schema))
    return made


def main(argv: list[str] | None = None) -> None:
    from synth.quality import _as_read, quality
    from synth.release import write_file
    from synth.schema import CATEGORICAL, DATETIME

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sdmetrics-python", help="an interpreter with sdmetrics 0.32")
    args = parser.parse_args(argv)
    python = sdmetrics_python(args.sdmetrics_python)
    version = subprocess.run([str(python), "-c", "import sdmetrics; print(sdmetrics.__version__)"],
                             capture_output=True, text=True, check=True).stdout.strip()
    results = {}
    for name, (real, synth, schema) in cases().items():
        ours = quality(real, synth, schema)
        mine = {"quality": ours.overall, "column_shapes": ours.column_shapes,
                "column_pair_trends": ours.column_pair_trends, "data_validity": ours.validity}
        metadata = {"columns": {c.name: {"sdtype": "categorical" if c.kind == CATEGORICAL
                                         else "numerical"} for c in schema}}
        with tempfile.TemporaryDirectory() as folder:
            files = [Path(folder) / f for f in ("real.parquet", "synth.parquet", "meta.json")]
            _as_read(real, schema, False).to_parquet(files[0])
            _as_read(synth, schema, True).to_parquet(files[1])
            files[2].write_text(json.dumps(metadata))
            done = subprocess.run([str(python), "-c", REPORTS, *map(str, files)],
                                  capture_output=True, text=True)
        if done.returncode:
            raise SystemExit(f"SDMetrics failed on {name}: {done.stderr[-2000:]}")
        theirs = json.loads(done.stdout)
        gaps = {k: abs(mine[k] - theirs[k]) for k in mine}
        results[name] = {"rows": len(real), "columns": len(schema),
                         "dates_as_numbers": any(c.kind == DATETIME for c in schema),
                         "ours": {k: round(v, 4) for k, v in mine.items()},
                         "sdmetrics": {k: round(v, 4) for k, v in theirs.items()},
                         "largest_gap": round(max(gaps.values()), 4)}
        print(name, results[name], file=sys.stderr)
    report = {"date": date.today().isoformat(), "machine": platform.platform(),
              "sdmetrics": version, "target_largest_gap": TARGET, "tables": results,
              "all_within_target": all(r["largest_gap"] <= TARGET for r in results.values())}
    write_file(OUT, lambda path: Path(path).write_text(json.dumps(report, indent=2) + "\n"),
               "the agreement results")


if __name__ == "__main__":
    main()
