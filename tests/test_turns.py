"""Session turns: one holder at a time, fencing tokens that never repeat (a
turn's token is the feed sequence of its acquire event), waiters served in
arrival order, every acquire, release and expiry in the feed."""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import os
import signal
import subprocess
import sys
from typing import Any

import pytest
import redis

import redismem
from redismem import feed, turns
from redismem import keys as K
from redismem.library import bundled
from redismem.turns import Turn

from .helpers import snapshot
from .test_cli import run_script


async def feed_events(mem: redismem.Memory) -> list[redismem.MemoryChangeEvent]:
    page = await feed.read_page(mem.client, mem.namespace, 0, 1000, feed.EventFilter())
    return page.items


async def turn_events(mem: redismem.Memory) -> list[tuple[str, str, int]]:
    """(action, holder, token) of every turn event in the feed, in order;
    checks that each acquire's token is its own sequence."""
    events = [e for e in await feed_events(mem) if e.kind == "turn"]
    assert all(e.revision == e.sequence for e in events if e.action == "acquire"), events
    return [(e.action, e.key, e.revision) for e in events]


async def queued(mem: redismem.Memory, scope: str, sid: str, count: int) -> None:
    """Wait until ``count`` waiters are queued for the turn."""
    key = K.turn_queue(mem.namespace, scope, sid)
    while await mem.client.zcard(key) != count:
        await asyncio.sleep(0.001)


@pytest.mark.on_cluster
async def test_a_turn_has_one_holder_and_tokens_increase(mem: redismem.Memory) -> None:
    scope = mem.session("s1")
    first = await scope.acquire_turn(ttl_seconds=30)
    assert first.token == 1 and first.holder.startswith("tester/")
    with pytest.raises(redismem.TurnTimeoutError, match=r"no turn of session:s1 within 0 s; "
                                                         r"tester/\S+ holds it") as caught:
        await scope.acquire_turn(wait_seconds=0)
    assert caught.value.holder == first.holder
    assert await first.release() is True
    assert await first.release() is False  # once
    second = await scope.acquire_turn()  # event 3: the release was event 2
    assert second.token == 3 and second.holder != first.holder
    # another scope's turn draws its token from the same sequence
    other = await mem.workflow("w1").acquire_turn()
    assert other.token == 4
    await second.release()
    await other.release()
    assert await turn_events(mem) == [
        ("acquire", first.holder, 1), ("release", first.holder, 1),
        ("acquire", second.holder, 3), ("acquire", other.holder, 4),
        ("release", second.holder, 3), ("release", other.holder, 4)]
    events = [e for e in await feed_events(mem) if e.kind == "turn"]
    assert {(e.scope, e.scope_id) for e in events} == {("session", "s1"), ("workflow", "w1")}
    assert {e.principal for e in events} == {"tester"}


async def test_a_lapsed_turn_goes_to_the_next_and_the_old_holder_learns_it(
        mem: redismem.Memory) -> None:
    scope = mem.session("s1")
    old = await scope.acquire_turn(ttl_seconds=0.2)
    new = await scope.acquire_turn(ttl_seconds=30)  # waits for the lapse
    assert new.token == old.token + 2  # after the expire event
    with pytest.raises(redismem.TurnLostError, match=r"turn 1 of session:s1 was lost: "
                                                     r"token 3 is held by 'tester/"):
        await old.renew()
    assert old.lost is not None
    assert await old.release() is False
    assert (await new.renew()) >= new.expires_at
    await new.release()
    assert await turn_events(mem) == [
        ("acquire", old.holder, 1), ("expire", old.holder, 1), ("acquire", new.holder, 3),
        ("release", new.holder, 3)]


async def test_a_lapsed_turn_nobody_took_can_be_renewed(mem: redismem.Memory) -> None:
    turn = await mem.session("s1").acquire_turn(ttl_seconds=0.1)
    key = K.turn(mem.namespace, "session", "s1")
    while int(await mem.client.hget(key, "exp")) > redismem.now_ms():
        await asyncio.sleep(0.01)
    await turn.renew(30)  # its token is still the latest
    assert await turn.release() is True


async def test_the_context_manager_renews_in_the_background_and_releases(
        mem: redismem.Memory) -> None:
    scope = mem.session("s1")
    key = K.turn(mem.namespace, "session", "s1")
    async with scope.turn(ttl_seconds=0.3) as turn:
        seen = {await mem.client.hget(key, "exp")}
        while len(seen) < 4:  # three renewals: a whole ttl has passed
            seen.add(await mem.client.hget(key, "exp"))
            await asyncio.sleep(0.01)
        with pytest.raises(redismem.TurnTimeoutError):
            await scope.acquire_turn(wait_seconds=0)
    assert turn.lost is None
    assert await mem.client.hget(key, "holder") is None
    assert (await scope.acquire_turn(wait_seconds=0)).token == 3  # after the release


async def test_leaving_a_block_whose_turn_was_taken_raises(mem: redismem.Memory) -> None:
    scope = mem.session("s1")
    with pytest.raises(redismem.TurnLostError, match="was lost before the block ended"):
        async with scope.turn(ttl_seconds=0.2) as turn:
            await turn._stop_renewing()  # as a process paused past its ttl would
            taker = await scope.acquire_turn()
    assert taker.token == turn.token + 2  # after the expire event
    await taker.release()
    # an exception of the block itself is not replaced
    with pytest.raises(KeyError):
        async with scope.turn(ttl_seconds=0.2, wait_seconds=5) as turn:
            await turn._stop_renewing()
            raise KeyError("mine")


@pytest.mark.on_cluster
async def test_a_renewal_in_flight_ends_with_its_turn(mem: redismem.Memory,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    """Leaving a turn waits for a renewal already in flight: it never runs
    on after the turn ended, to report the turn lost while this worker
    holds its next one (seen in a fleet run: "turn 1 of session:s1 was
    lost: token 3 is held by" the worker's own next turn)."""
    scope = mem.session("s1")
    functions = mem._conn.functions
    real = functions.turn_renew
    entered, gate = asyncio.Event(), asyncio.Event()

    async def in_flight(*args: Any) -> int:
        entered.set()
        try:
            await gate.wait()
        except asyncio.CancelledError:  # a reply already on its way is read anyway
            await gate.wait()
        return await real(*args)

    monkeypatch.setattr(functions, "turn_renew", in_flight)
    with caplog.at_level(logging.WARNING, logger="redismem.turns"):
        async with scope.turn(ttl_seconds=0.3) as turn:
            await entered.wait()
            renewal = turn._renewer
            assert renewal is not None
            asyncio.get_running_loop().call_later(0.1, gate.set)
        assert renewal.done()  # ended with the turn
        monkeypatch.setattr(functions, "turn_renew", real)
        async with scope.turn(ttl_seconds=0.3) as following:
            assert following.token == 3
            await asyncio.wait([renewal], timeout=5)
    assert turn.lost is None and following.lost is None
    assert [r.getMessage() for r in caplog.records] == []


async def test_turn_events_can_be_told_from_value_events(mem: redismem.Memory,
                                                        redis_url: str) -> None:
    """A turn event's key is its holder id, which a key pattern may match:
    kind= (and changes --kind) keeps them apart."""
    scope = mem.session("s1")
    async with scope.turn() as turn:
        await scope.set(turn.holder, "a value named like the holder")
    turns_only = (await mem.changes(after=0, kind="turn")).items
    assert [e.action for e in turns_only] == ["acquire", "release"]
    values = (await scope.changes(after=0, kind="value")).items
    assert [(e.kind, e.key) for e in values] == [("value", turn.holder)]
    watched = [e.action async for e in _first(mem.watch("*", after=0, kind="turn"), 2)]
    assert watched == ["acquire", "release"]
    with pytest.raises(redismem.InvalidArgumentError, match="kind must be one of"):
        await mem.changes(kind="values")
    if mem.capabilities.backend == "redis":
        done = run_script("changes", "--namespace", mem.namespace, "--kind", "value",
                          "--pattern", f"{turn.holder[:3]}*", url=redis_url)
        assert done.returncode == 0 and len(done.stdout.splitlines()) == 1, done.stdout
        assert " set value session:s1 " in done.stdout


async def _first(events: Any, count: int) -> Any:
    async for event in events:
        yield event
        count -= 1
        if count == 0:
            return


async def test_five_waiters_are_served_in_arrival_order_and_a_cancelled_one_leaves(
        mem: redismem.Memory) -> None:
    scope = mem.session("s1")
    first = await scope.acquire_turn()
    served: list[int] = []

    async def wait(n: int) -> None:
        async with scope.turn() as turn:
            served.append(n)
            assert turn.token == 2 * len(served) + 1  # after each release

    tasks = []
    for n in range(5):
        tasks.append(asyncio.create_task(wait(n)))
        await queued(mem, "session", "s1", n + 1)
    tasks[2].cancel()
    await queued(mem, "session", "s1", 4)
    await first.release()
    await asyncio.gather(*tasks[:2], *tasks[3:])
    assert served == [0, 1, 3, 4]
    assert await mem.client.zcard(K.turn_queue(mem.namespace, "session", "s1")) == 0
    assert await mem.client.keys(K.turn(mem.namespace, "session", "s1") + ":w:*") == []


async def test_a_waiter_that_times_out_leaves_the_queue(mem: redismem.Memory) -> None:
    scope = mem.session("s1")
    holder = await scope.acquire_turn()
    with pytest.raises(redismem.TurnTimeoutError, match=r"within 0\.05 s"):
        await scope.acquire_turn(wait_seconds=0.05)
    assert await mem.client.zcard(K.turn_queue(mem.namespace, "session", "s1")) == 0
    await holder.release()


async def test_a_dead_waiter_is_skipped_once_its_lease_passed(rmem: redismem.Memory) -> None:
    """A waiter that died without leaving (no release) keeps its place only
    for its lease."""
    ns = rmem.namespace
    holder = await rmem.session("s1").acquire_turn()
    functions = rmem._conn.functions
    granted, *_ = await functions.turn_acquire(ns, "session", "s1", "tester", "tester/ghost",
                                               30_000, 100)
    assert not granted
    await holder.release()  # wakes the ghost, which never comes
    turn = await rmem.session("s1").acquire_turn(wait_seconds=5)
    assert turn.token == 3


@pytest.mark.parametrize("bad", [{"ttl_seconds": 0.01}, {"ttl_seconds": 90_000},
                                 {"ttl_seconds": True}, {"wait_seconds": -1},
                                 {"wait_seconds": "5"}])
async def test_bad_turn_arguments_are_refused(rmem: redismem.Memory, bad: dict[str, Any]
                                              ) -> None:
    with pytest.raises(redismem.InvalidArgumentError):
        await rmem.session("s1").acquire_turn(**bad)
    with pytest.raises(redismem.InvalidArgumentError, match="session and workflow scopes"):
        await rmem.global_scope().acquire_turn()
    assert await rmem.client.keys(K.turns_pattern(rmem.namespace)) == []


def fcall(conn: redis.Redis, name: str, keys: list[str], args: list[Any]) -> Any:
    return conn.fcall(f"redismem_{name}", len(keys), *keys, *args)


def turn_keys(ns: str, sid: str, holder: str, name: str = "turn_acquire") -> list[str]:
    keys = [K.turn(ns, "session", sid), K.turn_queue(ns, "session", sid), K.sequence(ns),
            K.feed_size(ns), K.principal(ns, "p"), K.turn_wake(ns, "session", sid, holder)]
    return [*keys, K.turns(ns)] if name == "turn_acquire" else keys


@pytest.mark.parametrize(("name", "change", "error"), [
    ("turn_acquire", {1: "actor"}, "INVALID_ARGUMENT turns are taken in session and workflow"),
    ("turn_acquire", {5: "99"}, "INVALID_ARGUMENT ttl in milliseconds must be between 100"),
    ("turn_acquire", {6: "-1"}, "INVALID_ARGUMENT waiter lease in milliseconds must be"),
    ("turn_acquire", {4: "a b"}, "INVALID_ID holder must not contain"),
    ("turn_acquire", {3: "q", 4: "q/h"}, "INVALID_ARGUMENT KEYS\\[5\\] must be"),
    ("turn_release", {5: "x"}, "INVALID_ARGUMENT token must be an integer"),
    ("turn_renew", {5: "0"}, "INVALID_ARGUMENT token must be between 1"),
    # a holder id is its principal's: no principal renews, releases or takes another's
    ("turn_acquire", {4: "q/h"}, "INVALID_ARGUMENT holder 'q/h' is not one of principal 'p'"),
    ("turn_release", {4: "q/h"}, "INVALID_ARGUMENT holder 'q/h' is not one of principal 'p'"),
    ("turn_renew", {4: "q/h"}, "INVALID_ARGUMENT holder 'q/h' is not one of principal 'p'"),
    ("turn_acquire", {4: "p/"}, "INVALID_ARGUMENT holder 'p/' is not one of principal 'p'"),
])
def test_the_lua_functions_refuse_bad_calls_and_change_nothing(
        lua_client: redis.Redis, name: str, change: dict[int, str], error: str) -> None:
    ns = "tbad" + name
    args = {"turn_acquire": [ns, "session", "s", "p", "p/h", "1000", "0"],
            "turn_release": [ns, "session", "s", "p", "p/h", "1"],
            "turn_renew": [ns, "session", "s", "p", "p/h", "1", "1000"]}[name]
    for slot, value in change.items():
        args[slot] = value
    keys = turn_keys(ns, "s", "p/h", name)
    if name == "turn_renew":
        keys = [keys[0], K.principal(ns, "p")]
    with pytest.raises(redis.ResponseError, match=f"^{error}"):
        fcall(lua_client, name, keys, args)
    assert lua_client.keys(f"rm:{{{ns}}}:*") == []


async def test_a_flooded_wake_list_is_emptied_by_the_waiters_next_look(
        rmem: redismem.Memory) -> None:
    """A raw LPUSH of 100,000 items onto a waiter's wake list made it spin
    (an FCALL per item): each acquire call now empties the caller's list."""
    ns, functions = rmem.namespace, rmem._conn.functions
    held = await rmem.session("s1").acquire_turn()
    granted, *_ = await functions.turn_acquire(ns, "session", "s1", "tester", "tester/w",
                                               30_000, 15_000)
    assert not granted
    wake = K.turn_wake(ns, "session", "s1", "tester/w")
    await rmem.client.lpush(wake, *(["junk"] * 100_000))
    granted, *_ = await functions.turn_acquire(ns, "session", "s1", "tester", "tester/w",
                                               30_000, 15_000)
    assert not granted and await rmem.client.llen(wake) == 0
    await held.release()  # frees the turn and wakes the waiter: one item
    assert await rmem.client.llen(wake) == 1
    granted, *_ = await functions.turn_acquire(ns, "session", "s1", "tester", "tester/w",
                                               30_000, 15_000)
    assert granted and await rmem.client.exists(wake) == 0


def test_a_token_that_is_not_a_number_is_refused(lua_client: redis.Redis) -> None:
    ns = "tcorrupt"
    lua_client.hset(K.turn(ns, "session", "s"), "token", "lots")
    with pytest.raises(redis.ResponseError, match=r"^TURN_CORRUPT field token of"):
        fcall(lua_client, "turn_acquire", turn_keys(ns, "s", "p/h"),
              [ns, "session", "s", "p", "p/h", "1000", "0"])
    assert lua_client.hgetall(K.turn(ns, "session", "s")) == {b"token": b"lots"}
    assert lua_client.exists(K.feed(ns)) == 0


CONTENDER = """
import asyncio, os, sys
import redismem

async def main(url, ns, turns):
    async with await redismem.connect(url, namespace=ns) as mem:
        scope = mem.session("contended")
        for _ in range(turns):
            async with scope.turn(ttl_seconds=10) as turn:
                await scope.append("history", ["enter", turn.token, os.getpid()])
                await asyncio.sleep(0)
                await scope.append("history", ["leave", turn.token, os.getpid()])

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


async def test_two_processes_contend_200_times_without_overlap(rmem: redismem.Memory,
                                                                 redis_url: str) -> None:
    """The history of the appends each holder makes on entering and leaving
    (in the server's order) alternates enter/leave of one holder at a time,
    and its tokens increase with each turn: four events apart, the acquire,
    two appends and the release."""
    workers = [subprocess.Popen([sys.executable, "-c", CONTENDER, redis_url, rmem.namespace,
                                 "100"]) for _ in range(2)]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0]
    history = (await rmem.session("contended").get("history")).value
    assert len(history) == 400
    for n, (enter, leave) in enumerate(zip(history[::2], history[1::2], strict=True)):
        assert enter == ["enter", 4 * n + 1, enter[2]], history[2 * n - 2: 2 * n + 2]
        assert leave == ["leave", 4 * n + 1, enter[2]]
    assert {entry[2] for entry in history} == {w.pid for w in workers}
    events = await turn_events(rmem)
    assert [(action, token) for action, _, token in events] == [
        (action, 4 * n + 1) for n in range(200) for action in ("acquire", "release")]


def test_the_library_registers_the_turn_functions() -> None:
    code = bundled().code
    for name in ("turn_acquire", "turn_release", "turn_renew"):
        assert f"register('redismem_{name}'" in code


async def lapsed_turn(scope: redismem.MemoryScope) -> tuple[Turn, Turn]:
    """A turn of this task that lapsed, and the later turn another task took."""
    old = await scope.acquire_turn(ttl_seconds=0.1)
    new = await asyncio.create_task(scope.acquire_turn(ttl_seconds=30))
    return old, new


async def test_every_write_of_a_stale_turn_is_refused_and_changes_nothing(
        rmem: redismem.Memory, redis_url: str) -> None:
    scope = rmem.session("s1")
    await scope.set("k", "before")
    await scope.set_vector("v", [1.0, 0.0])
    store = redismem.RedisMemoryStore(redis_url, namespace=rmem.namespace)
    await store.setup()
    await store.append_event(redismem.MemoryEvent("e0", "s1", None, "message", 1, {}))
    old, new = await lapsed_turn(scope)
    before = await snapshot(rmem)
    writes = [scope.set("k", "late"), scope.set_many({"k": 1, "j": 2}), scope.delete("k"),
              scope.update("k", lambda v: "late"), scope.incr("n"), scope.append("l", 1),
              scope.merge("o", {"a": 1}), scope.set_vector("v", [0.0, 1.0]),
              scope.set_vectors([("w", [1.0, 1.0])]), scope.delete_vector("v"),
              rmem.session("s1").set("k", "through another scope object"),
              store.append_event(redismem.MemoryEvent("e1", "s1", None, "message", 1, {}))]
    for write in writes:
        with pytest.raises(redismem.StaleTurnError,
                           match=rf"turn token {old.token} is stale: session:s1 "
                                 rf"is at token {new.token}") as caught:
            await write
        assert (caught.value.code, caught.value.token, caught.value.current) == (
            "stale_turn", old.token, new.token)
    assert await snapshot(rmem) == before
    # writes without a token (code outside the turn, other scopes and threads) are not fenced
    await asyncio.create_task(scope.set("k", "untokened"), context=contextvars.Context())
    await rmem.session("s2").set("k", 1)
    await store.append_event(redismem.MemoryEvent("e1", "t2", None, "message", 1, {}))
    await store.close()
    # the holder of the latest turn writes with its token
    assert turns.token_arg(rmem.namespace, "session", "s1") == str(old.token)
    await old.release()
    assert turns.token_arg(rmem.namespace, "session", "s1") == ""
    await new.release()


async def test_writes_inside_a_turn_carry_its_token(rmem: redismem.Memory) -> None:
    scope = rmem.session("s1")
    async with scope.turn() as turn:
        assert turns.token_arg(rmem.namespace, "session", "s1") == str(turn.token)
        assert turns.token_arg(rmem.namespace, "session", "s2") == ""
        await scope.set("k", 1)
        await asyncio.create_task(scope.set("k", 2))  # a task it starts carries it too
    assert turns.token_arg(rmem.namespace, "session", "s1") == ""
    assert (await scope.get("k")).value == 2


def raw_set(ns: str, token: str, value: str) -> list[Any]:
    keys = [*K.scope_writes(ns, "value", "session", "s1", "p"), K.value(ns, "session", "s1", "k")]
    return ["redismem_set_values", len(keys), *keys, ns, "session", "s1", "", "p", "", token,
            "k", value, ""]


async def test_a_raw_fcall_with_an_old_token_is_refused(rmem: redismem.Memory) -> None:
    scope = rmem.session("s1")
    old, new = await lapsed_turn(scope)
    assert (old.token, new.token) == (1, 3)  # the lapse's expire event was 2
    ns = rmem.namespace
    assert await rmem.client.execute_command("FCALL", *raw_set(ns, "3", '"new"')) == [1]
    before = await snapshot(rmem)
    for token, message in (("1", "STALE_TURN turn token 1 is stale: session:s1 is at token 3"),
                           ("2", "STALE_TURN turn token 2 is stale: session:s1 is at token 3"),
                           ("4", "STALE_TURN turn token 4 was never issued: session:s1 is at "
                                 "token 3"),
                           ("0", "INVALID_ARGUMENT turn token must be between 1"),
                           (str(2**50 + 1), "INVALID_ARGUMENT turn token must be between 1")):
        with pytest.raises(redis.ResponseError, match=f"^{message}"):
            await rmem.client.execute_command("FCALL", *raw_set(ns, token, '"old"'))
    assert await snapshot(rmem) == before
    await new.release()


PAUSED = """
import asyncio, sys
import redismem

async def main(url, ns):
    async with await redismem.connect(url, namespace=ns, principal="a") as mem:
        scope = mem.session("s1")
        try:
            async with scope.turn(ttl_seconds=0.5) as turn:
                print("token", turn.token, flush=True)
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
                await scope.set("owner", "A")
                print("written", flush=True)
        except redismem.StaleTurnError as exc:
            print(exc.code, exc.token, exc.current, flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.mark.parametrize("between", ["lapse", "DEL", "PEXPIRE"])
async def test_a_worker_paused_past_its_turn_cannot_write_over_its_successor(
        rmem: redismem.Memory, redis_url: str, between: str) -> None:
    """A is stopped inside its turn; B takes the turn once A's lapsed, or at
    once after a writer's raw DEL or PEXPIRE of the turn hash (which made
    tokens start again at 1, so B's token was A's and A's write went
    through). A's write after it resumes is refused."""
    scope = rmem.session("s1")
    key = K.turn(rmem.namespace, "session", "s1")
    with subprocess.Popen([sys.executable, "-c", PAUSED, redis_url, rmem.namespace],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as a:
        assert a.stdout is not None and a.stdin is not None
        try:
            assert a.stdout.readline() == "token 1\n"
            os.kill(a.pid, signal.SIGSTOP)  # as a long GC pause or a stalled VM would
            if between == "DEL":
                await rmem.client.delete(key)
            elif between == "PEXPIRE":
                await rmem.client.pexpire(key, 1)
                while await rmem.client.exists(key):
                    await asyncio.sleep(0.001)
            async with scope.turn(wait_seconds=30) as b:  # granted once A's turn lapsed
                assert b.token == (3 if between == "lapse" else 2)  # 2: lapse's expire event
                await scope.set("owner", "B")
                os.kill(a.pid, signal.SIGCONT)
                a.stdin.write("go\n")
                a.stdin.flush()
                assert await asyncio.to_thread(a.stdout.readline) == f"stale_turn 1 {b.token}\n"
            assert await asyncio.to_thread(a.wait, 60) == 0
        finally:
            if a.poll() is None:
                os.kill(a.pid, signal.SIGCONT)
                a.kill()
    assert (await scope.get("owner")) == redismem.MemoryValue("B", 1, True)
    expected = [("acquire", 1), ("expire", 1), ("acquire", 3), ("release", 3)] \
        if between == "lapse" else [("acquire", 1), ("acquire", 2), ("release", 2)]
    assert [(action, token) for action, _, token in await turn_events(rmem)] == expected


async def test_the_turns_command_shows_holders_tokens_expiry_and_waiters(
        rmem: redismem.Memory, redis_url: str) -> None:
    ns = rmem.namespace
    held = await rmem.session("s1").acquire_turn(ttl_seconds=60)
    waiter = asyncio.create_task(rmem.session("s1").acquire_turn())
    await queued(rmem, "session", "s1", 1)
    await (await rmem.workflow("w1").acquire_turn()).release()
    (holder_id,) = [w.decode() for w in
                    await rmem.client.zrange(K.turn_queue(ns, "session", "s1"), 0, -1)]
    done = await asyncio.to_thread(run_script, "turns", "--namespace", ns, "--json",
                                   url=redis_url)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [
        {"scope": "session", "scope_id": "s1", "token": 1, "holder": held.holder,
         "principal": "tester", "expires_at": int(held.expires_at.timestamp() * 1000),
         "waiters": 1, "queue": [holder_id]},
        {"scope": "workflow", "scope_id": "w1", "token": 2, "holder": None, "principal": None,
         "expires_at": None, "waiters": 0, "queue": []}]
    text = await asyncio.to_thread(run_script, "turns", "--namespace", ns, "--scope",
                                   "session:s1", url=redis_url)
    assert text.stdout == (f"session:s1  token 1  held by {held.holder} (tester) until "
                           f"{held.expires_at.isoformat(timespec='milliseconds')[:-6]}Z, "
                           f"1 waiting: {holder_id}\n")
    await held.release()
    await (await waiter).release()
    for bad in ("global", "actor:me", "session:a:b"):
        refused = await asyncio.to_thread(run_script, "turns", "--namespace", ns, "--scope",
                                          bad, url=redis_url)
        assert refused.returncode == 2 and "--scope" in refused.stderr, refused.stderr


async def test_a_waiter_that_gives_up_gives_back_a_turn_whose_grant_it_never_read(
        rmem: redismem.Memory) -> None:
    """A waiter cancelled while its acquire call was in flight may have been
    granted the turn without learning it: leaving (token None) gives it back
    at once instead of holding the session for a whole ttl."""
    functions, ns = rmem._conn.functions, rmem.namespace
    granted, token, *_ = await functions.turn_acquire(ns, "session", "s1", "tester", "tester/h1",
                                                      30_000, 15_000)
    assert granted and token == 1
    assert await functions.turn_release(ns, "session", "s1", "tester", "tester/h1", None) is True
    taken = await rmem.session("s1").acquire_turn(wait_seconds=0)
    assert taken.token == 3
    assert await turn_events(rmem) == [("acquire", "tester/h1", 1), ("release", "tester/h1", 1),
                                       ("acquire", taken.holder, 3)]


FLEET_WORKER = """
import asyncio, sys
import redismem

async def main(url, ns, name, turns, pause_at):
    async with await redismem.connect(url, namespace=ns, principal=name) as mem:
        scope = mem.session("fleet")
        done = 0
        print("ready", flush=True)  # all start together: a late starter would
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # find
        for i in range(turns):  # the others done, and none to take its lapsed turn
            try:
                async with scope.turn(ttl_seconds=1, wait_seconds=60) as turn:
                    await scope.append("log", [turn.token, name, "enter"])
                    await scope.incr("count:" + name)
                    done += 1
                    if i == pause_at:
                        turn._renewer.cancel()  # as a process paused past its ttl
                        print("pause", turn.token, flush=True)
                        await asyncio.get_running_loop().run_in_executor(None,
                                                                        sys.stdin.readline)
                    await scope.append("log", [turn.token, name, "leave"])
            except redismem.StaleTurnError as exc:
                print("stale", exc.token, exc.current, flush=True)
        print("done", done, flush=True)

asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])))
"""


async def test_a_fleet_of_four_with_one_paused_loses_nothing(rmem: redismem.Memory,
                                                              redis_url: str) -> None:
    """Four worker processes take 15 fenced turns each in one session; one
    is stopped (SIGSTOP) inside a turn until its turn lapsed and another
    took it. Recorded history: the log's entries go in token order, one
    holder at a time (the paused worker's leave refused with
    StaleTurnError), every counter holds exactly its worker's turns, and
    the feed is gap-free."""
    names = ["w0", "w1", "w2", "w3"]
    workers = {name: subprocess.Popen(
        [sys.executable, "-c", FLEET_WORKER, redis_url, rmem.namespace, name, "15",
         "5" if name == "w0" else "-1"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for name in names}
    paused = workers["w0"]
    assert paused.stdout is not None and paused.stdin is not None
    try:
        for w in workers.values():
            assert w.stdout is not None and w.stdin is not None
            assert await asyncio.to_thread(w.stdout.readline) == "ready\n"
        for w in workers.values():
            w.stdin.write("go\n")
            w.stdin.flush()
        line = await asyncio.to_thread(paused.stdout.readline)
        assert line.startswith("pause "), line
        token = int(line.split()[1])
        os.kill(paused.pid, signal.SIGSTOP)
        key = K.turn(rmem.namespace, "session", "fleet")
        deadline = asyncio.get_running_loop().time() + 60
        while int(await rmem.client.hget(key, "token") or 0) <= token:  # another took it
            assert asyncio.get_running_loop().time() < deadline, "no worker took the turn"
            await asyncio.sleep(0.01)
        os.kill(paused.pid, signal.SIGCONT)
        paused.stdin.write("go\n")
        paused.stdin.flush()
        outputs = {name: (await asyncio.to_thread(w.communicate, None, 120))[0]
                   for name, w in workers.items()}
    finally:
        for w in workers.values():
            if w.poll() is None:
                os.kill(w.pid, signal.SIGCONT)
                w.kill()
    assert all(w.returncode == 0 for w in workers.values()), outputs
    assert f"stale {token} " in outputs["w0"]
    scope = rmem.session("fleet")
    log = (await scope.get("log")).value
    tokens = [entry[0] for entry in log]
    assert tokens == sorted(tokens)  # in token order
    by_token: dict[int, list[list[Any]]] = {}
    for entry in log:
        by_token.setdefault(entry[0], []).append(entry)
    for held, entries in by_token.items():
        holder = entries[0][1]
        expected = ["enter"] if held == token else ["enter", "leave"]
        assert [e[2] for e in entries] == expected and {e[1] for e in entries} == {holder}
    for name in names:
        done = int(outputs[name].split("done ")[1])
        assert done == 15
        assert (await scope.get(f"count:{name}")).value == done
        assert sum(1 for e in log if e[1] == name and e[2] == "enter") == done
    events = await feed_events(rmem)
    assert [e.sequence for e in events] == list(range(1, len(events) + 1))
    assert len(events) > 4 * 15 * 3


def test_the_turns_command_names_a_turn_of_the_wrong_type(redis_url: str, ns: str) -> None:
    """A raw SET over one turn hash made `redismem turns` exit with a raw
    ResponseError; it says which key is damaged."""
    with redis.Redis.from_url(redis_url) as client:
        client.zadd(K.turns(ns), {"session:s1": 0})
        client.set(K.turn(ns, "session", "s1"), "not a hash")
    done = run_script("turns", "--namespace", ns, "--json", url=redis_url)
    assert done.returncode == 1, done.stderr
    error = json.loads(done.stderr)
    assert error["error"] == "corrupt_entry" and "wrong Redis type" in error["message"]


async def audit_turns(mem: redismem.Memory) -> list[tuple[str, str]]:
    from redismem.audit import audit

    return [(f.key, f.problem) async for f in audit(mem) if ":turn" in f.key]


@pytest.mark.on_cluster
async def test_a_turn_jammed_by_a_raw_write_is_reported_and_deleting_it_frees_it(
        mem: redismem.Memory) -> None:
    """A raw token of 2^53-1 made every later acquire fail, an expiry or a
    waiter's lease in 2286 held the turn forever, and audit said nothing.
    Far expiries and leases now count as passed; a corrupt token is refused
    and reported, and deleting the turn's hash frees the turn with a token
    above every earlier one."""
    scope, key = mem.session("s1"), K.turn(mem.namespace, "session", "s1")
    year_2286 = 9_999_999_999_999
    first = await scope.acquire_turn(ttl_seconds=30)
    assert await audit_turns(mem) == []
    await mem.client.hset(key, mapping={"exp": year_2286, f"w:{first.holder}x": year_2286})
    await mem.client.zadd(K.turn_queue(mem.namespace, "session", "s1"), {f"{first.holder}x": 1})
    assert [problem for _, problem in await audit_turns(mem)] == [
        f"its holder's expiry {year_2286} ms is further away than any turn lasts (the library "
        "counts it as passed); deleting the key frees the turn",
        f"waiter '{first.holder}x' has the lease '{year_2286}', which no call sets (the "
        "library counts it as passed); deleting the key frees the turn"]
    second = await scope.acquire_turn(wait_seconds=0)  # neither holds it
    assert second.token == 3  # after the expiry event of the first
    assert await audit_turns(mem) == []  # the junk waiter was dropped
    await mem.client.hset(key, "token", 2**53 - 1)
    assert await audit_turns(mem) == [(key, f"its token is '{2**53 - 1}', not a count: every "
                                            "acquire and fenced write is refused (TURN_CORRUPT); "
                                            "deleting the key frees the turn")]
    with pytest.raises(redismem.TurnCorruptError, match=r"token of .* holds '9007199254740991'"):
        await scope.acquire_turn(wait_seconds=0)
    with pytest.raises(redismem.TurnCorruptError):
        await second.renew()
    await mem.client.delete(key)  # the documented repair
    third = await scope.acquire_turn(wait_seconds=0)
    assert third.token > second.token
    assert await audit_turns(mem) == []
    await third.release()


def test_a_feed_sequence_set_back_below_a_token_is_refused_before_writing(
        lua_client: redis.Redis) -> None:
    """Only a raw DEL of both the feed and its counter sets the sequence
    back; a grant would then repeat tokens, so it is refused."""
    ns = "tseqback"
    args = [ns, "session", "s", "p", "p/h", "1000", "0"]
    granted, token, _ = fcall(lua_client, "turn_acquire", turn_keys(ns, "s", "p/h"), args)
    assert (granted, token) == (1, 1)
    fcall(lua_client, "turn_release", turn_keys(ns, "s", "p/h", "turn_release"), [*args[:5], "1"])
    lua_client.delete(K.feed(ns), K.sequence(ns))  # the release's event 2 and its counter
    lua_client.hset(K.turn(ns, "session", "s"), "token", "5")
    before = {key: lua_client.dump(key) for key in lua_client.keys(f"rm:{{{ns}}}:*")}
    with pytest.raises(redis.ResponseError, match=r"^FEED_CORRUPT the feed sequence of 'tseqback' "
                                                  r"\(1\) is behind token 5 of"):
        fcall(lua_client, "turn_acquire", turn_keys(ns, "s", "p/h"), args)
    assert {key: lua_client.dump(key) for key in lua_client.keys(f"rm:{{{ns}}}:*")} == before
