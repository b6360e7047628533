"""The semantic part on the large store: HNSW latency and recall against exact search.

    .venv/bin/python bench/semantic.py [--queries 100] [--rebuild-vectors]

Uses the store bench/store.py builds (1,000,000 messages over 10,000
threads in BENCH_DATABASE_URL, default threadmem_bench_search; built first
if missing) and gives every searchable message one chunk: its first 1,000
characters with a synthetic vector of BENCH_DIMENSIONS (default 128)
dimensions. No model embeds a million messages on this machine in minutes,
so the vectors are drawn, reproducibly from the seed, with the structure
real embeddings of a memory have: 2,000 topics of 50 subjects each, every
message a draw around one subject (about ten messages per subject, cosine
~0.75 to each other, ~0.5 to the rest of their topic, ~0 to other topics).
A query is another draw around a random subject: its ten nearest messages
are the ones about the same thing, which is what recall@10 then measures.

What it prints, for ``threadmem.features.embeddings.retrieve.nearest`` as search
calls it (the scope's filter, the join to messages and threads, collapsing
by message), over --queries queries:

* the global scope of an operator (every non-isolated thread) through the
  HNSW index, p50/p95, and recall@10 against the exact ranking of the same
  scope (``exact=True``: every chunk's distance computed);
* the global scope of one ordinary user (their own threads, about 1 % of
  the store): the filter the iterative index scan has to satisfy;
* one thread (exact ranking, no index), for comparison;
* the HNSW build time when the vectors are (re)loaded.

The query embedding itself (a round trip to the model server) is not in
these figures: it depends on the server, not on threadmem.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
import psycopg  # noqa: E402

from bench import store  # noqa: E402  (sets DATABASE_URL to the store's database)

DIMENSIONS = int(os.environ.get("BENCH_DIMENSIONS", "128"))
MODEL = f"bench-synthetic-{DIMENSIONS}"
TOPICS = 2_000
SUBJECTS_PER_TOPIC = 50
# Spread of a subject around its topic, and of a message around its subject (relative to unit vectors).
SUBJECT_SPREAD = 1.0
MESSAGE_SPREAD = 0.6
SEED = 20261130
READ_BLOCK = 20_000
K = 10


def spread(rng: np.random.Generator, points: np.ndarray, scale: float) -> np.ndarray:
    """Unit vectors around ``points``: Gaussian noise of norm about ``scale``."""
    moved = points + rng.standard_normal(points.shape).astype(np.float32) * (scale / np.sqrt(DIMENSIONS))
    return moved / np.linalg.norm(moved, axis=1, keepdims=True)


def subjects() -> np.ndarray:
    """The subject centres, TOPICS * SUBJECTS_PER_TOPIC unit vectors grouped by topic."""
    rng = np.random.default_rng(SEED)
    topics = spread(rng, np.zeros((TOPICS, DIMENSIONS), dtype=np.float32), 1.0)
    return spread(rng, np.repeat(topics, SUBJECTS_PER_TOPIC, axis=0), SUBJECT_SPREAD)


def draw(rng: np.random.Generator, centres: np.ndarray, count: int) -> np.ndarray:
    """``count`` messages (or queries), each about a random subject."""
    return spread(rng, centres[rng.integers(0, len(centres), count)], MESSAGE_SPREAD)


def vectors_loaded(conn: psycopg.Connection) -> int:
    (count,) = conn.execute("SELECT count(*) FROM threadmem_chunk WHERE model = %s", [MODEL]).fetchone()
    return count


def load_vectors(conn: psycopg.Connection) -> None:
    from pgvector.psycopg import register_vector

    register_vector(conn)
    conn.execute(f"DROP INDEX IF EXISTS chunk_embedding_hnsw_{DIMENSIONS}")
    conn.execute("DELETE FROM threadmem_chunk WHERE model = %s", [MODEL])
    conn.commit()
    rng = np.random.default_rng(SEED + 1)
    centres = subjects()
    started = time.perf_counter()
    total = 0
    copy_sql = (
        "COPY threadmem_chunk (message_id, model, part, field, start, end_of_field, text, dimensions, embedding) "
        "FROM STDIN (FORMAT BINARY)"
    )
    # Read with a server-side cursor on a connection of its own: the COPY holds this one.
    with psycopg.connect(store.BENCH_DATABASE_URL) as reader, reader.cursor(name="messages") as messages:
        messages.itersize = READ_BLOCK
        messages.execute(
            "SELECT id, left(content, 1000), length(content) <= 1000 FROM threadmem_message "
            "WHERE kind = 'message' AND model_visible AND content <> '' ORDER BY id"
        )
        with conn.cursor() as writer, writer.copy(copy_sql) as copy:
            copy.set_types(["int8", "varchar", "int4", "varchar", "int4", "bool", "text", "int4", "vector"])
            while rows := messages.fetchmany(READ_BLOCK):
                vectors = draw(rng, centres, len(rows))
                for (message_id, text, whole), vector in zip(rows, vectors, strict=True):
                    copy.write_row([message_id, MODEL, 0, "content", 0, whole, text, DIMENSIONS, vector])
                total += len(rows)
                if total % 200_000 < READ_BLOCK:
                    store.log(f"  {total:,} chunks")
    conn.commit()
    store.log(f"loaded {total:,} chunks of {DIMENSIONS} dimensions in {time.perf_counter() - started:.0f} s")


def build_index(conn: psycopg.Connection) -> None:
    from threadmem.features.embeddings.thread_embedding import index_expression

    conn.execute("SET maintenance_work_mem = '4GB'")
    started = time.perf_counter()
    conn.execute(
        f"CREATE INDEX IF NOT EXISTS chunk_embedding_hnsw_{DIMENSIONS} ON threadmem_chunk "
        f"USING hnsw ({index_expression(DIMENSIONS)} vector_cosine_ops) WHERE dimensions = {DIMENSIONS}"
    )
    conn.execute("ANALYZE threadmem_chunk")
    conn.commit()
    store.log(f"HNSW index built in {time.perf_counter() - started:.0f} s")


def measure(queries: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.db.models import Count

    from threadmem.domain.scope import resolve_scope
    from threadmem.features.embeddings.retrieve import nearest
    from threadmem.models import Thread

    User = get_user_model()
    operator = User.objects.filter(is_staff=True).first() or User.objects.create_user("bench-operator", is_staff=True)
    # An ordinary user with the most threads: their global scope is about 1 % of the store.
    busiest = Thread.objects.values("owner").annotate(n=Count("id")).order_by("-n", "owner")[0]["owner"]
    user = User.objects.get(pk=busiest)
    thread = Thread.objects.filter(owner=user, isolated=False).order_by("-next_seq").first()
    rng = np.random.default_rng(SEED + 2)
    probes = draw(rng, subjects(), queries)

    def run(scope, *, exact: bool) -> tuple[list[float], list[list[int]]]:
        nearest(scope=scope, vector=probes[0].tolist(), model=MODEL, k=K, min_score=-1.0, exact=exact)  # warm
        samples, found = [], []
        for probe in probes:
            started = time.perf_counter()
            matches = nearest(scope=scope, vector=probe.tolist(), model=MODEL, k=K, min_score=-1.0, exact=exact)
            samples.append((time.perf_counter() - started) * 1000)
            found.append([m.message_id for m in matches])
        return samples, found

    def report(label: str, scope, *, with_recall: bool) -> None:
        samples, approximate = run(scope, exact=False)
        extra = ""
        if with_recall:
            _, exact = run(scope, exact=True)
            recalls = [len(set(a) & set(e)) / max(1, len(e)) for a, e in zip(approximate, exact, strict=True)]
            extra = f"  recall@{K} {statistics.mean(recalls):.3f} (min {min(recalls):.1f})"
        p50, p95 = statistics.median(samples), store.percentile(samples, 0.95)
        print(f"  {label:<46} p50 {p50:7.1f}  p95 {p95:7.1f}  ms{extra}", flush=True)

    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM threadmem_chunk WHERE model = %s", [MODEL])
        (chunks,) = cursor.fetchone()
    print(f"\nsemantic part, {chunks:,} chunks of {DIMENSIONS} dimensions, {queries} queries, k={K}")
    report("global, operator (HNSW, iterative scan)", resolve_scope(user=operator, channel=None), with_recall=True)
    owned = Thread.objects.filter(owner=user).count()
    report(
        f"global, one user ({owned} threads: small scope, exact)",
        resolve_scope(user=user, channel=None),
        with_recall=True,
    )
    thread_scope = resolve_scope(user=user, channel=thread.channel)
    report(f"one thread ({thread.next_seq - 1} messages, exact)", thread_scope, with_recall=False)


def prepare_and_measure(*, queries: int, rebuild_vectors: bool) -> None:
    """Load the vectors and build the index when missing, then measure (Django set up, store built)."""
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    with psycopg.connect(store.BENCH_DATABASE_URL) as conn:
        if rebuild_vectors or vectors_loaded(conn) == 0:
            load_vectors(conn)
        build_index(conn)
    measure(queries)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--rebuild-vectors", action="store_true")
    args = parser.parse_args()

    import django

    store.ensure_database(False)
    django.setup()
    if not store.store_is_built():
        store.build_store()
    prepare_and_measure(queries=args.queries, rebuild_vectors=args.rebuild_vectors)


if __name__ == "__main__":
    main()
