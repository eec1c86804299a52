"""The checkers of a fault run, each a function from recorded facts to a
list of problems (empty = the guarantee held).

- ``linearizable``: every key's history, as a revisioned register.
- ``feed``: the final full read of the change feed against the history:
  ordered and gap-free, every ``ok`` write exactly once, nothing of a
  ``fail`` write, per-key revisions increasing, batches contiguous.
- ``watchers``: what each watcher saw is exactly a stretch of the full read.
- ``resumed``: reads resumed from cursors are exactly suffixes of the full read.
- ``durable``: every write acknowledged before a server kill is in the feed
  read right after the restart.
- ``threads``: every appended event is stored once, however often it was sent.

Events are dicts with ``seq scope sid key kind action rev by value delta``
(value, delta: the JSON text, or None).
"""

from __future__ import annotations

import itertools
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from . import linearizable
from .history import FAIL, OK, UNKNOWN, Op

KeyId = tuple[str, str, str]  # kind, scope ("session:hot"), key
Event = dict[str, Any]


def _kind(op: Op) -> str:
    return str(op.args.get("kind", "value"))


def register_ops(ops: Iterable[Op]) -> dict[KeyId, list[linearizable.RegOp]]:
    """Each key's calls; a batch contributes one call per key. Reads that did
    not return (unknown or failed) say nothing and are left out."""
    out: dict[KeyId, list[linearizable.RegOp]] = defaultdict(list)
    for op in ops:
        if op.f == "append_event":
            continue
        if op.f == "get" and op.outcome != OK:
            continue
        if op.f == "set_many":
            for key, value in op.args["values"].items():
                result = op.result[key] if op.outcome == OK else op.result
                out[("value", op.args["scope"], key)].append(linearizable.RegOp(
                    op.id, "set", {"value": value, "expected": None}, op.outcome, result,
                    op.invoke, op.done))
            continue
        out[(_kind(op), op.args["scope"], op.args["key"])].append(linearizable.RegOp(
            op.id, op.f, op.args, op.outcome, op.result, op.invoke, op.done))
    return out


def linearizable_keys(ops: Sequence[Op], budget: int = 2_000_000) -> list[str]:
    problems = []
    for key, history in sorted(register_ops(ops).items()):
        verdict = linearizable.check(history, budget=budget)
        if not verdict.ok:
            problems.append(f"{'/'.join(key)} is not linearizable: {verdict.reason}")
    return problems


def _op_of_event(event: Event) -> str | None:
    """The call that wrote an event, when its value (a set) or its delta
    (the item an append added, the patch of a merge) names it."""
    text = event["delta"] if event["action"] in ("append", "merge") else event["value"]
    if text is None:
        return None
    value = json.loads(text)
    return value.get("op") if isinstance(value, dict) else None


def _writes(op: Op) -> list[tuple[KeyId, int | None]]:
    """(key, revision or None when not known) of each change an ok call made."""
    if op.f == "set_many":
        return [(("value", op.args["scope"], k), op.result[k]) for k in op.args["values"]]
    if op.f == "delete":
        return [((_kind(op), op.args["scope"], op.args["key"]), None)] if op.result else []
    if op.f == "incr":
        return [(("value", op.args["scope"], op.args["key"]), op.result["rev"])]
    if op.f in ("set", "append", "merge"):
        return [((_kind(op), op.args["scope"], op.args["key"]), op.result)]
    return []


def _event_key(event: Event) -> KeyId:
    return (event["kind"], f"{event['scope']}:{event['sid']}", event["key"])


def feed(ops: Sequence[Op], events: Sequence[Event]) -> list[str]:
    problems: list[str] = []
    if events and events[0]["seq"] != 1:
        problems.append(f"the feed starts at {events[0]['seq']}: it was trimmed, so the checks "
                        "cannot see every write (raise feed_max_bytes or run shorter)")
    seqs = [e["seq"] for e in events]
    gaps = [(a, b) for a, b in itertools.pairwise(seqs) if b != a + 1]
    if gaps:
        problems.append(f"the feed is not gap-free and ordered: {gaps[:5]}")
    problems += _thread_events(ops, [e for e in events if e["kind"] == "thread"])
    events = [e for e in events if e["kind"] != "thread"]
    names = [_op_of_event(e) for e in events]  # each event's JSON parsed once
    by_rev: dict[tuple[KeyId, int], list[int]] = defaultdict(list)  # -> event positions
    last_rev: dict[KeyId, int] = {}
    for at, event in enumerate(events):
        key = _event_key(event)
        by_rev[(key, event["rev"])].append(at)
        if event["rev"] <= last_rev.get(key, 0):
            problems.append(f"revisions of {'/'.join(key)} do not increase at event {event['seq']}")
        last_rev[key] = event["rev"]
    calls = {op.id: op for op in ops}
    claimed: set[int] = set()
    for op in ops:
        if op.outcome != OK:
            continue
        for key, revision in _writes(op):
            if revision is None:
                continue
            found = by_rev.get((key, revision), [])
            if len(found) != 1:
                problems.append(f"ok call {op.id} ({op.f} {'/'.join(key)} rev {revision}) has "
                                f"{len(found)} events")
                continue
            claimed.add(found[0])
            named = names[found[0]]
            if named is not None and named != op.id:
                problems.append(f"event {events[found[0]]['seq']} of {op.id} names {named}")
    # events no ok call claims: each must be of an unknown call, at most once
    unclaimed: Counter[tuple[str, KeyId, str]] = Counter()
    seen_ops: Counter[str] = Counter()
    for at, event in enumerate(events):
        named = names[at]
        if named is not None:
            seen_ops[named] += 1
            call = calls.get(named)
            if call is None or call.outcome == FAIL:
                problems.append(f"event {event['seq']} is of call {named}, which "
                                f"{'never ran' if call is None else 'failed'}")
        if at not in claimed and named is None:
            unclaimed[(event["by"], _event_key(event), event["action"])] += 1
    problems += [f"call {name} appears {n} times in the feed" for name, n in seen_ops.items()
                 if n > 1 and calls.get(name) is not None and calls[name].f != "set_many"]
    problems += [f"ok call {op.id} ({op.f}) has no event" for op in ops
                 if op.outcome == OK and op.f == "update" and not seen_ops[op.id]]
    unknown: Counter[tuple[str, KeyId, str]] = Counter()
    deletes_ok: Counter[tuple[str, KeyId, str]] = Counter()
    for op in ops:
        if op.f in ("incr", "delete") or (op.f == "set" and _kind(op) == "vector"):
            target = (op.process, (_kind(op), op.args["scope"], op.args["key"]),
                      "set" if op.f == "set" else op.f)
            if op.outcome == UNKNOWN:
                unknown[target] += 1
            elif op.outcome == OK and op.f == "delete" and op.result:
                deletes_ok[target] += 1
    for target, count in unclaimed.items():
        if count > unknown[target] + deletes_ok[target]:
            problems.append(f"{count} events of {target[0]} on {'/'.join(target[1])} "
                            f"({target[2]}) that no call explains")
    for target, count in deletes_ok.items():
        if unclaimed[target] < count:
            problems.append(f"{count} ok deletes by {target[0]} of {'/'.join(target[1])}, "
                            f"{unclaimed[target]} delete events")
    problems += _batches(ops, events, names)
    return problems


def _batches(ops: Sequence[Op], events: Sequence[Event], names: Sequence[str | None]
             ) -> list[str]:
    """The events of one batch call are all there or none, contiguous, in item order."""
    problems = []
    by_op: dict[str, list[Event]] = defaultdict(list)
    for event, named in zip(events, names, strict=True):
        if named is not None:
            by_op[named].append(event)
    for op in ops:
        if op.f != "set_many":
            continue
        got = by_op.get(op.id, [])
        if not got and op.outcome != OK:
            continue
        keys = list(op.args["values"])
        seqs = [e["seq"] for e in got]
        if [e["key"] for e in got] != keys or seqs != list(range(seqs[0], seqs[0] + len(keys))):
            problems.append(f"batch {op.id} ({op.outcome}) has events {seqs} for keys "
                            f"{[e['key'] for e in got]}, wanted {keys} contiguous")
    return problems


def _same(event: Event, full: Event) -> bool:
    return all(event[name] == full[name] for name in event if name != "value")


def watchers(logs: dict[str, list[Event]], events: Sequence[Event]) -> list[str]:
    """Each watcher saw a gap-free, duplicate-free stretch of the full read."""
    problems = []
    at = {e["seq"]: e for e in events}
    for name, seen in logs.items():
        seqs = [e["seq"] for e in seen]
        if not seqs:
            problems.append(f"watcher {name} saw nothing")
            continue
        if seqs != list(range(seqs[0], seqs[0] + len(seqs))):
            bad = [(a, b) for a, b in itertools.pairwise(seqs) if b != a + 1]
            problems.append(f"watcher {name} skipped or repeated events: {bad[:5]}")
        if seqs[0] != (events[0]["seq"] if events else None):
            problems.append(f"watcher {name} started at {seqs[0]}, the feed at "
                            f"{events[0]['seq'] if events else None}")
        wrong = [e["seq"] for e in seen if e["seq"] not in at or not _same(e, at[e["seq"]])]
        if wrong:
            problems.append(f"watcher {name} saw events unlike the full read's: {wrong[:5]}")
    return problems


def resumed(reads: dict[int, list[Event]], events: Sequence[Event]) -> list[str]:
    """A read from cursor c has exactly the full read's events after c."""
    problems = []
    for cursor, got in reads.items():
        want = [e for e in events if e["seq"] > cursor]
        if [e["seq"] for e in got] != [e["seq"] for e in want] or not all(
                _same(g, w) for g, w in zip(got, want, strict=False)):
            problems.append(f"resumed after {cursor}: {len(got)} events, the full read has "
                            f"{len(want)} after it")
    return problems


def _thread_events(ops: Sequence[Op], events: Sequence[Event]) -> list[str]:
    """Thread events in the feed: each appended event announced once,
    however often its append was sent again; each announced one appended
    by a call that ran; each acknowledged append announced."""
    problems = []
    announced = Counter((e["sid"], e["key"]) for e in events if e["action"] == "append")
    problems += [f"event {event} of thread {thread} is announced {n} times"
                 for (thread, event), n in announced.items() if n > 1]
    sent = {(op.args["thread"], op.args["event"]) for op in ops if op.f == "append_event"}
    problems += [f"event {event} of thread {thread} is announced, but no call appended it"
                 for thread, event in announced if (thread, event) not in sent]
    problems += [f"event {op.args['event']} acknowledged to {op.id} is not announced"
                 for op in ops if op.f == "append_event" and op.outcome == OK
                 and not announced[(op.args["thread"], op.args["event"])]]
    return problems


def durable(ops: Sequence[Op], kills: Sequence[dict[str, Any]]) -> list[str]:
    """After each kill: every write acknowledged before it is in the feed
    read after the restart; so is every thread event."""
    problems = []
    for kill in kills:
        present = {(tuple(k), rev) for k, rev in kill["feed"]}
        stored = set(kill["threads"])
        for op in ops:
            if op.outcome != OK or op.done >= kill["at"]:
                continue
            if op.f == "append_event":
                if op.args["event"] not in stored:
                    problems.append(f"event {op.args['event']} appended by {op.id} before the "
                                    f"kill at {kill['at']} is gone after the restart")
                continue
            for key, revision in _writes(op):
                if revision is not None and (key, revision) not in present:
                    problems.append(f"{op.id} ({op.f} {'/'.join(key)} rev {revision}) "
                                    f"acknowledged before the kill at {kill['at']} is gone")
    return problems


def threads(ops: Sequence[Op], stored: dict[str, list[str]]) -> list[str]:
    """Each event id stored at most once; every acknowledged one stored."""
    problems = []
    for thread, ids in stored.items():
        twice = [i for i, n in Counter(ids).items() if n > 1]
        if twice:
            problems.append(f"thread {thread} holds events more than once: {twice[:5]}")
    for op in ops:
        if op.f == "append_event" and op.outcome == OK and \
                op.args["event"] not in stored.get(op.args["thread"], []):
            problems.append(f"event {op.args['event']} acknowledged to {op.id} is not stored")
    return problems
