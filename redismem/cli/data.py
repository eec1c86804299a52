"""Commands on values and the change feed: get, set, incr, append, merge, del,
keys, changes, and the demo."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
from collections.abc import Callable
from typing import Any

import click

from ..memory import Memory
from ..types import MemoryChangeEvent
from .base import (
    emit,
    json_arg,
    json_option,
    main,
    namespace_option,
    scope_of,
    scoped_options,
    url_option,
    with_memory,
)


@main.command("get")
@scoped_options
@click.argument("key")
@with_memory
async def get_cmd(mem: Memory, scope_spec: str, key: str, as_json: bool) -> None:
    """Read KEY."""
    got = await scope_of(mem, scope_spec).get(key)
    emit({"key": key, "value": got.value, "revision": got.revision, "found": got.found},
          as_json, lambda d: json.dumps(d["value"]) if d["found"] else "(absent)")


@main.command("set")
@scoped_options
@click.option("--ttl", type=float, default=None, help="Expire after this many seconds.")
@click.option("--expected-revision", type=int, default=None, help="Write only at this revision.")
@click.argument("key")
@click.argument("value")
@with_memory
async def set_cmd(mem: Memory, scope_spec: str, key: str, value: str, ttl: float | None,
                  expected_revision: int | None, as_json: bool) -> None:
    """Write KEY = VALUE (VALUE is JSON; plain text is stored as a string)."""
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError:
        parsed = value
    revision = await scope_of(mem, scope_spec).set(key, parsed, ttl_seconds=ttl,
                                                 expected_revision=expected_revision)
    emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


ttl_keep_option = click.option(
    "--ttl", type=float, default=None,
    help="Set the key's expiry to this many seconds (default: keep the key's expiry).")


@main.command("incr")
@scoped_options
@click.option("--by", type=int, default=1, show_default=True, help="The integer to add.")
@ttl_keep_option
@click.argument("key")
@with_memory
async def incr_cmd(mem: Memory, scope_spec: str, key: str, by: int, ttl: float | None,
                   as_json: bool) -> None:
    """Add --by to the integer at KEY (absent = 0) in one server-side call:
    concurrent increments never conflict."""
    got = await scope_of(mem, scope_spec).incr(key, by=by, ttl_seconds=ttl)
    emit({"key": key, "value": got.value, "revision": got.revision}, as_json,
          lambda d: f"{d['value']} (revision {d['revision']})")


@main.command("append")
@scoped_options
@click.option("--max-items", type=int, default=None,
              help="Keep only the last N items (a capped log).")
@ttl_keep_option
@click.argument("key")
@click.argument("item")
@with_memory
async def append_cmd(mem: Memory, scope_spec: str, key: str, item: str, max_items: int | None,
                     ttl: float | None, as_json: bool) -> None:
    """Append ITEM (JSON) to the list at KEY (absent = []) in one server-side call."""
    revision = await scope_of(mem, scope_spec).append(key, json_arg(item, "ITEM"),
                                                    max_items=max_items, ttl_seconds=ttl)
    emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@main.command("merge")
@scoped_options
@ttl_keep_option
@click.argument("key")
@click.argument("patch")
@with_memory
async def merge_cmd(mem: Memory, scope_spec: str, key: str, patch: str, ttl: float | None,
                    as_json: bool) -> None:
    """Apply PATCH (a JSON object; null deletes a member) to the object at KEY
    as an RFC 7386 merge patch, in one server-side call."""
    revision = await scope_of(mem, scope_spec).merge(key, json_arg(patch, "PATCH"),
                                                   ttl_seconds=ttl)
    emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@main.command("del")
@scoped_options
@click.option("--expected-revision", type=int, default=None, help="Delete only at this revision.")
@click.argument("key")
@with_memory
async def del_cmd(mem: Memory, scope_spec: str, key: str, expected_revision: int | None,
                  as_json: bool) -> None:
    """Delete KEY."""
    deleted = await scope_of(mem, scope_spec).delete(key, expected_revision=expected_revision)
    emit({"key": key, "deleted": deleted}, as_json,
          lambda d: "deleted" if d["deleted"] else "(absent)")


@main.command("keys")
@scoped_options
@click.option("--prefix", default=None, help="Only keys starting with this.")
@click.option("--kind", type=click.Choice(["value", "vector"]), default="value",
              show_default=True)
@click.option("--max-keys", type=int, default=100_000, show_default=True)
@with_memory
async def keys_cmd(mem: Memory, scope_spec: str, prefix: str | None, kind: Any, max_keys: int,
                   as_json: bool) -> None:
    """List key names of a scope, ascending."""
    names = await scope_of(mem, scope_spec).list_keys(prefix, kind=kind, max_keys=max_keys)
    emit(names, as_json, "\n".join)


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
@with_memory
async def changes(mem: Memory, scope_spec: str | None, after: int, patterns: tuple[str, ...],
                  follow: bool, limit: int, as_json: bool) -> None:
    """Print change events of the namespace (JSON Lines with --json)."""
    kind, _, sid = (scope_spec or "").partition(":")
    scoped = scope_of(mem, scope_spec or "") if sid or kind == "global" else None
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
@click.option("--namespace", "-n", default="demo", show_default=True, help="Namespace.")
@json_option
@with_memory
async def demo(mem: Memory, as_json: bool) -> None:
    """Run the reference "sessions" example on the server and narrate it."""
    from .. import demo as example

    lines: list[str] = []
    result = await example.run(mem, say=lines.append if as_json else click.echo)
    if as_json:
        click.echo(json.dumps({"log": lines, "revision": result["revision"],
                               "notes": result["notes"]}))
