"""A server open to clients that give no password is said to be open, and
can be locked: ``status`` warns, ``audit`` fails, ``users lock-default``
closes it. The access-control guide's walk-through
(docs/access-control.md), run line by line in bash on Redis as Debian
installs it, ends with a server that refuses unauthenticated clients, users
that survive a restart, and no password on screen."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import redis

import redismem
from redismem.server import find_binaries

from .helpers import REPO, BareRedis, snapshot
from .test_cli import run_script

GUIDE = REPO / "docs" / "access-control.md"


def _refuses_strangers(port: int) -> bool:
    try:
        with redis.Redis(port=port, socket_timeout=5) as stranger:
            stranger.ping()
    except redis.AuthenticationError as exc:
        assert "NOAUTH" in str(exc) or "already authenticated" in str(exc)
        return True
    return False


def test_an_open_server_is_reported_and_locked_only_with_an_operator(bare_redis: str) -> None:
    port = int(bare_redis.rsplit(":", 1)[1].split("/")[0])
    status = run_script("status", url=bare_redis)
    assert status.returncode == 0, status.stderr
    assert "access control: OPEN: any client that connects gets in with no password" in (
        status.stdout)
    assert (f"warning: 127.0.0.1:{port} serves any client that connects, with no password: "
            "it is the default user (every key and command); close it: redismem users "
            "lock-default") in status.stdout
    data = json.loads(run_script("status", "--json", url=bare_redis).stdout)
    assert len(data["open_to_anyone"]) == 1
    audit = run_script("audit", "--namespace", "team", url=bare_redis)
    assert audit.returncode == 2 and "namespace team holds no key" in audit.stderr
    assert audit.stdout.startswith(f"127.0.0.1:{port}: serves any client that connects")
    assert run_script("set", "k", "1", "--namespace", "team", url=bare_redis).returncode == 0
    audit = run_script("audit", "--namespace", "team", url=bare_redis)
    assert audit.returncode == 1
    assert audit.stdout.startswith(f"127.0.0.1:{port}: serves any client that connects")

    refused = run_script("users", "lock-default", url=bare_redis)
    assert refused.returncode == 1 and "no enabled operator user" in refused.stderr
    assert not _refuses_strangers(port)  # refused: nothing changed

    added = run_script("users", "add", "ops", "--role", "operator", "--json", url=bare_redis)
    assert added.returncode == 0, added.stderr
    password = json.loads(added.stdout)["password"]
    ops = bare_redis.replace("redis://", f"redis://ops:{password}@")
    locked = run_script("users", "lock-default", "--json", url=ops)
    assert locked.returncode == 0, locked.stderr
    assert json.loads(locked.stdout) == {"locked": True, "saved_to_file": False}
    assert "gone after a restart" in locked.stderr
    assert _refuses_strangers(port)
    again = run_script("users", "lock-default", url=ops)
    assert again.returncode == 0 and "nothing to lock" in again.stdout
    status = run_script("status", url=ops)
    assert "access control: on (2 ACL users: default, ops)" in status.stdout
    assert "warning" not in status.stdout
    audit = run_script("audit", "--namespace", "team", url=ops)
    assert audit.returncode == 0, audit.stdout + audit.stderr


def test_write_password_makes_a_new_private_file_and_prints_no_password(
        bare_redis: str, tmp_path: Path) -> None:
    target = tmp_path / "reader.pw"
    made = run_script("users", "add", "reader1", "--role", "reader", "--namespace", "x",
                      "--write-password", str(target), url=bare_redis)
    assert made.returncode == 0, made.stderr
    password = target.read_text().strip()
    assert len(password) == 43 and password not in made.stdout + made.stderr
    assert target.stat().st_mode & 0o777 == 0o600
    port = int(bare_redis.rsplit(":", 1)[1].split("/")[0])
    with redis.Redis(port=port, username="reader1", password=password) as reader:
        assert reader.ping()
    again = run_script("users", "rotate-password", "reader1", "--write-password", str(target),
                       url=bare_redis)
    assert again.returncode == 2 and "exists" in again.stderr
    assert target.read_text().strip() == password  # never replaced
    failed = tmp_path / "ghost.pw"
    missing = run_script("users", "rotate-password", "ghost", "--write-password", str(failed),
                         url=bare_redis)
    assert missing.returncode == 1 and "no ACL user 'ghost'" in missing.stderr
    assert not failed.exists()  # removed with the failed command


def _walkthrough() -> str:
    return re.findall(r"```bash\n(.*?)```", GUIDE.read_text(), re.S)[0]


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def _bundled_server() -> str:
    return str(find_binaries().redis_server)


async def _work_as(url: str, worker_url: str) -> None:
    """What a team does on the locked server: every kind of write, by a
    writer and by a worker in its turn (all of them function calls, which
    Redis keeps in its AOF as MULTI/EXEC)."""
    async with await redismem.connect(url, namespace="team") as mem:
        notes = mem.session("s-42")
        rev = await notes.set("notes", ["pack passports"], ttl_seconds=3600)
        await notes.set("notes", ["pack passports", "visa"], expected_revision=rev)
        await notes.incr("hits")
        await notes.incr("hits", 2)
        await notes.append("log", "one")
        await notes.merge("profile", {"name": "Ana"})
        await notes.set("gone", 1)
        await notes.delete("gone")
        await mem.global_scope().set_many({"a": 1, "b": [2]})
        await notes.set_vector("blue", [1.0, 0.0, 0.0], {"colour": "blue"})
    async with await redismem.connect(worker_url, namespace="team") as mem, \
            mem.session("s-42").turn():
        await mem.session("s-42").append("log", "two")


def _rules(line: str) -> tuple[str, frozenset[object]]:
    """An ``ACL LIST`` line as its user and its rules in no order (a
    reloaded file lists them, and a selector's commands, in another)."""
    selectors = re.findall(r"\(([^)]*)\)", line)
    _, name, *root = re.sub(r"\s*\([^)]*\)", "", line).split(" ")
    return name, frozenset([*root, *(frozenset(s.split(" ")) for s in selectors)])


async def _everything_of(url: str) -> tuple[dict[bytes, object], dict[bytes, int],
                                            dict[str, frozenset[object]]]:
    """The namespace's keys with their content and expiry, and the ACL
    users with their rules."""
    async with await redismem.connect(url, namespace="team") as mem:
        state = await snapshot(mem)
        expiries = {key: await mem.client.pexpiretime(key) for key in state}
        users = dict(_rules(line.decode())
                     for line in await mem.client.execute_command("ACL", "LIST"))
        return state, expiries, users


@pytest.mark.parametrize(("binary", "persistence"), [
    pytest.param("/usr/bin/redis-server", "aof", id="debian-aof"),
    pytest.param(None, "aof", id="bundled-aof"),
    pytest.param("/usr/bin/redis-server", "rdb", id="debian-rdb"),
])
async def test_the_guides_walkthrough_locks_a_server_that_keeps_its_data(
        tmp_path: Path, binary: str | None, persistence: str) -> None:
    """Run verbatim, the guide locks the server; what its users write then
    survives a restart with AOF on (and with RDB), as do the feed and the
    users. Turning the default user off, as the guide once did, lost every
    write at a restart with AOF on: Redis replays a function's effects as
    MULTI/EXEC run by the default user, and EXEC checks its rights again."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "users.acl").touch()
    saving = ["--appendonly", "yes", "--save", ""] if persistence == "aof" else [
        "--appendonly", "no", "--save", "3600 1"]
    server = BareRedis(data, "--aclfile", str(data / "users.acl"), *saving,
                       binary=binary or _bundled_server()).start()
    home = tmp_path / "home"
    home.mkdir()
    exe = shutil.which("redismem")
    assert exe is not None
    env = {k: v for k, v in os.environ.items() if k != "REDISMEM_URL"}
    env["PATH"] = f"{Path(exe).parent}{os.pathsep}{env.get('PATH', '')}"
    script = "set -euo pipefail\n" + _walkthrough().replace("127.0.0.1:6379",
                                                              f"127.0.0.1:{server.port}")
    try:
        run = subprocess.run(["bash", "-c", script], cwd=home, env=env, capture_output=True,
                             text=True, timeout=300, check=False)
        screen = run.stdout + run.stderr
        assert run.returncode == 0, screen
        assert "access control: OPEN" in run.stdout
        assert "access control: on (4 ACL users: alice, default, ops, w7)" in run.stdout
        files = {name: (home / f"{name}.pw").read_text().strip()
                 for name in ("ops", "alice", "w7", "alice-2")}
        for name, password in files.items():
            assert password and password not in screen, f"{name}'s password was shown"
            assert (home / f"{name}.pw").stat().st_mode & 0o777 == 0o600
        acl_file = data / "users.acl"
        ops = f"redis://ops:{files['ops']}@127.0.0.1:{server.port}/0"
        await _work_as(f"redis://alice:{files['alice-2']}@127.0.0.1:{server.port}/0",
                       f"redis://w7:{files['w7']}@127.0.0.1:{server.port}/0")
        before = await _everything_of(ops)
        assert len(before[0]) > 10 and b"rm:{team}:feed" in before[0]
        server.stop()
        server.start()
        assert _refuses_strangers(server.port)
        after = await _everything_of(ops)
        assert after[2] == before[2]  # the users
        assert after[0] == before[0]  # every key, the feed and the values
        assert after[1] == before[1]  # their expiries
        with redis.Redis(port=server.port, username="alice", password=files["alice-2"]) as c:
            assert c.ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port, username="alice", password=files["alice"]).ping()
        listed = {u["user"]: u for u in json.loads(
            run_script("users", "list", "--json", url=ops).stdout)}
        assert listed["alice"]["role"] == "writer" and listed["w7"]["sessions"] == ["s-42"]
        # locked: on, every right (what replaying the AOF needs), no password at all
        assert listed["default"]["rules"][0] == "on" and "nopass" not in listed["default"]["rules"]
        assert "~*" in listed["default"]["rules"] and "+@all" in listed["default"]["rules"]
        status = run_script("status", url=ops)
        assert "warning" not in status.stdout, status.stdout
        assert acl_file.stat().st_size > 0
    finally:
        server.stop()


def test_a_default_user_turned_off_is_flagged_and_relocked(tmp_path: Path) -> None:
    """The lock that loses data (the default user off, or stripped of its
    rights: what lock-default did before) is named by status and audit,
    and lock-default puts it right."""
    server = BareRedis(tmp_path, "--appendonly", "yes", "--save", "").start()
    try:
        added = run_script("users", "add", "ops", "--role", "operator", "--password-file",
                           str(_write(tmp_path / "ops.pw", "opspassword-123")), url=server.url)
        assert added.returncode == 0, added.stderr
        with redis.Redis(port=server.port) as anyone:
            anyone.execute_command("ACL", "SETUSER", "default", "off", "resetpass",
                                   "resetkeys", "resetchannels", "-@all")
        ops = f"redis://ops:opspassword-123@127.0.0.1:{server.port}/0"
        address = f"127.0.0.1:{server.port}"
        assert run_script("set", "k", "1", "--namespace", "team", url=ops).returncode == 0
        status = run_script("status", url=ops)
        assert (f"warning: {address} its default user is off: AOF is on here, the server "
                "drops every write the library made when it restarts") in status.stdout
        assert json.loads(run_script("status", "--json", url=ops).stdout)[
            "default_user_loses_data"]
        audit = run_script("audit", "--namespace", "team", url=ops)
        assert audit.returncode == 1
        assert audit.stdout.startswith(f"{address}: its default user is off")
        assert "redismem users lock-default" in audit.stdout
        with redis.Redis(port=server.port, username="ops", password="opspassword-123") as c:
            c.execute_command("ACL", "SETUSER", "default", "on", "-@all")
        assert "its default user is commands -@all on keys none" in run_script(
            "status", url=ops).stdout

        relocked = run_script("users", "lock-default", "--json", url=ops)
        assert relocked.returncode == 0, relocked.stderr
        assert json.loads(relocked.stdout)["locked"] is True
        assert _refuses_strangers(server.port)
        assert "warning" not in run_script("status", url=ops).stdout
        assert run_script("audit", "--namespace", "team", url=ops).returncode == 0
    finally:
        server.stop()
