"""A bulk append refreshes PostgreSQL's planner statistics when they do not know of it (issue 17, defect 8).

Global search plans with the statistics of the message tables; a store
loaded in batches with autovacuum off (or behind) had none, and every global
search ran out of time. A batch of at least BULK_ANALYZE_MIN_ROWS that the
statistics do not cover (never gathered, or a fifth of the rows they counted)
is followed by ANALYZE; a small batch is not.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.factories import make_thread
from threadmem.domain import services
from threadmem.domain.store import BULK_ANALYZE_MIN_ROWS
from threadmem.models import Message

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def counted_rows() -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE oid = 'threadmem_message'::regclass")
        return cursor.fetchone()[0]


def batch(size: int, word: str) -> list:
    return services.messages_parse([{"role": "user", "content": f"{word} {n}"} for n in range(size)])


def test_a_bulk_batch_the_statistics_do_not_cover_is_analyzed_and_a_small_one_is_not(owner):
    if connection.vendor != "postgresql":
        pytest.skip("planner statistics are PostgreSQL's")
    thread = make_thread(owner, "bulk:statistics")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE threadmem_message")
    before = counted_rows()

    services.messages_store(thread=thread, messages=batch(BULK_ANALYZE_MIN_ROWS, "bulk"))
    assert counted_rows() == Message.objects.count() == before + BULK_ANALYZE_MIN_ROWS

    services.messages_store(thread=thread, messages=batch(10, "small"))
    assert counted_rows() == Message.objects.count() - 10
