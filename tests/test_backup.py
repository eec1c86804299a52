"""Whole-server backups: export --all-namespaces writes every namespace,
one section each, and import restores each into its own namespace."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import redis

from redismem import MemoryEvent, RedisMemoryStore

from .test_cli import run_script

NAMESPACES = ("alpha", "beta", "gamma")


async def seed(url: str) -> None:
    for ns in NAMESPACES:
        async with RedisMemoryStore(url, namespace=ns) as store:
            await store.memory.session("s").set("k", {"ns": ns})
            await store.memory.session("s").set("k", {"ns": ns, "v": 2})
            await store.append_event(MemoryEvent("e1", "t", None, "message", 1, {"ns": ns}))


async def reads(url: str) -> dict[str, object]:
    seen: dict[str, object] = {}
    for ns in NAMESPACES:
        async with RedisMemoryStore(url, namespace=ns) as store:
            seen[ns] = (await store.memory.session("s").get("k"),
                        [e.payload for e in await store.get_recent_events("t")])
    return seen


def test_a_whole_server_export_restores_every_namespace(bare_redis: str,
                                                         tmp_path: Path) -> None:
    asyncio.run(seed(bare_redis))
    before = asyncio.run(reads(bare_redis))
    path = tmp_path / "server.jsonl"
    done = run_script("export", "--all-namespaces", "-o", str(path), "--json", url=bare_redis)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["namespace"] for line in done.stdout.splitlines()] == list(
        NAMESPACES)
    headers = [r for r in map(json.loads, path.read_text().splitlines())
               if r["type"] == "header"]
    assert [(h["namespace"], h["all_namespaces"]) for h in headers] == [
        (ns, True) for ns in NAMESPACES]
    refused = run_script("import", str(path), "--namespace", "other", url=bare_redis)
    assert refused.returncode == 2 and "whole-server export" in refused.stderr
    with redis.Redis.from_url(bare_redis) as client:
        client.flushall()  # the library stays: FLUSHALL keeps functions
    done = run_script("import", str(path), "--json", url=bare_redis)
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["written"]["value"] for line in done.stdout.splitlines()] == [
        1, 1, 1]
    assert asyncio.run(reads(bare_redis)) == before
    again = run_script("import", str(path), "--json", url=bare_redis)  # idempotent
    assert all(sum(json.loads(line)["written"].values()) == 0
               for line in again.stdout.splitlines())
    audited = run_script("audit", "--all-namespaces", "--json", url=bare_redis)
    assert {f["namespace"] for f in json.loads(audited.stdout)} <= {"alpha"}  # the open door
    assert "every entry" not in audited.stdout


def test_a_whole_server_file_with_a_bad_section_writes_nothing(bare_redis: str,
                                                               tmp_path: Path) -> None:
    asyncio.run(seed(bare_redis))
    path = tmp_path / "server.jsonl"
    assert run_script("export", "--all-namespaces", "-o", str(path),
                      url=bare_redis).returncode == 0
    lines = path.read_text().splitlines()
    lines[-1] = "{oops"  # in the last section
    path.write_text("\n".join(lines) + "\n")
    with redis.Redis.from_url(bare_redis) as client:
        client.flushall()
        done = run_script("import", str(path), url=bare_redis)
        assert done.returncode == 1 and "line " in done.stderr, done.stderr
        assert client.keys("rm:*") == []  # no section was written
