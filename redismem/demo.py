"""The "sessions" example of scoped memory (session, actor, workflow and
global scopes), on redismem.

A notebook agent appends notes to its session's memory, counts turns in the
actor scope and notes in the global scope, and remembers the last note in the
workflow scope; a second session stays isolated; ``forget`` deletes the notes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .memory import Memory, current_session, session_scope, workflow_scope


async def note(mem: Memory, text: str) -> dict[str, Any]:
    """The reference's ``note`` handler: needs an active session."""
    session_id = current_session()
    if not session_id:
        raise ValueError("submit this traversal with a session_id")
    notes = (await mem.session().update("notes", lambda current: (current or []) + [text])).value
    turns = (await mem.actor().update("turns", lambda c: (c or 0) + 1)).value
    total = (await mem.global_scope().update("all_notes", lambda c: (c or 0) + 1)).value
    await mem.workflow().set("last_note", text)
    return {"session_id": session_id, "notes": notes, "actor_turns": turns,
            "global_notes": total}


async def forget(mem: Memory) -> dict[str, Any]:
    """The reference's ``forget`` handler."""
    return {"deleted": await mem.session().delete("notes")}


async def run(mem: Memory, say: Callable[[str], None] = print) -> dict[str, Any]:
    """Run the example, narrating through ``say``; returns what it observed."""
    first = await mem.create_session()
    second = await mem.create_session()
    say(f"namespace {mem.namespace!r}, principal {mem.principal!r}")
    say(f"created sessions {first} and {second}")
    for i, text in enumerate(("pack passports", "book airport transfer", "check visa rules")):
        with session_scope(first), workflow_scope(f"{first}-turn{i}"):
            say(f"note -> {await note(mem, text)}")
    with session_scope(second), workflow_scope(f"{second}-turn0"):
        say(f"note (second session) -> {await note(mem, 'buy sunscreen')}")
    stored = await mem.session(first).get("notes")
    other = await mem.session(second).get("notes")
    say(f"memory revision {stored.revision} notes {stored.value}")
    say(f"second session notes {other.value} (isolated)")
    try:
        await note(mem, "no session")
    except ValueError as exc:
        say(f"note without a session fails: {exc}")
    with session_scope(first):
        forgot = await forget(mem)
    say(f"forget -> {forgot}")
    after = await mem.session(first).get("notes")
    say(f"after forget: found={after.found} revision={after.revision}")
    return {"first": first, "second": second, "revision": stored.revision,
            "notes": stored.value, "other": other.value, "forgot": forgot["deleted"],
            "after": after}
