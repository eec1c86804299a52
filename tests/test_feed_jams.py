"""Raw writes a writer may make to its own namespace's feed keys cannot
loop readers or jam writers: readers advance strictly by sequence, the
library refuses a counter or stream id past any real sequence before it
writes anything, `audit` reports each, and `redismem repair-feed` (an
admin's) restores the feed."""

from __future__ import annotations

import asyncio
import json

import pytest
import redis
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
    done = await repair_feed(rmem)
    assert done.sequence == 4
    assert done.removed == (() if damage == "counter" else (MAX_ID,))
    assert (await scope.set("k", "after the repair")).revision == 1
    events = (await rmem.changes(after=0)).items
    assert [e.sequence for e in events] == [1, 2, 3, 4, 5]
    assert await findings(rmem) == {}
    again = await repair_feed(rmem)  # a healthy feed stays as it is
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


async def test_a_counter_at_exactly_the_bound_is_refused_before_the_write(
        rmem: redismem.Memory) -> None:
    """SET seq 2^50 (the largest the library reads) made the library write
    event 2^50+1 itself, then refuse every later write."""
    ns, scope = rmem.namespace, rmem.session("s")
    await fill(rmem, 3)
    await rmem.client.set(K.sequence(ns), str(limits.MAX_SEQUENCE))
    before = await snapshot(rmem)
    with pytest.raises(redismem.FeedCorruptError,
                       match=f"the feed sequence is at {limits.MAX_SEQUENCE}: 1 more events "
                             f"would pass {limits.MAX_SEQUENCE}"):
        await scope.set("k", "refused")
    assert await snapshot(rmem) == before
    done = await repair_feed(rmem)  # a counter above the stream's last id was raised by hand
    assert (done.sequence, done.previous_counter) == (3, str(limits.MAX_SEQUENCE))
    await scope.set("k", "after the repair")
    assert [e.sequence for e in (await rmem.changes(after=0)).items] == [1, 2, 3, 4]


async def _write_until(mem: redismem.Memory, name: str, stop: asyncio.Event,
                       acked: list[tuple[str, int]], progress: asyncio.Condition) -> int:
    """Write fresh keys until ``stop``; record each acknowledged write. A
    write refused while the feed is jammed is not acknowledged: try again."""
    scope, n, refused = mem.session("s"), 0, 0
    while not stop.is_set():
        key = f"{name}-{n}"
        try:
            written = await scope.set(key, n)
        except redismem.FeedCorruptError:
            refused += 1
            await asyncio.sleep(0.001)
            continue
        acked.append((key, written.revision))
        n += 1
        async with progress:
            progress.notify_all()
    return refused


async def _forge_next_to_the_top(mem: redismem.Memory, tail: str) -> str:
    """XADD an entry ``<top's sequence>-<tail>``, racing the writers."""
    feed = K.feed(mem.namespace)
    while True:
        top = await mem.client.xrevrange(feed, count=1)
        forged = f"{top[0][0].decode().partition('-')[0]}-{tail}"
        try:
            await mem.client.execute_command("XADD", feed, forged, "key", "forged")
            return forged
        except redis.ResponseError:  # a writer appended first
            continue


@pytest.mark.parametrize("server_kind", ["bundled", "debian"])
async def test_repair_under_four_writers_loses_no_event(request: pytest.FixtureRequest,
                                                        server_kind: str, ns: str) -> None:
    """Four writers run while entries are forged between theirs, the feed
    is jammed (every write refused) and repair-feed runs: every
    acknowledged write has exactly one event, the sequence has no gap, and
    the forged entries are gone. On Redis 8 the repair copies the feed and
    swaps it in (the server cannot lower a last id past a deleted entry);
    on Debian's 7.0 it lowers the id in place. Before, the repair lost 189
    events and failed on "XSETID ... smaller than the top item"."""
    url = request.getfixturevalue("redis_url" if server_kind == "bundled" else "plain_redis")
    mems = [await redismem.connect(url, namespace=ns, principal=f"w{i}") for i in range(5)]
    repairer = mems.pop()
    acked: list[tuple[str, int]] = []
    stop, progress = asyncio.Event(), asyncio.Condition()

    async def acked_count(at_least: int) -> None:
        async with progress:
            await progress.wait_for(lambda: len(acked) >= at_least)

    try:
        writers = [asyncio.create_task(_write_until(m, f"w{i}", stop, acked, progress))
                   for i, m in enumerate(mems)]
        await asyncio.wait_for(acked_count(100), 60)
        forged = [await _forge_next_to_the_top(repairer, "5")]
        await asyncio.wait_for(acked_count(len(acked) + 40), 60)
        forged.append(await _forge_next_to_the_top(repairer, "7"))
        await repairer.client.execute_command("XADD", K.feed(ns), MAX_ID, "key", "forged")
        forged.append(MAX_ID)
        done = await repair_feed(repairer)
        assert sorted(done.removed) == sorted(forged)
        await asyncio.wait_for(acked_count(len(acked) + 100), 60)
        stop.set()
        refused = await asyncio.gather(*writers)
    finally:
        stop.set()
        for m in (*mems, repairer):
            await m.close()
    assert sum(refused) > 0  # the jam was in force until the repair
    async with await redismem.connect(url, namespace=ns) as mem:
        events, cursor = [], 0
        while page := (await mem.changes(after=cursor, limit=1000)).items:
            events += page
            cursor = page[-1].sequence
        assert [e.error for e in events if e.error] == []
        assert [e.sequence for e in events] == list(range(1, len(events) + 1))
        assert sorted((e.key, e.revision) for e in events) == sorted(acked)
        assert await findings(mem) == {}
