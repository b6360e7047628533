"""Search test helpers: the extension's presence, the literal part of a search_memory answer, the plan's parts."""

from __future__ import annotations

import pytest


def skip_without_search_extension() -> None:
    """Skip a test of threadmem_search's paths where the test database lacks the extension."""
    from threadmem.features.search.literal.plan import has_search_extension

    if not has_search_extension():
        pytest.skip("threadmem_search is not in this PostgreSQL (make pg-extension, then migrate)")


def choose_plan(scope, dialect):
    """The statements' shape ``plan_search`` would choose for ``scope`` on ``dialect``, with the tuning in force."""
    from threadmem.features.search.literal import plan

    return plan.choose(scope, dialect, plan.TUNING)[0]


def newest_first_terms(terms: list[str]) -> frozenset[int]:
    """The terms a global search's content branch reads newest first: words the token statistics call common."""
    from threadmem.features.search.database.term_tokens import term_tokens

    return frozenset(index for index, told in enumerate(term_tokens(terms, shares=True)) if told.share is not None)


def literal_part_of(text: str) -> str:
    """The literal part of a search_memory text: after the two header lines, up to the more-hits line."""
    rest = text.split("\n", 2)[2] if text.count("\n") >= 2 else ""
    return rest[: rest.index("\n\n## Other memory results")] if "\n\n## Other memory results" in rest else ""
