"""``python scripts/bench.py mcp``: a tool call of ``redismem mcp`` over stdio
against the same call through the Python facade, and the time from a write
to its subscription's notification.

``redismem mcp`` runs as a subprocess, as MCP hosts start it, with the
SDK's ``ClientSession`` over ``stdio_client`` in this process (the
``mcp`` extra). The facade calls and the tool calls take turns in rounds
(scripts/timing.py). For the notification, the client subscribes to a
value (``resources/subscribe``) and the facade writes it: the time from
the write's start to the notification's arrival. Targets (issue 41): a
tool call's p50 at most 2 ms over the facade's; a notification's p50 at
most 5 ms.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import time
import uuid
import warnings
from typing import Any

import mcp_types
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from timing import latencies

import redismem


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def bench(url: str, n: int) -> list[dict[str, Any]]:
    exe = shutil.which("redismem")
    if exe is None:
        raise SystemExit("the redismem command is not on PATH (pip install -e '.[mcp]')")
    ns = "mcpbench" + uuid.uuid4().hex[:6]
    heard: asyncio.Queue[float] = asyncio.Queue()

    async def on_message(message: Any) -> None:
        if isinstance(message, mcp_types.ResourceUpdatedNotification):
            heard.put_nowait(time.perf_counter())

    params = StdioServerParameters(command=exe, args=["mcp", "--namespace", ns],
                                   env={"REDISMEM_URL": url, "PATH": os.environ["PATH"]})
    scope = {"scope": "workflow:bench"}
    async with await redismem.connect(url, namespace=ns, principal="bench") as memory, \
            stdio_client(params) as (read, write), \
            ClientSession(read, write, message_handler=on_message) as session:
        await session.initialize()
        facade = memory.workflow("bench")
        value = {"note": "pack passports", "n": 1}

        async def tool(name: str, arguments: dict[str, Any]) -> None:
            reply = await session.call_tool(name, arguments)
            if reply.is_error:
                raise RuntimeError(f"{name}: {reply.content}")

        times = await latencies(n, {
            "facade set": lambda i: facade.set(f"k{i % 500}", value),
            "tool memory_set": lambda i: tool("memory_set", {**scope, "key": f"k{i % 500}",
                                                             "value": value}),
            "facade get": lambda i: facade.get(f"k{i % 500}"),
            "tool memory_get": lambda i: tool("memory_get", {**scope, "key": f"k{i % 500}"}),
        })
        uri = f"redismem://{ns}/workflow/bench/watched"
        with warnings.catch_warnings():  # the 2025-era request MCP hosts send
            warnings.simplefilter("ignore")
            await session.subscribe_resource(uri)
        notified = []
        for i in range(n):
            start = time.perf_counter()
            await facade.set("watched", {"i": i})
            notified.append((await asyncio.wait_for(heard.get(), 30) - start) * 1000)
    rows = []
    for op in ("set", "get"):
        ours, base = times[f"tool memory_{op}"], times[f"facade {op}"]
        rows.append({"op": f"memory_{op} tool call over stdio", "p50_ms": statistics.median(ours),
                     "p99_ms": _p(ours, 0.99), "facade_p50_ms": statistics.median(base),
                     "facade_p99_ms": _p(base, 0.99),
                     "over_ms": statistics.median(ours) - statistics.median(base),
                     "target": "≤ 2 ms over the facade"})
    rows.append({"op": "write -> notifications/resources/updated", "p50_ms":
                 statistics.median(notified), "p99_ms": _p(notified, 0.99),
                 "facade_p50_ms": None, "facade_p99_ms": None, "over_ms": None,
                 "target": "p50 ≤ 5 ms"})
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| call | p50 / p99 | the facade's p50 / p99 | over the facade (p50) | target |",
             "|---|---:|---:|---:|---|"]
    for row in rows:
        facade = (f"{row['facade_p50_ms']:.3f} / {row['facade_p99_ms']:.3f} ms"
                  if row["facade_p50_ms"] is not None else "")
        over = f"{row['over_ms']:.3f} ms" if row["over_ms"] is not None else ""
        lines.append(f"| {row['op']} | {row['p50_ms']:.3f} / {row['p99_ms']:.3f} ms | "
                     f"{facade} | {over} | {row['target']} |")
    return "\n".join(lines)
