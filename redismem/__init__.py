"""redismem: shared, durable, revisioned memory for fleets of agent workers, in Redis.

The names below are imported on first use (``redismem.Memory`` imports
:mod:`redismem.memory`, and with it redis-py and asyncio): a program that
only needs a little of redismem, as ``redismem --help`` does, starts fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .errors import (
        ConflictError,
        CorruptEntryError,
        CursorExpiredError,
        EvictionPolicyError,
        FeedCorruptError,
        InvalidArgumentError,
        InvalidCursorError,
        InvalidEventError,
        InvalidExportError,
        InvalidIdError,
        InvalidKeyError,
        InvalidMemoryError,
        InvalidMetadataError,
        InvalidRevisionError,
        InvalidTTLError,
        InvalidUrlError,
        InvalidValueError,
        InvalidVectorError,
        LibraryDigestError,
        LibraryVersionError,
        NotReplicatedError,
        PermissionDeniedError,
        RedisMemError,
        RequestTooLargeError,
        RevisionLimitError,
        ServerNotFoundError,
        ServerStartError,
        StaleTurnError,
        TurnCorruptError,
        TurnLostError,
        TurnTimeoutError,
        TurnWaitLostError,
        UnavailableError,
        ValueTooLargeError,
        ValueTypeError,
    )
    from .memory import (
        Memory,
        connect,
        current_session,
        current_workflow,
        session_scope,
        workflow_scope,
    )
    from .records import (
        new_id,
        now_ms,
    )
    from .scope import (
        MemoryScope,
    )
    from .store import (
        RedisMemoryStore,
        store_from_env,
    )
    from .turns import (
        Turn,
    )
    from .types import (
        Capabilities,
        ChangePage,
        CompactionResult,
        KeyPage,
        LongTermMemory,
        MemoryCapabilities,
        MemoryChangeEvent,
        MemoryEvent,
        MemoryValue,
        RetentionPolicy,
        SearchPlan,
        VectorMatch,
        VectorValue,
    )

__version__ = "0.1.0"

_LAZY: dict[str, str] = {
    "ConflictError": "errors",
    "CorruptEntryError": "errors",
    "CursorExpiredError": "errors",
    "EvictionPolicyError": "errors",
    "FeedCorruptError": "errors",
    "InvalidArgumentError": "errors",
    "InvalidCursorError": "errors",
    "InvalidEventError": "errors",
    "InvalidExportError": "errors",
    "InvalidIdError": "errors",
    "InvalidKeyError": "errors",
    "InvalidMemoryError": "errors",
    "InvalidMetadataError": "errors",
    "InvalidRevisionError": "errors",
    "InvalidTTLError": "errors",
    "InvalidUrlError": "errors",
    "InvalidValueError": "errors",
    "InvalidVectorError": "errors",
    "LibraryDigestError": "errors",
    "LibraryVersionError": "errors",
    "NotReplicatedError": "errors",
    "PermissionDeniedError": "errors",
    "RedisMemError": "errors",
    "RequestTooLargeError": "errors",
    "RevisionLimitError": "errors",
    "ServerNotFoundError": "errors",
    "ServerStartError": "errors",
    "StaleTurnError": "errors",
    "TurnCorruptError": "errors",
    "TurnLostError": "errors",
    "TurnTimeoutError": "errors",
    "TurnWaitLostError": "errors",
    "UnavailableError": "errors",
    "ValueTooLargeError": "errors",
    "ValueTypeError": "errors",
    "Memory": "memory",
    "connect": "memory",
    "current_session": "memory",
    "current_workflow": "memory",
    "session_scope": "memory",
    "workflow_scope": "memory",
    "new_id": "records",
    "now_ms": "records",
    "MemoryScope": "scope",
    "RedisMemoryStore": "store",
    "store_from_env": "store",
    "Turn": "turns",
    "Capabilities": "types",
    "ChangePage": "types",
    "CompactionResult": "types",
    "KeyPage": "types",
    "LongTermMemory": "types",
    "MemoryCapabilities": "types",
    "MemoryChangeEvent": "types",
    "MemoryEvent": "types",
    "MemoryValue": "types",
    "RetentionPolicy": "types",
    "SearchPlan": "types",
    "VectorMatch": "types",
    "VectorValue": "types",
}


def __getattr__(name: str) -> Any:
    """A public name's object, or a submodule, imported on first use."""
    module = _LAZY.get(name)
    if module is None:
        try:
            return importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Capabilities",
    "ChangePage",
    "CompactionResult",
    "ConflictError",
    "CorruptEntryError",
    "CursorExpiredError",
    "EvictionPolicyError",
    "FeedCorruptError",
    "InvalidArgumentError",
    "InvalidCursorError",
    "InvalidEventError",
    "InvalidExportError",
    "InvalidIdError",
    "InvalidKeyError",
    "InvalidMemoryError",
    "InvalidMetadataError",
    "InvalidRevisionError",
    "InvalidTTLError",
    "InvalidUrlError",
    "InvalidValueError",
    "InvalidVectorError",
    "KeyPage",
    "LibraryDigestError",
    "LibraryVersionError",
    "LongTermMemory",
    "Memory",
    "MemoryCapabilities",
    "MemoryChangeEvent",
    "MemoryEvent",
    "MemoryScope",
    "MemoryValue",
    "NotReplicatedError",
    "PermissionDeniedError",
    "RedisMemError",
    "RedisMemoryStore",
    "RequestTooLargeError",
    "RetentionPolicy",
    "RevisionLimitError",
    "SearchPlan",
    "ServerNotFoundError",
    "ServerStartError",
    "StaleTurnError",
    "Turn",
    "TurnCorruptError",
    "TurnLostError",
    "TurnTimeoutError",
    "TurnWaitLostError",
    "UnavailableError",
    "ValueTooLargeError",
    "ValueTypeError",
    "VectorMatch",
    "VectorValue",
    "connect",
    "current_session",
    "current_workflow",
    "new_id",
    "now_ms",
    "session_scope",
    "store_from_env",
    "workflow_scope",
]
