"""The store bench/search.py and bench/semantic.py measure: 1,000,000 messages and the stress thread.

Importing this module points DATABASE_URL at the store's database,
BENCH_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_search),
before Django is set up. ``build_store`` builds it once with COPY; later runs
reuse it (bench/search.py --rebuild starts over).
"""

from __future__ import annotations

import gc
import json
import os
import random
import time

import psycopg

BENCH_DATABASE_URL = os.environ.get("BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/threadmem_bench_search")
os.environ["DATABASE_URL"] = BENCH_DATABASE_URL
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# The semantic part stays "not configured": bench/search.py measures the literal
# path, bench/semantic.py calls the retriever with vectors of its own.
os.environ.pop("THREADMEM_EMBEDDING_MODEL", None)
# Nor the ranked lane (contract §12): the store is built with COPY and has no pieces to rank.
os.environ["THREADMEM_STATIC_EMBEDDINGS"] = "false"

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


def store_messages(rng: random.Random, source: TextSource, *, rare_at: set[int], next_seq: list[int], arguments: list):
    """The store's messages in id order, the stress thread (id STORE_THREADS + 1) last and newest.

    Each is (id, thread_id, seq, role, kind, content, tool_calls, session_id,
    model_visible, isolated); the tool calls' argument leaves are appended to
    ``arguments`` and each thread's next seq kept in ``next_seq``. One
    generator for every database the bench builds on, so the stores hold the
    same rows.
    """
    message_id = 0
    chars = 0
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
            tool_calls = json.dumps([{"id": call_id, "name": "shell", "arguments": {"command": command, "cwd": path}}])
            arguments.append((message_id, thread_id, 0, call_id, "shell", "command", command))
            arguments.append((message_id, thread_id, 0, call_id, "shell", "cwd", path))
        chars += len(content)
        visible = rng.random() >= 0.01
        isolated = rng.random() < 0.002
        yield message_id, thread_id, seq, role, kind, content, tool_calls, f"s{thread_id}", visible, isolated
        if message_id % 100_000 == 0:
            log(f"  {message_id:,} messages, {chars / 1e9:.2f} G characters")
    stress_thread_id = STORE_THREADS + 1
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
            yield message_id, stress_thread_id, seq, role, "message", content, "[]", "s-stress", True, False
    next_seq[stress_thread_id] = seq + 1


def bench_users() -> list:
    """The store's owners, bench-owner-0 to -99, and the staff user bench-operator; the owners, in order."""
    from django.contrib.auth import get_user_model

    User = get_user_model()
    # Unusable passwords: hashing 100 real ones would take a minute of PBKDF2.
    return User.objects.bulk_create(
        [User(username=f"bench-owner-{i}", password="!") for i in range(STORE_USERS)]
        + [User(username="bench-operator", password="!", is_staff=True)]
    )[:STORE_USERS]


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
        # Written by build_store's last step: a build stopped halfway (no search indexes) is built again.
        return conn.execute("SELECT to_regclass('bench_store_built') IS NOT NULL").fetchone()[0]


# Dropped for the load and rebuilt after it as they were (0002 with pg_trgm's
# operator class, 0007 with threadmem_search's where the server has it; the
# opt-in token indexes where the store has them: manage.py token_index create).
SEARCH_INDEXES = ("message_content_trgm", "toolarg_value_trgm", "message_content_tokens", "toolarg_value_tokens")


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
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    connection.close()
    rng = random.Random(SEED)
    started = time.perf_counter()
    log(f"generating a {POOL_CHARS / 1e6:.0f}M-character text pool")
    source = TextSource(rng, make_pool(rng, POOL_CHARS))

    owners = bench_users()
    connection.close()

    with psycopg.connect(BENCH_DATABASE_URL, autocommit=True) as conn:
        conn.execute("SET synchronous_commit = off")
        index_definitions = [
            (name, definition)
            for name in SEARCH_INDEXES
            if (definition := conn.execute("SELECT pg_get_indexdef(to_regclass(%s))", [name]).fetchone()[0])
        ]
        for name, _definition in index_definitions:
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
        arguments: list[tuple] = []
        columns = (
            "id, thread_id, generation, seq, role, kind, content, tool_calls, tool_call_id, session_id, "
            "model_visible, isolated, superseded_by_id, created_at"
        )
        with conn.cursor().copy(f"COPY threadmem_message ({columns}) FROM STDIN") as copy:
            for (
                message_id,
                thread_id,
                seq,
                role,
                kind,
                content,
                tool_calls,
                session,
                visible,
                isolated,
            ) in store_messages(rng, source, rare_at=rare_at, next_seq=next_seq, arguments=arguments):
                row = (message_id, thread_id, 1, seq, role, kind, content, tool_calls, "", session, visible, isolated)
                copy.write_row((*row, None, now))
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
        log("building the search indexes")
        conn.execute("SET maintenance_work_mem = '1GB'")
        for name, statement in index_definitions:
            built = time.perf_counter()
            conn.execute(statement)
            (size,) = conn.execute("SELECT pg_size_pretty(pg_relation_size(to_regclass(%s)))", [name]).fetchone()
            log(f"  {name}: {time.perf_counter() - built:.0f} s, {size}")
        log("VACUUM ANALYZE")
        conn.execute("VACUUM ANALYZE")
        conn.execute("CREATE TABLE bench_store_built ()")  # the marker store_is_built looks for; it holds nothing
    log(f"store built in {time.perf_counter() - started:.0f} s")


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


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]
