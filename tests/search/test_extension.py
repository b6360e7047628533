"""threadmem_search, threadmem's PostgreSQL extension (pg/), agrees with ~* on every ASCII term.

Its functions and its operator replace ``~*``, ``strpos(lower(...))`` and
``substr`` in search when the database has it (migration 0007), so each one
is compared here with the built-in it replaces, on fields and terms made to
trip a hand-written matcher: regex and LIKE characters, backslashes, terms at
the very start and end of a field, partial matches just before a real one,
mixed case, and multi-byte characters around the hit (positions count
characters, windows never split one).
"""

from __future__ import annotations

import random

import pytest
from django.db import DatabaseError, connection, transaction

from tests.support.factories import append, make_thread
from tests.support.search import skip_without_search_extension
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import WINDOW_CHARS, WINDOW_LEAD
from threadmem.features.search.literal.dialects import like_contains, trigram_pattern
from threadmem.models import Message

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL extension"),
]


@pytest.fixture(autouse=True)
def extension(db):
    skip_without_search_extension()


ALPHABET = "aAbBzZ09-_%\\.*+?()[]{}|^$/ é€中\U0001f600\n\t"


def cases(count: int) -> list[tuple[str, str]]:
    """(field, term) pairs: half of the terms occur in their field, in another case."""
    rng = random.Random(20261130)
    pairs = []
    for _ in range(count):
        field = "".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 300)))
        ascii_field = [c for c in field if c.isascii()]
        if ascii_field and rng.random() < 0.5:
            start = rng.randrange(len(field))
            term = "".join(c for c in field[start : start + rng.randint(1, 8)] if c.isascii())
            term = "".join(c.swapcase() if rng.random() < 0.5 else c for c in term)
        else:
            term = "".join(rng.choice("aAbB-_%\\.z") for _ in range(rng.randint(1, 4)))
        if term:
            pairs.append((field, term))
    # Edges a matcher gets wrong: at the start, at the end, a partial match first, the field itself.
    pairs += [
        ("abcabd", "ABD"),
        ("ababac", "abac"),
        ("xyz", "XYZ"),
        ("é€x", "X"),
        ("x\\y", "X\\Y"),
        ("100%_done", "%_D"),
        ("", "a"),
        ("a", "ab"),
    ]
    return pairs


def one_row(statement: str, params: list) -> tuple:
    with connection.cursor() as cursor:
        cursor.execute(statement, params)
        return cursor.fetchone()


def test_every_function_agrees_with_the_builtin_it_replaces():
    checked = 0
    for field, term in cases(400):
        pattern = f"***={term}"
        row = one_row(
            "SELECT %s ~* %s, %s ~~~ %s, %s ~~~~ %s, %s ~~~ %s, threadmem_icontains(%s, %s), "
            "regexp_instr(%s, %s, 1, 1, 0, 'i'), threadmem_ipos(%s, %s), "
            "substr(%s, greatest(regexp_instr(%s, %s, 1, 1, 0, 'i') - %s, 1), %s), threadmem_iwindow(%s, %s, %s, %s)",
            [
                *(field, pattern),
                *(field, like_contains(term)),
                *(field, trigram_pattern(term)),
                *(field, trigram_pattern(term)),
                *(field, term.lower()),
                *(field, pattern),
                *(field, term.lower()),
                *(field, field, pattern, WINDOW_LEAD, WINDOW_CHARS + 1),
                *(field, term.lower(), WINDOW_LEAD, WINDOW_CHARS + 1),
            ],
        )
        matches, plain, operator, costly, contains, position, ipos, window, iwindow = row
        assert (plain, operator, costly, contains, ipos) == (matches,) * 4 + (position,), (field, term)
        assert iwindow == (window if matches else None), (field, term)
        checked += matches
    assert checked > 100  # enough of the pairs match for the comparison to mean something


def test_a_field_full_of_the_first_letter_in_the_other_case_is_read_once():
    # Every byte is a candidate and the lower case never occurs: a matcher that
    # looks for it again after each candidate reads the field once per byte
    # (hours for 2 MB), where reading it once takes milliseconds.
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL statement_timeout = '5s'")
    field = "E" * 2_000_000 + "error"
    assert one_row("SELECT threadmem_ipos(%s, 'error'), threadmem_icontains(%s, 'errorx')", [field, field]) == (
        2_000_001,
        False,
    )


def test_the_needle_may_be_given_in_any_case():
    assert one_row("SELECT threadmem_icontains('Path /SRV/x', '/srv/X'), threadmem_ipos('ab/SRV', 'Srv')", []) == (
        True,
        4,
    )


def test_a_window_keeps_whole_characters_around_a_hit_in_a_long_field():
    field = "中" * 1000 + "needle" + "€" * 1000
    position, window = one_row(
        "SELECT threadmem_ipos(%s, 'NEEDLE'), threadmem_iwindow(%s, 'needle', %s, %s)",
        [field, field, WINDOW_LEAD, WINDOW_CHARS + 1],
    )
    assert position == 1001
    assert window == field[1000 - WINDOW_LEAD : 1000 - WINDOW_LEAD + WINDOW_CHARS + 1]


@pytest.mark.parametrize("operator", ["~~~", "~~~~"])
@pytest.mark.parametrize("pattern", ["abc", "%abc", "abc%", "%a_c%", "%abc\\%"])
def test_the_operators_refuse_a_pattern_that_is_not_a_contains_pattern(operator, pattern):
    with pytest.raises(DatabaseError, match="threadmem_search: the pattern"), transaction.atomic():
        one_row(f"SELECT 'abc' {operator} %s", [pattern])


def test_a_percent_sign_inside_the_pattern_stands_for_nothing():
    assert trigram_pattern("web-7:/srv") == "%web%-%7%:%%/%srv%"
    assert one_row("SELECT 'a WEB-7:/srv b' ~~~ %s, 'web-7 /srv' ~~~ %s", [trigram_pattern("web-7:/srv")] * 2) == (
        True,
        False,
    )


def plan(statement: str, params: list) -> str:
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN {statement}", params)
        return "\n".join(row[0] for row in cursor.fetchall())


@pytest.mark.parametrize("operator", ["~~~", "~~~~"])
def test_the_trigram_index_serves_both_operators(operator):
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")
    found = plan(f"SELECT id FROM threadmem_message WHERE content {operator} %s", [like_contains("zebrafish")])
    assert "message_content_trgm" in found


def test_in_one_thread_the_costly_operator_narrows_with_the_index_first(owner):
    # The planner takes any thread for an average one, cheap to read row by
    # row; ~~~~ tells it a test reads a whole field, so it asks the index.
    with connection.cursor() as cursor:
        # Rows earlier tests rolled back stay in the table's and the index's files, and the planner costs a scan
        # by their size: start from new files (TRUNCATE is undone with this test's transaction).
        cursor.execute("TRUNCATE threadmem_message CASCADE")
    threads = [make_thread(owner, f"bench-{n}") for n in range(40)]
    Message.objects.bulk_create(
        Message(thread=t, generation=1, seq=i, role="tool", content=f"row {i} of log {t.id}: " + "all quiet " * 20)
        for t in threads
        for i in range(1, 101)
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE threadmem_message")
    statement = "SELECT id FROM threadmem_message WHERE thread_id = %s AND content {} %s"
    params = [threads[0].id, like_contains("zebrafish-4711")]
    assert "message_content_trgm" in plan(statement.format("~~~~"), params)
    assert "message_content_trgm" not in plan(statement.format("~~~"), params)


@pytest.mark.usefixtures("without_token_indexes")  # the global term through the trigram index
def test_search_uses_the_extension_on_both_thread_paths_and_globally(owner, thread, tune):
    append(thread, {"role": "tool", "content": "the Zebrafish-42 log"})
    statements = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    tune(scan_bytes_per_ms=1)  # the thread's index budget: minutes
    results = []
    with connection.execute_wrapper(record):
        for scan_bytes in (10**12, 0):
            tune(thread_scan_bytes=scan_bytes)
            results.append(search_memory(user=owner, query="zebrafish-42", channel=thread.channel))
        results.append(search_memory(user=owner, query="zebrafish-42"))
    assert [(r.matched_by, r.literal_hits_total) for r in results] == [("scan", 1), ("index", 1), ("index", 1)]
    scan, thread_index, global_index = [sql for sql in statements if "AS term" in sql]
    assert "threadmem_icontains(m.content" in scan
    assert "m.content ~~~~ " in thread_index and "a.value ~~~~ " in thread_index
    assert "m.content ~~~ " in global_index and "a.value ~~~ " in global_index
    assert "~*" not in thread_index + global_index
    assert all("threadmem_iwindow" in sql for sql in statements if "WITH RECURSIVE p(" in sql)
