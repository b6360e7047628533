"""Semantic test helpers: a message and a paraphrase of it that shares no word, the semantic part of an answer."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from unittest import mock

from django.db import connections

from threadmem.features.embeddings import tasks
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.search import search_memory, semantic
from threadmem.features.search.answer_caps import SEMANTIC_HEADING

EVIDENCE = "The postgres replica fell behind the primary by 40 seconds during the nightly backup."
PARAPHRASE = "database replication lag"
# A conversation whose keyword ranking in context differs from BM25 alone: the turn beside the opening holds one
# query word in many words, the last turn one in few (BM25 puts it first); the first turn holds none.
STUDIO_QUERY = "dance studio opening"
STUDIO = (
    {"role": "user", "content": "Guess what happened on Saturday!"},
    {"role": "user", "content": "The dance studio opening was a party."},
    {"role": "assistant", "content": "Everyone from the old studio crew came along with families and neighbours."},
    {"role": "user", "content": "Then I bought groceries and cooked a big dinner for all of them."},
    {"role": "assistant", "content": "The studio needs mirrors."},
)


def semantic_part(text: str) -> str:
    return text.split(f"\n{SEMANTIC_HEADING}\n", 1)[1]


def listed_ids(part: str) -> set[int]:
    return {int(line.split()[1].removeprefix("messageId=")) for line in part.splitlines() if line.startswith("--- ")}


def embedded(*threads) -> None:
    """The threads' pieces stored now, after the appends' own background embedding."""
    tasks.wait_for_background()
    for thread in threads:
        embedding_service.embed_thread(thread_id=thread.pk)


def ranked_ids(user, query: str, channel: str | None = None) -> list[int]:
    """The messageIds of an answer's "Other memory results", in order."""
    part = semantic_part(search_memory(user=user, query=query, channel=channel).text)
    return [int(line.split()[1].removeprefix("messageId=")) for line in part.splitlines() if line.startswith("--- ")]


@contextmanager
def lane_replaced(lane: Callable[..., str]) -> Iterator[None]:
    """ "Other memory results" written by ``lane(scope=, query=, terms=)`` in place of the ranked lane."""
    in_force = mock.patch.object(semantic, "ranked_in_force", lambda: True)
    with mock.patch.object(semantic, "ranked_results", lane), in_force:
        yield


@contextmanager
def lane_off() -> Iterator[None]:
    """Search as with no embedding model in force: no ranked lane, its one line instead."""
    with mock.patch.object(semantic, "ranked_in_force", lambda: False):
        yield


def close_lane_connections() -> None:
    """Close the database connections the ranked lane's worker threads keep (``semantic._executor``), before
    the test database is dropped: PostgreSQL refuses to drop a database that has sessions.

    One call a worker, each held at a barrier until all have run, so every thread gets one.
    """
    barrier = threading.Barrier(semantic.SEMANTIC_WORKERS)

    def close() -> None:
        connections.close_all()
        barrier.wait(timeout=30)

    for future in [semantic._executor.submit(close) for _ in range(semantic.SEMANTIC_WORKERS)]:
        future.result()
