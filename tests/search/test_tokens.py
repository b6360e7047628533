"""The token index (migration 0014, threadmem/lib/tokens.py): a global search narrowed per term, never missing a hit."""

from __future__ import annotations

import random
import re
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.factories import append, make_thread
from tests.support.search import skip_without_search_extension
from tests.support.sessions import LONG, data_dir
from threadmem.imports.service import import_paths
from threadmem.lib.terms import query_terms
from threadmem.lib.tokens import TOKEN_CHARS, UNINDEXED_BYTES, UNINDEXED_TOKEN, field_tokens, token_query
from threadmem.migrations._token_versions import rebuild_token_indexes_then_update
from threadmem.models import Message, ToolArgument
from threadmem.search import search_memory
from threadmem.search.literal import dialects
from threadmem.search.literal.dialects import TOKENS_VERSION
from threadmem.search.literal.tokens import token_indexes_create, token_indexes_drop

on_postgresql = pytest.mark.skipif(connection.vendor != "postgresql", reason="the token index is PostgreSQL's")


@pytest.mark.parametrize(
    ("term", "query"),
    [
        # Exact lexemes alone when there are any: two whole runs in a row, a whole run in no pair.
        ("/srv/presamar/ru35.log", "'srv|presamar' & 'presamar|ru35'"),
        ("-abc-", "'abc'"),
        # Else the prefixes: the last run after a whole one, the first run before one (reversed).
        ("prebak-170.internal", "'~071|kaberp':* & '170|internal':*"),
        ("--Force-Push", "'force|push':*"),
        ("ticket-4711/", "'~1174|tekcit':*"),
        ("-abc- x", "'abc|x':*"),
        ("x-" + "A" * 40 + "-y", f"'~{'a' * TOKEN_CHARS}|x':* & '{'a' * TOKEN_CHARS}|y':*"),
        # Two open runs of four characters or more: the junction where they meet, the second's start first,
        # then six of the first's end, reversed; a prefix when the first is shorter (a field's run may be longer).
        ("connection refused", "'^refu|noitce'"),
        ("Connection: REFUSED", "'^refu|noitce'"),
        ("tion refused", "'^refu|noit':*"),
        # One run, or two open runs, one of them shorter: each may sit inside a longer run of a field.
        ("error", None),
        ("kalomi", None),
        ("con refused", None),
        ("settings.py", None),
        # Not ASCII: a Unicode case mapping could meet an ASCII letter.
        ("café-170.x", None),
    ],
)
def test_a_term_asks_for_what_its_pairs_and_whole_runs_need_of_a_field(term, query):
    assert token_query(term) == query


def test_field_tokens_are_runs_cut_to_the_limit_and_each_two_runs_in_a_row_both_ways():
    long = "x" + "y" * 40 + "z"
    runs = {"ab", "cd", "t", long[:TOKEN_CHARS]}
    pairs = {"ab|cd", "cd|t", f"t|{long[:TOKEN_CHARS]}", f"{long[:TOKEN_CHARS]}|ab"}
    reversed_pairs = {"~dc|ba", "~t|dc", f"~{long[::-1][:TOKEN_CHARS]}|t", f"~ba|{long[::-1][:TOKEN_CHARS]}"}
    assert field_tokens("Ab-CD été " + long.upper() + " ab") == runs | pairs | reversed_pairs
    assert field_tokens("") == set()
    # Two runs of four characters or more also meet in a junction: the second's first four, the first's last six
    # at most, reversed.
    assert field_tokens("reConnection REFUSEDly") == {
        "reconnection",
        "refusedly",
        "reconnection|refusedly",
        "~yldesufer|noitcennocer",
        "^refu|noitce",
    }
    assert "^refu|noit" in field_tokens("tion refused")
    distinct = " ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 8 + 1))
    assert field_tokens(distinct) == {UNINDEXED_TOKEN}
    # Just under: each eight-digit run gives itself (8 bytes), two pairs with the next (17 and 18) and a junction (12).
    assert UNINDEXED_TOKEN not in field_tokens(" ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 55 - 1)))


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_the_index_function_holds_the_tokens_lib_tokens_names():
    rng = random.Random(14)
    alphabet = "aZ09-_./ é\u212a\u0130\n\tXyz"
    texts = ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80))) for _ in range(400)]
    texts.append(" ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 8 + 1)))  # past the tsvector's room
    texts.append(" ".join(f"{n:08x}" for n in range(UNINDEXED_BYTES // 55 - 1)))  # just under it
    texts.append("reConnection REFUSEDly " + "Q" * 40 + " abcd efg hijk tion refused")  # junctions, a long run
    with connection.cursor() as cursor:
        for text in texts:
            cursor.execute("SELECT array_to_string(tsvector_to_array(threadmem_tokens(%s)), ' ')", [text])
            (tokens,) = cursor.fetchone()
            assert set(tokens.split()) == field_tokens(text), text[:80]


# Each term meets fields where it is a whole run, starts or ends or sits inside a longer run, in other
# cases, in tool arguments, and in a field too large to index: the token path must list what a scan lists.
TERMS = ("prebak-170.internal", "/srv/presamar/ru35.log", "--force-push", "ticket-4711/", "connection refused")
QUERIES = (*TERMS, "kalomi", "zz-prebak-170.internal", "PREBAK-170.INTERNAL connection refused")


@pytest.fixture
def seeded(owner, other):
    rng = random.Random(19)
    decoys = (
        "xprebak-170.internals",
        "prebak-1700.internal",
        "/srv/presamar/ru35.logs",
        "ticket-47110",
        "refusedx",
        # The junction of "connection refused" ('^refu|noitce') without the phrase, and 1.2's ('^tion|refu').
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


def listing(user, query):
    result = search_memory(user=user, query=query)
    assert result.coverage == "all", query
    return result.hits, result.literal_hits_total


INDEXES = ["tokens", "trigrams"] if connection.vendor == "postgresql" else ["trigrams"]


@pytest.mark.django_db
@pytest.mark.parametrize("index", INDEXES)
@pytest.mark.parametrize("persona", ["operator", "owner", "other"])
def test_a_global_search_lists_what_a_scan_of_every_message_lists(request, settings, seeded, persona, index):
    if index == "tokens":
        request.getfixturevalue("token_indexes")
    assert dialects.dialect().has_tokens is (index == "tokens")
    user = request.getfixturevalue(persona)
    settings.THREADMEM_SEARCH_THREAD_SCAN_BYTES = 0  # the owner's scope through the indexes too
    settings.THREADMEM_SEARCH_INDEX_BUDGET_MS = 60_000  # exactness, not time: the index path must answer
    indexed = {query: listing(user, query) for query in QUERIES}
    settings.THREADMEM_SEARCH_PATH = "scan"
    for query in QUERIES:
        hits, total = listing(user, query)
        assert indexed[query] == (hits, total), query
        assert total > 0 or query.startswith("zz"), query


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_each_term_of_a_global_search_takes_the_token_index_when_its_runs_allow(operator, settings):
    settings.THREADMEM_SEARCH_INDEX_BUDGET_MS = 60_000
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
    settings.THREADMEM_SEARCH_TOKENS = False
    with CaptureQueriesContext(connection) as queries:
        assert search_memory(user=operator, query=query).hits == result.hits
    assert not any("threadmem_tokens" in q["sql"] for q in queries.captured_queries)


@pytest.mark.django_db
def test_the_token_index_command_creates_reports_and_drops_it():
    out = StringIO()
    call_command("token_index", "status", stdout=out)
    available = connection.vendor == "postgresql" and dialects.has_search_extension()
    assert out.getvalue().strip() == (
        "token index: off, available"
        if available
        else f"token index: off, unavailable (needs threadmem_search {TOKENS_VERSION})"
    )
    if not available:
        with pytest.raises(CommandError, match=f"needs PostgreSQL with threadmem_search {re.escape(TOKENS_VERSION)}"):
            call_command("token_index", "create", stdout=StringIO())
        assert not dialects.dialect().has_tokens
        return
    call_command("token_index", "create", stdout=out)
    assert "token index: on (message_content_tokens, toolarg_value_tokens)" in out.getvalue()
    assert dialects.dialect().has_tokens
    call_command("token_index", "drop", stdout=out)
    assert out.getvalue().strip().endswith("token index: off, available")
    assert not dialects.dialect().has_tokens


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_on_a_real_session_the_token_index_lists_what_a_scan_lists(operator, settings):
    """Paths, hosts and ids from a shared Claude Code session: the token path against a scan of every message."""
    path = data_dir() / f"{LONG}.jsonl"
    import_paths(paths=[path], fmt="claude-code", owner=operator)
    stored = [*Message.objects.values_list("content", flat=True), *ToolArgument.objects.values_list("value", flat=True)]
    text = "\n".join(stored)
    found = sorted(set(re.findall(r"(?:/[\w.-]+){2,}|\b[\w]+(?:[-.][\w]+){2,}\b", text)))
    terms = [term for term in found if token_query(term) is not None and 6 <= len(term) <= 80]
    terms = random.Random(11).sample(terms, min(40, len(terms)))
    assert len(terms) >= 30
    # Two words of the session's own prose, each open at its end: the junction ('^refu|noitce') narrows them.
    phrases = sorted(set(re.findall(r"\b[A-Za-z]{4,} [A-Za-z]{4,}\b", text)))
    terms += random.Random(12).sample(phrases, 20)
    assert all(token_query(term).startswith("'^") for term in terms[-20:])
    settings.THREADMEM_SEARCH_INDEX_BUDGET_MS = 60_000
    indexed = {term: listing(operator, term) for term in terms}
    settings.THREADMEM_SEARCH_PATH = "scan"
    assert {term: listing(operator, term) for term in terms} == indexed
    assert sum(1 for hits, total in indexed.values() if total) >= len(terms) // 2


@on_postgresql
@pytest.mark.django_db
def test_migrations_leave_the_extension_at_the_version_whose_tokens_have_junctions():
    skip_without_search_extension()
    with connection.cursor() as cursor:
        cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'threadmem_search'")
        assert cursor.fetchone() == (TOKENS_VERSION,)
        cursor.execute("SELECT tsvector_to_array(threadmem_tokens('Connection refused'))")
        assert "^refu|noitce" in cursor.fetchone()[0]


@on_postgresql
@pytest.mark.usefixtures("token_indexes")
def test_a_token_index_is_left_unused_while_the_extension_predates_junctions():
    """Migrations 0015 and 0017 move the version last: until then an index built before holds other junctions.

    A database migrated before the server had the version is moved by ``token_index create``, rebuilding first.
    """

    def status() -> str:
        out = StringIO()
        call_command("token_index", "status", stdout=out)
        return out.getvalue().strip()

    with connection.cursor() as cursor:
        cursor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.2'")
    connection.threadmem_search_extension = None
    assert not dialects.dialect().has_tokens
    unused = "token index: unused (message_content_tokens, toolarg_value_tokens)"
    assert status() == f"{unused}: make pg-extension, then token_index create"
    with CaptureQueriesContext(connection) as queries:
        call_command("token_index", "create", stdout=StringIO())
    statements = [q["sql"] for q in queries.captured_queries]
    rebuilt = [sql for sql in statements if sql.startswith("REINDEX INDEX")]
    assert rebuilt == ["REINDEX INDEX message_content_tokens", "REINDEX INDEX toolarg_value_tokens"]
    assert statements.index(rebuilt[-1]) < statements.index(
        f"ALTER EXTENSION threadmem_search UPDATE TO '{TOKENS_VERSION}'"
    )
    assert dialects.dialect().has_tokens
    assert status() == "token index: on (message_content_tokens, toolarg_value_tokens)"


@on_postgresql
@pytest.mark.django_db(transaction=True)
def test_a_version_step_rebuilds_the_token_index_only_for_the_servers_newest_version():
    """Migrations 0015 and 0017: from 1.1, 0015 only moves the version (its rebuild would give 1.3's lexemes)."""
    skip_without_search_extension()
    token_indexes_create()
    try:
        with connection.cursor() as cursor:
            cursor.execute("ALTER EXTENSION threadmem_search UPDATE TO '1.1'")
        steps = [(("1.0", "1.1"), "1.2", 0), (("1.0", "1.1", "1.2"), TOKENS_VERSION, 2), (("1.2",), TOKENS_VERSION, 0)]
        for before, version, rebuilt in steps:
            with CaptureQueriesContext(connection) as queries, connection.schema_editor(atomic=False) as editor:
                rebuild_token_indexes_then_update(editor, before=before, version=version)
            assert sum("REINDEX INDEX CONCURRENTLY" in q["sql"] for q in queries.captured_queries) == rebuilt
            with connection.cursor() as cursor:
                cursor.execute("SELECT extversion FROM pg_extension WHERE extname = 'threadmem_search'")
                assert cursor.fetchone() == (version,)
        connection.threadmem_search_extension = None
        assert dialects.dialect().has_tokens
    finally:
        token_indexes_drop()
        with connection.cursor() as cursor:
            cursor.execute(f"ALTER EXTENSION threadmem_search UPDATE TO '{TOKENS_VERSION}'")
        connection.threadmem_search_extension = None
