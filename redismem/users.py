"""Credentials: ACL users with a redismem role, managed by an operator.

Each credential is an ACL user (``ACL SETUSER``) with the rules of
:func:`redismem.acl.rules`; the server keeps only the SHA-256 of its
password. ``rm:acl:users`` (a hash, user -> JSON of role, namespace and
grants; only operators reach it) records which role each user was given,
so that ``users list`` and ``status`` can say it without parsing rules.
Changes are saved with ``ACL SAVE`` when the server has an ACL file.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import secrets
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass
from typing import Any

from redis.asyncio import ConnectionPool, Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import AuthenticationError, ResponseError

from . import _validate as check
from .acl import Role, rules
from .client import detect_capabilities
from .errors import InvalidArgumentError
from .retries import LOST
from .topology import cluster_nodes, is_cluster, node_client

REGISTRY = "rm:acl:users"


@dataclass(frozen=True)
class Credential:
    """A user as ``users add`` made it: its role, the exact ACL rules, and
    the password when one was generated (shown once, stored nowhere)."""

    user: str
    role: str
    namespace: str | None
    sessions: tuple[str, ...]
    workflows: tuple[str, ...]
    rules: tuple[str, ...]
    password: str | None = None

    def public(self) -> dict[str, Any]:
        data = asdict(self)
        if data["password"] is None:
            del data["password"]
        return data


MIN_PASSWORD = 12
"""Characters a given password has at least (a generated one has 43)."""


def new_password() -> str:
    return secrets.token_urlsafe(32)


def check_password(password: str) -> str:
    """A given password: at least MIN_PASSWORD characters, no whitespace.

    Raises:
        InvalidArgumentError: it is shorter or holds whitespace.
    """
    if len(password) < MIN_PASSWORD or any(c.isspace() for c in password):
        raise InvalidArgumentError(
            f"a password has at least {MIN_PASSWORD} characters and no whitespace (got "
            f"{len(password)} characters); leave it out to have one generated")
    return password


def read_password(text: str) -> str:
    """A password from a file's text: its first line, which must not be empty."""
    lines = text.splitlines()
    password = lines[0] if lines else ""
    if not password or any(c.isspace() for c in password):
        raise InvalidArgumentError("the password file's first line must be a password "
                                   "without whitespace")
    return password


def _hash(password: str) -> str:
    return "#" + hashlib.sha256(password.encode()).hexdigest()


@contextlib.asynccontextmanager
async def _nodes(client: Redis) -> AsyncIterator[list[Redis]]:
    """The server, or a plain client to every healthy node of a cluster:
    primaries and replicas, since each keeps its own users and a replica
    may become a primary (redis-py's cluster client knows only primaries)."""
    if not is_cluster(client):
        yield [client]
        return
    async with contextlib.AsyncExitStack() as stack:
        yield [await stack.enter_async_context(node_client(client, n.host, n.port))
               for n in await cluster_nodes(client) if n.healthy]


async def _everywhere(client: Redis, *args: Any) -> list[Any]:
    """Run an ACL command on the server, or on every node of a cluster."""
    async with _nodes(client) as nodes:
        return [await node.execute_command(*args)  # type: ignore[no-untyped-call]
                for node in nodes]


async def saved_to_file(client: Redis) -> bool:
    """Whether the server keeps its ACL users in a file (``aclfile``), so
    that they survive a restart; on a cluster, whether every node does."""
    async with _nodes(client) as nodes:
        return all([bool((await node.config_get("aclfile")).get("aclfile")) for node in nodes])


NOT_SAVED = ("this server has no ACL file (aclfile is not set), so its ACL users live in "
             "memory only and are gone after a restart: set aclfile in redis.conf and run "
             "ACL SAVE (the embedded server keeps one in its data directory)")


async def _save(client: Redis) -> bool:
    """ACL SAVE on each node that keeps its users in an ACL file; whether any did."""
    saved = False
    async with _nodes(client) as nodes:
        for node in nodes:
            found = await node.config_get("aclfile")
            if found.get("aclfile"):
                await node.execute_command("ACL", "SAVE")  # type: ignore[no-untyped-call]
                saved = True
    return saved


async def acl_users(client: Redis) -> list[str]:
    """The names of the server's ACL users (ACL USERS), sorted; on a cluster,
    of any of its nodes (each node has its own)."""
    names: set[str] = set()
    for reply in await _everywhere(client, "ACL", "USERS"):
        for name in reply:
            names.add(name.decode() if isinstance(name, bytes) else str(name))
    return sorted(names)


async def _exists(client: Redis, user: str) -> bool:
    return user in await acl_users(client)


async def add_user(client: Redis, user: str, role: Role, *,
                   password: str | None = None) -> Credential:
    """Create ACL user ``user`` with ``role``; a generated password when
    none is given (returned once).

    Raises:
        InvalidArgumentError: the user exists, or a name is not a valid id.
    """
    check.check_id("user name", user)
    if user == "default":
        raise InvalidArgumentError("the default user is the server's own; pick another name")
    if await _exists(client, user):
        raise InvalidArgumentError(f"ACL user {user!r} exists: remove it first, or use "
                                   "rotate-password")
    generated = password is None
    secret = new_password() if password is None else check_password(password)
    capabilities = await detect_capabilities(client, "redis", 0)
    user_rules = rules(role, user, search=capabilities.search)
    await _everywhere(client, "ACL", "SETUSER", user, "reset", "on", _hash(secret), *user_rules)
    await client.hset(REGISTRY, user, json.dumps(
        {"role": role.name, "namespace": role.namespace, "sessions": list(role.sessions),
         "workflows": list(role.workflows)}, sort_keys=True))
    await _save(client)
    return Credential(user, role.name, role.namespace, role.sessions, role.workflows,
                      tuple(user_rules), secret if generated else None)


async def list_users(client: Redis) -> list[dict[str, Any]]:
    """Every ACL user: its role as recorded (None for users redismem did not
    make, such as ``default``) and its rules as the server holds them."""
    # on a cluster each node has its users: these are the default node's
    where = ({"target_nodes": client.get_default_node()}  # type: ignore[attr-defined]
             if is_cluster(client) else {})
    listed = await client.execute_command("ACL", "LIST", **where)  # type: ignore[no-untyped-call]
    stored: dict[Any, Any] = await client.hgetall(REGISTRY)
    recorded = {(k.decode() if isinstance(k, bytes) else k): json.loads(v)
                for k, v in stored.items()}
    out = []
    for line in listed:
        text = line.decode() if isinstance(line, bytes) else str(line)
        _, name, *acl_rules = text.split(" ")
        # the server's line shows password hashes: they are not for listing
        shown = [r for r in acl_rules if not r.startswith("#")]
        role = recorded.get(name) or {}
        out.append({"user": name, "role": role.get("role"), "namespace": role.get("namespace"),
                    "sessions": role.get("sessions", []), "workflows": role.get("workflows", []),
                    "rules": shown})
    return sorted(out, key=lambda u: u["user"])


async def remove_user(client: Redis, user: str) -> bool:
    """Delete ACL user ``user`` (its open connections are closed by the
    server); False when there was none."""
    if user == "default":
        raise InvalidArgumentError("the default user cannot be removed")
    removed = max(int(n) for n in await _everywhere(client, "ACL", "DELUSER", user))
    await client.hdel(REGISTRY, user)
    await _save(client)
    return removed > 0


async def rotate_password(client: Redis, user: str, *, password: str | None = None) -> str | None:
    """Replace ``user``'s password (the old one stops working at once);
    returns the new one when it was generated."""
    if not await _exists(client, user):
        raise InvalidArgumentError(f"there is no ACL user {user!r}")
    secret = new_password() if password is None else check_password(password)
    await _everywhere(client, "ACL", "SETUSER", user, "resetpass", _hash(secret))
    await _save(client)
    return secret if password is None else None


def reaching(users: list[dict[str, Any]], ns: str) -> list[str]:
    """The users that reach namespace ``ns``: its roles, operators, and users
    redismem did not make whose rules reach every key (``~*``)."""
    out = []
    for u in users:
        if u["namespace"] == ns or u["role"] == "operator":
            out.append(f"{u['user']} ({u['role']})")
        elif u["role"] is None and "on" in u["rules"] and (
                "~*" in u["rules"] or "allkeys" in u["rules"]):
            out.append(f"{u['user']} (all keys)")
    return out


LOCK_DEFAULT = "redismem users lock-default"
"""The command that closes a server to clients that give no password."""


@dataclass(frozen=True)
class OpenDoor:
    """A node that serves clients giving no password (they are its
    ``default`` user, left ``nopass``), and what they reach."""

    node: str
    reach: str
    """``default``'s rights in words ("every key and command"), or
    "rights unknown" when this user may not read them."""

    def problem(self) -> str:
        return (f"serves any client that connects, with no password: it is the default user "
                f"({self.reach}); close it: {LOCK_DEFAULT} (after adding an operator)")

    def warning(self) -> str:
        return f"{self.node} {self.problem()}"


def _fields(getuser: Any) -> dict[str, Any]:
    """``ACL GETUSER``'s reply (a map, or RESP2's flat list) as a dict of
    text: ``flags`` a list, the other fields a string."""
    pairs = getuser.items() if isinstance(getuser, dict) else zip(
        getuser[::2], getuser[1::2], strict=False)

    def text(v: Any) -> Any:
        if isinstance(v, list):
            return [text(x) for x in v]
        return v.decode() if isinstance(v, bytes) else str(v)

    return {text(k): text(v) for k, v in pairs}


def _everything(fields: dict[str, Any]) -> bool:
    return (str(fields.get("commands", "")) == "+@all"
            and fields.get("keys") in ("~*", "allkeys"))


def _words(getuser: Any) -> str:
    """``ACL GETUSER default``'s reply in words."""
    fields = _fields(getuser)
    if _everything(fields):
        return "every key and command"
    return f"commands {fields.get('commands') or 'none'} on keys {fields.get('keys') or 'none'}"


def _anonymous(node: Redis) -> Redis:
    """A client to ``node``'s server with no credentials, no retries."""
    pool = node.connection_pool
    options = {**pool.connection_kwargs, "username": None, "password": None,
               "credential_provider": None, "retry": Retry(NoBackoff(), 0)}
    return Redis(connection_pool=ConnectionPool(connection_class=pool.connection_class,
                                                **options))


async def open_doors(client: Redis) -> list[OpenDoor]:
    """The server's nodes that serve a client giving no password: it
    connects, sends PING, and is answered (not ``NOAUTH``)."""
    found = []
    async with _nodes(client) as nodes:
        for node in nodes:
            address = _address(node)
            stranger = _anonymous(node)
            try:
                await stranger.ping()
                # what the stranger may do; else what this user may read of it
                found.append(OpenDoor(address, await _reach(stranger) or await _reach(node)
                                      or "rights unknown"))
            except (AuthenticationError, *LOST):
                continue
            except ResponseError as exc:
                if "NOAUTH" not in str(exc):
                    raise
            finally:
                await stranger.aclose()
                await stranger.connection_pool.disconnect()
    return found


async def _default_user(node: Redis) -> dict[str, Any] | None:
    """``ACL GETUSER default`` on ``node``, or None when its user may not run it."""
    try:
        reply = await node.execute_command("ACL", "GETUSER", "default")  # type: ignore[no-untyped-call]
    except ResponseError:  # ACL not permitted to this user
        return None
    return _fields(reply) if reply else None


async def _reach(node: Redis) -> str | None:
    """``default``'s rights in words, or None when ``node``'s user may not read them."""
    fields = await _default_user(node)
    return None if fields is None else _words(fields)


@dataclass(frozen=True)
class LossyDefault:
    """A node whose ``default`` user is off or restricted. Redis replays a
    function call or transaction from its AOF as MULTI/EXEC run by the
    ``default`` user, and EXEC checks that user's rights again: every
    write the library made is refused at the next start with AOF on
    (redis/redis#14541, valkey-io/valkey#3983), and the data is gone."""

    node: str
    state: str
    """What is wrong, in words ("off", "commands -@all on keys none")."""
    appendonly: bool | None
    """Whether the node has AOF on (None: this user may not read it)."""

    def problem(self) -> str:
        where = {True: "AOF is on here", False: "once AOF is on",
                 None: "when AOF is on"}[self.appendonly]
        return (f"its default user is {self.state}: {where}, the server drops every write "
                f"the library made when it restarts (it replays them as that user); relock "
                f"it the safe way: {LOCK_DEFAULT}")

    def warning(self) -> str:
        return f"{self.node} {self.problem()}"


def _address(node: Redis) -> str:
    options = node.connection_pool.connection_kwargs
    return f"{options.get('host', 'localhost')}:{options.get('port', 6379)}"


async def lossy_defaults(client: Redis) -> list[LossyDefault]:
    """The server's nodes whose ``default`` user would lose data at a
    restart with AOF on (see :class:`LossyDefault`); nodes whose ACL this
    user may not read are left out."""
    found = []
    async with _nodes(client) as nodes:
        for node in nodes:
            fields = await _default_user(node)
            if fields is None or ("on" in fields.get("flags", ()) and _everything(fields)):
                continue
            state = "off" if "on" not in fields.get("flags", ()) else _words(fields)
            try:
                aof: bool | None = (await node.config_get("appendonly")).get("appendonly") == "yes"
            except ResponseError:
                aof = None
            found.append(LossyDefault(_address(node), state, aof))
    return found


async def lock_default(client: Redis) -> bool:
    """Close the server to clients that give no password: the ``default``
    user is left with no password at all (and no ``nopass``), so nobody
    can log in as it, but keeps every key and command, which the server
    needs to replay its AOF (see :class:`LossyDefault`); on a cluster, on
    every node. A ``default`` user turned off or restricted (as earlier
    versions of this command did) is put right the same way. False when
    there was nothing to do.

    Raises:
        InvalidArgumentError: no enabled operator would be left to manage
            the server, or a cluster's replicas log in as ``default``.
    """
    if not await open_doors(client) and not await lossy_defaults(client):
        return False
    operators = [u["user"] for u in await list_users(client)
                 if u["role"] == "operator" and "on" in u["rules"]]
    if not operators:
        raise InvalidArgumentError(
            "no enabled operator user: locking the default user would leave nobody to "
            "manage users. Add one first (redismem users add ops --role operator) and "
            "connect as it")
    async with _nodes(client) as nodes:
        for node in nodes:
            primary_auth = await node.config_get("masterauth")
            replica_user = (await node.config_get("masteruser")).get("masteruser")
            if primary_auth.get("masterauth") and replica_user in (None, "", "default"):
                raise InvalidArgumentError(
                    "this server's replicas log in to their primary as the default user "
                    "(masterauth is set, masteruser is not): give them a user of their own "
                    "(masteruser, masterauth) before locking the default user")
    await _everywhere(client, "ACL", "SETUSER", "default", "reset", "on", "~*", "&*", "+@all")
    await _save(client)
    return True
