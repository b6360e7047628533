"""Search latency on PostgreSQL: the stress thread and a store of 1,000,000 messages.

    DATABASE_URL is ignored: the bench uses its own database, BENCH_DATABASE_URL
    (default postgres://postgres@127.0.0.1:5432/threadmem_bench_search), builds
    it once with COPY and reuses it on later runs (pass --rebuild to start over).

    .venv/bin/python bench/search.py [--rebuild] [--runs 30]

What it builds:
  * the stress thread: 120 tool results of ~60,000 characters of log-like text,
    each with the keyword ``needle-Keyword-7`` in the middle (7.2 million
    characters), between small user/assistant messages; one message holds the
    rare term;
  * a store of 1,000,000 messages over 10,000 threads (1 % of them isolated),
    long-tailed sizes (median ~500 characters, 5 % of 10,000-60,000), with
    machine events, model-invisible and superseded rows and tool calls whose
    arguments are stored as ToolArgument leaves, loaded with COPY; the trigram
    indexes are dropped for the load and rebuilt after it.

What it prints: p50/p95 (and p99 for global) of ``search_memory`` as the model
calls it (the whole tool: scope, literal part, semantic part, merge and the
tool-call log row), beside the baselines measured in the same run: fetching
the thread's rows into Python and scanning them there, and in-memory scans of
the same text (``re.IGNORECASE``, and ``in`` over text case-folded in advance:
the floor). Then thread search in ordinary threads of the store (median, 90th
and 99th percentile size), with the statement search picks for them (a scan
of the thread) beside the trigram indexes forced. Global rows say whether the
index answered, or the search fell back to the newest messages / ran out of
its time budget (threadmem/features/search/literal/plan.py), and whether the answer
is "complete": the hits and the count an exhaustive search (a scan of every
message, ``SearchTuning.path`` scan) gives for the same query. Each global
class runs in the default configuration (the token index) and with search not
using it (``SearchTuning.tokens`` off), one after the other.
The load average is printed before and after: on two shared cores every
figure moves with whatever else runs.

The store takes ~15 minutes to build on 2 busy cores, most of it the trigram
index over 2.4 G characters; later runs reuse it.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import django  # noqa: E402
import psycopg  # noqa: E402

from bench.store import (  # noqa: E402  (sets DATABASE_URL to the store's database)
    ABSENT_TERM,
    BENCH_DATABASE_URL,
    RARE_TERM,
    STRESS_CHANNEL,
    STRESS_KEYWORD,
    VISIBLE_CHARS_SQL,
    build_store,
    ensure_database,
    log,
    percentile,
    store_is_built,
    tail_words,
    timed,
)

# --- measurement -------------------------------------------------------------


def machine_speed() -> str:
    """How fast the machine is right now, to compare runs: the same figures vary by half on a shared host.

    A fixed loop in Python and one in PostgreSQL (no table read), medians of 5.
    """
    from django.db import connection

    def python_loop():
        total = 0
        for number in range(1_000_000):
            total += number

    def sql_loop():
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM generate_series(1, 1000000)")
            cursor.fetchone()

    python_ms = statistics.median(timed(python_loop, 5))
    sql_ms = statistics.median(timed(sql_loop, 5))
    return f"machine speed: a 1M-step loop takes {python_ms:.0f} ms in Python, {sql_ms:.0f} ms in PostgreSQL"


def row(label: str, samples: list[float], extra: str = "", p99: bool = False) -> None:
    tail = f"  p99 {percentile(samples, 0.99):8.1f}" if p99 else ""
    print(
        f"  {label:<44} p50 {statistics.median(samples):8.1f}  p95 {percentile(samples, 0.95):8.1f}{tail}  ms{extra}",
        flush=True,
    )


@contextlib.contextmanager
def tuned(**knobs):
    """Literal search's tuning changed for the block (search/literal/plan.py, ``TUNING``), then as before."""
    from dataclasses import replace

    from threadmem.features.search.literal import plan

    before = plan.TUNING
    plan.TUNING = replace(before, **knobs)
    try:
        yield
    finally:
        plan.TUNING = before


def ordinary_threads(runs: int) -> None:
    """Thread search in threads of the store's median, 90th and 99th percentile size, both match statements.

    Below ``SearchTuning.thread_scan_bytes`` search scans the thread's rows;
    "index" forces the trigram indexes for comparison.
    """
    from django.db import connection

    from threadmem.features.search import search_memory
    from threadmem.features.search.literal import plan
    from threadmem.models import Thread

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.thread_id FROM threadmem_generation g JOIN threadmem_thread t ON t.id = g.thread_id "
            "WHERE NOT t.isolated AND t.channel <> %s ORDER BY g.visible_chars, g.thread_id",
            [STRESS_CHANNEL],
        )
        ordered = [thread_id for (thread_id,) in cursor.fetchall()]
    threshold = plan.TUNING.thread_scan_bytes
    print(f"thread scope, ordinary threads (scanned up to SearchTuning.thread_scan_bytes = {threshold:,})")
    words = tail_words()
    for percentile_label, fraction in (("median", 0.5), ("p90", 0.9), ("p99", 0.99)):
        thread = Thread.objects.select_related("owner").get(id=ordered[int(fraction * (len(ordered) - 1))])
        size = thread.generations.get(number=1).visible_chars
        print(f" {percentile_label} thread: {thread.messages.count()} messages, {size / 1e6:.2f} MB")
        for label, term in (("rare", RARE_TERM), ("common word", "error"), ("uncommon word", words["uncommon"])):
            figures = []
            for forced in (False, True):
                found = []

                def search(term=term, thread=thread, found=found):
                    found.append(search_memory(user=thread.owner, query=term, channel=thread.channel))

                # Forced: the index path, to the end (no budget to fall back to a scan).
                with tuned(thread_scan_bytes=0, scan_bytes_per_ms=1) if forced else contextlib.nullcontext():
                    samples = timed(search, runs)
                figures.append(f"{found[-1].matched_by} p50 {statistics.median(samples):6.1f} ms")
            hits = found[-1].literal_hits_total
            print(f"  {label:<14} ({hits} hits)  default: {figures[0]};  forced: {figures[1]}", flush=True)
    print()


def exhaustive_verdict(result, query: str, user) -> str:
    """ "complete" when ``result`` lists what a search reading every message would: the same hits, the same count.

    The exhaustive search is ``SearchTuning.path`` scan, which reads the
    global scope to the end with no time budget (seconds at a million messages).
    """
    from threadmem.features.search import search_memory

    with tuned(path="scan"):
        exhaustive = search_memory(user=user, query=query)
    same_hits = result.hits == exhaustive.hits
    if same_hits and result.literal_hits_total == exhaustive.literal_hits_total:
        return "complete"
    listed = sum(1 for hit in result.hits if hit in exhaustive.hits)
    return (
        f"INCOMPLETE: {result.literal_hits_total} hits where a scan finds {exhaustive.literal_hits_total}, "
        f"{listed} of its {len(exhaustive.hits)} listed"
    )


def thread_scope(runs: int, owner, stress) -> None:
    """The stress thread (search_memory beside the baselines), then ordinary threads of the store."""
    import re

    from threadmem.domain.scope import resolve_scope
    from threadmem.features.search import search_memory
    from threadmem.features.search.literal.literal_search import literal_search
    from threadmem.lib.terms import fold
    from threadmem.models import Message, ToolArgument

    def fetch_and_scan(term: str) -> int:
        needle = re.compile(re.escape(term), re.IGNORECASE)
        scope = Message.objects.searchable().filter(thread=stress)
        texts = list(scope.values_list("content", flat=True))
        texts += list(ToolArgument.objects.filter(message__in=scope).values_list("value", flat=True))
        return sum(1 for text in texts if needle.search(text))

    texts = list(Message.objects.searchable().filter(thread=stress).values_list("content", flat=True))
    folded = [fold(text) for text in texts]

    def scan_in_memory(term: str) -> int:
        needle = re.compile(re.escape(term), re.IGNORECASE)
        return sum(1 for text in texts if needle.search(text))

    def scan_folded(term: str) -> int:
        needle = fold(term)
        return sum(1 for text in folded if needle in text)

    print("thread scope (the stress thread)")
    stress_scope = resolve_scope(user=owner, channel=STRESS_CHANNEL)
    summary: dict[str, float] = {}
    for label, term in (("rare", RARE_TERM), ("common", STRESS_KEYWORD.lower()), ("absent", ABSENT_TERM)):
        result = search_memory(user=owner, query=term, channel=STRESS_CHANNEL)
        print(
            f" {label}: {term!r} -> {result.literal_hits_total} hits, {result.literal_hits_shown} shown, "
            f"{len(result.text):,} characters; the first call answered by: {result.matched_by}"
        )
        answered: list[str] = []

        def search(term=term, answered=answered):
            answered.append(search_memory(user=owner, query=term, channel=STRESS_CHANNEL).matched_by)

        whole = timed(search, runs)
        sql = timed(lambda term=term: literal_search(scope=stress_scope, terms=[term]), runs)
        fetch = timed(lambda term=term: fetch_and_scan(term), max(5, runs // 3))
        scan = timed(lambda term=term: scan_in_memory(term), runs)
        floor = timed(lambda term=term: scan_folded(term), runs)
        counts = Counter(answered[1:])  # the first call only warmed up
        row("search_memory", whole, "  (answered by: " + ", ".join(f"{how} {n}" for how, n in counts.items()) + ")")
        row("literal SQL", sql)
        row("baseline: fetch rows into Python and scan", fetch)
        row("in-memory scan (re.IGNORECASE)", scan)
        row("floor: in-memory scan of case-folded text", floor)
        summary[label] = statistics.median(whole)
        summary[f"{label}-fetch"] = statistics.median(fetch)
    print(
        f" search_memory vs fetch-and-scan: rare {summary['rare-fetch'] / summary['rare']:.1f}x, "
        f"common {summary['common-fetch'] / summary['common']:.1f}x, "
        f"absent {summary['absent-fetch'] / summary['absent']:.1f}x faster\n"
    )

    ordinary_threads(runs)


def measure(runs: int, *, global_only: bool = False) -> None:

    from django.contrib.auth import get_user_model
    from django.db import connection

    from threadmem.features.search import search_memory
    from threadmem.models import Thread

    User = get_user_model()
    owner = User.objects.get(username="bench-owner-0")  # owns the stress thread
    other_owner = User.objects.get(username="bench-owner-1")  # 100 threads, none isolated
    operator = User.objects.get(username="bench-operator")
    stress = Thread.objects.get(channel=STRESS_CHANNEL)
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*), sum(length(content)) FROM threadmem_message")
        messages, chars = cursor.fetchone()
        cursor.execute("SELECT count(*), sum(length(content)) FROM threadmem_message WHERE thread_id = %s", [stress.id])
        stress_messages, stress_chars = cursor.fetchone()
        cursor.execute("SELECT pg_size_pretty(pg_database_size(current_database()))")
        (size,) = cursor.fetchone()
    print(f"store: {messages:,} messages, {chars / 1e9:.2f} G characters, database {size}")
    print(f"stress thread: {stress_messages} messages, {stress_chars / 1e6:.1f} M characters; runs per figure: {runs}")
    print("load average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))
    print(machine_speed())
    print("search_memory = the whole tool call (scope, literal part, semantic part, merge, tool-call log row);")
    print("literal SQL = the statements of the literal part only (the match; the windows where it did not cut them).\n")

    if not global_only:
        thread_scope(runs, owner, stress)

    print("global scope (every thread that is not isolated; as an operator unless noted)")
    words = tail_words()
    queries = [
        ("rare", RARE_TERM, operator),
        ("common word", "error", operator),
        ("common phrase (3 terms)", "connection refused", operator),
        (f"medium word {words['medium']!r}", words["medium"], operator),
        (f"uncommon word {words['uncommon']!r}", words["uncommon"], operator),
        ("absent", ABSENT_TERM, operator),
        ("rare, as an owner (1% of threads)", RARE_TERM, other_owner),
        ("common word, as an owner (1% of threads)", "error", other_owner),
        (f"uncommon word, as an owner {words['uncommon']!r}", words["uncommon"], other_owner),
    ]
    from threadmem.features.search.database.capabilities import capabilities

    # The default configuration (the token index, migration 0022) and the same store with search not using it.
    configurations = {"default": True, "no token index": False} if capabilities().token_indexes else {"default": True}
    print(
        "configurations: " + ", ".join(configurations) + ("" if len(configurations) == 2 else " (no token index here)")
    )
    every: dict[str, list[float]] = {name: [] for name in configurations}
    for label, query, user in queries:
        for name, tokens in configurations.items():
            results = []

            def search(query=query, user=user, results=results):
                results.append(search_memory(user=user, query=query))

            with tuned(tokens=tokens):
                samples = timed(search, runs)
            every[name] += samples
            measured = results[1:]  # the first call only warmed up
            hits = measured[-1].text.split("\n")[1].rsplit("literal hits: ", 1)[1]
            answered = {
                how: sum(1 for result in measured if result.coverage == coverage)
                for coverage, how in (("all", "index"), ("recent", "newest"), ("none", "out of time"))
            }
            how = ", ".join(f"{how} {count}" for how, count in answered.items() if count)
            verdict = exhaustive_verdict(measured[-1], query, user)
            row(f"{label} [{name}]", samples, f"  ({hits}; answered by: {how}; {verdict})", p99=True)
    for name in configurations:
        row(f"all global queries above [{name}]", every[name], p99=True)
    print("\nload average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the bench database")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--global-only", action="store_true", help="only the global scope (docs/scaling.md's points)")
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="then the semantic part on the same store: HNSW latency and recall@10 (bench/semantic.py)",
    )
    parser.add_argument(
        "--ranked", action="store_true", help="only the ranked lane with described questions (bench/ranked_store.py)"
    )
    parser.add_argument("--ranked-threads", type=int, default=300, help="threads embedded for the global scope")
    parser.add_argument("--ranked-prepare-only", action="store_true", help="embed the subset, measure nothing")
    args = parser.parse_args()
    ensure_database(args.rebuild)
    django.setup()
    if not store_is_built():
        if not args.rebuild:
            ensure_database(True)
        build_store()
    else:
        # Migrations added since the store was built (indexes, settings) are part of what is measured.
        from django.core.management import call_command

        log("reusing the built store")
        call_command("migrate", verbosity=0)
        with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
            if not conn.execute("SELECT 1 FROM threadmem_generation WHERE visible_chars > 0 LIMIT 1").fetchone():
                log("generation sizes (a store built before they were kept)")
                conn.execute(VISIBLE_CHARS_SQL)
    if args.build_only:
        return
    if args.ranked or args.ranked_prepare_only:
        from bench import ranked_store

        ranked_store.prepare(args.ranked_threads)
        if not args.ranked_prepare_only:
            ranked_store.measure(args.runs)
        return
    measure(args.runs, global_only=args.global_only)
    if args.semantic:
        from bench import semantic

        semantic.prepare_and_measure(queries=100, rebuild_vectors=False)


if __name__ == "__main__":
    main()
