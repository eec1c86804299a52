"""The agent framework reference's "compact long threads", on redismem: a
thread of 2,000 events, a few of them traces, compacted to 500 with traces
protected — in one Lua call, atomically.

    python3 scripts/examples/compaction.py [THREAD_ID]

Uses ``REDISMEM_URL``, else the embedded server (started if needed).
"""

from __future__ import annotations

import asyncio
import sys

import redismem
from redismem import MemoryEvent, RedisMemoryStore, RetentionPolicy, now_ms


async def main(thread: str) -> None:
    async with RedisMemoryStore(namespace="examples") as store:
        start = now_ms()
        await store.append_events(thread, [
            MemoryEvent(f"{thread}-{i}", thread, None, "trace" if i % 100 == 0 else "message",
                        start + i, {"i": i}) for i in range(2000)],
            atomic=False)  # more than one call's 500 events
        result = await store.compact_thread(
            thread,
            RetentionPolicy(max_events_per_thread=500, keep_event_types=["trace"],
                            scan_limit=20_000),
        )
        print(f"Removed {result.events_removed} events, kept {result.events_kept}")
        kept = await store.get_recent_events(thread, limit=1000)
        traces = [e for e in kept if e.type == "trace"]
        print(f"{len(traces)} traces kept, newest message {kept[-1].payload['i']}")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else redismem.new_id("thread")))
