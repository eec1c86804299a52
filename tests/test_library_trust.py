"""The library is trusted by the digest of its code, not only its version:
an altered library with this package's version number is refused, named by
both digests, until an operator restores it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio

import redismem
from redismem.library import bundled, ensure_library
from redismem.server import EmbeddedServer

from .test_cli import run_script


def altered() -> str:
    """The bundled code with one check taken out, the version left as it is."""
    code = bundled().code
    check = "  check_expected(name, expected, current)\n"
    assert check in code
    return code.replace("local function check_expected(name, expected, current)\n",
                        "local function check_expected(name, expected, current)\n  do return end\n")


@pytest.fixture
def own_server(tmp_path: Path) -> Iterator[str]:
    """A server of its own: an altered library must not reach the shared one."""
    server = EmbeddedServer(tmp_path / "trust")
    state = server.start()
    yield state.url
    server.stop()


async def test_an_altered_library_of_the_same_version_is_refused(own_server: str) -> None:
    client = redis.asyncio.Redis.from_url(own_server)
    try:
        await client.function_load(altered(), replace=True)
        with pytest.raises(redismem.LibraryDigestError) as info:
            await redismem.connect(own_server, namespace="n")
        assert bundled().digest in str(info.value)
        assert f"version {bundled().version}" in str(info.value)
        status = json.loads(run_script("status", "--json", url=own_server).stdout)
        assert status["library_digest"] != status["bundled_library_digest"]
        assert "ALTERED" in run_script("status", url=own_server).stdout
        refused = run_script("load-functions", url=own_server)
        assert refused.returncode != 0 and "LibraryDigestError" in refused.stderr
        restored = run_script("load-functions", "--force", "--json", url=own_server)
        assert json.loads(restored.stdout)["action"] == "replaced"
        async with await redismem.connect(own_server, namespace="n") as mem:
            await mem.global_scope().set("k", 1)
            with pytest.raises(redismem.ConflictError):  # the check is back
                await mem.global_scope().set("k", 2, expected_revision=7)
        assert "(its code matches)" in run_script("status", url=own_server).stdout
    finally:
        await client.aclose()


async def test_memory_backend_checks_the_digest_too() -> None:
    from redismem.client import open_client

    client = await open_client("memory://")
    await client.function_load(altered())
    with pytest.raises(redismem.LibraryDigestError):
        await ensure_library(client)
    assert (await ensure_library(client, force=True)).action == "replaced"
    assert (await ensure_library(client)).action == "unchanged"


async def test_a_server_that_lost_the_library_gets_it_again_on_the_next_call(
        own_server: str) -> None:
    """FUNCTION FLUSH under a connected Memory (a server replaced, a node
    that missed the load): the next call meets "Function not found", loads
    the library and is sent once more; the caller sees nothing of it."""
    async with await redismem.connect(own_server, namespace="lost") as mem:
        scope = mem.session("s")
        await scope.set("k", 1)
        await mem.client.function_flush()
        assert await scope.incr("k") == redismem.MemoryValue(2, 2, True)
        assert (await scope.get_many(["k"]))["k"].value == 2
        assert (await mem.client.function_list(library="redismem"))
