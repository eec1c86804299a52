"""``redismem mcp``: a Model Context Protocol server over one namespace's
memory (the optional extra ``redismem[mcp]``, on the official ``mcp`` SDK).

It acts with the Redis credentials of its URL, so what an agent may do is
what that credential's role allows (docs/access-control.md). Every tool
answers with JSON; a refusal (a stale revision, a permission, bad input, a
server that does not answer) is a tool result with ``is_error`` and a
one-line message an agent can act on, and the server goes on serving.

Tools: ``memory_get``, ``memory_set``, ``memory_merge``, ``memory_delete``,
``memory_list``, ``memory_changes``; ``thread_append``, ``thread_recent``;
``remember``, ``recall``, ``forget`` (docs/mcp.md). Every value is also a
resource, and a client may subscribe to one (:mod:`redismem.mcp_resources`).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hmac
from collections.abc import AsyncIterator, Iterator
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import Field
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from . import limits
from . import mcp_resources as resources
from .bm25 import bm25_rank
from .embedders import Embedder
from .errors import ConflictError, PermissionDeniedError, RedisMemError
from .mcp_resources import FeedNotifier
from .memory import Memory
from .records import new_id, now_ms
from .scope import MemoryScope
from .store import RedisMemoryStore
from .types import LongTermMemory, MemoryEvent

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


def build(url: str | None, namespace: str, embedder: Embedder | None = None
          ) -> MCPServer[Any]:
    """The MCP server of ``namespace`` at ``url`` (None: ``REDISMEM_URL``,
    else the embedded server); it connects when a session starts. With
    ``embedder`` (:mod:`redismem.embedders`), recall is by meaning too."""
    held: dict[str, RedisMemoryStore] = {}
    notifier = FeedNotifier()

    @contextlib.asynccontextmanager
    async def lifespan(_: MCPServer[Any]) -> AsyncIterator[None]:
        async with RedisMemoryStore(url, namespace=namespace) as store:
            held["store"] = store
            watcher = asyncio.create_task(notifier.run(memory))
            try:
                yield
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher

    server: MCPServer[Any] = MCPServer(
        "redismem", version=_version(), lifespan=lifespan, subscriptions=notifier,
        instructions=f"Shared, durable memory of namespace {namespace!r}, kept in Redis: "
                     "values with revisions (compare-and-set), in scopes; every change lands "
                     "in a change feed (memory_changes).")

    def memory() -> Memory:
        return held["store"].memory

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

    register_store_tools(server, lambda: held["store"], embedder)
    resources.register(server, memory, namespace, notifier)
    return server


Thread = Annotated[str, Field(description="The conversation thread's id (1 to 128 bytes, no "
                                          "':', braces or spaces).", min_length=1,
                              max_length=limits.MAX_ID_BYTES)]
User = Annotated[str | None, Field(description="Whose memory: a user id; omit for memories "
                                               "shared by every user.", min_length=1,
                                   max_length=limits.MAX_ID_BYTES)]


def register_store_tools(server: MCPServer[Any], store: Any,
                         embedder: Embedder | None = None) -> None:
    """The thread and long-term memory tools, on ``store()`` (a
    RedisMemoryStore); with ``embedder``, memories are kept with their
    vector and recalled by meaning and words."""

    @server.tool(description="Append EVENTS to a conversation thread, in order: each a JSON "
                             "object stored as one event whose payload is the object; its "
                             "'type' member (a text) is the event's type, else 'message'. "
                             "Returns the new events' {ids}.")
    async def thread_append(
            thread_id: Thread,
            events: Annotated[list[dict[str, Any]], Field(
                description="The events, oldest first.", min_length=1,
                max_length=limits.MAX_EVENTS_PER_CALL)]) -> dict[str, Any]:
        now = now_ms()
        made = [MemoryEvent(new_id("ev"), thread_id, None,
                            body["type"] if isinstance(body.get("type"), str) else "message",
                            now, body) for body in events]
        with tool_errors():
            await store().append_events(thread_id, made)
        return {"ids": [event.id for event in made]}

    @server.tool(description="The newest events of a conversation thread, oldest first: "
                             "each {id, type, timestamp (ms), payload}.")
    async def thread_recent(
            thread_id: Thread,
            limit: Annotated[int, Field(description="At most this many events.", ge=1,
                                        le=1000)] = 20) -> dict[str, Any]:
        with tool_errors():
            found = await store().get_recent_events(thread_id, limit)
        return {"events": [{"id": e.id, "type": e.type, "timestamp": e.timestamp,
                            "payload": e.payload} for e in found]}

    @server.tool(description="Keep TEXT as a long-term memory (of USER_ID, or shared), "
                             "found again by recall. Give MEMORY_ID to replace that memory. "
                             "Returns its {memory_id}.")
    async def remember(
            text: Annotated[str, Field(description="What to remember.", min_length=1,
                                       max_length=limits.MAX_VALUE_BYTES)],
            user_id: User = None,
            topics: Annotated[list[str] | None, Field(description="Labels for it.",
                                                      max_length=50)] = None,
            memory_id: Annotated[str | None, Field(description="The memory to replace.",
                                                   min_length=1,
                                                   max_length=limits.MAX_KEY_BYTES)] = None
    ) -> dict[str, Any]:
        now = now_ms()
        record = LongTermMemory(memory_id or new_id("mem"), user_id, "knowledge", {}, text,
                                list(topics or []), {}, now, now)
        with tool_errors(record.id):
            embedding = await embedder.embed(text) if embedder is not None else None
            await store().upsert_long_term_memory(record, embedding=embedding)
        return {"memory_id": record.id}

    how = ("Text search ranked by BM25 (no embedding model is configured): use the words the "
           "memory has." if embedder is None else
           f"Ranked by meaning (embedder {embedder.name}, cosine similarity at least "
           f"{RECALL_MIN_SIMILARITY}) and by words (BM25), fused by reciprocal rank: other "
           "words of the same meaning find a memory too.")

    @server.tool(description="The long-term memories (of USER_ID, or shared) that match "
                             "QUERY, best first: {memories: [{memory_id, text, topics, "
                             f"score}}]}}. {how}")
    async def recall(
            query: Annotated[str, Field(description="What to look for.", min_length=1,
                                        max_length=4096)],
            user_id: User = None,
            limit: Annotated[int, Field(description="At most this many memories.", ge=1,
                                        le=100)] = 5) -> dict[str, Any]:
        if not query.strip():
            raise ToolError("invalid_argument: the query is empty: give the words to look for")
        with tool_errors():
            found = await store().search_long_term_memory_text(user_id, query, limit=limit)
            if embedder is None:
                ranked = dict(bm25_rank(query, [(m.id, m.text) for m in found], limit))
                scored = [(m, ranked.get(m.id, 0.0)) for m in found]
            else:
                near = await store().search_long_term_memory_vector(
                    user_id, await embedder.embed(query), limit=limit,
                    min_score=RECALL_MIN_SIMILARITY)
                scored = fused([found, [m for m, _ in near]])[:limit]
        return {"memories": [{"memory_id": m.id, "text": m.text, "topics": m.tags,
                              "score": round(score, 4)} for m, score in scored]}

    @server.tool(description="Forget the long-term memory MEMORY_ID (of USER_ID, or shared). "
                             "Returns {memory_id}; forgetting one that is not there changes "
                             "nothing.")
    async def forget(
            memory_id: Annotated[str, Field(description="The memory, as remember returned.",
                                            min_length=1, max_length=limits.MAX_KEY_BYTES)],
            user_id: User = None) -> dict[str, Any]:
        with tool_errors(memory_id):
            await store().delete_long_term_memory(user_id, memory_id)
        return {"memory_id": memory_id}


RECALL_MIN_SIMILARITY = 0.25
"""A memory found by meaning alone is recalled from this cosine similarity on
(WordLlama: related texts 0.3-0.8, unrelated below 0.1)."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al., 2009)."""


def fused(rankings: list[list[LongTermMemory]]) -> list[tuple[LongTermMemory, float]]:
    """The memories of several best-first rankings, by reciprocal rank
    fusion: each scores the sum of 1 / (RRF_K + its rank) over the rankings
    that hold it; ties by id."""
    scores: dict[str, float] = {}
    records: dict[str, LongTermMemory] = {}
    for ranking in rankings:
        for rank, memory in enumerate(ranking, start=1):
            scores[memory.id] = scores.get(memory.id, 0.0) + 1.0 / (RRF_K + rank)
            records.setdefault(memory.id, memory)
    best = sorted(scores, key=lambda mid: (-scores[mid], mid))
    return [(records[mid], scores[mid]) for mid in best]


def bearer_only(app: Any, token: str) -> Any:
    """``app`` (ASGI) answering 401 to an HTTP request without ``Authorization:
    Bearer <token>`` (compared in constant time)."""
    wanted = f"Bearer {token}".encode()

    async def guarded(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, wanted):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer")]})
                await send({"type": "http.response.body",
                            "body": b'{"error": "a bearer token is required"}'})
                return
        await app(scope, receive, send)

    return guarded


async def serve_http(server: MCPServer[Any], host: str, port: int, token: str | None) -> None:
    """The server over streamable HTTP at ``http://host:port/mcp``; with
    ``token``, only to requests that carry it."""
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if token is not None:
        app = bearer_only(app, token)
    config = uvicorn.Config(app, host=host, port=port, log_level="warning")
    await uvicorn.Server(config).serve()


def _event(event: Any) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(event).items() if v is not None}


def _version() -> str:
    from . import __version__

    return __version__
