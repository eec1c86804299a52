"""The connections of RedismemSaver and RedismemStore: a given Memory (for
the async methods, on its event loop), or one opened per event loop from
a URL; the sync methods (``graph.invoke``) run on an event loop of their
own in a thread (``redismem.sync``)."""

from __future__ import annotations

import asyncio
import os
from typing import Any, Self

from .. import _validate as check
from ..errors import InvalidArgumentError
from ..memory import Memory, connect


class Connections:
    """Per event loop, the Memory a saver or store works through."""

    def __init__(self, memory: Memory | None, url: str | None, namespace: str | None,
                 options: dict[str, Any], what: str) -> None:
        if memory is not None and (url is not None or namespace is not None):
            raise InvalidArgumentError("give a Memory, or a url and a namespace, not both")
        self.given = memory
        self.url = url if url is not None else os.environ.get("REDISMEM_URL")
        self.namespace = memory.namespace if memory is not None else check.check_id(
            "namespace", namespace or "default")
        self.options = options
        self.what = what
        self.memories: dict[asyncio.AbstractEventLoop, Memory] = {}
        self.runner: Any = None

    async def memory(self) -> Memory:
        """The Memory of the running event loop (connected on first use)."""
        loop = asyncio.get_running_loop()
        memory = self.memories.get(loop)
        if memory is None:
            if self.given is not None and (self.runner is None or loop is not self.runner.loop):
                memory = self.given
            else:
                memory = await connect(self.url, namespace=self.namespace, **self.options)
            self.memories[loop] = memory
        return memory

    def run(self, coro: Any) -> Any:
        """Run ``coro`` on the sync methods' event loop; its result."""
        if self.given is not None and self.url is None:
            coro.close()
            raise InvalidArgumentError(f"a {self.what} made from a Memory serves the async "
                                       "methods; for sync ones (invoke) give a url")
        if self.runner is None:
            from ..sync import _Runner

            self.runner = _Runner()
        return self.runner.run(coro)

    async def aclose(self) -> None:
        """Close the connections opened here (not a given Memory), each on
        its own event loop."""
        memories, self.memories = self.memories, {}
        runner, self.runner = self.runner, None
        current = asyncio.get_running_loop()
        for loop, memory in memories.items():
            if memory is self.given:
                continue
            if loop is current:
                await memory.close()
            elif runner is not None and loop is runner.loop:
                await asyncio.to_thread(runner.run, memory.close())
        if runner is not None:
            runner.close()

    def close(self) -> None:
        """Close the connection of the sync methods."""
        runner, self.runner = self.runner, None
        if runner is None:
            return
        memory = self.memories.pop(runner.loop, None)
        if memory is not None and memory is not self.given:
            runner.run(memory.close())
        runner.close()


class Lifecycle:
    """setup, close and ``async with`` of a saver or store over its
    :class:`Connections` (``self._connections``)."""

    _connections: Connections

    async def asetup(self) -> None:
        """Connect now (and load the Lua library when the server lacks it)."""
        await self._connections.memory()

    def setup(self) -> None:
        self._connections.run(self.asetup())

    async def aclose(self) -> None:
        """Close the connections opened here (not a given Memory)."""
        await self._connections.aclose()

    def close(self) -> None:
        """Close the connection of the sync methods (``aclose`` closes all)."""
        self._connections.close()

    async def __aenter__(self) -> Self:
        await self.asetup()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()
