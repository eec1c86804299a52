"""What every scope of one :class:`~redismem.Memory` shares."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from redis.asyncio import Redis

from . import limits
from ._plans import SearchPlans
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
    indexes: dict[str, str] = field(default_factory=dict)
    """Index name -> algorithm (HNSW or FLAT) of the vector indexes this
    connection has made sure of."""
    index_lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    """Held while making sure of an index, so concurrent first writes create it once."""
    plans: SearchPlans = field(default_factory=SearchPlans)
    """Which scope searches may leave the scope's filter out."""

    @property
    def max_value_bytes(self) -> int:
        return int(self.settings.get("max_value_bytes", limits.MAX_VALUE_BYTES))
