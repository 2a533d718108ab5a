"""A five-minute tour of synth from Python, on the bundled census sample.

Run it from the repository root: .venv/bin/python docs/examples/quickstart.py
It writes only into a temporary folder, which it removes at the end.
"""

import json
import tempfile
from pathlib import Path

from synth import Budget, FitContext, Ledger, load_sample, make
from synth.account import Store, TableAccount
from synth.errors import Cancelled
from synth.methods import Progress, Spent, StageStarted
from synth.runs import Run, run, split

# The bundled table (5,000 rows) and its schema, in which every domain is public.
table, schema = load_sample()
print(f"table: {len(table):,} rows, columns {', '.join(schema.names)}")

# 1. Plan before spending: the events a run will charge, from the row count alone.
planned = Run("independent", schema, epsilon=1.0, delta=1e-5, rows=len(table))
print("plan:")
for line in planned.plan.lines():
    print("  " + line)
print(f"  same run from the shell: {planned.command}")

# 2. Fit a method directly, following its events.
events = []
model = make("independent", {"bins": 32})
model.fit(table, schema, Budget(1.0, 1e-5),
          FitContext(postprocessing_seed=0, on_event=events.append))
synthetic = model.sample(1000)  # sampling is post-processing: it costs no privacy
stages = [e.stage for e in events if isinstance(e, StageStarted)]
steps = sum(isinstance(e, Progress) for e in events)
print(f"fit: stages {stages}, {steps} progress events; sampled {len(synthetic)} rows")

# 3. Read the ledger: one entry per mechanism, each charged before it ran.
ledger = model.ledger_.to_dict()
for entry in ledger["entries"]:
    print(f"  {entry['stage']}: {entry['description'] or entry['event']['type']}, "
          f"ε = {entry['epsilon']:.3g}")
print(f"ledger: total ε = {ledger['total_epsilon']:.3g}, δ = {ledger['total_delta']:.2g}")

# 4. Cancel: should_stop is checked throughout a fit, which then raises Cancelled. Here MST
#    is stopped once two mechanisms have been charged; its ledger says what they spent.
charges = []
mst = make("mst")
try:
    mst.fit(table, schema, Budget(1.0, 1e-5),
            FitContext(on_event=lambda e: isinstance(e, Spent) and charges.append(e),
                       should_stop=lambda: len(charges) >= 2))
except Cancelled:
    spent = mst.ledger_.to_dict()
    print(f"cancelled after {len(spent['entries'])} charges: ε = "
          f"{spent['total_epsilon']:.3g} of 1 spent, nothing to sample")

with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)

    # 5. A whole run as the CLI and the app make one: hold out the test sixth, fit, sample,
    #    measure, charged to a privacy account (here a throwaway one in the temporary folder).
    private, test = split(table, schema)
    account = TableAccount.of(table, "census_demo.csv", Store(folder / "account.sqlite"))
    record = run(private, schema, "independent", 1.0, test=test, postprocessing_seed=0,
                 account=account)
    figures = record.figures()  # compares with the private table: for you, not for release
    print(f"run: {len(record.synthetic):,} rows, tree accuracy {figures['accuracy']:.3f}, "
          f"1-way TVD {figures['tvd1']:.3f}, 2-way TVD {figures['tvd2']:.3f}")
    usage = account.usage()
    print(f"account: ε = {usage.epsilon:g}, δ = {usage.delta:.2g} over {usage.runs} run(s)")

    # 6. Write the release (synth.csv, ledger.json, run.json) and read its ledger back:
    #    Ledger.from_dict re-derives every figure from the events it lists.
    released = folder / "release"
    released.mkdir()
    for name, data in record.release.files().items():
        (released / name).write_bytes(data)
    saved = json.loads((released / "ledger.json").read_text())
    print(f"release: {sorted(p.name for p in released.iterdir())}, status {saved['status']!r}, "
          f"re-accounted ε = {Ledger.from_dict(saved).total_epsilon:.3g}")
