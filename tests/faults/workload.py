"""The processes of a fault run: clients doing a mixed workload on a few hot
keys and recording their history, and watchers recording what ``watch``
delivers.

    python -m tests.faults.workload client URL NS NAME OUT SEED [--tasks N] [--patch P]
    python -m tests.faults.workload watcher URL NS NAME OUT

Both run until the file ``OUT.stop`` exists. Every value a client writes
names the call that wrote it (``{"op": <id>, ...}``), so the checkers can
tell whose event is whose. Keys are renamed every EPOCH_SECONDS (``r0.<n>``),
which bounds each key's history, so checking it stays fast in long runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

import redismem
from redismem import ConflictError, RedisMemError
from redismem.store import RedisMemoryStore
from redismem.types import MemoryEvent

from .history import FAIL, OK, UNKNOWN, Op, Recorder

SCOPES = (("session", "hot"), ("global", "_"))
REGISTERS = ("r0", "r1", "r2")
COUNTER, LOG, OBJECT = "n0", "l0", "m0"
VECTORS = ("v0", "v1")
THREADS = ("t0", "t1")
LOG_CAP = 20
EPOCH_SECONDS = 10
TTL_SECONDS = 3600  # long: nothing expires during a run, the TTL path is still taken
LOST = (RedisConnectionError, RedisTimeoutError, ConnectionError, TimeoutError, OSError)


def epoch(name: str) -> str:
    """``name`` in this epoch (the machine's clock, the same for every process)."""
    return f"{name}.{int(time.time() // EPOCH_SECONDS)}"


def scope_of(mem: redismem.Memory, name: str) -> redismem.MemoryScope:
    kind, sid = name.split(":")
    return mem.global_scope() if kind == "global" else mem.session(sid)


def _recorded(result: Any) -> Any:
    """What the history keeps of a call's result: a write's MemoryValue as
    its revision (set_many: key -> revision), anything else as it is."""
    if isinstance(result, redismem.MemoryValue):
        return result.revision
    if isinstance(result, dict) and result and all(
            isinstance(v, redismem.MemoryValue) for v in result.values()):
        return {k: v.revision for k, v in result.items()}
    return result


class Client:
    """One sequential task: one connection, one principal."""

    def __init__(self, mem: redismem.Memory, store: RedisMemoryStore, rec: Recorder,
                 rng: random.Random) -> None:
        self.mem, self.store, self.rec, self.rng = mem, store, rec, rng

    async def call(self, f: str, run: Callable[[], Awaitable[Any]], **args: Any) -> Op:
        op = self.rec.invoke(f, **args)
        try:
            result = await run()
        except ConflictError as exc:
            self.rec.complete(op, FAIL, exc.actual, "conflict")
        except LOST as exc:
            self.rec.complete(op, UNKNOWN, None, type(exc).__name__)
        except RedisMemError as exc:
            self.rec.complete(op, FAIL, None, f"{type(exc).__name__}: {exc}")
        else:
            self.rec.complete(op, OK, _recorded(result))
        return op

    def next_id(self) -> str:
        """The id the recorder gives the next call (values name their writer)."""
        return f"{self.rec.process}-{self.rec.count + 1}"

    def value(self) -> str:
        return json.dumps({"op": self.next_id(),
                           "n": self.rng.randrange(1000)}, sort_keys=True, separators=(",", ":"))

    async def get(self, scope_name: str, key: str) -> Op:
        scope = scope_of(self.mem, scope_name)

        async def run() -> dict[str, Any]:
            got = await scope.get(key)
            return {"value": None if not got.found else redismem_json(got.value),
                    "rev": got.revision}
        return await self.call("get", run, scope=scope_name, key=key)

    async def one(self) -> None:
        rng = self.rng
        scope_name = ":".join(rng.choice(SCOPES))
        scope = scope_of(self.mem, scope_name)
        key = epoch(rng.choice(REGISTERS))
        roll = rng.random()
        if roll < 0.18:
            await self.get(scope_name, key)
        elif roll < 0.28:
            value = self.value()
            await self.call("set", lambda: scope.set(key, json.loads(value)), scope=scope_name,
                            key=key, value=value, expected=None)
        elif roll < 0.33:
            value = self.value()
            await self.call("set", lambda: scope.set(key, json.loads(value),
                                                     ttl_seconds=TTL_SECONDS),
                            scope=scope_name, key=key, value=value, expected=None, ttl=True)
        elif roll < 0.48:  # read, then compare-and-set on what was read
            read = await self.get(scope_name, key)
            if read.outcome == OK:
                value, expected = self.value(), read.result["rev"]
                await self.call("set", lambda: scope.set(key, json.loads(value),
                                                         expected_revision=expected),
                                scope=scope_name, key=key, value=value, expected=expected)
        elif roll < 0.49:
            name = self.next_id()

            def bump(old: Any) -> dict[str, Any]:
                n = old["n"] if isinstance(old, dict) and isinstance(old.get("n"), int) else 0
                return {"op": name, "n": n + 1}

            async def update() -> str:
                return redismem_json((await scope.update(key, bump)).value)
            await self.call("update", update, scope=scope_name, key=key, op=name)
        elif roll < 0.51:
            value = self.value()
            await self.call("set", lambda: scope.set(key, json.loads(value), expected_revision=0),
                            scope=scope_name, key=key, value=value, expected=0)
        elif roll < 0.55:
            await self.call("delete", lambda: scope.delete(key), scope=scope_name, key=key,
                            expected=None)
        elif roll < 0.58:
            read = await self.get(scope_name, key)
            if read.outcome == OK and read.result["rev"]:
                expected = read.result["rev"]
                await self.call("delete", lambda: scope.delete(key, expected_revision=expected),
                                scope=scope_name, key=key, expected=expected)
        elif roll < 0.66:
            keys = [epoch(k) for k in rng.sample(REGISTERS, 2)]
            values = {k: self.value() for k in keys}
            await self.call("set_many", lambda: scope.set_many(
                {k: json.loads(v) for k, v in values.items()}), scope=scope_name, values=values)
        elif roll < 0.72:
            by, counter = rng.randrange(1, 10), epoch(COUNTER)

            async def incr() -> dict[str, Any]:
                got = await scope.incr(counter, by)
                return {"value": redismem_json(got.value), "rev": got.revision}
            await self.call("incr", incr, scope=scope_name, key=counter, by=by)
        elif roll < 0.75:
            await self.get(scope_name, epoch(rng.choice((COUNTER, LOG, OBJECT))))
        elif roll < 0.80:
            item, log = json.dumps({"op": self.next_id()}), epoch(LOG)
            await self.call("append", lambda: scope.append(log, json.loads(item),
                                                           max_items=LOG_CAP),
                            scope=scope_name, key=log, item=item, max_items=LOG_CAP)
        elif roll < 0.84:
            patch = json.dumps({"op": self.next_id(),
                                f"f{rng.randrange(4)}": rng.randrange(100)}, sort_keys=True)
            obj = epoch(OBJECT)
            await self.call("merge", lambda: scope.merge(obj, json.loads(patch)),
                            scope=scope_name, key=obj, patch=patch)
        elif roll < 0.92:
            await self.vector_op()
        else:
            await self.thread_append()

    async def vector_op(self) -> None:
        scope = self.mem.session("hot")
        key = epoch(self.rng.choice(VECTORS))
        roll = self.rng.random()
        if roll < 0.4:
            async def get() -> dict[str, Any]:
                got = await scope.get_vector(key)
                return {"value": redismem_json(got.metadata) if got.found else None,
                        "rev": got.revision}
            await self.call("get", get, scope="session:hot", key=key, kind="vector")
        elif roll < 0.85:
            meta = self.value()
            vector = [self.rng.random() + 0.1, self.rng.random(), self.rng.random()]
            await self.call("set", lambda: scope.set_vector(key, vector, json.loads(meta)),
                            scope="session:hot", key=key, kind="vector", value=meta,
                            expected=None)
        else:
            await self.call("delete", lambda: scope.delete_vector(key), scope="session:hot",
                            key=key, kind="vector", expected=None)

    async def thread_append(self) -> None:
        """Append an event; after an unknown outcome, append it again (same
        id) up to three times: it must be stored once."""
        thread = self.rng.choice(THREADS)
        event_id = f"{self.rec.process}-e{self.rec.count + 1}"
        event = MemoryEvent(event_id, thread, None, "message", 1, {"n": 1})
        for _ in range(3):
            op = await self.call("append_event", lambda: self.store.append_event(event),
                                 thread=thread, event=event_id)
            if op.outcome != UNKNOWN:
                return


def redismem_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stopped(out: Path) -> bool:
    return out.with_suffix(".stop").exists()


async def connect(url: str, ns: str, principal: str) -> redismem.Memory:
    while True:
        try:
            return await redismem.connect(url, namespace=ns, principal=principal)
        except LOST:
            await asyncio.sleep(0.2)


async def run_client(url: str, ns: str, name: str, out: Path, seed: int, tasks: int) -> None:
    async def task(index: int) -> None:
        principal = f"{name}t{index}"
        rec = Recorder.to(out.with_name(f"{out.stem}-t{index}.jsonl"), principal)
        rng = random.Random(f"{seed}-{index}")
        mem = await connect(url, ns, principal)
        store = RedisMemoryStore(url, namespace=ns)
        while True:
            try:
                await store.setup()
                break
            except LOST:
                await asyncio.sleep(0.2)
        client = Client(mem, store, rec, rng)
        out.with_name(f"{out.stem}-t{index}.ready").touch()  # the run's clock starts
        try:
            while not stopped(out):
                await client.one()
        finally:
            rec.close()
            await mem.close()
            await store.close()
    await asyncio.gather(*(task(i) for i in range(tasks)))


async def run_watcher(url: str, ns: str, out: Path) -> None:
    """Follow the whole namespace's feed from the start; after a lost
    connection go on from the last event seen."""
    last = 0
    with out.open("a", encoding="utf-8") as handle:
        while not stopped(out):
            mem = await connect(url, ns, "watcher")
            out.with_suffix(".ready").touch()
            try:
                async for event in mem.watch("*", after=last, interval=0.1,
                                             stop=lambda: stopped(out)):
                    handle.write(json.dumps({"seq": event.sequence, "scope": event.scope,
                                             "sid": event.scope_id, "key": event.key,
                                             "kind": event.kind, "action": event.action,
                                             "rev": event.revision, "by": event.principal})
                                 + "\n")
                    handle.flush()
                    last = event.sequence
            except LOST:
                handle.write(json.dumps({"resume": last}) + "\n")
                handle.flush()
            finally:
                await mem.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("role", choices=("client", "watcher"))
    parser.add_argument("url")
    parser.add_argument("ns")
    parser.add_argument("name")
    parser.add_argument("out", type=Path)
    parser.add_argument("seed", type=int, nargs="?", default=0)
    parser.add_argument("--tasks", type=int, default=2)
    parser.add_argument("--patch", default="")
    args = parser.parse_args(argv)
    if args.patch:
        from .broken import install

        install(args.patch)
    if args.role == "client":
        asyncio.run(run_client(args.url, args.ns, args.name, args.out, args.seed, args.tasks))
    else:
        asyncio.run(run_watcher(args.url, args.ns, args.out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
