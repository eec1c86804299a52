"""One writer must not stop the server: a value of about 1 MiB (a limit an
admin may set; the default is 128 KiB) built to be slow to check is
checked in time linear in its size, and the server answers right after. Each runs on a
server of its own: before the fix a mebibyte of ``1.5e-300`` held the
server for 26 minutes (each number rescanned the rest of the array), so
this test failed by its timeout. Server time per size is measured by
``python scripts/bench.py json``, not asserted here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis.asyncio

import redismem
from redismem import keys as K
from redismem.server import EmbeddedServer

# token -> whether an array of it is valid JSON for redismem
ADVERSARIAL = {
    "1.5e-300": True,   # exponents of 3 digits: the quadratic case
    "1e300": True,
    "1e-1000": True,    # 4 digits, rounds to 0: finite
    "-2.5E+10": True,
    "3.25": True,
    "[[1,2],[3]]": True,
    '{"a":1.5e-300}': True,
    '"\\u00e9x\\n"': True,
    "1e309": False,     # out of range: refused at the first one
}


MIB = 1_048_576


@pytest.fixture(scope="module")
def stall_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = EmbeddedServer(Path(tmp_path_factory.mktemp("stalls")))
    yield server.start().url
    server.stop()


async def connect(url: str) -> redismem.Memory:
    """The namespace, with the value and call limits an admin raised to a mebibyte."""
    mem = await redismem.connect(url, namespace="stall")
    await mem.configure(max_value_bytes=MIB, max_call_bytes=MIB + 65_536)
    return mem


def mebibyte_of(token: str, tail: str = "") -> str:
    count = (MIB - 64) // (len(token) + 1)
    return "[" + ",".join([token] * count) + tail + "]"


@pytest.mark.parametrize("token", list(ADVERSARIAL))
async def test_a_mebibyte_of_slow_json_is_checked_and_the_server_answers(
        stall_url: str, token: str) -> None:
    async with await connect(stall_url) as mem:
        text = mebibyte_of(token)
        assert len(text) <= MIB
        call = mem._conn.functions.set_items("value", "stall", "session", "s", "", mem.principal,
                                              [("k", text, "")])
        if ADVERSARIAL[token]:
            assert (await call)[0] >= 1
            assert len(await mem.client.hget(K.value("stall", "session", "s", "k"), "v")
                       ) == len(text)
        else:
            with pytest.raises(redismem.InvalidValueError, match="finite double"):
                await call
        assert await mem.client.ping()


async def test_an_invalid_number_at_the_end_of_a_long_run_is_refused(stall_url: str) -> None:
    async with await connect(stall_url) as mem:
        scope = mem.session("s")
        for tail, why in ((",01", "leading zeros"), (",1e400", "finite double"),
                          (",1.", "digits after it")):
            with pytest.raises(redismem.InvalidValueError, match=why):
                await mem._conn.functions.set_items(
                    "value", "stall", "session", "s", "", mem.principal,
                    [("bad", mebibyte_of("1.5e-300", tail)[:MIB], "")])
        assert (await scope.get("bad")).found is False


async def test_the_facade_writes_a_mebibyte_of_small_floats(stall_url: str) -> None:
    """The probe's call, through the facade (1,044,001 bytes of JSON)."""
    client = redis.asyncio.Redis.from_url(stall_url)
    try:
        async with await connect(stall_url) as mem:
            scope = mem.session("abuse")
            assert (await scope.set("floats", [1.5e-300] * 116000)).revision == 1
            assert await client.ping()
            assert len((await scope.get("floats")).value) == 116000
    finally:
        await client.aclose()


@pytest.mark.parametrize("cut", [0, 1, 2])
async def test_a_refused_mebibyte_is_named_by_its_first_bytes_only(stall_url: str,
                                                                   cut: int) -> None:
    """An error message escaped the whole refused value before cutting it to
    80 bytes: a mebibyte of 'é' ending in a bad byte held the server 525 ms
    (72 ms now, measured by SLOWLOG). The message shows its start, never a
    broken UTF-8 sequence at the cut."""
    async with await connect(stall_url) as mem:
        text = b'"' + b"a" * cut + "é".encode() * 500_000 + b'\xff"'
        with pytest.raises(redismem.InvalidValueError) as info:
            await mem._conn.functions.set_items("value", "stall", "session", "s", "",
                                                 mem.principal, [("k", text, "")])
        message = str(info.value)
        assert len(message.encode()) < 400, message
        shown = message.split("'", 1)[1].rsplit("'", 1)[0]
        assert shown.startswith('"' + "a" * cut + "é") and shown.endswith("é..."), message
