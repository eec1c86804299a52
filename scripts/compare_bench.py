"""``python scripts/bench.py all --compare``: one table of every workload,
redismem beside raw redis-py, the peer a user would pick instead
(langgraph-checkpoint-redis, redisvl) and ``redis-benchmark``, all on the
same server in the same run, headed by the machine, the versions and the
command. docs/benchmarks.md carries its latest output.

Latencies are medians of ``n`` sequential awaited calls from one client,
the sides taking turns in five rounds; rates are items per second of the
same. For a latency, a ratio below 1 is faster; for a rate, above 1.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import platform
import statistics
import sys
import time
import uuid
from typing import Any

from redis.asyncio import Redis
from throughput_bench import BARE, VALUE
from timing import latencies

import redismem

TEXT = json.dumps(VALUE)


def _row(workload: str, unit: str, ours: float, raw: tuple[str, float] | None,
         peer: tuple[str, float] | None, target: str) -> dict[str, Any]:
    return {"workload": workload, "unit": unit, "redismem": ours,
            "raw": raw[1] if raw else None, "raw_name": raw[0] if raw else "",
            "peer": peer[1] if peer else None, "peer_name": peer[0] if peer else "",
            "vs_raw": ours / raw[1] if raw else None,
            "vs_peer": ours / peer[1] if peer else None, "target": target}


async def _key_value(url: str, n: int) -> list[dict[str, Any]]:
    import langgraph_bench
    from langgraph.store.base import GetOp, PutOp

    ns = "cmp" + uuid.uuid4().hex[:6]
    raw = Redis.from_url(url)
    sha = await raw.script_load(BARE)
    rows = []
    async with await redismem.connect(url, namespace=ns, principal="bench") as mem, \
            langgraph_bench._peer_store(url) as (peer, flavour):
        scope = mem.session("s")
        space = ("cmp" + uuid.uuid4().hex[:6],)
        lg = f"LangGraph {flavour}"
        spans = await latencies(n, {
            "set": lambda i: scope.set(f"k{i}", VALUE),
            "bare": lambda i: raw.evalsha(sha, 2, f"bare:{{{ns}}}:{i}", f"bare:{{{ns}}}:feed",
                                          TEXT, "1"),
            "peer": lambda i: peer.aput(space, f"k{i}", VALUE)})
        p50 = {name: statistics.median(v) * 1000 for name, v in spans.items()}  # µs
        rows.append(_row("set one small value", "p50 µs", p50["set"],
                         ("bare revisioned-write EVALSHA", p50["bare"]), (f"{lg}.aput",
                                                                          p50["peer"]),
                         "≤ 1.3x raw, ≤ 0.6x peer"))
        spans = await latencies(n, {
            "get": lambda i: scope.get(f"k{i % n}"),
            "raw": lambda i: raw.hget(f"bare:{{{ns}}}:{i % n}", "v"),
            "peer": lambda i: peer.aget(space, f"k{i % n}")})
        p50 = {name: statistics.median(v) * 1000 for name, v in spans.items()}  # µs
        rows.append(_row("get one small value", "p50 µs", p50["get"], ("HGET", p50["raw"]),
                         (f"{lg}.aget", p50["peer"]), "≤ 1.1x raw"))

        async def raw_gets(b: int) -> None:
            pipe = raw.pipeline(transaction=False)
            for j in range(100):
                pipe.hmget(f"bare:{{{ns}}}:{(b * 100 + j) % n}", ["v", "rev"])
            await pipe.execute()

        gets = max(20, n // 50)
        found: dict[str, int] = {"ours": 0, "raw": 0, "peer": 0}

        async def our_gets(b: int) -> None:
            got = await scope.get_many([f"k{(b * 100 + j) % n}" for j in range(100)])
            found["ours"] += sum(value.found for value in got.values())

        async def peer_gets(b: int) -> None:  # its batch get finds at most 10: count them
            got = await peer.abatch([GetOp(space, f"k{(b * 100 + j) % n}") for j in range(100)])
            found["peer"] += sum(item is not None for item in got)

        async def counted_raw_gets(b: int) -> None:
            await raw_gets(b)
            found["raw"] += 100

        spans = await latencies(gets, {"ours": our_gets, "raw": counted_raw_gets,
                                    "peer": peer_gets})
        calls = len(spans["ours"]) + min(100, gets)  # the warm-up calls count too
        rate = {name: found[name] / calls / statistics.median(v) * 1000
                for name, v in spans.items()}
        rows.append(_row("get_many(100), items found", "items/s", rate["ours"],
                         ("pipelined HMGET x100", rate["raw"]), (f"{lg} batch of 100 gets",
                                                                 rate["peer"]),
                         "≥ 0.9x raw"))

        async def raw_sets(b: int) -> None:
            pipe = raw.pipeline(transaction=False)
            for j in range(100):
                pipe.hset(f"rawb:{{{ns}}}:{b}:{j}", mapping={"v": TEXT, "rev": 1})
            await pipe.execute()

        spans = await latencies(gets, {
            "ours": lambda b: scope.set_many({f"b{b}:{j}": VALUE for j in range(100)}),
            "raw": raw_sets,
            "peer": lambda b: peer.abatch([PutOp(space, f"b{b}:{j}", VALUE)
                                           for j in range(100)])})
        rate = {name: 1e5 / statistics.median(v) for name, v in spans.items()}
        rows.append(_row("set_many(100)", "items/s", rate["ours"],
                         ("pipelined HSET x100", rate["raw"]), (f"{lg} batch of 100 puts",
                                                                rate["peer"]),
                         "≥ 10x peer"))
    await raw.aclose()
    return rows


async def _langgraph(url: str, n: int) -> list[dict[str, Any]]:
    import langgraph_bench
    from langgraph.checkpoint.redis.aio import AsyncRedisSaver

    from redismem.langgraph import RedismemSaver

    ns = "cmp" + uuid.uuid4().hex[:6]
    async with RedismemSaver(url=url, namespace=ns) as ours, \
            AsyncRedisSaver.from_conn_string(url) as theirs:
        await theirs.asetup()
        (our_put, our_get), (their_put, their_get) = (langgraph_bench._checkpoint_ops(ours),
                                                      langgraph_bench._checkpoint_ops(theirs))
        puts = await latencies(n, {"ours": our_put, "theirs": their_put})
        gets = await latencies(n, {"ours": our_get, "theirs": their_get})
    return [_row("checkpoint put (20 messages, ~2 kB)", "p50 µs",
                 statistics.median(puts["ours"]) * 1000, None,
                 ("AsyncRedisSaver.aput", statistics.median(puts["theirs"]) * 1000), "≤ 0.5x peer"),
            _row("checkpoint get_tuple (latest)", "p50 µs", statistics.median(gets["ours"]) * 1000,
                 None, ("AsyncRedisSaver.aget_tuple", statistics.median(gets["theirs"]) * 1000),
                 "≤ 0.5x peer")]


def _throughput(url: str, seconds: float) -> list[dict[str, Any]]:
    import throughput_bench

    found = {row["writer"]: row for row in throughput_bench.bench(url, seconds)}
    ours = found["redismem set"]
    return [_row("set from 50 concurrent clients", "writes/s", ours["writes_per_s"],
                 ("bare revisioned-write EVALSHA",
                  found["bare revisioned-write EVALSHA"]["writes_per_s"]),
                 ("redis-benchmark SET -c 50",
                  found["redis-benchmark SET -c 50"]["writes_per_s"]), "≥ 40,000"),
            _row("server time of one set", "µs", ours["server_us_per_call"],
                 ("bare revisioned-write EVALSHA",
                  found["bare revisioned-write EVALSHA"]["server_us_per_call"]), None,
                 "≤ 25")]


async def _vectors(url: str, n: int) -> list[dict[str, Any]]:
    import vector_bench

    result = await vector_bench.bench(url, n, "hnsw", "structured", "a")
    targets = {"ingest": "≥ 1.0x peer", "used_memory": "≤ 1.1x peer",
               "search": "≤ 1.0x peer"}
    rows = []
    for row in result["rows"]:
        unit = row["op"].rsplit("(", 1)[1].rstrip(")")
        target = next((t for key, t in targets.items() if key in row["op"]), "")
        rows.append(_row(f"vectors, {n:,} x {result['dim']}-d, " + row["op"].rsplit(" (", 1)[0],
                         unit, row["redismem"], None, ("redisvl", row["redisvl"]), target))
    return rows


def _cli(url: str) -> list[dict[str, Any]]:
    import cli_bench

    found = {row["command"]: row for row in cli_bench.bench(url, 15)}
    ping = found.get("redis-cli -u URL PING")
    return [_row("redismem --help (a new process)", "p50 ms",
                 found["redismem --help"]["p50_ms"], None,
                 ("redis-cli PING", ping["p50_ms"]) if ping else None, "≤ 80 ms"),
            _row("redismem get k (a new process)", "p50 ms",
                 found["redismem get k (one HMGET)"]["p50_ms"], None,
                 ("redis-cli PING", ping["p50_ms"]) if ping else None, "≤ 150 ms")]


async def _server(url: str) -> str:
    client = Redis.from_url(url)
    try:
        info = await client.info("server")
        modules = [m.get(b"name", m.get("name", b"?")) for m in await client.module_list()]
    finally:
        await client.aclose()
    names = ", ".join(m.decode() if isinstance(m, bytes) else str(m) for m in modules)
    return f"Redis {info['redis_version']}" + (f" with {names}" if names else "")


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def header(server: str, argv: list[str]) -> str:
    return (f"`{' '.join(['python', 'scripts/bench.py', *argv])}`, "
            f"{time.strftime('%Y-%m-%d')}: {platform.machine()}, {os.cpu_count()} cores, "
            f"Python {platform.python_version()}, {server}; redismem "
            f"{_version('redismem')}, redis-py {_version('redis')}, hiredis "
            f"{_version('hiredis')}, redisvl {_version('redisvl')}, langgraph-checkpoint-redis "
            f"{_version('langgraph-checkpoint-redis')}.")


def bench(url: str, n: int, vectors: int, argv: list[str]) -> dict[str, Any]:
    rows = asyncio.run(_key_value(url, n))
    rows += asyncio.run(_langgraph(url, n))
    rows += _throughput(url, 5)
    if vectors:
        rows += asyncio.run(_vectors(url, vectors))
    rows += _cli(url)
    return {"header": header(asyncio.run(_server(url)), argv), "rows": rows}


def render(result: dict[str, Any]) -> str:
    def num(value: float | None) -> str:
        if value is None:
            return ""
        return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"

    def ratio(value: float | None) -> str:
        return "" if value is None else f"{value:.2f}"

    lines = [result["header"], "",
             "| workload | unit | redismem | raw redis-py | peer | vs raw | vs peer | target |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    for r in result["rows"]:
        raw = f"{num(r['raw'])} ({r['raw_name']})" if r["raw"] is not None else ""
        peer = f"{num(r['peer'])} ({r['peer_name']})" if r["peer"] is not None else ""
        lines.append(f"| {r['workload']} | {r['unit']} | {num(r['redismem'])} | {raw} | {peer} "
                     f"| {ratio(r['vs_raw'])} | {ratio(r['vs_peer'])} | {r['target']} |")
    return "\n".join(lines)


async def refuse_unless_empty(url: str, flush: bool) -> None:
    """A server holding other data gives figures of other data: refuse it,
    or (``flush``) empty it first."""
    client = Redis.from_url(url)
    try:
        held = await client.dbsize()
        if held and not flush:
            sys.exit(f"the server at the given --url holds {held} keys: a benchmark measures "
                     "only its own data; give --flush to empty it first (FLUSHALL)")
        if held:
            await client.flushall()
    finally:
        await client.aclose()
