"""``python -m synth``: infer schemas, run methods, evaluate, split by the protocol.

These forms are a contract that outside tools script against (see docs/cli.md):

    python -m synth schema infer DATA.csv --out schema.json
    python -m synth schema confirm schema.json DATA.csv [--public COL,...] [--nice]
    python -m synth run DATA.csv --schema schema.json --method NAME --epsilon E --delta D
        --out synth.csv --ledger ledger.json [--postprocessing-seed S] [--set key=value ...]
    python -m synth evaluate REAL_TEST.csv SYNTH.csv --schema schema.json --target COL
        [--train REAL_TRAIN.csv]
    python -m synth risk REAL.csv SYNTH.csv --schema schema.json --holdout HOLDOUT.csv
        --ledger ledger.json [--sensitive COL] [--json]

Failures exit non-zero with a one-line cause on stderr.
"""

from __future__ import annotations

import argparse
import io
import json
import math
import shlex
import sys
import time
from pathlib import Path

from synth import declarations, runs
from synth.account import COMPOSITION, Store, TableAccount, Usage
from synth.checklist import release_checklist
from synth.data import (
    DEFAULT_MAX_BYTES,
    fingerprint,
    former_fingerprint,
    fragile_numbers,
    human_bytes,
    read_table,
)
from synth.errors import Cancelled, DataError, ParameterError, SynthError, check_positive
from synth.methods import METHODS, FitContext, Progress, Spent, StageStarted, parse_settings
from synth.methods.base import check_rows
from synth.privacy.budget import cautions, default_delta, epsilon_text
from synth.privacy.domains import DOMAIN
from synth.privacy.unit import PrivacyUnit
from synth.protocol import protocol_split
from synth.recommend import recommend
from synth.release import LEDGER, TABLE, Output, ReleaseWriter
from synth.release import write_file as _write  # every other file the CLI writes
from synth.schema import DATETIME, Schema, infer_schema, read_as_numbers, validate
from synth.source import TableFile, open_table, table_population
from synth.store import RunStore
from synth.sweep import DEMO, PRESETS, REHEARSED, SHARE, STAND_IN


class _Bars:
    """Renders fit events as one tqdm bar per stage on stderr."""

    def __init__(self, quiet: bool):
        self.quiet = quiet
        self.bar = None

    def __call__(self, event) -> None:
        if self.quiet:
            return
        from tqdm import tqdm

        if isinstance(event, StageStarted):
            self.close()
            self.bar = tqdm(total=event.total, desc=event.stage, unit="step", file=sys.stderr,
                            leave=True, dynamic_ncols=True)
        elif isinstance(event, Progress) and self.bar is not None:
            self.bar.n = event.step
            if event.metrics:
                self.bar.set_postfix({k: f"{v:.4g}" for k, v in event.metrics.items()},
                                     refresh=False)
            self.bar.refresh()
        elif isinstance(event, Spent):
            e = event.entry
            tqdm.write(f"charged ε={epsilon_text(e.epsilon)}, δ={e.delta:.3g} for {e.event.kind} "
                       f"({e.stage}) before it runs; total ε="
                       f"{epsilon_text(event.total_epsilon)}", file=sys.stderr)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None


def cmd_schema_infer(args: argparse.Namespace) -> int:
    table = read_table(args.data, max_bytes=args.max_bytes, encoding=args.encoding)
    schema = infer_schema(table, target=args.target)
    _write(args.out, schema.save, "--out", {"DATA": Path(args.data)})
    for col in schema:
        for flag in col.flags:
            print(f"warning: column {col.name!r}: {flag}", file=sys.stderr)
    kinds = ", ".join(f"{c.name}:{c.kind[:3]}" + (f"({c.granularity})" if c.kind == DATETIME
                                                   else "(int)" if c.integer else "")
                      for c in schema)
    dated = [c.name for c in schema if c.kind == DATETIME]
    if dated:
        print(f"columns {dated[:6]} read as dates: their bounds are dates; to learn them "
              "privately instead, set each one's \"origin\" to a public date near the data "
              "(\"input_format\" says how the file writes them, \"format\" how the release "
              "will; ISO 8601 when null)", file=sys.stderr)
    print(f"wrote a proposed schema of {len(schema)} columns to {args.out} ({kinds}). It is "
          "read off the table: check each kind, integer flag and missing policy, then run\n"
          f"  {_program()} schema confirm {shlex.quote(str(args.out))} "
          f"{shlex.quote(str(args.data))} --public COLUMN,... --nice\n"
          "naming the columns whose categories or bounds are public knowledge (a codebook); "
          "a run learns the other domains privately", file=sys.stderr)
    return 0


def _program() -> str:
    """How the user called us, so a suggested command runs as printed."""
    called = sys.argv[0] if sys.argv else ""
    return "python -m synth" if not called or called.endswith("__main__.py") else called


def cmd_schema_confirm(args: argparse.Namespace) -> int:
    schema = Schema.load(args.schema)
    table = read_table(args.data, max_bytes=args.max_bytes, encoding=args.encoding)
    for name in _listed(args.numbers):  # '3,750' as 3750, in every run that reads the file
        schema = schema.replace_column(read_as_numbers(schema[name], table[name]))
    left_out = _listed(args.leave_out)
    schema = schema.drop(left_out) if left_out else schema
    asked = _listed(args.public)
    words = [w for w in asked if w in declarations.SHORTCUTS and w not in schema.names]
    # a codebook of all, of the categories, or of the domains names mean
    kept, skipped = declarations.by_shortcut(schema, table, words)
    public = [n for n in asked if n not in words] + kept
    for name, (word, why) in skipped.items():
        print(f"warning: --public {word} leaves {name!r} undeclared ({why}): a shortcut "
              "never publishes identifiers, numbers read as text or near-unique "
              f"categories; name it (--public {name}) to declare it deliberately"
              + (f", --numbers {name} to read it as numbers" if "numbers" in why else "")
              + f", or --leave-out {name} to leave it out", file=sys.stderr)
    newly = [n for n in public if n in schema.names and not schema[n].public]
    schema = schema.confirm().declare_public([c.name for c in schema if c.public] + public)
    if args.nice:
        schema = declarations.round_bounds(schema, table, newly)
    validate(table, schema)  # the declared domains must hold the table's values
    print("you declare (the release's columns will be exactly these):", file=sys.stderr)
    for col in schema:
        print(f"  {declarations.declaration(col)}", file=sys.stderr)
    for line in declarations.warnings(schema, table):
        print(f"warning: {line}", file=sys.stderr)
    _write(args.schema, schema.save)
    learned = [c.name for c in schema if not c.public]
    blanks = [c.name for c in schema.to_learn if c.public]
    print(f"confirmed {len(schema)} columns in {args.schema}; "
          + (f"a run learns {len(learned)} domains privately ({', '.join(learned[:6])}"
             f"{'…' if len(learned) > 6 else ''})" if learned else "every domain is public")
          + (f", and whether {len(blanks)} columns that may have blanks have any"
             if blanks else ""), file=sys.stderr)
    return 0


def _listed(items: list[str] | None) -> list[str]:
    """Column names given as repeatable, comma-separated options."""
    return [n.strip() for item in items or [] for n in item.split(",") if n.strip()]


def cmd_run(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    table = open_table(args.data, args.max_bytes, args.encoding, args.scheduler)
    if args.scheduler:
        print(f"counting {table.name} on the Dask cluster at {args.scheduler}",
              file=sys.stderr)
    elif isinstance(table, TableFile):
        print(f"reading {table.name} ({table.kind}, {human_bytes(table.size)}) where it lies, "
              f"{table.chunk_rows:,} rows at a time: over --max-bytes, it is not loaded whole "
              "(a method that needs every row still loads its columns)", file=sys.stderr)
    schema = Schema.load(args.schema)
    params, shares = parse_settings(args.set or [], args.method)
    unit = PrivacyUnit(args.privacy_unit, 1 if args.max_rows_per_unit is None
                       else args.max_rows_per_unit)
    people = table_population(table, unit)  # a bad unit column is refused here
    delta = args.delta if args.delta is not None else default_delta(people.units)
    fragile = "" if isinstance(table, TableFile) else fragile_numbers(table)
    if fragile:
        print(f"caution: {fragile}", file=sys.stderr)
    run = runs.Run(args.method, schema, args.epsilon, delta, params, shares,
                   args.postprocessing_seed, TableAccount.of(table, Path(args.data).name),
                   rows=people, unit=unit, store=RunStore())
    for line in cautions(args.epsilon, delta, people.units,
                         "people" if unit.declared else "rows"):
        print(f"caution: {line}", file=sys.stderr)
    if args.rows is not None:  # refused before anything is spent
        check_rows(args.rows, len(schema), "--rows")
    # the release's files exist, and have room, before the first charge
    writer = ReleaseWriter({TABLE: args.out, LEDGER: args.ledger},
                           {"DATA": Path(args.data), "--schema": args.schema},
                           (people.public().rows if args.rows is None else args.rows)
                           * len(schema),  # k·U bounds n̂: public, unlike the rows kept
                           {TABLE: "--out", LEDGER: "--ledger"})
    for path in writer.removed:
        print(f"removed {path}: a temporary file left by an earlier run that stopped while "
              "writing", file=sys.stderr)
    bars = _Bars(args.quiet)
    record = None
    try:
        record = run(table, schema, ctx=FitContext(
            postprocessing_seed=args.postprocessing_seed, on_event=bars), rows=args.rows,
            measure=False)
        bars.close()
        writer.write(record.release)
        ledger = record.release.ledger
    except BaseException as exc:  # whatever stopped it: say what was spent, release nothing
        bars.close()
        kept = "" if record is None or run.entry is None else run.entry.id
        _stopped(run, writer, args.ledger, exc, schema.names, kept)
        raise
    finally:
        writer.abort()
    budget = run.budget
    print(f"wrote {len(record.synthetic)} rows to {args.out} in "
          f"{time.perf_counter() - started:.1f} s; "
          f"spent ε={epsilon_text(ledger['total_epsilon'])}, "
          f"δ={ledger['total_delta']:.3g} of ε={budget.epsilon:g}, δ={budget.delta:.3g}",
          file=sys.stderr)
    if isinstance(table, TableFile):
        print("release checklist: not made for a table read where it lies (it compares the "
              "release with every private row in memory)", file=sys.stderr)
        return 0
    print("release checklist (read off your private table: for you, not for release):",
          file=sys.stderr)
    for check in release_checklist(table, record.synthetic, record.schema.reading(schema),
                                   budget.unit):
        print(f"  {'WARNING' if check.warn else 'note'}: {check.text}", file=sys.stderr)
    return 0


def cmd_plan(args: argparse.Namespace) -> int:
    """What ``synth run`` with these arguments would do, reading only the row count (or, with
    a privacy unit, the unit column's distinct count): never a value."""
    table = TableFile(Path(args.data), encoding=args.encoding)
    schema = Schema.load(args.schema)
    unit = PrivacyUnit(args.privacy_unit, 1 if args.max_rows_per_unit is None
                       else args.max_rows_per_unit)
    people = table_population(table, unit)
    delta = args.delta if args.delta is not None else default_delta(people.units)
    if not args.method and args.set:
        raise ParameterError("--set applies to one method's parameters: name it with --method")
    advice = None if args.method else recommend(schema, args.epsilon, delta, people, unit)
    method = args.method or advice.method
    params, shares = parse_settings(args.set or [], method)
    run = runs.Run(method, schema, args.epsilon, delta, params, shares,
                   args.postprocessing_seed, rows=people, unit=unit)
    planned = run.plan
    if args.json:
        print(json.dumps({"method": method, "population": vars(people),
                          "budget": run.budget.to_dict(), "relation": unit.relation,
                          "command": run.command, **planned.to_dict(),
                          **({"recommendation": advice.to_dict()} if advice else {})},
                         indent=2, ensure_ascii=False))
    else:
        for line in advice.lines() if advice else ():
            print(line)
        who = (f"{people.units:,} units of up to {unit.max_rows} rows" if unit.declared
               else f"{people.rows:,} rows")
        print(f"{method} on {table.name} ({who}), ε = {args.epsilon:g}, "
              f"δ = {delta:.3g}:")
        for line in planned.lines():
            print(f"  {line}")
        for scale in planned.scales:  # what the noise does, as the app's preview says it
            print(f"  {scale.stage} ({scale.mechanism}): {scale.meaning}")
    planned.check()  # a refused plan exits non-zero, its first reason on stderr
    return 0


def _stopped(run: runs.Run, writer: ReleaseWriter, ledger: Path, exc: BaseException,
             names: list[str], kept: str = "") -> None:
    """A run that stopped after spending: put its ledger in place (what ran, nothing
    released here) and say what was spent; a run that finished before its files here were
    written is ``kept`` in the run store, and its ledger says so."""
    release = run.stopped(exc, names, kept)
    if release is None:
        return
    try:
        writer.write(release)
        where = f"its ledger is in {ledger}"
    except SynthError as err:
        where = f"its ledger could not be written ({err})"
    record = release.ledger
    print(f"the run {release.status.split(';')[0].split(':')[0]} after spending "
          f"ε={epsilon_text(record['total_epsilon'])}, δ={record['total_delta']:.3g}; no "
          f"synthetic table was released; {where}" + (
              f"; the run store keeps its release (synth runs show {kept})" if kept else ""),
          file=sys.stderr)


def cmd_evaluate(args: argparse.Namespace) -> int:
    from synth.evaluation import evaluate  # scikit-learn: only this command pays the import

    schema = Schema.load(args.schema)
    test = read_table(args.real_test, max_bytes=args.max_bytes, encoding=args.encoding)
    synth = read_table(args.synth, max_bytes=args.max_bytes, encoding=args.encoding)
    train = read_table(args.train, max_bytes=args.max_bytes,
                       encoding=args.encoding) if args.train else None
    figures = evaluate(test, synth, schema, target=args.target, real_train=train)
    print(json.dumps(figures) if args.json else evaluation_text(figures, len(test)))
    return 0


def evaluation_text(figures: dict, tested: int) -> str:
    """:func:`~synth.evaluation.evaluate`'s figures in a steward's words."""
    def f(key: str) -> str:  # NaN: nothing to score (no pair with a real trend, say)
        value = figures.get(key, math.nan)
        return "none" if math.isnan(value) else f"{value:.3f}"

    lines = [f"{figures['rows']:,} synthetic rows, compared with the real table (these "
             "figures read it: for your eyes, not for release)"]
    if "accuracy" in figures:
        real = (f", a tree trained on the real table {f('real_accuracy')}"
                if "real_accuracy" in figures else "")
        lines.append(f"utility: a decision tree trained on the synthetic rows, tested on "
                     f"{tested:,} real ones: accuracy {f('accuracy')} (the majority class "
                     f"{f('majority')}{real}), balanced accuracy {f('balanced_accuracy')} "
                     f"(chance {f('chance_balanced_accuracy')}), macro F1 {f('macro_f1')} "
                     f"(chance {f('chance_macro_f1')})")
    lines += [f"fidelity against the real {figures['tvd_reference']} table: 1-way TVD "
              f"{f('tvd1')}, 2-way TVD {f('tvd2')} (0 is identical, 1 disjoint)",
              f"quality (SDMetrics' Quality Report): {f('quality')} (column shapes "
              f"{f('column_shapes')}, column pair trends {f('column_pair_trends')}); data "
              f"validity {f('data_validity')}"]
    return "\n".join(lines)


def cmd_split(args: argparse.Namespace) -> int:
    table = read_table(args.data, max_bytes=args.max_bytes, encoding=args.encoding)
    stem = Path(args.data).stem
    for name, part in zip(("train", "val", "test"), protocol_split(table), strict=True):
        path = args.out_dir / f"{stem}_{name}.csv"
        _write(path, lambda p, part=part: part.to_csv(p, index=False), "--out-dir",
               {"DATA": Path(args.data)})
        print(f"wrote {len(part)} rows to {path}", file=sys.stderr)
    return 0


def cmd_feasibility(args: argparse.Namespace) -> int:
    from synth.methods.private_sampling import (
        bounds as fz,  # deferred: the other commands do not need it
    )

    mode = ("manual" if args.Delta is not None else "from ‖f_n‖∞" if args.fn_inf is not None
            else "distinct rows" if args.distinct else "ideal cube")
    if args.n is None and mode != "ideal cube":
        raise ParameterError("--n is required unless Δ = 1 (--ideal, which takes n = 2^p)")
    log10_n = args.p * fz.LOG10_2 if args.n is None else math.log10(
        check_positive(args.n, "--n", ParameterError))
    log10_delta = fz.log10_delta_bound(mode, args.p, log10_n, args.Delta, args.fn_inf)
    setting = fz.Setting(args.p, args.d, log10_n, args.epsilon, args.delta, args.gamma,
                         log10_delta, None if args.m is None else math.log10(
                             check_positive(args.m, "--m", ParameterError)), args.k,
                         empty=not args.paper_mode)
    result = setting.check().to_dict()
    result["shown"] = {k: fz.show(v) for k, v in result["log10"].items()
                       if k != "success_probability"}
    print(json.dumps({"setting": {**vars(setting), "Delta_mode": mode}, **result},
                     indent=2, default=str, ensure_ascii=False))
    return 0


def cmd_sweep(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from synth import sweep as sw  # deferred: joblib is only needed here

    preset = PRESETS[args.preset] if args.preset else None
    methods = args.methods or (preset.methods if preset else None)
    epsilons = args.epsilons or (preset.epsilons if preset else None)
    if not methods or not epsilons:
        raise ParameterError("give --methods and --epsilons, or a --preset")
    fixed = {m: dict(p) for m, p in DEMO.items()} if args.demo else {}
    if args.jobs == 0:
        raise ParameterError("--jobs must be ≥ 1, or negative (-1: every core), got 0")
    for item in args.set or []:
        method, dot, setting = item.partition(".")
        if not dot or "=" not in setting:
            raise ParameterError(f"--set expects METHOD.KEY=VALUE, got {item!r}")
        params, _ = parse_settings([setting], method)
        fixed.setdefault(method, {}).update(params)
    param = args.param or (preset.param if preset else None)
    values = [parse_settings([f"value={x}"])[0]["value"] for x in args.values] if (
        args.values) else list(preset.values if preset and not args.param else ())
    shares = args.shares or (preset.shares if preset else ())
    jobs = sw.grid(methods, epsilons, args.seeds, param, values, shares, fixed)
    table = read_table(args.data, max_bytes=args.max_bytes, encoding=args.encoding)
    schema = Schema.load(args.schema)
    train, test = runs.split(table, schema)
    delta = args.delta if args.delta is not None else default_delta(len(train))
    # the sweep's table can be written, and is no input, before its first run spends
    out = Output(args.out, "--out", {"DATA": Path(args.data), "--schema": args.schema})
    try:
        with tqdm(total=len(jobs), desc="sweep", unit="run", file=sys.stderr,
                  disable=args.quiet) as bar:
            rows = sw.sweep(jobs, train, test, schema, delta, n_jobs=args.jobs,
                            on_row=lambda done, total, row: bar.update(1),
                            account=TableAccount.of(table, Path(args.data).name),
                            store=RunStore())
        out.commit(lambda p: rows.to_csv(p, index=False))
    finally:
        out.abort()
    failed = rows[rows["error"].notna()]
    print(f"wrote {len(rows)} runs to {args.out}"
          + (f"; {len(failed)} failed (their error column says why)" if len(failed) else ""),
          file=sys.stderr)
    for _, row in failed.iterrows():
        print(f"  {row['method']} ε={row['epsilon']:g} seed={row['seed']}: {row['error']}",
              file=sys.stderr)
    return 0


def cmd_rehearse(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from synth import sweep as rehearsal  # deferred: joblib is only needed here

    table = read_table(args.data, max_bytes=args.max_bytes, encoding=args.encoding)
    schema = Schema.load(args.schema)
    with tqdm(total=len(args.methods) * args.seeds, desc="rehearsal", unit="run",
              file=sys.stderr, disable=args.quiet) as bar:
        found = rehearsal.rehearse(
            table, schema, rehearsal.trial(args.methods, args.epsilon, args.seeds),
            args.share, args.delta, args.stand_in, TableAccount.of(table, Path(args.data).name),
            RunStore(), n_jobs=args.jobs, on_row=lambda done, total, row: bar.update(1))
    if args.json:
        print(json.dumps(found.to_dict(), indent=2))
        return 0
    cost, domain = found.stand_in.ledger, found.stand_in.shares.get(DOMAIN)
    print(f"stand-in: {found.stand_in.method} at ε={epsilon_text(cost['total_epsilon'])}, "
          f"δ={cost['total_delta']:.3g}, charged to {Path(args.data).name}"
          + (f" (a domain share of {domain:g} of it learns the domains)" if domain else "")
          + "; every run below read the stand-in only (no further cost)")
    print(f"predicted at ε={args.epsilon:g} (2-way TVD against the stand-in, median of "
          f"{args.seeds} seed{'s' * (args.seeds > 1)}):")
    for row in found.predicted.itertuples(index=False):
        said = (f"{row.tvd2:.3f}" if row.tvd2 is not None and row.tvd2 == row.tvd2
                else f"failed: {row.error}")
        mark = "  <- recommended" if row.method == found.recommended else ""
        print(f"  {row.method:<12} {said}{mark}")
    print(rehearsal.CAVEAT)
    return 0


def cmd_risk(args: argparse.Namespace) -> int:
    from synth.risk import claimed, risk  # scikit-learn: only this command pays the import

    if (args.ledger is None) == (args.epsilon is None):
        raise ParameterError("give the run's --ledger or the --epsilon it claims (not both): "
                             "the bounds are computed from it")
    schema = Schema.load(args.schema)
    if args.ledger is not None:
        from synth.report import check_ledger

        if args.delta is not None or args.privacy_unit is not None:
            raise ParameterError("--delta and --privacy-unit go with --epsilon: --ledger "
                                 "holds the run's own")
        try:
            record = json.loads(Path(args.ledger).read_text(encoding="utf-8-sig"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise DataError(f"--ledger {args.ledger!r} is not a run's ledger: {exc}") from None
        _naming(Path(args.ledger), check_ledger, record)
        guarantee = claimed(record)
        if record.get("schema"):  # what the run learned (bounds, categories), read as --schema
            schema = Schema.from_dict(record["schema"]).reading(schema)
    else:
        guarantee = {"epsilon": args.epsilon, "delta": args.delta or 0.0,
                     "unit": args.privacy_unit}
    read = {"max_bytes": args.max_bytes, "encoding": args.encoding}
    attacks = risk(read_table(args.real, **read), read_table(args.release, **read),
                   read_table(args.holdout, **read), schema, **guarantee,
                   sensitive=args.sensitive,
                   progress=None if args.quiet else lambda what: print(
                       f"attacking: {what}", file=sys.stderr))
    if args.json:
        print(json.dumps([a.as_dict() for a in attacks], allow_nan=False))
    else:
        print(risk_text(attacks, guarantee["epsilon"], guarantee["delta"]))
    return 0


def risk_text(attacks: list, epsilon: float, delta: float) -> str:
    """:func:`~synth.risk.risk`'s figures in a steward's words."""
    lines = [f"privacy risk of the release against its guarantee ε={epsilon_text(epsilon)}, "
             f"δ={delta:.3g} (these figures read the real table: for your eyes, not for "
             "release)"]
    for a in attacks:
        if math.isnan(a.advantage):
            lines.append(f"{a.name}: not measured ({a.detail.get('why', 'no rows')})")
            continue
        auc = f"AUC {a.auc:.3f}, " if a.auc is not None else ""
        flag = (": the release is not what its ledger says" if a.above_bound else "")
        lines.append(f"{a.name}: {auc}advantage {a.advantage:.3f} (95 % "
                     f"{a.interval[0]:.3f}–{a.interval[1]:.3f}), bound {a.bound:.3f}: "
                     f"{a.verdict}{flag}")
    return "\n".join(lines)


def cmd_report(args: argparse.Namespace) -> int:
    from synth import report  # deferred: plotly's bundle is only needed here

    source = Path(args.source)
    what = "report"
    try:
        text = source.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataError(f"no such file: {args.source!r}") from None
    except UnicodeDecodeError:
        raise DataError(f"{source.name!r} is not a ledger (.json) or sweep table (.csv): "
                        "it is not UTF-8 text") from None
    except OSError as exc:
        raise DataError(f"cannot read {args.source!r}: {exc.strerror}") from None
    if source.suffix == ".csv":  # our own sweep table: plain numbers, no schema needed
        import pandas as pd

        try:
            rows = pd.read_csv(io.StringIO(text))
        except (pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"{source.name!r} is not a well-formed CSV: "
                            f"{str(exc).strip().splitlines()[-1]}") from None
        page = _naming(source, report.sweep_report, rows)
    else:
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"{source.name!r} is not a run's ledger (.json) or a sweep table "
                            f"(.csv): not valid JSON ({exc.msg} at line {exc.lineno})") from None
        _naming(source, report.check_ledger, record)
        synthetic = None
        if args.real is not None and args.synthetic is None:
            raise ParameterError("--real needs --synthetic: the table to compare it with")
        if args.synthetic is not None:
            synthetic = read_table(args.synthetic, max_bytes=args.max_bytes,
                                   encoding=args.encoding)
        if args.holdout is not None and args.real is None:
            raise ParameterError("--holdout needs --real: the attacks compare the rows a "
                                 "release was made from with rows it never saw")
        if args.real is None:
            page, what = report.release_report(record, synthetic), "release report"
        else:
            real = read_table(args.real, max_bytes=args.max_bytes, encoding=args.encoding)
            released = Schema.from_dict(record.get("schema"))
            if args.schema is not None:  # how the private file writes its dates
                released = released.reading(Schema.load(args.schema))
            attacks = None
            if args.holdout is not None:
                from synth.risk import claimed, risk

                attacks = risk(real, synthetic, read_table(
                    args.holdout, max_bytes=args.max_bytes, encoding=args.encoding), released,
                    **claimed(record))
            page = report.steward_report(record, synthetic, real, released, risk=attacks)
            what = "steward-only report (it compares with --real: keep it, do not release it)"
    _write(args.out, lambda p: p.write_text(page), "--out", {
        "SOURCE": source, **({"--synthetic": Path(args.synthetic)} if args.synthetic else {}),
        **({"--real": Path(args.real)} if args.real else {})})
    print(f"wrote {what} to {args.out}", file=sys.stderr)
    return 0


def _naming(source: Path, check, *args):
    """``check(*args)``, with a DataError it raises prefixed by the file's name."""
    try:
        return check(*args)
    except DataError as exc:
        raise DataError(f"{source.name!r}: {exc}") from None


def cmd_runs(args: argparse.Namespace) -> int:
    """The run store: list the runs and sweeps, show one, or delete one's files (its charge
    on the privacy account stays)."""
    store = RunStore()
    if args.action == "show":
        print(json.dumps(store.get(args.id).to_dict(), indent=2, ensure_ascii=False))
    elif args.action == "delete":
        entry = store.delete(args.id)
        print(f"deleted the files of {entry.id} ({entry.method or entry.kind} on "
              f"{entry.table_name}); its charge on the privacy account stays", file=sys.stderr)
    else:
        for entry in store.list():
            when = time.strftime("%Y-%m-%d %H:%M", time.localtime(entry.started))
            rows = entry.summary.get("rows")
            print(f"{entry.id}  {entry.kind:5}  {entry.status:9}  {when}  "
                  f"{entry.method or '-':16}  ε={epsilon_text(entry.epsilon)}  "
                  f"{entry.table_name}" + (f"  {rows:,} rows" if isinstance(rows, int) else "")
                  + ("  (files deleted)" if entry.deleted else ""))
    return 0


def cmd_account(args: argparse.Namespace) -> int:
    """List every table's spending, or set one table's lifetime limit."""
    store = Store()
    if args.action == "limit":
        table = open_table(args.data, args.max_bytes, args.encoding)
        usage = store.set_limit(store.key(fingerprint(table), former_fingerprint(table)),
                                Path(args.data).name, args.epsilon, args.delta)
        print(_usage_line(usage))
        fragile = "" if isinstance(table, TableFile) else fragile_numbers(table)
        if fragile:
            print(f"note: {fragile}", file=sys.stderr)
        return 0
    tables = store.tables()
    print(f"{len(tables)} table(s) in {store.path}; {COMPOSITION}")
    for usage in tables:
        print(_usage_line(usage))
    return 0


def _usage_line(u: Usage) -> str:
    limit = "no limit" if u.limit_epsilon is None else (
        f"limit ε={u.limit_epsilon:g}" + ("" if u.limit_delta is None
                                           else f", δ={u.limit_delta:.3g}"))
    running = f", {u.running} running or interrupted (counted in full)" if u.running else ""
    line = (f"{u.name} [{u.key[:12]}]: spent ε={epsilon_text(u.epsilon)}, δ={u.delta:.3g}; "
            f"{limit}; {u.runs} run(s){running}")
    if u.mixed:
        line += "; by whom they protected: " + "; ".join(
            f"{unit} ε={epsilon_text(e)}, δ={d:.3g}" for unit, e, d in u.by_unit)
    return line


def cmd_methods(args: argparse.Namespace) -> int:
    for name, cls in METHODS.items():
        params = ", ".join(f"{k}={v!r} ({cls.params[k].interval()}"
                           f"{', or null' if cls.params[k].optional else ''})"
                           for k, v in cls.param_defaults().items())
        print(f"{name}: {cls.title} ({cls.paper})\n  {cls.summary}\n  parameters: {params}\n"
              f"  budget shares: {dict(cls().stages)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m synth",
                                     description="Differentially private synthetic tables.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on failure")
    sub = parser.add_subparsers(dest="command", required=True)

    def data_arg(p: argparse.ArgumentParser) -> None:
        p.add_argument("--max-bytes", type=int, default=DEFAULT_MAX_BYTES,
                       help=f"refuse input files larger than this (default {DEFAULT_MAX_BYTES}"
                            "; run reads a larger file, or a folder of Parquet files, where "
                            "it lies, in chunks)")
        p.add_argument("--encoding", help="text encoding of CSV input, e.g. latin-1 (default: "
                                          "UTF-8, and anything else is refused by line)")

    schema = sub.add_parser("schema", help="schema files").add_subparsers(dest="action",
                                                                        required=True)
    infer = schema.add_parser("infer", help="guess a schema from a table")
    infer.add_argument("data")
    infer.add_argument("--out", type=Path, required=True)
    infer.add_argument("--target", help="target column for utility checks")
    data_arg(infer)
    infer.set_defaults(func=cmd_schema_infer)
    confirm = schema.add_parser(
        "confirm", help="confirm a proposed schema and declare which domains are public")
    confirm.add_argument("schema", type=Path, help="the schema file, rewritten in place")
    confirm.add_argument("data", help="the table, to check the schema and warn about "
                                      "public domains that match it")
    confirm.add_argument("--public", action="append", metavar="COLUMN,...",
                         help="columns whose categories or bounds are public knowledge ('all' "
                              "for every column, 'categories' for every categorical one, "
                              "'known' for every domain proposed from its name, such as a "
                              "month's 1-12; combine them: categories,known); repeatable")
    confirm.add_argument("--numbers", action="append", metavar="COLUMN,...",
                         help="columns of numbers the file writes as text with separators or "
                              "currency signs ('3,750'): read as the numbers they write; "
                              "repeatable")
    confirm.add_argument("--leave-out", action="append", metavar="COLUMN,...",
                         help="columns to leave out of the synthetic table (identifiers, say): "
                              "removed from the schema; repeatable")
    confirm.add_argument("--nice", action="store_true",
                         help="round the bounds of newly public numeric columns outward to "
                              "round numbers: the exact extremes are not published, though "
                              "rounded ones still tell roughly how far the data reaches")
    data_arg(confirm)
    confirm.set_defaults(func=cmd_schema_confirm)

    def run_args(p: argparse.ArgumentParser, recommends: bool = False) -> None:
        """The arguments run and plan share; plan recommends a method when none is named."""
        p.add_argument("data")
        p.add_argument("--schema", type=Path, required=True)
        p.add_argument("--method", required=not recommends, choices=sorted(METHODS),
                       help="default: the method the benchmarks recommend for the table's "
                            "public facts" if recommends else None)
        p.add_argument("--epsilon", type=float, required=True)
        p.add_argument("--delta", type=float,
                       help="default: the largest power of ten ≤ 1/(10n)")
        p.add_argument("--postprocessing-seed", type=int, default=None,
                       help="steers post-processing only (initialisation, search, sampling "
                            "from the fitted model); privacy noise is fresh OS entropy on "
                            "every run, so the same seed twice gives two different releases")
        p.add_argument("--rows", type=int, help="rows to sample (default: as many as the "
                       "input, or its private estimate with a privacy unit)")
        p.add_argument("--privacy-unit", metavar="COLUMN",
                       help="protect every row of one unit (person, household) named by "
                            "COLUMN, not one row; COLUMN is never released (default: each row)")
        p.add_argument("--max-rows-per-unit", type=int, metavar="K",
                       help="keep at most K rows of each unit, chosen at random (needs "
                            "--privacy-unit; default 1)")
        p.add_argument("--set", action="append", metavar="KEY=VALUE",
                       help="method parameter, or budget share as share.STAGE=fraction")
        data_arg(p)

    planning = sub.add_parser("plan", help="what `run` with these arguments would charge, "
                              "refuse or take, from the row count alone (nothing is spent)")
    run_args(planning, recommends=True)
    planning.add_argument("--json", action="store_true",
                          help="the plan as JSON: its entries in the ledger's own format")
    planning.set_defaults(func=cmd_plan)

    run = sub.add_parser("run", help="fit a method and write a synthetic table and its ledger")
    run_args(run)
    run.add_argument("--out", type=Path, required=True)
    run.add_argument("--ledger", type=Path, required=True)
    run.add_argument("--quiet", action="store_true", help="no progress bars")
    run.add_argument("--scheduler", metavar="ADDRESS",
                     help="a Dask scheduler (tcp://host:8786) whose workers count a Parquet "
                          "table where it lies, at the same path, for the methods that only "
                          "count (independent, gsd, mst, aim)")
    run.set_defaults(func=cmd_run)

    ev = sub.add_parser("evaluate", help="utility and fidelity of a synthetic table")
    ev.add_argument("real_test")
    ev.add_argument("synth")
    ev.add_argument("--schema", type=Path, required=True)
    ev.add_argument("--target")
    ev.add_argument("--train", help="real training table: fidelity reference and real-data tree")
    ev.add_argument("--json", action="store_true", help="the figures as one line of JSON")
    data_arg(ev)
    ev.set_defaults(func=cmd_evaluate)

    split = sub.add_parser("split", help="train/validation/test split of the measuring protocol")
    split.add_argument("data")
    split.add_argument("--out-dir", type=Path, required=True)
    data_arg(split)
    split.set_defaults(func=cmd_split)

    fz = sub.add_parser("feasibility", help="private sampling's bounds for a setting (JSON, "
                                            "log10 values and pass/fail)")
    fz.add_argument("--p", type=int, required=True, help="dimension of the Boolean cube")
    fz.add_argument("--d", type=int, default=2, help="degree of the matched marginals")
    fz.add_argument("--n", type=float, help="rows of the true data (default with --ideal: 2^p)")
    fz.add_argument("--epsilon", type=float, default=1.0)
    fz.add_argument("--delta", type=float, default=0.25,
                    help="accuracy margin δ of Theorem 4.2 (not a DP δ; default 1/4)")
    fz.add_argument("--gamma", type=float, default=0.125, help="failure parameter γ")
    mode = fz.add_mutually_exclusive_group()
    mode.add_argument("--Delta", type=float, help="Δ given by hand")
    mode.add_argument("--fn-inf", type=float, help="‖f_n‖∞, giving Δ = 2^p‖f_n‖∞")
    mode.add_argument("--distinct", action="store_true",
                      help="Δ = max(1, 2^p/n): the best case when every row is distinct")
    mode.add_argument("--ideal", action="store_true",
                      help="Δ = 1: every cube point equally often (the default Δ mode)")
    fz.add_argument("--m", type=float, help="size of the reduced space (default: judge m_lo)")
    fz.add_argument("--k", type=float, help="samples to release")
    fz.add_argument("--paper-mode", action="store_true",
                    help="C(p,≤d) without the empty set, as the paper's eq. (3)")
    fz.set_defaults(func=cmd_feasibility)

    sw = sub.add_parser("sweep", help="many runs over a grid, one CSV row per run")
    sw.add_argument("data")
    sw.add_argument("--schema", type=Path, required=True)
    sw.add_argument("--preset", choices=list(PRESETS),
                    help="a ready-made grid; --methods, --epsilons etc. override its parts")
    sw.add_argument("--methods", nargs="+", choices=sorted(METHODS))
    sw.add_argument("--epsilons", type=float, nargs="+")
    sw.add_argument("--seeds", type=int, default=3,
                    help="runs per setting, post-processing seeds 0…N−1 (noise is fresh)")
    sw.add_argument("--param", help="a method parameter to sweep (methods without it ignore it)")
    sw.add_argument("--values", nargs="+", help="the swept parameter's values")
    sw.add_argument("--shares", type=float, nargs="+",
                    help="values of each method's own budget split (e.g. DP-Select's gan_share)")
    sw.add_argument("--set", action="append", metavar="METHOD.KEY=VALUE",
                    help="a parameter held fixed for one method (overrides --demo)")
    sw.add_argument("--demo", action="store_true",
                    help="the Trade-offs page's quicker demo settings (synth.sweep.DEMO)")
    sw.add_argument("--delta", type=float, help="default: the largest power of ten ≤ 1/(10n)")
    sw.add_argument("--jobs", type=int, default=-1, help="parallel runs (default: every core)")
    sw.add_argument("--out", type=Path, required=True)
    sw.add_argument("--quiet", action="store_true", help="no progress bar")
    data_arg(sw)
    sw.set_defaults(func=cmd_sweep)

    reh = sub.add_parser("rehearse", help="spend a share of ε once on a DP stand-in of the "
                         "table, then try each method on the stand-in at no further cost")
    reh.add_argument("data")
    reh.add_argument("--schema", type=Path, required=True)
    reh.add_argument("--epsilon", type=float, required=True,
                     help="the ε of the run being rehearsed")
    reh.add_argument("--share", type=float, default=SHARE,
                     help="the stand-in's cost, as a part of --epsilon (charged to the "
                          f"table's account; default {SHARE:g})")
    reh.add_argument("--delta", type=float, help="default: the largest power of ten ≤ 1/(10n)")
    reh.add_argument("--methods", nargs="+", choices=sorted(METHODS),
                     default=list(REHEARSED), help="the methods to try on the stand-in")
    reh.add_argument("--stand-in", default=STAND_IN, choices=sorted(METHODS),
                     help=f"the method that releases the stand-in (default {STAND_IN})")
    reh.add_argument("--seeds", type=int, default=1,
                     help="runs per method on the stand-in (their noise is fresh)")
    reh.add_argument("--jobs", type=int, default=1, help="parallel runs (-1: every core)")
    reh.add_argument("--json", action="store_true", help="the findings as JSON")
    reh.add_argument("--quiet", action="store_true", help="no progress bar")
    data_arg(reh)
    reh.set_defaults(func=cmd_rehearse)

    rk = sub.add_parser("risk", help="membership and attribute attacks on a release, each "
                        "beside the bound its (ε, δ) places on any attack (reads the real "
                        "table: for your eyes)")
    rk.add_argument("real", help="the rows the release was made from")
    rk.add_argument("release", help="the synthetic table")
    rk.add_argument("--schema", type=Path, required=True)
    rk.add_argument("--holdout", required=True,
                    help="rows of the same population the run never saw")
    rk.add_argument("--ledger", help="the run's ledger: the bounds use its total ε and δ")
    rk.add_argument("--epsilon", type=float, help="instead of --ledger: the ε claimed")
    rk.add_argument("--delta", type=float, help="with --epsilon (default 0)")
    rk.add_argument("--privacy-unit", metavar="COLUMN",
                    help="with --epsilon: the column of the people a guarantee protects (one "
                         "row of each is attacked)")
    rk.add_argument("--sensitive", help="the column attribute inference guesses (default: "
                                        "the schema's target; a number or a date is guessed "
                                        "to its bin)")
    rk.add_argument("--json", action="store_true", help="the attacks as a JSON list")
    rk.add_argument("--quiet", action="store_true", help="no progress lines")
    data_arg(rk)
    rk.set_defaults(func=cmd_risk)

    rep = sub.add_parser("report", help="a self-contained HTML report of a run or a sweep")
    rep.add_argument("source", help="a run's ledger (.json, from run --ledger) or a sweep's "
                                    "table (.csv, from sweep --out)")
    rep.add_argument("--synthetic", help="the run's synthetic table: its marginals join the "
                                         "release report")
    rep.add_argument("--real", help="the private table: makes a steward-only report comparing "
                                    "it with --synthetic (not for release)")
    rep.add_argument("--schema", help="the run's schema file: --real is read in its dates' "
                                      "input formats (a ledger never holds them)")
    rep.add_argument("--holdout", help="with --real, rows the run never saw: the report adds "
                                       "the privacy risk (synth risk) beside its bounds")
    rep.add_argument("--out", type=Path, required=True)
    data_arg(rep)
    rep.set_defaults(func=cmd_report)

    account = sub.add_parser("account", help="what each table has spent over all its runs "
                                             "(kept under SYNTH_HOME, default ~/.synth)")
    account.set_defaults(func=cmd_account, action=None)
    limit = account.add_subparsers(dest="action").add_parser(
        "limit", help="set a table's lifetime limit; a run that would pass it is refused")
    limit.add_argument("data")
    limit.add_argument("--epsilon", type=float, required=True)
    limit.add_argument("--delta", type=float, help="default: no δ limit")
    data_arg(limit)

    listed = sub.add_parser("runs", help="the runs and sweeps recorded under SYNTH_HOME "
                            "(runs.sqlite and runs/ID/): list them, show or delete one")
    action = listed.add_subparsers(dest="action")
    action.add_parser("show", help="one run's record and files (JSON)").add_argument(
        "id", help="a run's ID, or a unique prefix of one")
    action.add_parser("delete", help="remove one run's files; its account charge stays"
                      ).add_argument("id", help="a run's ID, or a unique prefix of one")
    listed.set_defaults(func=cmd_runs)

    methods = sub.add_parser("methods", help="list the methods and their parameters")
    methods.set_defaults(func=cmd_methods)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except SynthError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except (Cancelled, KeyboardInterrupt):
        print("error: cancelled", file=sys.stderr)
        return 130
    except Exception as exc:
        if args.debug:
            raise
        print(f"error: internal error ({type(exc).__name__}: {exc}); rerun with --debug for "
              "the traceback", file=sys.stderr)
        return 1
