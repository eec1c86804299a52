"""``redismem vectors``: set, list, get, search and delete vectors."""

from __future__ import annotations

import dataclasses
import json
from typing import TYPE_CHECKING, Any

import click

from .base import (
    JsonText,
    absent,
    emit,
    expiry,
    expiry_options,
    main,
    scope_of,
    scoped_options,
    with_memory,
)
from .data import cursor_option, max_keys_option, print_keys

if TYPE_CHECKING:
    from ..memory import Memory


@main.group()
def vectors() -> None:
    """Inspect and search vector memory."""


@vectors.command("set")
@scoped_options
@click.option("--metadata", type=JsonText("--metadata"), default=None,
              help='A JSON object: \'{"colour": "blue"}\'.')
@expiry_options
@click.option("--expected-revision", type=int, default=None, help="Write only at this revision.")
@click.argument("key")
@click.argument("embedding", type=JsonText("EMBEDDING"))
@with_memory
async def vectors_set(mem: Memory, scope_spec: str, key: str, embedding: Any, metadata: Any,
                      ttl: float | None, persist: bool, expected_revision: int | None,
                      as_json: bool) -> None:
    """Store the vector KEY; EMBEDDING is a JSON array of numbers."""
    revision = await scope_of(mem, scope_spec).set_vector(
        key, embedding, metadata, expected_revision=expected_revision, **expiry(ttl, persist))
    emit({"key": key, "revision": revision}, as_json, lambda d: f"revision {d['revision']}")


@vectors.command("list")
@scoped_options
@click.option("--prefix", default=None, help="Only keys starting with this.")
@max_keys_option
@cursor_option
@with_memory
async def vectors_list(mem: Memory, scope_spec: str, prefix: str | None, max_keys: int,
                       cursor: str | None, as_json: bool) -> None:
    """List vector keys of a scope, ascending (keys --kind vector)."""
    await print_keys(mem, scope_spec, prefix, "vector", max_keys, cursor, as_json)


@vectors.command("get")
@scoped_options
@click.argument("key")
@with_memory
async def vectors_get(mem: Memory, scope_spec: str, key: str, as_json: bool) -> None:
    """Show the vector KEY: revision, metadata, embedding."""
    got = await scope_of(mem, scope_spec).get_vector(key)
    emit(dataclasses.asdict(got) | {"key": key}, as_json,
          lambda d: (f"revision {d['revision']} metadata {json.dumps(d['metadata'])}\n"
                     f"embedding ({len(d['embedding'])}) {json.dumps(d['embedding'])}")
          if d["found"] else absent())


@vectors.command("search")
@scoped_options
@click.option("--top-k", type=click.IntRange(min=1), default=10, show_default=True,
              help="At most this many matches, best first.")
@click.option("--filter", "where", type=JsonText("--filter"), default=None,
              help='Equality conditions on metadata, as JSON: \'{"colour": "blue"}\'.')
@click.option("--min-score", type=float, default=None, help="Drop matches scoring lower.")
@click.argument("query", type=JsonText("QUERY"))
@with_memory
async def vectors_search(mem: Memory, scope_spec: str, query: Any, top_k: int, where: Any,
                         min_score: float | None, as_json: bool) -> None:
    """Rank the scope's vectors by cosine similarity to QUERY (a JSON array)."""
    found = await scope_of(mem, scope_spec).similarity_search(
        query, top_k, filter=where, min_score=min_score)
    emit([dataclasses.asdict(m) for m in found], as_json,
          lambda rows: "\n".join(f"{r['score']:.4f} {r['key']} rev {r['revision']} "
                                 f"{json.dumps(r['metadata'])}" for r in rows))


@vectors.command("delete")
@scoped_options
@click.option("--expected-revision", type=int, default=None, help="Delete only at this revision.")
@click.argument("key")
@with_memory
async def vectors_delete(mem: Memory, scope_spec: str, key: str, expected_revision: int | None,
                         as_json: bool) -> None:
    """Delete the vector KEY."""
    deleted = await scope_of(mem, scope_spec).delete_vector(key,
                                                          expected_revision=expected_revision)
    emit({"key": key, "deleted": deleted}, as_json,
          lambda d: "deleted" if d["deleted"] else "(absent)")
