"""Progress and cancel through a whole run, as the app runs it (issue 49, items 2 and 3).

For every method at its defaults (ε = 1), on the census and panel samples, a generated
20,000-row flights table and a 300,000-row one (blanks in the delays, a booking date), one
run as the app makes it (its test sixth held out, recorded in a run store with its
release), each in a fresh interpreter: per stage, its seconds, the longest wait between two
of its events (what the page's bars and curves are drawn from) and between two of the run's
checks for a cancel (how long a cancel can wait), and the plan's estimate of the whole run.
Then, on the census sample, one run per stage cancelled a third of a second into it: how
long the cancel took to land (a cancel in the comparison skips the rest of it and keeps the
paid-for release: how long until its writing began). Targets: an event at least every 2 s
in every stage longer than a second; a cancel within 1 s.

Writes benchmarks/results/progress.json (a run of some methods or tables keeps the others).

    python benchmarks/progress.py [--methods mst aim] [--tables census flights20k]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
TABLES = {"census": None, "panel": None, "flights20k": 20_000, "flights300k": 300_000}
EVENT_GAP, CANCEL = 2.0, 1.0  # seconds: the targets
INTO = 0.3  # seconds into a stage its cancel is asked for


def table(name: str):
    """(table, schema, unit) as a steward without a codebook declares it: the samples as the
    app opens them (the panel protecting each person_id, up to 3 rows), the flights with
    categories and known domains public and the rest learned, a booking date among them."""
    from dataclasses import replace

    import numpy as np
    from make_shaped_data import generate, schema_for

    from synth import dates
    from synth.data import load_sample
    from synth.privacy.unit import PrivacyUnit

    if TABLES[name] is None:
        unit = PrivacyUnit("person_id", 3) if name == "panel" else PrivacyUnit()
        return (*load_sample(name), unit)
    frame = generate("flights", seed=0, rows=TABLES[name])
    days = np.random.default_rng(1).integers(0, 730, len(frame))
    frame["booked"] = (np.datetime64("2022-01-01") + days).astype(str)
    schema = schema_for(frame)
    booked = schema["booked"]  # its bounds learned outward from a known start of bookings
    origin = dates.unit_of("2022-01-01", booked.granularity, None, "an origin")
    return frame, schema.replace_column(replace(booked, origin=origin)), PrivacyUnit()


class Watch:
    """A FitContext's events and cancel checks, timed, by the stage they fall in."""

    def __init__(self, cancel_in: str | None = None):
        self.started = time.perf_counter()
        self.stage, self.stage_began = "setup", self.started
        self.last_event: dict[str, float] = {}
        self.last_check: dict[str, float] = {}
        self.stats: dict[str, dict] = {}
        self.cancel_in, self.asked, self.landed = cancel_in, None, None
        self.lock = threading.Lock()

    def _stat(self, stage: str) -> dict:
        return self.stats.setdefault(stage, {"seconds": 0.0, "events": 0, "event_gap": 0.0,
                                             "check_gap": 0.0})

    def on_event(self, event) -> None:
        from synth.methods import StageStarted
        from synth.runs import WRITE

        now = time.perf_counter()
        with self.lock:
            if isinstance(event, StageStarted):
                self._close(now)
                if event.stage == WRITE and self.asked is not None:  # the comparison skipped
                    self.landed = now
                self.stage, self.stage_began = event.stage, now
                if event.stage == self.cancel_in and self.asked is None:  # as a person would
                    threading.Timer(INTO, self._ask).start()
                self.last_event[event.stage] = self.last_check[event.stage] = now
            stat = self._stat(self.stage)
            stat["events"] += 1
            stat["event_gap"] = max(stat["event_gap"], now - self.last_event.get(self.stage,
                                                                                now))
            self.last_event[self.stage] = now

    def should_stop(self) -> bool:
        now = time.perf_counter()
        with self.lock:
            stat = self._stat(self.stage)
            stat["check_gap"] = max(stat["check_gap"], now - self.last_check.get(self.stage,
                                                                                now))
            self.last_check[self.stage] = now
        return self.asked is not None

    def _ask(self) -> None:
        self.asked = time.perf_counter()

    def _close(self, now: float) -> None:
        stat = self._stat(self.stage)
        stat["seconds"] += now - self.stage_began
        # the wait since the stage's last event counts too: a stage that ends in silence
        stat["event_gap"] = max(stat["event_gap"], now - self.last_event.get(self.stage, now))
        stat["check_gap"] = max(stat["check_gap"], now - self.last_check.get(self.stage, now))

    def close(self) -> dict:
        with self.lock:
            self._close(time.perf_counter())
        self.stats.pop("setup", None)
        return {k: {m: round(v, 3) if isinstance(v, float) else v for m, v in s.items()}
                for k, s in self.stats.items()}


def job(method: str, name: str, cancel_in: str | None) -> dict:
    """One run in this interpreter, recorded in a fresh store, watched."""
    from synth.account import Store, TableAccount
    from synth.errors import Cancelled, SynthError
    from synth.methods import FitContext
    from synth.privacy.budget import default_delta
    from synth.privacy.unit import population
    from synth.runs import Run, split
    from synth.store import RunStore

    frame, schema, unit = table(name)
    private, test = split(frame, schema, unit=unit)
    people = population(private, unit)
    home = Path(tempfile.mkdtemp())
    account = TableAccount.of(private, name, Store(home / "account.sqlite"))
    out = {"method": method, "table": name, "rows": len(private), "units": people.units}
    try:
        run = Run(method, schema, 1.0, default_delta(people.units), account=account,
                  store=RunStore(home / "runs.sqlite"), rows=people, unit=unit)
    except SynthError as exc:  # a unit the method cannot protect, say
        return {**out, "refused": str(exc)}
    if run.plan.refusals:
        return {**out, "refused": str(run.plan.refusals[0])}
    out["planned_s"], out["planned_bytes"] = run.plan.seconds, run.plan.memory
    watch = Watch(cancel_in)
    ctx = FitContext(on_event=watch.on_event, should_stop=watch.should_stop)
    began = time.perf_counter()
    try:
        run(private, schema, test, ctx)
    except Cancelled:
        watch.landed = time.perf_counter()
    if watch.asked is not None:  # a cancel stops the fit; it skips a comparison
        out["cancel_s"] = round(watch.landed - watch.asked, 3)
        out["cancelled_in"] = watch.stage
    out["seconds"] = round(time.perf_counter() - began, 2)
    out["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    out["stages"] = watch.close()
    return out


def _child(*args: str) -> dict:
    done = subprocess.run([sys.executable, __file__, "--job", *args], capture_output=True,
                          text=True, cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
    if done.returncode:  # said in the results; the other runs go on
        method, table, _ = args
        return {"method": method, "table": table, "error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="+")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=TABLES)
    parser.add_argument("--no-cancels", action="store_true")
    parser.add_argument("--out", type=Path,
                        default=REPO / "benchmarks" / "results" / "progress.json")
    parser.add_argument("--job", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.job:
        method, name, stage = args.job
        print(json.dumps(job(method, name, None if stage == "-" else stage)))
        return
    from synth.methods import METHODS

    methods = args.methods or sorted(METHODS)
    earlier = json.loads(args.out.read_text()) if args.out.exists() else {}
    runs = [r for r in earlier.get("runs", [])
            if not (r["table"] in args.tables and r["method"] in methods)]
    cancels = [r for r in earlier.get("cancels", [])
               if args.no_cancels or r["method"] not in methods]
    for name in args.tables:
        for method in methods:
            row = _child(method, name, "-")
            runs.append(row)
            worst = max((s["event_gap"] for s in row.get("stages", {}).values()), default=0)
            print(f"{name:11} {method:17} {row.get('seconds', '-')} s, planned "
                  f"{row.get('planned_s')}, longest silence {worst:.1f} s", file=sys.stderr)
            if name == "census" and not args.no_cancels:
                for stage, stat in row.get("stages", {}).items():
                    if stat["seconds"] < INTO * 1.5:
                        continue
                    cancelled = _child(method, name, stage)
                    cancels.append({k: cancelled.get(k) for k in
                                    ("method", "table", "cancelled_in", "cancel_s")}
                                   | {"asked_in": stage})
                    print(f"  cancel in {stage}: {cancelled.get('cancel_s')} s",
                          file=sys.stderr)
    silent = [f"{r['method']}/{r['table']}/{s}" for r in runs
              for s, stat in r.get("stages", {}).items()
              if stat["seconds"] > 1 and stat["event_gap"] > EVENT_GAP]
    slow = [f"{c['method']}/{c['asked_in']}" for c in cancels
            if c["cancel_s"] is None or c["cancel_s"] > CANCEL]
    tmp = args.out.with_suffix(".json.tmp")
    tmp.write_text(json.dumps({
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(),
                    "python": platform.python_version()},
        "targets": {"event_gap_s": EVENT_GAP, "cancel_s": CANCEL},
        "silent_stages": silent, "slow_cancels": slow,
        "runs": sorted(runs, key=lambda r: (list(TABLES).index(r["table"]), r["method"])),
        "cancels": cancels}, indent=2) + "\n")
    tmp.replace(args.out)


if __name__ == "__main__":
    main()
