"""Bad input gets a clear error and changes nothing, through the Python API and
through raw FCALL (the redis-cli path)."""

from __future__ import annotations

from typing import Any

import pytest

import redismem
from redismem import keys as K

from .helpers import snapshot

BAD_IDS = ["a:b", "a{b", "a}b", "a b", "a\tb", "", "x" * 129]


async def test_python_bad_namespace(redis_url: str) -> None:
    for bad in BAD_IDS:
        with pytest.raises(redismem.InvalidIdError):
            await redismem.connect(redis_url, namespace=bad)
    with pytest.raises(redismem.InvalidIdError, match="principal"):
        await redismem.connect(redis_url, principal="bad principal")


async def test_python_bad_scope_ids(mem: redismem.Memory) -> None:
    before = await snapshot(mem)
    for bad in BAD_IDS:
        for make in (mem.session, mem.actor, mem.workflow):
            with pytest.raises(redismem.InvalidIdError):
                make(bad)
        with pytest.raises(redismem.InvalidIdError), redismem.session_scope(bad):
            pass
        with pytest.raises(redismem.InvalidIdError):
            await mem.create_session(bad)
    assert await snapshot(mem) == before


class Unserialisable:
    pass


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda s: s.set("", 1), redismem.InvalidKeyError, "non-empty"),
        (lambda s: s.set("k" * 513, 1), redismem.InvalidKeyError, "513 bytes"),
        (lambda s: s.set("é" * 257, 1), redismem.InvalidKeyError, "514 bytes"),
        (lambda s: s.set("a\nb", 1), redismem.InvalidKeyError, "control"),
        (lambda s: s.set(5, 1), redismem.InvalidKeyError, "string"),
        (lambda s: s.set("k", Unserialisable()), redismem.InvalidValueError, "JSON"),
        (lambda s: s.set("k", {"a": float("nan")}), redismem.InvalidValueError, "JSON"),
        (lambda s: s.set("k", b"bytes"), redismem.InvalidValueError, "JSON"),
        (lambda s: s.set("k", "x" * (1 << 17)), redismem.ValueTooLargeError, "limit is 131072"),
        (lambda s: s.set("k", 1, ttl_seconds=0), redismem.InvalidTTLError, "positive"),
        (lambda s: s.set("k", 1, ttl_seconds=-5), redismem.InvalidTTLError, "positive"),
        (lambda s: s.set("k", 1, ttl_seconds=float("inf")), redismem.InvalidTTLError,
         "at most"),
        (lambda s: s.set("k", 1, ttl_seconds="10"), redismem.InvalidTTLError, "number"),
        (lambda s: s.set("k", 1, expected_revision=1.5), redismem.InvalidRevisionError, "integer"),
        (lambda s: s.set("k", 1, expected_revision="1"), redismem.InvalidRevisionError, "integer"),
        (lambda s: s.set("k", 1, expected_revision=-1), redismem.InvalidRevisionError, ">= 0"),
        (lambda s: s.delete("k", expected_revision=True), redismem.InvalidRevisionError, "integer"),
        (lambda s: s.delete(""), redismem.InvalidKeyError, "non-empty"),
        (lambda s: s.get("k" * 600), redismem.InvalidKeyError, "600 bytes"),
        (lambda s: s.set_many({f"k{i}": i for i in range(1001)}), redismem.InvalidArgumentError,
         "1000"),
    ],
)
async def test_python_bad_arguments(mem: redismem.Memory, call: Any, error: type[Exception],
                                    message: str) -> None:
    scope = mem.session("s")
    await scope.set("k", "original")
    before = await snapshot(mem)
    with pytest.raises(error, match=message) as info:
        await call(scope)
    assert isinstance(info.value, ValueError)
    assert await snapshot(mem) == before


async def test_configured_value_limit(mem: redismem.Memory) -> None:
    assert (await mem.settings())["max_value_bytes"] == 128 * 1024
    await mem.configure(max_value_bytes=2048)
    scope = mem.global_scope()
    await scope.set("fits", "x" * 2000)
    before = await snapshot(mem)
    with pytest.raises(redismem.ValueTooLargeError, match="limit is 2048"):
        await scope.set("big", "x" * 2047)
    assert await snapshot(mem) == before
    for bad in (10, 1 << 30):
        with pytest.raises(redismem.InvalidArgumentError, match="max_value_bytes"):
            await mem.configure(max_value_bytes=bad)
    with pytest.raises(redismem.InvalidArgumentError, match="unknown setting"):
        await mem.configure(colour=1)


def value_call(ns: str, key: str = "k", *, scope: str = "session", sid: str = "s",
               json_text: str = "1", expected: str = "", ttl: str = "",
               principal: str = "me", request: str = "", token: str = "") -> list[Any]:
    """Raw FCALL arguments for redismem_set_values of one item."""
    keys = [*K.scope_writes(ns, "value", scope, sid, principal), K.value(ns, scope, sid, key)]
    return ["redismem_set_values", len(keys), *keys, ns, scope, sid, ttl, principal, request,
            token, key, json_text, expected]


MEMORY_RECORD = ('{"created_at":1,"data":{},"id":"m","metadata":{},"scope":"s","tags":[],'
                 '"text":"t","updated_at":1,"user_id":"u"}')


def import_call(ns: str, *, kind: str = "value", key: str = "k", json_text: str = "1",
                content: tuple[bytes | str, ...] | None = None, revision: str = "4",
                ts: str = "5", by: str = "me", expires: str = "") -> list[Any]:
    """A raw FCALL of redismem_import_values (or _vectors), good unless told otherwise."""
    keys = [*K.scope_writes(ns, kind, "session", "s", "me"), K.config(ns)]  # type: ignore[arg-type]
    if kind == "vector":
        keys += [K.vector_dims(ns, "session", "s"), K.vector(ns, "session", "s", key)]
    else:
        keys.append(K.value(ns, "session", "s", key))
    item = (key, *(content or (json_text,)), revision, ts, by, expires)
    return [f"redismem_import_{kind}s", len(keys), *keys, ns, "session", "s", "me", *item]


def raw_cases(ns: str) -> list[tuple[list[Any], str]]:
    good = value_call(ns)
    wrong_key = list(good)
    wrong_key[9] = "rm:{other}:val:session:s:k"
    no_bucket, other_bucket = list(good), list(good)
    no_bucket[7] = f"rm:{{{ns}}}:who:me"
    other_bucket[7] = f"rm:{{{ns}}}:who:me:12x"
    return [
        (value_call(ns, json_text="{not json"), "INVALID_JSON"),
        (value_call(ns, json_text=""), "INVALID_JSON"),
        (value_call(ns, json_text='"' + "x" * (1 << 17) + '"'), "VALUE_TOO_LARGE"),
        (value_call(ns, ttl="0"), "INVALID_TTL"),
        (value_call(ns, ttl="-10"), "INVALID_TTL"),
        (value_call(ns, ttl="1.5"), "INVALID_TTL"),
        (value_call(ns, ttl="soon"), "INVALID_TTL"),
        (value_call(ns, expected="1.5"), "INVALID_REVISION"),
        (value_call(ns, expected="abc"), "INVALID_REVISION"),
        (value_call(ns, expected="-1"), "INVALID_REVISION"),
        (value_call(ns, expected="3"), "REVISION_CONFLICT"),
        (value_call(ns, key=""), "INVALID_KEY"),
        (value_call(ns, key="k" * 513), "INVALID_KEY"),
        (value_call(ns, key="a\x01b"), "INVALID_KEY"),
        (value_call(ns, key="invoice\u202etxt.exe"), "INVALID_KEY key must not contain format "
         "characters (invisible, or reordering the text): U+202E at byte 8"),
        (value_call(ns, key="a\u200db"), "INVALID_KEY key must not contain format characters "
         "(invisible, or reordering the text): U+200D at byte 2"),
        (value_call(ns, key="\ufeffk"), "INVALID_KEY key must not contain format characters "
         "(invisible, or reordering the text): U+FEFF at byte 1"),
        (value_call(ns, key="é\U000e0041"), "INVALID_KEY key must not contain format characters "
         "(invisible, or reordering the text): U+E0041 at byte 3"),
        (value_call(ns, sid="s\u200b"), "INVALID_ID"),
        (value_call(ns, sid="a:b"), "INVALID_ID"),
        (value_call(ns, sid="a b"), "INVALID_ID"),
        (value_call(ns, sid="a{b"), "INVALID_ID"),
        (value_call(ns, scope="global", sid="x"), "INVALID_ID"),
        (value_call(ns, scope="team"), "INVALID_ARGUMENT"),
        (value_call(ns, principal="a}b"), "INVALID_ID"),
        (value_call(ns + " x"), "INVALID_ID"),
        (value_call(ns + ":x"), "INVALID_ID"),
        (wrong_key, "INVALID_ARGUMENT KEYS[8] must be"),
        (no_bucket, "INVALID_ARGUMENT KEYS[6] must be"),
        (other_bucket, "INVALID_ARGUMENT KEYS[6] must be"),
        (value_call(ns, request="a b"), "INVALID_ARGUMENT a request id"),
        (value_call(ns, request="x" * 65), "INVALID_ARGUMENT a request id"),
        (value_call(ns, request="é"), "INVALID_ARGUMENT a request id"),
        (good[:-1], "INVALID_ARGUMENT"),
        (["redismem_set_values", 0, ns], "INVALID_ARGUMENT"),
        (["redismem_delete_value", 0, ns, "session", "s", "k", "", "me", "", ""],
         "INVALID_ARGUMENT"),
        (["redismem_delete_value", 8, K.value(ns, "session", "s", "k"),
          *K.scope_writes(ns, "value", "session", "s", "me"),
          ns, "session", "s", "k", "x", "me", "", ""], "INVALID_REVISION"),
        (["redismem_delete_value", 8, K.value(ns, "session", "s", "k"),
          *K.scope_writes(ns, "value", "session", "s", "me"),
          ns, "session", "s", "k", "", "me", ""], "INVALID_ARGUMENT"),
        (value_call(ns, token="x"), "INVALID_ARGUMENT turn token must be an integer"),
        (value_call(ns, token="1"), "STALE_TURN turn token 1 was never issued: session:s is at "
                                    "token 0"),
        (["redismem_trim_feed", 3, K.feed(ns), K.feed_size(ns), K.config(ns), ns, "0"],
         "INVALID_ARGUMENT"),
        (["redismem_trim_feed", 3, K.feed(ns), K.feed_size(ns), K.sequence(ns), ns, ""],
         "INVALID_ARGUMENT"),
        (["redismem_set_config", 1, K.config(ns), ns, "max_value_bytes", "12.5"],
         "INVALID_ARGUMENT"),
        (["redismem_set_config", 1, K.config(ns), ns, "vector_index", "flat",
          "max_value_bytes", "12"], "INVALID_ARGUMENT"),
        (["redismem_set_config", 1, K.config(ns), ns, "vector_index"], "INVALID_ARGUMENT"),
        (["redismem_create_session", 1, K.sessions(ns), ns, "a b"], "INVALID_ID"),
        (["redismem_create_session", 1, K.sessions(ns), ns, "s9", "yesterday"],
         "INVALID_ARGUMENT"),
        (import_call(ns, revision="0"), "INVALID_REVISION"),
        (import_call(ns, revision="x"), "INVALID_REVISION"),
        (import_call(ns, ts="-1"), "INVALID_ARGUMENT"),
        (import_call(ns, by="a b"), "INVALID_ID"),
        (import_call(ns, expires="0"), "INVALID_ARGUMENT"),
        (import_call(ns, expires="soon"), "INVALID_ARGUMENT"),
        (import_call(ns, json_text="{no"), "INVALID_JSON"),
        (import_call(ns, key=""), "INVALID_KEY"),
        (import_call(ns)[:-1], "INVALID_ARGUMENT"),
        (import_call(ns, kind="vector", content=(b"\0" * 12, "{}")), "INVALID_VECTOR"),
        (import_call(ns, kind="vector", content=(b"\0\0\x80\x3f", "[1]")),
         "INVALID_METADATA"),
        (import_call(ns, kind="vector", content=(b"\0\0\x80\x3f", "{}"), revision="-3"),
         "INVALID_REVISION"),
        (["redismem_raise_revisions", 2, K.revisions(ns, "value", "session", "s"), K.config(ns), ns,
          "session", "s", "value", "k", "0"], "INVALID_REVISION"),
        (["redismem_raise_revisions", 2, K.revisions(ns, "value", "session", "s"), K.config(ns), ns,
          "session", "s", "blob", "k", "3"], "INVALID_ARGUMENT"),
        (["redismem_raise_revisions", 2, K.revisions(ns, "vector", "session", "s"), K.config(ns),
          ns, "session", "s", "value", "k", "3"], "INVALID_ARGUMENT KEYS[1] must be"),
        (["redismem_upsert_memory", 3, K.memory(ns, "u", "m"), K.memories(ns, "u"),
          K.memory_dim(ns), ns, "u", "m", MEMORY_RECORD, "", "always"],
         "INVALID_ARGUMENT"),
        (["redismem_upsert_memory", 3, K.memory(ns, "u", "m"), K.memories(ns, "u"),
          K.memory_dim(ns), ns, "u", "m", MEMORY_RECORD, "", "", "-1"],
         "INVALID_REVISION"),
        (["redismem_upsert_memory", 3, K.memory(ns, "u", "m"), K.memories(ns, "u"),
          K.memory_dim(ns), ns, "u", "m", MEMORY_RECORD, "", "", "5"],
         "REVISION_CONFLICT"),
        (["redismem_get_values", 0], "INVALID_ARGUMENT"),
        (["redismem_get_values", 1, K.value(ns, "session", "s", "k"), "extra"],
         "INVALID_ARGUMENT"),
        (["redismem_get_values", 1, K.names(ns, "value", "session", "s")], "INVALID_ARGUMENT"),
        (["redismem_get_values", 1, K.value(ns, "session", "a b", "k")], "INVALID_ID"),
        (["redismem_get_values", 1, K.value(ns, "global", "x", "k")], "INVALID_ID"),
        (["redismem_get_values", 1, K.value(ns, "session", "s", "")], "INVALID_KEY"),
        # a batch checks its first key in full, then each other key's own part
        *((["redismem_get_values", 2, K.value(ns, "session", "s", "k"),
            K.value(ns, "session", "s", "k") + tail], "INVALID_KEY")
          for tail in ("\x01", "\x7f", "x" * 512, "\u200b")),
        (["redismem_get_values", 2, K.value(ns, "session", "s", "k"),
          K.value(ns, "session", "s", "k").encode() + b"\xff"], "INVALID_KEY"),
        (["redismem_get_values", 2, K.value(ns, "session", "s", "k"),
          K.value(ns, "session", "s", "")], "INVALID_KEY"),
        (["redismem_get_values", 2, K.value(ns, "session", "s", "k"),
          K.value(ns, "session", "a b", "k")], "INVALID_ID"),
        (["redismem_get_values", 2, K.value(ns, "session", "s", "k"),
          K.names(ns, "value", "session", "s")], "INVALID_ARGUMENT"),
        (["redismem_get_vectors", 2, K.vector(ns, "session", "s", "k"),
          K.vector(ns, "session", "s", "k\x01")], "INVALID_KEY"),
    ]


async def test_raw_fcall_bad_arguments(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    await rmem.session("s").set("k", "original")
    before = await snapshot(rmem)
    for args, code in raw_cases(ns):
        with pytest.raises(Exception) as info:
            await rmem.client.execute_command("FCALL", *args)
        assert str(info.value).startswith(code), (args[:1], str(info.value))
        assert await snapshot(rmem) == before, args


async def test_raw_fcall_happy_path_writes_feed_in_same_call(rmem: redismem.Memory) -> None:
    ns = rmem.namespace
    reply = await rmem.client.execute_command("FCALL", *value_call(ns, json_text='{"a":1}'))
    assert reply == [1]
    value = await rmem.client.hgetall(K.value(ns, "session", "s", "k"))
    assert value[b"v"] == b'{"a":1}' and value[b"rev"] == b"1" and value[b"by"] == b"me"
    [(entry_id, fields)] = await rmem.client.xrange(K.feed(ns))
    assert entry_id == b"1-0"
    assert fields[b"action"] == b"set" and fields[b"value"] == b'{"a":1}'
    assert (await rmem.session("s").get("k")).value == {"a": 1}
    got = await rmem.client.execute_command(
        "FCALL_RO", "redismem_get_values", 2, K.value(ns, "session", "s", "k"),
        K.value(ns, "session", "s", "missing"))
    assert got == [b'{"a":1}', 1, None, 0]
