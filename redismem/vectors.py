"""Vector memory: embedding and metadata checks, RediSearch HNSW indexes (one
per namespace and dimension), indexed search with scope and metadata filters,
and the exact search in the client (numpy) used without the search module.

Scores are cosine similarities in [-1, 1]. The index stores cosine distance
``d = 1 - cos``; a match's score is ``1 - d``.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from redis.asyncio import Redis
from redis.exceptions import NoPermissionError, ResponseError

from . import _json, limits
from . import keys as K
from ._connection import Connection
from .errors import (
    InvalidArgumentError,
    InvalidMetadataError,
    InvalidVectorError,
    PermissionDeniedError,
)
from .topology import is_cluster
from .types import VectorMatch

if TYPE_CHECKING:  # numpy is imported where it is used: the command line starts
    import numpy as np  # 0.3 s sooner without it

Scalar = str | int | float | bool
T = TypeVar("T")
_INDEX_READY_TIMEOUT = 60.0


def embedding_bytes(embedding: Any) -> tuple[bytes, int]:
    """Check an embedding and return it as float32 little-endian bytes with its dimension.

    Raises:
        InvalidVectorError: not a flat sequence of 1..4096 finite numbers, or
            the zero vector (also after rounding to float32).
    """
    import numpy as np
    if isinstance(embedding, np.ndarray) and embedding.dtype == np.float32:
        single = _checked(embedding)  # no conversion: the common case of a model's output
    else:
        try:
            array = np.asarray(embedding, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidVectorError("embedding must be a sequence of numbers") from None
        _checked(array)
        if np.abs(array).max() > np.finfo(np.float32).max:
            raise InvalidVectorError("a component does not fit in float32")
        single = array.astype("<f4")
    if not single.any():
        raise InvalidVectorError("the zero vector has no direction")
    return single.astype("<f4", copy=False).tobytes(), int(single.size)


def _checked(array: np.ndarray) -> np.ndarray:
    import numpy as np
    if array.ndim != 1 or array.size == 0:
        raise InvalidVectorError(f"embedding must be a flat, non-empty sequence, got shape "
                                 f"{array.shape}")
    if array.size > limits.MAX_VECTOR_DIM:
        raise InvalidVectorError(
            f"dimension {array.size} is over the limit {limits.MAX_VECTOR_DIM}")
    if not np.isfinite(array).all():
        raise InvalidVectorError("every component of an embedding must be finite")
    return array


def metadata_json(metadata: Mapping[str, Any] | None) -> str:
    """Canonical JSON of vector metadata (``{}`` for None).

    Raises:
        InvalidMetadataError: not a JSON-serialisable dict with string keys, or
            over 16 KiB.
    """
    if metadata is None:
        return "{}"
    if not isinstance(metadata, Mapping) or not all(isinstance(k, str) for k in metadata):
        raise InvalidMetadataError(f"metadata must be a dict with string keys, got {metadata!r}")
    try:
        text, size = _json.dumps(dict(metadata))
    except _json.JsonRuleError as exc:
        raise InvalidMetadataError(f"metadata is not strict JSON: {exc}") from None
    if size > limits.MAX_METADATA_BYTES:
        raise InvalidMetadataError(
            f"metadata is {size} bytes of JSON, the limit is {limits.MAX_METADATA_BYTES}")
    return text


def _scalar_text(value: Scalar) -> str:
    # the same text lua/lib/70_vectors.lua hashes: type letter + value
    if isinstance(value, bool):
        return "btrue" if value else "bfalse"
    if isinstance(value, str):
        return "s" + value
    return f"n{float(value):.17g}"


def filter_tokens(filter: Mapping[str, Any] | None) -> list[str]:
    """The ``_meta`` tag tokens a filter of equality conditions must all match.

    Raises:
        InvalidMetadataError: keys are not strings or values are not scalars.
    """
    if not filter:
        return []
    if not isinstance(filter, Mapping):
        raise InvalidMetadataError(f"filter must be a dict, got {filter!r}")
    tokens = []
    for name, value in filter.items():
        if not isinstance(name, str):
            raise InvalidMetadataError(f"filter keys must be strings, got {name!r}")
        if not isinstance(value, str | int | float | bool) or (
            isinstance(value, float) and not math.isfinite(value)
        ):
            raise InvalidMetadataError(
                f"filter values must be strings, finite numbers or booleans, got {value!r}")
        try:
            text = f"{name}\0{_scalar_text(value)}".encode()
        except UnicodeEncodeError:
            raise InvalidMetadataError(
                f"filter keys and values must be valid UTF-8, got {name!r}: {value!r}") from None
        tokens.append(hashlib.sha1(text, usedforsecurity=False).hexdigest())
    return sorted(set(tokens))


def matches_filter(metadata: Mapping[str, Any], filter: Mapping[str, Any] | None) -> bool:
    """The exact-search twin of the tag filter: every condition holds, with
    the same typed comparison (1 == 1.0, but "1" != 1 and True != 1)."""
    for name, wanted in (filter or {}).items():
        if name not in metadata:
            return False
        have = metadata[name]
        if not isinstance(have, str | int | float | bool):
            return False
        if _scalar_text(have) != _scalar_text(wanted):
            return False
    return True


def scope_tag(scope: str, sid: str) -> str:
    """The ``_sc`` tag of a scope: hex of ``<scope>:<sid>``."""
    return f"{scope}:{sid}".encode().hex()


def check_top_k(top_k: object) -> int:
    if isinstance(top_k, bool) or not isinstance(top_k, int) or not (
        1 <= top_k <= limits.MAX_TOP_K
    ):
        raise InvalidArgumentError(f"top_k must be between 1 and {limits.MAX_TOP_K}, got {top_k!r}")
    return top_k


def check_ef_runtime(ef_runtime: object) -> int | None:
    """A per-search ``ef_runtime`` (None: the namespace's ``hnsw_ef_runtime``)."""
    if ef_runtime is None:
        return None
    low, high = limits.SETTING_BOUNDS["hnsw_ef_runtime"]
    if isinstance(ef_runtime, bool) or not isinstance(ef_runtime, int) or not (
        low <= ef_runtime <= high
    ):
        raise InvalidArgumentError(
            f"ef_runtime must be between {low} and {high}, got {ef_runtime!r}")
    return ef_runtime


def check_min_score(min_score: object) -> float | None:
    if min_score is None:
        return None
    if isinstance(min_score, bool) or not isinstance(min_score, int | float) or not (
        -1.0 <= min_score <= 1.0
    ):
        raise InvalidArgumentError(f"min_score must be between -1 and 1, got {min_score!r}")
    return float(min_score)


@dataclass(frozen=True)
class IndexParams:
    """Vector index settings of a namespace: the algorithm and HNSW parameters
    of new indexes, and the HNSW candidates examined per search."""

    algorithm: str = "HNSW"
    m: int = 16
    ef_construction: int = 200
    ef_runtime: int = 200

    @classmethod
    def from_settings(cls, settings: Mapping[str, int | str]) -> IndexParams:
        return cls(str(settings.get("vector_index", "hnsw")).upper(),
                   int(settings.get("hnsw_m", cls.m)),
                   int(settings.get("hnsw_ef_construction", cls.ef_construction)),
                   int(settings.get("hnsw_ef_runtime", cls.ef_runtime)))


@dataclass(frozen=True)
class IndexSpec:
    """A vector index: its name, the key prefix it covers, the dimension it
    holds (hashes whose ``_dim`` field equals it) and its tag fields."""

    name: str
    prefix: str
    dim: int
    tags: tuple[str, ...]


def scope_index(ns: str, dim: int) -> IndexSpec:
    """The index of a namespace's scope vectors of one dimension."""
    return IndexSpec(K.vector_index(ns, dim), K.vector_prefix(ns), dim, ("_sc", "_meta"))


async def ensure_index(client: Redis, spec: IndexSpec, params: IndexParams) -> str:
    """Create the index unless it exists, and return its algorithm (``HNSW``
    or ``FLAT``). Safe when several processes race: one creates it, the
    others see "already exists" and read what it is. A new index over
    existing vectors is waited for until it has indexed them."""
    if params.algorithm == "FLAT":
        algorithm: list[Any] = ["FLAT", 6]
        tuning: list[Any] = []
    else:
        algorithm = ["HNSW", 10]
        tuning = ["M", params.m, "EF_CONSTRUCTION", params.ef_construction]
    tags = [part for tag in spec.tags for part in (tag, "TAG", "SEPARATOR", ",")]
    args: list[Any] = [
        "FT.CREATE", spec.name, "ON", "HASH", "PREFIX", 1, spec.prefix,
        "FILTER", f"@_dim=={spec.dim}", "SCHEMA", *tags,
        "emb", "VECTOR", *algorithm, "TYPE", "FLOAT32", "DIM", spec.dim,
        "DISTANCE_METRIC", "COSINE", *tuning,
    ]
    try:
        created = await create_index(client, args)
    except PermissionDeniedError as exc:
        return await _existing_algorithm(client, spec, params, exc)
    if not created:
        return _algorithm(await index_info(client, spec.name))
    return params.algorithm


async def _existing_algorithm(client: Redis, spec: IndexSpec, params: IndexParams,
                              refused: PermissionDeniedError) -> str:
    """For a credential that may not create indexes (FT.CREATE can index any
    namespace's keys, so only an operator holds it): the algorithm of the
    index an operator created; the configured one when this credential may
    not even look (a worker, which cannot search either)."""
    try:
        return _algorithm(await index_info(client, spec.name))
    except NoPermissionError:
        return params.algorithm
    except ResponseError as exc:
        if not missing_index(exc):
            raise
    raise refused


def missing_index(exc: ResponseError) -> bool:
    """Whether the server answered that the index does not exist."""
    text = str(exc).lower()
    return "no such index" in text or "unknown index" in text


async def remade_if_missing(conn: Connection, name: str, run: Callable[[], Awaitable[T]],
                            remake: Callable[[], Awaitable[Any]] | None = None) -> T:
    """``run()``, a search on index ``name``. When the server has no such
    index although this connection made or saw it (``FLUSHALL``, a dropped
    index, or the namespace's slot moved to another cluster node, which has
    the keys but not the index), the connection forgets it, ``remake()``
    makes it again over the documents already there, and ``run()`` runs
    once more."""
    try:
        return await run()
    except ResponseError as exc:
        if not missing_index(exc):
            raise
    conn.indexes.pop(name, None)
    if remake is not None:
        await remake()
    return await run()


async def searched(conn: Connection, spec: IndexSpec,
                   search: Callable[[str], Awaitable[T]]) -> T:
    """``search(algorithm)`` on ``spec``'s vector index, made when this
    connection does not know it (:func:`cached_index`), and made again when
    it vanished (:func:`remade_if_missing`)."""
    async def run() -> T:
        return await search(await cached_index(conn, spec))
    return await remade_if_missing(conn, spec.name, run)


async def cached_index(conn: Connection, spec: IndexSpec) -> str:
    """The algorithm of ``spec``'s index, creating the index the first time this
    connection needs it (once, however many tasks ask at the same moment)."""
    found = conn.indexes.get(spec.name)
    if found is not None:
        return found
    async with conn.index_lock:
        if spec.name not in conn.indexes:
            conn.indexes[spec.name] = await ensure_index(
                conn.client, spec, IndexParams.from_settings(conn.settings))
        return conn.indexes[spec.name]


async def ensure_scope_indexes(conn: Connection, dims: Iterable[int]) -> None:
    """Make sure the namespace's vector index of each dimension exists (with
    the search module; without it there are none)."""
    if conn.search:
        for dim in set(dims):
            await cached_index(conn, scope_index(conn.namespace, dim))


async def create_index(client: Redis, args: Sequence[Any]) -> bool:
    """Run an FT.CREATE; False when the index already exists. After creating
    it, wait (up to a minute) until it has indexed the keys already there."""
    try:
        await client.execute_command(*args)  # type: ignore[no-untyped-call]
    except NoPermissionError:
        name = str(args[1])
        found = re.search(r":(\d+)$", name)
        dim = f" --dim {found[1]}" if found else ""
        raise PermissionDeniedError(
            f"there is no index {name} yet, and this credential may not create one "
            "(FT.CREATE can index any namespace's keys, so only an operator may): run "
            f"`redismem index --namespace {K.namespace_of(name)}{dim}`") from None
    except ResponseError as exc:
        if "already exists" not in str(exc).lower():
            raise
        return False
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _INDEX_READY_TIMEOUT
    while loop.time() < deadline:
        info = await index_info(client, args[1])
        if float(info.get("percent_indexed", 1)) >= 1 and str(info.get("indexing", "0")) == "0":
            break
        await asyncio.sleep(0.05)
    return True


def _attribute_pairs(attribute: Any) -> Any:
    # redis-py gives each attribute as a dict; a raw reply is a flat list
    return (attribute.items() if isinstance(attribute, dict)
            else zip(attribute[::2], attribute[1::2], strict=False))


def attribute_flags(attribute: Any) -> list[bytes]:
    """The flags (NOSTEM, SORTABLE, ...) of one attribute of FT.INFO, as bytes:
    in a ``flags`` list (RESP3) or as bare words of the attribute (RESP2)."""
    found: list[Any] = (list(attribute.get(b"flags") or attribute.get("flags") or [])
                        if isinstance(attribute, dict) else list(attribute))
    return [f.encode() if isinstance(f, str) else f for f in found if isinstance(f, bytes | str)]


def _algorithm(info: Mapping[str, Any]) -> str:
    """The vector algorithm named in FT.INFO's attributes."""
    for attribute in info.get("attributes", []):
        for name, value in _attribute_pairs(attribute):
            if name in (b"algorithm", "algorithm"):
                return (value.decode() if isinstance(value, bytes) else str(value)).upper()
    raise ValueError("the vector index has no vector attribute")


async def index_info(client: Redis, name: str) -> dict[str, Any]:
    """FT.INFO of an index as a flat dict of its top-level fields (bytes decoded)."""
    return info_fields(await client.execute_command("FT.INFO", name))  # type: ignore[no-untyped-call]


def info_fields(raw: Any) -> dict[str, Any]:
    """An FT.INFO reply as a flat dict of its top-level fields (bytes decoded)."""
    # redis-py turns the reply into a dict; a plain list when no callback applies
    pairs = raw.items() if isinstance(raw, dict) else zip(raw[::2], raw[1::2], strict=True)
    info: dict[str, Any] = {}
    for key, value in pairs:
        name_text = key.decode() if isinstance(key, bytes) else str(key)
        info[name_text] = value.decode() if isinstance(value, bytes) else value
    return info


def tag_clause(field: str, value: str) -> str:
    """A tag condition on a hex value (hex needs no query escaping)."""
    return f"@{field}:{{{value}}}"


def knn_command(index: str, clauses: Sequence[str], query: bytes, top_k: int,
                algorithm: str, ef_runtime: int, returns: Sequence[str]) -> list[Any]:
    """The FT.SEARCH of the ``top_k`` nearest vectors among the documents
    matching every clause (filters are inside the query)."""
    params: list[Any] = ["k", top_k, "vec", query]
    tuning = ""
    if algorithm == "HNSW":
        tuning = " EF_RUNTIME $ef"
        params += ["ef", max(ef_runtime, top_k)]
    text = f"({' '.join(clauses)})=>[KNN $k @emb $vec{tuning} AS __dist]"
    return ["FT.SEARCH", index, text, "PARAMS", len(params), *params,
            "SORTBY", "__dist", "ASC", "RETURN", len(returns) + 1, *returns, "__dist",
            "LIMIT", 0, top_k, "DIALECT", 2]


def knn_rows(reply: Any) -> list[tuple[str, dict[bytes, bytes], float]]:
    """(document id, returned fields, cosine similarity) of a
    :func:`knn_command` reply, best first."""
    return [(doc_id.decode(), fields, 1.0 - float(fields[b"__dist"]))
            for doc_id, fields in search_rows(reply) if b"__dist" in fields]


async def knn(client: Redis, index: str, clauses: Sequence[str], query: bytes, top_k: int,
              algorithm: str, ef_runtime: int, returns: Sequence[str]
              ) -> list[tuple[str, dict[bytes, bytes], float]]:
    """:func:`knn_command`, sent, and its :func:`knn_rows`."""
    return knn_rows(await client.execute_command(  # type: ignore[no-untyped-call]
        *knn_command(index, clauses, query, top_k, algorithm, ef_runtime, returns)))


def scope_search_command(ns: str, scope: str, sid: str, query: bytes, dim: int, top_k: int,
                         tokens: Sequence[str], algorithm: str, ef_runtime: int,
                         scoped: bool = True) -> list[Any]:
    """KNN over one scope's vectors, the metadata filter inside the query.
    ``scoped=False`` leaves the scope's own filter out: for a scope that
    holds every document of the index (see :class:`redismem._plans.SearchPlans`)."""
    clauses = [tag_clause("_meta", t) for t in tokens]
    if scoped:
        clauses.insert(0, tag_clause("_sc", scope_tag(scope, sid)))
    return knn_command(K.vector_index(ns, dim), clauses or ["*"], query, top_k, algorithm,
                       ef_runtime, ("meta", "rev"))


def scope_matches(ns: str, scope: str, sid: str, reply: Any) -> list[VectorMatch] | None:
    """The matches of a :func:`scope_search_command` reply; None when it holds
    a document of another scope (possible only when the search left the
    scope's filter out: it must run again with it)."""
    prefix = K.vector(ns, scope, sid, "")
    matches = []
    for doc_id, fields, score in knn_rows(reply):
        if not doc_id.startswith(prefix):
            return None
        try:
            metadata, revision = _json.loads(fields[b"meta"]), int(fields[b"rev"])
        except (KeyError, ValueError):
            continue  # not written by the library: `redismem audit` reports it
        matches.append(VectorMatch(key=doc_id[len(prefix):], score=score, metadata=metadata,
                                   revision=revision))
    return matches


async def search_index(client: Redis, ns: str, scope: str, sid: str, query: bytes, dim: int,
                       top_k: int, tokens: Sequence[str], algorithm: str, ef_runtime: int
                       ) -> list[VectorMatch]:
    """:func:`scope_search_command` (with the scope's filter), sent, and its
    :func:`scope_matches`."""
    reply = await client.execute_command(  # type: ignore[no-untyped-call]
        *scope_search_command(ns, scope, sid, query, dim, top_k, tokens, algorithm, ef_runtime))
    return scope_matches(ns, scope, sid, reply) or []


async def profiled(client: Redis, command: Sequence[Any]) -> tuple[int | None, int | None]:
    """Run a :func:`knn_command` under FT.PROFILE: how many documents match
    its filters (counted by a second query) and how many of them the vector
    search read; (None, None) when the query has no filter or the
    credential may not profile."""
    index, text = command[1], str(command[2])
    filters = text.split("=>[", 1)[0]
    if filters == "(*)":
        return None, None
    try:
        reply = await client.execute_command(  # type: ignore[no-untyped-call]
            "FT.PROFILE", index, "SEARCH", "QUERY", *command[2:])
    except NoPermissionError:
        return None, None
    counted = await client.execute_command(  # type: ignore[no-untyped-call]
        "FT.SEARCH", index, filters, "LIMIT", 0, 0, "DIALECT", 2)
    matched = int(counted[b"total_results"] if isinstance(counted, dict) else counted[0])
    profile = _as_dict(reply[1] if isinstance(reply, list) else reply[b"profile"])
    iterators = profile.get(b"Iterators profile") or []
    first = _as_dict(iterators[0] if isinstance(iterators, list) and iterators
                     and not isinstance(iterators[0], bytes) else iterators)
    child = _as_dict(first.get(b"Child iterator") or {})
    return matched, int(child.get(b"Counter", 0))


async def search_stats(client: Redis) -> tuple[int, int] | None:
    """The server's FT.SEARCH calls and their microseconds so far (``INFO
    commandstats``), or None on a cluster (every node counts its own) or
    when INFO is refused."""
    if is_cluster(client):
        return None
    try:
        stats = (await client.info("commandstats")).get("cmdstat_FT.SEARCH", {})
    except ResponseError:
        return None
    return int(stats.get("calls", 0)), int(stats.get("usec", 0))


def _as_dict(part: Any) -> dict[bytes, Any]:
    """A RESP3 map as it is, a RESP2 flat list of pairs as a dict."""
    return dict(_attribute_pairs(part))


def search_rows(reply: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
    """(document id, returned fields) of an FT.SEARCH reply, RESP3 map or RESP2
    array; without the documents that vanished (expired, deleted) while the
    search ran, which come back with no fields."""
    if isinstance(reply, dict):
        return [(row[b"id"], row[b"extra_attributes"]) for row in reply[b"results"]
                if row.get(b"extra_attributes")]
    return [(doc_id, dict(zip(fields[::2], fields[1::2], strict=True)))
            for doc_id, fields in zip(reply[1::2], reply[2::2], strict=True) if fields]


def embedding_problem(blob: bytes) -> str | None:
    """Why stored embedding bytes are not float32 values the library wrote, or None."""
    import numpy as np
    if not blob or len(blob) % 4:
        return f"is {len(blob)} bytes, not float32 values"
    values = np.frombuffer(blob, dtype="<f4")
    if not np.isfinite(values).all():
        return "holds NaN or infinity"
    if not values.any():
        return "is the zero vector"
    return None


def rank_exact(query: np.ndarray, candidates: Sequence[tuple[str, np.ndarray, dict[str, Any], int]],
               top_k: int) -> list[VectorMatch]:
    """Exact cosine ranking with numpy (float64 arithmetic on float32 inputs);
    ties are broken by key so the order is deterministic."""
    import numpy as np
    if not candidates:
        return []
    matrix = np.stack([vector for _, vector, _, _ in candidates]).astype(np.float64)
    q = query.astype(np.float64)
    scores = matrix @ q / (np.linalg.norm(matrix, axis=1) * np.linalg.norm(q))
    order = sorted(range(len(candidates)), key=lambda i: (-scores[i], candidates[i][0]))[:top_k]
    return [VectorMatch(candidates[i][0], float(scores[i]), candidates[i][2], candidates[i][3])
            for i in order]
