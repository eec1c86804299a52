"""Argument checks on the Python side, mirroring ``lua/lib/20_validate.lua``.

Each check raises the same exception class the Lua function's error code maps
to, so a caller sees one error whichever side caught the problem first.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from . import _json, limits
from .errors import (
    InvalidArgumentError,
    InvalidCursorError,
    InvalidIdError,
    InvalidKeyError,
    InvalidRevisionError,
    InvalidTTLError,
    InvalidValueError,
    RequestTooLargeError,
    ValueTooLargeError,
)

SCOPES = ("session", "actor", "workflow", "global")
GLOBAL_ID = "_"
WHITESPACE = ("\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f"
              "\u205f\u3000")
"""Every character of ``str.isspace()``, as a regex class body (UNICODE_SPACES in Lua)."""
_BAD_ID = re.compile(f"[:{{}}{WHITESPACE}\\x00-\\x1f\\x7f]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_FORMAT = re.compile("[" + "".join(f"{chr(a)}-{chr(b)}" for a, b in limits.FORMAT_RANGES) + "]")
"""A format character (Unicode category Cf): invisible, or reordering text."""
_CURSOR = re.compile(r"(?:[0-9a-f]{2})+\+?")


def _format_problem(text: str) -> str | None:
    """'format characters ...: U+XXXX at byte N', naming the first one
    (not showing the text: it would reorder the message around it)."""
    found = _FORMAT.search(text)
    if found is None:
        return None
    at = len(text[:found.start()].encode()) + 1
    return (f"format characters (invisible, or reordering the text): "
            f"U+{ord(found[0]):04X} at byte {at}")


def _show(text: str) -> str:
    return repr(text if len(text) <= 80 else text[:77] + "...")


def utf8_size(text: str, error: type[InvalidArgumentError], what: str) -> int:
    """The UTF-8 size of ``text``; ``error`` when it holds a lone surrogate."""
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError:
        raise error(f"{what} must be valid UTF-8 (it holds a lone surrogate), got {_show(text)}"
                    ) from None


def check_id(what: str, text: object) -> str:
    """Return ``text`` if it is a valid namespace, scope id or principal."""
    if not isinstance(text, str) or not text:
        raise InvalidIdError(f"{what} must be a non-empty string, got {text!r}")
    if utf8_size(text, InvalidIdError, what) > limits.MAX_ID_BYTES:
        raise InvalidIdError(f"{what} is longer than {limits.MAX_ID_BYTES} bytes")
    if _BAD_ID.search(text):
        raise InvalidIdError(
            f"{what} must not contain ':', '{{', '}}', whitespace or control characters, "
            f"got {_show(text)}"
        )
    problem = _format_problem(text)
    if problem:
        raise InvalidIdError(f"{what} must not contain {problem}")
    return text


def check_key(key: object) -> str:
    """Return ``key`` if it is a valid key: 1..512 bytes, no control characters."""
    if isinstance(key, str) and key.isascii() and key.isprintable() and \
            0 < len(key) <= limits.MAX_KEY_BYTES:
        return key  # printable ASCII: the common case (ASCII has no format characters)
    if not isinstance(key, str) or not key:
        raise InvalidKeyError(f"key must be a non-empty string, got {key!r}")
    size = utf8_size(key, InvalidKeyError, "key")
    if size > limits.MAX_KEY_BYTES:
        raise InvalidKeyError(f"key is {size} bytes, the limit is {limits.MAX_KEY_BYTES}")
    if _CONTROL.search(key):
        raise InvalidKeyError(f"key must not contain control characters, got {_show(key)}")
    problem = _format_problem(key)
    if problem:
        raise InvalidKeyError(f"key must not contain {problem}")
    return key


def check_scope(scope: str, sid: str) -> None:
    """Check a scope kind and its id."""
    if scope not in SCOPES:
        raise InvalidArgumentError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    check_id("scope id", sid)
    if scope == "global" and sid != GLOBAL_ID:
        raise InvalidIdError(f"the global scope's id is '_', got {sid!r}")


def canonical_json(value: Any, max_bytes: int) -> str:
    """Encode ``value`` as canonical JSON (sorted keys, no spaces, UTF-8).

    Raises:
        InvalidValueError: the value is not JSON-serialisable or breaks the
            strict JSON rule (NaN, infinity, an integer of 2**1024 or more,
            a lone surrogate, more than 256 levels of nesting).
        ValueTooLargeError: the encoding exceeds ``max_bytes``.
    """
    try:
        text, size = _json.dumps(value)
    except _json.JsonRuleError as exc:
        raise InvalidValueError(f"value is not strict JSON: {exc}") from None
    if size > max_bytes:
        raise ValueTooLargeError(f"value is {size} bytes of JSON, the limit is {max_bytes}")
    return text


def expected_arg(expected: object) -> str:
    """The Lua argument for an expected revision (None = no condition); a
    ``MemoryValue`` (what a read or a write returned) stands for its
    revision."""
    if expected is None:
        return ""
    if type(expected) is not int:
        from .types import MemoryValue  # not at import: the command line starts without it

        if isinstance(expected, MemoryValue):
            expected = expected.revision
    if isinstance(expected, bool) or not isinstance(expected, int):
        raise InvalidRevisionError(f"expected revision must be an integer, got {expected!r}")
    if not 0 <= expected <= limits.MAX_REVISION:
        raise InvalidRevisionError(f"expected revision must be >= 0, got {expected}")
    return str(expected)


def ttl_arg(ttl_seconds: object, persist: object = False) -> str:
    """The Lua argument for a write's expiry: ``ttl_seconds`` from now;
    None keeps the key's own expiry (a new key gets none), unless
    ``persist``, which removes it.

    Raises:
        InvalidTTLError: ``ttl_seconds`` is not a positive number within
            ten years, or is given with ``persist``.
    """
    if not isinstance(persist, bool):
        raise InvalidTTLError(f"persist must be True or False, got {persist!r}")
    if persist:
        if ttl_seconds is not None:
            raise InvalidTTLError(f"give ttl_seconds ({ttl_seconds!r}) or persist=True "
                                  "(remove the expiry), not both")
        return ""
    if ttl_seconds is None:
        return "KEEPTTL"
    if isinstance(ttl_seconds, bool) or not isinstance(ttl_seconds, int | float):
        raise InvalidTTLError(f"ttl_seconds must be a number, got {ttl_seconds!r}")
    most = limits.MAX_TTL_MS // 1000
    if math.isnan(ttl_seconds) or ttl_seconds <= 0:
        raise InvalidTTLError(f"ttl_seconds must be a positive number of seconds, got "
                              f"{ttl_seconds!r} (None keeps the key's expiry; persist=True "
                              "removes it)")
    if math.isinf(ttl_seconds) or math.ceil(ttl_seconds * 1000) > limits.MAX_TTL_MS:
        raise InvalidTTLError(f"ttl_seconds must be at most {most} (about "
                              f"{most // 86400 // 365} years), got {ttl_seconds!r}; "
                              "persist=True removes the expiry")
    ms = math.ceil(ttl_seconds * 1000)
    return str(ms)


def limit_arg(limit: object) -> str:
    """The Lua argument for a page size (None = the default, 100)."""
    if limit is None:
        return ""
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise InvalidArgumentError(f"limit must be an integer, got {limit!r}")
    if not 1 <= limit <= limits.MAX_PAGE_LIMIT:
        raise InvalidArgumentError(
            f"limit must be between 1 and {limits.MAX_PAGE_LIMIT}, got {limit}")
    return str(limit)


def cursor_arg(cursor: object) -> str:
    """The Lua argument for a key cursor (None = from the start)."""
    if cursor is None:
        return ""
    if not isinstance(cursor, str) or not _CURSOR.fullmatch(cursor) or (
        len(cursor.removesuffix("+")) > 2 * limits.MAX_KEY_BYTES
    ):
        raise InvalidCursorError(f"cursor is not one redismem returned: {cursor!r}")
    return cursor


def prefix_arg(prefix: object) -> str:
    """The Lua argument for a key prefix (None = all keys)."""
    if prefix is None or prefix == "":
        return ""
    return check_key(prefix)


def batch_size(count: int) -> None:
    """Check the number of items of one batch call."""
    if count > limits.MAX_BATCH:
        raise InvalidArgumentError(f"at most {limits.MAX_BATCH} items per call, got {count}")


def check_merge_patch(patch: Mapping[str, Any]) -> None:
    """Refuse a merge patch with more object members, at all levels, than
    one merge reads (the server also counts the stored value's)."""
    count, stack = 0, [patch]
    while stack:
        members = stack.pop()
        count += len(members)
        if count > limits.MAX_MERGE_MEMBERS:
            raise RequestTooLargeError(
                f"a merge reads at most {limits.MAX_MERGE_MEMBERS} object members, of the "
                "patch and the stored value together; this patch has more: write the value "
                "with set")
        stack.extend(v for v in members.values() if isinstance(v, Mapping))


def check_setting(name: object, value: object) -> int | str:
    """Return a namespace setting's value if ``name`` is a setting and ``value``
    is within its bounds or one of its choices (the Lua side's messages)."""
    if isinstance(name, str) and name in limits.SETTING_CHOICES:
        choices = limits.SETTING_CHOICES[name]
        if value not in choices:
            raise InvalidArgumentError(
                f"{name} must be one of {', '.join(choices)}, got {value!r}")
        return value
    if not isinstance(name, str) or name not in limits.SETTING_BOUNDS:
        raise InvalidArgumentError(f"unknown setting {name!r}")
    low, high = limits.SETTING_BOUNDS[name]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    if not low <= value <= high:
        raise InvalidArgumentError(f"{name} must be between {low} and {high}, got {value}")
    return value
