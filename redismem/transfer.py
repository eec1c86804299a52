"""Export a namespace as JSON Lines and import it back.

An export is one JSON object per line, each with a ``type``:

``header``
    first line: ``format`` ("redismem-export"), ``version`` (1), ``namespace``,
    ``exported_at`` (ms), ``library_version``.
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

State and checkpoints are values of the thread's session scope. The change
feed is history, not state: it is not exported, and an import appends a
"set" event for every value or vector it writes.

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
import time
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
from redis.exceptions import NoPermissionError

from . import _json, limits
from . import _validate as check
from . import keys as K
from . import vectors as V
from .errors import InvalidExportError, RedisMemError
from .feed import LAST_STREAM_ID
from .functions import refusals, request_bytes
from .memory import Memory
from .stats import scan_keys
from .store import (
    RedisMemoryStore,
    event_json,
    long_term_memory,
    memory_event,
    memory_from_json,
    memory_json,
)
from .types import LongTermMemory

FORMAT = "redismem-export"
VERSION = 1
KINDS: tuple[K.Kind, ...] = ("value", "vector")
RECORD_TYPES = ("header", "settings", "session", "value", "vector", "revisions", "event",
                "memory")
_PAGE = 500
_CALL_OVERHEAD = 4096
"""Room in a write call for its scope keys and arguments (rows count their own)."""
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


async def _scan_if_permitted(client: Any, pattern: str) -> list[str]:
    """SCAN for ``pattern``; nothing when this credential may not SCAN (every
    role but operator: SCAN would show other namespaces' key names). Then
    the namespace's registries alone say what there is (they hold every
    scope and user written since library version 18)."""
    try:
        return await scan_keys(client, pattern)
    except NoPermissionError:
        return []


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
        keys = (await _scan_if_permitted(client, K.names_pattern(ns, kind))
                + await _scan_if_permitted(client, K.revisions_pattern(ns, kind)))
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
                                   await _scan_if_permitted(client, K.memories_pattern(ns))})
    for user in users:
        total += int(await client.zcard(K.memories(ns, user)))
    return Survey(scopes, threads, users, total, bad, bad_threads, bad_users)


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


async def _entries(mem: Memory, kind: K.Kind, scope: str, sid: str,
                   live: dict[str, int]) -> AsyncIterator[dict[str, Any]]:
    """The live entries of one scope as records; fills ``live`` name -> revision."""
    ns = mem.namespace
    build = K.value if kind == "value" else K.vector
    fields = ("v",) if kind == "value" else ("emb", "meta")
    async for page in _names(mem, K.names(ns, kind, scope, sid)):
        pipe = _redis(mem).pipeline(transaction=False)
        for name in page:
            key = build(ns, scope, sid, name)
            pipe.hmget(key, *fields, "rev", "ts", "by")
            pipe.pexpiretime(key)
        replies = await pipe.execute()
        for name, got, expires in zip(page, replies[::2], replies[1::2], strict=True):
            if got[0] is None:
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
            except (TypeError, ValueError, AttributeError):
                continue  # not written by the library: `redismem audit` reports it
            live[name] = int(rev)
            yield record


async def _tombstones(mem: Memory, kind: K.Kind, scope: str, sid: str,
                      live: dict[str, int]) -> AsyncIterator[dict[str, Any]]:
    """``revisions`` records of names whose last revision issued is past the live one."""
    ns = mem.namespace
    pending: dict[str, int] = {}
    async for name, issued in _redis(mem).hscan_iter(K.revisions(ns, kind, scope, sid),
                                                     count=1000):
        try:
            text, count = name.decode(), int(issued)
        except ValueError:  # not UTF-8, or no number: a raw HSET, `redismem audit` reports it
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


async def _thread_events(mem: Memory, thread: str) -> AsyncIterator[dict[str, Any]]:
    start = "-"
    key = K.thread_events(mem.namespace, thread)
    while True:
        entries = await _redis(mem).xrange(key, start, "+", count=1000)
        if not entries:
            return
        for _, entry in entries:
            try:
                event = json.loads(entry[b"e"])
            except (KeyError, ValueError):
                continue  # not written by the library: `redismem audit` reports it
            yield {"type": "event", "event": event}
        if entries[-1][0].decode() == LAST_STREAM_ID:
            return  # a raw XADD took the last id there is: nothing can follow
        start = "(" + entries[-1][0].decode()


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


async def _memories(mem: Memory, user: str) -> AsyncIterator[dict[str, Any]]:
    async for _, rec, emb in memory_fields(mem, user):
        if memory_problem(rec, emb) is None:  # else `redismem audit` reports it
            yield {"type": "memory", "memory": json.loads(rec),
                   "embedding": _floats(emb) if emb else None}


def memory_problem(rec: bytes, emb: bytes | None) -> str | None:
    """Why a long-term memory's stored fields were not written by the library, or None."""
    if memory_from_json(rec) is None:
        return "its record is not a long-term memory as JSON"
    problem = None if emb is None else V.embedding_problem(emb)
    return None if problem is None else f"its embedding {problem}"


async def export_records(mem: Memory, plan: Survey) -> AsyncIterator[dict[str, Any]]:
    """Every record of ``mem``'s namespace, header first."""
    client, ns = _redis(mem), mem.namespace
    yield {"type": "header", "format": FORMAT, "version": VERSION, "namespace": ns,
           "exported_at": _now_ms(), "library_version": mem.capabilities.library_version}
    explicit = {k.decode(errors="replace") for k in await client.hgetall(K.config(ns))}
    settings = await mem.settings()
    yield {"type": "settings", "settings": {k: settings[k] for k in sorted(explicit)
                                            if k in settings}}
    for sid, created in await client.zrange(K.sessions(ns), 0, -1, withscores=True):
        yield {"type": "session", "id": sid.decode(), "created_at": int(created)}
    for kind in KINDS:
        for scope, sid in plan.scopes[kind]:
            live: dict[str, int] = {}
            async for record in _entries(mem, kind, scope, sid, live):
                yield record
            async for record in _tombstones(mem, kind, scope, sid, live):
                yield record
    for thread in plan.threads:
        async for record in _thread_events(mem, thread):
            yield record
    for user in plan.users:
        async for record in _memories(mem, user):
            yield record


@dataclass
class ExportSummary:
    namespace: str
    records: dict[str, int] = field(default_factory=dict)


async def export_namespace(mem: Memory, write: Callable[[str], Any],
                           progress: Progress | None = None, plan: Survey | None = None
                           ) -> ExportSummary:
    """Write every record of ``mem``'s namespace through ``write``, one line
    (with its newline) per call; ``progress`` gets the number of records done.

    Raises:
        CorruptEntryError: a raw command replaced one of the namespace's keys
            with another Redis type (the message names it).
    """
    with refusals():
        plan = plan or await survey(mem)
        summary = ExportSummary(mem.namespace)
        async for record in export_records(mem, plan):
            write(_line(record) + "\n")
            summary.records[record["type"]] = summary.records.get(record["type"], 0) + 1
            if progress:
                progress(1)
    return summary


# import: checking


def _fail(line: int, message: str) -> InvalidExportError:
    return InvalidExportError(f"line {line}: {message}")


def _fields(record: dict[str, Any], line: int, required: tuple[str, ...],
            optional: tuple[str, ...] = ()) -> None:
    missing = [name for name in required if name not in record]
    if missing:
        raise _fail(line, f"a {record['type']} record needs {', '.join(missing)}")
    unknown = sorted(set(record) - set(required) - set(optional) - {"type"})
    if unknown:
        raise _fail(line, f"a {record['type']} record has unknown fields {', '.join(unknown)}")


def _int(record: dict[str, Any], name: str, line: int, low: int,
         *, nullable: bool = False) -> int | None:
    value = record[name]
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not (
        low <= value <= limits.MAX_REVISION
    ):
        raise _fail(line, f"{name} must be an integer from {low}, got {value!r}")
    return value


def _row_bytes(*args: str | bytes) -> int:
    """What a row adds to a write call: its arguments and its own key name
    (the key name again plus the scope's prefix, at most 320 bytes)."""
    return request_bytes((), args) + len(str(args[0]).encode()) + 320


def _embedding(value: Any, line: int) -> tuple[bytes, int]:
    if not isinstance(value, list):
        raise _fail(line, f"embedding must be a list of numbers, got {type(value).__name__}")
    try:
        return V.embedding_bytes(value)
    except RedisMemError as exc:
        raise _fail(line, str(exc)) from None


@dataclass(frozen=True)
class Row:
    """One checked record, ready to write: records of the same ``group`` are
    written together (one scope, one thread, ...)."""

    group: tuple[str, ...]
    args: tuple[Any, ...]
    size: int


@dataclass
class Checker:
    """Checks records line by line against the target's limits."""

    max_value_bytes: int
    memory_dim: int | None
    line: int = 0
    namespace: str | None = None

    def row(self, text: str) -> Row:
        self.line += 1
        line = self.line
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(line, f"not JSON: {exc}") from None
        if not isinstance(record, dict) or record.get("type") not in RECORD_TYPES:
            kind = record.get("type") if isinstance(record, dict) else None
            raise _fail(line, f"type must be one of {', '.join(RECORD_TYPES)}, got {kind!r}")
        if (line == 1) != (record["type"] == "header"):
            raise _fail(line, "an export starts with its header line, and has only one"
                        if line > 1 else "the first line must be the export header")
        try:
            return cast(Row, getattr(self, "_" + record["type"])(record, line))
        except InvalidExportError:
            raise
        except (RedisMemError, ValueError, TypeError) as exc:
            raise _fail(line, str(exc)) from None

    def _header(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("format", "version", "namespace"),
                ("exported_at", "library_version"))
        if record["format"] != FORMAT or record["version"] != VERSION:
            raise _fail(line, f"not a {FORMAT} version {VERSION} file: format "
                        f"{record['format']!r} version {record['version']!r}")
        self.namespace = check.check_id("namespace", record["namespace"])
        return Row(("header",), (), 0)

    def _settings(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("settings",))
        settings = record["settings"]
        if not isinstance(settings, dict):
            raise _fail(line, "settings must be an object")
        for name, value in settings.items():
            check.check_setting(name, value)
        if "max_value_bytes" in settings:
            self.max_value_bytes = int(settings["max_value_bytes"])
        return Row(("settings",), (settings,), 0)

    def _session(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("id", "created_at"))
        sid = check.check_id("session id", record["id"])
        return Row(("session",), (sid, _int(record, "created_at", line, 0)), 0)

    def _scope(self, record: dict[str, Any]) -> tuple[str, str]:
        scope, sid = record["scope"], record["scope_id"]
        if not isinstance(scope, str):
            raise ValueError(f"scope must be a string, got {scope!r}")
        check.check_scope(scope, sid)
        return scope, sid

    def _entry(self, record: dict[str, Any], line: int, content: tuple[str, ...]) -> tuple[
            tuple[str, str], str, tuple[str, ...]]:
        _fields(record, line, ("scope", "scope_id", "key", "revision", "ts", "by", "expires_at",
                               *content))
        scope = self._scope(record)
        key = check.check_key(record["key"])
        expires = _int(record, "expires_at", line, 1, nullable=True)
        tail = (str(_int(record, "revision", line, 1)), str(_int(record, "ts", line, 0)),
                check.check_id("principal", record["by"]), "" if expires is None else str(expires))
        return scope, key, tail

    def _value(self, record: dict[str, Any], line: int) -> Row:
        (scope, sid), key, tail = self._entry(record, line, ("value",))
        text = check.canonical_json(record["value"], self.max_value_bytes)
        return Row(("value", scope, sid), (key, text, *tail), _row_bytes(key, text, *tail))

    def _vector(self, record: dict[str, Any], line: int) -> Row:
        (scope, sid), key, tail = self._entry(record, line, ("embedding", "metadata"))
        blob, dim = _embedding(record["embedding"], line)
        if not isinstance(record["metadata"], dict):
            raise _fail(line, "metadata must be an object")
        meta = V.metadata_json(record["metadata"])
        return Row(("vector", scope, sid), (key, blob, meta, *tail, dim),
                   _row_bytes(key, blob, meta, *tail))

    def _revisions(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("kind", "scope", "scope_id", "revisions"))
        if record["kind"] not in KINDS:
            raise _fail(line, f"kind must be value or vector, got {record['kind']!r}")
        scope, sid = self._scope(record)
        revisions = record["revisions"]
        if not isinstance(revisions, dict) or not revisions or len(revisions) > limits.MAX_BATCH:
            raise _fail(line, f"revisions must be an object of 1 to {limits.MAX_BATCH} names")
        pairs = tuple((check.check_key(name), _int(revisions, name, line, 1))
                      for name in revisions)
        return Row(("revisions", record["kind"], scope, sid), (pairs,), 0)

    def _event(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("event",))
        if not isinstance(record["event"], dict):
            raise _fail(line, "event must be an object")
        event = memory_event(record["event"])
        text = event_json(event)
        return Row(("event", event.thread_id), (text,), request_bytes((), (text,)))

    def _memory(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("memory", "embedding"))
        if not isinstance(record["memory"], dict):
            raise _fail(line, "memory must be an object")
        memory = long_term_memory(record["memory"])
        text = memory_json(memory)
        if len(text.encode()) > self.max_value_bytes:
            raise _fail(line, f"the memory is over {self.max_value_bytes} bytes of JSON")
        embedding = None
        if record["embedding"] is not None:
            _, dim = _embedding(record["embedding"], line)
            if self.memory_dim is not None and dim != self.memory_dim:
                raise _fail(line, f"the embedding has dimension {dim}; memory embeddings "
                            f"here have dimension {self.memory_dim}")
            self.memory_dim = dim
            embedding = record["embedding"]
        return Row(("memory",), (memory, embedding), len(text))


def read_header(path: Path) -> str:
    """The namespace an export file was written from (its header line).

    Raises:
        InvalidExportError: the file does not start with an export header.
        OSError: the file cannot be read.
    """
    for text in lines(path):
        checker = Checker(limits.MAX_VALUE_BYTES_CEILING, None)
        checker.row(text)
        assert checker.namespace is not None
        return checker.namespace
    raise InvalidExportError("the file is empty: no export header")


def lines(path: Path) -> Iterator[str]:
    """The non-blank lines of an export file."""
    with path.open(encoding="utf-8") as handle:
        for text in handle:
            if text.strip():
                yield text


@dataclass
class ImportSummary:
    """What an import did, per record type: ``written`` changed the target,
    ``kept`` were already there as new or newer (``expired``: past their expiry)."""

    namespace: str
    records: int = 0
    written: dict[str, int] = field(default_factory=dict)
    kept: dict[str, int] = field(default_factory=dict)

    def count(self, kind: str, written: int, kept: int) -> None:
        self.written[kind] = self.written.get(kind, 0) + written
        self.kept[kind] = self.kept.get(kind, 0) + kept


async def check_file(store: RedisMemoryStore, path: Path) -> int:
    """Check every line of ``path`` against the store's namespace; returns the
    number of records.

    Raises:
        InvalidExportError: a line is malformed (the message names it).
    """
    checker = await _checker(store)
    for text in lines(path):
        checker.row(text)
    if checker.line == 0:
        raise InvalidExportError("the file is empty: no export header")
    return checker.line


async def _checker(store: RedisMemoryStore) -> Checker:
    settings = await store.memory.settings()
    dim = await store.memory.client.get(K.memory_dim(store.namespace))
    return Checker(int(settings["max_value_bytes"]), int(dim) if dim else None)


# import: writing


class _Writer:
    """Writes checked rows in batches, one Lua call per batch."""

    def __init__(self, store: RedisMemoryStore, summary: ImportSummary) -> None:
        self.store = store
        self.mem = store.memory
        self.summary = summary
        self.group: tuple[str, ...] | None = None
        self.rows: list[Row] = []
        self.size = 0
        self.names: set[str] = set()

    async def add(self, row: Row) -> None:
        # a key twice in one call is refused by Lua: a repeated key starts a new batch
        name = row.args[0] if row.group[0] in KINDS else None
        most = limits.MAX_BATCH
        if row.group[0] == "vector":
            most = int(self.mem._conn.settings.get("max_call_vectors", limits.MAX_CALL_VECTORS))
        budget = self.mem._conn.functions.max_call_bytes - _CALL_OVERHEAD
        if row.group != self.group or len(self.rows) >= most or (
            self.size + row.size > budget or name in self.names
        ):
            await self.flush()
            self.group = row.group
        self.rows.append(row)
        self.size += row.size
        if name is not None:
            self.names.add(name)

    async def flush(self) -> None:
        if self.rows and self.group is not None:
            await getattr(self, "_" + self.group[0])(*self.group[1:])
        self.rows, self.size, self.names = [], 0, set()

    async def _header(self) -> None:
        pass

    async def _settings(self) -> None:
        for row in self.rows:
            current = await self.mem.settings()
            wanted = {k: v for k, v in row.args[0].items() if current.get(k) != v}
            if wanted:
                await self.mem.configure(**wanted)
            self.summary.count("settings", len(wanted), len(row.args[0]) - len(wanted))

    async def _session(self) -> None:
        for row in self.rows:
            new = await self.mem._conn.functions.create_session(self.mem.namespace, *row.args)
            self.summary.count("session", int(new), int(not new))

    async def _value(self, scope: str, sid: str) -> None:
        written = await self.mem._conn.functions.import_items(
            "value", self.mem.namespace, scope, sid, self.mem.principal,
            [row.args for row in self.rows])
        done = sum(1 for revision in written if revision)
        self.summary.count("value", done, len(written) - done)

    async def _vector(self, scope: str, sid: str) -> None:
        await V.ensure_scope_indexes(self.mem._conn, (row.args[-1] for row in self.rows))
        written = await self.mem._conn.functions.import_items(
            "vector", self.mem.namespace, scope, sid, self.mem.principal,
            [row.args[:-1] for row in self.rows])
        done = sum(1 for revision in written if revision)
        self.summary.count("vector", done, len(written) - done)

    async def _revisions(self, kind: K.Kind, scope: str, sid: str) -> None:
        for row in self.rows:
            raised = await self.mem._conn.functions.raise_revisions(
                self.mem.namespace, scope, sid, kind, row.args[0])
            self.summary.count("revisions", raised, len(row.args[0]) - raised)

    async def _event(self, thread: str) -> None:
        flags = await self.mem._conn.functions.append_events(
            self.mem.namespace, thread, [row.args[0] for row in self.rows])
        self.summary.count("event", sum(flags), len(flags) - sum(flags))

    async def _memory(self) -> None:
        for row in self.rows:
            memory, embedding = cast(tuple[LongTermMemory, list[float] | None], row.args)
            written = await self.store.restore_long_term_memory(memory, embedding=embedding)
            self.summary.count("memory", int(written), int(not written))


async def import_file(store: RedisMemoryStore, path: Path, progress: Progress | None = None
                      ) -> ImportSummary:
    """Import an export file into the store's namespace (see the module doc).
    ``check_file`` must have passed; ``progress`` gets the number of records done.
    """
    checker = await _checker(store)
    summary = ImportSummary(store.namespace)
    writer = _Writer(store, summary)
    for text in lines(path):
        await writer.add(checker.row(text))
        summary.records += 1
        if progress:
            progress(1)
    await writer.flush()
    return summary
