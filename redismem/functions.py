"""The typed wrapper of the Lua library's functions, and the mapping of
Redis error replies to redismem's exceptions.

:class:`Functions` has one typed method per registered function and maps
``CODE message`` error replies to the exception classes of :mod:`.errors`;
:func:`refusals` does the same for ACL refusals and keys of the wrong type
of direct commands.
"""

from __future__ import annotations

import contextlib
import re
import secrets
from collections.abc import Iterator, Sequence
from typing import Any, cast

from redis.asyncio import Redis
from redis.asyncio.cluster import PipelineCommand, RedisCluster
from redis.exceptions import (
    AskError,
    MovedError,
    NoPermissionError,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError

from . import keys as K
from . import limits
from .errors import (
    ConflictError,
    CorruptEntryError,
    NotReplicatedError,
    PermissionDeniedError,
    RedisMemError,
    RequestTooLargeError,
    from_reply,
)
from .library import ensure_library
from .retries import CLUSTER_TIMEOUT, LOST, persistently
from .topology import is_cluster, slot_owner


def function_missing(exc: ResponseError) -> bool:
    """Whether a reply says the node has no such function (no library)."""
    return "Function not found" in str(exc)


def _mapped_error(exc: ResponseError, key: str | None = None, keys: Sequence[str] = ()
                  ) -> RedisMemError | ResponseError:
    """Our exception for a Lua error reply, an ACL refusal (of one of
    ``keys``) or a key of the wrong type, or ``exc`` itself when none of
    these."""
    return (from_reply(str(exc), key=key) or denied(exc, keys)
            or wrong_type(exc, key) or exc)


_SHOWN_KEY = re.compile(r" key '(.*)'$", re.S)


def _conflicting(names: Sequence[str], message: str) -> str | None:
    """Which of a batch's keys a REVISION_CONFLICT message names (Lua shows
    it quoted, cut to 80 bytes with ``...``)."""
    found = _SHOWN_KEY.search(message)
    if found is None:
        return None
    shown = found[1]
    for name in names:
        if name == shown or (shown.endswith("...") and name.startswith(shown[:-3])):
            return name
    return None


def wrong_type(exc: ResponseError, key: str | None = None) -> CorruptEntryError | None:
    """CorruptEntryError for a WRONGTYPE reply: a raw command replaced one of
    the namespace's keys with another Redis type."""
    text = str(exc)
    if "WRONGTYPE" not in text:  # also in a pipeline's "Command # n (...) caused error"
        return None
    return CorruptEntryError(f"a key of this namespace holds the wrong Redis type (a raw "
                             f"command wrote it; `redismem audit` names it): {text}", key=key)


_ACL_REFUSALS = ("NOPERM", "No permissions", "ACL failure")


@contextlib.contextmanager
def refusals(key: str | None = None) -> Iterator[None]:
    """Raise PermissionDeniedError for an ACL refusal of a direct command
    (on ``key``), CorruptEntryError for a key of the wrong type."""
    try:
        yield
    except ResponseError as exc:
        mapped = denied(exc, () if key is None else (key,)) or wrong_type(exc, key)
        if mapped is None:
            raise
        raise mapped from None


@contextlib.contextmanager
def admin_only(what: str, ns: str) -> Iterator[None]:
    """:func:`refusals` of a call only an admin of ``ns`` may make (it
    declares or deletes the settings): a refusal says the role ``what`` takes."""
    try:
        with refusals(K.config(ns)):
            yield
    except PermissionDeniedError as exc:
        raise PermissionDeniedError(f"{what} takes the admin role of namespace {ns}: "
                                    f"{exc}") from None


REACH = ("a namespace role reaches only its own namespace; a worker only its granted "
         "sessions and workflows and its own actor scope, not the change feed, searches, "
         "threads or long-term memories; a reader writes nothing (docs/access-control.md; "
         "redismem status --namespace NS shows what this user may read)")
"""What each role reaches, for the message of an ACL refusal."""


def denied(exc: ResponseError, keys: Sequence[str] = ()) -> PermissionDeniedError | None:
    """PermissionDeniedError for an ACL refusal (a command or key the
    credential may not use, directly or inside a function), naming what
    ``keys`` hold (the server does not say which it refused), else None."""
    text = str(exc)
    if not (isinstance(exc, NoPermissionError) or text.startswith(_ACL_REFUSALS)):
        return None
    shown = list(dict.fromkeys(K.describe(k) for k in keys))
    mine = [d for d in shown if not d.startswith("a principal's")]  # always its own
    shown = mine or shown
    target = ("" if not shown else f" on {shown[0]}" if len(shown) == 1 else
              f" on one of: {', '.join(shown[:4])}" + (" ..." if len(shown) > 4 else ""))
    return PermissionDeniedError(
        f"the server's ACL refused this credential{target} ({text}): {REACH}")


def _size(part: str | bytes | int) -> int:
    if isinstance(part, bytes):
        return len(part)
    text = part if isinstance(part, str) else str(part)
    return len(text) if text.isascii() else len(text.encode())


def request_id() -> str:
    """A fresh id for one write call (16 characters of ``[A-Za-z0-9_-]``).
    redis-py sends the same arguments again when it retries the call after
    a lost connection, and the library applies a request id once
    (``lua/lib/55_requests.lua``)."""
    return secrets.token_urlsafe(12)


def request_bytes(keys: Sequence[str], args: Sequence[str | bytes | int]) -> int:
    """The bytes of a call's keys and arguments, as ``check_request`` in Lua counts them."""
    return sum(_size(part) for part in (*keys, *args))


_SET = {"value": "redismem_set_values", "vector": "redismem_set_vectors"}
_DELETE = {"value": "redismem_delete_value", "vector": "redismem_delete_vector"}
_IMPORT = {"value": "redismem_import_values", "vector": "redismem_import_vectors"}


def _dimensions(ns: str, kind: K.Kind, scope: str, sid: str) -> list[str]:
    """The scope's vector-dimensions hash, which vector writes also pass."""
    return [K.vector_dims(ns, scope, sid)] if kind == "vector" else []


class Functions:
    """One typed method per Lua function of the library. Callers pass names
    (namespace, scope, scope id, keys, thread, user); each method builds its
    call's KEYS from :mod:`.keys`, in the order the function's Lua header
    lists them (tests/test_lua_contract.py checks that the Lua side checks
    every one).

    Attributes:
        max_call_bytes: the namespace's ``max_call_bytes``; write calls
            larger than this raise ``RequestTooLargeError`` before they are
            sent (the Lua side checks again).
    """

    def __init__(self, client: Redis) -> None:
        self._client = client
        self.max_call_bytes = limits.MAX_CALL_BYTES
        self.replicas = 0
        """Replicas that must confirm each write call (``durability="replica"``: 1)."""
        self.replica_timeout_ms = 1000

    def _check_size(self, keys: Sequence[str], args: Sequence[str | bytes | int],
                    limit: tuple[int, str] | None = None) -> None:
        most, name = limit or (self.max_call_bytes, "max_call_bytes")
        # characters are at most 4 bytes each: only a large call needs counting
        try:
            rough = sum(map(len, keys)) + sum(map(len, args))  # type: ignore[arg-type]
        except TypeError:  # an int argument
            rough = sum(len(str(part)) for part in (*keys, *args))
        if rough * 4 > most:
            total = request_bytes(keys, args)
            if total > most:
                raise RequestTooLargeError(
                    f"the call carries {total} bytes of keys and arguments, the limit "
                    f"({name}) is {most}")

    async def _call(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int],
                    *, read_only: bool = False, key: str | None = None,
                    limit: tuple[int, str] | None = None) -> Any:
        if not read_only:
            self._check_size(keys, args, limit)
        try:
            return await self._send(name, keys, args, read_only, key)
        except ResponseError as exc:
            if not function_missing(exc):
                raise
        # a node without the library (a promoted replica that missed a load,
        # a node added by a reshard): load it, then send the call once more
        await ensure_library(self._client)
        return await self._send(name, keys, args, read_only, key)

    async def _send(self, name: str, keys: Sequence[str], args: Sequence[str | bytes | int],
                    read_only: bool, key: str | None) -> Any:
        """One call; ResponseError only for "function not found"."""
        if not read_only and self.replicas:
            return await self._call_replicated(name, keys, args, key)
        try:
            return await self._client.execute_command(  # type: ignore[no-untyped-call]
                "FCALL_RO" if read_only else "FCALL", name, len(keys), *keys, *args)
        except ResponseError as exc:
            if function_missing(exc):
                raise
            raise _mapped_error(exc, key, keys) from None

    async def _call_replicated(self, name: str, keys: Sequence[str],
                               args: Sequence[str | bytes | int], key: str | None) -> Any:
        """A write call followed, on the same connection, by ``WAIT``: the
        call's effects reached ``replicas`` replicas, or NotReplicatedError.
        On a cluster both go to the node of the call's keys, and a lost
        node or a moved slot is waited out and tried again (the call is
        safe to repeat: its request id is applied once)."""
        call = ("FCALL", name, len(keys), *keys, *args)
        wait = ("WAIT", self.replicas, self.replica_timeout_ms)
        if is_cluster(self._client):
            reply, confirmed = await self._on_owner(call, wait, keys[0])
        else:
            async with self._client.pipeline(transaction=False) as pipe:
                pipe.execute_command(*call)
                pipe.execute_command(*wait)
                reply, confirmed = await pipe.execute(raise_on_error=False)
        if isinstance(reply, ResponseError):
            if function_missing(reply):
                raise reply
            raise _mapped_error(reply, key, keys) from None
        if isinstance(reply, Exception):
            raise reply
        if isinstance(confirmed, Exception) or int(confirmed) < self.replicas:
            got = 0 if isinstance(confirmed, Exception) else int(confirmed)
            raise NotReplicatedError(
                f"{name} was applied on the primary, but {got} of {self.replicas} replicas "
                f"confirmed it within {self.replica_timeout_ms} ms: it is lost if the primary "
                "fails before replicating it", reply=reply, wanted=self.replicas,
                confirmed=got)
        return reply

    async def _on_owner(self, call: tuple[Any, ...], wait: tuple[Any, ...], key: str
                        ) -> tuple[Any, Any]:
        cluster = cast(RedisCluster, self._client)

        async def attempt() -> tuple[Any, Any]:
            node = cluster.get_node_from_key(key)
            if node is None:
                raise RedisConnectionError(f"{call[1]}: no node holds the slot of {key!r}")
            commands = [PipelineCommand(0, *call), PipelineCommand(1, *wait)]
            await node.execute_pipeline(commands)
            reply = commands[0].result
            if isinstance(reply, (*LOST, MovedError, AskError)):  # not run: try again
                raise RedisConnectionError(
                    f"{call[1]} could not reach the owner of its slot: {reply}") from reply
            return reply, commands[1].result

        async def reread_slots() -> None:  # the slot map changed: read it again
            with contextlib.suppress(RedisError):
                await cluster.nodes_manager.initialize()

        def what(exc: BaseException) -> tuple[str, str | None, int | None]:
            slot, owner = slot_owner(cluster, key)
            return f"FCALL {call[1]}", owner, slot

        return await persistently(attempt, between=reread_slots, what=what,
                                  timeout=getattr(cluster, "cluster_timeout", CLUSTER_TIMEOUT))

    async def version(self) -> int:
        """``redismem_version``."""
        return int(await self._call("redismem_version", (), (), read_only=True))

    @staticmethod
    def write_overhead(ns: str, kind: K.Kind, scope: str, sid: str, principal: str) -> int:
        """The bytes of the keys and arguments a batch write of one scope
        (``set_values``, ``set_vectors``) sends whatever its items, at most."""
        return request_bytes([*K.scope_writes(ns, kind, scope, sid, principal),
                              *_dimensions(ns, kind, scope, sid)],
                             [ns, scope, sid, str(limits.MAX_TTL_MS), principal, request_id(),
                              str(limits.MAX_REVISION)])

    @staticmethod
    def item_bytes(ns: str, kind: K.Kind, scope: str, sid: str,
                   item: Sequence[str | bytes]) -> int:
        """The bytes one item adds to a batch write: its key and its arguments."""
        return request_bytes([K.entry(ns, kind, scope, sid, str(item[0]))], item)

    async def set_items(self, kind: K.Kind, ns: str, scope: str, sid: str, ttl: str,
                        principal: str, items: Sequence[Sequence[str | bytes]],
                        token: str = "") -> list[int]:
        """``redismem_set_values`` (``items`` are (key, json, expected)
        triples) or ``redismem_set_vectors`` ((key, float32 bytes, metadata
        JSON, expected) quadruples): the revision of each item. ``token``:
        the writer's turn token in the scope ("" = none)."""
        return await self._set(_SET[kind], kind, ns, scope, sid, ttl, principal, items, token)

    async def put_items(self, ns: str, scope: str, sid: str, ttl: str, principal: str,
                        items: Sequence[Sequence[str]], token: str = "") -> list[int]:
        """``redismem_put_items``: ``set_items`` of values that are LangGraph
        store items ((key, json, expected) triples, each JSON starting with
        its ``created_at``), each keeping the created_at of the item it
        replaces."""
        return await self._set("redismem_put_items", "value", ns, scope, sid, ttl, principal,
                               items, token)

    async def _set(self, fname: str, kind: K.Kind, ns: str, scope: str, sid: str, ttl: str,
                   principal: str, items: Sequence[Sequence[str | bytes]], token: str
                   ) -> list[int]:
        keys = [*K.scope_writes(ns, kind, scope, sid, principal),
                *_dimensions(ns, kind, scope, sid),
                *(K.entry(ns, kind, scope, sid, str(item[0])) for item in items)]
        args: list[str | bytes | int] = [ns, scope, sid, ttl, principal, request_id(), token]
        for item in items:
            args.extend(item)
        only = str(items[0][0]) if len(items) == 1 else None
        try:
            reply = await self._call(fname, keys, args, key=only)
        except ConflictError as exc:
            if exc.key is None:
                exc.key = _conflicting([str(item[0]) for item in items], str(exc))
            raise
        return [int(revision) for revision in reply]

    async def delete_item(self, kind: K.Kind, ns: str, scope: str, sid: str, key: str,
                          expected: str, principal: str, token: str = "") -> bool:
        """``redismem_delete_value`` or ``redismem_delete_vector``: whether it existed."""
        keys = [K.entry(ns, kind, scope, sid, key),
                *K.scope_writes(ns, kind, scope, sid, principal),
                *_dimensions(ns, kind, scope, sid)]
        reply = await self._call(_DELETE[kind], keys,
                                 [ns, scope, sid, key, expected, principal, request_id(), token],
                                 key=key)
        return bool(reply)

    async def import_items(self, kind: K.Kind, ns: str, scope: str, sid: str, principal: str,
                           items: Sequence[Sequence[str | bytes]]) -> list[int]:
        """``redismem_import_values`` (``items`` are (key, json, revision, ts,
        writer, expiry) rows) or ``redismem_import_vectors`` ((key, float32
        bytes, metadata JSON, revision, ts, writer, expiry) rows). Per item:
        the revision written, or 0 when kept."""
        keys = [*K.scope_writes(ns, kind, scope, sid, principal), K.config(ns),
                *_dimensions(ns, kind, scope, sid),
                *(K.entry(ns, kind, scope, sid, str(item[0])) for item in items)]
        args: list[str | bytes | int] = [ns, scope, sid, principal]
        for item in items:
            args.extend(item)
        return [int(r) for r in await self._call(_IMPORT[kind], keys, args)]

    async def get_values(self, ns: str, scope: str, sid: str, names: Sequence[str]
                         ) -> list[tuple[bytes | None, int]]:
        """``redismem_get_values``: (json or None, revision) per name."""
        keys = [K.value(ns, scope, sid, name) for name in names]
        reply = await self._call("redismem_get_values", keys, (), read_only=True)
        return list(zip(reply[::2], reply[1::2], strict=True))

    async def read_value(self, ns: str, scope: str, sid: str, name: str) -> tuple[Any, int]:
        """(json or None, revision) of one value hash, read without Lua.

        What ``redismem_get_values`` returns for one key: one ``HMGET`` of a
        hash is atomic, an entry's expiry is its hash's own (a reader never
        sees an expired hash; the expiry zset only drives listings), and a
        stored entry is checked by the caller either way. The key name is
        built by redismem.keys, so the library's schema check is not needed.
        """
        key = K.value(ns, scope, sid, name)
        try:
            raw, revision = await self._client.hmget(key, ["v", "rev"])
        except ResponseError as exc:
            raise _mapped_error(exc, None, [key]) from None
        try:  # as Lua's tonumber(rev) or 0: a revision that is no number reads as 0
            return raw, int(revision) if revision is not None else 0
        except ValueError:
            return raw, 0

    async def get_vectors(self, ns: str, scope: str, sid: str, names: Sequence[str]
                          ) -> list[tuple[bytes | None, bytes | None, int]]:
        """``redismem_get_vectors``: (embedding bytes, metadata JSON, revision) per name."""
        keys = [K.vector(ns, scope, sid, name) for name in names]
        reply = await self._call("redismem_get_vectors", keys, (), read_only=True)
        return list(zip(reply[::3], reply[1::3], reply[2::3], strict=True))

    async def list_keys(self, ns: str, scope: str, sid: str, kind: K.Kind, prefix: str,
                        cursor: str, limit: str) -> tuple[str | None, list[str], int]:
        """``redismem_list_keys``: (next cursor or None, names, how many
        listed names were left out as longer than the key limit or not
        UTF-8: raw writes)."""
        keys = [K.names(ns, kind, scope, sid), K.expiry(ns, kind, scope, sid)]
        reply = await self._call("redismem_list_keys", keys,
                                 [ns, scope, sid, kind, prefix, cursor, limit], read_only=True)
        next_cursor, long = reply[0].decode(), int(reply[1])
        names = []
        for raw in reply[2:]:
            try:
                names.append(raw.decode())
            except UnicodeDecodeError:
                continue
        return (next_cursor or None), names, long + len(reply) - 2 - len(names)

    async def trim_feed(self, ns: str, budget: int) -> tuple[int, bool]:
        """``redismem_trim_feed``: (events dropped, whether more may be due)."""
        keys = [K.feed(ns), K.feed_size(ns), K.config(ns)]
        dropped, more = await self._call("redismem_trim_feed", keys, [ns, str(budget)])
        return int(dropped), bool(more)

    async def repair_feed(self, ns: str, step: str, *args: str | bytes) -> Any:
        """``redismem_repair_feed``: one step of a feed repair (``drop`` ids,
        ``settle`` or ``swap`` with the size estimate); its reply."""
        keys = [K.feed(ns), K.sequence(ns), K.feed_size(ns), K.feed_rebuild(ns)]
        return await self._call("redismem_repair_feed", keys, [ns, step, *args])

    async def modify_value(self, ns: str, scope: str, sid: str, ttl: str, principal: str,
                           key: str, op: str, operand: str, max_items: str = "",
                           token: str = "") -> tuple[int, bytes]:
        """``redismem_modify_value``: (new revision, new JSON for incr else b"")."""
        keys = [*K.scope_writes(ns, "value", scope, sid, principal), K.value(ns, scope, sid, key)]
        args: list[str | bytes | int] = [ns, scope, sid, ttl, principal, request_id(), token,
                                         key, op, operand]
        if op == "append":
            args.append(max_items)
        revision, json_text = await self._call("redismem_modify_value", keys, args, key=key)
        return int(revision), json_text

    @staticmethod
    def _thread_keys(ns: str, thread: str) -> list[str]:
        return [K.thread_events(ns, thread), K.thread_times(ns, thread), K.thread_ids(ns, thread)]

    @staticmethod
    def _feed_keys(ns: str, principal: str) -> list[str]:
        """The feed's counter and size and the principal's key: what a call
        that appends to the feed passes after its own keys."""
        return [K.sequence(ns), K.feed_size(ns), K.principal(ns, principal)]

    async def append_events(self, ns: str, thread: str, principal: str, events: Sequence[str],
                            token: str = "") -> list[int]:
        """``redismem_append_events``: 1 per event appended, 0 per id already
        there. ``token``: the writer's turn token in the thread's session."""
        keys = [*self._thread_keys(ns, thread), K.threads(ns), K.turn(ns, "session", thread),
                *self._feed_keys(ns, principal)]
        return [int(flag) for flag in await self._call(
            "redismem_append_events", keys, [ns, thread, token, principal, *events])]

    async def replace_events(self, ns: str, thread: str, principal: str,
                             events: Sequence[str]) -> int:
        """``redismem_replace_events``: the number of events the thread now holds."""
        keys = [*self._thread_keys(ns, thread), K.threads(ns), *self._feed_keys(ns, principal)]
        return int(await self._call("redismem_replace_events", keys,
                                    [ns, thread, principal, *events]))

    async def recent_events(self, ns: str, thread: str, limit: int, before: str = ""
                            ) -> list[tuple[str, bytes]]:
        """``redismem_recent_events``: one page of (stream id, event JSON),
        oldest first, appended before ``before`` ("" = the newest)."""
        reply = await self._call("redismem_recent_events", [K.thread_events(ns, thread)],
                                 [ns, thread, str(limit), before], read_only=True)
        return [(i.decode(errors="replace"), body)  # a raw member may be no UTF-8
                for i, body in zip(reply[::2], reply[1::2], strict=True)]

    async def events_since(self, ns: str, thread: str, since_ms: int, limit: int,
                           offset: int = 0) -> list[tuple[str, bytes | None]]:
        """``redismem_events_since``: one page of (stream id, event JSON or
        None for a stale index entry) in timestamp order, ``offset`` skipped."""
        keys = [K.thread_events(ns, thread), K.thread_times(ns, thread)]
        reply = await self._call("redismem_events_since", keys,
                                 [ns, thread, str(since_ms), str(limit), str(offset)],
                                 read_only=True)
        return [(i.decode(errors="replace"), body)  # a raw member may be no UTF-8
                for i, body in zip(reply[::2], reply[1::2], strict=True)]

    async def drop_events(self, ns: str, thread: str, principal: str,
                          events: Sequence[tuple[str, str]]) -> tuple[int, int]:
        """``redismem_drop_events``: (events removed, events the thread holds);
        ``events`` are (stream id, event id or "") pairs, at most 1,000."""
        keys = [*self._thread_keys(ns, thread), *self._feed_keys(ns, principal)]
        args: list[str | bytes | int] = [ns, thread, principal]
        for stream_id, event_id in events:
            args.extend((stream_id, event_id))
        removed, held = await self._call("redismem_drop_events", keys, args)
        return int(removed), int(held)

    async def upsert_memory(self, ns: str, user: str, memory_id: str, record: str,
                            embedding: bytes, *, newer: bool = False, expected: str = "") -> int:
        """``redismem_upsert_memory``: 1 created, 0 replaced, -1 kept (the
        stored record's updated_at is later; ``newer``: the same or later).
        ``expected``: the stored updated_at it must find ('' = any, '0' =
        absent), else ConflictError."""
        keys = [K.memory(ns, user, memory_id), K.memories(ns, user), K.memory_dim(ns)]
        args: list[str | bytes | int] = [ns, user, memory_id, record, embedding,
                                         "newer" if newer else "", expected]
        return int(await self._call("redismem_upsert_memory", keys, args, key=memory_id))

    async def delete_memory(self, ns: str, user: str, memory_id: str) -> bool:
        """``redismem_delete_memory``: True when deleted."""
        keys = [K.memory(ns, user, memory_id), K.memories(ns, user)]
        return bool(await self._call("redismem_delete_memory", keys, [ns, user, memory_id]))

    async def create_session(self, ns: str, session_id: str, created_ms: int | None = None
                             ) -> bool:
        """``redismem_create_session``: True when the session is new."""
        args = [ns, session_id] if created_ms is None else [ns, session_id, str(created_ms)]
        return bool(await self._call("redismem_create_session", [K.sessions(ns)], args))

    async def raise_revisions(self, ns: str, scope: str, sid: str, kind: K.Kind,
                              revisions: Sequence[tuple[str, int]]) -> int:
        """``redismem_raise_revisions``: the number of names raised."""
        keys = [K.revisions(ns, kind, scope, sid), K.config(ns)]
        args: list[str | bytes | int] = [ns, scope, sid, kind]
        for name, revision in revisions:
            args.extend((name, str(revision)))
        return int(await self._call("redismem_raise_revisions", keys, args))

    # LangGraph checkpoints (lua/lib/85_checkpoints.lua): ``cns`` is the
    # checkpoint namespace, encoded (keys.encode_part); values are typed
    # bytes, b"<serde type>\n<bytes>"

    _CHECKPOINT_LIMIT = (limits.MAX_CHECKPOINT_BYTES, "max_checkpoint_bytes")

    async def checkpoint_put(self, ns: str, thread: str, cns: str, principal: str, token: str,
                             checkpoint_id: str, parent: str, run: str, checkpoint: bytes,
                             metadata: bytes, named: Sequence[str],
                             blobs: Sequence[tuple[str, bytes]]) -> int:
        """``redismem_checkpoint_put``: the feed sequence of its event.
        ``run``: the run id, encoded ("" = none); ``named``: the blob fields
        of every channel the checkpoint names."""
        keys = [K.checkpoint(ns, thread, cns, checkpoint_id), K.checkpoint_ids(ns, thread, cns),
                K.checkpoint_blobs(ns, thread, cns), K.checkpoint_namespaces(ns, thread),
                K.checkpoint_threads(ns), K.sequence(ns), K.feed_size(ns),
                K.principal(ns, principal), K.turn(ns, "session", thread)]
        if run:
            keys.append(K.checkpoint_run(ns, run))
        args: list[str | bytes | int] = [ns, thread, cns, principal, token, checkpoint_id, parent,
                                         run, checkpoint, metadata, "\n".join(named)]
        for field, value in blobs:
            args.extend((field, value))
        return int(await self._call("redismem_checkpoint_put", keys, args,
                                    limit=self._CHECKPOINT_LIMIT))

    async def checkpoint_get(self, ns: str, thread: str, cns: str, checkpoint_id: str
                             ) -> tuple[str, dict[bytes, bytes], list[bytes | None]] | None:
        """``redismem_checkpoint_get``: (id, the checkpoint's hash, the values
        of the blob fields it names) of ``checkpoint_id`` ("" = the newest),
        or None."""
        reply = await self._call("redismem_checkpoint_get",
                                 [K.checkpoint_ids(ns, thread, cns),
                                  K.checkpoint_blobs(ns, thread, cns)],
                                 [ns, thread, cns, checkpoint_id], read_only=True)
        if not reply:
            return None
        found, flat, values = reply
        return (found.decode(), dict(zip(flat[::2], flat[1::2], strict=True)), list(values))

    async def checkpoint_writes(self, ns: str, thread: str, cns: str, principal: str, token: str,
                                checkpoint_id: str, task: str, task_path: str,
                                writes: Sequence[tuple[int, str, bytes]]) -> int:
        """``redismem_checkpoint_writes``: how many writes were stored
        (``task``: encoded; ``writes``: (index, channel, typed value))."""
        keys = [K.checkpoint(ns, thread, cns, checkpoint_id), K.checkpoint_written(ns, thread, cns),
                K.checkpoint_namespaces(ns, thread), K.sequence(ns), K.feed_size(ns),
                K.principal(ns, principal), K.turn(ns, "session", thread)]
        args: list[str | bytes | int] = [ns, thread, cns, principal, token, checkpoint_id, task,
                                         task_path]
        for index, channel, value in writes:
            args.extend((str(index), channel, value))
        return int(await self._call("redismem_checkpoint_writes", keys, args,
                                    limit=self._CHECKPOINT_LIMIT))

    async def checkpoint_drop(self, ns: str, thread: str, cns: str, principal: str, token: str,
                              checkpoint_ids: Sequence[str],
                              keep_blobs: Sequence[str] | None = None) -> int:
        """``redismem_checkpoint_drop``: how many checkpoints were deleted.
        ``keep_blobs``: when given, every other blob of the namespace goes."""
        keys = [K.checkpoint_ids(ns, thread, cns), K.checkpoint_written(ns, thread, cns),
                K.checkpoint_blobs(ns, thread, cns),
                K.checkpoint_namespaces(ns, thread), K.checkpoint_threads(ns), K.sequence(ns),
                K.feed_size(ns), K.principal(ns, principal), K.turn(ns, "session", thread),
                *(K.checkpoint(ns, thread, cns, i) for i in checkpoint_ids)]
        kept = list(keep_blobs) if keep_blobs is not None else []
        args = [ns, thread, cns, principal, token,
                str(len(kept)) if keep_blobs is not None else "-1", *kept, *checkpoint_ids]
        return int(await self._call("redismem_checkpoint_drop", keys, args,
                                    limit=self._CHECKPOINT_LIMIT))

    @staticmethod
    def _turn_keys(ns: str, scope: str, sid: str, principal: str, holder: str) -> list[str]:
        """The keys turn_acquire and turn_release pass, in their order."""
        return [K.turn(ns, scope, sid), K.turn_queue(ns, scope, sid), K.sequence(ns),
                K.feed_size(ns), K.principal(ns, principal), K.turn_wake(ns, scope, sid, holder)]

    async def turn_acquire(self, ns: str, scope: str, sid: str, principal: str, holder: str,
                           ttl_ms: int, lease_ms: int, renewing: bool = False
                           ) -> tuple[bool, int | str, int, int]:
        """``redismem_turn_acquire``: (True, token, expiry ms, 0) when granted,
        else (False, current holder or "", its expiry or the first waiter's
        lease end in ms or 0, place in the queue or 0). ``lease_ms`` 0: do
        not queue; ``renewing``: a queued waiter keeps its place (or gets
        TurnWaitLostError when it lost it)."""
        reply = await self._call("redismem_turn_acquire",
                                 [*self._turn_keys(ns, scope, sid, principal, holder),
                                  K.turns(ns)],
                                 [ns, scope, sid, principal, holder, str(ttl_ms), str(lease_ms),
                                  "1" if renewing else "0"])
        if int(reply[0]) == 1:
            return True, int(reply[1]), int(reply[2]), 0
        return False, reply[1].decode(), int(reply[2]), int(reply[3])

    async def turn_release(self, ns: str, scope: str, sid: str, principal: str, holder: str,
                           token: int | None) -> bool:
        """``redismem_turn_release``: whether the holder's turn ``token`` was
        released (None: a waiter gives up: it leaves the queue, and gives
        back a turn whose grant it never read)."""
        reply = await self._call("redismem_turn_release",
                                 self._turn_keys(ns, scope, sid, principal, holder),
                                 [ns, scope, sid, principal, holder,
                                  "" if token is None else str(token)])
        return bool(reply)

    async def turn_evict(self, ns: str, scope: str, sid: str, principal: str,
                         waiter: str) -> bool:
        """``redismem_turn_evict`` (an admin's): whether ``waiter`` was queued
        and is evicted."""
        return bool(await self._call(
            "redismem_turn_evict",
            [*self._turn_keys(ns, scope, sid, principal, waiter), K.config(ns)],
            [ns, scope, sid, principal, waiter]))

    async def turn_renew(self, ns: str, scope: str, sid: str, principal: str, holder: str,
                         token: int, ttl_ms: int) -> int:
        """``redismem_turn_renew``: the turn's new expiry (epoch ms)."""
        return int(await self._call("redismem_turn_renew",
                                    [K.turn(ns, scope, sid), K.principal(ns, principal)],
                                    [ns, scope, sid, principal, holder, str(token),
                                     str(ttl_ms)]))

    async def set_config(self, ns: str, settings: Sequence[tuple[str, int | str]]) -> None:
        """``redismem_set_config``: every setting or none."""
        args: list[str | bytes | int] = [ns]
        for name, value in settings:
            args.extend((name, str(value)))
        await self._call("redismem_set_config", [K.config(ns)], args)

    async def get_config(self, ns: str) -> dict[str, int | str]:
        """``redismem_get_config``: integer settings as int, word settings as str."""
        reply = await self._call("redismem_get_config", [K.config(ns)], [ns], read_only=True)
        return {name.decode(): value if isinstance(value, int) else value.decode()
                for name, value in zip(reply[::2], reply[1::2], strict=True)}
