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
its time budget (threadmem/search/literal/plan.py).
The load average is printed before and after: on two shared cores every
figure moves with whatever else runs.

The store takes ~15 minutes to build on 2 busy cores, most of it the trigram
index over 2.4 G characters; later runs reuse it.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import random
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BENCH_DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/threadmem_bench_search")
os.environ["DATABASE_URL"] = BENCH_DATABASE_URL
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "threadmem.settings")
# The semantic part stays "not configured": the bench measures the literal path.
os.environ.pop("THREADMEM_EMBEDDING_MODEL", None)

import django  # noqa: E402
import psycopg  # noqa: E402

STORE_MESSAGES = int(os.environ.get("BENCH_MESSAGES", "1000000"))
STORE_THREADS = int(os.environ.get("BENCH_THREADS", "10000"))
STORE_USERS = 100
STRESS_CHANNEL = "bench:stress"
STRESS_RESULTS = 120
STRESS_RESULT_CHARS = 60_000
STRESS_KEYWORD = "needle-Keyword-7"
RARE_TERM = "zebrafish-ticket-4711"
ABSENT_TERM = "quokka-absent-93"
# Where the rare term lives in the store: a handful of messages in all.
RARE_STORE_COUNT = 5
POOL_CHARS = int(os.environ.get("BENCH_POOL_CHARS", "48000000"))
SEED = 20240611

COMMON_WORDS = (  # noqa: SIM905
    "the to and of a in is it that for on with as was be this are at by not from or have an but "
    "error warning info debug request response server client deploy build test commit branch merge "
    "install package module function return value config path file directory process thread memory "
    "cache index query table column insert update delete select where order group limit offset join "
    "user admin token session cookie header body status code json yaml docker kubectl nginx postgres "
    "redis celery django python import from class def self none true false failed success started "
    "stopped timeout retry connection refused permission denied not found exit line traceback most "
    "recent call last"
).split()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- text ---------------------------------------------------------------------


def make_vocabulary(rng: random.Random) -> tuple[list[str], list[float]]:
    """Common words (Zipf head) plus a long tail of identifiers, paths and hosts."""
    syllables = "ka lo mi ne ru sa te vo zi qua pre tor den fix lin mar sel gro bak chi".split()  # noqa: SIM905
    tail: set[str] = set()
    while len(tail) < 40_000:
        kind = rng.random()
        word = "".join(rng.choice(syllables) for _ in range(rng.randint(2, 4)))
        if kind < 0.15:
            word = f"/srv/{word}/{rng.choice(syllables)}{rng.randint(0, 99)}.log"
        elif kind < 0.25:
            word = f"{word}-{rng.randint(1, 999)}.internal"
        elif kind < 0.35:
            word = f"{rng.getrandbits(32):08x}"
        elif kind < 0.45:
            word = word.capitalize()
        tail.add(word)
    vocabulary = COMMON_WORDS + sorted(tail)
    weights = [1.0 / (rank + 8) ** 1.05 for rank in range(len(vocabulary))]
    total = 0.0
    cumulative = []
    for weight in weights:
        total += weight
        cumulative.append(total)
    return vocabulary, cumulative


def make_pool(rng: random.Random, chars: int) -> str:
    vocabulary, cumulative = make_vocabulary(rng)
    parts: list[str] = []
    size = 0
    while size < chars:
        words = rng.choices(vocabulary, cum_weights=cumulative, k=100_000)
        # Lines of 8-16 words, like log output and prose.
        chunk = []
        for start in range(0, len(words), 12):
            chunk.append(" ".join(words[start : start + 12]))
        text = "\n".join(chunk) + "\n"
        parts.append(text)
        size += len(text)
    return "".join(parts)[:chars]


class TextSource:
    def __init__(self, rng: random.Random, pool: str) -> None:
        self.rng = rng
        self.pool = pool

    def take(self, size: int) -> str:
        start = self.rng.randrange(0, len(self.pool) - size - 1)
        return self.pool[start : start + size]


def store_size(rng: random.Random) -> int:
    """Long-tailed: 95 % log-normal around 500 characters, 5 % of 10,000-60,000."""
    if rng.random() < 0.05:
        return rng.randint(10_000, 60_000)
    return max(20, min(9_000, int(rng.lognormvariate(6.2, 0.8))))


# --- database ---------------------------------------------------------------


def admin_dsn() -> str:
    base, _, _name = BENCH_DATABASE_URL.rpartition("/")
    return f"{base}/postgres"


def database_name() -> str:
    return BENCH_DATABASE_URL.rpartition("/")[2].split("?")[0]


def ensure_database(rebuild: bool) -> None:
    with psycopg.connect(admin_dsn(), autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [database_name()]).fetchone()
        if exists and rebuild:
            log(f"dropping {database_name()}")
            conn.execute(f'DROP DATABASE "{database_name()}" WITH (FORCE)')
            exists = None
        if not exists:
            log(f"creating {database_name()}")
            conn.execute(f'CREATE DATABASE "{database_name()}"')


def store_is_built() -> bool:
    with psycopg.connect(BENCH_DATABASE_URL) as conn:
        (tables,) = conn.execute("SELECT to_regclass('threadmem_message') IS NOT NULL").fetchone()
        if not tables:
            return False
        if not conn.execute("SELECT 1 FROM threadmem_thread WHERE channel = %s", [STRESS_CHANNEL]).fetchone():
            return False
        (count,) = conn.execute("SELECT count(*) FROM threadmem_message").fetchone()
        return count >= STORE_MESSAGES


# Dropped for the load and rebuilt after it as the migrations made them
# (0002 with pg_trgm's operator class, 0007 with threadmem_search's where the server has it).
TRIGRAM_INDEXES = ("message_content_trgm", "toolarg_value_trgm")


# The running totals appends keep (models.Generation.visible_chars): thread
# search reads them to choose between a scan and the trigram indexes.
VISIBLE_CHARS_SQL = """
UPDATE threadmem_generation g SET visible_chars = s.total
FROM (
    SELECT thread_id, generation, sum(octet_length(content) + octet_length(tool_calls::text)) AS total
    FROM threadmem_message WHERE model_visible GROUP BY thread_id, generation
) s
WHERE s.thread_id = g.thread_id AND s.generation = g.number
"""


def build_store() -> None:
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    connection.close()
    User = get_user_model()
    rng = random.Random(SEED)
    started = time.perf_counter()
    log(f"generating a {POOL_CHARS / 1e6:.0f}M-character text pool")
    source = TextSource(rng, make_pool(rng, POOL_CHARS))

    # Unusable passwords: hashing 100 real ones would take a minute of PBKDF2.
    owners = User.objects.bulk_create(
        [User(username=f"bench-owner-{i}", password="!") for i in range(STORE_USERS)]
        + [User(username="bench-operator", password="!", is_staff=True)]
    )[:STORE_USERS]
    connection.close()

    with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        index_definitions = [
            conn.execute("SELECT pg_get_indexdef(to_regclass(%s))", [name]).fetchone()[0] for name in TRIGRAM_INDEXES
        ]
        for name in TRIGRAM_INDEXES:
            conn.execute(f"DROP INDEX IF EXISTS {name}")
        now = "2024-06-01 00:00:00+00"
        # Threads: 10,000 in the store plus the stress thread (id STORE_THREADS + 1).
        log("COPY threads and generations")
        stress_thread_id = STORE_THREADS + 1
        with conn.cursor().copy(
            "COPY threadmem_thread (id, channel, title, owner_id, isolated, current_generation, next_seq, "
            "created_at, last_activity_at) FROM STDIN"
        ) as copy:
            for thread_id in range(1, STORE_THREADS + 1):
                owner = owners[thread_id % STORE_USERS]
                isolated = thread_id % 100 == 0
                copy.write_row((thread_id, f"bench:{thread_id}", "", owner.id, isolated, 1, 1, now, now))
            copy.write_row((stress_thread_id, STRESS_CHANNEL, "stress", owners[0].id, False, 1, 1, now, now))
        # visible_chars has no database default (Django keeps defaults in Python);
        # the totals are set once the messages are in (VISIBLE_CHARS_SQL).
        with conn.cursor().copy(
            "COPY threadmem_generation (thread_id, number, state, started_at, visible_chars) FROM STDIN"
        ) as copy:
            for thread_id in range(1, stress_thread_id + 1):
                copy.write_row((thread_id, 1, "open", now, 0))

        log(f"COPY {STORE_MESSAGES:,} messages")
        next_seq = [1] * (stress_thread_id + 1)
        rare_at = set(rng.sample(range(1, STORE_MESSAGES + 1), RARE_STORE_COUNT))
        message_id = 0
        arguments: list[tuple] = []
        chars = 0
        columns = (
            "id, thread_id, generation, seq, role, kind, content, tool_calls, tool_call_id, session_id, "
            "model_visible, isolated, superseded_by_id, created_at"
        )
        with conn.cursor().copy(f"COPY threadmem_message ({columns}) FROM STDIN") as copy:
            for _ in range(STORE_MESSAGES):
                message_id += 1
                thread_id = rng.randint(1, STORE_THREADS)
                seq = next_seq[thread_id]
                next_seq[thread_id] += 1
                role = ("user", "assistant", "tool")[seq % 3]
                kind = "machine_event" if rng.random() < 0.02 else "message"
                content = source.take(store_size(rng))
                if message_id in rare_at:
                    middle = len(content) // 2
                    content = f"{content[:middle]} {RARE_TERM} {content[middle:]}"
                tool_calls = "[]"
                if role == "assistant" and rng.random() < 0.4:
                    command = source.take(rng.randint(20, 300)).replace("\n", " ")
                    path = f"/srv/app/{rng.randint(0, 5000)}/main.py"
                    call_id = f"call_{message_id}"
                    tool_calls = json.dumps(
                        [{"id": call_id, "name": "shell", "arguments": {"command": command, "cwd": path}}]
                    )
                    arguments.append((message_id, thread_id, 0, call_id, "shell", "command", command))
                    arguments.append((message_id, thread_id, 0, call_id, "shell", "cwd", path))
                chars += len(content)
                copy.write_row(
                    (
                        message_id,
                        thread_id,
                        1,
                        seq,
                        role,
                        kind,
                        content,
                        tool_calls,
                        "",
                        f"s{thread_id}",
                        rng.random() >= 0.01,
                        rng.random() < 0.002,
                        None,
                        now,
                    )
                )
                if message_id % 100_000 == 0:
                    log(f"  {message_id:,} messages, {chars / 1e9:.2f} G characters")
            # The stress thread, last: the newest messages in the store.
            seq = 0
            for index in range(STRESS_RESULTS):
                for role in ("user", "assistant", "tool"):
                    message_id += 1
                    seq += 1
                    if role == "tool":
                        half = STRESS_RESULT_CHARS // 2
                        content = f"{source.take(half)} {STRESS_KEYWORD} {source.take(half)}"
                    else:
                        content = source.take(rng.randint(100, 600))
                        if index == 60 and role == "user":
                            content = f"{content} {RARE_TERM}"
                    stored = (message_id, stress_thread_id, 1, seq, role, "message", content, "[]", "", "s-stress")
                    copy.write_row((*stored, True, False, None, now))
            next_seq[stress_thread_id] = seq + 1
        log(f"COPY {len(arguments):,} tool-call argument leaves")
        with conn.cursor().copy(
            "COPY threadmem_toolargument (message_id, thread_id, call_index, tool_call_id, tool_name, path, value) "
            "FROM STDIN"
        ) as copy:
            for row in arguments:
                copy.write_row(row)
        log("next_seq, identity sequences")
        conn.execute("CREATE TEMP TABLE bench_next_seq (thread_id bigint, next_seq bigint)")
        with conn.cursor().copy("COPY bench_next_seq (thread_id, next_seq) FROM STDIN") as copy:
            for thread_id in range(1, stress_thread_id + 1):
                copy.write_row((thread_id, next_seq[thread_id]))
        conn.execute(
            "UPDATE threadmem_thread t SET next_seq = b.next_seq FROM bench_next_seq b WHERE b.thread_id = t.id"
        )
        log("generation sizes")
        conn.execute(VISIBLE_CHARS_SQL)
        for table in ("threadmem_thread", "threadmem_message", "threadmem_generation", "threadmem_toolargument"):
            conn.execute(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) FROM {table}))")
        log("building the trigram indexes")
        conn.execute("SET maintenance_work_mem = '1GB'")
        for statement in index_definitions:
            conn.execute(statement)
        log("VACUUM ANALYZE")
        conn.execute("VACUUM ANALYZE")
    log(f"store built in {time.perf_counter() - started:.0f} s")


# --- measurement -------------------------------------------------------------


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def timed(function, runs: int) -> list[float]:
    # What the bench holds (the store's vocabulary, baselines' rows) is not a
    # server's garbage: a full collection that walked it cost one sample of a
    # global search 110-130 ms. Frozen, collections walk only new objects.
    gc.collect()
    gc.freeze()
    function()  # warm: caches, compiled regexes, connection
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        function()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def tail_words() -> dict[str, str]:
    """Words of the long tail at known Zipf ranks (the vocabulary is rebuilt from the seed)."""
    vocabulary, _ = make_vocabulary(random.Random(SEED))
    return {"medium": vocabulary[len(COMMON_WORDS) + 5_000], "uncommon": vocabulary[len(COMMON_WORDS) + 30_000]}


def row(label: str, samples: list[float], extra: str = "", p99: bool = False) -> None:
    tail = f"  p99 {percentile(samples, 0.99):8.1f}" if p99 else ""
    print(
        f"  {label:<44} p50 {statistics.median(samples):8.1f}  p95 {percentile(samples, 0.95):8.1f}{tail}  ms{extra}",
        flush=True,
    )


def ordinary_threads(runs: int) -> None:
    """Thread search in threads of the store's median, 90th and 99th percentile size, both match statements.

    Below THREADMEM_SEARCH_THREAD_SCAN_BYTES search scans the thread's rows;
    "index" forces the trigram indexes for comparison.
    """
    from django.conf import settings
    from django.db import connection

    from threadmem.models import Thread
    from threadmem.search import search_memory

    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT g.thread_id FROM threadmem_generation g JOIN threadmem_thread t ON t.id = g.thread_id "
            "WHERE NOT t.isolated AND t.channel <> %s ORDER BY g.visible_chars, g.thread_id",
            [STRESS_CHANNEL],
        )
        ordered = [thread_id for (thread_id,) in cursor.fetchall()]
    threshold = settings.THREADMEM_SEARCH_THREAD_SCAN_BYTES
    scan_rate = settings.THREADMEM_SEARCH_SCAN_BYTES_PER_MS
    print(f"thread scope, ordinary threads (scanned up to THREADMEM_SEARCH_THREAD_SCAN_BYTES = {threshold:,})")
    words = tail_words()
    for percentile_label, fraction in (("median", 0.5), ("p90", 0.9), ("p99", 0.99)):
        thread = Thread.objects.select_related("owner").get(id=ordered[int(fraction * (len(ordered) - 1))])
        size = thread.generations.get(number=1).visible_chars
        print(f" {percentile_label} thread: {thread.messages.count()} messages, {size / 1e6:.2f} MB")
        for label, term in (("rare", RARE_TERM), ("common word", "error"), ("uncommon word", words["uncommon"])):
            figures = []
            for forced in (None, 0):
                if forced is not None:
                    # The index path, to the end (no budget to fall back to a scan).
                    settings.THREADMEM_SEARCH_THREAD_SCAN_BYTES = forced
                    settings.THREADMEM_SEARCH_SCAN_BYTES_PER_MS = 1
                found = []

                def search(term=term, thread=thread, found=found):
                    found.append(search_memory(user=thread.owner, query=term, channel=thread.channel))

                samples = timed(search, runs)
                settings.THREADMEM_SEARCH_THREAD_SCAN_BYTES = threshold
                settings.THREADMEM_SEARCH_SCAN_BYTES_PER_MS = scan_rate
                figures.append(f"{found[-1].matched_by} p50 {statistics.median(samples):6.1f} ms")
            hits = found[-1].literal_hits_total
            print(f"  {label:<14} ({hits} hits)  default: {figures[0]};  forced: {figures[1]}", flush=True)
    print()


def measure(runs: int) -> None:
    import re

    from django.contrib.auth import get_user_model
    from django.db import connection

    from threadmem.lib.terms import fold
    from threadmem.models import SEARCHABLE, Message, Thread, ToolArgument
    from threadmem.search import search_memory
    from threadmem.search.literal import literal_search
    from threadmem.search.scope import resolve_scope

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
    print("search_memory = the whole tool call (scope, literal part, semantic part, merge, tool-call log row);")
    print("literal SQL = the statements of the literal part only (the match; the windows where it did not cut them).\n")

    def fetch_and_scan(term: str) -> int:
        needle = re.compile(re.escape(term), re.IGNORECASE)
        scope = Message.objects.filter(SEARCHABLE, thread=stress)
        texts = list(scope.values_list("content", flat=True))
        texts += list(ToolArgument.objects.filter(message__in=scope).values_list("value", flat=True))
        return sum(1 for text in texts if needle.search(text))

    texts = list(Message.objects.filter(SEARCHABLE, thread=stress).values_list("content", flat=True))
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
    every: list[float] = []
    for label, query, user in queries:
        results = []

        def search(query=query, user=user, results=results):
            results.append(search_memory(user=user, query=query))

        samples = timed(search, runs)
        every += samples
        measured = results[1:]  # the first call only warmed up
        hits = measured[-1].text.split("\n")[1].rsplit("literal hits: ", 1)[1]
        answered = {
            name: sum(1 for result in measured if result.coverage == coverage)
            for coverage, name in (("all", "index"), ("recent", "newest"), ("none", "out of time"))
        }
        how = ", ".join(f"{name} {count}" for name, count in answered.items() if count)
        row(label, samples, f"  ({hits}; answered by: {how})", p99=True)
    row("all global queries above", every, p99=True)
    print("\nload average (1, 5, 15 min): {:.2f} {:.2f} {:.2f}".format(*os.getloadavg()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rebuild", action="store_true", help="drop and rebuild the bench database")
    parser.add_argument("--build-only", action="store_true")
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument(
        "--semantic",
        action="store_true",
        help="then the semantic part on the same store: HNSW latency and recall@10 (bench/semantic.py)",
    )
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
    measure(args.runs)
    if args.semantic:
        from bench import semantic

        semantic.prepare_and_measure(queries=100, rebuild_vectors=False)


if __name__ == "__main__":
    main()
