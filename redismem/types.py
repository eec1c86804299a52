"""Value objects returned by redismem; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

ScopeKind = Literal["session", "actor", "workflow", "global"]
KeyKind = Literal["value", "vector"]


@dataclass(frozen=True)
class MemoryValue:
    """A value and its revision: what a read returns (``value`` None and
    ``revision`` 0 when absent, ``found``; ``error`` says why an entry the
    library did not write (raw commands) cannot be read, in ``get_many``:
    ``get`` raises ``CorruptEntryError``), and what every write of a value
    returns (``found`` True; ``value`` what was written, None for
    ``append`` and ``merge``, which do not send the whole list or object
    back). Pass one as ``expected_revision`` to write only over it."""

    value: Any
    revision: int
    found: bool
    error: str | None = None


@dataclass(frozen=True)
class KeyPage:
    """One ascending page of key names; ``next_cursor`` is None on the last page.
    ``skipped`` counts listed names left out because they are not UTF-8 (a
    raw ZADD; ``redismem audit`` names them)."""

    keys: list[str]
    next_cursor: str | None
    skipped: int = 0


@dataclass(frozen=True)
class Capabilities:
    """What the connected server offers.

    Attributes:
        backend: ``redis`` for a Redis server, ``memory`` for ``memory://``.
        server_version: the server's ``redis_version``.
        search: the search module (RediSearch / Redis Query Engine) is loaded.
        json: the JSON module is loaded.
        library_version: the redismem Lua library version in use.
        vector_search: ``index`` (RediSearch HNSW) or ``exact`` (numpy in the client).
    """

    backend: Literal["redis", "memory"]
    server_version: str
    search: bool
    json: bool
    library_version: int

    @property
    def vector_search(self) -> Literal["index", "exact"]:
        return "index" if self.search else "exact"



@dataclass(frozen=True)
class MemoryChangeEvent:
    """One change of the namespace feed.

    Attributes:
        sequence: the event's place in the namespace's gap-free sequence.
        scope, scope_id, key: what changed.
        kind: ``value``, ``vector``, ``turn`` (a session's or workflow's
            turn: ``key`` is the holder id, ``revision`` the token) or
            ``checkpoint`` (a LangGraph checkpoint of thread ``scope_id``:
            ``key`` is the checkpoint id, ``checkpoint_ns`` its namespace)
            or ``thread`` (a MemoryStore thread ``scope_id``, scope
            ``session``: ``key`` is the event id, ``event_type`` its type,
            ``value`` its payload; for replace and drop the thread id).
        action: ``set``, ``incr``, ``append``, ``merge`` or ``delete`` (a
            value); ``set`` or ``delete`` (a vector); ``acquire``,
            ``release``, ``expire`` or ``evict`` (a turn); ``put``,
            ``writes`` or ``delete`` (a checkpoint); ``append``,
            ``replace`` or ``drop`` (a thread: compaction drops).
        revision: the key's revision after the change (a delete takes one too).
        principal: who made the change.
        created_at: server time of the change, UTC.
        value: the new value, for a value ``set`` or ``incr`` whose JSON is
            at most 65,536 bytes; a thread event's payload, as large at most.
        value_omitted: True when a value change does not carry the new
            value, which must be reread: it was larger, or the change was an
            ``append`` or a ``merge`` (they carry ``delta`` instead).
        delta: what an ``incr`` added (an integer), what an ``append``
            appended (the item), or the patch a ``merge`` applied, when its
            JSON is at most 65,536 bytes.
        delta_omitted: True when the delta was larger.
        writer: for an import, the entry's own writer, which it keeps, when
            that is not the importer (``principal``); else None.
        checkpoint_ns: a checkpoint event's checkpoint namespace ("" for the
            root graph); else None.
        event_type: an appended thread event's type; else None.
        error: why the entry is not a change event the library wrote (a raw
            XADD by a credential holding it), else None; its other fields
            hold what could be read.
    """

    sequence: int
    scope: str
    scope_id: str
    key: str
    kind: str
    action: str
    revision: int
    principal: str
    created_at: datetime
    value: Any = None
    value_omitted: bool = False
    delta: Any = None
    delta_omitted: bool = False
    error: str | None = None
    writer: str | None = None
    checkpoint_ns: str | None = None
    event_type: str | None = None


@dataclass(frozen=True)
class ChangePage:
    """Events after a cursor, ascending.

    Attributes:
        items: the matching events.
        next_cursor: pass as ``after`` for the next page (the last sequence
            examined; unchanged when nothing new was there).
        oldest_sequence: the first sequence still retained; a saved cursor
            below ``oldest_sequence - 1`` has missed trimmed events.
    """

    items: list[MemoryChangeEvent]
    next_cursor: int
    oldest_sequence: int


@dataclass(frozen=True)
class VectorValue:
    """A vector read: ``embedding`` (float32 values; None when absent),
    ``metadata`` (None when absent), ``revision`` (0 when absent), ``found``."""

    embedding: list[float] | None
    metadata: dict[str, Any] | None
    revision: int
    found: bool


@dataclass(frozen=True)
class VectorMatch:
    """One similarity-search hit. ``score`` is the cosine similarity of the
    query and the stored vector, in [-1, 1] (1 = same direction)."""

    key: str
    score: float
    metadata: dict[str, Any]
    revision: int


@dataclass(frozen=True)
class SearchPlan:
    """How a scope's similarity search runs (:meth:`Scope.explain_search`).

    Attributes:
        plan: ``knn``: a plain KNN over the index, the scope's filter left
            out because the scope holds every document of it;
            ``hybrid brute force``: the distance to every document that
            matches the filters (RediSearch's ad-hoc policy: exact);
            ``hybrid batches``: HNSW candidates in batches, each checked
            against the filters; ``empty``: no document matches the
            filters, so nothing is searched; ``exact``: no search module,
            numpy in the client over the scope's vectors.
        index: the RediSearch index, or None for ``exact``.
        algorithm: ``HNSW``, ``FLAT`` or ``exact``.
        query: the FT.SEARCH query text ('' for ``exact``).
        scope_vectors: vectors of the query's dimension in the scope (its
            count runs high while expired vectors are not yet collected).
        index_vectors: documents in the index, or None for ``exact``.
        filter_matches: documents that matched the filters, or None when
            the query has none (or FT.PROFILE is not permitted).
        visited: of those, the ones the search read (as many as match:
            brute force; fewer: batches), or None likewise.
        ef_runtime: HNSW candidates per search, or None (FLAT, exact).
        round_trip_ms: the query's round trip, sent as ``similarity_search``
            sends it, until its reply was read (None for ``exact``).
        server_ms: of that, the server's time for the query (``INFO
            commandstats``; None on a cluster, or when another FT.SEARCH
            ran at the same time); ``round_trip_ms - server_ms`` is the
            network, the reply's transfer and reading it.
        client_ms: turning the reply into matches in the client.
    """

    plan: str
    index: str | None
    algorithm: str
    query: str
    scope_vectors: int
    index_vectors: int | None
    filter_matches: int | None
    visited: int | None
    ef_runtime: int | None
    round_trip_ms: float | None = None
    server_ms: float | None = None
    client_ms: float | None = None


JsonValue = Any
"""Anything JSON-serialisable."""


@dataclass(frozen=True)
class MemoryEvent:
    """One event of a conversation thread (MemoryStore protocol).

    Attributes:
        id: unique within the thread; appending an id twice stores it once.
        thread_id: the thread (also the session scope holding its state).
        user_id: who the event concerns, or None.
        type: e.g. ``message``, ``tool_call``, ``trace``.
        timestamp: milliseconds since the epoch (see ``now_ms``).
        payload: any JSON value.
        tags: free-form labels.
    """

    id: str
    thread_id: str
    user_id: str | None
    type: str
    timestamp: int
    payload: JsonValue
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class LongTermMemory:
    """A persistent memory of a user (or shared, ``user_id=None``) in a scope."""

    id: str
    user_id: str | None
    scope: str
    data: dict[str, JsonValue]
    text: str
    tags: list[str]
    metadata: dict[str, JsonValue]
    created_at: int
    updated_at: int


@dataclass(frozen=True)
class RetentionPolicy:
    """How ``compact_thread`` trims a thread: of the newest ``scan_limit``
    events, protected types are kept first, then the newest others fill
    ``max_events_per_thread``."""

    max_events_per_thread: int = 500
    keep_event_types: list[str] = field(default_factory=list)
    scan_limit: int = 20_000


@dataclass(frozen=True)
class MemoryCapabilities:
    """What a MemoryStore supports."""

    text_search: bool
    vector_search: bool
    atomic_upsert: bool
    ttl: bool


@dataclass(frozen=True)
class CompactionResult:
    """What ``compact_thread`` did."""

    events_removed: int
    events_kept: int
