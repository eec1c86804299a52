"""The synchronous facade: the same API without ``await``, for tool callbacks
and scripts that are not async.

    import redismem.sync

    with redismem.sync.connect() as mem:
        notes = mem.session("s-42")
        first = notes.set("notes", ["pack passports"], ttl_seconds=3600)
        notes.set("notes", ["pack passports", "visa"], expected_revision=first)
        with notes.turn() as turn:          # async with -> with
            notes.append("log", turn.token)
        for event in mem.watch("no*", after=0):   # async for -> for
            break

``connect()`` and ``RedisMemoryStore()`` here return proxies of the async
objects: every method call runs on an event loop of their own, in a
thread, and returns its result; an async context manager becomes a
``with`` block and an async iterator a plain one. Objects the calls return
(scopes, turns) are proxies too; values, pages and events are the same
types. One context is kept per connection, so a turn's token goes with the
later writes of that connection (from any thread) until the turn ends, and
``redismem.session_scope()`` / ``workflow_scope()`` of the calling thread
are seen by ``default()``. Do not call a proxy from inside a callback it
runs (an ``update`` function, a listener): that thread is the event loop's.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from types import TracebackType
from typing import Any, TypeVar

from . import memory as _memory
from .memory import Memory
from .scope import MemoryScope
from .store import RedisMemoryStore as _AsyncStore
from .turns import Turn, TurnContext

T = TypeVar("T")

_PROXIED = (Memory, MemoryScope, _AsyncStore, Turn, TurnContext)
"""The facade's objects, which calls hand back as proxies."""


class _Runner:
    """An event loop in a daemon thread, and the one context its calls share."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.context = contextvars.copy_context()
        self.thread = threading.Thread(target=self.loop.run_forever, name="redismem-sync",
                                       daemon=True)
        self.thread.start()
        self.closed = False

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run ``coro`` on the loop, in the shared context; its result (as is)."""
        if threading.current_thread() is self.thread:
            coro.close()
            raise RuntimeError("a redismem.sync object was called from its own event loop "
                               "(inside an update function or a listener): use the async "
                               "object there")
        if self.closed:
            coro.close()
            raise RuntimeError("this redismem.sync connection is closed")
        # the caller's active session and workflow (session_scope, workflow_scope)
        chosen = (_memory.current_session(), _memory.current_workflow())
        return asyncio.run_coroutine_threadsafe(self._in_context(coro, chosen),
                                                self.loop).result()

    async def _in_context(self, coro: Coroutine[Any, Any, T],
                          chosen: tuple[str | None, str | None]) -> T:
        task = self.loop.create_task(self._chosen(coro, chosen), context=self.context)
        return await task

    @staticmethod
    async def _chosen(coro: Coroutine[Any, Any, T], chosen: tuple[str | None, str | None]) -> T:
        _memory._active_session.set(chosen[0])
        _memory._active_workflow.set(chosen[1])
        return await coro

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """``fn(*args, **kwargs)`` run on the loop (a coroutine is awaited)."""
        async def on_loop() -> Any:
            result = fn(*args, **kwargs)
            if inspect.isawaitable(result) and not _iterable(result):
                return await result
            return _Returned(result)  # not awaited: an async iterator, an object

        result = self.run(on_loop())
        return self.wrap(result.value if isinstance(result, _Returned) else result)

    def wrap(self, value: Any) -> Any:
        if isinstance(value, _PROXIED):
            return _Sync(value, self)
        if _iterable(value):
            return self._iterate(value)
        return value

    def _iterate(self, iterable: Any) -> Iterator[Any]:
        iterator = iterable.__aiter__()
        try:
            while True:
                try:
                    item = self.run(_next(iterator))
                except StopAsyncIteration:
                    return
                yield self.wrap(item)
        finally:
            close = getattr(iterator, "aclose", None)
            if close is not None and not self.closed:
                self.run(close())

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join()
            self.loop.close()


class _Returned:
    """A plain result of a call made on the loop (not to be awaited)."""

    def __init__(self, value: Any) -> None:
        self.value = value


def _iterable(value: Any) -> bool:
    return hasattr(value, "__aiter__") and not hasattr(value, "__aenter__")


async def _next(iterator: Any) -> Any:
    return await iterator.__anext__()


class _Sync:
    """A synchronous proxy of one of the facade's async objects."""

    __slots__ = ("_owner", "_runner", "_target")

    def __init__(self, target: Any, runner: _Runner, owner: bool = False) -> None:
        self._target = target
        self._runner = runner
        self._owner = owner  # closes the runner when closed

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._target, name)
        if not callable(value):
            return self._runner.wrap(value)

        def call(*args: Any, **kwargs: Any) -> Any:
            result = self._runner.call(value, *args, **kwargs)
            if name in ("close", "aclose") and self._owner:
                self._runner.close()
            return result

        call.__name__ = name
        call.__doc__ = value.__doc__
        return call

    def __repr__(self) -> str:
        return f"redismem.sync({self._target!r})"

    def __enter__(self) -> Any:
        entered = self._runner.run(_awaited(self._target.__aenter__()))
        return self if entered is self._target else self._runner.wrap(entered)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self._runner.run(_awaited(self._target.__aexit__(exc_type, exc, tb)))
        finally:
            if self._owner:
                self._runner.close()


async def _awaited(value: Awaitable[T]) -> T:
    return await value


def connect(url: str | None = None, **options: Any) -> Any:
    """``redismem.connect()`` without ``await``: a synchronous proxy of the
    Memory (use it in a ``with`` block, or call ``close()``). Takes the
    same arguments and raises the same errors."""
    runner = _Runner()
    try:
        found = runner.run(_memory.connect(url, **options))
    except BaseException:
        runner.close()
        raise
    return _Sync(found, runner, owner=True)


def RedisMemoryStore(url: str | None = None, **options: Any) -> Any:
    """``redismem.RedisMemoryStore`` without ``await``: a synchronous proxy
    (``setup()`` or a ``with`` block connects; ``close()`` or the end of
    the block closes it)."""
    runner = _Runner()
    return _Sync(_AsyncStore(url, **options), runner, owner=True)
