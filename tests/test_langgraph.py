"""LangGraph's checkpointer conformance suite (langgraph-checkpoint-conformance,
from the package index) against RedismemSaver on the real server and the
cluster, and what it adds: fenced threads, feed events, bounded bad input."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.types import Command

import redismem
from redismem import keys as K
from redismem.audit import audit
from redismem.langgraph import RedismemSaver, RedismemStore

from .helpers import snapshot


@pytest.mark.on_cluster
async def test_every_capability_of_the_conformance_suite_passes(server_url: str) -> None:
    namespace = "lg" + uuid.uuid4().hex[:8]

    @checkpointer_test(name="RedismemSaver")
    async def factory() -> AsyncIterator[RedismemSaver]:
        async with RedismemSaver(url=server_url, namespace=namespace) as saver:
            yield saver

    report = await validate(factory)
    results = report.results
    assert set(results) == {c.value for c in ALL_CAPABILITIES}
    failed = {name: (r.detected, r.failures) for name, r in results.items()
              if not (r.detected and r.passed)}
    assert failed == {}
    assert sum(r.tests_passed for r in results.values()) > 60


GRAPH = '''
from typing import TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import Command, interrupt


class State(TypedDict, total=False):
    question: str
    answer: str
    by: str


def ask(state: State) -> State:
    reply = interrupt(state["question"])
    return {"answer": reply["text"], "by": reply["by"]}


def build(saver):
    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=saver)
'''

RESUME = GRAPH + '''
import asyncio, sys
from redismem.langgraph import RedismemSaver, RedismemStore

url, namespace, thread, mode, by = sys.argv[1:6]
config = {"configurable": {"thread_id": thread}}
saver = RedismemSaver(url=url, namespace=namespace)
graph = build(saver)
answer = Command(resume={"text": "yes", "by": by})
if mode == "sync":
    print(graph.invoke(answer, config)["by"], flush=True)
    saver.close()
else:
    async def main():
        print((await graph.ainvoke(answer, config))["by"], flush=True)
        await saver.aclose()
    asyncio.run(main())
'''


def graph_module() -> dict[str, Any]:
    module: dict[str, Any] = {}
    exec(GRAPH, module)
    return module


def resume_in_another_process(url: str, namespace: str, thread: str, mode: str,
                              by: str) -> str:
    done = subprocess.run([sys.executable, "-c", RESUME, url, namespace, thread, mode, by],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize("mode", ["sync", "async"])
async def test_a_graph_interrupted_in_one_process_resumes_in_another(
        redis_url: str, ns: str, mode: str) -> None:
    graph_code = graph_module()
    thread = f"t-{mode}"
    config: Any = {"configurable": {"thread_id": thread}}
    saver = RedismemSaver(url=redis_url, namespace=ns)
    graph = graph_code["build"](saver)
    if mode == "sync":
        first = await asyncio.to_thread(graph.invoke, {"question": "ship it?"}, config)
    else:
        first = await graph.ainvoke({"question": "ship it?"}, config)
    assert first["__interrupt__"][0].value == "ship it?"
    assert await asyncio.to_thread(resume_in_another_process, redis_url, ns, thread, mode,
                                   "other") == "other"
    state = await graph.aget_state(config)
    assert state.values == {"question": "ship it?", "answer": "yes", "by": "other"}
    assert state.next == ()
    history = [c async for c in saver.alist(config)]
    assert len(history) >= 3
    chain = [c.config["configurable"]["checkpoint_id"] for c in history]
    parents = [c.parent_config["configurable"]["checkpoint_id"] if c.parent_config else None
               for c in history]
    assert parents == [*chain[1:], None], "one line of checkpoints: no fork"
    await saver.aclose()


PAUSED = GRAPH + '''
import asyncio, sys
import redismem
from redismem.langgraph import RedismemSaver, RedismemStore

async def main(url, namespace, thread):
    config = {"configurable": {"thread_id": thread}}
    async with RedismemSaver(url=url, namespace=namespace) as saver:
        graph = build(saver)
        try:
            async with saver.turn(thread, ttl_seconds=0.5) as turn:
                print("token", turn.token, flush=True)
                await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
                await graph.ainvoke(Command(resume={"text": "stale", "by": "A"}), config)
                print("written", flush=True)
        except redismem.StaleTurnError as exc:
            print(exc.code, flush=True)

asyncio.run(main(*sys.argv[1:4]))
'''


async def test_a_worker_paused_past_its_turn_cannot_fork_the_thread(
        redis_url: str, ns: str) -> None:
    """Workers A and B resume one interrupted thread, each inside the
    thread's turn. A is stopped inside its turn; B takes the turn once A's
    lapsed and resumes the thread. A, resumed, is refused: the thread's
    history is one line, ending in B's answer."""
    thread = "shared"
    config: Any = {"configurable": {"thread_id": thread}}
    async with RedismemSaver(url=redis_url, namespace=ns) as saver:
        graph = graph_module()["build"](saver)
        await graph.ainvoke({"question": "who answers?"}, config)
        with subprocess.Popen([sys.executable, "-c", PAUSED, redis_url, ns, thread],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as a:
            assert a.stdout is not None and a.stdin is not None
            try:
                assert (await asyncio.to_thread(a.stdout.readline)).startswith("token ")
                os.kill(a.pid, signal.SIGSTOP)  # a long GC pause, a stalled VM
                async with saver.turn(thread, wait_seconds=30):  # once A's turn lapsed
                    await graph.ainvoke(Command(resume={"text": "fresh", "by": "B"}), config)
                    os.kill(a.pid, signal.SIGCONT)
                    a.stdin.write("go\n")
                    a.stdin.flush()
                    assert await asyncio.to_thread(a.stdout.readline) == "stale_turn\n"
                assert await asyncio.to_thread(a.wait, 60) == 0
            finally:
                if a.poll() is None:
                    os.kill(a.pid, signal.SIGCONT)
                    a.kill()
        state = await graph.aget_state(config)
        assert state.values["by"] == "B"
        history = [c async for c in saver.alist(config)]
        parents = [c.parent_config["configurable"]["checkpoint_id"] if c.parent_config
                   else None for c in history]
        ids = [c.config["configurable"]["checkpoint_id"] for c in history]
        assert parents == [*ids[1:], None], "one line of checkpoints: no fork"


async def test_checkpoints_are_announced_in_the_feed_without_their_values(
        rmem: redismem.Memory) -> None:
    saver = RedismemSaver(rmem)
    config: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": "sub:1|x"}}
    checkpoint = {**empty_checkpoint(), "channel_values": {"secret": "s" * 100},
                  "channel_versions": {"secret": 1}}
    stored = await saver.aput(config, checkpoint, {"step": 1}, {"secret": 1})
    await saver.aput_writes(stored, [("secret", "again")], "task-1")
    # LangGraph may put a checkpoint's writes before the checkpoint (from another thread)
    early: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": "", "checkpoint_id": "c9"}}
    await saver.aput_writes(early, [("x", 1)], "task-2")
    await saver.adelete_thread("t1")
    events = (await rmem.changes(after=0, kind="checkpoint")).items
    assert [(e.action, e.scope, e.scope_id, e.key, e.checkpoint_ns) for e in events] == [
        ("put", "session", "t1", checkpoint["id"], "sub:1|x"),
        ("writes", "session", "t1", checkpoint["id"], "sub:1|x"),
        ("writes", "session", "t1", "c9", ""),
        *sorted([("delete", "session", "t1", checkpoint["id"], "sub:1|x"),
                 ("delete", "session", "t1", "c9", "")], key=lambda e: e[4])]
    assert all(e.principal == rmem.principal and e.value is None for e in events)
    raw = await rmem.client.xrange(K.feed(rmem.namespace))
    assert not any(b"s" * 100 in value for _, fields in raw for value in fields.values())
    assert [f async for f in audit(rmem)] == []
    assert await rmem.client.keys(f"{K.base(rmem.namespace)}lg*") == []


async def test_bad_checkpoint_input_is_refused_and_changes_nothing(
        rmem: redismem.Memory) -> None:
    saver = RedismemSaver(rmem)
    checkpoint = {**empty_checkpoint(), "channel_values": {}, "channel_versions": {}}
    for thread in ("a:b", "a b", "", "x" * 129, None):
        with pytest.raises(redismem.InvalidIdError, match="thread id"):
            await saver.aput({"configurable": {"thread_id": thread}}, checkpoint, {}, {})
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    before = await snapshot(rmem)
    ns, principal = rmem.namespace, rmem.principal
    keys = [K.checkpoint(ns, "t", "a%3A", "c1"), K.checkpoint_ids(ns, "t", "a%3A"),
            K.checkpoint_blobs(ns, "t", "a%3A"), K.checkpoint_namespaces(ns, "t"),
            K.checkpoint_threads(ns), K.sequence(ns), K.feed_size(ns),
            K.principal(ns, principal), K.turn(ns, "session", "t")]
    good = [ns, "t", "a%3A", principal, "", "c1", "", "", b"msgpack\n\x80", b"msgpack\n\x80",
            "ch:1"]
    for args, message in (
            ([*good[:2], "a%3a", *good[3:]], "not in its one percent-encoded spelling"),
            ([*good[:2], "a:b", *good[3:]], "must be percent-encoded"),
            ([*good[:8], b"no frame", *good[9:]], "the checkpoint must be"),
            ([*good[:10], "ch:1\n\nch:2"], "the blob fields are"),
            ([*good[:10], "ch"], "a blob field is"),
            ([*good, "ch:1"], r"items come as blob field, value \(2 arguments each\)"),
            ([*good, "ch", b"json\n1"], "a blob field is"),
            ([*good[:4], "7", *good[5:]], "STALE_TURN|never issued")):
        with pytest.raises(redis.ResponseError, match=message):
            await rmem.client.fcall("redismem_checkpoint_put", len(keys), *keys, *args)
    assert await snapshot(rmem) == before
    await saver.aput(config, checkpoint, {}, {})


async def test_roles_a_writer_and_an_admin_checkpoint_a_reader_reads_a_worker_cannot(
        redis_server: Any) -> None:
    from .test_access import role_user

    checkpoint = {**empty_checkpoint(), "channel_values": {"a": 1}, "channel_versions": {"a": 1}}
    config: Any = {"configurable": {"thread_id": "t1", "checkpoint_ns": "sub"}}
    for role in ("writer", "admin"):
        async with role_user(redis_server, role, "lgacl") as (ns, url, _):
            async with RedismemSaver(url=url, namespace=ns) as saver:
                stored = await saver.aput(config, checkpoint, {"run_id": "r"}, {"a": 1})
                await saver.aput_writes(stored, [("a", 2)], "task")
                assert (await saver.aget_tuple(config)).pending_writes == [("task", "a", 2)]
                await saver.aprune(["t1"])
                await saver.adelete_for_runs(["r"])
                assert await saver.aget_tuple(config) is None
            async with RedismemStore(url=url, namespace=ns) as store:
                await store.aput(("a", "b"), "k", {"v": 1})
                assert (await store.aget(("a", "b"), "k")).value == {"v": 1}
    for role in ("reader", "worker"):
        async with role_user(redis_server, role, "lgacl") as (ns, url, _), \
                RedismemSaver(url=url, namespace=ns) as saver:
            with pytest.raises(redismem.PermissionDeniedError) as denied:
                await saver.aput(config, checkpoint, {}, {"a": 1})
            assert f"the LangGraph checkpoints of namespace {ns}" in str(denied.value)
            if role == "reader":
                assert await saver.aget_tuple(config) is None


async def _lg_keys(mem: redismem.Memory) -> dict[str, Any]:
    """Every LangGraph checkpoint key of ``mem``'s namespace and what it holds
    (the threads registry's members only: their scores are the time of the
    last put)."""
    client, base = mem.client, K.base(mem.namespace)
    found: dict[str, Any] = {}
    for key in sorted(k.decode() for k in await client.keys(f"{K.glob_escape(base)}lg*")):
        kind = (await client.type(key)).decode()
        short = key[len(base):]
        if kind == "hash":
            found[short] = await client.hgetall(key)
        elif short == "lgthreads":
            found[short] = await client.zrange(key, 0, -1)
        else:
            found[short] = await client.zrange(key, 0, -1, withscores=True)
    return found


async def test_an_export_carries_a_paused_graph_and_the_import_resumes_it(
        redis_url: str, ns: str, tmp_path: Any) -> None:
    """Every family in one namespace (test_transfer's seed: settings,
    sessions, values, vectors, tombstones, thread events, state, memories
    with embeddings; here a graph paused at an interrupt, with pending
    writes, and store items) exported, imported into another namespace,
    compared family by family; the imported graph resumes."""
    from redismem import restore, transfer

    from .test_cli import run_script
    from .test_transfer import reads, seed

    async with redismem.RedisMemoryStore(redis_url, namespace=ns, principal="writer") as store:
        await seed(store)
        seen = await reads(store)
    config: Any = {"configurable": {"thread_id": "paused"}}
    async with RedismemSaver(url=redis_url, namespace=ns) as saver, \
            RedismemStore(url=redis_url, namespace=ns) as store:
        graph = graph_module()["build"](saver)
        first = await graph.ainvoke({"question": "ship it?"}, config)
        assert first["__interrupt__"][0].value == "ship it?"
        sub: Any = {"configurable": {"thread_id": "paused", "checkpoint_ns": "child:1|x"}}
        cp = {**empty_checkpoint(), "channel_values": {"big": "b" * 1000},
              "channel_versions": {"big": 1}}
        stored = await saver.aput(sub, cp, {"step": 1}, {"big": 1})
        await saver.aput_writes(stored, [("big", "again"), ("other", 2)], "task ü")
        early: Any = {"configurable": {"thread_id": "early", "checkpoint_ns": "",
                                       "checkpoint_id": "c9"}}
        await saver.aput_writes(early, [("x", 1)], "task-2")  # writes before their checkpoint
        await store.aput(("users", "u1"), "prefs", {"lang": "de"})
        source_history = [c async for c in saver.alist(config)]
        before = await _lg_keys(await saver._memory())
        path = tmp_path / "export.jsonl"
        done = await asyncio.to_thread(run_script, "export", "-n", ns, "-o", str(path),
                                       url=redis_url)
        assert done.returncode == 0, done.stderr
        assert "LEFT OUT" not in done.stderr + done.stdout
        records = [json.loads(line) for line in path.read_text().splitlines()]
        assert records[0]["version"] == transfer.VERSION == 2
        kinds = [r["type"] for r in records]
        assert kinds.count("checkpoint") == len(source_history)  # every namespace of the thread
        assert kinds.count("checkpoint_writes") >= 3
    copy = ns + "-copy"
    async with redismem.RedisMemoryStore(redis_url, namespace=copy) as target:
        await restore.check_file(target, path)
        summary = await restore.import_file(target, path)
        assert summary.written["checkpoint"] == len(source_history)
        assert summary.written["checkpoint_writes"] >= 4
        assert await _lg_keys(target.memory) == before  # hash for hash, member for member
        assert await reads(target) == seen  # and every other family
        again = await restore.import_file(target, path)
        assert sum(again.written.values()) == 0
    async with RedismemSaver(url=redis_url, namespace=copy) as saver, \
            RedismemStore(url=redis_url, namespace=copy) as store:
        assert (await store.aget(("users", "u1"), "prefs")).value == {"lang": "de"}
        history = [c async for c in saver.alist(config)]
        assert [(c.checkpoint, c.metadata, c.pending_writes, c.parent_config)
                for c in history] == [(c.checkpoint, c.metadata, c.pending_writes,
                                       c.parent_config) for c in source_history]
        graph = graph_module()["build"](saver)
        assert (await graph.aget_state(config)).next == ("ask",)
        resumed = await graph.ainvoke(Command(resume={"text": "yes", "by": "restored"}), config)
        assert resumed == {"question": "ship it?", "answer": "yes", "by": "restored"}


async def test_an_export_fails_naming_keys_of_no_family_it_carries(
        rmem: redismem.Memory, redis_url: str) -> None:
    import io

    from redismem import transfer

    from .test_cli import run_script

    await rmem.session("s").set("k", 1)
    await rmem.client.set(K.base(rmem.namespace) + "future:1", "x")  # a newer family, or raw
    summary = await transfer.export_namespace(rmem, io.StringIO().write)
    assert summary.exported == {"value": 1} and summary.left_out == {"future": 1}
    done = await asyncio.to_thread(run_script, "export", "--namespace", rmem.namespace, "-o",
                                   "/dev/null", url=redis_url)
    assert done.returncode == 1
    assert "LEFT OUT (keys of no family an export carries" in done.stderr
    assert "1 future" in done.stderr
    done = await asyncio.to_thread(run_script, "export", "--namespace", rmem.namespace, "-o",
                                   "/dev/null", "--allow-partial", url=redis_url)
    assert done.returncode == 0, done.stderr
