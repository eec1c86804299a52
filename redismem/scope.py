"""MemoryScope: revisioned values of one scope (session, actor, workflow or global)."""

from __future__ import annotations

import asyncio
import inspect
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from . import _json, feed, limits, turns
from . import _validate as check
from . import keys as K
from . import scope_search as search
from . import vectors as V
from ._connection import Connection
from .errors import (
    ConflictError,
    CorruptEntryError,
    InvalidArgumentError,
    RequestTooLargeError,
)
from .functions import refusals
from .types import (
    ChangePage,
    KeyKind,
    KeyPage,
    MemoryChangeEvent,
    MemoryValue,
    ScopeKind,
    SearchPlan,
    VectorMatch,
    VectorValue,
)

VectorItem = tuple[str, Any] | tuple[str, Any, Mapping[str, Any] | None]

_BACKOFF_CAP = 0.1


def _read(raw: bytes | None, revision: int) -> MemoryValue:
    if raw is None:
        return MemoryValue(None, 0, False)
    value, problem = _parsed(raw, revision)
    if problem is not None:
        return MemoryValue(None, revision, True, problem)
    return MemoryValue(value, revision, True)


def entry_problem(raw: bytes, revision: int) -> str | None:
    """Why a stored value was not written by the library, or None."""
    return _parsed(raw, revision)[1]


def _parsed(raw: bytes, revision: int) -> tuple[Any, str | None]:
    """A stored value's JSON, or why it was not written by the library."""
    if revision == 0:
        return None, "it has no revision"
    if not 1 <= revision <= limits.MAX_REVISION:
        return None, f"its revision is not an integer in 1..{limits.MAX_REVISION}"
    try:
        return _json.loads(raw), None
    except ValueError as exc:
        return None, f"its value is not strict JSON: {exc}"


def _checked(key: str, value: MemoryValue) -> MemoryValue:
    if value.error is not None:
        raise CorruptEntryError(f"key {key!r} was not written by redismem: {value.error} "
                                "(`redismem audit` lists such entries)", key=key)
    return value


class MemoryScope:
    """The values of one scope. Every write is one atomic Lua function call that
    also appends its change event to the namespace feed.

    Attributes:
        scope: ``session``, ``actor``, ``workflow`` or ``global``.
        scope_id: the id of the session, actor or workflow root (``_`` for global).
    """

    def __init__(self, connection: Connection, scope: ScopeKind, scope_id: str) -> None:
        check.check_scope(scope, scope_id)
        self._conn = connection
        self.scope: ScopeKind = scope
        self.scope_id = scope_id

    def __repr__(self) -> str:
        return f"MemoryScope({self.scope!r}, {self.scope_id!r}, namespace={self._conn.namespace!r})"

    def _scope_args(self) -> tuple[str, str, str]:
        return self._conn.namespace, self.scope, self.scope_id

    async def get(self, key: str) -> MemoryValue:
        """Read ``key``; a missing or expired key is ``MemoryValue(None, 0, False)``.

        Raises:
            InvalidKeyError: the key is empty, too long or has control characters.
            CorruptEntryError: the stored entry was not written by the library.
        """
        raw, revision = await self._conn.functions.read_value(*self._scope_args(),
                                                              check.check_key(key))
        return _checked(key, _read(raw, revision))

    async def get_many(self, keys: Iterable[str]) -> dict[str, MemoryValue]:
        """Read several keys in one call; the result has one entry per distinct key.

        Raises:
            InvalidKeyError: a key is invalid.
            InvalidArgumentError: more than 1,000 keys.
        """
        names = list(dict.fromkeys(check.check_key(key) for key in keys))
        if not names:
            return {}
        check.batch_size(len(names))
        found = await self._conn.functions.get_values(*self._scope_args(), names)
        return {name: _read(raw, revision)
                for name, (raw, revision) in zip(names, found, strict=True)}

    async def _found_values(self, names: Sequence[str]) -> list[tuple[Any, int] | None]:
        """``get_many`` of distinct names for a caller that reads many (the
        LangGraph store), without a ``MemoryValue`` each: (value, revision)
        per name, None when absent or not written by the library."""
        for name in names:
            check.check_key(name)
        check.batch_size(len(names))
        found: list[tuple[Any, int] | None] = []
        for raw, revision in await self._conn.functions.get_values(*self._scope_args(), names):
            if raw is None:
                found.append(None)
                continue
            value, problem = _parsed(raw, revision)
            found.append((value, revision) if problem is None else None)
        return found

    async def set(self, key: str, value: Any, *,
                  expected_revision: int | MemoryValue | None = None,
                  ttl_seconds: float | None = None, persist: bool = False) -> MemoryValue:
        """Write ``value`` (anything JSON-serialisable); returns
        ``MemoryValue(value, new revision, True)``.

        Args:
            key: the key, 1..512 bytes.
            value: the value, at most the namespace's ``max_value_bytes`` as JSON.
            expected_revision: write only if the stored revision is this one
                (0 = only when absent; a ``MemoryValue`` read or written
                before stands for its revision); None writes unconditionally.
            ttl_seconds: expire the key this many seconds from now; None keeps
                the key's expiry (a new key gets none), as every write does.
            persist: remove the key's expiry (not with ``ttl_seconds``).

        Raises:
            ConflictError: the stored revision is not ``expected_revision``.
            InvalidArgumentError: (or a subclass) a bound is violated.
        """
        check.check_key(key)
        ttl = check.ttl_arg(ttl_seconds, persist)
        item = (key, check.canonical_json(value, self._conn.max_value_bytes),
                check.expected_arg(expected_revision))
        return MemoryValue(value, (await self._write("value", [item], ttl))[0], True)

    async def set_many(self, mapping: Mapping[str, Any], *,
                       expected_revisions: Mapping[str, int | MemoryValue] | None = None,
                       ttl_seconds: float | None = None, persist: bool = False,
                       atomic: bool = True) -> dict[str, MemoryValue]:
        """Write several values; returns key -> ``MemoryValue`` (the value
        written, its new revision), as ``set`` does. ``ttl_seconds`` and
        ``persist`` apply to every key, as in ``set``: by default each keeps
        its own expiry.

        With ``atomic`` (the default) all are written in one call or none
        is: at most 1,000 items and the namespace's ``max_call_bytes``.
        ``atomic=False`` is for bulk loads: as many calls as the bounds need,
        each atomic; a failure leaves the calls before it written.

        Args:
            expected_revisions: compare-and-set per key: key -> the revision
                it must be at (0 = absent); keys not named are written
                unconditionally. One stale revision refuses the whole call.

        Raises:
            ConflictError: a key is not at its expected revision (``.key``);
                nothing of the call was written.
            InvalidArgumentError: (or a subclass) a bound is violated, more
                than 1,000 items, or an expected revision names a key that
                is not written.
            RequestTooLargeError: ``atomic`` and the items exceed ``max_call_bytes``.
        """
        if atomic:
            check.batch_size(len(mapping))
        ttl = check.ttl_arg(ttl_seconds, persist)
        expected = dict(expected_revisions or {})
        unknown = [key for key in expected if key not in mapping]
        if unknown:
            raise InvalidArgumentError(f"expected_revisions names keys that are not written: "
                                       f"{unknown[:5]!r}")
        items = [(check.check_key(key), check.canonical_json(value, self._conn.max_value_bytes),
                  check.expected_arg(expected.get(key))) for key, value in mapping.items()]
        if not items:
            return {}
        revisions: list[int] = []
        for part in self._calls(items, "value", limits.MAX_BATCH, atomic):
            revisions += await self._write("value", part, ttl)
        return {key: MemoryValue(value, revision, True)
                for (key, value), revision in zip(mapping.items(), revisions, strict=True)}

    async def _put_items(self, mapping: Mapping[str, dict[str, Any]], *,
                         ttl_seconds: float | None = None, persist: bool = False) -> list[int]:
        """Write LangGraph store items (:mod:`redismem.langgraph.store`):
        ``set_many(mapping, atomic=False)`` for objects whose first key is
        ``created_at``, each keeping the ``created_at`` of the item it
        replaces, read on the server (no read before the write)."""
        ttl = check.ttl_arg(ttl_seconds, persist)
        items = [(check.check_key(key), check.canonical_json(value, self._conn.max_value_bytes), "")
                 for key, value in mapping.items()]
        revisions: list[int] = []
        for part in self._calls(items, "value", limits.MAX_BATCH, False):
            revisions += await self._conn.functions.put_items(
                *self._scope_args(), ttl, self._conn.principal, part, self._token())
        return revisions

    def _calls(self, items: list[Any], kind: KeyKind, max_items: int, atomic: bool
               ) -> list[list[Any]]:
        """``items`` as one call, or (not ``atomic``) as calls within
        ``max_items`` and the namespace's ``max_call_bytes``."""
        if atomic:
            return [items]
        functions = self._conn.functions
        budget = functions.max_call_bytes
        ns, scope, sid = self._scope_args()
        if len(items) <= max_items:
            # at most 4 bytes a character: most calls fit without counting bytes
            named = 20 + len(ns) + len(scope) + len(sid)  # an item's key name, but its key
            chars = 8 * (40 + named + len(self._conn.principal)) + sum(
                named + 2 * len(item[0]) + sum(map(len, item[1:])) for item in items)
            if 4 * chars <= budget:
                return [items]
        fixed = functions.write_overhead(ns, kind, scope, sid, self._conn.principal)
        calls: list[list[Any]] = [[]]
        total = fixed
        for item in items:
            size = functions.item_bytes(ns, kind, scope, sid, item)
            if calls[-1] and (total + size > budget or len(calls[-1]) >= max_items):
                calls.append([])
                total = fixed
            calls[-1].append(item)
            total += size
        return calls

    def _token(self) -> str:
        """The turn token this task's writes to the scope carry ("" = none)."""
        return turns.token_arg(*self._scope_args())

    async def _write(self, kind: KeyKind, items: Sequence[Sequence[str | bytes]], ttl: str
                     ) -> list[int]:
        """One call writing checked ``items`` of ``kind``: their revisions."""
        return await self._conn.functions.set_items(kind, *self._scope_args(), ttl,
                                                    self._conn.principal, items, self._token())

    async def _delete(self, kind: KeyKind, key: str, expected_revision: int | MemoryValue | None
                      ) -> bool:
        check.check_key(key)
        expected = check.expected_arg(expected_revision)
        return await self._conn.functions.delete_item(kind, *self._scope_args(), key, expected,
                                                      self._conn.principal, self._token())

    async def delete(self, key: str, *, expected_revision: int | MemoryValue | None = None
                     ) -> bool:
        """Delete ``key``; False when it did not exist.

        Raises:
            ConflictError: the stored revision is not ``expected_revision``.
        """
        return await self._delete("value", key, expected_revision)

    async def update(self, key: str, fn: Callable[[Any], Any | Awaitable[Any]], *,
                     timeout: float = 10.0, attempts: int | None = None) -> MemoryValue:
        """Read ``key``, apply ``fn`` to its value (None when absent) and write the
        result only if nobody wrote in between (compare-and-set); on a
        conflict read again and retry, after a jittered backoff that doubles
        from 1 ms up to 100 ms, until ``timeout`` seconds have passed (or
        ``attempts`` tries were made, when given). The key keeps its expiry
        (a key created here gets none). ``fn`` may be sync or async and may
        run more than once. For counters, lists and objects under heavy
        contention, ``incr``, ``append`` and ``merge`` never conflict.

        Returns:
            ``MemoryValue(value written, its revision, True)``.

        Raises:
            ConflictError: concurrent writers won every try until the
                timeout (or ``attempts``) ran out.
        """
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not (
            0 < timeout <= 86_400
        ):
            raise InvalidArgumentError(f"timeout must be 0 < seconds <= 86400, got {timeout!r}")
        if attempts is not None and (isinstance(attempts, bool) or not isinstance(attempts, int)
                                     or attempts < 1):
            raise InvalidArgumentError(f"attempts must be a positive integer, got {attempts!r}")
        check.check_key(key)
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + timeout
        tries = 0
        while True:
            tries += 1
            current = await self.get(key)
            new = fn(current.value)
            if inspect.isawaitable(new):
                new = await new
            item = (key, check.canonical_json(new, self._conn.max_value_bytes),
                    str(current.revision))
            try:
                (revision,) = await self._write("value", [item], "KEEPTTL")
            except ConflictError as exc:
                now = loop.time()
                if now >= deadline or (attempts is not None and tries >= attempts):
                    raise ConflictError(
                        f"update of {key!r} met a concurrent write on each of {tries} tries "
                        f"in {now - started:.2f} s", key=key, expected=exc.expected,
                        actual=exc.actual) from exc
                backoff = random.uniform(0, min(_BACKOFF_CAP, 0.001 * 2 ** min(tries, 10)))
                await asyncio.sleep(min(backoff, deadline - now))
                continue
            return MemoryValue(new, revision, True)

    async def _modify(self, key: str, op: str, operand: str, ttl: str,
                      max_items: str = "") -> tuple[int, bytes]:
        return await self._conn.functions.modify_value(
            *self._scope_args(), ttl, self._conn.principal, key, op, operand, max_items,
            self._token())

    async def incr(self, key: str, by: int = 1, *, ttl_seconds: float | None = None,
                   persist: bool = False) -> MemoryValue:
        """Add ``by`` to the integer at ``key`` (absent = 0) in one server-side
        call: concurrent increments never conflict and none is lost. The
        result stays within +-(2**53 - 1), the integers every JSON reader
        holds exactly. ``ttl_seconds`` sets the expiry; None keeps the key's;
        ``persist`` removes it.

        Returns:
            The new value and its revision.

        Raises:
            ValueTypeError: the key holds something other than an integer.
            InvalidArgumentError: ``by`` is not an integer, or the result
                would leave the range.
        """
        check.check_key(key)
        ttl = check.ttl_arg(ttl_seconds, persist)
        if isinstance(by, bool) or not isinstance(by, int) or abs(by) > limits.MAX_REVISION:
            raise InvalidArgumentError(
                f"by must be an integer within +-{limits.MAX_REVISION}, got {by!r}")
        revision, text = await self._modify(key, "incr", str(by), ttl)
        return MemoryValue(int(text), revision, True)

    async def append(self, key: str, item: Any, *, max_items: int | None = None,
                     ttl_seconds: float | None = None, persist: bool = False) -> MemoryValue:
        """Append ``item`` to the list at ``key`` (absent = []) in one
        server-side call, keeping only the last ``max_items`` (a capped log);
        concurrent appends never conflict. ``ttl_seconds`` sets the expiry;
        None keeps the key's; ``persist`` removes it.

        Returns:
            ``MemoryValue(None, new revision, True)``: the list is not sent
            back (``get`` reads it).

        Raises:
            ValueTypeError: the key holds something other than a list.
            ValueTooLargeError: the list would exceed ``max_value_bytes``.
        """
        check.check_key(key)
        ttl = check.ttl_arg(ttl_seconds, persist)
        if max_items is not None and (isinstance(max_items, bool) or not isinstance(
                max_items, int) or not 1 <= max_items <= limits.MAX_APPEND_ITEMS):
            raise InvalidArgumentError(
                f"max_items must be between 1 and {limits.MAX_APPEND_ITEMS}, got {max_items!r}")
        text = check.canonical_json(item, self._conn.max_value_bytes)
        revision, _ = await self._modify(key, "append", text, ttl,
                                         "" if max_items is None else str(max_items))
        return MemoryValue(None, revision, True)

    async def merge(self, key: str, patch: Mapping[str, Any], *,
                    ttl_seconds: float | None = None, persist: bool = False) -> MemoryValue:
        """Apply an RFC 7386 JSON merge patch to the object at ``key`` (absent,
        or not an object = {}) in one server-side call: members of ``patch``
        replace those of the value, nested objects merge, None deletes.
        Concurrent merges never conflict. ``ttl_seconds`` sets the expiry;
        None keeps the key's; ``persist`` removes it.

        Returns:
            ``MemoryValue(None, new revision, True)``: the object is not
            sent back (``get`` reads it).

        Raises:
            RequestTooLargeError: the merge would read more than
                ``limits.MAX_MERGE_MEMBERS`` object members of the patch and the
                stored value together (write such a value with ``set``).
        """
        check.check_key(key)
        ttl = check.ttl_arg(ttl_seconds, persist)
        if not isinstance(patch, Mapping):
            raise InvalidArgumentError(f"patch must be a dict, got {type(patch).__name__}")
        check.check_merge_patch(patch)
        text = check.canonical_json(dict(patch), self._conn.max_value_bytes)
        revision, _ = await self._modify(key, "merge", text, ttl)
        return MemoryValue(None, revision, True)

    async def keys(self, prefix: str | None = None, cursor: str | None = None,
                   limit: int | None = None, kind: KeyKind = "value") -> KeyPage:
        """One ascending page of live key names.

        Args:
            prefix: only names starting with this.
            cursor: the ``next_cursor`` of the previous page; None = first page.
            limit: page size, 1..1000 (default 100).
            kind: ``value`` or ``vector`` keys.

        Raises:
            InvalidCursorError: the cursor is not one redismem returned.
        """
        if kind not in ("value", "vector"):
            raise InvalidArgumentError(f"kind must be 'value' or 'vector', got {kind!r}")
        next_cursor, names, skipped = await self._conn.functions.list_keys(
            *self._scope_args(), kind, check.prefix_arg(prefix), check.cursor_arg(cursor),
            check.limit_arg(limit))
        return KeyPage(names, next_cursor, skipped)

    async def list_keys(self, prefix: str | None = None, kind: KeyKind = "value",
                        max_keys: int = 100_000) -> list[str]:
        """Every live key name, ascending, following all pages.

        Raises:
            ValueError: more than ``max_keys`` names.
        """
        names: list[str] = []
        cursor: str | None = None
        while True:
            page = await self.keys(prefix, cursor, 1000, kind)
            names.extend(page.keys)
            if len(names) > max_keys:
                raise ValueError(f"more than max_keys={max_keys} keys in {self!r}")
            if page.next_cursor is None:
                return names
            cursor = page.next_cursor

    # turns

    def turn(self, ttl_seconds: float = 30, *, wait_seconds: float | None = None,
             waiter_lease_seconds: float | None = None) -> turns.TurnContext:
        """``async with scope.turn() as turn``: one holder at a time in this
        session or workflow scope. Entering waits (up to ``wait_seconds``;
        None = as long as it takes) in arrival order until no other turn is
        held, then yields the :class:`~redismem.turns.Turn` with its
        fencing token; the turn is renewed in the background while the
        block runs and released when it ends. A waiter keeps its place by
        renewing it every third of ``waiter_lease_seconds`` (default 1.5 s
        or ``ttl_seconds``, whichever is shorter): one that stops renewing
        (a dead worker) is passed over once its lease has passed.

        Raises:
            InvalidArgumentError: an actor or global scope, or a bound violated.
            TurnTimeoutError: (on entry) no turn within ``wait_seconds``.
            TurnWaitLostError: (on entry) this waiter did not renew its place
                in time (its process was stopped or starved), or an admin
                evicted it.
            TurnLostError: (on exit) a renewal found that the turn lapsed
                and another holder took it.
        """
        return turns.TurnContext(self._conn, self.scope, self.scope_id, ttl_seconds,
                                 wait_seconds, waiter_lease_seconds)

    async def acquire_turn(self, ttl_seconds: float = 30, *, wait_seconds: float | None = None,
                           waiter_lease_seconds: float | None = None) -> turns.Turn:
        """Take this scope's turn, as :meth:`turn` does, for code that cannot
        use a context manager: the caller renews it (``turn.renew()``, or
        ``turn.keep_alive()`` for background renewal) and releases it
        (``turn.release()``).

        Raises:
            the errors of :meth:`turn` on entry.
        """
        return await turns.acquire(self._conn, self.scope, self.scope_id, ttl_seconds,
                                   wait_seconds, waiter_lease_seconds)

    # vectors

    def _vector_key(self, key: str) -> str:
        return K.vector(self._conn.namespace, self.scope, self.scope_id, key)

    async def set_vector(self, key: str, embedding: Any,
                         metadata: Mapping[str, Any] | None = None, *,
                         expected_revision: int | None = None,
                         ttl_seconds: float | None = None, persist: bool = False) -> int:
        """Store an embedding (stored as float32) with JSON metadata; returns the
        vector's revision. Vector keys have revisions of their own, apart from
        value keys of the same name, with the same compare-and-set and
        expiry rules (``ttl_seconds``, ``persist``: as ``set``).

        Raises:
            InvalidVectorError: dimension not 1..4096, a component not finite,
                or the zero vector.
            InvalidMetadataError: metadata not a JSON object of at most 16 KiB.
            ConflictError: the stored revision is not ``expected_revision``.
        """
        ttl = check.ttl_arg(ttl_seconds, persist)
        blob, dim = V.embedding_bytes(embedding)
        item = (check.check_key(key), blob, V.metadata_json(metadata),
                check.expected_arg(expected_revision))
        await V.ensure_scope_indexes(self._conn, [dim])
        return (await self._write("vector", [item], ttl))[0]

    async def set_vectors(self, items: Iterable[VectorItem] | Mapping[str, Any], *,
                          ttl_seconds: float | None = None, persist: bool = False,
                          atomic: bool = True) -> dict[str, int]:
        """Store vectors: ``(key, embedding)`` or ``(key, embedding, metadata)``
        tuples, or a mapping of key to embedding. Returns key -> revision.

        With ``atomic`` (the default) all are written in one call or none
        is: at most the namespace's ``max_call_vectors`` (default 128; each
        vector is indexed inside the call) and ``max_call_bytes``.
        ``atomic=False`` is for bulk loads: as many calls as the bounds
        need, each atomic; a failure leaves the calls before it written.
        ``ttl_seconds`` and ``persist`` apply to every vector, as in
        ``set_vector``: by default each keeps its own expiry.

        Raises:
            InvalidVectorError, InvalidMetadataError, InvalidArgumentError: as
                ``set_vector``; nothing is written.
            RequestTooLargeError: ``atomic`` and the items exceed a bound.
        """
        ttl = check.ttl_arg(ttl_seconds, persist)
        pairs = list(items.items()) if isinstance(items, Mapping) else list(items)
        if atomic:
            check.batch_size(len(pairs))
        prepared, dims = [], []
        for entry in pairs:
            if not isinstance(entry, tuple) or len(entry) not in (2, 3):
                raise InvalidArgumentError(
                    f"items must be (key, embedding[, metadata]) tuples, got {entry!r}")
            blob, dim = V.embedding_bytes(entry[1])
            metadata = entry[2] if len(entry) == 3 else None
            prepared.append((check.check_key(entry[0]), blob, V.metadata_json(metadata), ""))
            dims.append(dim)
        if not prepared:
            return {}
        most = int(self._conn.settings.get("max_call_vectors", limits.MAX_CALL_VECTORS))
        if atomic and len(prepared) > most:
            raise RequestTooLargeError(
                f"the call writes {len(prepared)} vectors, the limit (max_call_vectors) is "
                f"{most}; pass atomic=False to write them in several calls")
        await V.ensure_scope_indexes(self._conn, dims)
        revisions: list[int] = []
        for part in self._calls(prepared, "vector", most, atomic):
            revisions += await self._write("vector", part, ttl)
        return {item[0]: revision for item, revision in zip(prepared, revisions, strict=True)}

    async def get_vector(self, key: str) -> VectorValue:
        """Read a vector; absent or expired: ``VectorValue(None, None, 0, False)``."""
        import numpy as np  # on first use: the command line starts faster
        name = self._vector_key(check.check_key(key))
        [(blob, meta, revision)] = await self._conn.functions.get_vectors(*self._scope_args(),
                                                                          [key])
        if blob is None or meta is None:
            return VectorValue(None, None, 0, False)
        try:  # what a raw HSET may leave: a ragged blob, metadata that is not a JSON object
            embedding = np.frombuffer(blob, dtype="<f4").astype(float).tolist()
            metadata = _json.loads(meta)
            if not isinstance(metadata, dict) or int(revision) < 1:
                raise ValueError("its metadata is not a JSON object or it has no revision")
        except ValueError as exc:
            raise CorruptEntryError(f"vector {name!r} was not written by redismem: {exc} "
                                    "(`redismem audit` lists such entries)", key=name) from None
        return VectorValue(embedding, metadata, int(revision), True)

    async def delete_vector(self, key: str, *, expected_revision: int | None = None) -> bool:
        """Delete a vector; False when it did not exist.

        Raises:
            ConflictError: the stored revision is not ``expected_revision``.
        """
        return await self._delete("vector", key, expected_revision)

    async def similarity_search(self, query: Any, top_k: int = 10, *,
                                filter: Mapping[str, Any] | None = None,
                                min_score: float | None = None,
                                ef_runtime: int | None = None) -> list[VectorMatch]:
        """The ``top_k`` vectors of this scope most similar to ``query``, best first.

        ``score`` is the cosine similarity, in [-1, 1]. ``filter`` holds
        equality conditions on top-level scalar metadata values, applied inside
        the index query (so ``top_k`` results come back whenever that many
        match); ``min_score`` then drops weaker matches. ``ef_runtime`` sets
        the HNSW candidates examined for this search only (more: better
        recall, slower), instead of the namespace's ``hnsw_ef_runtime``; a
        FLAT index and the exact search ignore it. Without the search
        module the same search runs exactly in the client with numpy.

        Raises:
            InvalidVectorError: the query is invalid or its dimension differs
                from this scope's vectors.
            InvalidArgumentError: ``top_k`` not 1..1000, ``min_score`` not in
                [-1, 1] or ``ef_runtime`` not 1..10000.
            InvalidMetadataError: the filter is not a dict of scalars.
        """
        blob, dim = V.embedding_bytes(query)
        top_k = V.check_top_k(top_k)
        floor = V.check_min_score(min_score)
        wanted_ef = V.check_ef_runtime(ef_runtime)
        tokens = V.filter_tokens(filter)
        with refusals():  # FT.* refused to this role: PermissionDeniedError; a raw
            if self._conn.search:  # key of another type: CorruptEntryError
                matches = await search.indexed_search(self._conn, self.scope, self.scope_id, blob,
                                                      dim, top_k, tokens, wanted_ef)
            elif search.vector_count(dim, await search.stored_dims(self._conn, self.scope,
                                                                   self.scope_id)):
                matches = await search.exact_search(
                    self._conn, self.scope, self.scope_id, await self.list_keys(kind="vector"),
                    blob, dim, top_k, filter)
            else:
                matches = []
        return [m for m in matches if floor is None or m.score >= floor]

    async def explain_search(self, query: Any, top_k: int = 10, *,
                             filter: Mapping[str, Any] | None = None,
                             ef_runtime: int | None = None) -> SearchPlan:
        """How :meth:`similarity_search` with these arguments runs (see
        :class:`SearchPlan`): the plan it gets, the query text, the counts
        that chose it, and, from ``FT.PROFILE`` (which runs the query), how
        many documents matched the filters and how many of them it read.

        Raises:
            the errors of :meth:`similarity_search`.
        """
        blob, dim = V.embedding_bytes(query)
        top_k = V.check_top_k(top_k)
        wanted_ef = V.check_ef_runtime(ef_runtime)
        tokens = V.filter_tokens(filter)
        count = search.vector_count(dim, await search.stored_dims(self._conn, self.scope,
                                                                  self.scope_id))
        if not self._conn.search:
            return SearchPlan("exact", None, "exact", "", count, None, None, None, None)
        ns, scope, sid = self._scope_args()
        conn, spec, tag = self._conn, V.scope_index(ns, dim), V.scope_tag(scope, sid)
        algorithm = await V.cached_index(conn, spec)
        conn.plans.read(spec.name, await V.index_info(conn.client, spec.name))
        conn.plans.learn(spec.name, tag, count, foreign=False)
        unscoped = conn.plans.unscoped(spec.name, tag)
        ef = search.ef_of(conn, wanted_ef) if algorithm == "HNSW" else None
        command = V.scope_search_command(ns, scope, sid, blob, dim, top_k, tokens, algorithm,
                                         ef or 0, scoped=not unscoped)
        # where the search's time goes: the query as similarity_search sends
        # it, timed to its reply and to its matches; the server's part from
        # INFO commandstats, when no other FT.SEARCH ran in between
        before = await V.search_stats(conn.client)
        start = time.perf_counter()
        reply = await conn.client.execute_command(*command)  # type: ignore[no-untyped-call]
        received = time.perf_counter()
        V.scope_matches(ns, scope, sid, reply)
        parsed = time.perf_counter()
        after = await V.search_stats(conn.client)
        server_ms = ((after[1] - before[1]) / 1000 if before and after
                     and after[0] - before[0] == 1 else None)
        matched, visited = await V.profiled(conn.client, command)
        if matched == 0:
            plan = "empty"
        elif unscoped:
            plan = "knn"
        elif matched is None or visited is None or visited < matched:
            plan = "hybrid batches"
        else:
            plan = "hybrid brute force"
        round_trip_ms = (received - start) * 1000
        return SearchPlan(plan, spec.name, algorithm, str(command[2]), count,
                          conn.plans.docs[spec.name][0], matched, visited, ef,
                          round_trip_ms=round_trip_ms, server_ms=server_ms,
                          client_ms=(parsed - received) * 1000)

    async def changes(self, after: int = 0, limit: int | None = None,
                      prefix: str | None = None, kind: str | None = None) -> ChangePage:
        """This scope's change events after sequence ``after``, ascending.

        Args:
            after: a sequence number (0 = from the start); pass the previous
                page's ``next_cursor`` to go on.
            limit: at most this many events, 1..1000 (default 100).
            prefix: only keys starting with this.
            kind: only changes of ``value``, ``vector`` or ``turn`` (a
                turn event's key is a holder id, which a prefix may match).

        Returns:
            A ``ChangePage``; compare a saved cursor with ``oldest_sequence``
            to know whether retention trimmed events it had not seen.
        """
        wanted = feed.EventFilter(self.scope, self.scope_id, check.prefix_arg(prefix) or None,
                                  kind=feed.kind_arg(kind))
        return await feed.read_page(self._conn.client, self._conn.namespace, after, limit, wanted)

    def watch(self, patterns: str | Iterable[str], after: int | None = 0,
              interval: float = 0.25, stop: feed.Stop = None, kind: str | None = None
              ) -> AsyncIterator[MemoryChangeEvent]:
        """Yield this scope's events whose key matches any shell-style pattern
        (and, with ``kind``, only changes of ``value``, ``vector`` or ``turn``).

        Blocks on the stream (XREAD BLOCK): an event arrives as soon as it is
        written. ``interval`` bounds one blocking read, after which ``stop``
        (an ``asyncio.Event`` or a callable) is checked. ``after=None`` starts
        from now instead of the beginning.

        Raises:
            CursorExpiredError: events after ``after`` were trimmed.
        """
        wanted = feed.EventFilter(self.scope, self.scope_id, None, feed.patterns_arg(patterns),
                                  feed.kind_arg(kind))
        return feed.watch(self._conn.client, self._conn.namespace, wanted, after, interval, stop)
