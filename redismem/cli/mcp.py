"""``redismem mcp``: the namespace's memory as a Model Context Protocol
server (:mod:`redismem.mcp_server`; the ``mcp`` extra)."""

from __future__ import annotations

from .base import CommandError, main, namespace_option, run_sync, url_option


@main.command("mcp")
@url_option
@namespace_option
def mcp_cmd(url: str | None, namespace: str) -> None:
    """Serve the namespace's memory to MCP clients (agents) over stdio.

    An MCP host starts it: {"command": "redismem", "args": ["mcp",
    "--namespace", "NS"], "env": {"REDISMEM_URL": "..."}}. It acts with the
    URL's credentials. Tools: memory_get, memory_set, memory_merge,
    memory_delete, memory_list, memory_changes, thread_append,
    thread_recent, remember, recall, forget (docs/mcp.md)."""
    try:
        from ..mcp_server import build
    except ImportError as exc:
        raise CommandError(f"redismem mcp needs the mcp extra: pip install 'redismem[mcp]' "
                           f"({exc})", "missing_extra") from None

    async def serve() -> None:
        try:
            await build(url, namespace).run_stdio_async()
        except BaseExceptionGroup as group:  # the SDK's task groups: say what went wrong
            raise _first(group) from None

    run_sync(serve())


def _first(error: BaseException) -> BaseException:
    """The first error inside nested exception groups."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error
