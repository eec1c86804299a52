"""Helpers shared by the tests."""

from __future__ import annotations

from pathlib import Path

import redismem
from redismem import keys as K
from redismem.client import open_client
from redismem.topology import on_namespace_node

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


async def flush_namespace(url: str, ns: str) -> None:
    """Delete every key and search index of namespace ``ns``."""
    client = await open_client(url)
    try:
        for index in await client.execute_command("FT._LIST", **on_namespace_node(client, ns)):
            if index.decode().startswith(K.index_prefix(ns)):
                await client.execute_command("FT.DROPINDEX", index)
        keys = [key async for key in client.scan_iter(match=K.pattern(ns), count=1000)]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
