"""``redismem drop`` and ``redismem forget-user``: the end of a namespace,
and of one user's data in it (an admin's)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import click

from .base import emit, json_option, main, namespace_option, url_option, with_memory

if TYPE_CHECKING:
    from ..memory import Memory


def _families(families: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in sorted(families.items())) or "no keys"


@main.command("drop")
@url_option
@namespace_option
@click.option("--yes", is_flag=True, help="Delete; without it, only say what would go.")
@json_option
@with_memory
async def drop_cmd(mem: Memory, yes: bool, as_json: bool) -> None:
    """Delete every key of the namespace (values, vectors, threads,
    memories, checkpoints, the feed, settings, turns) and its search
    indexes, in bounded calls: an admin's. Without --yes it only prints
    what it would delete. Stop the namespace's workers first: a writer
    still at work writes into it again."""
    from .. import lifecycle  # redis-py: imported when the command runs

    done = await lifecycle.drop_namespace(mem, dry_run=not yes)
    verb = "would delete" if done.dry_run else "deleted"
    note = ("" if done.found_by == "scan" else " (found from its registries: this credential "
            "may not SCAN, so keys no registry lists, raw writes, may remain; an operator's "
            "drop finds every one)")
    emit(dataclasses.asdict(done), as_json,
         lambda d: f"{verb} {d['keys']} keys of namespace {d['namespace']} "
                   f"({_families(d['families'])}) and {len(d['indexes'])} search "
                   f"indexes{note}" + ("" if yes else "; run again with --yes to delete"))


@main.command("forget-user")
@url_option
@namespace_option
@click.argument("user")
@json_option
@with_memory
async def forget_user_cmd(mem: Memory, user: str, as_json: bool) -> None:
    """Delete everything of USER in the namespace (a data-protection
    request): its long-term memories, its events in every thread and its
    actor scope, so that no key named with it remains; the feed records
    that it was forgotten, without data. An admin's. The feed events
    written before still hold what they carried until the feed is trimmed
    (lower feed_retention_ms, then redismem trim), and so do earlier
    exports."""
    from .. import lifecycle  # redis-py: imported when the command runs

    done = await lifecycle.forget_user(mem, user)
    emit(dataclasses.asdict(done), as_json,
         lambda d: f"forgot user {d['user_id']}: {d['memories']} long-term memories, "
                   f"{d['thread_events']} thread events, {d['actor_keys']} keys of its actor "
                   f"scope ({d['keys_deleted']} Redis keys deleted); feed event "
                   f"{d['feed_sequence']}"
                   + ("; its records of retried calls expire within 3 minutes (an operator "
                      "deletes them at once)" if d["request_records_left"] else ""))
