"""The scoped-memory reference's "sessions" example, on redismem.

The reference's ``agent.py`` (the ``note`` and ``forget`` handlers, writing to
all four scopes) is ``redismem/demo.py``; this is its ``call.py``: create a
session, take three notes in it, read the notes' revision, forget them.

    python3 scripts/examples/sessions.py

Uses ``REDISMEM_URL``, else the embedded server (started if needed).
"""

from __future__ import annotations

import asyncio

import redismem
from redismem.demo import forget, note


async def main() -> None:
    async with await redismem.connect(namespace="examples") as mem:
        session = await mem.create_session()
        for turn, text in enumerate(("pack passports", "book airport transfer",
                                     "check visa rules")):
            # a handler runs inside its session and workflow (one per root turn)
            with redismem.session_scope(session), redismem.workflow_scope(f"{session}-{turn}"):
                print(await note(mem, text))
        stored = await mem.session(session).get("notes")
        print("memory revision", stored.revision, "notes", stored.value)
        with redismem.session_scope(session):
            print(await forget(mem))


if __name__ == "__main__":
    asyncio.run(main())
