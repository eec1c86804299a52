"""``RedismemStore``: LangGraph's ``BaseStore`` on redismem values.

Every item is one redismem value of one scope (the workflow scope
``langgraph-store`` by default), so it has a revision, is written by the
library's Lua functions, lands in the change feed and obeys the roles. Its
key is the namespace's labels joined by ``.`` (LangGraph forbids ``.`` in
a label), ``/``, then the item's key; ``%`` and ``/`` in a label are
percent-encoded, so the first ``/`` always ends the namespace:
``("users", "u/1")``, ``"prefs"`` is ``users.u%2F1/prefs``. The value is
``{"value": ..., "created_at": ms, "updated_at": ms}`` (and ``ttl`` in
minutes when it has one). With an index config, each indexed text's
embedding is a redismem vector of the same scope, searched through the
namespace's vector index.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple

from langgraph.store.base import (
    NOT_PROVIDED,
    BaseStore,
    GetOp,
    IndexConfig,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    NotProvided,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    ensure_embeddings,
    get_text_at_path,
    tokenize_path,
)

from .. import _validate as check
from .. import limits, now_ms
from ..errors import ConflictError, CorruptEntryError, InvalidArgumentError
from ..memory import Memory
from ..scope import MemoryScope
from ._connections import Connections, Lifecycle

DEFAULT_WORKFLOW = "langgraph-store"


def _label(text: str) -> str:
    return text.replace("%", "%25").replace("/", "%2F")


def _unlabel(text: str) -> str:
    return text.replace("%2F", "/").replace("%25", "%")


def item_key(namespace: tuple[str, ...], key: str,
             heads: dict[tuple[str, ...], str] | None = None) -> str:
    """The redismem key of an item (see the module's docstring). ``heads``:
    the namespaces a batch joined already."""
    try:
        head = heads.get(namespace) if heads is not None else None
    except TypeError:  # an unhashable label, refused below
        head, heads = None, None
    if head is None:
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        for label in namespace:
            if not isinstance(label, str) or not label or "." in label or "\x00" in label:
                raise InvalidNamespaceError(f"Invalid namespace label {label!r} in "
                                            f"{namespace!r}: labels are non-empty texts "
                                            "without '.' or NUL")
        head = ".".join(map(_label, namespace)) + "/"
        if heads is not None:
            heads[namespace] = head
    if not isinstance(key, str):
        raise InvalidArgumentError(f"an item key must be a text, got {key!r}")
    return head + key


def split_key(name: str) -> tuple[tuple[str, ...], str]:
    """(namespace, key) of an item's redismem key."""
    head, _, key = name.partition("/")
    return tuple(_unlabel(label) for label in head.split(".")), key


class RedismemStore(Lifecycle, BaseStore):
    """A LangGraph store on redismem memory.

    ``RedismemStore(memory)`` uses a connected :class:`~redismem.Memory`
    (async methods); ``RedismemStore(url=..., namespace=...)`` connects on
    first use and serves the sync methods too. ``workflow``: the workflow
    scope the items live in. ``index``: LangGraph's index config (``dims``,
    ``embed``, ``fields``) for semantic search.
    """

    supports_ttl = True

    def __init__(self, memory: Memory | None = None, *, url: str | None = None,
                 namespace: str | None = None, workflow: str = DEFAULT_WORKFLOW,
                 index: IndexConfig | None = None, **connect_options: Any) -> None:
        self._connections = Connections(memory, url, namespace, connect_options, "RedismemStore")
        self.namespace = self._connections.namespace
        self.workflow = check.check_id("workflow id", workflow)
        self.index_config = dict(index) if index else None
        self.embeddings = ensure_embeddings(index.get("embed")) if index else None
        self._fields = [(p, tokenize_path(p) if p != "$" else p)
                        for p in ((index or {}).get("fields") or ["$"])]

    @classmethod
    def from_url(cls, url: str, *, namespace: str = "default", **options: Any) -> RedismemStore:
        return cls(url=url, namespace=namespace, **options)

    # connections

    async def _scope(self) -> MemoryScope:
        return (await self._connections.memory()).workflow(self.workflow)

    def _sync(self, coro: Any) -> Any:
        return self._connections.run(coro)

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return self._sync(self.abatch(list(ops)))  # type: ignore[no-any-return]

    # one op: BaseStore's aget and aput build a batch of one op and send it
    # through abatch; these go straight to the one call they make

    async def aget(self, namespace: tuple[str, ...], key: str, *,
                   refresh_ttl: bool | None = None) -> Item | None:
        if self.ttl_config is not None:
            return await super().aget(namespace, key, refresh_ttl=refresh_ttl)
        namespace, key = tuple(namespace), str(key)
        name = item_key(namespace, key)
        scope = await self._scope()
        got = (await self._read(scope, [name])).get(name)
        if got is None:
            return None
        if refresh_ttl is not False:  # LangGraph's default without a ttl config: refresh
            await self._refresh(scope, {name: got})
        return got.item_at(namespace, key)

    async def aput(self, namespace: tuple[str, ...], key: str, value: Mapping[str, Any],
                   index: Literal[False] | list[str] | None = None, *,
                   ttl: float | NotProvided | None = NOT_PROVIDED) -> None:
        if self.ttl_config is not None:
            return await super().aput(namespace, key, value, index, ttl=ttl)
        namespace, key = tuple(namespace), str(key)
        name = item_key(namespace, key)
        if namespace[0] == "langgraph":
            raise InvalidNamespaceError(
                f'Root label for namespace cannot be "langgraph". Got: {namespace}')
        op = PutOp(namespace, key, value, index=index,
                   ttl=None if isinstance(ttl, NotProvided) else ttl)
        await self._write(await self._scope(), {name: op})
        return None

    # the batch: reads see the store as it was before the batch's puts, as
    # LangGraph's InMemoryStore does; of two puts of one item the last wins

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        scope = await self._scope()
        results: list[Result] = [None] * len(ops)
        heads: dict[tuple[str, ...], str] = {}
        gets: dict[int, str] = {}
        puts: dict[str, PutOp] = {}
        others: list[int] = []
        for i, op in enumerate(ops):
            if isinstance(op, GetOp):
                gets[i] = item_key(op.namespace, op.key, heads)
            elif isinstance(op, PutOp):
                puts[item_key(op.namespace, op.key, heads)] = op
            elif isinstance(op, SearchOp | ListNamespacesOp):
                others.append(i)
            else:
                raise InvalidArgumentError(f"unknown operation {op!r}")
        found = await self._read(scope, sorted(set(gets.values())))
        refresh: dict[str, _Stored] = {}
        for i, name in gets.items():
            got = found.get(name)
            if got is None:
                continue
            get = ops[i]
            results[i] = got.item_at(get.namespace, get.key)  # type: ignore[union-attr]
            if get.refresh_ttl:  # type: ignore[union-attr]
                refresh[name] = got
        for i in others:
            op = ops[i]
            if isinstance(op, SearchOp):
                hits = await self._search(scope, op)
                results[i] = [_search_item(hit.item, score) for hit, score in hits]
                if op.refresh_ttl:
                    refresh.update({hit.name: hit for hit, _ in hits})
            else:
                results[i] = await self._namespaces(scope, op)  # type: ignore[arg-type]
        await self._refresh(scope, refresh)
        if puts:
            await self._write(scope, puts)
        return results

    async def _read(self, scope: MemoryScope, names: Sequence[str]) -> dict[str, _Stored]:
        found: dict[str, _Stored] = {}
        if len(names) == 1:  # one HMGET, no function call
            with contextlib.suppress(CorruptEntryError):  # a raw write: not an item
                stored = await scope.get(names[0])
                if stored.found and isinstance(stored.value, dict) and "value" in stored.value:
                    found[names[0]] = _Stored(names[0], stored.value, stored.revision)
            return found
        for first in range(0, len(names), limits.MAX_BATCH):
            chunk = names[first:first + limits.MAX_BATCH]
            for name, got in zip(chunk, await scope._found_values(chunk), strict=True):
                if got is not None and type(got[0]) is dict and "value" in got[0]:
                    found[name] = _Stored(name, *got)
        return found

    async def _write(self, scope: MemoryScope, puts: dict[str, PutOp]) -> None:
        deleted = [name for name, op in puts.items() if op.value is None]
        for name in deleted:
            await scope.delete(name)
        if self.embeddings is not None:
            await self._drop_vectors(scope, deleted)
        kept = {name: op for name, op in puts.items() if op.value is not None}
        if not kept:
            return
        now = now_ms()
        by_ttl: dict[float | None, dict[str, Any]] = {}
        for name, op in kept.items():
            ttl = op.ttl if op.ttl is not None and op.ttl is not False else None
            if ttl is not None and (not isinstance(ttl, int | float) or not ttl > 0
                                    or not math.isfinite(ttl)):
                raise InvalidArgumentError(f"ttl must be a positive number of minutes, got {ttl!r}")
            # created_at: the server keeps the stored item's (one call, no read)
            stored: dict[str, Any] = {"value": dict(op.value),  # type: ignore[arg-type]
                                      "created_at": now, "updated_at": now}
            if ttl is not None:
                stored["ttl"] = ttl
            by_ttl.setdefault(ttl, {})[name] = stored
        for ttl, mapping in by_ttl.items():
            await scope._put_items(mapping, persist=ttl is None,
                                   ttl_seconds=ttl * 60 if ttl is not None else None)
        if self.embeddings is not None:
            await self._index(scope, kept)

    async def _refresh(self, scope: MemoryScope, items: dict[str, _Stored]) -> None:
        """Reading an item with a ttl starts its ttl again: it is written
        back unchanged, only over the revision read (a newer write wins)."""
        for name, got in items.items():
            ttl = got.stored.get("ttl")
            if ttl is None:
                continue
            with contextlib.suppress(ConflictError):  # a newer write: its ttl stands
                await scope.set(name, got.stored, ttl_seconds=ttl * 60,
                                expected_revision=got.revision)

    async def _search(self, scope: MemoryScope, op: SearchOp
                      ) -> list[tuple[_Stored, float | None]]:
        if op.query and self.embeddings is not None:
            return await self._semantic(scope, op)
        names = await self._names(scope, op.namespace_prefix)
        hits: list[tuple[_Stored, float | None]] = []
        wanted = op.offset + op.limit
        for first in range(0, len(names), limits.MAX_BATCH):
            found = await self._read(scope, names[first:first + limits.MAX_BATCH])
            for name in names[first:first + limits.MAX_BATCH]:
                got = found.get(name)
                if got is not None and _matches(got.stored["value"], op.filter):
                    hits.append((got, None))
            if len(hits) >= wanted:
                break
        return hits[op.offset:wanted]

    async def _names(self, scope: MemoryScope, prefix: tuple[str, ...]) -> list[str]:
        """The item keys under a namespace prefix, in (namespace, key) order."""
        if not prefix:
            names = [n for n in await scope.list_keys(max_keys=10**7) if "/" in n]
        else:
            head = ".".join(map(_label, prefix))
            names = [*await scope.list_keys(head + "/", max_keys=10**7),
                     *await scope.list_keys(head + ".", max_keys=10**7)]
        return sorted(names, key=split_key)

    async def _namespaces(self, scope: MemoryScope, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        prefix: tuple[str, ...] = ()
        for condition in op.match_conditions or ():
            if condition.match_type == "prefix" and "*" not in condition.path:
                prefix = tuple(condition.path)
                break
        spaces = {split_key(name)[0] for name in await self._names(scope, prefix)}
        chosen = [s for s in spaces
                  if all(_does_match(c, s) for c in op.match_conditions or ())]
        if op.max_depth is not None:
            chosen = list({s[:op.max_depth] for s in chosen})
        return sorted(chosen)[op.offset:op.offset + op.limit]

    # semantic search: one redismem vector per indexed text

    def _texts(self, op: PutOp) -> list[tuple[str, str]]:
        if op.index is False or op.value is None:
            return []
        paths = self._fields if op.index is None else [(p, tokenize_path(p)) for p in op.index]
        texts = []
        for path, field in paths:
            found = get_text_at_path(op.value, field)
            if len(found) > 1:
                texts += [(f"{path}.{i}", text) for i, text in enumerate(found)]
            elif found:
                texts.append((path, found[0]))
        return texts

    async def _index(self, scope: MemoryScope, kept: dict[str, PutOp]) -> None:
        assert self.embeddings is not None
        await self._drop_vectors(scope, list(kept))
        wanted = [(name, path, text) for name, op in kept.items()
                  for path, text in self._texts(op)]
        if not wanted:
            return
        vectors = await self.embeddings.aembed_documents([text for _, _, text in wanted])
        items = []
        for (name, path, _), vector in zip(wanted, vectors, strict=True):
            labels, _ = split_key(name)
            meta = {"item": name, "path": path,
                    **{f"n{i}": label for i, label in enumerate(labels)}}
            items.append((f"{name}#{path}", vector, meta))
        for first in range(0, len(items), 64):
            await scope.set_vectors(items[first:first + 64], atomic=False)

    async def _drop_vectors(self, scope: MemoryScope, names: Sequence[str]) -> None:
        for name in names:
            for vector in await scope.list_keys(name + "#", kind="vector"):
                await scope.delete_vector(vector)

    async def _semantic(self, scope: MemoryScope, op: SearchOp
                        ) -> list[tuple[_Stored, float | None]]:
        assert self.embeddings is not None and op.query is not None
        query = await self.embeddings.aembed_query(op.query)
        wanted = op.offset + op.limit
        matches = await scope.similarity_search(
            query, top_k=min(limits.MAX_TOP_K, max(4 * wanted, 100)),
            filter={f"n{i}": label for i, label in enumerate(op.namespace_prefix)} or None)
        best: dict[str, float] = {}
        for match in matches:  # best first: the first of an item is its score
            name = (match.metadata or {}).get("item")
            if isinstance(name, str) and name not in best:
                best[name] = match.score
        found = await self._read(scope, list(best))
        ranked: list[tuple[_Stored, float | None]] = [
            (found[name], score) for name, score in best.items()
            if name in found and _matches(found[name].stored["value"], op.filter)]
        return ranked[op.offset:wanted]


class _Stored(NamedTuple):
    """An item as read: its redismem key, stored JSON and revision."""

    name: str
    stored: dict[str, Any]
    revision: int

    @property
    def item(self) -> Item:
        return self.item_at(*split_key(self.name))

    def item_at(self, namespace: tuple[str, ...], key: str) -> Item:
        """The item, whose namespace and key are known (its name holds them)."""
        created, updated = self.stored.get("created_at"), self.stored.get("updated_at")
        created_at = _time(created)
        return Item(value=self.stored["value"], key=key, namespace=namespace,
                    created_at=created_at,
                    updated_at=created_at if updated == created and type(updated) is type(created)
                    else _time(updated))


def _time(ms: object) -> datetime:
    return datetime.fromtimestamp((ms if isinstance(ms, int) else 0) / 1000, tz=UTC)


def _search_item(item: Item, score: float | None) -> SearchItem:
    return SearchItem(namespace=item.namespace, key=item.key, value=item.value,
                      created_at=item.created_at, updated_at=item.updated_at, score=score)


def _does_match(condition: MatchCondition, labels: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(labels) < len(path):
        return False
    pairs = zip(labels, path, strict=False) if condition.match_type == "prefix" else \
        zip(reversed(labels), reversed(path), strict=False)
    return all(p == "*" or label == p for label, p in pairs)


def _matches(value: Any, wanted: dict[str, Any] | None) -> bool:
    """LangGraph's filter: equality, nested objects, and $eq $ne $gt $gte $lt $lte."""
    return not wanted or all(_compare(value.get(k), v) for k, v in wanted.items())


def _compare(value: Any, wanted: Any) -> bool:
    if isinstance(wanted, dict):
        if any(k.startswith("$") for k in wanted):
            return all(_operator(value, k, v) for k, v in wanted.items())
        return isinstance(value, dict) and all(_compare(value.get(k), v)
                                               for k, v in wanted.items())
    if isinstance(wanted, list | tuple):
        return isinstance(value, list | tuple) and len(value) == len(wanted) and all(
            _compare(a, b) for a, b in zip(value, wanted, strict=True))
    return bool(value == wanted)


def _operator(value: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(value == operand)
    if operator == "$ne":
        return bool(value != operand)
    ordered = {"$gt": float.__gt__, "$gte": float.__ge__, "$lt": float.__lt__,
               "$lte": float.__le__}.get(operator)
    if ordered is None:
        raise InvalidArgumentError(f"unsupported filter operator {operator!r}")
    try:
        return bool(ordered(float(value), float(operand)))
    except (TypeError, ValueError):
        return False
