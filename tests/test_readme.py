"""The README and the user guides in docs/ run as written.

Every fenced ``python`` block of README.md runs (in a fresh process, in an empty temp folder,
with the CLI's home folder there too, so nothing touches the user's database); so does every
``python`` block in docs/*.md that a ``<!-- runnable -->`` line introduces. The guides are
for users: none of them talks about our own work history."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted((ROOT / "docs").glob("*.md"))
FENCE = re.compile(r"^(?P<marker><!-- runnable -->\n)?```python\n(?P<code>.*?)^```$",
                   re.MULTILINE | re.DOTALL)
#: Words of our own history that a user's page must not carry.
INTERNAL = re.compile(r"\b([Ss]ession [0-9]+|[Ii]ssue[- ][0-9]+|the issue's|the lead)\b")


def python_blocks(path: Path, *, marked_only: bool) -> list[str]:
    return [m["code"] for m in FENCE.finditer(path.read_text())
            if m["marker"] or not marked_only]


def _cases() -> list[tuple[str, str]]:
    cases = [(f"README.md[{i}]", code)
             for i, code in enumerate(python_blocks(ROOT / "README.md", marked_only=False))]
    for page in DOCS:
        for i, code in enumerate(python_blocks(page, marked_only=True)):
            cases.append((f"docs/{page.name}[{i}]", code))
    return cases


def test_the_readme_has_a_python_quick_start() -> None:
    assert len(python_blocks(ROOT / "README.md", marked_only=False)) >= 2


@pytest.mark.parametrize(("where", "code"), _cases(), ids=[w for w, _ in _cases()])
def test_python_block_runs_as_written(where: str, code: str, tmp_path: Path) -> None:
    env = {**os.environ, "CONTEXTFOLD_HOME": str(tmp_path / "home"),
           "CONTEXTFOLD_BLOCK_MODEL_REQUESTS": "1"}
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{where} failed:\n{proc.stderr[-3000:]}"


def test_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 400


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_user_pages_carry_no_work_history(page: Path) -> None:
    assert INTERNAL.findall(page.read_text()) == []


@pytest.mark.parametrize("page", [ROOT / "README.md", *DOCS], ids=lambda p: p.name)
def test_links_lead_to_files_that_exist(page: Path) -> None:
    for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text()):
        assert (page.parent / target).exists(), target
