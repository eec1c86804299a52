"""The scoped-memory reference's "memory-lab" change listener, on redismem:
a listener on ``memory-lab.*`` in the global scope records each change; a
handler sets ``memory-lab.signal``; the listener sees it within milliseconds
(it blocks on the change feed, no polling interval).

    python3 scripts/examples/memory_lab_listener.py [VALUE]

Uses ``REDISMEM_URL``, else the embedded server (started if needed).
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import deque
from typing import Any

import redismem

events: deque[dict[str, Any]] = deque(maxlen=100)


async def main(value: str) -> None:
    async with await redismem.connect(namespace="examples") as mem:
        seen = asyncio.Event()

        # after=None: only changes made from now on
        @mem.on_change("memory-lab.*", scope="global", after=None)
        async def changed(event: redismem.MemoryChangeEvent) -> None:
            events.append({"key": event.key, "action": event.action,
                           "revision": event.revision, "value": event.value})
            seen.set()

        async def emit_change(value: str) -> dict[str, Any]:
            await mem.global_scope().set("memory-lab.signal", value)
            return {"accepted": True, "note": "Poll recent_changes for asynchronous delivery."}

        def recent_changes() -> dict[str, Any]:
            return {"events": list(events)}

        stop = asyncio.Event()
        serving = asyncio.create_task(mem.serve(stop=stop))
        await asyncio.sleep(0.2)  # let the listener start reading the feed
        started = time.perf_counter()
        print(await emit_change(value))
        await asyncio.wait_for(seen.wait(), timeout=10)
        print(f"delivered in {1000 * (time.perf_counter() - started):.1f} ms")
        print(recent_changes())
        stop.set()
        await serving


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "ping"))
