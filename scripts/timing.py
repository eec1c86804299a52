"""The timing loop the benchmarks share."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any


async def latencies(n: int, ops: dict[str, Callable[[int], Awaitable[Any]]],
                    rounds: int = 5) -> dict[str, list[float]]:
    """Per-call times (ms) of each op over ``n`` sequential awaited calls, the
    ops taking turns in ``rounds`` rounds so all see the same conditions."""
    times: dict[str, list[float]] = {name: [] for name in ops}
    for op in ops.values():  # warm-up
        for i in range(min(100, n)):
            await op(i)
    per_round = max(1, n // rounds)
    for r in range(rounds):
        for name, op in ops.items():
            for i in range(r * per_round, (r + 1) * per_round):
                start = time.perf_counter()
                await op(i)
                times[name].append((time.perf_counter() - start) * 1000)
    return times
