"""LangGraph on redismem (the ``langgraph`` extra): a checkpointer whose
writes are single Lua calls of the redismem library, fenced by the
thread's session turn and announced in the change feed.

    from redismem.langgraph import RedismemSaver

    saver = RedismemSaver(url="redis://...", namespace="team")
    graph = builder.compile(checkpointer=saver)

See docs/langgraph.md.
"""

from __future__ import annotations

from .saver import RedismemSaver
from .store import RedismemStore

__all__ = ["RedismemSaver", "RedismemStore"]
