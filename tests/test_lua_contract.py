"""The Lua library's contract: headers, limits, loader and versioning."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
import redis
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.base.id import uuid6
from langgraph.store.base import PutOp

import redismem
from redismem import _validate as check
from redismem import functions, library, lifecycle, limits, restore, transfer, turns
from redismem import keys as K
from redismem.client import open_client
from redismem.errors import BY_CODE
from redismem.functions import Functions
from redismem.langgraph import RedismemSaver, RedismemStore
from redismem.library import assemble, ensure_library
from redismem.repair import repair_feed
from redismem.server import EmbeddedServer

from .test_cli import run_script

LUA = library.lua_dir()
FUNCTION_FILES = sorted((LUA / "functions").glob("*.lua"))


def header(path: Path) -> str:
    text = path.read_text()
    assert text.startswith("--[["), f"{path.name} must open with a header comment"
    return text[: text.index("]]")]


def header_keys(path: Path) -> tuple[int, bool]:
    """(number of fixed KEYS slots, whether more follow per item) from the header."""
    slots = re.findall(r"KEYS\[(\d+)\]", header(path))
    variadic = re.search(r"KEYS\[(?:\d+\+)?i\]", header(path)) is not None
    return len(slots), variadic


@pytest.mark.parametrize("path", FUNCTION_FILES, ids=lambda p: p.name)
def test_every_function_file_documents_its_contract(path: Path) -> None:
    text = header(path)
    name = f"redismem_{path.stem}"
    assert text.startswith(f"--[[ {name}:"), "the header starts with the function's name"
    for part in ("KEYS", "ARGV", "Reply", "Errors"):
        assert part in text, f"{path.name}: header lacks {part}"
    assert f"register('{name}'" in path.read_text(), "one file, one registered function"


@pytest.mark.parametrize("path", sorted(LUA.rglob("*.lua")), ids=lambda p: p.name)
def test_every_lua_file_is_small_and_says_what_it_holds(path: Path) -> None:
    """One concern per file: a header naming it (the part of its file name
    after the number, for lib/), and no file over 600 lines (15_text.lua
    had 719: JSON syntax, UTF-8, numbers and reading, now four files)."""
    text = path.read_text()
    assert len(text.splitlines()) <= 600, f"{path.name}: split it by concern"
    if path.parent.name == "lib":
        concern = path.stem.split("_", 1)[1]
        assert text.startswith(f"--[[ {concern}: "), "the header starts with its concern"


class Recording(Functions):
    """Functions that remember each call: its name, KEYS, ARGV and whether
    it was read-only."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.calls: dict[str, list[int]] = {}
        self.sent: list[tuple[str, list[str], list[Any], bool]] = []

    async def _call(self, name: str, keys: Any, args: Any, **options: Any) -> Any:
        reply = await super()._call(name, keys, args, **options)
        # only calls the server ran (an import's ACL probe sends none of its own)
        self.calls.setdefault(name, []).append(len(keys))
        self.sent.append((name, list(keys), list(args), bool(options.get("read_only"))))
        return reply


async def call_every_function(rmem: redismem.Memory, redis_url: str, tmp_path: Path
                              ) -> Recording:
    """Every library function, called through the facade, recorded."""
    recording = Recording(rmem.client)
    rmem._conn.functions = recording
    scope = rmem.session("s")
    await scope.set("a", 1)
    await scope.set_many({"b": 1, "c": 2})
    await scope.get("a")  # one HMGET: no function
    await scope.get_many(["a"])
    await scope.get_many(["a", "b", "c"])
    await scope.keys()
    await scope.delete("a")
    await scope.incr("n")
    await scope.append("l", 1)
    await scope.merge("o", {"a": 1})
    await rmem.create_session("s2")
    await rmem.configure(max_value_bytes=4096)
    await rmem.trim_feed()
    await rmem.client.xadd(K.feed(rmem.namespace), {"forged": "1"}, id="999999-5")
    await repair_feed(rmem)  # drops it; on Redis 7.2+ copies the feed and swaps it in
    await scope.set_vector("v", [1.0, 0.0])
    await scope.set_vectors([("w", [0.0, 1.0]), ("x", [1.0, 1.0])])
    await scope.get_vector("v")
    await scope.delete_vector("v")
    await recording.version()
    turn = await scope.acquire_turn()
    await turn.renew()
    await turn.release()
    await turns.evict(rmem._conn, "session", "s", "nobody/h")
    await lifecycle.forget_user(rmem, "gone")
    saver = RedismemSaver(rmem)
    for thread, count in (("lg1", 1), ("lg2", 2)):  # deleted in calls of 1, then 2 ids
        config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        for _ in range(count):
            checkpoint = {**empty_checkpoint(), "id": str(uuid6()),
                          "channel_values": {"a": 1}, "channel_versions": {"a": 1}}
            config = await saver.aput(config, checkpoint, {"run_id": "r1"}, {"a": 1})
            await saver.aput_writes(config, [("a", 2)], "task-1")
            assert (await saver.aget_tuple(config)).checkpoint["channel_values"] == {"a": 1}
        await saver.adelete_thread(thread)
    store = RedismemStore(rmem)
    await store.aput(("lg",), "k", {"a": 1})  # one item, then two
    await store.abatch([PutOp(("lg",), "k", {"a": 2}), PutOp(("lg",), "k2", {"a": 3})])
    async with redismem.RedisMemoryStore(redis_url, namespace=rmem.namespace) as store:
        store.memory._conn.functions = recording
        event = redismem.MemoryEvent("e1", "t1", None, "message", 1, {})
        await store.append_event(event)
        await store.get_recent_events("t1")
        await store.get_events_since("t1", 0)
        await store.replace_thread_events("t1", [event])
        await store.append_event(redismem.MemoryEvent("e2", "t1", None, "message", 2, {}))
        await store.compact_thread("t1", redismem.RetentionPolicy(1))
        record = redismem.LongTermMemory("m1", "u1", "s", {}, "text", [], {}, 1, 1)
        await store.upsert_long_term_memory(record)
        await store.delete_long_term_memory("u1", "m1")
        export = tmp_path / "export.jsonl"
        with export.open("w") as out:
            await transfer.export_namespace(store.memory, out.write)
    async with redismem.RedisMemoryStore(redis_url, namespace=rmem.namespace + "-i") as store:
        store.memory._conn.functions = recording
        await restore.import_file(store, export)
    return recording


async def test_python_wrappers_pass_the_keys_the_headers_list(rmem: redismem.Memory,
                                                               redis_url: str,
                                                               tmp_path: Path) -> None:
    recording = await call_every_function(rmem, redis_url, tmp_path)
    assert set(recording.calls) == {f"redismem_{p.stem}" for p in FUNCTION_FILES}
    for path in FUNCTION_FILES:
        fixed, variadic = header_keys(path)
        counts = recording.calls[f"redismem_{path.stem}"]
        if path.stem == "forget_user":  # as many keys as the user has: none at first
            assert counts[0] == fixed and all(n > fixed for n in counts[1:]), counts
        elif variadic:  # one more key per item: the calls above had 1 item, then 2 or 3
            # import_values: the session scope's 5 values, the store's 2 items
            items = {"get_values": [1, 3], "get_vectors": [1], "import_values": [5, 2],
                     "import_vectors": [2]}.get(path.stem, [1, 2])
            assert counts == [fixed + n for n in items], path.name
        else:
            assert set(counts) == {fixed}, path.name


async def test_the_lua_side_checks_every_key_python_builds(
        rmem: redismem.Memory, redis_url: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The key schema is written twice, in redismem/keys.py and
    lua/lib/30_keys.lua. Every call above succeeded, so the Lua side
    accepted the keys Python built; here each of those keys in turn is
    swapped for another key of the same slot, and the Lua side refuses the
    call: no slot goes unchecked, so the two schemas cannot drift apart
    without a failing call."""
    ids: set[str] = set()

    def recorded_id() -> str:
        ids.add(fresh := secrets.token_urlsafe(12))
        return fresh

    monkeypatch.setattr(functions, "request_id", recorded_id)
    recording = await call_every_function(rmem, redis_url, tmp_path)
    unchecked = []
    for name, keys, args, read_only in recording.sent:
        ns = re.match(r"rm:\{([^}]*)\}", keys[0])[1] if keys else None  # type: ignore[index]
        for slot in range(len(keys)):
            wrong = [*keys[:slot], f"rm:{{{ns}}}:not-a-library-key", *keys[slot + 1:]]
            fresh = [secrets.token_urlsafe(12) if arg in ids else arg for arg in args]
            try:
                await rmem.client.execute_command("FCALL_RO" if read_only else "FCALL", name,
                                                  len(wrong), *wrong, *fresh)
            except redis.ResponseError as exc:
                assert str(exc).startswith(("INVALID_ARGUMENT", "INVALID_KEY")), (name, slot, exc)
            else:
                unchecked.append((name, slot + 1, keys[slot]))
    assert unchecked == []


def test_every_error_code_the_library_replies_with_has_one_class() -> None:
    """The codes Lua fails with (quoted in its sources) and those the
    function headers list are exactly the codes of errors.BY_CODE."""
    raised: set[str] = set()
    listed: set[str] = set()
    for path in LUA.rglob("*.lua"):
        text = path.read_text()
        raised |= set(re.findall(r"'([A-Z]+_[A-Z_]+)'", text))
        if path in FUNCTION_FILES:
            listed |= set(re.findall(r"\b[A-Z]+_[A-Z_]+\b",
                                     header(path).partition("Errors:")[2]))
    assert raised == listed == set(BY_CODE)
    assert len(set(BY_CODE.values())) == len(BY_CODE)


def test_lua_and_python_settings_agree() -> None:
    text = (LUA / "lib" / "40_config.lua").read_text()
    bounds = {name: (int(low), int(high)) for name, low, high in re.findall(
        r"(\w+) = \{low = (\d+), high = (\d+)", text)}
    words = {name: tuple(sorted(re.findall(r"(\w+) = true", choices))) for name, choices in
             re.findall(r"(\w+) = \{choices = \{([^}]*)\}", text)}
    symbolic = {name: (low, high) for name, low, high in re.findall(
        r"(\w+) = \{low = LIMITS\.(\w+), high = LIMITS\.(\w+)", text)}
    assert symbolic == {
        "max_value_bytes": ("min_value_bytes_setting", "max_value_bytes_ceiling"),
        "max_call_bytes": ("min_call_bytes_setting", "max_call_bytes_ceiling"),
        "feed_max_bytes": ("min_feed_bytes_setting", "max_feed_bytes_ceiling")}
    bounds["max_value_bytes"] = (limits.MIN_VALUE_BYTES_SETTING, limits.MAX_VALUE_BYTES_CEILING)
    bounds["max_call_bytes"] = (limits.MIN_CALL_BYTES_SETTING, limits.MAX_CALL_BYTES_CEILING)
    bounds["feed_max_bytes"] = (limits.MIN_FEED_BYTES_SETTING, limits.MAX_FEED_BYTES_CEILING)
    bounds["max_call_vectors"] = (1, limits.MAX_BATCH)
    assert "max_call_vectors = {low = 1, high = LIMITS.max_batch" in text
    bounds["feed_retention_ms"] = (1, limits.MAX_TTL_MS)
    assert "feed_retention_ms = {low = 1, high = LIMITS.max_ttl_ms" in text
    assert bounds == limits.SETTING_BOUNDS
    assert words == limits.SETTING_CHOICES


def test_both_sides_refuse_the_same_format_characters() -> None:
    """FORMAT_RANGES is the same table in Lua and Python, and holds every
    format character (Unicode category Cf) this Python knows."""
    text = (LUA / "lib" / "20_validate.lua").read_text()
    table = re.search(r"local FORMAT_RANGES = \{(.*?)\n\}", text, re.S)
    assert table is not None
    lua = tuple((int(a), int(b)) for a, b in re.findall(r"\{(\d+), (\d+)\}", table[1]))
    assert lua == limits.FORMAT_RANGES
    covered = {c for a, b in limits.FORMAT_RANGES for c in range(a, b + 1)}
    known = {c for c in range(sys.maxunicode + 1) if unicodedata.category(chr(c)) == "Cf"}
    assert known <= covered, sorted(known - covered)[:10]
    for bad in ("\u202e", "\u200d", "\ufeff", "\u00ad", "\U000e0001"):
        with pytest.raises(redismem.InvalidKeyError, match="format characters"):
            check.check_key(f"a{bad}b")
        with pytest.raises(redismem.InvalidIdError, match="format characters"):
            check.check_id("scope id", f"a{bad}b")
    assert check.check_key("caf\u00e9") == "caf\u00e9"  # NFC or NFD, letters pass
    assert check.check_key("cafe\u0301") == "cafe\u0301"


def test_lua_and_python_limits_agree() -> None:
    text = (LUA / "lib" / "10_limits.lua").read_text()
    lua = {name: int(value) for name, value in re.findall(r"(\w+) = (\d+)", text)}
    assert lua == {
        "max_key_bytes": limits.MAX_KEY_BYTES,
        "max_id_bytes": limits.MAX_ID_BYTES,
        "max_value_bytes": limits.MAX_VALUE_BYTES,
        "max_value_bytes_ceiling": limits.MAX_VALUE_BYTES_CEILING,
        "min_value_bytes_setting": limits.MIN_VALUE_BYTES_SETTING,
        "max_ttl_ms": limits.MAX_TTL_MS,
        "max_page_limit": limits.MAX_PAGE_LIMIT,
        "default_page_limit": limits.DEFAULT_PAGE_LIMIT,
        "max_batch": limits.MAX_BATCH,
        "max_revision": limits.MAX_REVISION,
        "max_sequence": limits.MAX_SEQUENCE,
        "feed_value_bytes": limits.FEED_VALUE_BYTES,
        "feed_retention_ms": limits.FEED_RETENTION_MS,
        "trim_per_write": limits.TRIM_PER_WRITE,
        "trim_every": limits.TRIM_EVERY,
        "trim_slice_events": limits.TRIM_SLICE_EVENTS,
        "trim_slice_bytes": limits.TRIM_SLICE_BYTES,
        "max_call_bytes": limits.MAX_CALL_BYTES,
        "max_call_vectors": limits.MAX_CALL_VECTORS,
        "max_call_bytes_ceiling": limits.MAX_CALL_BYTES_CEILING,
        "min_call_bytes_setting": limits.MIN_CALL_BYTES_SETTING,
        "feed_max_bytes": limits.FEED_MAX_BYTES,
        "max_feed_bytes_ceiling": limits.MAX_FEED_BYTES_CEILING,
        "min_feed_bytes_setting": limits.MIN_FEED_BYTES_SETTING,
        "max_append_items": limits.MAX_APPEND_ITEMS,
        "max_merge_members": limits.MAX_MERGE_MEMBERS,
        "max_vector_dim": limits.MAX_VECTOR_DIM,
        "max_metadata_bytes": limits.MAX_METADATA_BYTES,
        "max_events_per_call": limits.MAX_EVENTS_PER_CALL,
        "max_events_per_read": limits.MAX_EVENTS_PER_READ,
        "max_event_bytes": limits.MAX_EVENT_BYTES,
        "max_checkpoint_bytes": limits.MAX_CHECKPOINT_BYTES,
        "max_json_depth": limits.MAX_JSON_DEPTH,
        "min_turn_ms": limits.MIN_TURN_MS,
        "max_turn_ms": limits.MAX_TURN_MS,
    }


def test_assembled_library() -> None:
    source = library.bundled()
    assert source.code.startswith("#!lua name=redismem\n")
    assert source.version >= 1
    assert len(source.function_names) == len(FUNCTION_FILES)


def copy_lua(tmp_path: Path) -> Path:
    target = tmp_path / "lua"
    shutil.copytree(LUA, target)
    return target


def test_loader_fails_on_missing_files(tmp_path: Path) -> None:
    lua = copy_lua(tmp_path)
    shutil.rmtree(lua / "functions")
    with pytest.raises(FileNotFoundError, match="functions"):
        assemble(lua)
    (lua / "header.lua").unlink()
    with pytest.raises(FileNotFoundError):
        assemble(lua)


def test_loader_fails_on_duplicated_function(tmp_path: Path) -> None:
    lua = copy_lua(tmp_path)
    shutil.copy(lua / "functions" / "get_values.lua", lua / "functions" / "zz_copy.lua")
    with pytest.raises(ValueError, match="redismem_get_values"):
        assemble(lua)


def test_loader_fails_without_version(tmp_path: Path) -> None:
    lua = copy_lua(tmp_path)
    path = lua / "functions" / "version.lua"
    path.write_text(path.read_text().replace("local LIBRARY_VERSION", "local VERSION"))
    with pytest.raises(ValueError, match="LIBRARY_VERSION"):
        assemble(lua)


def fake_library(version: int) -> str:
    return ("#!lua name=redismem\n"
            f"redis.register_function{{function_name='redismem_version', "
            f"callback=function() return {version} end, flags={{'no-writes'}}}}\n")


@pytest.fixture
async def lone_client(tmp_path: Path) -> Any:
    """A client on a server of its own, so library swaps touch no other test."""
    server = EmbeddedServer(tmp_path / "redis")
    state = server.start()
    client = await open_client(state.url)
    yield state.url, client
    await client.aclose()
    server.stop()


async def test_library_versioning(lone_client: Any) -> None:
    url, client = lone_client
    bundled = library.bundled().version
    first = await ensure_library(client)
    assert (first.action, first.previous, first.version) == ("loaded", None, bundled)
    again = await ensure_library(client)
    assert (again.action, again.previous) == ("unchanged", bundled)

    await client.function_load(fake_library(bundled - 1), replace=True)
    async with await redismem.connect(url, namespace="v") as mem:
        assert mem.capabilities.library_version == bundled
        assert (await mem.global_scope().set("k", 1)).revision == 1  # the real library is back
    await client.function_load(fake_library(bundled - 1), replace=True)
    replaced = await ensure_library(client)
    assert (replaced.action, replaced.previous) == ("replaced", bundled - 1)

    await client.function_load(fake_library(bundled + 1), replace=True)
    with pytest.raises(redismem.LibraryVersionError, match="newer"):
        await redismem.connect(url, namespace="v")
    assert int(await client.fcall_ro("redismem_version", 0)) == bundled + 1  # left alone
    forced = await ensure_library(client, force=True)
    assert (forced.action, forced.previous) == ("replaced", bundled + 1)


async def test_load_functions_command_reports_the_version_replaced(lone_client: Any) -> None:
    url, client = lone_client
    bundled = library.bundled().version
    await client.function_load(fake_library(bundled - 1))
    done = run_script("load-functions", "--url", url)
    assert done.stdout.strip() == f"replaced: library version {bundled} (was {bundled - 1})"
    await client.function_load(fake_library(bundled + 3), replace=True)
    refused = run_script("load-functions", "--url", url)
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert f"LibraryVersionError: the server runs redismem Lua library version {bundled + 3}" in (
        refused.stderr)
    forced = run_script("load-functions", "--url", url, "--force", "--json")
    assert json.loads(forced.stdout) == {"action": "replaced", "previous": bundled + 3,
                                         "version": bundled}


async def test_flushall_keeps_functions(lone_client: Any) -> None:
    _, client = lone_client
    await ensure_library(client)
    await client.flushall()
    assert (await ensure_library(client)).action == "unchanged"


FIXED_ARITY = {"create_session": 3, "delete_memory": 3, "delete_value": 8, "delete_vector": 8,
               "events_since": 5, "get_config": 1, "list_keys": 7, "recent_events": 4,
               "trim_feed": 2, "upsert_memory": 7, "modify_value": 11, "turn_acquire": 8,
               "turn_evict": 5, "turn_release": 6, "turn_renew": 7, "version": 0,
               "checkpoint_get": 4}


def test_a_trailing_extra_argument_is_refused(redis_url: str) -> None:
    """Every function of a fixed number of arguments refuses one more,
    before anything else (set_values and the other batch functions count
    their items exactly)."""
    client = redis.Redis.from_url(redis_url)
    client.function_load(library.bundled().code, replace=True)
    try:
        for name, most in FIXED_ARITY.items():
            read_only = name in ("events_since", "get_config", "list_keys", "recent_events",
                                 "version", "checkpoint_get")
            call = client.fcall_ro if read_only else client.fcall
            with pytest.raises(redis.ResponseError, match=f"^INVALID_ARGUMENT expected at most "
                                                          f"{most} arguments"):
                call(f"redismem_{name}", 0, *["x"] * (most + 1))
        with pytest.raises(redis.ResponseError,
                           match=r"^INVALID_ARGUMENT redismem_version takes no keys"):
            client.fcall_ro("redismem_version", 1, "rm:{x}:k")
    finally:
        client.close()


def test_the_library_keeps_room_under_luas_200_locals() -> None:
    """Redis compiles the whole library as one Lua chunk, which may hold at
    most 200 local variables: one more helper past that and FUNCTION LOAD
    fails on every server ("main function has more than 200 local
    variables"). New helpers go into a table (as lib/85_checkpoints.lua's CP)."""
    top_level = [line for line in library.bundled().code.splitlines()
                 if line.startswith("local ")]
    assert len(top_level) <= 196, f"{len(top_level)} top-level locals: group helpers in tables"
