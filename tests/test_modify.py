"""merge and capped append inside the Lua library, on texts written any way
a client may (member order, escaped names, whitespace): RFC 7386 with
members out in code point order, the last max_items items read from the
list's end, and bounds on the work of one call, checked before the server
does it; on the real server and on memory:// (fakeredis' Lua)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import redismem
from redismem import _json, limits
from redismem.errors import RequestTooLargeError

from .test_model import merge_patch

NS = b"merges"
SETTINGS = settings(max_examples=300, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def client(lua_client: redis.Redis) -> redis.Redis:
    return lua_client


def _keys(key: bytes) -> list[bytes]:
    base = b"rm:{" + NS + b"}:"
    return [base + b"keys:val:session:s", base + b"exp:val:session:s",
            base + b"rev:val:session:s", base + b"seq", base + b"feedsz",
            base + b"who:me:0", base + b"turn:session:s", base + b"val:session:s:" + key]


def write(client: redis.Redis, key: bytes, text: bytes) -> None:
    keys = _keys(key)
    client.fcall("redismem_set_values", len(keys), *keys, NS, b"session", b"s", b"",
                 b"me", b"", b"", key, text, b"")


def modify(client: redis.Redis, key: bytes, op: bytes, operand: bytes,
           *extra: bytes) -> str | None:
    """FCALL redismem_modify_value; None when applied, else the error code."""
    keys = _keys(key)
    try:
        client.fcall("redismem_modify_value", len(keys), *keys, NS, b"session", b"s", b"",
                     b"me", b"", b"", key, op, operand, *extra)
    except redis.ResponseError as exc:
        return str(exc).split(" ", 1)[0]
    return None


def merge(client: redis.Redis, key: bytes, patch: bytes) -> str | None:
    return modify(client, key, b"merge", patch)


def stored(client: redis.Redis, key: bytes) -> bytes:
    value: bytes = client.hget(_keys(key)[-1], "v")
    return value


def canonical(value: Any) -> bytes:
    return _json.dumps(value)[0].encode()


def loose(value: Any, rng: random.Random) -> str:
    """JSON of value as a careless client writes it: members shuffled, names
    escaped or not, whitespace around tokens; scalars as Python writes them."""
    space = rng.choice(["", " ", "\n\t"])
    if isinstance(value, dict):
        members = list(value.items())
        rng.shuffle(members)
        parts = [json.dumps(name, ensure_ascii=rng.random() < 0.5) + space + ":" + space
                 + loose(item, rng) for name, item in members]
        return "{" + space + ("," + space).join(parts) + space + "}"
    if isinstance(value, list):
        return "[" + ",".join(loose(item, rng) for item in value) + "]"
    return json.dumps(value)


# Names that share long prefixes (the sort looks at six bytes at a time),
# differ only in length, or hold characters of every UTF-8 length.
NAMES = st.one_of(
    st.text(alphabet="ab\u00e9\u20ac\U0001f600\x00\x7f\"\\ \n", max_size=8),
    st.text(alphabet="ab", min_size=4, max_size=14),
    st.builds(lambda n, tail: "prefix-" * n + tail, st.integers(0, 3),
              st.text(alphabet="aAz\u00e9", max_size=3)))
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2**60, 2**60),
                    st.text(alphabet="x\u00e9\"", max_size=4))
VALUES = st.recursive(SCALARS, lambda children: st.one_of(
    st.lists(children, max_size=3), st.dictionaries(NAMES, children, max_size=5)), max_leaves=12)
OBJECTS = st.dictionaries(NAMES, VALUES, max_size=12)


@SETTINGS
@given(target=st.one_of(st.none(), VALUES), patch=OBJECTS)
def test_canonical_texts_merge_to_the_canonical_text(client: redis.Redis, target: Any,
                                                     patch: dict[str, Any]) -> None:
    client.delete(*_keys(b"o"))
    if target is not None:
        write(client, b"o", canonical(target))
    assert merge(client, b"o", canonical(patch)) is None
    assert stored(client, b"o") == canonical(merge_patch(target, patch))


@SETTINGS
@given(target=OBJECTS, patch=OBJECTS, seed=st.integers(0, 2**32))
def test_loose_texts_merge_to_the_same_value_sorted(client: redis.Redis, target: Any,
                                                    patch: dict[str, Any], seed: int) -> None:
    rng = random.Random(seed)
    write(client, b"o", loose(target, rng).encode())
    assert merge(client, b"o", loose(patch, rng).encode()) is None
    text = stored(client, b"o")
    expected = merge_patch(target, patch)
    assert json.loads(text) == expected
    names = [name for name, _ in json.loads(text, object_pairs_hook=lambda pairs: pairs)]
    assert names == sorted(expected), "members come out in code point order"


@pytest.mark.parametrize("names", [
    ["abcdefabcdefa", "abcdefabcdef", "abcdefabcde", "abcdefg", "abcdef", "abcde", ""],
    ["abcdef", "abcdefh", "abcdefg"], ["abcdefabcdef", "abcdefabcdefh", "abcdefabcdefg"]])
def test_names_that_end_where_six_bytes_end_are_sorted(client: redis.Redis,
                                                       names: list[str]) -> None:
    client.delete(*_keys(b"six"))
    patch = "{" + ",".join(f'"{name}":1' for name in names) + "}"
    assert merge(client, b"six", patch.encode()) is None
    assert stored(client, b"six") == canonical(dict.fromkeys(sorted(names), 1))


def test_repeated_names_last_wins(client: redis.Redis) -> None:
    write(client, b"r", b'{"a":1,"b":2,"a":3}')
    assert merge(client, b"r", b'{"c":{"x":1},"c":{"y":2},"b":null,"b":5}') is None
    assert json.loads(stored(client, b"r")) == {"a": 3, "b": 5, "c": {"x": 1, "y": 2}}


def _flat(count: int, prefix: str = "m") -> dict[str, int]:
    return {f"{prefix}{i}": i for i in range(count)}


def test_the_member_bound_counts_patch_and_value_and_refuses_before_writing(
        client: redis.Redis) -> None:
    cap = limits.MAX_MERGE_MEMBERS
    client.delete(*_keys(b"big"))
    assert merge(client, b"big", canonical(_flat(cap))) is None, "exactly the bound is merged"
    assert merge(client, b"big", canonical({"one": 1})) == "REQUEST_TOO_LARGE"
    assert merge(client, b"fresh", canonical(_flat(cap + 1))) == "REQUEST_TOO_LARGE"
    nested = {"a": _flat(cap // 2), "b": _flat(cap // 2)}
    assert merge(client, b"fresh", canonical(nested)) == "REQUEST_TOO_LARGE", "all levels count"
    assert client.exists(_keys(b"fresh")[-1]) == 0
    assert json.loads(stored(client, b"big")) == _flat(cap), "a refused merge changes nothing"
    # members the patch does not reach are not read: a big nested object is one member
    write(client, b"deep", canonical({"inner": _flat(cap * 2)}))
    assert merge(client, b"deep", canonical({"x": 1})) is None
    assert merge(client, b"deep", canonical({"inner": {"y": 1}})) == "REQUEST_TOO_LARGE"


async def test_the_facade_refuses_a_patch_past_the_bound_without_a_call(
        redis_url: str) -> None:
    async with await redismem.connect(redis_url, namespace="mergebound") as mem:
        scope = mem.session("s")
        patch: dict[str, Any] = {"a": _flat(limits.MAX_MERGE_MEMBERS), "b": 1}
        bound = f"at most {limits.MAX_MERGE_MEMBERS} object members"
        with pytest.raises(RequestTooLargeError, match=bound):
            await scope.merge("o", patch)
        assert (await scope.get("o")).found is False
        await scope.set("big", _flat(limits.MAX_MERGE_MEMBERS))
        with pytest.raises(RequestTooLargeError, match="patch and the stored value"):
            await scope.merge("big", {"one": 1})
        assert (await scope.get("big")).value == _flat(limits.MAX_MERGE_MEMBERS)


# append with max_items: items with quotes and backslashes at their ends,
# nested lists and objects, whitespace between tokens

ITEMS = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
              st.text(alphabet='a,"\\[]{} ', max_size=6)),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.text(alphabet='k"\\,]', max_size=3), children,
                                               max_size=3)), max_leaves=8)


@SETTINGS
@given(items=st.one_of(st.none(), st.lists(ITEMS, max_size=12)), item=ITEMS,
       max_items=st.integers(1, 15), seed=st.integers(0, 2**32))
def test_capped_append_keeps_the_last_items(client: redis.Redis, items: list[Any] | None,
                                            item: Any, max_items: int, seed: int) -> None:
    rng = random.Random(seed)
    client.delete(*_keys(b"l"))
    if items is not None:
        write(client, b"l", loose(items, rng).encode())
    assert modify(client, b"l", b"append", canonical(item), str(max_items).encode()) is None
    assert json.loads(stored(client, b"l")) == ((items or []) + [item])[-max_items:]


def test_capped_append_refuses_what_is_not_a_list(client: redis.Redis) -> None:
    write(client, b"n", b' {"a":[1]} ')
    assert modify(client, b"n", b"append", b"1", b"3") == "WRONG_TYPE"
    assert stored(client, b"n") == b' {"a":[1]} '
    assert modify(client, b"n", b"append", b"1", str(limits.MAX_APPEND_ITEMS + 1).encode()) \
        == "INVALID_ARGUMENT"


def test_capped_append_to_a_long_list_reads_from_its_end(client: redis.Redis) -> None:
    write(client, b"long", canonical(list(range(20_000))))
    assert modify(client, b"long", b"append", b'"end"', b"3") is None
    assert json.loads(stored(client, b"long")) == [19_998, 19_999, "end"]


def test_a_stored_value_over_the_limit_is_refused_before_it_is_read(
        client: redis.Redis) -> None:
    """A merge or append reads the stored value: one over max_value_bytes
    (written before an admin lowered the limit, or raw) is refused by its
    length, before its JSON is checked, and stays as it was."""
    big = canonical({"list": list(range(10_000)), "o": _flat(2000)})
    write(client, b"over", big)
    config = b"rm:{" + NS + b"}:cfg"
    client.fcall("redismem_set_config", 1, config, NS, b"max_value_bytes", b"65536")
    try:
        for op, operand, extra in ((b"merge", b'{"x":1}', ()), (b"append", b"1", ()),
                                   (b"append", b"1", (b"3",))):
            keys = _keys(b"over")
            with pytest.raises(redis.ResponseError, match=r"^VALUE_TOO_LARGE the key holds "
                               rf"{len(big)} bytes of JSON, over the limit"):
                client.fcall("redismem_modify_value", len(keys), *keys, NS, b"session", b"s",
                             b"", b"me", b"", b"", b"over", op, operand, *extra)
        assert stored(client, b"over") == big
    finally:
        client.delete(config)


@pytest.mark.parametrize("max_items", [1, 2, 30, 41, 42, 61, 62, 200])
def test_capped_append_cuts_runs_of_numbers_at_their_commas(client: redis.Redis,
                                                             max_items: int) -> None:
    """The check reads a long run of numbers in bulk: the commas of the run
    are where a capped append may cut the list too."""
    items: list[Any] = [*range(1000, 1040), "a,b", [1, 2], *range(-20, 0), {"k": [3, 4]}]
    text = " [ " + " , ".join(json.dumps(i) for i in items[:40]) + "," + \
        ",".join(json.dumps(i, separators=(",", ":")) for i in items[40:]) + " ] "
    write(client, b"runs", text.encode())
    assert modify(client, b"runs", b"append", b"9", str(max_items).encode()) is None
    assert json.loads(stored(client, b"runs")) == [*items, 9][-max_items:]
