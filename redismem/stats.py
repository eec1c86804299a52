"""What a server holds, per namespace, for ``redismem status``.

Everything here only reads. Counting walks the namespace's keys with SCAN
(and MEMORY USAGE per key for ``memory_bytes``), so it costs time in
proportion to the namespace's size: an operator's command, not a hot path.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from . import keys as K
from . import vectors as V
from .topology import on_namespace_node

_KINDS: tuple[K.Kind, ...] = ("value", "vector")


async def scan_keys(client: Any, pattern: str) -> list[str]:
    """The names of the keys matching a SCAN pattern, sorted, without repeats."""
    return sorted({key.decode() async for key in client.scan_iter(match=pattern, count=1000)})


async def namespaces(client: Redis) -> list[str]:
    """Every namespace with at least one key on the server, sorted."""
    found = {K.namespace_of(key) for key in await scan_keys(client, K.ALL_NAMESPACES)}
    return sorted(ns for ns in found if ns is not None)


async def _live_names(client: Any, ns: str, kind: K.Kind, now_ms: int) -> tuple[int, int]:
    """(live key names, scopes holding any) of one kind: names listed minus
    those whose expiry has passed but which no writer has pruned yet."""
    scopes = [K.scope_of(ns, key) for key in await scan_keys(client, K.names_pattern(ns, kind))]
    pipe = client.pipeline(transaction=False)
    for scope, sid in scopes:
        pipe.zcard(K.names(ns, kind, scope, sid))
        pipe.zcount(K.expiry(ns, kind, scope, sid), "-inf", f"({now_ms}")
    replies = await pipe.execute()
    live = sum(replies[::2]) - sum(replies[1::2])
    return live, sum(1 for listed in replies[::2] if listed)


async def _indexes(client: Any, ns: str) -> dict[str, dict[str, Any]]:
    # on a cluster, the namespace's indexes live on the node of its slot
    where = on_namespace_node(client, ns)
    try:
        names = sorted(n.decode() for n in await client.execute_command("FT._LIST", **where))
    except ResponseError:  # no search module
        return {}
    found = {}
    for name in names:
        if not name.startswith(K.index_prefix(ns)):
            continue
        info = await V.index_info(client, name)
        found[name] = {
            "docs": int(info.get("num_docs", 0)),
            "indexing_failures": int(info.get("hash_indexing_failures", 0)),
            "percent_indexed": float(info.get("percent_indexed", 1)),
            "vector_mb": round(float(info.get("vector_index_sz_mb", 0) or 0), 3),
            "index_mb": round(float(info.get("total_index_memory_sz_mb", 0) or 0), 3),
        }
    return found


async def _memory_used(client: Any, keys: Sequence[str]) -> int | None:
    """Bytes the keys take (MEMORY USAGE), or None when the server cannot say."""
    total = 0
    for first in range(0, len(keys), 1000):
        pipe = client.pipeline(transaction=False)
        for key in keys[first:first + 1000]:
            pipe.memory_usage(key)
        try:
            total += sum(size or 0 for size in await pipe.execute())
        except ResponseError:  # memory:// (fakeredis) has no MEMORY command
            return None
    return total


async def namespace_stats(client: Redis, ns: str) -> dict[str, Any]:
    """Counts, feed bounds, index sizes and memory used of namespace ``ns``."""
    raw: Any = client
    now_ms = time.time_ns() // 1_000_000
    values, value_scopes = await _live_names(raw, ns, "value", now_ms)
    vectors, vector_scopes = await _live_names(raw, ns, "vector", now_ms)
    threads = [t.decode() for t in await raw.zrange(K.threads(ns), 0, -1)]
    pipe = raw.pipeline(transaction=False)
    for thread in threads:
        pipe.xlen(K.thread_events(ns, thread))
    events = sum(await pipe.execute()) if threads else 0
    users = [K.user_of(ns, key) for key in await scan_keys(raw, K.memories_pattern(ns))]
    pipe = raw.pipeline(transaction=False)
    for user in users:
        pipe.zcard(K.memories(ns, user))
    memories = sum(await pipe.execute()) if users else 0
    oldest = await raw.xrange(K.feed(ns), "-", "+", count=1)
    keys = await scan_keys(raw, K.pattern(ns))
    return {
        "namespace": ns,
        "value_keys": values,
        "value_scopes": value_scopes,
        "vector_keys": vectors,
        "vector_scopes": vector_scopes,
        "sessions": int(await raw.zcard(K.sessions(ns))),
        "threads": len(threads),
        "thread_events": int(events),
        "long_term_memories": int(memories),
        "feed": {
            "length": int(await raw.xlen(K.feed(ns))),
            "oldest_sequence": int(oldest[0][0].split(b"-")[0]) if oldest else None,
            "last_sequence": int(await raw.get(K.sequence(ns)) or 0),
        },
        "indexes": await _indexes(raw, ns),
        "keys": len(keys),
        "memory_bytes": await _memory_used(raw, keys),
    }
