"""LangGraph checkpoints in an export file (the format is in :mod:`.transfer`):
read from their keys (``lua/lib/85_checkpoints.lua``), checked line by
line on import, and written back through ``redismem_checkpoint_put`` and
``redismem_checkpoint_writes``.

Two record types, with serialized values (``<serde type>\\n<bytes>``, as
LangGraph's serializer makes them) in base64:

``checkpoint``
    ``thread``, ``checkpoint_ns`` (text), ``checkpoint_id``, ``parent``
    ("" = none), ``run`` (text, "" = none), ``checkpoint`` and ``metadata``
    (base64), ``channels`` (the blob fields ``<channel>:<version>`` it
    names, percent-encoded as stored) and ``blobs``: the values of the
    blob fields no earlier record of its thread and checkpoint namespace
    carried, ``{field: base64}``. A checkpoint whose new blobs exceed one
    call's bytes comes as several records of the same id.
``checkpoint_writes``
    ``thread``, ``checkpoint_ns``, ``checkpoint_id``, ``task`` (text),
    ``path`` (the task path) and ``writes``: ``[[index, channel, base64],
    ...]``, the pending writes one task made against the checkpoint.

Records come in id order per thread and checkpoint namespace, so an import
rebuilds the same newest checkpoint. A blob no checkpoint names is
unreachable (no read returns it) and is not exported. An import appends
one feed event per call (kind checkpoint) and records the importing
principal; it skips a checkpoint the target holds with every blob the
record carries, and a write the target holds with the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from typing import Any

from . import _validate as check
from . import keys as K
from . import limits
from .errors import CorruptEntryError, InvalidArgumentError
from .memory import Memory
from .raw import b64_bytes, b64_text
from .stats import scan_if_permitted

RECORD_TYPES = ("checkpoint", "checkpoint_writes")
_TYPED = re.compile(rb"^[\w-]{1,64}\n")
_FIELD = re.compile(r"^([\w.~|%-]+):([\w.~|%-]+)$")
_PAGE = 100
_CALL_ROOM = 65_536
"""Room in one checkpoint call for its keys, ids and checkpoint fields
besides the blobs and writes a record carries."""
BUDGET = limits.MAX_CHECKPOINT_BYTES - _CALL_ROOM
"""The most bytes of blobs or writes (serialized) one record carries."""


def _client(mem: Memory) -> Any:
    """The client, untyped: redis-py's reply types are unions a bytes reply
    (decode_responses off) never takes."""
    return mem.client


def typed_problem(data: bytes | None) -> str | None:
    """Why ``data`` is not a serialized value as LangGraph's serializer
    frames it (``<type>\\n<bytes>``), or None."""
    if data is None:
        return "it is missing"
    if not _TYPED.match(data[:66]):
        return f"it starts {data[:40]!r}, not '<serializer type>\\n'"
    return None


def _field_problem(field: str) -> str | None:
    """Why ``field`` is no blob field ``<channel>:<version>`` in its one
    percent-encoded spelling, or None."""
    found = _FIELD.match(field)
    if not found:
        return f"the blob field {field[:80]!r} is not '<channel>:<version>'"
    for part in found.groups():
        try:
            if K.encode_part(K.decode_part(part)) != part:
                raise ValueError(part)
        except (UnicodeDecodeError, ValueError):
            return f"the blob field {field[:80]!r} is not percent-encoded as the library does"
    return None


# export


async def threads(mem: Memory) -> list[str]:
    """The threads with checkpoints or pending writes: the registry (a
    thread with a put) and, where this credential may SCAN, every
    thread's namespace listing (a thread with writes only)."""
    client, ns = _client(mem), mem.namespace
    found = set()
    for member in await client.zrange(K.checkpoint_threads(ns), 0, -1):
        found.add(member.decode(errors="replace"))
    prefix = K.base(ns) + "lgt:"
    for key in await scan_if_permitted(client, f"{K.glob_escape(prefix)}*:nss"):
        found.add(key[len(prefix):-len(":nss")])
    good = []
    for thread in sorted(found):
        try:
            good.append(check.check_id("thread id", thread))
        except InvalidArgumentError as exc:
            raise CorruptEntryError(
                f"export stopped at the LangGraph thread {thread[:80]!r}: {exc} (a raw write; "
                "delete its keys)", key=K.checkpoint_threads(ns)) from None
    return good


@dataclass
class _Walk:
    """Where a thread's export is: its thread, checkpoint namespace (text
    and encoded) and the blob fields records carried so far."""

    mem: Memory
    thread: str
    cns: str
    encoded: str
    sent: set[str]

    def fail(self, key: str, problem: str) -> CorruptEntryError:
        return CorruptEntryError(
            f"export stopped at {key}: {problem}, not a LangGraph checkpoint the library "
            "writes (a raw write). Delete the thread (saver.delete_thread) or that key; "
            "checkpoints are not carried raw", key=key)


async def thread_records(mem: Memory, thread: str) -> AsyncIterator[dict[str, Any]]:
    """The records of one thread's checkpoints and pending writes.

    Raises:
        CorruptEntryError: a raw write left something no reader accepts
            (the message names the key).
    """
    client, ns = _client(mem), mem.namespace
    for member in await client.zrange(K.checkpoint_namespaces(ns, thread), 0, -1):
        encoded = member.decode(errors="replace")
        try:
            cns = K.decode_part(encoded)
            if K.encode_part(cns) != encoded:
                raise ValueError(encoded)
        except (UnicodeDecodeError, ValueError):
            raise CorruptEntryError(
                f"export stopped at {K.checkpoint_namespaces(ns, thread)}: it lists "
                f"{encoded[:80]!r}, no checkpoint namespace the library writes",
                key=K.checkpoint_namespaces(ns, thread)) from None
        walk = _Walk(mem, thread, cns, encoded, set())
        ids = [i.decode(errors="replace") for i in
               await client.zrange(K.checkpoint_ids(ns, thread, encoded), 0, -1)]
        listed = set(ids)
        written = [i.decode(errors="replace") for i in
                   await client.zrange(K.checkpoint_written(ns, thread, encoded), 0, -1)]
        ordered = ids + sorted(set(written) - listed)  # writes ahead of their checkpoint last
        for first in range(0, len(ordered), _PAGE):
            async for record in _page(walk, ordered[first:first + _PAGE]):
                yield record


async def _page(walk: _Walk, ids: list[str]) -> AsyncIterator[dict[str, Any]]:
    client, ns = _client(walk.mem), walk.mem.namespace
    pipe = client.pipeline(transaction=False)
    for checkpoint_id in ids:
        pipe.hgetall(K.checkpoint(ns, walk.thread, walk.encoded, checkpoint_id))
    for checkpoint_id, stored in zip(ids, await pipe.execute(), strict=True):
        key = K.checkpoint(ns, walk.thread, walk.encoded, checkpoint_id)
        try:
            check.check_id("checkpoint id", checkpoint_id)
        except InvalidArgumentError as exc:
            raise walk.fail(key, str(exc)) from None
        if b"cp" in stored:
            async for record in _checkpoint(walk, checkpoint_id, key, stored):
                yield record
        for record in _writes(walk, checkpoint_id, key, stored):
            yield record


async def _checkpoint(walk: _Walk, checkpoint_id: str, key: str, stored: dict[bytes, bytes]
                      ) -> AsyncIterator[dict[str, Any]]:
    for name in (b"cp", b"md"):
        problem = typed_problem(stored.get(name))
        if problem:
            raise walk.fail(key, f"its {name.decode()} field: {problem}")
    try:
        parent = stored.get(b"parent", b"").decode()
        if parent:
            check.check_id("parent checkpoint id", parent)
        run = stored.get(b"run", b"").decode()
        run_text = K.decode_part(run) if run else ""
        channels = [f for f in stored.get(b"bl", b"").decode().split("\n") if f]
    except (UnicodeDecodeError, ValueError, InvalidArgumentError) as exc:
        raise walk.fail(key, f"its parent, run or channel list ({exc})") from None
    for field in channels:
        problem = _field_problem(field)
        if problem:
            raise walk.fail(key, problem)
    new = [field for field in dict.fromkeys(channels) if field not in walk.sent]
    values = (await _client(walk.mem).hmget(
        K.checkpoint_blobs(walk.mem.namespace, walk.thread, walk.encoded), new) if new else [])
    blobs: list[tuple[str, bytes]] = []
    for field, value in zip(new, values, strict=True):
        walk.sent.add(field)
        if value is None:
            continue  # named, never stored (a read returns no value for it)
        problem = typed_problem(value)
        if problem:
            raise walk.fail(K.checkpoint_blobs(walk.mem.namespace, walk.thread, walk.encoded),
                            f"blob {field!r}: {problem}")
        blobs.append((field, value))
    base = {"type": "checkpoint", "thread": walk.thread, "checkpoint_ns": walk.cns,
            "checkpoint_id": checkpoint_id, "parent": parent, "run": run_text,
            "checkpoint": b64_text(stored[b"cp"]), "metadata": b64_text(stored[b"md"]),
            "channels": channels}
    for chunk in _chunks(blobs, lambda item: len(item[0]) + len(item[1])):
        yield {**base, "blobs": {field: b64_text(value) for field, value in chunk}}


def _writes(walk: _Walk, checkpoint_id: str, key: str, stored: dict[bytes, bytes]
            ) -> Iterable[dict[str, Any]]:
    tasks: dict[tuple[str, str], list[tuple[int, str, bytes]]] = {}
    for field, value in stored.items():
        if not field.startswith(b"w:"):
            continue
        slot = field[2:]
        try:
            task, _, index = slot.decode().rpartition(":")
            task_text = K.decode_part(task)
            if not task or K.encode_part(task_text) != task:
                raise ValueError(f"task {task!r}")
            channel = stored[b"c:" + slot].decode()
            path = stored.get(b"p:" + slot, b"").decode()
            number = int(index)
        except (UnicodeDecodeError, ValueError, KeyError) as exc:
            raise walk.fail(key, f"its pending write {field[:80]!r} ({exc!r})") from None
        problem = typed_problem(value)
        if problem:
            raise walk.fail(key, f"its pending write {field[:80]!r}: {problem}")
        tasks.setdefault((task_text, path), []).append((number, channel, value))
    for (task, path), writes in sorted(tasks.items()):
        writes.sort()
        for chunk in _chunks(writes, lambda w: len(w[1]) + len(w[2]) + 24):
            yield {"type": "checkpoint_writes", "thread": walk.thread,
                   "checkpoint_ns": walk.cns, "checkpoint_id": checkpoint_id, "task": task,
                   "path": path, "writes": [[i, c, b64_text(v)] for i, c, v in chunk]}


def _chunks(items: list[Any], size: Any) -> Iterable[list[Any]]:
    """``items`` in runs of at most BUDGET bytes (one item alone may be
    more: it came in one call, so it goes in one); one empty run for none."""
    chunk: list[Any] = []
    total = 0
    for item in items:
        if chunk and total + size(item) > BUDGET:
            yield chunk
            chunk, total = [], 0
        chunk.append(item)
        total += size(item)
    if chunk or not items:
        yield chunk


# import


@dataclass(frozen=True)
class CheckpointRow:
    """A checked ``checkpoint`` record."""

    thread: str
    cns: str
    checkpoint_id: str
    parent: str
    run: str
    checkpoint: bytes
    metadata: bytes
    channels: tuple[str, ...]
    blobs: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True)
class WritesRow:
    """A checked ``checkpoint_writes`` record."""

    thread: str
    cns: str
    checkpoint_id: str
    task: str
    path: str
    writes: tuple[tuple[int, str, bytes], ...]


def _where(record: dict[str, Any]) -> tuple[str, str, str]:
    thread = check.check_id("thread id", record["thread"])
    cns = record["checkpoint_ns"]
    if not isinstance(cns, str) or len(cns.encode()) > limits.MAX_KEY_BYTES:
        raise ValueError(f"checkpoint_ns must be text of at most {limits.MAX_KEY_BYTES} bytes")
    return thread, cns, check.check_id("checkpoint id", record["checkpoint_id"])


def _typed(text: Any, what: str) -> bytes:
    data = b64_bytes(text, what)
    problem = typed_problem(data)
    if problem:
        raise ValueError(f"{what}: {problem}")
    return data


def _size_check(total: int) -> None:
    if total > limits.MAX_CHECKPOINT_BYTES:
        raise ValueError(f"it carries {total} bytes, more than one checkpoint call takes "
                         f"({limits.MAX_CHECKPOINT_BYTES})")


def checkpoint_row(record: dict[str, Any]) -> CheckpointRow:
    """A ``checkpoint`` record, checked (its fields are checked by the caller).

    Raises:
        ValueError, InvalidArgumentError: a field is malformed (the message says which).
    """
    thread, cns, checkpoint_id = _where(record)
    parent, run = record["parent"], record["run"]
    if parent != "":
        parent = check.check_id("parent checkpoint id", parent)
    if not isinstance(run, str) or len(run.encode()) > limits.MAX_KEY_BYTES:
        raise ValueError(f"run must be text of at most {limits.MAX_KEY_BYTES} bytes")
    channels, blobs = record["channels"], record["blobs"]
    if not isinstance(channels, list) or len(channels) > limits.MAX_BATCH or not all(
            isinstance(f, str) for f in channels):
        raise ValueError(f"channels must be a list of at most {limits.MAX_BATCH} blob fields")
    if not isinstance(blobs, dict):
        raise ValueError("blobs must be an object of blob field -> base64")
    for field in [*channels, *blobs]:
        problem = _field_problem(field)
        if problem:
            raise ValueError(problem)
    stored = tuple((field, _typed(value, f"blob {field!r}")) for field, value in blobs.items())
    row = CheckpointRow(thread, cns, checkpoint_id, parent, run,
                        _typed(record["checkpoint"], "checkpoint"),
                        _typed(record["metadata"], "metadata"), tuple(channels), stored)
    _size_check(len(row.checkpoint) + len(row.metadata) + sum(len(f) + len(v) for f, v in stored))
    return row


def writes_row(record: dict[str, Any]) -> WritesRow:
    """A ``checkpoint_writes`` record, checked.

    Raises:
        ValueError, InvalidArgumentError: a field is malformed.
    """
    thread, cns, checkpoint_id = _where(record)
    task, path, writes = record["task"], record["path"], record["writes"]
    if not isinstance(task, str) or not task or len(task.encode()) > limits.MAX_KEY_BYTES:
        raise ValueError(f"task must be text of 1 to {limits.MAX_KEY_BYTES} bytes")
    if not isinstance(path, str) or len(path.encode()) > limits.MAX_KEY_BYTES:
        raise ValueError(f"path must be text of at most {limits.MAX_KEY_BYTES} bytes")
    if not isinstance(writes, list) or not writes:
        raise ValueError("writes must be a list of [index, channel, base64]")
    rows, seen = [], set()
    for write in writes:
        if not (isinstance(write, list) and len(write) == 3):
            raise ValueError(f"a write is [index, channel, base64], got {str(write)[:80]}")
        index, channel, value = write
        if isinstance(index, bool) or not isinstance(index, int) or not (
                -limits.MAX_REVISION <= index <= limits.MAX_REVISION) or index in seen:
            raise ValueError(f"a write index must be an integer, once per task; got {index!r}")
        seen.add(index)
        if not isinstance(channel, str) or not channel or len(
                channel.encode()) > limits.MAX_KEY_BYTES:
            raise ValueError(f"a channel must be text of 1 to {limits.MAX_KEY_BYTES} bytes")
        rows.append((index, channel, _typed(value, f"the write to {channel!r}")))
    _size_check(sum(len(c) + len(v) + 24 for _, c, v in rows))
    return WritesRow(thread, cns, checkpoint_id, task, path, tuple(rows))


async def put_checkpoint(mem: Memory, row: CheckpointRow) -> bool:
    """Write one checked ``checkpoint`` record, unless the target holds the
    checkpoint and every blob it carries; whether it wrote."""
    ns, encoded = mem.namespace, K.encode_part(row.cns)
    client = _client(mem)
    exists = await client.hexists(K.checkpoint(ns, row.thread, encoded, row.checkpoint_id), "cp")
    fields = [field for field, _ in row.blobs]
    held = await client.hmget(K.checkpoint_blobs(ns, row.thread, encoded), fields) if fields \
        else []
    missing = [(field, value) for (field, value), there in zip(row.blobs, held, strict=True)
               if there != value]
    if exists and not missing:
        return False
    await mem._conn.functions.checkpoint_put(
        ns, row.thread, encoded, mem.principal, "", row.checkpoint_id, row.parent,
        K.encode_part(row.run) if row.run else "", row.checkpoint, row.metadata,
        row.channels, missing)
    return True


async def put_writes(mem: Memory, row: WritesRow) -> tuple[int, int]:
    """Write the pending writes of one checked record that the target does
    not hold with the same bytes; (written, kept). A write of index >= 0
    the target holds with other bytes is kept (as a retried task's is)."""
    ns, encoded, task = mem.namespace, K.encode_part(row.cns), K.encode_part(row.task)
    held = await _client(mem).hmget(K.checkpoint(ns, row.thread, encoded, row.checkpoint_id),
                                  [f"w:{task}:{index}" for index, _, _ in row.writes])
    wanted = [write for write, there in zip(row.writes, held, strict=True) if there != write[2]]
    written = 0
    if wanted:
        written = await mem._conn.functions.checkpoint_writes(
            ns, row.thread, encoded, mem.principal, "", row.checkpoint_id, task, row.path,
            wanted)
    return written, len(row.writes) - written
