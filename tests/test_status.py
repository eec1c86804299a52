"""redismem status: server, library and per-namespace figures; it only reads."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import redismem
from redismem import keys as K
from redismem import stats
from redismem.client import open_client

from .test_cli import run_script
from .test_transfer import export_text, import_text, seed


async def test_namespace_figures(redis_url: str, ns: str) -> None:
    async with redismem.RedisMemoryStore(redis_url, namespace=ns) as store:
        await seed(store)
        await store.memory.session("s9").set("fleeting", 1, ttl_seconds=0.05)
        await asyncio.sleep(0.1)  # expired, still listed until a writer prunes it
        last = int(await store.memory.client.get(K.sequence(ns)))
    done = run_script("status", "--namespace", ns, "--json", url=redis_url)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["library_version"] == data["bundled_library_version"]
    assert data["modules"] == {"search": True, "json": True}
    [figures] = data["namespaces"]
    assert {k: figures[k] for k in ("namespace", "value_keys", "value_scopes", "vector_keys",
                                    "vector_scopes", "sessions", "threads", "thread_events",
                                    "long_term_memories")} == {
        "namespace": ns, "value_keys": 8, "value_scopes": 7, "vector_keys": 4,
        "vector_scopes": 2, "sessions": 2, "threads": 2, "thread_events": 13,
        "long_term_memories": 4}
    assert figures["feed"] == {"length": last, "oldest_sequence": 1, "last_sequence": last}
    assert {name: i["docs"] for name, i in figures["indexes"].items()} == {
        K.memory_text_index(ns): 4, K.memory_vector_index(ns, 3): 4,  # hashes, not vectors
        K.vector_index(ns, 2): 1, K.vector_index(ns, 3): 3}
    assert figures["settings"]["max_value_bytes"] == 2_000_000
    assert figures["keys"] > 20 and figures["memory_bytes"] > 70_000  # "big" alone is 70 kB
    text = run_script("status", "--namespace", ns, url=redis_url).stdout
    assert (f"namespace {ns}:\n  8 values in 7 scopes, 4 vectors in 2 scopes, 2 sessions "
            "registered (create_session)") in text
    assert f"  feed: {last} events, sequences 1..{last}" in text


async def test_every_namespace_is_listed(redis_url: str, ns: str) -> None:
    for name in (ns, ns + "-b"):
        async with await redismem.connect(redis_url, namespace=name) as mem:
            await mem.global_scope().set("k", 1)
    data = json.loads(run_script("status", "--json", url=redis_url).stdout)
    names = [n["namespace"] for n in data["namespaces"]]
    assert {ns, ns + "-b"} <= set(names) and names == sorted(names)
    client = await open_client(redis_url)
    try:
        assert set(names) == set(await stats.namespaces(client))
    finally:
        await client.aclose()


async def test_status_on_a_bare_server_loads_nothing(plain_redis: str) -> None:
    done = run_script("status", "--json", url=plain_redis)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["library_version"] is None and data["namespaces"] == []
    assert data["modules"] == {"search": False, "json": False}
    assert data["vector_search"] == "exact"
    client = await open_client(plain_redis)
    try:
        assert await client.function_list() == []
    finally:
        await client.aclose()
    assert "library: not loaded (this package ships version" in run_script(
        "status", url=plain_redis).stdout


async def test_load_functions_then_import_into_a_plain_redis(redis_url: str, ns: str,
                                                             plain_redis: str,
                                                             tmp_path: Path) -> None:
    """The production flow: load the library into any Redis, then import."""
    loaded = run_script("load-functions", "--url", plain_redis, "--json")
    assert json.loads(loaded.stdout) == {"action": "loaded", "previous": None,
                                         "version": redismem.library.bundled().version}
    async with redismem.RedisMemoryStore(redis_url, namespace=ns) as source:
        await seed(source)
        text = await export_text(source)
        async with redismem.RedisMemoryStore(plain_redis, namespace=ns) as target:
            summary = await import_text(target, text, tmp_path)
            assert summary.written["value"] == 8 and summary.written["vector"] == 4
            s1, t1 = source.memory.session("s1"), target.memory.session("s1")
            assert await t1.get_many(await s1.list_keys()) == await s1.get_many(
                await s1.list_keys())
            query = [0.9, 0.1, 0.2]
            assert [m.key for m in await t1.similarity_search(query, top_k=3)] == [
                m.key for m in await s1.similarity_search(query, top_k=3)]
            assert await target.search_long_term_memory_text("u1", "python") == (
                await source.search_long_term_memory_text("u1", "python"))


async def test_status_says_whether_access_control_is_on(redis_url: str) -> None:
    text = run_script("status", "--namespace", "none", url=redis_url).stdout
    assert "access control: off (only the default user, which needs a password)" in text
    assert "warning" not in text
    client = await open_client(redis_url)
    try:
        await client.execute_command("ACL", "SETUSER", "reader-x", "on", ">pw-x", "~rm:{x}:*",
                                     "+get")
        data = json.loads(run_script("status", "--json", "--namespace", "none",
                                     url=redis_url).stdout)
        assert data["acl_users"] == ["default", "reader-x"]
        assert "access control: on (2 ACL users: default, reader-x)" in run_script(
            "status", "--namespace", "none", url=redis_url).stdout
    finally:
        await client.execute_command("ACL", "DELUSER", "reader-x")
        await client.aclose()
    assert "access control: off (memory://)" in run_script("status", url="memory://").stdout
