"""redismem: shared, durable, revisioned memory for fleets of agent workers, in Redis."""

from __future__ import annotations

from .errors import (
    ConflictError,
    InvalidArgumentError,
    InvalidCursorError,
    InvalidIdError,
    InvalidKeyError,
    InvalidRevisionError,
    InvalidTTLError,
    InvalidValueError,
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
from .types import Capabilities, KeyPage, MemoryValue

__version__ = "0.1.0"

__all__ = [
    "Capabilities",
    "ConflictError",
    "InvalidArgumentError",
    "InvalidCursorError",
    "InvalidIdError",
    "InvalidKeyError",
    "InvalidRevisionError",
    "InvalidTTLError",
    "InvalidValueError",
    "KeyPage",
    "LibraryVersionError",
    "Memory",
    "MemoryScope",
    "MemoryValue",
    "RedisMemError",
    "ServerNotFoundError",
    "ServerStartError",
    "ValueTooLargeError",
    "connect",
    "current_session",
    "current_workflow",
    "session_scope",
    "workflow_scope",
]
