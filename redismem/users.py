"""Credentials: ACL users with a redismem role, managed by an operator.

Each credential is an ACL user (``ACL SETUSER``) with the rules of
:func:`redismem.acl.rules`; the server keeps only the SHA-256 of its
password. ``rm:acl:users`` (a hash, user -> JSON of role, namespace and
grants; only operators reach it) records which role each user was given,
so that ``users list`` and ``status`` can say it without parsing rules.
Changes are saved with ``ACL SAVE`` when the server has an ACL file.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from dataclasses import asdict, dataclass
from typing import Any

from redis.asyncio import Redis

from . import _validate as check
from .acl import Role, rules
from .errors import InvalidArgumentError
from .functions import is_cluster
from .memory import detect_capabilities

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


def new_password() -> str:
    return secrets.token_urlsafe(32)


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


async def _save(client: Redis) -> bool:
    """ACL SAVE when the server keeps its users in an ACL file; whether it did."""
    found = await client.config_get("aclfile")
    if not found.get("aclfile"):
        return False
    await client.execute_command("ACL", "SAVE")  # type: ignore[no-untyped-call]
    return True


async def acl_users(client: Redis) -> list[str]:
    """The names of the server's ACL users (ACL USERS), sorted; on a cluster,
    of any of its nodes (each node has its own)."""
    if is_cluster(client):
        replies = (await client.execute_command(  # type: ignore[no-untyped-call]
            "ACL", "USERS", target_nodes=client.get_nodes())).values()  # type: ignore[attr-defined]
    else:
        replies = [await client.execute_command("ACL", "USERS")]  # type: ignore[no-untyped-call]
    return sorted({n.decode() if isinstance(n, bytes) else str(n)
                   for names in replies for n in names})


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
    secret = new_password() if password is None else password
    capabilities = await detect_capabilities(client, "redis", 0)
    user_rules = rules(role, user, search=capabilities.search)
    await client.execute_command(  # type: ignore[no-untyped-call]
        "ACL", "SETUSER", user, "reset", "on", _hash(secret), *user_rules)
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
    removed = int(await client.execute_command("ACL", "DELUSER", user))  # type: ignore[no-untyped-call]
    await client.hdel(REGISTRY, user)
    await _save(client)
    return removed > 0


async def rotate_password(client: Redis, user: str, *, password: str | None = None) -> str | None:
    """Replace ``user``'s password (the old one stops working at once);
    returns the new one when it was generated."""
    if not await _exists(client, user):
        raise InvalidArgumentError(f"there is no ACL user {user!r}")
    secret = new_password() if password is None else password
    await client.execute_command(  # type: ignore[no-untyped-call]
        "ACL", "SETUSER", user, "resetpass", _hash(secret))
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
