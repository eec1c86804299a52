"""The MemoryStore protocol of the agent-framework reference, on redismem:
thread events, state, checkpoints (state keys) and long-term memory with
text and vector search.

Thread events are Lua functions on a per-thread stream plus a timestamp
index; state is revisioned values in the thread's session scope (so it has
revisions, TTL and change-feed events); long-term memories are hashes indexed
by RediSearch for BM25 text search and vector search, or searched exactly in
the client when the server has no search module.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
from collections.abc import Sequence
from typing import Any, cast

from redis.exceptions import ResponseError

from . import _validate as check
from . import keys as K
from . import lifecycle, limits, turns
from . import vectors as V
from .bm25 import bm25_rank, tokens
from .errors import (
    CorruptEntryError,
    InvalidArgumentError,
    InvalidVectorError,
)
from .functions import refusals, request_bytes
from .memory import Memory, connect
from .records import (
    STREAM_ID,
    check_limit,
    check_ms,
    check_scope,
    check_tags,
    event_from_json,
    event_json,
    id_and_type,
    is_utf8,
    memory_from_json,
    memory_json,
    user_key,
)
from .repair import stored_count
from .types import (
    CompactionResult,
    JsonValue,
    LongTermMemory,
    MemoryCapabilities,
    MemoryEvent,
    MemoryValue,
    RetentionPolicy,
)

log = logging.getLogger("redismem")
_PAGE = 1000
"""Events one compaction read or drop call handles."""


class RedisMemoryStore:
    """The MemoryStore protocol on redismem.

    Args:
        url: as ``redismem.connect`` (default ``REDISMEM_URL``, else the
            embedded server; ``memory://`` for in-process).
        namespace: the redismem namespace.
        **options: passed to ``connect`` (``principal``).

    ``capabilities`` is true for text and vector search on every server:
    with the search module they use RediSearch (BM25, HNSW or FLAT indexes),
    without it they run exactly in the client.
    """

    capabilities = MemoryCapabilities(text_search=True, vector_search=True, atomic_upsert=True,
                                      ttl=True)

    def __init__(self, url: str | None = None, *, namespace: str = "default",
                 **options: Any) -> None:
        check.check_id("namespace", namespace)
        self.url = url
        self.namespace = namespace
        self._options = options
        self._memory: Memory | None = None

    @property
    def memory(self) -> Memory:
        """The underlying ``Memory`` (after ``setup``)."""
        if self._memory is None:
            raise RuntimeError("call `await store.setup()` first")
        return self._memory

    async def setup(self) -> None:
        """Connect; calling it again does nothing. Writes nothing: indexes are
        made by the first write that needs them."""
        if self._memory is not None:
            return
        self._memory = await connect(self.url, namespace=self.namespace, **self._options)

    def _text_index_args(self) -> list[Any]:
        # No stopwords and no stemming, as the exact search in the client: a
        # query for "the" finds texts with "the" (RediSearch's default
        # stopwords dropped it and matched every memory), "runners" does not
        # find "runner" (queries are VERBATIM too).
        return ["FT.CREATE", K.memory_text_index(self.namespace), "ON", "HASH",
                "PREFIX", 1, K.memory_prefix(self.namespace), "STOPWORDS", 0, "SCHEMA",
                "text", "TEXT", "NOSTEM", "_u", "TAG", "_s", "TAG", "upd", "NUMERIC", "SORTABLE"]

    async def _text_index_ready(self) -> bool:
        """Whether the text index exists as _text_index_args defines it (one
        FT.INFO per connection); only reads."""
        conn = self.memory._conn
        name = K.memory_text_index(self.namespace)
        if conn.indexes.get(name) == "TEXT":
            return True
        try:
            info = await V.index_info(conn.client, name)
        except ResponseError:  # no such index
            return False
        ready = "stopwords_list" in info and any(
            b"NOSTEM" in V.attribute_flags(attribute) for attribute in info.get("attributes", []))
        if ready:
            conn.indexes[name] = "TEXT"
        return ready

    async def _ensure_text_index(self) -> None:
        """Make the text index before a memory write: create it, or re-create
        an older definition (its documents stay and are indexed again)."""
        if not self.memory.capabilities.search or await self._text_index_ready():
            return
        client = self.memory.client
        async with self.memory._conn.index_lock:
            if await self._text_index_ready():
                return
            with contextlib.suppress(ResponseError):  # absent, or dropped by a racing writer
                await client.execute_command(  # type: ignore[no-untyped-call]
                    "FT.DROPINDEX", K.memory_text_index(self.namespace))
            await V.create_index(client, self._text_index_args())

    async def close(self) -> None:
        """Close the connection; calling it again does nothing."""
        if self._memory is not None:
            await self._memory.close()
            self._memory = None

    async def __aenter__(self) -> RedisMemoryStore:
        await self.setup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # thread events

    async def append_event(self, event: MemoryEvent) -> None:
        """Append an event to its thread (an id already there is not added again).

        Raises:
            InvalidEventError: the event is malformed.
        """
        body = event_json(event)
        await self._append(event.thread_id, [body])

    async def append_events(self, thread_id: str, events: Sequence[MemoryEvent], *,
                            atomic: bool = True) -> int:
        """Append several events of one thread, in order; returns how many
        were new (an id the thread holds already is skipped).

        With ``atomic`` (the default) all are appended in one call or none
        is: at most 500 events and the namespace's ``max_call_bytes``.
        ``atomic=False`` is for long lists: as many calls as the bounds
        need, in order, each atomic; a failure leaves the calls before it
        appended, and appending the same list again skips those.

        Raises:
            InvalidArgumentError: ``atomic`` and more than 500 events.
            RequestTooLargeError: ``atomic`` and the events exceed
                ``max_call_bytes``.
        """
        check.check_id("thread id", thread_id)
        bodies = [event_json(event, thread_id) for event in events]
        if atomic:
            _check_event_count(len(bodies))
            return await self._append(thread_id, bodies) if bodies else 0
        return sum([await self._append(thread_id, part)
                    for part in self._event_calls(thread_id, bodies)])

    def _event_calls(self, thread_id: str, bodies: list[str]) -> list[list[str]]:
        """``bodies`` in calls within MAX_EVENTS_PER_CALL and ``max_call_bytes``."""
        functions = self.memory._conn.functions
        budget = functions.max_call_bytes
        fixed = request_bytes(
            [K.thread_events(self.namespace, thread_id), K.thread_times(self.namespace, thread_id),
             K.thread_ids(self.namespace, thread_id), K.threads(self.namespace),
             K.turn(self.namespace, "session", thread_id)],
            [self.namespace, thread_id, str(limits.MAX_SEQUENCE)])
        calls: list[list[str]] = []
        total = budget
        for body in bodies:
            size = len(body.encode())
            if not calls or total + size > budget or len(calls[-1]) >= limits.MAX_EVENTS_PER_CALL:
                calls.append([])
                total = fixed
            calls[-1].append(body)
            total += size
        return calls

    async def _append(self, thread_id: str, bodies: list[str]) -> int:
        # inside a turn of the thread's session, the append carries its token
        token = turns.token_arg(self.namespace, "session", thread_id)
        flags = await self.memory._conn.functions.append_events(
            self.namespace, thread_id, self.memory.principal, bodies, token)
        return sum(flags)

    async def get_recent_events(self, thread_id: str, limit: int = 50) -> list[MemoryEvent]:
        """The ``limit`` most recent events of a thread, oldest first."""
        check.check_id("thread id", thread_id)
        wanted = check_limit(limit)
        pages: list[list[tuple[str, bytes]]] = []
        got, before = 0, ""
        while got < wanted:  # newest page first; each call bounded (MAX_EVENTS_PER_READ)
            page = await self.memory._conn.functions.recent_events(
                self.namespace, thread_id, min(limits.MAX_EVENTS_PER_READ, wanted - got), before)
            if not page:
                break
            pages.append(page)
            got, before = got + len(page), page[0][0]
        key = K.thread_events(self.namespace, thread_id)
        return [event_from_json(body, key, stream_id) for page in reversed(pages)
                for stream_id, body in page]

    async def get_events_since(self, thread_id: str, since_ms: int, limit: int = 500
                               ) -> list[MemoryEvent]:
        """Events whose timestamp is at or after ``since_ms``, in append order.

        Found through a timestamp index in O(log n + k). When writers' clocks
        put timestamps slightly out of append order, every event whose own
        timestamp qualifies is returned, wherever it sits in the thread; the
        ``limit`` chosen are those with the earliest timestamps.
        """
        check.check_id("thread id", thread_id)
        since = check_ms(since_ms, "since_ms", InvalidArgumentError)
        wanted = check_limit(limit)
        found: list[tuple[str, bytes | None]] = []
        while len(found) < wanted:  # pages of MAX_EVENTS_PER_READ, each call bounded
            page = await self.memory._conn.functions.events_since(
                self.namespace, thread_id, since,
                min(limits.MAX_EVENTS_PER_READ, wanted - len(found)), len(found))
            if not page:
                break
            found += page
        found = [item for item in found if STREAM_ID.fullmatch(item[0])]  # else a raw member
        found.sort(key=lambda item: tuple(int(part) for part in item[0].split("-")))
        key = K.thread_events(self.namespace, thread_id)
        return [event_from_json(body, key, stream_id) for stream_id, body in found
                if body is not None]

    async def replace_thread_events(self, thread_id: str, events: list[MemoryEvent]) -> None:
        """Replace every event of a thread, atomically: at most 500 events
        and the namespace's ``max_call_bytes`` (``InvalidArgumentError``,
        ``RequestTooLargeError``); ``compact_thread`` trims a long thread
        in short calls instead."""
        check.check_id("thread id", thread_id)
        _check_event_count(len(events))
        bodies = [event_json(event, thread_id) for event in events]
        await self.memory._conn.functions.replace_events(self.namespace, thread_id,
                                                         self.memory.principal, bodies)

    async def compact_thread(self, thread_id: str,
                             event_policy: RetentionPolicy | None = None) -> CompactionResult:
        """Apply a retention policy: of the newest ``scan_limit`` events,
        protected types are kept first (the newest of them when they alone
        exceed the budget), then the newest others fill
        ``max_events_per_thread``; older events are not examined and stay.

        The events are read in pages of 1,000 and removed in slices of 1,000
        (``redismem_drop_events``), each a short call, so compaction never
        holds the server for long (one Lua call over 20,000 events held it
        0.4 s). Events appended meanwhile are newer than those examined and
        stay; ``events_kept`` is the thread's length afterwards.
        """
        check.check_id("thread id", thread_id)
        policy = event_policy or RetentionPolicy()
        if isinstance(policy.max_events_per_thread, bool) or not isinstance(
            policy.max_events_per_thread, int
        ) or policy.max_events_per_thread < 0:
            raise InvalidArgumentError("max_events_per_thread must be an integer >= 0, got "
                                       f"{policy.max_events_per_thread!r}")
        scan_limit = check_limit(policy.scan_limit, "scan_limit")
        protected = set(check_tags(policy.keep_event_types, "keep_event_types",
                                    InvalidArgumentError))
        client, ns = self.memory.client, self.namespace
        events_key = K.thread_events(ns, thread_id)
        entries: list[tuple[str, str, str | None]] = []  # newest first
        newest = "+"
        while len(entries) < scan_limit:
            page = cast(list[tuple[bytes, dict[bytes, bytes]]], await client.xrevrange(
                events_key, max=newest, min="-", count=min(_PAGE, scan_limit - len(entries))))
            if not page:
                break
            entries += [(stream_id.decode(), *id_and_type(fields.get(b"e")))
                        for stream_id, fields in page]
            newest = "(" + page[-1][0].decode()
        keep: set[str] = set()
        for stream_id, _, kind in entries:
            if len(keep) < policy.max_events_per_thread and kind in protected:
                keep.add(stream_id)
        for stream_id, _, _ in entries:
            if len(keep) >= policy.max_events_per_thread:
                break
            keep.add(stream_id)
        doomed = [(stream_id, event_id) for stream_id, event_id, _ in entries
                  if stream_id not in keep]
        removed, held = 0, int(await client.xlen(events_key))
        for first in range(0, len(doomed), _PAGE):
            dropped, held = await self.memory._conn.functions.drop_events(
                ns, thread_id, self.memory.principal, doomed[first:first + _PAGE])
            removed += dropped
        return CompactionResult(removed, held)

    async def list_threads(self) -> list[tuple[str, int]]:
        """(thread id, timestamp of its last appended event), most recent first."""
        with refusals(K.threads(self.namespace)):
            rows = cast(list[tuple[bytes, float]], await self.memory.client.zrevrange(
                K.threads(self.namespace), 0, -1, withscores=True))
        return [(name.decode(), int(score)) for name, score in rows
                if is_utf8(name) and math.isfinite(score)]  # else a raw ZADD

    # state: revisioned values in the thread's session scope

    async def put_state(self, thread_id: str, key: str, value: JsonValue, *,
                        expected_revision: int | None = None,
                        ttl_seconds: float | None = None, persist: bool = False
                        ) -> MemoryValue:
        """Store state ``key`` of a thread (a revisioned value of its session
        scope); returns what ``MemoryScope.set`` does (the value, its new
        revision). ``expected_revision``,
        ``ttl_seconds`` and ``persist`` work as in ``MemoryScope.set``: a
        compare-and-set (ConflictError when another writer came first), an
        expiry, its removal (by default the state keeps its expiry)."""
        return await self.memory.session(thread_id).set(
            key, value, expected_revision=expected_revision, ttl_seconds=ttl_seconds,
            persist=persist)

    async def get_state(self, thread_id: str, key: str) -> JsonValue | None:
        """State ``key`` of a thread, or None."""
        return (await self.memory.session(thread_id).get(key)).value

    async def list_state(self, thread_id: str, prefix: str | None = None
                         ) -> dict[str, JsonValue]:
        """Every state entry of a thread (whose key starts with ``prefix``)."""
        scope = self.memory.session(thread_id)
        names = await scope.list_keys(prefix)
        found: dict[str, JsonValue] = {}
        for start in range(0, len(names), limits.MAX_BATCH):
            got = await scope.get_many(names[start:start + limits.MAX_BATCH])
            found.update({name: value.value for name, value in got.items() if value.found})
        return found

    async def delete_state(self, thread_id: str, key: str) -> None:
        """Delete state ``key`` of a thread (nothing happens when it is absent)."""
        await self.memory.session(thread_id).delete(key)

    # long-term memory

    async def upsert_long_term_memory(self, memory: LongTermMemory, *,
                                      embedding: Sequence[float] | None = None,
                                      expected_updated_at: int | None = None) -> bool:
        """Create or replace a memory atomically, with an optional embedding.
        The newer record wins: a stored memory whose ``updated_at`` is later
        than ``memory.updated_at`` is kept (False), else it is written (True).

        Args:
            expected_updated_at: compare-and-set: write only when the stored
                memory's ``updated_at`` is this one (0 = only when absent),
                so two workers that read the same memory cannot overwrite
                each other's change blindly.

        Raises:
            ConflictError: the stored ``updated_at`` is not
                ``expected_updated_at`` (``.expected``, ``.actual``: 0 when
                absent); nothing is written.
            InvalidMemoryError: the record is malformed.
            InvalidVectorError: the embedding is invalid or its dimension differs
                from the namespace's memory embeddings.
        """
        return await self._upsert(memory, embedding, newer=False,
                                  expected=check.expected_arg(expected_updated_at)) >= 0

    async def restore_long_term_memory(self, memory: LongTermMemory, *,
                                       embedding: Sequence[float] | None = None) -> bool:
        """Store an exported memory unless the stored one's ``updated_at`` is the
        same or later; True when written. Raises as ``upsert_long_term_memory``."""
        return await self._upsert(memory, embedding, newer=True) >= 0

    async def _upsert(self, memory: LongTermMemory, embedding: Sequence[float] | None, *,
                      newer: bool, expected: str = "") -> int:
        record = memory_json(memory)
        user = user_key(memory.user_id)
        blob = b""
        if embedding is not None:
            blob, dim = V.embedding_bytes(embedding)
            await self._ensure_vector_index(dim)
        await self._ensure_text_index()
        ns = self.namespace
        return await self.memory._conn.functions.upsert_memory(ns, user, memory.id, record, blob,
                                                               newer=newer, expected=expected)

    async def delete_long_term_memory(self, user_id: str | None, memory_id: str) -> None:
        """Delete a memory (nothing happens when it is absent)."""
        user = user_key(user_id)
        check.check_key(memory_id)
        ns = self.namespace
        await self.memory._conn.functions.delete_memory(ns, user, memory_id)

    async def forget_user(self, user_id: str) -> lifecycle.UserForgotten:
        """Delete everything of one user in the namespace (a data-protection
        request; an admin's): its long-term memories, its events in every
        thread and its actor scope, so that no key named with the user
        remains; the feed records it (kind user, action forget) without
        data. What still holds the user's data afterwards: the feed events
        written before (until trimmed) and earlier exports
        (:mod:`redismem.lifecycle`).

        Raises:
            InvalidIdError: not a user id.
            PermissionDeniedError: this credential is no admin of the namespace.
        """
        return await lifecycle.forget_user(self.memory, user_id)

    async def list_long_term_memories(self, user_id: str | None, *, scope: str | None = None,
                                      limit: int = 100) -> list[LongTermMemory]:
        """A user's memories (or the shared ones), newest ``updated_at`` first."""
        limit = check_limit(limit)
        return [m for m, _ in await self._memories(user_id, scope, limit=limit)]

    async def _memories(self, user_id: str | None, scope: str | None, *,
                        limit: int | None = None, embeddings: bool = False
                        ) -> list[tuple[LongTermMemory, bytes | None]]:
        """Records of a user, newest first, optionally with their embeddings."""
        user = user_key(user_id)
        check_scope(scope)
        with refusals():  # a key of another Redis type: CorruptEntryError naming it
            return await self._memory_pages(user, scope, limit, embeddings)

    async def _memory_pages(self, user: str, scope: str | None, limit: int | None,
                            embeddings: bool) -> list[tuple[LongTermMemory, bytes | None]]:
        client, ns = self.memory.client, self.namespace
        found: list[tuple[LongTermMemory, bytes | None]] = []
        start, page = 0, 500
        while limit is None or len(found) < limit:
            ids = cast(list[bytes], await client.zrevrange(K.memories(ns, user), start,
                                                          start + page - 1))
            if not ids:
                break
            start += page
            pipe = client.pipeline(transaction=False)
            for memory_id in ids:  # a name that is no UTF-8 (raw) names no record
                pipe.hmget(K.memory(ns, user, memory_id.decode(errors="replace")), "rec", "emb")
            for rec, emb in await pipe.execute():
                if rec is None:
                    continue
                record = memory_from_json(rec)
                if record is not None and (scope is None or record.scope == scope):
                    found.append((record, emb if embeddings else None))
        return found[:limit] if limit is not None else found

    async def search_long_term_memory_text(self, user_id: str | None, query: str, *,
                                           scope: str | None = None, limit: int = 10
                                           ) -> list[LongTermMemory]:
        """Memories whose text matches words of ``query``, ranked by BM25."""
        if not isinstance(query, str):
            raise InvalidArgumentError(f"query must be a string, got {query!r}")
        check.utf8_size(query, InvalidArgumentError, "query")
        limit = check_limit(limit)
        user = user_key(user_id)
        check_scope(scope)
        words = sorted(set(tokens(query)))
        if not words:
            return []
        if not await self._text_index_ready():  # no search module, or no memory written yet
            records = await self._memories(user_id, scope)
            return [m for m, _ in bm25_rank(query, [(m, m.text) for m, _ in records], limit)]
        clauses = [V.tag_clause("_u", user.encode().hex())]
        if scope is not None:
            clauses.append(V.tag_clause("_s", scope.encode().hex()))
        text = f"{' '.join(clauses)} @text:({'|'.join(words)})"
        search = ("FT.SEARCH", K.memory_text_index(self.namespace), text, "VERBATIM", "SCORER",
                  "BM25", "RETURN", 1, "rec", "LIMIT", 0, limit, "DIALECT", 2)
        reply = await V.remade_if_missing(
            self.memory._conn, K.memory_text_index(self.namespace),
            lambda: self.memory.client.execute_command(*search),  # type: ignore[no-untyped-call]
            remake=self._ensure_text_index)
        found = [memory_from_json(fields.get(b"rec")) for _, fields in V.search_rows(reply)]
        return [record for record in found if record is not None]

    async def search_long_term_memory_vector(
        self, user_id: str | None, query_embedding: Sequence[float], *,
        scope: str | None = None, limit: int = 10, min_score: float | None = None,
    ) -> list[tuple[LongTermMemory, float]]:
        """(memory, cosine similarity) of the memories nearest to the query, best
        first; ``min_score`` drops weaker ones.

        Raises:
            InvalidVectorError: the query is invalid or of another dimension
                than the namespace's memory embeddings.
        """
        blob, dim = V.embedding_bytes(query_embedding)
        limit = V.check_top_k(limit)
        floor = V.check_min_score(min_score)
        user = user_key(user_id)
        check_scope(scope)
        dim_key = K.memory_dim(self.namespace)
        with refusals(dim_key):
            stored = await self.memory.client.get(dim_key)
        if stored is None:
            return []
        stored_dim = stored_count(stored, limits.MAX_VECTOR_DIM)
        if stored_dim is None:
            raise CorruptEntryError(f"{dim_key} holds {stored[:40]!r}, not a dimension "
                                    "(a raw write; `redismem audit` names it)", key=dim_key)
        if stored_dim != dim:
            raise InvalidVectorError(f"the query has dimension {dim}; this namespace's memory "
                                     f"embeddings have dimension {stored_dim}")
        if self.memory.capabilities.search:
            clauses = [V.tag_clause("_u", user.encode().hex())]
            if scope is not None:
                clauses.append(V.tag_clause("_s", scope.encode().hex()))
            spec = self._vector_index(dim)
            rows = await V.searched(self.memory._conn, spec, lambda algorithm: V.knn(
                self.memory.client, spec.name, clauses, blob, limit, algorithm,
                self._ef_runtime(), ("rec",)))
            read = [(memory_from_json(fields.get(b"rec")), score) for _, fields, score in rows]
            pairs = [(record, score) for record, score in read if record is not None]
        else:
            pairs = self._rank_exact(await self._memories(user_id, scope, embeddings=True),
                                     blob, limit)
        return [(m, s) for m, s in pairs if floor is None or s >= floor]

    @staticmethod
    def _rank_exact(records: Sequence[tuple[LongTermMemory, bytes | None]], blob: bytes,
                    limit: int) -> list[tuple[LongTermMemory, float]]:
        import numpy as np  # on first use: the command line starts faster
        query = np.frombuffer(blob, dtype="<f4")
        with_vectors = [(m, np.frombuffer(e, dtype="<f4")) for m, e in records
                        if e is not None and len(e) == 4 * query.size
                        and V.embedding_problem(e) is None]  # else raw: audit names it
        ranked = V.rank_exact(query, [(m.id, vec, {}, i) for i, (m, vec)
                                      in enumerate(with_vectors)], limit)
        return [(with_vectors[match.revision][0], match.score) for match in ranked]

    def _ef_runtime(self) -> int:
        return V.IndexParams.from_settings(self.memory._conn.settings).ef_runtime

    def _vector_index(self, dim: int) -> V.IndexSpec:
        return V.IndexSpec(K.memory_vector_index(self.namespace, dim),
                           K.memory_prefix(self.namespace), dim, ("_u", "_s"))

    async def _ensure_vector_index(self, dim: int) -> str:
        if not self.memory.capabilities.search:
            return "EXACT"
        return await V.cached_index(self.memory._conn, self._vector_index(dim))


async def store_from_env(**options: Any) -> RedisMemoryStore:
    """A set-up store chosen by ``REDISMEM_BACKEND`` (``redis``, the default, or
    ``memory``) and ``REDISMEM_URL``. When the configured backend fails to
    initialise, logs a warning and falls back to ``memory://``.

    Raises:
        ValueError: ``REDISMEM_BACKEND`` names no known backend.
    """
    backend = os.environ.get("REDISMEM_BACKEND", "redis").strip().lower()
    if backend not in ("redis", "memory"):
        raise ValueError(f"REDISMEM_BACKEND must be 'redis' or 'memory', got {backend!r}")
    url = "memory://" if backend == "memory" else os.environ.get("REDISMEM_URL") or None
    store = RedisMemoryStore(url, **options)
    try:
        await store.setup()
    except Exception as exc:  # any failure to initialise: fall back, as documented
        log.warning("redismem: the %s backend failed to initialise (%s: %s); "
                    "falling back to memory://", backend, type(exc).__name__, exc)
        store = RedisMemoryStore("memory://", **options)
        await store.setup()
    return store


def _check_event_count(count: int) -> None:
    if count > limits.MAX_EVENTS_PER_CALL:
        raise InvalidArgumentError(
            f"at most {limits.MAX_EVENTS_PER_CALL} events per call, got {count} (append_events "
            f"with atomic=False splits a longer list into several calls)")
