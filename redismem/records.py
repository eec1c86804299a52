"""Thread events and long-term memories as JSON: checking a record, writing
it the one way the library stores it, and reading it back (a stored body
that the library did not write reads as ``CorruptEntryError``)."""

from __future__ import annotations

import dataclasses
import json
import re
import time
import uuid
from collections.abc import Mapping
from typing import Any

from . import _json, limits
from . import _validate as check
from . import keys as K
from .errors import (
    CorruptEntryError,
    InvalidArgumentError,
    InvalidEventError,
    InvalidMemoryError,
)
from .types import (
    LongTermMemory,
    MemoryEvent,
)


def new_id(prefix: str = "id") -> str:
    """A new unique id, ``<prefix>_<32 hex digits>``."""
    return f"{prefix}_{uuid.uuid4().hex}"


def now_ms() -> int:
    """Milliseconds since the epoch."""
    return time.time_ns() // 1_000_000


def time_ms(reply: tuple[int, int]) -> int:
    """Milliseconds since the epoch of a Redis ``TIME`` reply (server time)."""
    seconds, micros = reply
    return int(seconds) * 1000 + int(micros) // 1000


def _dumps(value: Any, error: type[InvalidArgumentError], what: str) -> str:
    try:
        return _json.dumps(value)[0]
    except _json.JsonRuleError as exc:
        raise error(f"{what} is not strict JSON: {exc}") from None


def _check_str(value: object, what: str, error: type[InvalidArgumentError], *,
               max_bytes: int = limits.MAX_KEY_BYTES) -> str:
    if not isinstance(value, str) or not value or (
        check.utf8_size(value, error, what) > max_bytes
    ) or any(ord(ch) < 32 or ord(ch) == 127 for ch in value):
        raise error(f"{what} must be a non-empty string of at most {max_bytes} bytes without "
                    f"control characters, got {value!r}")
    return value


def check_ms(value: object, what: str, error: type[InvalidArgumentError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (
        0 <= value <= limits.MAX_REVISION
    ):
        raise error(f"{what} must be a non-negative integer of milliseconds, got {value!r}")
    return value


def check_tags(value: object, what: str, error: type[InvalidArgumentError]) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(t, str) for t in value):
        raise error(f"{what} must be a list of strings, got {value!r}")
    return list(value)


def check_scope(scope: object) -> None:
    """A memory scope filter: None, or a scope name as a memory record holds."""
    if scope is not None:
        _check_str(scope, "scope", InvalidMemoryError, max_bytes=limits.MAX_ID_BYTES)


def check_limit(value: object, what: str = "limit") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not (
        1 <= value <= limits.MAX_EVENTS_LIMIT
    ):
        raise InvalidArgumentError(
            f"{what} must be between 1 and {limits.MAX_EVENTS_LIMIT}, got {value!r}")
    return value


def event_json(event: MemoryEvent, thread_id: str | None = None) -> str:
    """Check an event and return its canonical JSON.

    Raises:
        InvalidEventError: a field has the wrong type, the payload is not JSON,
            or the thread differs from ``thread_id``.
    """
    if not isinstance(event, MemoryEvent):
        raise InvalidEventError(f"expected a MemoryEvent, got {type(event).__name__}")
    check.check_id("thread id", event.thread_id)
    if thread_id is not None and event.thread_id != thread_id:
        raise InvalidEventError(
            f"event {event.id!r} belongs to thread {event.thread_id!r}, not {thread_id!r}")
    _check_str(event.id, "event id", InvalidEventError)
    if event.user_id is not None and not isinstance(event.user_id, str):
        raise InvalidEventError(f"user_id must be a string or None, got {event.user_id!r}")
    _check_str(event.type, "event type", InvalidEventError, max_bytes=limits.MAX_ID_BYTES)
    check_ms(event.timestamp, "timestamp", InvalidEventError)
    check_tags(event.tags, "tags", InvalidEventError)
    # a plain dict: dataclasses.asdict deep-copies the payload, which costs more
    # than the rest of an append on the client side
    text = _dumps({"id": event.id, "thread_id": event.thread_id, "user_id": event.user_id,
                   "type": event.type, "timestamp": event.timestamp, "payload": event.payload,
                   "tags": list(event.tags)}, InvalidEventError, "the event payload")
    if len(text) > limits.MAX_EVENT_BYTES // 4 and len(text.encode()) > limits.MAX_EVENT_BYTES:
        raise InvalidEventError(f"the event is over {limits.MAX_EVENT_BYTES} bytes of JSON")
    return text


def id_and_type(body: bytes | None) -> tuple[str, str | None]:
    """The id ("" when unusable) and type of a stored event body; an entry the
    library did not write has neither."""
    try:
        event = json.loads(body) if body is not None else None
    except ValueError:
        event = None
    if not isinstance(event, dict):
        return "", None
    kind = event.get("type")
    try:
        event_id = check.check_key(event.get("id"))
    except InvalidArgumentError:
        event_id = ""
    return event_id, kind if isinstance(kind, str) else None


def event_from_json(raw: bytes | str | None, key: str = "", stream_id: str = "") -> MemoryEvent:
    """The event of one thread entry.

    Raises:
        CorruptEntryError: the entry is not an event the library wrote (a
            raw XADD): not JSON, not an object, or not the event's fields.
    """
    try:
        data = json.loads(raw)  # type: ignore[arg-type]
        if not isinstance(data, dict):
            raise TypeError(f"not a JSON object: {type(data).__name__}")
        return MemoryEvent(**data)
    except (TypeError, ValueError) as exc:  # JSONDecodeError and UnicodeDecodeError too
        where = f"{key} {stream_id}".strip()
        raise CorruptEntryError(f"thread entry {where} was not written by redismem: {exc}; "
                                "`redismem audit` lists such entries", key=where) from None


def memory_event(data: Mapping[str, Any]) -> MemoryEvent:
    """A MemoryEvent from a dict, rejecting unknown or missing fields.

    Raises:
        InvalidEventError: unknown or missing fields.
    """
    event: MemoryEvent = _from_dict(MemoryEvent, data, InvalidEventError)
    return event


def long_term_memory(data: Mapping[str, Any]) -> LongTermMemory:
    """A LongTermMemory from a dict, rejecting unknown or missing fields.

    Raises:
        InvalidMemoryError: unknown or missing fields.
    """
    record: LongTermMemory = _from_dict(LongTermMemory, data, InvalidMemoryError)
    return record


def _from_dict(cls: Any, data: Mapping[str, Any], error: type[InvalidArgumentError]) -> Any:
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise error(f"unknown fields for {cls.__name__}: {', '.join(unknown)}")
    try:
        return cls(**data)
    except TypeError as exc:
        raise error(f"{cls.__name__}: {exc}") from None


STREAM_ID = re.compile(r"\d{1,20}-\d{1,20}")


def is_utf8(raw: bytes) -> bool:
    try:
        raw.decode()
    except UnicodeDecodeError:
        return False
    return True


def user_key(user_id: str | None) -> str:
    if user_id is None:
        return K.SHARED_USER
    if user_id == K.SHARED_USER:
        raise InvalidMemoryError("user id '_' is reserved for shared memories (user_id=None)")
    return check.check_id("user id", user_id)


def memory_json(memory: LongTermMemory) -> str:
    """Check a long-term memory record and return its canonical JSON.

    Raises:
        InvalidMemoryError: a field has the wrong type or is not JSON.
    """
    if not isinstance(memory, LongTermMemory):
        raise InvalidMemoryError(f"expected a LongTermMemory, got {type(memory).__name__}")
    user_key(memory.user_id)
    check.check_key(memory.id)
    _check_str(memory.scope, "scope", InvalidMemoryError, max_bytes=limits.MAX_ID_BYTES)
    if not isinstance(memory.text, str):
        raise InvalidMemoryError(f"text must be a string, got {memory.text!r}")
    for name in ("data", "metadata"):
        if not isinstance(getattr(memory, name), dict):
            raise InvalidMemoryError(f"{name} must be a dict")
    check_tags(memory.tags, "tags", InvalidMemoryError)
    check_ms(memory.created_at, "created_at", InvalidMemoryError)
    check_ms(memory.updated_at, "updated_at", InvalidMemoryError)
    return _dumps(dataclasses.asdict(memory), InvalidMemoryError, "the memory")


def memory_from_json(raw: bytes | str | None) -> LongTermMemory | None:
    """The record of a long-term memory, or None when it is not one the
    library wrote (a raw HSET): listings and searches go on without it,
    and ``redismem audit`` reports it."""
    try:
        data = json.loads(raw)  # type: ignore[arg-type]
        return LongTermMemory(**data) if isinstance(data, dict) else None
    except (TypeError, ValueError):  # JSONDecodeError and UnicodeDecodeError too
        return None
