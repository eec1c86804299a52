"""Which scope searches leave the scope's filter out (per connection)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

INDEX_DOCS_TTL = 1.0
"""Seconds an index's document count is trusted."""


@dataclass
class SearchPlans:
    """Which scope searches leave the scope's filter out, per connection.

    Every scope of a namespace shares one index per dimension, so a scope
    search is a KNN query filtered on the scope's tag. RediSearch runs a
    filtered KNN as a hybrid query and picks its plan from the filter's
    size: brute force over the matching documents when they are few (a
    session's scope in a big index: fast and exact), HNSW in batches when
    they are many. A scope that holds *every* document of the index gains
    nothing from the filter, and RediSearch may still brute-force all of
    them. So when a scope's vector count (its dimensions hash) reached the
    index's document count (FT.INFO, re-read at most once a second) at its
    last search, the next search leaves the filter out: a plain KNN. Its
    results are checked: one document of another scope (counts run high
    once vectors expire) and the search runs again with the filter, and
    that scope keeps the filter until either count changes.
    """

    docs: dict[str, tuple[int, float]] = field(default_factory=dict)
    """Index name -> (FT.INFO num_docs, monotonic time read)."""
    whole: dict[tuple[str, str], bool] = field(default_factory=dict)
    """(index name, scope tag) -> the next search leaves the scope's filter out."""
    refused: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)
    """(index name, scope tag) -> the counts at which leaving it out failed."""

    def stale(self, index: str) -> bool:
        """Whether the index's document count should be read again."""
        found = self.docs.get(index)
        return found is None or time.monotonic() - found[1] > INDEX_DOCS_TTL

    def unscoped(self, index: str, tag: str) -> bool:
        return self.whole.get((index, tag), False)

    def read(self, index: str, info: Mapping[str, Any]) -> None:
        """Remember the index's document count from its FT.INFO fields."""
        self.docs[index] = (int(info["num_docs"]), time.monotonic())

    def learn(self, index: str, tag: str, count: int, foreign: bool) -> None:
        """After a search: ``count`` vectors in the scope, and whether an
        unscoped search returned a document of another scope."""
        docs = self.docs.get(index, (-1, 0.0))[0]
        if foreign:
            self.refused[(index, tag)] = (count, docs)
        self.whole[(index, tag)] = (0 < docs <= count
                                    and self.refused.get((index, tag)) != (count, docs))
