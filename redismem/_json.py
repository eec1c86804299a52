"""Strict JSON: the one rule the Python side and the Lua library apply
(``lua/lib/15_json.lua``; ``tests/test_json_rules.py`` checks with generated
input that both accept exactly the same texts).

A text is accepted when it is UTF-8 holding one RFC 8259 value: no ``NaN``,
``Infinity``, hex or leading zeros; every number a finite double (``1e400``
and integers of 2**1024 or more are refused, integers below are kept
exactly); strings without lone surrogates; at most :data:`MAX_DEPTH` nested
arrays and objects. Python's ``json`` module alone accepts ``NaN``, lone
``\\ud800`` escapes and 1e400 (as ``inf``), which Lua would then refuse or
readers could not print.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from .limits import MAX_JSON_DEPTH as MAX_DEPTH

_LONG_NUMBER = re.compile(r"\d{300}")
"""A run of digits this long may be a number out of a double's range."""


class JsonRuleError(ValueError):
    """A text or value breaks the strict JSON rule; the message says how."""


def _reject_constant(name: str) -> Any:
    raise JsonRuleError(f"{name} is not JSON")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonRuleError(f"the number {text[:40]} is not a finite double")
    return value


def _finite_int(text: str) -> int:
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise JsonRuleError(f"the number {text[:40]}... is not a finite double") from None
    return value


def _depth_and_strings(value: Any) -> None:
    """Check nesting depth and that every string (keys too) is valid UTF-8."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            item.encode("utf-8")
        elif isinstance(item, dict | list):
            if depth + 1 > MAX_DEPTH:
                raise JsonRuleError(f"nested deeper than {MAX_DEPTH} levels")
            if isinstance(item, dict):
                stack.extend((key, depth + 1) for key in item)
                stack.extend((child, depth + 1) for child in item.values())
            else:
                stack.extend((child, depth + 1) for child in item)


_DECODER = json.JSONDecoder(parse_constant=_reject_constant, parse_float=_finite_float,
                            parse_int=_finite_int)
_SCAN = _DECODER.scan_once  # type: ignore[attr-defined]
"""The decoder's scanner: what ``decode`` runs, without its two whitespace
matches (canonical JSON has no whitespace; other texts take ``decode``)."""
_SCAN_SHORT = json.JSONDecoder(parse_constant=_reject_constant,
                               parse_float=_finite_float).scan_once  # type: ignore[attr-defined]
"""The scanner for a text shorter than ``_INT_DIGITS``: its integers are parsed
by the C scanner itself (a Python hook per integer cost a third of a batch
read's parsing), as none can be past a double's range."""
_INT_DIGITS = 309
"""The fewest digits of an integer past the largest finite double (1.8e308)."""


def loads(raw: bytes | str) -> Any:
    """Parse a strict JSON text.

    Raises:
        JsonRuleError: the text breaks the rule (not UTF-8, not RFC 8259, a
            number out of range, a lone surrogate, too deep).
    """
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        try:
            value, end = (_SCAN_SHORT if len(text) < _INT_DIGITS else _SCAN)(text, 0)
        except (StopIteration, json.JSONDecodeError):
            end = -1
        if end != len(text):  # whitespace, trailing data or an error: decode says which
            value = _DECODER.decode(text)
        # without escapes no string can hold a lone surrogate (valid UTF-8
        # has none), and without that many brackets nothing is too deep
        if "\\u" in text or text.count("[") + text.count("{") > MAX_DEPTH:
            _depth_and_strings(value)
    except JsonRuleError:
        raise
    except UnicodeError:
        raise JsonRuleError("not valid UTF-8 (a lone surrogate or a bad byte)") from None
    except RecursionError:
        raise JsonRuleError(f"nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, or int() past its digit limit
        raise JsonRuleError(str(exc)) from None
    return value


def error(raw: bytes | str) -> str | None:
    """None when ``raw`` is a strict JSON text, else why not."""
    try:
        loads(raw)
    except JsonRuleError as exc:
        return str(exc)
    return None


_ENCODER = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                            allow_nan=False)


def dumps(value: Any) -> tuple[str, int]:
    """Canonical JSON of ``value`` (sorted keys, no spaces, UTF-8) and its size
    in bytes, checked against the rule.

    Raises:
        JsonRuleError: ``value`` is not JSON-serialisable, or breaks the rule.
    """
    try:
        text = _ENCODER.encode(value)
        size = len(text) if text.isascii() else len(text.encode("utf-8"))
    except UnicodeError:
        raise JsonRuleError("a string is not valid UTF-8 (a lone surrogate)") from None
    except RecursionError:
        raise JsonRuleError(f"nested deeper than {MAX_DEPTH} levels") from None
    except (TypeError, ValueError) as exc:
        _check_keys(value)  # mixed key types fail to sort: say which key
        raise JsonRuleError(f"not JSON-serialisable: {exc}") from None
    # the rules json.dumps does not enforce, checked only when they can apply:
    # it writes a key that is a number, true, false or null as a string
    if _CONVERTED_KEY.search(text):
        _check_keys(value)
    if text.count("[") + text.count("{") > MAX_DEPTH or _LONG_NUMBER.search(text):
        loads(text)
    return text, size


_CONVERTED_KEY = re.compile(r'"(?:-?[0-9][^"\\]*|true|false|null|NaN|-?Infinity)":')


def _check_keys(value: Any) -> None:
    """Every object key is a string (json.dumps turns 1, True and None into
    "1", "true" and "null", so {1: 'a', '1': 'b'} would lose a member).

    Raises:
        JsonRuleError: naming the first key that is not.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key, child in item.items():
                if not isinstance(key, str):
                    raise JsonRuleError(
                        f"an object key must be a string, got {key!r} "
                        f"({type(key).__name__}): convert it, e.g. str({key!r})")
                if isinstance(child, dict | list | tuple):
                    stack.append(child)
        elif isinstance(item, list | tuple):
            stack.extend(child for child in item if isinstance(child, dict | list | tuple))
