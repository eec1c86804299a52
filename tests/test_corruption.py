"""Readers survive any raw write: for each key family of a namespace and
each field, generated corruption (random bytes, numbers out of range,
missing fields, a key of the wrong type, forged members and entries) is
written with raw commands, and every reader either answers or raises a
redismem error, never a raw UnicodeDecodeError, ValueError, KeyError or
redis error. Then audit names it, and export goes on."""

from __future__ import annotations

import asyncio
import io
import uuid
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redismem
from redismem import keys as K
from redismem import transfer
from redismem.audit import audit
from redismem.server import EmbeddedServer

SETTINGS = settings(max_examples=50, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

NUMBERS = [b"", b"-5", b"0", b"abc", b"1e400", b"9007199254740993", b"NaN", b"-0", b"1.5",
           b"18446744073709551616", b"\xff\xfe"]
BYTES = st.one_of(st.sampled_from(NUMBERS), st.binary(max_size=24),
                  st.sampled_from([b"{}", b"[]", b"null", b'{"a":', b'"x"', b"\x00" * 12]))


def _families(ns: str) -> dict[str, tuple[str, list[str]]]:
    """Key -> (Redis type, fields or '' for the key itself) of every family
    the setup below writes."""
    return {
        K.value(ns, "session", "s", "k"): ("hash", ["v", "rev", "ts", "by"]),
        K.value(ns, "session", "s", "t"): ("hash", ["v", "rev", "ts", "by"]),
        K.vector(ns, "session", "s", "v"): ("hash", ["emb", "meta", "rev", "ts", "by", "_dim",
                                                     "_sc", "_meta"]),
        K.names(ns, "value", "session", "s"): ("zset", []),
        K.names(ns, "vector", "session", "s"): ("zset", []),
        K.expiry(ns, "value", "session", "s"): ("zset", []),
        K.revisions(ns, "value", "session", "s"): ("hash", ["k", "t", "\xff"]),
        K.vector_dims(ns, "session", "s"): ("hash", ["3", "x"]),
        K.sequence(ns): ("string", []),
        K.feed_size(ns): ("string", []),
        K.feed(ns): ("stream", []),
        K.scopes(ns): ("zset", []),
        K.config(ns): ("hash", ["max_value_bytes", "feed_retention_ms", "vector_index"]),
        K.threads(ns): ("zset", []),
        K.thread_events(ns, "th"): ("stream", []),
        K.thread_times(ns, "th"): ("zset", []),
        K.thread_ids(ns, "th"): ("hash", ["e1", "e2"]),
        K.memory(ns, "u", "m1"): ("hash", ["rec", "emb"]),
        K.memories(ns, "u"): ("zset", []),
        K.memory_users(ns): ("zset", []),
        K.memory_dim(ns): ("string", []),
    }


async def _setup(url: str, ns: str) -> None:
    async with await redismem.connect(url, namespace=ns, principal="tester") as mem:
        scope = mem.session("s")
        await scope.set("k", {"a": 1})
        await scope.set("t", [1, 2], ttl_seconds=3600)
        await scope.set_vector("v", [1.0, 0.0, 0.5], {"m": 1})
    async with redismem.RedisMemoryStore(url, namespace=ns) as store:
        await store.append_events("th", [
            redismem.MemoryEvent(f"e{i}", "th", None, "message", i, {"text": "hello"})
            for i in (1, 2)])
        await store.upsert_long_term_memory(
            redismem.LongTermMemory(id="m1", user_id="u", scope="notes", data={}, text="hello",
                                    tags=[], metadata={}, created_at=1, updated_at=1),
            embedding=[1.0, 0.0, 0.5])


def _corrupt(client: redis.Redis, key: str, kind: str, fields: list[str], how: str,
             field: int, data: bytes, score: float) -> None:
    if how == "wrong type":
        client.delete(key)
        if kind == "string":
            client.hset(key, "x", data)
        else:
            client.set(key, data)
    elif how == "delete":
        client.delete(key)
    elif kind == "hash" and fields:
        name = fields[field % len(fields)]
        if how == "missing":
            client.hdel(key, name)
        else:
            client.hset(key, name, data)
    elif kind == "zset":
        client.zadd(key, {data or b"\x00": score})
    elif kind == "stream":
        client.xadd(key, {data or b"f": data},
                    id=b"*" if how == "set" else b"18446744073709551615-18446744073709551615")
    elif kind == "string":
        client.set(key, data)


async def _outcome(name: str, call: Callable[[], Awaitable[Any]]) -> None:
    try:
        await asyncio.wait_for(call(), 10)
    except redismem.RedisMemError:
        pass  # a redismem error naming the problem is what a reader may raise
    except Exception as exc:  # the property: nothing else escapes
        raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc


async def _read_everything(url: str, ns: str) -> None:
    try:
        mem = await redismem.connect(url, namespace=ns, principal="tester")
    except redismem.RedisMemError:
        return  # connect reads the namespace's settings: refused, naming the problem
    except Exception as exc:
        raise AssertionError(f"connect raised {type(exc).__name__}: {exc}") from exc
    async with mem:
        scope = mem.session("s")

        async def watch_one() -> None:
            async for _ in mem.watch("*", after=0, interval=0.05):
                return

        async def export() -> None:
            await transfer.export_namespace(mem, io.StringIO().write)

        async def audited() -> None:
            [_ async for _ in audit(mem)]

        store = redismem.RedisMemoryStore(url, namespace=ns)
        await _outcome("store setup", store.setup)
        async with store:
            readers: dict[str, Callable[[], Awaitable[Any]]] = {
                "get": lambda: scope.get("k"),
                "get expiring": lambda: scope.get("t"),
                "get_many": lambda: scope.get_many(["k", "t", "nope"]),
                "keys": lambda: scope.keys(),
                "list_keys": lambda: scope.list_keys(),
                "vector keys": lambda: scope.keys(kind="vector"),
                "get_vector": lambda: scope.get_vector("v"),
                "similarity_search": lambda: scope.similarity_search([1.0, 0.0, 0.5], 3),
                "changes": lambda: mem.changes(after=0),
                "watch": watch_one,
                "settings": lambda: mem.settings(),
                "get_recent_events": lambda: store.get_recent_events("th"),
                "get_events_since": lambda: store.get_events_since("th", 0),
                "list_threads": lambda: store.list_threads(),
                "list_long_term_memories": lambda: store.list_long_term_memories("u"),
                "search text": lambda: store.search_long_term_memory_text("u", "hello"),
                "search vector": lambda: store.search_long_term_memory_vector(
                    "u", [1.0, 0.0, 0.5]),
                "export": export,
                "audit": audited,
            }
            for name, call in readers.items():
                await _outcome(name, call)


@pytest.fixture(scope="module")
def own_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An embedded server with the search module for these tests alone: each
    case creates search indexes, and FT.CREATE scans the whole keyspace, so
    on the server every test shares a case took ten times as long."""
    server = EmbeddedServer(tmp_path_factory.mktemp("corruption"))
    yield server.start().url
    server.stop()


@pytest.fixture(params=["redis", "plain"])
def url(request: pytest.FixtureRequest) -> str:
    """The embedded server with the search module, and Debian's without it
    (vector and text search then read the raw entries themselves)."""
    return str(request.getfixturevalue("own_server" if request.param == "redis"
                                       else "plain_redis"))


def _every_kind_of_write() -> list[tuple[int, str, int, bytes, float]]:
    """(family, how, field, data, score) for each way _corrupt can touch each
    field of each family, each with an empty value, bytes that are not UTF-8
    and a number past 2^53: the cases the generated test below may miss."""
    data = [b"", b"\xff\xfe", b"9007199254740993"]
    scores = [0.0, -1.0, float("inf")]
    cases: list[tuple[int, str, int, bytes, float]] = []
    for family, (kind, fields) in enumerate(_families("ns").values()):
        cases.append((family, "delete", 0, b"", 0.0))
        cases += [(family, "wrong type", 0, d, 0.0) for d in data]
        if kind == "hash":
            for field in range(len(fields)):
                cases.append((family, "missing", field, b"", 0.0))
                cases += [(family, "set", field, d, 0.0) for d in data]
        else:
            hows = ["set", "forged"] if kind == "stream" else ["set"]
            cases += [(family, how, 0, d, s)
                      for how in hows for d, s in zip(data, scores, strict=True)]
    return cases


def test_every_reader_survives_each_kind_of_raw_write(url: str) -> None:
    for family, how, field, data, score in _every_kind_of_write():
        try:
            _survive(url, family, how, field, data, score)
        except AssertionError as exc:
            raise AssertionError(f"family={family} how={how!r} field={field} data={data!r} "
                                 f"score={score}: {exc}") from exc


@SETTINGS
@given(family=st.integers(0, 20), how=st.sampled_from(["set", "set", "missing", "wrong type",
                                                       "delete", "forged"]),
       field=st.integers(0, 7), data=BYTES,
       score=st.sampled_from([0.0, 1.0, -1.0, 1e300, float("inf")]))
def test_every_reader_survives_a_raw_write(url: str, family: int, how: str, field: int,
                                           data: bytes, score: float) -> None:
    _survive(url, family, how, field, data, score)


def _survive(url: str, family: int, how: str, field: int, data: bytes, score: float) -> None:
    ns = "cor" + uuid.uuid4().hex[:10]
    asyncio.run(_setup(url, ns))
    key, (kind, fields) = list(_families(ns).items())[family % len(_families(ns))]
    client = redis.Redis.from_url(url)
    try:
        _corrupt(client, key, kind, fields, how, field, data, score)
        asyncio.run(_read_everything(url, ns))
    finally:
        searchable = any(m[b"name"] == b"search" for m in client.module_list())
        for index in client.execute_command("FT._LIST") if searchable else []:
            if ns in index.decode():
                client.execute_command("FT.DROPINDEX", index)
        for name in client.scan_iter(match=K.pattern(ns), count=1000):
            client.delete(name)
        client.close()
