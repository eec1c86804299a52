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

from .helpers import REPO, BareRedis
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


def test_the_guides_walkthrough_locks_a_server(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "users.acl").touch()
    server = BareRedis(data, "--aclfile", str(data / "users.acl")).start()
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
        server.stop()
        server.start()
        assert _refuses_strangers(server.port)
        with redis.Redis(port=server.port, username="alice", password=files["alice-2"]) as c:
            assert c.ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port, username="alice", password=files["alice"]).ping()
        ops = f"redis://ops:{files['ops']}@127.0.0.1:{server.port}/0"
        listed = {u["user"]: u for u in json.loads(
            run_script("users", "list", "--json", url=ops).stdout)}
        assert listed["alice"]["role"] == "writer" and listed["w7"]["sessions"] == ["s-42"]
        assert "off" in listed["default"]["rules"]
    finally:
        server.stop()
