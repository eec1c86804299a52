"""Expiry and key listing."""

from __future__ import annotations

import asyncio

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redismem
from redismem import keys as K

pytestmark = pytest.mark.on_cluster


async def feed_length(mem: redismem.Memory) -> int:
    return int(await mem.client.xlen(K.feed(mem.namespace)))


async def test_expired_key_is_absent_unlisted_and_silent(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("keep", 1)
    assert (await scope.set("gone", 2, ttl_seconds=0.05)).revision == 1
    assert (await scope.get("gone")).value == 2
    assert await scope.list_keys() == ["gone", "keep"]
    events = await feed_length(mem)
    await asyncio.sleep(0.15)
    assert await scope.get("gone") == redismem.MemoryValue(None, 0, False)
    assert await scope.list_keys() == ["keep"]
    assert (await scope.get_many(["gone", "keep"]))["gone"].found is False
    assert await feed_length(mem) == events  # expiry appends nothing
    # a later write prunes the expired name from the listing structures
    await scope.set("other", 3)
    assert await mem.client.zrange(K.names(mem.namespace, "value", "session", "s"), 0, -1) == [
        b"keep", b"other"]
    # and the key comes back with a revision after its last one
    assert (await scope.set("gone", 4, expected_revision=0)).revision == 2


# every write of a value or vector, as (kind, call): the call writes key "k"
# of scope with the expiry arguments it is given
WRITES = {
    "set": ("value", lambda scope, **e: scope.set("k", 2, **e)),
    "set_many": ("value", lambda scope, **e: scope.set_many({"k": 2, "new": 1}, **e)),
    "incr": ("value", lambda scope, **e: scope.incr("k", **e)),
    "append": ("value", lambda scope, **e: scope.append("k", 2, **e)),
    "merge": ("value", lambda scope, **e: scope.merge("k", {"a": 2}, **e)),
    "set_vector": ("vector", lambda scope, **e: scope.set_vector("k", [1.0, 2.0], **e)),
    "set_vectors": ("vector", lambda scope, **e: scope.set_vectors({"k": [1.0, 2.0]}, **e)),
}
FIRST = {"set": 1, "set_many": 1, "incr": 1, "append": [1], "merge": {"a": 1}}


@pytest.mark.parametrize("write", sorted(WRITES))
async def test_every_write_keeps_the_expiry_unless_told(mem: redismem.Memory, write: str) -> None:
    """A write without ttl_seconds keeps the key's expiry (a plain set
    dropped it, so the README's session notes never expired); ttl_seconds
    sets a new one; persist=True removes it; both at once are refused."""
    kind, call = WRITES[write]
    scope = mem.session("s")
    ns = mem.namespace
    item = K.value(ns, "session", "s", "k") if kind == "value" else K.vector(
        ns, "session", "s", "k")
    expiry = K.expiry(ns, kind, "session", "s")

    async def first(ttl: float) -> None:
        if kind == "value":
            await scope.set("k", FIRST[write], ttl_seconds=ttl)
        else:
            await scope.set_vector("k", [1.0, 0.0], ttl_seconds=ttl)

    await first(3600)
    at = await mem.client.pexpiretime(item)
    assert at > 0 and await mem.client.zscore(expiry, "k") == at
    await call(scope)
    assert await mem.client.pexpiretime(item) == at  # kept, and its record with it
    assert await mem.client.zscore(expiry, "k") == at

    await call(scope, ttl_seconds=7200)
    later = await mem.client.pexpiretime(item)
    assert later > at and await mem.client.zscore(expiry, "k") == later

    with pytest.raises(redismem.InvalidTTLError, match="not both"):
        await call(scope, ttl_seconds=60, persist=True)
    assert await mem.client.pexpiretime(item) == later  # refused: nothing changed

    await call(scope, persist=True)
    assert await mem.client.pttl(item) == -1
    assert await mem.client.zscore(expiry, "k") is None


async def test_the_readme_program_keeps_its_notes_expiring(mem: redismem.Memory) -> None:
    """The README's first program: set with ttl_seconds=3600, then a
    compare-and-set, an update and an incr. The notes still expire."""
    notes = mem.session("s-42")
    rev = await notes.set("notes", ["pack passports"], ttl_seconds=3600)
    await notes.set("notes", ["pack passports", "visa"], expected_revision=rev)
    await notes.update("notes", lambda v: (v or []) + ["check visa"])
    ttl = await mem.client.pttl(K.value(mem.namespace, "session", "s-42", "notes"))
    assert 3_500_000 < ttl <= 3_600_000


async def test_update_keeps_expiry(mem: redismem.Memory) -> None:
    scope = mem.session("s")
    await scope.set("k", 1, ttl_seconds=60)
    await scope.update("k", lambda v: v + 1)
    ttl = await mem.client.pttl(K.value(mem.namespace, "session", "s", "k"))
    assert 0 < ttl <= 60_000
    await scope.set("short", 1, ttl_seconds=0.05)
    await asyncio.sleep(0.1)
    assert (await scope.update("short", lambda v: (v or 0) + 10)).value == 10
    assert await mem.client.pttl(K.value(mem.namespace, "session", "s", "short")) == -1


async def test_paging_2500_keys(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    names = [f"{p}{i:04d}" for p in ("a", "b") for i in range(1250)]
    for start in range(0, len(names), 1000):
        await scope.set_many({name: 1 for name in names[start:start + 1000]})
    seen: list[str] = []
    cursor = None
    pages = 0
    while True:
        page = await scope.keys(cursor=cursor, limit=100)
        pages += 1
        assert len(page.keys) == 100
        seen.extend(page.keys)
        if page.next_cursor is None:
            break
        # a cursor round-trips: the same cursor gives the same next page
        again = await scope.keys(cursor=page.next_cursor, limit=100)
        cursor = page.next_cursor
        assert again == await scope.keys(cursor=cursor, limit=100)
    assert pages == 25
    assert seen == sorted(names)
    b_keys = await scope.list_keys(prefix="b")
    assert b_keys == sorted(n for n in names if n.startswith("b"))
    prefixed: list[list[str]] = []
    cursor = None
    while True:
        page = await scope.keys(prefix="b1", cursor=cursor, limit=100)
        prefixed.append(page.keys)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [len(keys) for keys in prefixed] == [100, 100, 50]
    assert [k for keys in prefixed for k in keys] == [f"b{i}" for i in range(1000, 1250)]
    exact = await scope.keys(prefix="b01", limit=100)  # exactly one full page
    assert exact.keys == [f"b01{i:02d}" for i in range(100)] and exact.next_cursor is None
    assert (await scope.keys()).keys == sorted(names)[:100]  # default limit 100
    with pytest.raises(ValueError, match="max_keys"):
        await scope.list_keys(max_keys=2000)


async def test_bad_cursor_and_limit(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    for bad in ("zz", "abc", "not a cursor", 12):
        with pytest.raises(redismem.InvalidCursorError):
            await scope.keys(cursor=bad)  # type: ignore[arg-type]
    for bad_limit in (0, -1, 1001, 2.5, True):
        with pytest.raises(redismem.InvalidArgumentError, match="limit"):
            await scope.keys(limit=bad_limit)  # type: ignore[arg-type]
    with pytest.raises(redismem.InvalidArgumentError, match="kind"):
        await scope.keys(kind="blob")  # type: ignore[arg-type]


async def test_raw_cursor_errors(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    keys = [K.names(ns, "value", "global", "_"), K.expiry(ns, "value", "global", "_")]
    for cursor in ("zz", "a", "k1"):
        with pytest.raises(Exception, match=r"^INVALID_CURSOR"):
            await rmem.client.fcall_ro("redismem_list_keys", 2, *keys, ns, "global", "_", "value",
                                       "", cursor, "")


async def test_page_skips_many_expired_names(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    await scope.set_many({f"e{i:03d}": i for i in range(300)}, ttl_seconds=0.05)
    await scope.set_many({"z1": 1, "z2": 2})
    await asyncio.sleep(0.1)
    pages, found, cursor = 0, [], None
    while True:
        page = await scope.keys(cursor=cursor, limit=10)
        pages += 1
        found.extend(page.keys)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert found == ["z1", "z2"]
    assert pages <= 300 // 40 + 2  # each page examines at most 4 x limit names


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(names=st.sets(st.text(st.characters(codec="utf-8",
                                           exclude_categories=("Cc", "Cs", "Cf")),
                             min_size=1, max_size=6), max_size=30),
       prefix=st.text(alphabet="ab✓", max_size=2), limit=st.integers(1, 7))
async def test_listing_matches_sorted_names(rmem: redismem.Memory, names: set[str], prefix: str,
                                            limit: int) -> None:
    scope = rmem.session("prop" + str(abs(hash((frozenset(names), prefix, limit)))))
    if names:
        await scope.set_many(dict.fromkeys(names, 0))
    listed: list[str] = []
    cursor = None
    while True:
        page = await scope.keys(prefix=prefix or None, cursor=cursor, limit=limit)
        listed.extend(page.keys)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    expected = sorted((n for n in names if n.startswith(prefix)), key=lambda n: n.encode())
    assert listed == expected
