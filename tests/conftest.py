"""Test fixtures: a real embedded Redis server (search + JSON modules) on a
free loopback port for the whole session; ``memory://`` as an extra backend
for the scope tests; a Redis Cluster (3 primaries, 3 replicas) for the tests
marked ``on_cluster`` and ``cluster``; a fresh namespace per test, so nothing
needs flushing.

``mem`` runs a test on the server and on ``memory://``, ``rmem`` on the
server only; a test (or module) marked ``on_cluster`` runs once more on the
cluster, and ``server_url`` is the URL of whichever server it runs on."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import fakeredis
import hypothesis
import pytest
import redis

import redismem
from redismem.library import bundled
from redismem.server import EmbeddedServer, ServerState, user_data_dir

from .cluster import LocalCluster
from .helpers import BareRedis

# Generated tests draw the same examples on every run, so CI is green or red
# for the code, not for the luck of a draw. HYPOTHESIS_PROFILE=explore draws
# new examples each run: do that when you change what a property covers.
hypothesis.settings.register_profile("repeatable", derandomize=True, database=None)
hypothesis.settings.register_profile("explore", derandomize=False)
hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

_CLUSTER = pytest.param("cluster", marks=pytest.mark.cluster)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    cluster = [_CLUSTER] if metafunc.definition.get_closest_marker("on_cluster") else []
    if "backend" in metafunc.fixturenames:
        metafunc.parametrize("backend", ["redis", "memory", *cluster], indirect=True)
    elif "server" in metafunc.fixturenames and cluster:
        metafunc.parametrize("server", ["redis", *cluster], indirect=True)


@pytest.fixture(scope="session", autouse=True)
def user_data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The user's data directory, where the embedded server runs by default,
    is a temporary one for the whole run (the tests and the programs they
    start inherit it): nothing the tests start lands in the real home."""
    saved = {name: os.environ.get(name) for name in ("XDG_DATA_HOME", "REDISMEM_DATA_DIR")}
    home = tmp_path_factory.mktemp("xdg")
    os.environ["XDG_DATA_HOME"] = str(home)
    os.environ.pop("REDISMEM_DATA_DIR", None)
    try:
        yield home
    finally:
        EmbeddedServer(user_data_dir()).stop()
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerState]:
    server = EmbeddedServer(tmp_path_factory.mktemp("redis"))
    state = server.start()
    yield state
    server.stop()


@pytest.fixture(scope="session")
def redis_url(redis_server: ServerState) -> str:
    return redis_server.url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("cluster"))
    try:
        yield local.start()
    finally:
        local.stop()


@pytest.fixture
def server(request: pytest.FixtureRequest) -> str:
    """Which server a real-server test runs on: "redis", or "cluster"."""
    return str(getattr(request, "param", "redis"))


def _url_of(request: pytest.FixtureRequest, server: str) -> str:
    if server == "cluster":
        return str(request.getfixturevalue("redis_cluster").url)
    return str(request.getfixturevalue("redis_url"))


@pytest.fixture
def server_url(request: pytest.FixtureRequest, server: str) -> str:
    return _url_of(request, server)


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """Which backend a test of ``mem`` runs on: "redis", "memory" or "cluster"."""
    return str(request.param)


@pytest.fixture
def backend_url(request: pytest.FixtureRequest, backend: str) -> str:
    return "memory://" if backend == "memory" else _url_of(request, backend)


@pytest.fixture
def ns() -> str:
    return "t" + uuid.uuid4().hex[:12]


@pytest.fixture
async def rmem(server_url: str, ns: str) -> AsyncIterator[redismem.Memory]:
    """Memory on the real server (and on the cluster when marked ``on_cluster``)."""
    async with await redismem.connect(server_url, namespace=ns, principal="tester") as mem:
        yield mem


@pytest.fixture
async def mem(backend_url: str, ns: str) -> AsyncIterator[redismem.Memory]:
    """Memory on the real server, and again on ``memory://`` (and on the
    cluster when marked ``on_cluster``)."""
    async with await redismem.connect(backend_url, namespace=ns, principal="tester") as memory:
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


@pytest.fixture
def bare_redis(tmp_path: Path) -> Iterator[str]:
    """Debian's redis-server as a bare install runs it: no ACL file, no password."""
    server = BareRedis(tmp_path, "--save", "").start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture(scope="module", params=["redis", "memory"])
def lua_client(request: pytest.FixtureRequest) -> Iterator[redis.Redis]:
    """A client for raw FCALLs of the bundled library: on the real server,
    and on fakeredis (the Lua that memory:// runs)."""
    if request.param == "redis":
        conn = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    else:
        conn = fakeredis.FakeRedis(server=fakeredis.FakeServer())
    conn.function_load(bundled().code, replace=True)
    yield conn
    conn.close()
