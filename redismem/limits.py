"""Bounds enforced on the Python side; ``lua/lib/10_limits.lua`` enforces the
same numbers inside Redis (a test checks both agree)."""

from __future__ import annotations

MAX_KEY_BYTES = 512
MAX_ID_BYTES = 128
MAX_VALUE_BYTES = 131_072
"""Default largest value, as canonical JSON (128 KiB); a namespace setting may
change it. Checking the slowest JSON shape takes about 230 ms of server time
per MiB (docs/python-api.md, Bounds and settings), so this keeps one check near 30 ms."""
MAX_VALUE_BYTES_CEILING = 67_108_864
MIN_VALUE_BYTES_SETTING = 1024
MAX_TTL_MS = 315_360_000_000
"""Ten years."""
MAX_PAGE_LIMIT = 1000
DEFAULT_PAGE_LIMIT = 100
MAX_BATCH = 1000
MAX_REVISION = 2**53 - 1
"""The largest revision: exact in a Lua number; a write past it is refused."""
MAX_SEQUENCE = 2**50
"""A feed sequence past this was set by a raw write (no namespace writes that
much): the library refuses to write on it, and `redismem repair-feed` sets
it right."""
MAX_JSON_DEPTH = 256
"""Nested arrays and objects in one JSON text."""
FEED_VALUE_BYTES = 65_536
"""A feed event carries the value when its canonical JSON is at most this long."""
FEED_RETENTION_MS = 2_592_000_000
"""Default feed retention, 30 days; a namespace setting may change it."""
TRIM_PER_WRITE = 16
"""Feed events trimmed for retention per write, on average (bounded work)."""
TRIM_EVERY = 16
"""Writes trim each time the feed sequence passes a multiple of this."""
TRIM_SLICE_EVENTS = 2000
"""Feed events one trim call drops at most."""
TRIM_SLICE_BYTES = 4_194_304
"""Feed bytes one trim call reads at most."""
MAX_CALL_BYTES = 163_840
"""Default largest write call, keys and arguments (160 KiB: one largest value
and 32 KiB of keys fit); a namespace setting may change it."""
MAX_CALL_VECTORS = 128
"""Default most vectors one write call holds; a namespace setting may change it."""
MAX_CALL_BYTES_CEILING = 1_073_741_824
MIN_CALL_BYTES_SETTING = 65_536
FEED_MAX_BYTES = 268_435_456
"""Default bound of the feed's size (256 MiB); a namespace setting may change it."""
MAX_FEED_BYTES_CEILING = 1_099_511_627_776
MIN_FEED_BYTES_SETTING = 1_048_576
MAX_VECTOR_DIM = 4096
MAX_METADATA_BYTES = 16_384
"""Largest vector metadata, as canonical JSON."""
MAX_TOP_K = 1000
MAX_APPEND_ITEMS = 10_000
"""The largest ``max_items`` of ``append``."""
MAX_MERGE_MEMBERS = 5_000
"""Object members one ``merge`` reads: the patch's and the stored value's
together, at every level the patch reaches (bounds its server time)."""
MAX_EVENTS_PER_CALL = 500
"""Events one append or replace call may carry, besides the namespace's
``max_call_bytes`` (898 events of nested arrays held the server 46 ms;
``scripts/bench.py stall``)."""
MAX_EVENTS_LIMIT = 100_000
"""The most events one read of a thread returns (read in pages of
MAX_EVENTS_PER_READ), and the largest ``scan_limit`` of a compaction."""
MAX_EVENTS_PER_READ = 1000
"""Events one page of ``redismem_recent_events``/``events_since`` holds at
most (and at most TRIM_SLICE_BYTES of them): one call holds the server
for milliseconds, not seconds."""
MAX_EVENT_BYTES = 131_072
"""Largest thread event, as canonical JSON (the default value limit, for the
same reason)."""
MAX_CHECKPOINT_BYTES = 16_777_216
"""Largest LangGraph checkpoint call (its serialized bytes are stored as they
are, never read as JSON: copying 16 MiB takes a few ms of server time)."""
MIN_TURN_MS = 100
"""The shortest time to live of a turn, and of a waiter's lease (ms)."""
MAX_TURN_MS = 86_400_000
"""The longest time to live of a turn, and of a waiter's lease (ms): a day."""

SETTING_BOUNDS: dict[str, tuple[int, int]] = {
    "max_value_bytes": (MIN_VALUE_BYTES_SETTING, MAX_VALUE_BYTES_CEILING),
    "max_call_bytes": (MIN_CALL_BYTES_SETTING, MAX_CALL_BYTES_CEILING),
    "max_call_vectors": (1, MAX_BATCH),
    "feed_retention_ms": (1, MAX_TTL_MS),
    "feed_max_bytes": (MIN_FEED_BYTES_SETTING, MAX_FEED_BYTES_CEILING),
    "hnsw_m": (2, 512),
    "hnsw_ef_construction": (1, 4096),
    "hnsw_ef_runtime": (1, 10000),
}
"""Integer namespace settings and their bounds (``lua/lib/40_config.lua``)."""
SETTING_CHOICES: dict[str, tuple[str, ...]] = {"vector_index": ("flat", "hnsw")}
"""Word namespace settings and their choices."""

MAX_PATTERNS = 100
"""Key patterns one watch, listener or changes filter takes at most: each
event is matched against every one, in the client."""

FORMAT_RANGES = (
    (0xad, 0xad), (0x600, 0x605), (0x61c, 0x61c), (0x6dd, 0x6dd), (0x70f, 0x70f),
    (0x890, 0x891), (0x8e2, 0x8e2), (0x180e, 0x180e), (0x200b, 0x200f), (0x202a, 0x202e),
    (0x2060, 0x2064), (0x2066, 0x206f), (0xfeff, 0xfeff), (0xfff9, 0xfffb), (0x110bd, 0x110bd),
    (0x110cd, 0x110cd), (0x13430, 0x1343f), (0x1bca0, 0x1bca3), (0x1d173, 0x1d17a),
    (0xe0001, 0xe0001), (0xe0020, 0xe007f))
"""The format characters (Unicode category Cf, through Unicode 15.1) as
inclusive code point ranges: invisible, or reordering the text around them
(bidi overrides, zero-width joiners, the BOM), so no key or id holds one
(``FORMAT_RANGES`` in ``lua/lib/20_validate.lua``; a test checks both)."""

CONNECT_TIMEOUT = 10.0
"""Seconds ``connect()`` (and every command) keeps trying a server that
refuses or does not answer its first connection, with
:func:`redismem.retries.backoff` waits; ``connect_timeout=`` or
``REDISMEM_CONNECT_TIMEOUT`` (the command line's ``--connect-timeout``)
sets it, 0 for one attempt."""
CONNECT_TIMEOUT_ENV = "REDISMEM_CONNECT_TIMEOUT"

EVENT_KINDS = ("value", "vector", "turn", "checkpoint", "thread", "user")
"""The kinds of change event (``MemoryChangeEvent.kind``)."""
