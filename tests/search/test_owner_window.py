"""An owner's global search reads their newest messages first (match_sql.py, WINDOW) and lists what a scan lists."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.factories import append, make_thread
from tests.support.search import choose_plan
from threadmem.domain import services
from threadmem.domain.scope import resolve_scope
from threadmem.features.search import search_memory
from threadmem.features.search.literal import filter_sql as owner_window
from threadmem.features.search.literal import plan
from threadmem.features.search.literal.plan import MatchPlan
from threadmem.models import Message

pytestmark = [
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the window is the PostgreSQL plan's"),
    pytest.mark.django_db,
]

# 'kalomi' fills the owner's newest messages (more than the count limit), 'prebak-170.internal' sits in old
# and new ones, 'ru35.log' only in the oldest; the other owner's messages hold all three, interleaved.
QUERIES = ("kalomi", "prebak-170.internal", "ru35.log", "zz-absent", "kalomi prebak-170.internal")


@pytest.fixture
def seeded(owner, other, admin):
    rng = random.Random(16)
    mine = [make_thread(owner, channel=f"window-{n}") for n in range(3)]
    theirs = make_thread(other, channel="window-other")
    for step in range(150):
        words = ["filler", "text"]
        if step >= 20 and rng.random() < 0.9:
            words.append("KALOMI" if rng.random() < 0.3 else "kalomi")
        if rng.random() < 0.1:
            words.append("prebak-170.internal")
        if step < 10:
            words.append("/srv/ru35.log")
        text = " ".join(rng.sample(words, len(words)))
        thread = rng.choice(mine)
        if rng.random() < 0.25:
            call = {"id": f"c{step}", "name": "shell", "arguments": {"command": text}}
            append(thread, {"role": "assistant", "tool_calls": [call]})
        else:
            append(thread, {"role": rng.choice(["user", "tool", "assistant"]), "content": text})
        append(theirs, {"role": "tool", "content": text})
    # The owner's newest messages, isolated: a whole thread and one message. Search must not show them.
    hidden = make_thread(owner, channel="window-isolated")
    append(hidden, {"role": "tool", "content": "kalomi prebak-170.internal /srv/ru35.log"})
    services.thread_set_isolated(thread=hidden, isolated=True, actor=admin)
    (newest,) = append(mine[0], {"role": "tool", "content": "kalomi /srv/ru35.log, isolated"})
    services.message_set_isolated(message=newest, isolated=True, actor=admin)
    return {message.id for message in Message.objects.filter(thread=hidden)} | {newest.id}


def listing(user, query):
    result = search_memory(user=user, query=query)
    assert result.coverage == "all", query
    return result.hits, result.literal_hits_total


@pytest.mark.parametrize("tokens", [False, True], ids=["trigrams", "tokens"])
@pytest.mark.parametrize("window_messages", [1, 12, 40, 1_000])
def test_an_owners_search_lists_what_a_scan_lists(request, monkeypatch, seeded, owner, window_messages, tokens, tune):
    request.getfixturevalue("token_indexes" if tokens else "without_token_indexes")
    monkeypatch.setattr(owner_window, "OWNER_WINDOW_MESSAGES", window_messages)
    tune(thread_scan_bytes=0)  # never small enough to scan whole
    tune(index_budget_ms=60_000)  # exactness, not time: the index statement must answer
    assert choose_plan(resolve_scope(user=owner, channel=None), plan.dialect()) == MatchPlan.WINDOW_THEN_RECENT
    with CaptureQueriesContext(connection) as queries:
        windowed = {query: listing(owner, query) for query in QUERIES}
    # With the token index, a term it narrows goes to its exact posting list and skips the window: the host alone.
    windowed_queries = len(QUERIES) - 1 if tokens else len(QUERIES)
    assert sum("ow AS MATERIALIZED" in q["sql"] for q in queries.captured_queries) == windowed_queries
    tune(path="scan")
    for query in QUERIES:
        assert windowed[query] == listing(owner, query), query
    assert windowed["kalomi"][1] == 100  # the count stops at its limit ("more than 100")
    assert not {hit.message_id for hits, _ in windowed.values() for hit in hits} & seeded
    assert windowed["ru35.log"][1] > 0


def test_the_window_holds_the_owners_newest_searchable_messages_only(seeded, owner, other, monkeypatch):
    monkeypatch.setattr(owner_window, "OWNER_WINDOW_MESSAGES", 5)
    statement, params = owner_window.window_sql(resolve_scope(user=owner, channel=None))
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {statement} SELECT id FROM ow ORDER BY id DESC", params)
        window = [row[0] for row in cursor.fetchall()]
    # The newest five of their readable threads' messages, less the ones search may not show (one is isolated).
    readable = Message.objects.filter(thread__owner=owner, thread__isolated=False).order_by("-id")[:5]
    newest = Message.objects.searchable().filter(id__in=list(readable.values_list("id", flat=True))).order_by("-id")
    assert window == list(newest.values_list("id", flat=True))
    assert len(window) == 4
