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
    waiting = f", {row['waiters']} waiting" if row["waiters"] else ""
    return f"{where}  {state}{waiting}"


@main.command("turns")
@url_option
@namespace_option
@click.option("--scope", "-s", "scope_spec", default=None, callback=scope_spec,
              help="Only this session or workflow, as session:ID or workflow:ID "
                   "(default: every turn of the namespace).")
@json_option
@with_memory
async def turns_cmd(mem: Memory, scope_spec: str | None, as_json: bool) -> None:
    """Each turn of the namespace's sessions and workflows: its latest
    token, who holds it and until when, and how many wait for it. With
    --json, expires_at is in epoch ms (null when free)."""
    from .. import turns  # redis-py: imported when the command runs

    scope = sid = None
    if scope_spec is not None:
        scope, _, sid = scope_spec.partition(":")
        if scope not in turns.TURN_SCOPES or not sid:
            raise click.BadParameter("turns are taken in session:ID and workflow:ID scopes, "
                                     f"got {scope_spec!r}", param_hint="--scope")
    rows = await turns.states(mem.client, mem.namespace, scope, sid)
    emit(rows, as_json, lambda rs: "\n".join(_line(r) for r in rs))
