"""Several writers appending to one thread at once keep a gap-free, duplicate-free seq order.

Real threads with their own database connections, through the API, on
whichever database the suite runs on (PostgreSQL: the row lock taken by the
seq-reserving UPDATE; SQLite: IMMEDIATE transactions with a busy timeout).
"""

from __future__ import annotations

import threading
from collections import defaultdict

import pytest
from django.db import connection

from tests.support.factories import make_thread, token_client
from threadmem.models import Message

WRITERS = 6
BATCHES_PER_WRITER = 5
BATCH_SIZE = 20


@pytest.mark.django_db(transaction=True)
def test_it_keeps_seq_gap_free_and_duplicate_free_under_concurrent_batch_appends(owner):
    thread = make_thread(owner, "slack:C042/race")
    clients = [token_client(owner) for _ in range(WRITERS)]
    start = threading.Barrier(WRITERS)
    failures: list[str] = []

    def write(writer: int) -> None:
        try:
            start.wait(timeout=30)
            for batch in range(BATCHES_PER_WRITER):
                body = [
                    {"role": "user", "content": f"w{writer} b{batch} m{item}", "session_id": f"w{writer}-b{batch}"}
                    for item in range(BATCH_SIZE)
                ]
                response = clients[writer].post(f"/api/v1/threads/{thread.channel}/messages/", body, format="json")
                if response.status_code != 201:
                    failures.append(f"writer {writer} batch {batch}: {response.status_code} {response.content[:200]!r}")
        except Exception as exc:  # reported below: an exception in a thread would otherwise vanish
            failures.append(f"writer {writer}: {exc!r}")
        finally:
            connection.close()

    workers = [threading.Thread(target=write, args=(writer,)) for writer in range(WRITERS)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert not failures, failures
    assert not any(worker.is_alive() for worker in workers)

    total = WRITERS * BATCHES_PER_WRITER * BATCH_SIZE
    rows = list(Message.objects.filter(thread=thread).order_by("seq").values_list("seq", "session_id", "content"))
    assert [seq for seq, _, _ in rows] == list(range(1, total + 1))
    thread.refresh_from_db()
    assert thread.next_seq == total + 1
    # Each batch holds one contiguous block of seqs, in the order it was sent.
    by_batch: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for seq, session, content in rows:
        by_batch[session].append((seq, content))
    assert len(by_batch) == WRITERS * BATCHES_PER_WRITER
    for session, block in by_batch.items():
        seqs = [seq for seq, _ in block]
        assert seqs == list(range(seqs[0], seqs[0] + BATCH_SIZE)), session
        writer, batch = session.split("-")
        assert [content for _, content in block] == [f"{writer} {batch} m{item}" for item in range(BATCH_SIZE)]
