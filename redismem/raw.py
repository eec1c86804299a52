"""Raw records: an entry the library did not write, carried byte for byte
by ``export --raw`` and put back by an import.

A raw command can leave an entry no reader accepts (``redismem audit``
lists them). An export stops at the first one, naming it, unless asked
for raw records; then each such entry becomes one ``raw`` record:

``key``
    the Redis key without its ``rm:{ns}:`` prefix, base64
``problem``
    why the library did not write it (for people; not read back)
``hash`` / ``zset`` / ``stream``
    the content that is not the library's: ``{field: value}`` (base64
    both), ``[[member, score], ...]`` (member base64), or
    ``[[id, {field: value}], ...]`` (a stream's entries)

An import puts them back with raw commands (an admin's): fields with
HSETNX and members with ZADD NX, so a raw record never replaces what the
target holds; a stream entry is appended (a new id) unless the stream
holds one with the same fields. Expiry is not carried.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from typing import Any

from . import keys as K

SHAPES = ("hash", "zset", "stream")


def b64_text(data: bytes) -> str:
    """``data`` as base64 text."""
    return base64.b64encode(data).decode()


def b64_bytes(text: Any, what: str) -> bytes:
    """The bytes of base64 ``text``.

    Raises:
        ValueError: it is no text, or not base64 (naming ``what``).
    """
    if not isinstance(text, str):
        raise ValueError(f"{what} must be base64 text, got {type(text).__name__}")
    try:
        return base64.b64decode(text, validate=True)
    except binascii.Error:
        raise ValueError(f"{what} is not base64: {text[:40]!r}") from None


def _record(ns: str, key: bytes, problem: str, shape: str, content: Any) -> dict[str, Any]:
    return {"type": "raw", "key": b64_text(K.key_suffix(ns, key)), "problem": problem,
            shape: content}


async def hash_record(client: Any, ns: str, key: bytes, problem: str,
                      fields: list[bytes] | None = None) -> dict[str, Any] | None:
    """A raw record of hash ``key`` (only ``fields``, when given); None
    when it is gone."""
    found: dict[bytes, bytes] = await client.hgetall(key)
    if fields is not None:
        found = {name: found[name] for name in fields if name in found}
    if not found:
        return None
    return _record(ns, key, problem, "hash",
                   {b64_text(name): b64_text(value) for name, value in sorted(found.items())})


async def zset_record(client: Any, ns: str, key: bytes, members: list[bytes],
                      problem: str) -> dict[str, Any] | None:
    """A raw record of ``members`` of zset ``key``, with their scores."""
    pipe = client.pipeline(transaction=False)
    for member in members:
        pipe.zscore(key, member)  # ZSCORE, not ZMSCORE: every role holds it
    scores = await pipe.execute()
    listed = [[b64_text(member), float(score)]
              for member, score in zip(members, scores, strict=True)
              if score is not None]
    return _record(ns, key, problem, "zset", listed) if listed else None


def stream_record(ns: str, key: bytes, entries: list[tuple[bytes, dict[bytes, bytes]]],
                  problem: str) -> dict[str, Any]:
    """A raw record of stream ``key``'s ``entries``."""
    return _record(ns, key, problem, "stream", [
        [entry_id.decode(), {b64_text(k): b64_text(v) for k, v in sorted(fields.items())}]
        for entry_id, fields in entries])


@dataclass(frozen=True)
class Part:
    """Where an entry the library did not write keeps its bytes: hash
    ``key`` (only the fields ``names``, when given), the members ``names``
    of zset ``key``, or ``entries`` of stream ``key`` (already read)."""

    shape: str
    key: bytes
    names: tuple[bytes, ...] = ()
    entries: tuple[tuple[bytes, dict[bytes, bytes]], ...] = ()


async def records(client: Any, ns: str, parts: tuple[Part, ...],
                  problem: str) -> list[dict[str, Any]]:
    """The raw records of ``parts`` (a part that is gone has none)."""
    out = []
    for part in parts:
        if part.shape == "hash":
            record = await hash_record(client, ns, part.key, problem, list(part.names) or None)
        elif part.shape == "zset":
            record = await zset_record(client, ns, part.key, list(part.names), problem)
        else:
            record = stream_record(ns, part.key, list(part.entries), problem)
        if record is not None:
            out.append(record)
    return out


@dataclass(frozen=True)
class RawRow:
    """A checked raw record: the key suffix, its shape and its content."""

    suffix: bytes
    shape: str
    content: Any


def check(record: dict[str, Any], max_value_bytes: int, max_call_bytes: int) -> RawRow:
    """A raw record, checked, with the target's limits of a write: no
    field, value or member over ``max_value_bytes``, and no more than
    ``max_call_bytes`` in all.

    Raises:
        ValueError: a field is missing, malformed, too large, or names a
            key a raw record may not write (the message says which).
    """
    shapes = [shape for shape in SHAPES if shape in record]
    unknown = sorted(set(record) - {"type", "key", "problem", *SHAPES})
    if len(shapes) != 1 or unknown or "key" not in record:
        raise ValueError("a raw record has key, problem and one of hash, zset or stream"
                         + (f"; unknown fields {', '.join(unknown)}" if unknown else ""))
    suffix = b64_bytes(record["key"], "key")
    K.raw_key("x", suffix)  # one of the families a raw record may write
    shape, content = shapes[0], record[shapes[0]]
    if shape == "hash":
        if not isinstance(content, dict) or not content:
            raise ValueError("hash must be an object of base64 fields and values")
        checked: Any = {b64_bytes(k, "a field"): b64_bytes(v, "a value")
                        for k, v in content.items()}
    elif shape == "zset":
        if not isinstance(content, list) or not content or not all(
                isinstance(pair, list) and len(pair) == 2
                and isinstance(pair[1], (int, float)) and not isinstance(pair[1], bool)
                for pair in content):
            raise ValueError("zset must be a list of [base64 member, score] pairs")
        checked = [(b64_bytes(member, "a member"), float(score)) for member, score in content]
    else:
        if not isinstance(content, list) or not content or not all(
                isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], dict)
                and entry[1] for entry in content):
            raise ValueError("stream must be a list of [id, {base64 field: base64 value}]")
        checked = [{b64_bytes(k, "a field"): b64_bytes(v, "a value") for k, v in fields.items()}
                   for _, fields in content]
    _check_sizes(_parts(shape, checked), max_value_bytes, max_call_bytes)
    return RawRow(suffix, shape, checked)


def _parts(shape: str, content: Any) -> list[bytes]:
    if shape == "hash":
        return [part for pair in content.items() for part in pair]
    if shape == "zset":
        return [member for member, _ in content]
    return [part for fields in content for pair in fields.items() for part in pair]


def _check_sizes(parts: list[bytes], max_value_bytes: int, max_call_bytes: int) -> None:
    largest = max(map(len, parts), default=0)
    if largest > max_value_bytes:
        raise ValueError(f"a raw record's part holds {largest} bytes, over max_value_bytes "
                         f"({max_value_bytes})")
    total = sum(map(len, parts))
    if total > max_call_bytes:
        raise ValueError(f"a raw record holds {total} bytes, over max_call_bytes "
                         f"({max_call_bytes})")


async def restore(client: Any, ns: str, row: RawRow,
                  streams: dict[bytes, set[tuple[tuple[bytes, bytes], ...]]] | None = None
                  ) -> bool:
    """Put a raw record back into namespace ``ns`` without replacing
    anything; whether it changed the target. ``streams`` keeps the entries
    of each stream read so far, so that many records of one stream (a
    thread of 100,000 events) read it once, in pages, not once each."""
    key = K.raw_key(ns, row.suffix)
    if row.shape == "hash":
        pipe = client.pipeline(transaction=False)
        for name, value in row.content.items():
            pipe.hsetnx(key, name, value)
        return any(await pipe.execute())
    if row.shape == "zset":
        return bool(await client.zadd(key, dict(row.content), nx=True))
    streams = {} if streams is None else streams
    present = streams.get(key)
    if present is None:
        present = streams[key] = await _stream_entries(client, key)
    added = False
    for fields in row.content:
        entry = tuple(sorted(fields.items()))
        if entry not in present:
            await client.xadd(key, fields)
            present.add(entry)
            added = True
    return added


async def _stream_entries(client: Any, key: bytes) -> set[tuple[tuple[bytes, bytes], ...]]:
    """The entries of stream ``key`` as sorted field tuples, read 1,000 at a time."""
    found: set[tuple[tuple[bytes, bytes], ...]] = set()
    start = "-"
    while True:
        page = await client.xrange(key, min=start, max="+", count=1000)
        found.update(tuple(sorted(fields.items())) for _, fields in page)
        if len(page) < 1000:
            return found
        start = "(" + page[-1][0].decode()
