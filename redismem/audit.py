"""Find the entries of a namespace that the library did not write.

A role that writes through the library holds the underlying commands on
its keys and can run them directly (README, "Access control"), so a buggy
or hostile client can leave a value that is not strict JSON, a vector of
the wrong size, or a forged feed entry. Readers report such an entry as an
error for that entry and go on; :func:`audit` lists them all.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, cast

from redis.exceptions import NoPermissionError, ResponseError

from . import _json, limits, turns
from . import _validate as check
from . import keys as K
from . import vectors as V
from .errors import InvalidArgumentError
from .feed import LAST_STREAM_ID, Entries, parse_event
from .memory import Memory
from .records import time_ms
from .repair import stored_count
from .scope import entry_problem
from .transfer import (
    Survey,
    _names,
    memory_fields,
    memory_problem,
    session_id,
    survey,
)
from .users import lossy_defaults, open_doors


@dataclass(frozen=True)
class Finding:
    """One entry the library did not write: its Redis key and the problem."""

    key: str
    problem: str


def _value_problem(got: list[Any]) -> str | None:
    raw, rev, ts, by = got
    if raw is None:
        return "it has no value field v"
    try:
        revision = int(rev)
    except (TypeError, ValueError):
        revision = 0
    return entry_problem(raw, revision) or _common_problem(rev, ts, by)


def _common_problem(rev: Any, ts: Any, by: Any) -> str | None:
    try:
        if not 1 <= int(rev) <= limits.MAX_REVISION or int(ts) < 0:
            return "rev or ts is out of range"
        check.check_id("by", by.decode())
    except (TypeError, ValueError, AttributeError):
        return "rev, ts or by is missing or malformed"
    return None


def _vector_problem(got: list[Any]) -> str | None:
    emb, meta, rev, ts, by, dim, _scope_tag, tokens = got
    if emb is None:
        return "emb is not float32 bytes"
    problem = V.embedding_problem(emb)
    if problem:
        return f"emb {problem}"
    if dim != str(len(emb) // 4).encode():
        return f"its dimension tag _dim is {dim!r}, its embedding has {len(emb) // 4} numbers " \
               "(searches of that dimension miss it)"
    try:
        metadata = _json.loads(meta)
    except (TypeError, ValueError) as exc:
        return f"meta is not strict JSON: {exc}"
    if not isinstance(metadata, dict):
        return "meta is not a JSON object"
    scalars = {name: value for name, value in metadata.items()
               if isinstance(value, str | int | float | bool)}
    if (tokens or b"").decode(errors="replace") != ",".join(V.filter_tokens(scalars)):
        return "its filter tags _meta do not match its metadata (filtered searches miss it " \
               "or find it wrongly)"
    return _common_problem(rev, ts, by)


def _expiry_problem(expires: int, recorded: float | None, now: int) -> str | None:
    """Where an entry's expiry (PEXPIRETIME: -1 none) and its record in the
    scope's expiry zset disagree; readers go by the record."""
    if recorded is None:
        if expires >= 0:
            return (f"it expires at {expires} ms with no expiry record: it will vanish with "
                    "no feed event")
        return None
    at = int(recorded)
    if expires < 0:
        hidden = "readers already hide it" if at <= now else "readers will hide it then"
        return f"its expiry record says {at} ms, but it never expires: {hidden}"
    if expires != at:
        return f"it expires at {expires} ms, its expiry record says {at} ms"
    return None


_CHECKS: dict[K.Kind, tuple[Callable[[str, str, str, str], str], tuple[str, ...],
                           Callable[[list[Any]], str | None]]] = {
    "value": (K.value, ("v", "rev", "ts", "by"), _value_problem),
    "vector": (K.vector, ("emb", "meta", "rev", "ts", "by", "_dim", "_sc", "_meta"),
               _vector_problem)}


async def _scope_entries(mem: Memory, kind: K.Kind, scope: str, sid: str,
                         now: int, written: FeedIndex) -> AsyncIterator[Finding]:
    """The listed entries of one scope, their expiry records, their writers
    against the feed's events, and entries no listing names (those only
    when this credential may SCAN)."""
    client, ns = mem.client, mem.namespace
    build, fields, problem_of = _CHECKS[kind]
    listing, expiry = K.names(ns, kind, scope, sid), K.expiry(ns, kind, scope, sid)
    listed: set[str] = set()
    live: dict[str, int] = {}  # name -> revision of each entry that has one
    dims: dict[int, int] = {}  # vectors: dimension -> entries
    bad: list[bytes] = []
    async for page in _names(mem, listing, bad):
        pipe = client.pipeline(transaction=False)
        for name in page:
            pipe.hmget(build(ns, scope, sid, name), *fields)
            pipe.pexpiretime(build(ns, scope, sid, name))
            pipe.zscore(expiry, name)
        replies = await pipe.execute()
        for i, name in enumerate(page):
            listed.add(name)
            got, expires, recorded = replies[3 * i:3 * i + 3]
            key = build(ns, scope, sid, name)
            try:
                check.check_key(name)
            except InvalidArgumentError as exc:
                yield Finding(listing, f"lists {name[:80]!r}, not a key the library writes: {exc}")
                continue
            if all(part is None for part in got):
                if recorded is None or int(recorded) > now:
                    yield Finding(key, "listed, but there is no entry (and no expiry removed it)")
                continue  # else expired: the next write of the scope unlists it
            problem = problem_of(got) or _expiry_problem(int(expires), recorded, now)
            if not problem and kind == "vector" and got[6] != V.scope_tag(scope, sid).encode():
                tag = "missing" if got[6] is None else f"{got[6][:80]!r}"
                problem = (f"its scope tag _sc is {tag}, not its scope's: searches "
                           "of its own scope miss it, another scope's may find it")
            revision = stored_count(got[fields.index("rev")], limits.MAX_REVISION)
            if not problem and revision:
                problem = written.problem(kind, scope, sid, name, revision,
                                          got[fields.index("by")], got[fields.index("ts")])
            if problem:
                yield Finding(key, problem)
            if revision:
                live[name] = revision
            if kind == "vector" and got[0] and len(got[0]) % 4 == 0:
                dims[len(got[0]) // 4] = dims.get(len(got[0]) // 4, 0) + 1
    async for finding in _issued(client, K.revisions(ns, kind, scope, sid), live):
        yield finding
    if kind == "vector":
        async for finding in _dimension_counts(client, K.vector_dims(ns, scope, sid), dims):
            yield finding
    for raw in bad:
        yield Finding(listing, f"lists {raw[:80]!r}, a name that is not UTF-8 (readers skip it)")
    prefix = build(ns, scope, sid, "")
    names = {name.encode() for name in listed} | set(bad)
    for unlisted in await _scan_bytes(client, K.glob_escape(prefix) + "*"):
        if unlisted[len(prefix.encode()):] not in names:
            yield Finding(unlisted.decode("utf-8", "backslashreplace"),
                          "an entry its scope's listing does not name: readers, keys() and "
                          "exports do not see it")


async def _scan_bytes(client: Any, pattern: str) -> set[bytes]:
    """The keys matching ``pattern`` as bytes (a raw key need not be UTF-8);
    none when this credential may not SCAN."""
    try:
        return {key async for key in client.scan_iter(match=pattern, count=1000)}
    except NoPermissionError:
        return set()


async def _issued(client: Any, revisions: str, live: dict[str, int]) -> AsyncIterator[Finding]:
    """Revisions hash fields that are no revision, or below the live entry's:
    the next write of that name would reuse a revision a reader saw."""
    async for name, issued in client.hscan_iter(revisions, count=1000):
        count = stored_count(issued, limits.MAX_REVISION)
        shown = name[:80].decode(errors="replace")
        if count is None:
            yield Finding(revisions, f"holds {issued[:40]!r} for {shown!r}, not a revision "
                          "(the next write of it starts again from the entry's own)")
        elif count < live.get(shown, 0):
            yield Finding(revisions, f"says {count} is the last revision issued to {shown!r}, "
                          f"whose entry has revision {live[shown]}")


async def _dimension_counts(client: Any, vdims: str,
                            dims: dict[int, int]) -> AsyncIterator[Finding]:
    """The scope's count of vectors per dimension against its entries
    (searches go by it: a dimension counted 0 is not searched)."""
    stored: dict[int, int] = {}
    for field, value in (await client.hgetall(vdims)).items():
        dim, count = stored_count(field, limits.MAX_VECTOR_DIM), stored_count(value, 2**53)
        if dim is None or count is None:
            yield Finding(vdims, f"holds {field[:20]!r} -> {value[:20]!r}, not a dimension "
                          "and a count")
        elif count:
            stored[dim] = count
    if any(count > stored.get(dim, 0) for dim, count in dims.items()):
        # fewer counted than held (more counted is left by entries that expired)
        yield Finding(vdims, f"counts vectors per dimension as {dict(sorted(stored.items()))}, "
                      f"the scope holds {dict(sorted(dims.items()))}")


def _repair(ns: str) -> str:
    return f"run `redismem repair-feed --namespace {ns}`"


async def _feed_state(client: Any, ns: str) -> AsyncIterator[Finding]:
    """The feed's counter, size estimate and last stream id, where raw
    writes left them beyond what the library can write on."""
    raw = await client.get(K.sequence(ns))
    if raw is not None and stored_count(raw, limits.MAX_SEQUENCE) is None:
        yield Finding(K.sequence(ns), f"holds {raw[:40]!r}, not a sequence of at most "
                      f"{limits.MAX_SEQUENCE}: every write is refused; {_repair(ns)}")
    size = await client.get(K.feed_size(ns))
    if size is not None and stored_count(size, limits.MAX_FEED_BYTES_CEILING) is None:
        yield Finding(K.feed_size(ns), f"holds {size[:40]!r}, not a feed size of at most "
                      f"{limits.MAX_FEED_BYTES_CEILING} bytes (the next write starts it again)")
    try:
        info = await client.xinfo_stream(K.feed(ns))
    except ResponseError:  # no feed yet
        info = None
    if info is not None:
        last = info.get("last-generated-id", b"0-0")
        head = (last if isinstance(last, bytes) else str(last).encode()).partition(b"-")[0]
        if int(head) > limits.MAX_SEQUENCE:
            yield Finding(K.feed(ns), f"its last id is {last!r}, past any sequence the "
                          f"library writes: every write is refused; {_repair(ns)}")


async def audit(mem: Memory) -> AsyncIterator[Finding]:
    """Every value, vector, feed entry and thread event of ``mem``'s
    namespace that the library did not write (what a raw command left);
    first, each node that serves clients giving no password, which could
    write anything, and each whose ``default`` user would lose the data at
    a restart with AOF on."""
    client, ns = mem.client, mem.namespace
    if mem.capabilities.backend == "redis":
        for door in await open_doors(client):
            yield Finding(door.node, door.problem())
        for node in await lossy_defaults(client):
            yield Finding(node.node, node.problem())
    broken: set[str] = set()
    async for finding in _key_types(client, ns):
        broken.add(finding.key)
        yield finding
    try:
        found = await survey(mem)
    except ResponseError as exc:  # a registry of another type, reported above
        found = Survey({}, [], [], 0, [])
        if not broken:
            yield Finding(K.scopes(ns), f"the registries cannot be read: {exc}")
    now = time_ms(await client.time())
    written = FeedIndex(now)
    async for finding in _guarded(_feed_state(client, ns), K.feed(ns), broken):
        yield finding
    async for finding in _guarded(_feed_entries(client, ns, written), K.feed(ns), broken):
        yield finding
    for kind in ("value", "vector"):
        for scope, sid in found.scopes.get(kind, []):
            async for finding in _guarded(_scope_entries(mem, kind, scope, sid, now, written),
                                          K.names(ns, kind, scope, sid)):
                yield finding
    for member in found.bad_scopes:
        yield Finding(K.scopes(ns), f"lists {member[:80]!r}, which names no scope "
                      "(exports and audits leave it out)")
    for member in found.bad_threads:
        yield Finding(K.threads(ns), f"lists {member[:80]!r}, which is no thread id "
                      "(exports and audits leave it out)")
    for member in found.bad_users:
        yield Finding(K.memory_users(ns), f"lists {member[:80]!r}, which is no UTF-8 "
                      "(exports and audits leave it out)")
    async for finding in _guarded(_sessions_and_dimension(client, ns), K.sessions(ns), broken):
        yield finding
    for user in found.users:
        async for finding in _guarded(_memories(mem, user), K.memories(ns, user)):
            yield finding
    for thread in found.threads:
        async for finding in _guarded(_thread(client, ns, thread), K.thread_events(ns, thread)):
            yield finding
    async for finding in _guarded(_turns(client, ns, now), K.turns(ns), broken):
        yield finding


_TYPES: dict[Callable[[str], str], str] = {
    K.sequence: "string", K.feed_size: "string", K.feed: "stream", K.config: "hash",
    K.scopes: "zset", K.threads: "zset", K.memory_users: "zset", K.sessions: "zset",
    K.memory_dim: "string", K.turns: "zset"}


async def _key_types(client: Any, ns: str) -> AsyncIterator[Finding]:
    """The namespace's own keys that a raw command gave another Redis type."""
    pipe = client.pipeline(transaction=False)
    for key_of in _TYPES:
        pipe.type(key_of(ns))
    try:
        types = await pipe.execute()
    except NoPermissionError:  # a namespace role may not run TYPE: its reads say instead
        return
    for (key_of, expected), got in zip(_TYPES.items(), types, strict=True):
        actual = got.decode() if isinstance(got, bytes) else str(got)
        if actual not in ("none", expected):
            yield Finding(key_of(ns), f"is a Redis {actual}, the library keeps a {expected} "
                          "there: its readers fail until it is deleted")


async def _guarded(findings: AsyncIterator[Finding], key: str,
                   reported: set[str] | None = None) -> AsyncIterator[Finding]:
    """``findings``, and where a key of another Redis type stops them, a
    finding saying so (unless ``key`` was reported already). A refusal of
    the credential is no finding: it propagates."""
    try:
        async for finding in findings:
            yield finding
    except NoPermissionError:
        raise
    except ResponseError as exc:
        if reported is None or key not in reported:
            yield Finding(key, f"cannot be read, a raw command changed a key's type: {exc}")


async def _sessions_and_dimension(client: Any, ns: str) -> AsyncIterator[Finding]:
    """Members of the sessions registry that are no session id, and a
    long-term memory dimension that is no dimension (vector searches of
    memories fail on it)."""
    async for member, _ in client.zscan_iter(K.sessions(ns), count=1000):
        if session_id(member) is None:
            yield Finding(K.sessions(ns), f"lists {member[:80]!r}, which is no session id "
                          "(exports report it, and leave it out)")
    dim = await client.get(K.memory_dim(ns))
    if dim is not None and not stored_count(dim, limits.MAX_VECTOR_DIM):
        yield Finding(K.memory_dim(ns), f"holds {dim[:40]!r}, not a dimension of at most "
                      f"{limits.MAX_VECTOR_DIM}: memory vector searches fail until it is "
                      "deleted")


async def _turns(client: Any, ns: str, now: int) -> AsyncIterator[Finding]:
    """Each turn of the registry whose hash a raw write left in a state no
    call sets (redismem.turns.problems); none for a role that may not read
    the turns or the feed (a writer)."""
    try:
        last = await client.xrevrange(K.feed(ns), count=1)
        await client.zscan(K.turns(ns), 0, count=1)
    except NoPermissionError:
        return
    sequence = stored_count(await client.get(K.sequence(ns)), limits.MAX_SEQUENCE) or 0
    if last:
        sequence = max(sequence, int(last[0][0].partition(b"-")[0]))
    async for member, _ in client.zscan_iter(K.turns(ns), count=1000):
        scope, _, sid = member.decode(errors="replace").partition(":")
        if scope not in turns.TURN_SCOPES or not sid:
            yield Finding(K.turns(ns), f"lists {member[:80]!r}, which names no turn")
            continue
        key = K.turn(ns, scope, sid)
        try:
            fields = await client.hgetall(key)
        except ResponseError as exc:
            yield Finding(key, f"cannot be read, a raw command changed its type: {exc}")
            continue
        for problem in turns.problems(fields, now, sequence):
            yield Finding(key, f"{problem}; deleting the key frees the turn")


_WRITES = ("set", "incr", "append", "merge")


class FeedIndex:
    """Who wrote each revision of each value and vector, from the feed's
    events (an import's event names the entry's own writer in ``writer``),
    to check each entry's ``by`` against the event of its revision. Imports
    by library versions before 32 named the importer only: an entry older
    than such an event is taken to be imported, its ``by`` unchecked."""

    def __init__(self, read_at: int) -> None:
        self.read_at = read_at  # entries written later may have no event read
        # ts of the first event retained: an entry written in a later
        # millisecond has its event in the feed (one in the same may not)
        self.oldest: int | None = None
        # (kind, scope, sid, key, revision) -> (its writer, its event's
        # sequence, the event's time in ms when it names no writer of its
        # own: None when it does)
        self.events: dict[tuple[str, str, str, str, int], tuple[str, int, int | None]] = {}

    def add(self, event: Any) -> str | None:
        """Record ``event``; why it cannot be the library's, else None."""
        if self.oldest is None:
            self.oldest = int(event.created_at.timestamp() * 1000)
        if event.kind in ("value", "vector") and event.action in _WRITES:
            key = (event.kind, event.scope, event.scope_id, event.key, event.revision)
            if key in self.events:
                return (f"it records revision {event.revision} of {event.scope}:"
                        f"{event.scope_id} {event.key!r} again (event {self.events[key][1]} "
                        "did): the library writes one event per revision, so one is forged")
            self.events[key] = (event.writer or event.principal, event.sequence,
                                None if event.writer else
                                int(event.created_at.timestamp() * 1000))
        return None

    def problem(self, kind: str, scope: str, sid: str, name: str, revision: int,
                by: bytes, ts: bytes) -> str | None:
        found = self.events.get((kind, scope, sid, name, revision))
        shown = by.decode(errors="replace")
        if found is not None:
            writer, _, bare_ms = found
            if writer != shown and bare_ms is not None and int(ts) < bare_ms:
                # an import before library 32 named only the importer, in by:
                # the entry, written before its event, keeps its own writer
                return None
            if writer != shown:
                return (f"its writer is {shown!r}, the feed says {writer!r} wrote revision "
                        f"{revision}: a raw write")
            return None
        if self.oldest is not None and self.oldest < int(ts) < self.read_at:
            return (f"revision {revision} has no feed event, though the feed holds every event "
                    "since before it was written: a raw write")
        return None


async def _feed_entries(client: Any, ns: str, written: FeedIndex) -> AsyncIterator[Finding]:
    """Entries the library did not write, and gaps in the sequence (a raw
    XDEL); ``written`` gains the events."""
    start, previous = "-", None
    while True:
        entries = cast(Entries, await client.xrange(K.feed(ns), min=start, max="+", count=1000))
        for entry_id, entry in entries:
            event = parse_event(entry_id, entry)
            if event.error:
                yield Finding(f"{K.feed(ns)} {entry_id.decode()}", event.error)
                continue
            if previous is not None and event.sequence > previous + 1:
                yield Finding(K.feed(ns), f"sequences {previous + 1}..{event.sequence - 1} "
                              "have no event: a raw XDEL deleted them, or a raw XADD moved "
                              "the stream's id past them")
            previous = event.sequence
            problem = written.add(event)
            if problem:
                yield Finding(f"{K.feed(ns)} {entry_id.decode()}", problem)
        if len(entries) < 1000 or entries[-1][0].decode() == LAST_STREAM_ID:
            break
        start = "(" + entries[-1][0].decode()


async def _memories(mem: Memory, user: str) -> AsyncIterator[Finding]:
    async for memory_id, rec, emb in memory_fields(mem, user):
        problem = memory_problem(rec, emb)
        if problem:
            yield Finding(K.memory(mem.namespace, user, memory_id), problem)


async def _thread(client: Any, ns: str, thread: str) -> AsyncIterator[Finding]:
    """A thread's events, and its two indexes against them: the timestamp
    zset (stream id -> the event's timestamp; get_events_since reads it) and
    the id hash (event id -> stream id; appends stay idempotent by it)."""
    events_key = K.thread_events(ns, thread)
    held: dict[str, tuple[str, int] | None] = {}  # stream id -> (event id, timestamp)
    for entry_id, entry in cast(Entries, await client.xrange(events_key)):
        stream_id = entry_id.decode()
        held[stream_id] = None
        try:
            event = _json.loads(entry[b"e"])
            held[stream_id] = (str(event["id"]), int(event["timestamp"]))
        except (KeyError, ValueError, TypeError) as exc:
            yield Finding(f"{events_key} {stream_id}", f"not an event the library wrote: {exc}")
    times, ids = K.thread_times(ns, thread), K.thread_ids(ns, thread)
    indexed: set[str] = set()
    async for member, score in client.zscan_iter(times, count=1000):
        stream_id = member.decode(errors="replace")
        indexed.add(stream_id)
        if stream_id not in held:
            yield Finding(times, f"indexes {stream_id!r}, an entry the thread does not hold")
        elif (found := held[stream_id]) is not None and found[1] != score:
            yield Finding(times, f"gives {stream_id} the timestamp {score!r}, its event has "
                          f"{found[1]}: get_events_since misplaces it")
    for stream_id, found in held.items():
        if found is not None and stream_id not in indexed:
            yield Finding(times, f"misses {stream_id}: get_events_since never returns it")
    named: set[str] = set()
    async for event_id, stream_id in client.hscan_iter(ids, count=1000):
        name, target = event_id.decode(errors="replace"), stream_id.decode(errors="replace")
        named.add(name)
        if (held.get(target) or ("", 0))[0] != name:
            yield Finding(ids, f"maps event {name!r} to {target!r}, which holds no such event")
    for found in held.values():
        if found is not None and found[0] not in named:
            yield Finding(ids, f"misses event {found[0]!r}: appending it again would store it "
                          "twice")
