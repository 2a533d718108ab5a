"""MkDocs hook: tables rendered at build time from what the code and the benchmarks say.

A method's parameters come from its declared constraints (``<!-- parameters: gsd -->``),
the same ones fit, the CLI and the app read; its sentence on when it is the better choice
(``<!-- when: gsd -->``) is the Synthesize page's, whose figures a test checks against the
benchmark. Results come from ``benchmarks/results/*.json``.

A page asks for a table with a marker on a line of its own::

    <!-- results: peers.json summary columns=tvd2,tree,seconds -->

``summary`` is a dotted path into the file to a mapping of mappings (one row a key), a list
of mappings (one row an item) or a flat mapping (one row a field); ``columns`` picks and
orders the fields (dotted for nested ones; all of the first row's plain fields when left out);
``rows=a,b`` keeps the rows whose key contains one of the words. A field holding ``{median,
min, max}`` prints as "median (min–max)", or the median alone when min = max. Under each
table a line states the machine, the date and the seeds the rows or the file record; a file
without a date takes its last commit's, one without seeds says so. A marker naming a missing
file, path or field (one no row has) fails the build, so ``mkdocs build --strict`` breaks
when a benchmark's output changes shape.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[2] / "benchmarks" / "results"
MARKER = re.compile(r"^<!-- results: (?P<file>[\w.-]+\.json) (?P<path>[^\s]+)"
                    r"(?P<options>(?: \w+=[^\s]+)*) -->$", re.MULTILINE)


PARAMETERS = re.compile(r"^<!-- parameters: (?P<method>\w+) -->$", re.MULTILINE)
WHEN = re.compile(r"<!-- when: (?P<method>\w+) -->")


def on_page_markdown(markdown: str, page, config, files) -> str:
    markdown = PARAMETERS.sub(lambda m: parameters(m["method"]), markdown)
    markdown = WHEN.sub(lambda m: when(m["method"]), markdown)
    return MARKER.sub(lambda m: render(m["file"], m["path"], _options(m["options"])),
                      markdown)


def when(method: str) -> str:
    """The method's own sentence on when it is the better choice (the Synthesize page's)."""
    from synth.methods import METHODS

    return METHODS[method].when


def parameters(method: str) -> str:
    """A method's parameters as fit, the CLI and the app know them, and its budget shares."""
    from synth.methods import METHODS

    cls = METHODS[method]
    lines = ["| parameter | default | allowed | what it does |", "|---|---|---|---|"]
    for name, default in cls.param_defaults().items():
        param = cls.params[name]
        allowed = param.interval() + (", or null: the method chooses" if param.optional else "")
        lines.append(f"| `{name}` | `{default!r}` | {allowed} | "
                     f"{_number(param.help) if param.help else ''} |")
    shares = ", ".join(f"`{stage}` {share:g}" for stage, share in cls().stages.items())
    return "\n".join(lines) + f"\n\nBudget stages and default shares: {shares}.\n"


def _options(text: str) -> dict[str, list[str]]:
    return {k: v.split(",") for k, v in (part.split("=", 1) for part in text.split())}


def render(name: str, path: str, options: dict[str, list[str]]) -> str:
    """The Markdown table a marker stands for, with the line that says where it comes from."""
    results = json.loads((RESULTS / name).read_text())
    node = _at(results, path, name)
    if isinstance(node, dict) and not any(isinstance(v, dict) for v in node.values()):
        node = {key: {"value": value} for key, value in node.items()}  # a flat mapping
        options.setdefault("columns", ["value"])
    rows = list(node.items()) if isinstance(node, dict) else [(None, r) for r in node]
    if "rows" in options:
        rows = [(k, r) for k, r in rows if any(w in str(k) for w in options["rows"])]
    if not rows:
        raise ValueError(f"{name}: {path} has no rows to show")
    columns = options.get("columns") or [k for k, v in rows[0][1].items()
                                         if not isinstance(v, dict | list)]
    head = ([""] if isinstance(node, dict) else []) + [c.replace("_", " ") for c in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for column in columns:  # a field no row has is a marker gone stale
        if all(_at(row, column, "") is MISSING for _, row in rows):
            raise KeyError(f"{name}: no row of '{path}' has '{column}'")
    for key, row in rows:
        cells = [_cell(_at(row, c, "")) for c in columns]
        label = [str(key).replace("_", " ")] if key is not None else []
        lines.append("| " + " | ".join(label + cells) + " |")
    return "\n".join(lines) + "\n\n" + _provenance(name, results, [r for _, r in rows]) + "\n"


MISSING = object()


def _at(node, path: str, where: str):
    """The value at dotted ``path``; a missing one raises naming ``where``, or, with no
    ``where``, is :data:`MISSING` (a row that lacks a field others have)."""
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            if not where:
                return MISSING
            raise KeyError(f"{where}: no '{path}' (stopped at '{part}')")
        node = node[part]
    return node


def _cell(value) -> str:
    if value is MISSING:
        return "–"
    if isinstance(value, dict) and {"median", "min", "max"} <= value.keys():
        if value["min"] == value["max"]:  # one run, or runs that agree
            return _number(value["median"])
        return f"{_number(value['median'])} ({_number(value['min'])}–{_number(value['max'])})"
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "; ".join(value)
    return _number(value)


def _number(value) -> str:
    if isinstance(value, bool) or value is None:
        return "–" if value is None else ("yes" if value else "no")
    if isinstance(value, int):
        return f"{value:,}" if abs(value) >= 10_000 else str(value)
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1000 else f"{value:,.0f}"
    return str(value).replace("|", "\\|")


def _provenance(name: str, results: dict, rows: list) -> str:
    machine = results.get("machine", "not stated")
    if isinstance(machine, dict):
        machine = ", ".join(f"{k} {v}" for k, v in machine.items())
    date = results.get("date") or _committed(name)
    seeds = _seeds(results, rows)
    return f"*From `benchmarks/results/{name}`: machine {machine}; {date}; {seeds}.*"


def _seeds(results: dict, rows: list) -> str:
    """How many seeds (or repeats) the table's figures are over: as its rows say (a summary
    row's ``seeds``, a run's ``seed``), else as the file records."""
    counts = {r["seeds"] for r in rows if isinstance(r, dict) and isinstance(r.get("seeds"), int)}
    if counts:
        return " or ".join(_seed_count(c) for c in sorted(counts)) + " a row"
    if rows and all(isinstance(r, dict) and "seed" in r for r in rows):
        return _seed_count(len({r["seed"] for r in rows}))
    runs = results.get("runs")
    if isinstance(results.get("seeds"), int):
        return _seed_count(results["seeds"])
    if isinstance(runs, list) and runs and all(isinstance(r, dict) and "seed" in r
                                               for r in runs):
        return f"{len({r['seed'] for r in runs})} seeds"
    for key in ("repeats", "runs"):
        if isinstance(results.get(key), int):
            return f"{results[key]} repeats"
    return "seeds not stated"


def _committed(name: str) -> str:
    """The date of the file's last commit (a file never committed is dated 'uncommitted')."""
    out = subprocess.run(["git", "log", "-1", "--format=%cs", "--", str(RESULTS / name)],
                         capture_output=True, text=True, cwd=RESULTS, check=False).stdout
    return out.strip() or "uncommitted"


def _seed_count(n: int) -> str:
    return f"{n} seed" if n == 1 else f"{n} seeds"
