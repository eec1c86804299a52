"""One rule on both sides of the trust boundary: for generated JSON texts,
values, keys and identifiers, the Python checks accept exactly what the Lua
library accepts, on the real server and on memory:// (fakeredis' Lua)."""

from __future__ import annotations

import json
import struct
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from redismem import _json
from redismem import _validate as check
from redismem import vectors as V
from redismem.errors import InvalidArgumentError, InvalidMetadataError, InvalidVectorError

NS = b"jsonrules"
Accepts = Callable[[bytes], bool]
SETTINGS = settings(max_examples=500, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def client(lua_client: redis.Redis) -> redis.Redis:
    return lua_client


def set_value(client: redis.Redis, *, key: bytes = b"k", value: bytes = b"1", ns: bytes = NS,
              sid: bytes = b"s", principal: bytes = b"me") -> str | None:
    """FCALL redismem_set_values with raw bytes; None when accepted, else the error code."""
    base = b"rm:{" + ns + b"}:"
    keys = [base + b"keys:val:session:" + sid, base + b"exp:val:session:" + sid,
            base + b"rev:val:session:" + sid, base + b"seq", base + b"feedsz",
            base + b"who:" + principal + b":0", base + b"turn:session:" + sid,
            base + b"val:session:" + sid + b":" + key]
    try:
        client.fcall("redismem_set_values", len(keys), *keys, ns, b"session", sid, b"",
                     principal, b"", b"", key, value, b"")
    except redis.ResponseError as exc:
        return str(exc).split(" ", 1)[0]
    return None


# JSON texts: RFC 8259 pieces, near misses and bad bytes

NUMBERS = st.builds("".join, st.lists(st.sampled_from(
    ["-", "+", "0", "1", "9", "01", "00", ".", ".5", ".05", "e", "E", "e+", "e-", "5", "400",
     "308", "309", "x", "0x1f"]), min_size=1, max_size=5))
WORDS = st.sampled_from(["true", "false", "null", "tru", "nul", "NaN", "-NaN", "Infinity",
                         "-Infinity", "nan", "inf", "-inf", "1e400", "-1e400", "1e-400",
                         "1.7976931348623157e308", "1.7976931348623159e308",
                         str(2**1024), str(2**1024 - 2**970), str(2**1024 - 2**971), "1" * 309,
                         str(2**63), str(-2**63 - 1), str(2**53 + 1)])
STRING_PIECES = st.sampled_from(
    ["a", " ", "ü", "€", "😀", "\\n", "\\t", "\\/", "\\\\", '\\"', "\\u0041", "\\u00e9",
     "\\u0000", "\\ud83d\\ude00", "\\udbff\\udfff", "\\ud83d\\u0041", "\\ud800",
     "\\udc00", "\\ud83dx", "\\u12", "\\x", "\\a",
     "\x00", "\x01", "\x1f", "\x7f", "\t", "\n", "\u2028", "\ud800", "\ufeff"])
BAD_BYTES = st.sampled_from([b"\xff", b"\xc3\x28", b"\xc0\x80", b"\xed\xa0\x80",
                             b"\xf4\x90\x80\x80", b"\xe2\x82", b"\xf0\x9f\x98", b"\x80"])
SPACE = st.sampled_from(["", "", " ", "\n", "\t\r", "\x0c", "\xa0"])


def _string(pieces: list[str]) -> str:
    return '"' + "".join(pieces) + '"'


STRINGS = st.lists(STRING_PIECES, max_size=3).map(_string)
GOOD_SCALARS = st.one_of(st.integers().map(str), st.floats(allow_nan=False).map(json.dumps),
                         st.text(max_size=4).map(json.dumps), st.sampled_from(["true", "null"]))
SCALARS = st.one_of(GOOD_SCALARS, GOOD_SCALARS, GOOD_SCALARS, NUMBERS, WORDS, STRINGS, STRINGS)


def _compound(children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    sep = st.sampled_from([",", ",", ",", ", ", ",", "", ",,"])
    arrays = st.builds(lambda items, s, w: "[" + w + s.join(items) + w + "]",
                       st.lists(children, max_size=4), sep, SPACE)
    keys = st.one_of(STRINGS, STRINGS, STRINGS, SCALARS)
    members = st.lists(st.tuples(keys, st.sampled_from([":", ":", ":", ": ", "", "::"]), children),
                       max_size=3)
    objects = st.builds(lambda ms, s: "{" + s.join(k + c + v for k, c, v in ms) + "}",
                        members, sep)
    return st.one_of(arrays, objects)


TEXTS = st.recursive(SCALARS, _compound, max_leaves=12)


def _encoded(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


VALID_TEXTS = st.recursive(GOOD_SCALARS, lambda c: st.lists(c, max_size=3).map(
    lambda items: "[" + ",".join(items) + "]"), max_leaves=6)
ONE_TOKEN = st.one_of(STRING_PIECES.map(lambda p: '"' + p + '"'), NUMBERS, WORDS)

BAD_NUMBERS = st.sampled_from([
    "", "-", ".5", "1.", "01", "-01", "00", "1.2.3", "1e", "1e+", "e5", "1e1e1", "1.e5", "--1",
    "+1", "1e500", "-.5", "0.", "1-2", ".", "e", "-e5", "1e5.5", "5" * 310, "1e-400", "1E+",
    "1e+-1",
    "0x1", "1,", ",1", "1e05", "-0.0e-0", "1e99", "1e-99", "1e100", "9" * 160, "9" * 140 + ".5",
    "1e309", "-1e309", "1e-1000", "1E+1000", "2e308", "0e999"])


def _number_run(numbers: list[int | float], bad: str, at: int, replace: bool) -> bytes:
    tokens = [json.dumps(n) for n in numbers]
    at = min(at, len(tokens))
    if replace and at < len(tokens):
        tokens[at] = bad
    elif bad:
        tokens.insert(at, bad)
    return ("[" + ",".join(tokens) + "]").encode()


NUMBER_LISTS = st.one_of(
    st.lists(st.integers(-10**12, 10**12), min_size=8, max_size=60),
    st.lists(st.floats(-1e3, 1e3, allow_nan=False).map(lambda x: round(x, 3)), min_size=8,
             max_size=60),
    st.lists(st.one_of(st.integers(-10**12, 10**12),
                       st.floats(allow_nan=False, allow_infinity=False)), min_size=8, max_size=60),
    # exponents of 3 digits and more: their values are read in bulk (cjson)
    st.lists(st.sampled_from([1e300, 1.5e-300, -2.5e10, 9e307, -1.7976931348623157e308, 5e-324,
                              1e-100, 0.0]), min_size=8, max_size=60))
NUMBER_RUNS = st.builds(_number_run, NUMBER_LISTS,
                        st.one_of(BAD_NUMBERS, st.sampled_from(["-", ".", "1.2.3", ".e5", "1.e5"])),
                        st.integers(0, 60), st.booleans())
# escapes: after 16 in one string Lua checks the rest of it in bulk
LONG_TEXT = st.lists(st.sampled_from(["a", " ", "é", "ж", "日", "本", "😀", "\\u00e9", "\\u7121",
                                     "\\ud83d\\ude00", "\\n", "\u0800", "\uffff", "\U00010000",
                                     "\U0010ffff", "\x7f", "\u00a0", "\\\\", '\\"', "\\/",
                                     "\\t\\r"]),
                     min_size=10, max_size=80).map("".join)


def _long_string(text: str, bad: bytes, at: int) -> bytes:
    raw = text.encode("utf-8")
    at = min(at, len(raw))
    return b'["' + raw[:at] + bad + raw[at:] + b'"]'


LONG_STRINGS = st.builds(_long_string, LONG_TEXT,
                         st.one_of(st.just(b""), st.just(b""), BAD_BYTES,
                                   st.sampled_from([b"\\x", b"\x01", b"\n", b'"', b"\\"])),
                         st.integers(0, 200))

# strings of many escapes (Lua's bulk path), one of them perhaps bad
ESCAPED_STRINGS = st.builds(
    lambda pieces, bad, at: _long_string("".join(pieces), bad.encode(), at),
    st.lists(st.sampled_from(["\\n", "\\\\", '\\"', "é", "a", "\\u00e9", "\\ud83d\\ude00"]),
             min_size=20, max_size=60),
    st.sampled_from(["", "\\ud800", "\\udc00", "\\u12", "\\x", "\\ud800\\n\\udc00",
                     "\\ud800\\\\udc00", "\\"]),
    st.integers(0, 300))

RAW = st.one_of(
    NUMBER_RUNS,
    NUMBER_RUNS,
    LONG_STRINGS,
    st.builds(lambda doc, token: _encoded(f"[{doc},{token}]"), VALID_TEXTS, ONE_TOKEN),
    st.builds(lambda token: _encoded(f'{{"k":{token}}}'), ONE_TOKEN),
    TEXTS.map(_encoded),
    st.builds(lambda w1, t, w2: _encoded(w1 + t + w2), SPACE, TEXTS, SPACE),
    st.builds(lambda t, bad, at: _encoded(t)[:at] + bad + _encoded(t)[at:], TEXTS, BAD_BYTES,
              st.integers(0, 40)),
    st.builds(lambda n: b"[" * n + b"]" * n, st.integers(250, 260)),
    st.builds(lambda n: b'{"a":' * n + b"1" + b"}" * n, st.integers(250, 260)),
    st.binary(max_size=20),
)


def test_generated_texts_are_often_valid() -> None:
    """The texts test is only as good as its mix: enough valid texts that
    one broken rule shows."""
    valid = 0

    @settings(max_examples=300, database=None, derandomize=True)  # the same mix every run
    @given(raw=RAW)
    def count(raw: bytes) -> None:
        nonlocal valid
        valid += _json.error(raw) is None

    count()
    assert valid > 60


@SETTINGS
@given(raw=RAW)
def test_lua_and_python_accept_the_same_json_texts(client: redis.Redis, raw: bytes) -> None:
    python = _json.error(raw)
    lua = set_value(client, value=raw) if raw else "INVALID_ARGUMENT"
    if not raw:  # an empty text is refused on both sides, as JSON or as a missing argument
        assert python is not None and lua in ("INVALID_JSON", "INVALID_ARGUMENT")
        return
    assert (python is None) == (lua is None), (raw, python, lua)
    if lua is not None:
        assert lua == "INVALID_JSON", (raw, lua)


@settings(SETTINGS, max_examples=1000)
@given(raw=st.one_of(NUMBER_RUNS, LONG_STRINGS, ESCAPED_STRINGS))
def test_runs_checked_in_bulk_agree(client: redis.Redis, raw: bytes) -> None:
    """Long runs of numbers and of non-ASCII text take bulk paths in Lua
    (lib/13_numbers.lua, lib/12_utf8.lua); each path must still decide exactly as
    Python."""
    python = _json.error(raw)
    lua = set_value(client, value=raw)
    assert (python is None) == (lua is None), (raw, python, lua)


# Python values: what canonical_json accepts, Lua accepts as written

JSON_VALUES = st.recursive(
    st.one_of(st.none(), st.booleans(), st.floats(), st.text(st.characters(codec=None)),
              st.integers(), st.integers(2**1000, 2**1030), st.integers(-2**1030, -2**1000)),
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(st.characters(codec=None), max_size=3), children, max_size=4)),
    max_leaves=10)


@SETTINGS
@given(value=JSON_VALUES)
def test_canonical_json_accepts_what_lua_accepts(client: redis.Redis, value: Any) -> None:
    try:
        text = check.canonical_json(value, 1 << 20)
    except InvalidArgumentError:
        try:
            raw = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                             allow_nan=False).encode("utf-8", "surrogatepass")
        except ValueError:
            return  # NaN or infinity: there is no text to send
        assert set_value(client, value=raw) == "INVALID_JSON", raw
        return
    assert set_value(client, value=text.encode()) is None, text
    assert json.loads(text) == value or value != value


def test_nesting_limit_is_exact(client: redis.Redis) -> None:
    for depth, ok in ((_json.MAX_DEPTH, True), (_json.MAX_DEPTH + 1, False)):
        value: Any = 1
        for _ in range(depth):
            value = [value]
        assert (set_value(client, value=json.dumps(value).encode()) is None) is ok
        assert (_json.error(json.dumps(value)) is None) is ok
    with pytest.raises(InvalidArgumentError, match="deeper than 256"):
        check.canonical_json(value, 1 << 20)
    deep: Any = []
    for _ in range(sys.getrecursionlimit() + 10):
        deep = [deep]
    with pytest.raises(InvalidArgumentError, match="deeper"):
        check.canonical_json(deep, 1 << 30)


# keys and identifiers

NAME_CHARS = [*"\t\n\x0b\x0c\r\x1c \x85\xa0\u1680\u2000\u2005\u200a\u2028\u2029\u202f\u205f",
              *"\u3000a:{}\x00\x7f\x1fé\u200b\u180e\ufeff-_", "\ud800", "\udfff"]
NAMES = st.one_of(st.text(st.characters(codec=None), min_size=1, max_size=8),
                  st.text(st.sampled_from(NAME_CHARS), min_size=1, max_size=4))


def _as_bytes(name: str | bytes) -> bytes:
    return name if isinstance(name, bytes) else name.encode("utf-8", "surrogatepass")


def _python_accepts(fn: Callable[..., Any], name: str | bytes) -> bool:
    try:
        text = name.decode("utf-8") if isinstance(name, bytes) else name
        fn(text)
    except (InvalidArgumentError, UnicodeDecodeError):
        return False
    return True


@SETTINGS
@given(name=st.one_of(NAMES, st.binary(min_size=1, max_size=6)))
def test_lua_and_python_accept_the_same_keys(client: redis.Redis, name: str | bytes) -> None:
    raw = _as_bytes(name)
    lua = set_value(client, key=raw)
    assert (lua is None) == _python_accepts(check.check_key, name), (raw, lua)
    assert lua in (None, "INVALID_KEY")


@SETTINGS
@given(name=st.one_of(NAMES, st.binary(min_size=1, max_size=6)))
def test_lua_and_python_accept_the_same_ids(client: redis.Redis, name: str | bytes) -> None:
    raw = _as_bytes(name)
    python = _python_accepts(lambda text: check.check_id("id", text), name)
    for lua in (set_value(client, sid=raw), set_value(client, principal=raw),
                set_value(client, ns=raw)):
        assert (lua is None) == python, (raw, lua)
        assert lua in (None, "INVALID_ID")


def test_whitespace_list_is_pythons() -> None:
    spaces = {chr(c) for c in range(sys.maxunicode + 1) if chr(c).isspace()}
    listed = {chr(c) for c in range(sys.maxunicode + 1)
              if not 0xD800 <= c < 0xE000 and check._BAD_ID.match(chr(c))} - set(":{}")
    controls = {chr(c) for c in (*range(32), 127)}
    assert listed == spaces | controls


# Embeddings: float32 blobs heavy in the bytes that make a component zero,
# negative zero, infinite or NaN (0x00, 0x80, 0x7f, 0xff), at every alignment

BLOB_BYTES = st.sampled_from([0x00, 0x80, 0x7F, 0xFF, 0x3F, 0xC0, 0x01]) | st.integers(0, 255)
BLOBS = st.lists(BLOB_BYTES, max_size=64).map(bytes) | st.lists(
    st.sampled_from([0.0, -0.0, 1.0, -2.5, 1e-45, 3.4e38, float("inf"), float("-inf"),
                     float("nan")]), min_size=1, max_size=16).map(
    lambda xs: struct.pack(f"<{len(xs)}f", *xs))


def set_vector(client: redis.Redis, blob: bytes, meta: bytes = b"{}") -> str | None:
    """FCALL redismem_set_vectors with a raw embedding; None when accepted,
    else the error message."""
    base = b"rm:{" + NS + b"}:"
    keys = [base + b"keys:vec:session:s", base + b"exp:vec:session:s",
            base + b"rev:vec:session:s", base + b"seq", base + b"feedsz", base + b"who:me:0",
            base + b"turn:session:s", base + b"vdims:session:s", base + b"vec:session:s:v"]
    try:
        client.fcall("redismem_set_vectors", len(keys), *keys, NS, b"session", b"s", b"",
                     b"me", b"", b"", b"v", blob, meta, b"")
    except redis.ResponseError as exc:
        return str(exc)
    return None


@SETTINGS
@given(BLOBS)
def test_embeddings_accepted_alike(client: redis.Redis, blob: bytes) -> None:
    lua = set_vector(client, blob)
    try:
        V.embedding_bytes(np.frombuffer(blob, dtype="<f4"))
        python = None
    except (InvalidVectorError, ValueError) as exc:
        python = str(exc)
    assert (lua is None) == (python is None), (blob.hex(), lua, python)
    if lua and len(blob) % 4 == 0 and blob:
        components = np.frombuffer(blob, dtype="<f4")
        bad = np.flatnonzero(~np.isfinite(components))
        if bad.size:  # Lua names the first component that is not finite
            assert lua == f"INVALID_VECTOR component {bad[0]} is not finite", blob.hex()


SCALARS = (st.text(max_size=8) | st.integers(-(2**60), 2**60) | st.booleans() | st.none()
           | st.floats(allow_nan=False, allow_infinity=False) | st.lists(st.integers(), max_size=2))


@SETTINGS
@given(st.dictionaries(st.text(max_size=6), SCALARS, max_size=5))
def test_metadata_tokens_alike(client: redis.Redis, metadata: dict[str, Any]) -> None:
    """The filter tokens Lua stores for a vector's metadata are the ones
    Python computes for an equality filter on each scalar member."""
    try:
        text = V.metadata_json(metadata).encode()
    except InvalidMetadataError:
        return  # e.g. a lone surrogate: refused before any call
    assert set_vector(client, struct.pack("<2f", 1.0, 0.5), text) is None
    stored = client.hget(b"rm:{" + NS + b"}:vec:session:s:v", "_meta")
    scalars = {k: v for k, v in metadata.items() if isinstance(v, str | int | float | bool)}
    assert stored.decode() == ",".join(V.filter_tokens(scalars)), text
