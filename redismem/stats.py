"""What a server holds, per namespace, for ``redismem status``.

Everything here only reads. Counting walks the namespace's keys with SCAN
(and MEMORY USAGE per key for ``memory_bytes``), so it costs time in
proportion to the namespace's size: an operator's command, not a hot path.
"""

from __future__ import annotations

import re
import time
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from redis.asyncio import Redis
from redis.exceptions import NoPermissionError, ResponseError

from . import keys as K
from . import vectors as V
from .topology import on_namespace_node

T = TypeVar("T")

async def scan_keys(client: Any, pattern: str) -> list[str]:
    """The names of the keys matching a SCAN pattern, sorted, without
    repeats (a byte that is not UTF-8, which only a raw command writes,
    as ``\\xff``)."""
    return sorted({key.decode("utf-8", "backslashreplace")
                   async for key in client.scan_iter(match=pattern, count=1000)})


async def scan_if_permitted(client: Any, pattern: str) -> list[str]:
    """:func:`scan_keys`; nothing when this credential may not SCAN (every
    role but operator: SCAN would show other namespaces' key names). Then
    a namespace's registries alone say what there is (they hold every
    scope and user written since library version 18)."""
    try:
        return await scan_keys(client, pattern)
    except NoPermissionError:
        return []


async def namespaces(client: Redis) -> list[str]:
    """Every namespace with at least one key on the server, sorted."""
    found = {K.namespace_of(key) for key in await scan_keys(client, K.ALL_NAMESPACES)}
    return sorted(ns for ns in found if ns is not None)


async def _registry(client: Any, ns: str) -> set[tuple[str, str, str]]:
    """(kind tag, scope, scope id) of every member of the namespace's scopes
    registry (a member that names no scope, a raw write, is left out:
    `redismem audit` says)."""
    found = set()
    for member in await client.zrange(K.scopes(ns), 0, -1):
        try:
            found.add(K.scope_entry(member.decode()))
        except ValueError:
            continue
    return found


async def _registered_scopes(client: Any, ns: str, kind: K.Kind) -> list[tuple[str, str]]:
    """The scopes of one kind: by SCAN, or, for a user that may not SCAN
    (every role but operator), from the namespace's scopes registry."""
    try:
        return [K.scope_of(ns, key) for key in await scan_keys(client, K.names_pattern(ns, kind))]
    except NoPermissionError:
        pass
    return sorted({(scope, sid) for tag, scope, sid in await _registry(client, ns)
                   if tag == K.kind_tag(kind)})


async def _listed(client: Any, ns: str, kind: K.Kind, scopes: Sequence[tuple[str, str]],
                  now_ms: int) -> list[tuple[int, int]]:
    """(names listed, of which expired but not yet pruned) per scope."""
    pipe = client.pipeline(transaction=False)
    for scope, sid in scopes:
        pipe.zcard(K.names(ns, kind, scope, sid))
        # ZRANGEBYSCORE, not ZCOUNT: the commands every role may read
        pipe.zrangebyscore(K.expiry(ns, kind, scope, sid), "-inf", f"({now_ms}")
    replies = await pipe.execute() if scopes else []
    return [(int(listed), len(expired)) for listed, expired in zip(replies[::2], replies[1::2],
                                                                    strict=True)]


async def _live_names(client: Any, ns: str, kind: K.Kind, now_ms: int) -> tuple[int, int]:
    """(live key names, scopes holding any) of one kind: names listed minus
    those whose expiry has passed but which no writer has pruned yet."""
    counts = await _listed(client, ns, kind, await _registered_scopes(client, ns, kind), now_ms)
    return (sum(listed - expired for listed, expired in counts),
            sum(1 for listed, _ in counts if listed))


async def _indexes(client: Any, ns: str) -> dict[str, dict[str, Any]]:
    # on a cluster, the namespace's indexes live on the node of its slot
    where = on_namespace_node(client, ns)
    try:
        names = sorted(n.decode() for n in await client.execute_command("FT._LIST", **where))
    except NoPermissionError:
        raise
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


async def checkpoint_threads(client: Any, ns: str) -> list[tuple[str, int, int]]:
    """(thread id, its LangGraph checkpoints, its last put in ms) of each
    thread with checkpoints, the latest put first."""
    rows = []
    for member, score in await client.zrevrange(K.checkpoint_threads(ns), 0, -1,
                                                withscores=True):
        thread = member.decode(errors="replace")
        namespaces = await client.zrange(K.checkpoint_namespaces(ns, thread), 0, -1)
        pipe = client.pipeline(transaction=False)
        for cns in namespaces:
            pipe.zcard(K.checkpoint_ids(ns, thread, cns.decode(errors="replace")))
        count = sum(await pipe.execute()) if namespaces else 0
        rows.append((thread, int(count), int(score)))
    return rows


async def _threads(client: Any, ns: str) -> tuple[int, int]:
    """(threads, their events)."""
    threads = [t.decode() for t in await client.zrange(K.threads(ns), 0, -1)]
    pipe = client.pipeline(transaction=False)
    for thread in threads:
        pipe.xlen(K.thread_events(ns, thread))
    return len(threads), (sum(await pipe.execute()) if threads else 0)


async def memory_users(client: Any, ns: str) -> list[str]:
    """The users in the namespace's registry of users with long-term
    memories (SHARED_USER for the shared ones; a byte that is not UTF-8,
    a raw write, as ``\\xff``)."""
    return [user.decode("utf-8", "backslashreplace")
            for user in await client.zrange(K.memory_users(ns), 0, -1)]


async def memory_counts(client: Any, ns: str, users: Sequence[str]) -> list[int]:
    """How many long-term memories each of ``users`` has."""
    pipe = client.pipeline(transaction=False)
    for user in users:
        pipe.zcard(K.memories(ns, user))
    return [int(count) for count in await pipe.execute()] if users else []


async def _memories(client: Any, ns: str) -> int:
    """Long-term memories of every user (by SCAN, or from the users registry)."""
    try:
        users = [K.user_of(ns, key) for key in await scan_keys(client, K.memories_pattern(ns))]
    except NoPermissionError:
        users = await memory_users(client, ns)
    return sum(await memory_counts(client, ns, users))


async def _feed(client: Any, ns: str) -> dict[str, Any]:
    oldest = await client.xrange(K.feed(ns), "-", "+", count=1)
    return {"length": int(await client.xlen(K.feed(ns))),
            "oldest_sequence": int(oldest[0][0].split(b"-")[0]) if oldest else None,
            "last_sequence": int(await client.get(K.sequence(ns)) or 0)}


async def _keys_and_memory(client: Any, ns: str) -> tuple[int, int | None]:
    keys = await scan_keys(client, K.pattern(ns))
    return len(keys), await _memory_used(client, keys)


PARTS = 9
"""The parts of :func:`namespace_stats`, each read (or refused) alone."""

_REFUSED_COMMAND = re.compile(r"to run the '([^']+)' command")


def _refused(exc: NoPermissionError) -> str:
    """What the server refused, in a few words: the command, or a key."""
    found = _REFUSED_COMMAND.search(str(exc))
    return found.group(1).upper() if found else "its keys"


async def namespace_stats(client: Redis, ns: str) -> dict[str, Any]:
    """Counts, feed bounds, index sizes and memory used of namespace ``ns``.

    What this user may not read is None, and ``unreadable`` says what the
    server refused, per part (a namespace role may not SCAN or list the
    indexes; a worker reads neither the feed nor threads)."""
    raw: Any = client
    now_ms = time.time_ns() // 1_000_000
    unreadable: dict[str, str] = {}

    async def part(name: str, read: Awaitable[T]) -> T | None:
        try:
            return await read
        except NoPermissionError as exc:
            unreadable[name] = _refused(exc)
            return None

    values = await part("values", _live_names(raw, ns, "value", now_ms))
    vectors = await part("vectors", _live_names(raw, ns, "vector", now_ms))
    sessions = await part("sessions", raw.zcard(K.sessions(ns)))
    threads = await part("threads", _threads(raw, ns))
    graphs = await part("LangGraph checkpoints", checkpoint_threads(raw, ns))
    memories = await part("long-term memories", _memories(raw, ns))
    feed = await part("feed", _feed(raw, ns))
    indexes = await part("indexes", _indexes(raw, ns))
    keys = await part("keys and memory", _keys_and_memory(raw, ns))
    return {
        "namespace": ns,
        "value_keys": values and values[0],
        "value_scopes": values and values[1],
        "vector_keys": vectors and vectors[0],
        "vector_scopes": vectors and vectors[1],
        "sessions": None if sessions is None else int(sessions),
        "threads": threads and threads[0],
        "thread_events": threads and int(threads[1]),
        "langgraph_threads": None if graphs is None else len(graphs),
        "langgraph_checkpoints": None if graphs is None else sum(row[1] for row in graphs),
        "long_term_memories": memories,
        "feed": feed,
        "indexes": indexes,
        "keys": keys and keys[0],
        "memory_bytes": keys and keys[1],
        "unreadable": unreadable,
    }


async def scope_counts(client: Any, ns: str) -> list[dict[str, Any]]:
    """Each scope of ``ns`` holding live keys, from the scopes registry:
    ``scope``, ``scope_id``, ``values``, ``vectors``; sorted."""
    now_ms = time.time_ns() // 1_000_000
    scopes = sorted({(scope, sid) for _, scope, sid in await _registry(client, ns)})
    values = await _listed(client, ns, "value", scopes, now_ms)
    vectors = await _listed(client, ns, "vector", scopes, now_ms)
    rows = []
    for (scope, sid), (listed, expired), (vlisted, vexpired) in zip(scopes, values, vectors,
                                                                     strict=True):
        if listed - expired or vlisted - vexpired:
            rows.append({"scope": scope, "scope_id": sid, "values": listed - expired,
                         "vectors": vlisted - vexpired})
    return rows
