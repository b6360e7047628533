"""A global search's ranked lane answers within ``semantic.RANKED_GLOBAL_BUDGET_MS`` or says so in one line.

The lane is made slow for certain, not by chance: another connection holds an
exclusive lock on the pieces' table, so the lane's keyword statement waits on
it until it is cancelled. Searches run the lane on a worker thread, so these
tests commit (``transaction=True``).
"""

from __future__ import annotations

import threading
import time

import psycopg
import pytest
from django.db import connection

from tests.support.factories import append, make_thread
from tests.support.search import literal_part_of
from tests.support.semantic import lane_off, listed_ids, semantic_part
from threadmem.features.embeddings import static, tasks
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.search import search_memory, semantic

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
PAINT = "Melanie: I painted a sunrise over the lake last weekend."
OUT_OF_TIME = (
    "Semantic search did not answer within 200 ms (the global ranked lane's budget); "
    "the literal hits above are complete."
)
# How long the test waits for the cancelled statement to leave the lock's queue (it leaves at once).
LOCK_QUEUE_WAIT_SECONDS = 10


@pytest.fixture
def talk(owner, static_model):
    thread = make_thread(owner, "talk")
    messages = append(thread, {"role": "user", "content": GROUP}, {"role": "assistant", "content": PAINT})
    tasks.wait_for_background()
    embedding_service.embed_thread(thread_id=thread.pk)
    return thread, messages


@pytest.fixture
def pieces_locked():
    """Another connection holding an exclusive lock on the pieces' table; yields it."""
    if connection.vendor != "postgresql":
        pytest.skip("a lock that makes readers wait is PostgreSQL's")
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params) as holder:
        holder.execute("LOCK TABLE threadmem_chunk IN ACCESS EXCLUSIVE MODE")
        yield holder
        holder.rollback()


def _waiting_on_pieces(holder) -> int:
    return holder.execute(
        "SELECT count(*) FROM pg_locks WHERE relation = 'threadmem_chunk'::regclass AND NOT granted"
    ).fetchone()[0]


def test_a_global_lane_past_its_budget_costs_one_line_and_its_statement_is_cancelled(
    owner, talk, pieces_locked, monkeypatch
):
    monkeypatch.setattr(semantic, "RANKED_GLOBAL_BUDGET_MS", 200)
    with lane_off():
        without_lane = search_memory(user=owner, query="support group", channel=None)

    result = search_memory(user=owner, query="support group", channel=None)

    assert semantic_part(result.text) == OUT_OF_TIME
    assert literal_part_of(result.text) == literal_part_of(without_lane.text)
    assert result.literal_hits_total == without_lane.literal_hits_total == 1
    # The lane's statement stopped waiting: cancelled at the budget, not left to finish for nobody.
    waited = time.monotonic() + LOCK_QUEUE_WAIT_SECONDS
    while _waiting_on_pieces(pieces_locked) and time.monotonic() < waited:
        time.sleep(0.05)
    assert _waiting_on_pieces(pieces_locked) == 0


def test_a_worker_whose_statement_was_cancelled_serves_the_next_search(owner, talk, pieces_locked, monkeypatch):
    _, messages = talk
    monkeypatch.setattr(semantic, "RANKED_GLOBAL_BUDGET_MS", 200)
    for _ in range(semantic.SEMANTIC_WORKERS):  # every worker gets a cancelled statement
        search_memory(user=owner, query="support group", channel=None)
    pieces_locked.rollback()

    result = search_memory(user=owner, query="When did Caroline go to the support group?", channel=None)

    assert messages[0].id in listed_ids(semantic_part(result.text))


def test_a_thread_search_is_not_bound_by_the_global_budget(owner, talk, monkeypatch):
    thread, messages = talk
    monkeypatch.setattr(semantic, "RANKED_GLOBAL_BUDGET_MS", 1)

    result = search_memory(user=owner, query="When did Caroline go to the support group?", channel=thread.channel)

    assert messages[0].id in listed_ids(semantic_part(result.text))


def test_the_first_global_search_of_a_process_loads_the_static_model_before_the_budget_starts(owner, talk, monkeypatch):
    _, messages = talk
    monkeypatch.setattr(semantic, "RANKED_GLOBAL_BUDGET_MS", 200)
    monkeypatch.setattr(static, "_model", None)  # as a fresh process has it: the model not loaded yet
    loaded_on: list[str] = []
    load = static.model

    def model():
        if static._model is None:
            loaded_on.append(threading.current_thread().name)
        return load()

    monkeypatch.setattr(static, "model", model)

    result = search_memory(user=owner, query="When did Caroline go to the support group?", channel=None)

    # Loaded by the search's own thread before the lane started (~0.5 s: more than a budget), not by the lane.
    assert loaded_on == [threading.current_thread().name]
    assert messages[0].id in listed_ids(semantic_part(result.text))


def test_a_configured_models_global_lane_keeps_the_semantic_deadline(owner, fake_openai, settings, monkeypatch):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    # What no lane calling a model server over HTTP could meet.
    monkeypatch.setattr(semantic, "RANKED_GLOBAL_BUDGET_MS", 1)
    thread = make_thread(owner, "talk")
    (group,) = append(thread, {"role": "user", "content": GROUP})
    tasks.wait_for_background()
    embedding_service.embed_thread(thread_id=thread.pk)

    result = search_memory(user=owner, query="When did Caroline go to the support group?", channel=None)

    assert group.id in listed_ids(semantic_part(result.text))
