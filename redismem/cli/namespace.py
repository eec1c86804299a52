"""A namespace's settings and scopes: ``config get|set`` and ``scopes``."""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import click

from .. import limits
from .._validate import SCOPES
from .base import emit, json_option, main, namespace_option, shown, url_option, with_memory

if TYPE_CHECKING:
    from ..memory import Memory


@main.group("config")
def config_group() -> None:
    """The namespace settings (configure() in Python): limits, retention,
    the vector index. Reading needs any role of the namespace, changing an
    admin."""


@config_group.command("get")
@url_option
@namespace_option
@json_option
@click.argument("name", required=False)
@with_memory
async def config_get(mem: Memory, name: str | None, as_json: bool) -> None:
    """Every setting (defaults filled in), or the one NAME."""
    settings = await mem.settings()
    if name is not None:
        if name not in settings:
            raise click.UsageError(f"unknown setting {name!r}; the settings: "
                                   f"{', '.join(sorted(settings))}")
        emit({name: settings[name]}, as_json, lambda d: str(d[name]))
        return
    emit(settings, as_json,
         lambda d: "\n".join(f"{key} = {value}" for key, value in sorted(d.items())))


@config_group.command("set")
@url_option
@namespace_option
@json_option
@click.argument("name")
@click.argument("value")
@with_memory
async def config_set(mem: Memory, name: str, value: str, as_json: bool) -> None:
    """Set NAME to VALUE (an integer, or one of the setting's choices), with
    the bounds and errors of configure(); prints the settings after."""
    parsed: Any = value
    if name not in limits.SETTING_CHOICES:
        with contextlib.suppress(ValueError):  # else configure() says what it takes
            parsed = int(value)
    settings = await mem.configure(**{name: parsed})
    emit(settings, as_json, lambda d: f"{name} = {d[name]}")


@main.command("scopes")
@url_option
@namespace_option
@click.option("--kind", type=click.Choice(SCOPES),
              default=None, help="Only scopes of this kind.")
@json_option
@with_memory
async def scopes_cmd(mem: Memory, kind: str | None, as_json: bool) -> None:
    """The scopes of the namespace that hold keys, with their value and
    vector counts (from the namespace's scope registry: no SCAN)."""
    from .. import stats  # redis-py: imported when the command runs

    rows = [row for row in await stats.scope_counts(mem.client, mem.namespace)
            if kind is None or row["scope"] == kind]
    emit(rows, as_json, lambda rs: "\n".join(
        f"{shown(r['scope'])}:{shown(r['scope_id'])}  {r['values']} values, "
        f"{r['vectors']} vectors"
        for r in rs))
