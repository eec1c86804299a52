"""redismem on a real Redis Cluster (3 primaries, 3 replicas) started by the
tests: the library on every primary, namespaces spread over the shards,
every call routed to the owner of its namespace's slot."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from redis.asyncio.cluster import RedisCluster
from redis.cluster import key_slot

import redismem
from redismem import keys as K
from redismem.functions import bundled, server_library
from redismem.store import RedisMemoryStore
from redismem.types import MemoryEvent

from .cluster import LocalCluster

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = LocalCluster(Path(tmp_path_factory.mktemp("cluster")))
    try:
        yield local.start()
    finally:
        local.stop()


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
        assert await mem.session("s").set("k", 1) == 1


async def test_thirty_namespaces_over_every_shard_stay_correct_and_apart(
        cluster: LocalCluster) -> None:
    names = [f"c{i}" for i in range(30)]
    assert {owner(cluster, ns) for ns in names} == set(cluster.ports[: cluster.primaries])

    async def work(ns: str) -> None:
        async with await redismem.connect(cluster.url, namespace=ns, principal="w") as mem:
            scope = mem.session("s")
            assert await scope.set("k", ns) == 1
            with pytest.raises(redismem.ConflictError):
                await scope.set("k", "stale", expected_revision=0)
            assert await scope.set_many({"a": 1, "b": [ns]}) == {"a": 1, "b": 1}
            assert (await scope.incr("n", 2)).value == 2
            assert await scope.delete("a") is True
            assert await scope.get("k") == redismem.MemoryValue(ns, 1, True)
            assert (await scope.keys()).keys == ["b", "k", "n"]
            page = await mem.changes(after=0)
            assert [(e.key, e.action, e.revision) for e in page.items] == [
                ("k", "set", 1), ("a", "set", 1), ("b", "set", 1), ("n", "set", 1),
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


async def test_writers_carry_on_through_a_failover(tmp_path: Path) -> None:
    """SIGKILL the primary of a busy namespace: its replica is promoted, and
    four writers and a watcher carry on without an error (each call waits
    and tries again while the cluster fails over). Without
    durability="replica" writes acknowledged just before the kill may be
    lost (replication is asynchronous), so only the new primary's own
    consistency is checked: a gap-free feed and revisions that match it."""
    local = LocalCluster(tmp_path / "cluster").start()
    try:
        ns = "busy"
        primary = owner(local, ns)
        async with await redismem.connect(local.url, namespace=ns) as mem:
            scope = mem.session("s")
            killed = asyncio.Event()

            async def writer(name: str) -> int:
                done = 0
                while done < 40 or not killed.is_set():
                    await scope.incr(name)
                    done += 1
                    if done > 400:
                        raise AssertionError("the failover never came")
                return done

            tasks = [asyncio.create_task(writer(f"n{i}")) for i in range(4)]
            await asyncio.sleep(0.3)
            local.procs[primary].kill()
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
    finally:
        local.stop()


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
        assert await scope.set("k", 1) == 1
        assert await scope.set_many({"a": 1, "b": 2}) == {"a": 1, "b": 1}
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
        tmp_path: Path) -> None:
    """Four writers increment their own counter with durability="replica";
    the primary is killed mid-way, its replica takes over, and the killed
    node comes back as the new primary's replica. Every increment is there
    at the end exactly once. While the new primary has no replica, writes
    are applied but not confirmed: NotReplicatedError says so (and carries
    the reply), and the writer counts them as applied."""
    local = LocalCluster(tmp_path / "cluster").start()
    try:
        ns = "safe"
        primary = owner(local, ns)
        async with await redismem.connect(local.url, namespace=ns, durability="replica",
                                          replica_timeout=0.5) as mem:
            scope = mem.session("s")
            killed, back = asyncio.Event(), asyncio.Event()
            unconfirmed = [0]

            async def writer(name: str) -> int:
                done = 0
                while done < 40 or not back.is_set():
                    try:
                        got = await scope.incr(name)
                    except redismem.NotReplicatedError as exc:
                        unconfirmed[0] += 1
                        got = redismem.MemoryValue(int(exc.reply[1]), exc.reply[0], True)
                    done += 1
                    assert got.value == done  # one writer per counter, each call once
                return done

            tasks = [asyncio.create_task(writer(f"n{i}")) for i in range(4)]
            await asyncio.sleep(0.3)
            local.procs[primary].kill()
            killed.set()
            await asyncio.sleep(4)
            await asyncio.to_thread(local.restart_node, primary)
            back.set()
            counts = await asyncio.gather(*tasks)
            assert owner(local, ns) != primary
            for i, count in enumerate(counts):
                assert await scope.get(f"n{i}") == redismem.MemoryValue(count, count, True)
    finally:
        local.stop()


async def test_users_are_made_removed_and_rotated_on_every_node(cluster: LocalCluster) -> None:
    from redismem import users
    from redismem.acl import Role
    from redismem.memory import open_client

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
            assert await mem.session("s").set("k", 1) == 1
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
