"""Acknowledged writes survive a server restart with AOF."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime
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
        assert (await scope.set("gone", "new", expected_revision=0)).revision == 3
        assert (await scope.set("counter", 20, expected_revision=20)).revision == 21
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


async def test_turn_tokens_keep_increasing_across_a_crash(tmp_path: Path) -> None:
    """With appendfsync always, a SIGKILL while turns are held loses no
    token: the holder of the latest turn renews it and writes with it after
    the restart; a holder whose turn lapsed while the server was down, and
    was taken after, is told so by its renewal."""
    server = EmbeddedServer(tmp_path / "data", appendfsync="always")
    url = server.start().url
    try:
        async with await redismem.connect(url, namespace="dur", principal="w") as mem:
            scope, other = mem.session("s"), mem.session("o")
            for _ in range(3):
                await (await scope.acquire_turn()).release()
            held = await scope.acquire_turn(ttl_seconds=60)
            assert held.token == 7  # its acquire is the feed's event 7
            short = await other.acquire_turn(ttl_seconds=1)  # renewed by hand: not while down
            server.kill()  # no shutdown, no final fsync
            while datetime.now(UTC) < short.expires_at:  # down past its ttl
                await asyncio.sleep(0.05)
            server.start()
            await held.renew()  # its turn survived: token 7 is still the latest
            await scope.set("k", "after the crash")  # and carries it
            async with await redismem.connect(url, namespace="dur", principal="x") as rival:
                taken = await rival.session("o").acquire_turn(wait_seconds=0)
                assert taken.token == 11  # after the set (9) and the expire event (10)
            with pytest.raises(redismem.TurnLostError,
                               match=r"turn 8 of session:o was lost: token 11 is held by 'x/"):
                await short.renew()
            assert await short.release() is False
            await held.release()
            assert (await scope.acquire_turn()).token == 13  # after the release (12)
            assert (await scope.get("k")).value == "after the crash"
    finally:
        server.stop()
