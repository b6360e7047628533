"""Literal, case-insensitive matching: no wildcard, escape or regex character means anything,
CJK and non-ASCII case behave, and a window never splits a character."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.factories import append
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import HEAD_MARK, TAIL_MARK, WINDOW_CHARS, WINDOW_LEAD
from threadmem.features.search.literal import listing_sql

# Thread searches run with each match statement (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("thread_match")

TEXTS = {
    "percent": "disk is 100% full",
    "underscore": "the file is id_rsa",
    "plain": "percent free, idXrsa, abc and 100 apples",
    "backslash": "C:\\Users\\ops\\notes.txt",
    "regex": "grep -E 'foo.*bar' (a|b) [x] ^start$ a+b? {2}",
    "quotes": "say \"hi\" and 'bye' and `tick`",
    "cjk": "日本語のテキストを検索する",
    "umlaut": "ÄPFEL und Birnen",
    "cyrillic": "ЖУРНАЛ ошибок",
    "mixed": "KubeCtl Rollout Restart",
}


@pytest.fixture
def messages(thread):
    stored = append(thread, *({"role": "user", "content": text} for text in TEXTS.values()))
    return dict(zip(TEXTS, stored, strict=True))


def found(owner, thread, query: str) -> set[int]:
    return {hit.message_id for hit in search_memory(user=owner, query=query, channel=thread.channel).hits}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "names"),
    [
        ("%", {"percent"}),
        ("100%", {"percent"}),
        ("_", {"underscore"}),
        ("id_rsa", {"underscore"}),
        ("\\", {"backslash"}),
        ("C:\\Users\\ops", {"backslash"}),
        (".*", {"regex"}),
        ("foo.*bar", {"regex"}),
        ("(a|b)", {"regex"}),
        ("[x]", {"regex"}),
        ("^start$", {"regex"}),
        ("a+b?", {"regex"}),
        ("{2}", {"regex"}),
        ('"hi"', {"quotes"}),  # surrounding quotes stripped: the word hi is searched
        ('say "hi"', {"quotes"}),
        ("and 'bye' and", {"quotes", "plain"}),  # whole query, then the words and, bye
        ("日本語", {"cjk"}),
        ("テキスト", {"cjk"}),
        ("äpfel", {"umlaut"}),
        ("Äpfel UND", {"umlaut"}),
        ("журнал", {"cyrillic"}),
        ("ОШИБОК", {"cyrillic"}),
        ("kubectl rollout", {"mixed"}),
        ("KUBECTL", {"mixed"}),
    ],
)
def test_it_matches_literally_and_case_insensitively(owner, thread, messages, query, names):
    assert found(owner, thread, query) == {messages[name].id for name in names}


@pytest.mark.django_db
def test_it_finds_nothing_where_a_wildcard_or_regex_reading_would_find_something(owner, thread, messages):
    assert found(owner, thread, "id%rsa") == set()
    assert found(owner, thread, "idXrs_") == set()
    assert found(owner, thread, "a.c") == set()
    assert found(owner, thread, "ab*c") == set()
    assert found(owner, thread, "10[0-9]") == set()


@pytest.mark.django_db
def test_a_term_in_many_fields_is_counted_in_every_spelling_and_literally(owner, thread):
    # Every spelling counts, and LIKE's wildcards and escape character stay
    # literal. The decoy (what the term would match as a LIKE pattern) is the
    # oldest, listed last: past the windows that fill the result, so nothing
    # but the match statement decides whether it counts.
    (decoy,) = append(thread, {"role": "tool", "content": "Load-100 and more Avg, Load_100xAvg"})
    # The newest spelled one way (the index path may try that spelling first).
    spellings = ["LOAD_100%\\AVG", "load_100%\\avg", "lOAD_100%\\aVG"] * 3 + ["Load_100%\\Avg"] * 5
    padding = "w" * 600
    stored = append(thread, *({"role": "tool", "content": f"{padding} {text} {padding}"} for text in spellings))
    result = search_memory(user=owner, query="load_100%\\avg", channel=thread.channel)
    assert result.literal_hits_total == len(spellings)
    assert 0 < len(result.hits) < len(spellings)
    assert {hit.message_id for hit in result.hits} <= {message.id for message in stored} - {decoy.id}


@pytest.mark.django_db
def test_a_window_never_splits_a_character(owner, thread):
    # Four-byte emoji and three-byte CJK all around the hit, so every byte
    # offset near the window's edges falls inside a multi-byte character.
    before = "😀語" * 700
    after = "語😀" * 700
    content = before + "ZEBRA-HIT" + after
    (message,) = append(thread, {"role": "tool", "content": content})
    result = search_memory(user=owner, query="zebra-hit", channel=thread.channel)
    (hit,) = result.hits
    assert hit.window.startswith(HEAD_MARK)
    assert hit.window.endswith(TAIL_MARK)
    shown = hit.window.removeprefix(HEAD_MARK).removesuffix(TAIL_MARK)
    position = len(before)  # 0-based
    assert shown == content[position - WINDOW_LEAD : position - WINDOW_LEAD + WINDOW_CHARS]
    assert "\ufffd" not in result.text
    assert message.id == hit.message_id


@pytest.mark.django_db
def test_it_windows_the_first_occurrence_of_a_term_in_a_field(owner, thread):
    content = "head " + "y" * 1000 + " Marker one " + "y" * 1000 + " MARKER two"
    append(thread, {"role": "tool", "content": content})
    (hit,) = search_memory(user=owner, query="marker", channel=thread.channel).hits
    assert "Marker one" in hit.window
    assert "MARKER two" not in hit.window


def seed_window_sizes(thread) -> None:
    """Fields on both sides of literal.listing_sql.SMALL_FIELD_CHARS (in characters and in bytes).

    Hits at the start, the middle and the end, ASCII and multi-byte filler,
    content and tool arguments; one term only in small fields, at their end.
    """
    fillers = ["k", "é日"]
    batch = []
    # The smallest newest: listed first, so their windows are the ones shown.
    for size in (4_000, 2_600, 2_100, 1_300, 700, 520, 501, 500, 499, 450, 150, 4):
        for filler in fillers:
            body = (filler * size)[:size]
            for place, text in enumerate((f"Tally-Ho {body}", f"{body[: size // 2]} TALLY-ho {body[size // 2 :]}")):
                if size <= 450:
                    text += " Small-Only"
                batch.append({"role": "tool", "content": text})
                arguments = {"command": f"{body} tally-HO {place}", "files": [{"path": text}]}
                batch.append(
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": f"c{len(batch)}", "name": "shell", "arguments": arguments}],
                    }
                )
    append(thread, *batch)


def search_text(owner, query: str, channel: str | None) -> tuple[str, int]:
    """The text, its cursor blanked (the cursor's timestamp moves between two searches), and the statement count."""
    with CaptureQueriesContext(connection) as queries:
        result = search_memory(user=owner, query=query, channel=channel)
    return re.sub(r'cursor="[^"]*"', 'cursor="-"', result.text), len(queries)


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["thread", "global"])
@pytest.mark.parametrize("query", ["tally-ho", "tally-ho é日", "small-only", "small-only tally-ho"])
def test_windows_cut_with_the_match_are_those_of_the_windows_statement(owner, thread, scope, query, monkeypatch, tune):
    tune(index_budget_ms=60_000)
    seed_window_sizes(thread)
    channel = thread.channel if scope == "thread" else None
    with_match, statements = search_text(owner, query, channel)
    monkeypatch.setattr(listing_sql, "SMALL_FIELD_CHARS", -1)  # every window from the windows statement
    from_statement, statements_without = search_text(owner, query, channel)
    assert with_match == from_statement
    assert "--- messageId=" in with_match
    if query == "small-only":
        # Every field the listing needs is small: the windows came with the match.
        assert statements == statements_without - 1
