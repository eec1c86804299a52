"""The end of data: forget a user (no key named with it remains, nothing of
others changes), drop a namespace (no key of it remains), delete a
thread; each an admin's where the issue says so; audit of a namespace that
does not exist."""

from __future__ import annotations

from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint

import redismem
from redismem import MemoryEvent, RedisMemoryStore, lifecycle, stats
from redismem import keys as K
from redismem.langgraph import RedismemSaver

from .test_cli import run_script


async def seed_users(url: str, ns: str) -> None:
    """Two users with memories (with embeddings), actor scopes with values
    and vectors, and events in a shared thread and a thread of their own."""
    for user in ("u1", "u2"):
        async with RedisMemoryStore(url, namespace=ns, principal=user) as store:
            for i in range(3):
                await store.upsert_long_term_memory(
                    redismem.LongTermMemory(f"m{i}", user, "facts", {}, f"{user} likes tea {i}",
                                            [], {}, 1, 1), embedding=[1.0, float(i), 0.5])
            actor = store.memory.actor()
            await actor.set("prefs", {"lang": "de", "user": user})
            await actor.set_vector("v", [0.5, 0.5, 1.0], {"user": user})
            await store.append_events("shared", [
                MemoryEvent(f"{user}-{i}", "shared", user, "message", 10 + i, {"t": user})
                for i in range(4)])
            await store.append_event(MemoryEvent(f"{user}-own", f"own-{user}", user, "message",
                                                 1, {}))
    async with RedisMemoryStore(url, namespace=ns, principal="bot") as store:
        await store.append_event(MemoryEvent("bot-1", "shared", None, "message", 99, {}))


async def raw_keys(client: Any, ns: str) -> list[str]:
    return sorted([k.decode() async for k in client.scan_iter(match=K.pattern(ns), count=1000)])


async def of_user(client: Any, ns: str, user: str) -> dict[str, Any]:
    """Everything of ``user``: its keys and what they hold, and its events."""
    found: dict[str, Any] = {}
    for key in await raw_keys(client, ns):
        if f":{user}:" in key or key.endswith(f":{user}"):
            kind = (await client.type(key)).decode()
            found[key] = (await client.hgetall(key) if kind == "hash" else
                          await client.zrange(key, 0, -1, withscores=True) if kind == "zset"
                          else kind)
    for thread in ("shared", f"own-{user}"):
        found[thread] = [e for _, e in await client.xrange(K.thread_events(ns, thread))
                         if f'"user_id":"{user}"'.encode() in e[b"e"]]
    found["registries"] = (await client.zscore(K.memory_users(ns), user),
                           await client.zscore(K.scopes(ns), f"val:actor:{user}"))
    return found


async def test_forget_user_leaves_no_key_of_the_user_and_changes_no_other(
        redis_url: str, ns: str) -> None:
    await seed_users(redis_url, ns)
    async with RedisMemoryStore(redis_url, namespace=ns, principal="admin") as store:
        client = store.memory.client
        other = await of_user(client, ns, "u2")
        assert any(":who:u1:" in k for k in await raw_keys(client, ns))  # request records
        done = await store.forget_user("u1")
        assert (done.memories, done.actor_keys, done.thread_events) == (3, 2, 5)
        assert not done.request_records_left  # this credential may delete them
        assert [k for k in await raw_keys(client, ns) if "u1" in k] == []
        assert await of_user(client, ns, "u1") == {
            "shared": [], "own-u1": [], "registries": (None, None)}
        assert await of_user(client, ns, "u2") == other
        assert [e.id for e in await store.get_recent_events("shared")] == [
            *(f"u2-{i}" for i in range(4)), "bot-1"]
        assert await store.search_long_term_memory_text("u1", "tea") == []
        assert len(await store.search_long_term_memory_text("u2", "tea")) == 3
        (event,) = [e for e in (await store.memory.changes(after=0)).items
                    if e.kind == "user"]
        assert (event.action, event.key, event.scope, event.value, event.principal) == (
            "forget", "u1", "actor", None, "admin")
        assert event.sequence == done.feed_sequence
        again = await store.forget_user("u1")  # nothing left: only the feed event
        assert (again.memories, again.thread_events, again.keys_deleted) == (0, 0, 0)
        with pytest.raises(redismem.InvalidArgumentError, match="shared memories"):
            await store.forget_user("_")
        with pytest.raises(redismem.InvalidIdError):
            await store.forget_user("a:b")


async def test_only_an_admin_forgets_a_user_or_drops_a_namespace(redis_server: Any) -> None:
    from .test_access import role_user

    for role in ("writer", "reader", "worker"):
        async with role_user(redis_server, role, "lc") as (ns, url, operator):
            await operator.set(K.sequence(ns), "1")  # the namespace exists
            async with await redismem.connect(url, namespace=ns) as mem:
                with pytest.raises(redismem.PermissionDeniedError,
                                   match=f"forgetting a user takes the admin role of "
                                         f"namespace {ns}"):
                    await lifecycle.forget_user(mem, "u1")
                with pytest.raises(redismem.PermissionDeniedError,
                                   match=f"dropping a namespace takes the admin role of "
                                         f"namespace {ns}"):
                    await lifecycle.drop_namespace(mem)
            assert await operator.get(K.sequence(ns)) == b"1"  # nothing deleted
    async with role_user(redis_server, "admin", "lc") as (ns, url, operator):
        await seed_users(redis_server.url, ns)
        async with await redismem.connect(url, namespace=ns) as mem:
            done = await lifecycle.forget_user(mem, "u1")
            assert done.memories == 3 and done.request_records_left  # u1's: an operator's
            dropped = await lifecycle.drop_namespace(mem)
            assert dropped.found_by == "registries"  # an admin may not SCAN
            left = await raw_keys(operator, ns)
            # only request records remain: other principals', which expire in minutes
            assert left and all(":who:" in k for k in left), left


async def test_drop_leaves_no_key_and_no_index_of_the_namespace(
        redis_url: str, ns: str) -> None:
    await seed_users(redis_url, ns)
    async with RedisMemoryStore(redis_url, namespace=ns) as store:
        client: Any = store.memory.client
        saver = RedismemSaver(store.memory)
        config: Any = {"configurable": {"thread_id": "g", "checkpoint_ns": ""}}
        await saver.aput(config, {**empty_checkpoint(), "channel_values": {"a": 1},
                                  "channel_versions": {"a": 1}}, {"run_id": "r"}, {"a": 1})
        async with store.memory.session("s").turn():
            pass
        other = await raw_keys(client, ns + "x")
        await store.memory.session("s").set("k", 1)
        before = await raw_keys(client, ns)
        indexes = {i.decode() for i in await client.execute_command("FT._LIST")}
        assert K.memory_text_index(ns) in indexes
        dry = await lifecycle.drop_namespace(store.memory, dry_run=True)
        assert dry.keys == len(before) and await raw_keys(client, ns) == before
        done = await lifecycle.drop_namespace(store.memory)
        assert (done.keys, done.found_by) == (len(before), "scan")
        assert await raw_keys(client, ns) == []
        left = {i.decode() for i in await client.execute_command("FT._LIST")}
        assert not any(i.startswith(K.base(ns)) for i in left)
        assert await raw_keys(client, ns + "x") == other


async def test_delete_thread_removes_its_events_and_checkpoints(redis_url: str,
                                                                  ns: str) -> None:
    async with RedisMemoryStore(redis_url, namespace=ns) as store:
        rmem = store.memory
        saver = RedismemSaver(rmem)
        config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        stored = await saver.aput(config, {**empty_checkpoint(), "channel_values": {"a": 1},
                                           "channel_versions": {"a": 1}}, {}, {"a": 1})
        await saver.aput_writes(stored, [("a", 2)], "task")
        await store.append_event(MemoryEvent("e", "t", None, "message", 1, {}))
        row = (await stats.namespace_stats(rmem.client, rmem.namespace))
        assert (row["threads"], row["langgraph_threads"], row["langgraph_checkpoints"]) == (
            1, 1, 1)
        done = await lifecycle.delete_thread(rmem, "t")
        assert (done.events, done.checkpoints) == (1, 1)
        assert await store.list_threads() == []
        assert await saver.aget_tuple(config) is None
        assert [k for k in await raw_keys(rmem.client, rmem.namespace)
                if ":thr:" in k or ":lg" in k] == []


def test_audit_of_a_namespace_that_does_not_exist_says_so(redis_url: str, ns: str) -> None:
    done = run_script("audit", "--namespace", ns, url=redis_url)
    assert done.returncode == 2
    assert f"namespace {ns} holds no key: there is no such namespace" in done.stderr
