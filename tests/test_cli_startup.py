"""The command line starts at once: ``redismem --help``, ``--version`` and
usage errors import click and a handful of redismem's own light modules,
never redis-py, asyncio, numpy or the facade (each command imports those
when it runs). Wall time is measured by ``scripts/bench.py cli``, not here;
this counts what is imported."""

from __future__ import annotations

import importlib
import subprocess
import sys

import click
import pytest

from redismem.cli import base, main

# what the command line itself needs before a command runs
LIGHT = {"redismem", "redismem.cli", "redismem.cli.base", "redismem._validate",
         "redismem._json", "redismem.errors", "redismem.limits"}
HEAVY = ("redis", "hiredis", "asyncio", "numpy", "redismem.memory", "redismem.client",
         "redismem.functions", "redismem.scope")

REPORT = """
import atexit, sys
atexit.register(lambda: print("IMPORTED", *sorted(sys.modules), file=sys.stderr))
from redismem.cli import main
main(sys.argv[1:], prog_name="redismem")
"""


def imported(*args: str) -> tuple[int, set[str]]:
    """The exit code of ``redismem ARGS`` and every module it imported."""
    done = subprocess.run([sys.executable, "-c", REPORT, *args], capture_output=True,
                          text=True, timeout=60, check=False)
    line = next(line for line in done.stderr.splitlines() if line.startswith("IMPORTED "))
    return done.returncode, set(line.split()[1:])


@pytest.mark.parametrize(("args", "code", "extra"), [
    (["--help"], 0, set()),
    (["--version"], 0, {"redismem.lua_source"}),
    (["no-such-command"], 2, set()),
    (["get"], 2, {"redismem.cli.data"}),                      # a missing argument
    (["set", "k", "{bad"], 2, {"redismem.cli.data"}),          # JSON that does not parse
    (["get", "k", "--scope", "team"], 2, {"redismem.cli.data"}),
    (["vectors", "search"], 2, {"redismem.cli.data", "redismem.cli.vectors"}),
    (["users", "add"], 2, {"redismem.cli.users", "redismem.acl", "redismem.keys"}),
    (["export", "--nope"], 2, {"redismem.cli.transfer"}),
    (["changes", "--from", "1", "--after", "2"], 2, {"redismem.cli.data"}),
    (["incr", "k", "--ttl", "5", "--persist"], 2, {"redismem.cli.data"}),
    (["append", "k", "{oops"], 2, {"redismem.cli.data"}),
    (["status", "--help"], 0, {"redismem.cli.admin", "redismem.keys"}),
])
def test_help_version_and_usage_errors_import_only_light_modules(
        args: list[str], code: int, extra: set[str]) -> None:
    returncode, modules = imported(*args)
    assert returncode == code
    assert not [m for m in modules if m.split(".")[0] in HEAVY or m in HEAVY]
    assert {m for m in modules if m.startswith("redismem")} == LIGHT | extra


def test_the_listed_commands_are_the_commands() -> None:
    """``--help`` lists each command from base.COMMANDS without importing
    its module: the table names every command, its module, and the start
    of its help, from which click makes the same short help at any width."""
    for module in {module for module, _ in base.COMMANDS.values()}:
        importlib.import_module(f"redismem.cli.{module}")
    assert sorted(main.commands) == sorted(base.COMMANDS)
    for name, command in main.commands.items():
        module, start = base.COMMANDS[name]
        callback = command.callback
        if isinstance(command, click.Group):  # a group's own callback does nothing
            callback = next(iter(command.commands.values())).callback
        assert callback is not None and callback.__module__ == f"redismem.cli.{module}", name
        listed = click.Command(name, help=start)
        for limit in range(20, 111):
            assert listed.get_short_help_str(limit) == command.get_short_help_str(limit), (
                name, limit)
