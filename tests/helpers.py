"""Helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path

import redismem
from redismem import keys as K

REPO = Path(__file__).resolve().parent.parent


async def snapshot(mem: redismem.Memory) -> dict[bytes, object]:
    """Every key of the Memory's namespace with its content, to show nothing changed."""
    client = mem.client
    state: dict[bytes, object] = {}
    async for key in client.scan_iter(match=K.pattern(mem.namespace), count=1000):
        kind = await client.type(key)
        if kind == b"hash":
            state[key] = await client.hgetall(key)
        elif kind == b"zset":
            state[key] = await client.zrange(key, 0, -1, withscores=True)
        elif kind == b"stream":
            state[key] = await client.xrange(key)
        else:
            state[key] = await client.get(key)
    return state
