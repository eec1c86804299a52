"""The redismem command line: CliRunner for the logic, the installed console
script in a subprocess for the real thing."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import redis
from click.testing import CliRunner

import redismem
from redismem import keys as K
from redismem import library
from redismem.cli import main
from redismem.server import ServerState


def run_script(*args: str, url: str | None = None, cwd: Path | None = None,
               env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("redismem")
    assert exe is not None, "the redismem console script is installed"
    env = {**os.environ, **(env or {})}
    env.pop("REDISMEM_URL", None)
    if url:
        env["REDISMEM_URL"] = url
    return subprocess.run([exe, *args], capture_output=True, text=True, env=env, cwd=cwd,
                          stdin=subprocess.DEVNULL, timeout=120, check=False)


def test_demo_through_console_script(redis_url: str) -> None:
    done = run_script("demo", url=redis_url)
    assert done.returncode == 0, done.stderr
    assert "memory revision 3 notes ['pack passports', 'book airport transfer', " \
           "'check visa rules']" in done.stdout
    assert "second session notes ['buy sunscreen'] (isolated)" in done.stdout
    assert "note without a session fails" in done.stdout
    assert "forget -> {'deleted': True}" in done.stdout
    as_json = run_script("demo", "--json", url=redis_url)
    assert json.loads(as_json.stdout)["revision"] == 3


def test_up_status_down_on_a_data_dir(tmp_path: Path) -> None:
    up = run_script("up", "--data-dir", str(tmp_path), "--json")
    assert up.returncode == 0, up.stderr
    shown = json.loads(up.stdout)
    password = Path(shown["password_file"]).read_text().strip()
    assert password not in up.stdout and shown["url"].startswith("redis://default:***@")
    url = shown["url"].replace("***", password)
    try:
        again = run_script("up", "--data-dir", str(tmp_path), "--json")
        assert json.loads(again.stdout)["pid"] == json.loads(up.stdout)["pid"]
        status = run_script("status", "--url", url, "--json")
        assert status.returncode == 0, status.stderr
        data = json.loads(status.stdout)
        assert data["server_version"].startswith("8.2")
        assert data["modules"] == {"search": True, "json": True}
        assert data["library_version"] is None  # status loads nothing
        assert data["vector_search"] == "index"
    finally:
        down = run_script("down", "--data-dir", str(tmp_path), "--json")
    assert json.loads(down.stdout) == {"stopped": True}
    assert json.loads(run_script("down", "--data-dir", str(tmp_path), "--json").stdout) == {
        "stopped": False}


def test_value_commands(redis_url: str, ns: str) -> None:
    runner = CliRunner()
    base = ["--url", redis_url, "--namespace", ns]
    out = runner.invoke(main, ["set", *base, "--scope", "session:s1", "notes", '["a"]'])
    assert out.exit_code == 0 and out.output.strip() == "revision 1"
    out = runner.invoke(main, ["get", *base, "--scope", "session:s1", "notes", "--json"])
    assert json.loads(out.output) == {"key": "notes", "value": ["a"], "revision": 1,
                                      "found": True}
    out = runner.invoke(main, ["set", *base, "--scope", "session:s1", "notes", "plain text",
                               "--expected-revision", "1", "--string"])
    assert out.output.strip() == "revision 2"
    out = runner.invoke(main, ["keys", *base, "--scope", "session:s1", "--json"])
    assert json.loads(out.output) == {"keys": ["notes"], "next_cursor": None}
    out = runner.invoke(main, ["del", *base, "--scope", "session:s1", "notes"])
    assert out.output.strip() == "deleted"
    out = runner.invoke(main, ["get", *base, "--scope", "session:s1", "notes"])
    assert out.output == ""  # absent: nothing printed into a pipe


@pytest.mark.parametrize(("command", "key", "args"), [
    (["set"], "notes", ['["b"]']), (["incr"], "hits", []), (["append"], "log", ['"b"']),
    (["merge"], "profile", ['{"b": 1}']), (["vectors", "set"], "blue", ["[0, 1]"])])
def test_writes_keep_the_expiry_unless_told(redis_url: str, ns: str, command: list[str],
                                            key: str, args: list[str]) -> None:
    """Every write command keeps the key's expiry; --ttl sets one, --persist
    removes it, and both together are a usage error."""
    runner = CliRunner()
    base = ["--url", redis_url, "--namespace", ns, "--scope", "session:s1"]
    first = {"notes": '["a"]', "hits": "1", "log": '["a"]', "profile": '{"a": 1}',
             "blue": "[1, 0]"}[key]
    kind = "vector" if command[0] == "vectors" else "value"
    item = (K.vector if kind == "vector" else K.value)(ns, "session", "s1", key)
    done = runner.invoke(main, [*command, *base, "--ttl", "3600", key,
                                *([first] if command != ["incr"] else [])])
    assert done.exit_code == 0, done.output
    with redis.Redis.from_url(redis_url) as client:
        at = client.pexpiretime(item)
        assert at > 0
        assert runner.invoke(main, [*command, *base, key, *args]).exit_code == 0
        assert client.pexpiretime(item) == at
        both = runner.invoke(main, [*command, *base, "--ttl", "5", "--persist", key, *args])
        assert both.exit_code == 2 and "give --ttl or --persist, not both" in both.output
        assert runner.invoke(main, [*command, *base, "--persist", key, *args]).exit_code == 0
        assert client.pttl(item) == -1


def test_errors_are_one_line(redis_url: str, ns: str) -> None:
    for args in (["set", "--namespace", ns, "--scope", "session:s", "", "1"],
                 ["set", "--namespace", ns, "k", "1", "--ttl", "-1"],
                 ["set", "--namespace", ns, "k", "1", "--expected-revision", "5"],
                 ["get", "--namespace", "bad ns", "k"],
                 ["get", "--namespace", ns, "--scope", "session", "k"],
                 ["get", "--namespace", ns, "--scope", "team:x", "k"]):
        done = run_script(*args, url=redis_url)
        assert done.returncode != 0, args
        assert "Traceback" not in done.stderr
        assert len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert done.stderr.startswith("Error: ")
    refused = run_script("status", "--url", "redis://127.0.0.1:1/0",  # one attempt, not 10 s
                         env={"REDISMEM_CONNECT_TIMEOUT": "0"})
    assert refused.returncode == 5 and "Traceback" not in refused.stderr
    assert "127.0.0.1:1 did not answer" in refused.stderr and "Error 111" in refused.stderr


def test_exit_codes_tell_usage_conflict_and_unavailable_apart(
        redis_url: str, bare_redis: str, ns: str, tmp_path: Path) -> None:
    """2 usage (a URL that does not parse, an empty password file), 4 a
    write conflict, 5 no server answered, 1 any other refusal; and none of
    them an "unexpected" error."""
    def run(*args: str, url: str = redis_url) -> subprocess.CompletedProcess[str]:
        done = run_script(*args, "--json", url=url, env={"REDISMEM_CONNECT_TIMEOUT": "0"})
        assert "unexpected" not in done.stderr and "Traceback" not in done.stderr, done.stderr
        return done

    def code(done: subprocess.CompletedProcess[str]) -> str:
        return str(json.loads(done.stderr)["error"])

    bad_port = run("status", url="redis://127.0.0.1:99999/0")
    assert bad_port.returncode == 2 and code(bad_port) == "invalid_url"
    assert "Port" in bad_port.stderr or "port" in bad_port.stderr
    conflict = run("set", "--namespace", ns, "k", "1", "--expected-revision", "5")
    assert conflict.returncode == 4 and code(conflict) == "revision_conflict"
    unreachable = run("get", "--namespace", ns, "k", url="redis://127.0.0.1:1/0")
    assert unreachable.returncode == 5 and code(unreachable) == "unavailable"
    empty = tmp_path / "empty.pw"
    empty.write_text("")
    no_password = run("users", "add", "u1", "--role", "reader", "--namespace", ns,
                      "--password-file", str(empty), url=bare_redis)
    assert no_password.returncode == 2 and str(empty) in no_password.stderr
    assert "first line must be a password" in no_password.stderr
    ghost = run("users", "remove", "ghost", url=bare_redis)
    assert ghost.returncode == 1 and "no ACL user 'ghost'" in ghost.stderr
    # an absent key prints nothing into a pipe (so | wc -l counts)
    absent = run_script("get", "--namespace", ns, "missing", url=redis_url)
    assert absent.returncode == 0 and absent.stdout == ""
    status = run_script("status", url=bare_redis)
    assert "though it has 1 ACL user\n" in status.stdout


def test_load_functions(redis_url: str) -> None:
    out = CliRunner().invoke(main, ["load-functions", "--url", redis_url, "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["action"] == "unchanged"


def test_version() -> None:
    out = CliRunner().invoke(main, ["version"])
    assert out.exit_code == 0 and "Lua library version" in out.output
    flag = CliRunner().invoke(main, ["--version"])
    assert flag.exit_code == 0 and flag.output == out.output  # one printer


def test_python_dash_m_runs_the_command_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "REDISMEM_URL"}
    done = subprocess.run([sys.executable, "-m", "redismem", "version", "--json"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["library_version"] == library.bundled().version
    usage = subprocess.run([sys.executable, "-m", "redismem", "--help"], capture_output=True,
                           text=True, env=env, timeout=120, check=False)
    assert usage.stdout.startswith("Usage: redismem ")


def test_changes_and_trim(redis_url: str, ns: str) -> None:
    runner = CliRunner()
    base = ["--url", redis_url, "--namespace", ns]
    runner.invoke(main, ["set", *base, "--scope", "session:a", "user:1", '{"x": 1}'])
    runner.invoke(main, ["set", *base, "--scope", "global", "task:1", "2"])
    runner.invoke(main, ["del", *base, "--scope", "session:a", "user:1"])
    out = runner.invoke(main, ["changes", *base])
    lines = out.output.splitlines()
    assert out.exit_code == 0 and len(lines) == 3
    assert lines[0].startswith("1 ") and 'set value session:a user:1 rev 1' in lines[0]
    assert lines[0].endswith('= {"x": 1}') and "delete value session:a user:1 rev 2" in lines[2]
    out = runner.invoke(main, ["changes", *base, "--scope", "session", "--json"])
    events = [json.loads(line) for line in out.output.splitlines()]
    assert [(e["sequence"], e["action"]) for e in events] == [(1, "set"), (3, "delete")]
    out = runner.invoke(main, ["changes", *base, "--scope", "global", "--pattern", "task:*"])
    assert len(out.output.splitlines()) == 1 and "task:1" in out.output
    out = runner.invoke(main, ["changes", *base, "--after", "2", "--json"])
    assert [json.loads(line)["sequence"] for line in out.output.splitlines()] == [3]
    out = runner.invoke(main, ["trim", "--url", redis_url, "--namespace", ns, "--json"])
    assert json.loads(out.output) == {"namespace": ns, "trimmed": 0}


def test_changes_follow_through_console_script(redis_url: str, ns: str) -> None:
    exe = shutil.which("redismem")
    assert exe is not None
    with subprocess.Popen([exe, "changes", "--url", redis_url, "--namespace", ns, "--follow",
                           "--from", "0", "--json", "--pattern", "live:*"],
                          stdout=subprocess.PIPE,
                          text=True) as follower:
        try:
            for key in ("other", "live:1"):
                CliRunner().invoke(main, ["set", "--url", redis_url, "--namespace", ns, key, "1"])
            assert follower.stdout is not None
            event = json.loads(follower.stdout.readline())
            assert (event["key"], event["value"], event["sequence"]) == ("live:1", 1, 2)
        finally:
            follower.terminate()


def test_vector_commands(redis_url: str, ns: str) -> None:
    runner = CliRunner()
    base = ["--url", redis_url, "--namespace", ns, "--scope", "session:lab"]

    async def seed() -> None:
        async with await redismem.connect(redis_url, namespace=ns) as mem:
            await mem.session("lab").set_vectors([("blue", [1.0, 0.0, 0.0], {"colour": "blue"}),
                                                  ("red", [0.0, 1.0, 0.0], {"colour": "red"})])

    asyncio.run(seed())
    out = runner.invoke(main, ["vectors", "list", *base, "--json"])
    assert json.loads(out.output) == {"keys": ["blue", "red"], "next_cursor": None}
    out = runner.invoke(main, ["vectors", "get", *base, "blue", "--json"])
    assert json.loads(out.output) == {"key": "blue", "embedding": [1.0, 0.0, 0.0],
                                      "metadata": {"colour": "blue"}, "revision": 1,
                                      "found": True}
    out = runner.invoke(main, ["vectors", "search", *base, "[1, 0.1, 0]", "--top-k", "1"])
    assert out.exit_code == 0 and out.output.startswith("0.99") and " blue rev 1 " in out.output
    out = runner.invoke(main, ["vectors", "search", *base, "[1, 0, 0]", "--json", "--filter",
                               '{"colour": "red"}'])
    assert [r["key"] for r in json.loads(out.output)] == ["red"]
    out = runner.invoke(main, ["vectors", "delete", *base, "red"])
    assert out.output.strip() == "deleted"
    out = runner.invoke(main, ["vectors", "get", *base, "red"])
    assert out.output == ""  # absent: nothing printed into a pipe
    bad = run_script("vectors", "search", *base, "[0, 0, 0]")
    assert bad.returncode == 1 and bad.stderr.startswith("Error: InvalidVectorError")
    bad = run_script("vectors", "search", *base, "not json")
    assert bad.returncode == 2 and "QUERY is not valid JSON" in bad.stderr


def test_thread_and_ltm_commands(redis_url: str, ns: str) -> None:
    async def seed() -> None:
        async with redismem.RedisMemoryStore(redis_url, namespace=ns) as store:
            await store.append_events("chat", [
                redismem.MemoryEvent(f"e{i}", "chat", None, "trace" if i == 0 else "message",
                                     i, {"i": i}) for i in range(6)])
            await store.upsert_long_term_memory(redismem.LongTermMemory(
                "m1", "u1", "knowledge", {}, "python generators yield", [], {}, 1, 1))

    asyncio.run(seed())
    runner = CliRunner()
    base = ["--url", redis_url, "--namespace", ns]
    out = runner.invoke(main, ["threads", "list", *base, "--json"])
    assert [(r["thread_id"], r["events"]) for r in json.loads(out.output)] == [("chat", 6)]
    out = runner.invoke(main, ["threads", "show", *base, "chat", "--limit", "2"])
    assert out.output.splitlines() == ['1970-01-01T00:00:00.004Z message e4 {"i": 4}',
                                       '1970-01-01T00:00:00.005Z message e5 {"i": 5}']
    out = runner.invoke(main, ["threads", "compact", *base, "chat", "--max-events", "2",
                               "--keep-type", "trace", "--json"])
    assert json.loads(out.output) == {"events_removed": 4, "events_kept": 2}
    out = runner.invoke(main, ["threads", "show", *base, "chat", "--json"])
    assert [e["id"] for e in json.loads(out.output)] == ["e0", "e5"]
    out = runner.invoke(main, ["ltm", "list", *base, "--user", "u1"])
    assert out.output.strip() == "m1 [knowledge] python generators yield"
    out = runner.invoke(main, ["ltm", "search", *base, "--user", "u1", "generators", "--json"])
    assert [m["id"] for m in json.loads(out.output)] == ["m1"]
    bad = run_script("threads", "show", "bad:thread", url=redis_url)
    assert bad.returncode == 1 and bad.stderr.startswith("Error: InvalidIdError")


def test_users_on_a_server_without_an_acl_file_say_they_will_not_survive(
        bare_redis: str, tmp_path: Path) -> None:
    plain_redis = bare_redis
    short = tmp_path / "short.txt"
    short.write_text("short\n")
    refused = run_script("users", "add", "tmpuser", "--role", "reader", "--namespace", "x",
                         "--password-file", str(short), "--url", plain_redis)
    assert refused.returncode == 1 and "at least 12 characters" in refused.stderr
    added = run_script("users", "add", "tmpuser", "--role", "reader", "--namespace", "x",
                       "--url", plain_redis, "--json")
    try:
        assert added.returncode == 0, added.stderr
        assert json.loads(added.stdout)["saved_to_file"] is False
        assert "no ACL file" in added.stderr and "gone after a restart" in added.stderr
        rotated = run_script("users", "rotate-password", "tmpuser", "--password-file",
                             str(short), "--url", plain_redis)
        assert rotated.returncode == 1 and "at least 12 characters" in rotated.stderr
        listed = run_script("users", "list", "--url", plain_redis)
        assert listed.returncode == 0, listed.stderr
        header, *rows = listed.stdout.splitlines()
        assert header.split() == ["USER", "ROLE", "NAMESPACE", "SCOPES", "ENABLED"]
        assert any(row.split()[:3] == ["tmpuser", "reader", "x"] for row in rows)
        assert all(len(row) < 200 for row in rows)  # no raw ACL rules on one line
    finally:
        run_script("users", "remove", "tmpuser", "--url", plain_redis)


@pytest.mark.parametrize(("auth", "says", "error"), [
    ("default:wrong-password@", "refused user 'default'", "WRONGPASS"),
    ("", "requires a password", "NOAUTH"),
])
async def test_a_refused_login_fails_at_once_naming_the_user(
        redis_server: ServerState, auth: str, says: str, error: str) -> None:
    """An authentication error is final: not retried (the retries took
    10 s), a redismem error that says which user and what to check, and no
    password shown. The server counts the refusals: one per attempt."""
    url = f"redis://{auth}127.0.0.1:{redis_server.port}/0"
    admin = redis.Redis(port=redis_server.port, password=redis_server.password)

    def refusals() -> int:
        return int(admin.info("errorstats").get(f"errorstat_{error}", {}).get("count", 0))

    before = refusals()
    with pytest.raises(redismem.PermissionDeniedError, match=says) as info:
        await redismem.connect(url)
    assert "wrong-password" not in str(info.value)
    failed = run_script("get", "--url", url, "k")
    assert failed.returncode == 1 and says in failed.stderr
    assert "wrong-password" not in failed.stderr
    assert refusals() - before == 2  # one attempt each, no retries
    admin.close()


def test_names_a_raw_write_put_in_are_printed_escaped(redis_url: str, ns: str) -> None:
    """A writer's raw ZADD can list a name holding terminal escapes or bidi
    controls (the library refuses them): every command prints it escaped."""
    evil = "k\x1b]0;owned\x07\u202e"
    with redis.Redis.from_url(redis_url) as client:
        client.zadd(K.names(ns, "value", "session", "s1"), {evil: 0})
    runner = CliRunner()
    out = runner.invoke(main, ["keys", "--url", redis_url, "--namespace", ns, "--scope",
                               "session:s1"])
    assert out.exit_code == 0, out.output
    assert "\x1b" not in out.output and "\u202e" not in out.output
    assert "k\\x1b]0;owned\\x07\\u202e" in out.output
