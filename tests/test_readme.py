"""The README's command-line walk-through runs as printed and gives a useful release."""

import json
import os
import re
import subprocess

from .conftest import REPO


def walkthrough() -> list[str]:
    """The commands of the README's walk-through block, continuation lines joined."""
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- walkthrough -->\n```bash\n(.*?)```", text, re.S)
    assert block, "the README lost its walk-through block"
    return [c.strip() for c in block.group(1).replace("\\\n", " ").splitlines() if c.strip()]


def test_the_readme_walkthrough_runs_as_printed_and_is_useful(tmp_path):
    commands = walkthrough()
    assert commands[0] == "make install"  # done already: the suite runs in that environment
    for name in ("sample_data", ".venv"):
        (tmp_path / name).symlink_to(REPO / name)
    results = []
    for command in commands[1:]:
        res = subprocess.run(command, shell=True, cwd=tmp_path, capture_output=True, text=True,
                             timeout=600, env={**os.environ, "SYNTH_HOME": str(tmp_path)})
        assert res.returncode == 0, f"{command}\n{res.stderr}"
        results.append(res)
    ran = next(r for c, r in zip(commands[1:], results, strict=True) if " run " in c)
    assert "release checklist" in ran.stderr and "WARNING" not in ran.stderr
    assert (tmp_path / "release_report.html").exists()
    account = next(r for c, r in zip(commands[1:], results, strict=True) if c.endswith(
        " account"))
    assert "census_demo.csv" in account.stdout and "spent ε=1," in account.stdout
    figures = json.loads(results[-1].stdout)
    assert figures["tvd2"] < 0.2 and figures["tvd1"] < 0.05, figures  # the audit's: 0.76
