"""A search costs a fixed number of SQL statements, whatever the number of hits.

scope (1) + which fields match (1) + their windows (1) + the tool-call log
row (1). The windows statement is skipped when nothing matches, and when
every field the listing may need is small enough to get its window with the
match (literal/listing_sql.py, with_small_windows): 3 or 4 statements whatever the hits. An
operator's global scope needs no statement of its own: the match statement
leaves out the isolated threads itself. A thread search on PostgreSQL
matches with a scan of the thread's rows or, in a
larger thread, with the trigram indexes: without threadmem_search after one
more statement that reads the newest content for the terms' spelling, with
it under a time budget (the scan follows when it runs out). A global
search on PostgreSQL runs the match statement under a time budget, sent with
its settings (and, inside the test's transaction, a savepoint) as one query
string; when the budget runs out the savepoint is rolled back (one more) and
it makes one more, bounded, attempt over the newest messages. Each path is
pinned here with budgets that cannot run out by accident on a busy machine.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.factories import append, make_thread
from tests.support.search import skip_without_search_extension
from threadmem.domain import services
from threadmem.domain.scope import resolve_scope
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import SEARCH_COUNT_LIMIT
from threadmem.features.search.hits import candidates_of
from threadmem.features.search.literal.literal_search import run_plan
from threadmem.features.search.literal.plan import plan_search
from threadmem.features.search.statements import within_budget
from threadmem.models import ToolCall


def fill(thread, hits: int, *, small: bool = False) -> None:
    """``hits`` tool results and ``hits`` tool calls with ``tally`` in them.

    Large fields by default (10,000 characters): their windows need the
    windows statement. ``small``: fields of a few characters, whose windows
    come with the match.
    """
    padding = "" if small else "y" * 5000
    batch = [{"role": "tool", "content": f"{padding} tally-{i} {padding}"} for i in range(hits)] + [
        {
            "role": "assistant",
            "tool_calls": [
                {"id": f"t{i}", "name": "shell", "arguments": {"command": f"echo {padding} tally-{i} {padding}"}}
            ],
        }
        for i in range(hits)
    ]
    services.messages_append(thread=thread, messages=services.messages_parse(batch), run_hooks=False)


# (match path, SearchTuning's thread_scan_bytes, spelling_sample_bytes,
#  pg_extension, queries)
THREAD_PATHS = [
    ("scan", 10**12, 0, False, 4),
    ("index", 0, 0, False, 4),
    # One more statement reads the thread's newest content for the terms' spelling.
    ("spelled", 0, 10**9, False, 5),
    # threadmem_search's operator re-checks at reading speed: no spelling to learn.
    ("fast-scan", 10**12, 10**9, True, 4),
    ("fast-index", 0, 10**9, True, 4),
]


@pytest.mark.django_db
@pytest.mark.parametrize("hits", [1, 5, 60])
@pytest.mark.parametrize(
    ("path", "scan_bytes", "sample_bytes", "extension", "queries"), THREAD_PATHS, ids=[p[0] for p in THREAD_PATHS]
)
def test_a_thread_search_makes_a_fixed_number_of_queries_whatever_the_hits(
    owner, thread, hits, path, scan_bytes, sample_bytes, extension, queries, django_assert_num_queries, tune
):
    # On PostgreSQL the thread's size picks the way to match: a scan of the
    # thread's rows, or the trigram indexes (with the newest content's
    # spelling tried first when it has the term, without the extension).
    tune(thread_scan_bytes=scan_bytes)
    tune(spelling_sample_bytes=sample_bytes)
    tune(pg_extension=extension)
    tune(scan_bytes_per_ms=1)  # an index budget of minutes: it cannot run out
    if extension and connection.vendor == "postgresql":
        skip_without_search_extension()
    fill(thread, hits)
    expected = queries if connection.vendor == "postgresql" else 4
    with django_assert_num_queries(expected):
        result = search_memory(user=owner, query="tally", channel=thread.channel)
    assert result.literal_hits_total == 2 * hits
    if connection.vendor == "postgresql":
        assert result.matched_by == path.removeprefix("fast-")


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite has one match statement")
def test_a_thread_search_scans_a_small_thread_and_asks_the_index_in_a_large_one(owner, thread, tune):
    tune(thread_scan_bytes=50_000)
    tune(scan_bytes_per_ms=1)  # with threadmem_search: an index budget that cannot run out
    tune(spelling_sample_bytes=0)
    (root,) = append(thread, {"role": "user", "content": "tally " + "z" * 30_000})
    fork = make_thread(owner, "fork", fork_from=root)
    append(fork, {"role": "user", "content": "tally " + "z" * 30_000})
    # The fork's scope holds its ancestry: 60 KB in all.
    small = search_memory(user=owner, query="tally", channel=thread.channel)
    large = search_memory(user=owner, query="tally", channel=fork.channel)
    assert (small.matched_by, small.literal_hits_total) == ("scan", 1)
    assert (large.matched_by, large.literal_hits_total) == ("index", 2)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite has one match statement")
def test_the_index_path_tries_the_spelling_of_the_threads_newest_content(owner, thread, tune):
    tune(pg_extension=False)
    tune(thread_scan_bytes=0)
    tune(spelling_sample_bytes=4_000)
    append(thread, *({"role": "tool", "content": f"old {i}: Tally-Ho"} for i in range(3)))
    append(thread, {"role": "tool", "content": "w" * 5_000})
    # The newest 4,000 bytes are the filler: nothing to learn from.
    before = search_memory(user=owner, query="tally-ho", channel=thread.channel)
    append(thread, {"role": "user", "content": "and now TALLY-HO"})
    after = search_memory(user=owner, query="tally-ho", channel=thread.channel)
    assert (before.matched_by, before.literal_hits_total) == ("index", 3)
    assert (after.matched_by, after.literal_hits_total) == ("spelled", 4)


@pytest.mark.django_db
@pytest.mark.parametrize("hits", [1, 40, 200])
def test_a_global_search_makes_a_fixed_number_of_queries_whatever_the_hits(
    owner, thread, hits, django_assert_num_queries, tune
):
    tune(index_budget_ms=60_000)
    fill(thread, hits)
    with django_assert_num_queries(4):
        result = search_memory(user=owner, query="tally many words here")
    assert result.literal_hits_total == min(2 * hits, SEARCH_COUNT_LIMIT)


@pytest.mark.django_db
@pytest.mark.parametrize("hits", [1, 40, 200])
def test_an_operators_global_search_makes_no_scope_query(
    owner, operator, admin, thread, hits, django_assert_num_queries, tune
):
    tune(index_budget_ms=60_000)
    fill(thread, hits)
    hidden = make_thread(owner, "hidden")
    (isolated,) = append(hidden, {"role": "user", "content": "tally in an isolated thread"})
    services.thread_set_isolated(thread=hidden, isolated=True, actor=admin)
    with django_assert_num_queries(3):
        result = search_memory(user=operator, query="tally many words here")
    assert result.literal_hits_total == min(2 * hits, SEARCH_COUNT_LIMIT)
    assert isolated.pk not in {hit.message_id for hit in result.hits}


@pytest.mark.django_db
@pytest.mark.parametrize("hits", [1, 40, 200])
@pytest.mark.parametrize("scope", ["thread", "global"])
def test_small_fields_get_their_windows_with_the_match(owner, thread, hits, scope, django_assert_num_queries, tune):
    tune(index_budget_ms=60_000)
    tune(scan_bytes_per_ms=1)  # with threadmem_search: an index budget that cannot run out
    fill(thread, hits, small=True)
    channel = thread.channel if scope == "thread" else None
    # scope, which fields match with their windows, log row.
    with django_assert_num_queries(3):
        result = search_memory(user=owner, query="tally", channel=channel)
    assert result.literal_hits_total == (2 * hits if scope == "thread" else min(2 * hits, SEARCH_COUNT_LIMIT))
    assert result.hits
    newest = result.hits[0]
    assert newest.window == f"echo  tally-{hits - 1} "
    assert newest.field == "tool_args.command"


@pytest.mark.django_db
def test_a_search_of_a_deep_fork_resolves_its_scope_in_one_query(owner, thread, django_assert_num_queries):
    (message,) = append(thread, {"role": "user", "content": "tally at the root"})
    parent = thread
    for depth in range(5):
        parent = make_thread(owner, f"fork-{depth}", fork_from=message)
        (message,) = append(parent, {"role": "user", "content": f"tally at depth {depth}"})
    # scope, match (small fields: with their windows), log row.
    with django_assert_num_queries(3):
        result = search_memory(user=owner, query="tally", channel=parent.channel)
    assert result.literal_hits_total == 6


@pytest.mark.django_db
def test_a_search_without_hits_skips_the_windows(owner, thread, django_assert_num_queries):
    fill(thread, 3)
    with django_assert_num_queries(3):
        result = search_memory(user=owner, query="absent-term", channel=thread.channel)
    assert result.literal_hits_total == 0


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budget is PostgreSQL's statement_timeout")
@pytest.mark.parametrize("hits", [40, 200])
def test_a_global_search_past_its_budget_makes_a_fixed_number_of_queries(
    owner, thread, hits, django_assert_num_queries, tune
):
    tune(thread_scan_bytes=0)  # the owner's store is not read whole: the index path
    tune(index_budget_ms=1)
    tune(recent_budget_ms=60_000)
    tune(budget_scale_max=1)  # the clock's 1 ms, however busy the machine
    fill(thread, hits)
    # scope, the timed-out attempt, rollback and release of its savepoint, the newest-messages
    # attempt, windows, log row.
    with django_assert_num_queries(6):
        result = search_memory(user=owner, query="tally")
    assert result.coverage == "recent"
    assert result.hits


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budget is PostgreSQL's statement_timeout")
@pytest.mark.parametrize("hits", [40, 200])
def test_a_large_thread_past_its_index_budget_is_scanned_in_a_fixed_number_of_queries(
    owner, thread, hits, django_assert_num_queries, tune
):
    # With threadmem_search the index path of a large thread has the time a
    # scan would take (here: 1 ms, less than planning four terms takes).
    skip_without_search_extension()
    tune(thread_scan_bytes=0)
    tune(scan_bytes_per_ms=10**12)
    fill(thread, hits)
    # scope, the timed-out attempt, rollback and release of its savepoint, the scan, windows, log row.
    with django_assert_num_queries(6):
        result = search_memory(user=owner, query="tally many words here", channel=thread.channel)
    assert (result.matched_by, result.literal_hits_total) == ("scan", 2 * hits)


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budget is PostgreSQL's statement_timeout")
def test_a_global_search_leaves_the_callers_transaction_settings_alone(owner, thread):
    fill(thread, 2)
    with connection.cursor() as cursor:
        cursor.execute("SHOW statement_timeout")
        before = cursor.fetchone()
        cursor.execute("SHOW jit")
        before_jit = cursor.fetchone()
        assert search_memory(user=owner, query="tally").literal_hits_total == 4
        cursor.execute("SHOW statement_timeout")
        assert cursor.fetchone() == before
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone() != ("0",)
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == before_jit


@pytest.mark.django_db
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budget is PostgreSQL's statement_timeout")
def test_a_budgeted_statement_runs_without_parallel_workers_or_jit():
    with connection.cursor() as cursor:
        cursor.execute("SET jit = on")
    settings = "SELECT current_setting('max_parallel_workers_per_gather'), current_setting('jit')"
    assert within_budget(settings, [], 1_000) == [("0", "off")]


def session_settings() -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT current_setting('statement_timeout'), current_setting('max_parallel_workers_per_gather'), "
            "current_setting('synchronous_commit'), current_setting('jit')"
        )
        return cursor.fetchone()


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budget is PostgreSQL's statement_timeout")
@pytest.mark.parametrize("budget_ms", [60_000, 1])
def test_outside_a_transaction_a_global_search_leaves_the_session_settings_alone(
    owner, thread, budget_ms, django_assert_num_queries, tune
):
    # Autocommit, as in production: the budget's settings and the log row's
    # asynchronous commit go with their statements and end with them.
    tune(thread_scan_bytes=0)  # the owner's store is not read whole: the index path
    tune(index_budget_ms=budget_ms)
    tune(recent_budget_ms=60_000)
    fill(thread, 40)
    before = session_settings()
    with django_assert_num_queries(4 if budget_ms > 1 else 5):
        result = search_memory(user=owner, query="tally")
    assert result.coverage == ("all" if budget_ms > 1 else "recent")
    assert result.hits
    assert session_settings() == before
    (logged,) = ToolCall.objects.all()
    assert (logged.hits_total, logged.hits_shown, logged.thread_id) == (
        result.literal_hits_total,
        len(result.hits),
        None,
    )
    assert logged.arguments == {"query": "tally", "channel": None}
    assert logged.created_at is not None


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_described_questions_first_page_cuts_no_window_it_cannot_list(owner, thread, scope, tune):
    tune(index_budget_ms=60_000)
    tune(scan_bytes_per_ms=1)
    fill(thread, 40, small=True)
    resolved = resolve_scope(user=owner, channel=thread.channel if scope == "thread" else None)
    # The whole query matches nothing, one of its words does: a described question, whose first page lists no hit.
    plan = plan_search(resolved, ["tally gauge", "tally", "gauge"])

    capped = run_plan(plan, start=None, described_max_chars=0)
    listed = run_plan(plan, start=None)

    assert candidates_of(capped.rows) == candidates_of(listed.rows)
    assert all(row.position is None for row in capped.rows)
    assert any(row.position for row in listed.rows)
    # A query whose whole text matches keeps its windows whatever the cap.
    whole = run_plan(plan_search(resolved, ["echo", "tally"]), start=None, described_max_chars=0)
    assert any(row.position for row in whole.rows)
