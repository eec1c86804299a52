"""Ask the server, before an import writes anything, whether this
credential may make every kind of write the import will make.

For each group of records (a scope's values, a thread's events, the
settings, a raw record's key, ...) the first write the importer would send
for its first record is captured instead of sent, then queued between
``MULTI`` and ``DISCARD`` on one connection: the server checks the ACL of a
queued command (its command and its keys: a library function's declared
keys) and discards it unrun. A refusal there is a refusal the import would
meet halfway; here it comes before anything is written.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

from redis.exceptions import NoPermissionError, ResponseError

from . import keys as K
from .functions import refusals
from .raw import RawRow
from .topology import is_cluster

WRITES = frozenset({"FCALL", "HSET", "HSETNX", "ZADD", "XADD", "SET", "DEL"})
"""Commands an import's writes start with; anything else runs. That
includes FT.CREATE, which creating a missing index needs: an operator's
creates it (as the import would), another credential's is refused and
raises there, before anything is written."""


class _Captured(Exception):
    def __init__(self, command: tuple[Any, ...]) -> None:
        super().__init__("captured")
        self.command = command


async def capture(clients: list[Any], write: Callable[[], Awaitable[Any]]
                  ) -> tuple[Any, ...] | None:
    """The first write command ``write`` sends through any of ``clients``
    (its reads run), without sending it; None when it sends none."""
    unique = list({id(client): client for client in clients}.values())
    for client in unique:
        client.execute_command = _capturing(client.execute_command)
    try:
        await write()
    except _Captured as captured:
        return captured.command
    finally:
        for client in unique:
            del client.execute_command  # the class's method again
    return None


def _capturing(real: Callable[..., Awaitable[Any]]) -> Callable[..., Awaitable[Any]]:
    async def capturing(*args: Any, **options: Any) -> Any:
        if str(args[0]).upper() in WRITES:
            raise _Captured(args)
        return await real(*args, **options)

    return capturing


def raw_command(ns: str, row: RawRow) -> tuple[Any, ...]:
    """The first command that puts raw record ``row`` back (redismem.raw.restore)."""
    key = K.raw_key(ns, row.suffix)
    if row.shape == "hash":
        name, value = next(iter(row.content.items()))
        return ("HSETNX", key, name, value)
    if row.shape == "zset":
        member, score = row.content[0]
        return ("ZADD", key, "NX", score, member)
    return ("XADD", key, "*", *next(iter(row.content[0].items())))


def _key_of(command: tuple[Any, ...]) -> str:
    """A key of ``command``: what places it on a cluster node."""
    key = command[3] if str(command[0]).upper() == "FCALL" else command[1]
    return key.decode(errors="replace") if isinstance(key, bytes) else str(key)


async def check(client: Any, commands: list[tuple[Any, ...]]) -> None:
    """Queue each command between MULTI and DISCARD (one connection, on
    the command's node): none runs.

    Raises:
        PermissionDeniedError: the ACL refuses one; the message names it.
            Other errors are left to the import to meet and report.
    """
    for command in commands:
        refused = await _queued(client, command)
        if isinstance(refused, NoPermissionError) or (
                isinstance(refused, ResponseError) and str(refused).startswith("NOPERM")):
            with refusals(_key_of(command)):
                raise refused


async def _queued(client: Any, command: tuple[Any, ...]) -> Any:
    """The reply to ``command`` queued between MULTI and DISCARD on one
    connection (an error as a value); None, sending nothing, when this
    credential may not run MULTI (a role made before it was granted): then
    the command would run at once, so it is not sent."""
    if not is_cluster(client):
        async with client.client() as single:  # one connection: MULTI is per connection
            return await _on_one_connection(single.execute_command, command)
    node = cast(Any, client).get_node_from_key(_key_of(command))
    connection = node.acquire_connection()

    async def send(*args: Any) -> Any:
        await connection.send_packed_command(connection.pack_command(*args))
        return await connection.read_response()

    try:
        return await _on_one_connection(send, command)
    except BaseException:
        await connection.disconnect()
        raise
    finally:
        node.release(connection)


async def _on_one_connection(send: Callable[..., Awaitable[Any]],
                             command: tuple[Any, ...]) -> Any:
    try:
        await send("MULTI")
    except ResponseError:
        return None
    try:
        return await send(*command)
    except ResponseError as exc:
        return exc
    finally:
        await send("DISCARD")
