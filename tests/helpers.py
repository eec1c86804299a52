"""Helpers shared by the tests."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import redis

import redismem
from redismem import keys as K
from redismem.client import open_client
from redismem.topology import on_namespace_node

REPO = Path(__file__).resolve().parent.parent


class BareRedis:
    """Debian's redis-server as a bare install runs it: the default user
    with no password, RDB saves (one on SIGTERM), ``args`` added; it can be
    stopped and started again on the same port and directory. ``binary``
    runs another redis-server the same way (the bundled one, say)."""

    def __init__(self, directory: Path, *args: str,
                 binary: str = "/usr/bin/redis-server") -> None:
        self.directory, self.args, self.binary = directory, args, binary
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> BareRedis:
        self.process = subprocess.Popen(
            [self.binary, "--port", str(self.port), "--bind", "127.0.0.1",
             "--dir", str(self.directory), *self.args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 30
        while not self._answers():
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"redis-server on {self.port} did not start")
            time.sleep(0.05)
        return self

    def _answers(self) -> bool:
        try:
            with redis.Redis(port=self.port, socket_timeout=1) as client:
                return bool(client.ping())
        except redis.AuthenticationError:  # NOAUTH: up, and locked
            return True
        except redis.ConnectionError:
            return False

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=30)
            self.process = None


async def snapshot(mem: redismem.Memory) -> dict[bytes, object]:
    """Every key of the Memory's namespace with its content, to show nothing changed."""
    client = mem.client
    state: dict[bytes, object] = {}
    async for key in client.scan_iter(match=K.pattern(mem.namespace), count=1000):
        kind = await client.type(key)
        if kind == b"hash":
            state[key] = await client.hgetall(key)
        elif kind == b"zset":
            state[key] = await client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            state[key] = await client.xrange(key)
        else:
            state[key] = await client.get(key)
    return state


async def flush_namespace(url: str, ns: str) -> None:
    """Delete every key and search index of namespace ``ns``."""
    client = await open_client(url)
    try:
        for index in await client.execute_command("FT._LIST", **on_namespace_node(client, ns)):
            if index.decode().startswith(K.index_prefix(ns)):
                await client.execute_command("FT.DROPINDEX", index)
        keys = [key async for key in client.scan_iter(match=K.pattern(ns), count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


def revisions_of(written: dict[str, redismem.MemoryValue]) -> dict[str, int]:
    """key -> revision of what ``set_many`` returned."""
    return {key: value.revision for key, value in written.items()}
