"""Every command line of the README's "Command line" section runs as shown,
in order, on a fresh server (Debian's redis-server: no search module, so
vector search takes the exact fallback): exit code 0, nothing on stderr.
The README cannot drift from the command again."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

from .helpers import REPO


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Command line"):]
    block = re.search(r"```console\n(.*?)```", section, re.S)
    assert block, "the README's command line section has a console block"
    commands = [line for line in block.group(1).splitlines() if line.strip()]
    assert all(line.startswith("redismem ") for line in commands), commands
    return commands


def test_the_readme_shows_real_commands() -> None:
    assert len(readme_commands()) >= 10


def test_every_readme_command_runs(tmp_path: Path) -> None:
    """As a new user runs them: no REDISMEM_URL, no server yet, a new
    directory; the block's first line starts the embedded server."""
    exe = shutil.which("redismem")
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if k not in ("REDISMEM_URL", "REDISMEM_DATA_DIR")}
    env["XDG_DATA_HOME"] = str(tmp_path / "home")
    try:
        for line in readme_commands():
            words = shlex.split(line, comments=True)
            done = subprocess.run([exe, *words[1:]], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=120, check=False)
            assert done.returncode == 0, (line, done.stdout, done.stderr)
            assert done.stderr == "", (line, done.stderr)
            assert done.stdout, line  # each shows something
        assert (tmp_path / "default.jsonl").exists()
    finally:
        subprocess.run([exe, "down"], env=env, capture_output=True, timeout=60, check=False)
