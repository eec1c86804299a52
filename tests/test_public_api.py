"""The public API is what ``redismem.__all__`` names: moving code between
modules must not add to it or take from it by accident."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

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
    "StaleTurnError", "TurnWaitLostError",
}


def test_all_names_exactly_the_public_api() -> None:
    assert set(redismem.__all__) == PUBLIC
    assert len(redismem.__all__) == len(PUBLIC)  # no name twice


def test_every_public_name_is_importable_from_the_package() -> None:
    for name in PUBLIC:
        assert getattr(redismem, name) is not None, name


def test_the_package_imports_each_name_on_first_use() -> None:
    """``import redismem`` imports none of its modules; each public name
    imports the module that defines it when it is first used, and that
    module's object is what the package gives."""
    code = ("import sys, redismem; "
            "print(sorted(m for m in sys.modules if m.startswith('redismem.')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
    assert set(redismem._LAZY) == PUBLIC
    for name, module in redismem._LAZY.items():
        assert getattr(importlib.import_module(f"redismem.{module}"), name) is \
            getattr(redismem, name), name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        _ = redismem.nothing_here  # type: ignore[attr-defined]
