"""Filler text for the benchmarks' messages: parts drawn one at a time, joined by spaces, cut at a length."""

from __future__ import annotations

from collections.abc import Callable


def filler(chars: int, next_part: Callable[[], str]) -> str:
    """``next_part()`` drawn until the parts, joined by spaces, reach ``chars``; cut to exactly ``chars``."""
    parts: list[str] = []
    size = 0
    while size < chars:
        part = next_part()
        parts.append(part)
        size += len(part) + 1
    return " ".join(parts)[:chars]
