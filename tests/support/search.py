"""Search test helpers: the extension's presence, the literal part of a search_memory answer."""

from __future__ import annotations

import pytest


def skip_without_search_extension() -> None:
    """Skip a test of threadmem_search's paths where the test database lacks the extension."""
    from threadmem.search.literal.plan import has_search_extension

    if not has_search_extension():
        pytest.skip("threadmem_search is not in this PostgreSQL (make pg-extension, then migrate)")


def literal_part_of(text: str) -> str:
    """The literal part of a search_memory text: after the two header lines, up to the more-hits line."""
    rest = text.split("\n", 2)[2] if text.count("\n") >= 2 else ""
    return rest[: rest.index("\n\n## Other memory results")] if "\n\n## Other memory results" in rest else ""
