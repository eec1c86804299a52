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


async def test_value_inclusion_boundary(mem: redismem.Memory) -> None:
    scope = mem.global_scope()
    # a JSON string of n characters encodes to n + 2 bytes
    await scope.set("fits", "x" * (limits.FEED_VALUE_BYTES - 2))
    await scope.set("omitted", "x" * (limits.FEED_VALUE_BYTES - 1))
    (_, fits), (_, omitted) = await feed(mem)
    assert len(fits[b"value"]) == limits.FEED_VALUE_BYTES and b"omitted" not in fits
    assert b"value" not in omitted and omitted[b"omitted"] == b"1"


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
