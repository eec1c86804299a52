"""redismem on a real Redis Cluster (3 primaries, 3 replicas) started by the
tests: the library on every primary, namespaces spread over the shards,
every call routed to the owner of its namespace's slot."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from redis.asyncio.cluster import RedisCluster
from redis.cluster import key_slot

import redismem
from redismem import keys as K
from redismem import lifecycle, turns
from redismem.langgraph import RedismemSaver, RedismemStore
from redismem.library import bundled, server_library, server_version
from redismem.repair import repair_feed
from redismem.store import RedisMemoryStore
from redismem.types import MemoryEvent

from .cluster import LocalCluster
from .helpers import REPO, revisions_of

pytestmark = pytest.mark.cluster


@pytest.fixture
def cluster(redis_cluster: LocalCluster) -> LocalCluster:
    return redis_cluster


@pytest.fixture(scope="module")
def _failover_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(tmp_path_factory.mktemp("failover")).start()
    try:
        yield local
    finally:
        local.stop()


@pytest.fixture
def failover_cluster(_failover_cluster: LocalCluster) -> LocalCluster:
    """A cluster of this module's own for the tests that kill its nodes:
    each test starts on a healthy cluster (any node a test before it
    killed is back, as a replica, and in sync)."""
    _failover_cluster.wait_healthy()
    return _failover_cluster


def owner(cluster: LocalCluster, ns: str) -> int:
    """The port of the primary holding namespace ``ns``'s slot."""
    slot = key_slot(K.feed(ns).encode())
    with cluster.client(cluster.ports[0]) as client:
        for low, high, primary, *_ in client.execute_command("CLUSTER", "SLOTS"):
            if low <= slot <= high:
                return int(primary[1])
    raise AssertionError(f"no node holds slot {slot}")


async def test_connect_loads_the_library_on_every_primary(cluster: LocalCluster) -> None:
    async with await redismem.connect(cluster.url, namespace="lib") as mem:
        assert isinstance(mem.client, RedisCluster)
    source = bundled()
    for port in cluster.ports[: cluster.primaries]:
        client = redis.asyncio.Redis(port=port, password=cluster.password)
        try:
            found = await server_library(client)
        finally:
            await client.aclose()
        assert found is not None and (found.version, found.digest) == (source.version,
                                                                         source.digest)


async def test_a_node_url_is_taken_for_the_cluster_it_belongs_to(cluster: LocalCluster) -> None:
    async with await redismem.connect(cluster.node_url(cluster.ports[1]),
                                      namespace="auto") as mem:
        assert isinstance(mem.client, RedisCluster)
        assert (await mem.session("s").set("k", 1)).revision == 1


async def test_thirty_namespaces_over_every_shard_stay_correct_and_apart(
        cluster: LocalCluster) -> None:
    names = [f"c{i}" for i in range(30)]
    assert {owner(cluster, ns) for ns in names} == set(cluster.ports[: cluster.primaries])

    async def work(ns: str) -> None:
        async with await redismem.connect(cluster.url, namespace=ns, principal="w") as mem:
            scope = mem.session("s")
            assert (await scope.set("k", ns)).revision == 1
            with pytest.raises(redismem.ConflictError):
                await scope.set("k", "stale", expected_revision=0)
            assert revisions_of(await scope.set_many({"a": 1, "b": [ns]})) == {"a": 1, "b": 1}
            assert (await scope.incr("n", 2)).value == 2
            assert await scope.delete("a") is True
            assert await scope.get("k") == redismem.MemoryValue(ns, 1, True)
            assert (await scope.keys()).keys == ["b", "k", "n"]
            page = await mem.changes(after=0)
            assert [(e.key, e.action, e.revision) for e in page.items] == [
                ("k", "set", 1), ("a", "set", 1), ("b", "set", 1), ("n", "incr", 1),
                ("a", "delete", 2)]
            assert {e.value for e in page.items if e.key == "k"} == {ns}
            seen = [e.key async for e in _take(mem.watch("*", after=3), 2)]
            assert seen == ["n", "a"]

    await asyncio.gather(*(work(ns) for ns in names))


async def _take(events: object, n: int) -> object:
    got = 0
    async for event in events:  # type: ignore[attr-defined]
        yield event
        got += 1
        if got == n:
            return


async def test_vectors_and_threads_live_on_their_namespace_shard(cluster: LocalCluster) -> None:
    names = ["v0", "v1", "v2", "v3", "v4", "v5"]
    assert len({owner(cluster, ns) for ns in names}) >= 2
    for ns in names:
        async with await redismem.connect(cluster.url, namespace=ns) as mem:
            scope = mem.session("s")
            await scope.set_vector("x", [1.0, 0.0, 0.0], {"ns": ns})
            await scope.set_vector("y", [0.0, 1.0, 0.0], {"ns": ns})
            hits = await scope.similarity_search([0.9, 0.1, 0.0], top_k=2)
            assert [(h.key, h.metadata) for h in hits] == [("x", {"ns": ns}), ("y", {"ns": ns})]
        async with RedisMemoryStore(cluster.url, namespace=ns) as store:
            await store.append_event(MemoryEvent("e1", "t", None, "message", 1, {"ns": ns}))
            await store.append_event(MemoryEvent("e1", "t", None, "message", 1, {"ns": ns}))
            assert [e.payload for e in await store.get_recent_events("t")] == [{"ns": ns}]


def _calls(cluster: LocalCluster, prefix: str) -> dict[int, int]:
    """Commands whose stats name starts with ``prefix`` that each primary was
    sent (served, or refused with MOVED and the like), by port."""
    counts = {}
    for port in cluster.ports[: cluster.primaries]:
        with cluster.client(port) as client:
            stats = client.info("commandstats")
        counts[port] = sum(int(row.get("calls", 0)) + int(row.get("rejected_calls", 0))
                           for name, row in stats.items() if name.startswith(prefix))
    return counts


async def test_search_commands_go_straight_to_the_namespace_node(cluster: LocalCluster) -> None:
    """An index lives on the node of its namespace's slot: every FT.* call is
    sent there, never to another primary first (redis-py sends them to a
    random primary, which answers MOVED)."""
    ns = "route"
    async with RedisMemoryStore(cluster.url, namespace=ns) as store:
        mem = store.memory
        scope = mem.session("s")
        await scope.set_vector("x", [1.0, 0.0])
        await store.upsert_long_term_memory(redismem.LongTermMemory(
            "m", "u", "knowledge", {}, "redis cluster", [], {}, 1, 1), embedding=[1.0, 0.0])
        before = _calls(cluster, "cmdstat_FT.")
        for _ in range(10):
            assert [m.key for m in await scope.similarity_search([1.0, 0.1])] == ["x"]
            assert [m.id for m in await store.search_long_term_memory_text("u", "redis")] == ["m"]
            assert len(await store.search_long_term_memory_vector("u", [1.0, 0.1])) == 1
        after = _calls(cluster, "cmdstat_FT.")
    home = owner(cluster, ns)
    assert after[home] - before[home] >= 30
    assert {port: after[port] - before[port] for port in after if port != home} == {
        port: 0 for port in after if port != home}


async def test_a_library_call_is_one_round_trip(cluster: LocalCluster) -> None:
    """The client reads an FCALL's keys from its arguments; redis-py would ask
    a node first (COMMAND GETKEYS, with every argument sent again)."""
    def getkeys() -> int:
        return sum(_calls(cluster, "cmdstat_command|getkeys").values())

    async with await redismem.connect(cluster.url, namespace="trip") as mem:
        scope = mem.session("s")
        before = getkeys()
        for i in range(20):
            await scope.set(f"k{i}", i)
            assert (await scope.get(f"k{i}")).value == i
        assert getkeys() == before


async def test_writers_carry_on_through_a_failover(failover_cluster: LocalCluster) -> None:
    """SIGKILL the primary of a busy namespace: its replica is promoted, and
    four writers and a watcher carry on without an error (each call waits
    and tries again while the cluster fails over). Without
    durability="replica" writes acknowledged just before the kill may be
    lost (replication is asynchronous), so only the new primary's own
    consistency is checked: a gap-free feed and revisions that match it."""
    local = failover_cluster
    ns = "busy"
    primary = owner(local, ns)
    async with await redismem.connect(local.url, namespace=ns) as mem:
        scope = mem.session("s")
        killed = asyncio.Event()
        started = [asyncio.Event() for _ in range(4)]

        async def writer(i: int) -> int:
            done = after_kill = 0
            while after_kill < 40:  # 40 increments once the primary is gone
                await scope.incr(f"n{i}")
                started[i].set()
                done += 1
                after_kill += killed.is_set()
            return done

        tasks = [asyncio.create_task(writer(i)) for i in range(4)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 60)
        local.kill(primary)
        killed.set()
        counts = await asyncio.gather(*tasks)
        assert owner(local, ns) != primary
        events: list[redismem.MemoryChangeEvent] = []
        while page := (await mem.changes(after=events[-1].sequence if events else 0,
                                         limit=1000)).items:
            events += page
        seqs = [e.sequence for e in events]
        assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
        for i, count in enumerate(counts):
            got = await scope.get(f"n{i}")
            assert 0 < got.value <= count and got.revision == got.value
            revs = [e.revision for e in events if e.key == f"n{i}"]
            assert revs == sorted(set(revs)) and revs[-1] == got.revision


async def test_a_new_primary_gets_the_library_before_it_has_a_slot(tmp_path: Path) -> None:
    """A node that joins as a primary owns no slot yet, so redis-py does not
    know it; connect() finds it in CLUSTER NODES and loads the library
    there, before any namespace can move to it."""
    local = LocalCluster(tmp_path / "cluster").start()
    try:
        port = local.start_node()
        with local.client(port) as client:
            client.execute_command("CLUSTER", "MEET", "127.0.0.1", local.ports[0])
        LocalCluster._wait(lambda: all(
            f":{port}@".encode() in local.client(p).execute_command("CLUSTER", "NODES")
            for p in local.ports[: local.primaries]), "the new node to be known")
        async with await redismem.connect(local.url, namespace="grow"):
            pass
        plain = redis.asyncio.Redis(port=port, password=local.password)
        try:
            found = await server_library(plain)
        finally:
            await plain.aclose()
        assert found is not None and found.digest == bundled().digest
    finally:
        local.stop()


def test_load_functions_reports_every_primary(cluster: LocalCluster) -> None:
    import json

    from click.testing import CliRunner

    from redismem.cli import main

    result = CliRunner().invoke(main, ["load-functions", "--url", cluster.url, "--json"])
    assert result.exit_code == 0, result.output
    nodes = json.loads(result.output)["nodes"]
    assert sorted(nodes) == sorted(f"127.0.0.1:{p}" for p in cluster.ports[: cluster.primaries])
    assert {row["action"] for row in nodes.values()} == {"unchanged"}
    text = CliRunner().invoke(main, ["load-functions", "--url", cluster.url]).output
    assert text.count(f"unchanged: library version {bundled().version}") == cluster.primaries


async def test_status_shows_each_node_and_where_each_namespace_lives(
        cluster: LocalCluster) -> None:
    import json

    from click.testing import CliRunner

    from redismem.cli import main

    names = [f"st{i}" for i in range(6)]
    for ns in names:
        async with await redismem.connect(cluster.url, namespace=ns) as mem:
            await mem.session("s").set("k", ns)
    result = await asyncio.to_thread(
        CliRunner().invoke, main, ["status", "--url", cluster.url, "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    nodes = {n["node"]: n for n in data["cluster"]["nodes"]}
    primaries = {f"127.0.0.1:{p}" for p in cluster.ports[: cluster.primaries]}
    assert {a for a, n in nodes.items() if n["role"] == "primary"} == primaries
    assert all(nodes[a]["library_digest"] == bundled().digest for a in primaries)
    assert {n["replica_of"] for n in nodes.values() if n["role"] == "replica"} == primaries
    listed = {n["namespace"]: n for n in data["namespaces"]}
    for ns in names:
        assert listed[ns]["node"] == f"127.0.0.1:{owner(cluster, ns)}"
        assert listed[ns]["value_keys"] == 1
    text = (await asyncio.to_thread(CliRunner().invoke, main,
                                    ["status", "--url", cluster.url])).output
    assert "cluster: 3 primaries, 3 replicas" in text
    assert f"namespace st0 (on 127.0.0.1:{owner(cluster, 'st0')}):" in text


async def test_durability_replica_confirms_every_write_kind(cluster: LocalCluster) -> None:
    async with await redismem.connect(cluster.url, namespace="dur", durability="replica") as mem:
        scope = mem.session("s")
        assert (await scope.set("k", 1)).revision == 1
        assert revisions_of(await scope.set_many({"a": 1, "b": 2})) == {"a": 1, "b": 1}
        assert (await scope.incr("n", 3)).value == 3
        assert await scope.delete("a") is True
        await scope.set_vector("v", [1.0, 0.0])
        assert await scope.delete_vector("v") is True
        with pytest.raises(redismem.ConflictError):
            await scope.set("k", 2, expected_revision=0)
    port = owner(cluster, "dur")
    replica = next(p for p in cluster.ports[cluster.primaries:]
                   if cluster.client(p).info("replication").get("master_port") == port)
    with cluster.client(replica) as client:
        client.execute_command("READONLY")
        assert client.hget(K.value("dur", "session", "s", "n"), "v") == b"3"


async def test_with_durability_replica_no_acknowledged_write_is_lost_in_a_failover(
        failover_cluster: LocalCluster) -> None:
    """Four writers increment their own counter with durability="replica";
    the primary is killed mid-way, its replica takes over, and the killed
    node comes back as the new primary's replica. Every increment is there
    at the end exactly once. While the new primary has no replica, writes
    are applied but not confirmed: NotReplicatedError says so (and carries
    the reply), and the writer counts them as applied (the node they were
    applied on is the one that stays primary: the old one is started
    again only once the failover is over)."""
    local = failover_cluster
    ns = "safe"
    primary = owner(local, ns)
    async with await redismem.connect(local.url, namespace=ns, durability="replica",
                                      replica_timeout=0.5) as mem:
        scope = mem.session("s")
        back = asyncio.Event()
        started = [asyncio.Event() for _ in range(4)]
        unconfirmed = [0]

        async def writer(i: int) -> int:
            done = 0
            while done < 40 or not back.is_set():
                try:
                    got = await scope.incr(f"n{i}")
                except redismem.NotReplicatedError as exc:
                    unconfirmed[0] += 1
                    got = redismem.MemoryValue(int(exc.reply[1]), exc.reply[0], True)
                done += 1
                started[i].set()
                assert got.value == done  # one writer per counter, each call once
            return done

        tasks = [asyncio.create_task(writer(i)) for i in range(4)]
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in started)), 60)
        local.kill(primary)
        await asyncio.to_thread(local.wait_failover, primary, key_slot(K.feed(ns).encode()))
        await asyncio.to_thread(local.wait_healthy)
        back.set()
        counts = await asyncio.gather(*tasks)
        assert owner(local, ns) != primary
        for i, count in enumerate(counts):
            assert await scope.get(f"n{i}") == redismem.MemoryValue(count, count, True)


async def test_users_are_made_removed_and_rotated_on_every_node(cluster: LocalCluster) -> None:
    from redismem import users
    from redismem.acl import Role
    from redismem.client import open_client

    admin = await open_client(cluster.url)
    try:
        made = await users.add_user(admin, "clw", Role("writer", "cw"))
        assert made.password is not None
        for port in cluster.ports:  # primaries and replicas alike
            with cluster.client(port) as client:
                assert b"clw" in client.execute_command("ACL", "USERS")
        url = cluster.url.replace(f"default:{cluster.password}", f"clw:{made.password}")
        async with await redismem.connect(url, namespace="cw") as mem:
            assert mem.principal == "clw"
            assert (await mem.session("s").set("k", 1)).revision == 1
        with pytest.raises(redismem.PermissionDeniedError):
            async with await redismem.connect(url, namespace="other") as other:
                await other.session("s").set("k", 1)
        assert await users.rotate_password(admin, "clw") is not None
        assert await users.remove_user(admin, "clw") is True
        for port in cluster.ports:
            with cluster.client(port) as client:
                assert b"clw" not in client.execute_command("ACL", "USERS")
    finally:
        await admin.aclose()


async def test_a_busy_namespace_moves_to_another_shard_whole(cluster: LocalCluster) -> None:
    """Reshard the slot of a namespace while four writers increment counters
    and a watcher follows its feed. Writers see no error (MOVED, ASK and
    TRYAGAIN are followed or waited out); afterwards every key is on the new
    owner and none on the old, every acknowledged increment is there once,
    the watcher saw the feed gap-free and without repeats, and searches
    (scope vectors, memory text and memory vectors) answer as before: the
    new owner had the keys but not the indexes, and the first search made
    them there."""
    ns = "moving"
    rng = np.random.default_rng(13)
    source = owner(cluster, ns)
    target = next(p for p in cluster.ports[: cluster.primaries] if p != source)
    slot = key_slot(K.feed(ns).encode())
    queries = [rng.normal(size=8).tolist() for _ in range(5)]
    async with RedisMemoryStore(cluster.url, namespace=ns) as store:
        mem = store.memory
        scope = mem.session("s")
        await scope.set_vectors([(f"v{i}", rng.normal(size=8).tolist(), {"half": "ab"[i % 2]})
                                 for i in range(300)], atomic=False)
        for i in range(20):
            await store.upsert_long_term_memory(redismem.LongTermMemory(
                f"m{i}", "u", "knowledge", {}, f"note {i} about {'redis' if i % 2 else 'lua'}",
                [], {}, 1, 1), embedding=rng.normal(size=8).tolist())

        async def searches() -> list[object]:
            return [
                *[await scope.similarity_search(q, top_k=10) for q in queries],
                await scope.similarity_search(queries[0], top_k=5, filter={"half": "a"}),
                # equal BM25 scores: RediSearch returns them in no set order
                sorted(m.id for m in await store.search_long_term_memory_text("u", "redis")),
                await store.search_long_term_memory_vector("u", queries[1], limit=5)]

        before = await searches()
        start = int(await mem.client.get(K.sequence(ns)))
        done, stop = asyncio.Event(), asyncio.Event()
        acknowledged = [0] * 4
        seen: list[redismem.MemoryChangeEvent] = []

        async def writer(i: int) -> None:
            while not done.is_set():
                await scope.incr(f"n{i}")
                acknowledged[i] += 1

        async def watcher() -> None:
            async for event in mem.watch("n*", after=start, stop=stop):
                if event.key == "n-end":
                    return
                seen.append(event)

        async def each_writes(more: int) -> None:
            floor = list(acknowledged)
            while any(now < was + more for now, was in zip(acknowledged, floor, strict=True)):
                await asyncio.sleep(0.01)

        watching = asyncio.create_task(watcher())
        writers = [asyncio.create_task(writer(i)) for i in range(4)]
        await asyncio.wait_for(each_writes(1), 60)  # every writer under way
        moved = await asyncio.to_thread(cluster.migrate_slot, slot, source, target)
        await asyncio.wait_for(each_writes(5), 60)  # and writing to the new owner
        done.set()
        await asyncio.gather(*writers)
        # the feed is ordered: the watcher reaching a last write has seen all before it
        await scope.set("n-end", 1)
        await asyncio.wait_for(watching, 60)
        stop.set()

        assert moved > 320 and owner(cluster, ns) == target
        with cluster.client(source) as src, cluster.client(target) as dst:
            assert src.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) == 0
            assert dst.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot) >= moved
        for i, count in enumerate(acknowledged):
            assert count > 0
            assert await scope.get(f"n{i}") == redismem.MemoryValue(count, count, True)
        sequences = [e.sequence for e in seen]
        assert sequences == list(range(start + 1, start + 1 + sum(acknowledged)))
        assert await searches() == before
        with cluster.client(target) as dst:
            indexes = {n.decode() for n in dst.execute_command("FT._LIST")}
        assert {K.vector_index(ns, 8), K.memory_text_index(ns),
                K.memory_vector_index(ns, 8)} <= indexes


async def test_every_library_function_runs_on_the_namespace_node(
        cluster: LocalCluster, tmp_path: Path) -> None:
    """One call of every kind through the public API, on a cluster: each of
    the library's functions runs, on the node that owns the namespace (its
    SLOWLOG, set to log every command, shows them all)."""
    from .test_transfer import export_text, import_text

    ns = "tour"
    home = owner(cluster, ns)
    primaries = cluster.ports[: cluster.primaries]
    for port in primaries:
        with cluster.client(port) as node:
            node.config_set("slowlog-log-slower-than", 0)
            node.config_set("slowlog-max-len", 100_000)
            node.slowlog_reset()
    try:
        async with RedisMemoryStore(cluster.url, namespace=ns) as store:
            mem = store.memory
            await mem.configure(vector_index="flat")
            assert (await mem.settings())["vector_index"] == "flat"
            session = await mem.create_session("s1")
            scope = mem.session(session)
            await scope.set("a", 1)
            await scope.set_many({"b": 2, "c": 3})
            assert (await scope.incr("a")).value == 2
            assert await scope.delete("b") is True
            assert (await scope.keys()).keys == ["a", "c"]
            assert (await scope.get("c")).value == 3  # one HMGET, no function
            assert (await scope.get_many(["a", "c"]))["c"].value == 3
            await scope.set_vector("v", [1.0, 0.0])
            await scope.set_vector("w", [0.0, 1.0])
            assert (await scope.get_vector("v")).revision == 1
            assert [m.key for m in await scope.similarity_search([1.0, 0.1], top_k=1)] == ["v"]
            assert await scope.delete_vector("w") is True
            async with scope.turn() as turn:  # a waiter blocks on the namespace's node
                waiting = asyncio.create_task(scope.acquire_turn())
                while await mem.client.zcard(K.turn_queue(ns, "session", session)) == 0:
                    await asyncio.sleep(0.001)
                await turn.renew()
            assert (await waiting).token == turn.token + 2  # after the release event
            await (await waiting).release()
            assert await turns.evict(mem._conn, "session", session, "nobody/h") is False
            assert (await lifecycle.forget_user(mem, "gone")).keys_deleted == 0
            events = [MemoryEvent(f"e{i}", "t", None, "message", 1000 + i, {"i": i})
                      for i in range(5)]
            await store.append_event(events[0])
            await store.append_events("t", events[1:])
            assert len(await store.get_recent_events("t")) == 5
            assert len(await store.get_events_since("t", 1002)) == 3
            await store.replace_thread_events("t", events[:4])
            await store.compact_thread("t", redismem.RetentionPolicy(max_events_per_thread=2))
            memory = redismem.LongTermMemory("m", "u", "knowledge", {}, "redis", [], {}, 1, 1)
            await store.upsert_long_term_memory(memory, embedding=[1.0, 0.0])
            assert [m.id for m in await store.search_long_term_memory_text("u", "redis")] == ["m"]
            assert len(await store.search_long_term_memory_vector("u", [1.0, 0.0])) == 1
            text = await export_text(store)
            await store.delete_long_term_memory("u", "m")
            assert await mem.trim_feed() >= 0
            await mem.client.execute_command("XADD", K.feed(ns), "999999-5", "key", "forged")
            assert (await repair_feed(mem)).removed == ("999999-5",)  # drop, settle, swap
            await import_text(store, text, tmp_path)  # into itself: the same node's slowlog
            saver = RedismemSaver(mem)
            config: Any = {"configurable": {"thread_id": session, "checkpoint_ns": ""}}
            checkpoint = {**empty_checkpoint(), "channel_values": {"a": 1},
                          "channel_versions": {"a": 1}}
            stored = await saver.aput(config, checkpoint, {}, {"a": 1})
            await saver.aput_writes(stored, [("a", 2)], "task")
            assert (await saver.aget_tuple(stored)).pending_writes == [("task", "a", 2)]
            await saver.adelete_thread(session)
            await RedismemStore(mem).aput(("lg",), "item", {"a": 1})
            assert await server_version(mem.client) == bundled().version
        logs = {}
        for port in primaries:
            with cluster.client(port) as node:
                logs[port] = node.slowlog_get(100_000)
    finally:
        for port in primaries:
            with cluster.client(port) as node:
                node.config_set("slowlog-log-slower-than", 10_000)
                node.config_set("slowlog-max-len", 128)

    def called(port: int) -> set[str]:
        return {entry["command"].split()[1].decode() for entry in logs[port]
                if entry["command"].split()[0].upper() in (b"FCALL", b"FCALL_RO")}

    library = {f"redismem_{path.stem}" for path in (REPO / "lua" / "functions").glob("*.lua")}
    assert len(library) == 34
    assert library - called(home) == set()
    # elsewhere only the library's version, read on every primary
    others = set().union(*(called(port) for port in primaries if port != home))
    assert others <= {"redismem_version"}


CAS_WRITER = """
import asyncio, os, sys
import redismem

async def main(url, ns, name, stop):
    async with await redismem.connect(url, namespace=ns, durability="replica",
                                      replica_timeout=0.5) as mem:
        scope = mem.session("s")
        while not os.path.exists(stop):
            try:
                written = await scope.update(name, lambda v: (v or 0) + 1, timeout=60)
                print("ok", written.value, flush=True)
            except redismem.NotReplicatedError:
                print("unconfirmed", flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


class Lines:
    """The stdout lines of a child process, read as they come."""

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.lines: list[str] = []
        self._grew = asyncio.Condition()
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        assert self.process.stdout is not None
        async for raw in self.process.stdout:
            async with self._grew:
                self.lines.append(raw.decode().rstrip("\n"))
                self._grew.notify_all()
        async with self._grew:
            self._grew.notify_all()

    async def wait_for(self, count: int, prefix: str = "ok", timeout: float = 60) -> None:
        """Until ``count`` lines starting with ``prefix`` have come (or the process ended)."""
        async def enough() -> None:
            async with self._grew:
                await self._grew.wait_for(lambda: self.process.returncode is not None
                                          or self._reader.done()
                                          or sum(line.startswith(prefix)
                                                 for line in self.lines) >= count)
        await asyncio.wait_for(enough(), timeout)
        assert sum(line.startswith(prefix) for line in self.lines) >= count, self.lines

    async def finish(self, timeout: float = 60) -> int:
        await asyncio.wait_for(self._reader, timeout)
        return await asyncio.wait_for(self.process.wait(), timeout)


async def spawn(script: str, *args: str) -> Lines:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", script, *args, stdout=asyncio.subprocess.PIPE)
    return Lines(process)


async def test_a_failover_under_cas_writer_processes_and_a_watcher(
        failover_cluster: LocalCluster, tmp_path: Path) -> None:
    """Four processes increment their counters by compare-and-set with
    durability="replica" while a watcher follows the feed; the primary is
    killed once each has confirmed an update, its replica promoted, the old
    primary brought back as a replica. Every confirmed increment is there at
    the end, each writer's confirmed values only go up, and the watcher saw
    the namespace's final feed: gap-free, without repeats, revisions of each
    key going up."""
    local = failover_cluster
    ns = "casfail"
    primary = owner(local, ns)
    stop = tmp_path / "stop"
    async with await redismem.connect(local.url, namespace=ns) as mem:
        await mem.session("s").set("start", 0)
        start = int(await mem.client.get(K.sequence(ns)))
        seen: list[redismem.MemoryChangeEvent] = []
        stop_watch, caught_up = asyncio.Event(), asyncio.Event()
        wanted: list[int] = []  # the number of events the watcher must see, once known

        async def watcher() -> None:
            async for event in mem.watch("n*", after=start, stop=stop_watch):
                seen.append(event)
                if wanted and len(seen) >= wanted[0]:
                    caught_up.set()

        watching = asyncio.create_task(watcher())
        writers = [await spawn(CAS_WRITER, local.url, ns, f"n{i}", str(stop)) for i in range(4)]
        for w in writers:  # each process has connected and confirmed an update
            await w.wait_for(1)
        local.kill(primary)
        await asyncio.to_thread(local.wait_failover, primary, key_slot(K.feed(ns).encode()))
        await asyncio.to_thread(local.wait_healthy)
        for w in writers:  # and confirmed more on the healed cluster
            await w.wait_for(len([x for x in w.lines if x.startswith("ok")]) + 5)
        stop.touch()
        assert [await w.finish() for w in writers] == [0, 0, 0, 0]
        assert owner(local, ns) != primary
        events: list[redismem.MemoryChangeEvent] = []
        while page := (await mem.changes(after=events[-1].sequence if events else start,
                                         limit=1000)).items:
            events += page
        wanted.append(len(events))
        if len(seen) >= len(events):
            caught_up.set()
        await asyncio.wait_for(caught_up.wait(), 60)  # the watcher has read them all
        stop_watch.set()
        await asyncio.wait_for(watching, 10)

        assert [e.sequence for e in events] == list(range(start + 1, start + 1 + len(events)))
        assert [(e.sequence, e.key, e.revision) for e in seen] == [
            (e.sequence, e.key, e.revision) for e in events]
        for i, w in enumerate(writers):
            confirmed = [int(line.split()[1]) for line in w.lines if line.startswith("ok")]
            assert len(confirmed) > 5
            assert confirmed == sorted(set(confirmed))
            final = await mem.session("s").get(f"n{i}")
            assert final.value >= confirmed[-1]
            revisions = [e.revision for e in events if e.key == f"n{i}"]
            assert revisions == sorted(set(revisions)) and revisions[-1] == final.revision


CONNECT_AND_WRITE = """
import asyncio, sys, time
import redismem

async def main(url, ns, timeout):
    print("ready", flush=True)
    sys.stdin.readline()  # the test says when: at once after the kill
    started = time.monotonic()
    while True:
        try:
            async with await redismem.connect(url, namespace=ns,
                                              cluster_timeout=float(timeout)) as mem:
                await mem.session("s").set("k", "after the kill")
            print("ok", round(time.monotonic() - started, 3), flush=True)
            return
        except redismem.RedisMemError as exc:
            print("error", type(exc).__name__, exc, flush=True)

asyncio.run(main(*sys.argv[1:]))
"""


async def test_connect_and_write_right_after_a_primary_dies(
        failover_cluster: LocalCluster) -> None:
    """SIGKILL a primary, then at once: (a) a new process connects for a
    namespace on a live shard and writes, before the dead node's replica
    has taken over; (b) another connects for the dead shard's namespace and
    its write goes through once the replica is promoted, with nothing but
    redismem errors before it (UnavailableError, its calls bounded by a
    1 s cluster_timeout); (c) the old primary, started again, rejoins as a
    replica of the new one and both writes are there, on it too."""
    local = failover_cluster
    dead_ns = "gone"
    primary = owner(local, dead_ns)
    slot = key_slot(K.feed(dead_ns).encode())
    live_ns = next(f"live{i}" for i in range(100) if owner(local, f"live{i}") != primary)
    processes = [await asyncio.create_subprocess_exec(
        sys.executable, "-c", CONNECT_AND_WRITE, local.url, ns, timeout,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        for ns, timeout in ((live_ns, "15"), (dead_ns, "1"))]
    for process in processes:  # Python and redismem imported: only the call remains
        assert process.stdout is not None
        assert await asyncio.wait_for(process.stdout.readline(), 60) == b"ready\n"
    local.kill(primary)
    for process in processes:
        assert process.stdin is not None
        process.stdin.write(b"go\n")
        await process.stdin.drain()
    live, dead = processes
    assert live.stdout is not None and dead.stdout is not None
    line = (await asyncio.wait_for(live.stdout.readline(), 60)).decode()
    # (a) done while the dead node still owns its slots: not held up by it
    assert line.startswith("ok"), line
    assert local.owner_of_slot(slot) == primary
    out, _ = await asyncio.wait_for(dead.communicate(), 120)
    lines = out.decode().splitlines()
    assert await live.wait() == 0 and dead.returncode == 0, lines
    # (b) only redismem's errors before the write went through
    assert lines[-1].startswith("ok"), lines
    assert all(line.startswith("error UnavailableError") for line in lines[:-1]), lines
    new_primary = local.wait_failover(primary, slot)
    # (c) the old primary is back as the new one's replica, with both writes
    await asyncio.to_thread(local.wait_healthy)
    with local.client(primary) as client:
        info = client.info("replication")
        assert info["role"] == "slave" and info["master_port"] == new_primary
        client.execute_command("READONLY")
        assert client.hget(K.value(dead_ns, "session", "s", "k"), "v") == b'"after the kill"'
    async with await redismem.connect(local.url, namespace=live_ns) as mem:
        assert (await mem.session("s").get("k")).value == "after the kill"


async def test_a_call_past_cluster_timeout_raises_unavailable_naming_node_and_slot(
        failover_cluster: LocalCluster) -> None:
    """While a shard has no live primary, a call on its namespace waits
    out cluster_timeout and raises UnavailableError naming the node and
    the slot: never redis-py's ConnectionError, ClusterDownError or
    TryAgainError. The same client writes once the replica is promoted."""
    local = failover_cluster
    ns = "waiting"
    primary = owner(local, ns)
    slot = key_slot(K.feed(ns).encode())
    async with await redismem.connect(local.url, namespace=ns, cluster_timeout=0.5) as mem:
        await mem.session("s").set("k", 1)
        local.kill(primary)
        with pytest.raises(redismem.UnavailableError) as caught:
            await mem.session("s").set("k", 2)
        assert caught.value.slot == slot and caught.value.node == f"127.0.0.1:{primary}"
        assert f"slot {slot}" in str(caught.value) and str(primary) in str(caught.value)
        assert isinstance(caught.value, ConnectionError)
        await asyncio.to_thread(local.wait_failover, primary, slot)
        while True:
            try:
                await mem.session("s").set("k", 3)
                break
            except redismem.UnavailableError:
                continue
        assert (await mem.session("s").get("k")).value == 3


async def test_a_primary_without_the_library_gets_it_on_the_first_call(
        cluster: LocalCluster) -> None:
    """A node that lacks the library when a call reaches it (a promoted
    replica that missed a load, a node added by a reshard) gets it loaded
    on the "Function not found" reply, and the call is sent once more."""
    ns = "relib"
    async with await redismem.connect(cluster.url, namespace=ns) as mem:
        scope = mem.session("s")
        await scope.set("k", 1)
        with cluster.client(owner(cluster, ns)) as node:
            node.function_delete("redismem")
            assert node.function_list(library="redismem") == []
        assert await scope.incr("k") == redismem.MemoryValue(2, 2, True)
        with cluster.client(owner(cluster, ns)) as node:
            assert node.function_list(library="redismem") != []
