"""Access control on the server's own ACL: each role, through raw commands
as redis-cli would send them, against its own namespace and another one.

Every path a role may take works; every other is refused by the server
(NOPERM, or the ACL failure of a function) and changes nothing anywhere."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import redis

import redismem
from redismem import acl, users
from redismem import keys as K
from redismem.client import open_client
from redismem.functions import refusals, request_id
from redismem.library import bundled, ensure_library
from redismem.server import ServerState

from .test_cli import run_script

PASSWORD = "pw-" + uuid.uuid4().hex


@dataclass(frozen=True)
class World:
    """Namespaces ``a`` (the roles') and ``b`` (another tenant's), and the
    users made for the roles (user name = role name + a suffix)."""

    state: ServerState
    a: str
    b: str
    names: dict[str, str]

    def url(self, role: str) -> str:
        return f"redis://{self.names[role]}:{PASSWORD}@127.0.0.1:{self.state.port}/0"


def _admin(state: ServerState) -> redis.Redis:
    return redis.Redis.from_url(state.url)


@contextlib.asynccontextmanager
async def role_user(state: ServerState, role: str, prefix: str
                    ) -> AsyncIterator[tuple[str, str, Any]]:
    """A fresh namespace ``prefix`` + hex and a user of ``role`` in it:
    (namespace, the user's URL, an operator's client), the library loaded
    (an operator loads it: a namespace role may not); the user is removed
    afterwards."""
    ns = prefix + uuid.uuid4().hex[:8]
    name = prefix + role + uuid.uuid4().hex[:6]
    operator = await open_client(state.url)
    try:
        await ensure_library(operator)
        await users.add_user(operator, name, acl.Role(role, ns), password=PASSWORD)
        try:
            yield ns, f"redis://{name}:{PASSWORD}@127.0.0.1:{state.port}/0", operator
        finally:
            await users.remove_user(operator, name)
    finally:
        await operator.aclose()


@pytest.fixture(scope="module")
def world(redis_server: ServerState) -> Iterator[World]:
    suffix = uuid.uuid4().hex[:6]
    a, b = f"acla{suffix}", f"aclb{suffix}"
    names = {role: f"{role}{suffix}" for role in acl.ROLES}
    grants = {"worker": acl.Role("worker", a, sessions=("s1",), workflows=("w1",)),
              "operator": acl.Role("operator")}
    import asyncio

    async def setup() -> None:
        client = await open_client(redis_server.url)
        try:
            for role in acl.ROLES:
                spec = grants.get(role) or acl.Role(role, a)
                await users.add_user(client, names[role], spec, password=PASSWORD)
        finally:
            await client.aclose()
        for ns in (a, b):
            async with await redismem.connect(redis_server.url, namespace=ns,
                                              principal="owner") as mem:
                for scope in (mem.session("s1"), mem.session("s2"), mem.workflow("w1"),
                              mem.global_scope(), mem.actor(names["writer"]),
                              mem.actor(names["worker"]), mem.actor("other")):
                    await scope.set("k", {"ns": ns})
                await mem.session("s1").set_vector("v", [1.0, 0.0, 0.0], {"c": "x", "ns": ns})
                await mem.session("s2").set_vector("v", [1.0, 0.0, 0.0], {"c": "x", "ns": ns})

    asyncio.run(setup())
    yield World(redis_server, a, b, names)

    async def teardown() -> None:
        client = await open_client(redis_server.url)
        try:
            for name in names.values():
                await users.remove_user(client, name)
        finally:
            await client.aclose()

    asyncio.run(teardown())


def digest(client: redis.Redis, namespaces: tuple[str, ...]) -> str:
    """A digest of every key of the server, and the content of those of
    ``namespaces`` and of keys outside any namespace (what a refused path
    could reach); other namespaces' keys count by name, since reading all
    of the shared test server's keys took seconds per role. Keys due to
    expire within ten minutes are left out: the request-id keys every write
    leaves for three minutes (a test's own or an earlier test's) expire
    while a test runs, which made it fail. Nothing here sets such a TTL."""
    h = hashlib.sha256()
    names = sorted(client.scan_iter(count=1000))
    ttls: list[int] = []
    for first in range(0, len(names), 1000):
        pipe = client.pipeline(transaction=False)
        for key in names[first:first + 1000]:
            pipe.pttl(key)
        ttls += pipe.execute()
    for key, ttl in zip(names, ttls, strict=True):
        if ttl == -2 or 0 <= ttl < 600_000:
            continue
        owner = K.namespace_of(key.decode(errors="replace"))
        if owner is not None and owner not in namespaces:
            h.update(key)
            continue
        kind = client.type(key)
        h.update(key + kind + (b"volatile" if ttl >= 0 else b"persistent"))
        if kind == b"hash":
            h.update(repr(sorted(client.hgetall(key).items())).encode())
        elif kind == b"zset":
            h.update(repr(client.zrange(key, 0, -1, withscores=True)).encode())
        elif kind == b"stream":
            h.update(repr(client.xrange(key)).encode())
        elif kind == b"string":
            h.update(client.get(key) or b"")
    return h.hexdigest()


# --- the raw commands each path sends -------------------------------------

def set_call(ns: str, scope: str, sid: str, principal: str, *, who: str | None = None
             ) -> list[Any]:
    keys = [*K.scope_writes(ns, "value", scope, sid, who or principal),
            K.value(ns, scope, sid, "p")]
    return ["FCALL", "redismem_set_values", len(keys), *keys, ns, scope, sid, "", principal,
            request_id(), "", "p", '"raw"', ""]


def turn_call(ns: str, scope: str, sid: str, principal: str, name: str = "acquire"
              ) -> list[Any]:
    """Take (or queue for) a turn, or leave its queue (``name`` release): a
    waiter then blocks on its turn_wake list."""
    holder = f"{principal}/h"
    keys = [K.turn(ns, scope, sid), K.turn_queue(ns, scope, sid), K.sequence(ns),
            K.feed_size(ns), K.principal(ns, principal), K.turn_wake(ns, scope, sid, holder)]
    args = ["1000", "1000"] if name == "acquire" else [""]
    if name == "acquire":
        keys.append(K.turns(ns))
    return ["FCALL", f"redismem_turn_{name}", len(keys), *keys, ns, scope, sid, principal,
            holder, *args]


def get_call(ns: str, scope: str, sid: str) -> list[Any]:
    return ["FCALL_RO", "redismem_get_values", 1, K.value(ns, scope, sid, "k")]


def import_call(ns: str, principal: str) -> list[Any]:
    keys = [*K.scope_writes(ns, "value", "session", "s9", principal), K.config(ns),
            K.value(ns, "session", "s9", "k")]
    return ["FCALL", "redismem_import_values", len(keys), *keys, ns, "session", "s9",
            principal, "k", "1", "1", "1", principal, ""]


VECTOR = b"\x00\x00\x80\x3f" + b"\x00" * 8  # [1, 0, 0] as float32
EVENT = ('{"id":"e1","payload":{},"tags":[],"thread_id":"t","timestamp":1,"type":"m",'
         '"user_id":null}')
MEMORY = ('{"created_at":1,"data":{},"id":"m","metadata":{},"scope":"s","tags":[],'
          '"text":"t","updated_at":1,"user_id":"u"}')


def library_calls() -> list[tuple[str, Callable[[str, str], list[Any]], set[str]]]:
    """Every function of the library, as a raw call in a namespace, and the
    roles that may make it there (as worker: in its granted session s1)."""
    def thread(ns: str) -> list[str]:
        return [K.thread_events(ns, "t"), K.thread_times(ns, "t"), K.thread_ids(ns, "t"),
                K.threads(ns)]

    def feed_keys(ns: str, me: str) -> list[str]:
        return [K.sequence(ns), K.feed_size(ns), K.principal(ns, me)]

    def vec_writes(ns: str, me: str) -> list[str]:
        return K.scope_writes(ns, "vector", "session", "s1", me)

    def call(name: str, keys: list[str], *args: Any, ro: bool = False) -> list[Any]:
        return ["FCALL_RO" if ro else "FCALL", f"redismem_{name}", len(keys), *keys, *args]

    s1 = ("session", "s1")
    return [
        ("version", lambda ns, me: call("version", [], ro=True), {R, W, A, WK}),
        ("get_values", lambda ns, me: get_call(ns, *s1), {R, W, A, WK}),
        ("get_vectors", lambda ns, me: call("get_vectors", [K.vector(ns, *s1, "v")], ro=True),
         {R, W, A, WK}),
        ("list_keys", lambda ns, me: call(
            "list_keys", [K.names(ns, "value", *s1), K.expiry(ns, "value", *s1)], ns, *s1,
            "value", "", "", "10", ro=True), {R, W, A, WK}),
        ("get_config", lambda ns, me: call("get_config", [K.config(ns)], ns, ro=True),
         {R, W, A, WK}),
        ("recent_events", lambda ns, me: call("recent_events", thread(ns)[:1], ns, "t", "10",
                                              ro=True), {R, W, A}),
        ("events_since", lambda ns, me: call("events_since", thread(ns)[:2], ns, "t", "0",
                                             "10", ro=True), {R, W, A}),
        ("set_values", lambda ns, me: set_call(ns, *s1, me), {W, A, WK}),
        ("delete_value", lambda ns, me: call(
            "delete_value", [K.value(ns, *s1, "gone"), *K.scope_writes(ns, "value", *s1, me)],
            ns, *s1, "gone", "", me, request_id(), ""), {W, A, WK}),
        ("modify_value", lambda ns, me: call(
            "modify_value", [*K.scope_writes(ns, "value", *s1, me), K.value(ns, *s1, "n")],
            ns, *s1, "", me, request_id(), "", "n", "incr", "1"), {W, A, WK}),
        ("set_vectors", lambda ns, me: call(
            "set_vectors", [*vec_writes(ns, me), K.vector_dims(ns, *s1), K.vector(ns, *s1, "w")],
            ns, *s1, "", me, request_id(), "", "w", VECTOR, "{}", ""), {W, A, WK}),
        ("delete_vector", lambda ns, me: call(
            "delete_vector", [K.vector(ns, *s1, "gone"), *vec_writes(ns, me),
                              K.vector_dims(ns, *s1)], ns, *s1, "gone", "", me, request_id(),
            ""), {W, A, WK}),
        ("append_events", lambda ns, me: call(
            "append_events", [*thread(ns), K.turn(ns, "session", "t"), *feed_keys(ns, me)], ns,
            "t", "", me, EVENT), {W, A}),
        ("replace_events", lambda ns, me: call(
            "replace_events", [*thread(ns), *feed_keys(ns, me)], ns, "t", me, EVENT), {W, A}),
        ("drop_events", lambda ns, me: call(
            "drop_events", [*thread(ns)[:3], *feed_keys(ns, me)], ns, "t", me, "1-0", ""),
         {W, A}),
        ("create_session", lambda ns, me: call("create_session", [K.sessions(ns)], ns, "s7"),
         {W, A}),
        ("upsert_memory", lambda ns, me: call(
            "upsert_memory", [K.memory(ns, "u", "m"), K.memories(ns, "u"), K.memory_dim(ns)],
            ns, "u", "m", MEMORY, ""), {W, A}),
        ("delete_memory", lambda ns, me: call(
            "delete_memory", [K.memory(ns, "u", "gone"), K.memories(ns, "u")], ns, "u", "gone"),
         {W, A}),
        ("set_config", lambda ns, me: call("set_config", [K.config(ns)], ns, "max_value_bytes",
                                           "100000"), {A}),
        ("trim_feed", lambda ns, me: call("trim_feed", [K.feed(ns), K.feed_size(ns),
                                                        K.config(ns)], ns, ""), {A}),
        ("import_values", import_call, {A}),
        ("import_vectors", lambda ns, me: call(
            "import_vectors", [*vec_writes(ns, me), K.config(ns), K.vector_dims(ns, *s1),
                               K.vector(ns, *s1, "imp")],
            ns, *s1, me, "imp", VECTOR, "{}", "1", "1", me, ""), {A}),
        ("raise_revisions", lambda ns, me: call(
            "raise_revisions", [K.revisions(ns, "value", *s1), K.config(ns)], ns, *s1, "value",
            "k", "1"), {A}),
        ("turn_acquire", lambda ns, me: turn_call(ns, *s1, me), {W, A, WK}),
        ("turn_release", lambda ns, me: turn_call(ns, *s1, me, "release"), {W, A, WK}),
        ("turn_evict", lambda ns, me: call(
            "turn_evict", [*turn_call(ns, *s1, me, "release")[3:9], K.config(ns)], ns, *s1, me,
            f"{me}/h"), {A}),
        # holding no turn, it is answered TURN_LOST: from inside the function
        ("turn_renew", lambda ns, me: call("turn_renew", [K.turn(ns, *s1), K.principal(ns, me)],
                                           ns, *s1, me, f"{me}/nobody", "1", "1000"),
         {W, A, WK}),
    ]


LUA_ANSWERS = {"turn_renew (own namespace)": "TURN_LOST"}
"""Allowed paths whose reply is an error of the library itself: the call
got past the ACL into the function."""


def search_call(ns: str, command: str = "FT.SEARCH") -> list[Any]:
    return [command, K.vector_index(ns, 3), "*"]


Path = tuple[str, Callable[[World, str], list[Any]], frozenset[str]]
R, W, A, WK = "reader", "writer", "admin", "worker"


def paths() -> list[Path]:
    def own(f: Callable[[str, str], list[Any]]) -> Callable[[World, str], list[Any]]:
        return lambda w, me: f(w.a, me)

    def other(f: Callable[[str, str], list[Any]]) -> Callable[[World, str], list[Any]]:
        return lambda w, me: f(w.b, me)

    every = frozenset({R, W, A, WK})
    table: list[tuple[str, Callable[[World, str], list[Any]], set[str]]] = [
        *((f"{name} (own namespace)", own(make), allowed)
          for name, make, allowed in library_calls()),
        *((f"{name} (other namespace)", other(make), {R, W, A, WK} if name == "version"
           else set()) for name, make, allowed in library_calls()),
        ("get own session s1", own(lambda ns, me: get_call(ns, "session", "s1")), {R, W, A, WK}),
        ("get own session s2", own(lambda ns, me: get_call(ns, "session", "s2")), {R, W, A}),
        ("get own global", own(lambda ns, me: get_call(ns, "global", "_")), {R, W, A, WK}),
        ("get own actor:other", own(lambda ns, me: get_call(ns, "actor", "other")), {R, W, A}),
        ("set own session s1", own(lambda ns, me: set_call(ns, "session", "s1", me)),
         {W, A, WK}),
        ("set own session s2", own(lambda ns, me: set_call(ns, "session", "s2", me)), {W, A}),
        ("set own workflow w1", own(lambda ns, me: set_call(ns, "workflow", "w1", me)),
         {W, A, WK}),
        ("set own global", own(lambda ns, me: set_call(ns, "global", "_", me)), {W, A}),
        ("set own actor scope", own(lambda ns, me: set_call(ns, "actor", me, me)), {W, A, WK}),
        ("set actor:other", own(lambda ns, me: set_call(ns, "actor", "other", me)), {A}),
        ("set as principal mallory", own(lambda ns, me: set_call(ns, "session", "s1",
                                                                 "mallory")), set()),
        ("take the turn of workflow w1", own(lambda ns, me: turn_call(ns, "workflow", "w1",
                                                                      me)), {W, A, WK}),
        ("take the turn of session s2", own(lambda ns, me: turn_call(ns, "session", "s2", me)),
         {W, A}),
        ("wait for the turn of session s1", own(lambda ns, me: [
            "BLPOP", K.turn_wake(ns, "session", "s1", f"{me}-h"), "0.01"]), {W, A, WK}),
        ("wait for the turn of session s2", own(lambda ns, me: [
            "BLPOP", K.turn_wake(ns, "session", "s2", f"{me}-h"), "0.01"]), {W, A}),
        ("take a turn in another namespace", other(lambda ns, me: turn_call(ns, "session", "s1",
                                                                            me)), set()),
        ("set_config", own(lambda ns, me: ["FCALL", "redismem_set_config", 1, K.config(ns),
                                           ns, "max_value_bytes", "100000"]), {A}),
        ("trim_feed", own(lambda ns, me: ["FCALL", "redismem_trim_feed", 3, K.feed(ns),
                                          K.feed_size(ns), K.config(ns), ns, ""]), {A}),
        ("import", own(import_call), {A}),
        ("FT.SEARCH own index", own(lambda ns, me: search_call(ns)), {R, W, A}),
        ("XRANGE own feed", own(lambda ns, me: ["XRANGE", K.feed(ns), "-", "+"]), {R, W, A}),
        ("XREAD own feed", own(lambda ns, me: ["XREAD", "COUNT", 1, "STREAMS", K.feed(ns),
                                               "0"]), {R, W, A}),
        ("raw XTRIM own feed", own(lambda ns, me: ["XTRIM", K.feed(ns), "MAXLEN", 0]), {A}),
        ("raw DEL own feed", own(lambda ns, me: ["DEL", K.feed(ns)]), {A}),
        ("raw HSET own settings", own(lambda ns, me: ["HSET", K.config(ns),
                                                      "max_value_bytes", "10"]), {A}),
        ("raw HSET own value", own(lambda ns, me: ["HSET", K.value(ns, "session", "s1", "raw"),
                                                   "v", "1"]), {W, A, WK}),
        ("raw HSET other session", own(lambda ns, me: ["HSET", K.value(ns, "session", "s2",
                                                                       "raw"), "v", "1"]), {W, A}),
        ("get other namespace", other(lambda ns, me: get_call(ns, "session", "s1")), set()),
        ("set other namespace", other(lambda ns, me: set_call(ns, "session", "s1", me)), set()),
        ("FT.SEARCH other index", other(lambda ns, me: search_call(ns)), set()),
        ("FT.AGGREGATE other index", other(lambda ns, me: search_call(ns, "FT.AGGREGATE")),
         set()),
        ("FT.INFO other index", other(lambda ns, me: ["FT.INFO", K.vector_index(ns, 3)]), set()),
        ("FT._LIST", own(lambda ns, me: ["FT._LIST"]), set()),
        ("FT.CREATE over other namespace", own(lambda ns, me: [
            "FT.CREATE", K.index_prefix(ns) + "evil", "ON", "HASH", "PREFIX", 1, "rm:",
            "SCHEMA", "v", "TEXT"]), set()),
        ("XREAD other feed", other(lambda ns, me: ["XREAD", "STREAMS", K.feed(ns), "0"]),
         set()),
        ("XRANGE other feed", other(lambda ns, me: ["XRANGE", K.feed(ns), "-", "+"]), set()),
        ("HGETALL other value", other(lambda ns, me: ["HGETALL",
                                                      K.value(ns, "session", "s1", "k")]), set()),
        ("GET other sequence", other(lambda ns, me: ["GET", K.sequence(ns)]), set()),
        ("SCAN", own(lambda ns, me: ["SCAN", 0, "MATCH", "rm:*"]), set()),
        ("KEYS", own(lambda ns, me: ["KEYS", "*"]), set()),
        ("FUNCTION LOAD", own(lambda ns, me: ["FUNCTION", "LOAD", "REPLACE",
                                              bundled().code]), set()),
        ("FUNCTION DELETE", own(lambda ns, me: ["FUNCTION", "DELETE", "redismem"]), set()),
        ("CONFIG SET", own(lambda ns, me: ["CONFIG", "SET", "maxmemory-policy",
                                           "allkeys-lru"]), set()),
        ("FLUSHALL", own(lambda ns, me: ["FLUSHALL"]), set()),
        ("ACL LIST", own(lambda ns, me: ["ACL", "LIST"]), set()),
        ("DEBUG", own(lambda ns, me: ["DEBUG", "SLEEP", "0"]), set()),
        ("MODULE LIST", own(lambda ns, me: ["MODULE", "LIST"]), set()),
    ]
    assert all(allowed <= every for _, _, allowed in table)
    return [(name, make, frozenset(allowed)) for name, make, allowed in table]


def refused(exc: redis.ResponseError) -> bool:
    """An ACL refusal; DEBUG is refused before ACL while the server disables
    it (enable-debug-command no, the default)."""
    text = str(exc)
    return isinstance(exc, redis.exceptions.NoPermissionError) or text.startswith(
        ("No permissions", "ACL failure", "NOPERM", "DEBUG command not allowed"))


@pytest.mark.parametrize("role", [R, W, A, WK])
def test_each_role_reaches_exactly_its_paths(world: World, role: str) -> None:
    client = redis.Redis.from_url(world.url(role))
    admin = _admin(world.state)
    me = world.names[role]
    table = paths()
    mine = (world.a, world.b)
    before = digest(admin, mine)
    for name, make, allowed in table:
        if role in allowed:
            continue
        with pytest.raises(redis.ResponseError) as info:
            client.execute_command(*make(world, me))
        assert refused(info.value), (role, name, str(info.value))
    assert digest(admin, mine) == before, f"a refused path of {role} changed something"
    for name, make, allowed in table:
        if role not in allowed:
            continue
        try:
            client.execute_command(*make(world, me))
        except redis.ResponseError as exc:
            if name in LUA_ANSWERS and str(exc).startswith(LUA_ANSWERS[name]):
                continue
            pytest.fail(f"{role} may {name}, but: {exc}")
    client.close()
    admin.close()


def test_spoofing_the_principal_is_refused_by_key_or_by_the_library(world: World) -> None:
    client = redis.Redis.from_url(world.url(W))
    me = world.names[W]
    with pytest.raises(redis.ResponseError, match="No permissions"):
        client.execute_command(*set_call(world.a, "session", "s1", "mallory"))
    # naming mallory with its own principal key: the library refuses the mismatch
    with pytest.raises(redis.ResponseError, match="INVALID_ARGUMENT KEYS"):
        client.execute_command(*set_call(world.a, "session", "s1", "mallory", who=me))
    client.close()


async def test_the_recorded_writer_is_the_authenticated_user(world: World) -> None:
    async with await redismem.connect(world.url(W), namespace=world.a) as mem:
        assert mem.principal == world.names[W]
        await mem.session("s1").set("who", 1)
        page = await mem.session("s1").changes(after=0)
        assert page.items[-1].principal == world.names[W]
    with pytest.raises(redismem.PermissionDeniedError, match="authenticated as ACL user"):
        await redismem.connect(world.url(W), namespace=world.a, principal="mallory")


async def test_redismem_principal_is_refused_like_the_argument(
        world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REDISMEM_PRINCIPAL", "mallory")
    with pytest.raises(redismem.PermissionDeniedError, match="REDISMEM_PRINCIPAL"):
        await redismem.connect(world.url(W), namespace=world.a)
    done = run_script("set", "--url", world.url(W), "-n", world.a, "--scope", "session:s1",
                      "k", "1", env={"REDISMEM_PRINCIPAL": "mallory"})
    assert done.returncode == 1 and "REDISMEM_PRINCIPAL" in done.stderr, done.stderr
    monkeypatch.setenv("REDISMEM_PRINCIPAL", world.names[W])  # naming oneself is fine
    async with await redismem.connect(world.url(W), namespace=world.a) as mem:
        assert mem.principal == world.names[W]


async def test_roles_through_the_python_api(world: World) -> None:
    async with await redismem.connect(world.url(R), namespace=world.a) as reader:
        assert (await reader.session("s2").get("k")).value == {"ns": world.a}
        with pytest.raises(redismem.PermissionDeniedError):
            await reader.session("s1").set("k", 1)
    async with await redismem.connect(world.url(WK), namespace=world.a) as worker:
        await worker.session("s1").set("mine", 1)
        await worker.actor().set("mine", 1)
        assert (await worker.global_scope().get("k")).found
        for scope in (worker.session("s2"), worker.global_scope(), worker.actor("other")):
            with pytest.raises(redismem.PermissionDeniedError):
                await scope.set("k", 1)
        with pytest.raises(redismem.PermissionDeniedError):
            await worker.session("s2").get("k")
        with pytest.raises(redismem.PermissionDeniedError):
            await worker.session("s1").changes(after=0)
        with pytest.raises(redismem.PermissionDeniedError):  # FT.* is not a worker's
            await worker.session("s1").similarity_search([1.0, 0.0, 0.0])
        async with worker.workflow("w1").turn() as turn:  # its granted scopes' turns
            waiting = asyncio.create_task(worker.workflow("w1").acquire_turn())
            queue = K.turn_queue(world.a, "workflow", "w1")
            while await worker.client.zcard(queue) == 0:  # queued: the release must wake it
                await asyncio.sleep(0.001)
        assert (await waiting).token == turn.token + 2  # after the release event
        await (await waiting).release()
        with pytest.raises(redismem.PermissionDeniedError):
            await worker.session("s2").acquire_turn()
    async with await redismem.connect(world.url(W), namespace=world.a) as writer:
        with pytest.raises(redismem.PermissionDeniedError):
            await writer.configure(max_value_bytes=4096)
        with pytest.raises(redismem.PermissionDeniedError):
            await writer.trim_feed()


async def test_a_refusal_names_what_was_refused_and_what_the_role_reaches(
        world: World) -> None:
    """Every ACL refusal is PermissionDeniedError (permission_denied on the
    command line, never a raw NoPermissionError), naming the scope or key
    family refused and what each role reaches: Redis itself says only "no
    permissions to access one of the keys"."""
    async with await redismem.connect(world.url(WK), namespace=world.a) as worker:
        with pytest.raises(redismem.PermissionDeniedError) as info:
            await worker.session("s2").set("k", 1)
        assert f"scope session:s2 of namespace {world.a}" in str(info.value)
        assert "a worker only its granted sessions and workflows" in str(info.value)
        with pytest.raises(redismem.PermissionDeniedError, match="the change feed of namespace"):
            await worker.changes(after=0)
        with pytest.raises(redismem.PermissionDeniedError, match=f"scope session:s2 of namespace "
                                                                  f"{world.a}"):
            await worker.session("s2").get("k")
    for args, what in ((["changes"], "the change feed"), (["turns"], "the turn registry"),
                       (["get", "--scope", "session:s2", "k"], "scope session:s2"),
                       (["set", "--scope", "session:s2", "k", "1"], "scope session:s2")):
        done = run_script(*args, "--namespace", world.a, "--json", url=world.url(WK))
        assert done.returncode == 1, (args, done.stderr)
        error = json.loads(done.stderr)
        assert error["error"] == "permission_denied", (args, error)
        assert f"{what} of namespace {world.a}" in error["message"], (args, error)
        assert "a worker only" in error["message"]


QUERY_SYNTAX = ["x | @_sc:{*}", "*", "x) | (*", "@_meta:{*}", "{x}", "\\", "x\" | \"*",
                "-x", "%x%", "x=>[KNN 100 @emb $v]"]


async def test_search_as_a_reader_never_returns_another_namespace(world: World) -> None:
    async with await redismem.connect(world.url(R), namespace=world.a) as reader:
        for scope in (reader.session("s1"), reader.session("s2")):
            hits = await scope.similarity_search([1.0, 0.0, 0.0], top_k=10)
            assert {"c": "x", "ns": world.a} in [h.metadata for h in hits]
            assert all(h.metadata.get("ns", world.a) == world.a for h in hits)
            for text in QUERY_SYNTAX:  # no vector has these values: nothing may match
                assert await scope.similarity_search([1.0, 0.0, 0.0], top_k=10,
                                                     filter={"c": text}) == []
                assert await scope.similarity_search([1.0, 0.0, 0.0], top_k=10,
                                                     filter={"ns": text}) == []
    with pytest.raises(redis.ResponseError, match="No permissions"):
        redis.Redis.from_url(world.url(R)).execute_command(*search_call(world.b))


async def test_users_cli_functions_and_persistence_rules(world: World,
                                                         redis_server: ServerState) -> None:
    listed = {u["user"]: u for u in await _listed(redis_server)}
    assert listed[world.names[W]]["role"] == W
    assert listed[world.names[WK]]["sessions"] == ["s1"]
    assert not any(r.startswith("#") for u in listed.values() for r in u["rules"])
    assert users.reaching(list(listed.values()), world.a)
    assert not [u for u in users.reaching(list(listed.values()), world.b)
                if u.split(" ")[0] in (world.names[R], world.names[W], world.names[A])]


async def _listed(state: ServerState) -> list[dict[str, Any]]:
    client = await open_client(state.url)
    try:
        return await users.list_users(client)
    finally:
        await client.aclose()


@pytest.fixture
async def rotating(redis_server: ServerState) -> AsyncIterator[str]:
    name = "rot" + uuid.uuid4().hex[:6]
    client = await open_client(redis_server.url)
    await users.add_user(client, name, acl.Role("reader", "rotns"), password="old-one-0123456789")
    yield name
    await users.remove_user(client, name)
    await client.aclose()


async def test_rotate_password_stops_the_old_one(rotating: str,
                                                 redis_server: ServerState) -> None:
    client = await open_client(redis_server.url)
    new = await users.rotate_password(client, rotating)
    await client.aclose()
    assert new
    port = redis_server.port
    with pytest.raises(redis.AuthenticationError):
        redis.Redis(port=port, username=rotating, password="old-one-0123456789").ping()
    assert redis.Redis(port=port, username=rotating, password=new).ping()


async def test_a_writers_raw_malformed_entries_break_no_reader_and_audit_finds_them(
        redis_server: ServerState, tmp_path: Any) -> None:
    import asyncio

    from redismem.audit import audit
    from redismem.transfer import export_namespace

    async with role_user(redis_server, "writer", "raw") as (ns, url, _), \
            await redismem.connect(url, namespace=ns) as mem:
        s1 = mem.session("s1")
        for key in ("good", "bad_json", "bad_utf8", "no_rev"):
            await s1.set(key, {"k": key})
        raw = redis.Redis.from_url(url)  # the writer's own credential, raw commands
        raw.hset(K.value(ns, "session", "s1", "bad_json"), "v", "{not json")
        raw.hset(K.value(ns, "session", "s1", "bad_utf8"), "v", b'"\xff\xfe"')
        raw.hdel(K.value(ns, "session", "s1", "no_rev"), "rev")
        raw.xadd(K.feed(ns), {"forged": "1"}, id="999-0")
        raw.close()
        with pytest.raises(redismem.CorruptEntryError, match="bad_json") as info:
            await s1.get("bad_json")
        assert info.value.key == "bad_json"
        got = await s1.get_many(["good", "bad_json", "bad_utf8", "no_rev"])
        assert got["good"].value == {"k": "good"} and got["good"].error is None
        assert all(got[k].error for k in ("bad_json", "bad_utf8", "no_rev"))
        assert (await s1.keys()).keys == ["bad_json", "bad_utf8", "good", "no_rev"]
        page = await mem.changes(after=0)
        assert [e.error is not None for e in page.items] == [False] * 4 + [True]
        await s1.set("after", 1)  # the sequence goes on past the forged entry
        seen = []
        async for event in mem.watch("*", after=0):
            seen.append(event)
            if event.key == "after":
                break
        assert [e.key for e in seen if e.error is None][-1] == "after"
        assert sum(1 for e in seen if e.error) == 1
        out = tmp_path / "dump.jsonl"
        with out.open("w") as sink, pytest.raises(redismem.CorruptEntryError,
                                                  match="s1:bad_json"):
            await asyncio.wait_for(export_namespace(mem, sink.write), 30)
        with out.open("w") as sink:
            await asyncio.wait_for(export_namespace(mem, sink.write, keep_raw=True), 30)
        assert '"key":"good"' in out.read_text()
        assert '"key":"bad_json"' not in out.read_text()
        assert out.read_text().count('"type":"raw"') == 6  # 3 entries, 3 listings
        found = {f.key: f.problem async for f in audit(mem)}
        assert set(found) == {K.value(ns, "session", "s1", k)
                              for k in ("bad_json", "bad_utf8", "no_rev")} | {
            f"{K.feed(ns)} 999-0", K.feed(ns)}
        assert found[K.feed(ns)].startswith("sequences 5..999 have no event")


async def test_text_search_as_a_reader_never_returns_another_namespace(world: World) -> None:
    def memory(ns: str, text: str) -> redismem.LongTermMemory:
        return redismem.LongTermMemory(id=f"m-{ns}", user_id="u", scope="notes", data={},
                                       text=text, tags=[], metadata={}, created_at=1,
                                       updated_at=1)

    for ns, text in ((world.a, "open plans for the trip"), (world.b, "secret plans of b")):
        async with redismem.RedisMemoryStore(world.state.url, namespace=ns) as owner:
            await owner.upsert_long_term_memory(memory(ns, text))
    async with redismem.RedisMemoryStore(world.url(R), namespace=world.a) as reader:
        assert [m.id for m in await reader.search_long_term_memory_text("u", "plans")] == [
            f"m-{world.a}"]
        for query in ["secret", "secret | *", "* secret", "@text:(secret)", "-open",
                      "secret) | (@_u:{*}", "%secret%", "{b}", "plans | @text:*"]:
            found = await reader.search_long_term_memory_text("u", query)
            assert all(m.id == f"m-{world.a}" for m in found), (query, found)


async def test_an_admin_exports_and_imports_its_namespace_without_scan(
        world: World, tmp_path: Any) -> None:
    from redismem import restore, transfer

    dump = tmp_path / "a.jsonl"
    async with await redismem.connect(world.url(A), namespace=world.a) as mem:
        # no SCAN for a namespace role
        with pytest.raises(redismem.PermissionDeniedError), refusals():
            await mem.client.scan(0, match="rm:*")
        with dump.open("w") as sink:
            summary = await transfer.export_namespace(mem, sink.write)
    # every scope the fixture wrote is found through the registry
    assert summary.exported["value"] >= 7
    async with redismem.RedisMemoryStore(world.url(A), namespace=world.a) as store:
        assert await restore.check_file(store, dump) > 0
        result = await restore.import_file(store, dump)
    assert sum(result.written.values()) == 0  # all there already: kept
    async with redismem.RedisMemoryStore(world.url(W), namespace=world.a) as store:
        with pytest.raises(redismem.PermissionDeniedError):
            await restore.import_file(store, dump)


@pytest.mark.parametrize("role", ["reader", "writer", "admin"])
def test_status_shows_a_namespace_role_what_it_may_read(world: World, role: str) -> None:
    """A role may not SCAN: status says so (exit 1) instead of failing on a
    raw NoPermissionError, and with --namespace shows its namespace's
    figures from the registries, naming what it may not read (exit 0)."""
    user = world.names[role]
    every = run_script("status", url=world.url(role))
    assert every.returncode == 1, every.stderr
    assert (f"namespaces: not listed: user {user} may not run SCAN (only an operator lists "
            "every namespace): name one with --namespace NS") in every.stdout
    assert "Traceback" not in every.stderr and "Error" not in every.stderr
    own = run_script("status", "--namespace", world.a, "--json", url=world.url(role))
    assert own.returncode == 0, own.stderr
    figures = json.loads(own.stdout)["namespaces"][0]
    assert figures["unreadable"] == {"indexes": "FT._LIST", "keys and memory": "SCAN"}
    # the registries give the counts the operator's SCAN gives
    full = json.loads(run_script("status", "--namespace", world.a, "--json",
                                 url=world.state.url).stdout)["namespaces"][0]
    counted = ("value_keys", "value_scopes", "vector_keys", "vector_scopes", "sessions",
               "threads", "thread_events", "long_term_memories")
    assert {k: figures[k] for k in counted} == {k: full[k] for k in counted}
    assert figures["value_keys"] >= 7 and figures["vector_keys"] >= 2
    assert figures["feed"]["last_sequence"] <= full["feed"]["last_sequence"]
    text = run_script("status", "--namespace", world.a, url=world.url(role)).stdout
    assert f"  {figures['value_keys']} values in {figures['value_scopes']} scopes, " in text
    assert (f"  not readable by {user}: indexes (FT._LIST), keys and memory (SCAN)") in text
    other = run_script("status", "--namespace", world.b, url=world.url(role))
    assert other.returncode == 1
    assert f"namespace {world.b}: cannot be read: user {user} may read none" in other.stdout


def test_status_tells_a_worker_what_it_reads(world: World) -> None:
    done = run_script("status", "--namespace", world.a, url=world.url("worker"))
    assert done.returncode == 1
    assert "a worker reads only its granted scopes" in done.stdout


@pytest.mark.parametrize("damage", ["counter", "counter text", "counter at the bound",
                                    "largest id", "forged entry", "no counter", "no feed"])
async def test_a_namespace_admin_repairs_every_feed_jam(redis_server: ServerState,
                                                        damage: str) -> None:
    """repair-feed failed in every case for a namespace admin (the role
    lacked XSETID, RENAME, EXISTS and the rebuild key): it now repairs each,
    and the admin's audit is clean afterwards."""
    from redismem.audit import audit
    from redismem.repair import repair_feed

    async with role_user(redis_server, "admin", "rep") as (ns, url, operator):
        feed, seq = K.feed(ns), K.sequence(ns)
        async with await redismem.connect(url, namespace=ns) as mem:
            for i in range(3):
                await mem.session("s").set(f"k{i}", i)
            raw = {"counter": ("SET", seq, str(2**53 - 1)), "counter text": ("SET", seq, "abc"),
                   "counter at the bound": ("SET", seq, str(2**50)),
                   "largest id": ("XADD", feed, "18446744073709551615-18446744073709551615",
                                  "k", "v"),
                   "forged entry": ("XADD", feed, "3-5", "k", "v"), "no counter": ("DEL", seq),
                   "no feed": ("DEL", feed)}[damage]
            await operator.execute_command(*raw)
            done = await repair_feed(mem)
            assert done.sequence == 3
            assert (await mem.session("s").set("after", 1)).revision == 1
            events = (await mem.changes(after=0)).items
            expected = [4] if damage == "no feed" else [1, 2, 3, 4]
            assert [e.sequence for e in events] == expected
            assert [f async for f in audit(mem)] == []


async def test_an_admins_audit_of_a_healthy_namespace_finds_nothing(
        redis_server: ServerState) -> None:
    """As a namespace admin, audit exited 1 on every namespace with a
    thread ("thr:...:ev cannot be read ... 'zscan'"): a false finding."""
    from redismem.audit import audit

    async with role_user(redis_server, "admin", "aud") as (ns, url, _):
        async with redismem.RedisMemoryStore(redis_server.url, namespace=ns) as owner:
            await owner.setup()
            mem = owner.memory
            await mem.session("s").set("k", {"a": 1}, ttl_seconds=600)
            await mem.session("s").set_vector("v", [1.0, 0.0], {"c": "x"})
            await mem.create_session("s")
            await (await mem.session("s").acquire_turn()).release()
            await owner.append_event(redismem.MemoryEvent("e1", "s", None, "message", 1, {}))
            await owner.upsert_long_term_memory(redismem.LongTermMemory(
                "m1", "u1", "notes", {}, "a note", ["t"], {}, 1, 1))
        async with await redismem.connect(url, namespace=ns) as admin:
            assert [(f.key, f.problem) async for f in audit(admin)] == []


def _mixed_file(path: Any, ns: str) -> None:
    """[header, session, 50 events, value] of namespace ``ns``."""
    records = [{"type": "header", "format": "redismem-export", "version": 1, "namespace": ns},
               {"type": "session", "id": "imp-s", "created_at": 1},
               *({"type": "event", "event": {"id": f"imp-e{i}", "thread_id": "imp-t",
                                             "user_id": None, "type": "message",
                                             "timestamp": i, "payload": {}, "tags": []}}
                 for i in range(50)),
               {"type": "value", "scope": "session", "scope_id": "imp-s", "key": "k",
                "value": 1, "revision": 1, "ts": 1, "by": "me", "expires_at": None}]
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n")


async def test_an_import_the_credential_cannot_finish_writes_nothing(
        world: World, tmp_path: Any) -> None:
    """A writer's import of [session, 50 events, value] wrote the session
    and the events, then failed on the value (a writer may not import
    values: they keep their writers), with no account of what was left.
    The first write of each group is now checked against the ACL first
    (queued between MULTI and DISCARD), so nothing is written."""
    from redismem import restore

    path = tmp_path / "mixed.jsonl"
    _mixed_file(path, world.a)
    async with redismem.RedisMemoryStore(world.url(W), namespace=world.a) as store:
        assert await restore.check_file(store, path) == 53
        with pytest.raises(redismem.PermissionDeniedError, match=r"scope session:imp-s"):
            await restore.import_file(store, path)
    admin = _admin(world.state)
    assert admin.zscore(K.sessions(world.a), "imp-s") is None
    assert admin.exists(K.thread_events(world.a, "imp-t")) == 0


async def test_an_import_stopped_midway_says_what_it_wrote(redis_url: str, ns: str,
                                                           tmp_path: Any) -> None:
    """A jammed feed (a raw SET of its counter) stops an import at its
    first thread event, after the session (it writes no feed event): the
    error says what was written before the failing call."""
    from redismem import restore

    path = tmp_path / "mixed.jsonl"
    _mixed_file(path, ns)
    async with redismem.RedisMemoryStore(redis_url, namespace=ns) as store:
        await store.memory.client.set(K.sequence(ns), "not a count")
        assert await restore.check_file(store, path) == 53
        with pytest.raises(redismem.FeedCorruptError) as info:
            await restore.import_file(store, path)
    assert str(info.value).endswith(
        "; the import stopped in the event records from record 3 on: before the failing "
        "call it wrote 1 session and kept nothing, after it nothing")
