"""Import an export file (the format is in :mod:`.transfer`): check every
line first, nothing written when one is bad, then write through the Lua
functions in batches, idempotently."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from . import _validate as check
from . import import_probe, limits, raw
from . import keys as K
from . import transfer_checkpoints as CP
from . import vectors as V
from .errors import InvalidExportError, RedisMemError
from .functions import refusals, request_bytes
from .records import event_json, long_term_memory, memory_event, memory_json
from .store import RedisMemoryStore
from .transfer import FORMAT, KINDS, READS, RECORD_TYPES, Progress
from .types import LongTermMemory

_CALL_OVERHEAD = 4096
"""Room in a write call for its scope keys and arguments (rows count their own)."""


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
    max_call_bytes: int = limits.MAX_CALL_BYTES
    line: int = 0
    namespace: str | None = None

    def row(self, text: str) -> Row:
        self.line += 1
        line = self.line
        try:
            record = json.loads(text)
        except json.JSONDecodeError as exc:
            raise _fail(line, f"not JSON: {exc}") from None
        except RecursionError:
            raise _fail(line, "its JSON is nested too deeply to read (no export writes "
                        f"more than {limits.MAX_JSON_DEPTH} levels)") from None
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
                ("exported_at", "library_version", "all_namespaces"))
        if record.get("all_namespaces", True) is not True:
            raise _fail(line, "all_namespaces is true when present")
        if record["format"] != FORMAT or record["version"] not in READS:
            versions = " or ".join(map(str, READS))
            raise _fail(line, f"not a {FORMAT} file of version {versions}: format "
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

    def _checkpoint(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("thread", "checkpoint_ns", "checkpoint_id", "parent", "run",
                               "checkpoint", "metadata", "channels", "blobs"))
        row = CP.checkpoint_row(record)
        return Row(("checkpoint", row.thread), (row,), 0)

    def _checkpoint_writes(self, record: dict[str, Any], line: int) -> Row:
        _fields(record, line, ("thread", "checkpoint_ns", "checkpoint_id", "task", "path",
                               "writes"))
        row = CP.writes_row(record)
        return Row(("checkpoint_writes", row.thread), (row,), 0)

    def _raw(self, record: dict[str, Any], line: int) -> Row:
        checked = raw.check(record, self.max_value_bytes, self.max_call_bytes)
        return Row(("raw",), (checked,), 0)


def max_line_bytes(max_value_bytes: int) -> int:
    """The longest line an import reads by default: a record of a value of
    ``max_value_bytes`` escaped twice over, a raw record of it in base64,
    or a checkpoint record (at most ``limits.MAX_CHECKPOINT_BYTES`` in
    base64), with room for its other fields."""
    return max(2 * max_value_bytes, limits.MAX_CHECKPOINT_BYTES * 4 // 3) + 65_536


def read_header_record(path: Path, longest: int | None = None) -> dict[str, Any]:
    """The header record of an export file, checked.

    Raises:
        InvalidExportError: the file does not start with an export header.
        OSError: the file cannot be read.
    """
    for text in lines(path, longest or max_line_bytes(limits.MAX_VALUE_BYTES)):
        checker = Checker(limits.MAX_VALUE_BYTES_CEILING, None, limits.MAX_CALL_BYTES_CEILING)
        checker.row(text)
        return cast(dict[str, Any], json.loads(text))
    raise InvalidExportError("the file is empty: no export header")


def split_sections(path: Path, directory: Path, longest: int | None = None
                   ) -> list[tuple[str, Path]]:
    """The sections of a whole-server export (``export --all-namespaces``),
    each written to a file of its own in ``directory``: (namespace, file),
    in file order.

    Raises:
        InvalidExportError: a line is too long or not UTF-8, a header is
            not one of a whole-server export, or a namespace comes twice.
    """
    sections: list[tuple[str, Path]] = []
    out = None
    try:
        for number, text in enumerate(lines(path, longest or max_line_bytes(
                limits.MAX_VALUE_BYTES_CEILING)), 1):
            if '"type":"header"' in text:  # a value's JSON may hold it too: parsed to tell
                record = json.loads(text)
                if isinstance(record, dict) and record.get("type") == "header":
                    if record.get("all_namespaces") is not True:
                        raise InvalidExportError(f"line {number}: a header of a whole-server "
                                                 "export has all_namespaces true")
                    ns = check.check_id("namespace", record.get("namespace"))
                    if any(ns == seen for seen, _ in sections):
                        raise InvalidExportError(f"line {number}: namespace {ns} comes twice")
                    if out is not None:
                        out.close()
                    sections.append((ns, directory / f"{len(sections):05d}.jsonl"))
                    out = sections[-1][1].open("w", encoding="utf-8")
            if out is None:
                raise InvalidExportError("line 1: the first line must be the export header")
            out.write(text if text.endswith("\n") else text + "\n")
    finally:
        if out is not None:
            out.close()
    return sections


def lines(path: Path, longest: int) -> Iterator[str]:
    """The non-blank lines of an export file, each read only when it is at
    most ``longest`` bytes: a longer line is refused before it is read
    whole, let alone parsed.

    Raises:
        InvalidExportError: a line is longer, or is not UTF-8.
    """
    with path.open("rb") as handle:
        for number, data in enumerate(iter(lambda: handle.readline(longest + 1), b""), 1):
            if len(data) > longest:
                raise InvalidExportError(
                    f"line {number}: longer than {longest} bytes; an export of this target's "
                    "limits has no such line (raise it with --max-line-bytes)")
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InvalidExportError(f"line {number}: not UTF-8 (byte {exc.start + 1} is "
                                         f"{data[exc.start:exc.start + 1]!r}); exports are "
                                         "UTF-8") from None
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


async def check_file(store: RedisMemoryStore, path: Path, longest: int | None = None) -> int:
    """Check every line of ``path`` against the store's namespace; returns the
    number of records. ``longest``: the longest line read (bytes; None: from
    the namespace's ``max_value_bytes``, :func:`max_line_bytes`).

    Raises:
        InvalidExportError: a line is malformed or too long (the message
            names it).
    """
    checker = await _checker(store)
    for text in lines(path, longest or max_line_bytes(checker.max_value_bytes)):
        checker.row(text)
    if checker.line == 0:
        raise InvalidExportError("the file is empty: no export header")
    return checker.line


async def _checker(store: RedisMemoryStore) -> Checker:
    settings = await store.memory.settings()
    dim = await store.memory.client.get(K.memory_dim(store.namespace))
    return Checker(int(settings["max_value_bytes"]), int(dim) if dim else None,
                   int(settings["max_call_bytes"]))


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
        self.first = 0  # the record number of the batch's first row
        self.records = 0
        self.streams: dict[bytes, set[tuple[tuple[bytes, bytes], ...]]] = {}  # raw.restore

    async def add(self, row: Row) -> None:
        # a key twice in one call is refused by Lua: a repeated key starts a new batch
        name = row.args[0] if row.group[0] in KINDS else None
        most = limits.MAX_EVENTS_PER_CALL if row.group[0] == "event" else limits.MAX_BATCH
        if row.group[0] == "vector":
            most = int(self.mem._conn.settings.get("max_call_vectors", limits.MAX_CALL_VECTORS))
        budget = self.mem._conn.functions.max_call_bytes - _CALL_OVERHEAD
        if row.group != self.group or len(self.rows) >= most or (
            self.size + row.size > budget or name in self.names
        ):
            await self.flush()
            self.group = row.group
        self.records += 1
        if not self.rows:
            self.first = self.records
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
            self.mem.namespace, thread, self.mem.principal, [row.args[0] for row in self.rows])
        self.summary.count("event", sum(flags), len(flags) - sum(flags))

    async def _memory(self) -> None:
        for row in self.rows:
            memory, embedding = cast(tuple[LongTermMemory, list[float] | None], row.args)
            written = await self.store.restore_long_term_memory(memory, embedding=embedding)
            self.summary.count("memory", int(written), int(not written))

    async def _checkpoint(self, thread: str) -> None:
        for row in self.rows:
            written = await CP.put_checkpoint(self.mem, row.args[0])
            self.summary.count("checkpoint", int(written), int(not written))

    async def _checkpoint_writes(self, thread: str) -> None:
        for row in self.rows:
            written, kept = await CP.put_writes(self.mem, row.args[0])
            self.summary.count("checkpoint_writes", written, kept)

    async def _raw(self) -> None:
        for row in self.rows:
            with refusals():
                written = await raw.restore(self.mem.client, self.mem.namespace, row.args[0],
                                            self.streams)
            self.summary.count("raw", int(written), int(not written))


async def import_file(store: RedisMemoryStore, path: Path, progress: Progress | None = None,
                      longest: int | None = None) -> ImportSummary:
    """Import an export file into the store's namespace (see the module doc).
    ``check_file`` must have passed; ``progress`` gets the number of records done.
    """
    limits_read = await _checker(store)  # each pass reads with a fresh copy of it
    longest = longest or max_line_bytes(limits_read.max_value_bytes)
    await _probe(store, path, longest, dataclasses.replace(limits_read))
    checker = dataclasses.replace(limits_read)
    summary = ImportSummary(store.namespace)
    writer = _Writer(store, summary)
    try:
        for text in lines(path, longest):
            await writer.add(checker.row(text))
            summary.records += 1
            if progress:
                progress(1)
        await writer.flush()
    except RedisMemError as exc:
        group = writer.group[0] if writer.group else "first"
        exc.args = (f"{exc.args[0] if exc.args else exc}; the import stopped in the {group} "
                    f"records from record {writer.first} on: before the failing call it wrote "
                    f"{_counts(summary.written)} and kept {_counts(summary.kept)}, after it "
                    "nothing",)
        exc.import_summary = summary  # type: ignore[attr-defined]
        raise
    return summary


async def _probe(store: RedisMemoryStore, path: Path, longest: int, checker: Checker) -> None:
    """Refuse, before anything is written, a file this credential could
    only import in part: the first write of each group of records is
    checked against the server's ACL (redismem.import_probe). ``checker``
    reads the file's records from its first line.

    Raises:
        PermissionDeniedError: naming the key the credential may not write.
    """
    firsts: dict[tuple[str, ...], Row] = {}
    for text in lines(path, longest):
        row = checker.row(text)
        firsts.setdefault(row.group, row)
    functions = store.memory._conn.functions
    commands = []
    replicas, functions.replicas = functions.replicas, 0  # every call through the client
    try:
        for group, row in firsts.items():
            if group[0] == "raw":
                commands.append(import_probe.raw_command(store.namespace, row.args[0]))
                continue
            writer = _Writer(store, ImportSummary(store.namespace))
            writer.group, writer.rows = group, [row]
            command = await import_probe.capture([store.memory.client, functions._client],
                                                 writer.flush)
            if command is not None:
                commands.append(command)
    finally:
        functions.replicas = replicas
    await import_probe.check(store.memory.client, commands)


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()) if n) or "nothing"
