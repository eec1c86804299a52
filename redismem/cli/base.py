"""The command line's group and what its commands share: options, running a
coroutine, printing text or JSON, the scope and connection of a command."""

from __future__ import annotations

import datetime
import functools
import importlib
import json
import os
import sys
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import click

from .._validate import SCOPES, check_id
from ..errors import InvalidArgumentError, RedisMemError
from ..limits import CONNECT_TIMEOUT, CONNECT_TIMEOUT_ENV

if TYPE_CHECKING:
    from ..memory import Memory
    from ..scope import MemoryScope

# This module, click and the few modules above are all that `redismem
# --help`, `--version` and a usage error import (tests/test_cli_startup.py
# counts them): redis-py, asyncio and the facade are imported by the
# commands that use them, when they run.

T = TypeVar("T")


EXIT_REFUSED = 1
"""A refused operation: a bad value, a permission, a server that said no."""
EXIT_USAGE = 2
"""A usage error: an unknown option, a --scope or JSON argument that does
not parse, a missing input file."""
EXIT_CURSOR_EXPIRED = 3
"""A saved feed cursor older than the retained feed (``changes --from SEQ``)."""
EXIT_CONFLICT = 4
"""A write lost a race: a stale --expected-revision, or a stale turn token:
read again and retry."""
EXIT_UNAVAILABLE = 5
"""No server answered (down, unreachable, refused the connection): try
again later, or check --url."""

EXIT_OUTPUT_CLOSED = 141
"""The reader of standard output went away (``| head``), as for Unix tools
killed by SIGPIPE: nothing is printed."""


class CommandError(click.ClickException):
    """A refused operation, with its redismem error ``code``."""

    exit_code = EXIT_REFUSED

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class ExpiredCursor(CommandError):
    """A saved feed cursor older than the retained feed."""

    exit_code = EXIT_CURSOR_EXPIRED


class Conflict(CommandError):
    """A write that lost a race (a stale revision or turn token)."""

    exit_code = EXIT_CONFLICT


class Unavailable(CommandError):
    """No server answered."""

    exit_code = EXIT_UNAVAILABLE


class BadUrl(CommandError):
    """--url (or REDISMEM_URL) does not parse: a usage error."""

    exit_code = EXIT_USAGE


_ERROR_BY_CODE: dict[str, type[CommandError]] = {
    "revision_conflict": Conflict, "stale_turn": Conflict, "cursor_expired": ExpiredCursor,
    "unavailable": Unavailable, "invalid_url": BadUrl}


def command_error(message: str, code: str) -> CommandError:
    """The CommandError for redismem error ``code``, whose class gives the exit code."""
    return _ERROR_BY_CODE.get(code, CommandError)(message, code)


class OutputClosed(Exception):
    """Standard output's reader went away."""


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro``; turn our errors and connection failures into one line, exit 1
    (3 for an expired cursor)."""
    import asyncio

    import redis

    from ..functions import denied

    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        raise click.exceptions.Exit(130) from None
    except BrokenPipeError:
        raise OutputClosed from None
    except RedisMemError as exc:
        raise command_error(f"{type(exc).__name__}: {exc}", exc.code) from None
    except redis.exceptions.NoPermissionError as exc:  # a direct command no call site names
        refused = denied(exc)
        assert refused is not None
        raise command_error(f"{type(refused).__name__}: {refused}", refused.code) from None
    except (ValueError, redis.RedisError, OSError) as exc:
        code = ("invalid_argument" if isinstance(exc, ValueError) else
                "unavailable" if isinstance(exc, redis.ConnectionError | redis.TimeoutError)
                else "redis_error" if isinstance(exc, redis.RedisError) else "os_error")
        raise command_error(f"{type(exc).__name__}: {exc}", code) from None


def say(text: str) -> None:
    """One line on standard output."""
    try:
        click.echo(text)
    except BrokenPipeError:
        raise OutputClosed from None


def shown(name: str) -> str:
    """A name (key, scope id, holder, principal) as a terminal may print it:
    control and format characters (escape sequences, bidi overrides,
    zero-width joiners a raw write put in a name) as ``\\xNN`` or
    ``\\uNNNN``, the rest as it is."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() or c == " " else c.encode("unicode_escape").decode()
                   for c in name)


def absent() -> str:
    """What a read of an absent key prints: ``(absent)`` on a terminal,
    nothing into a pipe (so that ``| wc -l`` counts)."""
    return "(absent)" if sys.stdout.isatty() else ""


def emit(data: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
    """``data`` as one line of JSON, or as ``text(data)``; an empty text
    prints nothing (so that ``| wc -l`` counts), or ``(none)`` on a terminal."""
    shown = json.dumps(data, sort_keys=True, default=str) if as_json else (
        text(data) if text else str(data))
    if shown:
        say(shown)
    elif sys.stdout.isatty():
        say("(none)")


def iso_ms(ms: int | float | None) -> str:
    """Epoch milliseconds as an ISO 8601 UTC time, to the millisecond."""
    if ms is None:
        return "-"
    moment = datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


url_option = click.option("--url", envvar="REDISMEM_URL", default=None,
                          help="Redis URL (default: $REDISMEM_URL, else the embedded server).")


namespace_option = click.option("--namespace", "-n", default="default", show_default=True,
                                help="Namespace.")


json_option = click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")


def _scope_problem(spec: str) -> str | None:
    """What is wrong with a ``--scope KIND[:ID]``, or None."""
    kind, _, sid = spec.partition(":")
    if kind not in SCOPES:
        return f"the kind must be one of {', '.join(SCOPES)}, got {kind!r}"
    if kind in ("session", "workflow") and not sid:
        return f"a {kind} scope needs an id: {kind}:ID"
    if sid and kind != "global":
        try:
            check_id("scope id", sid)
        except InvalidArgumentError as exc:
            return str(exc)
    return None


def scope_spec(_ctx: click.Context, _param: click.Parameter, spec: str | None) -> str | None:
    """A --scope checked before anything connects: a usage error names the problem."""
    problem = None if spec is None else _scope_problem(spec)
    if problem:
        raise click.BadParameter(problem)
    return spec


scope_option = click.option("--scope", "-s", "scope_spec", default="global", show_default=True,
                            callback=scope_spec,
                            help="Scope as KIND[:ID], e.g. session:s-42, actor:bob, global.")


def scoped_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--url, --namespace, --scope and --json: the options of every scope command."""
    for option in (json_option, scope_option, namespace_option, url_option):
        fn = option(fn)
    return fn


def expiry_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--ttl and --persist, the expiry of a write: by default the key keeps
    its own (a new key gets none)."""
    fn = click.option("--persist", is_flag=True,
                      help="Remove the key's expiry (default: keep it).")(fn)
    return click.option("--ttl", type=click.FloatRange(min=0, min_open=True), default=None,
                        help="Expire this many seconds from now (default: the key keeps "
                        "its expiry; a new key gets none).")(fn)


def expiry(ttl: float | None, persist: bool) -> dict[str, Any]:
    """The expiry arguments of a write, from --ttl and --persist."""
    if ttl is not None and persist:
        raise click.UsageError("give --ttl or --persist, not both")
    return {"ttl_seconds": ttl, "persist": persist}


def scope_of(mem: Memory, spec: str) -> MemoryScope:
    """The scope ``--scope KIND[:ID]`` names; a usage error when it names none."""
    problem = _scope_problem(spec)
    if problem:
        raise click.UsageError(f"--scope: {problem}")
    kind, _, sid = spec.partition(":")
    if kind == "global":
        return mem.global_scope()
    if kind == "actor":
        return mem.actor(sid or None)
    return mem.session(sid) if kind == "session" else mem.workflow(sid)


def using_memory(url: str | None, namespace: str,
                 fn: Callable[[Memory], Coroutine[Any, Any, T]]) -> T:
    """Run ``fn`` with a Memory of ``url`` and ``namespace``, closed after."""
    from ..memory import connect

    async def main() -> T:
        async with await connect(url, namespace=namespace) as mem:
            return await fn(mem)

    return run_sync(main())


def with_memory(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Open a Memory for the command from --url and --namespace, close it
    after; a command with --ttl and --persist is refused both before it
    connects (a usage error needs no server)."""

    @functools.wraps(fn)
    def wrapper(url: str | None, namespace: str, **kwargs: Any) -> T:
        if "ttl" in kwargs and "persist" in kwargs:
            expiry(kwargs["ttl"], kwargs["persist"])
        return using_memory(url, namespace, lambda mem: fn(mem, **kwargs))

    return wrapper


# Each command: the module of this package that defines it, and the start of
# its help's first paragraph, which `redismem --help` lists without
# importing the module (tests/test_cli_startup.py checks both).
COMMANDS: dict[str, tuple[str, str]] = {
    "append": ("data",
        'Append ITEM (JSON) to the list at KEY (absent = []) in one server-side call.'),
    "audit": ("admin",
        'List the entries of a namespace that the library did not write (raw commands): values '
        'that are not strict JSON, malformed'),
    "changes": ("data",
        'Print change events of the namespace, one a line (JSON Lines with --json), from the '
        'oldest retained one; with --follow, new'),
    "config": ("namespace",
        'The namespace settings (configure() in Python): limits, retention, the vector index.'),
    "del": ("data", 'Delete KEY.'),
    "demo": ("data", 'Run the reference "sessions" example on the server and narrate it.'),
    "down": ("admin", 'Stop the embedded server cleanly.'),
    "drop": ("lifecycle",
        'Delete every key of the namespace (values, vectors, threads, memories, checkpoints, '
        'the feed, settings, turns) and its search'),
    "export": ("transfer",
        'Write a namespace as JSON Lines: settings, sessions, values, vectors, thread events, '
        'long-term memories and LangGraph checkpoints, with revisions'),
    "forget-user": ("lifecycle",
        'Delete everything of USER in the namespace (a data-protection request): its long-term '
        'memories, its events in every thread'),
    "get": ("data", 'Read KEY.'),
    "import": ("transfer", 'Restore an export FILE (- = standard input).'),
    "incr": ("data",
        'Add --by to the integer at KEY (absent = 0) in one server-side call: concurrent '
        'increments never conflict.'),
    "index": ("admin",
        "Create a namespace's search indexes: the long-term memory text index and the vector "
        'index of each --dim.'),
    "keys": ("data", 'List key names of a scope, ascending, one a line.'),
    "load-functions": ("admin",
        'Load the Lua library into a Redis server (on a cluster: into every primary), reporting '
        'the version replaced.'),
    "ltm": ("store", 'Inspect and search long-term memories.'),
    "mcp": ("mcp", "Serve the namespace's memory to MCP clients (agents) over stdio."),
    "merge": ("data",
        'Apply PATCH (a JSON object; null deletes a member) to the object at KEY as an RFC 7386 '
        'merge patch, in one server-side call.'),
    "repair-feed": ("admin",
        'Restore a change feed that raw writes jammed (a sequence counter or a stream id past any'
        ' real one, entries not written by'),
    "scopes": ("namespace",
        'The scopes of the namespace that hold keys, with their value and vector counts (from the'
        " namespace's scope registry: no SCAN)."),
    "set": ("data", 'Write KEY = VALUE.'),
    "status": ("admin",
        'Server, modules, library version, capabilities and, per namespace, keys, threads, feed, '
        'indexes and memory used.'),
    "threads": ("store",
        'Inspect, compact and delete conversation threads (MemoryStore events, LangGraph '
        'checkpoints).'),
    "trim": ("admin", "Drop change events older than the namespace's retention now."),
    "turns": ("turns",
        "Each turn of the namespace's sessions and workflows: its latest token, who holds it and "
        'until when, and who waits for it'),
    "up": ("admin", 'Start the embedded server (or report the one running).'),
    "users": ("users",
        'Credentials: ACL users with a role in one namespace (reader, writer, admin, worker) or '
        'server-wide (operator).'),
    "vectors": ("vectors", 'Inspect and search vector memory.'),
    "version": ("admin",
        "The package and bundled Lua library versions (and a server's, with --url)."),
    "watch": ("data",
        'Wait for change events and print each as it comes, one a line (JSON Lines with --json), '
        'from now unless --from says otherwise:'),
}


class _Group(click.Group):
    """The command group; every error, usage errors included, is one line on
    stderr and a non-zero exit code, never a traceback (``REDISMEM_DEBUG=1``
    shows the traceback of an unexpected one). A command's module is
    imported when the command is looked up (to run it or show its help)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            importlib.import_module(f"{__package__}.{COMMANDS[name][0]}")  # registers it
        return super().get_command(ctx, name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click lists commands, from :data:`COMMANDS` for those not imported."""
        names = [name for name in self.list_commands(ctx)
                 if name not in self.commands or not self.commands[name].hidden]
        if not names:
            return
        limit = formatter.width - 6 - max(map(len, names))
        rows = [(name, (self.commands.get(name) or click.Command(name, help=COMMANDS[name][1]))
                 .get_short_help_str(limit)) for name in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    def main(self, args: Any = None, *rest: Any, standalone_mode: bool = True,
             **kwargs: Any) -> Any:
        run: Any = super().main  # typed as never returning when standalone
        if not standalone_mode:
            return run(args, *rest, standalone_mode=False, **kwargs)
        words = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in words[:words.index("--")] if "--" in words else "--json" in words
        try:
            result = run(words, *rest, standalone_mode=False, **kwargs)
        except (OutputClosed, BrokenPipeError):
            _silence_stdout()
            sys.exit(EXIT_OUTPUT_CLOSED)
        except click.exceptions.Abort:
            _fail("aborted", "aborted", EXIT_REFUSED, as_json)
        except click.ClickException as exc:
            hint = ""
            if isinstance(exc, click.UsageError) and exc.ctx is not None:
                hint = f" (see {exc.ctx.command_path} --help)"
            code = getattr(exc, "code", "usage" if isinstance(exc, click.UsageError)
                           else "error")
            _fail(exc.format_message() + hint, code, exc.exit_code, as_json)
        except Exception as exc:
            if os.environ.get("REDISMEM_DEBUG"):
                raise
            _fail(f"unexpected {type(exc).__name__}: {exc} (REDISMEM_DEBUG=1 shows the "
                  "traceback)", "unexpected", EXIT_REFUSED, as_json)
        sys.exit(result if isinstance(result, int) else 0)


def _fail(message: str, code: str, exit_code: int, as_json: bool) -> NoReturn:
    """The error: one line on stderr, ``{"error": code, "message": ...}`` with --json."""
    click.echo(json.dumps({"error": code, "message": message}) if as_json
               else f"Error: {message}", err=True)
    sys.exit(exit_code)


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so that the interpreter's last
    flush does not complain about the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


@click.group(cls=_Group)
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _, wanted: _version_flag(ctx, wanted),
              help="Print what `redismem version` prints and exit.")
@click.option("--connect-timeout", type=click.FloatRange(min=0), default=None,
              metavar="SECONDS",
              help="How long to keep trying a server that refuses or does not answer "
                   f"(default ${CONNECT_TIMEOUT_ENV}, else {CONNECT_TIMEOUT:g}; 0 = once).")
def main(connect_timeout: float | None) -> None:
    """redismem: shared, durable memory for fleets of agent workers, in Redis.

    \b
    Exit codes: 0 done; 1 refused (a bad value, a permission, a server
    that said no); 2 a usage error (an unknown option, a --scope, --url or
    JSON argument that does not parse, a missing input file); 3 an expired
    feed cursor (changes --from SEQ); 4 a write conflict (a stale revision
    or turn: read again and retry); 5 no server answered; 141 standard
    output was closed (| head).
    An error is one line on stderr; with --json one JSON object,
    {"error": CODE, "message": ...}."""
    if connect_timeout is not None:
        os.environ[CONNECT_TIMEOUT_ENV] = repr(connect_timeout)
    _say_retries()


def _say_retries() -> None:
    """A retried first connection, or an embedded server a command started,
    is one line on stderr."""
    import logging

    for name in ("redismem.connect", "redismem.server"):  # client.connecting, server.started
        logger = logging.getLogger(name)
        if not logger.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter("%(message)s"))
            logger.addHandler(handler)
            logger.setLevel(logging.WARNING)
            logger.propagate = False


def json_arg(text: str, what: str, hint: str = "") -> Any:
    """``text`` parsed as JSON; a usage error naming ``what`` when it is not."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.UsageError(f"{what} is not valid JSON: {exc}{hint}") from None


class JsonText(click.ParamType):  # type: ignore[type-arg]  # generic in click 8.2+
    """An argument or option that is JSON, parsed as the command line is
    (before anything connects): a usage error naming ``what`` when it is not."""

    name = "json"

    def __init__(self, what: str) -> None:
        self.what = what

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> Any:
        return json_arg(value, self.what) if isinstance(value, str) else value


def with_store(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Open a RedisMemoryStore for the command from --url and --namespace."""

    @functools.wraps(fn)
    def wrapper(url: str | None, namespace: str, **kwargs: Any) -> T:
        from ..store import RedisMemoryStore

        async def main() -> T:
            async with RedisMemoryStore(url, namespace=namespace) as store:
                return await fn(store, **kwargs)

        return run_sync(main())

    return wrapper


def print_version(url: str | None, as_json: bool) -> None:
    """The package's and the bundled Lua library's versions, and with ``url``
    the library version that server runs: what ``redismem version`` and
    ``redismem --version`` print."""
    from .. import __version__
    from ..lua_source import bundled

    data: dict[str, Any] = {"redismem": __version__, "library_version": bundled().version}
    if url:
        from ..client import open_client, redact
        from ..library import server_version

        async def loaded() -> int | None:
            client = await open_client(url)
            try:
                return await server_version(client)
            finally:
                await client.aclose()

        data["url"], data["server_library_version"] = redact(url), run_sync(loaded())
    emit(data, as_json, lambda d: f"redismem {d['redismem']}, Lua library version "
                                  f"{d['library_version']}" + (
                                      f"; {d['url']} runs library version "
                                      f"{d['server_library_version']}" if "url" in d else ""))


def _version_flag(ctx: click.Context, wanted: bool) -> None:
    if wanted and not ctx.resilient_parsing:
        print_version(None, False)
        ctx.exit()
