"""Deliberately broken copies of the Lua library, to show that the checkers
catch what they are meant to catch. A client process given ``--patch NAME``
assembles the bundled library, applies the patch and trusts that code
instead (in its own process only: nothing in redismem knows of this)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace

from redismem import library

PATCHES: dict[str, tuple[str, str]] = {
    # compare-and-set that does not compare
    "cas": ("if expected ~= nil and expected ~= current then",
            "if false and expected ~= current then"),
    # set_values (and set_vectors) apply their writes but append no change event
    "feed": ("  begin_writes(w)\n  for _, item in ipairs(items) do\n"
             "    plan_event(w, item.key, 'set', item.revision, item.event)\n",
             "  begin_writes(w)\n  for _, item in ipairs(items) do\n"),
    # request ids ignored: a call sent again after a lost reply applies again
    "retry": ("local function kept_reply(w, name)\n  if not w.request then",
              "local function kept_reply(w, name)\n  if true then"),
}


def patched(name: str) -> library.LibrarySource:
    old, new = PATCHES[name]
    source = library.bundled()
    if source.code.count(old) != 1:
        raise ValueError(f"patch {name!r} does not apply to the bundled library")
    return replace(source, code=source.code.replace(old, new))


def install(name: str) -> None:
    """Make this process load and trust the patched library."""
    source = patched(name)
    library.bundled = lambda: source  # type: ignore[assignment]


@contextlib.contextmanager
def installed(name: str) -> Iterator[None]:
    """The patched library trusted while inside (nothing when ``name`` is '')."""
    original = library.bundled
    if name:
        install(name)
    try:
        yield
    finally:
        library.bundled = original  # type: ignore[method-assign]
