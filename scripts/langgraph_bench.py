"""``python scripts/bench.py langgraph``: RedismemSaver and RedismemStore
against langgraph-checkpoint-redis (AsyncRedisSaver, AsyncRedisStore) on
the same server in the same run (the ``bench`` extra installs it).

Checkpoints: ``aput`` of a checkpoint of a growing thread (a 20-message
list, about 2 kB, in one channel) and ``aget_tuple`` of the thread's
latest; store: ``aput`` and ``aget`` of one small item, and a batch of 100
gets (items found per second). Sequential awaited calls from one client,
the two sides taking turns in rounds (scripts/timing.py) so both meet the
same spells of a noisy machine; p50 and p99 in microseconds, and the ratio
redismem / incumbent (below 1: redismem is faster).
"""

from __future__ import annotations

import statistics
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.store.base import GetOp
from timing import latencies

from redismem.langgraph import RedismemSaver, RedismemStore

Op = Callable[[int], Awaitable[Any]]


def _row(op: str, ours: list[float], theirs: list[float], target: str) -> dict[str, Any]:
    def p(values: list[float], q: float) -> float:
        return sorted(values)[min(len(values) - 1, int(q * len(values)))]

    return {"op": op, "redismem_p50_us": statistics.median(ours) * 1000,
            "redismem_p99_us": p(ours, 0.99) * 1000,
            "peer_p50_us": statistics.median(theirs) * 1000, "peer_p99_us": p(theirs, 0.99) * 1000,
            "ratio": statistics.median(ours) / statistics.median(theirs), "target": target}


def _checkpoint_ops(saver: Any) -> tuple[Op, Op]:
    """(put, get): a put adds a checkpoint to one growing thread; a get
    reads the thread's latest."""
    thread = "bench-" + uuid.uuid4().hex[:8]
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    messages = [{"role": "user", "content": "x" * 80, "i": i} for i in range(20)]
    version: Any = None

    async def put(i: int) -> None:
        nonlocal config, version
        version = saver.get_next_version(version, None)
        checkpoint = {**empty_checkpoint(), "id": str(uuid6()),
                      "channel_values": {"messages": messages},
                      "channel_versions": {"messages": version}}
        config = await saver.aput(config, checkpoint, {"step": i, "source": "loop"},
                                  {"messages": version})

    latest: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}

    async def get(i: int) -> None:
        assert await saver.aget_tuple(latest) is not None

    return put, get


def _store_ops(store: Any, n: int) -> tuple[Op, Op, Callable[[], Awaitable[int]]]:
    """(put, get, batch): items k0..k{n-1} of one namespace; a batch is 100 gets."""
    # one label: the peer's get of a multi-label namespace finds nothing
    # (it returns None, quickly), so it would not be measured at all
    space = ("bench" + uuid.uuid4().hex[:8],)

    async def put(i: int) -> None:
        await store.aput(space, f"k{i % n}", {"n": i, "text": "hello"})

    async def get(i: int) -> None:
        assert await store.aget(space, f"k{i % n}") is not None, "the item was not found"

    ops = [GetOp(space, f"k{i % n}") for i in range(100)]

    async def batch() -> int:
        return sum(item is not None for item in await store.abatch(ops))

    return put, get, batch


class _Blocking:
    """The incumbent's sync RedisStore behind the async calls the timing uses."""

    def __init__(self, store: Any) -> None:
        self.store = store

    async def aput(self, *args: Any) -> None:
        self.store.put(*args)

    async def aget(self, *args: Any) -> Any:
        return self.store.get(*args)

    async def abatch(self, ops: Any) -> Any:
        return self.store.batch(ops)


async def bench(url: str, n: int) -> list[dict[str, Any]]:
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver

    ns = "bench" + uuid.uuid4().hex[:8]
    rows = []
    async with RedismemSaver(url=url, namespace=ns) as ours, \
            AsyncRedisSaver.from_conn_string(url) as theirs:
        await theirs.asetup()
        (our_put, our_get), (their_put, their_get) = _checkpoint_ops(ours), _checkpoint_ops(theirs)
        puts = await latencies(n, {"ours": our_put, "theirs": their_put})
        gets = await latencies(n, {"ours": our_get, "theirs": their_get})
    rows.append(_row("checkpoint aput", puts["ours"], puts["theirs"], "≤ 0.5"))
    rows.append(_row("checkpoint aget_tuple (latest)", gets["ours"], gets["theirs"], "≤ 0.5"))
    async with RedismemStore(url=url, namespace=ns) as ours_store, _peer_store(url) as (
            theirs_store, flavour):
        (our_put, our_get, our_batch), (their_put, their_get, their_batch) = (
            _store_ops(ours_store, n), _store_ops(theirs_store, n))
        puts = await latencies(n, {"ours": our_put, "theirs": their_put})
        gets = await latencies(n, {"ours": our_get, "theirs": their_get})
        rates = await _rates(max(1, n // 100), {"ours": our_batch, "theirs": their_batch})
    rows.append(_row(f"store aput (peer: {flavour})", puts["ours"], puts["theirs"], "≤ 0.5"))
    rows.append(_row(f"store aget (peer: {flavour})", gets["ours"], gets["theirs"], "≤ 0.5"))
    rows.append({"op": f"store batch of 100 gets, items found/s (peer: {flavour})",
                 "redismem": rates["ours"], "peer": rates["theirs"],
                 "ratio": rates["ours"] / rates["theirs"], "target": "≥ 5"})
    return rows


async def _rates(calls: int, batches: dict[str, Callable[[], Awaitable[int]]],
                 rounds: int = 5) -> dict[str, float]:
    """Items found per second of each side's batches, the sides taking turns
    in ``rounds`` rounds of ``calls`` batches."""
    found = dict.fromkeys(batches, 0)
    spent = dict.fromkeys(batches, 0.0)
    for _ in range(rounds):
        for name, batch in batches.items():
            start = time.perf_counter()
            for _ in range(max(1, calls // rounds)):
                found[name] += await batch()
            spent[name] += time.perf_counter() - start
    return {name: found[name] / spent[name] for name in batches}


@asynccontextmanager
async def _peer_store(url: str) -> AsyncIterator[tuple[Any, str]]:
    """The incumbent's AsyncRedisStore; its sync RedisStore where that one
    refuses to start (langgraph-checkpoint-redis 0.5.2 with redisvl 0.28
    hands redisvl's sync SearchIndex an async client: TypeError)."""
    from langgraph.store.redis import RedisStore
    from langgraph.store.redis.aio import AsyncRedisStore

    try:
        async with AsyncRedisStore.from_conn_string(url) as store:
            await store.setup()
            yield store, "AsyncRedisStore"
            return
    except TypeError as exc:
        if "SearchIndex requires a sync Redis client" not in str(exc):
            raise
    with RedisStore.from_conn_string(url) as sync_store:
        sync_store.setup()
        yield _Blocking(sync_store), "sync RedisStore"


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| operation | redismem p50 / p99 | langgraph-checkpoint-redis p50 / p99 | ratio | "
             "target |", "|---|---:|---:|---:|---:|"]
    for row in rows:
        if "redismem_p50_us" in row:
            lines.append(f"| {row['op']} | {row['redismem_p50_us']:.0f} / "
                         f"{row['redismem_p99_us']:.0f} µs | {row['peer_p50_us']:.0f} / "
                         f"{row['peer_p99_us']:.0f} µs | {row['ratio']:.2f} | {row['target']} |")
        else:
            lines.append(f"| {row['op']} | {row['redismem']:,.0f}/s | {row['peer']:,.0f}/s | "
                         f"{row['ratio']:.2f} | {row['target']} |")
    return "\n".join(lines)
