"""RedismemStore against LangGraph's own InMemoryStore: the same random
operations give the same results (hypothesis), and the namespace shapes
the incumbent Redis store gets wrong are stored and found exactly."""

from __future__ import annotations

import hashlib
import math
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from langgraph.store.base import InvalidNamespaceError
from langgraph.store.memory import InMemoryStore

import redismem
from redismem.langgraph import RedismemStore
from redismem.langgraph.store import item_key, split_key

LABELS = st.sampled_from(["users", "u1", "u:2", "a b", "{x}", "*", "the", "and", "é", "a/b",
                          "100%", "memories", "langgraph"])
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
KEYS = st.sampled_from(["k1", "k2", "prefs", "a.b", "x/y", "with space", "ü"])
VALUES = st.fixed_dictionaries({"n": st.integers(0, 5)},
                               optional={"tag": st.sampled_from(["red", "blue"]),
                                         "nested": st.fixed_dictionaries(
                                             {"level": st.integers(0, 2)})})
FILTERS = st.one_of(st.none(), st.just({"n": 1}), st.just({"tag": "red"}),
                    st.just({"n": {"$gt": 2}}), st.just({"nested": {"level": 1}}),
                    st.just({"n": {"$ne": 0}, "tag": "blue"}))
OPS = st.one_of(
    st.tuples(st.just("put"), NAMESPACES, KEYS, VALUES),
    st.tuples(st.just("delete"), NAMESPACES, KEYS),
    st.tuples(st.just("get"), NAMESPACES, KEYS),
    st.tuples(st.just("search"), st.lists(LABELS, max_size=2).map(tuple), FILTERS),
    st.tuples(st.just("list"), st.one_of(st.none(), st.lists(LABELS, max_size=2).map(tuple)),
              st.one_of(st.none(), st.lists(LABELS, min_size=1, max_size=2).map(tuple)),
              st.one_of(st.none(), st.integers(1, 3))),
)


@pytest.fixture(scope="module")
def sync_url(redis_url: str) -> Iterator[str]:
    yield redis_url


def live_namespaces(reference: InMemoryStore) -> set[tuple[str, ...]]:
    """InMemoryStore also lists namespaces that only a get or a delete
    touched; redismem lists those that hold an item."""
    return {ns for ns, items in reference._data.items() if items}


def outcome(call: Any, *args: Any) -> Any:
    """What a call returned, or the type of what it raised."""
    try:
        return call(*args)
    except Exception as exc:  # compared by type
        return type(exc)


@pytest.mark.parametrize("api", ["sync", "async"])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                  HealthCheck.function_scoped_fixture])
@given(ops=st.lists(OPS, min_size=1, max_size=25))
def test_random_operations_give_what_inmemorystore_gives(sync_url: str, api: str,
                                                         ops: list[tuple[Any, ...]]) -> None:
    """``api``: the sync methods (BaseStore's, through batch), or the async
    ones (RedismemStore's own aget and aput)."""
    reference = InMemoryStore()
    store = RedismemStore(url=sync_url, namespace="lgs" + uuid.uuid4().hex[:10])
    if api == "sync":
        put, get, delete = store.put, store.get, store.delete
    else:
        def put(*args: Any) -> None:
            store._sync(store.aput(*args))

        def get(*args: Any) -> Any:
            return store._sync(store.aget(*args))

        def delete(*args: Any) -> None:
            store._sync(store.adelete(*args))
    try:
        for op in ops:
            if op[0] == "put":
                assert outcome(reference.put, *op[1:]) == outcome(put, *op[1:]), op
            elif op[0] == "delete":
                reference.delete(op[1], op[2])
                delete(op[1], op[2])
            elif op[0] == "get":
                want, got = reference.get(op[1], op[2]), get(op[1], op[2])
                assert (got is None) == (want is None), op
                if want is not None and got is not None:
                    assert (got.namespace, got.key, got.value) == (want.namespace, want.key,
                                                                   want.value), op
            elif op[0] == "search":
                want = reference.search(op[1], filter=op[2], limit=1000)
                got = store.search(op[1], filter=op[2], limit=1000)
                assert sorted((i.namespace, i.key) for i in got) == sorted(
                    (i.namespace, i.key) for i in want), op
                assert all(i.value == reference.get(i.namespace, i.key).value for i in got)
                # InMemoryStore returns insertion order; redismem namespace, then key order
                assert [(i.namespace, i.key) for i in got] == sorted(
                    (i.namespace, i.key) for i in got)
            else:
                _, prefix, suffix, depth = op
                live = live_namespaces(reference)
                want_all = reference.list_namespaces(prefix=prefix, suffix=suffix,
                                                     max_depth=depth, limit=10_000)
                expected = sorted({ns[:depth] if depth else ns for ns in live
                                   if any(w == (ns[:depth] if depth else ns) for w in want_all)})
                got = store.list_namespaces(prefix=prefix, suffix=suffix, max_depth=depth,
                                            limit=10_000)
                assert got == expected, op
    finally:
        store.close()


async def test_multi_label_and_stopword_namespaces_are_kept_apart(rmem: redismem.Memory) -> None:
    """The incumbent resolves namespaces by a text query: a multi-label
    namespace's get returned None, and a namespace made of stopwords
    deleted other namespaces' items."""
    store = RedismemStore(rmem)
    spaces = [("users", "u1", "memories"), ("the", "and", "a"), ("the",), ("a:b", "{c}", "*"),
              ("with space", "ü", "x/y%z"), ("users", "u1")]
    for i, ns in enumerate(spaces):
        await store.aput(ns, "k", {"i": i})
    await store.adelete(("the", "and", "a"), "k")
    assert await store.aget(("the", "and", "a"), "k") is None
    for i, ns in enumerate(spaces):
        if ns != ("the", "and", "a"):
            item = await store.aget(ns, "k")
            assert item is not None and item.value == {"i": i} and item.namespace == ns
    assert await store.alist_namespaces() == sorted(set(spaces) - {("the", "and", "a")})
    assert await store.alist_namespaces(prefix=("users",)) == [("users", "u1"),
                                                              ("users", "u1", "memories")]
    assert [i.namespace for i in await store.asearch(("users", "u1"))] == [
        ("users", "u1"), ("users", "u1", "memories")]
    assert (await rmem.workflow("langgraph-store").get("users.u1.memories/k")).value["value"] \
        == {"i": 0}


async def test_a_batch_gets_every_item_it_names(rmem: redismem.Memory) -> None:
    """The incumbent's batch get returned at most 10 items."""
    from langgraph.store.base import GetOp, PutOp

    store = RedismemStore(rmem)
    await store.abatch([PutOp(("docs", str(i % 3)), f"k{i}", {"i": i}) for i in range(250)])
    got = await store.abatch([GetOp(("docs", str(i % 3)), f"k{i}") for i in range(250)])
    assert [item.value["i"] for item in got] == list(range(250))
    assert len(await store.asearch(("docs",), limit=1000)) == 250
    page = await store.asearch(("docs",), limit=10, offset=245)
    assert [(i.namespace, i.key) for i in page] == sorted(
        (("docs", str(i % 3)), f"k{i}") for i in range(250))[245:]


async def test_items_keep_their_creation_time_and_expire(rmem: redismem.Memory) -> None:
    store = RedismemStore(rmem)
    await store.aput(("t",), "k", {"v": 1})
    first = await store.aget(("t",), "k")
    await store.aput(("t",), "k", {"v": 2}, ttl=0.002)
    second = await store.aget(("t",), "k", refresh_ttl=False)
    assert second.value == {"v": 2} and second.created_at == first.created_at
    assert second.updated_at >= first.updated_at
    pttl = await rmem.client.pttl(redismem.keys.value(rmem.namespace, "workflow",
                                                      "langgraph-store", "t/k"))
    assert 0 < pttl <= 120
    while await store.aget(("t",), "k", refresh_ttl=False) is not None:
        pass  # redismem's expiry: gone within its ttl
    await store.aput(("t",), "k", {"v": 3})  # no ttl: kept
    assert await rmem.client.pttl(redismem.keys.value(rmem.namespace, "workflow",
                                                      "langgraph-store", "t/k")) == -1


async def test_the_server_keeps_an_items_created_at_and_refuses_other_json(
        rmem: redismem.Memory) -> None:
    """A put is one call (redismem_put_items): the server keeps the stored
    item's created_at over the one sent, and refuses JSON that is not an
    item, or an item its created_at would take over max_value_bytes,
    changing nothing."""
    store = RedismemStore(rmem)
    await store.aput(("t",), "k", {"v": 1})
    scope = rmem.workflow("langgraph-store")
    first = await scope.get("t/k")
    created = first.value["created_at"]
    assert created > 10**12
    put = rmem._conn.functions.put_items
    args = (rmem.namespace, "workflow", "langgraph-store", "KEEPTTL", "tester")
    await put(*args, [("t/k", '{"created_at":1,"updated_at":2,"value":{"v":2}}', "")])
    second = await scope.get("t/k")
    assert second.value == {"created_at": created, "updated_at": 2, "value": {"v": 2}}
    event = (await rmem.changes(after=0)).items[-1]
    assert event.key == "t/k" and event.value == second.value
    await scope.set("raw", [1])  # not an item: nothing to keep
    await put(*args, [("raw", '{"created_at":7,"value":{}}', "")])
    assert (await scope.get("raw")).value == {"created_at": 7, "value": {}}
    seq = (await rmem.changes(after=0)).items[-1].sequence
    for bad in ('{"value":{},"created_at":1}', '[1]', '{"a":1,"created_at":1}',
                '{"created_at":-1,"value":{}}', '{"created_at":1.5,"value":{}}'):
        with pytest.raises(redismem.errors.InvalidValueError, match="created_at"):
            await put(*args, [("t/k", bad, "")])
    await rmem.configure(max_value_bytes=1024)
    fits = '{"created_at":1,"value":"' + "x" * 997 + '"}'
    assert len(fits) == 1024
    with pytest.raises(redismem.errors.ValueTooLargeError, match="created_at"):
        await put(*args, [("t/k", fits, "")])
    assert await scope.get("t/k") == second
    assert (await rmem.changes(after=0)).items[-1].sequence == seq


def test_item_keys_are_one_to_one() -> None:
    for ns, key in ((("a", "b"), "c"), (("a/b",), "c"), (("a",), "b/c"), (("%2F",), "k"),
                    (("x.y" .replace(".", ""),), "a.b")):
        assert split_key(item_key(ns, key)) == (ns, key)
    assert item_key(("a/b",), "c") != item_key(("a",), "b/c")
    with pytest.raises(Exception, match="labels"):
        item_key(("a.b",), "k")
    heads: dict[tuple[str, ...], str] = {}  # a batch's: each namespace checked once
    assert item_key(("a", "b"), "k", heads) == "a.b/k" and heads == {("a", "b"): "a.b/"}
    for bad in (("a", ["b"]), ("a", ""), (), ("a", 1)):
        with pytest.raises(InvalidNamespaceError):
            item_key(bad, "k", heads)  # type: ignore[arg-type]


DIMS = 16


def embed(texts: list[str]) -> list[list[float]]:
    """A deterministic embedding: letters hashed into 16 dimensions."""
    out = []
    for text in texts:
        vector = [0.0] * DIMS
        for word in text.lower().split():
            vector[int(hashlib.sha256(word.encode()).hexdigest(), 16) % DIMS] += 1.0
        norm = math.sqrt(sum(v * v for v in vector)) or 1.0
        out.append([v / norm for v in vector])
    return out


async def test_semantic_search_ranks_as_inmemorystore_does(rmem: redismem.Memory) -> None:
    index: Any = {"dims": DIMS, "embed": embed, "fields": ["text"]}
    reference = InMemoryStore(index=index)
    store = RedismemStore(rmem, index=index)
    texts = ["red apples and pears", "blue sky over the sea", "green apples",
             "the sea is deep and blue", "pears are sweet", "a red car"]
    for i, text in enumerate(texts):
        ns = ("fruit",) if i % 2 == 0 else ("other", "x")
        await reference.aput(ns, f"d{i}", {"text": text, "i": i})
        await store.aput(ns, f"d{i}", {"text": text, "i": i})
    for query, prefix in (("blue sea", ()), ("apples", ("fruit",)), ("red", ())):
        want = await reference.asearch(prefix, query=query, limit=3)
        got = await store.asearch(prefix, query=query, limit=3)
        assert [round(i.score, 4) for i in got] == [round(i.score, 4) for i in want], query
        every = [round(i.score, 4) for i in await reference.asearch(prefix, query=query)]
        scores = [round(i.score, 4) for i in want]  # ties may come in any order
        assert [i.key for i, s in zip(got, scores, strict=True) if every.count(s) == 1] == [
            i.key for i, s in zip(want, scores, strict=True) if every.count(s) == 1], query
    await store.adelete(("fruit",), "d0")
    assert "d0" not in [i.key for i in await store.asearch((), query="red apples")]
