"""redismem benchmarks against raw redis-py on the same server in the same run.

    python scripts/bench.py kv [--n 10000] [--url URL] [--json]
    python scripts/bench.py feed [--n 2000] [--url URL] [--json]
    python scripts/bench.py vectors [--n 100000] [--index hnsw|flat] [--data structured|random]
                                    [--layout ab|a|b|plans] [--url URL] [--json]
    python scripts/bench.py store [--n 10000] [--url URL] [--json]
    python scripts/bench.py transfer [--n 50000] [--url URL] [--json]
    python scripts/bench.py stall [--n 200000] [--url URL] [--json]
    python scripts/bench.py cluster [--n 2000] [--json]
    python scripts/bench.py turns [--n 2000] [--url URL] [--json]
    python scripts/bench.py langgraph [--n 2000] [--url URL] [--json]
    python scripts/bench.py cli [--n 20] [--url URL] [--json]
    python scripts/bench.py lua [--n 2000] [--json]
    python scripts/bench.py throughput [--n SECONDS] [--url URL] [--json]
    python scripts/bench.py mcp [--n 2000] [--url URL] [--json]
    python scripts/bench.py all --compare [--n 2000] [--vectors 100000] [--url URL] [--json]

Without --url a fresh embedded server is started in a temporary directory
(AOF on, appendfsync everysec) and stopped afterwards; a server given with
--url must hold no data (--flush empties it first: FLUSHALL). Figures are ops/s of
sequential awaited calls from one asyncio client (redis.asyncio + hiredis for
both sides), and the ratio redismem / raw.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import json
import platform
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
from redis.asyncio import Redis

import redismem
import redismem._json
from redismem import acl, users
from redismem import keys as K
from redismem.server import EmbeddedServer

sys.path.insert(0, str(Path(__file__).parent))
import vector_bench
from timing import latencies


@contextmanager
def server_url(url: str | None, flush: bool = False) -> Iterator[str]:
    """``url``, once it holds no other data (``flush``: emptied first), else
    a fresh embedded server in a temporary directory."""
    if url:
        import compare_bench

        asyncio.run(compare_bench.refuse_unless_empty(url, flush))
        yield url
        return
    with tempfile.TemporaryDirectory(prefix="redismem-bench-") as data_dir:
        server = EmbeddedServer(data_dir)
        state = server.start()
        try:
            yield state.url
        finally:
            server.stop()


async def compare(n: int, raw_op: Callable[[int], Awaitable[Any]],
                  rm_op: Callable[[int], Awaitable[Any]], rounds: int = 5) -> tuple[float, float]:
    """Ops/s of raw and redismem over ``n`` sequential awaited calls each, run
    in alternating rounds so both see the same server conditions; medians."""
    for i in range(min(200, n)):  # warm-up
        await raw_op(i)
        await rm_op(i)
    per_round = max(1, n // rounds)
    raw_rates, rm_rates = [], []
    for r in range(rounds):
        for op, rates in ((raw_op, raw_rates), (rm_op, rm_rates)):
            start = time.perf_counter()
            for i in range(r * per_round, (r + 1) * per_round):
                await op(i)
            rates.append(per_round / (time.perf_counter() - start))
    return statistics.median(raw_rates), statistics.median(rm_rates)


class Progress(list[dict[str, Any]]):
    """Rows of results that, once a run has taken a few seconds, say on
    stderr each one measured and the time so far."""

    QUIET_FOR = 3.0
    started = time.monotonic()

    def append(self, row: dict[str, Any]) -> None:
        super().append(row)
        elapsed = time.monotonic() - Progress.started
        if elapsed >= self.QUIET_FOR:
            print(f"[{elapsed:6.1f} s] measured: {row.get('op', '?')}", file=sys.stderr,
                  flush=True)


async def bench_kv(url: str, n: int) -> list[dict[str, Any]]:
    ns = "bench" + uuid.uuid4().hex[:8]
    raw = Redis.from_url(url)
    rows: list[dict[str, Any]] = Progress()
    async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
        scope = mem.session("s")
        value = {"note": "pack passports", "n": 1}
        text = json.dumps(value)

        raw_set, rm_set = await compare(
            n, lambda i: raw.hset(f"raw:{ns}:{i}", mapping={"v": text, "rev": i}),
            lambda i: scope.set(f"k{i}", value))
        rows.append({"op": "set (sequential)", "raw": "HSET", "raw_ops": raw_set,
                     "redismem_ops": rm_set, "target": 0.7})

        raw_get, rm_get = await compare(n, lambda i: raw.hget(f"raw:{ns}:{i}", "v"),
                                        lambda i: scope.get(f"k{i}"))
        rows.append({"op": "get (sequential)", "raw": "HGET", "raw_ops": raw_get,
                     "redismem_ops": rm_get, "target": 0.95})

        async def raw_hmgets(b: int) -> None:
            pipe = raw.pipeline(transaction=False)
            for j in range(100):
                pipe.hmget(f"raw:{ns}:{(b * 100 + j) % n}", ["v", "rev"])
            await pipe.execute()

        async def rm_get_many(b: int) -> None:
            await scope.get_many([f"k{(b * 100 + j) % n}" for j in range(100)])

        raw_gm, rm_gm = await compare(max(50, n // 50), raw_hmgets, rm_get_many)
        rows.append({"op": "get_many(100), per item", "raw": "pipelined HMGET x100",
                     "raw_ops": 100 * raw_gm, "redismem_ops": 100 * rm_gm, "target": 0.9})

        raw_upd, rm_update = await compare(
            n, lambda i: raw.hset(f"raw:{ns}:{i}", mapping={"v": text, "rev": i}),
            lambda i: scope.update(f"k{i}", lambda v: {**v, "n": v["n"] + 1}))
        rows.append({"op": "update (get + CAS set)", "raw": "HSET", "raw_ops": raw_upd,
                     "redismem_ops": rm_update, "target": None})

        async def raw_batch(b: int) -> None:
            pipe = raw.pipeline(transaction=False)
            for j in range(100):
                pipe.hset(f"rawb:{ns}:{b}:{j}", mapping={"v": text, "rev": 1})
            await pipe.execute()

        async def rm_batch(b: int) -> None:
            await scope.set_many({f"b{b}:{j}": value for j in range(100)})

        raw_many, rm_many = await compare(max(50, n // 50), raw_batch, rm_batch)
        rows.append({"op": "set_many(100), per item", "raw": "pipelined HSET x100",
                     "raw_ops": 100 * raw_many, "redismem_ops": 100 * rm_many, "target": 0.3})

        client = mem.client
        count = int(await client.zcard(K.names(ns, "value", "session", "s")))
        value_bytes = int(await client.memory_usage(K.value(ns, "session", "s", "k0")) or 0)
        names_bytes = int(await client.memory_usage(K.names(ns, "value", "session", "s"),
                                                    samples=0) or 0)
        revs_bytes = int(await client.memory_usage(K.revisions(ns, "value", "session", "s"),
                                                   samples=0) or 0)
        feed_len = int(await client.xlen(K.feed(ns)))
        feed_bytes = int(await client.memory_usage(K.feed(ns), samples=0) or 0)
        raw_bytes = int(await raw.memory_usage(f"raw:{ns}:0") or 0)
        per_value = value_bytes + (names_bytes + revs_bytes) / count + feed_bytes / feed_len
        rows.append({"op": "bytes per small value", "raw": "one HSET hash",
                     "raw_ops": raw_bytes, "redismem_ops": per_value, "target": None,
                     "detail": {"value_hash": value_bytes, "index_entry": names_bytes / count,
                                "revision_entry": revs_bytes / count,
                                "feed_entry": feed_bytes / feed_len}})
        rows += await _kv_as_writer(url, ns, raw, mem, n)
        for key in [k async for k in raw.scan_iter(match=f"raw*:{ns}:*", count=1000)]:
            await raw.delete(key)
        async for key in client.scan_iter(match=K.pattern(ns), count=1000):
            await client.delete(key)
    await raw.aclose()
    return rows


async def _kv_as_writer(url: str, ns: str, admin: Redis, mem: redismem.Memory,
                        n: int) -> list[dict[str, Any]]:
    """The same calls as a ``writer`` ACL user (its key patterns and
    selectors checked on every command) against the default user, in
    alternating rounds: the cost of access control."""
    name, password = "benchwriter" + uuid.uuid4().hex[:6], uuid.uuid4().hex
    await users.add_user(admin, name, acl.Role("writer", ns), password=password)
    host, port = admin.connection_pool.connection_kwargs["host"], \
        admin.connection_pool.connection_kwargs["port"]
    rows: list[dict[str, Any]] = Progress()
    try:
        async with await redismem.connect(f"redis://{name}:{password}@{host}:{port}/0",
                                          namespace=ns) as writer:
            value = {"note": "pack passports", "n": 1}
            mine, theirs = mem.session("acl"), writer.session("acl")
            base, acl_set = await compare(n, lambda i: mine.set(f"d{i}", value),
                                          lambda i: theirs.set(f"w{i}", value), rounds=9)
            rows.append({"op": "set as writer ACL user", "raw": "set as default user",
                         "raw_ops": base, "redismem_ops": acl_set, "target": 0.95})
            base, acl_get = await compare(n, lambda i: mine.get(f"d{i}"),
                                          lambda i: theirs.get(f"w{i}"), rounds=9)
            rows.append({"op": "get as writer ACL user", "raw": "get as default user",
                         "raw_ops": base, "redismem_ops": acl_get, "target": 0.95})
            # the server's own time per call (INFO commandstats), free of client noise
            ops: list[tuple[str, str, Callable[[redismem.MemoryScope, int], Awaitable[Any]]]] = [
                ("set", "fcall", lambda s, i: s.set(f"t{i}", value)),
                ("get", "hmget", lambda s, i: s.get(f"t{i}"))]
            for op, command, calls in ops:
                samples: dict[str, list[float]] = {"default": [], "writer": []}
                for r in range(9):  # alternating, like compare()
                    for who, scope in (("default", mine), ("writer", theirs)):
                        await admin.config_resetstat()
                        for i in range(r * 1000, (r + 1) * 1000):
                            await calls(scope, i)
                        stats = (await admin.info("commandstats"))[f"cmdstat_{command}"]
                        samples[who].append(float(stats["usec_per_call"]))
                spent = {who: statistics.median(found) for who, found in samples.items()}
                # as rates, so the ratio reads like the others (higher is faster)
                rows.append({"op": f"{op} as writer, server µs per {command.upper()}",
                             "raw": f"default user: {spent['default']:.1f} µs",
                             "raw_ops": 1e6 / spent["default"],
                             "redismem_ops": 1e6 / spent["writer"], "target": 0.95,
                             "detail": spent})
    finally:
        await users.remove_user(admin, name)
    return rows


TURN_CONTENDER = """
import asyncio, sys, time
import redismem

async def main(url, ns, seconds):
    async with await redismem.connect(url, namespace=ns, principal="contender") as mem:
        scope, done = mem.session("contended"), 0
        stop = time.time() + seconds
        while time.time() < stop:
            async with scope.turn(ttl_seconds=10):
                done += 1
        print(done)

asyncio.run(main(sys.argv[1], sys.argv[2], float(sys.argv[3])))
"""


def _handoffs_in_thread(url: str, ns: str, turns: int, entered: list[tuple[float, int]],
                        released: list[tuple[float, int]], use_lock: bool, me: int
                        ) -> threading.Thread:
    """A worker with its own event loop and connection that takes ``turns``
    turns of session "h" (or a redis-py Lock), recording when it entered
    each and when it began to release it; it releases only once the other
    worker waits (a turn) or after 2 ms (a lock: its waiters are not seen)."""

    async def run() -> None:
        async with await redismem.connect(url, namespace=ns, principal="handoff") as mem:
            scope, queue = mem.session("h"), K.turn_queue(ns, "session", "h")
            lock = mem.client.lock(f"bench:{ns}:lock", timeout=10)
            for _ in range(turns):
                if use_lock:
                    await lock.acquire()
                    entered.append((time.perf_counter(), me))
                    await asyncio.sleep(0.002)
                    released.append((time.perf_counter(), me))
                    await lock.release()
                    continue
                async with scope.turn(ttl_seconds=10):
                    entered.append((time.perf_counter(), me))
                    while len(entered) < 2 * turns and not await mem.client.zcard(queue):
                        await asyncio.sleep(0)
                    released.append((time.perf_counter(), me))

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    return thread


async def bench_turns(url: str, n: int) -> list[dict[str, Any]]:
    """Turns against a redis-py Lock (SET NX PX and a Lua release; waiting
    polls every 0.1 s), what a user would pick instead."""
    ns = "bench" + uuid.uuid4().hex[:8]
    rows: list[dict[str, Any]] = Progress()
    async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
        scope = mem.session("s")
        lock = mem.client.lock(f"bench:{ns}:lock", timeout=30)

        async def turn(_: int) -> None:
            await (await scope.acquire_turn(ttl_seconds=30, wait_seconds=0)).release()

        async def locked(_: int) -> None:
            await lock.acquire(blocking=False)
            await lock.release()

        times = await latencies(n, {"turn": turn, "lock": locked})
        rows.append({"op": "acquire + release, uncontended", "count": n,
                     "p50_ms": statistics.median(times["turn"]),
                     "p99_ms": _percentile(times["turn"], 0.99),
                     "peer": "redis-py Lock", "peer_p50_ms": statistics.median(times["lock"]),
                     "peer_p99_ms": _percentile(times["lock"], 0.99)})
        handoffs = max(20, n // 10)
        found: dict[bool, list[float]] = {}
        for use_lock in (False, True):
            count = handoffs if not use_lock else max(10, handoffs // 10)
            entered: list[tuple[float, int]] = []
            released: list[tuple[float, int]] = []
            threads = [_handoffs_in_thread(url, ns, count, entered, released, use_lock, me)
                       for me in range(2)]
            for thread in threads:
                await asyncio.to_thread(thread.join, 600)
            # a hand-off: the other worker's entry right after a release
            steps = sorted([(t, "r", w) for t, w in released] + [(t, "e", w) for t, w in entered])
            found[use_lock] = [(t - last) * 1000 for (last, a, v), (t, b, w)
                               in itertools.pairwise(steps) if a == "r" and b == "e" and v != w]
        rows.append({"op": "hand-off: release -> the other worker's entry",
                     "count": len(found[False]), "p50_ms": statistics.median(found[False]),
                     "p99_ms": _percentile(found[False], 0.99), "target": "p50 <= 2 ms",
                     "peer": f"redis-py Lock, blocking acquire: {len(found[True])} hand-offs "
                             f"in {2 * max(10, handoffs // 10)} turns",
                     "peer_p50_ms": statistics.median(found[True]),
                     "peer_p99_ms": _percentile(found[True], 0.99)})
        seconds = 5.0
        procs = [await asyncio.create_subprocess_exec(
            sys.executable, "-c", TURN_CONTENDER, url, ns, str(seconds),
            stdout=asyncio.subprocess.PIPE) for _ in range(4)]
        outputs = [await proc.communicate() for proc in procs]
        total = sum(int(out.decode()) for out, _ in outputs)
        rows.append({"op": "turns per second, one session, 4 processes", "count": total,
                     "rate": total / seconds})
        async for key in mem.client.scan_iter(match=K.pattern(ns), count=1000):
            await mem.client.delete(key)
    return rows


def turns_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| measurement | count | redismem p50 | p99 | peer | peer p50 | peer p99 |",
             "|---|---:|---:|---:|---|---:|---:|"]
    for row in rows:
        if "rate" in row:
            lines.append(f"| {row['op']} | {row['count']} | {row['rate']:,.0f}/s | | | | |")
            continue
        target = f" (target {row['target']})" if row.get("target") else ""
        lines.append(f"| {row['op']}{target} | {row['count']} | {row['p50_ms']:.2f} ms | "
                     f"{row['p99_ms']:.2f} ms | {row['peer']} | {row['peer_p50_ms']:.2f} ms | "
                     f"{row['peer_p99_ms']:.2f} ms |")
    return "\n".join(lines)


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _watch_in_thread(url: str, ns: str, received: dict[int, float], ready: threading.Event,
                     stop: threading.Event, poll: float | None) -> threading.Thread:
    """A watcher with its own event loop and connection, as another worker would have;
    ``poll`` set = a polling loop calling changes() every ``poll`` seconds instead."""

    async def run() -> None:
        async with await redismem.connect(url, namespace=ns, principal="watcher") as mem:
            scope = mem.global_scope()
            ready.set()
            if poll is None:
                async for event in scope.watch("*", after=None, interval=0.1, stop=stop.is_set):
                    received[event.sequence] = time.perf_counter()
                return
            cursor = int(await mem.client.get(K.sequence(ns)) or 0)
            while not stop.is_set():
                page = await scope.changes(after=cursor, limit=1000)
                now = time.perf_counter()
                for event in page.items:
                    received[event.sequence] = now
                cursor = page.next_cursor
                await asyncio.sleep(poll)

    thread = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    thread.start()
    return thread


async def bench_feed(url: str, n: int) -> list[dict[str, Any]]:
    ns = "bench" + uuid.uuid4().hex[:8]
    rows: list[dict[str, Any]] = Progress()
    async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
        scope = mem.global_scope()
        for label, poll, count, gap in (("watch (XREAD BLOCK)", None, n, 0.0),
                                        ("polling every 0.25 s", 0.25, 40, 0.05)):
            received: dict[int, float] = {}
            ready, stop = threading.Event(), threading.Event()
            thread = _watch_in_thread(url, ns, received, ready, stop, poll)
            ready.wait(10)
            await asyncio.sleep(0.3)
            acked: dict[int, float] = {}
            sent: dict[int, float] = {}
            first = int(await mem.client.get(K.sequence(ns)) or 0) + 1
            for i in range(count):
                sent[first + i] = time.perf_counter()
                await scope.set(f"k{i % 50}", i)
                acked[first + i] = time.perf_counter()
                deadline = time.perf_counter() + 2
                while poll is None and first + i not in received and time.perf_counter() < deadline:
                    await asyncio.sleep(0)
                if gap:
                    await asyncio.sleep(gap)
            await asyncio.sleep(0.6 if poll else 0.05)
            stop.set()
            thread.join(5)
            for start, what in ((acked, "write ack"), (sent, "write call")):
                latencies = [(received[s] - t) * 1000 for s, t in start.items() if s in received]
                rows.append({"op": f"{what} -> watcher, {label}", "count": len(latencies),
                             "p50_ms": statistics.median(latencies),
                             "p99_ms": _percentile(latencies, 0.99)})
        await scope.set_many({f"p{i}": i for i in range(1000)})
        start_seq = int(await mem.client.get(K.sequence(ns))) - 1000
        rm_times, raw_times = [], []
        for _ in range(30):
            t0 = time.perf_counter()
            page = await mem.changes(after=start_seq, limit=1000)
            rm_times.append((time.perf_counter() - t0) * 1000)
            assert len(page.items) == 1000
            t0 = time.perf_counter()
            await mem.client.xrange(K.feed(ns), min=f"({start_seq}-0", count=1000)
            raw_times.append((time.perf_counter() - t0) * 1000)
        rows.append({"op": "read a 1,000-event page", "count": 30,
                     "p50_ms": statistics.median(rm_times),
                     "p99_ms": _percentile(rm_times, 0.99),
                     "raw_xrange_p50_ms": statistics.median(raw_times)})
        async for key in mem.client.scan_iter(match=K.pattern(ns), count=1000):
            await mem.client.delete(key)
    return rows


async def bench_store(url: str, n: int) -> list[dict[str, Any]]:
    ns = "bench" + uuid.uuid4().hex[:8]
    raw = Redis.from_url(url)
    rows: list[dict[str, Any]] = Progress()
    async with redismem.RedisMemoryStore(url, namespace=ns, principal="bench") as store:
        def event(thread: str, i: int) -> redismem.MemoryEvent:
            return redismem.MemoryEvent(f"e{i}", thread, "u1", "message", 1_700_000_000_000 + i,
                                        {"role": "user", "text": f"message number {i}"})

        payload = json.dumps(dataclasses.asdict(event("a", 0)))
        raw_rate, store_rate = await compare(
            n, lambda i: raw.xadd(f"rawthr:{ns}", {"e": payload}),
            lambda i: store.append_event(event("appends", i)))
        rows.append({"op": "append_event (sequential)", "value":
                     f"{store_rate:,.0f}/s vs raw XADD {raw_rate:,.0f}/s = "
                     f"{store_rate / raw_rate:.2f}x", "target": "≥ 0.6x"})

        big = 100_000
        for first in range(0, big, 1000):
            await store.append_events("big", [event("big", i) for i in range(first, first + 1000)],
                                      atomic=False)
        latencies = []
        for _ in range(500):
            t0 = time.perf_counter()
            recent = await store.get_recent_events("big", 50)
            latencies.append((time.perf_counter() - t0) * 1000)
        assert len(recent) == 50
        rows.append({"op": f"get_recent_events(50) on a {big:,}-event thread",
                     "value": f"p50 {statistics.median(latencies):.2f} ms, "
                              f"p99 {_percentile(latencies, 0.99):.2f} ms",
                     "target": "p50 ≤ 1 ms"})
        t0 = time.perf_counter()
        result = await store.compact_thread("big", redismem.RetentionPolicy(500, [], big))
        seconds = time.perf_counter() - t0
        rows.append({"op": f"compact_thread {big:,} -> 500 events",
                     "value": f"{seconds:.2f} s (removed {result.events_removed:,})",
                     "target": "≤ 2 s"})

        memories, dim = 50_000, 64
        rng = np.random.default_rng(7)
        words = ["redis", "python", "memory", "agent", "vector", "search", "thread", "cluster",
                 "stream", "index", "token", "model", "prompt", "cache", "queue", "lua"]
        embeddings = rng.normal(size=(memories, dim)).astype(np.float32)
        for first in range(0, memories, 200):
            await asyncio.gather(*(store.upsert_long_term_memory(
                redismem.LongTermMemory(f"m{i}", "user-1", "knowledge", {"i": i},
                                        " ".join(rng.choice(words, size=12)), [], {}, i, i),
                embedding=embeddings[i]) for i in range(first, first + 200)))
        for label, search in (
            ("text", lambda q: store.search_long_term_memory_text(
                "user-1", " ".join(rng.choice(words, size=2)), limit=10)),
            ("vector", lambda q: store.search_long_term_memory_vector(
                "user-1", rng.normal(size=dim).tolist(), limit=10)),
        ):
            latencies = []
            for q in range(200):
                t0 = time.perf_counter()
                await search(q)
                latencies.append((time.perf_counter() - t0) * 1000)
            rows.append({"op": f"long-term {label} search, top 10 of {memories:,}",
                         "value": f"p50 {statistics.median(latencies):.2f} ms, "
                                  f"p99 {_percentile(latencies, 0.99):.2f} ms", "target": ""})
        client = store.memory.client
        for index in [K.memory_text_index(ns), K.memory_vector_index(ns, dim)]:
            await client.execute_command("FT.DROPINDEX", index)
        async for key in client.scan_iter(match=K.pattern(ns), count=1000):
            await client.delete(key)
    await raw.delete(f"rawthr:{ns}")
    await raw.aclose()
    return rows


async def bench_transfer(url: str, n: int) -> list[dict[str, Any]]:
    """Export and import of n values, n/10 vectors (64-d) and n thread events,
    against raw redis-py reading (pipelined HGETALL, XRANGE) and writing
    (pipelined HSET, XADD) the same records in pages of 500."""
    import io
    import pathlib

    from redismem import restore, transfer

    ns = "bench" + uuid.uuid4().hex[:8]
    raw = Redis.from_url(url)
    rng = np.random.default_rng(5)
    rows: list[dict[str, Any]] = Progress()
    async with redismem.RedisMemoryStore(url, namespace=ns, principal="bench") as store:
        mem = store.memory
        for s in range(10):
            scope = mem.session(f"s{s}")
            for first in range(0, n // 10, 1000):
                await scope.set_many({f"k{i}": {"note": "pack passports", "i": i}
                                      for i in range(first, min(first + 1000, n // 10))})
        data = rng.normal(size=(n // 10, 64)).astype(np.float32)
        for first in range(0, len(data), 1000):
            await mem.session("v").set_vectors(
                [(f"v{i}", data[i], {"i": i}) for i in range(first, min(first + 1000,
                                                                        len(data)))],
                atomic=False)
        for first in range(0, n, 1000):
            await store.append_events("t", [
                redismem.MemoryEvent(f"e{i}", "t", None, "message", i, {"i": i})
                for i in range(first, min(first + 1000, n))], atomic=False)
        records = n + n // 10 + n

        out = io.StringIO()
        start = time.perf_counter()
        await transfer.export_namespace(mem, out.write)
        export_rate = records / (time.perf_counter() - start)
        keys = ([K.value(ns, "session", f"s{s}", f"k{i}") for s in range(10)
                 for i in range(n // 10)] + [K.vector(ns, "session", "v", f"v{i}")
                                              for i in range(n // 10)])
        start = time.perf_counter()
        for first in range(0, len(keys), 500):
            pipe = raw.pipeline(transaction=False)
            for key in keys[first:first + 500]:
                pipe.hgetall(key)
            await pipe.execute()
        cursor = "-"
        while entries := await raw.xrange(K.thread_events(ns, "t"), cursor, "+", count=1000):
            cursor = "(" + entries[-1][0].decode()
        raw_read_rate = records / (time.perf_counter() - start)
        rows.append({"op": f"export ({records:,} records)", "raw": "pipelined HGETALL + XRANGE",
                     "raw_ops": raw_read_rate, "redismem_ops": export_rate, "target": None})

        with tempfile.TemporaryDirectory() as tmp:
            path = pathlib.Path(tmp) / "dump.jsonl"
            path.write_text(out.getvalue())
            async with redismem.RedisMemoryStore(url, namespace=ns + "-copy",
                                                 principal="bench") as copy:
                start = time.perf_counter()
                await restore.check_file(copy, path)
                await restore.import_file(copy, path)
                import_rate = records / (time.perf_counter() - start)
                start = time.perf_counter()
                await restore.check_file(copy, path)
                summary = await restore.import_file(copy, path)
                again_rate = records / (time.perf_counter() - start)
                assert sum(summary.written.values()) == 0
        lines = out.getvalue().splitlines()[1:]
        start = time.perf_counter()
        for first in range(0, len(lines), 500):
            pipe = raw.pipeline(transaction=False)
            for j, line in enumerate(lines[first:first + 500]):
                pipe.hset(f"rawimp:{ns}:{first + j}", mapping={"r": line})
            await pipe.execute()
        raw_write_rate = len(lines) / (time.perf_counter() - start)
        rows.append({"op": "import (check + write)", "raw": "pipelined HSET of each line",
                     "raw_ops": raw_write_rate, "redismem_ops": import_rate, "target": None})
        rows.append({"op": "import again (all kept)", "raw": "pipelined HSET of each line",
                     "raw_ops": raw_write_rate, "redismem_ops": again_rate, "target": None})
        async for key in raw.scan_iter(match=f"rawimp:{ns}:*", count=1000):
            await raw.delete(key)
    await raw.aclose()
    return rows


def _ping_forever(url: str, stop: Any, ready: Any, out: Any) -> None:
    import redis

    client = redis.Redis.from_url(url)
    client.ping()
    ready.set()
    spans: list[tuple[float, float]] = []
    while not stop.is_set():
        start = time.monotonic()
        client.ping()
        spans.append((start, time.monotonic()))
    out.send(spans)


class Pinger:
    """PINGs the server back to back from its own process (so the client's
    Python work does not delay it) and records each PING's span; a call
    that holds the server shows as a long PING overlapping the call. The
    server's own time for the block's longest command (SLOWLOG) is
    recorded too: it does not depend on how busy the machine is."""

    def __init__(self, url: str) -> None:
        import multiprocessing

        import redis

        context = multiprocessing.get_context("spawn")
        self._stop = context.Event()
        self._ready = context.Event()
        self._receive, send = context.Pipe(duplex=False)
        self._process = context.Process(target=_ping_forever,
                                        args=(url, self._stop, self._ready, send), daemon=True)
        self._windows: list[tuple[dict[str, float], float, float]] = []
        self._admin = redis.Redis.from_url(url)

    @contextmanager
    def measure(self) -> Iterator[dict[str, float]]:
        """Yields a dict that gets ``call_ms``, ``server_ms`` (the longest
        command's SLOWLOG time) and, when the pinger stops, the longest and
        p99 wait (ms) of the PINGs overlapping the block."""
        result: dict[str, float] = {}
        self._admin.slowlog_reset()
        start = time.monotonic()
        yield result
        end = time.monotonic()
        result["call_ms"] = (end - start) * 1000
        result["server_ms"] = max([entry["duration"] for entry in self._admin.slowlog_get(1000)
                                   if entry["command"] != b"PING"] or [0]) / 1000
        self._windows.append((result, start, end))

    def __enter__(self) -> Pinger:
        self._admin.config_set("slowlog-log-slower-than", 1000)
        self._process.start()
        self._ready.wait(30)
        return self

    def __exit__(self, *exc: object) -> None:
        self._admin.close()
        self._stop.set()
        spans: list[tuple[float, float]] = self._receive.recv()
        self._process.join()
        for result, start, end in self._windows:
            # a PING sent before the block waits, from the block's start on,
            # for what runs in it (not for what ran before)
            waits = [b - max(a, start) for a, b in spans if b >= start and a <= end] or [0.0]
            result["max_ping_ms"] = max(waits) * 1000
            result["p99_ping_ms"] = _percentile(waits, 0.99) * 1000
            result["pings"] = len(waits)


def _fit(make: Callable[[int], Any], limit: int) -> Any:
    """``make(n)`` for the largest n whose canonical JSON fits ``limit`` bytes."""
    low, high = 1, 1
    while len(redismem._json.dumps(make(high))[0].encode()) <= limit:
        low, high = high, high * 2
    while high - low > 1:
        middle = (low + high) // 2
        if len(redismem._json.dumps(make(middle))[0].encode()) <= limit:
            low = middle
        else:
            high = middle
    return make(low)


def probe_shapes(size: int) -> Iterator[tuple[str, bytes]]:
    """Values of ``size`` bytes that issue 38's probe found slowest to check
    (a refused one included)."""
    e = "é"
    yield "refused string of é ending in \\xff", \
        b'"' + (e * ((size - 3) // 2)).encode() + b'\xff"'
    yield "string of é", ('"' + e * ((size - 2) // 2) + '"').encode()
    yield "string alternating é and \\n", ('"' + "é\\n" * ((size - 2) // 4) + '"').encode()
    for token, what in (('1e300,"x"', '[1e300,"x",...]'), ("4.9e-324", "4.9e-324 repeated"),
                        ("[[1,2],[3,4]]", "[[1,2],[3,4]] repeated"), ('""', '["",...]'),
                        ('{"a":1}', "small objects")):
        yield what, ("[" + ",".join([token] * ((size - 2) // (len(token) + 1))) + "]").encode()
    yield "depth-256 nests", ("[" + ",".join(["[" * 255 + "]" * 255]
                                             * ((size - 2) // 511)) + "]").encode()


async def probe_calls(url: str, mem: redismem.Memory, pinger: Pinger, value_budget: int,
                      budget: int, rows: list[dict[str, Any]]) -> None:
    """Issue 38's slow calls, at the namespace's limits: the most events one
    append carries, capped appends to lists of nested items and of one
    long string, a set_many of number arrays, a merge onto a stored object
    larger than the value limit (written raw, or before the limit was
    lowered): it is refused by its length."""
    scope = mem.session("probe")
    store = redismem.RedisMemoryStore(url, namespace=mem.namespace)
    await store.setup()
    most = redismem.limits.MAX_EVENTS_PER_CALL
    cases: list[tuple[str, Callable[[], Awaitable[Any]]]] = []
    for name, payload in (("small", {"text": "hi"}), ("nested-array", {"a": [[1, 2], [3, 4]] * 3})):
        size = len(redismem._json.dumps(payload)[0]) + 120
        count = min(most, (budget - 1024) // size)

        def append(payload: dict[str, Any] = payload, count: int = count) -> Awaitable[int]:
            first = uuid.uuid4().hex
            return store.append_events("probe", [
                redismem.MemoryEvent(f"{first}{i}", "probe", None, "message", i, payload)
                for i in range(count)])
        cases.append((f"append_events of {count:,} {name} events", append))
    nested = _fit(lambda n: [[[1, 2], [3, 4]]] * n, value_budget - 64)
    await scope.set("nested", nested)
    cap = redismem.limits.MAX_APPEND_ITEMS
    cases.append((f"append with max_items={cap:,} to a list of {len(nested):,} nested items",
                  lambda: scope.append("nested", [[1, 2], [3, 4]], max_items=cap)))
    await scope.set("onestring", ["é" * ((value_budget - 64) // 2)])
    cases.append(("append with max_items=2 to a list of one string at the value limit",
                  lambda: scope.append("onestring", "x", max_items=2)))
    row = [1e300] * 100
    count = min(redismem.limits.MAX_BATCH, budget // (len(redismem._json.dumps(row)[0]) + 80))
    cases.append((f"set_many of {count:,} x [1e300]*100",
                  lambda: scope.set_many({f"n{i}": row for i in range(count)})))
    await scope.set("wide", {})
    wide = redismem._json.dumps({f"m{i:05d}": i for i in range(70_000)})[0]
    await mem.client.hset(redismem.keys.value(mem.namespace, "session", "probe", "wide"),
                          "v", wide)
    cases.append((f"merge of one member onto a raw {len(wide) // 1024:,} kB, 70,000-member "
                  "object (refused)", lambda: scope.merge("wide", {"x": 1})))
    for name, call in cases:
        for _ in range(3):
            with pinger.measure() as result, contextlib.suppress(redismem.RedisMemError):
                await call()
            rows.append({"op": name, "result": result})
    await store.close()


async def bench_stall(url: str, n: int) -> list[dict[str, Any]]:
    """The longest a PING from another client waits while one redismem call
    runs: the largest calls the namespace's max_call_bytes lets through, and
    trimming ``n`` events from the feed."""
    ns = "bench" + uuid.uuid4().hex[:8]
    rows: list[dict[str, Any]] = Progress()
    rng = np.random.default_rng(1)
    async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
        budget = int((await mem.settings())["max_call_bytes"]) - 16 * 1024  # room for keys
        value_budget = min(budget, int((await mem.settings())["max_value_bytes"]) - 64)
        await mem.configure(max_value_bytes=max(value_budget + 64, 1024))
        per_value = 64 * 1024 - 64
        count = max(1, budget // (per_value + 256))
        dim = 384
        makers: dict[str, Callable[[int], Any]] = {
            "array of integers": lambda n: list(range(10**6, 10**6 + n)),
            "array of floats": lambda n: [round(0.123456789 * i, 6) for i in range(n)],
            "Russian text": lambda n: "Съешь же ещё этих мягких французских булок. " * n,
            "Japanese text": lambda n: "日本語のテキストです。" * n,
        }
        shapes: dict[str, Any] = {
            f"set_many, {count} x 64 kB strings": {f"s{i}": "x" * per_value
                                                    for i in range(count)}}
        for what, make in makers.items():
            value = _fit(make, value_budget)
            shapes[f"set, one {value_budget // 1024} kB {what}"] = {"v": value}
        shapes["set_many, 1,000 small values"] = {f"k{i}": {"n": i, "note": "pack passports"}
                                                  for i in range(1000)}
        vector_count = min(int((await mem.settings())["max_call_vectors"]),
                           budget // (dim * 4 + 200))
        scope = mem.session("s")
        with Pinger(url) as pinger:
            await asyncio.sleep(0.2)
            for name, text in probe_shapes(value_budget):  # issue 38's slowest shapes
                for _ in range(3):
                    # a refused value counts too: the time to refuse it
                    with pinger.measure() as result, contextlib.suppress(redismem.RedisMemError):
                        await mem._conn.functions.set_items(
                            "value", ns, "session", "s", "", mem.principal, [("k", text, "")])
                    rows.append({"op": f"set, {len(text) // 1024} kB {name}", "result": result})
            for name, mapping in shapes.items():
                for _ in range(3):
                    with pinger.measure() as result:
                        await scope.set_many(mapping)
                    rows.append({"op": name, "result": result})
            await probe_calls(url, mem, pinger, value_budget, budget, rows)
            await mem.configure(max_value_bytes=max(value_budget + 64, 1024))
            biglist = _fit(lambda n: [1] * n, value_budget - 64)  # room for the appends
            await scope.set("biglist", biglist)
            for _ in range(3):
                with pinger.measure() as result:
                    await scope.append("biglist", 2)
                rows.append({"op": f"append to a {len(biglist):,}-item list", "result": result})
            cap = redismem.limits.MAX_APPEND_ITEMS
            for _ in range(3):
                with pinger.measure() as result:
                    await scope.append("biglist", 2, max_items=cap)
                rows.append({"op": f"append with max_items={cap:,} to a {len(biglist):,}-item list",
                             "result": result})
            members = redismem.limits.MAX_MERGE_MEMBERS
            for _ in range(3):
                await scope.delete("bigobject")
                with pinger.measure() as result:
                    await scope.merge("bigobject", {f"m{i}": i for i in range(members)})
                rows.append({"op": f"merge of a {members:,}-member patch", "result": result})
            await scope.set("bigobject", {f"m{i}": i for i in range(members - 1)})
            for i in range(3):
                with pinger.measure() as result:
                    await scope.merge("bigobject", {f"m{i}": None})
                rows.append({"op": f"merge into a {members:,}-member object", "result": result})
                await scope.merge("bigobject", {f"m{i}": i})
            prefix = "p" * min(60, value_budget // members - 16)  # the longest that fits
            for _ in range(3):
                await scope.delete("bigobject")
                with pinger.measure() as result:
                    await scope.merge("bigobject", {f"{prefix}{i:06d}": i for i in range(members)})
                rows.append({"op": f"merge of {members:,} names sharing {len(prefix)} bytes",
                             "result": result})
            vectors_ = [(f"v{i}", rng.standard_normal(dim).tolist()) for i in range(vector_count)]
            for _ in range(3):
                with pinger.measure() as result:
                    await scope.set_vectors(vectors_)
                rows.append({"op": f"set_vectors, {vector_count} x {dim}-d (HNSW)",
                             "result": result})
            store = redismem.RedisMemoryStore(url, namespace=ns)
            await store.setup()
            events = 20_000
            for first in range(0, events, 5000):
                await store.append_events("big", [
                    redismem.MemoryEvent(f"e{i}", "big", None, "trace" if i % 10 else "message",
                                         i, {"text": "hello there " * 5})
                    for i in range(first, first + 5000)], atomic=False)
            for name, read in (
                    ("get_recent_events", lambda: store.get_recent_events("big", events)),
                    ("get_events_since", lambda: store.get_events_since("big", 0, events))):
                with pinger.measure() as result:
                    assert len(await read()) == events
                rows.append({"op": f"{name} of {events:,} events (pages of "
                                   f"{redismem.limits.MAX_EVENTS_PER_READ:,})",
                             "result": result})
            with pinger.measure() as result:
                await store.compact_thread("big", redismem.RetentionPolicy(500, [], events))
            rows.append({"op": f"compact_thread of {events:,} events to 500 (slices of 1,000)",
                         "result": result})
            await store.close()
            await mem.configure(feed_max_bytes=redismem.limits.MAX_FEED_BYTES_CEILING)
            for start_i in range(0, n, 1000):
                await scope.set_many({f"e{i % 5000}": i for i in range(start_i, start_i + 1000)})
            await mem.configure(feed_retention_ms=1)
            await asyncio.sleep(0.01)
            with pinger.measure() as result:
                trimmed = await mem.trim_feed()
            rows.append({"op": f"trim_feed of {trimmed:,} events (slices of "
                               f"{redismem.limits.TRIM_SLICE_EVENTS:,})", "result": result})
        client = mem.client
        async for key in client.scan_iter(match=K.pattern(ns), count=1000):
            await client.delete(key)
    return [{"op": row["op"], **row["result"]} for row in rows]


JSON_SHAPES = {
    "1.5e-300": "exponent numbers (the probe's 26-minute stall)",
    "1e300": "large exponents",
    "1e-1000": "4-digit exponents",
    "-2.5E+10": "signed exponents",
    "3.25": "decimals",
    "123456": "integers",
    "[[1,2],[3]]": "nested arrays",
    '{"a":1.5e-300}': "objects",
    '"\\u00e9x\\n"': "escaped strings",
    '"Съешь"': "Cyrillic strings",
}


async def bench_json(url: str, n: int) -> list[dict[str, Any]]:
    """Server time (SLOWLOG, best of ``n``) of one set_values call whose value
    is an array of one repeated token, at 1 KiB, 64 KiB and 1 MiB: the Lua
    JSON check must be linear in the value's size."""
    ns = "bench" + uuid.uuid4().hex[:8]
    rows: list[dict[str, Any]] = Progress()
    async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
        client = mem.client
        await client.config_set("slowlog-log-slower-than", 0)
        for token, what in JSON_SHAPES.items():
            row: dict[str, Any] = {"op": what, "token": token}
            for label, size in (("1 KiB", 1024), ("64 KiB", 65536),
                                ("1 MiB", redismem.limits.MAX_VALUE_BYTES - 64)):
                count = max(1, (size - 2) // (len(token.encode()) + 1))
                text = "[" + ",".join([token] * count) + "]"
                best = float("inf")
                for _ in range(n):
                    await client.slowlog_reset()
                    await mem._conn.functions.set_items("value", ns, "session", "s", "", "bench",
                                                         [("k", text, "")])
                    times = [e["duration"] for e in await client.slowlog_get(10)
                             if e["command"].upper().startswith(b"FCALL")]
                    best = min(best, max(times) / 1000)
                row[label] = best
            rows.append(row)
        await client.config_set("slowlog-log-slower-than", 10_000)
        async for key in client.scan_iter(match=K.pattern(ns), count=1000):
            await client.delete(key)
    return rows


def json_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| value: an array of | token | 1 KiB | 64 KiB | 1 MiB | 1 MiB / 64 KiB |",
             "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['op']} | `{row['token']}` | {row['1 KiB']:.2f} ms | "
                     f"{row['64 KiB']:.2f} ms | {row['1 MiB']:.1f} ms | "
                     f"{row['1 MiB'] / row['64 KiB']:.1f} |")
    return "\n".join(lines)


async def _throughput(url: str, names: list[str], seconds: float) -> float:
    """Writes/s of one writer task per namespace, all at once, for ``seconds``."""
    mems = [await redismem.connect(url, namespace=ns, principal="bench") for ns in names]
    done = 0
    stop = time.perf_counter() + seconds

    async def writer(mem: redismem.Memory) -> None:
        nonlocal done
        scope, i = mem.session("s"), 0
        while time.perf_counter() < stop:
            await scope.set(f"k{i % 1000}", {"n": i})
            i += 1
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(writer(mem) for mem in mems))
    elapsed = time.perf_counter() - start
    for mem in mems:
        await mem.close()
    return done / elapsed


async def bench_cluster(url: str, cluster_url: str, n: int) -> list[dict[str, Any]]:
    """The same calls through the standalone client (one server) and the
    cluster client (3 primaries), alternating; then 30 namespaces written at
    once on each."""
    ns = "bench" + uuid.uuid4().hex[:8]
    rng = np.random.default_rng(7)
    rows: list[dict[str, Any]] = Progress()
    async with await redismem.connect(url, namespace=ns) as one, \
            await redismem.connect(cluster_url, namespace=ns) as many:
        scopes = {"standalone": one.session("s"), "cluster": many.session("s")}
        vecs = rng.normal(size=(1000, 64)).astype(np.float32)
        for scope in scopes.values():
            for start in range(0, 1000, 100):
                await scope.set_vectors([(f"v{start + j}", vecs[start + j].tolist())
                                         for j in range(100)])
        queries = rng.normal(size=(64, 64)).tolist()
        calls: dict[str, Callable[[Any], Callable[[int], Awaitable[Any]]]] = {
            "set": lambda sc: lambda i: sc.set(f"k{i}", {"n": i}),
            "get": lambda sc: lambda i: sc.get(f"k{i}"),
            "similarity_search (1,000 x 64-d, top 10)":
                lambda sc: lambda i: sc.similarity_search(queries[i % 64], top_k=10),
        }
        for op, make in calls.items():
            times = await latencies(n, {side: make(sc) for side, sc in scopes.items()})
            p50 = {side: _percentile(t, 0.5) for side, t in times.items()}
            p99 = {side: _percentile(t, 0.99) for side, t in times.items()}
            rows.append({"op": op, "standalone_p50_ms": p50["standalone"],
                         "cluster_p50_ms": p50["cluster"],
                         "standalone_p99_ms": p99["standalone"], "cluster_p99_ms": p99["cluster"],
                         "ratio_p50": p50["cluster"] / p50["standalone"], "target": 1.3})
    names = [f"{ns}-{i}" for i in range(30)]
    rates = {side: await _throughput(u, names, 5.0)
             for side, u in (("standalone", url), ("cluster", cluster_url))}
    rows.append({"op": "30 namespaces writing at once, writes/s", **rates,
                 "ratio": rates["cluster"] / rates["standalone"]})
    return rows


def cluster_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| call | standalone p50 | cluster p50 | cluster / standalone | target | "
             "standalone p99 | cluster p99 |", "|---|---:|---:|---:|---:|---:|---:|"]
    for row in rows[:-1]:
        lines.append(f"| {row['op']} | {row['standalone_p50_ms']:.3f} ms | "
                     f"{row['cluster_p50_ms']:.3f} ms | {row['ratio_p50']:.2f} | "
                     f"≤ {row['target']} | {row['standalone_p99_ms']:.3f} ms | "
                     f"{row['cluster_p99_ms']:.3f} ms |")
    last = rows[-1]
    lines.append(f"| {last['op']} | {last['standalone']:,.0f}/s | {last['cluster']:,.0f}/s | "
                 f"{last['ratio']:.2f} | | | |")
    return "\n".join(lines)


@contextmanager
def local_cluster() -> Iterator[str]:
    """A 3-primary cluster (no replicas) of the embedded server, from the tests."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.cluster import LocalCluster

    with tempfile.TemporaryDirectory(prefix="redismem-bench-cluster-") as data_dir:
        cluster = LocalCluster(Path(data_dir), replicas=0).start()
        try:
            yield cluster.url
        finally:
            cluster.stop()


def stall_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| call | call time | longest command (SLOWLOG) | longest PING wait | "
             "p99 PING wait |", "|---|---:|---:|---:|---:|"]
    for row in rows:
        lines.append(f"| {row['op']} | {row['call_ms']:.1f} ms | {row['server_ms']:.1f} ms | "
                     f"{row['max_ping_ms']:.1f} ms | {row['p99_ping_ms']:.1f} ms |")
    return "\n".join(lines)


def rows_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| measurement | result | target |", "|---|---|---|"]
    lines += [f"| {row['op']} | {row['value']} | {row['target']} |" for row in rows]
    return "\n".join(lines)


def feed_table(rows: list[dict[str, Any]]) -> str:
    lines = ["| measurement | events | p50 | p99 |", "|---|---:|---:|---:|"]
    for row in rows:
        extra = (f" (raw XRANGE: {row['raw_xrange_p50_ms']:.2f} ms)"
                 if "raw_xrange_p50_ms" in row else "")
        lines.append(f"| {row['op']}{extra} | {row['count']} | {row['p50_ms']:.2f} ms | "
                     f"{row['p99_ms']:.2f} ms |")
    return "\n".join(lines)


def table(rows: list[dict[str, Any]]) -> str:
    lines = ["| operation | raw redis-py | raw | redismem | ratio | target |",
             "|---|---|---:|---:|---:|---:|"]
    for row in rows:
        if row["op"].startswith("bytes"):
            ratio = row["redismem_ops"] / row["raw_ops"]
            lines.append(f"| {row['op']} | {row['raw']} | {row['raw_ops']:.0f} B | "
                         f"{row['redismem_ops']:.0f} B | {ratio:.2f}x | |")
            continue
        ratio = row["redismem_ops"] / row["raw_ops"]
        target = f"≥ {row['target']}" if row["target"] else ""
        lines.append(f"| {row['op']} | {row['raw']} | {row['raw_ops']:,.0f}/s | "
                     f"{row['redismem_ops']:,.0f}/s | {ratio:.2f} | {target} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("suite", choices=["kv", "feed", "vectors", "store", "transfer", "stall",
                                          "cluster", "json", "turns", "langgraph", "cli", "lua",
                                          "throughput", "mcp", "all"])
    parser.add_argument("--n", type=int, default=None,
                        help="operations per measurement (default: kv 10000, feed 2000)")
    parser.add_argument("--url", default=None, help="benchmark this server instead")
    parser.add_argument("--index", choices=["hnsw", "flat"], default="hnsw",
                        help="vectors: the namespace's vector_index setting")
    parser.add_argument("--data", choices=["structured", "random"], default="structured",
                        help="vectors: embeddings of low intrinsic dimension, or uniform random")
    parser.add_argument("--layout", default="ab",
                        help="vectors: a (one scope of all), b (100 scopes), ab, or plans "
                             "(the plan by a scope's share of the index)")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--flush", action="store_true",
                        help="empty the --url server first (FLUSHALL); without it a server "
                             "that holds data is refused")
    parser.add_argument("--compare", action="store_true",
                        help="all: every workload beside raw redis-py, the peers and "
                             "redis-benchmark (the bench extra), in one table")
    parser.add_argument("--vectors", type=int, default=100_000,
                        help="all: vectors in the vector workload (0: none)")
    args = parser.parse_args(argv)
    n = args.n or {"kv": 10_000, "feed": 2000, "vectors": 100_000, "store": 10_000,
                   "transfer": 50_000, "stall": 200_000, "cluster": 2000, "json": 3,
                   "turns": 2000, "langgraph": 2000, "cli": 20, "lua": 2000,
                   "throughput": 5, "mcp": 2000, "all": 2000}[args.suite]
    suites = {"kv": (bench_kv, table), "feed": (bench_feed, feed_table),
              "store": (bench_store, rows_table),
              "transfer": (bench_transfer, table), "stall": (bench_stall, stall_table),
              "json": (bench_json, json_table), "turns": (bench_turns, turns_table)}
    if args.suite == "vectors":
        with server_url(args.url, args.flush) as url:
            result = asyncio.run(vector_bench.bench(url, n, args.index, args.data, args.layout))
        print(json.dumps(result, indent=2) if args.json else vector_bench.render(result))
        return 0
    if args.suite == "langgraph":  # the bench extra: langgraph-checkpoint-redis
        import langgraph_bench

        with server_url(args.url, args.flush) as url:
            rows = asyncio.run(langgraph_bench.bench(url, n))
        print(json.dumps(rows, indent=2) if args.json else langgraph_bench.render(rows))
        return 0
    if args.suite == "mcp":  # the mcp extra
        import mcp_bench

        with server_url(args.url, args.flush) as url:
            rows = asyncio.run(mcp_bench.bench(url, n))
        print(json.dumps(rows, indent=2) if args.json else mcp_bench.render(rows))
        return 0
    if args.suite == "lua":  # its own server: it swaps the library while it runs
        import lua_profile

        with server_url(None) as url:
            rows = asyncio.run(lua_profile.bench(url, n))
        print(json.dumps(rows, indent=2) if args.json else lua_profile.render(rows))
        return 0
    if args.suite == "all":
        if not args.compare:
            parser.error("all needs --compare (the peers come from the bench extra)")
        import compare_bench

        with server_url(args.url, args.flush) as url:
            result = compare_bench.bench(url, n, args.vectors, argv or sys.argv[1:])
        print(json.dumps(result, indent=2) if args.json else compare_bench.render(result))
        return 0
    if args.suite == "throughput":
        import throughput_bench

        with server_url(args.url, args.flush) as url:
            rows = throughput_bench.bench(url, n)
        print(json.dumps(rows, indent=2) if args.json else throughput_bench.render(rows))
        return 0
    if args.suite == "cli":
        import cli_bench

        with server_url(args.url, args.flush) as url:
            rows = cli_bench.bench(url, n)
        print(json.dumps(rows, indent=2) if args.json else cli_bench.render(rows))
        return 0
    if args.suite == "cluster":
        with server_url(args.url, args.flush) as url, local_cluster() as cluster_url:
            rows = asyncio.run(bench_cluster(url, cluster_url, n))
        render = cluster_table
    else:
        run, render = suites[args.suite]
        with server_url(args.url, args.flush) as url:
            rows = asyncio.run(run(url, n))
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        print(f"# {args.suite}, n={n}, Python {platform.python_version()}, "
              f"{platform.machine()}")
        print(render(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
