"""How calls are sent again after a lost connection or a timeout.

Every call is safe to send again: reads change nothing, and each value and
vector write carries a request id that the library applies once
(``lua/lib/55_requests.lua``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.asyncio.retry import Retry
from redis.backoff import EqualJitterBackoff
from redis.exceptions import ClusterDownError, ClusterError, SlotNotCoveredError, TryAgainError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

T = TypeVar("T")

RETRIES = 10
"""How often a call is sent again, waiting 50 ms, 100 ms, ... up to 2 s in
between (each wait between half and all of that): 5.6 to 11.2 s of
waiting in all, enough for a restart or a cluster failover."""
SOCKET_TIMEOUT = 5.0
"""Seconds to wait for a reply (or a connection) before the attempt counts
as lost; ``?socket_timeout=`` in the URL overrides it. All attempts of one
call end within about 70 s, inside the two minutes a write's request id is
remembered."""


def backoff() -> EqualJitterBackoff:
    return EqualJitterBackoff(cap=2.0, base=0.05)


def retry() -> Retry:
    """redis-py's retry policy for a standalone client."""
    return Retry(backoff(), RETRIES)


LOST = (RedisConnectionError, RedisTimeoutError, ClusterDownError, SlotNotCoveredError,
        TryAgainError)
"""What ends an attempt without an answer: a lost connection or timeout, a
cluster whose slot owner is failing over, or a slot being moved to another
node (TRYAGAIN: some of a call's keys have moved, some not yet)."""


def unsettled(exc: BaseException) -> bool:
    """Whether redis-py gave up on a cluster call because its slot was moving:
    TRYAGAIN, MOVED or ASK answered until the call's redirect budget ran out
    ("TTL exhausted"). No node ran the call."""
    return isinstance(exc, ClusterError) and "TTL exhausted" in str(exc)


async def persistently(attempt: Callable[[], Awaitable[T]], *,
                       between: Callable[[], Awaitable[None]] | None = None) -> T:
    """``attempt()``, made again after a :data:`LOST` error (or a write on a
    connection another task closed, :func:`closed_writer`), up to
    :data:`RETRIES` times with :func:`backoff` waits; ``between`` runs after
    each wait, before the next attempt. The last error is raised."""
    waits = backoff()
    for tries in range(RETRIES + 1):
        try:
            return await attempt()
        except LOST:
            if tries == RETRIES:
                raise
        except ClusterError as exc:
            if tries == RETRIES or not unsettled(exc):
                raise
        except (AttributeError, TypeError) as exc:
            if tries == RETRIES or not closed_writer(exc):
                raise
        await asyncio.sleep(waits.compute(tries + 1))
        if between is not None:
            await between()
    raise AssertionError("unreachable")


_WRITER_FILES = ("redis/asyncio/connection.py", "asyncio/streams.py",
                 "asyncio/selector_events.py")


def closed_writer(exc: BaseException) -> bool:
    """Whether ``exc`` is asyncio's error for a write on a connection that
    another task just closed, which redis-py 8.1 lets through instead of a
    ConnectionError (redis/redis-py#3546, #4287; seen here when four
    writers shared a node that failed over)."""
    tb = exc.__traceback__
    last = None
    while tb is not None:
        last, tb = tb.tb_frame.f_code.co_filename, tb.tb_next
    return last is not None and last.replace("\\", "/").endswith(_WRITER_FILES)
