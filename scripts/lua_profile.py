"""``python scripts/bench.py lua``: where the server time of one ``set`` goes.

Redis freezes ``TIME`` inside a function call, so the library cannot time
its own steps. Instead this loads, one after another, copies of the library
whose ``set_entries`` (lua/lib/75_entries.lua) returns early at each step,
runs the same ``set`` calls against each (updates of 500 keys of one scope,
as a worker writes), and reads the server time per call from ``INFO
commandstats``: a step costs the difference between returning after it and
before it. Each copy runs ``n`` calls in each of five rounds, the copies
taking turns; the minimum per copy counts. The first row is the whole
library. Run on its own server (the default): it replaces the
library while it runs, and loads the real one back at the end.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
from pathlib import Path
from typing import Any

from redis.asyncio import Redis

import redismem
from redismem import lua_source

ROUNDS = 5

# (a line of set_entries a copy returns before, what runs between the line
# before it and this one)
STEPS = [
    ("  local spec = ENTRY_KINDS[kind]", "FCALL, its arguments, the function's guard"),
    ("  local w = scope_writer(keys, 1, c, kind, principal, request, args[7])",
     "argument checks (ids, ttl, request id, item count)"),
    ("  w.ttl = ttl", "the scope's seven keys checked; the write settings (HMGET cfg)"),
    ("  local kept = kept_or_fenced(w, fname)", "the call's size"),
    ("  local ctx = spec.begin(w, keys, 8, count, c)",
     "request record read (HGET who) and the turn fence"),
    ("  local items, seen = {}, {}", "the last issued revisions (HMGET rev)"),
    ("  begin_writes(w)", "each item: key, strict JSON check, current revision (HGET), CAS"),
    ("  start_writing(w)", "the clock, the feed counters (GET seq, GET feedsz), events planned"),
    ("  local revisions = {}",
     "feed append (XADD), counters (SET x2), scope registry (ZADD), expiry pruning"),
    ("  finish_entries(w)", "the value hash (HSET) and its expiry"),
    ("  keep_reply(w, fname, ints_text(revisions))", "the name listing (ZADD), expiry zset"),
    ("  return revisions", "request record kept (HSET who, PEXPIRE)"),
]


def _copy_returning_before(line: str) -> str:
    """The library's code, with set_entries returning before ``line``."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "lua"
        shutil.copytree(lua_source.lua_dir(), copy)
        path = copy / "lib" / "75_entries.lua"
        text = path.read_text()
        start = text.index("local function set_entries(")
        at = text.index("\n" + line + "\n", start) + 1
        path.write_text(text[:at] + "  do return {1} end\n" + text[at:])
        return lua_source.assemble(copy).code


async def bench(url: str, n: int) -> list[dict[str, Any]]:
    raw = Redis.from_url(url)
    ns = "luaprof" + uuid.uuid4().hex[:6]
    value = {"note": "pack passports", "n": 1}
    rows: list[dict[str, Any]] = []
    try:
        async with await redismem.connect(url, namespace=ns, principal="bench") as mem:
            scope = mem.session("s")
            await scope.set_many({f"k{i}": value for i in range(500)})

            async def per_call(code: str) -> float:
                await raw.function_load(code, replace=True)
                await raw.config_resetstat()
                for i in range(n):
                    await scope.set(f"k{i % 500}", value)
                return float((await raw.info("commandstats"))["cmdstat_fcall"]["usec_per_call"])

            codes = [_copy_returning_before(line) for line, _ in STEPS]
            codes.append(lua_source.bundled().code)
            best = [float("inf")] * len(codes)
            for _ in range(ROUNDS):  # round-robin: a slow spell of the machine hits each copy
                for i, code in enumerate(codes):
                    best[i] = min(best[i], await per_call(code))
            before = 0.0
            for (_, what), upto in zip(STEPS, best, strict=False):
                rows.append({"step": what, "us": upto - before})
                before = upto
            rows.append({"step": "the reply", "us": best[-1] - before})
            rows.insert(0, {"step": "the whole set FCALL", "us": best[-1]})
    finally:
        await raw.function_load(lua_source.bundled().code, replace=True)
        await raw.aclose()
    return rows


def render(rows: list[dict[str, Any]]) -> str:
    lines = ["| step of one set (an update) | server µs |", "|---|---:|"]
    lines += [f"| {r['step']} | {r['us']:.1f} |" for r in rows]
    return "\n".join(lines)
