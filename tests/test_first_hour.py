"""The command line as a new user meets it (issue 16): the feed from where
it is retained, key pages that say there are more, values that must be
JSON, exit codes, quiet pipes, empty results, the embedded server said
when started, settings and scopes from the command line."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

import redismem
from redismem import keys as K
from redismem.cli import main

from .test_cli import run_script
from .test_commands import leaf_commands


def _write(url: str, ns: str, values: dict[str, object], scope: str = "global") -> None:
    async def run() -> None:
        async with await redismem.connect(url, namespace=ns) as mem:
            target = mem.global_scope() if scope == "global" else mem.session(scope)
            items = list(values.items())
            for first in range(0, len(items), 1000):
                await target.set_many(dict(items[first:first + 1000]), atomic=False)

    asyncio.run(run())


def _trim_feed_before(url: str, ns: str, sequence: int) -> None:
    """What retention does: drop the feed's entries before ``sequence``."""
    async def run() -> None:
        async with await redismem.connect(url, namespace=ns) as mem:
            await mem.client.xtrim(K.feed(ns), minid=f"{sequence}-0", approximate=False)

    asyncio.run(run())


def _sequences(output: str) -> list[int]:
    return [json.loads(line)["sequence"] for line in output.splitlines()]


def test_changes_start_at_the_oldest_retained_event_and_an_expired_cursor_exits_3(
        redis_url: str, ns: str) -> None:
    for i in range(6):
        _write(redis_url, ns, {f"k{i}": i})
    _trim_feed_before(redis_url, ns, 4)
    n = ["--namespace", ns, "--json"]
    plain = run_script("changes", *n, url=redis_url)
    assert plain.returncode == 0 and plain.stderr == ""
    assert _sequences(plain.stdout) == [4, 5, 6]
    assert _sequences(run_script("changes", *n, "--from", "oldest", url=redis_url).stdout) == [
        4, 5, 6]
    assert _sequences(run_script("changes", *n, "--from", "4", url=redis_url).stdout) == [5, 6]
    assert run_script("changes", *n, "--from", "now", url=redis_url).stdout == ""
    expired = run_script("changes", "--namespace", ns, "--from", "1", url=redis_url)
    assert expired.returncode == 3 and expired.stdout == ""
    assert expired.stderr.count("\n") == 1
    assert "cursor 1 has expired: the feed now starts at sequence 4" in expired.stderr
    assert "--from oldest" in expired.stderr
    as_json = run_script("changes", *n, "--from", "0", url=redis_url)
    assert as_json.returncode == 3
    assert json.loads(as_json.stderr)["error"] == "cursor_expired"
    follow = run_script("changes", "--namespace", ns, "--follow", "--from", "2",
                        url=redis_url)
    assert follow.returncode == 3 and "cursor 2 has expired" in follow.stderr
    for bad in (["--from", "soon"], ["--from", "-1"], ["--from", "4", "--after", "4"]):
        refused = run_script("changes", "--namespace", ns, *bad, url=redis_url)
        assert refused.returncode == 2, (bad, refused.stderr)


def _lines(stream: object) -> queue.Queue[str]:
    """The lines of a process's output, as a reader thread gets them."""
    found: queue.Queue[str] = queue.Queue()

    def read() -> None:
        for line in stream:  # type: ignore[attr-defined]
            found.put(line)

    threading.Thread(target=read, daemon=True).start()
    return found


@pytest.mark.parametrize("command", [["changes", "--follow"], ["watch"]])
def test_following_starts_now_after_a_trim(redis_url: str, ns: str,
                                           command: list[str]) -> None:
    """Before, --follow started from cursor 0 and failed with
    CursorExpiredError as soon as anything was trimmed."""
    for i in range(3):
        _write(redis_url, ns, {f"old{i}": i})
    _trim_feed_before(redis_url, ns, 3)
    exe = shutil.which("redismem")
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if k != "REDISMEM_URL"}
    with subprocess.Popen([exe, *command, "--url", redis_url, "--namespace", ns, "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          env=env) as follower:
        try:
            seen = _lines(follower.stdout)
            # the follower starts at the sequence current when it connects:
            # write until it shows one of ours (it misses those before it)
            first = None
            for i in range(600):
                _write(redis_url, ns, {f"new{i}": i})
                try:
                    first = json.loads(seen.get(timeout=0.1))
                    break
                except queue.Empty:
                    assert follower.poll() is None, follower.stderr.read()  # type: ignore[union-attr]
            assert first is not None and first["key"].startswith("new")
            assert isinstance(first["created_at"], int)  # milliseconds in --json
        finally:
            follower.terminate()


def test_keys_prints_max_keys_and_says_how_to_go_on(redis_url: str, ns: str) -> None:
    _write(redis_url, ns, {f"k{i:04d}": i for i in range(2000)}, scope="big")
    s = ["--namespace", ns, "--scope", "session:big"]
    first = run_script("keys", *s, "--max-keys", "5", url=redis_url)
    assert first.returncode == 0
    assert first.stdout.splitlines() == [f"k{i:04d}" for i in range(5)]
    assert first.stderr.startswith("(more keys: go on with --cursor ")
    cursor = first.stderr.split("--cursor ")[1].rstrip(")\n")
    more = run_script("keys", *s, "--max-keys", "5", "--cursor", cursor, url=redis_url)
    assert more.stdout.splitlines() == [f"k{i:04d}" for i in range(5, 10)]
    page = json.loads(run_script("keys", *s, "--max-keys", "1500", "--json",
                                 url=redis_url).stdout)
    assert len(page["keys"]) == 1500 and page["next_cursor"]
    rest = json.loads(run_script("keys", *s, "--cursor", page["next_cursor"], "--json",
                                 url=redis_url).stdout)
    assert rest["keys"] == [f"k{i:04d}" for i in range(1500, 2000)]
    assert rest["next_cursor"] is None
    exact = run_script("keys", *s, "--max-keys", "2000", url=redis_url)
    assert len(exact.stdout.splitlines()) == 2000 and exact.stderr == ""


def test_every_option_says_what_it_does() -> None:
    missing = [(path, param.name) for path, command in leaf_commands()
               for param in command.params
               if isinstance(param, click.Option) and not param.help]
    assert missing == []
    assert all(command.help for _, command in leaf_commands())


def test_a_value_must_be_json_unless_string_and_can_come_from_stdin_or_a_file(
        redis_url: str, ns: str, tmp_path: Path) -> None:
    s = ["--namespace", ns]
    broken = run_script("set", *s, "k", '{"a":', url=redis_url)
    assert broken.returncode == 2 and "VALUE is not valid JSON" in broken.stderr
    assert "--string" in broken.stderr
    assert run_script("get", *s, "k", url=redis_url).stdout == ""  # absent: nothing in a pipe
    assert run_script("set", *s, "k", '{"a":', "--string", url=redis_url).returncode == 0
    assert json.loads(run_script("get", *s, "k", "--json", url=redis_url).stdout)["value"] == (
        '{"a":')
    exe = shutil.which("redismem")
    assert exe is not None
    piped = subprocess.run([exe, "set", *s, "piped", "-"], input='{"from": "stdin"}',
                           capture_output=True, text=True, check=False,
                           env={**os.environ, "REDISMEM_URL": redis_url})
    assert piped.returncode == 0, piped.stderr
    assert json.loads(run_script("get", *s, "piped", "--json", url=redis_url).stdout)[
        "value"] == {"from": "stdin"}
    for name in ("max_value_bytes", "max_call_bytes"):
        assert run_script("config", "set", *s, name, "2000000", url=redis_url).returncode == 0
    big = tmp_path / "big.json"
    big.write_text(json.dumps(["x" * 1000] * 1100))  # 1.1 MB: past the argument limit
    done = run_script("set", *s, "big", "--file", str(big), url=redis_url)
    assert done.returncode == 0, done.stderr
    got = json.loads(run_script("get", *s, "big", "--json", url=redis_url).stdout)
    assert got["value"] == ["x" * 1000] * 1100
    both = run_script("set", *s, "big", "1", "--file", str(big), url=redis_url)
    assert both.returncode == 2 and "not both" in both.stderr
    missing = run_script("set", *s, "big", "--file", str(tmp_path / "nope"), url=redis_url)
    assert missing.returncode == 2 and "does not exist" in missing.stderr


def test_exit_codes_and_json_errors(redis_url: str, ns: str, tmp_path: Path) -> None:
    s = ["--namespace", ns]
    big = tmp_path / "big.json"
    big.write_text(json.dumps("x" * 2_000_000))
    assert run_script("set", *s, "k", "1", url=redis_url).returncode == 0
    conflict = run_script("set", *s, "k", "2", "--expected-revision", "7", "--json",
                          url=redis_url)
    assert conflict.returncode == 4 and conflict.stdout == ""  # 4: a write conflict
    error = json.loads(conflict.stderr)
    assert error["error"] == "revision_conflict" and "ConflictError" in error["message"]
    too_big = run_script("set", *s, "k", "--file", str(big), url=redis_url)
    assert too_big.returncode == 1 and "ValueTooLargeError" in too_big.stderr
    for args, says in [
        (["get", *s, "--scope", "team:x", "k"], "the kind must be one of"),
        (["get", *s, "--scope", "session:bad id", "k"], "--scope"),
        (["vectors", "search", *s, "[1, 0]", "--filter", "{colour"], "is not valid JSON"),
        (["import", "/nonexistent/dump.jsonl"], "does not exist"),
        (["append", *s, "log", "{oops"], "ITEM is not valid JSON"),
    ]:
        done = run_script(*args, url=redis_url)
        assert done.returncode == 2, (args, done.stderr)
        assert says in done.stderr and done.stderr.count("\n") == 1, (args, done.stderr)
        as_json = run_script(*args, "--json", url=redis_url)
        assert json.loads(as_json.stderr)["error"] == "usage", args
    assert "Exit codes: 0 done; 1 refused" in run_script("--help").stdout


def test_a_closed_pipe_ends_quietly(redis_url: str, ns: str) -> None:
    _write(redis_url, ns, {f"k{i:04d}": "v" * 500 for i in range(2000)})  # 1 MB of export
    env = {**os.environ, "REDISMEM_URL": redis_url}
    for command in (f"redismem export --namespace {ns}", f"redismem changes --namespace {ns}",
                    f"redismem keys --namespace {ns}"):
        done = subprocess.run(["bash", "-c", f"{command} | head -1 >/dev/null; "
                               "echo ${PIPESTATUS[0]}"], capture_output=True, text=True,
                              env=env, check=False)
        assert done.stderr == "", (command, done.stderr)
        assert done.stdout.strip() in ("0", "141"), (command, done.stdout)


def test_empty_results_print_nothing(redis_url: str, ns: str) -> None:
    s = ["--namespace", ns]
    for args in (["keys"], ["vectors", "list"], ["vectors", "search", "[1, 0]"],
                 ["threads", "list"], ["ltm", "list"], ["ltm", "search", "anything"],
                 ["ltm", "users"], ["scopes"], ["changes"]):
        done = run_script(*args, *s, url=redis_url)
        assert done.returncode == 0, (args, done.stderr)
        assert done.stdout == "", (args, done.stdout)


@pytest.fixture
def no_server(tmp_path: Path) -> Iterator[dict[str, str]]:
    """An environment without REDISMEM_URL whose embedded server's data
    directory is a fresh one (stopped after the test)."""
    env = {"REDISMEM_DATA_DIR": str(tmp_path / "data")}
    yield env
    run_script("down", env=env)


def test_status_starts_nothing_and_a_command_that_starts_the_server_says_so(
        no_server: dict[str, str], tmp_path: Path) -> None:
    status = run_script("status", env=no_server, cwd=tmp_path)
    assert status.returncode == 1 and "no server to report on" in status.stderr
    assert "redismem up" in status.stderr
    assert not (tmp_path / "data").exists()  # nothing started, nothing made
    demo = run_script("demo", env=no_server, cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    said = demo.stderr.splitlines()
    assert len(said) == 1 and said[0].startswith("started the embedded Redis server at "
                                                 "redis://default:***@127.0.0.1:")
    assert str(tmp_path / "data") in said[0] and "redismem down" in said[0]
    again = run_script("get", "k", env=no_server, cwd=tmp_path)
    assert again.returncode == 0 and again.stderr == ""  # running: nothing to say
    assert run_script("status", env=no_server, cwd=tmp_path).returncode == 0


def test_a_script_that_starts_the_server_says_so(no_server: dict[str, str],
                                                 tmp_path: Path) -> None:
    """Python's last-resort handler prints the redismem.server warning."""
    import sys

    script = ("import asyncio, redismem\n"
              "async def main():\n"
              "    async with await redismem.connect() as mem:\n"
              "        await mem.global_scope().set('k', 1)\n"
              "asyncio.run(main())\n")
    env = {k: v for k, v in os.environ.items() if k != "REDISMEM_URL"} | no_server
    done = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("started the embedded Redis server at redis://default:***@")
    assert "redismem down" in done.stderr


def test_programs_in_any_directory_share_one_embedded_server(tmp_path: Path) -> None:
    """Without REDISMEM_URL or REDISMEM_DATA_DIR the embedded server lives
    in the user's data directory: programs started from two directories
    share one server and one memory (it used to be ./.redismem, so a
    program run from another directory quietly got a second, empty one)."""
    import sys

    home = tmp_path / "xdg"
    env = {k: v for k, v in os.environ.items() if k not in ("REDISMEM_URL", "REDISMEM_DATA_DIR")}
    env["XDG_DATA_HOME"] = str(home)
    script = ("import asyncio, redismem\n"
              "async def main():\n"
              "    async with await redismem.connect() as mem:\n"
              "        print((await mem.global_scope().incr('runs')).revision)\n"
              "asyncio.run(main())\n")
    places = [tmp_path / "a", tmp_path / "b", tmp_path / "old"]
    for place in places:
        place.mkdir()

    def run(where: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", script], cwd=where, env=env,
                              capture_output=True, text=True, timeout=120, check=False)

    try:
        first, second = run(places[0]), run(places[1])
        assert (first.returncode, second.returncode) == (0, 0), first.stderr + second.stderr
        assert (first.stdout, second.stdout) == ("1\n", "2\n")  # one memory
        assert str(home / "redismem") in first.stderr  # said where, once
        assert second.stderr == ""
        assert not any((place / ".redismem").exists() for place in places)
        assert (home / "redismem" / "server.json").exists()
        # data an older version kept in ./.redismem is pointed at when the
        # server starts, not used in silence
        assert run_script("down", env={"XDG_DATA_HOME": str(home)}).returncode == 0
        (places[2] / ".redismem").mkdir()
        (places[2] / ".redismem" / "server.json").write_text("{}")
        third = run(places[2])
        assert third.returncode == 0 and third.stdout == "3\n", third.stderr
        assert f"set REDISMEM_DATA_DIR={places[2] / '.redismem'}" in third.stderr
    finally:
        run_script("down", env={"XDG_DATA_HOME": str(home)})


async def test_wording_of_bad_values(rmem: redismem.Memory) -> None:
    scope = rmem.global_scope()
    with pytest.raises(redismem.InvalidTTLError, match=r"at most .* persist=True removes"):
        await scope.set("k", 1, ttl_seconds=float("inf"))
    with pytest.raises(redismem.InvalidTTLError, match="a positive number of seconds"):
        await scope.set("k", 1, ttl_seconds=0)
    for value, key in (({1: "a", "1": "b"}, "1"), ({True: 1}, "True"),
                       ([{"ok": {None: 1}}], "None"), ({"a": {2.5: 0}}, "2.5")):
        with pytest.raises(redismem.InvalidValueError,
                           match=f"an object key must be a string, got {key}"):
            await scope.set("k", value)
    assert await scope.get("k") == redismem.MemoryValue(None, 0, False)
    # string keys that look like other JSON types
    assert (await scope.set("k", {"1": 1, "true": 2})).revision == 1
    with pytest.raises(redismem.InvalidArgumentError, match=r"redis\+cluster://.*memory://"):
        await redismem.connect("http://somewhere:80/0")


def test_threads_list_and_show_print_iso_times(redis_url: str, ns: str) -> None:
    async def seed() -> None:
        async with redismem.RedisMemoryStore(redis_url, namespace=ns) as store:
            await store.append_event(redismem.MemoryEvent("e1", "chat", "u1", "message",
                                                          1_700_000_000_000, {"t": 1}))

    asyncio.run(seed())
    listed = run_script("threads", "list", "--namespace", ns, url=redis_url).stdout
    assert "last event at 2023-11-14T22:13:20.000Z" in listed
    shown = run_script("threads", "show", "--namespace", ns, "chat", url=redis_url).stdout
    assert shown.startswith("2023-11-14T22:13:20.000Z message e1")
    as_json = json.loads(run_script("threads", "list", "--namespace", ns, "--json",
                                    url=redis_url).stdout)
    assert as_json[0]["last_event_ms"] == 1_700_000_000_000


def test_config_scopes_and_memory_users(redis_url: str, ns: str) -> None:
    s = ["--namespace", ns]
    settings = json.loads(run_script("config", "get", *s, "--json", url=redis_url).stdout)
    assert settings["max_value_bytes"] == 131_072
    one = run_script("config", "get", *s, "max_value_bytes", url=redis_url)
    assert one.stdout == "131072\n"
    changed = run_script("config", "set", *s, "max_value_bytes", "4096", url=redis_url)
    assert changed.returncode == 0 and changed.stdout == "max_value_bytes = 4096\n"
    for bad, says in ((["max_value_bytes", "12"], "max_value_bytes must be between 1024"),
                      (["max_value_bytes", "lots"], "must be an integer, got 'lots'"),
                      (["no_such", "1"], "unknown setting 'no_such'")):
        refused = run_script("config", "set", *s, *bad, url=redis_url)
        assert refused.returncode == 1 and says in refused.stderr, (bad, refused.stderr)
    assert run_script("config", "get", *s, "nope", url=redis_url).returncode == 2
    assert json.loads(run_script("config", "get", *s, "max_value_bytes", "--json",
                                 url=redis_url).stdout) == {"max_value_bytes": 4096}

    async def seed() -> None:
        async with redismem.RedisMemoryStore(redis_url, namespace=ns) as store:
            mem = store.memory
            await mem.session("s1").set_many({"a": 1, "b": 2})
            await mem.session("s1").set_vector("v", [1.0, 0.0])
            await mem.actor("bob").set("turns", 1)
            for user, memory_id in (("u1", "m1"), ("u1", "m2"), ("u2", "m3"), (None, "m4")):
                await store.upsert_long_term_memory(redismem.LongTermMemory(
                    memory_id, user, "notes", {}, "text", [], {}, 1, 2))

    asyncio.run(seed())
    scopes = run_script("scopes", *s, url=redis_url).stdout.splitlines()
    assert scopes == ["actor:bob  1 values, 0 vectors", "session:s1  2 values, 1 vectors"]
    sessions = json.loads(run_script("scopes", *s, "--kind", "session", "--json",
                                     url=redis_url).stdout)
    assert sessions == [{"scope": "session", "scope_id": "s1", "values": 2, "vectors": 1}]
    users = run_script("ltm", "users", *s, url=redis_url).stdout.splitlines()
    assert sorted(users) == ["(shared)  1 memories", "u1  2 memories", "u2  1 memories"]
    assert main.get_command(click.Context(main), "watch") is not None
