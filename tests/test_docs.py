"""The documentation: a short README whose examples run, and a site whose tables come from the
code and the benchmark results (``docs/hooks/results.py``), never from hand-pasted figures.
The strict build itself (broken links, missing references) runs in ``make test``."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys

import pytest

from synth.methods import METHODS, make
from synth.privacy.budget import Budget

from .conftest import REPO

DOCS = REPO / "docs"
PAGES = sorted(DOCS.rglob("*.md"))


def hook():
    spec = importlib.util.spec_from_file_location("results_hook", DOCS / "hooks/results.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_a_front_door():
    text = (REPO / "README.md").read_text()
    assert len(text.splitlines()) <= 150
    for link in re.findall(r"\]\((docs/[^)#]+)", text):
        assert (REPO / link).exists(), link
    assert "<!-- walkthrough -->" in text  # tested as printed by test_readme.py


def test_the_readmes_python_quickstart_runs_and_spends_its_budget(tmp_path):
    block = re.search(r"## From Python\n\n```python\n(.*?)```", (REPO / "README.md").read_text(),
                      re.S)
    assert block and len(block.group(1).strip().splitlines()) <= 6
    res = subprocess.run([sys.executable, "-c", block.group(1)], cwd=tmp_path, text=True,
                         capture_output=True, timeout=600,
                         env={**os.environ, "SYNTH_HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert float(res.stdout.split()[-1]) == pytest.approx(1.0, rel=1e-9)


def test_the_python_page_example_runs(tmp_path):
    script = DOCS / "examples/quickstart.py"
    assert f'--8<-- "{script.relative_to(REPO)}"' in (DOCS / "python.md").read_text()
    res = subprocess.run([sys.executable, str(script)], cwd=REPO, text=True,
                         capture_output=True, timeout=600,
                         env={**os.environ, "SYNTH_HOME": str(tmp_path)})
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip()


def test_the_architecture_pages_toy_method_keeps_the_method_contract(monkeypatch):
    """Issue 50: the page adds a method in one file, and the contract suite holds it to every
    promise the registered methods keep (its ledger is its recipe's steps, a cancel leaves
    what ran, its release follows the schema, ...), so the walk-through cannot drift."""
    from tests import test_contract as contract

    example = DOCS / "examples/toy_method.py"
    assert f'--8<-- "{example.relative_to(REPO)}"' in (DOCS / "architecture.md").read_text()
    spec = importlib.util.spec_from_file_location("toy_method", example)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    toy = module.NoisyHistograms
    monkeypatch.setitem(METHODS, toy.name, toy)  # registered, as the page says
    table = contract.small_table()
    for check in (contract.test_the_ledger_is_the_plan,
                  contract.test_with_private_domains_or_units_the_ledger_keeps_within_the_plan,
                  contract.test_the_preview_shows_the_plans_events,
                  contract.test_a_cancel_leaves_exactly_what_ran,
                  contract.test_a_cancel_mid_stage_lands_at_the_next_check_in_every_stage,
                  contract.test_the_release_follows_the_schema,
                  contract.test_parameters_stay_as_given_and_a_second_fit_starts_afresh):
        check(toy.name, table)
    ledger = make(toy.name).fit(*table, Budget(1.0, 1e-5)).ledger_
    assert len(ledger.entries) == len(table[1]) and ledger.total_epsilon == pytest.approx(1.0)


def test_every_method_has_a_page_with_its_declared_parameters():
    text = "\n".join(p.read_text() for p in (DOCS / "methods").glob("*.md"))
    for name in METHODS:
        assert f"<!-- parameters: {name} -->" in text, name
        table = hook().parameters(name)
        for param in METHODS[name].params:
            assert f"| `{param}` |" in table, (name, param)


def test_every_results_marker_renders_from_its_file():
    h = hook()
    markers = [m for page in PAGES for m in h.MARKER.finditer(page.read_text())]
    assert len(markers) >= 10
    for m in markers:
        table = h.render(m["file"], m["path"], h._options(m["options"]))
        assert f"benchmarks/results/{m['file']}" in table and table.count("\n|") >= 2


def test_a_results_table_shows_the_spread_and_its_source(tmp_path, monkeypatch):
    h = hook()
    monkeypatch.setattr(h, "RESULTS", tmp_path)
    (tmp_path / "toy.json").write_text(json.dumps({
        "machine": "a test", "date": "2026-01-02", "seeds": 3,
        "summary": {"a at ε=1": {"tvd2": {"median": 0.05, "min": 0.04, "max": 0.07}},
                    "b at ε=1": {"tvd2": {"median": 0.5, "min": 0.4, "max": 0.6}}}}))
    table = h.render("toy.json", "summary", {"columns": ["tvd2"], "rows": ["b "]})
    assert "| b at ε=1 | 0.5 (0.4–0.6) |" in table and "a at" not in table
    assert "machine a test; 2026-01-02; 3 seeds" in table
    with pytest.raises(KeyError, match="no row of 'summary' has 'tree'"):
        h.render("toy.json", "summary", {"columns": ["tree"]})
    with pytest.raises(KeyError, match="stopped at 'runs'"):
        h.render("toy.json", "runs", {})


def test_the_docs_describe_the_code_not_its_history():
    history = re.compile(r"\bissue \d+|\bbefore issue|\bused to\b|\bpreviously\b", re.I)
    for page in PAGES:
        found = history.findall(page.read_text())
        assert not found, f"{page.relative_to(REPO)}: {found}"
