"""The agent framework reference's long-term memory, on redismem: memories per
user and purpose, listed, found by BM25 text search and by embedding
similarity. The embeddings are fixtures; redismem has no embedding model.

    python3 scripts/examples/long_term_memory.py [USER_ID]

Uses ``REDISMEM_URL``, else the embedded server (started if needed).
"""

from __future__ import annotations

import asyncio
import sys

import redismem
from redismem import LongTermMemory, RedisMemoryStore, new_id, now_ms

KNOWLEDGE = [("python generators yield values lazily", [1.0, 0.1, 0.0]),
             ("redis streams keep events in order", [0.0, 1.0, 0.2]),
             ("lua functions run atomically inside redis", [0.1, 0.8, 0.6])]


async def main(user: str) -> None:
    async with RedisMemoryStore(namespace="examples") as memory_store:
        await memory_store.upsert_long_term_memory(
            LongTermMemory(
                id=new_id("ltm"),
                user_id=user,
                scope="preferences",
                data={"theme": "dark", "language": "python"},
                text="User prefers dark theme and Python examples",
                tags=["preference", "ui"],
                metadata={},
                created_at=now_ms(),
                updated_at=now_ms(),
            )
        )
        for text, embedding in KNOWLEDGE:
            await memory_store.upsert_long_term_memory(
                LongTermMemory(new_id("ltm"), user, "knowledge", {}, text, [], {}, now_ms(),
                               now_ms()),
                embedding=embedding)

        memories = await memory_store.list_long_term_memories(user_id=user, scope="preferences",
                                                              limit=10)
        print("preferences:", [m.text for m in memories])

        results = await memory_store.search_long_term_memory_vector(
            user_id=user, query_embedding=[0.9, 0.2, 0.0], scope="knowledge", limit=5,
            min_score=0.7)
        for memory, score in results:
            print(f"{score:.2f}: {memory.text}")

        found = await memory_store.search_long_term_memory_text(
            user_id=user, query="python generators", scope="knowledge", limit=10)
        print("text search:", [m.text for m in found])


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else redismem.new_id("user")))
