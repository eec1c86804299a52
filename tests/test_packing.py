"""redismem's connections pack plain commands with hiredis alone
(redismem/_packing.py): the bytes sent must be the very bytes redis-py's own
serializer sends, and what redis-py refuses must still be refused."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio import Redis
from redis.asyncio.connection import Connection

from redismem._packing import _Packer, fast_packing

ARGS = st.one_of(st.text(), st.text(st.characters(categories=["Cs"])),  # lone surrogates
                 st.binary(), st.integers(), st.floats(allow_nan=False), st.booleans(),
                 st.binary().map(memoryview), st.none())
NAMES = st.one_of(st.sampled_from(["FCALL", "HSET", "CONFIG GET", "client  list", "GET\tx"]),
                  st.text(min_size=1), st.binary(min_size=1))


def _packed(pack: Any, args: tuple[Any, ...]) -> Any:
    try:
        return b"".join(bytes(part) for part in pack(*args))
    except Exception as exc:  # compared by type
        return type(exc).__name__


@given(NAMES, st.lists(ARGS, max_size=30))
def test_the_bytes_are_redis_pys(name: Any, rest: list[Any]) -> None:
    usual = Connection()._command_packer
    args = (name, *rest)
    assert _packed(_Packer(usual).pack, args) == _packed(usual.pack, args)


async def test_a_client_of_redismem_packs_plain_commands_with_hiredis(redis_url: str) -> None:
    from redismem.client import open_client

    client = await open_client(redis_url)
    try:
        await client.set("packing:k", "é\x00\xff")
        assert await client.get("packing:k") == "é\x00\xff".encode()
        connection = await client.connection_pool.get_connection()
        try:
            assert isinstance(connection._command_packer, _Packer)
        finally:
            await client.connection_pool.release(connection)
    finally:
        await client.delete("packing:k")
        await client.aclose()
    latin = fast_packing(Redis.from_url(redis_url, encoding="latin-1"))
    assert not isinstance(latin.connection_pool.make_connection()._command_packer, _Packer)
    await latin.aclose()


async def test_a_cluster_clients_node_connections_pack_with_hiredis(redis_cluster: Any) -> None:
    from redismem.client import open_client

    client = await open_client(redis_cluster.url)
    try:
        for i in range(20):  # keys on every node
            await client.set(f"packing:{i}", f"é{i}")
            assert await client.get(f"packing:{i}") == f"é{i}".encode()
        packers = {type(connection._command_packer) for node in client.get_nodes()
                   for connection in node._connections}
        assert packers == {_Packer}
    finally:
        for i in range(20):
            await client.delete(f"packing:{i}")
        await client.aclose()
