"""Every Redis key name redismem uses, built here and nowhere else.

All keys of a namespace share the hash tag ``{ns}`` so that one function call
can touch a value and its namespace's change feed atomically, in Redis Cluster
too. ``lua/lib/30_keys.lua`` checks the names callers pass against the same
schema.
"""

from __future__ import annotations

import re
import time
from typing import Literal
from urllib.parse import quote, unquote

Kind = Literal["value", "vector"]
_KIND_TAG: dict[str, str] = {"value": "val", "vector": "vec"}


def kind_tag(kind: Kind) -> str:
    """``val`` or ``vec``: how key names spell a kind."""
    return _KIND_TAG[kind]


def base(ns: str) -> str:
    """The prefix shared by every key of namespace ``ns``."""
    return f"rm:{{{ns}}}:"


def value(ns: str, scope: str, sid: str, key: str) -> str:
    """Hash holding one value: ``v`` JSON, ``rev``, ``ts`` ms, ``by`` principal."""
    return f"{base(ns)}val:{scope}:{sid}:{key}"


def vector(ns: str, scope: str, sid: str, key: str) -> str:
    """Hash holding one vector: ``emb`` float32 bytes, ``meta`` JSON, ``rev``,
    ``ts``, ``by`` and the indexed fields ``_dim``, ``_sc``, ``_meta``."""
    return f"{base(ns)}vec:{scope}:{sid}:{key}"


def entry(ns: str, kind: Kind, scope: str, sid: str, key: str) -> str:
    """The hash of one value or vector: :func:`value` or :func:`vector`."""
    return (value if kind == "value" else vector)(ns, scope, sid, key)


def vector_prefix(ns: str) -> str:
    """The prefix of every vector hash of namespace ``ns`` (what indexes cover)."""
    return f"{base(ns)}vec:"


def vector_dims(ns: str, scope: str, sid: str) -> str:
    """Hash of dimension -> number of vectors of one scope stored with it."""
    return f"{base(ns)}vdims:{scope}:{sid}"


def vector_index(ns: str, dim: int) -> str:
    """The RediSearch HNSW index of the vectors of dimension ``dim`` in ``ns``."""
    return f"{base(ns)}idx:vec:{dim}"


def names(ns: str, kind: Kind, scope: str, sid: str) -> str:
    """Zset (score 0) of the key names of one scope, for ordered listing."""
    return f"{base(ns)}keys:{_KIND_TAG[kind]}:{scope}:{sid}"


def expiry(ns: str, kind: Kind, scope: str, sid: str) -> str:
    """Zset of the names of one scope that expire, scored by expiry time in ms."""
    return f"{base(ns)}exp:{_KIND_TAG[kind]}:{scope}:{sid}"


def revisions(ns: str, kind: Kind, scope: str, sid: str) -> str:
    """Hash of name -> last revision issued; outlives deletes and expiry."""
    return f"{base(ns)}rev:{_KIND_TAG[kind]}:{scope}:{sid}"


def scope_writes(ns: str, kind: Kind, scope: str, sid: str, who: str) -> list[str]:
    """The seven keys every scope write passes, in this order: names,
    expiry, revisions, sequence, feed size, the writer's principal key and
    the scope's turn hash (``scope_writer`` in ``lua/lib/60_names.lua``; a
    write may carry a turn token). The feed and the config are not passed:
    FCALL would require write access to the config and read access to the
    feed of every caller."""
    return [names(ns, kind, scope, sid), expiry(ns, kind, scope, sid),
            revisions(ns, kind, scope, sid), sequence(ns), feed_size(ns), principal(ns, who),
            turn(ns, scope, sid)]


REQUEST_BUCKET_MS = 60_000
"""A principal's request replies are kept in one hash per minute of the
client's clock (lua/lib/55_requests.lua)."""


def principal(ns: str, who: str) -> str:
    """The principal's key of this minute. Write calls pass their
    principal's, so the server's ACL (which lets a user name only its own)
    proves who is writing; the hash keeps the replies of the principal's
    requests of about that minute, so a retried call is applied once
    (``lua/lib/55_requests.lua``)."""
    return f"{base(ns)}who:{who}:{time.time_ns() // 1_000_000 // REQUEST_BUCKET_MS}"


def principal_pattern(ns: str, who: str) -> str:
    """Glob of every key of :func:`principal` for ``who`` (both escaped)."""
    return f"{glob_escape(base(ns))}who:{glob_escape(who)}:*"


def feed(ns: str) -> str:
    """Stream of change events; entry id ``<sequence>-0``."""
    return f"{base(ns)}feed"


def feed_rebuild(ns: str) -> str:
    """Stream the feed is copied into by ``redismem repair-feed``, then
    renamed over the feed (exists only while a repair runs)."""
    return f"{base(ns)}feed:rebuild"


def sequence(ns: str) -> str:
    """Counter of the last change sequence handed out."""
    return f"{base(ns)}seq"


def feed_size(ns: str) -> str:
    """Counter of the bytes the feed's entries hold (for ``feed_max_bytes``)."""
    return f"{base(ns)}feedsz"


def config(ns: str) -> str:
    """Hash of namespace settings."""
    return f"{base(ns)}cfg"


def scopes(ns: str) -> str:
    """Zset (score 0) of ``<val|vec>:<scope>:<sid>`` of every scope written:
    what an export reads where SCAN is not permitted."""
    return f"{base(ns)}scopes"


def scope_entry(member: str) -> tuple[str, str, str]:
    """(kind tag, scope, scope id) of a member of :func:`scopes`."""
    tag, scope, sid = member.split(":", 2)
    return tag, scope, sid


def memory_users(ns: str) -> str:
    """Zset (score 0) of the users that have long-term memories."""
    return f"{base(ns)}ltmusers"


def sessions(ns: str) -> str:
    """Zset of created session ids, scored by creation time in ms."""
    return f"{base(ns)}sessions"


def thread_events(ns: str, thread: str) -> str:
    """Stream of a thread's events in append order (field ``e``: event JSON)."""
    return f"{base(ns)}thr:{thread}:ev"


def thread_times(ns: str, thread: str) -> str:
    """Zset of a thread's event stream ids scored by event timestamp."""
    return f"{base(ns)}thr:{thread}:ts"


def thread_ids(ns: str, thread: str) -> str:
    """Hash of event id -> stream id (appends are idempotent)."""
    return f"{base(ns)}thr:{thread}:ids"


def threads(ns: str) -> str:
    """Zset of thread ids scored by the latest timestamp of their appended events (ms)."""
    return f"{base(ns)}threads"


SHARED_USER = "_"
"""Stands for ``user_id=None`` (memories shared by all users) in key names."""


def memory(ns: str, user: str, memory_id: str) -> str:
    """Hash of one long-term memory (``user`` is SHARED_USER for shared ones)."""
    return f"{base(ns)}ltm:{user}:{memory_id}"


def memory_prefix(ns: str) -> str:
    """The prefix of every long-term memory hash (what memory indexes cover)."""
    return f"{base(ns)}ltm:"


def memories(ns: str, user: str) -> str:
    """Zset of a user's memory ids scored by updated_at."""
    return f"{base(ns)}ltmz:{user}"


def memory_dim(ns: str) -> str:
    """The dimension of the namespace's memory embeddings."""
    return f"{base(ns)}ltmdim"


def memory_text_index(ns: str) -> str:
    """RediSearch full-text index of long-term memories."""
    return f"{base(ns)}idx:ltm"


def memory_vector_index(ns: str, dim: int) -> str:
    """RediSearch vector index of long-term memory embeddings of one dimension."""
    return f"{base(ns)}idx:ltm:{dim}"


def encode_part(text: str) -> str:
    """A text as it stands in a LangGraph checkpoint key or field name:
    letters, digits, ``_.~-|`` as they are, every other UTF-8 byte as
    ``%XX`` (``lua/lib/85_checkpoints.lua`` accepts only this spelling)."""
    return quote(text, safe="|")


def decode_part(text: str) -> str:
    return unquote(text, errors="strict")


def checkpoint(ns: str, thread: str, cns: str, checkpoint_id: str) -> str:
    """Hash of one LangGraph checkpoint of session ``thread``, checkpoint
    namespace ``cns`` (encoded): ``cp`` and ``md`` (serialized), ``parent``,
    ``run`` (encoded), and per pending write ``w:<task>:<idx>`` (serialized),
    ``c:<task>:<idx>`` (its channel) and ``p:<task>:<idx>`` (its task path)."""
    return f"{base(ns)}lgt:{thread}:{cns}:c:{checkpoint_id}"


def checkpoint_ids(ns: str, thread: str, cns: str) -> str:
    """Zset (score 0) of the checkpoint ids of a thread's namespace, in id order."""
    return f"{base(ns)}lgt:{thread}:{cns}:ids"


def checkpoint_written(ns: str, thread: str, cns: str) -> str:
    """Zset (score 0) of the checkpoint ids that have pending writes (LangGraph
    may put a checkpoint's writes before the checkpoint itself lands)."""
    return f"{base(ns)}lgt:{thread}:{cns}:wids"


def checkpoint_blobs(ns: str, thread: str, cns: str) -> str:
    """Hash ``<channel>:<version>`` (encoded) -> serialized channel value."""
    return f"{base(ns)}lgt:{thread}:{cns}:blobs"


def checkpoint_namespaces(ns: str, thread: str) -> str:
    """Zset (score 0) of a thread's checkpoint namespaces (encoded)."""
    return f"{base(ns)}lgt:{thread}:nss"


def checkpoint_threads(ns: str) -> str:
    """Zset of the threads with checkpoints, scored by their last put (ms)."""
    return f"{base(ns)}lgthreads"


def checkpoint_run(ns: str, run: str) -> str:
    """Zset (score 0) of ``<thread>:<cns>:<checkpoint id>`` a run (encoded) wrote."""
    return f"{base(ns)}lgr:{run}"


def turn(ns: str, scope: str, sid: str) -> str:
    """Hash of a session's or workflow's turn: ``token`` (the last issued,
    never deleted), ``holder``, ``by``, ``exp`` ms, ``ticket`` and a
    ``w:<waiter>`` lease per queued waiter (``lua/lib/65_turns.lua``)."""
    return f"{base(ns)}turn:{scope}:{sid}"


def turn_queue(ns: str, scope: str, sid: str) -> str:
    """Zset of the waiters queued for a turn, scored by ticket (arrival order)."""
    return f"{turn(ns, scope, sid)}:q"


def turn_wake(ns: str, scope: str, sid: str, holder: str) -> str:
    """List a waiter blocks on (BLPOP) until whoever frees the turn pushes to it."""
    return f"{turn(ns, scope, sid)}:w:{holder}"


def turns(ns: str) -> str:
    """Zset (score 0) of ``<scope>:<sid>`` of every turn granted: what
    ``redismem turns`` lists without SCAN."""
    return f"{base(ns)}turns"


def turns_pattern(ns: str) -> str:
    """A SCAN pattern matching every turn hash, queue and wake list of ``ns``."""
    return f"{glob_escape(base(ns))}turn:*"


_GLOB_SPECIAL = re.compile(r"([*?\[\]\\])")


def glob_escape(text: str) -> str:
    """``text`` with SCAN/KEYS glob characters escaped."""
    return _GLOB_SPECIAL.sub(r"\\\1", text)


def pattern(ns: str) -> str:
    """A SCAN pattern matching every key of namespace ``ns``."""
    return f"{glob_escape(base(ns))}*"


ALL_NAMESPACES = "rm:{*}:*"
"""A SCAN pattern matching every key of every namespace."""


def namespace_of(key: str) -> str | None:
    """The namespace a key belongs to, or None when it is not a redismem key."""
    found = _NAMESPACE.match(key)
    return found[1] if found else None


_NAMESPACE = re.compile(r"rm:\{([^{}]*)\}:")


def names_pattern(ns: str, kind: Kind) -> str:
    """A SCAN pattern matching the name zsets of every scope of ``ns``."""
    return f"{glob_escape(base(ns))}keys:{_KIND_TAG[kind]}:*"


def revisions_pattern(ns: str, kind: Kind) -> str:
    """A SCAN pattern matching the revision hashes of every scope of ``ns``."""
    return f"{glob_escape(base(ns))}rev:{_KIND_TAG[kind]}:*"


def scope_of(ns: str, key: str) -> tuple[str, str]:
    """(scope, scope id) of a names zset or revisions hash of ``ns``."""
    rest = key[len(base(ns)):]
    _, _, scope, sid = rest.split(":", 3)
    return scope, sid


def memories_pattern(ns: str) -> str:
    """A SCAN pattern matching every user's memory zset in ``ns``."""
    return f"{glob_escape(base(ns))}ltmz:*"


def user_of(ns: str, key: str) -> str:
    """The user (SHARED_USER for shared memories) of a memory zset of ``ns``."""
    return key[len(f"{base(ns)}ltmz:"):]


def index_prefix(ns: str) -> str:
    """The name prefix of every RediSearch index of ``ns``."""
    return f"{base(ns)}idx:"


RAW_FAMILIES = ("val:", "vec:", "keys:", "rev:", "thr:", "ltm:", "ltmz:", "threads", "scopes",
                "ltmusers", "sessions")
"""Where an export's raw records (entries the library did not write) may
be put back: entries, listings, revisions, threads, memories, registries."""


def key_suffix(ns: str, key: bytes) -> bytes:
    """A key of ``ns`` without its ``rm:{ns}:`` prefix."""
    prefix = base(ns).encode()
    if not key.startswith(prefix):
        raise ValueError(f"{key!r} is not a key of namespace {ns!r}")
    return key[len(prefix):]


def raw_key(ns: str, suffix: bytes) -> bytes:
    """The key of ``ns`` that a raw record's ``suffix`` names.

    Raises:
        ValueError: it is none of the :data:`RAW_FAMILIES`.
    """
    text = suffix.decode("utf-8", "replace")
    if not any(text == family or (family.endswith(":") and text.startswith(family))
               for family in RAW_FAMILIES):
        raise ValueError(f"a raw record restores entries, listings, revisions, threads, "
                         f"memories and registries only, not {text[:80]!r}")
    if text.startswith("thr:") and not text.endswith(":ev"):
        raise ValueError(f"a raw record restores a thread's events only, not {text[:80]!r}")
    return base(ns).encode() + suffix


_SCOPED = {"keys": 2, "exp": 2, "rev": 2, "val": 1, "vec": 1, "vdims": 1, "turn": 1}
"""Key families of one scope, and where the scope kind is among the parts
after the namespace (``keys:val:<scope>:<sid>``, ``val:<scope>:<sid>:<key>``)."""
_FAMILY_WORDS = {"feed": "the change feed", "seq": "the change feed", "feedsz": "the change feed",
                 "thr": "the threads", "threads": "the threads", "sessions": "the threads",
                 "ltm": "the long-term memories", "ltmz": "the long-term memories",
                 "ltmusers": "the long-term memories", "ltmdim": "the long-term memories",
                 "cfg": "the settings", "idx": "the search indexes", "scopes": "the scope registry",
                 "turns": "the turn registry", "who": "a principal's request records",
                 "lgt": "the LangGraph checkpoints", "lgr": "the LangGraph checkpoints",
                 "lgthreads": "the LangGraph checkpoints"}


def describe(key: str) -> str:
    """What a key of the schema holds, in words: ``scope session:s-1 of
    namespace team``, ``the change feed of namespace team``; the key itself
    when it is not one of ours."""
    ns = namespace_of(key)
    if ns is None:
        return repr(key)
    parts = key[len(base(ns)):].split(":")
    at = _SCOPED.get(parts[0])
    if at is not None and len(parts) > at + 1 and parts[at] in ("session", "actor", "workflow",
                                                                 "global"):
        return f"scope {parts[at]}:{parts[at + 1]} of namespace {ns}"
    words = _FAMILY_WORDS.get(parts[0])
    return f"{words} of namespace {ns}" if words else repr(key)


CARRIED = {
    "val": "values", "vec": "vectors", "keys": "key listings", "rev": "revisions",
    "exp": "expiry listings", "vdims": "vector dimensions", "scopes": "the scope registry",
    "cfg": "settings", "sessions": "sessions", "thr": "thread events", "threads": "threads",
    "ltm": "long-term memories", "ltmz": "long-term memories", "ltmusers": "long-term memories",
    "ltmdim": "long-term memories", "lgt": "LangGraph checkpoints",
    "lgthreads": "LangGraph checkpoints", "lgr": "LangGraph checkpoints",
}
"""Key families an export carries, or an import rebuilds from what it
carries (listings, indexes of the entries it writes), by their first part
after ``rm:{ns}:``."""
NOT_STATE = {
    "feed": "the change feed", "seq": "the change feed", "feedsz": "the change feed",
    "idx": "search indexes", "turn": "turns", "turns": "turns",
    "who": "request records",
}
"""Key families that are no state an export carries: the feed (history:
an import appends events of its own), search indexes (rebuilt), turns
(who works where now: holders, waiters and tokens belong to the live
fleet, and a token is the source's feed sequence) and the request
records of retried calls (kept for minutes)."""


def family(ns: str, key: str) -> str:
    """The family of a key of ``ns``: its first part after ``rm:{ns}:``."""
    return key[len(base(ns)):].split(":", 1)[0]
