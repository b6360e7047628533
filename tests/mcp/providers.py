"""A semantic part for child processes (THREADMEM_SEMANTIC_PROVIDER): far more text than the cap."""

from __future__ import annotations

from typing import Any

LONG_OTHER_RESULTS = "--- messageId=0 similarity=0.99\n" + "a close match in meaning " * 1_000


def long_other_results(*, scope: Any, query: str, terms: list[str]) -> str:
    return LONG_OTHER_RESULTS
