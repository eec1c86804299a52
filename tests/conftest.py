"""Test fixtures: a real embedded Redis server (search + JSON modules) on a
free loopback port for the whole session; ``memory://`` as an extra backend
for the scope tests; a fresh namespace per test, so nothing needs flushing."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

import redismem
from redismem.server import EmbeddedServer, ServerState


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerState]:
    server = EmbeddedServer(tmp_path_factory.mktemp("redis"))
    state = server.start()
    yield state
    server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: ServerState) -> str:
    return redis_server.url


@pytest.fixture
def ns() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
async def rmem(redis_url: str, ns: str) -> AsyncIterator[redismem.Memory]:
    """Memory on the real server."""
    async with await redismem.connect(redis_url, namespace=ns, principal="tester") as mem:
        yield mem


@pytest.fixture(params=["redis", "memory"])
async def mem(request: pytest.FixtureRequest, ns: str) -> AsyncIterator[redismem.Memory]:
    """Memory on the real server, and again on ``memory://``."""
    url = request.getfixturevalue("redis_url") if request.param == "redis" else "memory://"
    async with await redismem.connect(url, namespace=ns, principal="tester") as memory:
        yield memory


@pytest.fixture
def plain_redis(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Debian's redis-server (no search module), which .ci/run installs."""
    binary = Path("/usr/bin/redis-server")
    assert binary.exists(), "Debian's redis-server is needed: apt-get install redis-server"
    monkeypatch.setenv("REDISMEM_REDIS_SERVER", str(binary))
    monkeypatch.setenv("REDISMEM_MODULES", "")
    server = EmbeddedServer(tmp_path / "plain")
    state = server.start()
    yield state.url
    server.stop()
