"""Repair a namespace's change feed after raw writes jammed it.

A role that writes through the library can also run the underlying
commands on its keys (README, "Access control"). Raw writes can leave the
feed in a state the library refuses to write on: a sequence counter past
any real sequence (``SET rm:{ns}:seq 9007199254740991``), a stream whose
last id is the largest possible (``XADD ... 18446744073709551615-...``),
or entries whose ids are not ``<sequence>-0``. :func:`repair_feed` drops
those entries and sets the counter, the stream's last id and the size
estimate from what remains.

Every change is one step of the library's ``redismem_repair_feed``
(lua/functions/repair_feed.lua), so writers may go on while it runs and
none of their events is lost: it deletes only entries the library cannot
have written, sets the counter and last id in one atomic call, and where
the server cannot lower a stream's last id past a deleted entry (Redis
7.2+), copies the feed and swaps the copy in with the events written
meanwhile. An admin's credential may run it (docs/access-control.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from redis.asyncio import Redis

from . import keys as K
from .errors import FeedCorruptError
from .feed import stream_entries
from .functions import refusals
from .limits import MAX_SEQUENCE
from .memory import Memory

EVENT_OVERHEAD = 64
"""Bytes counted per event in the feed size estimate (lua/lib/50_feed.lua)."""

DROP_BATCH = 1000
"""Entry ids per drop step (the library's most)."""

ATTEMPTS = 5
"""Scans before giving up on raw writes that keep adding entries."""


@dataclass(frozen=True)
class FeedRepair:
    """What :func:`repair_feed` did."""

    removed: tuple[str, ...]
    """Ids of the entries dropped: not ``<sequence>-0``, or past the largest sequence."""
    sequence: int
    """The counter as set: the feed's last sequence."""
    previous_counter: str | None
    """What the counter held before (None: absent)."""
    feed_bytes: int
    """The size estimate as set, counted from the entries kept."""


def stored_count(raw: bytes | str | None, most: int) -> int | None:
    """A counter key's value as the library reads it (lua/lib/50_feed.lua):
    at most 16 digits and at most ``most``, else None."""
    text = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    if text is None or not text.isdigit() or len(text) > 16 or int(text) > most:
        return None
    return int(text)


def _sequence(entry_id: bytes) -> int | None:
    """The sequence of a library entry id ``<sequence>-0``, else None."""
    head, _, tail = entry_id.partition(b"-")
    if tail != b"0" or not head.isdigit():
        return None
    sequence = int(head)
    return sequence if sequence <= MAX_SEQUENCE else None


async def repair_feed(mem: Memory) -> FeedRepair:
    """Drop the feed entries the library cannot have written and set the
    counter, the stream's last id and the size estimate right. Running it
    on a healthy feed changes nothing, and writes may go on meanwhile.

    Raises:
        PermissionDeniedError: the credential is not the namespace's admin
            (or an operator).
        FeedCorruptError: raw writes kept adding entries the library cannot
            have written while it ran.
    """
    with refusals(K.feed(mem.namespace)):
        return await _repair(mem)


async def _repair(mem: Memory) -> FeedRepair:
    client, ns, functions = mem.client, mem.namespace, mem._conn.functions
    removed: list[bytes] = []
    for _ in range(ATTEMPTS):
        dropped, size = await _scan(client, K.feed(ns), keep=None)
        for start in range(0, len(dropped), DROP_BATCH):
            await functions.repair_feed(ns, "drop", *dropped[start:start + DROP_BATCH])
        removed += dropped
        status, sequence, previous = await functions.repair_feed(ns, "settle", str(size))
        if status == 0:  # the server cannot lower the last id: copy, then swap
            await client.delete(K.feed_rebuild(ns))
            _, size = await _scan(client, K.feed(ns), keep=K.feed_rebuild(ns))
            status, sequence, previous = await functions.repair_feed(ns, "swap", str(size))
        if status == 1:
            shown = previous.decode(errors="replace") if isinstance(previous, bytes) else previous
            return FeedRepair(tuple(i.decode() for i in removed), int(sequence), shown, size)
    raise FeedCorruptError(f"raw writes kept adding entries to {K.feed(ns)} while it was "
                           f"repaired ({ATTEMPTS} scans): stop them, then repair again")


async def _scan(client: Redis, feed: str, keep: str | None) -> tuple[list[bytes], int]:
    """The ids of the feed's entries the library cannot have written and
    the size estimate of the others; with ``keep``, copies the others into
    that stream (same ids and fields)."""
    bad: list[bytes] = []
    size = 0
    batch = client.pipeline(transaction=False)
    async for entry_id, fields in stream_entries(client, feed):
        if _sequence(entry_id) is None:
            bad.append(entry_id)
            continue
        size += EVENT_OVERHEAD + sum(len(k) + len(v) for k, v in fields.items())
        if keep is not None:
            batch.xadd(keep, fields, id=entry_id)  # type: ignore[arg-type]
            if len(batch) >= 1000:
                await batch.execute()
    if keep is not None:
        await batch.execute()
    return bad, size
