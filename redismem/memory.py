"""Memory: one namespace on one server, scope selection, session and workflow
contexts, and :func:`connect`."""

from __future__ import annotations

import asyncio
import getpass
import os
import re
import socket
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any

from redis.asyncio import Redis

from . import _validate as check
from . import feed, limits
from ._connection import Connection
from .client import (
    MEMORY_URL,
    authenticated_principal,
    check_eviction,
    check_replicas,
    detect_capabilities,
    open_client,
    redact,
    resolve_url,
)
from .errors import InvalidArgumentError
from .functions import Functions
from .library import ensure_library
from .retries import CLUSTER_TIMEOUT
from .scope import MemoryScope
from .types import Capabilities, ChangePage, MemoryChangeEvent, MemoryValue, ScopeKind

Listener = Callable[[MemoryChangeEvent], Any]

_active_session: ContextVar[str | None] = ContextVar("redismem_session", default=None)
_active_workflow: ContextVar[str | None] = ContextVar("redismem_workflow", default=None)


class _ScopeContext:
    """Selects the active session or workflow for a block (``with`` or ``async with``)."""

    def __init__(self, var: ContextVar[str | None], what: str, value: str) -> None:
        self._var = var
        self._value = check.check_id(what, value)
        self._token: Token[str | None] | None = None

    def __enter__(self) -> str:
        self._token = self._var.set(self._value)
        return self._value

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        self._var.reset(self._token)
        self._token = None

    async def __aenter__(self) -> str:
        return self.__enter__()

    async def __aexit__(self, *exc: object) -> None:
        self.__exit__()


def session_scope(session_id: str) -> _ScopeContext:
    """Make ``session_id`` the active session for a block: ``Memory.session()``
    without an id and ``Memory.default()`` then use it."""
    return _ScopeContext(_active_session, "session id", session_id)


def workflow_scope(root_id: str) -> _ScopeContext:
    """Make ``root_id`` the active workflow for a block."""
    return _ScopeContext(_active_workflow, "workflow root id", root_id)


def current_session() -> str | None:
    """The active session id, if any."""
    return _active_session.get()


def current_workflow() -> str | None:
    """The active workflow root id, if any."""
    return _active_workflow.get()


def default_principal() -> str:
    """``REDISMEM_PRINCIPAL``, else ``user@host`` with unusable characters replaced."""
    named = os.environ.get("REDISMEM_PRINCIPAL")
    if named:
        return named
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "user"
    name = f"{user}@{socket.gethostname()}"
    return re.sub(r"[:{}\s\x00-\x1f\x7f]", "-", name)[:128]


class Memory:
    """Shared memory of one namespace. Create it with :func:`connect`.

    Attributes:
        namespace: the namespace all scopes of this object live in.
        principal: who writes; recorded on every value and change event.
        capabilities: what the server offers (search module or not).
    """

    def __init__(self, connection: Connection, capabilities: Capabilities) -> None:
        self._conn = connection
        self.capabilities = capabilities
        self._closed = False
        self._listeners: list[tuple[feed.EventFilter, int | None, float, Listener]] = []

    @property
    def namespace(self) -> str:
        return self._conn.namespace

    @property
    def principal(self) -> str:
        return self._conn.principal

    @property
    def client(self) -> Redis:
        """The underlying redis-py client (for inspection; writes go through scopes)."""
        return self._conn.client

    def __repr__(self) -> str:
        return f"Memory(namespace={self.namespace!r}, principal={self.principal!r})"

    # scopes

    def session(self, session_id: str | None = None) -> MemoryScope:
        """The scope of ``session_id``, else of the active session.

        Raises:
            ValueError: no id given and no session active.
        """
        return self._contextual("session", session_id, _active_session,
                                "a session id is needed: pass session_id or enter "
                                "session_scope()")

    def actor(self, actor_id: str | None = None) -> MemoryScope:
        """The scope of ``actor_id``, by default this connection's principal."""
        return MemoryScope(self._conn, "actor",
                           self.principal if actor_id is None else actor_id)

    def workflow(self, root_id: str | None = None) -> MemoryScope:
        """The scope of the workflow ``root_id``, else of the active workflow.

        Raises:
            ValueError: no id given and no workflow active.
        """
        return self._contextual("workflow", root_id, _active_workflow,
                                "a workflow root id is needed: pass root_id or enter "
                                "workflow_scope()")

    def _contextual(self, scope: ScopeKind, given: str | None, active: ContextVar[str | None],
                    missing: str) -> MemoryScope:
        """The scope of ``given``, else of the id ``active`` holds."""
        sid = given if given is not None else active.get()
        if sid is None:
            raise ValueError(missing)
        return MemoryScope(self._conn, scope, sid)

    def global_scope(self) -> MemoryScope:
        """The namespace-wide scope."""
        return MemoryScope(self._conn, "global", check.GLOBAL_ID)

    def default(self) -> MemoryScope:
        """The active session's scope, else the active workflow's, else global."""
        if _active_session.get() is not None:
            return self.session()
        if _active_workflow.get() is not None:
            return self.workflow()
        return self.global_scope()

    # convenience on default()

    async def get(self, key: str) -> MemoryValue:
        """``default().get(key)``."""
        return await self.default().get(key)

    async def set(self, key: str, value: Any, *,
                  expected_revision: int | MemoryValue | None = None,
                  ttl_seconds: float | None = None, persist: bool = False) -> MemoryValue:
        """``default().set(...)``."""
        return await self.default().set(key, value, expected_revision=expected_revision,
                                        ttl_seconds=ttl_seconds, persist=persist)

    async def update(self, key: str, fn: Callable[[Any], Any | Awaitable[Any]], *,
                     timeout: float = 10.0, attempts: int | None = None) -> MemoryValue:
        """``default().update(...)``."""
        return await self.default().update(key, fn, timeout=timeout, attempts=attempts)

    async def delete(self, key: str, *,
                     expected_revision: int | MemoryValue | None = None) -> bool:
        """``default().delete(...)``."""
        return await self.default().delete(key, expected_revision=expected_revision)

    async def create_session(self, session_id: str | None = None) -> str:
        """Register a session and return its id (a new random one by default).
        Creating an existing id again keeps it and its memory."""
        sid = check.check_id("session id",
                             uuid.uuid4().hex if session_id is None else session_id)
        await self._conn.functions.create_session(self.namespace, sid)
        return sid

    # settings

    async def settings(self) -> dict[str, int | str]:
        """The namespace settings, defaults filled in."""
        got = await self._conn.functions.get_config(self.namespace)
        self._conn.settings = got
        self._conn.functions.max_call_bytes = int(got["max_call_bytes"])
        return dict(got)

    async def configure(self, **settings: int | str) -> dict[str, int | str]:
        """Change namespace settings, all or none, e.g. ``max_value_bytes=4096``
        or ``vector_index="flat"``.

        Raises:
            InvalidArgumentError: unknown setting or value out of bounds.
        """
        for name, value in settings.items():
            check.check_setting(name, value)
        if settings:
            await self._conn.functions.set_config(self.namespace, list(settings.items()))
        return await self.settings()

    # change feed

    async def changes(self, after: int = 0, limit: int | None = None, prefix: str | None = None,
                      scope: str | None = None, kind: str | None = None) -> ChangePage:
        """Change events of the whole namespace (or of one scope kind, or of
        one kind of change) after sequence ``after``; see ``MemoryScope.changes``."""
        wanted = feed.EventFilter(_scope_kind(scope), None, check.prefix_arg(prefix) or None,
                                  kind=feed.kind_arg(kind))
        return await feed.read_page(self.client, self.namespace, after, limit, wanted)

    def watch(self, patterns: str | Iterable[str], scope: str | None = None,
              after: int | None = 0, interval: float = 0.25, stop: feed.Stop = None,
              kind: str | None = None) -> AsyncIterator[MemoryChangeEvent]:
        """Events of the namespace (or one scope kind, or one kind of change)
        whose key matches a pattern; see ``MemoryScope.watch``."""
        wanted = feed.EventFilter(_scope_kind(scope), None, None, feed.patterns_arg(patterns),
                                  feed.kind_arg(kind))
        return feed.watch(self.client, self.namespace, wanted, after, interval, stop)

    def on_change(self, patterns: str | Iterable[str], scope: str | None = None,
                  after: int | None = 0, interval: float = 0.25
                  ) -> Callable[[Listener], Listener]:
        """Register a sync or async listener for events whose key matches a
        pattern, in the namespace or one scope kind; ``serve()`` runs them. The
        decorator returns the function unchanged."""
        wanted = feed.EventFilter(_scope_kind(scope), None, None, feed.patterns_arg(patterns))
        start = None if after is None else feed.cursor_arg(after)

        def register(listener: Listener) -> Listener:
            self._listeners.append((wanted, start, interval, listener))
            return listener

        return register

    async def serve(self, stop: feed.Stop = None) -> None:
        """Run every registered listener until cancelled or ``stop`` is set.

        An exception in a listener stops all of them and propagates from here.

        Raises:
            CursorExpiredError: a listener's cursor is older than the feed.
        """

        # Listeners end through a shared flag checked between blocking reads,
        # never by cancelling a read in flight (that can leave redis-py's
        # connection waiting).
        halt = asyncio.Event()
        user_stop = feed.stop_check(stop)

        def stopped() -> bool:
            return halt.is_set() or user_stop()

        async def run(wanted: feed.EventFilter, after: int | None, interval: float,
                      listener: Listener) -> None:
            async for event in feed.watch(self.client, self.namespace, wanted, after, interval,
                                          stopped):
                await feed.call_listener(listener, event)

        tasks = [asyncio.create_task(run(*spec)) for spec in self._listeners]
        if not tasks:
            return
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        finally:
            halt.set()
            results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result

    async def trim_feed(self) -> int:
        """Drop events older than the namespace's ``feed_retention_ms``, and the
        oldest while the feed is over ``feed_max_bytes``, now; returns how
        many. Works in slices of at most 2,000 events (and 4 MiB read), one
        call each, so other clients wait milliseconds, not seconds; writes
        also trim, a few events at a time."""
        total = 0
        while True:
            dropped, more = await self._conn.functions.trim_feed(self.namespace,
                                                                 limits.TRIM_SLICE_EVENTS)
            total += dropped
            if not more:
                return total

    # lifecycle

    async def close(self) -> None:
        """Close the connection; calling it again does nothing."""
        if self._closed:
            return
        self._closed = True
        await self._conn.client.aclose()

    async def __aenter__(self) -> Memory:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self.close()


def _scope_kind(scope: str | None) -> str | None:
    if scope is not None and scope not in check.SCOPES:
        raise InvalidArgumentError(
            f"scope must be one of {', '.join(check.SCOPES)} or None, got {scope!r}")
    return scope


async def connect(url: str | None = None, *, namespace: str = "default",
                  principal: str | None = None, allow_eviction: bool | None = None,
                  durability: str = "primary", replica_timeout: float = 1.0,
                  cluster_timeout: float = CLUSTER_TIMEOUT,
                  connect_timeout: float | None = None) -> Memory:
    """Connect to redismem memory.

    Args:
        url: ``redis://``, ``rediss://``, ``unix://`` or ``memory://``; default
            ``REDISMEM_URL``, else the embedded server (started if needed).
        namespace: the namespace to work in.
        principal: who writes; default ``REDISMEM_PRINCIPAL`` or ``user@host``.
            A connection authenticated as an ACL user other than ``default``
            writes as that user: its name is the principal (the server's ACL
            lets it name no other), and a different ``principal`` (or
            ``REDISMEM_PRINCIPAL``) is refused.
        allow_eviction: connect even when the server's ``maxmemory-policy``
            may evict keys (anything but ``noeviction``), which silently
            drops memory, revisions and feed events; default
            ``REDISMEM_ALLOW_EVICTION=1``, else False.
        durability: ``"primary"`` (a write is acknowledged once the server,
            or the cluster's primary, applied it; replication to replicas
            is asynchronous) or ``"replica"`` (each write call also waits,
            on the same connection, until one replica confirms it: WAIT 1).
        replica_timeout: seconds a write waits for that confirmation; past
            it the call raises NotReplicatedError (the write did happen on
            the primary; ``.reply`` holds its result).
        cluster_timeout: on a Redis Cluster, seconds a call keeps being sent
            again (with backoff, following the new owner) while the owner of
            its slot is down or failing over; past it UnavailableError. A
            dead primary holds up only its own shard's namespaces.
        connect_timeout: seconds to keep trying a server that refuses or
            does not answer the first connection (default
            ``REDISMEM_CONNECT_TIMEOUT``, else 10; 0 = one attempt). The
            first retry is said once on the ``redismem.connect`` logger.

    Raises:
        InvalidIdError: the namespace or principal is not a valid id.
        PermissionDeniedError: ``principal`` is not the authenticated ACL user.
        EvictionPolicyError: the server may evict keys (see ``allow_eviction``).
        InvalidArgumentError: ``durability="replica"`` where no replica is
            connected (``memory://``, or a primary without one), which no
            write could satisfy.
        LibraryVersionError: the server holds a newer Lua library.
        ServerNotFoundError: no URL and no embedded server binary.
        UnavailableError: no node answered within ``connect_timeout`` (on a
            cluster, by default: ``cluster_timeout``).
    """
    check.check_id("namespace", namespace)
    if durability not in ("primary", "replica"):
        raise InvalidArgumentError(
            f"durability must be 'primary' or 'replica', got {durability!r}")
    if isinstance(replica_timeout, bool) or not isinstance(replica_timeout, int | float) or not (
            0.001 <= replica_timeout <= 3600):
        raise InvalidArgumentError(
            f"replica_timeout must be 0.001..3600 seconds, got {replica_timeout!r}")
    if isinstance(cluster_timeout, bool) or not isinstance(cluster_timeout, int | float) or not (
            0.1 <= cluster_timeout <= 3600):
        raise InvalidArgumentError(
            f"cluster_timeout must be 0.1..3600 seconds, got {cluster_timeout!r}")
    who = check.check_id("principal", principal if principal is not None else default_principal())
    resolved = await resolve_url(url)
    client = await open_client(resolved, cluster_timeout=float(cluster_timeout),
                               timeout=connect_timeout)
    try:
        backend = "memory" if resolved.startswith(MEMORY_URL) else "redis"
        if backend == "redis":
            await check_eviction(client, allow_eviction)
            named_by = ("principal=" if principal is not None else
                        "REDISMEM_PRINCIPAL" if os.environ.get("REDISMEM_PRINCIPAL") else None)
            who = await authenticated_principal(client, who, named_by=named_by)
        loaded = await ensure_library(client)
        capabilities = await detect_capabilities(client, backend, loaded.version)
        functions = Functions(client)
        if durability == "replica":
            await check_replicas(client, namespace, backend, redact(resolved))
            functions.replicas = 1
            functions.replica_timeout_ms = max(1, round(replica_timeout * 1000))
        connection = Connection(client, functions, namespace, who, search=capabilities.search)
        memory = Memory(connection, capabilities)
        await memory.settings()
    except BaseException:
        await client.aclose()
        raise
    return memory
