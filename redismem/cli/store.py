"""``redismem threads`` and ``redismem ltm``: conversation threads and long-
term memories."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import click

from .. import keys as K
from ..types import RetentionPolicy
from .base import (
    emit,
    iso_ms,
    json_option,
    main,
    namespace_option,
    url_option,
    with_store,
)

if TYPE_CHECKING:
    from ..store import RedisMemoryStore


@main.group()
def threads() -> None:
    """Inspect, compact and delete conversation threads (MemoryStore events,
    LangGraph checkpoints)."""


@threads.command("list")
@url_option
@namespace_option
@json_option
@with_store
async def threads_list(store: RedisMemoryStore, as_json: bool) -> None:
    """Threads, latest first: MemoryStore threads with their event counts,
    and LangGraph threads with their checkpoint counts (a thread may be
    both)."""
    from ..stats import checkpoint_threads  # redis-py: imported when the command runs

    rows: dict[str, dict[str, Any]] = {}
    for thread, last in await store.list_threads():
        count = await store.memory.client.xlen(K.thread_events(store.namespace, thread))
        rows[thread] = {"thread_id": thread, "events": count, "last_event_ms": last,
                        "checkpoints": 0, "last_put_ms": None}
    for thread, count, last in await checkpoint_threads(store.memory.client, store.namespace):
        row = rows.setdefault(thread, {"thread_id": thread, "events": 0, "last_event_ms": None})
        row.update(checkpoints=count, last_put_ms=last)
    ordered = sorted(rows.values(), key=lambda r: -max(r["last_event_ms"] or 0,
                                                       r["last_put_ms"] or 0))
    emit(ordered, as_json, lambda rs: "\n".join(_thread_line(r) for r in rs))


def _thread_line(row: dict[str, Any]) -> str:
    parts = [row["thread_id"]]
    if row["last_event_ms"] is not None:
        parts.append(f"{row['events']} events  last event at {iso_ms(row['last_event_ms'])}")
    if row["last_put_ms"] is not None:
        parts.append(f"{row['checkpoints']} LangGraph checkpoints  last put at "
                     f"{iso_ms(row['last_put_ms'])}")
    return "  ".join(parts)


@threads.command("delete")
@url_option
@namespace_option
@json_option
@click.argument("thread_id")
@with_store
async def threads_delete(store: RedisMemoryStore, thread_id: str, as_json: bool) -> None:
    """Delete THREAD_ID's events and its LangGraph checkpoints, writes and
    channel values (each announced in the change feed); its state, values
    of its session scope, stays."""
    from .. import lifecycle  # redis-py: imported when the command runs

    done = await lifecycle.delete_thread(store.memory, thread_id)
    emit(dataclasses.asdict(done), as_json,
         lambda d: f"deleted thread {d['thread_id']}: {d['events']} events, "
                   f"{d['checkpoints']} LangGraph checkpoints")


@threads.command("show")
@url_option
@namespace_option
@click.option("--limit", type=int, default=50, show_default=True, help="Most recent N events.")
@json_option
@click.argument("thread_id")
@with_store
async def threads_show(store: RedisMemoryStore, thread_id: str, limit: int,
                       as_json: bool) -> None:
    """The most recent events of THREAD_ID, oldest first."""
    events = [dataclasses.asdict(e) for e in await store.get_recent_events(thread_id, limit)]
    emit(events, as_json, lambda es: "\n".join(
        f"{iso_ms(e['timestamp'])} {e['type']} {e['id']} {json.dumps(e['payload'])}"
        for e in es))


@threads.command("compact")
@url_option
@namespace_option
@click.option("--max-events", type=int, default=500, show_default=True,
              help="Keep at most this many events (the --keep-type ones first).")
@click.option("--keep-type", "keep_types", multiple=True, help="Event type always kept first.")
@click.option("--scan-limit", type=int, default=20_000, show_default=True,
              help="Look at most at this many of the newest events.")
@json_option
@click.argument("thread_id")
@with_store
async def threads_compact(store: RedisMemoryStore, thread_id: str, max_events: int,
                          keep_types: tuple[str, ...], scan_limit: int, as_json: bool) -> None:
    """Apply a retention policy to THREAD_ID."""
    result = await store.compact_thread(
        thread_id, RetentionPolicy(max_events, list(keep_types), scan_limit))
    emit(dataclasses.asdict(result), as_json,
          lambda d: f"removed {d['events_removed']} events, kept {d['events_kept']}")


@main.group()
def ltm() -> None:
    """Inspect and search long-term memories."""


user_option = click.option("--user", "user_id", default=None,
                           help="User id (default: the shared memories).")


def _memory_line(memory: dict[str, Any], score: float | None = None) -> str:
    prefix = "" if score is None else f"{score:.4f} "
    return f"{prefix}{memory['id']} [{memory['scope']}] {memory['text']}"


@ltm.command("list")
@url_option
@namespace_option
@user_option
@click.option("--scope", "memory_scope", default=None, help="Only this memory scope.")
@click.option("--limit", type=int, default=100, show_default=True,
              help="At most this many memories.")
@json_option
@with_store
async def ltm_list(store: RedisMemoryStore, user_id: str | None, memory_scope: str | None,
                   limit: int, as_json: bool) -> None:
    """A user's memories, newest first."""
    found = await store.list_long_term_memories(user_id, scope=memory_scope, limit=limit)
    emit([dataclasses.asdict(m) for m in found], as_json,
          lambda ms: "\n".join(_memory_line(m) for m in ms))


@ltm.command("users")
@url_option
@namespace_option
@json_option
@with_store
async def ltm_users(store: RedisMemoryStore, as_json: bool) -> None:
    """The users that have long-term memories, with their counts (shared
    memories are listed with --user left out)."""
    from .. import stats  # redis-py: imported when the command runs

    client, ns = store.memory.client, store.namespace
    names = await stats.memory_users(client, ns)
    rows = [{"user_id": None if name == K.SHARED_USER else name, "memories": count}
            for name, count in zip(names, await stats.memory_counts(client, ns, names),
                                   strict=True) if count]
    emit(rows, as_json, lambda rs: "\n".join(
        f"{r['user_id'] or '(shared)'}  {r['memories']} memories" for r in rs))


@ltm.command("search")
@url_option
@namespace_option
@user_option
@click.option("--scope", "memory_scope", default=None, help="Only this memory scope.")
@click.option("--limit", type=int, default=10, show_default=True,
              help="At most this many matches.")
@json_option
@click.argument("query")
@with_store
async def ltm_search(store: RedisMemoryStore, user_id: str | None, memory_scope: str | None,
                     limit: int, query: str, as_json: bool) -> None:
    """Text search (BM25) over a user's memories."""
    found = await store.search_long_term_memory_text(user_id, query, scope=memory_scope,
                                                     limit=limit)
    emit([dataclasses.asdict(m) for m in found], as_json,
          lambda ms: "\n".join(_memory_line(m) for m in ms))
