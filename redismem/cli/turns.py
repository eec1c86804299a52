"""``redismem turns``: who holds the turns of sessions and workflows."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from .base import (
    emit,
    iso_ms,
    json_option,
    main,
    namespace_option,
    scope_spec,
    shown,
    url_option,
    using_memory,
    with_memory,
)

if TYPE_CHECKING:
    from ..memory import Memory


def _line(row: dict[str, Any]) -> str:
    where = f"{shown(row['scope'])}:{shown(row['scope_id'])}  token {row['token']}"
    if row["holder"] is None:
        state = "free"
    else:
        state = (f"held by {shown(str(row['holder']))} ({shown(str(row['principal']))}) until "
                 f"{iso_ms(row['expires_at'])}")
    waiting = (f", {row['waiters']} waiting: {', '.join(shown(w) for w in row['queue'])}"
               if row["waiters"] else "")
    return f"{where}  {state}{waiting}"


@main.group("turns", invoke_without_command=True)
@url_option
@namespace_option
@click.option("--scope", "-s", "scope_spec", default=None, callback=scope_spec,
              help="Only this session or workflow, as session:ID or workflow:ID "
                   "(default: every turn of the namespace).")
@json_option
@click.pass_context
def turns_cmd(ctx: click.Context, url: str | None, namespace: str, scope_spec: str | None,
              as_json: bool) -> None:
    """Each turn of the namespace's sessions and workflows: its latest
    token, who holds it and until when, and who waits for it (live
    waiters, in order). With --json, expires_at is in epoch ms (null when
    free). `turns evict` takes a waiter out of a queue."""
    if ctx.invoked_subcommand is None:
        using_memory(url, namespace, lambda mem: _list(mem, scope_spec, as_json))


async def _list(mem: Memory, scope_spec: str | None, as_json: bool) -> None:
    from .. import turns  # redis-py: imported when the command runs

    scope = sid = None
    if scope_spec is not None:
        scope, _, sid = scope_spec.partition(":")
        if scope not in turns.TURN_SCOPES or not sid:
            raise click.BadParameter("turns are taken in session:ID and workflow:ID scopes, "
                                     f"got {scope_spec!r}", param_hint="--scope")
    rows = await turns.states(mem.client, mem.namespace, scope, sid)
    emit(rows, as_json, lambda rs: "\n".join(_line(r) for r in rs))


@turns_cmd.command("evict")
@url_option
@namespace_option
@click.argument("scope", type=click.Choice(["session", "workflow"]))
@click.argument("scope_id")
@click.option("--waiter", "-w", required=True,
              help="The waiter's holder id (`redismem turns` lists them).")
@json_option
@with_memory
async def evict_cmd(mem: Memory, scope: str, scope_id: str, waiter: str, as_json: bool) -> None:
    """Take WAITER out of the queue for the turn of SCOPE SCOPE_ID (an
    admin's): those behind it move up at once, the feed records it
    (kind turn, action evict), and the waiter, should it still run, gets
    TurnWaitLostError at its next look instead of the turn. Exit 1 when it
    was not queued."""
    from .. import turns  # redis-py: imported when the command runs

    evicted = await turns.evict(mem._conn, scope, scope_id, waiter)
    emit({"scope": scope, "scope_id": scope_id, "waiter": waiter, "evicted": evicted}, as_json,
         lambda d: (f"evicted {shown(waiter)} from the queue of {scope}:{shown(scope_id)}"
                    if evicted else f"{shown(waiter)} is not queued for {scope}:"
                                    f"{shown(scope_id)}: nothing changed"))
    if not evicted:
        raise SystemExit(1)
