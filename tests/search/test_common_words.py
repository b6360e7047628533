"""Words the token index's statistics call common: a global branch reads them newest first, with no index.

The trigram index's estimate of a word comes from the column's histogram of
short values; a word common in long fields can be estimated rare, and the
planner then reads its whole posting list (docs/scaling.md).
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.factories import append, make_thread
from tests.support.search import newest_first_terms
from tests.support.sessions import data_dir
from threadmem.features.imports.import_once import import_paths
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import SEARCH_COUNT_LIMIT
from threadmem.features.search.database.capabilities import forget_probe
from threadmem.features.search.database.term_tokens import common_words, word_lexeme
from threadmem.features.search.literal import plan

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the token index is PostgreSQL's")

MESSAGES = 1_500
QUERY = "connection refused zanzibar"


@pytest.fixture
def store(owner, other):
    """1,500 fields: ``refused`` in two of five (and inside ``unrefused``), ``zanzibar`` in three."""
    for index, user in enumerate((owner, other)):
        thread = make_thread(user, channel=f"common-{index}")
        for start in range(index * MESSAGES // 2, (index + 1) * MESSAGES // 2, 250):
            append(
                thread,
                *(
                    {
                        "role": "tool",
                        "content": (
                            f"{'connection refused' if n % 5 < 2 else 'ok'} host-{n}"
                            + (" zanzibar" if n % 500 == 7 else "")
                            + (" unrefused" if n % 50 == 3 else "")
                        ),
                    }
                    for n in range(start, start + 250)
                ),
            )
    append(
        make_thread(owner, channel="common-args"),
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "shell", "arguments": {"command": "curl refused"}}]},
    )


def test_a_word_is_a_whole_run_of_at_most_the_token_length():
    assert word_lexeme("Refused") == "refused"
    assert word_lexeme("connection refused") is None
    assert word_lexeme("settings.py") is None
    assert word_lexeme("x" * 33) is None
    assert word_lexeme("café") is None


@pytest.mark.usefixtures("store", "token_indexes")
def test_the_statistics_name_the_words_in_more_fields_than_the_index_would_cost():
    content = common_words()
    # sqrt(101 / 1,501 fields) = 26 %: refused and connection (40 %) are common, host-N and zanzibar are not.
    assert {"refused", "connection"} <= content.keys()
    assert "zanzibar" not in content and "host" in content  # host-N: every field
    terms = ["connection refused zanzibar", "connection", "refused", "zanzibar"]
    assert plan.dialect().has_tokens
    assert newest_first_terms(terms) == {1, 2}


def match_statement(user, query) -> tuple[str, object]:
    with CaptureQueriesContext(connection) as queries:
        result = search_memory(user=user, query=query)
    (statement,) = [q["sql"] for q in queries.captured_queries if "UNION ALL" in q["sql"]]
    return statement, result


@pytest.mark.usefixtures("store", "token_indexes")
def test_a_common_word_reads_newest_first_and_lists_what_a_scan_lists(operator, tune):
    tune(index_budget_ms=60_000)  # exactness, not time
    statement, result = match_statement(operator, QUERY)
    assert result.coverage == "all"
    # The two common words test each content field with the function no index serves (as the phrase's token
    # branch re-checks its candidates); zanzibar keeps the trigram index, and so does every word in arguments.
    assert statement.count("threadmem_icontains(m.content") == 3
    assert statement.count("m.content ~~~") == 1
    assert statement.count("a.value ~~~") == 3
    tune(path="scan")
    scanned = search_memory(user=operator, query=QUERY)
    assert (result.hits, result.literal_hits_total) == (scanned.hits, scanned.literal_hits_total)
    assert result.literal_hits_total > SEARCH_COUNT_LIMIT  # each word past the count bound


@pytest.mark.usefixtures("store", "token_indexes")
def test_an_owner_and_a_store_without_the_token_index_keep_the_index_for_every_word(owner, operator, tune):
    tune(index_budget_ms=60_000)
    tune(thread_scan_bytes=0)  # the owner's scope through the indexes
    # An owner's threads are a share of every thread's: reading newest first would read the others' too.
    owner_statement, _ = match_statement(owner, QUERY)
    assert owner_statement.count("m.content ~~~") == 3  # each word; the phrase takes the token index
    tune(tokens=False)
    statement, _ = match_statement(operator, QUERY)
    assert statement.count("m.content ~~~") == 4


@pytest.mark.usefixtures("store", "token_indexes")
def test_common_words_share_one_read_of_the_newest_messages(operator, tune):
    tune(index_budget_ms=60_000)
    statement, result = match_statement(operator, QUERY)
    # One read decompresses each newest message once and tests both words (match_sql.py, nf); each word's branch
    # takes its hits from it and stops there: neither reads the older messages.
    assert statement.count("nf AS MATERIALIZED") == 1
    assert statement.count("threadmem_icontains(x.body") == 2
    assert [hit.message_id for hit in result.hits] == sorted((hit.message_id for hit in result.hits), reverse=True)
    # Each argument branch stops where its term's content branch did: through the message id index after the
    # trigram index (the words), as a filter only on the phrase's exact token posting list (and on the fields
    # too large to index, which its branch reads apart).
    assert statement.count("(a.message_id + 0) >= coalesce((SELECT min(c.message_id) FROM c0 c") == 2
    assert statement.count(" a.message_id >= coalesce((SELECT min(c.message_id) FROM c") == 3
    # One word alone reads newest first by itself.
    single, _ = match_statement(operator, "refused")
    assert "nf AS MATERIALIZED" not in single and single.count("threadmem_icontains(m.content") == 1


@pytest.mark.usefixtures("store", "token_indexes")
@pytest.mark.parametrize("rows", [1, 150, 400])
def test_a_word_short_of_hits_in_the_shared_read_goes_on_in_older_messages(operator, monkeypatch, rows, tune):
    tune(index_budget_ms=60_000)
    # `host` is in every field, `refused` in two of five: a read of 1 row leaves both short of
    # SEARCH_COUNT_LIMIT + 1 hits, one of 150 rows `refused` only (60 hits), one of 400 neither.
    monkeypatch.setattr(plan, "STREAM_ROWS_MAX", rows)
    query = "host refused"
    statement, result = match_statement(operator, query)
    assert "nf AS MATERIALIZED" in statement
    tune(path="scan")
    scanned = search_memory(user=operator, query=query)
    assert (result.hits, result.literal_hits_total) == (scanned.hits, scanned.literal_hits_total)
    assert result.literal_hits_total > SEARCH_COUNT_LIMIT


@pytest.mark.usefixtures("token_indexes")
def test_on_real_sessions_the_commonest_words_share_the_read_and_list_what_a_scan_lists(operator, tune):
    """The shared Claude Code sessions, imported: their commonest words, together, against a scan."""
    for path in sorted(data_dir().glob("*.jsonl")):
        import_paths(paths=[path], fmt="claude-code", owner=operator)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE threadmem_message")
    forget_probe()
    words = sorted(common_words(), key=common_words().get, reverse=True)[:3]
    assert len(words) >= 2
    query = " ".join(words)
    tune(index_budget_ms=60_000)
    with CaptureQueriesContext(connection) as queries:
        result = search_memory(user=operator, query=query)
    assert sum("nf AS MATERIALIZED" in q["sql"] for q in queries.captured_queries) == 1
    tune(path="scan")
    scanned = search_memory(user=operator, query=query)
    assert (result.hits, result.literal_hits_total) == (scanned.hits, scanned.literal_hits_total)
    assert result.literal_hits_total > 0
