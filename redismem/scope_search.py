"""Vector search of one scope: through the namespace's index of the query's
dimension (one round trip once the index is known), or exactly in the
client with numpy when the server has no search module."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redis.exceptions import ResponseError

from . import _json
from . import keys as K
from . import vectors as V
from ._connection import Connection
from .errors import InvalidVectorError
from .topology import is_cluster
from .types import VectorMatch


def ef_of(conn: Connection, wanted: int | None) -> int:
    """``wanted``, else the namespace's ``hnsw_ef_runtime``."""
    return wanted or V.IndexParams.from_settings(conn.settings).ef_runtime


async def stored_dims(conn: Connection, scope: str, sid: str) -> Mapping[Any, Any]:
    """The scope's dimensions hash: dimension -> vectors, as stored."""
    return await conn.client.hgetall(K.vector_dims(conn.namespace, scope, sid))


def vector_count(dim: int, stored: Mapping[Any, Any]) -> int:
    """The scope's vectors of dimension ``dim`` per its dimensions hash.

    Raises:
        InvalidVectorError: the scope holds vectors of other dimensions only.
    """
    dims: dict[int, int] = {}
    for raw_dim, raw_count in stored.items():
        try:  # a field or count a raw HSET left that is no number: not a dimension
            found, count = int(raw_dim), int(raw_count)
        except ValueError:
            continue
        if count > 0:
            dims[found] = count
    if dims and dim not in dims:
        raise InvalidVectorError(
            f"the query has dimension {dim}; this scope's vectors have dimension "
            f"{' and '.join(map(str, sorted(dims)))}")
    return dims.get(dim, 0)

async def indexed_search(conn: Connection, scope: str, sid: str, blob: bytes, dim: int,
                     top_k: int, tokens: list[str], wanted_ef: int | None
                     ) -> list[VectorMatch]:
    """The search through the namespace's index of dimension ``dim``.

    Once this connection knows the index (and not on a cluster), the
    scope's dimensions, the index's document count when due
    (:class:`redismem._plans.SearchPlans`) and the search go in one
    round trip; the reply is used only if the dimension checks pass.
    """
    ns, client = conn.namespace, conn.client
    spec, tag, ef = V.scope_index(ns, dim), V.scope_tag(scope, sid), ef_of(conn, wanted_ef)
    unscoped = conn.plans.unscoped(spec.name, tag)
    read_docs = conn.plans.stale(spec.name)

    def command(algorithm: str, scoped: bool) -> list[Any]:
        return V.scope_search_command(ns, scope, sid, blob, dim, top_k, tokens, algorithm,
                                      ef, scoped)

    known = conn.indexes.get(spec.name)
    reply: Any = None
    if known is not None and not is_cluster(client):
        pipe = client.pipeline(transaction=False)
        pipe.hgetall(K.vector_dims(ns, scope, sid))
        if read_docs:
            pipe.execute_command("FT.INFO", spec.name)
        pipe.execute_command(*command(known, not unscoped))
        replies = await pipe.execute(raise_on_error=False)
        stored, reply = replies[0], replies[-1]
        if isinstance(stored, Exception):
            raise stored
        if read_docs and not isinstance(replies[1], Exception):
            conn.plans.read(spec.name, V.info_fields(replies[1]))
            read_docs = False
    else:
        stored = await stored_dims(conn, scope, sid)
    count = vector_count(dim, stored)
    if not count:
        return []
    if reply is None or isinstance(reply, Exception):
        if isinstance(reply, Exception) and not (isinstance(reply, ResponseError)
                                                 and V.missing_index(reply)):
            raise reply

        async def run(algorithm: str) -> Any:
            if read_docs:
                conn.plans.read(spec.name, await V.index_info(client, spec.name))
            return await client.execute_command(  # type: ignore[no-untyped-call]
                *command(algorithm, not unscoped))
        reply = await V.searched(conn, spec, run)
    matches = V.scope_matches(ns, scope, sid, reply)
    foreign = matches is None
    if matches is None:
        matches = await V.searched(conn, spec, lambda algorithm: (
            V.search_index(client, ns, scope, sid, blob, dim, top_k, tokens, algorithm, ef)))
    conn.plans.learn(spec.name, tag, count, foreign)
    return matches

async def exact_search(conn: Connection, scope: str, sid: str, names: list[str], query: bytes,
                   dim: int, top_k: int, filter: Mapping[str, Any] | None
                   ) -> list[VectorMatch]:
    """The search in the client: every vector of the scope (``names``)
    read and ranked with numpy (a server without the search module)."""
    import numpy as np  # on first use: the command line starts faster
    candidates = []
    for start in range(0, len(names), 1000):
        chunk = names[start:start + 1000]
        found = await conn.functions.get_vectors(conn.namespace, scope, sid, chunk)
        for name, (blob, meta, revision) in zip(chunk, found, strict=True):
            if blob is None or meta is None or len(blob) != 4 * dim or (
                    V.embedding_problem(blob)):
                continue  # not written by the library: `redismem audit` reports it
            try:
                metadata = _json.loads(meta)
            except ValueError:
                continue  # not written by the library: `redismem audit` reports it
            if isinstance(metadata, dict) and V.matches_filter(metadata, filter):
                candidates.append((name, np.frombuffer(blob, dtype="<f4"), metadata,
                                   revision))
    return V.rank_exact(np.frombuffer(query, dtype="<f4"), candidates, top_k)
