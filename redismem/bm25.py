"""Okapi BM25 ranking in the client: long-term memory text search on a
server without the search module."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

_WORD = re.compile(r"\w+")
_BM25_K1, _BM25_B = 1.2, 0.75


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def bm25_rank(query: str, documents: Sequence[tuple[Any, str]], limit: int
              ) -> list[tuple[Any, float]]:
    """Okapi BM25 (k1 1.2, b 0.75) of ``documents`` (item, text) for the words
    of ``query``; items with a positive score, best first."""
    terms = set(tokens(query))
    if not terms or not documents:
        return []
    tokenized = [tokens(text) for _, text in documents]
    average = sum(map(len, tokenized)) / len(tokenized) or 1.0
    frequency = {t: sum(1 for words in tokenized if t in words) for t in terms}
    total = len(documents)
    scored = []
    for (item, _), words in zip(documents, tokenized, strict=True):
        score = 0.0
        for term in terms:
            count = words.count(term)
            if count:
                idf = math.log(1 + (total - frequency[term] + 0.5) / (frequency[term] + 0.5))
                score += idf * count * (_BM25_K1 + 1) / (
                    count + _BM25_K1 * (1 - _BM25_B + _BM25_B * len(words) / average))
        if score > 0:
            scored.append((item, score))
    scored.sort(key=lambda pair: -pair[1])
    return scored[:limit]
