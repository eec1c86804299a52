"""Value objects returned by redismem; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

ScopeKind = Literal["session", "actor", "workflow", "global"]
KeyKind = Literal["value", "vector"]


@dataclass(frozen=True)
class MemoryValue:
    """A read: ``value`` (None when absent), ``revision`` (0 when absent), ``found``."""

    value: Any
    revision: int
    found: bool


@dataclass(frozen=True)
class KeyPage:
    """One ascending page of key names; ``next_cursor`` is None on the last page."""

    keys: list[str]
    next_cursor: str | None


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
        kind: ``value`` or ``vector``.
        action: ``set`` or ``delete``.
        revision: the key's revision after the change (a delete takes one too).
        principal: who made the change.
        created_at: server time of the change, UTC.
        value: the new value, for a value set whose JSON is at most 65,536 bytes.
        value_omitted: True when the value was larger and must be reread.
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
