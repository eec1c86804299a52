"""Vector memory: indexed search on the real server, exact search on memory://
and on a server without the search module."""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Awaitable, Callable
from dataclasses import asdict

import numpy as np
import pytest
from redis.asyncio import Redis

import redismem
from redismem import keys as K
from redismem import vectors as V

from .helpers import snapshot

pytestmark = pytest.mark.on_cluster


async def test_vector_lookup_example(mem: redismem.Memory) -> None:
    scoped = mem.session("s-1")
    await scoped.set_vector("blue", [1.0, 0.0, 0.0], {"colour": "blue"})
    await scoped.set_vector("red", [0.0, 1.0, 0.0], {"colour": "red"})
    matches = await scoped.similarity_search([1.0, 0.0, 0.0], top_k=1)
    assert [asdict(m) for m in matches] == [
        {"key": "blue", "score": pytest.approx(1.0), "metadata": {"colour": "blue"},
         "revision": 1}]


async def test_ranked_search_and_min_score(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    await scope.set_vectors([("x", [1, 0]), ("xy", [1, 1]), ("y", [0, 1]), ("-x", [-1, 0.1])])
    found = await scope.similarity_search([1, 0.1], top_k=10)
    assert [m.key for m in found] == ["x", "xy", "y", "-x"]
    assert found[0].score == pytest.approx(1 / np.sqrt(1.01), abs=1e-6)
    assert -1 <= found[-1].score < 0
    strong = await scope.similarity_search([1, 0.1], top_k=10, min_score=0.5)
    assert [m.key for m in strong] == ["x", "xy"]
    assert [m.key for m in await scope.similarity_search([1, 0.1], top_k=2)] == ["x", "xy"]


TRICKY = ["a b", "x{y}|z", "@foo:bar", "-1", "*", '"quoted"', "back\\slash", "ünïcödé ✓",
          "a,b", "", "tab\tand\nnewline", "(paren) [brack]", "~!#$%^&=+;'<>?/", "1"]


async def test_metadata_filters_match_exactly(mem: redismem.Memory) -> None:
    scope = mem.session("filters")
    rng = np.random.default_rng(7)
    items = [(f"k{i}", rng.normal(size=8), {"tag": value, "i": i})
             for i, value in enumerate(TRICKY)]
    items += [("num1", rng.normal(size=8), {"tag": 1}), ("true", rng.normal(size=8), {"tag": True}),
              ("float", rng.normal(size=8), {"tag": 1.5}),
              ("nested", rng.normal(size=8), {"tag": {"a": 1}})]
    await scope.set_vectors(items)
    query = rng.normal(size=8)
    for i, value in enumerate(TRICKY):
        found = await scope.similarity_search(query, top_k=50, filter={"tag": value})
        assert [m.key for m in found] == [f"k{i}"], value
    assert [m.key for m in await scope.similarity_search(query, 50, filter={"tag": 1.0})] == [
        "num1"]
    assert [m.key for m in await scope.similarity_search(query, 50, filter={"tag": True})] == [
        "true"]
    assert [m.key for m in await scope.similarity_search(query, 50, filter={"tag": 1.5})] == [
        "float"]
    both = await scope.similarity_search(query, 50, filter={"tag": "a b", "i": 0})
    assert [m.key for m in both] == ["k0"]
    assert await scope.similarity_search(query, 50, filter={"tag": "a b", "i": 1}) == []
    assert await scope.similarity_search(query, 50, filter={"missing": "x"}) == []


async def test_filtered_search_returns_top_k_when_enough_match(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    rng = np.random.default_rng(3)
    await scope.set_vectors([(f"v{i}", rng.normal(size=16), {"group": i % 20})
                             for i in range(400)], atomic=False)
    found = await scope.similarity_search(rng.normal(size=16), top_k=20, filter={"group": 7})
    assert len(found) == 20 and all(m.metadata["group"] == 7 for m in found)
    assert [m.score for m in found] == sorted((m.score for m in found), reverse=True)


async def test_listing_revisions_and_conflicts(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("same", "a value")
    assert await scope.set_vector("same", [1, 2], expected_revision=0) == 1
    assert await scope.set_vector("same", [2, 1], {"v": 2}, expected_revision=1) == 2
    with pytest.raises(redismem.ConflictError) as info:
        await scope.set_vector("same", [1, 1], expected_revision=1)
    assert (info.value.code, info.value.expected, info.value.actual) == ("revision_conflict", 1, 2)
    with pytest.raises(redismem.ConflictError):
        await scope.delete_vector("same", expected_revision=1)
    assert (await scope.get("same")).revision == 1  # value revisions are separate
    got = await scope.get_vector("same")
    assert (got.embedding, got.metadata, got.revision, got.found) == ([2.0, 1.0], {"v": 2}, 2,
                                                                       True)
    await scope.set_vectors({"b": [1, 0], "a": [0, 1]})
    assert await scope.list_keys(kind="vector") == ["a", "b", "same"]
    assert (await scope.keys(kind="vector", prefix="s")).keys == ["same"]
    assert await scope.list_keys() == ["same"]
    assert await scope.delete_vector("same", expected_revision=2) is True
    assert await scope.delete_vector("same") is False
    assert await scope.get_vector("same") == redismem.VectorValue(None, None, 0, False)
    with pytest.raises(redismem.ConflictError):  # no ABA after delete
        await scope.set_vector("same", [1, 0], expected_revision=2)
    assert await scope.set_vector("same", [1, 0], expected_revision=0) == 4
    events = (await scope.changes(prefix="same")).items
    vector_events = [e for e in events if e.kind == "vector"]
    assert [(e.action, e.revision) for e in vector_events] == [
        ("set", 1), ("set", 2), ("delete", 3), ("set", 4)]
    assert all(e.value is None and not e.value_omitted for e in vector_events)


async def test_vector_ttl(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set_vector("keep", [1, 0, 0])
    await scope.set_vector("gone", [1, 0.1, 0], ttl_seconds=0.05)
    assert len(await scope.similarity_search([1, 0, 0])) == 2
    await asyncio.sleep(0.15)
    assert (await scope.get_vector("gone")).found is False
    assert await scope.list_keys(kind="vector") == ["keep"]
    assert [m.key for m in await scope.similarity_search([1, 0, 0])] == ["keep"]


async def test_isolation_between_scopes_and_namespaces(mem: redismem.Memory) -> None:
    await mem.session("a").set_vector("k", [1, 0])
    await mem.session("b").set_vector("k", [0, 1])
    await mem.global_scope().set_vector("g", [1, 1])
    assert [m.key for m in await mem.session("a").similarity_search([0, 1])] == ["k"]
    assert (await mem.session("a").similarity_search([0, 1]))[0].score == pytest.approx(0)
    assert [m.key for m in await mem.session("c").similarity_search([0, 1])] == []
    assert [m.key for m in await mem.global_scope().similarity_search([0, 1])] == ["g"]


async def test_other_namespace_is_isolated(rmem: redismem.Memory, server_url: str) -> None:
    await rmem.global_scope().set_vector("mine", [1, 0])
    async with await redismem.connect(server_url, namespace=rmem.namespace + "x") as other:
        assert await other.global_scope().similarity_search([1, 0]) == []
        await other.global_scope().set_vector("theirs", [1, 0])
    assert [m.key for m in await rmem.global_scope().similarity_search([1, 0])] == ["mine"]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.set_vector("v", [0.0, 0.0, 0.0]), redismem.InvalidVectorError, "zero"),
        (lambda s: s.set_vector("v", [1e-50, 0.0]), redismem.InvalidVectorError, "zero"),
        (lambda s: s.set_vector("v", [1.0, float("nan")]), redismem.InvalidVectorError, "finite"),
        (lambda s: s.set_vector("v", [1.0, float("inf")]), redismem.InvalidVectorError, "finite"),
        (lambda s: s.set_vector("v", [1e39, 1.0]), redismem.InvalidVectorError, "float32"),
        (lambda s: s.set_vector("v", []), redismem.InvalidVectorError, "non-empty"),
        (lambda s: s.set_vector("v", [[1.0, 2.0]]), redismem.InvalidVectorError, "flat"),
        (lambda s: s.set_vector("v", ["a", "b"]), redismem.InvalidVectorError, "numbers"),
        (lambda s: s.set_vector("v", [1.0] * 4097), redismem.InvalidVectorError, "4096"),
        (lambda s: s.set_vector("v", [1.0], [1, 2]), redismem.InvalidMetadataError, "dict"),
        (lambda s: s.set_vector("v", [1.0], {"x": "y" * 16_400}), redismem.InvalidMetadataError,
         "16384"),
        (lambda s: s.set_vector("v", [1.0], {"x": float("nan")}), redismem.InvalidMetadataError,
         "JSON"),
        (lambda s: s.set_vector("", [1.0]), redismem.InvalidKeyError, "non-empty"),
        (lambda s: s.set_vector("v", [1.0], ttl_seconds=0), redismem.InvalidTTLError, "positive"),
        (lambda s: s.set_vector("v", [1.0], expected_revision=-2), redismem.InvalidRevisionError,
         ">= 0"),
        (lambda s: s.set_vectors([("v", [1.0]), ("w", [0.0])]), redismem.InvalidVectorError,
         "zero"),
        (lambda s: s.set_vectors([("v",)]), redismem.InvalidArgumentError, "tuples"),
        (lambda s: s.similarity_search([0.0, 0.0, 0.0]), redismem.InvalidVectorError, "zero"),
        (lambda s: s.similarity_search([1.0, 0.0]), redismem.InvalidVectorError,
         "dimension 2; this scope's vectors have dimension 3"),
        (lambda s: s.similarity_search([1.0, 0, 0], top_k=0), redismem.InvalidArgumentError,
         "top_k"),
        (lambda s: s.similarity_search([1.0, 0, 0], top_k=1001), redismem.InvalidArgumentError,
         "top_k"),
        (lambda s: s.similarity_search([1.0, 0, 0], min_score=2), redismem.InvalidArgumentError,
         "min_score"),
        (lambda s: s.similarity_search([1.0, 0, 0], ef_runtime=0), redismem.InvalidArgumentError,
         "ef_runtime must be between 1 and 10000, got 0"),
        (lambda s: s.similarity_search([1.0, 0, 0], ef_runtime=10_001),
         redismem.InvalidArgumentError, "ef_runtime"),
        (lambda s: s.similarity_search([1.0, 0, 0], ef_runtime=True),
         redismem.InvalidArgumentError, "ef_runtime"),
        (lambda s: s.similarity_search([1.0, 0, 0], ef_runtime=50.0),
         redismem.InvalidArgumentError, "ef_runtime"),
        (lambda s: s.similarity_search([1.0, 0, 0], filter={"a": [1]}),
         redismem.InvalidMetadataError, "filter values"),
        (lambda s: s.similarity_search([1.0, 0, 0], filter={"a": float("nan")}),
         redismem.InvalidMetadataError, "filter values"),
    ],
)
async def test_bad_vector_input(mem: redismem.Memory, call: object, error: type[Exception],
                                message: str) -> None:
    scope = mem.session("s")
    await scope.set_vector("base", [1.0, 0.0, 0.0])
    before = await snapshot(mem)
    with pytest.raises(error, match=message) as info:
        await call(scope)  # type: ignore[operator]
    assert isinstance(info.value, ValueError)
    if isinstance(info.value, redismem.InvalidVectorError):
        assert info.value.code == "invalid_vector"
    assert await snapshot(mem) == before


def raw_vector_call(ns: str, blob: bytes, meta: str = "{}", key: str = "v") -> list[object]:
    keys = [*K.scope_writes(ns, "vector", "session", "s", "me"), K.vector_dims(ns, "session", "s"),
            K.vector(ns, "session", "s", key)]
    return ["FCALL", "redismem_set_vectors", len(keys), *keys, ns, "session", "s", "", "me", "",
            "", key, blob, meta, ""]


async def test_raw_fcall_vectors(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    await rmem.session("s").set_vector("base", [1.0, 0.0])
    before = await snapshot(rmem)
    nan = struct.pack("<2f", 1.0, float("nan"))
    inf = struct.pack("<2f", float("-inf"), 1.0)
    for args, code in [
        (raw_vector_call(ns, struct.pack("<3f", 0, 0, 0)), "INVALID_VECTOR"),
        (raw_vector_call(ns, struct.pack("<2f", -0.0, 0.0)), "INVALID_VECTOR"),
        (raw_vector_call(ns, nan), "INVALID_VECTOR"),
        (raw_vector_call(ns, inf), "INVALID_VECTOR"),
        (raw_vector_call(ns, b"abc"), "INVALID_VECTOR"),
        (raw_vector_call(ns, b""), "INVALID_VECTOR"),
        (raw_vector_call(ns, b"\x00\x00\x80\x3f" * 4097), "INVALID_VECTOR"),
        (raw_vector_call(ns, struct.pack("<2f", 1, 0), meta="[1]"), "INVALID_METADATA"),
        (raw_vector_call(ns, struct.pack("<2f", 1, 0), meta="nope"), "INVALID_METADATA"),
        (raw_vector_call(ns, struct.pack("<2f", 1, 0), meta='{"a":"' + "x" * 16_400 + '"}'),
         "INVALID_METADATA"),
        (raw_vector_call(ns, struct.pack("<2f", 1, 0), key="a\nb"), "INVALID_KEY"),
        (["FCALL_RO", "redismem_get_vectors", 1, K.value(ns, "session", "s", "k")],
         "INVALID_ARGUMENT"),
        (["FCALL", "redismem_delete_vector", 1, K.vector(ns, "session", "s", "base"), ns,
          "session", "s", "base", "", "me", "", ""], "INVALID_ARGUMENT"),
    ]:
        with pytest.raises(Exception) as info:
            await rmem.client.execute_command(*args)
        assert str(info.value).startswith(code), (code, str(info.value))
        assert await snapshot(rmem) == before
    ok = await rmem.client.execute_command(
        *raw_vector_call(ns, struct.pack("<2f", 0.5, 0.5), meta='{"n":0.1,"b":true,"s":"x y"}'))
    assert ok == [1]
    stored = await rmem.client.hget(K.vector(ns, "session", "s", "v"), "_meta")
    assert sorted(stored.decode().split(",")) == V.filter_tokens({"n": 0.1, "b": True,
                                                                  "s": "x y"})
    got = await rmem.client.execute_command(
        "FCALL_RO", "redismem_get_vectors", 2, K.vector(ns, "session", "s", "v"),
        K.vector(ns, "session", "s", "nope"))
    assert got == [struct.pack("<2f", 0.5, 0.5), b'{"n":0.1,"b":true,"s":"x y"}', 1, None, None,
                   0]


async def test_lua_and_python_metadata_tokens_agree(rmem: redismem.Memory) -> None:
    values = [0.1, 1, 1.0, -0.0, 2**60, 1e20, 1e-7, 123456789.123, True, False, "s", "ü,{}"]
    scope = rmem.global_scope()
    await scope.set_vectors([(f"k{i}", [1.0, float(i + 1)], {"v": value})
                             for i, value in enumerate(values)])
    for i, value in enumerate(values):
        stored = await rmem.client.hget(K.vector(rmem.namespace, "global", "_", f"k{i}"), "_meta")
        assert stored.decode() == V.filter_tokens({"v": value})[0], value


def recall(indexed: list[list[str]], exact: list[list[str]]) -> float:
    hits = sum(len(set(a) & set(b)) for a, b in zip(indexed, exact, strict=True))
    return hits / sum(len(b) for b in exact)


async def test_hnsw_agrees_with_exact(rmem: redismem.Memory) -> None:
    rng = np.random.default_rng(2024)
    data = rng.normal(size=(2000, 64)).astype(np.float32)
    scope = rmem.global_scope()
    for start in range(0, 2000, 500):
        await scope.set_vectors([(f"v{i:04d}", data[i]) for i in range(start, start + 500)],
                                atomic=False)
    normed = data / np.linalg.norm(data, axis=1, keepdims=True)
    queries = rng.normal(size=(30, 64)).astype(np.float32)
    indexed, exact = [], []
    for q in queries:
        indexed.append([m.key for m in await scope.similarity_search(q, top_k=10)])
        scores = normed @ (q / np.linalg.norm(q))
        exact.append([f"v{i:04d}" for i in np.argsort(-scores)[:10]])
    assert recall(indexed, exact) >= 0.95


async def test_exact_fallback_without_search_module(plain_redis: str) -> None:
    async with await redismem.connect(plain_redis, namespace="plain") as mem:
        assert mem.capabilities.search is False
        assert mem.capabilities.vector_search == "exact"
        assert not mem.capabilities.server_version.startswith("8.")
        scope = mem.session("s")
        rng = np.random.default_rng(11)
        data = rng.normal(size=(300, 24)).astype(np.float32)
        await scope.set_vectors([(f"v{i:03d}", data[i], {"odd": i % 2 == 1}) for i in range(300)],
                                atomic=False)
        normed = data.astype(np.float64)
        normed /= np.linalg.norm(normed, axis=1, keepdims=True)
        for q in rng.normal(size=(5, 24)).astype(np.float32):
            found = await scope.similarity_search(q, top_k=5)
            scores = normed @ (q.astype(np.float64) / np.linalg.norm(q.astype(np.float64)))
            assert [m.key for m in found] == [f"v{i:03d}" for i in np.argsort(-scores)[:5]]
            assert [m.score for m in found] == pytest.approx(sorted(scores)[::-1][:5])
            odd = await scope.similarity_search(q, top_k=5, filter={"odd": True})
            expected = [i for i in np.argsort(-scores) if i % 2 == 1][:5]
            assert [m.key for m in odd] == [f"v{i:03d}" for i in expected]
        with pytest.raises(redismem.InvalidVectorError):
            await scope.set_vector("zero", [0.0] * 24)




async def test_flat_index_setting(rmem: redismem.Memory, server_url: str) -> None:
    assert (await rmem.settings())["vector_index"] == "hnsw"
    with pytest.raises(redismem.InvalidArgumentError, match="flat, hnsw"):
        await rmem.configure(vector_index="ivf")
    await rmem.configure(vector_index="flat")
    scope = rmem.global_scope()
    rng = np.random.default_rng(5)
    data = rng.normal(size=(500, 16)).astype(np.float32)
    await scope.set_vectors([(f"v{i:03d}", data[i]) for i in range(500)], atomic=False)
    info = await V.index_info(rmem.client, K.vector_index(rmem.namespace, 16))
    assert V._algorithm(info) == "FLAT"
    normed = data / np.linalg.norm(data, axis=1, keepdims=True)
    q = rng.normal(size=16).astype(np.float32)
    expected = [f"v{i:03d}" for i in np.argsort(-(normed @ q))[:10]]
    assert [m.key for m in await scope.similarity_search(q, top_k=10)] == expected
    # another process with other settings finds the index as it is and searches it
    async with await redismem.connect(server_url, namespace=rmem.namespace) as other:
        await other.configure(vector_index="hnsw")
        found = await other.global_scope().similarity_search(q, top_k=10)
        assert [m.key for m in found] == expected
        assert other._conn.indexes == {K.vector_index(rmem.namespace, 16): "FLAT"}


async def test_index_creation_race(server_url: str, ns: str) -> None:
    async def writer(i: int) -> int:
        async with await redismem.connect(server_url, namespace=ns) as mem:
            return await mem.global_scope().set_vector(f"k{i}", [1.0, float(i)])

    assert await asyncio.gather(*(writer(i) for i in range(8))) == [1] * 8
    async with await redismem.connect(server_url, namespace=ns) as mem:
        assert len(await mem.global_scope().similarity_search([1.0, 0.0], top_k=20)) == 8
        # many first writes at once on one connection: one index, no pool exhaustion
        many = await asyncio.gather(*(mem.session("many").set_vector(f"k{i}", [1.0, i, 2.0])
                                      for i in range(300)))
        assert many == [1] * 300
        assert list(mem._conn.indexes) == [K.vector_index(ns, 2), K.vector_index(ns, 3)]


async def test_a_search_makes_a_vanished_index_again(rmem: redismem.Memory) -> None:
    """An index the connection made can vanish under it (FT.DROPINDEX,
    FLUSHALL, or its namespace's slot moving to another cluster node, which
    gets the keys but not the index): the next search makes it again over
    the vectors already there instead of failing with "no such index"."""
    scope = rmem.session("s")
    await scope.set_vector("x", [1.0, 0.0, 0.0], {"c": "a"})
    await scope.set_vector("y", [0.0, 1.0, 0.0], {"c": "b"})
    before = await scope.similarity_search([0.9, 0.1, 0.0], top_k=2)
    await rmem.client.execute_command("FT.DROPINDEX", K.vector_index(rmem.namespace, 3))
    assert await scope.similarity_search([0.9, 0.1, 0.0], top_k=2) == before
    assert [m.key for m in await scope.similarity_search([0.0, 1.0, 0.0], top_k=2,
                                                         filter={"c": "b"})] == ["y"]


async def test_ef_runtime_is_set_for_one_search(redis_url: str, ns: str) -> None:
    """A search's ``ef_runtime`` reaches the server's query for that search
    only; others use the namespace's setting (seen in SLOWLOG)."""
    async with await redismem.connect(redis_url, namespace=ns) as mem:
        scope = mem.session("s")
        await scope.set_vectors([(f"v{i}", [1.0, i / 10]) for i in range(20)])
        found = []

        async def search() -> None:
            found.append(await scope.similarity_search([1.0, 0.5], top_k=3, ef_runtime=777))
            found.append(await scope.similarity_search([1.0, 0.5], top_k=3))
        searches = await _searches(mem.client, search)
    efs = [words[words.index(b"ef") + 1] for words in searches]
    assert efs == [b"777", b"200"]
    assert found[0] == found[1]


async def test_a_search_on_a_known_index_is_one_round_trip(
        redis_url: str, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the connection knows the index, the scope's dimensions and the
    search go out together: one send to the server per search."""
    from redis.asyncio.connection import AbstractConnection

    async with await redismem.connect(redis_url, namespace=ns) as mem:
        scope = mem.session("s")
        await scope.set_vectors([("x", [1.0, 0.0]), ("y", [0.0, 1.0])])
        first = await scope.similarity_search([1.0, 0.2], top_k=2)
        sends = []
        original = AbstractConnection.send_packed_command

        async def counted(self: AbstractConnection, *args: object, **kwargs: object) -> None:
            sends.append(1)
            await original(self, *args, **kwargs)  # type: ignore[arg-type]

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
        assert await scope.similarity_search([1.0, 0.2], top_k=2) == first
        assert len(sends) == 1
        with pytest.raises(redismem.InvalidVectorError, match="dimension 3"):
            await scope.similarity_search([1.0, 0.0, 0.0])
        assert await mem.session("empty").similarity_search([1.0, 0.0]) == []


async def _searches(client: Redis, run: Callable[[], Awaitable[None]]) -> list[list[bytes]]:
    """The FT.SEARCH commands (split into words) the server ran while
    ``run()`` ran, in order (SLOWLOG)."""
    await client.config_set("slowlog-log-slower-than", 0)
    try:
        await client.slowlog_reset()
        await run()
        log = await client.slowlog_get(1024)
    finally:
        await client.config_set("slowlog-log-slower-than", 10_000)
    return [entry["command"].split() for entry in reversed(log)
            if entry["command"].startswith(b"FT.SEARCH")]


async def _queries(client: Redis, run: Callable[[], Awaitable[None]]) -> list[bytes]:
    """The query texts of :func:`_searches`."""
    return [words[2] for words in await _searches(client, run)]


def _exact_keys(rows: dict[str, list[float]], query: list[float], k: int) -> list[str]:
    names = sorted(rows)
    matrix = np.array([rows[n] for n in names], dtype=np.float64)
    scores = matrix @ np.array(query) / np.linalg.norm(matrix, axis=1) / np.linalg.norm(query)
    return [names[i] for i in sorted(range(len(names)), key=lambda i: (-scores[i], names[i]))[:k]]


async def test_a_scope_holding_the_whole_index_searches_without_its_filter(
        redis_url: str, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a search has seen that its scope holds every document of the
    index, the next ones are a plain KNN (no scope filter for RediSearch to
    brute-force); when another scope gets vectors, the filter comes back.
    Every answer is the exact ranking."""
    from redismem import _plans

    monkeypatch.setattr(_plans, "INDEX_DOCS_TTL", 0.0)
    rng = np.random.default_rng(5)
    rows = {f"v{i}": rng.normal(size=4).tolist() for i in range(40)}
    q = rng.normal(size=4).tolist()
    async with await redismem.connect(redis_url, namespace=ns) as mem:
        scope = mem.global_scope()
        await scope.set_vectors(list(rows.items()))

        async def twice() -> None:
            for _ in range(2):
                assert [m.key for m in await scope.similarity_search(q, top_k=5)] == \
                    _exact_keys(rows, q, 5)

        first, second = await _queries(mem.client, twice)
        assert b"@_sc:" in first and b"@_sc:" not in second
        await mem.session("other").set_vector("near", q)
        # the next search still leaves the filter out, meets "near" (the
        # closest document) and runs again with it; then it stays
        again = await _queries(mem.client, twice)
        assert [b"@_sc:" in text for text in again] == [False, True, True]


async def test_an_unscoped_search_that_meets_another_scope_runs_again_with_the_filter(
        redis_url: str, ns: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A scope's count runs high once its vectors expire, so it can look like
    the whole index while another scope has vectors: the plain KNN then
    returns the other scope's documents, and the search runs again with the
    scope's filter, so nothing of another scope is ever returned."""
    from redismem import _plans

    monkeypatch.setattr(_plans, "INDEX_DOCS_TTL", 0.0)
    async with await redismem.connect(redis_url, namespace=ns) as mem:
        fading, other = mem.session("fading"), mem.session("other")
        await fading.set_vectors([(f"f{i}", [1.0, i]) for i in range(3)], ttl_seconds=0.3)
        await other.set_vectors([("o1", [1.0, 0.0]), ("o2", [0.0, 1.0])])
        assert len(await fading.similarity_search([1.0, 0.0])) == 3
        await asyncio.sleep(0.5)
        # the three expire (read, so the server drops them from the index now);
        # fading's count stays 3 while the index holds 2
        expired = [K.vector(ns, "session", "fading", f"f{i}") for i in range(3)]
        assert await mem.client.exists(*expired) == 0
        assert await fading.similarity_search([1.0, 0.0]) == []  # learns: 3 >= 2

        async def search() -> None:
            assert await fading.similarity_search([1.0, 0.0]) == []
        texts = await _queries(mem.client, search)
        assert [b"@_sc:" in text for text in texts] == [False, True]
        assert all(b"@_sc:" in text for text in await _queries(mem.client, search))
        assert [m.key for m in await other.similarity_search([1.0, 0.1])] == ["o1", "o2"]


async def test_explain_search_reports_the_plan(redis_url: str, ns: str) -> None:
    async with await redismem.connect(redis_url, namespace=ns) as mem:
        big, small = mem.global_scope(), mem.session("small")
        await big.set_vectors([(f"b{i}", [1.0, i, 1.0], {"g": i % 4}) for i in range(60)])
        plan = await big.explain_search([1.0, 2.0, 1.0])
        assert (plan.plan, plan.scope_vectors, plan.index_vectors) == ("knn", 60, 60)
        assert plan.algorithm == "HNSW" and plan.ef_runtime == 200
        assert "@_sc" not in plan.query
        # where its time went: the round trip, the server's part of it, the client's
        assert plan.round_trip_ms is not None and plan.round_trip_ms > 0
        assert plan.server_ms is not None and 0 <= plan.server_ms <= plan.round_trip_ms
        assert plan.client_ms is not None and plan.client_ms > 0
        filtered = await big.explain_search([1.0, 2.0, 1.0], filter={"g": 1}, ef_runtime=300)
        assert (filtered.plan, filtered.filter_matches, filtered.ef_runtime) == (
            "knn", 15, 300)
        await small.set_vectors([(f"s{i}", [0.0, 1.0, i], {"g": i % 2}) for i in range(5)])
        plan = await small.explain_search([0.0, 1.0, 1.0])
        assert (plan.plan, plan.scope_vectors, plan.index_vectors) == (
            "hybrid brute force", 5, 65)
        assert (plan.filter_matches, plan.visited) == (5, 5)
        both = await small.explain_search([0.0, 1.0, 1.0], filter={"g": 1})  # scope and filter
        assert (both.plan, both.filter_matches, both.visited) == ("hybrid brute force", 2, 2)
        assert plan.index == K.vector_index(ns, 3)
        plan = await big.explain_search([1.0, 2.0, 1.0])  # no longer the whole index
        assert plan.plan.startswith("hybrid") and plan.filter_matches == 60
        never = await small.explain_search([0.0, 1.0, 1.0], filter={"g": "never"})
        assert (never.filter_matches, never.visited) == (0, 0)
        with pytest.raises(redismem.InvalidVectorError, match="dimension 2"):
            await small.explain_search([1.0, 2.0])


async def test_awkward_searches_are_answered_exactly(mem: redismem.Memory) -> None:
    """A filter value that never occurs, an empty scope, fewer vectors than
    top_k and a query of another dimension, on every backend."""
    scope = mem.session("few")
    rows = {"a": [1.0, 0.0, 0.2], "b": [0.5, 0.5, 0.0], "c": [-1.0, 0.3, 0.0]}
    await scope.set_vectors([(k, v, {"colour": k}) for k, v in rows.items()])
    found = await scope.similarity_search([1.0, 0.1, 0.1], top_k=50)
    assert [m.key for m in found] == _exact_keys(rows, [1.0, 0.1, 0.1], 50)
    assert await scope.similarity_search([1.0, 0.1, 0.1], filter={"colour": "none"}) == []
    assert await scope.similarity_search([1.0, 0.1, 0.1], filter={"shade": "a"}) == []
    assert [m.key for m in await scope.similarity_search(
        [1.0, 0.1, 0.1], top_k=50, filter={"colour": "c"})] == ["c"]
    assert await mem.session("empty").similarity_search([1.0, 0.1, 0.1], top_k=50) == []
    with pytest.raises(redismem.InvalidVectorError, match="dimension 4; this scope's vectors "
                       "have dimension 3"):
        await scope.similarity_search([1.0, 0.0, 0.0, 0.0])


async def test_explain_search_without_the_search_module(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set_vectors([("a", [1.0, 0.0]), ("b", [0.0, 1.0])])
    plan = await scope.explain_search([1.0, 0.0])
    if mem.capabilities.search:
        assert plan.plan in ("knn", "hybrid brute force")
    else:
        assert (plan.plan, plan.index, plan.scope_vectors) == ("exact", None, 2)


async def test_vector_revisions_go_on_after_expiry_and_delete(mem: redismem.Memory) -> None:
    """A vector written with an expiry records its revision before it can
    vanish, and a delete records the revision it issues: a re-created
    vector never reuses a revision."""
    scope = mem.session("s")
    assert await scope.set_vector("v", [1.0, 0.0], ttl_seconds=0.05) == 1
    await asyncio.sleep(0.15)
    assert (await scope.get_vector("v")).found is False
    assert await scope.set_vector("v", [0.0, 1.0]) == 2
    assert await scope.set_vector("v", [1.0, 1.0]) == 3
    assert await scope.delete_vector("v") is True
    assert await scope.set_vector("v", [1.0, 0.5], expected_revision=0) == 5


@pytest.mark.parametrize("field, raw", [("emb", b"\x00\x00\x80?\x00"), ("meta", b"nope"),
                                        ("meta", b"[1]"), ("meta", b"\xff\xfe")])
async def test_a_raw_vector_field_is_a_corrupt_entry_error_naming_it(
        rmem: redismem.Memory, field: str, raw: bytes) -> None:
    """A writer's raw HSET of a vector's embedding (5 bytes) or metadata (not
    JSON, not an object, not UTF-8): get_vector raises CorruptEntryError
    naming the key, never numpy's ValueError or a JSONDecodeError."""
    scope = rmem.session("s")
    await scope.set_vector("v", [1.0, 0.0])
    name = K.vector(rmem.namespace, "session", "s", "v")
    await rmem.client.hset(name, field, raw)
    with pytest.raises(redismem.CorruptEntryError) as caught:
        await scope.get_vector("v")
    assert caught.value.key == name


async def test_a_raw_dimensions_count_that_is_no_number_breaks_no_search(
        rmem: redismem.Memory) -> None:
    """A raw HSET of 'abc' into a scope's dimensions hash: searches go on
    (before: ValueError from int())."""
    scope = rmem.session("s")
    await scope.set_vector("v", [1.0, 0.0])
    await rmem.client.hset(K.vector_dims(rmem.namespace, "session", "s"),
                           mapping={"2x": "1", "3": "abc"})
    assert [m.key for m in await scope.similarity_search([1.0, 0.0])] == ["v"]
