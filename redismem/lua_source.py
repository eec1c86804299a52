"""The Lua library's source: ``header.lua`` + ``lib/*.lua`` +
``functions/*.lua`` joined in that order (files in name order) into one
``#!lua name=redismem`` library, its version and its digest. Loading it on
servers is :mod:`redismem.library`'s; this module needs no Redis client (the
command line's ``--version`` reads it).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

_REGISTER = re.compile(r"^register\('(redismem_\w+)'", re.MULTILINE)
_VERSION = re.compile(r"^local LIBRARY_VERSION = (\d+)$", re.MULTILINE)


def lua_dir() -> Path:
    """The directory holding the Lua sources: inside the installed package, or
    the repository's ``lua/`` for a source checkout or editable install."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "lua", here.parent / "lua"):
        if (candidate / "header.lua").is_file():
            return candidate
    raise FileNotFoundError(f"redismem's Lua sources are missing (looked in {here / 'lua'})")


@dataclass(frozen=True)
class LibrarySource:
    """The assembled library and what it registers."""

    code: str
    version: int
    function_names: tuple[str, ...]

    @property
    def digest(self) -> str:
        """The SHA-256 of the code: what a server's library must match to be
        trusted as this version."""
        return code_digest(self.code.encode())


def code_digest(code: bytes) -> str:
    return hashlib.sha256(code).hexdigest()


def assemble(directory: Path) -> LibrarySource:
    """Join the Lua files of ``directory`` into one library.

    Raises:
        FileNotFoundError: the header, lib/ or functions/ is missing or empty.
        ValueError: a function is registered twice, or the version is missing.
    """
    header = directory / "header.lua"
    parts = [header.read_text(encoding="utf-8")]
    functions: list[str] = []
    for sub in ("lib", "functions"):
        files = sorted((directory / sub).glob("*.lua"))
        if not files:
            raise FileNotFoundError(f"no Lua files in {directory / sub}")
        for path in files:
            text = path.read_text(encoding="utf-8")
            parts.append(f"-- {sub}/{path.name}\n{text}")
            functions.extend(_REGISTER.findall(text))
    duplicated = sorted({name for name in functions if functions.count(name) > 1})
    if duplicated:
        raise ValueError(f"Lua functions registered more than once: {', '.join(duplicated)}")
    code = "\n".join(parts)
    found = _VERSION.search(code)
    if found is None:
        raise ValueError("functions/version.lua does not set LIBRARY_VERSION")
    return LibrarySource(code, int(found[1]), tuple(functions))


@cache
def bundled() -> LibrarySource:
    """The library shipped with this package."""
    return assemble(lua_dir())
