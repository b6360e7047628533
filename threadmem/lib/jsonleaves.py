"""The string leaves of a JSON value, each with the path search shows for it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def string_leaves(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Yield ``(path, text)`` for every string leaf, at any depth, in document order.

    Paths read like the code that would reach the leaf: ``command``,
    ``files[0].path``, ``env.HOME``. A string at the top level has path ``""``.
    """
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield from string_leaves(child, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, child in enumerate(value):
            yield from string_leaves(child, f"{path}[{index}]")
