"""The vector benchmark of ``scripts/bench.py vectors``: redismem against
redisvl (the Redis-maintained vector client, the optional ``bench`` extra) on
the same server, in the same run, on the same data.

Data (``--data``):
    structured  unit vectors of low intrinsic dimension, like real embeddings:
                ``normalize(Z @ A + 0.5 * E)``, ``A`` a fixed seeded 32 x dim
                Gaussian matrix, ``Z`` and ``E`` standard Gaussian per vector
    random      uniform random unit vectors: no neighbourhood structure, the
                worst case for any HNSW index

Layouts: (a) one scope holding every vector; (b) 100 session scopes, queries
within one of them. Each is searched without a filter and with a metadata
equality filter that 10% of the vectors match. Queries are drawn like the
data but are not in the index; recall@10 is against numpy's exact ranking of
the same pool (the scope, or its filtered part).

Ingestion alternates chunks of 10,000 between the two clients, so both build
their index under the same conditions; searches alternate query by query.
Memory is the growth of ``used_memory`` during each client's chunks, and the
index's own size from FT.INFO.
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from redis.asyncio import Redis

import redismem
from redismem import keys as K
from redismem import vectors

SESSIONS = 100
GROUPS = 10
CHUNK = 10_000
BATCH = 500
QUERIES = 300
EF_RUNTIME = vectors.IndexParams.ef_runtime  # the default, given to redisvl too


def make_data(n: int, dim: int, kind: str, seed: int = 42) -> np.ndarray:
    """``n`` unit float32 vectors of ``dim`` components (see the module's doc)."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        data = rng.normal(size=(n, dim))
    else:
        basis = np.random.default_rng(7).normal(size=(32, dim))
        data = rng.normal(size=(n, 32)) @ basis + 0.5 * rng.normal(size=(n, dim))
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    return data.astype(np.float32)


@dataclass
class Side:
    """One client's figures: ingestion seconds, memory growth, latencies."""

    name: str
    seconds: float = 0.0
    memory: int = 0
    latencies: dict[str, list[float]] = field(default_factory=dict)
    hits: dict[str, int] = field(default_factory=dict)


def _session(i: int, layout: str) -> str:
    return f"s{i % SESSIONS}" if layout == "b" else "all"


class RedismemSide:
    def __init__(self, url: str, index: str) -> None:
        self.url, self.index, self.ns = url, index, "bench" + uuid.uuid4().hex[:8]

    async def open(self, dim: int) -> None:
        self.mem = await redismem.connect(self.url, namespace=self.ns, principal="bench")
        await self.mem.configure(vector_index=self.index)
        self.dim = dim

    def scope(self, session: str) -> Any:
        return self.mem.global_scope() if session == "all" else self.mem.session(session)

    async def load(self, data: np.ndarray, ids: range, layout: str) -> None:
        by_scope: dict[str, list[Any]] = {}
        for i in ids:
            by_scope.setdefault(_session(i, layout), []).append(
                (f"v{i}", data[i], {"group": str(i % GROUPS)}))
        for session, items in by_scope.items():
            scope = self.scope(session)
            for first in range(0, len(items), BATCH):
                await scope.set_vectors(items[first:first + BATCH], atomic=False)

    async def search(self, q: np.ndarray, session: str, group: str | None) -> list[int]:
        found = await self.scope(session).similarity_search(
            q, top_k=10, filter={"group": group} if group else None)
        return [int(m.key[1:]) for m in found]

    async def index_bytes(self) -> float:
        info = await vectors.index_info(self.mem.client, K.vector_index(self.ns, self.dim))
        return _index_mb(info) * 1024 * 1024

    async def plan(self, q: np.ndarray, session: str, group: str | None) -> str:
        explain = getattr(self.scope(session), "explain_search", None)
        if explain is None:
            return ""
        return str((await explain(q, top_k=10, filter={"group": group} if group else None)).plan)

    async def close(self) -> None:
        client = self.mem.client
        await client.execute_command("FT.DROPINDEX", K.vector_index(self.ns, self.dim))
        async for key in client.scan_iter(match=K.pattern(self.ns), count=1000):
            await client.delete(key)
        await self.mem.close()


class RedisvlSide:
    def __init__(self, url: str, index: str) -> None:
        self.url, self.index, self.name = url, index, "rvl" + uuid.uuid4().hex[:8]

    async def open(self, dim: int) -> None:
        from redisvl.index import AsyncSearchIndex

        attrs: dict[str, Any] = {"dims": dim, "distance_metric": "cosine",
                                 "algorithm": self.index, "datatype": "float32"}
        if self.index == "hnsw":
            attrs.update(m=16, ef_construction=200, ef_runtime=EF_RUNTIME)
        schema = {"index": {"name": self.name, "prefix": self.name, "storage_type": "hash"},
                  "fields": [{"name": "session", "type": "tag"},
                             {"name": "group", "type": "tag"},
                             {"name": "emb", "type": "vector", "attrs": attrs}]}
        self.client = Redis.from_url(self.url)
        self.search_index = AsyncSearchIndex.from_dict(schema, redis_client=self.client)
        await self.search_index.create(overwrite=True, drop=True)

    async def load(self, data: np.ndarray, ids: range, layout: str) -> None:
        docs = [{"emb": data[i].tobytes(), "group": str(i % GROUPS),
                 "session": _session(i, layout)} for i in ids]
        await self.search_index.load(docs, keys=[f"{self.name}:v{i}" for i in ids],
                                     batch_size=BATCH)

    async def search(self, q: np.ndarray, session: str, group: str | None) -> list[int]:
        from redisvl.query import VectorQuery
        from redisvl.query.filter import Tag

        condition = None
        if session != "all":
            condition = Tag("session") == session
        if group:
            condition = (Tag("group") == group) if condition is None else (
                condition & (Tag("group") == group))
        query = VectorQuery(q.tobytes(), "emb", return_fields=["group"],
                            filter_expression=condition, num_results=10,
                            ef_runtime=EF_RUNTIME if self.index == "hnsw" else None)
        found = await self.search_index.query(query)
        return [int(doc["id"].rsplit(":v", 1)[1]) for doc in found]

    async def index_bytes(self) -> float:
        return _index_mb(await vectors.index_info(self.client, self.name)) * 1024 * 1024

    async def close(self) -> None:
        await self.search_index.delete(drop=True)
        await self.client.aclose()


def _index_mb(info: dict[str, Any]) -> float:
    """The index's whole size from FT.INFO: the vector index, and the rest
    (tags, document table; ``total_index_memory_sz_mb`` leaves vectors out)."""
    rest = info.get("total_index_memory_sz_mb")
    if rest is None:
        rest = sum(float(info.get(name, 0)) for name in (
            "inverted_sz_mb", "offset_vectors_sz_mb", "doc_table_size_mb",
            "sortable_values_size_mb", "key_table_size_mb", "tag_overhead_sz_mb"))
    return float(info.get("vector_index_sz_mb", 0)) + float(rest)


async def _used_memory(client: Redis) -> int:
    return int((await client.info("memory"))["used_memory"])


async def _settled(client: Redis) -> None:
    """Wait until the server has freed what an earlier layout dropped (lazy
    frees, the search module's background GC), so it does not count
    against the next layout's growth."""
    last = -1
    for _ in range(600):
        info = await client.info("memory")
        used = int(info["used_memory"])
        if int(info.get("lazyfree_pending_objects", 0)) == 0 and abs(used - last) < 64 * 1024:
            return
        last = used
        await asyncio.sleep(0.5)


def _exact(data: np.ndarray, pool: np.ndarray, q: np.ndarray) -> set[int]:
    return {int(i) for i in pool[np.argsort(-(data[pool] @ q))[:10]]}


async def _timed(call: Callable[..., Awaitable[list[int]]], *args: Any
                 ) -> tuple[float, list[int]]:
    start = time.perf_counter()
    found = await call(*args)
    return (time.perf_counter() - start) * 1000, found


async def run_layout(url: str, data: np.ndarray, queries: np.ndarray, layout: str,
                     index: str) -> tuple[list[dict[str, Any]], str]:
    n, dim = data.shape
    sides: list[tuple[Any, Side]] = [(RedismemSide(url, index), Side("redismem")),
                                     (RedisvlSide(url, index), Side("redisvl"))]
    admin = Redis.from_url(url)
    await _settled(admin)
    for client, _ in sides:
        await client.open(dim)
    try:
        for first in range(0, n, CHUNK):
            ids = range(first, min(n, first + CHUNK))
            order = sides if (first // CHUNK) % 2 == 0 else sides[::-1]
            for client, side in order:
                before = await _used_memory(admin)
                start = time.perf_counter()
                await client.load(data, ids, layout)
                side.seconds += time.perf_counter() - start
                side.memory += await _used_memory(admin) - before
        index_sizes = [await client.index_bytes() for client, _ in sides]
        sessions = np.arange(n) % SESSIONS
        groups = np.arange(n) % GROUPS
        for filtered in (False, True):
            label = "filter" if filtered else "no filter"
            for j, q in enumerate(queries):
                session = _session(j, layout)
                group = str(j % GROUPS) if filtered else None
                mask = np.ones(n, dtype=bool)
                if layout == "b":
                    mask &= sessions == j % SESSIONS
                if filtered:
                    mask &= groups == j % GROUPS
                truth = _exact(data, np.flatnonzero(mask), q)
                order = sides if j % 2 == 0 else sides[::-1]
                for client, side in order:
                    ms, found = await _timed(client.search, q, session, group)
                    side.latencies.setdefault(label, []).append(ms)
                    side.hits[label] = side.hits.get(label, 0) + len(truth & set(found))
        plan = await sides[0][0].plan(queries[0], _session(0, layout), None)
    finally:
        for client, _ in sides:
            await client.close()
        await admin.aclose()
    return _rows(layout, index, n, len(queries), sides, index_sizes), plan


def _rows(layout: str, index: str, n: int, count: int, sides: list[tuple[Any, Side]],
          index_sizes: list[float]) -> list[dict[str, Any]]:
    (_, rm), (_, rv) = sides
    where = {"a": "one scope", "b": f"{SESSIONS} scopes"}[layout]
    rows = [{"layout": layout, "op": f"{index}, {where}: ingest (vectors/s)",
             "redismem": n / rm.seconds, "redisvl": n / rv.seconds,
             "ratio": rv.seconds / rm.seconds, "better": "higher"},
            {"layout": layout, "op": f"{index}, {where}: used_memory per vector (B)",
             "redismem": rm.memory / n, "redisvl": rv.memory / n,
             "ratio": rm.memory / max(1, rv.memory), "better": "lower"},
            {"layout": layout, "op": f"{index}, {where}: index memory per vector (B)",
             "redismem": index_sizes[0] / n, "redisvl": index_sizes[1] / n,
             "ratio": index_sizes[0] / index_sizes[1], "better": "lower"}]
    for label in rm.latencies:
        p50 = statistics.median(rm.latencies[label]), statistics.median(rv.latencies[label])
        rows.append({"layout": layout, "op": f"{index}, {where}, {label}: search p50 (ms)",
                     "redismem": p50[0], "redisvl": p50[1], "ratio": p50[0] / p50[1],
                     "better": "lower",
                     "recall": (rm.hits[label] / (10 * count), rv.hits[label] / (10 * count))})
    return rows


async def random_worst_case(url: str, data: np.ndarray, queries: np.ndarray,
                            index: str) -> list[dict[str, Any]]:
    """Recall of one scope of uniform random vectors at the default
    EF_RUNTIME, and the EF_RUNTIME that reaches 0.95 (per-call ``ef_runtime``)."""
    n, dim = data.shape
    side = RedismemSide(url, index)
    await side.open(dim)
    rows = []
    try:
        await side.load(data, range(n), "a")
        truth = [_exact(data, np.arange(n), q) for q in queries]
        scope = side.scope("all")
        for ef in sorted({EF_RUNTIME, 200, 400, 800, 1600, 3200, 6400, 10_000}):
            latencies, hits = [], 0
            for q, exact in zip(queries, truth, strict=True):
                start = time.perf_counter()
                found = await scope.similarity_search(q, top_k=10, ef_runtime=ef)
                latencies.append((time.perf_counter() - start) * 1000)
                hits += len(exact & {int(m.key[1:]) for m in found})
            recall = hits / (10 * len(queries))
            rows.append({"ef_runtime": ef, "recall": recall,
                         "p50_ms": statistics.median(latencies)})
            if recall >= 0.95 or index == "flat":
                break
    finally:
        await side.close()
    return rows


PLAN_SCOPES = (100, 1_000, 10_000, 30_000)


async def plans(url: str, data: np.ndarray, queries: np.ndarray,
                index: str) -> list[dict[str, Any]]:
    """The plan RediSearch gives a scope search by the scope's share of the
    index: scopes of PLAN_SCOPES vectors and one of the rest, in one index;
    per scope the plan (explain_search), p50 and recall@10 of 100 queries,
    without and with the 10% filter."""
    n, dim = data.shape
    side = RedismemSide(url, index)
    await side.open(dim)
    sizes = [size for i, size in enumerate(PLAN_SCOPES) if sum(PLAN_SCOPES[:i + 1]) < n]
    bounds = np.cumsum((0, *sizes, n - sum(sizes)))
    names = [f"s{size}" for size in sizes] + ["rest"]
    rows = []
    try:
        for name, first, last in zip(names, bounds[:-1], bounds[1:], strict=True):
            for start in range(first, last, BATCH):
                await side.scope(name).set_vectors(
                    [(f"v{i}", data[i], {"group": str(i % GROUPS)})
                     for i in range(start, min(last, start + BATCH))], atomic=False)
        groups = np.arange(n) % GROUPS
        for name, first, last in zip(names, bounds[:-1], bounds[1:], strict=True):
            scope = side.scope(name)
            for filtered in (False, True):
                latencies, hits = [], 0
                for j, q in enumerate(queries[:100]):
                    group = str(j % GROUPS) if filtered else None
                    pool = np.arange(first, last)
                    if filtered:
                        pool = pool[groups[pool] == j % GROUPS]
                    start = time.perf_counter()
                    found = await scope.similarity_search(
                        q, top_k=10, filter={"group": group} if group else None)
                    latencies.append((time.perf_counter() - start) * 1000)
                    hits += len(_exact(data, pool, q) & {int(m.key[1:]) for m in found})
                plan = await scope.explain_search(
                    queries[0], top_k=10, filter={"group": "0"} if filtered else None)
                rows.append({"scope": int(last - first), "filter": filtered, "plan": plan.plan,
                             "matched": plan.filter_matches, "visited": plan.visited,
                             "p50_ms": statistics.median(latencies),
                             "recall": hits / (10 * len(latencies))})
    finally:
        await side.close()
    return rows


async def bench(url: str, n: int, index: str, data_kind: str, layouts: str,
                dim: int = 384) -> dict[str, Any]:
    data = make_data(n, dim, data_kind)
    queries = make_data(QUERIES, dim, data_kind, seed=4242)
    result: dict[str, Any] = {"n": n, "dim": dim, "index": index, "data": data_kind,
                              "rows": [], "plans": {}}
    if layouts == "plans":
        result["by_size"] = await plans(url, data, queries, index)
        return result
    if data_kind == "random":
        result["worst_case"] = await random_worst_case(url, data, queries, index)
        return result
    for layout in layouts:
        rows, plan = await run_layout(url, data, queries, layout, index)
        result["rows"] += rows
        result["plans"][layout] = plan
    return result


def render(result: dict[str, Any]) -> str:
    title = (f"{result['n']:,} x {result['dim']}-d {result['data']} vectors, "
             f"{result['index'].upper()} (M 16, EF_CONSTRUCTION 200, EF_RUNTIME {EF_RUNTIME})")
    if "by_size" in result:
        lines = [title + ", scopes of several sizes in one index, redismem alone", "",
                 "| scope's vectors | filter | plan | filter matches | read | p50 | recall@10 |",
                 "|---:|---|---|---:|---:|---:|---:|"]
        lines += [f"| {row['scope']:,} | {'10%' if row['filter'] else 'none'} | {row['plan']} | "
                  f"{row['matched'] if row['matched'] is not None else ''} | "
                  f"{row['visited'] if row['visited'] is not None else ''} | "
                  f"{row['p50_ms']:.2f} ms | {row['recall']:.3f} |" for row in result["by_size"]]
        return "\n".join(lines)
    if "worst_case" in result:
        lines = [title + ", one scope, redismem alone", "",
                 "| ef_runtime | recall@10 | search p50 |", "|---:|---:|---:|"]
        lines += [f"| {row['ef_runtime']} | {row['recall']:.3f} | {row['p50_ms']:.2f} ms |"
                  for row in result["worst_case"]]
        return "\n".join(lines)
    lines = [title, "",
             "| measurement | redismem | redisvl | ratio | recall@10 (redismem / redisvl) |",
             "|---|---:|---:|---:|---|"]
    for row in result["rows"]:
        recall = "{:.3f} / {:.3f}".format(*row["recall"]) if "recall" in row else ""
        digits = 2 if "ms" in row["op"] else 0
        lines.append(f"| {row['op']} | {row['redismem']:,.{digits}f} | "
                     f"{row['redisvl']:,.{digits}f} | {row['ratio']:.2f} | {recall} |")
    for layout, plan in result["plans"].items():
        if plan:
            lines.append(f"\nlayout {layout}, unfiltered: {plan}")
    return "\n".join(lines)
