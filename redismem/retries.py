"""How calls are sent again after a lost connection or a timeout.

Every call is safe to send again: reads change nothing, and each value and
vector write carries a request id that the library applies once
(``lua/lib/55_requests.lua``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

from redis.asyncio.retry import Retry
from redis.backoff import EqualJitterBackoff
from redis.exceptions import (
    AuthenticationError,
    ClusterDownError,
    ClusterError,
    RedisClusterUnreachableError,
    SlotNotCoveredError,
    TryAgainError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from .errors import UnavailableError

T = TypeVar("T")

RETRIES = 10
"""How often a call to a single server is sent again, waiting 50 ms,
100 ms, ... up to 2 s in between (each wait between half and all of
that): 5.6 to 11.2 s of waiting in all, enough for a restart."""
SOCKET_TIMEOUT = 5.0
"""Seconds to wait for a reply (or a connection) before the attempt counts
as lost; ``?socket_timeout=`` in the URL overrides it. All attempts of one
call end within about 70 s, inside the two minutes a write's request id is
remembered."""


def backoff() -> EqualJitterBackoff:
    return EqualJitterBackoff(cap=2.0, base=0.05)


def retry() -> Retry:
    """redis-py's retry policy for a standalone client (a refused login is
    not retried)."""
    return Retry(backoff(), RETRIES, is_retryable=_not_a_refused_login)


def _not_a_refused_login(exc: Exception) -> bool:
    """redis-py's AuthenticationError is a ConnectionError, but a refused
    login is final: sending it again made a wrong password take 10 s."""
    return not isinstance(exc, AuthenticationError)


LOST = (RedisConnectionError, RedisTimeoutError, ClusterDownError, SlotNotCoveredError,
        TryAgainError, RedisClusterUnreachableError)
"""What ends an attempt without an answer: a lost connection or timeout, a
cluster whose slot owner is failing over, a slot being moved to another
node (TRYAGAIN: some of a call's keys have moved, some not yet), or no
node of the cluster answering its slot map query."""


def unsettled(exc: BaseException) -> bool:
    """Whether redis-py gave up on a cluster call because its slot was moving:
    TRYAGAIN, MOVED or ASK answered until the call's redirect budget ran out
    ("TTL exhausted"). No node ran the call."""
    return isinstance(exc, ClusterError) and "TTL exhausted" in str(exc)



CLUSTER_TIMEOUT = 15.0
"""Seconds a cluster call keeps being sent again while its slot's owner is
unreachable or failing over: ``cluster-node-timeout`` (15 s by default)
plus an election is usually over well within twice that; the cluster the
tests start fails over in about 3 s."""


async def persistently(attempt: Callable[[], Awaitable[T]], *,
                       between: Callable[[], Awaitable[None]] | None = None,
                       timeout: float = CLUSTER_TIMEOUT,
                       what: Callable[[BaseException], tuple[str, str | None, int | None]]
                       | None = None) -> T:
    """``attempt()``, made again after a :data:`LOST` error (or a write on a
    connection another task closed, :func:`closed_writer`) with
    :func:`backoff` waits until ``timeout`` seconds have passed; ``between``
    runs after each wait, before the next attempt.

    Raises:
        UnavailableError: no attempt got an answer within ``timeout``;
            ``what(last_error)`` gives (the call's name, the node, the slot)
            for its message. The last redis-py error is its ``__cause__``.
    """
    waits = backoff()
    deadline = time.monotonic() + timeout
    tries = 0
    while True:
        try:
            return await attempt()
        except AuthenticationError:
            raise  # a refused login: final
        except LOST as exc:
            last: BaseException = exc
        except ClusterError as exc:
            if not unsettled(exc):
                raise
            last = exc
        except (AttributeError, TypeError) as exc:
            if not closed_writer(exc):
                raise
            last = exc
        tries += 1
        pause = waits.compute(tries)
        if time.monotonic() + pause > deadline:
            raise unavailable(last, timeout, what) from last
        await asyncio.sleep(pause)
        if between is not None:
            await between()


def unavailable(last: BaseException, timeout: float,
                what: Callable[[BaseException], tuple[str, str | None, int | None]] | None = None
                ) -> UnavailableError:
    """The UnavailableError for a call that got no answer within ``timeout`` s."""
    name, node, slot = what(last) if what is not None else ("the call", None, None)
    node = node or node_of(last)
    where = "".join((f" from {node}" if node else "",
                     f" (owner of slot {slot})" if slot is not None else ""))
    return UnavailableError(
        f"{name} got no answer{where} within {timeout:g} s "
        f"({type(last).__name__}: {last}); a write's outcome is unknown, and sending it "
        "again is safe", node=node, slot=slot)


def node_of(exc: BaseException) -> str | None:
    """``host:port`` of the node redis-py says an error came from, if it says."""
    node = getattr(exc, "connection", None)
    name = getattr(node, "name", None)
    return name if isinstance(name, str) else None


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
