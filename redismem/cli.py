"""The ``redismem`` admin command line."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import functools
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Coroutine, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import click
import redis

from . import keys as K
from . import server, stats, transfer, users
from ._validate import check_id
from .acl import NAMESPACE_ROLES, ROLES, Role
from .client import MEMORY_URL, detect_capabilities, eviction_policy, open_client, resolve_url
from .errors import RedisMemError
from .functions import Functions
from .library import ServerLibrary, bundled, lowest_library, server_library, server_version
from .memory import Memory, connect
from .scope import MemoryScope
from .store import RedisMemoryStore
from .topology import cluster_nodes, is_cluster, node_client
from .types import MemoryChangeEvent, RetentionPolicy

T = TypeVar("T")
_SCOPES = ("session", "actor", "workflow", "global")


def _run(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro``; turn our errors and connection failures into one line, exit 1."""
    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        raise click.exceptions.Exit(130) from None
    except (RedisMemError, ValueError, redis.RedisError, OSError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None


def _emit(data: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    if as_json:
        click.echo(json.dumps(data, sort_keys=True, default=str))
    else:
        click.echo(text(data) if text else data)


url_option = click.option("--url", envvar="REDISMEM_URL", default=None,
                          help="Redis URL (default: $REDISMEM_URL, else the embedded server).")
namespace_option = click.option("--namespace", "-n", default="default", show_default=True,
                                help="Namespace.")
json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")
scope_option = click.option("--scope", "-s", "scope_spec", default="global", show_default=True,
                            help="Scope as KIND[:ID], e.g. session:s-42, actor:bob, global.")


def scoped_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--url, --namespace, --scope and --json: the options of every scope command."""
    for option in (json_option, scope_option, namespace_option, url_option):
        fn = option(fn)
    return fn


def _scope(mem: Memory, spec: str) -> MemoryScope:
    kind, _, sid = spec.partition(":")
    if kind not in _SCOPES:
        raise click.ClickException(f"--scope: the kind must be one of {', '.join(_SCOPES)}, "
                                   f"got {kind!r}")
    if kind == "global":
        return mem.global_scope()
    if kind == "actor":
        return mem.actor(sid or None)
    if not sid:
        raise click.ClickException(f"--scope: a {kind} scope needs an id: {kind}:ID")
    return mem.session(sid) if kind == "session" else mem.workflow(sid)


def _with_memory(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Open a Memory for the command from --url and --namespace, close it after."""

    @functools.wraps(fn)
    def wrapper(url: str | None, namespace: str, **kwargs: Any) -> T:
        async def main() -> T:
            async with await connect(url, namespace=namespace) as mem:
                return await fn(mem, **kwargs)

        return _run(main())

    return wrapper


class _Group(click.Group):
    """The command group; every error, usage errors included, is one line on
    stderr and a non-zero exit code, never a traceback (``REDISMEM_DEBUG=1``
    shows the traceback of an unexpected one)."""

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        run: Any = super().main  # typed as never returning when standalone
        if not standalone_mode:
            return run(*args, standalone_mode=False, **kwargs)
        try:
            result = run(*args, standalone_mode=False, **kwargs)
        except click.exceptions.Abort:
            click.echo("Error: aborted", err=True)
            sys.exit(1)
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see {exc.ctx.command_path} --help)"
            click.echo(f"Error: {exc.format_message()}{hint}", err=True)
            sys.exit(exc.exit_code)
        except Exception as exc:
            if os.environ.get("REDISMEM_DEBUG"):
                raise
            click.echo(f"Error: unexpected {type(exc).__name__}: {exc} "
                       "(REDISMEM_DEBUG=1 shows the traceback)", err=True)
            sys.exit(1)
        sys.exit(result if isinstance(result, int) else 0)


@click.group(cls=_Group)
@click.version_option(package_name="redismem")
def main() -> None:
    """redismem: shared, durable memory for fleets of agent workers, in Redis."""


@main.command()
@click.option("--data-dir", default=None, help="Data directory (default ./.redismem).")
@click.option("--appendfsync", type=click.Choice(["everysec", "always"]), default=None,
              help="AOF fsync policy (default everysec).")
@json_option
def up(data_dir: str | None, appendfsync: Any, as_json: bool) -> None:
    """Start the embedded server (or report the one running)."""
    try:
        state = server.EmbeddedServer(data_dir, appendfsync=appendfsync).start()
    except (RedisMemError, OSError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    _emit({"url": state.url, "pid": state.pid, "appendfsync": state.appendfsync}, as_json,
          lambda d: f"redismem server at {d['url']} (pid {d['pid']}, "
                    f"appendfsync {d['appendfsync']})")


@main.command()
@click.option("--data-dir", default=None, help="Data directory (default ./.redismem).")
@json_option
def down(data_dir: str | None, as_json: bool) -> None:
    """Stop the embedded server cleanly."""
    try:
        stopped = server.EmbeddedServer(data_dir).stop()
    except (RedisMemError, OSError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
    _emit({"stopped": stopped}, as_json,
          lambda d: "server stopped" if d["stopped"] else "no server was running")


async def _acl_users(client: Any) -> list[str] | None:
    """The server's ACL users, or None when this user may not list them."""
    try:
        return await users.acl_users(client)
    except redis.ResponseError:
        return None


def _access_control(data: dict[str, Any]) -> str:
    users = data["acl_users"]
    if users is None:
        return ("off (memory://)" if data["backend"] == "memory"
                else "unknown (ACL USERS is not permitted to this user)")
    if users == ["default"]:
        return "off (only the default user)"
    return f"on ({len(users)} ACL users: {', '.join(users)})"


def _library_trust(data: dict[str, Any]) -> str:
    if data["library_version"] != data["bundled_library_version"]:
        return ""
    if data["library_digest"] == data["bundled_library_digest"]:
        return " (its code matches)"
    return (f" (ALTERED: its code has sha256 {data['library_digest']}, not "
            f"{data['bundled_library_digest']}; restore it with load-functions --force)")


def _status_text(data: dict[str, Any]) -> str:
    modules = [name for name, on in data["modules"].items() if on]
    lines = [f"server: {data['url']} ({data['backend']} {data['server_version']}; modules: "
             f"{', '.join(modules) or 'none'})",
             f"library: version {data['library_version']} loaded, this package ships "
             f"{data['bundled_library_version']}" + _library_trust(data),
             f"vector search: {data['vector_search']}"]
    lines.append(f"access control: {_access_control(data)}")
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
    if not data["namespaces"]:
        lines.append("no namespaces")
    for n in data["namespaces"]:
        if "error" in n:
            lines.append(f"namespace {n['namespace']}: cannot be read: {n['error']}")
            continue
        feed = n["feed"]
        span = (f"sequences {feed['oldest_sequence']}..{feed['last_sequence']}"
                if feed["oldest_sequence"] else f"last sequence {feed['last_sequence']}")
        used = "unknown" if n["memory_bytes"] is None else f"{n['memory_bytes']:,} bytes"
        lines += [f"namespace {n['namespace']}" + (f" (on {n['node']})" if "node" in n else "")
                  + ":",
                  f"  {n['value_keys']} values in {n['value_scopes']} scopes, "
                  f"{n['vector_keys']} vectors in {n['vector_scopes']} scopes, "
                  f"{n['sessions']} sessions",
                  f"  {n['threads']} threads ({n['thread_events']} events), "
                  f"{n['long_term_memories']} long-term memories",
                  f"  feed: {feed['length']} events, {span}",
                  f"  memory: {n['keys']} keys, {used}"]
        lines += [f"  index {name}: {i['docs']} docs, {i['vector_mb']} MB vectors, "
                  f"{i['index_mb']} MB other" for name, i in n["indexes"].items()]
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
    keys, threads, feed, indexes and memory used. Only reads (loads nothing)."""

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
            names = ([check_id("namespace", namespace)] if namespace
                     else await stats.namespaces(client))
            found: list[dict[str, Any]] = []
            for ns in names:
                try:
                    figures = await stats.namespace_stats(client, ns)
                    figures["settings"] = (await Functions(client).get_config(ns)
                                           if loaded else None)
                    if nodes is not None:
                        owner = cast(Any, client).get_node_from_key(K.feed(ns))
                        figures["node"] = f"{owner.host}:{owner.port}"
                except (redis.ResponseError, ValueError) as exc:
                    # keys redismem did not write (e.g. a counter set by hand)
                    figures = {"namespace": ns, "error": f"{type(exc).__name__}: {exc}"}
                found.append(figures)
            policy = await eviction_policy(client) if caps.backend == "redis" else None
            acl_users = await _acl_users(client) if caps.backend == "redis" else None
            if acl_users is not None:
                listed = await users.list_users(client)
                for figures in found:
                    figures["users"] = users.reaching(listed, figures["namespace"])
            return {"url": resolved, "backend": caps.backend,
                    "server_version": caps.server_version, "maxmemory_policy": policy,
                    "acl_users": acl_users,
                    "modules": {"search": caps.search, "json": caps.json},
                    "library_version": loaded, "bundled_library_version": bundled().version,
                    "library_digest": None if library is None else library.digest,
                    "bundled_library_digest": bundled().digest,
                    "vector_search": caps.vector_search, "namespaces": found,
                    **({} if nodes is None else {"cluster": {"nodes": nodes}})}
        finally:
            await client.aclose()

    _emit(_run(run()), as_json, _status_text)


async def _cluster_status(client: Any
                          ) -> tuple[list[dict[str, Any]], list[ServerLibrary | None]]:
    """Each node of a cluster: its role, slots, and (primaries) library; and
    the library of each healthy primary."""
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


def _admin_client(url: str | None) -> Any:
    """An async context for a raw client of the server (for operator commands)."""

    @contextlib.asynccontextmanager
    async def opened() -> Any:
        client = await open_client(await resolve_url(url))
        try:
            yield client
        finally:
            await client.aclose()

    return opened()


@main.group("users")
def users_group() -> None:
    """Credentials: ACL users with a role in one namespace (reader, writer,
    admin, worker) or server-wide (operator). Needs an operator (or the
    default user)."""


def _password_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    return click.option("--password-file", type=click.Path(dir_okay=False, exists=True),
                        default=None,
                        help="Read the password from this file's first line (default: "
                             "generate one and print it once).")(fn)


def _read_password(path: str | None) -> str | None:
    return None if path is None else users.read_password(Path(path).read_text())


def _credential_text(data: dict[str, Any]) -> str:
    where = f" in namespace {data['namespace']}" if data["namespace"] else " (server-wide)"
    lines = [f"user {data['user']}: {data['role']}{where}"]
    if data["sessions"] or data["workflows"]:
        lines.append("  grants: " + ", ".join([*(f"session:{s}" for s in data["sessions"]),
                                                *(f"workflow:{w}" for w in data["workflows"])]))
    if "password" in data:
        lines.append(f"  password (shown once): {data['password']}")
    return "\n".join(lines)


@users_group.command("add")
@url_option
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), required=True, help="The role.")
@click.option("--namespace", "-n", default=None,
              help=f"The namespace (every role but operator: {', '.join(NAMESPACE_ROLES)}).")
@click.option("--session", "sessions", multiple=True,
              help="A session id the worker may read and write (repeatable).")
@click.option("--workflow", "workflows", multiple=True,
              help="A workflow root id the worker may read and write (repeatable).")
@_password_option
@json_option
def users_add(url: str | None, name: str, role: str, namespace: str | None,
              sessions: tuple[str, ...], workflows: tuple[str, ...],
              password_file: str | None, as_json: bool) -> None:
    """Create ACL user NAME with a role; --json prints its exact ACL rules."""
    try:
        spec = Role(role, namespace, tuple(sessions), tuple(workflows))
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None

    async def run() -> dict[str, Any]:
        async with _admin_client(url) as client:
            made = await users.add_user(client, name, spec,
                                        password=_read_password(password_file))
            return made.public()

    _emit(_run(run()), as_json, _credential_text)


@users_group.command("list")
@url_option
@json_option
def users_list(url: str | None, as_json: bool) -> None:
    """Every ACL user with its role and rules."""

    async def run() -> list[dict[str, Any]]:
        async with _admin_client(url) as client:
            return await users.list_users(client)

    def text(found: list[dict[str, Any]]) -> str:
        return "\n".join(
            f"{u['user']}: {u['role'] or 'not made by redismem'}"
            + (f" in {u['namespace']}" if u["namespace"] else "")
            + f"  [{' '.join(u['rules'])}]" for u in found)

    _emit(_run(run()), as_json, text)


@users_group.command("remove")
@url_option
@click.argument("name")
@json_option
def users_remove(url: str | None, name: str, as_json: bool) -> None:
    """Delete ACL user NAME (the server closes its connections)."""

    async def run() -> dict[str, Any]:
        async with _admin_client(url) as client:
            return {"user": name, "removed": await users.remove_user(client, name)}

    _emit(_run(run()), as_json,
          lambda d: f"removed {d['user']}" if d["removed"] else f"no user {d['user']}")


@users_group.command("rotate-password")
@url_option
@click.argument("name")
@_password_option
@json_option
def users_rotate(url: str | None, name: str, password_file: str | None, as_json: bool) -> None:
    """Give NAME a new password; the old one stops working at once."""

    async def run() -> dict[str, Any]:
        async with _admin_client(url) as client:
            new = await users.rotate_password(client, name,
                                              password=_read_password(password_file))
            return {"user": name, **({"password": new} if new else {})}

    _emit(_run(run()), as_json,
          lambda d: f"new password for {d['user']}"
          + (f" (shown once): {d['password']}" if "password" in d else " set"))


@main.command("audit")
@url_option
@namespace_option
@json_option
def audit_cmd(url: str | None, namespace: str, as_json: bool) -> None:
    """List the entries of a namespace that the library did not write (raw
    commands): values that are not strict JSON, malformed vectors, forged
    feed entries, bad thread events. Exit code 1 when there are any."""
    from .audit import audit

    async def run() -> list[dict[str, str]]:
        async with await connect(url, namespace=namespace) as mem:
            return [{"key": f.key, "problem": f.problem} async for f in audit(mem)]

    found = _run(run())
    _emit(found, as_json, lambda d: "\n".join(f"{f['key']}: {f['problem']}" for f in d)
          or f"namespace {namespace}: every entry was written by redismem")
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
    from .repair import repair_feed

    async def run() -> dict[str, Any]:
        async with await connect(url, namespace=namespace) as mem:
            done = await repair_feed(mem.client, mem.namespace)
            return dataclasses.asdict(done) | {"removed": list(done.removed)}

    _emit(_run(run()), as_json,
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
    from . import vectors as V

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

    _emit(_run(run()), as_json,
          lambda d: "indexes ready: " + ", ".join([d["text_index"], *d["vector_indexes"]]))


@main.command("load-functions")
@url_option
@click.option("--force", is_flag=True, help="Replace even a newer library.")
@json_option
def load_functions(url: str | None, force: bool, as_json: bool) -> None:
    """Load the Lua library into a Redis server (on a cluster: into every
    primary), reporting the version replaced."""
    from .library import ensure_library_on_nodes

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

    _emit(_run(run()), as_json, lambda d: "\n".join(
        f"{node}: {line(row)}" for node, row in d["nodes"].items()) if "nodes" in d else line(d))


@contextlib.contextmanager
def _progress(label: str, total: int, quiet: bool) -> Iterator[Callable[[int], None] | None]:
    """A progress bar on stderr when it is a terminal and output is not for scripts."""
    if quiet or not sys.stderr.isatty():
        yield None
        return
    with click.progressbar(length=total, label=label, file=sys.stderr) as bar:
        yield bar.update


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in counts.items() if n) or "nothing"


@main.command("export")
@url_option
@namespace_option
@click.option("--output", "-o", default="-", show_default=True,
              type=click.Path(dir_okay=False, allow_dash=True),
              help="File to write (- = standard output).")
@json_option
def export_cmd(url: str | None, namespace: str, output: str, as_json: bool) -> None:
    """Write a namespace as JSON Lines: settings, sessions, values, vectors,
    thread events and long-term memories, with revisions and expiry."""
    to_stdout = output == "-"
    target = None if to_stdout else Path(output)
    partial = None if target is None else target.with_name(f".{target.name}.partial")

    async def run() -> transfer.ExportSummary:
        async with await connect(url, namespace=namespace) as mem:
            plan = await transfer.survey(mem)
            with contextlib.ExitStack() as stack:
                stream = (sys.stdout if partial is None
                          else stack.enter_context(partial.open("w", encoding="utf-8")))
                advance = stack.enter_context(
                    _progress(f"exporting {namespace}", plan.total, as_json))
                summary = await transfer.export_namespace(mem, stream.write, advance, plan)
            if partial is not None and target is not None:
                partial.replace(target)  # a complete file or none at all
            return summary

    try:
        summary = _run(run())
    finally:
        if partial is not None:
            partial.unlink(missing_ok=True)
    data = {"namespace": summary.namespace, "output": output, "records": summary.records}
    line = (json.dumps(data, sort_keys=True) if as_json
            else f"exported {summary.namespace}: {_counts(summary.records)}")
    click.echo(line, err=to_stdout)


@main.command("import")
@url_option
@click.option("--namespace", "-n", default=None,
              help="Namespace to import into (default: the one the file was exported from).")
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@json_option
def import_cmd(url: str | None, namespace: str | None, file: str, as_json: bool) -> None:
    """Restore an export FILE (- = standard input). Idempotent: what the target
    holds at the same or a later revision is kept; nothing is deleted."""
    with contextlib.ExitStack() as stack:
        if file == "-":
            spool = stack.enter_context(tempfile.TemporaryDirectory())
            path = Path(spool) / "import.jsonl"
            with path.open("w", encoding="utf-8") as out:
                shutil.copyfileobj(sys.stdin, out)
        else:
            path = Path(file)
        try:
            header = transfer.read_header(path)
        except (OSError, ValueError) as exc:
            raise click.ClickException(f"{type(exc).__name__}: {exc}") from None
        target = namespace or header

        async def run() -> transfer.ImportSummary:
            async with RedisMemoryStore(url, namespace=target) as store:
                total = await transfer.check_file(store, path)
                with _progress(f"importing into {target}", total, as_json) as advance:
                    return await transfer.import_file(store, path, advance)

        summary = _run(run())
    data = {"namespace": summary.namespace, "records": summary.records,
            "written": summary.written, "kept": summary.kept}
    _emit(data, as_json, lambda d: f"imported {d['records']} records into {d['namespace']}: "
                                   f"wrote {_counts(d['written'])}; kept {_counts(d['kept'])}")


@main.command("get")
@scoped_options
@click.argument("key")
@_with_memory
async def get_cmd(mem: Memory, scope_spec: str, key: str, as_json: bool) -> None:
    """Read KEY."""
    got = await _scope(mem, scope_spec).get(key)
    _emit({"key": key, "value": got.value, "revision": got.revision, "found": got.found},
          as_json, lambda d: json.dumps(d["value"]) if d["found"] else "(absent)")


@main.command("set")
@scoped_options
@click.option("--ttl", type=float, default=None, help="Expire after this many seconds.")
@click.option("--expected-revision", type=int, default=None, help="Write only at this revision.")
@click.argument("key")
@click.argument("value")
@_with_memory
async def set_cmd(mem: Memory, scope_spec: str, key: str, value: str, ttl: float | None,
                  expected_revision: int | None, as_json: bool) -> None:
    """Write KEY = VALUE (VALUE is JSON; plain text is stored as a string)."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    revision = await _scope(mem, scope_spec).set(key, parsed, ttl_seconds=ttl,
                                                 expected_revision=expected_revision)
    _emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


ttl_keep_option = click.option(
    "--ttl", type=float, default=None,
    help="Set the key's expiry to this many seconds (default: keep the key's expiry).")


@main.command("incr")
@scoped_options
@click.option("--by", type=int, default=1, show_default=True, help="The integer to add.")
@ttl_keep_option
@click.argument("key")
@_with_memory
async def incr_cmd(mem: Memory, scope_spec: str, key: str, by: int, ttl: float | None,
                   as_json: bool) -> None:
    """Add --by to the integer at KEY (absent = 0) in one server-side call:
    concurrent increments never conflict."""
    got = await _scope(mem, scope_spec).incr(key, by=by, ttl_seconds=ttl)
    _emit({"key": key, "value": got.value, "revision": got.revision}, as_json,
          lambda d: f"{d['value']} (revision {d['revision']})")


@main.command("append")
@scoped_options
@click.option("--max-items", type=int, default=None,
              help="Keep only the last N items (a capped log).")
@ttl_keep_option
@click.argument("key")
@click.argument("item")
@_with_memory
async def append_cmd(mem: Memory, scope_spec: str, key: str, item: str, max_items: int | None,
                     ttl: float | None, as_json: bool) -> None:
    """Append ITEM (JSON) to the list at KEY (absent = []) in one server-side call."""
    revision = await _scope(mem, scope_spec).append(key, _json_arg(item, "ITEM"),
                                                    max_items=max_items, ttl_seconds=ttl)
    _emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@main.command("merge")
@scoped_options
@ttl_keep_option
@click.argument("key")
@click.argument("patch")
@_with_memory
async def merge_cmd(mem: Memory, scope_spec: str, key: str, patch: str, ttl: float | None,
                    as_json: bool) -> None:
    """Apply PATCH (a JSON object; null deletes a member) to the object at KEY
    as an RFC 7386 merge patch, in one server-side call."""
    revision = await _scope(mem, scope_spec).merge(key, _json_arg(patch, "PATCH"),
                                                   ttl_seconds=ttl)
    _emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@main.command("del")
@scoped_options
@click.option("--expected-revision", type=int, default=None, help="Delete only at this revision.")
@click.argument("key")
@_with_memory
async def del_cmd(mem: Memory, scope_spec: str, key: str, expected_revision: int | None,
                  as_json: bool) -> None:
    """Delete KEY."""
    deleted = await _scope(mem, scope_spec).delete(key, expected_revision=expected_revision)
    _emit({"key": key, "deleted": deleted}, as_json,
          lambda d: "deleted" if d["deleted"] else "(absent)")


@main.command("keys")
@scoped_options
@click.option("--prefix", default=None, help="Only keys starting with this.")
@click.option("--kind", type=click.Choice(["value", "vector"]), default="value",
              show_default=True)
@click.option("--max-keys", type=int, default=100_000, show_default=True)
@_with_memory
async def keys_cmd(mem: Memory, scope_spec: str, prefix: str | None, kind: Any, max_keys: int,
                   as_json: bool) -> None:
    """List key names of a scope, ascending."""
    names = await _scope(mem, scope_spec).list_keys(prefix, kind=kind, max_keys=max_keys)
    _emit(names, as_json, "\n".join)


def _event_dict(event: MemoryChangeEvent) -> dict[str, Any]:
    data = dataclasses.asdict(event)
    data["created_at"] = event.created_at.isoformat()
    return data


def _event_line(event: MemoryChangeEvent) -> str:
    where = f"{event.scope}:{event.scope_id}"
    value = "" if event.action == "delete" else (
        " (value omitted)" if event.value_omitted else f" = {json.dumps(event.value)}")
    when = event.created_at.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3]
    return (f"{event.sequence} {when} {event.action} {event.kind} {where} {event.key} "
            f"rev {event.revision} by {event.principal}{value}")


@main.command()
@url_option
@namespace_option
@click.option("--scope", "-s", "scope_spec", default=None,
              help="Only this scope kind (session) or scope (session:ID).")
@click.option("--after", type=int, default=0, show_default=True, help="Start after this sequence.")
@click.option("--pattern", "-p", "patterns", multiple=True, help="Shell-style key pattern.")
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new events.")
@click.option("--limit", type=int, default=1000, show_default=True,
              help="Events per page read (without --follow).")
@json_option
@_with_memory
async def changes(mem: Memory, scope_spec: str | None, after: int, patterns: tuple[str, ...],
                  follow: bool, limit: int, as_json: bool) -> None:
    """Print change events of the namespace (JSON Lines with --json)."""
    kind, _, sid = (scope_spec or "").partition(":")
    scoped = _scope(mem, scope_spec or "") if sid or kind == "global" else None
    show: Callable[[MemoryChangeEvent], None] = (
        (lambda e: click.echo(json.dumps(_event_dict(e), sort_keys=True))) if as_json
        else (lambda e: click.echo(_event_line(e))))
    if follow:
        stream = (scoped.watch(patterns or "*", after=after) if scoped
                  else mem.watch(patterns or "*", scope=kind or None, after=after))
        async for event in stream:
            show(event)
        return
    cursor = after
    while True:
        page = await (scoped.changes(after=cursor, limit=limit) if scoped
                      else mem.changes(after=cursor, limit=limit, scope=kind or None))
        if cursor + 1 < page.oldest_sequence:
            click.echo(f"warning: events after {cursor} up to {page.oldest_sequence - 1} "
                       "were trimmed by retention", err=True)
        for event in page.items:
            if not patterns or any(fnmatch.fnmatchcase(event.key, p) for p in patterns):
                show(event)
        if page.next_cursor == cursor:
            return
        cursor = page.next_cursor


@main.command()
@url_option
@namespace_option
@json_option
@_with_memory
async def trim(mem: Memory, as_json: bool) -> None:
    """Drop change events older than the namespace's retention now."""
    dropped = await mem.trim_feed()
    _emit({"namespace": mem.namespace, "trimmed": dropped}, as_json,
          lambda d: f"trimmed {d['trimmed']} events from {d['namespace']}")


@main.group()
def vectors() -> None:
    """Inspect and search vector memory."""


def _json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"{what} is not valid JSON: {exc}") from None


@vectors.command("set")
@scoped_options
@click.option("--metadata", "metadata_json", default=None,
              help='A JSON object: \'{"colour": "blue"}\'.')
@click.option("--ttl", type=float, default=None, help="Expire after this many seconds.")
@click.option("--expected-revision", type=int, default=None, help="Write only at this revision.")
@click.argument("key")
@click.argument("embedding")
@_with_memory
async def vectors_set(mem: Memory, scope_spec: str, key: str, embedding: str,
                      metadata_json: str | None, ttl: float | None,
                      expected_revision: int | None, as_json: bool) -> None:
    """Store the vector KEY; EMBEDDING is a JSON array of numbers."""
    revision = await _scope(mem, scope_spec).set_vector(
        key, _json_arg(embedding, "EMBEDDING"),
        _json_arg(metadata_json, "--metadata") if metadata_json else None,
        expected_revision=expected_revision, ttl_seconds=ttl)
    _emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@vectors.command("list")
@scoped_options
@click.option("--prefix", default=None, help="Only keys starting with this.")
@click.option("--max-keys", type=int, default=100_000, show_default=True)
@_with_memory
async def vectors_list(mem: Memory, scope_spec: str, prefix: str | None, max_keys: int,
                       as_json: bool) -> None:
    """List vector keys of a scope, ascending."""
    names = await _scope(mem, scope_spec).list_keys(prefix, kind="vector", max_keys=max_keys)
    _emit(names, as_json, "\n".join)


@vectors.command("get")
@scoped_options
@click.argument("key")
@_with_memory
async def vectors_get(mem: Memory, scope_spec: str, key: str, as_json: bool) -> None:
    """Show the vector KEY: revision, metadata, embedding."""
    got = await _scope(mem, scope_spec).get_vector(key)
    _emit(dataclasses.asdict(got) | {"key": key}, as_json,
          lambda d: (f"revision {d['revision']} metadata {json.dumps(d['metadata'])}\n"
                     f"embedding ({len(d['embedding'])}) {json.dumps(d['embedding'])}")
          if d["found"] else "(absent)")


@vectors.command("search")
@scoped_options
@click.option("--top-k", type=int, default=10, show_default=True)
@click.option("--filter", "filter_json", default=None,
              help='Equality conditions on metadata, as JSON: \'{"colour": "blue"}\'.')
@click.option("--min-score", type=float, default=None, help="Drop matches scoring lower.")
@click.argument("query")
@_with_memory
async def vectors_search(mem: Memory, scope_spec: str, query: str, top_k: int,
                         filter_json: str | None, min_score: float | None,
                         as_json: bool) -> None:
    """Rank the scope's vectors by cosine similarity to QUERY (a JSON array)."""
    found = await _scope(mem, scope_spec).similarity_search(
        _json_arg(query, "QUERY"), top_k,
        filter=_json_arg(filter_json, "--filter") if filter_json else None, min_score=min_score)
    _emit([dataclasses.asdict(m) for m in found], as_json,
          lambda rows: "\n".join(f"{r['score']:.4f} {r['key']} rev {r['revision']} "
                                 f"{json.dumps(r['metadata'])}" for r in rows))


@vectors.command("delete")
@scoped_options
@click.option("--expected-revision", type=int, default=None, help="Delete only at this revision.")
@click.argument("key")
@_with_memory
async def vectors_delete(mem: Memory, scope_spec: str, key: str, expected_revision: int | None,
                         as_json: bool) -> None:
    """Delete the vector KEY."""
    deleted = await _scope(mem, scope_spec).delete_vector(key,
                                                          expected_revision=expected_revision)
    _emit({"key": key, "deleted": deleted}, as_json,
          lambda d: "deleted" if d["deleted"] else "(absent)")


def _with_store(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Open a RedisMemoryStore for the command from --url and --namespace."""

    @functools.wraps(fn)
    def wrapper(url: str | None, namespace: str, **kwargs: Any) -> T:
        async def main() -> T:
            async with RedisMemoryStore(url, namespace=namespace) as store:
                return await fn(store, **kwargs)

        return _run(main())

    return wrapper


@main.group()
def threads() -> None:
    """Inspect and compact conversation threads (MemoryStore events)."""


@threads.command("list")
@url_option
@namespace_option
@json_option
@_with_store
async def threads_list(store: RedisMemoryStore, as_json: bool) -> None:
    """Threads, latest event first, with their event counts."""
    rows = []
    for thread, last in await store.list_threads():
        count = await store.memory.client.xlen(K.thread_events(store.namespace, thread))
        rows.append({"thread_id": thread, "events": count, "last_event_ms": last})
    _emit(rows, as_json, lambda rs: "\n".join(
        f"{r['thread_id']}  {r['events']} events  last event at {r['last_event_ms']}"
        for r in rs))


@threads.command("show")
@url_option
@namespace_option
@click.option("--limit", type=int, default=50, show_default=True, help="Most recent N events.")
@json_option
@click.argument("thread_id")
@_with_store
async def threads_show(store: RedisMemoryStore, thread_id: str, limit: int,
                       as_json: bool) -> None:
    """The most recent events of THREAD_ID, oldest first."""
    events = [dataclasses.asdict(e) for e in await store.get_recent_events(thread_id, limit)]
    _emit(events, as_json, lambda es: "\n".join(
        f"{e['timestamp']} {e['type']} {e['id']} {json.dumps(e['payload'])}" for e in es))


@threads.command("compact")
@url_option
@namespace_option
@click.option("--max-events", type=int, default=500, show_default=True)
@click.option("--keep-type", "keep_types", multiple=True, help="Event type always kept first.")
@click.option("--scan-limit", type=int, default=20_000, show_default=True)
@json_option
@click.argument("thread_id")
@_with_store
async def threads_compact(store: RedisMemoryStore, thread_id: str, max_events: int,
                          keep_types: tuple[str, ...], scan_limit: int, as_json: bool) -> None:
    """Apply a retention policy to THREAD_ID."""
    result = await store.compact_thread(
        thread_id, RetentionPolicy(max_events, list(keep_types), scan_limit))
    _emit(dataclasses.asdict(result), as_json,
          lambda d: f"removed {d['events_removed']} events, kept {d['events_kept']}")


@main.group()
def ltm() -> None:
    """Inspect and search long-term memories."""


user_option = click.option("--user", "user_id", default=None,
                           help="User id (default: the shared memories).")


def _memory_line(memory: dict[str, Any], score: float | None = None) -> str:
    prefix = "" if score is None else f"{score:.4f} "
    return f"{prefix}{memory['id']} [{memory['scope']}] {memory['text']}"


@ltm.command("list")
@url_option
@namespace_option
@user_option
@click.option("--scope", "memory_scope", default=None, help="Only this memory scope.")
@click.option("--limit", type=int, default=100, show_default=True)
@json_option
@_with_store
async def ltm_list(store: RedisMemoryStore, user_id: str | None, memory_scope: str | None,
                   limit: int, as_json: bool) -> None:
    """A user's memories, newest first."""
    found = await store.list_long_term_memories(user_id, scope=memory_scope, limit=limit)
    _emit([dataclasses.asdict(m) for m in found], as_json,
          lambda ms: "\n".join(_memory_line(m) for m in ms))


@ltm.command("search")
@url_option
@namespace_option
@user_option
@click.option("--scope", "memory_scope", default=None, help="Only this memory scope.")
@click.option("--limit", type=int, default=10, show_default=True)
@json_option
@click.argument("query")
@_with_store
async def ltm_search(store: RedisMemoryStore, user_id: str | None, memory_scope: str | None,
                     limit: int, query: str, as_json: bool) -> None:
    """Text search (BM25) over a user's memories."""
    found = await store.search_long_term_memory_text(user_id, query, scope=memory_scope,
                                                     limit=limit)
    _emit([dataclasses.asdict(m) for m in found], as_json,
          lambda ms: "\n".join(_memory_line(m) for m in ms))


@main.command()
@url_option
@click.option("--namespace", "-n", default="demo", show_default=True, help="Namespace.")
@json_option
@_with_memory
async def demo(mem: Memory, as_json: bool) -> None:
    """Run the reference "sessions" example on the server and narrate it."""
    from . import demo as example

    lines: list[str] = []
    result = await example.run(mem, say=lines.append if as_json else click.echo)
    if as_json:
        click.echo(json.dumps({"log": lines, "revision": result["revision"],
                               "notes": result["notes"]}))


@main.command()
@click.option("--url", envvar="REDISMEM_URL", default=None,
              help="Also report this server's library version (default: $REDISMEM_URL).")
@json_option
def version(url: str | None, as_json: bool) -> None:
    """The package and bundled Lua library versions (and a server's, with --url)."""
    from . import __version__

    data: dict[str, Any] = {"redismem": __version__, "library_version": bundled().version}
    if url:
        async def loaded() -> int | None:
            client = await open_client(url)
            try:
                return await server_version(client)
            finally:
                await client.aclose()

        data["url"], data["server_library_version"] = url, _run(loaded())
    _emit(data, as_json, lambda d: f"redismem {d['redismem']}, Lua library version "
                                   f"{d['library_version']}" + (
                                       f"; {d['url']} runs library version "
                                       f"{d['server_library_version']}" if "url" in d else ""))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
