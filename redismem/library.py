"""The Lua library on servers (its source, version and digest are
:mod:`redismem.lua_source`'s). :func:`ensure_library` loads it on a server
(on a cluster, on every primary) when the server lacks it or holds an
older version, and trusts a library of this version only when its code is
this package's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from dataclasses import dataclass
from typing import Any, Literal, cast

from redis.asyncio import Redis
from redis.exceptions import NoPermissionError, ReadOnlyError, ResponseError

from .errors import (
    LibraryDigestError,
    LibraryVersionError,
    PermissionDeniedError,
    UnavailableError,
)
from .lua_source import LibrarySource, assemble, bundled, code_digest, lua_dir
from .topology import is_cluster, on_primaries

__all__ = ["LIBRARY_NAME", "LibrarySource", "LoadResult", "ServerLibrary", "assemble", "bundled",
           "code_digest", "ensure_library", "ensure_library_on_nodes", "lowest_library",
           "lua_dir", "server_library", "server_version"]

LIBRARY_NAME = "redismem"


@dataclass(frozen=True)
class LoadResult:
    """What :func:`ensure_library` did: ``previous`` is None when none was loaded."""

    action: Literal["loaded", "replaced", "unchanged"]
    previous: int | None
    version: int


@dataclass(frozen=True)
class ServerLibrary:
    """The redismem library a server holds: its version and code digest."""

    version: int
    digest: str


async def server_library(client: Redis) -> ServerLibrary | None:
    """The redismem library loaded on the server, or None."""
    listed = await cast(Awaitable[Any], client.function_list(library=LIBRARY_NAME,
                                                               withcode=True))
    if not listed:
        return None
    entry = listed[0]
    fields = entry if isinstance(entry, dict) else dict(zip(entry[::2], entry[1::2], strict=True))
    code = fields.get(b"library_code", fields.get("library_code", b""))
    digest = code_digest(code if isinstance(code, bytes) else str(code).encode())
    try:
        version = int(await client.fcall_ro("redismem_version", 0))
    except ResponseError:
        version = 0  # a library without a working version function is older than any
    return ServerLibrary(version, digest)


def lowest_library(libraries: Iterable[ServerLibrary | None]) -> ServerLibrary | None:
    """The library every primary of a cluster holds: the one of the lowest
    version; None when one has none (or none is listed)."""
    found = list(libraries)
    if not found or None in found:
        return None
    return min((lib for lib in found if lib is not None), key=lambda lib: lib.version)


async def server_version(client: Redis) -> int | None:
    """The version of the redismem library loaded on the server, or None; on
    a cluster the lowest of its primaries' versions (None when one has none)."""
    found = (lowest_library((await on_primaries(client, server_library)).values())
             if is_cluster(client) else await server_library(client))
    return None if found is None else found.version


async def ensure_library(client: Redis, *, force: bool = False) -> LoadResult:
    """Load the bundled library when the server lacks it or holds an older one
    (on a cluster: on every primary). A library of this package's version is
    trusted only when its code is this package's, byte for byte (SHA-256).

    Args:
        client: the connection.
        force: replace the server's library even when it is newer or altered.

    Raises:
        LibraryVersionError: the server's library is newer (and not ``force``).
        LibraryDigestError: the server's library claims this version with other
            code (and not ``force``).
    """
    results = list((await ensure_library_on_nodes(client, force=force)).values())
    changed = [r for r in results if r.action != "unchanged"]
    return changed[0] if changed else results[0]


async def ensure_library_on_nodes(client: Redis, *, force: bool = False
                                  ) -> dict[str, LoadResult]:
    """:func:`ensure_library` node by node: ``{"host:port": result}`` for
    every primary of a cluster that answers, ``{"": result}`` for a single
    server. A primary that is down is left out: its replica holds the
    library by replication, and a node that lacks it when a call reaches
    it gets it then (:meth:`Functions._call`)."""
    if not is_cluster(client):
        return {"": await _ensure_on(client, force)}

    async def ensure(node: Redis) -> LoadResult | None:
        try:
            return await _ensure_on(node, force)
        except ReadOnlyError:
            # listed as a primary by a node that has not yet heard it became a
            # replica (just after the cluster formed): its primary's library
            # reaches it by replication
            return None

    results = {address: result for address, result
               in (await on_primaries(client, ensure, reachable_only=True)).items()
               if result is not None}
    if not results:
        raise UnavailableError("no primary of the cluster answered to load the library")
    return results


async def _ensure_on(client: Redis, force: bool) -> LoadResult:
    source = bundled()
    found = await server_library(client)
    previous = None if found is None else found.version
    if found is not None and found.version == source.version and not force:
        if found.digest == source.digest:
            return LoadResult("unchanged", previous, source.version)
        raise LibraryDigestError(
            f"the server's redismem Lua library says it is version {found.version}, but its "
            f"code is not that version's: sha256 {found.digest} on the server, {source.digest} "
            "in this package. Someone changed it; an operator can restore it with "
            "`redismem load-functions --force`")
    if previous is not None and previous > source.version and not force:
        raise LibraryVersionError(
            f"the server runs redismem Lua library version {previous}, newer than this "
            f"package's {source.version}; upgrade redismem instead of downgrading the library"
        )
    try:
        await cast(Awaitable[Any], client.function_load(source.code, replace=previous is not None))
    except NoPermissionError:
        have = "no redismem library" if previous is None else f"library version {previous}"
        raise PermissionDeniedError(
            f"the server has {have} and this credential may not load version "
            f"{source.version} (FUNCTION LOAD): an operator must run "
            "`redismem load-functions`") from None
    except ResponseError as exc:
        if "already exists" not in str(exc):
            raise
        # another process loaded it between our check and our load: check again
        return await _ensure_on(client, force)
    return LoadResult("loaded" if previous is None else "replaced", previous, source.version)
