"""The command line's group and what its commands share: options, running a
coroutine, printing text or JSON, the scope and connection of a command."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import click
import redis

from ..client import connecting, open_client, redact
from ..errors import RedisMemError
from ..library import bundled, server_version
from ..memory import Memory, connect
from ..retries import CONNECT_TIMEOUT, CONNECT_TIMEOUT_ENV
from ..scope import MemoryScope
from ..store import RedisMemoryStore

T = TypeVar("T")


_SCOPES = ("session", "actor", "workflow", "global")


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro``; turn our errors and connection failures into one line, exit 1."""
    try:
        return asyncio.run(coro)
    except KeyboardInterrupt:
        raise click.exceptions.Exit(130) from None
    except (RedisMemError, ValueError, redis.RedisError, OSError) as exc:
        raise click.ClickException(f"{type(exc).__name__}: {exc}") from None


def emit(data: Any, as_json: bool, text: Callable[[Any], str] | None = None) -> None:
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


def scope_of(mem: Memory, spec: str) -> MemoryScope:
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


def with_memory(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Open a Memory for the command from --url and --namespace, close it after."""

    @functools.wraps(fn)
    def wrapper(url: str | None, namespace: str, **kwargs: Any) -> T:
        async def main() -> T:
            async with await connect(url, namespace=namespace) as mem:
                return await fn(mem, **kwargs)

        return run_sync(main())

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
@click.option("--version", is_flag=True, expose_value=False, is_eager=True,
              callback=lambda ctx, _, wanted: _version_flag(ctx, wanted),
              help="Print what `redismem version` prints and exit.")
@click.option("--connect-timeout", type=click.FloatRange(min=0), default=None,
              metavar="SECONDS",
              help="How long to keep trying a server that refuses or does not answer "
                   f"(default ${CONNECT_TIMEOUT_ENV}, else {CONNECT_TIMEOUT:g}; 0 = once).")
def main(connect_timeout: float | None) -> None:
    """redismem: shared, durable memory for fleets of agent workers, in Redis."""
    if connect_timeout is not None:
        os.environ[CONNECT_TIMEOUT_ENV] = repr(connect_timeout)
    _say_retries()


def _say_retries() -> None:
    """A retried first connection is one line on stderr."""
    if not connecting.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        connecting.addHandler(handler)
        connecting.setLevel(logging.WARNING)
        connecting.propagate = False


def json_arg(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise click.ClickException(f"{what} is not valid JSON: {exc}") from None


def with_store(fn: Callable[..., Coroutine[Any, Any, T]]) -> Callable[..., T]:
    """Open a RedisMemoryStore for the command from --url and --namespace."""

    @functools.wraps(fn)
    def wrapper(url: str | None, namespace: str, **kwargs: Any) -> T:
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

    data: dict[str, Any] = {"redismem": __version__, "library_version": bundled().version}
    if url:
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
