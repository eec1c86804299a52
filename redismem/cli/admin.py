"""Commands for operators: the embedded server (up, down), status, audit,
repair-feed, index, load-functions, trim and version (users: :mod:`.users`)."""

from __future__ import annotations

import dataclasses
import os
import sys
from typing import TYPE_CHECKING, Any, cast

import click

from .. import keys as K
from .._validate import check_id
from ..errors import RedisMemError
from .base import (
    emit,
    json_option,
    main,
    namespace_option,
    print_version,
    run_sync,
    url_option,
    with_memory,
)

if TYPE_CHECKING:
    from ..library import ServerLibrary
    from ..memory import Memory

data_dir_option = click.option(
    "--data-dir", default=None,
    help="Data directory (default REDISMEM_DATA_DIR, else the user's data directory: "
    "~/.local/share/redismem on Linux).")


@main.command()
@data_dir_option
@click.option("--appendfsync", type=click.Choice(["everysec", "always"]), default=None,
              help="AOF fsync policy (default everysec).")
@json_option
def up(data_dir: str | None, appendfsync: Any, as_json: bool) -> None:
    """Start the embedded server (or report the one running)."""
    from .. import server
    from ..client import redact

    embedded = server.EmbeddedServer(data_dir, appendfsync=appendfsync)
    try:
        state = embedded.start()
    except (RedisMemError, OSError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    emit({"url": redact(state.url), "password_file": str(embedded.password_file.resolve()),
          "pid": state.pid, "appendfsync": state.appendfsync}, as_json,
         lambda d: f"redismem server at {d['url']} (pid {d['pid']}, appendfsync "
                   f"{d['appendfsync']}); its password is in {d['password_file']}, and "
                   "connect() and these commands find it there")


@main.command()
@data_dir_option
@json_option
def down(data_dir: str | None, as_json: bool) -> None:
    """Stop the embedded server cleanly."""
    from .. import server

    try:
        stopped = server.EmbeddedServer(data_dir).stop()
    except (RedisMemError, OSError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    emit({"stopped": stopped}, as_json,
          lambda d: "server stopped" if d["stopped"] else "no server was running")


async def _acl_users(client: Any) -> list[str] | None:
    """The server's ACL users, or None when this user may not list them."""
    import redis

    from .. import users

    try:
        return await users.acl_users(client)
    except redis.ResponseError:
        return None


def _count(n: int, word: str) -> str:
    """``1 value``, ``2 values``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def _access_control(data: dict[str, Any]) -> str:
    users = data["acl_users"]
    if data["open_to_anyone"]:
        listed = "" if users is None else f", though it has {_count(len(users), 'ACL user')}"
        return f"OPEN: any client that connects gets in with no password{listed}"
    if users is None:
        return ("off (memory://)" if data["backend"] == "memory"
                else "unknown (ACL USERS is not permitted to this user)")
    if users == ["default"]:
        return "off (only the default user, which needs a password)"
    return f"on ({_count(len(users), 'ACL user')}: {', '.join(users)})"


def _library_trust(data: dict[str, Any]) -> str:
    if data["library_version"] != data["bundled_library_version"]:
        return ""
    if data["library_digest"] == data["bundled_library_digest"]:
        return " (its code matches)"
    return (f" (ALTERED: its code has sha256 {data['library_digest']}, not "
            f"{data['bundled_library_digest']}; restore it with load-functions --force)")


def _namespace_lines(n: dict[str, Any]) -> list[str]:
    """The figures of one namespace this user could read."""
    lines = []
    if n["value_keys"] is not None and n["vector_keys"] is not None:
        lines.append(f"  {_count(n['value_keys'], 'value')} in "
                     f"{_count(n['value_scopes'], 'scope')}, "
                     f"{_count(n['vector_keys'], 'vector')} in "
                     f"{_count(n['vector_scopes'], 'scope')}"
                     + ("" if n["sessions"] is None else
                        f", {_count(n['sessions'], 'session')} registered (create_session)"))
    if n["threads"] is not None:
        lines.append(f"  {n['threads']} threads ({n['thread_events']} events)"
                     + ("" if n["long_term_memories"] is None
                        else f", {n['long_term_memories']} long-term memories"))
    if n["langgraph_threads"]:
        lines.append(f"  {n['langgraph_threads']} LangGraph threads "
                     f"({n['langgraph_checkpoints']} checkpoints)")
    feed = n["feed"]
    if feed is not None:
        span = (f"sequences {feed['oldest_sequence']}..{feed['last_sequence']}"
                if feed["oldest_sequence"] else f"last sequence {feed['last_sequence']}")
        lines.append(f"  feed: {feed['length']} events, {span}")
    if n["keys"] is not None:
        used = "unknown" if n["memory_bytes"] is None else f"{n['memory_bytes']:,} bytes"
        lines.append(f"  memory: {n['keys']} keys, {used}")
    lines += [f"  index {name}: {i['docs']} docs, {i['vector_mb']} MB vectors, "
              f"{i['index_mb']} MB other" for name, i in (n["indexes"] or {}).items()]
    return lines


def _status_text(data: dict[str, Any]) -> str:
    modules = [name for name, on in data["modules"].items() if on]
    lines = [f"server: {data['url']} ({data['backend']} {data['server_version']}; modules: "
             f"{', '.join(modules) or 'none'})",
             (f"library: version {data['library_version']} loaded, this package ships "
              f"{data['bundled_library_version']}" + _library_trust(data)
              if data["library_version"] is not None else
              f"library: not loaded (this package ships version "
              f"{data['bundled_library_version']}; the first connect() loads it, or "
              "redismem load-functions)"),
             f"vector search: {data['vector_search']}"]
    lines.append(f"access control: {_access_control(data)}")
    lines += [f"warning: {door}" for door in data["open_to_anyone"] or ()]
    lines += [f"warning: {node}" for node in data["default_user_loses_data"] or ()]
    if data["maxmemory_policy"] not in (None, "noeviction"):
        lines.append(f"warning: maxmemory-policy is {data['maxmemory_policy']}: the server may "
                     "evict memory (redismem needs noeviction)")
    if "cluster" in data:
        nodes = data["cluster"]["nodes"]
        primaries = sum(n["role"] == "primary" for n in nodes)
        lines.append(f"cluster: {primaries} primaries, {len(nodes) - primaries} replicas")
        for n in nodes:
            where = (f"slots {' '.join(n['slots']) or 'none'}" if n["role"] == "primary"
                     else f"of {n.get('replica_of')}")
            library = ""
            if "library_version" in n:
                library = (", no library" if n["library_version"] is None else
                           f", library {n['library_version']}"
                           + ("" if n["library_digest"] == data["bundled_library_digest"]
                              else " ALTERED"))
            lines.append(f"  {n['node']} {n['role']}{'' if n['healthy'] else ' (failing)'}, "
                         f"{where}{library}")
    if data["namespaces_unlisted"]:
        lines.append(f"namespaces: not listed: {data['namespaces_unlisted']}")
    elif not data["namespaces"]:
        lines.append("no namespaces")
    for n in data["namespaces"]:
        if "error" in n:
            lines.append(f"namespace {n['namespace']}: cannot be read: {n['error']}")
            continue
        lines.append(f"namespace {n['namespace']}" + (f" (on {n['node']})" if "node" in n
                                                       else "") + ":")
        lines += _namespace_lines(n)
        if n["unreadable"]:
            lines.append(f"  not readable by {data['user']}: " + ", ".join(
                f"{part} ({refused})" for part, refused in n["unreadable"].items()))
        if "users" in n:
            lines.append(f"  reached by: {', '.join(n['users']) or 'no user'}")
    return "\n".join(lines)


@main.command()
@url_option
@click.option("--namespace", "-n", default=None,
              help="Only this namespace (default: every namespace on the server).")
@json_option
def status(url: str | None, namespace: str | None, as_json: bool) -> None:
    """Server, modules, library version, capabilities and, per namespace,
    keys, threads, feed, indexes and memory used. Only reads (loads nothing).
    A namespace role sees what it may read, and what it may not is named;
    exit code 1 when this user may not list the namespaces (only an
    operator may) or read the one named."""
    import redis

    from .. import server, stats, users
    from ..client import (
        MEMORY_URL,
        authenticated_user,
        detect_capabilities,
        eviction_policy,
        open_client,
        redact,
        resolve_url,
    )
    from ..functions import Functions
    from ..library import bundled, lowest_library, server_library
    from ..topology import is_cluster

    if not (url or os.environ.get("REDISMEM_URL")):
        embedded = server.EmbeddedServer()
        running = embedded.state()
        if running is None:
            raise click.ClickException(
                "no server to report on: no --url, no REDISMEM_URL, and no embedded server "
                f"running in {embedded.data_dir.resolve()} (status starts nothing; "
                "`redismem up` does)")
        url = running.url

    async def run() -> dict[str, Any]:
        resolved = await resolve_url(url)
        client = await open_client(resolved)
        try:
            nodes, libraries = (await _cluster_status(client) if is_cluster(client)
                                else (None, []))
            library = (await server_library(client) if nodes is None
                       else lowest_library(libraries))
            loaded = None if library is None else library.version
            caps = await detect_capabilities(
                client, "memory" if resolved.startswith(MEMORY_URL) else "redis", loaded or 0)
            user = (await authenticated_user(client) if caps.backend == "redis"
                    else "default")
            unlisted = None
            try:
                names = ([check_id("namespace", namespace)] if namespace
                         else await stats.namespaces(client))
            except redis.exceptions.NoPermissionError:
                names, unlisted = [], (f"user {user} may not run SCAN (only an operator "
                                       "lists every namespace): name one with --namespace NS")
            found: list[dict[str, Any]] = []
            for ns in names:
                try:
                    figures = await stats.namespace_stats(client, ns)
                    if len(figures["unreadable"]) == stats.PARTS:
                        raise redis.exceptions.NoPermissionError(
                            ", ".join(sorted(set(figures["unreadable"].values()))))
                    figures["settings"] = (await Functions(client).get_config(ns)
                                           if loaded else None)
                    if nodes is not None:
                        owner = cast(Any, client).get_node_from_key(K.feed(ns))
                        figures["node"] = f"{owner.host}:{owner.port}"
                except redis.exceptions.NoPermissionError as exc:
                    figures = {"namespace": ns, "refused": True, "error": (
                        f"user {user} may read none of its figures (the server refused "
                        f"{exc}): a worker reads only its granted scopes (redismem keys "
                        "--scope session:ID), other users only their own namespaces")}
                except (redis.ResponseError, ValueError) as exc:
                    # keys redismem did not write (e.g. a counter set by hand)
                    figures = {"namespace": ns, "error": f"{type(exc).__name__}: {exc}"}
                found.append(figures)
            policy = await eviction_policy(client) if caps.backend == "redis" else None
            acl_users = await _acl_users(client) if caps.backend == "redis" else None
            doors = ([d.warning() for d in await users.open_doors(client)]
                     if caps.backend == "redis" else None)
            lossy = ([d.warning() for d in await users.lossy_defaults(client)]
                     if caps.backend == "redis" else None)
            if acl_users is not None:
                listed = await users.list_users(client)
                for figures in found:
                    figures["users"] = users.reaching(listed, figures["namespace"])
            return {"url": redact(resolved), "backend": caps.backend,
                    "server_version": caps.server_version, "maxmemory_policy": policy,
                    "acl_users": acl_users, "open_to_anyone": doors,
                    "default_user_loses_data": lossy,
                    "modules": {"search": caps.search, "json": caps.json},
                    "library_version": loaded, "bundled_library_version": bundled().version,
                    "library_digest": None if library is None else library.digest,
                    "bundled_library_digest": bundled().digest,
                    "vector_search": caps.vector_search, "user": user,
                    "namespaces_unlisted": unlisted, "namespaces": found,
                    **({} if nodes is None else {"cluster": {"nodes": nodes}})}
        finally:
            await client.aclose()

    data = run_sync(run())
    emit(data, as_json, _status_text)
    if data["namespaces_unlisted"] or any(n.get("refused") for n in data["namespaces"]):
        sys.exit(1)


async def _cluster_status(client: Any
                          ) -> tuple[list[dict[str, Any]], list[ServerLibrary | None]]:
    """Each node of a cluster: its role, slots, and (primaries) library; and
    the library of each healthy primary."""
    from ..library import server_library
    from ..topology import cluster_nodes, node_client

    infos = await cluster_nodes(client)
    by_id = {info.id: info.address for info in infos}
    rows: list[dict[str, Any]] = []
    libraries: list[ServerLibrary | None] = []
    for info in infos:
        row: dict[str, Any] = {"node": info.address,
                               "role": "primary" if info.primary else "replica",
                               "healthy": info.healthy, "slots": list(info.slots)}
        if info.replica_of:
            row["replica_of"] = by_id.get(info.replica_of, info.replica_of)
        if info.primary and info.healthy:
            async with node_client(client, info.host, info.port) as plain:
                library = await server_library(plain)
            row["library_version"] = None if library is None else library.version
            row["library_digest"] = None if library is None else library.digest
            libraries.append(library)
        rows.append(row)
    return rows, libraries


@main.command("audit")
@url_option
@namespace_option
@click.option("--all-namespaces", is_flag=True,
              help="Audit every namespace on the server (an operator's: it SCANs).")
@json_option
def audit_cmd(url: str | None, namespace: str, all_namespaces: bool, as_json: bool) -> None:
    """List the entries of a namespace that the library did not write (raw
    commands): values that are not strict JSON, malformed vectors, forged
    feed entries, bad thread events. Exit code 1 when there are any, 2 when
    the namespace holds no key at all (a typo?)."""
    from ..audit import audit
    from ..lifecycle import holds_anything
    from ..memory import connect
    from ..stats import namespaces

    async def run() -> tuple[list[str], list[dict[str, str]], bool]:
        names = [namespace]
        if all_namespaces:
            async with await connect(url, namespace=namespace) as mem:
                names = await namespaces(mem.client) or [namespace]  # the server's findings
        found, seen, exists = [], set(), True
        for ns in names:
            async with await connect(url, namespace=ns) as mem:
                async for f in audit(mem):
                    if f.key not in seen:  # a server's finding: once
                        seen.add(f.key)
                        found.append({"namespace": ns, "key": f.key, "problem": f.problem})
                if not all_namespaces:
                    exists = await holds_anything(mem)
        return names, found, exists

    names, found, exists = run_sync(run())
    if not exists:
        if found:
            emit(found, as_json, lambda d: "\n".join(f"{f['key']}: {f['problem']}" for f in d))
        click.echo(f"Error: namespace {namespace} holds no key: there is no such namespace "
                   "on this server (redismem status lists them)", err=True)
        sys.exit(2)
    emit(found, as_json, lambda d: "\n".join(f"{f['key']}: {f['problem']}" for f in d)
         or (f"{len(names)} namespaces: every entry was written by redismem" if all_namespaces
             else f"namespace {namespace}: every entry was written by redismem"))
    if found:
        sys.exit(1)


@main.command("repair-feed")
@url_option
@namespace_option
@json_option
def repair_feed_cmd(url: str | None, namespace: str, as_json: bool) -> None:
    """Restore a change feed that raw writes jammed (a sequence counter or a
    stream id past any real one, entries not written by the library): drop
    those entries and set the counter, the stream's last id and the size
    estimate from what remains. Needs an admin's credential."""
    from ..memory import connect
    from ..repair import repair_feed

    async def run() -> dict[str, Any]:
        async with await connect(url, namespace=namespace) as mem:
            done = await repair_feed(mem)
            return dataclasses.asdict(done) | {"removed": list(done.removed)}

    emit(run_sync(run()), as_json,
          lambda d: f"feed of {namespace}: {len(d['removed'])} entries dropped, sequence "
          f"{d['sequence']} (was {d['previous_counter']}), size estimate {d['feed_bytes']} bytes")


@main.command("index")
@url_option
@namespace_option
@click.option("--dim", "dims", type=int, multiple=True,
              help="Create the vector index of this dimension (repeatable).")
@json_option
def index_cmd(url: str | None, namespace: str, dims: tuple[int, ...], as_json: bool) -> None:
    """Create a namespace's search indexes: the long-term memory text index
    and the vector index of each --dim. Needs FT.CREATE, which only an
    operator holds (an index can cover any namespace's keys)."""
    from .. import vectors as V
    from ..store import RedisMemoryStore

    async def run() -> dict[str, Any]:
        async with RedisMemoryStore(url, namespace=namespace) as store:
            await store.setup()
            mem = store.memory
            if not mem.capabilities.search:
                raise click.ClickException("the server has no search module: no indexes")
            await store._ensure_text_index()
            await V.ensure_scope_indexes(mem._conn, dims)
            return {"namespace": namespace, "text_index": K.memory_text_index(namespace),
                    "vector_indexes": [K.vector_index(namespace, d) for d in sorted(set(dims))]}

    emit(run_sync(run()), as_json,
          lambda d: "indexes ready: " + ", ".join([d["text_index"], *d["vector_indexes"]]))


@main.command("load-functions")
@url_option
@click.option("--force", is_flag=True, help="Replace even a newer library.")
@json_option
def load_functions(url: str | None, force: bool, as_json: bool) -> None:
    """Load the Lua library into a Redis server (on a cluster: into every
    primary), reporting the version replaced."""
    from ..client import open_client, resolve_url
    from ..library import ensure_library_on_nodes

    async def run() -> dict[str, Any]:
        client = await open_client(await resolve_url(url))
        try:
            results = await ensure_library_on_nodes(client, force=force)
        finally:
            await client.aclose()
        rows = {node: {"action": r.action, "previous": r.previous, "version": r.version}
                for node, r in results.items()}
        return rows[""] if list(rows) == [""] else {"nodes": rows}

    def line(d: dict[str, Any]) -> str:
        return f"{d['action']}: library version {d['version']} (was {d['previous']})"

    emit(run_sync(run()), as_json, lambda d: "\n".join(
        f"{node}: {line(row)}" for node, row in d["nodes"].items()) if "nodes" in d else line(d))


@main.command()
@url_option
@namespace_option
@json_option
@with_memory
async def trim(mem: Memory, as_json: bool) -> None:
    """Drop change events older than the namespace's retention now."""
    dropped = await mem.trim_feed()
    emit({"namespace": mem.namespace, "trimmed": dropped}, as_json,
          lambda d: f"trimmed {d['trimmed']} events from {d['namespace']}")


@main.command()
@click.option("--url", envvar="REDISMEM_URL", default=None,
              help="Also report this server's library version (default: $REDISMEM_URL).")
@json_option
def version(url: str | None, as_json: bool) -> None:
    """The package and bundled Lua library versions (and a server's, with --url)."""
    print_version(url, as_json)
