"""Integrity: no client, bad byte or full server hides, corrupts or silently
loses memory. Each test here failed on the code before its fix."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import redis

import redismem
from redismem import keys as K
from redismem import limits
from redismem.functions import Functions

from .helpers import revisions_of, snapshot
from .test_cli import run_script

MAX = limits.MAX_REVISION


async def listed(scope: redismem.MemoryScope) -> list[str]:
    return await scope.list_keys()


# defect 1: a re-created key kept its stale expiry entry and fell out of listings


async def test_a_key_recreated_by_update_after_expiry_stays_listed(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set_many({f"old{i}": i for i in range(50)}, ttl_seconds=0.1)
    await scope.set("k", 1, ttl_seconds=0.2)
    await asyncio.sleep(0.4)
    assert (await scope.update("k", lambda v: (v or 0) + 10)).value == 10
    for i in range(5):
        await scope.set(f"other{i}", i)  # each write prunes up to 16 expired names
    assert await scope.get("k") == redismem.MemoryValue(10, 2, True)
    assert await listed(scope) == ["k", *(f"other{i}" for i in range(5))]
    ttl = await mem.client.pttl(K.value(mem.namespace, "session", "s", "k"))
    assert ttl == -1  # a key created by update has no expiry to keep


async def test_modify_recreating_an_expired_key_stays_listed(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set_many({f"old{i}": i for i in range(40)}, ttl_seconds=0.05)
    await scope.set_many({"n": 1, "l": [1], "o": {"a": 1}}, ttl_seconds=0.1)
    await asyncio.sleep(0.3)
    assert (await scope.incr("n")).value == 1
    await scope.append("l", 2)
    await scope.merge("o", {"b": 2})
    for i in range(4):
        await scope.set(f"x{i}", i)
    assert await listed(scope) == ["l", "n", "o", "x0", "x1", "x2", "x3"]


# defect 3: a lost sequence counter applied a write without its feed event


async def test_a_lost_sequence_counter_is_healed_from_the_stream(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    for i in range(5):
        await scope.set("k", i)
    await mem.client.delete(K.sequence(mem.namespace))
    assert (await scope.set("k", "after")).revision == 6
    await scope.delete("k")
    entries = await mem.client.xrange(K.feed(mem.namespace))
    assert [entry_id for entry_id, _ in entries] == [f"{n}-0".encode() for n in range(1, 8)]
    assert entries[5][1][b"value"] == b'"after"' and entries[6][1][b"action"] == b"delete"
    assert await mem.client.get(K.sequence(mem.namespace)) == b"7"


async def test_a_lost_counter_after_trimming_still_goes_on(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    for i in range(3):
        await scope.set("k", i)
    await mem.configure(feed_retention_ms=1)
    await asyncio.sleep(0.01)
    assert await mem.trim_feed() == 3
    await mem.client.delete(K.sequence(mem.namespace))
    await scope.set("k", "x")
    entries = await mem.client.xrange(K.feed(mem.namespace))
    assert [entry_id for entry_id, _ in entries] == [b"4-0"]


@pytest.mark.parametrize("damage", ["garbage counter", "feed of another type"])
async def test_a_damaged_feed_refuses_writes_and_changes_nothing(mem: redismem.Memory,
                                                                 damage: str) -> None:
    scope = mem.session("s")
    await scope.set("k", 1)
    ns = mem.namespace
    if damage == "garbage counter":
        await mem.client.set(K.sequence(ns), "abc")
    else:
        await mem.client.delete(K.feed(ns))
        await mem.client.set(K.feed(ns), "x")
        await mem.client.delete(K.sequence(ns))
    before = await snapshot(mem)
    for call in (lambda: scope.set("k", 2), lambda: scope.set_many({"a": 1, "b": 2}),
                 lambda: scope.delete("k"), lambda: scope.incr("n"),
                 lambda: scope.set_vector("v", [1.0, 0.0])):
        with pytest.raises(redismem.FeedCorruptError, match="feed"):
            await call()
    assert await snapshot(mem) == before
    assert await scope.get("k") == redismem.MemoryValue(1, 1, True)


async def test_status_reports_a_damaged_namespace_and_the_others(rmem: redismem.Memory,
                                                                 redis_url: str) -> None:
    await rmem.global_scope().set("k", 1)
    async with await redismem.connect(redis_url, namespace=rmem.namespace + "-ok") as other:
        await other.global_scope().set("k", 1)
    await rmem.client.set(K.sequence(rmem.namespace), "abc")
    done = run_script("status", "--json", url=redis_url)
    assert done.returncode == 0, done.stderr
    found = {n["namespace"]: n for n in json.loads(done.stdout)["namespaces"]}
    assert "abc" in found[rmem.namespace]["error"]
    assert found[rmem.namespace + "-ok"]["value_keys"] == 1
    text = run_script("status", "--namespace", rmem.namespace, url=redis_url).stdout
    assert f"namespace {rmem.namespace}: cannot be read: ValueError" in text


async def test_a_feed_size_that_is_not_a_count_starts_again(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("k", 1)
    await mem.client.set(K.feed_size(mem.namespace), "-5")
    assert (await scope.set("k", "after")).revision == 2
    size = int(await mem.client.get(K.feed_size(mem.namespace)))
    assert 64 < size < 200  # the one event just added
    await mem.client.set(K.feed_size(mem.namespace), "abc")
    assert (await scope.set("k", 3)).revision == 3
    assert await mem.trim_feed() == 0


# defect 5: revisions stopped at 2^53


async def raise_revision(mem: redismem.Memory, key: str, revision: int) -> None:
    await mem._conn.functions.raise_revisions(mem.namespace, "session", "s", "value",
                                              [(key, revision)])


async def test_a_key_at_the_largest_revision_refuses_to_change(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await raise_revision(mem, "k", MAX - 1)
    assert (await scope.set("k", "last")).revision == MAX
    before = await snapshot(mem)
    for call in (lambda: scope.set("k", 1), lambda: scope.delete("k"),
                 lambda: scope.set("k", 1, expected_revision=MAX),
                 lambda: scope.merge("k", {"a": 1}),
                 lambda: scope.set_many({"a": 1, "k": 2})):
        with pytest.raises(redismem.RevisionLimitError, match="9007199254740991"):
            await call()
    assert await snapshot(mem) == before
    assert await scope.get("k") == redismem.MemoryValue("last", MAX, True)


async def test_revisions_near_the_limit_always_increase(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await raise_revision(mem, "k", MAX - 4)
    revisions = [(await scope.set("k", i)).revision for i in range(3)]
    assert revisions == [MAX - 3, MAX - 2, MAX - 1]
    with pytest.raises(redismem.ConflictError) as info:
        await scope.set("k", 0, expected_revision=MAX - 2)
    assert (info.value.expected, info.value.actual) == (MAX - 2, MAX - 1)
    assert "9007199254740989 actual 9007199254740990" in str(info.value)


# defect 9: bad text gave raw errors


@pytest.mark.parametrize("where", ["key", "value", "namespace", "prefix", "metadata", "filter",
                                   "scope id", "principal", "dict key"])
async def test_a_lone_surrogate_is_a_clear_error(mem: redismem.Memory, redis_url: str,
                                                  where: str) -> None:
    bad = "a\ud800b"
    scope = mem.session("s")
    before = await snapshot(mem)
    with pytest.raises(redismem.InvalidArgumentError, match=r"UTF-8|surrogate"):
        if where == "key":
            await scope.set(bad, 1)
        elif where == "value":
            await scope.set("k", [bad])
        elif where == "dict key":
            await scope.set("k", {bad: 1})
        elif where == "namespace":
            await redismem.connect(redis_url, namespace=bad)
        elif where == "prefix":
            await scope.keys(prefix=bad)
        elif where == "metadata":
            await scope.set_vector("v", [1.0], {"m": bad})
        elif where == "filter":
            await scope.similarity_search([1.0], filter={"m": bad})
        elif where == "scope id":
            mem.session(bad)
        else:
            await redismem.connect(redis_url, namespace="x", principal=bad)
    assert await snapshot(mem) == before


# defect 12: update gave up under ordinary contention; server-side operations


UPDATER = """
import asyncio, sys
import redismem

async def main(url, ns, op, each):
    async with await redismem.connect(url, namespace=ns) as mem:
        scope = mem.global_scope()
        for i in range(each):
            if op == "update":
                await scope.update("counter", lambda v: (v or 0) + 1)
            elif op == "incr":
                await scope.incr("counter")
            else:
                await scope.append("log", i, max_items=100)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
"""


@pytest.mark.parametrize("op", ["update", "incr", "append"])
async def test_four_processes_on_one_hot_key_all_succeed(rmem: redismem.Memory, redis_url: str,
                                                         op: str) -> None:
    each = 250
    workers = [subprocess.Popen([sys.executable, "-c", UPDATER, redis_url, rmem.namespace, op,
                                 str(each)], stderr=subprocess.PIPE) for _ in range(4)]
    errors = [worker.communicate(timeout=300)[1] for worker in workers]
    assert [worker.returncode for worker in workers] == [0, 0, 0, 0], errors
    key = "log" if op == "append" else "counter"
    got = await rmem.global_scope().get(key)
    assert got.revision == 4 * each
    if op == "append":
        assert len(got.value) == 100
    else:
        assert got.value == 4 * each
    revisions = [int(fields[b"rev"]) for _, fields in
                 await rmem.client.xrange(K.feed(rmem.namespace))]
    assert revisions == list(range(1, 4 * each + 1))


async def test_update_gives_up_only_after_its_timeout(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("k", 0)

    async def always_conflicting(value: Any) -> Any:
        await scope.set("k", -1)
        return value + 1

    started = asyncio.get_running_loop().time()
    with pytest.raises(redismem.ConflictError, match="tries in"):
        await scope.update("k", always_conflicting, timeout=0.3)
    assert asyncio.get_running_loop().time() - started >= 0.3
    with pytest.raises(redismem.ConflictError, match="on each of 3 tries"):
        await scope.update("k", always_conflicting, attempts=3)
    with pytest.raises(redismem.InvalidArgumentError, match="timeout"):
        await scope.update("k", lambda v: v, timeout=0)


async def test_incr_append_merge(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    assert await scope.incr("n") == redismem.MemoryValue(1, 1, True)
    assert await scope.incr("n", by=-5) == redismem.MemoryValue(-4, 2, True)
    assert (await scope.append("l", {"a": 1})).revision == 1
    assert (await scope.append("l", "two", max_items=2)).revision == 2
    assert (await scope.append("l", 3, max_items=2)).revision == 3
    assert (await scope.get("l")).value == ["two", 3]
    await scope.set("o", {"a": {"x": 1, "y": 2}, "b": [1], "c": "keep"})
    await scope.merge("o", {"a": {"y": None, "z": 3}, "b": None, "d": {"e": None, "f": 1}})
    got = await scope.get("o")
    assert got.value == {"a": {"x": 1, "z": 3}, "c": "keep", "d": {"f": 1}}
    raw = await mem.client.hget(K.value(mem.namespace, "session", "s", "o"), "v")
    assert raw == b'{"a":{"x":1,"z":3},"c":"keep","d":{"f":1}}'  # canonical: sorted, no spaces
    await scope.merge("fresh", {"k\u00e9y\n": "v\"", "a": None})
    assert (await scope.get("fresh")).value == {"k\u00e9y\n": 'v"'}
    events = [fields for _, fields in await mem.client.xrange(K.feed(mem.namespace))]
    assert events[-1][b"delta"] == '{"a":null,"kéy\\n":"v\\""}'.encode()  # the patch
    assert events[1][b"value"] == b"-4" and events[1][b"delta"] == b"-5"


async def test_modify_refuses_wrong_types_and_changes_nothing(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set_many({"s": "text", "f": 1.5, "big": 2**60, "list": [1]})
    for key in ("s", "f", "big", "list"):
        with pytest.raises(redismem.ValueTypeError, match="integer"):
            await scope.incr(key)
    for key in ("s", "f"):
        with pytest.raises(redismem.ValueTypeError, match="list"):
            await scope.append(key, 1)
    await scope.set("near", MAX - 1)
    before = await snapshot(mem)
    with pytest.raises(redismem.InvalidArgumentError, match="exact"):
        await scope.incr("near", by=2)
    with pytest.raises(redismem.InvalidArgumentError):
        await scope.incr("near", by=True)  # type: ignore[arg-type]
    with pytest.raises(redismem.InvalidArgumentError, match="max_items"):
        await scope.append("list", 1, max_items=0)
    with pytest.raises(redismem.InvalidArgumentError, match="patch"):
        await scope.merge("list", [1])  # type: ignore[arg-type]
    assert await snapshot(mem) == before


async def test_modify_keeps_or_sets_the_expiry(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("n", 1, ttl_seconds=100)
    await scope.incr("n")
    key = K.value(mem.namespace, "session", "s", "n")
    assert 90_000 < await mem.client.pttl(key) <= 100_000
    await scope.incr("n", ttl_seconds=0.05)
    await asyncio.sleep(0.15)
    assert await scope.get("n") == redismem.MemoryValue(None, 0, False)
    assert await scope.list_keys() == []
    assert (await scope.incr("n")).revision == 4  # revisions go on after expiry


# defect 6: per-call byte budget and a feed size bound


async def test_a_call_over_the_budget_is_refused_on_both_sides(mem: redismem.Memory) -> None:
    await mem.configure(max_call_bytes=65_536, max_value_bytes=65_536)
    scope = mem.session("s")
    before = await snapshot(mem)
    big = {f"k{i}": "x" * 10_000 for i in range(7)}
    with pytest.raises(redismem.RequestTooLargeError, match="max_call_bytes"):
        await scope.set_many(big)
    raw = Functions(mem.client)  # no Python pre-check: the Lua side refuses too
    raw.max_call_bytes = 1 << 40
    items = [(key, f'"{value}"', "") for key, value in big.items()]
    with pytest.raises(redismem.RequestTooLargeError, match="65536"):
        await raw.set_items("value", mem.namespace, "session", "s", "", "me", items)
    assert await snapshot(mem) == before
    await scope.set_many(dict(list(big.items())[:5]))  # under the budget


async def test_the_feed_stays_within_its_size_bound(mem: redismem.Memory) -> None:
    await mem.configure(feed_max_bytes=1_048_576)
    scope = mem.session("s")
    value = "x" * 60_000
    for i in range(100):
        await scope.set("big", f"{i}{value}")
    size = int(await mem.client.get(K.feed_size(mem.namespace)))
    assert size <= 1_048_576
    page = await mem.changes(after=0)
    assert page.oldest_sequence > 80 and page.items[-1].sequence == 100
    assert sum(len(v) for _, fields in await mem.client.xrange(K.feed(mem.namespace))
               for k, v in fields.items()) <= size
    with pytest.raises(redismem.CursorExpiredError):
        async for _ in mem.watch("*", after=0):
            break


async def test_trim_works_in_slices(rmem: redismem.Memory) -> None:
    scope = rmem.session("s")
    for start in range(0, 5000, 1000):
        await scope.set_many({f"k{i}": i for i in range(start, start + 1000)})
    await rmem.configure(feed_retention_ms=1)
    await asyncio.sleep(0.01)
    dropped, more = await rmem._conn.functions.trim_feed(rmem.namespace,
                                                         limits.TRIM_SLICE_EVENTS)
    assert (dropped, more) == (limits.TRIM_SLICE_EVENTS, True)
    assert await rmem.trim_feed() == 5000 - limits.TRIM_SLICE_EVENTS
    assert await rmem.client.xlen(K.feed(rmem.namespace)) == 0
    assert await rmem.client.get(K.feed_size(rmem.namespace)) == b"0"


async def test_vector_batches_are_bounded_and_bulk_loads_split(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    items = [(f"v{i:03d}", [1.0, float(i)]) for i in range(300)]
    before = await snapshot(mem)
    with pytest.raises(redismem.RequestTooLargeError, match="max_call_vectors"):
        await scope.set_vectors(items)
    raw = Functions(mem.client)  # the Lua side refuses too
    blobs = [(key, np.asarray(e, dtype="<f4").tobytes(), "{}", "") for key, e in items[:129]]
    with pytest.raises(redismem.RequestTooLargeError, match="128"):
        await raw.set_items("vector", mem.namespace, "session", "s", "", "me", blobs)
    assert await snapshot(mem) == before
    revisions = await scope.set_vectors(items, atomic=False)
    assert len(revisions) == 300 and set(revisions.values()) == {1}
    assert len(await scope.list_keys(kind="vector")) == 300
    await mem.configure(max_call_bytes=65_536)
    values = {f"k{i}": "x" * 1000 for i in range(300)}
    with pytest.raises(redismem.RequestTooLargeError):
        await scope.set_many(values)
    assert revisions_of(await scope.set_many(values, atomic=False)) == dict.fromkeys(values, 1)
    events = await mem.client.xrange(K.feed(mem.namespace), count=10_000)
    assert len(events) == 600


async def test_connect_refuses_a_server_that_may_evict(redis_url: str, ns: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDISMEM_ALLOW_EVICTION", raising=False)
    async with await redismem.connect(redis_url, namespace=ns) as mem:
        await mem.client.config_set("maxmemory-policy", "allkeys-lru")
        try:
            with pytest.raises(redismem.EvictionPolicyError, match="allkeys-lru"):
                await redismem.connect(redis_url, namespace=ns)
            async with await redismem.connect(redis_url, namespace=ns,
                                              allow_eviction=True) as allowed:
                await allowed.global_scope().set("k", 1)
            monkeypatch.setenv("REDISMEM_ALLOW_EVICTION", "1")
            async with await redismem.connect(redis_url, namespace=ns) as allowed:
                assert (await allowed.global_scope().get("k")).value == 1
            done = run_script("status", "--namespace", ns, url=redis_url)
            assert "warning: maxmemory-policy is allkeys-lru" in done.stdout
        finally:
            await mem.client.config_set("maxmemory-policy", "noeviction")
    async with await redismem.connect("memory://", namespace=ns):
        pass  # memory:// never evicts


async def test_the_set_many_that_stalled_the_server_is_refused(mem: redismem.Memory) -> None:
    """1,000 x 65 KB in one call held a PING for 2.9 s; the default budget refuses it."""
    scope = mem.session("s")
    before = await snapshot(mem)
    with pytest.raises(redismem.RequestTooLargeError, match="max_call_bytes"):
        await scope.set_many({f"k{i}": "x" * 65_000 for i in range(1000)})
    assert await snapshot(mem) == before


async def test_lua_messages_print_integers_in_full(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    keys = [*K.scope_writes(ns, "value", "session", "s", "me"), K.value(ns, "session", "s", "k")]
    with pytest.raises(redis.ResponseError) as info:
        await rmem.client.execute_command("FCALL", "redismem_set_values", len(keys), *keys, ns,
                                          "session", "s", "", "me", "", "", "k", "1",
                                          "9007199254740992")
    assert str(info.value) == ("INVALID_REVISION expected revision must be between 0 and "
                               "9007199254740991, got 9007199254740992")


async def test_a_listed_name_that_is_not_utf8_is_skipped_counted_and_audited(
        rmem: redismem.Memory) -> None:
    """A raw ZADD of the name b'\\xff\\xfe' into a scope's listing: key pages
    leave it out and count it, export stops naming it (or carries it raw),
    audit names it; before, list_keys, export and audit raised
    UnicodeDecodeError."""
    import io

    from redismem import transfer
    from redismem.audit import audit

    ns, scope = rmem.namespace, rmem.session("s")
    await scope.set_many({"a": 1, "z": 2})
    await rmem.client.zadd(K.names(ns, "value", "session", "s"), {b"\xff\xfe": 0})
    await rmem.client.hset(K.revisions(ns, "value", "session", "s"), b"\xff\xfe", 7)
    page = await scope.keys()
    assert (page.keys, page.skipped) == (["a", "z"], 1)
    assert await scope.list_keys() == ["a", "z"]
    with pytest.raises(redismem.CorruptEntryError, match="is not UTF-8"):
        await transfer.export_namespace(rmem, io.StringIO().write)
    out = io.StringIO()
    await transfer.export_namespace(rmem, out.write, keep_raw=True)
    records = list(map(json.loads, out.getvalue().splitlines()))
    keys = [record.get("key") for record in records if record["type"] == "value"]
    assert keys == ["a", "z"]
    # the listed name, and its revisions field
    assert sum(record["type"] == "raw" for record in records) == 2
    found = [f async for f in audit(rmem)]
    assert [(f.key, "not UTF-8" in f.problem) for f in found] == [
        (K.names(ns, "value", "session", "s"), True)]


async def test_a_garbage_scope_member_and_a_nan_vector_are_left_out_and_audited(
        rmem: redismem.Memory) -> None:
    """A raw ZADD of 'garbage' into the scopes registry and a raw HSET of a
    NaN into a vector's embedding: export stops naming them, or carries
    them raw (before, both made it raise ValueError), and audit names both."""
    import io
    import struct

    from redismem import transfer
    from redismem.audit import audit

    ns, scope = rmem.namespace, rmem.session("s")
    await scope.set("k", 1)
    await scope.set_vector("v", [1.0, 0.0])
    await scope.set_vector("w", [0.0, 1.0])
    await rmem.client.zadd(K.scopes(ns), {b"garbage": 0, b"val:nosuch:x": 0})
    nan = struct.pack("<2f", float("nan"), 1.0)
    await rmem.client.hset(K.vector(ns, "session", "s", "w"), "emb", nan)
    with pytest.raises(redismem.CorruptEntryError, match="garbage"):
        await transfer.export_namespace(rmem, io.StringIO().write)
    out = io.StringIO()
    await transfer.export_namespace(rmem, out.write, keep_raw=True)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {(r["type"], r.get("key")) for r in records if r["type"] in ("value", "vector")} == {
        ("value", "k"), ("vector", "v")}
    # the two members, the vector and its listed name
    assert sum(r["type"] == "raw" for r in records) == 4
    found = {f.key: f.problem async for f in audit(rmem)}
    assert "names no scope" in found[K.scopes(ns)]
    assert "NaN" in found[K.vector(ns, "session", "s", "w")]


async def test_audit_finds_every_listing_expiry_and_range_break(
        mem: redismem.Memory, backend_url: str, tmp_path: Any) -> None:
    """The raw writes of the probe that audit passed, and raw writes to the
    revisions and dimension counts: each is a finding, and the entries the
    library wrote (an expired one included) are not.
    Export leaves the bad ones out, and import takes what it wrote."""
    import asyncio
    import io

    from redismem import restore, transfer
    from redismem.audit import audit

    ns, scope, client = mem.namespace, mem.session("s"), mem.client
    names = ["fine", "ghost", "hidden", "vanish", "unlisted", "big_rev", "neg_rev", "gone"]
    await scope.set_many({name: 1 for name in names if name != "ghost"})
    await scope.set("short", 1, ttl_seconds=0.05)
    await scope.set_vector("v2", [1.0, 0.0])
    await scope.set_vector("vfine", [0.0, 1.0],
                           {"f": 0.1, "i": 3, "b": True, "s": "\u00e9", "n": None, "l": [1]})
    await scope.set_vector("vsc", [1.0, 1.0])
    await scope.set_vector("vmeta", [1.0, 2.0], {"a": 1})
    value = lambda name: K.value(ns, "session", "s", name)  # noqa: E731
    listing, expiry = K.names(ns, "value", "session", "s"), K.expiry(ns, "value", "session", "s")
    await client.zadd(listing, {"ghost": 0, "bad\x01name": 0})
    await client.zadd(expiry, {"hidden": 1})
    await client.pexpireat(value("vanish"), 4102444800000)
    await client.zrem(listing, "unlisted")
    await client.hset(value("big_rev"), "rev", 2**53 + 1)
    await client.hset(value("neg_rev"), "rev", -5)
    await client.delete(value("gone"))
    await client.zadd(expiry, {"gone": 1})  # as if it expired: nothing to report
    await client.hset(K.vector(ns, "session", "s", "v2"), "_dim", 3)
    await client.hset(K.revisions(ns, "value", "session", "s"), "fine", "abc")
    await client.hset(K.vector_dims(ns, "session", "s"), "2", 1)  # four 2-d vectors there
    await client.hset(K.vector(ns, "session", "s", "vsc"), "_sc", b"session:other".hex())
    await client.hset(K.vector(ns, "session", "s", "vmeta"), "_meta", "x")
    while await client.exists(value("short")):
        await asyncio.sleep(0.01)  # until the server has expired it
    found = {f.key: f.problem async for f in audit(mem)}
    expected = {
        value("ghost"): "listed, but there is no entry",
        listing: "not a key the library writes",
        value("hidden"): "readers already hide it",
        value("vanish"): "with no expiry record",
        value("big_rev"): "revision is not an integer",
        value("neg_rev"): "revision is not an integer",
        K.vector(ns, "session", "s", "v2"): "_dim",
        value("unlisted"): "listing does not name",
        K.revisions(ns, "value", "session", "s"): "not a revision",
        K.vector_dims(ns, "session", "s"): "counts vectors per dimension as {2: 1}",
        K.vector(ns, "session", "s", "vsc"): "scope tag _sc",
        K.vector(ns, "session", "s", "vmeta"): "filter tags _meta",
    }
    assert set(found) == set(expected), found
    for key, words in expected.items():
        assert words in found[key], (key, found[key])
    out = io.StringIO()  # export carries what audit flags raw, so import takes all it wrote
    await transfer.export_namespace(mem, out.write, keep_raw=True)
    records = [json.loads(line) for line in out.getvalue().splitlines()]
    assert sorted(r["key"] for r in records if r["type"] == "value") == [
        "fine", "hidden", "vanish"]  # "unlisted": listed nowhere, so audit alone sees it
    dump = tmp_path / "dump.jsonl"
    dump.write_text(out.getvalue())
    async with redismem.RedisMemoryStore(backend_url, namespace=ns + "copy") as store:
        result = await restore.import_file(store, dump)
    assert result.written["value"] == 3
    for name in ("big_rev", "neg_rev"):  # get and get_many agree
        with pytest.raises(redismem.CorruptEntryError, match="revision is not an integer"):
            await scope.get(name)
        assert "revision is not an integer" in str((await scope.get_many([name]))[name].error)


async def test_audit_finds_a_revision_record_below_the_live_entry(mem: redismem.Memory) -> None:
    """A raw HSET lowering the last issued revision: after a delete, the next
    write would reuse a revision a reader already saw."""
    from redismem.audit import audit

    scope = mem.session("s")
    await scope.set("k", 1)
    await scope.set("k", 2)
    await mem.client.hset(K.revisions(mem.namespace, "value", "session", "s"), "k", 1)
    found = [(f.key, f.problem) async for f in audit(mem)]
    assert found == [(K.revisions(mem.namespace, "value", "session", "s"),
                      "says 1 is the last revision issued to 'k', whose entry has revision 2")]


async def test_audit_checks_a_threads_indexes_against_its_events(
        backend_url: str, ns: str) -> None:
    """The timestamp zset and the event id hash of a thread, written raw:
    each mismatch with the events is a finding; a thread the library wrote
    (appends, a repeated append, a compaction) has none."""
    from redismem.audit import audit

    async with redismem.RedisMemoryStore(backend_url, namespace=ns) as store:
        events = [redismem.MemoryEvent(f"e{i}", "th", None, "message", 1000 + i, {"n": i})
                  for i in range(6)]
        await store.append_events("th", events)
        await store.append_events("th", events[:2])  # stored once
        await store.compact_thread("th", redismem.RetentionPolicy(4, [], 1000))
        mem = store.memory
        assert [f async for f in audit(mem)] == []
        client = mem.client
        times, ids = K.thread_times(ns, "th"), K.thread_ids(ns, "th")
        stream_ids = [entry_id.decode() for entry_id, _ in
                      await client.xrange(K.thread_events(ns, "th"))]
        await client.zadd(times, {"9-9": 1, stream_ids[0]: 5})
        await client.zrem(times, stream_ids[1])
        await client.hset(ids, "ghost", stream_ids[2])
        await client.hdel(ids, "e5")
        found = [(f.key, f.problem) async for f in audit(mem)]
    assert [key for key, _ in found] == [times] * 3 + [ids] * 2
    problems = " | ".join(problem for _, problem in found)
    for words in ("indexes '9-9'", "the timestamp 5.0", f"misses {stream_ids[1]}",
                  "maps event 'ghost'", "misses event 'e5'"):
        assert words in problems, (words, problems)


async def test_audit_checks_each_writer_against_the_feed_and_finds_gaps(
        rmem: redismem.Memory, redis_url: str, tmp_path: Any) -> None:
    """A value or vector whose by was forged (right tags, right revision)
    passed audit, and so did a feed with events deleted from its middle.
    An import keeps each entry's writer: its event names the importer in
    by and the writer in writer, and audit is clean after it."""
    from redismem import restore, transfer
    from redismem.audit import audit

    ns, scope = rmem.namespace, rmem.session("s")
    await scope.set("k", 1)
    first = int(await rmem.client.hget(K.value(ns, "session", "s", "k"), "ts"))
    while redismem.now_ms() <= first + 1:  # j's write comes in a later millisecond
        await asyncio.sleep(0.001)
    await scope.set("j", 2)
    await scope.set_vector("v", [1.0, 0.0])
    await scope.set("later", 3)
    assert [f async for f in audit(rmem)] == []
    await rmem.client.hset(K.value(ns, "session", "s", "k"), "by", "ops")
    await rmem.client.hset(K.vector(ns, "session", "s", "v"), "by", "ops")
    await rmem.client.xdel(K.feed(ns), "2-0")  # the event of j
    # a forged event with the right fields, claiming k's revision for ops
    k_event = (await rmem.client.xrange(K.feed(ns), "1-0", "1-0"))[0][1]
    await rmem.client.xadd(K.feed(ns), {**k_event, b"by": b"ops"}, id="5-0")
    await rmem.client.set(K.sequence(ns), 5)
    found = {(f.key, f.problem) async for f in audit(rmem)}
    assert found == {
        (f"{K.feed(ns)} 5-0", "it records revision 1 of session:s 'k' again (event 1 did): "
                              "the library writes one event per revision, so one is forged"),
        (K.value(ns, "session", "s", "k"),
         "its writer is 'ops', the feed says 'tester' wrote revision 1: a raw write"),
        (K.vector(ns, "session", "s", "v"),
         "its writer is 'ops', the feed says 'tester' wrote revision 1: a raw write"),
        (K.value(ns, "session", "s", "j"), "revision 1 has no feed event, though the feed "
                                           "holds every event since before it was written: "
                                           "a raw write"),
        (K.feed(ns), "sequences 2..2 have no event: a raw XDEL deleted them, or a raw XADD "
                     "moved the stream's id past them")}
    # an import by another principal keeps the writers, and says so in the feed
    await rmem.client.hset(K.value(ns, "session", "s", "k"), "by", "tester")
    await rmem.client.hset(K.vector(ns, "session", "s", "v"), "by", "tester")
    dump = tmp_path / "dump.jsonl"
    with dump.open("w") as sink:
        await transfer.export_namespace(rmem, sink.write)
    target = ns + "-copy"
    last = int(await rmem.client.hget(K.value(ns, "session", "s", "later"), "ts"))
    while redismem.now_ms() <= last:  # the import's events come in a later millisecond
        await asyncio.sleep(0.001)
    async with redismem.RedisMemoryStore(redis_url, namespace=target,
                                         principal="importer") as store:
        await restore.import_file(store, dump)
        copy = store.memory
        events = (await copy.changes(after=0)).items
        assert {(e.key, e.principal, e.writer) for e in events} == {
            (name, "importer", "tester") for name in ("k", "j", "v", "later")}
        assert (await copy.session("s").get("k")) == redismem.MemoryValue(1, 1, True)
        assert [f async for f in audit(copy)] == []
        # the same feed as library 31 wrote it, without writer fields: still clean
        feed = K.feed(target)
        entries = await copy.client.xrange(feed)
        await copy.client.delete(feed)
        for entry_id, fields in entries:
            fields.pop(b"writer")
            await copy.client.xadd(feed, fields, id=entry_id)
        assert [f async for f in audit(copy)] == []
        # a value written after the import still has its writer checked
        await copy.session("s").set("k", 5)
        await copy.client.hset(K.value(target, "session", "s", "k"), "by", "ops")
        assert [(f.key, f.problem) async for f in audit(copy)] == [
            (K.value(target, "session", "s", "k"),
             "its writer is 'ops', the feed says 'importer' wrote revision 2: a raw write")]


@pytest.mark.parametrize("long_name", [b"m" * 10_000_000, b"m" * 600 + b"\xff" * 100,
                                       b"\xff" * 700])
async def test_a_listed_name_past_the_key_limit_is_skipped_and_paging_goes_on(
        rmem: redismem.Memory, long_name: bytes) -> None:
    """A writer's raw ZADD of a 10 MB name into a scope's listing made a
    reader's keys(limit=100) take 4.7 s of server time (the page's cursor
    was the hex of the whole name). It is skipped and counted; a page that
    ends on it gets a short cursor that starts after every name sharing its
    first 512 bytes, and paging reaches every real name."""
    ns, scope = rmem.namespace, rmem.session("s")
    names = ["a", "m" * 512, "mz", "n", "\u00e9"]
    await scope.set_many(dict.fromkeys(names, 1))
    await rmem.client.zadd(K.names(ns, "value", "session", "s"),
                           {long_name: 0, long_name + b"x": 0, long_name[:600]: 0})
    seen, skipped, cursor, pages = [], 0, None, 0
    while True:
        page = await scope.keys(cursor=cursor, limit=1)
        seen += page.keys
        skipped += page.skipped
        pages += 1
        assert page.next_cursor is None or len(page.next_cursor) <= 2 * 512 + 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == sorted(names, key=str.encode)
    assert skipped >= 2 and pages < 20
    assert sorted(await scope.list_keys()) == sorted(names)


async def test_audit_finds_a_bad_session_member_and_memory_dimension(
        rmem: redismem.Memory) -> None:
    """A raw ZADD of a non-UTF-8 sessions member and a raw SET of the
    memory dimension both passed audit."""
    from redismem.audit import audit

    ns = rmem.namespace
    await rmem.create_session("s1")
    assert [f async for f in audit(rmem)] == []
    await rmem.client.zadd(K.sessions(ns), {b"\xff": 1})
    await rmem.client.set(K.memory_dim(ns), "abc")
    assert {(f.key, f.problem) async for f in audit(rmem)} == {
        (K.sessions(ns), "lists b'\\xff', which is no session id (exports report it, and "
                         "leave it out)"),
        (K.memory_dim(ns), "holds b'abc', not a dimension of at most 4096: memory vector "
                           "searches fail until it is deleted")}
