"""Whether a string or a JSON value can be stored and rendered again.

PostgreSQL's text cannot hold NUL; a lone surrogate is not Unicode and fails
every UTF-8 encoder after it; NaN and infinities are not JSON; an integer outside 64 bits cannot be
written by orjson (the API's renderer); nesting past a bound breaks
renderers (orjson stops at 255 levels, recursive code at Python's
recursion limit). Each is refused at the door, so nothing stored
can turn a later read into an error.
"""

from __future__ import annotations

import math
from typing import Any

# Deeper tool-call arguments are refused: no real tool takes them, and a
# renderer must be able to write back whatever was stored.
MAX_JSON_DEPTH = 64
# What json_clipped keeps: under orjson's limit (255) with room for the
# answer's own levels around a stored value.
RENDER_DEPTH = 200
CLIPPED = "[nested too deeply to render]"
# The integers orjson writes: signed and unsigned 64 bits.
INT_MIN, INT_MAX = -(2**63), 2**64 - 1
INT_RANGE = "-2^63 to 2^64-1"


def int_in_range(value: int) -> bool:
    return INT_MIN <= value <= INT_MAX


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None."""
    if "\x00" in value:
        return "contains a NUL character, which cannot be stored"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "contains a lone surrogate (\\ud800-\\udfff), which is not valid Unicode"
    return None


def json_problem(value: Any, *, max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """Why the JSON value cannot be stored and rendered again, or None.

    Walks with an explicit stack, so a value nested thousands of levels deep
    is refused rather than exhausting Python's recursion limit.
    """
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str):
            problem = text_problem(item)
            if problem:
                return problem
        elif isinstance(item, dict):
            if depth > max_depth:
                return f"nests deeper than {max_depth} levels"
            for key, child in item.items():
                problem = text_problem(key) if isinstance(key, str) else None
                if problem:
                    return f"has a key that {problem}"
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            if depth > max_depth:
                return f"nests deeper than {max_depth} levels"
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, float) and not math.isfinite(item):
            return "holds a number that is not finite (NaN or infinity), which JSON cannot carry"
        elif isinstance(item, int) and not isinstance(item, bool) and not int_in_range(item):
            return f"holds an integer outside 64 bits ({INT_RANGE}); send it as a string"
    return None


def json_clipped(value: Any, *, max_depth: int = RENDER_DEPTH) -> Any:
    """A copy of ``value`` whose objects and lists below ``max_depth`` levels are replaced by ``CLIPPED``,
    and whose integers outside 64 bits are written as strings.

    For renderers that meet a value stored before these limits existed:
    the answer shows everything down to the bound instead of failing.
    """

    def clip(item: Any, depth: int) -> Any:
        if isinstance(item, int) and not isinstance(item, bool) and not int_in_range(item):
            return str(item)
        if isinstance(item, dict):
            return CLIPPED if depth > max_depth else {key: clip(child, depth + 1) for key, child in item.items()}
        if isinstance(item, list | tuple):
            return CLIPPED if depth > max_depth else [clip(child, depth + 1) for child in item]
        return item

    return clip(value, 1)
