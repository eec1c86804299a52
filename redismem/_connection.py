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
    settings: dict[str, int] = field(default_factory=dict)
    search: bool = False
    """The server has the search module: vectors are searched through indexes."""
    indexed_dims: set[int] = field(default_factory=set)
    """Dimensions whose index this connection has made sure of."""

    @property
    def max_value_bytes(self) -> int:
        return self.settings.get("max_value_bytes", limits.MAX_VALUE_BYTES)
