"""How a checkpoint is stored (``lua/lib/85_checkpoints.lua``): serialized
values framed as ``<serde type>\\n<bytes>``, checkpoint hashes read back
into LangGraph's tuples."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from langgraph.checkpoint.base import PendingWrite, writes_sort_key
from langgraph.checkpoint.serde.base import SerializerProtocol

from .. import keys as K
from ..errors import CorruptEntryError

EMPTY = b"empty\n"
"""A channel put without a value (LangGraph's ``("empty", b"")``)."""


def frame(serde: SerializerProtocol, value: Any) -> bytes:
    kind, data = serde.dumps_typed(value)
    return kind.encode() + b"\n" + data


def unframe(serde: SerializerProtocol, stored: bytes, where: str) -> Any:
    kind, newline, data = stored.partition(b"\n")
    if not newline:
        raise CorruptEntryError(f"{where} is not '<type>\\n<bytes>' (a raw write)", key=where)
    return serde.loads_typed((kind.decode(errors="replace"), data))


def blob_field(channel: str, version: object) -> str:
    return f"{K.encode_part(channel)}:{K.encode_part(str(version))}"


def pending_writes(serde: SerializerProtocol, stored: Mapping[bytes, bytes],
                   where: str) -> list[PendingWrite]:
    """The pending writes of a checkpoint hash, in ``writes_sort_key`` order."""
    found = []
    for field, value in stored.items():
        if not field.startswith(b"w:"):
            continue
        slot = field[2:]
        task, _, index = slot.decode().rpartition(":")
        channel = stored.get(b"c:" + slot, b"").decode()
        path = stored.get(b"p:" + slot, b"").decode()
        found.append((writes_sort_key(path, K.decode_part(task), int(index)),
                      (K.decode_part(task), channel, unframe(serde, value, where))))
    found.sort(key=lambda item: item[0])
    return [write for _, write in found]


def task_paths(stored: Mapping[bytes, bytes]) -> dict[str, str]:
    """Task id -> the task path its writes were put with."""
    return {K.decode_part(field[2:].decode().rpartition(":")[0]): path.decode()
            for field, path in stored.items() if field.startswith(b"p:")}
