"""Acknowledged writes survive a server restart with AOF."""

from __future__ import annotations

from pathlib import Path

import pytest

import redismem
from redismem import keys as K
from redismem.server import EmbeddedServer


async def write_history(url: str) -> list[bytes]:
    async with await redismem.connect(url, namespace="dur", principal="w") as mem:
        scope = mem.session("s")
        for i in range(20):
            await scope.set("counter", i)
        await scope.set("gone", 1)
        await scope.delete("gone")
        await scope.set_many({"a": [1], "b": {"x": "y"}})
        return [entry_id for entry_id, _ in await mem.client.xrange(K.feed("dur"))]


async def check_history(url: str, feed_ids: list[bytes]) -> None:
    async with await redismem.connect(url, namespace="dur", principal="w") as mem:
        scope = mem.session("s")
        assert await scope.get("counter") == redismem.MemoryValue(19, 20, True)
        assert await scope.get("gone") == redismem.MemoryValue(None, 0, False)
        assert await scope.get_many(["a", "b"]) == {
            "a": redismem.MemoryValue([1], 1, True), "b": redismem.MemoryValue({"x": "y"}, 1, True)}
        assert await scope.list_keys() == ["a", "b", "counter"]
        assert [entry_id for entry_id, _ in await mem.client.xrange(K.feed("dur"))] == feed_ids
        with pytest.raises(redismem.ConflictError):
            await scope.set("counter", "stale", expected_revision=19)
        with pytest.raises(redismem.ConflictError):
            await scope.set("gone", "stale", expected_revision=1)  # no ABA after restart
        assert await scope.set("gone", "new", expected_revision=0) == 3
        assert await scope.set("counter", 20, expected_revision=20) == 21
        # the sequence goes on without a gap
        ids = [entry_id for entry_id, _ in await mem.client.xrange(K.feed("dur"))]
        assert ids[-1] == f"{len(feed_ids) + 2}-0".encode()


async def test_clean_restart_keeps_everything(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "data")
    feed_ids = await write_history(server.start().url)
    assert feed_ids == [f"{n}-0".encode() for n in range(1, 25)]
    assert server.stop() is True
    assert server.state() is None
    await check_history(server.start().url, feed_ids)
    server.stop()


async def test_crash_with_appendfsync_always_loses_nothing(tmp_path: Path) -> None:
    server = EmbeddedServer(tmp_path / "data", appendfsync="always")
    state = server.start()
    assert state.appendfsync == "always"
    feed_ids = await write_history(state.url)
    server.kill()  # SIGKILL: no shutdown, no final fsync
    assert server.state() is None
    await check_history(server.start().url, feed_ids)
    server.stop()


async def test_an_acknowledged_import_survives_a_crash(redis_url: str, tmp_path: Path) -> None:
    """An import is writes like any other: with appendfsync always, a SIGKILL
    right after it loses nothing, indexes included."""
    from .test_transfer import export_text, import_text, reads, seed

    async with redismem.RedisMemoryStore(redis_url, namespace="dur-src") as source:
        await seed(source)
        text = await export_text(source)
        before = await reads(source)
    server = EmbeddedServer(tmp_path / "data", appendfsync="always")
    url = server.start().url
    async with redismem.RedisMemoryStore(url, namespace="dur-src") as target:
        await import_text(target, text, tmp_path)
    server.kill()
    url = server.start().url
    async with redismem.RedisMemoryStore(url, namespace="dur-src") as target:
        assert await reads(target) == before
    server.stop()
