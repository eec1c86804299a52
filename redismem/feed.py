"""Reading the change feed: pages of events, and ``watch`` blocking on the
stream (XREAD BLOCK), so a change reaches a watcher in milliseconds."""

from __future__ import annotations

import asyncio
import fnmatch
import inspect
import itertools
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from redis.asyncio import Redis

from . import _json, limits
from . import keys as K
from ._validate import limit_arg
from .errors import CursorExpiredError, InvalidArgumentError
from .functions import refusals
from .limits import EVENT_KINDS
from .types import ChangePage, MemoryChangeEvent

Stop = asyncio.Event | Callable[[], bool] | None
Entries = list[tuple[bytes, dict[bytes, bytes]]]
_READ_BATCH = 1000
_SCAN_PAGES = 10
"""A filtered page examines at most this many times ``limit`` events (at least
one batch); a page may then come back short, with a cursor to go on from."""


@dataclass(frozen=True)
class EventFilter:
    """Which events a reader wants: scope kind, scope id, key prefix, key
    patterns, and the kind of what changed (``value``, ``vector``, ``turn``:
    a turn event's key is a holder id, which a key pattern may match too)."""

    scope: str | None = None
    scope_id: str | None = None
    prefix: str | None = None
    patterns: tuple[str, ...] = ()
    kind: str | None = None

    def __call__(self, event: MemoryChangeEvent) -> bool:
        if self.kind is not None and event.kind != self.kind:
            return False
        if self.scope is not None and event.scope != self.scope:
            return False
        if self.scope_id is not None and event.scope_id != self.scope_id:
            return False
        if self.prefix and not event.key.startswith(self.prefix):
            return False
        return not self.patterns or any(fnmatch.fnmatchcase(event.key, p) for p in self.patterns)




def kind_arg(kind: object) -> str | None:
    """An event kind to filter on (None = every kind)."""
    if kind is not None and kind not in EVENT_KINDS:
        raise InvalidArgumentError(f"kind must be one of {', '.join(EVENT_KINDS)} or None, "
                                   f"got {kind!r}")
    return kind


def patterns_arg(patterns: str | Iterable[str]) -> tuple[str, ...]:
    """One shell-style pattern or several, as a tuple."""
    if isinstance(patterns, str):
        found: tuple[str, ...] = (patterns,)
    else:
        found = tuple(itertools.islice(patterns, limits.MAX_PATTERNS + 1))
    if len(found) > limits.MAX_PATTERNS:
        raise InvalidArgumentError(f"at most {limits.MAX_PATTERNS} patterns, got more")
    if not found or not all(isinstance(p, str) and p and len(p) <= 4 * limits.MAX_KEY_BYTES
                            for p in found):
        raise InvalidArgumentError(f"patterns must be non-empty strings of at most "
                                   f"{4 * limits.MAX_KEY_BYTES} characters, got "
                                   f"{str(patterns)[:200]!r}")
    return found


def cursor_arg(after: object) -> int:
    """A feed cursor: a sequence number >= 0."""
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise InvalidArgumentError(f"after must be a sequence number >= 0, got {after!r}")
    return after


def parse_event(entry_id: bytes, fields: dict[bytes, bytes]) -> MemoryChangeEvent:
    """The event of one feed entry; one the library did not write comes back
    with ``error`` saying why, never as an exception."""
    try:
        return _library_event(entry_id, fields)
    except (KeyError, ValueError, OverflowError) as exc:
        return _foreign_event(entry_id, fields, exc)


def _text(fields: dict[bytes, bytes], name: bytes) -> str:
    return fields.get(name, b"").decode("utf-8", errors="replace")


def _foreign_event(entry_id: bytes, fields: dict[bytes, bytes],
                   exc: Exception) -> MemoryChangeEvent:
    what = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc)
    return MemoryChangeEvent(
        sequence=int(entry_id.split(b"-", 1)[0]), scope=_text(fields, b"scope"),
        scope_id=_text(fields, b"sid"), key=_text(fields, b"key"),
        kind=_text(fields, b"kind"), action=_text(fields, b"action"), revision=0,
        principal=_text(fields, b"by"), created_at=datetime.fromtimestamp(0, tz=UTC),
        error=f"feed entry {entry_id.decode()} was not written by redismem: {what}")


_WITHOUT_VALUE = frozenset({"append", "merge"})
"""Value changes whose events carry the delta and never the new value."""


def _library_event(entry_id: bytes, fields: dict[bytes, bytes]) -> MemoryChangeEvent:
    if not entry_id.endswith(b"-0"):
        raise ValueError("its id is not <sequence>-0")
    raw, delta = fields.get(b"value"), fields.get(b"delta")
    action = fields[b"action"].decode()
    return MemoryChangeEvent(
        sequence=int(entry_id.split(b"-", 1)[0]),
        scope=fields[b"scope"].decode(),
        scope_id=fields[b"sid"].decode(),
        key=fields[b"key"].decode(),
        kind=fields[b"kind"].decode(),
        action=action,
        revision=int(fields[b"rev"]),
        principal=fields[b"by"].decode(),
        created_at=datetime.fromtimestamp(int(fields[b"ts"]) / 1000, tz=UTC),
        value=_json.loads(raw) if raw is not None else None,
        value_omitted=fields.get(b"omitted") == b"1" or (
            action in _WITHOUT_VALUE and fields[b"kind"] == b"value"),
        delta=_json.loads(delta) if delta is not None else None,
        delta_omitted=fields.get(b"delta_omitted") == b"1",
        writer=fields[b"writer"].decode() if b"writer" in fields else None,
        checkpoint_ns=fields[b"cpns"].decode() if b"cpns" in fields else None,
        event_type=fields[b"etype"].decode() if b"etype" in fields else None,
    )


_MAX_ID_PART = 18_446_744_073_709_551_615
LAST_STREAM_ID = f"{_MAX_ID_PART}-{_MAX_ID_PART}"
"""The largest stream id: a range cannot start past it (a raw XADD can take it)."""


async def stream_entries(client: Any, stream: str
                         ) -> AsyncIterator[tuple[bytes, dict[bytes, bytes]]]:
    """Every entry of ``stream``, oldest first, read in pages of 1,000 (an
    entry added meanwhile after the page being read comes too)."""
    start = "-"
    while True:
        entries = cast(Entries, await client.xrange(stream, min=start, max="+", count=1000))
        for entry in entries:
            yield entry
        if len(entries) < 1000 or entries[-1][0].decode() == LAST_STREAM_ID:
            return  # the end, or a raw XADD took the last id there is: nothing can follow
        start = "(" + entries[-1][0].decode()


def after_id(sequence: int) -> str:
    """The stream id range start just past every entry of ``sequence``: the
    library writes ``<sequence>-0``, and an entry forged as ``<sequence>-5``
    must not be read again and again by a cursor that stays at it."""
    return f"({sequence}-{_MAX_ID_PART}"


async def current_sequence(client: Redis, ns: str) -> int:
    """The feed's last sequence: its counter, or the stream's last entry when
    the counter is not a number (it was overwritten; ``redismem repair-feed``
    sets it again)."""
    with refusals(K.feed(ns)):
        raw = await client.get(K.sequence(ns))
        try:
            return int(raw or 0)
        except ValueError:
            last = cast(Entries, await client.xrevrange(K.feed(ns), count=1))
            return int(last[0][0].split(b"-", 1)[0]) if last else 0


async def oldest_sequence(client: Redis, ns: str) -> int:
    """The first retained sequence (one past the last when nothing is retained).

    The counter is read before the stream: when the stream turns out empty,
    the counter read earlier is at most the current one, so a write landing
    between the two reads can make the answer too low (caught later by the
    gap check of ``watch``), never too high (a cursor wrongly expired)."""
    last = await current_sequence(client, ns)
    with refusals(K.feed(ns)):
        first = cast(Entries, await client.xrange(K.feed(ns), count=1))
    if first:
        return int(first[0][0].split(b"-", 1)[0])
    return last + 1


async def read_page(client: Redis, ns: str, after: int, limit: int | None,
                    wanted: EventFilter) -> ChangePage:
    """Events matching ``wanted`` after sequence ``after``, ascending.

    Raises:
        PermissionDeniedError: this credential may not read the feed (a worker).
    """
    with refusals(K.feed(ns)):
        return await _read_page(client, ns, after, limit, wanted)


async def _read_page(client: Redis, ns: str, after: int, limit: int | None,
                     wanted: EventFilter) -> ChangePage:
    after = cursor_arg(after)
    limit = int(limit_arg(limit) or limits.DEFAULT_PAGE_LIMIT)
    oldest = await oldest_sequence(client, ns)
    items: list[MemoryChangeEvent] = []
    cursor = after
    budget = max(_SCAN_PAGES * limit, _READ_BATCH)
    while budget > 0 and len(items) < limit and cursor < _MAX_ID_PART:  # else nothing follows
        entries = cast(Entries, await client.xrange(K.feed(ns), min=after_id(cursor), max="+",
                                                    count=min(_READ_BATCH, budget)))
        if not entries:
            break
        for entry_id, fields in entries:
            budget -= 1
            event = parse_event(entry_id, fields)
            if event.sequence <= cursor:  # a forged entry beside one already read
                continue
            cursor = event.sequence
            if wanted(event):
                items.append(event)
                if len(items) == limit:
                    break
    return ChangePage(items, cursor, oldest)


async def watch(client: Redis, ns: str, wanted: EventFilter, after: int | None, interval: float,
                stop: Stop) -> AsyncIterator[MemoryChangeEvent]:
    """Yield events matching ``wanted`` after ``after`` (None = only new ones),
    blocking on the stream between them.

    Raises:
        CursorExpiredError: events after ``after`` were trimmed by retention.
        PermissionDeniedError: this credential may not read the feed (a worker).
    """
    with refusals(K.feed(ns)):
        async for event in _watch(client, ns, wanted, after, interval, stop):
            yield event


async def _watch(client: Redis, ns: str, wanted: EventFilter, after: int | None,
                 interval: float, stop: Stop) -> AsyncIterator[MemoryChangeEvent]:
    if isinstance(interval, bool) or not isinstance(interval, int | float) or not (
        0.001 <= interval <= 3600
    ):
        raise InvalidArgumentError(f"interval must be 0.001..3600 seconds, got {interval!r}")
    stopped = stop_check(stop)
    feed = K.feed(ns)
    if after is None:
        after = await current_sequence(client, ns)
    last = cursor_arg(after)
    oldest = await oldest_sequence(client, ns)
    if last + 1 < oldest:
        raise _expired(last, oldest)
    block_ms = max(1, int(block_seconds(client, interval) * 1000))
    while not stopped():
        # RESP2 reply: [(stream, entries)], or None when the block timed out
        reply = cast(list[tuple[bytes, Entries]] | None, await client.xread(
            {feed: f"{last}-{_MAX_ID_PART}"}, count=_READ_BATCH, block=block_ms))
        for _stream, entries in reply or ():
            for entry_id, fields in entries:
                event = parse_event(entry_id, fields)
                if event.sequence <= last:  # a forged entry beside one already read
                    continue
                if event.sequence != last + 1:
                    # the sequence has no gaps: events were trimmed, unless a raw
                    # XADD skipped ahead (then the oldest is still before it)
                    oldest = await oldest_sequence(client, ns)
                    if last + 1 < oldest:
                        raise _expired(last, oldest)
                last = event.sequence
                if wanted(event):
                    yield event
                    if stopped():
                        return


def block_seconds(client: Redis, interval: float) -> float:
    """One blocking read (XREAD, BLPOP): ``interval``, but at most half the
    socket timeout, so that a quiet wait is not taken for a lost connection."""
    # a Redis keeps its connections' options in its pool, a RedisCluster in
    # its nodes manager
    holder = getattr(client, "connection_pool", None) or getattr(client, "nodes_manager", None)
    timeout = getattr(holder, "connection_kwargs", {}).get("socket_timeout")
    return min(interval, timeout / 2) if timeout else interval


def _expired(after: int, oldest: int) -> CursorExpiredError:
    return CursorExpiredError(
        f"cursor {after} is older than the retained feed, which starts at sequence {oldest}; "
        "events in between were trimmed", after=after, oldest_sequence=oldest)


def stop_check(stop: Stop) -> Callable[[], bool]:
    if stop is None:
        return lambda: False
    if isinstance(stop, asyncio.Event):
        return stop.is_set
    if callable(stop):
        return lambda: bool(stop())
    raise InvalidArgumentError(f"stop must be an asyncio.Event or a callable, got {stop!r}")


async def call_listener(listener: Callable[[MemoryChangeEvent], Any],
                        event: MemoryChangeEvent) -> None:
    """Call a sync or async listener."""
    result = listener(event)
    if inspect.isawaitable(result):
        await result
