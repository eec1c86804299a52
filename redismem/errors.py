"""Exceptions. Each error code a Lua function can reply with maps to exactly
one class here (:data:`BY_CODE`); validation errors are also ``ValueError``."""

from __future__ import annotations

import re


class RedisMemError(Exception):
    """Base class of every redismem error; ``code`` is the snake_case error code."""

    code = "redismem_error"
    lua_reply = False
    """Whether the Lua library replies with this class's code (``CODE message``)."""


class InvalidArgumentError(RedisMemError, ValueError):
    """An argument is out of bounds or malformed; nothing was changed."""

    code = "invalid_argument"
    lua_reply = True


class InvalidUrlError(InvalidArgumentError):
    """A server URL (``url=``, ``--url``, ``REDISMEM_URL``) that does not
    parse: an unknown scheme, a port out of range, a bad query option."""

    code = "invalid_url"


class InvalidIdError(InvalidArgumentError):
    """A namespace, scope id or principal is empty, too long or has ``:{}`` or space."""

    code = "invalid_id"
    lua_reply = True


class InvalidKeyError(InvalidArgumentError):
    """A key is empty, longer than 512 bytes or holds control characters."""

    code = "invalid_key"
    lua_reply = True


class InvalidValueError(InvalidArgumentError):
    """A value is not JSON-serialisable (Python) or not valid JSON (Lua)."""

    code = "invalid_json"
    lua_reply = True


class ValueTooLargeError(InvalidArgumentError):
    """A value's canonical JSON exceeds the namespace's ``max_value_bytes``."""

    code = "value_too_large"
    lua_reply = True


class InvalidTTLError(InvalidArgumentError):
    """A TTL is not a positive number of seconds within ten years."""

    code = "invalid_ttl"
    lua_reply = True


class InvalidRevisionError(InvalidArgumentError):
    """An expected revision is not a non-negative integer."""

    code = "invalid_revision"
    lua_reply = True


class InvalidCursorError(InvalidArgumentError):
    """A cursor was not produced by redismem for this listing."""

    code = "invalid_cursor"
    lua_reply = True


class InvalidVectorError(InvalidArgumentError):
    """An embedding is empty, too long, not finite, the zero vector, or of the
    wrong dimension for the vectors it is compared with."""

    code = "invalid_vector"
    lua_reply = True


class InvalidMetadataError(InvalidArgumentError):
    """Vector metadata is not a JSON object of at most 16 KiB, or a filter is
    not a dict of scalar values."""

    code = "invalid_metadata"
    lua_reply = True


class InvalidEventError(InvalidArgumentError):
    """A thread event is malformed: unknown or missing fields, wrong types,
    a payload that is not JSON, or a thread id other than the thread's."""

    code = "invalid_event"
    lua_reply = True


class InvalidMemoryError(InvalidArgumentError):
    """A long-term memory record is malformed."""

    code = "invalid_memory"
    lua_reply = True


class InvalidExportError(InvalidArgumentError):
    """An export file is malformed; the message names the line. Checked before
    anything is imported, so nothing was changed."""

    code = "invalid_export"


class RequestTooLargeError(InvalidArgumentError):
    """One write call would carry more bytes (keys and arguments) than the
    namespace's ``max_call_bytes``; split it into smaller calls. Also a
    ``merge`` that would read more than ``limits.MAX_MERGE_MEMBERS`` object
    members (write such a value with ``set``)."""

    code = "request_too_large"
    lua_reply = True


class ValueTypeError(InvalidArgumentError):
    """``incr`` of a value that is not an integer, or ``append`` to one that
    is not a list; nothing was changed."""

    code = "wrong_type"
    lua_reply = True


class RevisionLimitError(RedisMemError):
    """A key is at the largest revision (2**53 - 1) and cannot change again;
    revisions never wrap or repeat."""

    code = "revision_limit"
    lua_reply = True


class FeedCorruptError(RedisMemError):
    """The feed or its counters hold what redismem did not write (e.g. a
    sequence counter that is not a number); nothing was changed."""

    code = "feed_corrupt"
    lua_reply = True


class TurnCorruptError(RedisMemError):
    """A turn's hash holds what redismem did not write (a token that is not
    a number); nothing was changed."""

    code = "turn_corrupt"
    lua_reply = True


class TurnLostError(RedisMemError):
    """A turn could not be renewed: it was released, or it lapsed and
    another holder took the scope's turn (with a newer token). Writes that
    carry the old token are refused."""

    code = "turn_lost"
    lua_reply = True


class StaleTurnError(RedisMemError):
    """A write carried the token of a turn that is no longer the scope's
    latest: the turn lapsed and another holder took it. Nothing was changed.

    Attributes:
        token: the token the write carried (-1 when not known).
        current: the scope's latest token (-1 when not known).
    """

    code = "stale_turn"
    lua_reply = True

    def __init__(self, message: str, *, token: int = -1, current: int = -1) -> None:
        super().__init__(message)
        self.token = token
        self.current = current


class TurnTimeoutError(RedisMemError, TimeoutError):
    """No turn was granted within ``wait_seconds``; the waiter left the queue.

    Attributes:
        holder: who held the turn when the wait ended ("" when it was free
            but earlier waiters came first).
    """

    code = "turn_timeout"

    def __init__(self, message: str, *, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class TurnWaitLostError(TurnTimeoutError):
    """A queued waiter lost its place: its lease lapsed before it renewed
    it (the process was stopped or stalled longer than its waiter lease),
    or an admin evicted it (``redismem turns evict``). It never gets the
    turn from that place; entering ``turn()`` again queues it at the end."""

    code = "waiter_lost"
    lua_reply = True


class PermissionDeniedError(RedisMemError):
    """The connection's credential may not do this: the server's ACL refused
    a command or a key (``NOPERM``), directly or inside a library function.
    Nothing was changed."""

    code = "permission_denied"


class CorruptEntryError(RedisMemError):
    """An entry that the library did not write (raw commands: bad JSON, bad
    UTF-8, missing fields) was read; ``key`` names it. Other entries read
    as usual; ``redismem audit`` lists every such entry of a namespace."""

    code = "corrupt_entry"

    def __init__(self, message: str, *, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class EvictionPolicyError(RedisMemError):
    """The server's ``maxmemory-policy`` may evict keys, which silently drops
    memory; redismem needs ``noeviction`` (see ``connect(allow_eviction=...)``)."""

    code = "eviction_policy"


class ConflictError(RedisMemError):
    """An expected revision did not match the stored one; nothing was changed.

    Attributes:
        key: the key whose revision differed.
        expected: the revision the caller expected.
        actual: the revision stored (0 when the key is absent).
    """

    code = "revision_conflict"
    lua_reply = True

    def __init__(self, message: str, *, key: str | None = None, expected: int = -1,
                 actual: int = -1) -> None:
        super().__init__(message)
        self.key = key
        self.expected = expected
        self.actual = actual


class CursorExpiredError(RedisMemError):
    """A feed cursor points before the retained history: events were trimmed.

    Attributes:
        after: the cursor given.
        oldest_sequence: the first sequence still retained.
    """

    code = "cursor_expired"

    def __init__(self, message: str, *, after: int, oldest_sequence: int) -> None:
        super().__init__(message)
        self.after = after
        self.oldest_sequence = oldest_sequence


class NotReplicatedError(RedisMemError):
    """A write was applied on the primary, but fewer replicas than asked
    confirmed it in time (``durability="replica"``): it is lost if the
    primary fails before replicating it.

    Attributes:
        reply: what the write returned (it did happen on the primary).
        wanted: replicas asked for.
        confirmed: replicas that confirmed in time.
    """

    code = "not_replicated"

    def __init__(self, message: str, *, reply: object = None, wanted: int = 1,
                 confirmed: int = 0) -> None:
        super().__init__(message)
        self.reply = reply
        self.wanted = wanted
        self.confirmed = confirmed


class UnavailableError(RedisMemError, ConnectionError):
    """No node could run a call within its time bound: the server, or on a
    cluster the owner of the call's slot, stayed unreachable (down, failing
    over, or its slot moving) while the call was sent again with backoff.
    Also a (builtin) ``ConnectionError``. A write's outcome is unknown: it
    may have been applied before the connection was lost; sending it again
    with the same arguments is safe (its request id is applied once).

    Attributes:
        node: ``host:port`` of the node last tried, or None.
        slot: the hash slot of the call's keys on a cluster, or None.
    """

    code = "unavailable"

    def __init__(self, message: str, *, node: str | None = None,
                 slot: int | None = None) -> None:
        super().__init__(message)
        self.node = node
        self.slot = slot


class LibraryVersionError(RedisMemError):
    """The server holds a newer redismem Lua library than this package ships."""

    code = "library_version"


class LibraryDigestError(RedisMemError):
    """The server's redismem library claims this package's version but its
    code differs (it was altered); the message names both SHA-256 digests."""

    code = "library_digest"


class ServerNotFoundError(RedisMemError):
    """No ``redis-server`` binary could be found for the embedded server."""

    code = "server_not_found"


class ServerStartError(RedisMemError):
    """The embedded server did not start; the message quotes its log."""

    code = "server_start"


def _subclasses(cls: type[RedisMemError]) -> list[type[RedisMemError]]:
    return [cls, *(sub for direct in cls.__subclasses__() for sub in _subclasses(direct))]


BY_CODE: dict[str, type[RedisMemError]] = {
    cls.code.upper(): cls for cls in _subclasses(RedisMemError) if vars(cls).get("lua_reply")}
"""The class of each error code a Lua function replies with: those that set
``lua_reply`` themselves (a subclass does not inherit it)."""

_CONFLICT = re.compile(r"expected (\d+) actual (\d+)")
_STALE = re.compile(r"turn token (\d+) .* is at token (\d+)")


def from_reply(text: str, *, key: str | None = None) -> RedisMemError | None:
    """The exception for a Lua error reply ``CODE message``, or None if not ours."""
    code, _, message = text.partition(" ")
    cls = BY_CODE.get(code)
    if cls is None:
        return None
    if cls is ConflictError:
        found = _CONFLICT.search(message)
        expected, actual = (int(found[1]), int(found[2])) if found else (-1, -1)
        return ConflictError(message, key=key, expected=expected, actual=actual)
    if cls is StaleTurnError:
        found = _STALE.search(message)
        token, current = (int(found[1]), int(found[2])) if found else (-1, -1)
        return StaleTurnError(message, token=token, current=current)
    return cls(message)
