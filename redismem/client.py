"""Opening a client for a URL: the embedded server's, a single server, a
Redis Cluster (with its routing of library and search calls) or the
in-process ``memory://``; and what is learnt from the server before the
first call: its capabilities, its eviction policy, the connection's user."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import time
from typing import Any, cast
from urllib.parse import urlsplit, urlunsplit

from redis._parsers.commands import (
    AsyncCommandsParser,
    CommandPolicies,
    RequestPolicy,
    ResponsePolicy,
)
from redis.asyncio import Redis
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.connection import parse_url
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.commands.policies import (
    AsyncBasePolicyResolver,
    AsyncPolicyResolver,
    AsyncStaticPolicyResolver,
)
from redis.exceptions import AuthenticationError, ResponseError

from . import _validate as check
from . import server
from ._packing import fast_packing, packed_class, packs_plainly
from .errors import (
    EvictionPolicyError,
    InvalidArgumentError,
    InvalidUrlError,
    PermissionDeniedError,
    UnavailableError,
)
from .limits import CONNECT_TIMEOUT, CONNECT_TIMEOUT_ENV
from .retries import (
    CLUSTER_TIMEOUT,
    LOST,
    SOCKET_TIMEOUT,
    backoff,
    node_of,
    persistently,
    retry,
)
from .topology import first_answer, nodes_from, on_namespace_node, slot_owner
from .types import Capabilities

MEMORY_URL = "memory://"

_SECRET_PARAM = re.compile(r"(?i)([?&]password=)[^&#]*")


def redact(url: str) -> str:
    """``url`` fit to print or log: a password in it (``user:password@`` or
    ``?password=``) becomes ``***``."""
    scheme, sep, rest = url.partition("://")
    if sep:
        end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
        netloc, tail = rest[:end], rest[end:]
        userinfo, at, hosts = netloc.rpartition("@")
        user, colon, _ = userinfo.partition(":")
        if at and colon:
            url = f"{scheme}://{user}:***@{hosts}{tail}"
    return _SECRET_PARAM.sub(r"\1***", url)


def _memory_client() -> Redis:
    import fakeredis

    return cast(Redis, fakeredis.FakeAsyncRedis(server=fakeredis.FakeServer()))


async def resolve_url(url: str | None) -> str:
    """``url``, else ``REDISMEM_URL``, else the embedded server's (started if needed)."""
    if url:
        return url
    env = os.environ.get("REDISMEM_URL")
    if env:
        return env
    return await asyncio.to_thread(server.ensure_running)


MAX_CONNECTIONS = 10_000
"""Connections a Memory may open (redis-py's default of 100 made a burst of
concurrent calls fail with "Too many connections"; a blocking pool avoids
that too but costs ~9 us on every call). Redis' own maxclients is 10,000."""


CLUSTER_SCHEMES = {"redis+cluster": "redis", "rediss+cluster": "rediss"}
"""URL schemes of a Redis Cluster, and the scheme of one of its nodes."""
SCHEMES = ("redis", "rediss", "unix", *CLUSTER_SCHEMES)
"""The URL schemes of a server (``memory://`` aside)."""


_BY_INDEX_NAME = CommandPolicies(request_policy=RequestPolicy.DEFAULT_KEYED,
                                 response_policy=ResponsePolicy.DEFAULT_KEYED)


class _IndexRouting(AsyncBasePolicyResolver):
    """Sends the search module's commands on one index to the node of the
    index name's slot. redis-py 8 sends them to a random primary, right for
    a cluster whose search coordinator spreads every index over all shards;
    here each node's indexes are its own (an index name carries its
    namespace's hash tag), so 2 of 3 calls were answered MOVED, and every
    fifth MOVED made redis-py close and reopen all its connections."""

    COMMANDS = ("aggregate", "alter", "create", "dropindex", "explain", "info", "profile",
                "search", "spellcheck", "tagvals")

    def __init__(self, fallback: AsyncPolicyResolver | None = None) -> None:
        super().__init__({"ft": dict.fromkeys(self.COMMANDS, _BY_INDEX_NAME)},
                         fallback or AsyncStaticPolicyResolver())

    def with_fallback(self, fallback: AsyncPolicyResolver) -> AsyncPolicyResolver:
        return _IndexRouting(fallback)


class _FunctionKeys(AsyncCommandsParser):
    """Reads the keys of an ``FCALL``/``FCALL_RO`` from its arguments (the
    function name, the number of keys, the keys). redis-py asks the server
    instead (``COMMAND GETKEYS``, every argument sent again): a second round
    trip before every library call. Its command table is read from the
    first node that answers: redis-py asks only the default node, which may
    be a primary that just died."""

    def __init__(self, cluster: RedisCluster) -> None:
        super().__init__()
        self._cluster = cluster

    async def initialize(self, node: ClusterNode | None = None) -> None:
        initialize = super().initialize
        await first_answer(nodes_from(self._cluster, node), initialize)

    async def get_keys(self, *args: Any) -> tuple[str, ...] | None:
        if len(args) > 3 and str(args[0]).upper() in ("FCALL", "FCALL_RO"):
            return tuple(args[3:3 + int(args[2])]) or None
        return await super().get_keys(*args)


class _Cluster(RedisCluster):
    """redis-py's ``RedisCluster`` whose calls wait between attempts after a
    lost node: redis-py retries at once, with the slot map re-read, which
    is over in milliseconds while a failover takes seconds. Every call is
    safe to send again (:mod:`.retries`). A call that finds no live owner
    of its slot within ``cluster_timeout`` seconds raises UnavailableError,
    naming the node and the slot, instead of redis-py's error."""

    def __init__(self, *args: Any, cluster_timeout: float = CLUSTER_TIMEOUT,
                 **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands_parser = _FunctionKeys(self)
        self.cluster_timeout = cluster_timeout
        if packs_plainly(self.connection_kwargs):  # the nodes it finds make packed connections
            packed = packed_class(self.connection_kwargs["connection_class"])
            self.connection_kwargs["connection_class"] = packed
            for node in self.nodes_manager.startup_nodes.values():
                node.connection_class = packed

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        send = super().execute_command
        return await persistently(lambda: send(*args, **kwargs), timeout=self.cluster_timeout,
                                  what=lambda exc: self._described(args, exc))

    def _described(self, args: tuple[Any, ...], exc: BaseException
                   ) -> tuple[str, str | None, int | None]:
        """(the call's name, its node, its slot) for UnavailableError."""
        if str(args[0]).upper() in ("FCALL", "FCALL_RO") and len(args) > 3 and int(args[2]):
            slot, owner = slot_owner(self, args[3])
            return f"{args[0]} {args[1]}", node_of(exc) or owner, slot
        return str(args[0]), node_of(exc), None


def _cluster_client(url: str, scheme: str, cluster_timeout: float) -> Redis:
    """redis-py's ``RedisCluster`` for ``redis+cluster://[auth@]host:port,host:port/...``
    (every listed node is a startup node; the client finds the others). Typed
    as ``Redis``: it answers the same commands, routed by key."""
    parts = urlsplit(f"{CLUSTER_SCHEMES[scheme]}://{url.split('://', 1)[1]}")
    auth, _, hosts = parts.netloc.rpartition("@")
    nodes = []
    for host in hosts.split(","):
        name, _, port = host.rpartition(":")
        if not name or not port.isdigit():
            raise InvalidArgumentError(f"a cluster URL lists host:port pairs, got {host!r}")
        nodes.append(ClusterNode(name, int(port)))
    first = urlunsplit(parts._replace(netloc=f"{auth}@{hosts.split(',')[0]}" if auth
                                      else hosts.split(",")[0]))
    options: dict[str, Any] = {"socket_timeout": SOCKET_TIMEOUT,
                               "socket_connect_timeout": SOCKET_TIMEOUT}
    options.update(parse_url(first))
    for name in ("host", "port", "db", "path"):
        options.pop(name, None)
    if options.pop("connection_class", None) is not None:  # rediss: TLS
        options["ssl"] = True
    # no retries inside redis-py's cluster client: its own loop (10 attempts,
    # up to 1 s apart) made one attempt of ours last seconds, past
    # cluster_timeout; _Cluster.execute_command retries, within the bound
    return cast(Redis, _Cluster(startup_nodes=nodes, max_connections=MAX_CONNECTIONS,
                                policy_resolver=_IndexRouting(), retry=Retry(NoBackoff(), 0),
                                cluster_timeout=cluster_timeout, **options))


connecting = logging.getLogger("redismem.connect")
"""Says, once per connect, that a server is being tried again (the command
line prints it on stderr)."""


def connect_timeout(given: float | None = None) -> float:
    """Seconds to keep trying a first connection: ``given``, else
    ``REDISMEM_CONNECT_TIMEOUT``, else CONNECT_TIMEOUT.

    Raises:
        InvalidArgumentError: it is not a number of seconds from 0.
    """
    text = os.environ.get(CONNECT_TIMEOUT_ENV, "").strip()
    value: Any = given if given is not None else (text or CONNECT_TIMEOUT)
    named = "connect_timeout" if given is not None else CONNECT_TIMEOUT_ENV
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    typed = given is None or isinstance(given, int | float)
    if isinstance(value, bool) or not typed or not 0 <= seconds < float("inf"):
        raise InvalidArgumentError(f"{named} must be a number of seconds from 0, got {value!r}")
    return seconds


async def open_client(url: str, *, cluster_timeout: float = CLUSTER_TIMEOUT,
                      timeout: float | None = None) -> Redis:
    """A redis-py client for ``url`` that retries lost calls
    (:mod:`.retries`): ``memory://`` = in-process fakeredis;
    ``redis+cluster://`` (and a ``redis://`` or ``rediss://`` URL of a node
    whose ``INFO cluster`` says ``cluster_enabled:1``) = a Redis Cluster
    client, whose calls wait up to ``cluster_timeout`` seconds for a live
    owner of their slot. A server that refuses the first connection is
    tried again for ``timeout`` seconds (:func:`connect_timeout`), said
    once on the ``redismem.connect`` logger.

    Raises:
        UnavailableError: no listed node answered in time.
        InvalidArgumentError: the timeout is not a number of seconds.
    """
    if url.startswith(MEMORY_URL):
        return _memory_client()
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme not in SCHEMES:
        raise InvalidUrlError(
            f"the URL {redact(url)!r} has no scheme redismem knows: use one of "
            f"{', '.join(s + '://' for s in SCHEMES)} or {MEMORY_URL}")
    try:
        if scheme in CLUSTER_SCHEMES:  # host:port,host:port,...
            hosts = urlsplit(url).netloc.rpartition("@")[2].split(",")
            for host in hosts:
                urlsplit(f"redis://{host}").port  # noqa: B018 (it raises for a bad port)
        else:
            parse_url(url)
    except ValueError as exc:
        raise InvalidUrlError(f"the URL {redact(url)!r} does not parse: {exc}") from None
    bound = connect_timeout(timeout)
    # a cluster's slot map is read within cluster_timeout unless a bound was given
    cluster_bound = bound if timeout is not None else None
    if scheme in CLUSTER_SCHEMES:
        return await _ready(_cluster_client(url, scheme, cluster_timeout), cluster_bound)
    # the first contact is retried here, within the bound; later calls by redis-py
    client = fast_packing(Redis.from_url(
        url, max_connections=MAX_CONNECTIONS, retry=Retry(NoBackoff(), 0),
        socket_timeout=SOCKET_TIMEOUT, socket_connect_timeout=SOCKET_TIMEOUT))
    where = urlsplit(url).netloc.rpartition("@")[2] or url.split("://", 1)[1]
    try:
        clustered = await _first_contact(client, where, bound,
                                         scheme in ("redis", "rediss"))
    except AuthenticationError as exc:
        await client.aclose()
        raise refused_login(exc, urlsplit(url).username, where) from None
    except BaseException:
        await client.aclose()
        raise
    if clustered:
        await client.aclose()
        return await _ready(_cluster_client(f"{scheme}+cluster://{url.split('://', 1)[1]}",
                                            f"{scheme}+cluster", cluster_timeout),
                            cluster_bound)
    client.set_retry(retry())
    return client


async def _first_contact(client: Redis, where: str, bound: float, ask_cluster: bool) -> bool:
    """Reach the server (and learn whether it is a cluster node), trying
    again with backoff waits for ``bound`` seconds.

    Raises:
        UnavailableError: it did not answer within ``bound`` seconds.
    """
    waits = backoff()
    deadline = time.monotonic() + bound
    tries = 0
    while True:
        try:
            if ask_cluster:
                return await _cluster_enabled(client)
            await client.ping()
            return False
        except AuthenticationError:
            raise
        except LOST as exc:
            tries += 1
            pause = waits.compute(tries)
            if time.monotonic() + pause > deadline:
                raise UnavailableError(
                    f"the server at {where} did not answer within {bound:g} s ({exc}); "
                    f"{CONNECT_TIMEOUT_ENV} or --connect-timeout sets how long to try",
                    node=where) from exc
            if tries == 1:
                connecting.warning("retrying %s for up to %g s (%s)", where, bound, exc)
            await asyncio.sleep(pause)


def refused_login(exc: AuthenticationError, user: str | None, where: str
                  ) -> PermissionDeniedError:
    """Our error for a login the server refused, naming the user and what to
    check, never the password."""
    text = str(exc)
    if "NOAUTH" in text or "already authenticated" in text or "Authentication required" in text:
        return PermissionDeniedError(
            f"the server at {where} requires a password and the URL gives none: put "
            "user:password@ in the URL (REDISMEM_URL); the embedded server's is in "
            "<data-dir>/password")
    return PermissionDeniedError(
        f"the server at {where} refused user {user or 'default'!r}: its password is wrong, or "
        "the user is disabled or does not exist. Check the user and password in the URL "
        "(REDISMEM_URL); an operator can list the users (redismem users list)")


async def _ready(cluster: Redis, timeout: float | None = None) -> Redis:
    """A cluster client that has read the slot map (so it knows each
    namespace's node before its first call); any listed node that answers
    will do, within ``timeout`` seconds (default: its cluster_timeout)."""
    client = cast(_Cluster, cluster)
    try:
        await persistently(client.initialize,
                           timeout=client.cluster_timeout if timeout is None else timeout,
                           what=lambda exc: ("reading the cluster's slot map", None, None))
    except AuthenticationError as exc:
        await client.aclose()
        node = client.get_default_node()
        raise refused_login(exc, client.get_connection_kwargs().get("username"),
                            node.name if node else "the cluster") from None
    except BaseException:
        await client.aclose()
        raise
    return cluster


async def _cluster_enabled(client: Redis) -> bool:
    try:
        info = await client.info("cluster")
    except ResponseError:  # INFO not permitted: then not told
        return False
    return bool(info.get("cluster_enabled"))


async def detect_capabilities(client: Redis, backend: str, library_version: int) -> Capabilities:
    """What the server offers: its version and whether search/JSON modules are loaded."""
    modules: set[str] = set()
    if backend == "memory":
        import fakeredis

        version = f"fakeredis {fakeredis.__version__}"
    else:
        info = await client.info("server")
        version = str(info.get("redis_version", ""))
        # INFO, not MODULE LIST: no role but the server's own admin holds MODULE
        listed = (await client.info("modules")).get("modules", [])
        for module in listed if isinstance(listed, list) else []:
            modules.add(str(module.get("name", "")).lower())
    return Capabilities(
        backend="memory" if backend == "memory" else "redis",
        server_version=version,
        search="search" in modules or "ft" in modules,
        json="rejson" in modules or "json" in modules,
        library_version=library_version,
    )


async def eviction_policy(client: Redis) -> str | None:
    """The server's ``maxmemory-policy`` (from INFO, which workers may run
    where CONFIG is for admins), or None when the server does not say."""
    try:
        info = await client.info("memory")
    except ResponseError:  # INFO not permitted to this user
        return None
    policy = info.get("maxmemory_policy")
    return None if policy is None else str(policy)


async def authenticated_user(client: Redis) -> str:
    """The ACL user this connection is authenticated as (CLIENT INFO)."""
    info = await client.client_info()
    return str(info.get("user", "default"))


async def authenticated_principal(client: Redis, wanted: str, *, named_by: str | None) -> str:
    """The principal writes are recorded under: the ACL user's name, unless
    the connection is the ``default`` user (access control off). A principal
    someone named (``named_by``: the argument or ``REDISMEM_PRINCIPAL``)
    that is not that user is refused, never replaced in silence."""
    user = await authenticated_user(client)
    if user == "default":
        return wanted
    if named_by is not None and wanted != user:
        raise PermissionDeniedError(
            f"this connection is authenticated as ACL user {user!r}, so it writes as "
            f"{user!r}, not as principal {wanted!r} ({named_by}; the server's ACL refuses "
            "any other)")
    return check.check_id("principal", user)


async def check_eviction(client: Redis, allow: bool | None) -> None:
    """Refuse a server that may evict keys unless ``allow`` (default
    ``REDISMEM_ALLOW_EVICTION=1``) accepts it.

    Raises:
        EvictionPolicyError: the server's maxmemory-policy is not noeviction.
    """
    if allow is None:
        allow = os.environ.get("REDISMEM_ALLOW_EVICTION", "").strip().lower() in (
            "1", "true", "yes")
    policy = None if allow else await eviction_policy(client)
    if policy is not None and policy != "noeviction":
        raise EvictionPolicyError(
            f"the server's maxmemory-policy is {policy}: when memory runs out it evicts "
            "keys, silently dropping values, revisions and change events. Set "
            "maxmemory-policy noeviction (CONFIG SET and redis.conf), or connect with "
            "allow_eviction=True (REDISMEM_ALLOW_EVICTION=1) if you accept that")


async def check_replicas(client: Redis, ns: str, backend: str, where: str) -> None:
    """Refuse ``durability="replica"`` where no replica could confirm a write:
    ``memory://``, or a primary of namespace ``ns`` (on a cluster, the node
    of its slot) with no connected replica. Every write would otherwise
    wait out ``replica_timeout`` and fail with NotReplicatedError.

    Raises:
        InvalidArgumentError: no replica is connected.
    """
    fix = ("start a replica (replicaof HOST PORT in its redis.conf), or connect with "
           "durability=\"primary\"")
    if backend == "memory":
        raise InvalidArgumentError(f"durability=\"replica\": memory:// has no replicas; {fix}")
    target = on_namespace_node(client, ns)
    info = await client.info("replication", **target)
    if target:
        node = target["target_nodes"]
        where = f"{node.host}:{node.port}, the primary of namespace {ns}"
    if isinstance(info, dict) and "connected_slaves" not in info and len(info) == 1:
        info = next(iter(info.values()))  # a cluster's reply keyed by node
    count = int(info.get("connected_slaves", 0))
    if count < 1:
        raise InvalidArgumentError(
            f"durability=\"replica\" waits for a replica to confirm each write, but {where} has "
            f"no connected replica: every write would wait and fail with NotReplicatedError; "
            f"{fix}")
