"""The MemoryStore protocol: every example of the agent-framework reference."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import AsyncIterator

import numpy as np
import pytest

import redismem
from redismem import LongTermMemory, MemoryEvent, RedisMemoryStore, RetentionPolicy
from redismem import keys as K
from redismem.records import long_term_memory, memory_event

from .helpers import snapshot

pytestmark = pytest.mark.on_cluster


@pytest.fixture
async def store(backend_url: str, ns: str) -> AsyncIterator[RedisMemoryStore]:
    async with RedisMemoryStore(backend_url, namespace=ns, principal="runner") as s:
        yield s


def event(thread: str, i: int, type: str = "message", ts: int | None = None,
          **payload: object) -> MemoryEvent:
    return MemoryEvent(id=f"{thread}-e{i}", thread_id=thread, user_id="u1", type=type,
                       timestamp=1_000_000 + i if ts is None else ts,
                       payload={"i": i, **payload}, tags=[])


def ltm(mid: str, text: str, *, user: str | None = "user-123", scope: str = "knowledge",
        updated: int = 1) -> LongTermMemory:
    return LongTermMemory(id=mid, user_id=user, scope=scope, data={"n": mid}, text=text,
                          tags=["t"], metadata={}, created_at=1, updated_at=updated)


async def test_setup_and_close_are_idempotent(store: RedisMemoryStore) -> None:
    await store.setup()
    assert store.capabilities == redismem.MemoryCapabilities(True, True, True, True)
    other = RedisMemoryStore("memory://")
    await other.close()
    await other.setup()
    await other.close()
    await other.close()
    with pytest.raises(RuntimeError, match="setup"):
        other.memory  # noqa: B018


async def test_multi_turn_thread(store: RedisMemoryStore) -> None:
    thread = "session-42"
    turns = [("user", "What are generators?"), ("assistant", "Functions that yield."),
             ("user", "Show me an example"), ("assistant", "def gen(): yield 1")]
    for i, (role, text) in enumerate(turns):
        await store.append_event(event(thread, i, role=role, text=text))
    recent = await store.get_recent_events(thread, limit=50)
    assert [(e.payload["role"], e.payload["text"]) for e in recent] == turns
    assert [e.id for e in await store.get_recent_events(thread, limit=2)] == [
        "session-42-e2", "session-42-e3"]
    since = await store.get_events_since(thread, since_ms=1_000_002)
    assert [e.id for e in since] == ["session-42-e2", "session-42-e3"]
    assert await store.get_recent_events("other-thread") == []
    await store.append_event(event(thread, 0))  # a retried append is not duplicated
    assert len(await store.get_recent_events(thread)) == 4
    # ... and does not move the thread back in time
    assert await store.list_threads() == [(thread, recent[-1].timestamp)]


async def test_events_since_with_out_of_order_timestamps(store: RedisMemoryStore) -> None:
    stamps = [100, 105, 103, 110, 104]
    await store.append_events("t", [event("t", i, ts=ts) for i, ts in enumerate(stamps)])
    found = await store.get_events_since("t", since_ms=104)
    assert [e.timestamp for e in found] == [105, 110, 104]  # append order, all qualifying
    assert [e.timestamp for e in await store.get_events_since("t", 0, limit=2)] == [100, 103]


async def test_resume_from_checkpoint(store: RedisMemoryStore) -> None:
    thread, run = "session-7", "run-1"
    for step in range(3):
        await store.put_state(thread, f"checkpoint:{run}:{step}",
                              {"step": step, "messages": step * 2, "pending_tool": None})
        await store.put_state(thread, f"checkpoint_latest:{run}", f"checkpoint:{run}:{step}")
    await store.put_state(thread, f"effect:{run}:tool-1", {"result": "done"})
    # the run is interrupted; a new worker resumes from the latest pointer
    pointer = await store.get_state(thread, f"checkpoint_latest:{run}")
    assert pointer == f"checkpoint:{run}:2"
    assert await store.get_state(thread, pointer) == {"step": 2, "messages": 4,
                                                     "pending_tool": None}
    assert await store.get_state(thread, f"effect:{run}:tool-1") == {"result": "done"}
    assert sorted(await store.list_state(thread, prefix="checkpoint:")) == [
        f"checkpoint:{run}:{i}" for i in range(3)]
    assert len(await store.list_state(thread)) == 5
    await store.delete_state(thread, f"checkpoint:{run}:0")
    await store.delete_state(thread, "missing")
    assert await store.get_state(thread, f"checkpoint:{run}:0") is None
    # state is revisioned memory of the session scope, with change events
    value = await store.memory.session(thread).get(f"checkpoint_latest:{run}")
    assert value.revision == 3
    kinds = [(e.key, e.action) for e in (await store.memory.changes()).items]
    assert (f"checkpoint:{run}:0", "delete") in kinds


async def test_compaction_keeps_protected_then_newest(store: RedisMemoryStore) -> None:
    thread = "long"
    types = ["message", "trace", "message", "tool", "trace", "message", "message", "trace",
             "message", "message"]
    await store.append_events(thread, [event(thread, i, t) for i, t in enumerate(types)])
    result = await store.compact_thread(thread, event_policy=RetentionPolicy(
        max_events_per_thread=5, keep_event_types=["trace"], scan_limit=20_000))
    assert (result.events_removed, result.events_kept) == (5, 5)
    kept = await store.get_recent_events(thread, limit=50)
    # the three traces (1, 4, 7), then the two newest others (8, 9), in order
    assert [int(e.id.rsplit("e", 1)[1]) for e in kept] == [1, 4, 7, 8, 9]
    assert [e.id for e in await store.get_events_since(thread, 0)] == [e.id for e in kept]
    # a removed id may be appended again
    await store.append_event(event(thread, 0))
    assert len(await store.get_recent_events(thread)) == 6


async def test_compaction_budget_and_scan_limit(store: RedisMemoryStore) -> None:
    await store.append_events("t", [event("t", i, "trace") for i in range(6)])
    result = await store.compact_thread("t", RetentionPolicy(2, ["trace"], 20_000))
    assert (result.events_removed, result.events_kept) == (4, 2)  # protected newest within budget
    await store.append_events("u", [event("u", i) for i in range(10)])
    result = await store.compact_thread("u", RetentionPolicy(2, [], scan_limit=4))
    assert (result.events_removed, result.events_kept) == (2, 8)  # older 6 not examined
    assert [e.id for e in await store.get_recent_events("u", 3)] == ["u-e5", "u-e8", "u-e9"]


async def test_replace_thread_events(store: RedisMemoryStore) -> None:
    await store.append_events("t", [event("t", i) for i in range(5)])
    summary = MemoryEvent(id="summary", thread_id="t", user_id=None, type="summary",
                          timestamp=5, payload={"text": "five messages"}, tags=["compacted"])
    await store.replace_thread_events("t", [summary, event("t", 9)])
    assert [e.id for e in await store.get_recent_events("t")] == ["summary", "t-e9"]
    assert [e.id for e in await store.get_events_since("t", 0)] == ["summary", "t-e9"]
    await store.replace_thread_events("t", [])
    assert await store.get_recent_events("t") == []


async def test_long_term_memory(store: RedisMemoryStore) -> None:
    pref = LongTermMemory(id=redismem.new_id("ltm"), user_id="user-123", scope="preferences",
                          data={"theme": "dark", "language": "python"},
                          text="User prefers dark theme and Python examples",
                          tags=["preference", "ui"], metadata={}, created_at=redismem.now_ms(),
                          updated_at=redismem.now_ms())
    await store.upsert_long_term_memory(pref)
    assert pref.id.startswith("ltm_")
    facts = [ltm("k1", "Python generators yield values lazily", updated=10),
             ltm("k2", "Rust ownership and borrowing rules", updated=20),
             ltm("k3", "Generators in Python use the yield keyword; python python", updated=30),
             ltm("other", "python generators", user="someone-else", updated=40),
             ltm("shared", "python shared memory", user=None, updated=50)]
    for fact in facts:
        await store.upsert_long_term_memory(fact)
    listed = await store.list_long_term_memories("user-123", scope="preferences", limit=10)
    assert listed == [pref]
    newest = await store.list_long_term_memories("user-123", limit=2)
    assert [m.id for m in newest] in (["k3", "k2"], [pref.id, "k3"])
    assert [m.id for m in await store.list_long_term_memories("user-123", scope="knowledge")
            ] == ["k3", "k2", "k1"]
    assert [m.id for m in await store.list_long_term_memories(None)] == ["shared"]
    found = await store.search_long_term_memory_text("user-123", "python generators",
                                                     scope="knowledge", limit=10)
    assert [m.id for m in found][:2] == ["k3", "k1"] or [m.id for m in found][:2] == ["k1", "k3"]
    assert {m.id for m in found} == {"k1", "k3"}
    assert await store.search_long_term_memory_text("user-123", "borrowing") == [facts[1]]
    assert await store.search_long_term_memory_text("user-123", "   ") == []
    updated = ltm("k2", "Rust lifetimes", updated=60)
    await store.upsert_long_term_memory(updated)
    assert await store.search_long_term_memory_text("user-123", "borrowing") == []
    assert (await store.list_long_term_memories("user-123", scope="knowledge"))[0] == updated
    await store.delete_long_term_memory("user-123", "k2")
    await store.delete_long_term_memory("user-123", "never-there")
    assert "k2" not in {m.id for m in await store.list_long_term_memories("user-123")}


async def test_text_search_ranks_by_bm25(store: RedisMemoryStore) -> None:
    await store.upsert_long_term_memory(ltm("once", "redis stores data in memory " * 1))
    await store.upsert_long_term_memory(ltm("thrice", "redis redis redis cluster"))
    await store.upsert_long_term_memory(ltm("none", "postgres is a database"))
    found = await store.search_long_term_memory_text("user-123", "redis")
    assert [m.id for m in found] == ["thrice", "once"]


async def test_state_takes_compare_and_set_and_expiry(store: RedisMemoryStore) -> None:
    rev = await store.put_state("t1", "plan", {"step": 1}, ttl_seconds=3600)
    assert rev == redismem.MemoryValue({"step": 1}, 1, True)
    assert (await store.put_state("t1", "plan", {"step": 2}, expected_revision=rev)).revision == 2
    with pytest.raises(redismem.ConflictError):  # a second worker resuming from revision 1
        await store.put_state("t1", "plan", {"step": "forked"}, expected_revision=rev)
    assert await store.get_state("t1", "plan") == {"step": 2}
    key = K.value(store.namespace, "session", "t1", "plan")
    assert await store.memory.client.pttl(key) > 3_500_000  # the expiry was kept
    await store.put_state("t1", "plan", {"step": 3}, persist=True)
    assert await store.memory.client.pttl(key) == -1


async def test_an_upsert_keeps_the_newer_memory(store: RedisMemoryStore) -> None:
    """docs/python-api.md: "an upsert keeps the newer". A record older than
    the stored one is not written (False) and changes nothing; one as new or
    newer replaces it (True)."""
    assert await store.upsert_long_term_memory(ltm("m", "second", updated=20)) is True
    before = await snapshot(store.memory)
    assert await store.upsert_long_term_memory(ltm("m", "first", updated=10)) is False
    assert await snapshot(store.memory) == before
    assert [m.text for m in await store.list_long_term_memories("user-123")] == ["second"]
    assert await store.upsert_long_term_memory(ltm("m", "again", updated=20)) is True
    assert await store.upsert_long_term_memory(ltm("m", "third", updated=30)) is True
    assert [m.text for m in await store.list_long_term_memories("user-123")] == ["third"]


async def test_memories_take_compare_and_set(store: RedisMemoryStore) -> None:
    """Two workers read the same memory and both change it: with
    expected_updated_at the second is refused instead of overwriting the
    first's change blindly."""
    assert await store.upsert_long_term_memory(ltm("m", "v1", updated=10),
                                               expected_updated_at=0) is True
    with pytest.raises(redismem.ConflictError) as refused:
        await store.upsert_long_term_memory(ltm("m", "again", updated=11), expected_updated_at=0)
    assert (refused.value.expected, refused.value.actual, refused.value.key) == (0, 10, "m")
    read = (await store.list_long_term_memories("user-123"))[0]
    assert await store.upsert_long_term_memory(ltm("m", "worker A", updated=20),
                                               expected_updated_at=read.updated_at) is True
    before = await snapshot(store.memory)
    with pytest.raises(redismem.ConflictError, match="expected 10 actual 20"):
        await store.upsert_long_term_memory(ltm("m", "worker B", updated=21),
                                            expected_updated_at=read.updated_at)
    assert await snapshot(store.memory) == before
    assert [m.text for m in await store.list_long_term_memories("user-123")] == ["worker A"]
    with pytest.raises(redismem.InvalidRevisionError):
        await store.upsert_long_term_memory(ltm("m", "x", updated=30), expected_updated_at=-1)
    assert await snapshot(store.memory) == before


async def test_long_term_vector_search(store: RedisMemoryStore) -> None:
    rng = np.random.default_rng(1)
    vectors = {f"m{i}": rng.normal(size=8) for i in range(20)}
    for i, (mid, vec) in enumerate(vectors.items()):
        await store.upsert_long_term_memory(
            ltm(mid, f"memory {i}", scope="knowledge" if i % 2 else "history"), embedding=vec)
    await store.upsert_long_term_memory(ltm("no-vector", "plain"))
    query = vectors["m3"] + 0.01
    results = await store.search_long_term_memory_vector(
        user_id="user-123", query_embedding=query.tolist(), scope="knowledge", limit=5,
        min_score=0.7)
    assert results[0][0].id == "m3" and results[0][1] > 0.99
    assert all(score >= 0.7 for _, score in results)
    assert all(m.scope == "knowledge" for m, _ in results)
    everything = await store.search_long_term_memory_vector("user-123", query.tolist(), limit=25)
    assert len(everything) == 20
    assert [s for _, s in everything] == sorted((s for _, s in everything), reverse=True)
    with pytest.raises(redismem.InvalidVectorError, match="dimension 8"):
        await store.search_long_term_memory_vector("user-123", [1.0, 0.0])
    with pytest.raises(redismem.InvalidVectorError, match="dimension 8"):
        await store.upsert_long_term_memory(ltm("m0", "changed"), embedding=[1.0, 2.0])
    assert (await store.list_long_term_memories("user-123", scope="history"))[-1].text == (
        "memory 0")
    assert await store.search_long_term_memory_vector("nobody", query.tolist()) == []


async def test_searches_make_vanished_memory_indexes_again(server_url: str, ns: str) -> None:
    """The text and vector indexes of long-term memory, dropped under a live
    connection (as after FLUSHALL, or a slot moved to another cluster node),
    are made again by the next search, over the memories already there."""
    async with RedisMemoryStore(server_url, namespace=ns) as store:
        await store.upsert_long_term_memory(ltm("a", "redis cluster slots"), embedding=[1.0, 0.0])
        await store.upsert_long_term_memory(ltm("b", "postgres rows"), embedding=[0.0, 1.0])
        text = await store.search_long_term_memory_text("user-123", "redis")
        near = await store.search_long_term_memory_vector("user-123", [0.9, 0.1])
        for index in (K.memory_text_index(ns), K.memory_vector_index(ns, 2)):
            await store.memory.client.execute_command("FT.DROPINDEX", index)
        assert await store.search_long_term_memory_text("user-123", "redis") == text
        assert await store.search_long_term_memory_vector("user-123", [0.9, 0.1]) == near
        assert [m.id for m in text] == ["a"] and [m.id for m, _ in near] == ["a", "b"]


class ListStore:
    """A custom backend that conforms to the protocol (the reference's example)."""

    capabilities = redismem.MemoryCapabilities(text_search=True, vector_search=False,
                                                atomic_upsert=True, ttl=False)


PROTOCOL = ["setup", "close", "append_event", "get_recent_events", "get_events_since",
            "put_state", "get_state", "list_state", "delete_state", "replace_thread_events",
            "upsert_long_term_memory", "delete_long_term_memory", "list_long_term_memories",
            "search_long_term_memory_text", "search_long_term_memory_vector"]


def test_protocol_conformance() -> None:
    import inspect

    for name in PROTOCOL:
        method = getattr(RedisMemoryStore, name)
        assert inspect.iscoroutinefunction(method), name
    sig = inspect.signature(RedisMemoryStore.get_recent_events)
    assert sig.parameters["limit"].default == 50
    assert inspect.signature(RedisMemoryStore.get_events_since).parameters["limit"].default == 500
    params = inspect.signature(RedisMemoryStore.list_long_term_memories).parameters
    assert params["scope"].kind is inspect.Parameter.KEYWORD_ONLY and params["limit"].default == 100
    assert inspect.signature(RedisMemoryStore.upsert_long_term_memory).parameters[
        "embedding"].kind is inspect.Parameter.KEYWORD_ONLY
    assert ListStore.capabilities.vector_search is False


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.append_event(MemoryEvent("", "t", None, "m", 1, {})),
         redismem.InvalidEventError, "event id"),
        (lambda s: s.append_event(MemoryEvent("e", "t", None, "m", -1, {})),
         redismem.InvalidEventError, "timestamp"),
        (lambda s: s.append_event(MemoryEvent("e", "t", None, "m", 1, {"x": object()})),
         redismem.InvalidEventError, "JSON"),
        (lambda s: s.append_event(MemoryEvent("e", "t", None, "m", 1, float("nan"))),
         redismem.InvalidEventError, "JSON"),
        (lambda s: s.append_event(MemoryEvent("e", "t", None, "", 1, {})),
         redismem.InvalidEventError, "event type"),
        (lambda s: s.append_event(MemoryEvent("e", "a:b", None, "m", 1, {})),
         redismem.InvalidIdError, "thread id"),
        (lambda s: s.append_event(MemoryEvent("e", "t", None, "m", 1, {}, tags="x")),  # type: ignore[arg-type]
         redismem.InvalidEventError, "tags"),
        (lambda s: s.append_events("t", [MemoryEvent("e", "u", None, "m", 1, {})]),
         redismem.InvalidEventError, "belongs to thread"),
        (lambda s: s.get_recent_events("t", limit=-1), redismem.InvalidArgumentError, "limit"),
        (lambda s: s.get_recent_events("t", limit=0), redismem.InvalidArgumentError, "limit"),
        (lambda s: s.get_events_since("t", -5), redismem.InvalidArgumentError, "since_ms"),
        (lambda s: s.get_events_since("", 0), redismem.InvalidIdError, "thread id"),
        (lambda s: s.compact_thread("t", RetentionPolicy(-1)), redismem.InvalidArgumentError,
         "max_events"),
        (lambda s: s.compact_thread("t", RetentionPolicy(5, [], 0)),
         redismem.InvalidArgumentError, "scan_limit"),
        (lambda s: s.upsert_long_term_memory(ltm("", "x")), redismem.InvalidKeyError,
         "non-empty"),
        (lambda s: s.upsert_long_term_memory(ltm("m", "x", user="_")),
         redismem.InvalidMemoryError, "reserved"),
        (lambda s: s.upsert_long_term_memory(ltm("m", "x", scope="")),
         redismem.InvalidMemoryError, "scope"),
        (lambda s: s.upsert_long_term_memory(ltm("m", "x"), embedding=[0.0, 0.0]),
         redismem.InvalidVectorError, "zero"),
        (lambda s: s.list_long_term_memories("user-123", limit=-3),
         redismem.InvalidArgumentError, "limit"),
        (lambda s: s.search_long_term_memory_vector("user-123", [1.0], limit=0),
         redismem.InvalidArgumentError, "top_k"),
        (lambda s: s.search_long_term_memory_text("user-123", None),
         redismem.InvalidArgumentError, "query"),
    ],
)
async def test_bad_input_changes_nothing(store: RedisMemoryStore, call: object,
                                         error: type[Exception], message: str) -> None:
    await store.append_event(event("t", 1))
    await store.upsert_long_term_memory(ltm("keep", "kept"), embedding=[1.0, 0.0])
    before = await snapshot(store.memory)
    with pytest.raises(error, match=message):
        await call(store)  # type: ignore[operator]
    assert await snapshot(store.memory) == before


def test_unknown_fields_are_rejected() -> None:
    with pytest.raises(redismem.InvalidEventError, match=r"unknown fields.*colour"):
        memory_event({"id": "e", "thread_id": "t", "user_id": None, "type": "m",
                      "timestamp": 1, "payload": {}, "tags": [], "colour": "red"})
    with pytest.raises(redismem.InvalidEventError, match="timestamp"):
        memory_event({"id": "e", "thread_id": "t", "user_id": None, "type": "m"})
    with pytest.raises(redismem.InvalidMemoryError, match=r"unknown fields.*vibe"):
        long_term_memory({**ltm("m", "x").__dict__, "vibe": 1})
    assert long_term_memory(ltm("m", "x").__dict__) == ltm("m", "x")


def thread_call_keys(ns: str, principal: str = "p") -> list[str]:
    """The keys redismem_append_events takes: the thread's, its session's
    turn, the feed's counters and the principal's key."""
    return [K.thread_events(ns, "t"), K.thread_times(ns, "t"), K.thread_ids(ns, "t"),
            K.threads(ns), K.turn(ns, "session", "t"), K.sequence(ns), K.feed_size(ns),
            K.principal(ns, principal)]


async def test_raw_fcall_rejects_bad_events(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    keys = thread_call_keys(ns)
    good = ('{"id":"e","payload":{},"tags":[],"thread_id":"t","timestamp":1,"type":"m",'
            '"user_id":null}')
    cases = [
        (good.replace('"tags":[]', '"tags":[],"extra":1'), "unknown field"),
        (good.replace('"timestamp":1', '"timestamp":-1'), "timestamp"),
        (good.replace('"timestamp":1', '"timestamp":1.5'), "timestamp"),
        (good.replace('"thread_id":"t"', '"thread_id":"x"'), "belongs to thread"),
        (good.replace('"id":"e",', ''), "lacks the field"),
        ("not json", "not strict JSON"),
        ("[1]", "JSON object"),
    ]
    before = await snapshot(rmem)
    for body, message in cases:
        with pytest.raises(Exception, match=message) as info:
            await rmem.client.execute_command("FCALL", "redismem_append_events", 8, *keys, ns,
                                              "t", "", "p", good, body)
        assert str(info.value).startswith("INVALID_EVENT")
        assert await snapshot(rmem) == before  # the good event before it was not written
    assert await rmem.client.execute_command("FCALL", "redismem_append_events", 8, *keys, ns,
                                             "t", "", "p", good, good) == [1, 0]
    before = await snapshot(rmem)
    for args, code in ((["0-1", "e", "0-2"], "INVALID_ARGUMENT"),
                       (["x-1", "e"], "INVALID_ARGUMENT"), (["1-1", "bad\x00id"], "INVALID_KEY"),
                       (["1-1", "e"] * 1001, "INVALID")):
        with pytest.raises(Exception, match=f"^{code}"):
            await rmem.client.execute_command("FCALL", "redismem_drop_events", 6, *keys[:3],
                                              *keys[5:], ns, "t", "p", *args)
    assert await snapshot(rmem) == before


async def test_eight_concurrent_writers(rmem: redismem.Memory, server_url: str) -> None:
    thread = "busy"

    async def writer(w: int) -> None:
        async with RedisMemoryStore(server_url, namespace=rmem.namespace) as s:
            for i in range(500):
                await s.append_event(MemoryEvent(f"w{w}-{i}", thread, None, "message",
                                                 redismem.now_ms(), {"w": w, "i": i}))

    await asyncio.gather(*(writer(w) for w in range(8)))
    async with RedisMemoryStore(server_url, namespace=rmem.namespace) as s:
        events = await s.get_recent_events(thread, limit=5000)
        assert len(events) == 4000 and len({e.id for e in events}) == 4000
        for w in range(8):  # each writer's events in its own order
            assert [e.payload["i"] for e in events if e.payload["w"] == w] == list(range(500))
        since = await s.get_events_since(thread, 0, limit=5000)
        assert [e.id for e in since] == [e.id for e in events]  # append order
        cutoff = events[2000].timestamp
        later = await s.get_events_since(thread, cutoff, limit=5000)
        assert [e.id for e in later] == [e.id for e in events if e.timestamp >= cutoff]


async def test_store_from_env(monkeypatch: pytest.MonkeyPatch, server_url: str,
                              caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setenv("REDISMEM_BACKEND", "redis")
    monkeypatch.setenv("REDISMEM_URL", server_url)
    store = await redismem.store_from_env(namespace="env1")
    assert store.memory.capabilities.backend == "redis"
    await store.close()
    monkeypatch.setenv("REDISMEM_BACKEND", "memory")
    store = await redismem.store_from_env()
    assert store.memory.capabilities.backend == "memory"
    await store.close()
    monkeypatch.setenv("REDISMEM_BACKEND", "redis")
    monkeypatch.setenv("REDISMEM_URL", "redis://127.0.0.1:1/0")
    monkeypatch.setenv("REDISMEM_CONNECT_TIMEOUT", "0")  # one attempt, not 10 s of them
    with caplog.at_level(logging.WARNING, logger="redismem"):
        store = await redismem.store_from_env()
    assert store.memory.capabilities.backend == "memory"
    assert "falling back to memory://" in caplog.text
    await store.append_event(event("t", 1))
    await store.close()
    monkeypatch.setenv("REDISMEM_BACKEND", "sqlite")
    with pytest.raises(ValueError, match="REDISMEM_BACKEND"):
        await redismem.store_from_env()


def test_event_json_carries_every_field() -> None:
    import dataclasses
    import json

    from redismem.records import event_json

    sample = event("t", 3, tag="x")
    assert json.loads(event_json(sample)) == dataclasses.asdict(sample)


async def test_dropping_an_old_entry_keeps_the_id_of_its_reappended_event(
        store: RedisMemoryStore) -> None:
    """Compaction decides from a read and drops in slices: an event replaced
    meanwhile keeps its id in the index (a retried append stays idempotent)."""
    event = MemoryEvent("e1", "t", None, "message", 1, {})
    await store.append_event(event)
    [(old_id, _)] = await store.memory.client.xrange(K.thread_events(store.namespace, "t"))
    await asyncio.sleep(0.005)  # stream ids are <ms>-<n>: another millisecond, another id
    await store.replace_thread_events("t", [event])  # e1 again, at a new stream id
    assert await store.memory._conn.functions.drop_events(
        store.namespace, "t", "p", [(old_id.decode(), "e1")]) == (0, 1)
    await store.append_event(event)  # still known: not appended twice
    assert [e.id for e in await store.get_recent_events("t")] == ["e1"]


async def test_compaction_ignores_entries_it_cannot_read(store: RedisMemoryStore) -> None:
    client, ns = store.memory.client, store.namespace
    await store.append_events("t", [MemoryEvent(f"e{i}", "t", None, "message", i, {})
                                    for i in range(5)])
    await client.xadd(K.thread_events(ns, "t"), {"e": b"\xff not json"})
    result = await store.compact_thread("t", RetentionPolicy(2))
    assert result == redismem.CompactionResult(4, 2)


async def test_events_in_any_strict_json_form_are_read_alike(rmem: redismem.Memory) -> None:
    """The Lua check records an event's fields while it checks the text: a
    raw FCALL may send whitespace, escaped names and nested values anywhere."""
    ns = rmem.namespace
    keys = thread_call_keys(ns)
    bodies = [
        ' { "id" : "a" , "payload" : { "x" : [ 1 , { } , [ ] ] } , "tags" : [ ] ,'
        ' "thread_id" : "t" , "timestamp" : 5 , "type" : "m" , "user_id" : null } ',
        '{"\\u0069d":"b","payload":[],"tags":["x","y"],"thread_id":"\\u0074",'
        '"timestamp":6,"type":"m\\u00e9","user_id":"u"}',
        '{"type":"m","user_id":null,"timestamp":7,"thread_id":"t","tags":[],'
        '"payload":"s","id":"c","id":"d"}',
    ]
    flags = await rmem.client.execute_command("FCALL", "redismem_append_events", 8, *keys, ns,
                                              "t", "", "p", *bodies)
    assert flags == [1, 1, 1]
    events = await rmem.client.execute_command("FCALL_RO", "redismem_events_since", 2,
                                               *keys[:2], ns, "t", "6", "10")
    assert [json.loads(e)["timestamp"] for e in events[1::2]] == [6, 7]
    ids = await rmem.client.hkeys(K.thread_ids(ns, "t"))
    assert sorted(ids) == [b"a", b"b", b"d"]  # the last of a repeated name wins
    for bad in ('{"id":"e","payload":{},"tags":{},"thread_id":"t","timestamp":1,"type":"m",'
                '"user_id":null}',
                '{"id":"e","payload":{},"tags":[1],"thread_id":"t","timestamp":1,"type":"m",'
                '"user_id":null}',
                '{"id":"e","payload":{},"tags":[],"thread_id":"t","timestamp":"1","type":"m",'
                '"user_id":null}'):
        with pytest.raises(Exception, match=r"^INVALID_EVENT"):
            await rmem.client.execute_command("FCALL", "redismem_append_events", 8, *keys, ns,
                                              "t", "", "p", bad)


async def test_long_reads_come_in_bounded_pages(store: RedisMemoryStore) -> None:
    """A read of more events than one call may return (1,000, and 4 MiB of
    JSON) is paged by the store, so no call holds the server for long; the
    pages join into exactly what one read would have returned."""
    events = [event("long", i, ts=5_000_000 - i if i % 7 == 0 else None) for i in range(2500)]
    await store.append_events("long", events, atomic=False)
    recent = await store.get_recent_events("long", 2500)
    assert [e.id for e in recent] == [e.id for e in events]
    assert [e.id for e in await store.get_recent_events("long", 1500)] == [
        e.id for e in events[1000:]]
    since = await store.get_events_since("long", 1_000_100, limit=2400)
    qualifying = [e for e in events if e.timestamp >= 1_000_100]
    chosen = {e.id for e in sorted(qualifying, key=lambda e: e.timestamp)[:2400]}
    assert [e.id for e in since] == [e.id for e in events if e.id in chosen]
    # big events: a page stops at 4 MiB of JSON, the store goes on
    big = [event("big", i, blob="x" * 120_000) for i in range(40)]
    for item in big:
        await store.append_event(item)
    assert [e.id for e in await store.get_recent_events("big", 40)] == [e.id for e in big]
    assert [e.id for e in await store.get_events_since("big", 0, 40)] == [e.id for e in big]


async def test_one_read_call_is_bounded(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    keys = [K.thread_events(ns, "t"), K.thread_times(ns, "t")]
    calls = (("redismem_recent_events", [keys[0]], [ns, "t", "100000"]),
             ("redismem_events_since", keys, [ns, "t", "0", "100000"]))
    for name, call_keys, args in calls:
        with pytest.raises(Exception, match=r"^INVALID_ARGUMENT limit must be"):
            await rmem.client.execute_command("FCALL_RO", name, len(call_keys), *call_keys,
                                              *args)


async def test_a_raw_thread_entry_is_a_corrupt_entry_error_naming_it(
        rmem: redismem.Memory, server_url: str) -> None:
    """A writer's raw XADD to a thread (not JSON, no 'e' field, not an
    object) makes the reads that meet it raise CorruptEntryError naming the
    stream and entry, never a JSONDecodeError or KeyError."""
    ns = rmem.namespace
    async with RedisMemoryStore(server_url, namespace=ns) as store:
        await store.append_event(event("t", 1))
        for fields in ({"e": "notjson"}, {"x": "y"}, {"e": "[1, 2]"}, {"e": b"\xff\xfe"}):
            raw_id = (await rmem.client.xadd(K.thread_events(ns, "t"), fields)).decode()
            await rmem.client.zadd(K.thread_times(ns, "t"), {raw_id: 5_000_000})
            for read in (store.get_recent_events("t", 10), store.get_events_since("t", 0, 10)):
                with pytest.raises(redismem.CorruptEntryError) as caught:
                    await read
                assert caught.value.key == f"{K.thread_events(ns, 't')} {raw_id}"
            await rmem.client.xdel(K.thread_events(ns, "t"), raw_id)
            await rmem.client.zrem(K.thread_times(ns, "t"), raw_id)
        assert [e.id for e in await store.get_recent_events("t", 10)] == ["t-e1"]


@pytest.mark.parametrize(("field", "raw"), [("rec", b"garbage"), ("rec", b"[1]"),
                                            ("rec", b"\xff"), ("emb", b"\x00\x00\x80")])
async def test_a_raw_long_term_memory_field_is_skipped_and_audited(
        rmem: redismem.Memory, server_url: str, field: str, raw: bytes) -> None:
    """A writer's raw HSET of a memory's record (not JSON, not an object,
    not UTF-8) or embedding (3 bytes): listing, text search, vector search
    go on without it, export stops naming it (or carries it raw), and audit
    names it; before, each raised a
    JSONDecodeError or numpy's ValueError."""
    import io

    from redismem import transfer
    from redismem.audit import audit

    ns = rmem.namespace
    async with RedisMemoryStore(server_url, namespace=ns) as store:
        await store.upsert_long_term_memory(ltm("good", "redis notes"), embedding=[1.0, 0.0])
        await store.upsert_long_term_memory(ltm("bad", "redis lua"), embedding=[0.0, 1.0])
        await rmem.client.hset(K.memory(ns, "user-123", "bad"), field, raw)
        assert sorted(m.id for m in await store.list_long_term_memories("user-123")) == (
            ["good"] if field == "rec" else ["bad", "good"])
        if field == "rec":
            assert [m.id for m in await store.search_long_term_memory_text(
                "user-123", "redis")] == ["good"]
            assert [m.id for m, _ in await store.search_long_term_memory_vector(
                "user-123", [0.0, 1.0])] == ["good"]
        with pytest.raises(redismem.CorruptEntryError, match="user-123:bad") as info:
            await transfer.export_namespace(rmem, io.StringIO().write)
        assert info.value.key == K.memory(ns, "user-123", "bad")
        out = io.StringIO()  # or, asked to, it carries the bytes
        await transfer.export_namespace(rmem, out.write, keep_raw=True)
        records = list(map(json.loads, out.getvalue().splitlines()))
        assert [r["memory"]["id"] for r in records if r["type"] == "memory"] == ["good"]
        carried = {base64.b64decode(r["key"]): r for r in records if r["type"] == "raw"}
        assert set(carried) == {b"ltm:user-123:bad", b"ltmz:user-123"}
        assert base64.b64decode(carried[b"ltm:user-123:bad"]["hash"][
            base64.b64encode(field.encode()).decode()]) == raw
        assert [f.key async for f in audit(rmem)] == [K.memory(ns, "user-123", "bad")]


async def test_an_append_or_replace_call_holds_at_most_500_events_and_max_call_bytes(
        store: RedisMemoryStore) -> None:
    """One call of 8,000 small events held the server 370 ms: an atomic
    append or a replace carries at most 500 events (and max_call_bytes),
    else it is refused with nothing written; ``atomic=False`` appends a
    longer list in calls within both bounds, in order, and a retry of it
    skips what was appended."""
    many = [event("t", i) for i in range(2500)]
    for call in (store.append_events("t", many), store.replace_thread_events("t", many)):
        with pytest.raises(redismem.InvalidArgumentError, match="at most 500 events per call"):
            await call
    assert await store.get_recent_events("t", 10) == []
    keys = thread_call_keys(store.namespace)
    bodies = [redismem.records.event_json(e) for e in many[:501]]
    with pytest.raises(Exception, match=r"^INVALID_ARGUMENT at most 500 events per call"):
        await store.memory.client.fcall("redismem_append_events", len(keys), *keys,
                                        store.namespace, "t", "", "p", *bodies)
    big = [event("b", i, text="x" * 50_000) for i in range(5)]  # 250 kB > max_call_bytes
    with pytest.raises(redismem.RequestTooLargeError, match="max_call_bytes"):
        await store.append_events("b", big)
    assert await store.append_events("b", big, atomic=False) == 5
    assert await store.append_events("t", many, atomic=False) == 2500
    assert await store.append_events("t", many, atomic=False) == 0
    assert [e.id for e in await store.get_recent_events("t", 3000)] == [e.id for e in many]
    assert [e.id for e in await store.get_recent_events("b", 10)] == [e.id for e in big]
