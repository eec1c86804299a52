"""``redismem mcp``: the namespace's memory as a Model Context Protocol
server (:mod:`redismem.mcp_server`; the ``mcp`` extra)."""

from __future__ import annotations

import ipaddress
from pathlib import Path

import click

from .base import CommandError, main, namespace_option, run_sync, url_option


@main.command("mcp")
@url_option
@namespace_option
@click.option("--http", "listen", default=None, metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio. An "
                   "address other than loopback needs --token-file.")
@click.option("--token-file", type=click.Path(exists=True, dir_okay=False), default=None,
              help="A file holding the bearer token every HTTP request must carry.")
@click.option("--embedder", default="auto", show_default=True, envvar="REDISMEM_EMBEDDER",
              metavar="SPEC",
              help="How remember and recall embed texts: none (BM25 text search only), "
                   "wordllama (a local model: the embed extra), auto (wordllama when "
                   "installed), or MODULE:CALLABLE, a function of one text returning a vector.")
def mcp_cmd(url: str | None, namespace: str, listen: str | None,
            token_file: str | None, embedder: str) -> None:
    """Serve the namespace's memory to MCP clients (agents) over stdio.

    An MCP host starts it: {"command": "redismem", "args": ["mcp",
    "--namespace", "NS"], "env": {"REDISMEM_URL": "..."}}. It acts with the
    URL's credentials. Tools: memory_get, memory_set, memory_merge,
    memory_delete, memory_list, memory_changes, thread_append,
    thread_recent, remember, recall, forget (docs/mcp.md). Every value is
    also a resource, redismem://NS/SCOPE/ID/KEY, that a client may read and
    subscribe to. With --http it serves streamable HTTP instead."""
    host, port, token = _http_args(listen, token_file)
    from ..embedders import load
    from ..errors import InvalidArgumentError

    try:
        chosen = load(embedder)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="--embedder") from None
    try:
        from ..mcp_server import build, serve_http
    except ImportError as exc:
        raise CommandError(f"redismem mcp needs the mcp extra: pip install 'redismem[mcp]' "
                           f"({exc})", "missing_extra") from None

    async def serve() -> None:
        server = build(url, namespace, chosen)
        try:
            if host is None:
                await server.run_stdio_async()
            else:
                await serve_http(server, host, port, token)
        except BaseExceptionGroup as group:  # the SDK's task groups: say what went wrong
            raise _first(group) from None

    run_sync(serve())


def _first(error: BaseException) -> BaseException:
    """The first error inside nested exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def _http_args(listen: str | None, token_file: str | None
               ) -> tuple[str | None, int, str | None]:
    """(host, port, token) of --http and --token-file; a usage error for an
    address that does not parse, an empty token file, or an address other
    than loopback without a token."""
    if listen is None:
        if token_file is not None:
            raise click.UsageError("--token-file goes with --http")
        return None, 0, None
    host, _, port = listen.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise click.BadParameter(f"give HOST:PORT, got {listen!r}", param_hint="--http")
    token = Path(token_file).read_text(encoding="utf-8").strip() if token_file else None
    if token_file is not None and not token:
        raise click.BadParameter(f"{token_file} holds no token", param_hint="--token-file")
    if token is None and not is_loopback(host):
        raise click.UsageError(f"refusing to serve {host} without --token-file: only a "
                               "loopback address may go without a token")
    return host, int(port), token


def is_loopback(host: str) -> bool:
    """Whether ``host`` names this machine only (``localhost`` or a loopback address)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False
