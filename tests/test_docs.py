"""The README and docs/ as a newcomer uses them: every Python block runs as
written against a real server, and every relative link leads to a file
(and heading) that exists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from .helpers import REPO

PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def python_blocks() -> list[tuple[str, str]]:
    return [(f"{page.relative_to(REPO)}#{n}", block) for page in PAGES
            for n, block in enumerate(re.findall(r"```python\n(.*?)```", page.read_text(), re.S))]


def slug(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found, code = set(), False
    for line in page.read_text().splitlines():
        code = code != line.startswith("```")
        if not code and line.startswith("#"):
            found.add(slug(line))
    return found


def test_there_are_python_blocks_to_run() -> None:
    assert len(python_blocks()) >= 4


@pytest.mark.parametrize(("where", "code"), python_blocks(), ids=lambda v: v if "#" in v else "")
def test_every_python_block_runs_as_written(where: str, code: str, redis_url: str,
                                            tmp_path: Path) -> None:
    script = tmp_path / "block.py"
    script.write_text(code)
    env = {**os.environ, "REDISMEM_URL": redis_url}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, cwd=tmp_path, timeout=120, check=False)
    assert done.returncode == 0, f"{where}:\n{done.stderr}"


def test_every_relative_link_leads_somewhere() -> None:
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target):
                continue  # https:, mailto:
            path, _, anchor = target.partition("#")
            linked = (page.parent / path).resolve() if path else page
            if not linked.exists():
                broken.append(f"{page.name}: {target} (no such file)")
            elif anchor and linked.suffix == ".md" and anchor not in anchors(linked):
                broken.append(f"{page.name}: {target} (no such heading)")
    assert broken == []


def test_the_readme_is_a_guide_not_a_log() -> None:
    assert len((REPO / "README.md").read_text().splitlines()) <= 400


def test_every_public_type_has_a_table_of_its_fields() -> None:
    """docs/python-api.md lists each public dataclass's fields, all of them,
    in order, so a new field cannot go undocumented."""
    import dataclasses

    import redismem

    text = (REPO / "docs" / "python-api.md").read_text()
    types = [name for name in redismem.__all__
             if dataclasses.is_dataclass(getattr(redismem, name))]
    assert len(types) >= 13
    for name in types:
        found = re.search(rf"\*\*`{name}`\*\*[^\n]*\n\n\| field \|.*?\n\|---.*?\n((?:\|.*\n)+)",
                          text)
        assert found, f"no table of {name}'s fields"
        documented = re.findall(r"^\| `(\w+)` \|", found.group(1), re.M)
        assert documented == [f.name for f in dataclasses.fields(getattr(redismem, name))], name
