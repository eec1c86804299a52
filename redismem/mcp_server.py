"""``redismem mcp``: a Model Context Protocol server over one namespace's
memory (the optional extra ``redismem[mcp]``, on the official ``mcp`` SDK).

It acts with the Redis credentials of its URL, so what an agent may do is
what that credential's role allows (docs/access-control.md). Every tool
answers with JSON; a refusal (a stale revision, a permission, bad input, a
server that does not answer) is a tool result with ``is_error`` and a
one-line message an agent can act on, and the server goes on serving.

Tools: ``memory_get``, ``memory_set``, ``memory_merge``, ``memory_delete``,
``memory_list`` and ``memory_changes`` (docs/mcp.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import limits
from .errors import ConflictError, PermissionDeniedError, RedisMemError
from .memory import Memory, connect
from .scope import MemoryScope

SCOPE_HELP = ("Which memory: 'session:ID' (one conversation or task), 'workflow:ID' "
              "(shared by the workers of one workflow), 'actor' (this agent's own), "
              "'actor:ID' (another agent's), or 'global' (the whole namespace).")

Scope = Annotated[str, Field(description=SCOPE_HELP, min_length=1, max_length=300)]
Key = Annotated[str, Field(description="The key: 1 to 512 bytes of text, no control "
                                       "characters.", min_length=1,
                           max_length=limits.MAX_KEY_BYTES)]
Revision = Annotated[int | None, Field(
    description="Write only if the key is at this revision (0: only if it does not exist); "
                "omit to write whatever the revision. A stale one is refused, and the error "
                "says the current revision.", ge=0, le=limits.MAX_REVISION)]
Ttl = Annotated[float | None, Field(
    description="Expire the key this many seconds from now; omit to keep its expiry.",
    gt=0, le=limits.MAX_TTL_MS / 1000)]


def scope_of(memory: Memory, spec: str) -> MemoryScope:
    """The scope a ``scope`` argument names (see :data:`SCOPE_HELP`)."""
    kind, _, sid = spec.partition(":")
    if kind == "global" and not sid:
        return memory.global_scope()
    if kind == "actor":
        return memory.actor(sid or None)
    if kind in ("session", "workflow") and sid:
        return memory.session(sid) if kind == "session" else memory.workflow(sid)
    raise ToolError(f"unknown scope {spec!r}: give session:ID, workflow:ID, actor, actor:ID "
                    "or global")


@contextlib.contextmanager
def tool_errors(key: str | None = None) -> Iterator[None]:
    """Refusals as one line for the agent (raised as the SDK's ToolError, so
    the message reaches the client), never a crash of the server."""
    try:
        yield
    except ToolError:
        raise
    except ConflictError as exc:
        raise ToolError(f"conflict: key {exc.key or key!r} is at revision {exc.actual}, not "
                        f"{exc.expected}: read it again and retry with its current revision"
                        ) from None
    except PermissionDeniedError as exc:
        raise ToolError(f"permission denied on key {key!r}: {exc}") from None
    except RedisMemError as exc:
        raise ToolError(f"{exc.code}: {exc}") from None
    except (RedisConnectionError, RedisTimeoutError, OSError) as exc:
        raise ToolError(f"unavailable: the Redis server did not answer ({exc}); try again "
                        "later") from None
    except RedisError as exc:
        raise ToolError(f"redis_error: {exc}") from None
    except ValueError as exc:
        raise ToolError(f"invalid_argument: {exc}") from None


def build(url: str | None, namespace: str) -> MCPServer[Any]:
    """The MCP server of ``namespace`` at ``url`` (None: ``REDISMEM_URL``,
    else the embedded server); it connects when a session starts."""
    held: dict[str, Memory] = {}

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        async with await connect(url, namespace=namespace) as memory:
            held["memory"] = memory
            yield

    server: MCPServer[Any] = MCPServer(
        "redismem", version=_version(), lifespan=lifespan,
        instructions=f"Shared, durable memory of namespace {namespace!r}, kept in Redis: "
                     "values with revisions (compare-and-set), in scopes; every change lands "
                     "in a change feed (memory_changes).")

    def memory() -> Memory:
        return held["memory"]

    @server.tool(description="Read the JSON value at KEY in SCOPE. Returns {value, revision, "
                             "found}; an absent key is {value: null, revision: 0, found: "
                             "false}.")
    async def memory_get(scope: Scope, key: Key) -> dict[str, Any]:
        with tool_errors(key):
            got = await scope_of(memory(), scope).get(key)
        return {"value": got.value, "revision": got.revision, "found": got.found}

    @server.tool(description="Write VALUE (any JSON) at KEY in SCOPE. Returns the new "
                             "{revision}. With expected_revision, only if the key is at that "
                             "revision (0: only if absent): a conflict says the current one.")
    async def memory_set(scope: Scope, key: Key, value: Any, expected_revision: Revision = None,
                         ttl_seconds: Ttl = None) -> dict[str, Any]:
        with tool_errors(key):
            written = await scope_of(memory(), scope).set(
                key, value, expected_revision=expected_revision, ttl_seconds=ttl_seconds)
        return {"revision": written.revision}

    @server.tool(description="Merge PATCH (a JSON object; a null member deletes it) into the "
                             "object at KEY in SCOPE (RFC 7386), in one step that never "
                             "conflicts with other writers. Returns the new {revision}.")
    async def memory_merge(scope: Scope, key: Key, patch: dict[str, Any]) -> dict[str, Any]:
        with tool_errors(key):
            written = await scope_of(memory(), scope).merge(key, patch)
        return {"revision": written.revision}

    @server.tool(description="Delete KEY in SCOPE. Returns {deleted}: false when it did not "
                             "exist. With expected_revision, only at that revision.")
    async def memory_delete(scope: Scope, key: Key, expected_revision: Revision = None
                            ) -> dict[str, Any]:
        with tool_errors(key):
            deleted = await scope_of(memory(), scope).delete(
                key, expected_revision=expected_revision)
        return {"deleted": deleted}

    @server.tool(description="List the keys of SCOPE in ascending order, with their "
                             "revisions, one page at a time: pass the returned next_cursor "
                             "to go on (null: the last page).")
    async def memory_list(
            scope: Scope,
            prefix: Annotated[str | None, Field(description="Only keys starting with this.",
                                                max_length=limits.MAX_KEY_BYTES)] = None,
            cursor: Annotated[str | None, Field(description="The next_cursor of the page "
                                                            "before.")] = None,
            limit: Annotated[int, Field(description="At most this many keys.", ge=1,
                                        le=1000)] = 100) -> dict[str, Any]:
        with tool_errors():
            target = scope_of(memory(), scope)
            page = await target.keys(prefix=prefix, cursor=cursor, limit=limit)
            values = await target.get_many(page.keys) if page.keys else {}
        return {"keys": [{"key": name, "revision": values[name].revision}
                         for name in page.keys],
                "next_cursor": page.next_cursor}

    @server.tool(description="The namespace's change events after sequence AFTER (0: from "
                             "the oldest kept), ascending: who changed which key of which "
                             "scope, to which revision. Pass the returned next_cursor as "
                             "AFTER to go on.")
    async def memory_changes(
            after: Annotated[int, Field(description="A sequence number; 0 = from the start.",
                                        ge=0)] = 0,
            limit: Annotated[int, Field(description="At most this many events.", ge=1,
                                        le=1000)] = 100,
            prefix: Annotated[str | None, Field(description="Only keys starting with this.",
                                                max_length=limits.MAX_KEY_BYTES)] = None
    ) -> dict[str, Any]:
        with tool_errors():
            page = await memory().changes(after=after, limit=limit, prefix=prefix)
        return {"events": [_event(event) for event in page.items],
                "next_cursor": page.next_cursor, "oldest_sequence": page.oldest_sequence}

    return server


def _event(event: Any) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(event).items() if v is not None}


def _version() -> str:
    from . import __version__

    return __version__
