"""redismem: shared, durable, revisioned memory for fleets of agent workers, in Redis."""

from __future__ import annotations

from .errors import (
    ConflictError,
    CursorExpiredError,
    InvalidArgumentError,
    InvalidCursorError,
    InvalidIdError,
    InvalidKeyError,
    InvalidMetadataError,
    InvalidRevisionError,
    InvalidTTLError,
    InvalidValueError,
    InvalidVectorError,
    LibraryVersionError,
    RedisMemError,
    ServerNotFoundError,
    ServerStartError,
    ValueTooLargeError,
)
from .memory import (
    Memory,
    connect,
    current_session,
    current_workflow,
    session_scope,
    workflow_scope,
)
from .scope import MemoryScope
from .types import (
    Capabilities,
    ChangePage,
    KeyPage,
    MemoryChangeEvent,
    MemoryValue,
    VectorMatch,
    VectorValue,
)

__version__ = "0.1.0"

__all__ = [
    "Capabilities",
    "ChangePage",
    "ConflictError",
    "CursorExpiredError",
    "InvalidArgumentError",
    "InvalidCursorError",
    "InvalidIdError",
    "InvalidKeyError",
    "InvalidMetadataError",
    "InvalidRevisionError",
    "InvalidTTLError",
    "InvalidValueError",
    "InvalidVectorError",
    "KeyPage",
    "LibraryVersionError",
    "Memory",
    "MemoryChangeEvent",
    "MemoryScope",
    "MemoryValue",
    "RedisMemError",
    "ServerNotFoundError",
    "ServerStartError",
    "ValueTooLargeError",
    "VectorMatch",
    "VectorValue",
    "connect",
    "current_session",
    "current_workflow",
    "session_scope",
    "workflow_scope",
]
