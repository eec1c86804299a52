"""Repair a namespace's change feed after raw writes jammed it.

A role that writes through the library can also run the underlying
commands on its keys (README, "Access control"). Raw writes can leave the
feed in a state the library refuses to write on: a sequence counter past
any real sequence (``SET rm:{ns}:seq 9007199254740991``), a stream whose
last id is the largest possible (``XADD ... 18446744073709551615-...``),
or entries whose ids are not ``<sequence>-0``. :func:`repair_feed` drops
those entries and sets the counter, the stream's last id and the size
estimate from what remains. It needs the feed's raw commands (XDEL,
XSETID, SET): an admin's or operator's credential.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import cast

from redis.asyncio import Redis

from . import keys as K
from .feed import LAST_STREAM_ID, Entries
from .functions import refusals
from .limits import MAX_SEQUENCE

EVENT_OVERHEAD = 64
"""Bytes counted per event in the feed size estimate (lua/lib/50_feed.lua)."""


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


async def repair_feed(client: Redis, ns: str) -> FeedRepair:
    """Drop the feed entries the library cannot have written and set the
    counter, the stream's last id and the size estimate right. Running it
    on a healthy feed changes nothing (its counter may only go up).

    Raises:
        PermissionDeniedError: the credential may not run XDEL/XSETID/SET.
    """
    with refusals():
        return await _repair(client, ns)


async def _repair(client: Redis, ns: str) -> FeedRepair:
    feed, counter_key = K.feed(ns), K.sequence(ns)
    removed: list[bytes] = []
    last, size = 0, 0
    async for entry_id, fields in _entries(client, feed):
        sequence = _sequence(entry_id)
        if sequence is None:
            removed.append(entry_id)
        else:
            last = sequence
            size += EVENT_OVERHEAD + sum(len(k) + len(v) for k, v in fields.items())
    got = await client.get(counter_key)
    raw = got.decode(errors="replace") if isinstance(got, bytes) else got
    counter = stored_count(raw, MAX_SEQUENCE)
    if counter is not None and last <= counter:
        last = counter  # events after the last one kept were trimmed
    if removed or await _jammed(client, feed, last):
        await _rebuild(client, ns, set(removed))
    if await client.exists(feed):  # the stream's last id, which the next XADD must exceed
        await client.execute_command("XSETID", feed, f"{last}-0")  # type: ignore[no-untyped-call]
    await client.set(counter_key, str(last))
    await client.set(K.feed_size(ns), str(size))
    return FeedRepair(tuple(i.decode() for i in removed), last, raw, size)


async def _entries(client: Redis, stream: str) -> AsyncIterator[tuple[bytes, dict[bytes, bytes]]]:
    start = "-"
    while True:
        entries = cast(Entries, await client.xrange(stream, min=start, max="+", count=1000))
        for entry in entries:
            yield entry
        if len(entries) < 1000 or entries[-1][0].decode() == LAST_STREAM_ID:
            return
        start = "(" + entries[-1][0].decode()


async def _jammed(client: Redis, feed: str, last: int) -> bool:
    """Whether the stream's last id (or largest deleted id) is past ``last``:
    XSETID cannot lower it below a deleted id, so the stream is copied."""
    if not await client.exists(feed):
        return False
    info = await client.xinfo_stream(feed)
    for field in ("last-generated-id", "max-deleted-entry-id"):
        value = info.get(field) or b"0-0"
        head, _, tail = (value if isinstance(value, bytes) else str(value).encode()).partition(b"-")
        if (int(head), int(tail or 0)) > (last, 0):
            return True
    return False


async def _rebuild(client: Redis, ns: str, dropped: set[bytes]) -> None:
    """Copy the feed's entries but ``dropped`` into a new stream (same ids,
    same fields) and rename it over the feed: a new stream's last id is its
    last entry's."""
    feed, copy = K.feed(ns), K.feed_rebuild(ns)
    await client.delete(copy)
    batch = client.pipeline(transaction=False)
    async for entry_id, fields in _entries(client, feed):
        if entry_id not in dropped:
            batch.xadd(copy, fields, id=entry_id)  # type: ignore[arg-type]
            if len(batch) >= 1000:
                await batch.execute()
    await batch.execute()
    if await client.exists(copy):
        await client.rename(copy, feed)
    else:
        await client.delete(feed)
