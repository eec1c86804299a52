"""Every Redis key name redismem uses, built here and nowhere else.

All keys of a namespace share the hash tag ``{ns}`` so that one function call
can touch a value and its namespace's change feed atomically, in Redis Cluster
too. ``lua/lib/30_keys.lua`` checks the names callers pass against the same
schema.
"""

from __future__ import annotations

from typing import Literal

Kind = Literal["value", "vector"]
_KIND_TAG: dict[str, str] = {"value": "val", "vector": "vec"}


def base(ns: str) -> str:
    """The prefix shared by every key of namespace ``ns``."""
    return f"rm:{{{ns}}}:"


def value(ns: str, scope: str, sid: str, key: str) -> str:
    """Hash holding one value: ``v`` JSON, ``rev``, ``ts`` ms, ``by`` principal."""
    return f"{base(ns)}val:{scope}:{sid}:{key}"


def vector(ns: str, scope: str, sid: str, key: str) -> str:
    """Hash holding one vector: ``emb`` float32 bytes, ``meta`` JSON, ``rev``,
    ``ts``, ``by`` and the indexed fields ``_dim``, ``_sc``, ``_meta``."""
    return f"{base(ns)}vec:{scope}:{sid}:{key}"


def vector_prefix(ns: str) -> str:
    """The prefix of every vector hash of namespace ``ns`` (what indexes cover)."""
    return f"{base(ns)}vec:"


def vector_dims(ns: str, scope: str, sid: str) -> str:
    """Hash of dimension -> number of vectors of one scope stored with it."""
    return f"{base(ns)}vdims:{scope}:{sid}"


def vector_index(ns: str, dim: int) -> str:
    """The RediSearch HNSW index of the vectors of dimension ``dim`` in ``ns``."""
    return f"{base(ns)}idx:vec:{dim}"


def names(ns: str, kind: Kind, scope: str, sid: str) -> str:
    """Zset (score 0) of the key names of one scope, for ordered listing."""
    return f"{base(ns)}keys:{_KIND_TAG[kind]}:{scope}:{sid}"


def expiry(ns: str, kind: Kind, scope: str, sid: str) -> str:
    """Zset of the names of one scope that expire, scored by expiry time in ms."""
    return f"{base(ns)}exp:{_KIND_TAG[kind]}:{scope}:{sid}"


def revisions(ns: str, kind: Kind, scope: str, sid: str) -> str:
    """Hash of name -> last revision issued; outlives deletes and expiry."""
    return f"{base(ns)}rev:{_KIND_TAG[kind]}:{scope}:{sid}"


def feed(ns: str) -> str:
    """Stream of change events; entry id ``<sequence>-0``."""
    return f"{base(ns)}feed"


def sequence(ns: str) -> str:
    """Counter of the last change sequence handed out."""
    return f"{base(ns)}seq"


def config(ns: str) -> str:
    """Hash of namespace settings."""
    return f"{base(ns)}cfg"


def sessions(ns: str) -> str:
    """Zset of created session ids, scored by creation time in ms."""
    return f"{base(ns)}sessions"


def pattern(ns: str) -> str:
    """A SCAN pattern matching every key of namespace ``ns``."""
    return f"{base(ns)}*"
