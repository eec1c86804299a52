"""Raw writes a writer may make to its own namespace's feed keys cannot
loop readers or jam writers: readers advance strictly by sequence, the
library refuses a counter or stream id past any real sequence before it
writes anything, `audit` reports each, and `redismem repair-feed` (an
admin's) restores the feed."""

from __future__ import annotations

import asyncio
import json

import pytest
from click.testing import CliRunner

import redismem
from redismem import keys as K
from redismem import limits
from redismem.audit import audit
from redismem.cli import main
from redismem.repair import repair_feed

from .helpers import snapshot

MAX_ID = "18446744073709551615-18446744073709551615"


async def fill(mem: redismem.Memory, n: int) -> None:
    for i in range(n):
        await mem.session("s").set(f"k{i}", i)


async def findings(mem: redismem.Memory) -> dict[str, str]:
    return {f.key: f.problem async for f in audit(mem)}


async def test_a_forged_entry_beside_a_real_one_is_read_once(rmem: redismem.Memory) -> None:
    await fill(rmem, 8)  # sequences 1..8
    await rmem.client.execute_command("XADD", K.feed(rmem.namespace), "8-5", "key", "forged")
    page = await rmem.changes(after=5, limit=5)
    assert [e.sequence for e in page.items] == [6, 7, 8]
    assert page.next_cursor == 8
    assert (await rmem.changes(after=8)).items == []
    await rmem.session("s").set("k9", 9)  # 9-0 follows 8-5
    assert await _watch_once(rmem, 5, 9) == [6, 7, 8, 9]


async def test_a_forged_entry_without_a_real_one_is_reported_once(rmem: redismem.Memory) -> None:
    await fill(rmem, 3)
    await rmem.client.execute_command("XADD", K.feed(rmem.namespace), "4-5", "key", "forged")
    page = await rmem.changes(after=3)
    assert [(e.sequence, e.error is not None) for e in page.items] == [(4, True)]
    assert (await rmem.changes(after=4)).items == []
    await rmem.session("s").set("after", 1)  # 4-0 cannot follow 4-5: the library takes 5
    events = (await rmem.changes(after=3)).items
    assert [(e.sequence, e.key) for e in events] == [(4, "forged"), (5, "after")]
    assert "not <sequence>-0" in (await findings(rmem))[f"{K.feed(rmem.namespace)} 4-5"]


async def _watch_once(mem: redismem.Memory, after: int, until: int) -> list[int]:
    got: list[int] = []
    async for event in mem.watch("*", after=after):
        got.append(event.sequence)
        if event.sequence >= until:
            break
    return got


async def test_watch_yields_each_sequence_once_past_a_forged_entry(rmem: redismem.Memory) -> None:
    await fill(rmem, 6)
    await rmem.client.execute_command("XADD", K.feed(rmem.namespace), "6-9", "key", "forged")
    watching = asyncio.create_task(_watch_once(rmem, 4, 7))
    await rmem.session("s").set("next", 1)  # sequence 7
    assert await asyncio.wait_for(watching, 10) == [5, 6, 7]


@pytest.mark.parametrize("damage", ["counter", "stream id"])
async def test_a_jammed_feed_is_refused_reported_and_repaired(rmem: redismem.Memory,
                                                              damage: str) -> None:
    ns, scope = rmem.namespace, rmem.session("s")
    await fill(rmem, 4)
    if damage == "counter":
        await rmem.client.set(K.sequence(ns), str(2**53 - 1))
    else:
        await rmem.client.execute_command("XADD", K.feed(ns), MAX_ID, "key", "forged")
    before = await snapshot(rmem)
    with pytest.raises(redismem.FeedCorruptError,
                       match=f"repair-feed --namespace {ns}\\)") as refused:
        await scope.set("k", "refused")
    if damage == "counter":  # the bound as an integer, not 1.1258999068426e+15
        assert "not a count of at most 1125899906842624 " in str(refused.value)
    assert await snapshot(rmem) == before  # refused before anything was written
    assert f"redismem repair-feed --namespace {ns}`" in "".join(
        (await findings(rmem)).values())
    done = await repair_feed(rmem.client, ns)
    assert done.sequence == 4
    assert done.removed == (() if damage == "counter" else (MAX_ID,))
    assert (await scope.set("k", "after the repair")).revision == 1
    events = (await rmem.changes(after=0)).items
    assert [e.sequence for e in events] == [1, 2, 3, 4, 5]
    assert await findings(rmem) == {}
    again = await repair_feed(rmem.client, ns)  # a healthy feed stays as it is
    assert (again.removed, again.sequence) == ((), 5)


async def test_a_huge_feed_size_does_not_trim_the_feed(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    await fill(rmem, 5)
    await rmem.client.set(K.feed_size(ns), "9999999999999999")
    assert "not a feed size" in (await findings(rmem))[K.feed_size(ns)]
    await fill(rmem, 40)
    assert await rmem.client.xlen(K.feed(ns)) == 45
    assert int(await rmem.client.get(K.feed_size(ns))) < limits.FEED_MAX_BYTES


async def test_watch_from_now_with_a_counter_that_is_not_a_number(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    await fill(rmem, 3)
    await rmem.client.set(K.sequence(ns), "abc")
    watching = asyncio.create_task(_watch_once(rmem, None, 1))  # type: ignore[arg-type]
    await asyncio.sleep(0)
    assert not watching.done()
    await rmem.client.execute_command("XADD", K.feed(ns), "4-0", "key", "raw")
    assert await asyncio.wait_for(watching, 10) == [4]
    assert "not a sequence" in (await findings(rmem))[K.sequence(ns)]


def test_repair_feed_command(redis_url: str, ns: str) -> None:
    async def jam() -> None:
        async with await redismem.connect(redis_url, namespace=ns) as mem:
            await fill(mem, 2)
            await mem.client.execute_command("XADD", K.feed(ns), MAX_ID, "key", "forged")

    asyncio.run(jam())
    out = CliRunner().invoke(main, ["audit", "--url", redis_url, "--namespace", ns])
    assert out.exit_code == 1 and "repair-feed" in out.output
    out = CliRunner().invoke(main, ["repair-feed", "--url", redis_url, "--namespace", ns,
                                    "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output) == {"removed": [MAX_ID], "sequence": 2,
                                      "previous_counter": "2", "feed_bytes": json.loads(
                                          out.output)["feed_bytes"]}
    out = CliRunner().invoke(main, ["audit", "--url", redis_url, "--namespace", ns])
    assert out.exit_code == 0, out.output
