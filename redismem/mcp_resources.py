"""The values of ``redismem mcp`` as MCP resources, and their subscriptions.

Every value is the resource ``redismem://NS/SCOPE/ID/KEY`` (each part
percent-encoded; the global scope's ID is ``_``). ``resources/list`` pages
the namespace's values most recently changed first (reading them all for a
listing's first page, and the change feed for the next ones);
``resources/read`` returns a value's JSON, with its revision in ``_meta``.

A client is told when a value it subscribed to changes or is deleted, by
any writer, through the namespace's change feed (one ``watch`` per server,
started by the first subscription), not by polling keys: with
``resources/subscribe`` (protocol versions before 2026-07-28) it gets
``notifications/resources/updated``; a ``subscriptions/listen`` stream
(2026-07-28) gets the same event through the SDK's subscription bus.
"""

from __future__ import annotations

import asyncio
import bisect
import contextlib
import itertools
import json
import logging
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import quote, unquote

import mcp_types as types
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoPermissionError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import _validate as check
from . import feed
from . import keys as K
from .errors import CursorExpiredError, PermissionDeniedError, RedisMemError
from .memory import Memory
from .retries import backoff
from .scope import MemoryScope

SCHEME = "redismem://"
TEMPLATE = "redismem://{namespace}/{scope}/{id}/{key}"
PAGE_SIZE = 100
_HMGET_BATCH = 1000
PLACE_WAIT = 10.0
"""Seconds a subscription waits for the feed watcher to start (Redis down: it
is answered anyway, and the watcher catches up once Redis is back)."""
_SCOPES = ("session", "workflow", "actor", "global")

log = logging.getLogger("redismem.mcp")


def value_uri(ns: str, scope: str, sid: str, key: str) -> str:
    """The resource URI of one value."""
    return SCHEME + "/".join(quote(part, safe="") for part in (ns, scope, sid, key))


def parse_uri(uri: str, ns: str) -> tuple[str, str, str]:
    """(scope, scope id, key) of a value's URI in namespace ``ns``.

    Raises:
        ValueError: it is not such a URI (the message says why).
    """
    if not uri.startswith(SCHEME):
        raise ValueError(f"not a redismem resource: {uri[:200]!r} (redismem://NS/SCOPE/ID/KEY)")
    parts = uri[len(SCHEME):].split("/")
    if len(parts) != 4 or not all(parts):
        raise ValueError(f"a redismem resource is redismem://NS/SCOPE/ID/KEY, got {uri[:200]!r}")
    space, scope, sid, key = (unquote(part, errors="strict") for part in parts)
    if space != ns:
        raise ValueError(f"this server serves namespace {ns!r}, not {space!r}")
    if scope not in _SCOPES:
        raise ValueError(f"unknown scope {scope!r}: session, workflow, actor or global")
    if scope == "global" and sid != check.GLOBAL_ID:
        raise ValueError(f"the global scope's id is {check.GLOBAL_ID!r}, got {sid!r}")
    check.check_id(f"{scope} id", sid)
    return scope, sid, check.check_key(key)


def scope_at(memory: Memory, scope: str, sid: str) -> MemoryScope:
    """The scope a resource URI names."""
    if scope == "global":
        return memory.global_scope()
    if scope == "actor":
        return memory.actor(sid)
    return memory.session(sid) if scope == "session" else memory.workflow(sid)


class Listed(NamedTuple):
    """A value as ``resources/list`` shows it."""

    uri: str
    key: str
    scope: str
    sid: str
    revision: int
    changed_ms: int


async def listing(memory: Memory, cursor: str | None, limit: int = PAGE_SIZE
                  ) -> tuple[list[Listed], str | None]:
    """One page of the namespace's values and the cursor of the next (None:
    the last page). The values there were when the listing began come most
    recently changed first (then by URI); those written since it began
    follow, by URI. So a listing has no gaps while others write: a value
    changed between two pages, which would move ahead of the cursor, is
    listed among the later ones (perhaps a second time). Each page reads
    every live key name and its time of change: a cost in proportion to
    the namespace's values (``Listings`` reads them for a first page only).

    Raises:
        ValueError: a cursor this function did not return.
    """
    if cursor is None:
        began, place, late = await _server_ms(memory), None, False
    else:
        began, place, late = _cursor_place(cursor)
    return await (await _Snapshot.read(memory, began, 0)).page(memory, began, place, late,
                                                                 limit)


async def _server_ms(memory: Memory) -> int:
    seconds, micros = await memory.client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def _cursor_place(cursor: str) -> tuple[int, tuple[int, str] | None, bool]:
    """(when the listing began, the place after the last value listed,
    whether it is among the values written since)."""
    began, _, rest = cursor.partition("|")
    changed, _, uri = rest.partition("|")
    if not began.isdigit() or not (changed.isdigit() or changed == "late") or \
            not uri.startswith(SCHEME):
        raise ValueError(f"not a cursor of resources/list: {cursor[:100]!r}")
    return int(began), (-int(changed) if changed != "late" else 0, uri), changed == "late"


class Listings:
    """``listing`` that reads the namespace once per listing, not once per
    page: the first page keeps what it read (a snapshot, at most
    ``keep`` of them, each for ``keep_seconds`` after its last use), and
    each later page learns from the change feed which values were written
    or deleted since, giving the very pages ``listing`` gives. A cursor
    whose snapshot is gone (another server process, a restart, a feed
    trimmed past it) is served by ``listing``."""

    def __init__(self, keep: int = 4, keep_seconds: float = 600.0) -> None:
        self.keep, self.keep_seconds = keep, keep_seconds
        self._snapshots: dict[int, _Snapshot] = {}

    async def page(self, memory: Memory, cursor: str | None, limit: int = PAGE_SIZE
                   ) -> tuple[list[Listed], str | None]:
        """As :func:`listing`."""
        now = time.monotonic()
        for began in [b for b, s in self._snapshots.items() if now - s.used > self.keep_seconds]:
            del self._snapshots[began]
        if cursor is None:
            began = await _server_ms(memory)
            # read after the clock: every event after it is of a write at or after `began`
            sequence = await feed.current_sequence(memory.client, memory.namespace)
            snapshot = await _Snapshot.read(memory, began, sequence)
            if len(self._snapshots) >= self.keep:
                del self._snapshots[min(self._snapshots, key=lambda b: self._snapshots[b].used)]
            self._snapshots[began] = snapshot
            return await snapshot.page(memory, began, None, False, limit)
        began, place, late = _cursor_place(cursor)
        kept = self._snapshots.get(began)
        if kept is not None:
            kept.used = now
            try:
                await kept.catch_up(memory)
                return await kept.page(memory, began, place, late, limit)
            except (CursorExpiredError, PermissionDeniedError, NoPermissionError):
                del self._snapshots[began]
        return await listing(memory, cursor, limit)


@dataclass
class _Snapshot:
    """What the first page of a listing read: the values changed before it
    began (most recent first), those changed since (``late``, URIs), and
    the feed sequence up to which writes since are known (in ``late`` too)."""

    before: list[Listed]
    late: set[str]
    sequence: int
    used: float

    @classmethod
    async def read(cls, memory: Memory, began: int, sequence: int) -> _Snapshot:
        """The namespace's values now, for a listing that began at ``began``
        (ms, the server's clock) with the feed at ``sequence``."""
        found = await _all_values(memory)
        return cls(sorted((item for item in found if item.changed_ms < began),
                          key=lambda item: (-item.changed_ms, item.uri)),
                   {item.uri for item in found if item.changed_ms >= began}, sequence,
                   time.monotonic())

    async def catch_up(self, memory: Memory) -> None:
        """Add to ``late`` the values written or deleted since ``sequence``."""
        while True:
            got = await memory.changes(after=self.sequence, limit=1000, kind="value")
            for event in got.items:
                self.late.add(value_uri(memory.namespace, event.scope, event.scope_id,
                                        event.key))
            if got.next_cursor == self.sequence:
                return
            self.sequence = got.next_cursor

    async def page(self, memory: Memory, began: int, place: tuple[int, str] | None,
                   late: bool, limit: int) -> tuple[list[Listed], str | None]:
        page: list[Listed] = []
        if not late:
            start = 0 if place is None else bisect.bisect_right(
                self.before, place, key=lambda item: (-item.changed_ms, item.uri))
            for item in itertools.islice(self.before, start, None):
                if item.uri in self.late:
                    continue  # written since the listing began: listed among the late ones
                if len(page) == limit:
                    return page, f"{began}|{page[-1].changed_ms}|{page[-1].uri}"
                page.append(item)
            place = None
        since = sorted(uri for uri in self.late if place is None or uri > place[1])
        last = SCHEME  # before every URI: no late value on this page yet
        for first in range(0, len(since), _HMGET_BATCH):
            named = [parse_uri(uri, memory.namespace) for uri in since[first:first + _HMGET_BATCH]]
            for item in await _read_listed(memory, named):
                if len(page) == limit:
                    return page, f"{began}|late|{last}"
                page.append(item)
                last = item.uri
        return page, None


async def _read_listed(memory: Memory, named: list[tuple[str, str, str]]) -> list[Listed]:
    """The values of ``named`` ((scope, scope id, key) each) that exist (one
    of a scope this credential may not read counts as absent), in the order
    given: one pipeline."""
    client: Any = memory.client
    ns = memory.namespace
    pipe = client.pipeline(transaction=False)
    for scope, sid, key in named:
        pipe.hmget(K.value(ns, scope, sid, key), ["rev", "ts"])
    found = []
    for (scope, sid, key), reply in zip(named, await pipe.execute(raise_on_error=False),
                                        strict=True):
        if isinstance(reply, NoPermissionError):
            continue
        if isinstance(reply, Exception):
            raise reply
        rev, ts = reply
        if rev is not None:
            found.append(Listed(value_uri(ns, scope, sid, key), key, scope, sid, _int(rev),
                                _int(ts)))
    return found


async def _all_values(memory: Memory) -> list[Listed]:
    client: Any = memory.client
    ns = memory.namespace
    scopes = []
    for member in await client.zrange(K.scopes(ns), 0, -1):
        try:
            tag, scope, sid = K.scope_entry(member.decode())
            check.check_id("scope id", sid)
        except (UnicodeDecodeError, ValueError, RedisMemError):
            continue  # a raw write: `redismem audit` names it
        if tag == K.kind_tag("value") and scope in _SCOPES and (
                scope != "global" or sid == check.GLOBAL_ID):
            scopes.append((scope, sid))
    found: list[Listed] = []
    for scope, sid in sorted(scopes):
        target = scope_at(memory, scope, sid)
        names: list[str] = []
        try:
            page_cursor: str | None = None
            while True:
                page = await target.keys(cursor=page_cursor, limit=1000)
                names += page.keys
                page_cursor = page.next_cursor
                if page_cursor is None:
                    break
            for first in range(0, len(names), _HMGET_BATCH):  # those deleted since are left out
                found += await _read_listed(memory, [(scope, sid, name) for name in
                                                     names[first:first + _HMGET_BATCH]])
        except PermissionDeniedError:
            continue  # a scope this credential may not read is not listed
    return found


def _int(raw: bytes | None) -> int:
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        return 0


class FeedNotifier:
    """The subscription bus of ``redismem mcp``, fed by the change feed.

    It is the SDK's in-process bus (``subscriptions/listen`` streams
    subscribe to it) plus the sessions that sent ``resources/subscribe``;
    ``run`` follows the namespace's feed from the first subscription on
    and tells both of every value that changes. A ``resources/subscribe``
    is answered, and a listen stream acknowledged, once the watcher knows
    where the feed stands, so no change after the answer is missed.
    """

    def __init__(self) -> None:
        self._bus = InMemorySubscriptionBus()
        self._sessions: dict[str, dict[object, ServerSession]] = {}
        self._wanted = asyncio.Event()
        self._placed = asyncio.Event()  # the feed's place to follow from is known
        self.refused: str | None = None
        """Why this credential cannot follow the feed (a worker), once known."""
        self._probed = False

    # the SubscriptionBus protocol

    async def publish(self, event: ServerEvent) -> None:
        await self._bus.publish(event)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        self._wanted.set()
        return self._bus.subscribe(listener)

    # resources/subscribe: by client connection (each request has its own
    # ServerSession; notifications go out on the connection's own channel)

    async def add(self, uri: str, session: ServerSession) -> None:
        """Tell ``session`` of changes to ``uri``: every change after this
        returns."""
        self._sessions.setdefault(uri, {})[_connection_of(session)] = session
        await self.placed()

    async def placed(self) -> None:
        """Start the watcher, and wait (at most PLACE_WAIT seconds) until it
        knows where the feed stands: a change after this returns is seen."""
        self._wanted.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._placed.wait(), PLACE_WAIT)

    def remove(self, uri: str, session: ServerSession) -> None:
        held = self._sessions.get(uri)
        if held is not None:
            held.pop(_connection_of(session), None)
            if not held:
                del self._sessions[uri]

    async def check_readable(self, memory: Memory) -> None:
        """Refuse (PermissionDeniedError) a subscription this credential
        could never serve: one that may not read the feed (a worker)."""
        if self.refused is None and not self._probed:
            try:
                await memory.client.xrevrange(K.feed(memory.namespace), count=1)
            except NoPermissionError:
                self.refused = ("this credential may not read the change feed, so it cannot be "
                                "told of changes (a worker's role writes the feed only)")
            self._probed = True
        if self.refused is not None:
            raise PermissionDeniedError(self.refused)

    async def run(self, memory: Callable[[], Memory]) -> None:
        """Follow the feed (from the first subscription on) until cancelled;
        a lost server is waited out, and after a gap (events trimmed while
        it was away) every value subscribed with ``resources/subscribe`` is
        reported changed (a listen stream hears that the list changed)."""
        await self._wanted.wait()
        after: int | None = None
        failures = 0
        while True:
            try:
                if after is None:  # from now on; kept across a lost server
                    after = await feed.current_sequence(memory().client, memory().namespace)
                    self._placed.set()
                async for event in memory().watch("*", after=after, kind="value"):
                    after, failures = event.sequence, 0
                    await self._changed([value_uri(memory().namespace, event.scope,
                                                   event.scope_id, event.key)])
            except PermissionDeniedError as exc:
                self.refused = str(exc)
                log.warning("resource subscriptions are off: %s", exc)
                self._placed.set()  # nobody waits for a place there will never be
                return
            except CursorExpiredError:
                after = None
                await self._changed(list(self._sessions))
            except (OSError, RedisConnectionError, RedisTimeoutError) as exc:
                failures += 1
                log.info("the change feed cannot be read (%s); trying again", exc)
                await asyncio.sleep(backoff().compute(failures))

    async def _changed(self, uris: Iterable[str]) -> None:
        for uri in uris:
            await self._bus.publish(ResourceUpdated(uri=uri))
            for session in list(self._sessions.get(uri, {}).values()):
                try:
                    await session.send_resource_updated(uri)
                except Exception:  # a closed session: forget it
                    self.remove(uri, session)
        await self._bus.publish(ResourcesListChanged())


def _connection_of(session: ServerSession) -> object:
    """What stays the same across one client connection's requests."""
    return getattr(session, "_connection", session)


def register(server: MCPServer[Any], memory: Callable[[], Memory], ns: str,
             notifier: FeedNotifier) -> None:
    """Serve the values of ``memory()`` as resources on ``server``: the
    template, list, read, and (before 2026-07-28) subscribe requests."""
    lowlevel = server._lowlevel_server  # add_request_handler: the SDK's handler seam
    listings = Listings()

    async def list_templates(ctx: Any, params: types.PaginatedRequestParams
                             ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[types.ResourceTemplate(
            uri_template=TEMPLATE, name="value", mime_type="application/json",
            description=f"A value of namespace {ns!r}: redismem://{quote(ns, safe='')}/SCOPE/ID/"
                        "KEY, SCOPE one of session, workflow, actor, global (ID '_'), each "
                        "part percent-encoded. Reading it gives its JSON; _meta.revision is "
                        "its revision.")])

    async def list_resources(ctx: Any, params: types.PaginatedRequestParams
                             ) -> types.ListResourcesResult:
        with resource_errors(None):
            page, cursor = await listings.page(memory(), params.cursor)
        return types.ListResourcesResult(next_cursor=cursor, resources=[types.Resource(
            uri=item.uri, name=item.key, title=f"{item.key} ({item.scope}:{item.sid})",
            description=f"value {item.key!r} of scope {item.scope}:{item.sid}, revision "
                        f"{item.revision}", mime_type="application/json",
            annotations=types.Annotations(last_modified=_iso(item.changed_ms)),
            _meta={"revision": item.revision}) for item in page])

    async def read(ctx: Any, params: types.ReadResourceRequestParams
                   ) -> types.ReadResourceResult:
        uri = str(params.uri)
        with resource_errors(uri):
            scope, sid, key = parse_uri(uri, ns)
            got = await scope_at(memory(), scope, sid).get(key)
        if not got.found:
            raise MCPError(types.INVALID_PARAMS, f"not found: {uri} holds no value",
                           {"uri": uri})
        return types.ReadResourceResult(contents=[types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(got.value, ensure_ascii=False),
            _meta={"revision": got.revision})])

    async def subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        uri = str(params.uri)
        with resource_errors(uri):
            parse_uri(uri, ns)
            await notifier.check_readable(memory())
        await notifier.add(uri, ctx.session)
        return types.EmptyResult()

    async def unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams
                          ) -> types.EmptyResult:
        notifier.remove(str(params.uri), ctx.session)
        return types.EmptyResult()

    listen = lowlevel.get_request_handler("subscriptions/listen")
    if listen is not None:  # acknowledged once the feed's place is known
        served = listen.handler

        async def placed_listen(ctx: Any, params: types.SubscriptionsListenRequestParams
                                ) -> Any:
            if params.notifications.resource_subscriptions:
                with resource_errors(None):
                    await notifier.check_readable(memory())
                    await notifier.placed()
            return await served(ctx, params)

        lowlevel.add_request_handler("subscriptions/listen",
                                     types.SubscriptionsListenRequestParams, placed_listen)
    lowlevel.add_request_handler("resources/templates/list", types.PaginatedRequestParams,
                                 list_templates)
    lowlevel.add_request_handler("resources/list", types.PaginatedRequestParams, list_resources)
    lowlevel.add_request_handler("resources/read", types.ReadResourceRequestParams, read)
    lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
    lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams,
                                 unsubscribe)


@contextlib.contextmanager
def resource_errors(uri: str | None) -> Iterator[None]:
    """A refusal as an MCP error whose message an agent can act on."""
    try:
        yield
    except (PermissionDeniedError, NoPermissionError) as exc:
        raise MCPError(types.INVALID_REQUEST, f"permission denied: {exc}",
                       {"uri": uri}) from None
    except RedisMemError as exc:
        raise MCPError(types.INVALID_PARAMS, f"{exc.code}: {exc}", {"uri": uri}) from None
    except ValueError as exc:
        raise MCPError(types.INVALID_PARAMS, f"invalid_argument: {exc}", {"uri": uri}) from None
    except (OSError, RedisError) as exc:
        raise MCPError(types.INTERNAL_ERROR, f"unavailable: the Redis server did not answer "
                                             f"({exc}); try again later", {"uri": uri}) from None


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
