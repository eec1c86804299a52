"""One behaviour on both backends: the same scripted scenario on the real
server and on memory:// gives the same result at every step; text search
matches words the same way on both; reads and refused calls create nothing."""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import redismem
import redismem.vectors
from redismem import keys as K
from redismem import transfer
from redismem.store import RedisMemoryStore

from .helpers import snapshot
from .test_cli import run_script

Step = Callable[[RedisMemoryStore], Awaitable[Any]]


def _plain(value: Any) -> Any:
    """A result without what varies between runs (times), comparable across backends."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        data = {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
        data.pop("created_at", None)
        return (type(value).__name__, data)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return round(value, 5)
    return value


def scenario() -> list[tuple[str, Step]]:
    big = {"i63": 2**63, "i100": 2**100, "neg": -(2**80), "f": 1.5e300, "tiny": 5e-324,
           "u": "日本 😀 \u2028", "nested": [[[{"a": None}]]]}
    event = redismem.MemoryEvent("e1", "t1", "u1", "message", 5, {"n": 2**70, "text": "hi"})
    memory = redismem.LongTermMemory("m1", "u1", "facts", {"n": 2**64}, "the runner runs",
                                     ["x"], {"big": 2**65}, 1, 2)

    def scope(store: RedisMemoryStore) -> redismem.MemoryScope:
        return store.memory.session("s")

    return [
        ("set big", lambda st: scope(st).set("big", big)),
        ("get big", lambda st: scope(st).get("big")),
        ("set_many", lambda st: scope(st).set_many({"a": 1, "b": [2**64], "c": "three"})),
        ("cas stale", lambda st: scope(st).set("a", 2, expected_revision=7)),
        ("cas right", lambda st: scope(st).set("a", 2, expected_revision=1)),
        ("create only", lambda st: scope(st).set("a", 3, expected_revision=0)),
        ("incr", lambda st: scope(st).incr("n", by=2**52)),
        ("incr again", lambda st: scope(st).incr("n", by=-1)),
        ("incr wrong type", lambda st: scope(st).incr("c")),
        ("append", lambda st: scope(st).append("l", {"i": 2**63}, max_items=2)),
        ("append 2", lambda st: scope(st).append("l", 2, max_items=2)),
        ("append 3", lambda st: scope(st).append("l", 3, max_items=2)),
        ("get list", lambda st: scope(st).get("l")),
        ("merge", lambda st: scope(st).merge("o", {"x": {"y": 1}, "z": None})),
        ("merge 2", lambda st: scope(st).merge("o", {"x": {"y": None, "w": 2**70}})),
        ("get o", lambda st: scope(st).get("o")),
        ("get_many", lambda st: scope(st).get_many(["a", "b", "c", "missing"])),
        ("keys page", lambda st: scope(st).keys(limit=2)),
        ("keys prefix", lambda st: scope(st).keys(prefix="b")),
        ("delete", lambda st: scope(st).delete("c")),
        ("delete stale", lambda st: scope(st).delete("a", expected_revision=1)),
        ("bad json", lambda st: scope(st).set("k", float("nan"))),
        ("bad key", lambda st: scope(st).set("a\x00b", 1)),
        ("vectors", lambda st: scope(st).set_vectors(
            [("v1", [1.0, 0.0], {"c": "blue", "n": 2**64}), ("v2", [0.6, 0.8], {"c": "red"})])),
        ("get vector", lambda st: scope(st).get_vector("v1")),
        ("search", lambda st: scope(st).similarity_search([1.0, 0.1], top_k=2)),
        ("search filter", lambda st: scope(st).similarity_search([1.0, 0.1],
                                                                 filter={"c": "red"})),
        ("search big filter", lambda st: scope(st).similarity_search(
            [1.0, 0.1], filter={"n": 2**64})),
        ("append event", lambda st: st.append_event(event)),
        ("events", lambda st: st.get_recent_events("t1")),
        ("upsert memory", lambda st: st.upsert_long_term_memory(memory)),
        ("list memories", lambda st: st.list_long_term_memories("u1")),
        ("text search", lambda st: st.search_long_term_memory_text("u1", "the runner")),
        ("changes", lambda st: st.memory.changes(after=0, limit=1000)),
    ]


def _outcome(result: Any) -> Any:
    if isinstance(result, redismem.RedisMemError):
        return ("error", type(result).__name__, result.code)
    return ("ok", _plain(result))


async def _run(url: str, ns: str, tmp_path: Path) -> list[tuple[str, Any]]:
    results = []
    async with RedisMemoryStore(url, namespace=ns, principal="p") as store:
        for name, step in scenario():
            try:
                result = await step(store)
            except redismem.RedisMemError as exc:
                result = exc
            results.append((name, _outcome(result)))
        lines: list[str] = []
        await transfer.export_namespace(store.memory, lines.append)
        exported = [json.loads(line) for line in lines]
        for record in exported:
            record.pop("exported_at", None)
            record.pop("ts", None)
            record.pop("library_version", None)
            record.pop("namespace", None)
        results.append(("export", _plain(exported)))
    return results


async def test_the_same_scenario_gives_the_same_results(redis_url: str, ns: str,
                                                        tmp_path: Path) -> None:
    on_server = await _run(redis_url, ns, tmp_path)
    in_memory = await _run("memory://", ns, tmp_path)
    for (name, server_result), (_, memory_result) in zip(on_server, in_memory, strict=True):
        assert server_result == memory_result, name
    outcomes = dict(on_server)
    assert outcomes["get big"][1][1]["value"]["i63"] == 2**63  # kept exactly on both
    assert outcomes["incr wrong type"] == ("error", "ValueTypeError", "wrong_type")
    assert outcomes["bad json"][2] == "invalid_json"


# text search: the same words match on both backends (defect: stopwords matched everything)

TEXTS = {"m1": "The runner runs to the park", "m2": "a cat is on it",
         "m3": "To be or not to be", "m4": "runners and walkers", "m5": "Python generators"}
QUERIES = ["the", "a", "is it", "to be or not to be", "runner", "runners", "python", "!!!", "",
           "THE park", "walkers cats", "ü"]


def _words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


async def test_text_search_matches_exactly_the_words(backend_url: str, ns: str,
                                                     backend: str) -> None:
    async with RedisMemoryStore(backend_url, namespace=ns) as store:
        for memory_id, text in TEXTS.items():
            await store.upsert_long_term_memory(redismem.LongTermMemory(
                memory_id, "u1", "notes", {}, text, [], {}, 1, 1))
        for query in QUERIES:
            found = {m.id for m in await store.search_long_term_memory_text("u1", query)}
            expected = {i for i, text in TEXTS.items() if _words(text) & _words(query)}
            assert found == expected, (backend, query)


async def test_an_old_text_index_is_not_trusted_and_is_rebuilt_by_a_write(redis_url: str,
                                                                         ns: str) -> None:
    async with RedisMemoryStore(redis_url, namespace=ns) as store:
        client = store.memory.client
        await client.execute_command(  # the definition older versions created
            "FT.CREATE", K.memory_text_index(ns), "ON", "HASH", "PREFIX", 1,
            K.memory_prefix(ns), "SCHEMA", "text", "TEXT", "_u", "TAG", "_s", "TAG",
            "upd", "NUMERIC", "SORTABLE")
        for memory_id, text in TEXTS.items():
            await store.upsert_long_term_memory(redismem.LongTermMemory(
                memory_id, "u1", "notes", {}, text, [], {}, 1, 1))
        found = {m.id for m in await store.search_long_term_memory_text("u1", "the")}
        assert found == {"m1"}
        info = await redismem.vectors.index_info(client, K.memory_text_index(ns))
        assert "stopwords_list" in info and any(
            b"NOSTEM" in redismem.vectors.attribute_flags(a) for a in info["attributes"])


# reads and refused calls change nothing, indexes included


async def test_reads_and_refused_calls_create_nothing(redis_url: str, ns: str,
                                                      tmp_path: Path) -> None:
    async with await redismem.connect(redis_url, namespace=ns) as mem:
        indexes = set(await mem.client.execute_command("FT._LIST"))
        before = await snapshot(mem)
        bad = tmp_path / "bad.jsonl"
        bad.write_text('{"type": "header", "format": "redismem-export", "version": 1, '
                       f'"namespace": "{ns}"}}\n{{"type": "value"}}\n')
        for args in (["threads", "list"], ["ltm", "list"], ["ltm", "list", "--user", "u"],
                     ["ltm", "search", "anything"], ["keys"], ["changes"],
                     ["vectors", "search", "[1, 0]"], ["import", str(bad)], ["status"]):
            done = run_script(*args, "--namespace", ns, url=redis_url)
            assert (done.returncode == 0) == (args[0] != "import"), (args, done.stderr)
        async with RedisMemoryStore(redis_url, namespace=ns) as store:
            assert await store.search_long_term_memory_text("u", "x") == []
            assert await store.list_long_term_memories("u") == []
            assert await store.search_long_term_memory_vector("u", [1.0, 0.0]) == []
        assert set(await mem.client.execute_command("FT._LIST")) == indexes
        assert await snapshot(mem) == before
