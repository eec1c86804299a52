"""Scoped revisioned memory: runs on the real server and on memory://."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import redismem
from redismem import demo, limits
from redismem import keys as K
from redismem._connection import Connection
from redismem.functions import request_bytes

from .helpers import revisions_of

pytestmark = pytest.mark.on_cluster


async def test_sessions_example(mem: redismem.Memory) -> None:
    lines: list[str] = []
    result = await demo.run(mem, say=lines.append)
    assert result["revision"] == 3
    assert result["notes"] == ["pack passports", "book airport transfer", "check visa rules"]
    assert result["other"] == ["buy sunscreen"]
    assert result["forgot"] is True
    assert result["after"] == redismem.MemoryValue(None, 0, False)
    assert (await mem.actor().get("turns")).value == 4
    assert (await mem.global_scope().get("all_notes")).value == 4
    assert any("fails: submit this traversal with a session_id" in line for line in lines)
    with pytest.raises(ValueError, match="session_id"):
        await demo.note(mem, "no session")


async def test_session_required(mem: redismem.Memory) -> None:
    with pytest.raises(ValueError, match="a session id is needed"):
        mem.session()
    with pytest.raises(ValueError, match="a workflow root id is needed"):
        mem.workflow()


async def test_default_scope_selection(mem: redismem.Memory) -> None:
    assert mem.default().scope == "global"
    with redismem.workflow_scope("wf1"):
        assert (mem.default().scope, mem.default().scope_id) == ("workflow", "wf1")
        with redismem.session_scope("s1"):
            assert (mem.default().scope, mem.default().scope_id) == ("session", "s1")
            await mem.set("k", "in session")
        assert mem.default().scope == "workflow"
    assert mem.default().scope == "global"
    assert (await mem.session("s1").get("k")).value == "in session"
    assert (await mem.get("k")).found is False
    assert mem.actor().scope_id == "tester"
    assert mem.actor("bob").scope_id == "bob"


async def test_session_context_is_per_task(mem: redismem.Memory) -> None:
    async def worker(sid: str) -> str:
        async with redismem.session_scope(sid):
            await asyncio.sleep(0)
            await mem.update("n", lambda v: (v or 0) + 1)
            return mem.default().scope_id

    assert await asyncio.gather(worker("a"), worker("b")) == ["a", "b"]
    assert (await mem.session("a").get("n")).value == 1


async def test_create_session_is_idempotent(mem: redismem.Memory) -> None:
    sid = await mem.create_session("chat-1")
    assert sid == "chat-1"
    await mem.session(sid).set("notes", ["x"])
    assert await mem.create_session("chat-1") == "chat-1"
    assert (await mem.session(sid).get("notes")).value == ["x"]
    fresh = await mem.create_session()
    assert fresh != sid and (await mem.session(fresh).get("notes")).found is False


async def test_values_round_trip(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    values = [None, True, 0, -1.5, "tëxt ✓", [1, [2]], {"b": 1, "a": {"z": None}}, "x" * 10_000]
    for i, value in enumerate(values):
        assert (await scope.set(f"k{i}", value)).revision == 1
        assert await scope.get(f"k{i}") == redismem.MemoryValue(value, 1, True)
    stored = await mem.client.hget(K.value(mem.namespace, "global", "_", "k6"), "v")
    assert stored == b'{"a":{"z":null},"b":1}'  # canonical JSON


async def test_missing_key(mem: redismem.Memory) -> None:
    assert await mem.global_scope().get("nope") == redismem.MemoryValue(None, 0, False)


async def test_conflict(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert (await scope.set("k", 1)).revision == 1
    assert (await scope.set("k", 2, expected_revision=1)).revision == 2
    with pytest.raises(redismem.ConflictError) as info:
        await scope.set("k", 3, expected_revision=1)
    err = info.value
    assert (err.code, err.key, err.expected, err.actual) == ("revision_conflict", "k", 1, 2)
    assert await scope.get("k") == redismem.MemoryValue(2, 2, True)


async def test_set_many_takes_an_expected_revision_per_key(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert revisions_of(await scope.set_many({"a": 1, "b": 1})) == {"a": 1, "b": 1}
    assert revisions_of(await scope.set_many({"a": 2, "b": 2, "c": 2}, expected_revisions={
        "a": 1, "c": 0})) == {"a": 2, "b": 2, "c": 1}
    before = {k: v for k, v in (await scope.get_many(["a", "b", "c"])).items()}
    with pytest.raises(redismem.ConflictError) as stale:
        await scope.set_many({"a": 3, "b": 3}, expected_revisions={"b": 1})
    assert (stale.value.key, stale.value.expected, stale.value.actual) == ("b", 1, 2)
    assert await scope.get_many(["a", "b", "c"]) == before  # nothing of the call written
    with pytest.raises(redismem.InvalidArgumentError, match="not written"):
        await scope.set_many({"a": 3}, expected_revisions={"zz": 0})
    with pytest.raises(redismem.InvalidRevisionError):
        await scope.set_many({"a": 3}, expected_revisions={"a": -1})
    assert await scope.get_many(["a", "b", "c"]) == before


async def test_create_only(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert (await scope.set("k", "first", expected_revision=0)).revision == 1
    with pytest.raises(redismem.ConflictError) as info:
        await scope.set("k", "second", expected_revision=0)
    assert (info.value.expected, info.value.actual) == (0, 1)
    assert (await scope.get("k")).value == "first"


async def test_stale_revision_after_delete_and_recreate(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert (await scope.set("k", "a")).revision == 1
    assert await scope.delete("k") is True
    assert await scope.get("k") == redismem.MemoryValue(None, 0, False)
    recreated = await scope.set("k", "b", expected_revision=0)
    assert recreated.revision > 1  # revisions go on across the delete: no ABA
    with pytest.raises(redismem.ConflictError):
        await scope.set("k", "stale", expected_revision=1)
    with pytest.raises(redismem.ConflictError):
        await scope.delete("k", expected_revision=1)
    assert (await scope.get("k")).value == "b"


async def test_delete(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert await scope.delete("missing") is False
    await scope.set("k", 1)
    with pytest.raises(redismem.ConflictError):
        await scope.delete("k", expected_revision=5)
    assert await scope.delete("k", expected_revision=1) is True
    assert await scope.delete("k") is False
    assert await scope.list_keys() == []


async def test_scopes_are_isolated(mem: redismem.Memory) -> None:
    scopes = [mem.session("x"), mem.session("y"), mem.actor("x"), mem.workflow("x"),
              mem.global_scope()]
    for i, scope in enumerate(scopes):
        await scope.set("k", i)
    for i, scope in enumerate(scopes):
        assert await scope.get("k") == redismem.MemoryValue(i, 1, True)
        assert await scope.list_keys() == ["k"]


async def test_namespaces_are_isolated(mem: redismem.Memory) -> None:
    await mem.global_scope().set("k", "mine")
    conn = mem._conn
    other = redismem.Memory(Connection(conn.client, conn.functions, mem.namespace + "x", "p"),
                            mem.capabilities)  # same server, another namespace
    assert (await other.global_scope().get("k")).found is False
    assert await other.global_scope().list_keys() == []


async def test_get_many_and_set_many(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    written = await scope.set_many({"a": 1, "b": [2], "c": {"x": 3}})
    V = redismem.MemoryValue
    assert written == {"a": V(1, 1, True), "b": V([2], 1, True), "c": V({"x": 3}, 1, True)}
    assert revisions_of(await scope.set_many({"a": 10})) == {"a": 2}
    got = await scope.get_many(["a", "b", "missing", "a"])
    assert got == {"a": redismem.MemoryValue(10, 2, True), "b": redismem.MemoryValue([2], 1, True),
                   "missing": redismem.MemoryValue(None, 0, False)}
    assert await scope.get_many([]) == {}
    assert revisions_of(await scope.set_many({})) == {}


async def test_set_many_is_all_or_nothing(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    with pytest.raises(redismem.InvalidKeyError):
        await scope.set_many({"ok": 1, "bad\n": 2})
    oversized = "x" * (mem._conn.max_value_bytes + 1)
    with pytest.raises(redismem.ValueTooLargeError):
        await scope.set_many({"ok": 1, "big": oversized})
    assert await scope.list_keys() == []


async def test_update(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert (await scope.update("n", lambda v: (v or 0) + 1)).value == 1

    async def double(v: int) -> int:
        return v * 2

    assert (await scope.update("n", double)).value == 2
    assert await scope.get("n") == redismem.MemoryValue(2, 2, True)
    with pytest.raises(ValueError, match="attempts"):
        await scope.update("n", lambda v: v, attempts=0)


async def test_update_gives_up_after_attempts(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("n", 0)
    calls = 0

    async def interfere(v: int) -> int:
        nonlocal calls
        calls += 1
        await scope.set("n", 100 + calls)  # a concurrent writer wins every time
        return v + 1

    with pytest.raises(redismem.ConflictError) as info:
        await scope.update("n", interfere, attempts=3)
    assert calls == 3
    assert info.value.code == "revision_conflict"
    assert (await scope.get("n")).value == 103


async def test_concurrent_updates(mem: redismem.Memory) -> None:
    scope = mem.global_scope()

    async def worker() -> None:
        for _ in range(50):
            await scope.update("counter", lambda v: (v or 0) + 1, attempts=1000)

    await asyncio.gather(*(worker() for _ in range(16)))
    assert await scope.get("counter") == redismem.MemoryValue(800, 800, True)
    ids = [entry[0] for entry in await mem.client.xrange(K.feed(mem.namespace))]
    assert ids == [f"{n}-0".encode() for n in range(1, 801)]


def test_a_split_call_never_exceeds_max_call_bytes() -> None:
    """set_many(atomic=False) sends a call it did not count byte by byte only
    when a bound on its bytes is within max_call_bytes."""
    ns, principal, budget = "n" * 40, "p" * 40, 8192

    @settings(max_examples=100, deadline=None)
    @given(keys=st.lists(st.text(min_size=1, max_size=40), min_size=1, max_size=60, unique=True),
           value=st.builds(lambda char, n: char * n, st.sampled_from("aé中\U0001f600"),
                           st.integers(0, 400)),
           sid=st.sampled_from(["s", "é" * 40]))
    def check(memory: redismem.Memory, keys: list[str], value: str, sid: str) -> None:
        parts = memory.session(sid)._calls([(key, value, "") for key in keys], "value", 1000,
                                           False)
        for part in parts:
            names = [*K.scope_writes(ns, "value", "session", sid, principal),
                     *(K.entry(ns, "value", "session", sid, item[0]) for item in part)]
            args = [ns, "session", sid, str(limits.MAX_TTL_MS), principal, "x" * 16,
                    str(limits.MAX_REVISION), *(x for item in part for x in item)]
            assert len(part) == 1 or request_bytes(names, args) <= budget

    async def run() -> None:
        async with await redismem.connect("memory://", namespace=ns,
                                          principal=principal) as memory:
            memory._conn.functions.max_call_bytes = budget
            check(memory)

    asyncio.run(run())
