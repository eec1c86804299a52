"""Export a namespace as JSON Lines (:mod:`.restore` imports it back).

An export is one JSON object per line, each with a ``type``:

``header``
    first line: ``format`` ("redismem-export"), ``version`` (2; an import
    reads 1 too), ``namespace``, ``exported_at`` (ms), ``library_version``.
    A whole-server export (``export --all-namespaces``) is one section per
    namespace, each from its own header, every header with
    ``all_namespaces`` true.
``settings``
    the namespace settings set explicitly (defaults are not written).
``session``
    a created session: ``id``, ``created_at`` (ms).
``value`` / ``vector``
    ``scope``, ``scope_id``, ``key``, ``revision``, ``ts`` (ms), ``by``,
    ``expires_at`` (epoch ms or null), and ``value`` (any JSON), or
    ``embedding`` (numbers) and ``metadata`` (an object).
``revisions``
    ``kind``, ``scope``, ``scope_id`` and ``revisions``: name -> last revision
    issued, for names deleted or expired since; restoring them keeps a stale
    expected revision from ever matching a re-created key.
``event``
    ``event``: a thread event (the MemoryEvent fields), in append order.
``memory``
    ``memory``: a long-term memory (the LongTermMemory fields) and
    ``embedding`` (numbers or null).
``checkpoint`` / ``checkpoint_writes``
    a LangGraph checkpoint with the channel values it brings, and the
    pending writes of one task against one (:mod:`.transfer_checkpoints`).
``raw``
    an entry the library did not write (a raw command's), byte for byte:
    only with ``keep_raw`` (``export --raw``); without it such an entry
    stops the export, naming it. See :mod:`.raw`.

State and checkpoints of the MemoryStore protocol, and a LangGraph store's
items, are values of a scope. The change feed is history, not state: it is
not exported, and an import appends a "set" event for every value or vector
it writes. Turns (holders, waiters, tokens) belong to the live fleet and
are not exported either (``keys.NOT_STATE``). Every other key of the
namespace is of a family the export carries (``keys.CARRIED``); one that
is not is counted in ``ExportSummary.left_out``, and ``redismem export``
then fails unless ``--allow-partial``.

An import checks the whole file first (nothing is written when any line is
bad), then writes through the Lua functions. It is idempotent: a value or
vector is written only when the target's revision (or last delete) is
older, a memory only when the target's ``updated_at`` is older, an event only
when its id is not yet in its thread. An import never deletes.

An export reads while writers go on: each record is consistent in itself, the
file is not a snapshot of one instant.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, cast

from . import _json, limits, raw
from . import _validate as check
from . import keys as K
from . import transfer_checkpoints as CP
from . import vectors as V
from .errors import CorruptEntryError, InvalidArgumentError
from .feed import stream_entries
from .functions import refusals
from .memory import Memory
from .records import memory_from_json
from .stats import scan_if_permitted

FORMAT = "redismem-export"
VERSION = 2
READS = (1, 2)
"""The format versions an import reads."""
KINDS: tuple[K.Kind, ...] = ("value", "vector")
RECORD_TYPES = ("header", "settings", "session", "value", "vector", "revisions", "event",
                "memory", *CP.RECORD_TYPES, "raw")
_PAGE = 500
Progress = Callable[[int], None]


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      allow_nan=False)


def _floats(blob: bytes) -> list[float]:
    """The float32 values of an embedding blob.

    Raises:
        ValueError: not a whole number of float32 values, or NaN or infinity
            among them (written raw: JSON has no such numbers).
    """
    import numpy as np  # on first use: the command line starts faster
    problem = V.embedding_problem(blob)
    if problem:
        raise ValueError(f"the embedding {problem}")
    return cast(list[float], np.frombuffer(blob, dtype="<f4").astype(float).tolist())


def _redis(mem: Memory) -> Any:
    """The client, untyped: redis-py's reply types are unions a bytes reply
    (decode_responses off) never takes."""
    return mem.client


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


# export


@dataclass
class Survey:
    """What an export will walk: scopes per kind, threads, memory users, and
    the number of records it expects to write (for a progress bar)."""

    scopes: dict[str, list[tuple[str, str]]]
    threads: list[str]
    users: list[str]
    total: int
    bad_scopes: list[bytes] = field(default_factory=list)
    """Members of the scopes registry that name no scope (raw writes)."""
    bad_threads: list[bytes] = field(default_factory=list)
    """Members of the threads registry that are no thread id (raw writes)."""
    bad_users: list[bytes] = field(default_factory=list)
    """Members of the memory users registry that are no UTF-8 (raw writes)."""
    checkpoint_threads: list[str] = field(default_factory=list)
    """Threads with LangGraph checkpoints or pending writes."""


async def survey(mem: Memory) -> Survey:
    """Find what there is to export in ``mem``'s namespace."""
    client, ns = _redis(mem), mem.namespace
    registered, bad = [], []
    for member in await client.zrange(K.scopes(ns), 0, -1):
        try:
            tag, scope, sid = K.scope_entry(member.decode())
            if scope not in check.SCOPES:
                raise ValueError(f"no scope {scope!r}")
            registered.append((tag, scope, check.check_id("scope id", sid)))
        except ValueError:  # not UTF-8, not tag:scope:id, or a bad id: `redismem audit` says
            bad.append(member)
    scopes: dict[str, list[tuple[str, str]]] = {}
    total = 3  # header, settings, sessions (a rough count is enough for progress)
    for kind in KINDS:
        found = {(scope, sid) for tag, scope, sid in registered if tag == K.kind_tag(kind)}
        keys = (await scan_if_permitted(client, K.names_pattern(ns, kind))
                + await scan_if_permitted(client, K.revisions_pattern(ns, kind)))
        scopes[kind] = sorted(found | {K.scope_of(ns, key) for key in keys})
        for scope, sid in scopes[kind]:
            total += int(await client.zcard(K.names(ns, kind, scope, sid)))
    threads, bad_threads = [], []
    for member in await client.zrange(K.threads(ns), 0, -1):
        try:
            threads.append(check.check_id("thread id", member.decode()))
        except ValueError:  # a raw ZADD: `redismem audit` says
            bad_threads.append(member)
    for thread in threads:
        total += int(await client.xlen(K.thread_events(ns, thread)))
    listed_users, bad_users = set(), []
    for member in await client.zrange(K.memory_users(ns), 0, -1):
        try:
            listed_users.add(member.decode())
        except UnicodeDecodeError:  # a raw ZADD: `redismem audit` says
            bad_users.append(member)
    users = sorted(listed_users | {K.user_of(ns, key) for key in
                                   await scan_if_permitted(client, K.memories_pattern(ns))})
    for user in users:
        total += int(await client.zcard(K.memories(ns, user)))
    checkpoint_threads = await CP.threads(mem)
    total += len(checkpoint_threads)
    return Survey(scopes, threads, users, total, bad, bad_threads, bad_users, checkpoint_threads)


async def _names(mem: Memory, zset: str, bad: list[bytes] | None = None
                 ) -> AsyncIterator[list[str]]:
    """Pages of a names zset, in order, stable while names are added. A
    name that is not UTF-8 (a raw ZADD) is left out, and added to ``bad``."""
    start: bytes = b"-"
    while True:
        raw = await _redis(mem).zrange(zset, start, b"+", bylex=True, offset=0, num=_PAGE)
        if not raw:
            return
        page = []
        for name in raw:
            try:
                page.append(name.decode())
            except UnicodeDecodeError:
                if bad is not None:
                    bad.append(name)
        if page:
            yield page
        start = b"(" + raw[-1]


@dataclass(frozen=True)
class Damaged:
    """An entry the library did not write, met by an export: its key, why,
    and where its bytes are (:mod:`.raw`)."""

    key: bytes
    problem: str
    parts: tuple[raw.Part, ...]


Found = dict[str, Any] | Damaged


def _damaged_entry(listing: str, key: bytes, name: bytes, problem: str) -> Damaged:
    """An entry hash and its name in its listing."""
    return Damaged(key, problem, (raw.Part("hash", key),
                                  raw.Part("zset", listing.encode(), (name,))))


async def _entries(mem: Memory, kind: K.Kind, scope: str, sid: str,
                   live: dict[str, int]) -> AsyncIterator[Found]:
    """The live entries of one scope as records; fills ``live`` name -> revision."""
    ns = mem.namespace
    build = K.value if kind == "value" else K.vector
    fields = ("v",) if kind == "value" else ("emb", "meta")
    listing = K.names(ns, kind, scope, sid)
    bad: list[bytes] = []
    async for page in _names(mem, listing, bad):
        pipe = _redis(mem).pipeline(transaction=False)
        for name in page:
            key = build(ns, scope, sid, name)
            pipe.hmget(key, *fields, "rev", "ts", "by")
            pipe.pexpiretime(key)
        replies = await pipe.execute()
        for name, got, expires in zip(page, replies[::2], replies[1::2], strict=True):
            if all(part is None for part in got):
                continue  # expired or deleted since it was listed
            *content, rev, ts, by = got
            try:
                if not 1 <= int(rev) <= limits.MAX_REVISION:
                    raise ValueError(f"revision {rev!r}")
                record: dict[str, Any] = {
                    "type": kind, "scope": scope, "scope_id": sid, "key": check.check_key(name),
                    "revision": int(rev), "ts": int(ts), "by": check.check_id("by", by.decode()),
                    "expires_at": int(expires) if int(expires) > 0 else None}
                if kind == "value":
                    record["value"] = _json.loads(content[0])
                else:
                    record["embedding"] = _floats(content[0])
                    record["metadata"] = _json.loads(content[1])
            except (TypeError, ValueError, AttributeError) as exc:
                yield _damaged_entry(listing, build(ns, scope, sid, name).encode(),
                                     name.encode(), f"not a {kind} the library writes ({exc})")
                continue
            live[name] = int(rev)
            yield record
    for raw_name in bad:
        yield _damaged_entry(listing, build(ns, scope, sid, "").encode() + raw_name,
                             raw_name, f"its name {raw_name!r} is not UTF-8")


async def _tombstones(mem: Memory, kind: K.Kind, scope: str, sid: str,
                      live: dict[str, int]) -> AsyncIterator[Found]:
    """``revisions`` records of names whose last revision issued is past the live one."""
    ns = mem.namespace
    pending: dict[str, int] = {}
    key = K.revisions(ns, kind, scope, sid)
    async for name, issued in _redis(mem).hscan_iter(key, count=1000):
        try:
            text, count = name.decode(), int(issued)
            if not 1 <= count <= limits.MAX_REVISION:
                raise ValueError(count)
        except ValueError:  # not UTF-8, or no revision: a raw HSET
            problem = f"holds {issued[:40]!r} for {name[:80]!r}, not a revision"
            yield Damaged(key.encode(), problem, (raw.Part("hash", key.encode(), (name,)),))
            continue
        if count > live.get(text, 0):
            pending[text] = count
        if len(pending) >= limits.MAX_BATCH:
            yield {"type": "revisions", "kind": kind, "scope": scope, "scope_id": sid,
                   "revisions": pending}
            pending = {}
    if pending:
        yield {"type": "revisions", "kind": kind, "scope": scope, "scope_id": sid,
               "revisions": pending}


async def _thread_events(mem: Memory, thread: str) -> AsyncIterator[Found]:
    key = K.thread_events(mem.namespace, thread)
    async for entry_id, entry in stream_entries(_redis(mem), key):
        try:
            event = json.loads(entry[b"e"])
            if not isinstance(event, dict):
                raise ValueError("not an object")
        except (KeyError, ValueError) as exc:
            problem = f"event {entry_id.decode()} is not one the library writes ({exc!r})"
            yield Damaged(key.encode(), problem, (
                raw.Part("stream", key.encode(), entries=((entry_id, entry),)),))
            continue
        yield {"type": "event", "event": event}


async def memory_fields(mem: Memory, user: str
                        ) -> AsyncIterator[tuple[str, bytes, bytes | None]]:
    """(memory id, record, embedding) of each stored long-term memory of ``user``."""
    ns = mem.namespace
    ids = [i.decode(errors="replace")
           for i in await _redis(mem).zrange(K.memories(ns, user), 0, -1)]
    for first in range(0, len(ids), _PAGE):
        pipe = _redis(mem).pipeline(transaction=False)
        for memory_id in ids[first:first + _PAGE]:
            pipe.hmget(K.memory(ns, user, memory_id), "rec", "emb")
        for memory_id, (rec, emb) in zip(ids[first:first + _PAGE], await pipe.execute(),
                                         strict=True):
            if rec is not None:
                yield memory_id, rec, emb


async def _memories(mem: Memory, user: str) -> AsyncIterator[Found]:
    async for memory_id, rec, emb in memory_fields(mem, user):
        problem = memory_problem(rec, emb)
        if problem is None:
            yield {"type": "memory", "memory": json.loads(rec),
                   "embedding": _floats(emb) if emb else None}
        else:
            key = K.memory(mem.namespace, user, memory_id)
            yield _damaged_entry(K.memories(mem.namespace, user), key.encode(),
                                 memory_id.encode(), problem)


def session_id(member: bytes) -> str | None:
    """A sessions registry member as a session id, or None when it is none."""
    try:
        return check.check_id("session id", member.decode())
    except (UnicodeDecodeError, InvalidArgumentError):
        return None


def _registry(key: str, members: list[bytes]) -> Iterator[Damaged]:
    """Members of a registry that name nothing (raw writes)."""
    for member in members:
        yield Damaged(key.encode(), f"lists {member[:80]!r}, which names nothing the library "
                      "writes", (raw.Part("zset", key.encode(), (member,)),))


def memory_problem(rec: bytes, emb: bytes | None) -> str | None:
    """Why a long-term memory's stored fields were not written by the library, or None."""
    if memory_from_json(rec) is None:
        return "its record is not a long-term memory as JSON"
    problem = None if emb is None else V.embedding_problem(emb)
    return None if problem is None else f"its embedding {problem}"


async def _found(mem: Memory, plan: Survey, header: dict[str, Any] | None = None
                 ) -> AsyncIterator[Found]:
    """Every record of ``mem``'s namespace, header first, and every entry
    the library did not write."""
    client, ns = _redis(mem), mem.namespace
    yield {"type": "header", "format": FORMAT, "version": VERSION, "namespace": ns,
           "exported_at": _now_ms(), "library_version": mem.capabilities.library_version,
           **(header or {})}
    explicit = {k.decode(errors="replace") for k in await client.hgetall(K.config(ns))}
    settings = await mem.settings()
    yield {"type": "settings", "settings": {k: settings[k] for k in sorted(explicit)
                                            if k in settings}}
    for sid, created in await client.zrange(K.sessions(ns), 0, -1, withscores=True):
        session = session_id(sid)
        if session is None or not math.isfinite(created):  # a raw ZADD
            yield Damaged(K.sessions(ns).encode(), f"lists {sid[:80]!r} (created at {created}), "
                          "which is no session the library registers",
                          (raw.Part("zset", K.sessions(ns).encode(), (sid,)),))
            continue
        yield {"type": "session", "id": session, "created_at": int(created)}
    for damaged in _registry(K.scopes(ns), plan.bad_scopes):
        yield damaged
    for kind in KINDS:
        for scope, sid in plan.scopes[kind]:
            live: dict[str, int] = {}
            async for record in _entries(mem, kind, scope, sid, live):
                yield record
            async for record in _tombstones(mem, kind, scope, sid, live):
                yield record
    for damaged in _registry(K.threads(ns), plan.bad_threads):
        yield damaged
    for thread in plan.threads:
        async for record in _thread_events(mem, thread):
            yield record
    for damaged in _registry(K.memory_users(ns), plan.bad_users):
        yield damaged
    for user in plan.users:
        async for record in _memories(mem, user):
            yield record
    for thread in plan.checkpoint_threads:
        async for record in CP.thread_records(mem, thread):
            yield record


async def export_records(mem: Memory, plan: Survey, *, keep_raw: bool = False,
                         header: dict[str, Any] | None = None
                         ) -> AsyncIterator[dict[str, Any]]:
    """Every record of ``mem``'s namespace, header first. An entry the
    library did not write stops the export, or with ``keep_raw`` becomes
    ``raw`` records (:mod:`.raw`).

    Raises:
        CorruptEntryError: such an entry, without ``keep_raw`` (it names the key).
    """
    async for found in _found(mem, plan, header):
        if not isinstance(found, Damaged):
            yield found
            continue
        shown = found.key.decode("utf-8", "backslashreplace")
        if not keep_raw:
            raise CorruptEntryError(
                f"export stopped at {shown}: {found.problem}. An export leaves nothing out: "
                "repair or delete that entry (redismem audit lists every one), or export "
                "with --raw to carry it byte for byte", key=shown)
        for record in await raw.records(_redis(mem), mem.namespace, found.parts,
                                        found.problem):
            yield record


def items(record: dict[str, Any]) -> int:
    """What a record counts for in an export's and an import's summary:
    the settings or the names of a settings or revisions record, the
    writes of a checkpoint_writes record, else one (the header none)."""
    kind = record["type"]
    if kind == "header":
        return 0
    if kind == "checkpoint_writes":
        return len(record["writes"])
    if kind in ("settings", "revisions"):
        return len(record[kind])
    return 1


@dataclass
class ExportSummary:
    """What an export wrote: ``records`` lines in all, and per record type
    the items (:func:`items`), counted as an import of the file counts them."""

    namespace: str
    exported: dict[str, int] = field(default_factory=dict)
    records: int = 0
    left_out: dict[str, int] = field(default_factory=dict)
    """Keys of the namespace of no family the export carries (a raw
    write, or a family newer than this package), by family: empty when
    the file holds everything (or this credential may not SCAN, which
    only an operator may)."""


async def left_out(mem: Memory) -> dict[str, int]:
    """The keys of ``mem``'s namespace an export does not carry, counted by
    family (``keys.CARRIED`` and ``keys.NOT_STATE`` name the others)."""
    found: dict[str, int] = {}
    for key in await scan_if_permitted(_redis(mem), K.pattern(mem.namespace)):
        family = K.family(mem.namespace, key)
        if family not in K.CARRIED and family not in K.NOT_STATE:
            found[family] = found.get(family, 0) + 1
    return found


async def export_namespace(mem: Memory, write: Callable[[str], Any],
                           progress: Progress | None = None, plan: Survey | None = None,
                           *, keep_raw: bool = False, all_namespaces: bool = False
                           ) -> ExportSummary:
    """Write every record of ``mem``'s namespace through ``write``, one line
    (with its newline) per call; ``progress`` gets the number of records done.
    ``all_namespaces``: the header says the section is one of a
    whole-server export.

    Raises:
        CorruptEntryError: an entry the library did not write (without
            ``keep_raw``; a LangGraph checkpoint even with it), or a raw
            command replaced one of the namespace's keys with another Redis
            type; the message names it.
    """
    with refusals():
        plan = plan or await survey(mem)
        summary = ExportSummary(mem.namespace)
        header = {"all_namespaces": True} if all_namespaces else None
        async for record in export_records(mem, plan, keep_raw=keep_raw, header=header):
            write(_line(record) + "\n")
            summary.records += 1
            if items(record):
                summary.exported[record["type"]] = (
                    summary.exported.get(record["type"], 0) + items(record))
            if progress:
                progress(1)
        summary.left_out = await left_out(mem)
    return summary
