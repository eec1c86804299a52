"""Thread events in the change feed: each appended event, a replace and a
compaction are announced in the same call (kind thread), so a watcher
follows a conversation as it moves; a retried append announces nothing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

import redismem
from redismem import MemoryEvent, RedisMemoryStore, RetentionPolicy

pytestmark = pytest.mark.on_cluster


@pytest.fixture
async def store(backend_url: str, ns: str) -> AsyncIterator[RedisMemoryStore]:
    async with RedisMemoryStore(backend_url, namespace=ns, principal="agent") as s:
        yield s


async def thread_events(store: RedisMemoryStore) -> list[redismem.MemoryChangeEvent]:
    return (await store.memory.changes(after=0, kind="thread")).items


async def test_each_appended_event_is_in_the_feed_with_its_type_and_payload(
        store: RedisMemoryStore) -> None:
    await store.memory.session("chat").set("note", 1)  # a value event in between
    await store.append_events("chat", [
        MemoryEvent("e1", "chat", "u1", "message", 10, {"text": "hello"}),
        MemoryEvent("e2", "chat", "u1", "tool_call", 11, {"big": "x" * 70_000}),
    ], atomic=False)
    await store.append_event(MemoryEvent("e1", "chat", "u1", "message", 10, {"text": "hello"}))
    events = await thread_events(store)
    assert [(e.kind, e.action, e.scope, e.scope_id, e.key, e.event_type, e.principal)
            for e in events] == [
        ("thread", "append", "session", "chat", "e1", "message", "agent"),
        ("thread", "append", "session", "chat", "e2", "tool_call", "agent")]  # the retry: none
    first, second = events
    assert (first.value, first.value_omitted) == ({"text": "hello"}, False)
    assert (second.value, second.value_omitted) == (None, True)  # over 65,536 bytes of JSON
    assert first.revision == first.sequence
    page = await store.memory.changes(after=0)
    assert [e.kind for e in page.items] == ["value", "thread", "thread"]
    assert [e.kind for e in (await store.memory.changes(after=0, kind="value")).items] == [
        "value"]


async def test_a_replace_and_a_compaction_are_announced(store: RedisMemoryStore) -> None:
    await store.append_events("t", [MemoryEvent(f"e{i}", "t", None, "message", i, {})
                                    for i in range(5)])
    await store.replace_thread_events("t", [MemoryEvent("n", "t", None, "message", 9, {})])
    await store.append_events("t", [MemoryEvent(f"f{i}", "t", None, "message", 10 + i, {})
                                    for i in range(3)])
    result = await store.compact_thread("t", RetentionPolicy(max_events_per_thread=1))
    assert result == redismem.CompactionResult(3, 1)
    await store.compact_thread("t", RetentionPolicy(max_events_per_thread=1))  # nothing to drop
    actions = [(e.action, e.key) for e in await thread_events(store)]
    assert actions == [*(("append", f"e{i}") for i in range(5)), ("replace", "t"),
                       *(("append", f"f{i}") for i in range(3)), ("drop", "t")]


async def test_a_watcher_follows_a_conversation(store: RedisMemoryStore) -> None:
    seen: list[str] = []

    async def follow() -> None:
        async for change in store.memory.watch("*", kind="thread", after=0):
            seen.append(change.key)
            if len(seen) == 2:
                return

    watcher = asyncio.create_task(follow())
    await store.append_event(MemoryEvent("a", "live", None, "message", 1, {"text": "hi"}))
    await store.append_event(MemoryEvent("b", "live", None, "message", 2, {"text": "yo"}))
    await asyncio.wait_for(watcher, 10)
    assert seen == ["a", "b"]
