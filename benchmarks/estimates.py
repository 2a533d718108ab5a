"""The plan's time estimates against whole runs as the app makes them (issue 49, item 3).

Reads ``benchmarks/results/progress.json``, which :mod:`benchmarks.progress` writes: every
method at its defaults (ε = 1) on the census and panel samples and on generated flights
tables of 20,000 and 300,000 rows with blanks and a date, each run alone in a fresh
interpreter on a quiet machine, as the app makes it (fit, draw, compare, write). The plan
is made again here, by the code as it is (a cost model changes no run, so its estimates are
checked against the runs measured). Writes ``benchmarks/results/estimates.json``: per run,
the estimate, the measured seconds and the verdict against the target, within 1.5× (a run
the plan refuses is recorded as refused), and the plan's memory estimate beside the
process's peak RSS (which holds the interpreter and its libraries too).

    python benchmarks/progress.py --no-cancels && python benchmarks/estimates.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"
sys.path.insert(0, str(RESULTS.parent))  # benchmarks/progress.py, run as a script
RATIO = 1.5


def verdict(row: dict) -> str:
    if row.get("refused"):
        return "refused by the plan"
    if row.get("error") or row["measured_s"] is None:
        return "not measured"
    est, got = row.get("estimate_s"), row["measured_s"]
    if est is None:
        return "no estimate"
    return f"within {RATIO}×" if max(est / got, got / est) <= RATIO else "off"


def planned(method: str, name: str, tables: dict) -> tuple[float | None, int | None]:
    """(seconds, bytes) the plan estimates now for ``method``'s defaults on table ``name``,
    made as :func:`benchmarks.progress.job` makes its run."""
    from progress import table

    from synth.errors import SynthError
    from synth.privacy.budget import default_delta
    from synth.privacy.unit import population
    from synth.runs import Run, split

    if name not in tables:
        frame, schema, unit = table(name)
        tables[name] = (split(frame, schema, unit=unit)[0], schema, unit)
    private, schema, unit = tables[name]
    people = population(private, unit)
    try:
        plan = Run(method, schema, 1.0, default_delta(people.units), rows=people,
                   unit=unit).plan
    except SynthError:
        return None, None
    return plan.seconds, plan.memory


def main() -> None:
    measured = json.loads((RESULTS / "progress.json").read_text())
    rows, tables = [], {}
    for r in measured["runs"]:
        seconds, memory = planned(r["method"], r["table"], tables)
        row = {"method": r["method"], "table": r["table"], "rows": r.get("rows"),
               "units": r.get("units"), "estimate_s": seconds,
               "measured_s": r.get("seconds"), "estimate_bytes": memory,
               "peak_rss_bytes": r.get("peak_rss_bytes"), "refused": r.get("refused", ""),
               "error": r.get("error", "")}
        row["verdict"] = verdict(row)
        rows.append(row)
    off = [f"{r['method']}/{r['table']}" for r in rows
           if r["verdict"] in ("off", "not measured", "no estimate")]
    out = RESULTS / "estimates.json"
    tmp = out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({"machine": measured["machine"], "epsilon": 1.0,
                               "target": f"within {RATIO}× on a quiet machine", "off": off,
                               "runs": rows}, indent=2, ensure_ascii=False) + "\n")
    tmp.replace(out)
    print(f"{len(rows) - len(off)} of {len(rows)} within target; off: {off or 'none'}")


if __name__ == "__main__":
    main()
