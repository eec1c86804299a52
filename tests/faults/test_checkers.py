"""The checkers on hand-made histories: each must pass the good ones and
fail the bad ones, so a green fault run means something."""

from __future__ import annotations

import json
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from . import checks, linearizable
from .history import FAIL, OK, UNKNOWN, Op
from .linearizable import EMPTY, RegOp, State, step

NEVER = 1 << 62


def reg(f: str, invoke: int, done: int | None, outcome: str = OK, result: Any = None,
        **args: Any) -> RegOp:
    return RegOp(f"o{invoke}", f, args, outcome, result, invoke, NEVER if done is None else done)


def value(name: str) -> str:
    return json.dumps({"op": name})


def ok(history: list[RegOp]) -> bool:
    return linearizable.check(history).ok


# --- linearizability -------------------------------------------------------

def test_a_read_after_a_write_sees_it() -> None:
    assert ok([reg("set", 0, 1, result=1, value="1", expected=None),
               reg("get", 2, 3, result={"value": "1", "rev": 1})])
    assert not ok([reg("set", 0, 1, result=1, value="1", expected=None),
                   reg("get", 2, 3, result={"value": None, "rev": 0})])


def test_a_read_concurrent_with_a_write_may_see_either() -> None:
    for seen in ({"value": None, "rev": 0}, {"value": "1", "rev": 1}):
        assert ok([reg("set", 0, 10, result=1, value="1", expected=None),
                   reg("get", 2, 3, result=seen)])


def test_reads_cannot_go_back_in_time() -> None:
    assert not ok([reg("set", 0, 10, result=1, value="1", expected=None),
                   reg("get", 1, 2, result={"value": "1", "rev": 1}),
                   reg("get", 3, 4, result={"value": None, "rev": 0})])


def test_two_compare_and_sets_on_one_revision_cannot_both_win() -> None:
    first = reg("set", 0, 1, result=1, value="1", expected=None)
    assert not ok([first, reg("set", 2, 10, result=2, value="a", expected=1),
                   reg("set", 3, 11, result=3, value="b", expected=1)])
    assert ok([first, reg("set", 2, 10, result=2, value="a", expected=1),
               reg("set", 3, 11, FAIL, 2, value="b", expected=1)])
    # a conflict must report the revision that was there
    assert not ok([first, reg("set", 2, 10, result=2, value="a", expected=1),
                   reg("set", 3, 11, FAIL, 7, value="b", expected=1)])


def test_an_unknown_write_may_apply_late_or_never_but_not_before_it_was_sent() -> None:
    lost = reg("set", 5, None, UNKNOWN, value="x", expected=None)
    assert ok([lost, reg("get", 6, 7, result={"value": None, "rev": 0})])
    assert ok([lost, reg("get", 6, 7, result={"value": None, "rev": 0}),
               reg("get", 100, 101, result={"value": "x", "rev": 1})])
    assert not ok([reg("get", 0, 1, result={"value": "x", "rev": 1}), lost])


def test_a_deleted_key_goes_on_from_its_last_revision() -> None:
    history = [reg("set", 0, 1, result=1, value="1", expected=None),
               reg("delete", 2, 3, result=True, expected=None),
               reg("get", 4, 5, result={"value": None, "rev": 0}),
               reg("delete", 6, 7, result=False, expected=None)]
    assert ok([*history, reg("set", 8, 9, result=3, value="2", expected=0)])
    assert not ok([*history, reg("set", 8, 9, result=1, value="2", expected=0)])
    assert not ok([*history, reg("set", 8, 9, result=3, value="2", expected=1)])


def test_an_increment_applied_twice_is_caught() -> None:
    assert ok([reg("incr", 0, 1, result={"value": "1", "rev": 1}, by=1),
               reg("incr", 2, 3, result={"value": "2", "rev": 2}, by=1)])
    assert not ok([reg("incr", 0, 1, result={"value": "1", "rev": 1}, by=1),
                   reg("incr", 2, 3, result={"value": "3", "rev": 3}, by=1)])


def test_append_and_merge_follow_the_model() -> None:
    assert ok([reg("append", 0, 1, result=1, item='"a"', max_items=2),
               reg("append", 2, 3, result=2, item='"b"', max_items=2),
               reg("append", 4, 5, result=3, item='"c"', max_items=2),
               reg("get", 6, 7, result={"value": '["b","c"]', "rev": 3}),
               reg("merge", 8, 9, result=4, patch='{"x":{"y":1}}'),
               reg("get", 10, 11, result={"value": '{"x":{"y":1}}', "rev": 4})])


def test_an_update_is_one_read_modify_write() -> None:
    start = reg("set", 0, 1, result=1, value='{"n":4}', expected=None)
    assert ok([start, reg("update", 2, 3, result='{"n":5,"op":"u"}', op="u")])
    assert not ok([start, reg("update", 2, 3, result='{"n":1,"op":"u"}', op="u")])
    assert ok([start, reg("update", 2, 3, FAIL, None, op="u"),
               reg("get", 4, 5, result={"value": '{"n":4}', "rev": 1})])


def test_a_hopeless_search_stops_at_its_budget() -> None:
    many = [reg("set", i, None, UNKNOWN, value=str(i), expected=None) for i in range(30)]
    verdict = linearizable.check([*many, reg("get", 100, 101, result={"value": "nope",
                                                                    "rev": 1})], budget=5000)
    assert not verdict.ok and "undecided" in verdict.reason


def _sequential(rng: random.Random, n: int) -> list[RegOp]:
    """Calls run one at a time through the model, their results recorded."""
    state: State = EMPTY
    out = []
    for i in range(n):
        f = rng.choice(("get", "set", "set", "delete", "incr"))
        args: dict[str, Any] = {"expected": rng.choice((None, state[1], 0, 5))}
        if f == "set":
            args["value"] = str(i)
        if f == "incr":
            args = {"by": 1}
            if state[0] is not None and not state[0].lstrip("-").isdigit():
                f, args = "get", {}
        op = RegOp(f"o{i}", f, args, OK, None, 2 * i, 2 * i + 1)
        if f == "get":
            op.result = {"value": state[0], "rev": state[1]}
        elif args.get("expected") is not None and args["expected"] != state[1]:
            op.outcome, op.result = FAIL, state[1]
        elif f == "delete":
            op.result = state[1] > 0
        elif f == "incr":
            new = int(state[0] or 0) + 1
            op.result = {"value": str(new), "rev": state[2] + 1}
        else:
            op.result = state[2] + 1
        after = step(state, op)
        assert after is not None
        state = after
        out.append(op)
    return out


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 60))
def test_a_linearizable_execution_passes_however_its_calls_overlap(seed: int, n: int) -> None:
    """Widen each call's interval around its own moment: still linearizable.
    Then change one read's answer to something never written: not."""
    rng = random.Random(seed)
    history = _sequential(rng, n)
    for op in history:  # keep the linearization point (2i .. 2i + 1) inside
        op.invoke -= rng.randrange(0, 6)
        op.done += rng.randrange(0, 6)
    assert linearizable.check(history).ok
    reads = [op for op in history if op.f == "get"]
    if reads:
        rng.choice(reads).result = {"value": "never written", "rev": 1}
        assert not linearizable.check(history).ok


# --- the feed --------------------------------------------------------------

def call(name: str, f: str, outcome: str = OK, result: Any = None, **args: Any) -> Op:
    return Op(name, name.split("-")[0], f, {"scope": "session:hot", **args}, 0, 1, outcome,
              result)


def event(seq: int, key: str, rev: int, op: str | None = None, action: str = "set",
          by: str = "p") -> dict[str, Any]:
    return {"seq": seq, "scope": "session", "sid": "hot", "key": key, "kind": "value",
            "action": action, "rev": rev, "by": by, "value": value(op) if op else None,
            "delta": None}


def good_feed() -> tuple[list[Op], list[dict[str, Any]]]:
    ops = [call("p-1", "set", result=1, key="a", value=value("p-1")),
           call("p-2", "set_many", result={"a": 2, "b": 1},
                values={"a": value("p-2"), "b": value("p-2")}),
           call("p-3", "incr", result={"value": "1", "rev": 1}, key="n", by=1),
           call("p-4", "delete", result=True, key="b"),
           call("p-5", "set", FAIL, 9, key="a", value=value("p-5"), expected=9),
           call("p-6", "set", UNKNOWN, key="a", value=value("p-6")),
           call("p-7", "incr", UNKNOWN, key="n", by=1),
           call("p-8", "update", result=value("p-8"), key="c", op="p-8")]
    events = [event(1, "a", 1, "p-1"), event(2, "a", 2, "p-2"), event(3, "b", 1, "p-2"),
              event(4, "n", 1, action="incr"), event(5, "b", 2, action="delete"),
              event(6, "a", 3, "p-6"), event(7, "n", 2, action="incr"), event(8, "c", 1, "p-8")]
    return ops, events


def test_a_faithful_feed_passes() -> None:
    ops, events = good_feed()
    assert checks.feed(ops, events) == []
    # the unknown calls may also not have happened
    assert checks.feed(ops, [*events[:5], {**events[7], "seq": 6}]) == []


def test_feed_faults_are_each_caught() -> None:
    ops, events = good_feed()
    renumbered = [{**e, "seq": e["seq"] + (e["seq"] >= 4)} for e in events]
    cases = {
        "gap-free": renumbered,
        "has 0 events": events[1:],
        "was trimmed": events[1:],
        "appears 2 times": [*events, {**events[0], "seq": 8, "rev": 4}],
        "which failed": [*events, event(8, "a", 4, "p-5")],
        "do not increase": [*events, event(8, "a", 3, "p-6")],
        "contiguous": [events[0], events[1], event(3, "q", 1), {**events[2], "seq": 4},
                       *[{**e, "seq": e["seq"] + 1} for e in events[3:]]],
        "contiguous ": [e for e in events if e["seq"] != 3],
        "no call explains": [*events, event(8, "n", 3, action="incr")],
        "delete events": [e for e in events if e["action"] != "delete"],
        "has no event": events[:-1],
    }
    for want, bad in cases.items():
        problems = checks.feed(ops, bad)
        assert any(want.strip() in problem for problem in problems), (want, problems)


def test_watchers_and_resumed_reads_must_match_the_full_read() -> None:
    _, events = good_feed()
    assert checks.watchers({"w": events}, events) == []
    assert checks.watchers({"w": events[:3]}, events) == []  # stopped early: fine
    assert checks.watchers({"w": [events[0], events[2]]}, events)
    assert checks.watchers({"w": [events[0], events[0], events[1]]}, events)
    assert checks.watchers({"w": [events[0], {**events[1], "rev": 9}]}, events)
    assert checks.watchers({"w": events[1:]}, events)  # did not start at the start
    assert checks.resumed({3: events[3:], 8: []}, events) == []
    assert checks.resumed({3: events[4:]}, events)
    assert checks.resumed({3: events[2:]}, events)


def test_durable_and_threads() -> None:
    ops, events = good_feed()
    append = Op("p-9", "p", "append_event", {"thread": "t", "event": "e1"}, 0, 1, OK)
    feed = [(("value", "session:hot", e["key"]), e["rev"]) for e in events]
    kill = {"at": 5, "feed": feed, "threads": ["e1"]}
    assert checks.durable([*ops, append], [kill]) == []
    assert checks.durable([*ops, append], [{**kill, "feed": feed[1:]}])
    assert checks.durable([*ops, append], [{**kill, "threads": []}])
    late = Op("p-8", "p", "set", {"scope": "session:hot", "key": "z"}, 6, 7, OK, 1)
    assert checks.durable([late], [kill]) == []  # acknowledged after the kill
    assert checks.threads([append], {"t": ["e1"]}) == []
    assert checks.threads([append], {"t": ["e1", "e1"]})
    assert checks.threads([append], {"t": []})


def test_thread_events_in_the_feed() -> None:
    ops, events = good_feed()
    append = Op("p-9", "p", "append_event", {"thread": "t", "event": "e1"}, 0, 1, OK)
    announced = {"seq": len(events) + 1, "scope": "session", "sid": "t", "key": "e1",
                 "kind": "thread", "action": "append", "rev": len(events) + 1, "by": "p",
                 "value": None, "delta": None}
    assert checks.feed([*ops, append], [*events, announced]) == []
    assert checks.feed([*ops, append], events)  # acknowledged, not announced
    twice = {**announced, "seq": len(events) + 2, "rev": len(events) + 2}
    assert checks.feed([*ops, append], [*events, announced, twice])  # announced twice
    assert checks.feed(ops, [*events, announced])  # announced, never sent
