"""Every command of the console script, run in a subprocess against the
embedded server: it works with --json, and fails with one line and a
non-zero exit code."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import click
import pytest

import redismem
from redismem import keys as K
from redismem.cli import main

from .test_cli import run_script
from .test_transfer import seed

UNREACHABLE = "redis://someone:not-to-be-printed@127.0.0.1:1/0"
PRINTS_URL = {("up",), ("status",), ("version",)}
"""Commands whose output names the server's URL."""


def leaf_commands(group: click.Group = main, path: tuple[str, ...] = ()
                  ) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the group imports a command's module on lookup
        command = group.get_command(ctx, name)
        assert command is not None, name
        if isinstance(command, click.Group):
            if command.invoke_without_command:  # the group runs on its own too
                yield (*path, name), command
            yield from leaf_commands(command, (*path, name))
        else:
            yield (*path, name), command


def json_lines(text: str) -> list[Any]:
    return [json.loads(line) for line in text.splitlines()]


@pytest.fixture(scope="module")
def seeded(redis_server: Any) -> str:
    ns = "commands"

    async def fill() -> None:
        async with redismem.RedisMemoryStore(redis_server.url, namespace=ns) as store:
            await seed(store)
            # a held turn and a waiter for `turns evict` to evict
            for holder in ("holder", "ghost"):
                await store.memory._conn.functions.turn_acquire(
                    ns, "session", "q1", "p", f"p/{holder}", 86_400_000, 86_400_000)

    asyncio.run(fill())
    return ns


def cases(ns: str, tmp: Path) -> dict[tuple[str, ...], tuple[list[str], Callable[[str], Any]]]:
    """Per command: arguments that succeed, and a check of the --json output."""
    n = ["--namespace", ns]
    s1 = [*n, "--scope", "session:s1"]
    dump = str(tmp / "dump.jsonl")
    return {
        ("up",): (["--data-dir", str(tmp / "d"), "--json"],
                  lambda out: json.loads(out)["url"].startswith("redis://default:")
                  and "@127.0.0.1:" in json.loads(out)["url"]),
        ("down",): (["--data-dir", str(tmp / "d"), "--json"],
                    lambda out: json.loads(out) == {"stopped": True}),
        ("status",): ([*n, "--json"],
                      lambda out: json.loads(out)["namespaces"][0]["value_keys"] == 8),
        ("version",): (["--json"], lambda out: json.loads(out)["library_version"] >= 13),
        ("load-functions",): (["--json"], lambda out: json.loads(out)["action"] == "unchanged"),
        ("set",): ([*s1, "cli", '{"a": 1}', "--json"],
                   lambda out: json.loads(out) == {"key": "cli", "revision": 1}),
        ("get",): ([*s1, "cli", "--json"], lambda out: json.loads(out)["value"] == {"a": 1}),
        ("keys",): ([*s1, "--json"], lambda out: "cli" in json.loads(out)["keys"]),
        ("del",): ([*s1, "cli", "--json"], lambda out: json.loads(out)["deleted"] is True),
        ("incr",): ([*s1, "hits", "--by", "5", "--json"],
                    lambda out: json.loads(out) == {"key": "hits", "value": 5, "revision": 1}),
        ("append",): ([*s1, "log", '{"event": 1}', "--max-items", "10", "--json"],
                      lambda out: json.loads(out) == {"key": "log", "revision": 1}),
        ("merge",): ([*s1, "prefs", '{"theme": "dark"}', "--json"],
                     lambda out: json.loads(out) == {"key": "prefs", "revision": 1}),
        ("changes",): ([*n, "--after", "1", "--json"],
                       lambda out: json_lines(out)[0]["sequence"] == 2),
        ("watch",): ([*n, "--from", "1", "--count", "1", "--json"],
                     lambda out: [e["sequence"] for e in json_lines(out)] == [2]),
        ("scopes",): ([*n, "--kind", "session", "--json"],
                      lambda out: [r["scope_id"] for r in json.loads(out)] == [
                                   "chat", "s1", "s2"]),
        ("turns",): ([*n, "--scope", "session:s1", "--json"],  # no turn taken there
                     lambda out: json.loads(out) == []),
        ("turns", "evict"): ([*n, "session", "q1", "--waiter", "p/ghost", "--json"],
                             lambda out: json.loads(out)["evicted"] is True),
        ("config", "get"): ([*n, "feed_max_bytes", "--json"],
                            lambda out: list(json.loads(out)) == ["feed_max_bytes"]),
        ("config", "set"): ([*n, "max_value_bytes", "2000000", "--json"],
                            lambda out: json.loads(out)["max_value_bytes"] == 2_000_000),
        ("ltm", "users"): ([*n, "--json"],
                           lambda out: {"user_id": "u1", "memories": 2} in json.loads(out)),
        ("trim",): ([*n, "--json"], lambda out: json.loads(out)["trimmed"] == 0),
        ("export",): ([*n, "-o", dump, "--json"],
                      lambda out: json.loads(out)["exported"]["value"] == 11),
        ("import",): ([dump, "--namespace", f"{ns}-copy", "--json"],
                      lambda out: json.loads(out)["written"]["vector"] == 4),
        ("vectors", "set"): ([*s1, "green", "[0, 1, 0.5]", "--metadata", '{"colour": "green"}',
                              "--json"], lambda out: json.loads(out)["revision"] == 1),
        ("vectors", "list"): ([*s1, "--json"],
                              lambda out: json.loads(out)["keys"] == [
                                  "blue", "green", "teal", "tiny"]),
        ("vectors", "get"): ([*s1, "blue", "--json"],
                             lambda out: json.loads(out)["embedding"] == [1.0, 0.0, 0.0]),
        ("vectors", "search"): ([*s1, "[1, 0, 0]", "--top-k", "1", "--json"],
                                lambda out: json.loads(out)[0]["key"] == "blue"),
        ("vectors", "delete"): ([*s1, "teal", "--json"],
                                lambda out: json.loads(out)["deleted"] is True),
        ("threads", "list"): ([*n, "--json"],
                              lambda out: [t["thread_id"] for t in json.loads(out)] == [
                                  "chat", "other"]),
        ("threads", "show"): ([*n, "chat", "--limit", "2", "--json"],
                              lambda out: [e["id"] for e in json.loads(out)] == ["e10", "e11"]),
        ("threads", "compact"): ([*n, "chat", "--max-events", "5", "--json"],
                                 lambda out: json.loads(out) == {"events_removed": 7,
                                                                 "events_kept": 5}),
        ("ltm", "list"): ([*n, "--user", "u1", "--json"],
                          lambda out: [m["id"] for m in json.loads(out)] == ["m1", "m0"]),
        ("ltm", "search"): ([*n, "--user", "u1", "generators", "--json"],
                            lambda out: [m["id"] for m in json.loads(out)] == ["m0"]),
        ("audit",): ([*n, "--json"], lambda out: json.loads(out) == []),
        ("repair-feed",): ([*n, "--json"], lambda out: json.loads(out)["removed"] == []),
        ("index",): ([*n, "--dim", "3", "--json"],
                     lambda out: json.loads(out)["vector_indexes"] == [K.vector_index(ns, 3)]),
        ("users", "add"): (["cliuser", "--role", "reader", *n, "--json"],
                           lambda out: json.loads(out)["role"] == "reader"
                           and f"%R~rm:{{{ns}}}:*" in json.loads(out)["rules"]
                           and len(json.loads(out)["password"]) >= 32),
        ("users", "list"): (["--json"], lambda out: [u["role"] for u in json.loads(out)
                                                     if u["user"] == "cliuser"] == ["reader"]),
        ("users", "rotate-password"): (["cliuser", "--json"],
                                       lambda out: len(json.loads(out)["password"]) >= 32),
        ("users", "remove"): (["cliuser", "--json"],
                              lambda out: json.loads(out) == {"user": "cliuser",
                                                              "removed": True,
                                                              "saved_to_file": True}),
        ("users", "lock-default"): (["--json"],  # its default user needs a password
                                    lambda out: json.loads(out) == {"locked": False,
                                                                    "saved_to_file": True}),
        ("demo",): (["--namespace", f"{ns}-demo", "--json"],
                    lambda out: json.loads(out)["revision"] == 3),
        ("mcp",): ([*n], lambda out: out == ""),  # standard input closed: it ends at once
        ("threads", "delete"): ([*n, "other", "--json"],
                                lambda out: json.loads(out) == {
                                    "thread_id": "other", "events": 1, "checkpoints": 0}),
        ("forget-user",): ([*n, "u1", "--json"],
                           lambda out: json.loads(out)["memories"] == 2
                           and json.loads(out)["thread_events"] >= 1),
        ("drop",): (["--namespace", f"{ns}-copy", "--yes", "--json"],
                    lambda out: json.loads(out)["keys"] > 10),
    }


def test_every_command_works_through_the_console_script(redis_url: str, seeded: str,
                                                        tmp_path: Path) -> None:
    table = cases(seeded, tmp_path)
    assert set(table) == {path for path, _ in leaf_commands()}, "a command without a case"
    secret = urlsplit(redis_url).password
    assert secret
    printed: dict[tuple[str, ...], str] = {}
    for path, (args, check) in table.items():  # in order: up before down, set before get
        url = None if path in (("up",), ("down",)) else redis_url
        done = run_script(*path, *args, url=url)
        assert done.returncode == 0, (path, done.stderr)
        assert check(done.stdout), (path, done.stdout)
        printed[path] = done.stdout + done.stderr
        if path in PRINTS_URL:  # and once more as text
            text = run_script(*path, *[a for a in args if a != "--json"], url=url)
            printed[path] += text.stdout + text.stderr
    # the password a command was given is never printed, in text or JSON; nor
    # that of the server `up` started
    embedded = (tmp_path / "d" / "password").read_text().strip()
    assert [path for path, out in printed.items() if secret in out or embedded in out] == []


def test_every_command_fails_in_one_line(redis_url: str, tmp_path: Path) -> None:
    """Unreachable server for the commands that connect, bad options for the rest."""
    runs: list[tuple[tuple[str, ...], list[str], str]] = []
    for path, command in leaf_commands():
        required = [p for p in command.params if isinstance(p, click.Argument) and p.required]
        filler = {"value": "1", "query": "[1, 0]", "embedding": "[1, 0]", "item": "1",
                  "patch": "{}", "scope": "session",
                  "file": str(tmp_path / "missing.jsonl")}
        args = [filler.get(p.name or "", "x") for p in required]
        if path == ("users", "add"):
            args += ["--role", "reader", "--namespace", "x"]
        if path == ("set",):  # VALUE is optional (--file F instead), checked before connecting
            args += ["1"]
        if path == ("turns", "evict"):
            args += ["--waiter", "x/h"]
        if any(p.name == "url" for p in command.params):
            expected = "Error 111" if path != ("import",) else "does not exist"
            runs.append((path, ["--url", UNREACHABLE, *args], expected))
        else:
            runs.append((path, ["--data-dir", "/proc/version"], "Error: "))
    at = ["--url", redis_url]
    runs += [(("get",), [*at, "--scope", "team:x", "k"], "the kind must be one of"),
             (("set",), [*at, "k"], "missing VALUE (or --file F)"),
             (("nosuch",), [], "No such command 'nosuch'"),
             (("vectors", "search"), [*at, "[1, 0]", "--top-k", "many"], "'many' is not a valid"),
             (("threads", "show"), [*at, "bad:thread"], "InvalidIdError"),
             (("vectors", "set"), [*at, "k", "[0, 0]"], "the zero vector has no direction"),
             (("vectors", "set"), [*at, "k", "[1]", "--metadata", "[]"], "InvalidMetadataError"),
             (("import",), [*at, str(tmp_path)], "is a directory"),
             (("incr",), [*at, "--by", "x", "k"], "'x' is not a valid integer"),
             (("append",), [*at, "k", "{not json"], "ITEM is not valid JSON"),
             (("merge",), [*at, "k", "[1]"], "patch must be a dict")]
    # the unreachable runs spend their time waiting between connection
    # attempts, not on the CPU: run them all at once, trying for a second
    bound = {"REDISMEM_CONNECT_TIMEOUT": "1"}
    with ThreadPoolExecutor(len(runs)) as pool:
        done = list(pool.map(lambda run: run_script(*run[0], *run[1], env=bound), runs))
    for (path, args, expected), result in zip(runs, done, strict=True):
        assert result.returncode != 0, (path, args)
        lines = result.stderr.splitlines()
        if lines and lines[0].startswith("retrying 127.0.0.1:1 for up to 1 s"):
            lines = lines[1:]  # the unreachable server: said once
        assert len(lines) == 1 and lines[0].startswith("Error: "), (path, result.stderr)
        assert expected in lines[0], (path, lines[0])
        assert "Traceback" not in result.stderr and result.stdout == "", path
        assert "not-to-be-printed" not in result.stderr, path
