"""The public API is what ``redismem.__all__`` names: moving code between
modules must not add to it or take from it by accident."""

from __future__ import annotations

import redismem

PUBLIC = {
    # the facade and its contexts
    "Memory", "MemoryScope", "RedisMemoryStore", "connect", "store_from_env",
    "current_session", "current_workflow", "session_scope", "workflow_scope", "new_id", "now_ms",
    # what calls return
    "Capabilities", "ChangePage", "CompactionResult", "KeyPage", "LongTermMemory",
    "MemoryCapabilities", "MemoryChangeEvent", "MemoryEvent", "MemoryValue", "RetentionPolicy",
    "SearchPlan", "VectorMatch", "VectorValue", "Turn",
    # errors
    "RedisMemError", "ConflictError", "CorruptEntryError", "CursorExpiredError",
    "EvictionPolicyError", "FeedCorruptError", "InvalidArgumentError", "InvalidCursorError",
    "InvalidEventError", "InvalidExportError", "InvalidIdError", "InvalidKeyError",
    "InvalidMemoryError", "InvalidMetadataError", "InvalidRevisionError", "InvalidTTLError",
    "InvalidUrlError",
    "InvalidValueError", "InvalidVectorError", "LibraryDigestError", "LibraryVersionError",
    "NotReplicatedError", "PermissionDeniedError", "RequestTooLargeError", "RevisionLimitError",
    "ServerNotFoundError", "ServerStartError", "UnavailableError", "ValueTooLargeError",
    "ValueTypeError", "TurnCorruptError", "TurnLostError", "TurnTimeoutError",
    "StaleTurnError",
}


def test_all_names_exactly_the_public_api() -> None:
    assert set(redismem.__all__) == PUBLIC
    assert len(redismem.__all__) == len(PUBLIC)  # no name twice


def test_every_public_name_is_importable_from_the_package() -> None:
    for name in PUBLIC:
        assert getattr(redismem, name) is not None, name
