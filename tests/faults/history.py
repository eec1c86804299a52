"""Histories: what every client asked, when, and what it learned.

Each client process appends JSON lines to its own file: an ``invoke`` line
before a call and a ``complete`` line after it, both flushed at once, so a
client killed mid-call leaves an invoke without a completion (outcome
``unknown``). Times are ``time.monotonic_ns()``, one clock for every
process of the machine.

Outcomes: ``ok`` (applied, with its result), ``fail`` (definitely not
applied: a typed refusal such as a revision conflict), ``unknown`` (the
connection was lost or timed out on every attempt, or the client died:
it may or may not have been applied).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

OK, FAIL, UNKNOWN = "ok", "fail", "unknown"


@dataclass
class Op:
    """One call. ``args`` and ``result`` are JSON-shaped; ``complete`` is
    None while (or when forever) unknown."""

    id: str
    process: str
    f: str
    args: dict[str, Any]
    invoke: int
    complete: int | None = None
    outcome: str = UNKNOWN
    result: Any = None
    error: str | None = None
    gave_up: int | None = None
    """When the client stopped waiting for an unknown outcome (None: it died)."""

    @property
    def done(self) -> int:
        """Completion time, or 'never' for an unknown outcome."""
        return self.complete if self.complete is not None else 1 << 62


@dataclass
class Recorder:
    """Writes one process's history."""

    out: TextIO
    process: str
    count: int = 0

    @classmethod
    def to(cls, path: Path, process: str) -> Recorder:
        return cls(path.open("a", encoding="utf-8"), process)

    def invoke(self, f: str, **args: Any) -> Op:
        self.count += 1
        op = Op(f"{self.process}-{self.count}", self.process, f, args, time.monotonic_ns())
        self._write({"type": "invoke", "id": op.id, "process": op.process, "f": f, "args": args,
                     "time": op.invoke})
        return op

    def complete(self, op: Op, outcome: str, result: Any = None, error: str | None = None) -> None:
        now = time.monotonic_ns()
        op.complete, op.gave_up = (None, now) if outcome == UNKNOWN else (now, None)
        op.outcome, op.result, op.error = outcome, result, error
        self._write({"type": "complete", "id": op.id, "outcome": outcome, "result": result,
                     "error": error, "time": now})

    def _write(self, line: dict[str, Any]) -> None:
        self.out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.out.flush()

    def close(self) -> None:
        self.out.close()


def load(paths: Iterable[Path]) -> list[Op]:
    """Every op of the files, invocation order; an invoke without a
    completion (or completed ``unknown``) has outcome ``unknown``."""
    ops: dict[str, Op] = {}
    for path in paths:
        for line in _lines(path):
            if line["type"] == "invoke":
                ops[line["id"]] = Op(line["id"], line["process"], line["f"], line["args"],
                                     line["time"])
            elif line["id"] in ops:
                op = ops[line["id"]]
                op.outcome, op.result, op.error = line["outcome"], line["result"], line["error"]
                if op.outcome == UNKNOWN:
                    op.gave_up = line["time"]
                else:
                    op.complete = line["time"]
    return sorted(ops.values(), key=lambda op: op.invoke)


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for text in handle:
            if text.endswith("\n"):  # a line cut by a kill is dropped
                yield json.loads(text)
