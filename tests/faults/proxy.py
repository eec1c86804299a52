"""A TCP proxy between clients and the server that can lose replies.

It forwards every byte both ways. When ``lose(command)`` says so for a
command a client sent, the server still runs the command, but its reply is
swallowed and the client's connection closed: the client cannot tell
whether its call happened, the case a retried write must survive.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


def is_fcall(command: bytes) -> bool:
    """A call of one of the library's functions (``FCALL <name> ...``)."""
    return b"\r\nFCALL\r\n" in command[:32]


class Proxy:
    def __init__(self, upstream_port: int, lose: Callable[[bytes], bool]) -> None:
        self.upstream_port = upstream_port
        self.lose = lose
        self.lost = 0
        self._server: asyncio.Server | None = None
        self._serving: set[asyncio.Task[None]] = set()

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.sockets[0].getsockname()[1])

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def close(self) -> None:
        """Stop listening and close every connection."""
        assert self._server is not None
        self._server.close()
        for task in self._serving:
            task.cancel()
        await asyncio.gather(*self._serving, return_exceptions=True)
        await self._server.wait_closed()

    async def _serve(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        me = asyncio.current_task()
        assert me is not None
        self._serving.add(me)
        try:
            await self._forward(client_r, client_w)
        finally:
            self._serving.discard(me)
            client_w.close()
            await asyncio.gather(client_w.wait_closed(), return_exceptions=True)

    async def _forward(self, client_r: asyncio.StreamReader,
                       client_w: asyncio.StreamWriter) -> None:
        try:
            server_r, server_w = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        except OSError:  # the server is down: so is this connection
            return
        swallow = asyncio.Event()  # the next reply is to be lost

        async def upstream() -> None:
            while chunk := await client_r.read(65536):
                if self.lose(chunk):
                    swallow.set()
                server_w.write(chunk)
                await server_w.drain()

        async def downstream() -> None:
            while reply := await server_r.read(65536):
                if swallow.is_set():
                    self.lost += 1
                    return  # the server ran the command; the client never hears of it
                client_w.write(reply)
                await client_w.drain()

        tasks = [asyncio.create_task(upstream()), asyncio.create_task(downstream())]
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            server_w.close()
            await asyncio.gather(server_w.wait_closed(), return_exceptions=True)


class ThreadedProxy:
    """A :class:`Proxy` on an event loop of its own thread, for a process
    that is not async (the nemesis). ``lose_for(seconds)`` loses the reply
    of every library call sent in that time."""

    def __init__(self, upstream_port: int) -> None:
        self._until = 0.0
        self._loop = asyncio.new_event_loop()
        self.proxy = Proxy(upstream_port, self._losing)
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self.proxy.start(), self._loop).result()

    def _losing(self, command: bytes) -> bool:
        return is_fcall(command) and self._loop.time() < self._until

    def lose_for(self, seconds: float) -> None:
        def arm() -> None:
            self._until = self._loop.time() + seconds
        self._loop.call_soon_threadsafe(arm)

    @property
    def port(self) -> int:
        return self.proxy.port

    def close(self) -> None:
        asyncio.run_coroutine_threadsafe(self.proxy.close(), self._loop).result()
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join()
        self._loop.close()
