"""A path searched with one separator finds the calls that wrote it with the other (threadmem/lib/terms.py).

A Windows session's tools write ``C:\\app\\scripts\\convert.py``; its prose,
Claude Code's summary and the model's query say ``scripts/convert.py``.
"""

from __future__ import annotations

import pytest

from tests.support.factories import append
from threadmem.features.search import search_memory

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("thread_match")]

WINDOWS_PATH = "C:\\Users\\dev\\app\\scripts\\convert.py"
POSIX_PATH = "/home/dev/app/scripts/report.py"


@pytest.fixture(autouse=True)
def patient_global_index(tune):
    tune(index_budget_ms=60_000)  # a loaded test machine must not fall back to the newest


@pytest.fixture
def reads(thread):
    stored = append(
        thread,
        {"role": "assistant", "tool_calls": [{"id": "w", "name": "Read", "arguments": {"file_path": WINDOWS_PATH}}]},
        {"role": "tool", "tool_call_id": "w", "content": "     1→def convert_windows_file(path):"},
        {"role": "assistant", "tool_calls": [{"id": "p", "name": "Read", "arguments": {"file_path": POSIX_PATH}}]},
        {"role": "tool", "tool_call_id": "p", "content": "     1→def report_posix_file(path):"},
        {"role": "user", "content": "see https://example.org/scripts/convert.py for the original"},
    )
    return {"windows": stored[0], "posix": stored[2], "user": stored[4]}


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_slashed_path_finds_a_windows_read(owner, thread, reads, scope):
    channel = thread.channel if scope == "thread" else None
    answer = search_memory(user=owner, query="scripts/convert.py", channel=channel, tool="Read")
    assert [(hit.message_id, hit.tool) for hit in answer.hits] == [(reads["windows"].id, "Read")]
    assert WINDOWS_PATH in answer.text


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_backslashed_path_finds_a_posix_read(owner, thread, reads, scope):
    channel = thread.channel if scope == "thread" else None
    answer = search_memory(user=owner, query="app\\scripts\\report.py", channel=channel, tool="Read")
    assert [(hit.message_id, hit.tool) for hit in answer.hits] == [(reads["posix"].id, "Read")]


def test_the_path_as_written_is_listed_first_and_a_url_gets_no_variant(owner, thread, reads):
    answer = search_memory(user=owner, query="scripts/convert.py", channel=thread.channel)
    assert [hit.message_id for hit in answer.hits] == [reads["user"].id, reads["windows"].id]
    url = search_memory(user=owner, query="https://example.org/scripts/convert.py", channel=thread.channel)
    assert [hit.message_id for hit in url.hits] == [reads["user"].id]
