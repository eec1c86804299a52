"""Text embedders: a text -> vector function that ``redismem mcp`` (and any
caller) plugs in by name, so that long-term memories are found by meaning.

A spec names one:

- ``none``: no embedder (recall is BM25 text search);
- ``wordllama``: WordLlama's small static model (256 dimensions), whose
  weights ship in its wheel (``pip install 'redismem[embed]'``): no network
  and no API key, about 30 µs a text on one core;
- ``auto``: ``wordllama`` when it is installed, else ``none``;
- ``MODULE:CALLABLE`` (``CALLABLE`` may be dotted): any function of one
  text returning a sequence of numbers (a list, a numpy array), sync or
  async. A sync one runs in a worker thread, so a slow model does not hold
  up the server.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

from .errors import InvalidArgumentError, InvalidVectorError

BUILT_IN = ("none", "auto", "wordllama")


@dataclass(frozen=True)
class Embedder:
    """A named text -> vector function."""

    name: str
    fn: Callable[[str], Any]
    inline: bool = False
    """A fast sync function, called on the event loop (no thread)."""

    async def embed(self, text: str) -> Sequence[float]:
        """The text's vector.

        Raises:
            InvalidVectorError: the function failed or returned no vector.
        """
        try:
            if inspect.iscoroutinefunction(self.fn):
                found = await self.fn(text)
            elif self.inline:
                found = self.fn(text)
            else:
                found = await asyncio.to_thread(self.fn, text)
        except Exception as exc:
            raise InvalidVectorError(f"the embedder {self.name} failed: "
                                     f"{type(exc).__name__}: {exc}") from exc
        if isinstance(found, str | bytes) or not hasattr(found, "__len__"):
            raise InvalidVectorError(f"the embedder {self.name} returned {type(found).__name__}, "
                                     "not a sequence of numbers")
        return found  # type: ignore[no-any-return]


def load(spec: str) -> Embedder | None:
    """The embedder ``spec`` names (None for ``none``, or ``auto`` without
    WordLlama).

    Raises:
        InvalidArgumentError: the spec names nothing that can be loaded.
    """
    if spec == "none":
        return None
    if spec in ("auto", "wordllama"):
        try:
            importlib.import_module("wordllama")
        except ImportError:
            if spec == "auto":
                return None
            raise InvalidArgumentError("the wordllama embedder needs the embed extra: pip install "
                                       "'redismem[embed]'") from None
        return Embedder("wordllama", wordllama, inline=True)
    module, sep, attribute = spec.partition(":")
    if not sep or not module or not attribute:
        raise InvalidArgumentError(f"an embedder is none, auto, wordllama or MODULE:CALLABLE, "
                                   f"got {spec!r}")
    try:
        found: Any = importlib.import_module(module)
    except ImportError as exc:
        raise InvalidArgumentError(f"cannot import the embedder's module {module!r}: {exc}"
                                   ) from None
    for part in attribute.split("."):
        try:
            found = getattr(found, part)
        except AttributeError:
            raise InvalidArgumentError(f"module {module!r} has no {attribute!r}") from None
    if not callable(found):
        raise InvalidArgumentError(f"{spec} is not callable")
    return Embedder(spec, found)


def wordllama(text: str) -> Any:
    """WordLlama's 256-dimension embedding of ``text`` (a numpy array)."""
    return _wordllama_model().embed([text])[0]


@cache
def _wordllama_model() -> Any:
    from pathlib import Path

    import wordllama as package
    from wordllama import WordLlama

    # the wheel ships the weights and the tokenizer in the folders load()
    # looks for under a cache directory: the package's own folder is one,
    # and nothing is downloaded
    return WordLlama.load(cache_dir=Path(package.__file__).parent, disable_download=True)
