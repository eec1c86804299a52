"""Every set and delete appends its change event to the namespace feed in the
same Lua call; the data model issue 3 reads from."""

from __future__ import annotations

import pytest

import redismem
from redismem import keys as K
from redismem import limits

pytestmark = pytest.mark.on_cluster


async def feed(mem: redismem.Memory) -> list[tuple[bytes, dict[bytes, bytes]]]:
    return list(await mem.client.xrange(K.feed(mem.namespace)))


async def test_events_carry_the_change(mem: redismem.Memory) -> None:
    scope = mem.session("s-1")
    await scope.set("k", {"a": 1})
    await scope.set("k", [2], expected_revision=1)
    await scope.delete("k")
    await scope.delete("k")  # nothing to delete: no event
    entries = await feed(mem)
    assert [entry_id for entry_id, _ in entries] == [b"1-0", b"2-0", b"3-0"]
    first, second, third = (fields for _, fields in entries)
    assert first[b"scope"] == b"session" and first[b"sid"] == b"s-1" and first[b"key"] == b"k"
    assert first[b"kind"] == b"value" and first[b"action"] == b"set"
    assert first[b"rev"] == b"1" and first[b"by"] == b"tester"
    assert first[b"value"] == b'{"a":1}' and int(first[b"ts"]) > 1_700_000_000_000
    assert second[b"rev"] == b"2" and second[b"value"] == b"[2]"
    assert third[b"action"] == b"delete" and third[b"rev"] == b"3"
    assert b"value" not in third and b"omitted" not in third
    assert await mem.client.get(K.sequence(mem.namespace)) == b"3"


@pytest.mark.parametrize(("write", "field", "omitted"), [("set", b"value", b"omitted"),
                                                        ("append", b"delta", b"delta_omitted")])
async def test_what_an_event_carries_is_bounded(mem: redismem.Memory, write: str, field: bytes,
                                                omitted: bytes) -> None:
    """A set's value and an append's item ride in the event up to 64 KiB
    of JSON, and are marked omitted past it."""
    scope = mem.global_scope()
    call = scope.set if write == "set" else scope.append
    # a JSON string of n characters encodes to n + 2 bytes
    await call("fits", "x" * (limits.FEED_VALUE_BYTES - 2))
    await call("omitted", "x" * (limits.FEED_VALUE_BYTES - 1))
    (_, fits), (_, left_out) = await feed(mem)
    assert len(fits[field]) == limits.FEED_VALUE_BYTES and omitted not in fits
    assert field not in left_out and left_out[omitted] == b"1"
    events = (await mem.changes(after=0)).items
    flag = "value_omitted" if write == "set" else "delta_omitted"
    assert [getattr(e, flag) for e in events] == [False, True]


async def test_failed_write_appends_nothing(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    await scope.set("k", 1)
    with pytest.raises(redismem.ConflictError):
        await scope.set("k", 2, expected_revision=0)
    with pytest.raises(redismem.ConflictError):
        await scope.delete("k", expected_revision=7)
    with pytest.raises(redismem.InvalidKeyError):
        await scope.set_many({"other": 4, "": 5})
    assert len(await feed(mem)) == 1


async def test_batch_writes_one_event_per_item_in_order(mem: redismem.Memory) -> None:
    await mem.global_scope().set_many({"b": 1, "a": 2, "c": 3})
    entries = await feed(mem)
    assert [fields[b"key"] for _, fields in entries] == [b"b", b"a", b"c"]
    assert [entry_id for entry_id, _ in entries] == [b"1-0", b"2-0", b"3-0"]


def _entry_bytes(fields: dict[bytes, bytes]) -> int:
    return sum(len(name) + len(text) for name, text in fields.items())


async def test_an_append_records_its_item_not_the_list(mem: redismem.Memory) -> None:
    """An append to a 1,000-item list (about 23 KB) writes an event of a
    few hundred bytes: the item appended, never the whole list (each used
    to carry the list, so a 6 KB log made a 1.3 MB feed)."""
    scope = mem.session("s-1")
    await scope.set("log", [f"log entry number {i:05d}" for i in range(1000)])
    assert len((await scope.get_many(["log"]))["log"].value) == 1000
    size_before = int(await mem.client.get(K.feed_size(mem.namespace)))
    revision = (await scope.append("log", {"note": "one more"})).revision
    (_, first), (_, fields) = await feed(mem)
    assert _entry_bytes(first) > 23_000  # the set carried the list
    assert _entry_bytes(fields) < 1024, fields
    assert fields[b"action"] == b"append" and fields[b"delta"] == b'{"note":"one more"}'
    assert b"value" not in fields and fields[b"rev"] == str(revision).encode()
    assert fields[b"fmt"] == b"2"
    assert int(await mem.client.get(K.feed_size(mem.namespace))) - size_before < 1024
    page = await mem.changes(after=1)
    (event,) = page.items
    assert (event.action, event.delta, event.value, event.value_omitted) == (
        "append", {"note": "one more"}, None, True)


async def test_incr_and_merge_record_their_operation(mem: redismem.Memory) -> None:
    scope = mem.session("s-1")
    await scope.incr("hits", 5)
    await scope.incr("hits", -2)
    await scope.merge("profile", {"name": "Ana", "city": "Porto"})
    await scope.merge("profile", {"city": None})
    await scope.set("plain", 1)
    events = (await mem.changes(after=0)).items
    assert [(e.action, e.value, e.value_omitted, e.delta) for e in events] == [
        ("incr", 5, False, 5), ("incr", 3, False, -2),
        ("merge", None, True, {"city": "Porto", "name": "Ana"}),
        ("merge", None, True, {"city": None}),
        ("set", 1, False, None)]
    assert [e.revision for e in events] == [1, 2, 1, 2, 1]
