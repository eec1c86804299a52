"""What every scope of one :class:`~redismem.Memory` shares."""

from __future__ import annotations

from dataclasses import dataclass, field

from redis.asyncio import Redis

from . import limits
from .functions import Functions


@dataclass
class Connection:
    """The client, its function wrappers, the namespace and the principal."""

    client: Redis
    functions: Functions
    namespace: str
    principal: str
    settings: dict[str, int | str] = field(default_factory=dict)
    search: bool = False
    """The server has the search module: vectors are searched through indexes."""
    indexes: dict[int, str] = field(default_factory=dict)
    """Dimension -> algorithm (HNSW or FLAT) of the indexes this connection
    has made sure of."""

    @property
    def max_value_bytes(self) -> int:
        return int(self.settings.get("max_value_bytes", limits.MAX_VALUE_BYTES))
