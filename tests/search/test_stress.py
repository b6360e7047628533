"""The design's stress evidence: 7.2 million characters in, a constant-size answer out."""

from __future__ import annotations

import re

import pytest

from tests.support.search import literal_part_of
from tests.support.semantic import lane_replaced
from threadmem.domain import services
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import (
    HEAD_MARK,
    TAIL_MARK,
    THREAD_LITERAL_MAX_CHARS,
    THREAD_SEARCH_MAX_CHARS,
    WINDOW_CHARS,
)

# Thread searches run with each match statement (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("thread_match")

RESULTS = 120
HALF = 30_000


@pytest.fixture
def stress_thread(thread):
    for start in range(0, RESULTS, 40):
        batch = [
            {"role": "tool", "tool_call_id": f"c{i}", "content": "x" * HALF + f" KEYWORD-{i:03d} " + "x" * HALF}
            for i in range(start, start + 40)
        ]
        services.messages_append(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    return thread


def shown_windows(text: str) -> list[str]:
    """The window lines of a result, markers stripped."""
    windows = []
    for entry in literal_part_of(text).split("--- messageId=")[1:]:
        window = entry.split("\n", 1)[1].rstrip("\n")
        window = window.split("\n")[0] if "more hits not shown" in window else window
        windows.append(window.removeprefix(HEAD_MARK).removesuffix(TAIL_MARK))
    return windows


@pytest.mark.django_db
def test_it_answers_a_bounded_text_with_the_true_count_from_120_large_tool_results(owner, stress_thread):
    result = search_memory(user=owner, query="keyword", channel=stress_thread.channel)
    shown = result.literal_hits_shown
    assert result.literal_hits_total == RESULTS
    assert 0 < shown < RESULTS
    assert (
        f"\n{RESULTS - shown} more hits not shown; narrow the query, "
        f'or call again with cursor="{result.next_cursor}" for the next ones.\n'
    ) in result.text
    assert "x" * (WINDOW_CHARS + 1) not in result.text
    assert len(literal_part_of(result.text)) <= THREAD_LITERAL_MAX_CHARS
    assert len(result.text) <= THREAD_SEARCH_MAX_CHARS
    # Newest first, and each window is the 800 characters starting 200 before the hit.
    assert [int(n) for n in re.findall(r"KEYWORD-(\d{3})", result.text)] == list(range(119, 119 - shown, -1))
    windows = shown_windows(result.text)
    assert len(windows) == shown
    for window in windows:
        assert len(window) == WINDOW_CHARS
        assert window.startswith("x" * 199 + " KEYWORD-")


@pytest.mark.django_db(transaction=True)
def test_it_keeps_the_whole_result_at_12000_characters_with_a_huge_semantic_part(owner, stress_thread):
    with lane_replaced(lambda *, scope, query, terms: ("semantic " * 20_000)[:100_000]):
        result = search_memory(user=owner, query="keyword", channel=stress_thread.channel)
    assert len(result.text) == THREAD_SEARCH_MAX_CHARS
    assert result.text.endswith("\n[search results truncated]")
    assert result.truncated
    assert "x" * (WINDOW_CHARS + 1) not in result.text
    assert len(literal_part_of(result.text)) <= THREAD_LITERAL_MAX_CHARS
