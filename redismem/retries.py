"""How calls are sent again after a lost connection or a timeout.

Every call is safe to send again: reads change nothing, and each value and
vector write carries a request id that the library applies once
(``lua/lib/55_requests.lua``).
"""

from __future__ import annotations

from redis.asyncio.retry import Retry
from redis.backoff import EqualJitterBackoff

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
