"""Value objects returned by redismem; no I/O here."""

from __future__ import annotations

from dataclasses import dataclass
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
