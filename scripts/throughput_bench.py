"""``python scripts/bench.py throughput``: writes per second from 50
concurrent clients, redismem ``set`` beside a bare revisioned-write EVALSHA
(HINCRBY + HSET + XADD, none of redismem's checks) through the same redis-py
client and ``redis-benchmark SET`` on the same server.

The Python clients are 2 processes of 25 concurrent tasks each, writing for
``seconds`` (``--n``, default 5); the figure is their total. On this 2-core
machine the clients and the server share the cores, so the table also gives
the server time per call (``INFO commandstats``) and the rate one core could
serve at that time per call.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import re
import shutil
import subprocess
import time
import uuid
from typing import Any
from urllib.parse import urlsplit

from redis.asyncio import Redis

import redismem

PROCESSES = 2
TASKS = 25
BARE = """
local rev = redis.call('HINCRBY', KEYS[1], 'rev', 1)
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'ts', ARGV[2])
redis.call('XADD', KEYS[2], '*', 'k', KEYS[1], 'v', ARGV[1])
return rev
"""
VALUE = {"note": "pack passports", "n": 1}


async def _writer(url: str, ns: str, kind: str, seconds: float, me: int) -> int:
    done = 0
    deadline = time.monotonic() + seconds
    if kind == "redismem":
        async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
            scope = mem.session(f"s{me}")

            async def task(t: int) -> None:
                nonlocal done
                i = 0
                while time.monotonic() < deadline:
                    await scope.set(f"k{t}:{i % 1000}", VALUE)
                    i += 1
                    done += 1

            await asyncio.gather(*(task(t) for t in range(TASKS)))
        return done
    client = Redis.from_url(url, max_connections=TASKS)
    sha = await client.script_load(BARE)
    text = '{"n":1,"note":"pack passports"}'

    async def bare(t: int) -> None:
        nonlocal done
        i = 0
        while time.monotonic() < deadline:
            await client.evalsha(sha, 2, f"bare:{{{ns}}}:{me}:{t}:{i % 1000}",
                                 f"bare:{{{ns}}}:feed", text, "1")
            i += 1
            done += 1

    await asyncio.gather(*(bare(t) for t in range(TASKS)))
    await client.aclose()
    return done


def _process(url: str, ns: str, kind: str, seconds: float, me: int) -> int:
    return asyncio.run(_writer(url, ns, kind, seconds, me))


async def _server_us(url: str, command: str) -> float:
    client = Redis.from_url(url)
    try:
        stats = (await client.info("commandstats")).get(f"cmdstat_{command}", {})
        return float(stats.get("usec_per_call", 0.0))
    finally:
        await client.aclose()


async def _reset(url: str) -> None:
    client = Redis.from_url(url)
    try:
        await client.config_resetstat()
    finally:
        await client.aclose()


def _redis_benchmark(url: str) -> float | None:
    exe = shutil.which("redis-benchmark")
    if exe is None:
        return None
    parts = urlsplit(url)
    command = [exe, "-h", parts.hostname or "127.0.0.1", "-p", str(parts.port or 6379),
               "-c", "50", "-n", "200000", "-t", "set", "-q"]
    if parts.password:
        command += ["-a", parts.password, "--user", parts.username or "default"]
    out = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    found = re.search(r"SET: ([\d.]+) requests per second", out.replace("\r", "\n"))
    return float(found[1]) if found else None


def bench(url: str, seconds: float) -> list[dict[str, Any]]:
    ns = "tput" + uuid.uuid4().hex[:6]
    rows: list[dict[str, Any]] = []
    context = multiprocessing.get_context("spawn")
    for kind, command, label in (("bare", "evalsha", "bare revisioned-write EVALSHA"),
                                 ("redismem", "fcall", "redismem set")):
        asyncio.run(_reset(url))
        start = time.monotonic()
        with context.Pool(PROCESSES) as pool:
            counts = pool.starmap(_process, [(url, ns, kind, seconds, me)
                                             for me in range(PROCESSES)])
        elapsed = time.monotonic() - start
        server_us = asyncio.run(_server_us(url, command))
        rows.append({"writer": label, "writes_per_s": sum(counts) / elapsed,
                     "server_us_per_call": server_us,
                     "one_core_bound_per_s": 1e6 / server_us if server_us else None})
    rows.append({"writer": "redis-benchmark SET -c 50", "writes_per_s": _redis_benchmark(url),
                 "server_us_per_call": None, "one_core_bound_per_s": None})
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    def num(value: float | None, fmt: str) -> str:
        return "" if value is None else format(value, fmt)

    lines = ["| writer (50 concurrent clients) | writes/s | server µs per call | "
             "one core at that time per call |", "|---|---:|---:|---:|"]
    lines += [f"| {r['writer']} | {num(r['writes_per_s'], ',.0f')} | "
              f"{num(r['server_us_per_call'], '.1f')} | "
              f"{num(r['one_core_bound_per_s'], ',.0f')} |" for r in rows]
    return "\n".join(lines)
