"""Roles as Redis ACL users: the exact rules each role gets.

The server enforces these for every client, redis-cli included. A role's
rules are a root permission set (connection commands and the reads it may
do) plus ACL selectors, one per key family it writes, each with only the
commands that family needs: a writer may ``XADD`` to the feed but not
``DEL`` or ``XTRIM`` it, ``HSET`` values but not the settings hash. Redis
runs a library function's commands with the caller's permissions, so these
are also the raw commands a role can run outside the library; the README's
"Access control" section lists them, and :func:`reach` prints them.

Roles per namespace: ``reader``, ``writer``, ``admin``, ``worker`` (granted
session and workflow scopes only). ``operator`` is server-wide.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from . import _validate as check
from . import keys as K

ROLES = ("reader", "writer", "admin", "worker", "operator")
NAMESPACE_ROLES = ROLES[:4]

# every role: connect, identify itself, check the library's code (FUNCTION
# LIST only), read settings and values through the read-only functions, on
# a cluster read its topology (what redis-py's cluster client asks), and
# queue a command between MULTI and DISCARD: an import asks the ACL so,
# before it writes, whether it may write (redismem/import_probe.py); EXEC
# is not granted
CONNECT = ("+ping", "+echo", "+hello", "+auth", "+select", "+reset", "+quit",
           "+client|setname", "+client|getname", "+client|id",
           "+client|info", "+info", "+function|list", "+time", "+fcall_ro",
           "+cluster|slots", "+cluster|shards", "+cluster|nodes", "+cluster|info",
           "+cluster|myid", "+readonly", "+readwrite", "+command", "+multi", "+discard")
# what the library's read functions and the Python readers call
READS = ("+hget", "+hmget", "+hgetall", "+hscan", "+zscore", "+zrange", "+zrevrange",
         "+zrangebylex", "+zrangebyscore", "+zcard", "+get", "+xrange", "+xrevrange",
         "+xread", "+xlen", "+xinfo|stream", "+pexpiretime", "+zrank", "+zscan")
SEARCH = ("+ft.search", "+ft.info", "+ft.profile")
# what scope writes run on value and vector hashes, their listings and
# revisions (lua/lib/60_names.lua, 70_vectors.lua)
SCOPE_WRITES = ("+hset", "+hdel", "+hincrby", "+del", "+zadd", "+zrem", "+persist",
                "+pexpireat")
# what turns run beyond the scope writes: wake the next waiter, block as a
# waiter (lua/lib/65_turns.lua, redismem/turns.py)
TURN_COMMANDS = ("+lpush", "+pexpire", "+blpop")
COUNTER_WRITES = ("+set",)
# what write calls run on their principal's key: keep the request's reply
# (lua/lib/55_requests.lua)
REQUEST_COMMANDS = ("+hget", "+hset", "+pexpire")
FEED_WRITES = ("+xadd",)
REGISTRY_WRITES = ("+zadd",)
THREAD_WRITES = ("+xadd", "+xdel", "+hset", "+hsetnx", "+hdel", "+zadd", "+zrem", "+del")
MEMORY_WRITES = ("+hset", "+del", "+set", "+zadd", "+zrem")
# what the LangGraph checkpoint functions run on their keys
# (lua/lib/85_checkpoints.lua)
CHECKPOINT_WRITES = ("+hset", "+hdel", "+hexists", "+hkeys", "+exists", "+del", "+zadd",
                     "+zrem")
ADMIN_COMMANDS = ("+fcall", *READS, *SCOPE_WRITES, *COUNTER_WRITES, *TURN_COMMANDS, "+xadd",
                  "+xtrim", "+xdel", "+hsetnx", "+hexists", "+hkeys", "+exists")
# an admin's key families: every key of its namespace but the who:<principal>:* keys
ADMIN_FAMILIES = ("val:*", "vec:*", "keys:*", "exp:*", "rev:*", "vdims:*", "idx:*", "feed",
                  "seq", "feedsz", "cfg", "scopes", "sessions", "thr:*", "threads", "ltm:*",
                  "ltmz:*", "ltmdim", "ltmusers", "turn:*", "turns", "feed:rebuild", "lgt:*",
                  "lgr:*", "lgthreads")
# what an admin's repair-feed runs on the feed and its copy, beyond the
# admin's commands (lua/functions/repair_feed.lua)
REPAIR_COMMANDS = ("+xsetid", "+rename")
# the server's own administration stays with whoever runs the server
OPERATOR_DENIED = ("-flushall", "-flushdb", "-debug", "-module", "-shutdown", "-config|set",
                   "-config|rewrite", "-config|resetstat", "-replicaof", "-slaveof",
                   "-failover", "-monitor", "-sync", "-psync", "-bgrewriteaof", "-bgsave",
                   "-save", "-swapdb", "-cluster|reset")


@dataclass(frozen=True)
class Grant:
    """One ACL selector: key patterns (with their ``~``/``%R~``/``%W~``
    prefix) and the commands allowed on them."""

    keys: tuple[str, ...]
    commands: tuple[str, ...]

    def rule(self) -> str:
        return "(" + " ".join((*self.keys, *self.commands)) + ")"


@dataclass(frozen=True)
class Role:
    """A credential's role: ``name``, the namespace (None for operator), and
    for a worker its granted sessions and workflows."""

    name: str
    namespace: str | None = None
    sessions: tuple[str, ...] = ()
    workflows: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.name not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, got {self.name!r}")
        if self.name == "operator":
            if self.namespace is not None or self.sessions or self.workflows:
                raise ValueError("operator is server-wide: no namespace, sessions or workflows")
            return
        if self.namespace is None:
            raise ValueError(f"role {self.name} needs a namespace")
        check.check_id("namespace", self.namespace)
        for sid in (*self.sessions, *self.workflows):
            check.check_id("scope id", sid)
        if (self.sessions or self.workflows) and self.name != "worker":
            raise ValueError("--session and --workflow grant scopes to a worker only")


def _base(ns: str) -> str:
    return K.glob_escape(K.base(ns))


def _scope_families(ns: str, scope: str, sid: str) -> list[str]:
    """Patterns of every key of one scope (``sid`` may be ``*``): its
    values and vectors, their listings, expiries and revisions, the
    vector dimensions, and its turn (hash, queue, wake lists: every scope
    write declares the scope's turn hash)."""
    b = _base(ns)
    out = []
    for tag in ("val", "vec"):
        out += [f"{b}{tag}:{scope}:{sid}:*", f"{b}keys:{tag}:{scope}:{sid}",
                f"{b}exp:{tag}:{scope}:{sid}", f"{b}rev:{tag}:{scope}:{sid}"]
    out.append(f"{b}vdims:{scope}:{sid}")
    return out + _turn_families(ns, scope, sid)


def _turn_families(ns: str, scope: str, sid: str) -> list[str]:
    """Patterns of a scope's turn: its hash, queue and wake lists (turns
    are taken in sessions and workflows only)."""
    b = _base(ns)
    return [f"{b}turn:{scope}:{sid}", f"{b}turn:{scope}:{sid}:*"]


def _per_grant(role: Role, families: Callable[[str, str, str], list[str]]) -> list[str]:
    """``families`` of each session and workflow granted to a worker."""
    assert role.namespace is not None
    return [*(p for sid in role.sessions
              for p in families(role.namespace, "session", K.glob_escape(sid))),
            *(p for wid in role.workflows
              for p in families(role.namespace, "workflow", K.glob_escape(wid)))]


def _rw(patterns: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"~{p}" for p in patterns)


def _read(patterns: Sequence[str]) -> tuple[str, ...]:
    return tuple(f"%R~{p}" for p in patterns)


def rules(role: Role, user: str, *, search: bool = True) -> list[str]:
    """The ACL SETUSER rules (after ``reset``) that give ``user`` its role;
    the password is added separately. ``search``: the server has the search
    module (without it, FT.* commands do not exist to be granted)."""
    check.check_id("user name", user)
    if role.name == "operator":
        return ["~*", "&*", "+@all", *OPERATOR_DENIED]
    assert role.namespace is not None
    ns, b = role.namespace, _base(role.namespace)
    me = K.glob_escape(user)
    searches = SEARCH if search else ()
    counters = [f"{b}seq", f"{b}feedsz"]
    who = [K.principal_pattern(ns, user)]
    requests = Grant(_rw(who), REQUEST_COMMANDS)
    if role.name == "admin":
        # every key of the namespace but other principals' keys; and
        # dropping the namespace's indexes (redismem drop)
        families = [f"{b}{family}" for family in ADMIN_FAMILIES]
        repair = Grant(_rw([f"{b}feed", f"{b}feed:rebuild"]), REPAIR_COMMANDS)
        return ["resetchannels", *_rw([*families, *who]), *CONNECT, *ADMIN_COMMANDS,
                *searches, *(("+ft.dropindex",) if search else ()), requests.rule(),
                repair.rule()]
    if role.name == "reader":
        return ["resetchannels", f"%R~{b}*", f"~{b}idx:*", *CONNECT, *READS, *searches]
    if role.name == "writer":
        scopes = [*_scope_families(ns, "session", "*"), *_scope_families(ns, "workflow", "*"),
                  *_scope_families(ns, "global", "_"), *_scope_families(ns, "actor", me)]
        threads = [f"{b}thr:*", f"{b}threads", f"{b}sessions"]
        memories = [f"{b}ltm:*", f"{b}ltmz:*", f"{b}ltmdim"]
        checkpoints = [f"{b}lgt:*", f"{b}lgr:*", f"{b}lgthreads"]
        registry = [f"{b}scopes", f"{b}ltmusers", f"{b}turns"]
        grants = [
            # every write call declares the counters and its who: key and
            # writes the who: key: they come first, as Redis tries selectors
            # and patterns in order
            Grant(_rw([*counters, *who, *scopes, *threads, *memories, *checkpoints,
                       f"{b}turns"]), ("+fcall",)),
            requests,
            Grant(_rw(scopes), SCOPE_WRITES),
            Grant(_rw([*_turn_families(ns, "session", "*"), *_turn_families(ns, "workflow", "*")]),
                  TURN_COMMANDS),
            Grant(_rw(counters), COUNTER_WRITES),
            Grant(_rw([f"{b}feed"]), FEED_WRITES),
            Grant(_rw(registry), REGISTRY_WRITES),
            Grant(_rw(threads), THREAD_WRITES),
            Grant(_rw(memories), MEMORY_WRITES),
            Grant(_rw(checkpoints), CHECKPOINT_WRITES),
        ]
        return ["resetchannels", f"%R~{b}*", f"~{b}idx:*", *CONNECT, *READS, *searches,
                *(grant.rule() for grant in grants)]
    # worker: its granted scopes and its actor scope read-write, the global
    # scope and the settings read-only; the feed write-only
    granted = [*_per_grant(role, _scope_families), *_scope_families(ns, "actor", me)]
    readable = [*granted, *_scope_families(ns, "global", "_"), f"{b}cfg"]
    grants = [
        Grant(_rw([*counters, *who, *granted, f"{b}turns"]), ("+fcall",)),
        requests,
        Grant(_rw(granted), SCOPE_WRITES),
        Grant(_rw(counters), ("+get", *COUNTER_WRITES)),
        Grant((f"%W~{b}feed", f"%W~{b}scopes"), (*FEED_WRITES, *REGISTRY_WRITES)),
        Grant(_rw([f"{b}turns"]), REGISTRY_WRITES),
    ]
    turns = _per_grant(role, _turn_families)
    if turns:
        grants.append(Grant(_rw(turns), TURN_COMMANDS))
    return ["resetchannels", *_read(readable), *CONNECT, *READS,
            *(grant.rule() for grant in grants)]
