"""The scoped-memory reference's "memory-lab" vector lookup, on redismem:
two fixture vectors in a session scope, then the best match for "blue".

    python3 scripts/examples/memory_lab_vectors.py [SESSION_ID]

Uses ``REDISMEM_URL``, else the embedded server (started if needed).
"""

from __future__ import annotations

import asyncio
import sys
from dataclasses import asdict
from typing import Any

import redismem


async def vector_lookup(mem: redismem.Memory, session_id: str) -> dict[str, Any]:
    scoped = mem.session(session_id)
    await scoped.set_vector("blue", [1.0, 0.0, 0.0], {"colour": "blue"})
    await scoped.set_vector("red", [0.0, 1.0, 0.0], {"colour": "red"})
    matches = await scoped.similarity_search([1.0, 0.0, 0.0], top_k=1)
    return {"matches": [asdict(match) for match in matches]}


async def main(session_id: str) -> None:
    async with await redismem.connect(namespace="examples") as mem:
        print(await vector_lookup(mem, session_id))
        red = await mem.session(session_id).similarity_search(
            [1.0, 0.0, 0.0], top_k=5, filter={"colour": "red"})
        print("filtered to red:", [(m.key, round(m.score, 3)) for m in red])
        try:
            await mem.session(session_id).set_vector("nothing", [0.0, 0.0, 0.0])
        except redismem.InvalidVectorError as exc:
            print("zero vector refused:", exc.code)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else redismem.new_id("lab")))
