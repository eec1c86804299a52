"""The agent framework reference's quick start, a multi-turn conversation, on
redismem's MemoryStore. There is no model here: a stand-in tutor answers, and
what matters is what the runner persists between runs — each turn's events in
the thread, a checkpoint in the thread's state — and that turn 2 sees turn 1.

    python3 scripts/examples/multi_turn_thread.py [THREAD_ID]

Uses ``REDISMEM_URL``, else the embedded server (started if needed).
"""

from __future__ import annotations

import asyncio
import sys

import redismem
from redismem import MemoryEvent, RedisMemoryStore, new_id, now_ms

ANSWERS = {"What are generators?": "Functions that yield values one at a time.",
           "Show me an example": "def count(): yield 1; yield 2"}


async def run(store: RedisMemoryStore, thread_id: str, user_message: str) -> str:
    """One run: read the conversation so far, answer, persist the turn."""
    history = await store.get_recent_events(thread_id, limit=50)
    run_id = new_id("run")
    await store.put_state(thread_id, f"checkpoint:{run_id}", {"step": "pre-llm",
                                                              "history": len(history)})
    answer = ANSWERS.get(user_message, "Let me think about that.")
    if history:
        answer += f" (following up on: {history[0].payload['text']!r})"
    await store.append_events(thread_id, [
        MemoryEvent(new_id("ev"), thread_id, "user-123", "message", now_ms(),
                    {"role": "user", "text": user_message}),
        MemoryEvent(new_id("ev"), thread_id, "user-123", "message", now_ms(),
                    {"role": "assistant", "text": answer}),
    ])
    await store.put_state(thread_id, f"checkpoint:{run_id}", {"step": "done"})
    return answer


async def main(thread: str) -> None:
    async with RedisMemoryStore(namespace="examples") as store:
        print(await run(store, thread, "What are generators?"))
        # Turn 2: the agent remembers turn 1
        print(await run(store, thread, "Show me an example"))
        events = await store.get_recent_events(thread)
        print(f"thread {thread}: {len(events)} events")
        for event in events:
            print(f"  {event.payload['role']}: {event.payload['text']}")
        checkpoints = await store.list_state(thread, prefix="checkpoint:")
        print("checkpoints:", sorted(c["step"] for c in checkpoints.values()))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else redismem.new_id("session")))
