"""The token index (migration 0022, search/database/): a global search narrowed per term, never missing a hit."""

from __future__ import annotations

import importlib
import random
import re
import threading
import time
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.database import other_session
from tests.support.factories import append, fork_at_middle, make_thread
from tests.support.search import skip_without_search_extension
from tests.support.sessions import LONG, data_dir
from threadmem.domain import services
from threadmem.features.imports.import_once import import_paths
from threadmem.features.search import search_memory
from threadmem.features.search.database import capabilities, term_tokens
from threadmem.features.search.database.capabilities import TOKENS_VERSION
from threadmem.features.search.database.term_tokens import UNINDEXED_BYTES, UNINDEXED_TOKEN, field_tokens, token_query
from threadmem.features.search.database.token_index import token_indexes_create, token_indexes_drop
from threadmem.features.search.literal import plan
from threadmem.lib.terms import query_terms
from threadmem.models import Message, ToolArgument

on_postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="the token index is PostgreSQL's")


@pytest.mark.parametrize(
    ("term", "query"),
    [
        # Exact lexemes alone when there are any: the links of runs whose meeting ends the term shows in full
        # (six of the first's end, four of the second's start), a whole run in no link.
        ("/srv/presamar/ru35.log", "'vrs/pres' & 'ramase/ru35'"),
        ("\\srv\\presamar\\ru35.log", "'vrs\\\\pres' & 'ramase\\\\ru35'"),
        ("prebak-170.internal", "'kaberp-170' & '071.inte'"),
        ("--Force-Push", "'ecrof-push'"),
        ("ticket-4711/", "'tekcit-4711'"),
        ("-abc-", "'abc'"),
        ("connection refused", "'noitce refu'"),
        ("Connection: REFUSED", "'noitce|refu'"),  # two characters between: any other separator
        # Else the prefixes: a short last run may start a longer one of the field.
        ("-abc- x", "'cba|x':*"),
        ("settings.py", "'sgnitt.py':*"),
        ("x-" + "A" * 40 + "-y", "'aaaaaa-y':*"),
        ("a=b=cdef", "'b|cdef'"),
        # One run, or a first run too short to give the link's end: each may sit inside a longer run of a field.
        ("error", None),
        ("kalomi", None),
        ("tion refused", None),
        ("ru35.log", None),
        # Not ASCII: a Unicode case mapping could meet an ASCII letter.
        ("café-170.x", None),
    ],
)
def test_a_term_asks_for_what_its_links_and_whole_runs_need_of_a_field(term, query):
    assert token_query(term) == query


def test_field_tokens_are_runs_cut_to_the_limit_and_the_link_of_each_two_runs_in_a_row():
    long = "x" + "y" * 40 + "z"
    runs = {"ab", "cd", "t", long[: term_tokens.TOKEN_CHARS]}
    links = {"ba-cd", "dc|t", "t|xyyy", "zyyyyy ab"}
    assert field_tokens("Ab-CD été " + long.upper() + " ab") == runs | links
    assert field_tokens("") == set()
    assert field_tokens("reConnection REFUSEDly") == {"reconnection", "refusedly", "noitce refu"}
    assert field_tokens("function refused") == {"function", "refused", "noitcn refu"}
    # The one character between two runs, when it is a usual separator; "|" for any other, or for several.
    assert field_tokens("C:\\x\\srv/a.b_c:d|e") == {"c", "x", "srv", "a", "b", "d", "e"} | {
        "c|x",
        "x\\srv",
        "vrs/a",
        "a.b",
        "b_c",
        "c:d",
        "d|e",
    }
    distinct = " ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 8 + 1))
    assert field_tokens(distinct) == {UNINDEXED_TOKEN}
    # Just under: each eight-digit run gives itself (8 bytes) and a link with the next (11).
    assert UNINDEXED_TOKEN not in field_tokens(" ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 19 - 1)))


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_the_index_function_holds_the_tokens_lib_tokens_names():
    rng = random.Random(14)
    alphabet = "aZ09-_./\\:|= é\u212a\u0130\n\tXyz"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(400)]
    texts.append(" ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 8 + 1)))  # past the tsvector's room
    texts.append(" ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 19 - 1)))  # just under it
    texts.append("reConnection REFUSEDly " + "Q" * 40 + " abcd efg hijk tion refused")  # links, a long run
    with connection.cursor() as cursor:
        for text in texts:
            cursor.execute("SELECT tsvector_to_array(threadmem_tokens(%s))", [text])
            (tokens,) = cursor.fetchone()
            assert set(tokens) == field_tokens(text), text[:80]


# Each term meets fields where it is a whole run, starts or ends or sits inside a longer run, in other
# cases, in tool arguments, and in a field too large to index: the token path must list what a scan lists.
TERMS = ("prebak-170.internal", "/srv/presamar/ru35.log", "--force-push", "ticket-4711/", "connection refused")
QUERIES = (*TERMS, "kalomi", "zz-prebak-170.internal", "PREBAK-170.INTERNAL connection refused")


@pytest.fixture
def seeded(owner, other, admin):
    rng = random.Random(19)
    decoys = (
        "xprebak-170.internals",
        "prebak-1700.internal",
        "/srv/presamar/ru35.logs",
        "ticket-47110",
        "refusedx",
        # The link of "connection refused" ('noitce refu') without the phrase, and one that differs at six.
        "connection  refused",
        "reconnection refusal",
        "connection-refused",
        "function refused",
    )
    fillers = ("error", "kalomi", "prekalomi", "connection", "refused", "srv", "log", "170", "internal")
    for index in range(4):
        thread = make_thread(owner if index % 2 else other, channel=f"tokens-{index}")
        for _ in range(30):
            words = [rng.choice(fillers) for _ in range(rng.randint(3, 12))]
            for _ in range(rng.randint(0, 2)):
                term = rng.choice(TERMS + decoys)
                spelled = term.upper() if rng.random() < 0.3 else term
                glue = rng.choice(["", "", "x", "9", "/", "-", "é"])
                words.insert(rng.randrange(len(words) + 1), glue + spelled + rng.choice(["", "", "s", "/", "0"]))
            text = " ".join(words)
            if rng.random() < 0.3:
                append(
                    thread,
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": f"c{rng.random()}", "name": "shell", "arguments": {"command": text}}],
                    },
                )
            else:
                append(thread, {"role": rng.choice(["user", "tool", "assistant"]), "content": text})
    big = make_thread(owner, channel="tokens-big")
    unindexed = " ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 8 + 1))
    append(big, {"role": "tool", "content": f"{unindexed} prebak-170.internal --force-push"})
    # Newest, what no persona's global search may list (an isolated thread, an isolated message; returned), and a
    # fork whose own messages are listed beside its parent's.
    hidden = make_thread(owner, channel="tokens-isolated")
    append(hidden, {"role": "tool", "content": " ".join(TERMS)})
    services.thread_set_isolated(thread=hidden, isolated=True, actor=admin)
    (isolated,) = append(big, {"role": "tool", "content": "connection refused at prebak-170.internal, isolated"})
    services.message_set_isolated(message=isolated, isolated=True, actor=admin)
    _, fork = fork_at_middle(
        big, "tokens-fork", "ticket-4711/ before", "/srv/presamar/ru35.log at", "--force-push after"
    )
    append(fork, {"role": "tool", "content": "in the fork: prebak-170.internal connection refused"})
    return {message.id for message in Message.objects.filter(thread=hidden)} | {isolated.id}


def listing(user, query):
    result = search_memory(user=user, query=query)
    assert result.coverage == "all", query
    return result.hits, result.literal_hits_total


INDEXES = ["tokens", "trigrams"] if connection.vendor == "postgresql" else ["trigrams"]


@pytest.mark.django_db
@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("persona", ["operator", "owner", "other", "admin"])
def test_a_global_search_lists_what_a_scan_of_every_message_lists(request, seeded, persona, index, tune):
    request.getfixturevalue("token_indexes" if index == "tokens" else "without_token_indexes")
    assert plan.dialect().has_tokens is (index == "tokens")
    user = request.getfixturevalue(persona)
    tune(thread_scan_bytes=0)  # the owner's scope through the indexes too
    tune(index_budget_ms=60_000)  # exactness, not time: the index path must answer
    indexed = {query: listing(user, query) for query in QUERIES}
    tune(path="scan")
    for query in QUERIES:
        hits, total = listing(user, query)
        assert indexed[query] == (hits, total), query
        assert total > 0 or query.startswith("zz"), query
        assert not {hit.message_id for hit in hits} & seeded, query


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_each_term_of_a_global_search_takes_the_token_index_when_its_runs_allow(operator, tune):
    tune(index_budget_ms=60_000)
    append(make_thread(operator, channel="plan"), {"role": "tool", "content": "prebak-170.internal kalomi"})
    # tokens ('170|internal':*), trigrams, tokens ('srv|x' & ...), and /srv/x.log's \srv\x.log (terms.py)
    query = "prebak-170.internal kalomi /srv/x.log"
    with CaptureQueriesContext(connection) as queries:
        result = search_memory(user=operator, query=query)
    assert result.literal_hits_total == 1  # one field, found by two terms
    (match,) = [q["sql"] for q in queries.captured_queries if "UNION ALL" in q["sql"]]
    eligible = sum(token_query(term) is not None for term in query_terms(query))
    assert eligible == 4
    # One content and one argument branch per eligible term, each asking the token index.
    assert match.count("threadmem_tokens(m.content) @@") == eligible
    assert match.count("threadmem_tokens(a.value) @@") == eligible
    tune(tokens=False)
    with CaptureQueriesContext(connection) as queries:
        assert search_memory(user=operator, query=query).hits == result.hits
    assert not any("threadmem_tokens" in q["sql"] for q in queries.captured_queries)


def status() -> str:
    out = StringIO()
    call_command("token_index", "status", stdout=out)
    return out.getvalue().strip()


ON = "token index: on (message_content_tokens, toolarg_value_tokens)"


@pytest.mark.django_db
def test_the_token_index_is_on_by_default_and_the_command_drops_reports_and_creates_it():
    available = connection.vendor == "postgresql" and plan.has_search_extension()
    if not available:
        assert status().startswith("token index: off, unavailable (needs ")
        with pytest.raises(CommandError, match="needs PostgreSQL with threadmem_search"):
            call_command("token_index", "create", stdout=StringIO())
        assert not plan.dialect().has_tokens
        return
    assert status() == ON
    assert plan.dialect().has_tokens
    call_command("token_index", "drop", stdout=StringIO())
    assert status() == "token index: off, available (token_index create builds it)"
    assert not plan.dialect().has_tokens
    out = StringIO()
    call_command("token_index", "create", stdout=out)
    assert out.getvalue().strip() == ON
    assert plan.dialect().has_tokens


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_on_a_real_session_the_token_index_lists_what_a_scan_lists(operator, tune):
    """Paths, hosts and ids from a shared Claude Code session: the token path against a scan of every message."""
    path = data_dir() / f"{LONG}.jsonl"
    import_paths(paths=[path], fmt="claude-code", owner=operator)
    stored = [*Message.objects.values_list("content", flat=True), *ToolArgument.objects.values_list("value", flat=True)]
    text = "\n".join(stored)
    found = sorted(set(re.findall(r"(?:/[\w.-]+){2,}|\b[\w]+(?:[-.][\w]+){2,}\b", text)))
    terms = [term for term in found if token_query(term) is not None and 6 <= len(term) <= 80]
    terms = random.Random(11).sample(terms, min(40, len(terms)))
    assert len(terms) >= 30
    # Two words of the session's own prose, each open at its end: their link ('noitce refu') narrows them.
    phrases = sorted(set(re.findall(r"\b[A-Za-z]{6,} [A-Za-z]{4,}\b", text)))
    terms += random.Random(12).sample(phrases, 20)
    assert all(re.fullmatch(r"'[a-z]{6} [a-z]{4}'", token_query(term)) for term in terms[-20:])
    tune(index_budget_ms=60_000)
    indexed = {term: listing(operator, term) for term in terms}
    tune(path="scan")
    assert {term: listing(operator, term) for term in terms} == indexed
    assert sum(1 for hits, total in indexed.values() if total) >= len(terms) // 2


@on_postgresql
@pytest.mark.django_db
def test_migrations_leave_the_extension_at_the_version_whose_tokens_have_links_and_the_index_on():
    skip_without_search_extension()
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'threadmem_search'")
        assert cursor.fetchone() == (TOKENS_VERSION,)
        cursor.execute("SELECT tsvector_to_array(threadmem_tokens('Connection refused'))")
        assert "noitce refu" in cursor.fetchone()[0]
    assert status() == ON


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_a_token_index_is_left_unused_while_the_extension_predates_links():
    """At 1.3 an index holds 1.3's lexemes: unused until rebuilt, and only then does the version move."""
    with connection.cursor() as cursor:
        cursor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.3'")
    capabilities.forget_probe()
    assert not plan.dialect().has_tokens
    unused = "token index: unused (message_content_tokens, toolarg_value_tokens)"
    assert status() == f"{unused}: make pg-extension, then token_index create"
    with CaptureQueriesContext(connection) as queries:
        call_command("token_index", "create", stdout=StringIO())
    statements = [q["sql"] for q in queries.captured_queries]
    rebuilt = [sql for sql in statements if sql.startswith("REINDEX INDEX")]
    assert rebuilt == ["REINDEX INDEX message_content_tokens", "REINDEX INDEX toolarg_value_tokens"]
    moved = f"ALTER EXTENSION threadmem_search UPDATE TO '{TOKENS_VERSION}'"
    assert statements.index(rebuilt[-1]) < statements.index(moved)
    assert plan.dialect().has_tokens
    assert status() == ON


MIGRATION = importlib.import_module("threadmem.migrations.0022_token_index_default")
BUILDS = [
    f"CREATE INDEX CONCURRENTLY IF NOT EXISTS {name} ON {table} USING gin (threadmem_tokens({column}))"
    for name, table, column in capabilities.TOKEN_INDEXES
]


def migrate_0022() -> list[str]:
    with CaptureQueriesContext(connection) as queries, connection.schema_editor(atomic=False) as editor:
        MIGRATION.forward(None, editor)
    capabilities.forget_probe()
    return [q["sql"] for q in queries.captured_queries if q["sql"].startswith(("REINDEX", "ALTER", "CREATE", "DROP"))]


def found_by_the_token_index(user, term: str) -> int:
    with CaptureQueriesContext(connection) as queries:
        total = search_memory(user=user, query=term).literal_hits_total
    assert any("threadmem_tokens(m.content) @@" in q["sql"] for q in queries.captured_queries), term
    return total


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_migration_0022_moves_a_store_with_the_old_index_and_builds_one_where_there_is_none(operator):
    skip_without_search_extension()
    append(make_thread(operator, channel="moved"), {"role": "tool", "content": "deployed to prebak-170.internal"})
    try:
        with connection.cursor() as cursor:
            cursor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.3'")
        capabilities.forget_probe()
        assert not plan.dialect().has_tokens
        assert migrate_0022() == [
            "REINDEX INDEX CONCURRENTLY message_content_tokens",
            "REINDEX INDEX CONCURRENTLY toolarg_value_tokens",
            f"ALTER EXTENSION threadmem_search UPDATE TO '{TOKENS_VERSION}'",
            *BUILDS,  # IF NOT EXISTS: nothing to build
        ]
        assert status() == ON
        assert found_by_the_token_index(operator, "prebak-170.internal") == 1
        token_indexes_drop()
        assert status() == "token index: off, available (token_index create builds it)"
        assert migrate_0022() == BUILDS
        assert status() == ON
        assert found_by_the_token_index(operator, "prebak-170.internal") == 1
        assert migrate_0022() == BUILDS  # again: nothing to do
    finally:
        token_indexes_create()


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_appends_racing_a_concurrent_build_lose_nothing_and_status_shows_the_build(operator):
    """The build waits for a writer's open transaction (status shows that phase), appends go on all along."""
    skip_without_search_extension()
    thread = make_thread(operator, channel="race")
    terms = [f"race-{n:04d}.internal" for n in range(100)]
    for term in terms:
        append(thread, {"role": "tool", "content": f"host {term} up"})
    token_indexes_drop()
    writer = other_session()
    writer.execute("LOCK TABLE threadmem_message IN ROW EXCLUSIVE MODE")  # a writer's open transaction
    failures: list[BaseException] = []

    def build() -> None:
        try:
            token_indexes_create(concurrently=True)
        except BaseException as exc:
            failures.append(exc)
        finally:
            connection.close()

    builder = threading.Thread(target=build)
    builder.start()
    try:
        seen = ""
        for _ in range(500):
            seen = status()
            if "waiting for writers" in seen:
                break
            time.sleep(0.01)
        assert seen.startswith("token index: building (threadmem_message: waiting for writers before build"), seen
        assert "search answers without it meanwhile" in seen
        assert not plan.dialect().has_tokens
        assert search_memory(user=operator, query=terms[7]).literal_hits_total == 1  # answered meanwhile
        while len(terms) < 130 or (builder.is_alive() and len(terms) < 2000):
            term = f"race-{len(terms):04d}.internal"
            append(thread, {"role": "tool", "content": f"host {term} up"})
            terms.append(term)
            if len(terms) == 120:
                writer.commit()  # the build goes on while appends do
    finally:
        writer.close()
        builder.join(60)
    assert not failures
    assert status() == ON
    assert plan.dialect().has_tokens
    assert all(found_by_the_token_index(operator, term) == 1 for term in terms)
