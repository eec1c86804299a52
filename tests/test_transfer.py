"""Export and import: the JSON Lines round trip, idempotency, newer data kept,
bad files refused before anything is written, and the raw Lua functions."""

from __future__ import annotations

import base64
import io
import json
import os
import pty
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import redismem
from redismem import keys as K
from redismem import restore, transfer
from redismem.errors import InvalidExportError
from redismem.functions import Functions
from redismem.topology import on_namespace_node

from .helpers import flush_namespace, snapshot
from .test_bad_input import import_call
from .test_cli import run_script

pytestmark = pytest.mark.on_cluster

SCOPES = [("session", "s1"), ("session", "s2"), ("actor", "bob"), ("workflow", "w1"),
          ("global", "_")]
QUERIES = [[1.0, 0.0, 0.0], [0.2, 1.0, 0.1], [0.5, 0.5, 0.5]]


async def seed(store: redismem.RedisMemoryStore) -> None:
    """Something of everything an export covers."""
    mem = store.memory
    await mem.configure(max_value_bytes=2_000_000, hnsw_ef_runtime=50)
    await mem.create_session("s1")
    await mem.create_session("s2")
    s1 = mem.session("s1")
    await s1.set("notes", ["pack passports"])
    await s1.update("notes", lambda v: [*v, "book transfer"])
    await s1.set("big", "x" * 70_000)  # its feed event omits the value
    await s1.set("soon", {"ttl": True}, ttl_seconds=3600)
    await s1.set("gone", 1)
    await s1.delete("gone")  # a tombstone: revision 2 issued, no value
    await mem.session("s2").set("notes", ["buy sunscreen"])
    await mem.actor("bob").set("turns", 3)
    await mem.workflow("w1").set("last note", "check visa, rules & fees ✓")
    await mem.global_scope().set("all_notes", {"n": 4, "nested": [1, None, True, 2.5]})
    await s1.set_vectors([("blue", [1.0, 0.0, 0.0], {"colour": "blue", "n": 1}),
                          ("red", [0.0, 1.0, 0.0], {"colour": "red"}),
                          ("teal", [0.6, 0.2, 0.7], {"colour": "teal", "tags": ["a"]})])
    await s1.set_vector("tiny", [0.25, 0.5], {"colour": "blue"}, ttl_seconds=7200)
    await s1.delete_vector("red")
    await mem.global_scope().set_vector("g", [0.1, 0.2, 0.3])
    await store.append_events("chat", [
        redismem.MemoryEvent(f"e{i}", "chat", "u1", "trace" if i % 3 == 0 else "message",
                             1000 + i, {"i": i, "text": f"turn {i}"}, ["t"]) for i in range(12)])
    await store.append_event(redismem.MemoryEvent("x", "other", None, "message", 5, {}))
    await store.put_state("chat", "checkpoint:1", {"step": 7})
    for i, (user, text) in enumerate([("u1", "python generators yield values"),
                                      ("u1", "redis streams keep order"),
                                      (None, "shared knowledge about lua")]):
        await store.upsert_long_term_memory(
            redismem.LongTermMemory(f"m{i}", user, "knowledge", {"i": i}, text, ["x"], {"m": i},
                                    10 + i, 20 + i),
            embedding=[1.0, float(i), 0.5])
    await store.upsert_long_term_memory(
        redismem.LongTermMemory("plain", "u2", "notes", {}, "no embedding here", [], {}, 1, 2))


async def reads(store: redismem.RedisMemoryStore) -> dict[str, Any]:
    """Everything a reader sees through the API (and the raw value hashes and
    expiry times, which an export promises too)."""
    mem, client, ns = store.memory, store.memory.client, store.namespace
    seen: dict[str, Any] = {"settings": await mem.settings(),
                            "sessions": await client.zrange(K.sessions(ns), 0, -1,
                                                            withscores=True)}
    for scope, sid in SCOPES:
        handle = redismem.MemoryScope(mem._conn, scope, sid)  # type: ignore[arg-type]
        names = await handle.list_keys()
        seen[f"{scope}:{sid}"] = {
            name: (await client.hmget(K.value(ns, scope, sid, name), "v", "rev", "ts", "by"),
                   await client.pexpiretime(K.value(ns, scope, sid, name)))
            for name in names}
        vector_names = await handle.list_keys(kind="vector")
        seen[f"{scope}:{sid}:vectors"] = {
            name: (await handle.get_vector(name),
                   await client.hmget(K.vector(ns, scope, sid, name), "ts", "by"),
                   await client.pexpiretime(K.vector(ns, scope, sid, name)))
            for name in vector_names}
        seen[f"{scope}:{sid}:search"] = [
            await handle.similarity_search(q, top_k=3) for q in QUERIES if vector_names]
    seen["filtered"] = await mem.session("s1").similarity_search(
        [1.0, 0.0, 0.0], top_k=5, filter={"colour": "blue"})
    seen["threads"] = await store.list_threads()
    for thread, _ in seen["threads"]:
        seen[f"thread:{thread}"] = (await store.get_recent_events(thread, 1000),
                                    await store.get_events_since(thread, 1005))
    seen["state"] = await store.list_state("chat")
    for user in ("u1", "u2", None):
        seen[f"ltm:{user}"] = await store.list_long_term_memories(user)
        seen[f"ltm:{user}:text"] = await store.search_long_term_memory_text(user, "python lua")
    seen["ltm:vector"] = await store.search_long_term_memory_vector("u1", [1.0, 0.5, 0.5])
    return seen


@pytest.fixture
async def source(server_url: str, ns: str) -> AsyncIterator[redismem.RedisMemoryStore]:
    async with redismem.RedisMemoryStore(server_url, namespace=ns, principal="writer") as store:
        await seed(store)
        yield store


async def export_text(store: redismem.RedisMemoryStore) -> str:
    out = io.StringIO()
    await transfer.export_namespace(store.memory, out.write)
    return out.getvalue()


async def import_text(store: redismem.RedisMemoryStore, text: str,
                      tmp_path: Path) -> restore.ImportSummary:
    path = tmp_path / "import.jsonl"
    path.write_text(text)
    await restore.check_file(store, path)
    return await restore.import_file(store, path)


async def test_export_flush_import_reads_equal(source: redismem.RedisMemoryStore, server_url: str,
                                               tmp_path: Path) -> None:
    before = await reads(source)
    text = await export_text(source)
    ns = source.namespace
    await source.close()
    await flush_namespace(server_url, ns)
    async with redismem.RedisMemoryStore(server_url, namespace=ns, principal="importer") as fresh:
        assert await reads(fresh) != before  # the flush emptied it
        summary = await import_text(fresh, text, tmp_path)
        assert summary.kept == {"settings": 0, "session": 0, "value": 0, "revisions": 0,
                                "vector": 0, "event": 0, "memory": 0}
        assert summary.written["value"] == 8 and summary.written["vector"] == 4
        assert summary.written["event"] == 13 and summary.written["memory"] == 4
        assert await reads(fresh) == before
        # the tombstones came along: a re-created key goes on from its last revision
        assert (await fresh.memory.session("s1").set("gone", 2)).revision == 3
        assert await fresh.memory.session("s1").set_vector("red", [0.0, 1.0, 0.0]) == 3
        page = await fresh.memory.changes()
        assert [e.principal for e in page.items][:1] == ["importer"]
        big = [e for e in page.items if e.key == "big"]
        assert big[0].value_omitted and big[0].revision == 1


async def test_import_into_another_namespace(source: redismem.RedisMemoryStore, server_url: str,
                                             tmp_path: Path) -> None:
    text = await export_text(source)
    async with redismem.RedisMemoryStore(server_url, namespace=source.namespace + "-copy") as copy:
        await import_text(copy, text, tmp_path)
        assert await reads(copy) == await reads(source)


async def test_round_trip_on_memory_backend(tmp_path: Path) -> None:
    async with redismem.RedisMemoryStore("memory://", namespace="a") as store:
        await seed(store)
        text = await export_text(store)
        store_b = redismem.RedisMemoryStore("memory://", namespace="b")
        store_b._memory = await redismem.connect("memory://", namespace="b")
        await store_b.memory.close()
        conn = store_b.memory._conn  # onto the same in-process server as store
        conn.client, conn.functions = store.memory.client, Functions(store.memory.client)
        await import_text(store_b, text, tmp_path)
        assert await reads(store_b) == await reads(store)


async def test_importing_twice_changes_nothing(source: redismem.RedisMemoryStore,
                                               tmp_path: Path) -> None:
    text = await export_text(source)
    before = await snapshot(source.memory)
    summary = await import_text(source, text, tmp_path)
    assert sum(summary.written.values()) == 0
    assert summary.kept["value"] == 8 and summary.kept["event"] == 13
    assert await snapshot(source.memory) == before  # the feed included: no new events


async def test_newer_data_in_the_target_is_kept(source: redismem.RedisMemoryStore,
                                                tmp_path: Path) -> None:
    text = await export_text(source)
    mem = source.memory
    s1 = mem.session("s1")
    await s1.set("notes", ["changed after the export"])  # revision 3
    await mem.session("s2").delete("notes")  # a later delete
    await s1.set_vector("blue", [0.0, 0.0, 1.0])
    newer = redismem.LongTermMemory("m0", "u1", "knowledge", {}, "rewritten", [], {}, 10, 99)
    await source.upsert_long_term_memory(newer)
    await source.compact_thread("chat", redismem.RetentionPolicy(max_events_per_thread=12))
    summary = await import_text(source, text, tmp_path)
    assert (await s1.get("notes")).value == ["changed after the export"]
    assert not (await mem.session("s2").get("notes")).found  # not resurrected
    assert (await s1.get_vector("blue")).embedding == [0.0, 0.0, 1.0]
    assert (await source.list_long_term_memories("u1"))[0].text == "rewritten"
    assert summary.written == {"settings": 0, "session": 0, "value": 0, "revisions": 0,
                               "vector": 0, "event": 0, "memory": 0}


async def test_older_data_in_the_target_is_replaced(source: redismem.RedisMemoryStore,
                                                    server_url: str, tmp_path: Path) -> None:
    text = await export_text(source)
    async with redismem.RedisMemoryStore(server_url, namespace=source.namespace + "-old") as old:
        await old.memory.session("s1").set("notes", "stale")  # revision 1 < 2
        summary = await import_text(old, text, tmp_path)
        assert summary.written["value"] == 8
        got = await old.memory.session("s1").get("notes")
        assert (got.value, got.revision) == (["pack passports", "book transfer"], 2)


async def test_an_expired_record_is_not_imported(server_url: str, ns: str, tmp_path: Path) -> None:
    header = {"type": "header", "format": "redismem-export", "version": 1, "namespace": ns}
    lines = [header, {"type": "value", "scope": "global", "scope_id": "_", "key": "old",
                      "value": 1, "revision": 1, "ts": 1, "by": "me", "expires_at": 1000}]
    async with redismem.RedisMemoryStore(server_url, namespace=ns) as store:
        summary = await import_text(store, "\n".join(map(json.dumps, lines)) + "\n", tmp_path)
        assert summary.kept["value"] == 1
        assert not (await store.memory.global_scope().get("old")).found


async def test_a_key_twice_in_a_file_keeps_the_later_revision(server_url: str, ns: str,
                                                                tmp_path: Path) -> None:
    header = {"type": "header", "format": "redismem-export", "version": 1, "namespace": ns}
    entry = {"type": "value", "scope": "global", "scope_id": "_", "key": "k", "ts": 1,
             "by": "me", "expires_at": None}
    lines = [header, {**entry, "value": "second", "revision": 2},
             {**entry, "value": "first", "revision": 1}, {**entry, "key": "other", "value": 0,
                                                         "revision": 1}]
    async with redismem.RedisMemoryStore(server_url, namespace=ns) as store:
        summary = await import_text(store, "\n".join(map(json.dumps, lines)) + "\n", tmp_path)
        assert (summary.written["value"], summary.kept["value"]) == (2, 1)
        got = await store.memory.global_scope().get("k")
        assert (got.value, got.revision) == ("second", 2)


def _header(ns: str = "n") -> dict[str, Any]:
    return {"type": "header", "format": "redismem-export", "version": 1, "namespace": ns}


def _value(**change: Any) -> dict[str, Any]:
    record = {"type": "value", "scope": "session", "scope_id": "s", "key": "k", "value": 1,
              "revision": 1, "ts": 1, "by": "me", "expires_at": None}
    record.update(change)
    return {k: v for k, v in record.items() if v != "DROP"}


EVENT = {"id": "e", "thread_id": "t", "user_id": None, "type": "message", "timestamp": 1,
         "payload": {}, "tags": []}
MEMORY = {"id": "m", "user_id": "u", "scope": "s", "data": {}, "text": "t", "tags": [],
          "metadata": {}, "created_at": 1, "updated_at": 1}



def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


CHECKPOINT = {"type": "checkpoint", "thread": "t", "checkpoint_ns": "", "checkpoint_id": "c1",
              "parent": "", "run": "", "checkpoint": _b64(b"json\n{}"),
              "metadata": _b64(b"json\n{}"), "channels": ["a:1"], "blobs": {}}
WRITES = {"type": "checkpoint_writes", "thread": "t", "checkpoint_ns": "", "checkpoint_id": "c1",
          "task": "task", "path": "", "writes": [[0, "a", _b64(b"json\n1")]]}

GOOD = [_value(key=f"k{i}", revision=50) for i in range(3)]  # lines 2-4 of most cases


def _after_good(*records: Any) -> list[Any]:
    return [_header(), *GOOD, *records]


BAD_FILES: list[tuple[str, list[Any], str]] = [
    ("no header", [*GOOD], "line 1: the first line must be the export header"),
    ("two headers", _after_good(_header()), "line 5: an export starts with its header"),
    ("not json", _after_good("{oops"), "line 5: not JSON"),
    ("a list", _after_good([1, 2]), "line 5: type must be one of"),
    ("unknown type", _after_good({"type": "blob"}), "line 5: type must be one of"),
    ("wrong format", [{**_header(), "format": "other"}, *GOOD], "line 1: not a redismem-export"),
    ("newer version", [{**_header(), "version": 3}, *GOOD], "line 1: not a redismem-export"),
    ("bad namespace", [_header("a b"), *GOOD], "line 1: namespace must not contain"),
    ("missing field", _after_good(_value(revision="DROP")),
     "line 5: a value record needs revision"),
    ("unknown field", _after_good(_value(colour=1)),
     "line 5: a value record has unknown fields colour"),
    ("bad scope", _after_good(_value(scope="team")), "line 5: scope must be one of"),
    ("global id", _after_good(_value(scope="global", scope_id="x")), "line 5: the global"),
    ("bad key", _after_good(_value(key="")), "line 5: key must be a non-empty"),
    ("revision 0", _after_good(_value(revision=0)), "line 5: revision must be an integer"),
    ("revision text", _after_good(_value(revision="3")), "line 5: revision must be an integer"),
    ("float ts", _after_good(_value(ts=1.5)), "line 5: ts must be an integer"),
    ("bad writer", _after_good(_value(by="a:b")), "line 5: principal must not contain"),
    ("too large", _after_good(_value(value="x" * 2_100_000)), "line 5: value is 2100002 bytes"),
    ("too large for its settings",
     [_header(), {"type": "settings", "settings": {"max_value_bytes": 1024}}, *GOOD,
      _value(value="x" * 2000)], "line 6: value is 2002 bytes of JSON, the limit is 1024"),
    ("bad setting", [_header(), {"type": "settings", "settings": {"colour": 1}}, *GOOD],
     "line 2: unknown setting 'colour'"),
    ("setting bounds", [_header(), {"type": "settings", "settings": {"hnsw_m": 0}}, *GOOD],
     "line 2: hnsw_m must be between 2 and 512"),
    ("zero vector", _after_good(_value(type="vector", value="DROP", embedding=[0.0, 0.0],
                                       metadata={})), "line 5: the zero vector"),
    ("vector metadata", _after_good(_value(type="vector", value="DROP", embedding=[1.0],
                                           metadata=[1])), "line 5: metadata must be an object"),
    ("event fields", _after_good({"type": "event", "event": {**EVENT, "colour": 1}}),
     "line 5: unknown fields for MemoryEvent: colour"),
    ("event timestamp", _after_good({"type": "event", "event": {**EVENT, "timestamp": -1}}),
     "line 5: timestamp must be"),
    ("memory dims", _after_good({"type": "memory", "memory": MEMORY, "embedding": [1.0, 0.0]}),
     "line 5: the embedding has dimension 2; memory embeddings here have dimension 3"),
    ("revisions kind", _after_good({"type": "revisions", "kind": "blob", "scope": "global",
                                    "scope_id": "_", "revisions": {"k": 1}}),
     "line 5: kind must be value or vector"),
    ("revisions empty", _after_good({"type": "revisions", "kind": "value", "scope": "global",
                                     "scope_id": "_", "revisions": {}}),
     "line 5: revisions must be an object"),
    ("session id", _after_good({"type": "session", "id": "a b", "created_at": 1}),
     "line 5: session id must not contain"),
    ("checkpoint base64", _after_good({**CHECKPOINT, "checkpoint": "not base64!"}),
     "line 5: checkpoint is not base64"),
    ("checkpoint frame", _after_good({**CHECKPOINT, "metadata": _b64(b"no frame")}),
     "line 5: metadata: it starts b'no frame', not '<serializer type>"),
    ("checkpoint thread", _after_good({**CHECKPOINT, "thread": "a:b"}),
     "line 5: thread id must not contain"),
    ("checkpoint blob field", _after_good({**CHECKPOINT, "blobs": {"ch": _b64(b"json\n1")}}),
     "line 5: the blob field 'ch' is not '<channel>:<version>'"),
    ("checkpoint blob spelling", _after_good({**CHECKPOINT, "channels": ["a%3a:1"]}),
     "line 5: the blob field 'a%3a:1' is not percent-encoded as the library does"),
    ("checkpoint fields", _after_good({**CHECKPOINT, "colour": 1}),
     "line 5: a checkpoint record has unknown fields colour"),
    ("checkpoint size", _after_good({**CHECKPOINT, "blobs": {
        f"c:{i}": _b64(b"json\n" + b"x" * 5_600_000) for i in range(3)}}),
     "line 5: it carries 168000"),
    ("writes index twice", _after_good({**WRITES, "writes": [[0, "a", _b64(b"json\n1")],
                                                             [0, "b", _b64(b"json\n2")]]}),
     "line 5: a write index must be an integer, once per task; got 0"),
    ("writes empty", _after_good({**WRITES, "writes": []}), "line 5: writes must be a list"),
    ("writes task", _after_good({**WRITES, "task": ""}), "line 5: task must be text"),
    # a raw record is held to the limits of a write (a 50 MB field was imported)
    ("raw field size", _after_good({"type": "raw", "key": base64.b64encode(b"val:global:_:r")
                                    .decode(), "problem": "", "hash": {
                                        "dg==": base64.b64encode(b"x" * 2_100_000).decode()}}),
     "line 5: a raw record's part holds 2100000 bytes, over max_value_bytes (2000000)"),
    ("raw record size", _after_good({"type": "raw", "key": base64.b64encode(b"val:global:_:r")
                                     .decode(), "problem": "", "hash": {
                                         base64.b64encode(b"f%d" % i).decode():
                                         base64.b64encode(b"x" * 600_000).decode()
                                         for i in range(3)}}),
     "line 5: a raw record holds 1800006 bytes, over max_call_bytes (163840)"),
]


@pytest.mark.parametrize(("name", "records", "message"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
async def test_a_bad_file_is_refused_before_anything_is_written(
        source: redismem.RedisMemoryStore, tmp_path: Path, name: str, records: list[Any],
        message: str) -> None:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    before = await snapshot(source.memory)
    with pytest.raises(InvalidExportError) as info:
        await restore.check_file(source, path)
    assert str(info.value).startswith(message), str(info.value)
    assert await snapshot(source.memory) == before


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("\n")
    with pytest.raises(InvalidExportError, match="the file is empty"):
        restore.read_header_record(path)


async def test_raw_import_functions(rmem: redismem.Memory) -> None:
    """From redis-cli: an import writes once, with its own revision and writer."""
    client, ns = rmem.client, rmem.namespace
    assert await client.execute_command("FCALL", *import_call(ns)) == [4]
    assert await client.execute_command("FCALL", *import_call(ns)) == [0]
    assert await client.execute_command("FCALL", *import_call(ns, revision="3")) == [0]
    got = await rmem.session("s").get("k")
    assert (got.value, got.revision) == (1, 4)
    assert await client.hmget(K.value(ns, "session", "s", "k"), "ts", "by") == [b"5", b"me"]
    assert await client.xlen(K.feed(ns)) == 1
    assert await client.execute_command("FCALL", *import_call(ns, key="gone",
                                                              expires="1000")) == [0]
    vector = import_call(ns, kind="vector", content=(b"\0\0\x80\x3f", '{"c":1}'))
    assert await client.execute_command("FCALL", *vector) == [4]
    assert (await rmem.session("s").get_vector("k")).metadata == {"c": 1}
    raise_args = ["redismem_raise_revisions", 2, K.revisions(ns, "value", "session", "s"),
                  K.config(ns), ns,
                  "session", "s", "value", "k", "9", "other", "2"]
    assert await client.execute_command("FCALL", *raise_args) == 2
    assert await client.execute_command("FCALL", *raise_args) == 0
    assert (await rmem.session("s").set("k", 2)).revision == 10


# the command line


def test_export_import_commands(server_url: str, source: redismem.RedisMemoryStore,
                                 tmp_path: Path) -> None:
    ns = source.namespace
    out = tmp_path / "dump.jsonl"
    done = run_script("export", "--namespace", ns, "-o", str(out), url=server_url)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no progress bar when stderr is not a terminal
    assert done.stdout.startswith(f"exported 35 records of {ns}: 2 settings, 2 session, "
                                  "8 value")
    assert not list(tmp_path.glob(".*partial"))
    piped = run_script("export", "--namespace", ns, "--json", url=server_url)
    assert piped.stdout.splitlines()[1:] == out.read_text().splitlines()[1:]  # header differs
    assert json.loads(piped.stderr)["exported"]["value"] == 8
    copy = f"{ns}-cli"
    first = run_script("import", str(out), "--namespace", copy, "--json", url=server_url)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["written"]["value"] == 8
    again = run_script("import", str(out), "--namespace", copy, url=server_url)
    assert again.stdout.startswith(f"imported 35 records into {copy}: wrote nothing; "
                                   "kept 2 settings, 2 session, 8 value")
    stdin = subprocess.run([shutil.which("redismem") or "redismem", "import", "-", "--json"],
                           input=out.read_text(), capture_output=True, text=True, check=False,
                           env={**os.environ, "REDISMEM_URL": server_url})
    assert json.loads(stdin.stdout)["namespace"] == ns  # the header's namespace
    bad = tmp_path / "bad.jsonl"
    bad.write_text(out.read_text() + "{oops\n")
    refused = run_script("import", str(bad), "--namespace", copy, url=server_url)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "InvalidExportError: line 36: not JSON" in refused.stderr
    missing = run_script("import", str(tmp_path / "nope.jsonl"), url=server_url)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert missing.stderr.count("\n") == 1


def test_progress_bar_on_a_terminal(server_url: str, source: redismem.RedisMemoryStore,
                                    tmp_path: Path) -> None:
    exe = shutil.which("redismem")
    assert exe is not None
    for args in (["export", "--namespace", source.namespace, "-o", str(tmp_path / "d.jsonl")],
                 ["import", str(tmp_path / "d.jsonl"), "--namespace", "tty-copy"]):
        leader, follower = pty.openpty()
        with subprocess.Popen([exe, *args], stdout=subprocess.PIPE, stderr=follower,
                              env={**os.environ, "REDISMEM_URL": server_url}) as proc:
            os.close(follower)
            chunks = []
            while True:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the terminal closed
                    break
                if not chunk:
                    break
                chunks.append(chunk)
            assert proc.wait(60) == 0
        os.close(leader)
        shown = b"".join(chunks).decode()
        assert ("exporting" if args[0] == "export" else "importing into tty-copy") in shown
        assert "100%" in shown


async def test_an_export_counts_as_its_import_counts(source: redismem.RedisMemoryStore,
                                                     server_url: str, tmp_path: Path) -> None:
    """Per record type, what an export reports equals what importing the
    file writes plus keeps: a revisions record counts its names, a
    settings record its settings (export said 2 revisions, import 3)."""
    out = io.StringIO()
    exported = await transfer.export_namespace(source.memory, out.write)
    assert exported.records == len(out.getvalue().splitlines())
    assert exported.exported["revisions"] == 2 and exported.exported["settings"] == 2
    async with redismem.RedisMemoryStore(server_url, namespace=source.namespace + "-n") as copy:
        for _ in range(2):  # into an empty namespace, then again
            done = await import_text(copy, out.getvalue(), tmp_path)
            assert done.records == exported.records
            assert {kind: done.written.get(kind, 0) + done.kept.get(kind, 0)
                    for kind in set(done.written) | set(done.kept)} == exported.exported


async def _corrupt(store: redismem.RedisMemoryStore) -> None:
    """One of each kind of entry a raw command can leave that readers skip."""
    client, ns = store.memory.client, store.namespace
    await client.hset(K.value(ns, "session", "s1", "notes"), "v", "{not json")
    await client.hset(K.vector(ns, "session", "s1", "blue"), "emb", b"\x00\x00\x80")
    await client.zadd(K.names(ns, "value", "session", "s2"), {b"\xffname": 0})
    await client.hset(K.value(ns, "session", "s2", "").encode() + b"\xffname", "v", "1")
    await client.hset(K.revisions(ns, "value", "session", "s1"), "forged", "not-a-number")
    await client.xadd(K.thread_events(ns, "chat"), {"x": b"\xfe"})
    await client.hset(K.memory(ns, "u1", "m0"), "rec", b"garbage")
    await client.zadd(K.scopes(ns), {b"nonsense": 0})


async def test_an_export_stops_at_a_corrupt_entry_or_carries_it_raw(
        server_url: str, source: redismem.RedisMemoryStore, tmp_path: Path) -> None:
    import base64

    ns, copy = source.namespace, source.namespace + "-raw"
    await _corrupt(source)
    out = tmp_path / "dump.jsonl"
    refused = run_script("export", "--namespace", ns, "-o", str(out), url=server_url)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert f"export stopped at rm:{{{ns}}}:" in refused.stderr and "--raw" in refused.stderr
    assert not out.exists() and not list(tmp_path.glob(".*partial"))
    piped = run_script("export", "--namespace", ns, url=server_url)
    assert piped.returncode == 1 and "export stopped at" in piped.stderr

    done = run_script("export", "--namespace", ns, "-o", str(out), "--raw", "--json",
                      url=server_url)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    records = [json.loads(line) for line in out.read_text().splitlines()]
    carried = {base64.b64decode(r["key"]) for r in records if r["type"] == "raw"}
    assert carried == {b"val:session:s1:notes", b"keys:val:session:s1", b"vec:session:s1:blue",
                       b"keys:vec:session:s1", b"keys:val:session:s2",
                       b"val:session:s2:\xffname", b"rev:val:session:s1", b"thr:chat:ev",
                       b"ltm:u1:m0", b"ltmz:u1", b"scopes"}
    assert summary["exported"]["raw"] == len([r for r in records if r["type"] == "raw"])

    first = run_script("import", str(out), "--namespace", copy, "--json", url=server_url)
    assert first.returncode == 0, first.stderr
    written = json.loads(first.stdout)
    assert written["written"]["raw"] + written["kept"].get("raw", 0) == summary["exported"]["raw"]
    again = json.loads(run_script("import", str(out), "--namespace", copy, "--json",
                                  url=server_url).stdout)
    assert again["written"].get("raw", 0) == 0  # nothing twice, nothing replaced

    # the copy holds the same damage, byte for byte: its audit names the same keys
    def audited(namespace: str) -> set[str]:
        found = run_script("audit", "--namespace", namespace, "--json", url=server_url)
        assert found.stdout, found.stderr
        # (a thread event's finding names its stream id, which an import renews)
        return {f["key"].replace(f"{{{namespace}}}", "{NS}").split(" ")[0]
                for f in json.loads(found.stdout) if "feed" not in f["key"]}

    assert audited(copy) == audited(ns)
    recopy = tmp_path / "again.jsonl"
    assert run_script("export", "--namespace", copy, "-o", str(recopy), "--raw",
                      url=server_url).returncode == 0

    def raw_content(path: Path) -> list[Any]:
        return sorted(json.dumps([r["key"], r.get("hash"), r.get("zset"),
                                  [fields for _, fields in r.get("stream", [])]], sort_keys=True)
                      for r in map(json.loads, path.read_text().splitlines())
                      if r["type"] == "raw")

    assert raw_content(recopy) == raw_content(out)


async def test_a_session_registry_member_that_is_no_session_is_named_not_a_crash(
        rmem: redismem.Memory, tmp_path: Path) -> None:
    """A raw ZADD of a non-UTF-8 member into the sessions registry made
    export fail with a raw UnicodeDecodeError; it is reported like any
    entry the library did not write, and carried byte for byte by --raw."""
    await rmem.create_session("real")
    await rmem.client.zadd(K.sessions(rmem.namespace), {b"\xff\xfe": 1})
    out = io.StringIO()
    with pytest.raises(redismem.CorruptEntryError, match=r"lists b'\\xff\\xfe'"):
        await transfer.export_namespace(rmem, out.write)
    out = io.StringIO()
    summary = await transfer.export_namespace(rmem, out.write, keep_raw=True)
    assert summary.exported["session"] == 1 and summary.exported["raw"] >= 1


@pytest.mark.parametrize(("name", "line", "message"), [
    ("too long", b'{"type": "value", "value": [' + b"1," * 11_300_000 + b'1]}',
     "line 5: longer than "),
    ("not utf-8", b'{"type": "value", "key": "\xff"}', "line 5: not UTF-8 (byte 27 is b'\\xff')"),
    ("too deep", b"[" * 100_000 + b"]" * 100_000, "line 5: its JSON is nested too deeply"),
], ids=["too long", "not utf-8", "too deep"])
async def test_a_line_that_is_too_long_deep_or_not_utf8_is_refused_clearly(
        source: redismem.RedisMemoryStore, tmp_path: Path, name: str, line: bytes,
        message: str) -> None:
    """A 100 MB line of nested lists took 99.8 s and 8 GB before it was
    refused; a non-UTF-8 line said only "UnicodeDecodeError", a deep one
    "unexpected RecursionError". A line past --max-line-bytes (default:
    twice max_value_bytes, or a checkpoint record's most, plus 64 KiB) is
    refused before it is read whole."""
    good = "\n".join(json.dumps(r) for r in _after_good()) + "\n"
    path = tmp_path / "bad.jsonl"
    path.write_bytes(good.encode() + line + b"\n")
    before = await snapshot(source.memory)
    with pytest.raises(InvalidExportError) as info:
        await restore.check_file(source, path)
    assert str(info.value).startswith(message), str(info.value)
    assert await snapshot(source.memory) == before
    if name == "too long":  # the default bound follows the target's value limit
        settings = await source.memory.settings()
        assert str(info.value).startswith(
            f"line 5: longer than {restore.max_line_bytes(int(settings['max_value_bytes']))} ")
        with pytest.raises(InvalidExportError, match="line 5: a value record needs"):
            await restore.check_file(source, path, longest=23_000_000)  # read, then refused


def test_the_import_command_takes_max_line_bytes(tmp_path: Path, redis_url: str,
                                                 ns: str) -> None:
    path = tmp_path / "f.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [_header(ns), _value(value="x" * 5000)]))
    refused = run_script("import", "--namespace", ns, "--max-line-bytes", "2000", str(path),
                         url=redis_url)
    assert refused.returncode == 1 and "line 2: longer than 2000 bytes" in refused.stderr
    done = run_script("import", "--namespace", ns, str(path), url=redis_url)
    assert done.returncode == 0, done.stderr


async def test_raw_stream_records_read_their_stream_once_in_pages(rmem: redismem.Memory) -> None:
    """Each raw stream record read the whole stream to stay idempotent (57 ms
    per record into a 100,000-event thread): the records of one import read
    it once, 1,000 entries a call, and still add nothing twice."""
    from redismem import raw

    ns, key = rmem.namespace, K.thread_events(rmem.namespace, "t")
    for start in range(0, 2500, 500):
        await rmem.client.xadd(key, {"e": "0"})  # the stream to check against
        for i in range(start, start + 499):
            await rmem.client.xadd(key, {"e": str(i + 1)})

    async def xrange_calls() -> int:
        options = on_namespace_node(rmem.client, ns)  # the node of the stream's slot
        stats = await rmem.client.info("commandstats", **options)
        return int(stats.get("cmdstat_xrange", {}).get("calls", 0))

    rows = [raw.RawRow(b"thr:t:ev", "stream", [{b"e": b"new%d" % i}, {b"e": b"7"}])
            for i in range(10)]
    streams: dict[bytes, Any] = {}
    before = await xrange_calls()
    added = [await raw.restore(rmem.client, ns, row, streams) for row in rows]
    assert await xrange_calls() - before == 3  # 2,500 entries: pages of 1,000
    assert added == [True] * 10
    assert await rmem.client.xlen(key) == 2510  # "7" was there; each new one once
    assert [await raw.restore(rmem.client, ns, row, streams) for row in rows] == [False] * 10
