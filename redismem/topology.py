"""The nodes of a Redis Cluster: which node holds what, and running a
command on one node, on any that answers, or on every primary."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.cluster import RedisCluster

from . import keys as K
from .retries import LOST

T = TypeVar("T")

def is_cluster(client: Redis) -> bool:
    """Whether ``client`` is a Redis Cluster client (redis-py's ``RedisCluster``)."""
    return isinstance(client, RedisCluster)


def on_namespace_node(client: Redis, ns: str) -> dict[str, Any]:
    """Options that send a keyless command (``FT._LIST``) to the node holding
    namespace ``ns``'s slot on a cluster; none on a single server."""
    if is_cluster(client):
        return {"target_nodes": cast(Any, client).get_node_from_key(K.feed(ns))}
    return {}


@dataclass(frozen=True)
class ClusterNodeInfo:
    """One node of a cluster as ``CLUSTER NODES`` lists it."""

    id: str
    host: str
    port: int
    primary: bool
    replica_of: str | None
    """The id of its primary (a replica), else None."""
    slots: tuple[str, ...]
    """Slot ranges it owns, e.g. ``0-5460``."""
    healthy: bool

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"


async def first_answer(nodes: Sequence[T], run: Callable[[T], Awaitable[Any]]) -> Any:
    """``run(node)`` on each of ``nodes`` in turn until one answers; the
    last one's lost connection is raised."""
    for index, node in enumerate(nodes):
        try:
            return await run(node)
        except LOST:
            if index == len(nodes) - 1:
                raise
    raise AssertionError("no node to ask")


def nodes_from(cluster: RedisCluster, first: Any) -> list[Any]:
    """The cluster's nodes, ``first`` (when given) before the others."""
    return [*([first] if first is not None else []),
            *(n for n in cluster.get_nodes() if n is not first)]


def slot_owner(cluster: RedisCluster, key: str | bytes) -> tuple[int, str | None]:
    """The slot of ``key`` and ``host:port`` of its owner in the client's
    slot map (None when no node holds it)."""
    slot = cluster.keyslot(key)
    owner = cluster.nodes_manager.slots_cache.get(slot)
    return slot, owner[0].name if owner else None


async def on_any_node(client: Redis, *args: Any) -> Any:
    """A keyless command's reply from the first node of ``client``'s cluster
    that answers, the default node first: any node can tell the cluster's
    state, and the default one may be a primary that just died."""
    cluster = cast(RedisCluster, client)
    return await first_answer(nodes_from(cluster, cluster.get_default_node()),
                              lambda node: node.execute_command(*args))


async def cluster_nodes(client: Redis) -> list[ClusterNodeInfo]:
    """Every node of the cluster (``CLUSTER NODES``), primaries that own no
    slot yet included: redis-py itself knows only the slot owners."""
    raw = await on_any_node(client, "CLUSTER", "NODES")
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    out = []
    for line in text.splitlines():
        fields = line.split()
        flags = set(fields[2].split(","))
        host, _, port = fields[1].split("@")[0].rpartition(":")
        out.append(ClusterNodeInfo(
            fields[0], host, int(port), "master" in flags,
            None if fields[3] == "-" else fields[3],
            tuple(f for f in fields[8:] if not f.startswith("[")),
            not flags & {"fail", "fail?", "noaddr", "handshake"}))
    return sorted(out, key=lambda n: (not n.primary, n.address))


async def cluster_primaries(client: Redis) -> list[tuple[str, int]]:
    """(host, port) of every healthy primary of the cluster, slots or not."""
    return [(n.host, n.port) for n in await cluster_nodes(client) if n.primary and n.healthy]


@contextlib.asynccontextmanager
async def node_client(client: Redis, host: str, port: int) -> AsyncIterator[Redis]:
    """A plain client to one node of ``client``'s cluster, with its credentials."""
    node = cast(RedisCluster, client).get_default_node()
    pool = ConnectionPool(connection_class=node.connection_class,
                          **{**node.connection_kwargs, "host": host, "port": port})
    plain = Redis(connection_pool=pool)
    try:
        yield plain
    finally:
        await plain.aclose()
        await pool.disconnect()


async def on_primaries(client: Redis, run: Callable[[Redis], Awaitable[T]], *,
                       reachable_only: bool = False) -> dict[str, T]:
    """``run(node)`` on a plain client to each healthy primary of a cluster,
    slots or not: ``{"host:port": result}``. With ``reachable_only``, a
    primary that does not answer (dead, not yet marked failed) is left out."""
    results = {}
    for host, port in await cluster_primaries(client):
        async with node_client(client, host, port) as plain:
            try:
                results[f"{host}:{port}"] = await run(plain)
            except LOST:
                if not reachable_only:
                    raise
    return results
