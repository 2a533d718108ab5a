"""The command-line walk-throughs (the README's, and the private-domain one on the CLI page of
the docs) run as printed and give a useful release."""

import json
import os
import re
import subprocess

import pandas as pd

from .conftest import REPO


def walkthrough(name: str = "walkthrough", page: str = "README.md") -> list[str]:
    """The commands of a walk-through block (the README's, or a docs page's), continuation
    lines joined."""
    text = (REPO / page).read_text()
    block = re.search(rf"<!-- {name} -->\n```bash\n(.*?)```", text, re.S)
    assert block, f"{page} lost its walk-through block {name!r}"
    return [c.strip() for c in block.group(1).replace("\\\n", " ").splitlines() if c.strip()]


def test_the_readme_walkthrough_runs_as_printed_and_is_useful(tmp_path):
    commands = walkthrough()
    assert commands[0] == "make install"  # done already: the suite runs in that environment
    for name in ("sample_data", ".venv"):
        (tmp_path / name).symlink_to(REPO / name)
    results = []
    home = tmp_path / "home"  # ~: the walk-through writes into a folder it names there
    home.mkdir()
    for command in commands[1:]:
        res = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                             timeout=600, env={**os.environ, "SYNTH_HOME": str(tmp_path),
                                               "HOME": str(home)})
        assert res.returncode == 0, f"{command}\n{res.stderr}"
        results.append(res)
    ran = next(r for c, r in zip(commands[1:], results, strict=True) if " run " in c)
    assert "release checklist" in ran.stderr and "WARNING" not in ran.stderr
    written = {p.name for p in (home / "synth-walkthrough").iterdir()}
    assert written == {"synth.csv", "ledger.json", "release_report.html"}
    assert not [p for p in tmp_path.iterdir() if p.suffix in (".csv", ".json", ".html")]
    account = next(r for c, r in zip(commands[1:], results, strict=True) if c.endswith(
        " account"))
    assert "census_demo.csv" in account.stdout and "spent ε=1," in account.stdout
    said = results[-1].stdout  # in words: 1-way TVD 0.012, 2-way TVD 0.081
    tvd1, tvd2 = (float(v) for v in re.search(r"1-way TVD ([\d.]+), 2-way TVD ([\d.]+)",
                                               said).groups())
    assert tvd2 < 0.2 and tvd1 < 0.05, said  # the audit's: 0.76


def test_the_private_domain_walkthrough_runs_as_printed_and_learns_the_bounds(tmp_path):
    """Issue 36: the second walk-through (categories public, bounds learned) runs as
    printed; its bounds are learned and keep most rows, its release has no blanks, and the
    loss the walk-through admits (capital gain's tail) is what the checklist reports."""
    (tmp_path / "sample_data").symlink_to(REPO / "sample_data")
    (tmp_path / ".venv").symlink_to(REPO / ".venv")
    results, commands = {}, {}
    for command in walkthrough("walkthrough-private", "docs/cli.md"):
        commands[command.split()[1]] = command
        res = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                             timeout=600, env={**os.environ, "SYNTH_HOME": str(tmp_path)})
        assert res.returncode == 0, f"{command}\n{res.stderr}"
        results[command.split()[1]] = res
    assert "a bound may cut off up to" in results["plan"].stdout + results["plan"].stderr
    ledger = json.loads((tmp_path / "private_ledger.json").read_text())
    learned = {c["name"]: c for c in ledger["schema"]["columns"] if c["kind"] == "numeric"}
    assert set(learned) == {"age", "hours_per_week", "capital_gain"}
    assert all(c["learned"] and not c["public"] for c in learned.values())
    assert learned["age"]["lower"] <= 25 and learned["age"]["upper"] >= 60
    assert "capital_gain" in results["run"].stderr  # the checklist names the lost tail
    released = pd.read_csv(tmp_path / "private.csv")
    # the sample's numbers have no blanks; a noisy blank count under 3 Laplace scales says so,
    # and over it (1 draw in 40 per column, by design) the indicator's own noisy marginal gives
    # the release a handful at most
    assert (released[list(learned)].isna().mean() < 0.02).all(), released.isna().mean()
    assert released["workclass"].isna().any()  # where the sample has them, they stay
    figures = json.loads(subprocess.run(
        f"{commands['evaluate']} --json", shell=True, cwd=tmp_path, capture_output=True,
        text=True, timeout=600, check=True,
        env={**os.environ, "SYNTH_HOME": str(tmp_path)}).stdout)
    # SDMetrics' quality counts only pairs with a real trend, which independent columns miss:
    # its shapes, what learned bounds could spoil, stay near 1. Over 100 runs of these
    # commands: 1-way TVD 0.018–0.055 (median 0.025; one CI run 0.074), shapes 0.944–0.981,
    # quality 0.78–0.84; the worst where an upper end overshot (hours learned up to 664 against
    # the data's 99: κ = 2 keeps heavy tails and lets an end land an octave or two past the
    # data). The limits sit well outside that spread, and a bound cut inside the bulk fails
    # the shapes limit (hours declared 0–30, 88 % of the release at the bound: shapes 0.91;
    # its TVD, 0.085, passes)
    assert figures["tvd1"] < 0.1 and figures["column_shapes"] > 0.92, figures
    assert figures["quality"] > 0.75, figures
