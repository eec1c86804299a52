"""The redis-cli guide (docs/redis-cli.md), run command by command
against the test server: every output shown must be what the command prints.

In the expected output, ``...`` inside a line stands for any text, and a
line of just ``...`` for any number of lines. ``redis-cli`` runs with
``--no-raw``, the format it uses on a terminal as the guide shows it, unless
its output goes into a pipe (where it prints raw for the user too).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest

from .helpers import REPO

GUIDE = REPO / "docs" / "redis-cli.md"


def guide_blocks() -> list[list[str]]:
    text = GUIDE.read_text()
    return [block.splitlines() for block in re.findall(r"```console\n(.*?)```", text, re.S)]


def steps(block: list[str]) -> list[tuple[str, list[str]]]:
    """(command, expected output lines) pairs of one console block."""
    found: list[tuple[str, list[str]]] = []
    for line in block:
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            assert found, f"output before any command: {line!r}"
            found[-1][1].append(line)
    return found


def line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


def matches(expected: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` fits ``expected``, with ``...`` wildcards."""
    if not expected:
        return not actual
    if expected[0].strip() == "...":
        return any(matches(expected[1:], actual[i:]) for i in range(len(actual) + 1))
    return bool(actual) and line_pattern(expected[0]).fullmatch(actual[0]) is not None and (
        matches(expected[1:], actual[1:]))


def test_matcher() -> None:
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(['6) "..."'], ['6) "1795"'])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a"], ["a", "b"])
    assert not matches(['6) "..."'], ["6) 1795"])


def test_the_guide_has_the_commands_the_issue_names() -> None:
    commands = " ".join(command for block in guide_blocks() for command, _ in steps(block))
    for needed in ("HGETALL", "ZRANGE", "XRANGE", "FT.INFO", "FCALL_RO"):
        assert f"redis-cli -u \"$REDISMEM_URL\" {needed} " in commands, needed


def test_every_redis_cli_command_of_the_readme(redis_url: str) -> None:
    assert shutil.which("redis-cli"), "redis-cli is needed: apt-get install redis-tools"
    env = {**os.environ, "REDISMEM_URL": redis_url}
    ran = 0
    for block in guide_blocks():
        for command, expected in steps(block):
            if command.startswith("export "):
                name, _, value = command.removeprefix("export ").partition("=")
                env[name] = value
                continue
            program = command.split()[0]
            assert program in ("redismem", "redis-cli"), f"the guide runs only these: {command}"
            shell = command if "|" in command else command.replace(
                "redis-cli ", "redis-cli --no-raw ", 1)
            done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True,
                                  env=env, timeout=60, check=False)
            assert done.returncode == 0, (command, done.stderr)
            actual = done.stdout.splitlines()
            if not matches(expected, actual):
                pytest.fail(f"{command}\nexpected:\n" + "\n".join(expected)
                            + "\ngot:\n" + "\n".join(actual))
            ran += 1
    assert ran >= 12
