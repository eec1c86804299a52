"""Linearizability of one key as a revisioned register with compare-and-set.

The search is Wing & Gong's, with Lowe's memo of (linearized set, state)
pairs (the algorithm of porcupine and Knossos): walk the history in
invocation order, linearize a pending call when the model accepts its
recorded outcome in the current state, backtrack when a completion is
reached whose call could not be placed. An ``unknown`` call has no
completion: it may take effect at any point after its invocation, or never
(it is simply never required to be placed).

The model (DESIGN.md, "Semantics that must hold"): a key holds a JSON value
or nothing, its current revision (0 when absent) and the last revision
issued (deletes take one too, so a re-created key goes on from there).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .history import FAIL, OK, UNKNOWN

State = tuple[str | None, int, int]  # value JSON, revision, last issued revision
EMPTY: State = (None, 0, 0)


@dataclass
class RegOp:
    """One call on one key (a batch call contributes one per key)."""

    id: str
    f: str  # get, set, delete, incr, append, merge, update
    args: dict[str, Any]
    outcome: str
    result: Any
    invoke: int
    done: int  # completion time; 1 << 62 when unknown


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return patch
    out = dict(target) if isinstance(target, dict) else {}
    for name, member in patch.items():
        if member is None:
            out.pop(name, None)
        else:
            out[name] = _merge(out.get(name), member)
    return out


def _new_value(op: RegOp, value: str | None) -> str:
    if op.f == "set":
        return str(op.args["value"])
    current = None if value is None else json.loads(value)
    if op.f == "incr":
        return canonical((current or 0) + int(op.args["by"]))
    if op.f == "update":  # tests/faults/workload.py: {"op": <id>, "n": n + 1}
        n = current.get("n") if isinstance(current, dict) else None
        return canonical({"op": op.args["op"], "n": (n if isinstance(n, int) else 0) + 1})
    if op.f == "append":
        items = [*(current or []), json.loads(op.args["item"])]
        cap = op.args.get("max_items")
        return canonical(items[-cap:] if cap else items)
    return canonical(_merge(current, json.loads(op.args["patch"])))


def step(state: State, op: RegOp) -> State | None:
    """The state after ``op``, or None when its recorded outcome is
    impossible in ``state``."""
    value, revision, issued = state
    if op.f == "get":
        if op.outcome != OK:
            return state
        return state if (op.result["value"], op.result["rev"]) == (value, revision) else None
    expected = op.args.get("expected")
    if expected is not None and expected != revision:  # a conflict: nothing changes
        if op.outcome == OK:
            return None
        if op.outcome == FAIL:
            return state if op.result == revision else None
        return state
    if op.outcome == FAIL:  # an update that lost every try did nothing; else unexplained
        return state if op.f == "update" else None
    if op.f == "delete":
        if revision == 0:
            return state if op.outcome == UNKNOWN or op.result is False else None
        if op.outcome == OK and op.result is not True:
            return None
        return (None, 0, issued + 1)
    new = (_new_value(op, value), issued + 1, issued + 1)
    if op.outcome == OK:
        got = op.result
        if op.f == "incr":
            if (got["value"], got["rev"]) != (new[0], new[1]):
                return None
        elif op.f == "update":  # returns the value written
            if got != new[0]:
                return None
        elif got != new[1]:
            return None
    return new


@dataclass
class _Node:
    op: RegOp | None
    call: bool
    index: int = -1
    match: _Node | None = None
    prev: _Node | None = None
    next: _Node | None = None


def _lift(call: _Node) -> None:
    assert call.prev is not None
    call.prev.next = call.next
    if call.next is not None:
        call.next.prev = call.prev
    ret = call.match
    if ret is not None:
        assert ret.prev is not None
        ret.prev.next = ret.next
        if ret.next is not None:
            ret.next.prev = ret.prev


def _unlift(call: _Node) -> None:
    ret = call.match
    if ret is not None:
        assert ret.prev is not None
        ret.prev.next = ret
        if ret.next is not None:
            ret.next.prev = ret
    assert call.prev is not None
    call.prev.next = call
    if call.next is not None:
        call.next.prev = call


@dataclass
class Verdict:
    ok: bool
    explored: int
    reason: str = ""


def check(ops: Sequence[RegOp], initial: State = EMPTY, budget: int = 2_000_000) -> Verdict:
    """Whether the history of one key is linearizable. ``budget`` bounds
    the steps of the search (a verdict of not ok says so in ``reason``)."""
    entries: list[tuple[int, int, _Node]] = []
    for index, op in enumerate(ops):
        call = _Node(op, True, index)
        entries.append((op.invoke, 0, call))
        if op.outcome != UNKNOWN:
            call.match = _Node(op, False, index)
            entries.append((op.done, 1, call.match))
    entries.sort(key=lambda e: (e[0], e[1]))
    head = _Node(None, False)
    last = head
    for _, _, node in entries:
        last.next, node.prev = node, last
        last = node
    returns = sum(1 for _, kind, _ in entries if kind == 1)

    state, linearized = initial, 0
    cache: set[tuple[int, State]] = set()
    stack: list[tuple[_Node, State]] = []
    entry, explored = head.next, 0
    stuck: tuple[int, RegOp | None] = (-1, None)  # the deepest point the search got to
    while returns:
        explored += 1
        if explored > budget:
            return Verdict(False, explored, f"undecided after {budget} steps")
        assert entry is not None
        if entry.call:
            assert entry.op is not None
            after = step(state, entry.op)
            if after is not None:
                memo = (linearized | (1 << entry.index), after)
                if memo not in cache:
                    cache.add(memo)
                    stack.append((entry, state))
                    state, linearized = after, memo[0]
                    _lift(entry)
                    returns -= entry.match is not None
                    entry = head.next
                    continue
            entry = entry.next
        else:
            if len(stack) > stuck[0]:
                stuck = (len(stack), entry.op)
            if not stack:
                op = stuck[1]
                assert op is not None
                return Verdict(False, explored, f"after {stuck[0]} calls in order, none explains "
                                                f"{op.id} ({op.f} {op.args} -> {op.outcome} "
                                                f"{op.result})")
            call, state = stack.pop()
            linearized &= ~(1 << call.index)
            _unlift(call)
            returns += call.match is not None
            entry = call.next
    return Verdict(True, explored)
