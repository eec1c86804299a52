"""Session turns: one holder at a time per session or workflow scope, each
turn with a fencing token (``lua/lib/65_turns.lua``).

A waiter does not poll: it queues (arrival order) and blocks on a list of
its own (``BLPOP``), to which whoever frees the turn pushes. It also wakes
when the holder's turn would lapse, and every third of its lease to renew
it; a waiter that is cancelled leaves the queue, one that dies is skipped
once its lease has passed (by default 1.5 s, never more than the turn's
ttl), and one that was stopped past its lease gets TurnWaitLostError when
it resumes, never the turn.

Fencing: while a turn is held, the writes to its scope made in the task
that took it (and in tasks that task starts) carry its token, and the Lua
library refuses them (StaleTurnError) once a later turn began. The held
tokens live in a context variable, so other tasks' writes carry none.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
import time
from contextvars import ContextVar
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from redis.exceptions import RedisError

from . import _validate as check
from . import keys as K
from . import limits
from ._connection import Connection
from .errors import InvalidArgumentError, RedisMemError, TurnLostError, TurnTimeoutError
from .feed import block_seconds
from .functions import admin_only, refusals
from .records import time_ms

log = logging.getLogger("redismem.turns")

WAITER_LEASE_SECONDS = 1.5
"""How long a queued waiter keeps its place without renewing it, by
default (it renews every third of this): a waiter that dies holds up those
behind it at most this long, and never longer than the turn's ttl."""

TURN_SCOPES = ("session", "workflow")

_held: ContextVar[dict[tuple[str, str, str], int] | None] = ContextVar("redismem_turns",
                                                                      default=None)
"""(namespace, scope, scope id) -> the token of the turn this task holds there."""


def token_arg(ns: str, scope: str, sid: str) -> str:
    """The token a write to this scope carries ("" when no turn is held here)."""
    held = _held.get()
    token = held.get((ns, scope, sid)) if held else None
    return "" if token is None else str(token)


def _carry(ns: str, scope: str, sid: str, token: int | None) -> None:
    """Let this task's writes to the scope carry ``token`` (None: none)."""
    held = dict(_held.get() or {})
    if token is None:
        held.pop((ns, scope, sid), None)
    else:
        held[(ns, scope, sid)] = token
    _held.set(held)


def holder_id(principal: str) -> str:
    """A fresh holder id: the principal (cut to 100 bytes) and 12 random characters."""
    short = principal.encode()[:100].decode(errors="ignore")
    return f"{short}/{secrets.token_urlsafe(9)}"


def _seconds(what: str, value: object) -> int:
    """``value`` seconds as ms, within the turn bounds."""
    low, high = limits.MIN_TURN_MS / 1000, limits.MAX_TURN_MS / 1000
    if isinstance(value, bool) or not isinstance(value, int | float) or not (
        low <= value <= high
    ):
        raise InvalidArgumentError(f"{what} must be {low:g}..{high:g} seconds, got {value!r}")
    return int(value * 1000)


def _at(epoch_ms: int) -> datetime:
    return datetime.fromtimestamp(epoch_ms / 1000, tz=UTC)


class Turn:
    """A turn held in one session or workflow scope.

    Attributes:
        token: the fencing token: strictly increasing per scope, across
            server restarts (with a durable server).
        holder: this holder's id (``<principal>/<random>``).
        expires_at: when the turn lapses unless renewed (server time, UTC).
        scope, scope_id: the scope whose turn it is.
        lost: the TurnLostError of a renewal that found the turn taken by
            another, else None.
    """

    def __init__(self, conn: Connection, scope: str, scope_id: str, holder: str, token: int,
                 expires_ms: int, ttl_ms: int) -> None:
        self._conn = conn
        self.scope = scope
        self.scope_id = scope_id
        self.holder = holder
        self.token = token
        self.expires_at = _at(expires_ms)
        self.lost: TurnLostError | None = None
        self._ttl_ms = ttl_ms
        self._released = False
        self._ended = False  # released: a renewal still in flight says nothing
        self._renewer: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return (f"Turn(token={self.token}, holder={self.holder!r}, "
                f"expires_at={self.expires_at.isoformat()!r})")

    def _args(self) -> tuple[str, str, str, str, str]:
        conn = self._conn
        return conn.namespace, self.scope, self.scope_id, conn.principal, self.holder

    async def renew(self, ttl_seconds: float | None = None) -> datetime:
        """Extend the turn to ``ttl_seconds`` (default: the ttl it was taken
        with) from now; returns the new expiry.

        Raises:
            TurnLostError: the turn was released, or it lapsed and another
                holder took it; writes with its token are refused.
        """
        ttl = self._ttl_ms if ttl_seconds is None else _seconds("ttl_seconds", ttl_seconds)
        try:
            expires = await self._conn.functions.turn_renew(*self._args(), self.token, ttl)
        except TurnLostError as exc:
            self.lost = exc
            raise
        self.expires_at = _at(expires)
        return self.expires_at

    async def release(self) -> bool:
        """End the turn and wake the next waiter; stops the background
        renewal, and this task's writes no longer carry the token. Returns
        False when the turn was no longer this holder's (lost) or was
        released already. When it returns, no renewal of this turn runs."""
        await self._stop_renewing()
        if token_arg(self._conn.namespace, self.scope, self.scope_id) == str(self.token):
            _carry(self._conn.namespace, self.scope, self.scope_id, None)
        if self._released:
            return False
        released = await self._conn.functions.turn_release(*self._args(), self.token)
        self._released = True
        return released

    def keep_alive(self) -> None:
        """Renew the turn in the background, every third of its ttl, until
        :meth:`release` (or until it is found lost: then :attr:`lost` is set
        and a warning logged on ``redismem.turns``)."""
        if self._renewer is None:
            self._renewer = asyncio.get_running_loop().create_task(self._renewing())

    async def _stop_renewing(self) -> None:
        """Stop the background renewal and wait until it has: a renewal in
        flight must not outlive the turn (and report it lost while this
        worker holds its next turn)."""
        self._ended = True
        task, self._renewer = self._renewer, None
        if task is None or task is asyncio.current_task():
            return
        task.cancel()
        await asyncio.wait([task])  # raises only when this task is cancelled

    async def _renewing(self) -> None:
        interval = self._ttl_ms / 3000
        while not self._ended:
            await asyncio.sleep(interval)
            if self._ended:
                return
            try:
                await self.renew()
            except TurnLostError as exc:
                if not self._ended:
                    log.warning("%s", exc)
                return
            except (RedisError, RedisMemError, OSError) as exc:
                # a lost connection or a restarting server: try again sooner,
                # while the turn may still be held
                if self._ended:
                    return
                log.warning("could not renew turn %d of %s:%s (%s); trying again", self.token,
                            self.scope, self.scope_id, exc)
                interval = self._ttl_ms / 10000
            else:
                interval = self._ttl_ms / 3000


def _turn_scope(scope: str) -> None:
    if scope not in TURN_SCOPES:
        raise InvalidArgumentError(f"turns are taken in session and workflow scopes, "
                                   f"not {scope!r}")


def lease_ms(ttl_ms: int, waiter_lease_seconds: float | None) -> int:
    """A waiter's lease in ms: ``waiter_lease_seconds``, or by default
    WAITER_LEASE_SECONDS or the turn's ttl, whichever is shorter."""
    if waiter_lease_seconds is None:
        return min(int(WAITER_LEASE_SECONDS * 1000), ttl_ms)
    return _seconds("waiter_lease_seconds", waiter_lease_seconds)


async def acquire(conn: Connection, scope: str, scope_id: str, ttl_seconds: float,
                  wait_seconds: float | None, waiter_lease_seconds: float | None = None
                  ) -> Turn:
    """Take the turn of a session or workflow scope, waiting in the queue
    up to ``wait_seconds`` (None: for as long as it takes; 0: not at all),
    renewing its place every third of ``waiter_lease_seconds``
    (:func:`lease_ms`).

    Raises:
        InvalidArgumentError: another scope, or a ttl, wait or lease out of bounds.
        TurnTimeoutError: no turn within ``wait_seconds``.
        TurnWaitLostError: this waiter lost its place: it did not renew it
            within its lease (the process was stopped or starved), or an
            admin evicted it.
    """
    _turn_scope(scope)
    ttl_ms = _seconds("ttl_seconds", ttl_seconds)
    if wait_seconds is not None and (isinstance(wait_seconds, bool) or not isinstance(
            wait_seconds, int | float) or not 0 <= wait_seconds <= limits.MAX_TURN_MS / 1000):
        raise InvalidArgumentError(f"wait_seconds must be None or 0..{limits.MAX_TURN_MS // 1000}"
                                   f" seconds, got {wait_seconds!r}")
    lease = lease_ms(ttl_ms, waiter_lease_seconds)
    holder = holder_id(conn.principal)
    ns, principal = conn.namespace, conn.principal
    if wait_seconds == 0:
        lease = 0
    wake = K.turn_wake(ns, scope, scope_id, holder)
    loop = asyncio.get_running_loop()
    deadline = None if wait_seconds is None else loop.time() + wait_seconds
    queued = False
    try:
        while True:
            granted, who, until_ms, place = await conn.functions.turn_acquire(
                ns, scope, scope_id, principal, holder, ttl_ms, lease, queued)
            if granted:
                _carry(ns, scope, scope_id, int(who))
                return Turn(conn, scope, scope_id, holder, int(who), until_ms, ttl_ms)
            queued = place > 0
            block = lease / 3000
            if until_ms:  # wake when the holder's turn (or the first waiter's lease) lapses
                block = min(block, max(until_ms / 1000 - time.time(), 0) + 0.002)
            if deadline is not None:
                left = deadline - loop.time()
                if left <= 0:
                    raise TurnTimeoutError(
                        f"no turn of {scope}:{scope_id} within {wait_seconds} s; "
                        + (f"{who} holds it" if who else "earlier waiters come first"),
                        holder=str(who))
                block = min(block, left)
            block = block_seconds(conn.client, block)
            await conn.client.blpop([wake], timeout=max(block, 0.001))
    except BaseException:
        # leave the queue, so that the waiters behind are not held up (and
        # give back a turn granted by a call whose reply was cut off)
        with contextlib.suppress(Exception):
            await asyncio.shield(conn.functions.turn_release(ns, scope, scope_id, principal,
                                                             holder, None))
        raise


class TurnContext:
    """``async with scope.turn() as turn``: takes the turn on entry, renews
    it in the background while the block runs, releases it on exit. When
    the turn was lost before the block ended (it lapsed and another holder
    took it) and the block raised nothing, leaving raises TurnLostError."""

    def __init__(self, conn: Connection, scope: str, scope_id: str, ttl_seconds: float,
                 wait_seconds: float | None, waiter_lease_seconds: float | None = None) -> None:
        self._args = (conn, scope, scope_id, ttl_seconds, wait_seconds, waiter_lease_seconds)
        self._turn: Turn | None = None

    async def __aenter__(self) -> Turn:
        self._turn = await acquire(*self._args)
        self._turn.keep_alive()
        return self._turn

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        turn, self._turn = self._turn, None
        assert turn is not None
        try:
            released = await turn.release()
        except Exception:
            if exc is None:
                raise
            log.warning("could not release turn %d of %s:%s", turn.token, turn.scope,
                        turn.scope_id, exc_info=True)
            return
        if not released and exc is None:
            raise turn.lost or TurnLostError(
                f"turn {turn.token} of {turn.scope}:{turn.scope_id} was lost before the block "
                "ended: it lapsed and another holder took the turn")


async def evict(conn: Connection, scope: str, scope_id: str, waiter: str) -> bool:
    """Take ``waiter`` out of the queue for a turn (an admin's; recorded in
    the feed); whether it was queued.

    Raises:
        InvalidArgumentError: another scope, or a bad id.
        PermissionDeniedError: this credential is no admin of the namespace.
    """
    _turn_scope(scope)
    waiter = check.check_id("waiter", waiter)
    with admin_only("evicting a waiter", conn.namespace):
        return await conn.functions.turn_evict(conn.namespace, scope, scope_id, conn.principal,
                                               waiter)


async def states(client: Any, ns: str, scope: str | None = None, scope_id: str | None = None
                 ) -> list[dict[str, Any]]:
    """What ``redismem turns`` shows: per turn (the one named, else every
    turn ever granted in the namespace, from its registry), ``scope``,
    ``scope_id``, ``token`` (the latest), ``holder`` and ``principal`` (None
    when nobody holds it), ``expires_at`` (epoch ms, None when free) and
    ``waiters`` (how many queued waiters' leases have not passed) and
    ``queue`` (their holder ids, first first).

    Raises:
        PermissionDeniedError: this credential may not read the turns (a
            worker reads only those of its granted scopes).
    """
    target = K.turn(ns, scope, scope_id) if scope and scope_id else K.turns(ns)
    with refusals(target):
        return await _states(client, ns, scope, scope_id)


async def _states(client: Any, ns: str, scope: str | None, scope_id: str | None
                  ) -> list[dict[str, Any]]:
    if scope is not None and scope_id is not None:
        named = [(scope, scope_id)]
    else:
        members = [m.decode(errors="replace") for m in await client.zrange(K.turns(ns), 0, -1)]
        named = [(s, i) for s, _, i in (m.partition(":") for m in members)
                 if s in TURN_SCOPES and i and (scope is None or s == scope)]
    now = time_ms(await client.time())
    pipe = client.pipeline(transaction=False)
    for kind, sid in named:
        pipe.hgetall(K.turn(ns, kind, sid))
        pipe.zrange(K.turn_queue(ns, kind, sid), 0, -1)
    replies = await pipe.execute() if named else []
    rows = []
    for (kind, sid), fields, queued in zip(named, replies[::2], replies[1::2], strict=True):
        text = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in fields.items()}
        if not text:
            continue
        token = _count(text.get("token", "0"))  # a raw write may leave anything: None
        expires = _count(text.get("exp"))
        held = "holder" in text and _pending(expires, now)
        names = [w.decode(errors="replace") for w in queued]
        live = [name for name in names if _pending(_count(text.get(f"w:{name}")), now)]
        rows.append({"scope": kind, "scope_id": sid, "token": token,
                     "holder": text["holder"] if held else None,
                     "principal": text.get("by") if held else None,
                     "expires_at": expires if held else None,
                     "waiters": len(live), "queue": live})
    return rows


def _count(text: str | None) -> int | None:
    """A turn hash count as the library reads it (lua/lib/57_fence.lua)."""
    if text is None or not text.isascii() or not text.isdigit() or len(text) > 16 \
            or int(text) > limits.MAX_SEQUENCE:
        return None
    return int(text)


def _pending(at: int | None, now: int) -> bool:
    """Whether an expiry or lease ``at`` is still to come, as the library
    reads it: one further away than any call sets counts as passed."""
    return at is not None and now < at <= now + limits.MAX_TURN_MS


def problems(fields: dict[bytes, bytes], now: int, sequence: int) -> list[str]:
    """What a raw write left in a turn hash (``fields``; ``sequence``: the
    namespace's feed sequence): each makes the library refuse or ignore
    part of it. Deleting the hash frees the turn, and tokens go on from the
    feed sequence."""
    text = {k.decode(errors="replace"): v.decode(errors="replace") for k, v in fields.items()}
    found = []
    for name in ("token", "exp", "ticket"):
        if name in text and _count(text[name]) is None:
            found.append(f"its {name} is {text[name][:40]!r}, not a count: every acquire and "
                         "fenced write is refused (TURN_CORRUPT)")
    token = _count(text.get("token"))
    if token is not None and token > sequence:
        found.append(f"its token {token} is past the feed sequence {sequence}: every acquire "
                     "is refused until the sequence passes it")
    far = now + limits.MAX_TURN_MS
    expires = _count(text.get("exp"))
    if expires is not None and expires > far:
        found.append(f"its holder's expiry {expires} ms is further away than any turn lasts "
                     "(the library counts it as passed)")
    if ("holder" in text) != ("exp" in text) or ("holder" in text) != ("by" in text):
        found.append("it has only some of holder, by and exp")
    for name, lease in sorted(text.items()):
        at = _count(lease) if name.startswith("w:") else 0
        if at is None or at > far:
            found.append(f"waiter {name[2:][:80]!r} has the lease {lease[:40]!r}, which no call "
                         "sets (the library counts it as passed)")
    return found
