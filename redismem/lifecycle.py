"""The end of data: delete a thread, forget a user, drop a namespace.

Each works in bounded calls (a batch of keys or events at a time), so none
holds the server past the stall budget however much there is to delete.

- :func:`delete_thread`: a thread's MemoryStore events and its LangGraph
  checkpoints, writes and blobs (what ``RedismemSaver.adelete_thread``
  deletes), each in its Lua functions; both announced in the feed.
- :func:`forget_user` (an admin's): every key named with the user (its
  long-term memories, its actor scope, and, for an operator, its records
  of retried calls, which otherwise expire within three minutes), the
  user's events in every thread, and its registry entries; then one feed
  event that names the user and carries no data. What still holds the user's
  data afterwards: feed events written before (until the feed is trimmed:
  ``redismem trim`` after lowering ``feed_retention_ms``), events the user
  wrote under another ``user_id``, and earlier exports.
- :func:`drop_namespace` (an admin's): every key of the namespace, found
  by SCAN where this credential may (an operator), else from its
  registries; and its search indexes.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from redis.exceptions import NoPermissionError, ResponseError

from . import _validate as check
from . import keys as K
from . import limits
from .errors import InvalidArgumentError, PermissionDeniedError
from .feed import stream_entries
from .functions import admin_only, refusals
from .memory import Memory
from .stats import scan_if_permitted

_BATCH = 500
KINDS: tuple[K.Kind, ...] = ("value", "vector")
_DROP_CHECKPOINTS = limits.MAX_EVENTS_PER_CALL


def _client(mem: Memory) -> Any:
    """The client, untyped: redis-py's reply types are unions a bytes reply
    (decode_responses off) never takes."""
    return mem.client


# threads


async def drop_checkpoint_ids(mem: Memory, thread: str, encoded: str, ids: Sequence[str],
                              token: str = "", keep_blobs: Sequence[str] | None = None) -> int:
    """Delete checkpoints ``ids`` (and their writes) of ``thread``'s
    checkpoint namespace ``encoded``, in calls of at most 500; with
    ``keep_blobs``, the last call also deletes every other blob of that
    namespace (it is made even for no ids). ``token``: the writer's turn
    token in the thread's session ("" = none). The number deleted."""
    deleted = 0
    for first in range(0, max(len(ids), 1), _DROP_CHECKPOINTS):
        last = first + _DROP_CHECKPOINTS >= len(ids)
        deleted += await mem._conn.functions.checkpoint_drop(
            mem.namespace, thread, encoded, mem.principal, token,
            ids[first:first + _DROP_CHECKPOINTS], keep_blobs if last else None)
    return deleted


async def drop_checkpoints(mem: Memory, thread: str, token: str = "") -> int:
    """Delete every LangGraph checkpoint, write and blob of ``thread`` (a
    concurrent put may land between two calls: it is deleted too); the
    number of checkpoints deleted."""
    client, ns = _client(mem), mem.namespace
    deleted = 0
    for encoded in [n.decode() for n in await client.zrange(
            K.checkpoint_namespaces(ns, thread), 0, -1)]:
        while ids := sorted({i.decode() for i in [
                *await client.zrange(K.checkpoint_ids(ns, thread, encoded), 0, -1),
                *await client.zrange(K.checkpoint_written(ns, thread, encoded), 0, -1)]}):
            deleted += await drop_checkpoint_ids(mem, thread, encoded, ids, token, [])
    return deleted


@dataclass
class ThreadDeleted:
    """What :func:`delete_thread` removed."""

    thread_id: str
    events: int
    checkpoints: int


async def delete_thread(mem: Memory, thread: str) -> ThreadDeleted:
    """Delete a thread's MemoryStore events and its LangGraph checkpoints
    (each announced in the feed; the thread's state, values of its session
    scope, stays)."""
    thread = check.check_id("thread id", thread)
    ns = mem.namespace
    with refusals(K.thread_events(ns, thread)):
        events = int(await _client(mem).xlen(K.thread_events(ns, thread)))
        await mem._conn.functions.replace_events(ns, thread, mem.principal, [])
    with refusals(K.checkpoint_threads(ns)):
        checkpoints = await drop_checkpoints(mem, thread)
    return ThreadDeleted(thread, events, checkpoints)


# forget a user


@dataclass
class UserForgotten:
    """What :func:`forget_user` removed."""

    user_id: str
    memories: int = 0
    actor_keys: int = 0
    thread_events: int = 0
    keys_deleted: int = 0
    feed_sequence: int = 0
    request_records_left: bool = False
    """The user's records of retried calls (``who:<user>:*``) were left:
    only an operator (or the user) may delete them, and they expire within
    three minutes of the user's last write."""


async def _user_thread_events(mem: Memory, user: str) -> dict[str, list[tuple[str, str]]]:
    """Per thread, (stream id, event id) of the user's events."""
    client, ns = _client(mem), mem.namespace
    threads = {t.decode(errors="replace") for t in await client.zrange(K.threads(ns), 0, -1)}
    prefix = K.base(ns) + "thr:"
    threads |= {key[len(prefix):-len(":ev")] for key in
                await scan_if_permitted(client, f"{K.glob_escape(prefix)}*:ev")}
    found: dict[str, list[tuple[str, str]]] = {}
    for thread in sorted(threads):
        async for entry_id, fields in stream_entries(client, K.thread_events(ns, thread)):
            try:
                event = json.loads(fields[b"e"])
            except (KeyError, ValueError):
                continue  # not the library's: `redismem audit` names it
            if isinstance(event, dict) and event.get("user_id") == user:
                found.setdefault(thread, []).append((entry_id.decode(), str(event.get("id", ""))))
    return found


async def _user_keys(mem: Memory, user: str) -> tuple[list[str], list[str], int, int]:
    """Every key named with ``user``: its memories and actor scope, then
    its request records; the number of its memories and of its actor
    scope's entries."""
    client, ns = _client(mem), mem.namespace
    memories = [K.memory(ns, user, i.decode(errors="replace"))
                for i in await client.zrange(K.memories(ns, user), 0, -1)]
    entries = []
    for kind in KINDS:
        entries += [K.entry(ns, kind, "actor", user, n.decode(errors="replace"))
                    for n in await client.zrange(K.names(ns, kind, "actor", user), 0, -1)]
    own = [K.memories(ns, user), K.vector_dims(ns, "actor", user)]
    for kind in KINDS:
        own += [K.names(ns, kind, "actor", user), K.expiry(ns, kind, "actor", user),
                K.revisions(ns, kind, "actor", user)]
    scanned: list[str] = []
    for pattern in (f"{K.glob_escape(K.memory_prefix(ns) + user)}:*",
                    f"{K.glob_escape(K.value(ns, 'actor', user, ''))}*",
                    f"{K.glob_escape(K.vector(ns, 'actor', user, ''))}*"):
        scanned += await scan_if_permitted(client, pattern)
    bucket = time.time_ns() // 1_000_000 // K.REQUEST_BUCKET_MS
    who = [f"{K.base(ns)}who:{user}:{b}" for b in range(bucket - 5, bucket + 2)]
    who += await scan_if_permitted(client, K.principal_pattern(ns, user))
    keys = list(dict.fromkeys([*memories, *entries, *own, *scanned]))
    return keys, list(dict.fromkeys(who)), len(memories), len(entries)


async def forget_user(mem: Memory, user: str) -> UserForgotten:
    """Delete everything of ``user`` in ``mem``'s namespace (see the module
    doc): an admin's.

    Raises:
        InvalidIdError: not a user id.
        InvalidArgumentError: '_', which stands for the shared memories.
        PermissionDeniedError: this credential is no admin of the namespace.
    """
    user = check.check_id("user id", user)
    if user == K.SHARED_USER:
        raise InvalidArgumentError("'_' stands for the shared memories, not a user")
    ns = mem.namespace
    done = UserForgotten(user)
    with admin_only("forgetting a user", ns):
        # the admin's function first, with nothing to delete: another
        # credential is refused before anything is deleted
        await _forget_batch(mem, user, [], last=False)
        for thread, events in (await _user_thread_events(mem, user)).items():
            held = 1
            for first in range(0, len(events), limits.MAX_BATCH):
                removed, held = await mem._conn.functions.drop_events(
                    ns, thread, mem.principal, events[first:first + limits.MAX_BATCH])
                done.thread_events += removed
            if held == 0:  # the user's alone: the thread goes too
                await mem._conn.functions.replace_events(ns, thread, mem.principal, [])
        keys, who, done.memories, done.actor_keys = await _user_keys(mem, user)
        try:  # another principal's request records: an operator's to delete
            done.keys_deleted += await _forget_batch(mem, user, who, last=False)
        except PermissionDeniedError:
            done.request_records_left = True  # they expire within minutes
        batches = [keys[i:i + _BATCH] for i in range(0, len(keys), _BATCH)] or [[]]
        for i, batch in enumerate(batches):
            done.keys_deleted += await _forget_batch(mem, user, batch,
                                                     last=i == len(batches) - 1)
    done.feed_sequence = int(await _client(mem).get(K.sequence(ns)) or 0)
    return done


async def _forget_batch(mem: Memory, user: str, keys: list[str], *, last: bool) -> int:
    ns = mem.namespace
    declared = [K.sequence(ns), K.feed_size(ns), K.principal(ns, mem.principal), K.config(ns),
                K.memory_users(ns), K.scopes(ns), *keys]
    with refusals(K.config(ns)):
        return int(await mem._conn.functions._call(
            "redismem_forget_user", declared, [ns, mem.principal, user, "1" if last else "0"]))


# drop a namespace


async def holds_anything(mem: Memory) -> bool:
    """Whether ``mem``'s namespace has any key: by SCAN where this
    credential may, else by its registries and counters."""
    client, ns = _client(mem), mem.namespace
    try:
        async for _ in client.scan_iter(match=K.pattern(ns), count=1000):
            return True
        return False
    except NoPermissionError:
        singletons = [K.sequence(ns), K.config(ns), K.scopes(ns), K.threads(ns),
                      K.memory_users(ns), K.sessions(ns), K.checkpoint_threads(ns), K.turns(ns),
                      K.feed(ns)]
        return bool(await client.exists(*singletons))


@dataclass
class NamespaceDropped:
    """What :func:`drop_namespace` removed (or, ``dry_run``, would remove)."""

    namespace: str
    keys: int = 0
    families: dict[str, int] = field(default_factory=dict)
    indexes: list[str] = field(default_factory=list)
    found_by: str = "scan"
    """``scan`` (every key) or ``registries`` (a credential that may not
    SCAN: keys no registry lists, such as raw writes, may remain)."""
    dry_run: bool = False


async def _registered_keys(mem: Memory) -> list[str]:
    """The keys of ``mem``'s namespace its registries lead to."""
    client, ns = _client(mem), mem.namespace
    keys = [K.feed(ns), K.feed_rebuild(ns), K.sequence(ns), K.feed_size(ns), K.config(ns),
            K.scopes(ns), K.memory_users(ns), K.sessions(ns), K.threads(ns), K.turns(ns),
            K.memory_dim(ns), K.checkpoint_threads(ns)]
    for member in await client.zrange(K.scopes(ns), 0, -1):
        try:
            tag, scope, sid = K.scope_entry(member.decode())
        except ValueError:
            continue
        kind: K.Kind = "value" if tag == "val" else "vector"
        keys += [K.names(ns, kind, scope, sid), K.expiry(ns, kind, scope, sid),
                 K.revisions(ns, kind, scope, sid), K.vector_dims(ns, scope, sid),
                 K.turn(ns, scope, sid), K.turn_queue(ns, scope, sid)]
        keys += [K.entry(ns, kind, scope, sid, n.decode(errors="replace"))
                 for n in await client.zrange(K.names(ns, kind, scope, sid), 0, -1)]
        keys += [K.turn_wake(ns, scope, sid, w.decode(errors="replace"))
                 for w in await client.zrange(K.turn_queue(ns, scope, sid), 0, -1)]
    for member in await client.zrange(K.turns(ns), 0, -1):
        scope, _, sid = member.decode(errors="replace").partition(":")
        keys += [K.turn(ns, scope, sid), K.turn_queue(ns, scope, sid)]
    for thread in [t.decode(errors="replace") for t in await client.zrange(K.threads(ns), 0, -1)]:
        keys += [K.thread_events(ns, thread), K.thread_times(ns, thread),
                 K.thread_ids(ns, thread)]
    for user in [u.decode(errors="replace") for u in
                 await client.zrange(K.memory_users(ns), 0, -1)]:
        keys.append(K.memories(ns, user))
        keys += [K.memory(ns, user, i.decode(errors="replace"))
                 for i in await client.zrange(K.memories(ns, user), 0, -1)]
    for thread in [t.decode(errors="replace") for t in
                   await client.zrange(K.checkpoint_threads(ns), 0, -1)]:
        keys.append(K.checkpoint_namespaces(ns, thread))
        for cns in [n.decode() for n in await client.zrange(
                K.checkpoint_namespaces(ns, thread), 0, -1)]:
            keys += [K.checkpoint_ids(ns, thread, cns), K.checkpoint_written(ns, thread, cns),
                     K.checkpoint_blobs(ns, thread, cns)]
            ids = {i.decode() for i in [
                *await client.zrange(K.checkpoint_ids(ns, thread, cns), 0, -1),
                *await client.zrange(K.checkpoint_written(ns, thread, cns), 0, -1)]}
            for checkpoint_id in sorted(ids):
                key = K.checkpoint(ns, thread, cns, checkpoint_id)
                keys.append(key)
                run = await client.hget(key, "run")
                if run:
                    keys.append(K.checkpoint_run(ns, run.decode(errors="replace")))
    return list(dict.fromkeys(keys))


async def _indexes(mem: Memory) -> list[str]:
    """The names of the search indexes ``mem``'s namespace may have."""
    client, ns = _client(mem), mem.namespace
    names = [K.memory_text_index(ns)]
    dim = await client.get(K.memory_dim(ns))
    if dim and dim.isdigit():
        names.append(K.memory_vector_index(ns, int(dim)))
    dims: set[int] = set()
    for key in await scan_if_permitted(client, f"{K.glob_escape(K.base(ns))}vdims:*"):
        dims |= {int(d) for d in await client.hkeys(key) if d.isdigit()}
    for member in await client.zrange(K.scopes(ns), 0, -1):
        try:
            tag, scope, sid = K.scope_entry(member.decode())
        except ValueError:
            continue
        if tag == "vec":
            dims |= {int(d) for d in await client.hkeys(K.vector_dims(ns, scope, sid))
                     if d.isdigit()}
    return names + [K.vector_index(ns, d) for d in sorted(dims)]


async def drop_namespace(mem: Memory, *, dry_run: bool = False) -> NamespaceDropped:
    """Delete every key and search index of ``mem``'s namespace (with
    ``dry_run``, only count them): an admin's. Writers still at work in
    the namespace write into it again: stop them first.

    Raises:
        PermissionDeniedError: this credential is no admin of the namespace.
    """
    with admin_only("dropping a namespace", mem.namespace):
        return await _drop(mem, dry_run)


async def _drop(mem: Memory, dry_run: bool) -> NamespaceDropped:
    client, ns = _client(mem), mem.namespace
    done = NamespaceDropped(ns, dry_run=dry_run)
    try:
        keys = sorted({key async for key in client.scan_iter(match=K.pattern(ns), count=1000)})
    except NoPermissionError:
        done.found_by = "registries"
        registered = await _registered_keys(mem)
        pipe = client.pipeline(transaction=False)
        for key in registered:
            pipe.exists(key)
        keys = [k.encode() for k, there in zip(registered, await pipe.execute() if registered
                                              else [], strict=True) if there]
    for key in keys:
        family = K.family(ns, key.decode("utf-8", "replace"))
        done.families[family] = done.families.get(family, 0) + 1
    done.keys = len(keys)
    indexes = await _indexes(mem)
    if dry_run:
        done.indexes = indexes
        return done
    # the settings first: only an admin may delete them, so another
    # credential is refused before anything is deleted
    await client.delete(K.config(ns))
    for name in indexes:
        try:
            await client.execute_command("FT.DROPINDEX", name)
            done.indexes.append(name)
        except NoPermissionError:
            raise
        except ResponseError as exc:
            if "unknown" not in str(exc).lower() and "no such" not in str(exc).lower():
                raise
    for first in range(0, len(keys), _BATCH):
        await client.delete(*keys[first:first + _BATCH])
    return done
