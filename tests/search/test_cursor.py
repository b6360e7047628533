"""contract §9: the continuation cursor pages through every hit, once each, under the same caps and header."""

from __future__ import annotations

import time

import pytest
from django.core import signing
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.factories import append, make_thread
from tests.support.search import literal_part_of
from threadmem.domain import services
from threadmem.errors import InvalidInput
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import THREAD_LITERAL_MAX_CHARS, THREAD_SEARCH_MAX_CHARS
from threadmem.features.search.literal import filter_sql as owner_window
from threadmem.features.tools import SEARCH_MEMORY, run_tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("thread_match")]

RESULTS = 40


@pytest.fixture
def busy(thread):
    """RESULTS large tool results and as many calls, each naming the beacon once (the results answer other calls:
    a call and its result that both match are one hit, tests/search/test_hit_entries.py)."""
    batch = []
    for i in range(RESULTS):
        batch.append(
            {
                "role": "assistant",
                "tool_calls": [{"id": f"c{i}", "name": "Read", "arguments": {"file_path": f"/srv/beacon-{i:02d}.py"}}],
            }
        )
        batch.append(
            {"role": "tool", "tool_call_id": f"other{i}", "content": "a" * 2000 + f" beacon-{i:02d} " + "b" * 2000}
        )
    services.messages_append(thread=thread, messages=services.messages_parse(batch), run_hooks=False)
    return thread


def pages(user, query: str, channel: str | None) -> list:
    answers = [search_memory(user=user, query=query, channel=channel)]
    while answers[-1].next_cursor:
        assert len(answers) < 50
        answers.append(search_memory(user=user, query=query, channel=channel, cursor=answers[-1].next_cursor))
    return answers


@pytest.mark.parametrize("scope", ["thread", "global", "global-window"])
def test_paging_lists_every_hit_once_in_order_with_the_true_count_on_every_page(owner, busy, scope, monkeypatch, tune):
    if scope == "global-window":
        # An owner's newest messages first (filters.window_sql): a window of 7 messages, the rest from the indexes.
        if connection.vendor != "postgresql":
            pytest.skip("the owner's window is the PostgreSQL plan's")
        tune(thread_scan_bytes=0)
        monkeypatch.setattr(owner_window, "OWNER_WINDOW_MESSAGES", 7)
    channel = busy.channel if scope == "thread" else None
    answers = pages(owner, "beacon", channel)
    assert len(answers) > 2
    listed = [(hit.message_id, hit.field) for answer in answers for hit in answer.hits]
    assert len(listed) == len(set(listed)) == 2 * RESULTS  # no hit repeated, none skipped
    assert listed == sorted(listed, key=lambda key: (-key[0], key[1] != "content"))  # newest first, as one listing
    shown_before = 0
    for answer in answers:
        assert answer.literal_hits_total == 2 * RESULTS
        header = answer.text.splitlines()[1]
        assert header.endswith(f"literal hits: {2 * RESULTS} ({answer.literal_hits_shown} shown)")
        shown_before += answer.literal_hits_shown
        hidden = 2 * RESULTS - shown_before
        literal = literal_part_of(answer.text)
        assert len(literal) <= THREAD_LITERAL_MAX_CHARS
        assert len(answer.text) <= THREAD_SEARCH_MAX_CHARS
        if hidden:
            assert literal.endswith(
                f'{hidden} more hits not shown; narrow the query, or call again with cursor="{answer.next_cursor}" '
                "for the next ones."
            )
        else:
            assert answer.next_cursor is None
            assert "more hits not shown" not in literal


def test_paging_a_query_of_several_words_repeats_no_window(owner, thread):
    append(
        thread,
        *(
            {"role": "tool", "content": f"orbit {'x' * (300 + 40 * i)} lander-{i} orbit lander {'y' * 900} lander"}
            for i in range(30)
        ),
    )
    answers = pages(owner, "orbit lander", thread.channel)
    assert len(answers) > 1
    windows = [(hit.message_id, hit.field, hit.window) for answer in answers for hit in answer.hits]
    assert len(windows) == len(set(windows))
    assert {hit.message_id for answer in answers for hit in answer.hits} == set(
        thread.messages.values_list("id", flat=True)
    )
    # Identical windows (the same tail in several messages) are one entry that names every message.
    represented = sum(1 + len(hit.identical_message_ids) for answer in answers for hit in answer.hits)
    assert answers[-1].literal_hits_total == represented


def test_a_page_costs_the_statements_of_the_first_page(owner, busy):
    with CaptureQueriesContext(connection) as first:
        answer = search_memory(user=owner, query="beacon", channel=busy.channel)
    with CaptureQueriesContext(connection) as second:
        search_memory(user=owner, query="beacon", channel=busy.channel, cursor=answer.next_cursor)
    assert len(second) == len(first)


def test_new_messages_do_not_shift_the_next_page(owner, busy):
    first = search_memory(user=owner, query="beacon", channel=busy.channel)
    append(busy, {"role": "user", "content": "beacon again, newer than every page"})
    second = search_memory(user=owner, query="beacon", channel=busy.channel, cursor=first.next_cursor)
    seen = {(hit.message_id, hit.field) for hit in first.hits}
    assert not seen & {(hit.message_id, hit.field) for hit in second.hits}
    assert second.hits[0].message_id < first.hits[-1].message_id or second.hits[0].field != first.hits[-1].field


def expired_cursor(monkeypatch, user, query: str, channel: str | None) -> str:
    with monkeypatch.context() as patch:
        patch.setattr(signing.TimestampSigner, "timestamp", lambda self: signing.b62_encode(int(time.time()) - 7200))
        return search_memory(user=user, query=query, channel=channel).next_cursor


@pytest.fixture
def bad_cursors(owner, other, busy, monkeypatch):
    good = search_memory(user=owner, query="beacon", channel=busy.channel).next_cursor
    make_thread(other, "theirs")
    append(busy, {"role": "user", "content": "nebula " * 3000}, {"role": "user", "content": "nebula " * 3000})
    return {
        "malformed": ("beacon", busy.channel, "not-a-cursor", "not valid"),
        "tampered": ("beacon", busy.channel, good[:-2] + ("AA" if not good.endswith("AA") else "BB"), "not valid"),
        "empty": ("beacon", busy.channel, " ", "cursor must be"),
        "expired": ("beacon", busy.channel, expired_cursor(monkeypatch, owner, "beacon", busy.channel), "expired"),
        "another query": ("beacon-01", busy.channel, good, "not valid"),
        "another channel": ("beacon", None, good, "not valid"),
    }


CASES = ["malformed", "tampered", "empty", "expired", "another query", "another channel"]


@pytest.mark.parametrize("case", CASES)
def test_a_bad_cursor_is_invalid_input_naming_the_problem(owner, bad_cursors, case):
    query, channel, cursor, words = bad_cursors[case]
    with pytest.raises(InvalidInput) as raised:
        search_memory(user=owner, query=query, channel=channel, cursor=cursor)
    assert words in raised.value.message
    assert raised.value.field == "cursor"


@pytest.mark.parametrize("case", CASES)
def test_a_bad_cursor_answers_400_over_rest(owner_api, bad_cursors, case):
    query, channel, cursor, words = bad_cursors[case]
    body = {"query": query, "cursor": cursor, **({"channel": channel} if channel else {})}
    response = owner_api.post("/api/v1/search/", body, format="json")
    assert response.status_code == 400
    assert words in str(response.json())
    response = owner_api.get("/api/v1/search/", body)
    assert response.status_code == 400


@pytest.mark.parametrize("case", CASES)
def test_a_bad_cursor_is_a_tool_error_for_the_model(owner, bad_cursors, case):
    query, channel, cursor, words = bad_cursors[case]
    arguments = {"query": query, "cursor": cursor, **({"channel": channel} if channel else {})}
    text = run_tool(name=SEARCH_MEMORY, arguments=arguments, user=owner, surface="agent")
    assert text.startswith("error: ") and words in text


def test_another_callers_cursor_is_refused(owner, other, busy):
    mine = make_thread(other, "their-beacons")
    append(mine, *({"role": "tool", "content": "c" * 3000 + f" beacon {i} " + "d" * 3000} for i in range(20)))
    theirs = search_memory(user=other, query="beacon").next_cursor
    assert theirs
    with pytest.raises(InvalidInput, match="not valid for this caller and query"):
        search_memory(user=owner, query="beacon", cursor=theirs)


def test_the_cursor_pages_over_rest_and_through_the_tools(owner, owner_api, busy):
    first = owner_api.get("/api/v1/search/", {"query": "beacon", "channel": busy.channel}).json()
    assert first["next_cursor"]
    body = {"query": "beacon", "channel": busy.channel, "cursor": first["next_cursor"]}
    second = owner_api.post("/api/v1/search/", body, format="json").json()
    assert second["hits"][0]["message_id"] not in {hit["message_id"] for hit in first["hits"][:-1]}
    assert second["literal_hits_total"] == first["literal_hits_total"]
    text = run_tool(name=SEARCH_MEMORY, arguments=body, user=owner, surface="agent")
    assert text.splitlines()[2] == second["text"].splitlines()[2]
