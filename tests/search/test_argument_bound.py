"""A global term's argument branch stops where its content branch stopped (match.not_older_than_content_sql,
and match.term_window_sql in an owner's window).

A term lists its first SEARCH_COUNT_LIMIT + 1 fields, newest message first and
a message's content before its arguments; once the content branch holds that
many, arguments of older messages can never be among them.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.factories import append, make_thread
from threadmem.domain.scope import resolve_scope
from threadmem.features.search.answer_caps import SEARCH_COUNT_LIMIT
from threadmem.features.search.literal import plan
from threadmem.features.search.literal.match_sql import match_sql
from threadmem.features.search.literal.statement_rows import match_rows
from threadmem.features.search.statements import fetch_rows
from threadmem.models import Message, ToolArgument

pytestmark = pytest.mark.django_db

WORD = "kumquat"
OLDER_CALLS = 40
NEWER_CALLS = 5


def call(n: int) -> dict:
    return {"role": "assistant", "tool_calls": [{"id": f"c{n}", "name": "shell", "arguments": {"cmd": f"{WORD} {n}"}}]}


@pytest.fixture
def store(owner):
    """40 older calls with the word in an argument, then 130 contents with it, 5 calls among the newest of them."""
    thread = make_thread(owner, channel="bound")
    append(thread, *(call(n) for n in range(OLDER_CALLS)))
    newer = [{"role": "tool", "content": f"{WORD} result {n}"} for n in range(130)]
    for n in range(NEWER_CALLS):
        newer.insert(100 + n * 5, call(1000 + n))
    append(thread, *newer)


def index_plans(scope, terms, dialect):
    return plan.index_term_plans(scope, terms, dialect)


def match(user, plans) -> list:
    dialect = plan.dialect()
    dialect.prepare()
    scope = resolve_scope(user=user, channel=None)
    return match_rows(fetch_rows(*match_sql(scope, plans(scope, [WORD], dialect), dialect)))


def scan_plans(scope, terms, dialect):
    return plan.scan_plans(terms)


def expected_fields() -> list[tuple[int, int]]:
    """Every field holding the word, in listing order, read in Python: the first SEARCH_COUNT_LIMIT + 1."""
    fields = [(m.id, 0) for m in Message.objects.filter(content__icontains=WORD)]
    fields += [(a.message_id, a.id) for a in ToolArgument.objects.filter(value__icontains=WORD)]
    return sorted(fields, key=lambda field: (-field[0], field[1]))[: SEARCH_COUNT_LIMIT + 1]


@pytest.mark.usefixtures("store")
@pytest.mark.parametrize("plans", [index_plans, scan_plans])
def test_the_argument_branch_reads_no_older_than_the_content_branch(operator, plans):
    if plans is index_plans and connection.vendor != "postgresql":
        pytest.skip("SQLite's global search is a scan")
    rows = match(operator, plans)
    listed = [(row.message_id, row.arg_id) for row in rows]
    assert listed[: SEARCH_COUNT_LIMIT + 1] == expected_fields()
    # The content branch's 101 rows, and of the 45 arguments only the 5 among them: none of the 40 older calls.
    arguments = [row for row in rows if row.arg_id]
    assert len(rows) == SEARCH_COUNT_LIMIT + 1 + NEWER_CALLS
    assert len(arguments) == NEWER_CALLS
    oldest_content = min(row.message_id for row in rows if not row.arg_id)
    assert all(row.message_id > oldest_content for row in arguments)


@pytest.mark.usefixtures("store")
def test_a_content_branch_short_of_the_limit_leaves_the_arguments_unbounded(operator):
    Message.objects.filter(content__icontains=WORD).update(content="nothing here")
    rows = match(operator, scan_plans)
    assert len(rows) == OLDER_CALLS + NEWER_CALLS
    assert all(row.arg_id for row in rows)


@pytest.fixture
def tight(owner):
    """An owner's thread, newest first: 99 contents with the word, a call with it, 2 more contents, 40 older calls."""
    thread = make_thread(owner, channel="tight")
    append(thread, *(call(n) for n in range(OLDER_CALLS)))
    contents = [{"role": "tool", "content": f"{WORD} result {n}"} for n in range(SEARCH_COUNT_LIMIT + 1)]
    append(thread, *contents[:2], call(2000), *contents[2:])


@pytest.mark.usefixtures("tight")
def test_an_owners_window_reads_arguments_up_to_its_contents_last_hit(owner):
    if connection.vendor != "postgresql":
        pytest.skip("the window is the PostgreSQL plan's")
    dialect = plan.dialect()
    dialect.prepare()
    scope = resolve_scope(user=owner, channel=None)
    planned = plan.index_term_plans(scope, [WORD], dialect, window=True)
    rows = match_rows(fetch_rows(*match_sql(scope, planned, dialect)))
    listed = [(row.message_id, row.arg_id) for row in rows]
    # The call sits just before the content's 101st hit: its argument is the 100th field, listed.
    assert listed[: SEARCH_COUNT_LIMIT + 1] == expected_fields()
    assert [row.arg_id != 0 for row in rows].count(True) == 1
