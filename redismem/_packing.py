"""Commands packed by hiredis in one call.

redis-py's hiredis serializer runs Python code for each argument before
handing them to ``hiredis.pack_command`` (a memoryview test, then the
encoder): 17 µs for the 21 arguments of a one-item ``redismem_set_values``
call, where ``hiredis.pack_command`` alone takes 2 µs. A library call is
mostly key names and texts, so a command whose every argument is a
``str``, ``bytes`` or ``int`` (and whose first has no space, which
redis-py splits) goes to hiredis as it is; anything else (a float, a
memoryview, a bool, which redis-py refuses) goes the usual way. The bytes
sent are the same: hiredis encodes a text as UTF-8, strictly, and an int
in decimal, as redis-py's default encoder does.
"""

from __future__ import annotations

from typing import Any

import hiredis
from redis.asyncio import Redis

_PLAIN = (str, bytes, int)


class _Packer:
    """A connection's packer: hiredis directly for plain arguments, else
    ``usual`` (redis-py's serializer)."""

    __slots__ = ("usual",)

    def __init__(self, usual: Any) -> None:
        self.usual = usual

    def pack(self, *args: Any) -> list[bytes]:
        for arg in args:
            if type(arg) not in _PLAIN:
                return self.usual.pack(*args)  # type: ignore[no-any-return]
        first = args[0]
        if type(first) is int or len(first.split()) != 1:  # redis-py splits a command's words
            return self.usual.pack(*args)  # type: ignore[no-any-return]
        return [hiredis.pack_command(args)]


def packs_plainly(kwargs: dict[str, Any]) -> bool:
    """Whether connections made with ``kwargs`` encode texts as hiredis does
    (UTF-8, strictly: redis-py's default)."""
    return bool(kwargs.get("encoding", "utf-8").lower().replace("_", "-") in ("utf-8", "utf8")
                and kwargs.get("encoding_errors", "strict") == "strict")


def packed_class(base: type) -> type:
    """A subclass of connection class ``base`` whose connections pack plain
    commands with hiredis alone."""

    class Packed(base):  # type: ignore[misc]
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, **kw)
            usual = getattr(self, "_command_packer", None)
            if usual is not None:  # redis-py's hiredis serializer
                self._command_packer = _Packer(usual)

    Packed.__name__ = Packed.__qualname__ = base.__name__
    return Packed


def fast_packing(client: Redis) -> Redis:
    """``client`` (a standalone client not yet connected), its connections
    packing plain commands with hiredis alone."""
    pool = client.connection_pool
    if packs_plainly(pool.connection_kwargs):
        pool.connection_class = packed_class(pool.connection_class)
    return client
