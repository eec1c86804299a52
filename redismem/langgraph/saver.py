"""``RedismemSaver``: LangGraph's ``BaseCheckpointSaver`` on redismem.

A LangGraph thread is a redismem session: ``thread_id`` must be a session
id (no ``:``, ``{``, ``}``, whitespace; at most 128 bytes). Each ``put`` is
one Lua call (the checkpoint, the channel values it brings and its index
entries, plus a feed event of kind ``checkpoint``), and so is each
``put_writes``; both carry the token of the thread's turn when the caller
holds it (:meth:`RedismemSaver.turn`), so a worker paused past its turn
gets ``StaleTurnError`` instead of forking the thread. Values are kept as
the bytes LangGraph's serializer makes, never as checked JSON.
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    WRITES_IDX_MAP,
    BaseCheckpointSaver,
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
    get_checkpoint_metadata,
)
from langgraph.checkpoint.serde.base import SerializerProtocol

from .. import _validate as check
from .. import keys as K
from .. import lifecycle, limits, turns
from ..errors import InvalidArgumentError
from ..memory import Memory
from . import _stored as S
from ._connections import Connections, Lifecycle

_PAGE = 100
"""Checkpoints read per round trip by list."""


class RedismemSaver(Lifecycle, BaseCheckpointSaver[str]):
    """A LangGraph checkpointer on redismem memory.

    ``RedismemSaver(memory)`` uses a connected :class:`~redismem.Memory`
    (async methods only, on its event loop); ``RedismemSaver(url=...,
    namespace=...)`` or :meth:`from_url` connects on first use (``url``
    default: ``REDISMEM_URL``), and serves the sync methods too
    (``graph.invoke``), on a connection of their own in a thread.
    ``connect_options`` go to :func:`redismem.connect`.
    """

    def __init__(self, memory: Memory | None = None, *, url: str | None = None,
                 namespace: str | None = None, serde: SerializerProtocol | None = None,
                 **connect_options: Any) -> None:
        super().__init__(serde=serde)
        self._connections = Connections(memory, url, namespace, connect_options, "RedismemSaver")
        self.namespace = self._connections.namespace

    @classmethod
    def from_url(cls, url: str, *, namespace: str = "default", **options: Any) -> RedismemSaver:
        return cls(url=url, namespace=namespace, **options)

    def turn(self, thread_id: str, ttl_seconds: float = 30, *,
             wait_seconds: float | None = None,
             waiter_lease_seconds: float | None = None) -> SaverTurn:
        """``async with saver.turn(thread_id)``: hold the thread's turn (its
        session's, as ``MemoryScope.turn``, with the same parameters);
        checkpoints and writes put inside the block carry its token, so
        once another worker took the turn, this one's puts raise
        ``StaleTurnError`` and change nothing."""
        check.check_id("thread id", thread_id)
        return SaverTurn(self, thread_id, ttl_seconds, wait_seconds, waiter_lease_seconds)

    # connections

    async def _memory(self) -> Memory:
        return await self._connections.memory()

    def _sync(self, coro: Any) -> Any:
        return self._connections.run(coro)

    # writes

    def _args(self, config: RunnableConfig) -> tuple[str, str, str]:
        """(thread id, checkpoint namespace, encoded) of a config."""
        configurable = config.get("configurable") or {}
        thread = check.check_id("thread id", configurable.get("thread_id"))
        cns = configurable.get("checkpoint_ns") or ""
        if not isinstance(cns, str) or len(cns.encode()) > limits.MAX_KEY_BYTES:
            raise InvalidArgumentError(f"checkpoint_ns must be a text of at most "
                                       f"{limits.MAX_KEY_BYTES} bytes, got {cns!r:.80}")
        return thread, cns, K.encode_part(cns)

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint,
                   metadata: CheckpointMetadata, new_versions: ChannelVersions
                   ) -> RunnableConfig:
        thread, cns, encoded = self._args(config)
        checkpoint_id = check.check_id("checkpoint id", checkpoint["id"])
        parent = config["configurable"].get("checkpoint_id") or ""
        stored: dict[str, Any] = dict(checkpoint)
        values: dict[str, Any] = stored.pop("channel_values", {})
        blobs = [(S.blob_field(channel, version),
                  S.frame(self.serde, values[channel]) if channel in values else S.EMPTY)
                 for channel, version in new_versions.items()]
        meta = get_checkpoint_metadata(config, metadata)
        run = meta.get("run_id")
        named = [S.blob_field(c, v) for c, v in checkpoint.get("channel_versions", {}).items()]
        memory = await self._memory()
        await memory._conn.functions.checkpoint_put(
            self.namespace, thread, encoded, memory.principal,
            turns.token_arg(self.namespace, "session", thread), checkpoint_id,
            check.check_id("parent checkpoint id", parent) if parent else "",
            K.encode_part(str(run)) if run else "", S.frame(self.serde, stored),
            S.frame(self.serde, meta), named, blobs)
        return {"configurable": {"thread_id": thread, "checkpoint_ns": cns,
                                 "checkpoint_id": checkpoint_id}}

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                          task_id: str, task_path: str = "") -> None:
        thread, _, encoded = self._args(config)
        checkpoint_id = check.check_id("checkpoint id", config["configurable"]["checkpoint_id"])
        by_index: dict[int, tuple[int, str, bytes]] = {}
        for i, (channel, value) in enumerate(writes):
            index = WRITES_IDX_MAP.get(channel, i)
            by_index[index] = (index, channel, S.frame(self.serde, value))  # the last one wins
        if not by_index:
            return
        memory = await self._memory()
        await memory._conn.functions.checkpoint_writes(
            self.namespace, thread, encoded, memory.principal,
            turns.token_arg(self.namespace, "session", thread), checkpoint_id,
            K.encode_part(task_id), task_path, list(by_index.values()))

    # reads

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """One read (``redismem_checkpoint_get``): the checkpoint, its writes
        and the channel values it names."""
        thread, cns, encoded = self._args(config)
        checkpoint_id = get_checkpoint_id(config) or ""
        if checkpoint_id:
            check.check_id("checkpoint id", checkpoint_id)
        memory = await self._memory()
        found = await memory._conn.functions.checkpoint_get(self.namespace, thread, encoded,
                                                            checkpoint_id)
        if found is None:
            return None
        checkpoint_id, stored, values = found
        key = K.checkpoint(self.namespace, thread, encoded, checkpoint_id)
        blobs_key = K.checkpoint_blobs(self.namespace, thread, encoded)
        return self._tuple(thread, cns, checkpoint_id, key, stored,
                           S.unframe(self.serde, stored[b"cp"], key),
                           dict(zip(stored.get(b"bl", b"").decode().split("\n"), values,
                                    strict=False)), blobs_key)[0]

    async def _load(self, client: Any, thread: str, cns: str, ids: Sequence[str]
                    ) -> list[CheckpointTuple]:
        """The stored checkpoints of ``ids`` (those that exist), in that order:
        two round trips."""
        return [found for found, _ in await self._load_with_paths(client, thread, cns, ids)]

    async def _load_with_paths(self, client: Any, thread: str, cns: str, ids: Sequence[str]
                               ) -> list[tuple[CheckpointTuple, dict[str, str]]]:
        """:meth:`_load`, with the task path of each task that wrote (a copy keeps them)."""
        encoded = K.encode_part(cns)
        keys = [K.checkpoint(self.namespace, thread, encoded, i) for i in ids]
        async with client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.hgetall(key)
            hashes = await pipe.execute()
        loaded = []
        for checkpoint_id, key, stored in zip(ids, keys, hashes, strict=True):
            if b"cp" in stored:
                loaded.append((checkpoint_id, key, stored,
                               S.unframe(self.serde, stored[b"cp"], key)))
        blobs_key = K.checkpoint_blobs(self.namespace, thread, encoded)
        async with client.pipeline(transaction=False) as pipe:
            for _, _, _, checkpoint in loaded:
                versions = checkpoint.get("channel_versions", {})
                pipe.hmget(blobs_key, [S.blob_field(c, v) for c, v in versions.items()] or [""])
            blobs = await pipe.execute()
        tuples: list[tuple[CheckpointTuple, dict[str, str]]] = []
        for (checkpoint_id, key, stored, checkpoint), values in zip(loaded, blobs, strict=True):
            fields = [S.blob_field(c, v) for c, v in checkpoint.get("channel_versions", {}).items()]
            tuples.append(self._tuple(thread, cns, checkpoint_id, key, stored, checkpoint,
                                      dict(zip(fields, values, strict=False)), blobs_key))
        return tuples

    def _tuple(self, thread: str, cns: str, checkpoint_id: str, key: str,
               stored: dict[bytes, bytes], checkpoint: dict[str, Any],
               values: dict[str, bytes | None], blobs_key: str
               ) -> tuple[CheckpointTuple, dict[str, str]]:
        """A stored checkpoint as LangGraph's tuple (``values``: blob field ->
        stored value), and its writers' task paths."""
        checkpoint["channel_values"] = {}
        for channel, version in checkpoint.get("channel_versions", {}).items():
            value = values.get(S.blob_field(channel, version))
            if value is not None and value != S.EMPTY:
                checkpoint["channel_values"][channel] = S.unframe(self.serde, value, blobs_key)
        parent = stored.get(b"parent", b"").decode()
        return (CheckpointTuple(
            config=_config(thread, cns, checkpoint_id), checkpoint=checkpoint,  # type: ignore[arg-type]
            metadata=S.unframe(self.serde, stored[b"md"], key),
            parent_config=_config(thread, cns, parent) if parent else None,
            pending_writes=S.pending_writes(self.serde, stored, key)), S.task_paths(stored))

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        client: Any = (await self._memory()).client
        if config is not None:
            threads = [self._args(config)[0]]
            wanted_ns = config["configurable"].get("checkpoint_ns")
            only = get_checkpoint_id(config)
        else:
            threads = [t.decode() for t in await client.zrange(
                K.checkpoint_threads(self.namespace), 0, -1, desc=True)]
            wanted_ns, only = None, None
        below = get_checkpoint_id(before) if before else None
        if only is not None and below is not None and only >= below:
            return
        left = limit
        for thread in threads:
            namespaces = [wanted_ns] if wanted_ns is not None else await self._namespaces(thread)
            for cns in namespaces:
                ids_key = K.checkpoint_ids(self.namespace, thread, K.encode_part(cns))
                # newest first, from just below `before` (ids sort as text)
                top, bottom = (f"[{only}", f"[{only}") if only is not None else (
                    f"({below}" if below else "+", "-")
                offset = 0
                while left is None or left > 0:
                    page = [i.decode() for i in await client.zrange(
                        ids_key, top, bottom, desc=True, bylex=True, offset=offset, num=_PAGE)]
                    if not page:
                        break
                    offset += len(page)
                    for found in await self._load(client, thread, cns, page):
                        if filter and not all(found.metadata.get(k) == v
                                              for k, v in filter.items()):
                            continue
                        yield found
                        if left is not None:
                            left -= 1
                            if left <= 0:
                                return

    # deletes and copies

    async def _drop(self, thread: str, cns: str, ids: Sequence[str],
                    keep_blobs: Sequence[str] | None = None) -> None:
        await lifecycle.drop_checkpoint_ids(
            await self._memory(), thread, K.encode_part(cns), ids,
            turns.token_arg(self.namespace, "session", thread), keep_blobs)

    async def _namespaces(self, thread: str) -> list[str]:
        client: Any = (await self._memory()).client
        return [K.decode_part(n.decode()) for n in await client.zrange(
            K.checkpoint_namespaces(self.namespace, thread), 0, -1)]

    async def _ids(self, thread: str, cns: str) -> list[str]:
        client: Any = (await self._memory()).client
        return [i.decode() for i in await client.zrange(
            K.checkpoint_ids(self.namespace, thread, K.encode_part(cns)), 0, -1)]

    async def adelete_thread(self, thread_id: str) -> None:
        """Delete every checkpoint and write of a thread, in calls of at most
        500 checkpoints (a concurrent put may land between two of them)."""
        check.check_id("thread id", thread_id)
        await lifecycle.drop_checkpoints(await self._memory(), thread_id,
                                         turns.token_arg(self.namespace, "session", thread_id))

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """Delete the checkpoints (and their writes) that these runs put."""
        client: Any = (await self._memory()).client
        for run in run_ids:
            run_key = K.checkpoint_run(self.namespace, K.encode_part(str(run)))
            groups: dict[tuple[str, str], list[str]] = {}
            for member in await client.zrange(run_key, 0, -1):
                thread, cns, checkpoint_id = member.decode().split(":")
                groups.setdefault((thread, K.decode_part(cns)), []).append(checkpoint_id)
            for (thread, cns), ids in groups.items():
                await self._drop(thread, cns, ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """Put every checkpoint of one thread, oldest first, with its writes,
        into another (each put one call; the copy as a whole is not atomic)."""
        check.check_id("thread id", target_thread_id)
        client: Any = (await self._memory()).client
        for cns in await self._namespaces(source_thread_id):
            ids = await self._ids(source_thread_id, cns)
            for first in range(0, len(ids), _PAGE):
                for found, paths in await self._load_with_paths(
                        client, source_thread_id, cns, ids[first:first + _PAGE]):
                    await self._copy(found, paths, target_thread_id, cns)

    async def _copy(self, found: CheckpointTuple, paths: dict[str, str], target: str,
                    cns: str) -> None:
        parent = found.parent_config["configurable"]["checkpoint_id"] if found.parent_config \
            else None
        config = _config(target, cns, parent)
        checkpoint = found.checkpoint
        stored = await self.aput(config, checkpoint, found.metadata,
                                 dict(checkpoint.get("channel_versions", {})))
        tasks: dict[tuple[str, str], list[tuple[str, Any]]] = {}
        for task_id, channel, value in found.pending_writes or []:
            tasks.setdefault((task_id, paths.get(task_id, "")), []).append((channel, value))
        for (task_id, path), writes in tasks.items():
            await self.aput_writes(stored, writes, task_id, path)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """``keep_latest``: keep each namespace's newest checkpoint (its
        writes, and only the channel values it names); ``delete``: delete
        the threads."""
        if strategy not in ("keep_latest", "delete"):
            raise InvalidArgumentError(f"strategy must be keep_latest or delete, got {strategy!r}")
        for thread in thread_ids:
            if strategy == "delete":
                await self.adelete_thread(thread)
                continue
            check.check_id("thread id", thread)
            client: Any = (await self._memory()).client
            for cns in await self._namespaces(thread):
                ids = await self._ids(thread, cns)
                if len(ids) < 2:
                    continue
                latest = await self._load(client, thread, cns, ids[-1:])
                if not latest:
                    continue
                versions = latest[0].checkpoint.get("channel_versions", {})
                await self._drop(thread, cns, ids[:-1],
                                 [S.blob_field(c, v) for c, v in versions.items()])

    # the sync methods, for graph.invoke

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self._sync(self.aget_tuple(config))  # type: ignore[no-any-return]

    def list(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
             before: RunnableConfig | None = None, limit: int | None = None
             ) -> Iterator[CheckpointTuple]:
        async def collect() -> list[CheckpointTuple]:
            return [t async for t in self.alist(config, filter=filter, before=before,
                                                limit=limit)]
        return iter(self._sync(collect()))

    def put(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
            new_versions: ChannelVersions) -> RunnableConfig:
        return self._sync(self.aput(config, checkpoint, metadata, new_versions))  # type: ignore[no-any-return]

    def put_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]],
                   task_id: str, task_path: str = "") -> None:
        self._sync(self.aput_writes(config, writes, task_id, task_path))

    def delete_thread(self, thread_id: str) -> None:
        self._sync(self.adelete_thread(thread_id))

    def delete_for_runs(self, run_ids: Sequence[str]) -> None:
        self._sync(self.adelete_for_runs(run_ids))

    def copy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        self._sync(self.acopy_thread(source_thread_id, target_thread_id))

    def prune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        self._sync(self.aprune(thread_ids, strategy=strategy))

    def get_next_version(self, current: str | None, channel: None) -> str:
        """As InMemorySaver: a zero-padded counter (versions sort as text) and
        a random fraction."""
        number = 0 if current is None else int(str(current).split(".")[0])
        return f"{number + 1:032}.{random.random():016}"


class SaverTurn:
    """``async with saver.turn(thread) as turn``: the thread's session turn
    (a :class:`~redismem.turns.Turn`), taken on the caller's event loop."""

    def __init__(self, saver: RedismemSaver, thread: str, ttl: float,
                 wait: float | None, lease: float | None = None) -> None:
        self._saver, self._thread, self._ttl, self._wait = saver, thread, ttl, wait
        self._lease = lease
        self._inner: turns.TurnContext | None = None

    async def __aenter__(self) -> turns.Turn:
        memory = await self._saver._memory()
        self._inner = memory.session(self._thread).turn(
            self._ttl, wait_seconds=self._wait, waiter_lease_seconds=self._lease)
        return await self._inner.__aenter__()

    async def __aexit__(self, *exc: Any) -> Any:
        assert self._inner is not None
        return await self._inner.__aexit__(*exc)


def _config(thread: str, cns: str, checkpoint_id: str | None) -> RunnableConfig:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": cns,
                             "checkpoint_id": checkpoint_id}}
