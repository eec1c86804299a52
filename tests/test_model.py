"""A stateful model test: random sequences of set, set_many, delete, CAS
with right and stale revisions, incr, append, merge, short TTLs and
export+import, on the real server and on memory://. After every step the
store equals a plain-Python model, and listing equals exactly the live keys."""

from __future__ import annotations

import asyncio
import tempfile
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

import redismem
from redismem import limits, restore, transfer
from redismem.store import RedisMemoryStore

KEYS = ["a", "b", "c", "k/1", "ü"]
SHORT_TTL = 0.02
"""A short TTL; the step then sleeps until it has surely expired."""
LONG_TTL = 3600.0

keys = st.sampled_from(KEYS)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70),
                    st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=4))
values = st.recursive(scalars, lambda c: st.one_of(
    st.lists(c, max_size=3), st.dictionaries(st.text(max_size=3), c, max_size=3)), max_leaves=6)
patches = st.recursive(st.one_of(scalars, st.none()), lambda c: st.dictionaries(
    st.sampled_from(["x", "y", "z"]), c, max_size=3), max_leaves=6).filter(
    lambda p: isinstance(p, dict))
ttls = st.sampled_from([None, None, None, "short", "long"])


@dataclass
class Entry:
    value: Any = None
    revision: int = 0
    """The current revision; 0 when absent."""
    issued: int = 0
    """The last revision issued; revisions go on from it after delete and expiry."""


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386."""
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for name, value in patch.items():
        if value is None:
            result.pop(name, None)
        else:
            result[name] = merge_patch(result.get(name), value)
    return result


def is_counter(value: Any) -> bool:
    return (isinstance(value, int) and not isinstance(value, bool)
            and abs(value) <= limits.MAX_REVISION)


class MemoryModel(RuleBasedStateMachine):
    url = ""

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.ns = "model" + uuid.uuid4().hex[:10]
        self.mem = self.run(redismem.connect(self.url, namespace=self.ns, principal="m"))
        self.scope = self.mem.session("s")
        self.model = {key: Entry() for key in KEYS}

    def run(self, coro: Any) -> Any:
        return self.loop.run_until_complete(coro)

    def teardown(self) -> None:
        self.run(self.mem.close())
        self.loop.close()

    def _ttl(self, ttl: str | None) -> float | None:
        return {None: None, "short": SHORT_TTL, "long": LONG_TTL}[ttl]

    def _written(self, key: str, value: Any, revision: int, ttl: str | None) -> None:
        entry = self.model[key]
        assert revision == entry.issued + 1, (key, revision, entry)
        entry.issued = revision
        entry.value, entry.revision = (None, 0) if ttl == "short" else (value, revision)

    def _expire(self, ttl: str | None) -> None:
        if ttl == "short":
            self.run(asyncio.sleep(SHORT_TTL * 3))

    # writes

    @rule(key=keys, value=values, ttl=ttls)
    def set(self, key: str, value: Any, ttl: str | None) -> None:
        revision = self.run(self.scope.set(key, value, ttl_seconds=self._ttl(ttl))).revision
        self._expire(ttl)
        self._written(key, value, revision, ttl)

    @rule(key=keys, value=values, right=st.booleans())
    def compare_and_set(self, key: str, value: Any, right: bool) -> None:
        entry = self.model[key]
        expected = entry.revision if right else entry.revision + 1
        if right:
            self._written(key, value, self.run(self.scope.set(
                key, value, expected_revision=expected)).revision, None)
            return
        with pytest.raises(redismem.ConflictError) as info:
            self.run(self.scope.set(key, value, expected_revision=expected))
        assert (info.value.expected, info.value.actual) == (expected, entry.revision)

    @rule(mapping=st.dictionaries(keys, values, min_size=1, max_size=3), ttl=ttls)
    def set_many(self, mapping: dict[str, Any], ttl: str | None) -> None:
        revisions = self.run(self.scope.set_many(mapping, ttl_seconds=self._ttl(ttl)))
        self._expire(ttl)
        for key, value in mapping.items():
            self._written(key, value, revisions[key].revision, ttl)

    @rule(key=keys, cas=st.sampled_from([None, "right", "stale"]))
    def delete(self, key: str, cas: str | None) -> None:
        entry = self.model[key]
        expected = {None: None, "right": entry.revision, "stale": entry.revision + 2}[cas]
        if cas == "stale":
            with pytest.raises(redismem.ConflictError):
                self.run(self.scope.delete(key, expected_revision=expected))
            return
        deleted = self.run(self.scope.delete(key, expected_revision=expected))
        assert deleted == (entry.revision > 0)
        if deleted:
            entry.issued += 1
            entry.value, entry.revision = None, 0

    @rule(key=keys, by=st.integers(-1000, 1000))
    def incr(self, key: str, by: int) -> None:
        entry = self.model[key]
        if entry.revision and not is_counter(entry.value):
            with pytest.raises(redismem.ValueTypeError):
                self.run(self.scope.incr(key, by=by))
            return
        got = self.run(self.scope.incr(key, by=by))
        assert got.value == (entry.value or 0) + by
        self._written(key, got.value, got.revision, None)

    @rule(key=keys, item=values, max_items=st.sampled_from([None, 1, 3]))
    def append(self, key: str, item: Any, max_items: int | None) -> None:
        entry = self.model[key]
        if entry.revision and not isinstance(entry.value, list):
            with pytest.raises(redismem.ValueTypeError):
                self.run(self.scope.append(key, item, max_items=max_items))
            return
        items = [*(entry.value or []), item]
        revision = self.run(self.scope.append(key, item, max_items=max_items)).revision
        self._written(key, items[-max_items:] if max_items else items, revision, None)

    @rule(key=keys, patch=patches)
    def merge(self, key: str, patch: dict[str, Any]) -> None:
        entry = self.model[key]
        merged = merge_patch(entry.value if entry.revision else None, patch)
        self._written(key, merged, self.run(self.scope.merge(key, patch)).revision, None)

    @rule()
    def expire_a_crowd(self) -> None:
        """More expired names than one write prunes (16): a stale expiry entry
        left behind by a write would hide a live key from listings."""
        self.run(self.scope.set_many({f"~{i:02d}": i for i in range(40)},
                                     ttl_seconds=SHORT_TTL))
        self._expire("short")

    # export and import into a fresh namespace

    @rule()
    def export_import(self) -> None:
        async def round_trip() -> tuple[list[str], dict[str, redismem.MemoryValue], dict[str, int]]:
            lines: list[str] = []
            await transfer.export_namespace(self.mem, lines.append)
            with tempfile.TemporaryDirectory() as folder:
                path = Path(folder) / "export.jsonl"
                path.write_text("".join(lines), encoding="utf-8")
                target = self.ns + "-copy" + uuid.uuid4().hex[:6]
                async with RedisMemoryStore(self.url, namespace=target) as store:
                    await restore.check_file(store, path)
                    await restore.import_file(store, path)
                    scope = store.memory.session("s")
                    listed = await scope.list_keys()
                    got = await scope.get_many(KEYS)
                    # a re-created key goes on from the last revision issued
                    next_revisions = {key: (await scope.set(key, 0)).revision for key in KEYS}
            return listed, got, next_revisions

        listed, got, next_revisions = self.run(round_trip())
        assert listed == sorted(k for k, e in self.model.items() if e.revision)
        for key, entry in self.model.items():
            assert got[key] == redismem.MemoryValue(entry.value, entry.revision,
                                                    entry.revision > 0), key
            assert next_revisions[key] == entry.issued + 1, key

    # after every step

    @invariant()
    def store_equals_model(self) -> None:
        listed = self.run(self.scope.list_keys())
        assert listed == sorted(k for k, e in self.model.items() if e.revision)
        got = self.run(self.scope.get_many(KEYS))
        for key, entry in self.model.items():
            assert got[key] == redismem.MemoryValue(entry.value, entry.revision,
                                                    entry.revision > 0), key


def test_store_follows_the_model(backend_url: str) -> None:
    class Machine(MemoryModel):
        url = backend_url

    run_state_machine_as_test(Machine, settings=settings(
        max_examples=25, stateful_step_count=25, deadline=None,
        suppress_health_check=[HealthCheck.too_slow]))
