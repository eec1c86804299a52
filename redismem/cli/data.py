"""Commands on values and the change feed: get, set, incr, append, merge, del,
keys, changes and watch, and the demo."""

from __future__ import annotations

import dataclasses
import fnmatch
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._validate import SCOPES
from ..errors import CursorExpiredError
from ..limits import EVENT_KINDS
from .base import (
    JsonText,
    absent,
    emit,
    expiry,
    expiry_options,
    iso_ms,
    json_arg,
    json_option,
    main,
    namespace_option,
    say,
    scope_of,
    scope_spec,
    scoped_options,
    shown,
    url_option,
    using_memory,
    with_memory,
)

if TYPE_CHECKING:
    from ..memory import Memory
    from ..types import MemoryChangeEvent


@main.command("get")
@scoped_options
@click.argument("key")
@with_memory
async def get_cmd(mem: Memory, scope_spec: str, key: str, as_json: bool) -> None:
    """Read KEY."""
    got = await scope_of(mem, scope_spec).get(key)
    emit({"key": key, "value": got.value, "revision": got.revision, "found": got.found},
          as_json, lambda d: json.dumps(d["value"]) if d["found"] else absent())


@main.command("set")
@scoped_options
@expiry_options
@click.option("--expected-revision", type=click.IntRange(min=0), default=None,
              help="Write only if the key is at this revision (0: only if absent).")
@click.option("--string", "as_string", is_flag=True,
              help="Store the text as a string, not as JSON.")
@click.option("--file", "from_file", type=click.Path(exists=True, dir_okay=False),
              default=None, help="Read the value from this file (instead of VALUE).")
@click.argument("key")
@click.argument("value", required=False)
def set_cmd(url: str | None, namespace: str, scope_spec: str, key: str, value: str | None,
            ttl: float | None, persist: bool, expected_revision: int | None, as_string: bool,
            from_file: str | None, as_json: bool) -> None:
    """Write KEY = VALUE. VALUE is JSON ('{"a": 1}', '"text"', 3); with
    --string, any text. VALUE - reads standard input; --file F reads F
    (for values past the shell's argument limit)."""
    if (value is None) == (from_file is None):
        raise click.UsageError("give VALUE (- for standard input) or --file F, not both"
                               if value is not None else "missing VALUE (or --file F)")
    if from_file is not None:
        text, what = Path(from_file).read_text(encoding="utf-8"), f"the file {from_file}"
    elif value == "-":
        text, what = sys.stdin.read(), "standard input"
    else:
        text, what = str(value), "VALUE"
    parsed = text if as_string else json_arg(text, what, hint="; --string stores text as is")
    options = expiry(ttl, persist)

    async def write(mem: Memory) -> None:  # after every usage check
        revision = (await scope_of(mem, scope_spec).set(
            key, parsed, **options, expected_revision=expected_revision)).revision
        emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")

    using_memory(url, namespace, write)


@main.command("incr")
@scoped_options
@click.option("--by", type=int, default=1, show_default=True, help="The integer to add.")
@expiry_options
@click.argument("key")
@with_memory
async def incr_cmd(mem: Memory, scope_spec: str, key: str, by: int, ttl: float | None,
                   persist: bool, as_json: bool) -> None:
    """Add --by to the integer at KEY (absent = 0) in one server-side call:
    concurrent increments never conflict."""
    got = await scope_of(mem, scope_spec).incr(key, by=by, **expiry(ttl, persist))
    emit({"key": key, "value": got.value, "revision": got.revision}, as_json,
          lambda d: f"{d['value']} (revision {d['revision']})")


@main.command("append")
@scoped_options
@click.option("--max-items", type=int, default=None,
              help="Keep only the last N items (a capped log).")
@expiry_options
@click.argument("key")
@click.argument("item", type=JsonText("ITEM"))
@with_memory
async def append_cmd(mem: Memory, scope_spec: str, key: str, item: Any, max_items: int | None,
                     ttl: float | None, persist: bool, as_json: bool) -> None:
    """Append ITEM (JSON) to the list at KEY (absent = []) in one server-side call."""
    revision = (await scope_of(mem, scope_spec).append(
        key, item, max_items=max_items, **expiry(ttl, persist))).revision
    emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@main.command("merge")
@scoped_options
@expiry_options
@click.argument("key")
@click.argument("patch", type=JsonText("PATCH"))
@with_memory
async def merge_cmd(mem: Memory, scope_spec: str, key: str, patch: Any, ttl: float | None,
                    persist: bool, as_json: bool) -> None:
    """Apply PATCH (a JSON object; null deletes a member) to the object at KEY
    as an RFC 7386 merge patch, in one server-side call."""
    revision = (await scope_of(mem, scope_spec).merge(key, patch,
                                                    **expiry(ttl, persist))).revision
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


max_keys_option = click.option(
    "--max-keys", type=click.IntRange(min=1), default=10_000, show_default=True,
    help="Print at most this many; when more exist, say how to go on.")
cursor_option = click.option(
    "--cursor", default=None,
    help="Go on from where an earlier --max-keys stopped (the cursor it gave).")


async def print_keys(mem: Memory, scope_spec: str, prefix: str | None, kind: Any,
                     max_keys: int, cursor: str | None, as_json: bool) -> None:
    """Up to ``max_keys`` names from ``cursor`` on, one a line (JSON: keys and
    the cursor to go on with), and on stderr how to go on when more exist."""
    scope = scope_of(mem, scope_spec)
    names: list[str] = []
    while True:
        page = await scope.keys(prefix, cursor, min(1000, max_keys - len(names)), kind)
        names.extend(page.keys)
        cursor = page.next_cursor
        if cursor is None or len(names) >= max_keys:
            break
    if cursor is not None and not (await scope.keys(prefix, cursor, 1, kind)).keys:
        cursor = None  # the page ended exactly at the last key
    emit({"keys": names, "next_cursor": cursor}, as_json,
         lambda d: "\n".join(shown(k) for k in d["keys"]))
    if cursor is not None and not as_json:
        click.echo(f"(more keys: go on with --cursor {cursor})", err=True)


@main.command("keys")
@scoped_options
@click.option("--prefix", default=None, help="Only keys starting with this.")
@click.option("--kind", type=click.Choice(["value", "vector"]), default="value",
              show_default=True, help="Value keys or vector keys.")
@max_keys_option
@cursor_option
@with_memory
async def keys_cmd(mem: Memory, scope_spec: str, prefix: str | None, kind: Any, max_keys: int,
                   cursor: str | None, as_json: bool) -> None:
    """List key names of a scope, ascending, one a line. --json prints
    {"keys": [...], "next_cursor": CURSOR or null}."""
    await print_keys(mem, scope_spec, prefix, kind, max_keys, cursor, as_json)


def _event_dict(event: MemoryChangeEvent) -> dict[str, Any]:
    data = dataclasses.asdict(event)
    data["created_at"] = round(event.created_at.timestamp() * 1000)  # epoch ms, as elsewhere
    return data


_DELTA_NAMES = {"incr": "by", "append": "item", "merge": "patch"}


def _event_payload(event: MemoryChangeEvent) -> str:
    """What a value event carries: ' = VALUE' (set), ' by N = VALUE'
    (incr), ' item ITEM' (append), ' patch PATCH' (merge)."""
    if event.kind != "value" or event.action == "delete" or event.error:
        return ""
    out = ""
    name = _DELTA_NAMES.get(event.action)
    if name:
        out += f" {name} " + ("(omitted)" if event.delta_omitted else json.dumps(event.delta))
    if event.action in ("set", "incr"):
        out += " (value omitted)" if event.value_omitted else f" = {json.dumps(event.value)}"
    return out


def _event_line(event: MemoryChangeEvent) -> str:
    where = shown(f"{event.scope}:{event.scope_id}")
    when = iso_ms(event.created_at.timestamp() * 1000)
    return (f"{event.sequence} {when} {shown(event.action)} {shown(event.kind)} {where} "
            f"{shown(event.key)} rev {event.revision} by {shown(event.principal)}"
            f"{_event_payload(event)}")


def _from_option(_ctx: click.Context, _param: click.Parameter, text: str | None
                 ) -> str | int | None:
    if text is None or text in ("now", "oldest"):
        return text
    try:
        seq = int(text)
    except ValueError:
        raise click.BadParameter(f"now, oldest or a sequence number, got {text!r}") from None
    if seq < 0:
        raise click.BadParameter(f"a sequence is at least 0, got {seq}")
    return seq


def _changes_options(follow: bool) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The options of ``changes`` (``follow``: of ``watch``, which always waits)."""
    start_help = ("Where to start: after sequence SEQ (a saved cursor; exit 3 if it has "
                  "expired), the oldest retained event, or now (only new events). Default: "
                  + ("now." if follow else "now with --follow, else oldest."))
    options = [
        url_option, namespace_option,
        click.option("--scope", "-s", "scope_spec", default=None,
                     callback=lambda ctx, param, spec: spec if spec in SCOPES
                     else scope_spec(ctx, param, spec),
                     help="Only this scope kind (session) or scope (session:ID)."),
        click.option("--from", "start", default=None, callback=_from_option,
                     metavar="now|oldest|SEQ", help=start_help),
        click.option("--after", type=click.IntRange(min=0), default=None,
                     help="The same as --from SEQ."),
        click.option("--pattern", "-p", "patterns", multiple=True,
                     help="Only keys matching this shell-style pattern (repeatable; a turn "
                          "event's key is its holder id: --kind value leaves turns out)."),
        click.option("--kind", "kind", type=click.Choice(EVENT_KINDS), default=None,
                     help="Only changes of values, vectors or turns."),
        click.option("--count", type=click.IntRange(min=1), default=None,
                     help="Stop after printing this many events."),
        json_option]
    if not follow:
        options.insert(-2, click.option("--limit", type=click.IntRange(1, 10_000), default=1000,
                                        show_default=True,
                                        help="Events per page read (without --follow)."))

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        for option in reversed(options):
            fn = option(fn)
        return fn

    return decorate


async def _changes(mem: Memory, scope_spec: str | None, start: str | int | None,
                   patterns: tuple[str, ...], kind: str | None,
                   follow: bool, count: int | None, as_json: bool, limit: int = 1000) -> None:
    from .. import feed  # redis-py: imported when the command runs

    scope_kind, _, sid = (scope_spec or "").partition(":")
    scoped = scope_of(mem, scope_spec or "") if sid or scope_kind == "global" else None
    printed = 0

    def show(event: MemoryChangeEvent) -> bool:
        """Print ``event``; whether to go on."""
        nonlocal printed
        say(json.dumps(_event_dict(event), sort_keys=True) if as_json else _event_line(event))
        printed += 1
        return count is None or printed < count

    oldest = await feed.oldest_sequence(mem.client, mem.namespace)
    if start is None:
        start = "now" if follow else "oldest"
    if start == "oldest":
        cursor: int | None = oldest - 1
    elif start == "now":
        cursor = None
    else:
        cursor = int(start)
        if cursor + 1 < oldest:
            raise CursorExpiredError(
                f"cursor {cursor} has expired: the feed now starts at sequence {oldest} "
                "(events in between were trimmed); --from oldest goes on from there",
                after=cursor, oldest_sequence=oldest)
    if follow:
        stream = (scoped.watch(patterns or "*", after=cursor, kind=kind) if scoped
                  else mem.watch(patterns or "*", scope=scope_kind or None, after=cursor,
                                 kind=kind))
        async for event in stream:
            if not show(event):
                return
        return
    cursor = await feed.current_sequence(mem.client, mem.namespace) if cursor is None else cursor
    while True:
        page = await (scoped.changes(after=cursor, limit=limit, kind=kind) if scoped
                      else mem.changes(after=cursor, limit=limit, scope=scope_kind or None,
                                       kind=kind))
        for event in page.items:
            if (not patterns or any(fnmatch.fnmatchcase(event.key, p) for p in patterns)) and (
                    not show(event)):
                return
        if page.next_cursor == cursor:
            return
        cursor = page.next_cursor


@main.command()
@_changes_options(follow=False)
@click.option("--follow", "-f", is_flag=True, help="Keep waiting for new events.")
def changes(url: str | None, namespace: str, **options: Any) -> None:
    """Print change events of the namespace, one a line (JSON Lines with
    --json), from the oldest retained one; with --follow, new ones as they
    come."""
    _run_changes(url, namespace, options)


@main.command()
@_changes_options(follow=True)
def watch(url: str | None, namespace: str, **options: Any) -> None:
    """Wait for change events and print each as it comes, one a line (JSON
    Lines with --json), from now unless --from says otherwise: changes
    --follow. Stops after --count events, else at Ctrl-C."""
    _run_changes(url, namespace, {**options, "follow": True})


def _run_changes(url: str | None, namespace: str, options: dict[str, Any]) -> None:
    """``changes`` and ``watch``, after the usage checks."""
    after = options.pop("after")
    if after is not None:
        if options["start"] is not None:
            raise click.UsageError("give --from or --after, not both")
        options["start"] = after
    using_memory(url, namespace, lambda mem: _changes(mem, **options))


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
