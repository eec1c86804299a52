"""Reading the change feed: pages, filters, retention, watch and listeners."""

from __future__ import annotations

import asyncio
import itertools
import subprocess
import sys
import time
from collections import deque

import pytest

import redismem
from redismem import keys as K
from redismem import limits

pytestmark = pytest.mark.on_cluster


async def test_cursor_paging_over_1000_events(rmem: redismem.Memory) -> None:
    scope = rmem.session("s")
    for start in range(0, 1000, 250):
        await scope.set_many({f"k{i:04d}": i for i in range(start, start + 250)})
    seen: list[int] = []
    cursor = 0
    while True:
        page = await scope.changes(after=cursor, limit=100)
        assert page.oldest_sequence == 1
        if not page.items:
            assert page.next_cursor == cursor  # nothing new: the cursor stays
            break
        assert len(page.items) == 100
        seen.extend(event.sequence for event in page.items)
        cursor = page.next_cursor
    assert seen == list(range(1, 1001))
    event = (await scope.changes(after=41, limit=1)).items[0]
    assert (event.sequence, event.key, event.value, event.revision) == (42, "k0041", 41, 1)
    assert (event.scope, event.scope_id, event.kind, event.action) == ("session", "s", "value",
                                                                      "set")
    assert event.principal == "tester" and event.created_at.tzinfo is not None
    whole = await rmem.changes(limit=1000)
    assert [e.sequence for e in whole.items] == list(range(1, 1001))


async def test_prefix_and_scope_filters(rmem: redismem.Memory) -> None:
    await rmem.session("a").set_many({"user:1": 1, "task:1": 2})
    await rmem.session("b").set("user:2", 3)
    await rmem.global_scope().set("user:3", 4)
    await rmem.actor("bob").delete("nothing")
    await rmem.session("a").delete("user:1")
    page = await rmem.session("a").changes(prefix="user:")
    assert [(e.key, e.action) for e in page.items] == [("user:1", "set"), ("user:1", "delete")]
    assert page.next_cursor == 5  # the last event examined (deleting nothing wrote none)
    sessions = await rmem.changes(scope="session")
    assert [e.scope_id for e in sessions.items] == ["a", "a", "b", "a"]
    users = await rmem.changes(prefix="user:")
    assert [e.key for e in users.items] == ["user:1", "user:2", "user:3", "user:1"]
    assert (await rmem.changes(after=5)).items == []
    with pytest.raises(redismem.InvalidArgumentError, match="scope"):
        await rmem.changes(scope="team")
    for bad in (-1, "3", 1.5):
        with pytest.raises(redismem.InvalidArgumentError, match="after"):
            await rmem.changes(after=bad)  # type: ignore[arg-type]
    with pytest.raises(redismem.InvalidArgumentError, match="limit"):
        await rmem.changes(limit=1001)


async def test_value_inclusion_boundary_in_events(rmem: redismem.Memory) -> None:
    scope = rmem.global_scope()
    await scope.set("fits", "x" * (limits.FEED_VALUE_BYTES - 2))  # 65,536 bytes of JSON
    await scope.set("big", "x" * (limits.FEED_VALUE_BYTES - 1))  # 65,537 bytes
    fits, big = (await scope.changes()).items
    assert fits.value == "x" * (limits.FEED_VALUE_BYTES - 2) and not fits.value_omitted
    assert big.value is None and big.value_omitted


def _ms(time: tuple[int, int]) -> int:
    return int(time[0]) * 1000 + int(time[1]) // 1000


async def test_retention_trims_and_expired_cursor_raises(rmem: redismem.Memory) -> None:
    scope = rmem.global_scope()
    retention = 2000  # the new events stay younger than this, even on a loaded machine
    await rmem.configure(feed_retention_ms=retention)
    for start in range(0, 300, 100):
        await scope.set_many({f"old{i}": i for i in range(start, start + 100)})
    written = _ms(await rmem.client.time())
    while _ms(await rmem.client.time()) <= written + retention:  # the server's clock
        await asyncio.sleep(0.05)
    for i in range(3):  # sequences 301..303: no multiple of 16 passed, nothing trimmed yet
        await scope.set(f"new{i}", i)
    assert (await scope.changes(limit=1)).oldest_sequence == 1
    for i in range(3, 5):  # 304 passes 16 x 19: one bounded trim of 16 x 16 events
        await scope.set(f"new{i}", i)
    page = await scope.changes()
    assert page.oldest_sequence == 257 and page.items[0].sequence == 257
    assert await rmem.trim_feed() == 44  # the rest, on demand
    page = await scope.changes()
    assert page.oldest_sequence == 301 and [e.key for e in page.items] == [
        f"new{i}" for i in range(5)]
    assert await rmem.client.xlen(K.feed(rmem.namespace)) == 5
    with pytest.raises(redismem.CursorExpiredError) as info:
        async for _ in scope.watch("*", after=10, interval=0.05):
            pass
    assert (info.value.after, info.value.oldest_sequence) == (10, 301)
    assert info.value.code == "cursor_expired"
    rmem.on_change("*", after=3)(lambda event: None)
    with pytest.raises(redismem.CursorExpiredError):
        await rmem.serve()
    # a current cursor is fine, and ttl expiry appends no event
    await rmem.configure(feed_retention_ms=limits.FEED_RETENTION_MS)
    await scope.set("short", 1, ttl_seconds=0.05)
    await asyncio.sleep(0.1)
    assert (await scope.get("short")).found is False
    assert [e.key for e in (await scope.changes(after=304)).items] == ["new4", "short"]


async def test_trim_when_everything_is_old(rmem: redismem.Memory) -> None:
    await rmem.global_scope().set_many({f"k{i}": i for i in range(5)})
    await rmem.configure(feed_retention_ms=1)
    await asyncio.sleep(0.01)
    assert await rmem.trim_feed() == 5
    page = await rmem.changes()
    assert page.items == [] and page.oldest_sequence == 6
    await rmem.global_scope().set("k", 1)
    assert (await rmem.changes(after=5)).items[0].sequence == 6


async def test_memory_lab_listener(rmem: redismem.Memory) -> None:
    events: deque[dict[str, str]] = deque(maxlen=100)

    @rmem.on_change("memory-lab.*", scope="global")
    async def changed(event: redismem.MemoryChangeEvent) -> None:
        events.append({"key": event.key, "action": event.action})

    assert changed.__name__ == "changed"  # the decorator returns the function unchanged
    stop = asyncio.Event()
    serving = asyncio.create_task(rmem.serve(stop=stop))
    await rmem.global_scope().set("memory-lab.signal", "hello")
    await rmem.session("s").set("memory-lab.other", "not global")
    await rmem.global_scope().set("elsewhere", 1)
    for _ in range(200):
        if events:
            break
        await asyncio.sleep(0.01)
    stop.set()
    await asyncio.wait_for(serving, 2)
    assert list(events) == [{"key": "memory-lab.signal", "action": "set"}]


async def test_watch_with_several_patterns(rmem: redismem.Memory) -> None:
    scope = rmem.session("w")
    for key in ("user:1", "task:1", "user:2", "note", "tasks"):
        await scope.set(key, 1)
    await rmem.session("other").set("user:9", 1)
    seen: list[str] = []
    async for event in scope.watch(["user:*", "task:?"], interval=0.05):
        seen.append(event.key)
        if len(seen) == 3:
            break
    assert seen == ["user:1", "task:1", "user:2"]


async def test_watch_delivers_new_events_promptly(rmem: redismem.Memory) -> None:
    scope = rmem.global_scope()
    await scope.set("before", 1)
    received: list[tuple[str, float]] = []

    async def watcher() -> None:
        async for event in scope.watch("*", after=None, interval=5):
            received.append((event.key, time.perf_counter()))
            return

    task = asyncio.create_task(watcher())
    await asyncio.sleep(0.05)
    await scope.set("after", 2)
    acked = time.perf_counter()
    await asyncio.wait_for(task, 2)  # far less than the 5 s block: XREAD returns on the write
    assert received[0][0] == "after"
    assert received[0][1] - acked < 1.0


async def test_stop_ends_watch_promptly(rmem: redismem.Memory) -> None:
    stop = asyncio.Event()

    async def watcher() -> list[redismem.MemoryChangeEvent]:
        return [e async for e in rmem.global_scope().watch("*", interval=0.05, stop=stop)]

    task = asyncio.create_task(watcher())
    await asyncio.sleep(0.1)
    stop.set()
    assert await asyncio.wait_for(task, 1) == []
    flag = {"stop": False}
    gen = rmem.global_scope().watch("*", interval=0.05, stop=lambda: flag["stop"])
    await rmem.global_scope().set("k", 1)
    first = await anext(gen)
    flag["stop"] = True
    assert first.key == "k"
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(gen), 1)


async def test_listener_exception_propagates(rmem: redismem.Memory) -> None:
    calls: list[str] = []

    @rmem.on_change("*")
    def quiet(event: redismem.MemoryChangeEvent) -> None:
        calls.append(event.key)

    @rmem.on_change("boom*")
    def failing(event: redismem.MemoryChangeEvent) -> None:
        raise RuntimeError(f"listener failed on {event.key}")

    serving = asyncio.create_task(rmem.serve())
    await rmem.global_scope().set("boom", 1)
    with pytest.raises(RuntimeError, match="listener failed on boom"):
        await asyncio.wait_for(serving, 2)


def test_bad_watch_arguments(rmem: redismem.Memory) -> None:
    with pytest.raises(redismem.InvalidArgumentError, match="patterns"):
        rmem.global_scope().watch([])
    with pytest.raises(redismem.InvalidArgumentError, match="patterns"):
        rmem.on_change("")


WRITER = """
import asyncio, sys
import redismem

async def main(url, ns, worker, count):
    async with await redismem.connect(url, namespace=ns, principal=f"w{worker}") as mem:
        scope = mem.global_scope()
        for i in range(count):
            await scope.set(f"key{i % 7}", {"worker": worker, "i": i})

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
"""


async def test_four_processes_500_writes_each(rmem: redismem.Memory, server_url: str) -> None:
    workers = [subprocess.Popen([sys.executable, "-c", WRITER, server_url, rmem.namespace,
                                 str(w), "500"]) for w in range(4)]
    assert [w.wait(timeout=120) for w in workers] == [0, 0, 0, 0]
    events: list[redismem.MemoryChangeEvent] = []
    cursor = 0
    while True:
        page = await rmem.changes(after=cursor, limit=1000)
        if not page.items:
            break
        events.extend(page.items)
        cursor = page.next_cursor
    assert [e.sequence for e in events] == list(range(1, 2001))
    by_key: dict[str, list[int]] = {}
    for event in events:
        by_key.setdefault(event.key, []).append(event.revision)
    for key, revisions in by_key.items():
        assert revisions == list(range(1, len(revisions) + 1)), key
    assert {e.principal for e in events} == {"w0", "w1", "w2", "w3"}


@pytest.mark.parametrize("reader", ["changes", "watch"])
@pytest.mark.parametrize("between", ["xrange", "get"])
async def test_a_first_write_racing_a_new_reader_is_not_an_expired_cursor(
        rmem: redismem.Memory, server_url: str, between: str, reader: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Found by the fault suite: the oldest retained sequence was read in two
    steps (the stream's first entry, then the counter), so the first write
    of a namespace landing in between made cursor 0 look expired. The
    write is made to land just before one of the two reads, in turn."""
    client = rmem.client
    real = getattr(client, between)
    writer = await redismem.connect(server_url, namespace=rmem.namespace)

    async def write_first(*args: object, **kwargs: object) -> object:
        monkeypatch.setattr(client, between, real)
        await writer.session("s").set("k", 1)
        return await real(*args, **kwargs)

    monkeypatch.setattr(client, between, write_first)
    try:
        if reader == "changes":
            page = await rmem.changes(after=0)
            assert page.oldest_sequence == 1
            assert [e.sequence for e in page.items] == [1]
        else:
            async for event in rmem.watch("*", after=0):
                assert event.sequence == 1
                break
    finally:
        await writer.close()


async def test_a_watch_interval_longer_than_the_socket_timeout_still_blocks(
        server_url: str, ns: str) -> None:
    """A blocking read is cut to half the socket timeout, so a quiet feed
    with ``interval`` above the timeout is not taken for a lost server."""
    async with await redismem.connect(f"{server_url}?socket_timeout=0.4", namespace=ns) as mem:
        stop, delivered = asyncio.Event(), asyncio.Event()

        async def watcher() -> list[str]:
            keys = []
            async for event in mem.watch("*", after=None, interval=3, stop=stop):
                keys.append(event.key)
                delivered.set()
            return keys

        task = asyncio.create_task(watcher())
        await asyncio.sleep(1.5)  # several socket timeouts of a quiet feed
        assert not task.done()  # no error: the watcher is still waiting
        await mem.session("s").set("late", 1)
        await asyncio.wait_for(delivered.wait(), 10)
        stop.set()
        assert await asyncio.wait_for(task, 10) == ["late"]


async def test_a_watch_takes_a_bounded_number_of_patterns(mem: redismem.Memory) -> None:
    """Each event is matched against every pattern in the client: 100k
    patterns spent minutes of CPU and never reached the stop check."""
    endless = (f"p{i}*" for i in itertools.count())
    for patterns in (endless, [f"k{i}" for i in range(101)]):
        with pytest.raises(redismem.InvalidArgumentError, match="at most 100 patterns"):
            mem.watch(patterns)
    with pytest.raises(redismem.InvalidArgumentError, match="non-empty strings"):
        mem.watch(["x" * 5000])
    assert mem.watch([f"k{i}" for i in range(100)]) is not None
