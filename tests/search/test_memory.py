"""search_memory end to end on the real database (run on PostgreSQL and SQLite)."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.db import connection

from tests.support.database import other_session
from tests.support.factories import append, fork_at_middle, make_thread, open_generation
from tests.support.search import literal_part_of
from threadmem.domain import services
from threadmem.errors import InvalidInput, NotFound
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import (
    GLOBAL_RECENT_BYTES,
    HEADER,
    SEARCH_COUNT_LIMIT,
    THREAD_SEARCH_MAX_CHARS,
)
from threadmem.models import Message, ToolCall

# Thread searches run with each match statement (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("thread_match")

COMMAND = "scp ~/.ssh/id_ed25519 deploy@web-prod-7:/srv/keys"
WINDOWS_PATH = "C:\\Users\\ops\\deploy\\notes.txt"


@pytest.fixture
def compacted_twice(thread, admin):
    """Generation 1 holds the tool call; two compactions later the thread is in generation 3.

    Every excluded kind of message mentions the same resources, with a marker
    of its own so a leak shows in the text.
    """
    call, _result = append(
        thread,
        {
            "role": "assistant",
            "session_id": "sess-1",
            "tool_calls": [
                {"id": "c1", "name": "shell", "arguments": {"command": COMMAND, "files": [{"path": WINDOWS_PATH}]}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "session_id": "sess-1", "content": "copied 1 file"},
    )
    append(
        thread,
        {"role": "system", "kind": "machine_event", "content": f"LEAK-MACHINE status: {COMMAND} {WINDOWS_PATH}"},
        {"role": "tool", "model_visible": False, "content": f"LEAK-INVISIBLE {COMMAND} {WINDOWS_PATH}"},
    )
    (old,) = append(thread, {"role": "user", "content": f"LEAK-SUPERSEDED {COMMAND} {WINDOWS_PATH}"})
    append(thread, {"role": "user", "content": "please forget that", "supersedes": old.id})
    open_generation(thread, f"LEAK-SUMMARY-1 section 10: web-prod-7 via {COMMAND}; {WINDOWS_PATH}")
    append(thread, {"role": "user", "content": "generation two talks about other things"})
    open_generation(thread, f"LEAK-SUMMARY-2 web-prod-7 ~/.ssh/id_ed25519 {WINDOWS_PATH}")
    append(thread, {"role": "user", "content": "generation three: where did the key go?"})
    thread.refresh_from_db()
    assert thread.current_generation == 3
    return call


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("web-prod-7", "tool_args.command"),
        ("~/.ssh/id_ed25519", "tool_args.command"),
        (WINDOWS_PATH, "tool_args.files[0].path"),
        (f'"{COMMAND}"', "tool_args.command"),
    ],
)
def test_it_finds_the_generation_1_tool_call_across_generations_and_fields(
    owner, thread, compacted_twice, query, field
):
    result = search_memory(user=owner, query=query, channel=thread.channel)
    result_id = thread.messages.get(tool_call_id="c1").id
    first = result.hits[0]
    assert (first.message_id, first.generation, first.field, first.session_id) == (
        compacted_twice.id,
        1,
        field,
        "sess-1",
    )
    assert (
        f"--- messageId={compacted_twice.id} sessionId=sess-1 generation=1 role=assistant field={field} "
        f"tool=shell result={result_id} ("
    ) in result.text
    assert "LEAK" not in result.text
    assert all(hit.message_id == compacted_twice.id for hit in result.hits)


@pytest.mark.django_db
def test_it_lays_the_result_out_exactly(owner, thread, compacted_twice):
    result = search_memory(user=owner, query="~/.ssh/id_ed25519", channel=thread.channel)
    result_id = thread.messages.get(tool_call_id="c1").id
    # The call's other argument in brief, cut at 40 characters (its JSON spacing is the database's).
    assert result.hits[0].arguments.startswith('files=[{"path":') and result.hits[0].arguments.endswith("…")
    assert result.text == (
        f"{HEADER}\n"
        f'channel: {thread.channel} · query: "~/.ssh/id_ed25519" · literal hits: 1 (1 shown)\n'
        f"--- messageId={compacted_twice.id} sessionId=sess-1 generation=1 role=assistant field=tool_args.command "
        f"tool=shell result={result_id} ({len(thread.messages.get(id=result_id).content)} chars) "
        f"args: {result.hits[0].arguments}\n"
        f"{COMMAND}\n"
        "\n"
        "## Other memory results\n"
        "Semantic search is not configured (set THREADMEM_EMBEDDING_MODEL to rank messages by meaning)."
    )
    assert (result.literal_hits_total, result.literal_hits_shown, result.truncated) == (1, 1, False)


@pytest.mark.django_db
def test_it_hides_an_isolated_thread_from_global_search_but_not_from_its_channel(
    owner, operator, admin, thread, compacted_twice
):
    assert search_memory(user=owner, query="web-prod-7").literal_hits_total == 1
    services.thread_set_isolated(thread=thread, isolated=True, actor=admin)
    for user in (owner, operator):
        result = search_memory(user=user, query="web-prod-7")
        assert result.literal_hits_total == 0
        assert "messageId=" not in result.text
    assert search_memory(user=owner, query="web-prod-7", channel=thread.channel).hits[0].message_id == (
        compacted_twice.id
    )


@pytest.mark.django_db
def test_it_drops_a_message_an_admin_isolated_from_every_scope(owner, admin, thread, compacted_twice):
    services.message_set_isolated(message=compacted_twice, isolated=True, actor=admin)
    assert search_memory(user=owner, query="web-prod-7", channel=thread.channel).literal_hits_total == 0
    assert search_memory(user=owner, query="web-prod-7").literal_hits_total == 0


@pytest.mark.django_db
def test_it_searches_only_the_callers_threads_globally_and_every_thread_for_operators(owner, other, operator):
    mine = make_thread(owner, "mine")
    theirs = make_thread(other, "theirs")
    append(mine, {"role": "user", "content": "the orchid-42 ticket"})
    append(theirs, {"role": "user", "content": "their orchid-42 ticket"})
    assert {hit.message_id for hit in search_memory(user=owner, query="orchid-42").hits} == {mine.messages.get().id}
    assert len(search_memory(user=operator, query="orchid-42").hits) == 2
    with pytest.raises(NotFound):
        search_memory(user=owner, query="orchid-42", channel="theirs")
    assert search_memory(user=operator, query="orchid-42", channel="theirs").literal_hits_total == 1


@pytest.mark.django_db
def test_it_searches_a_forks_ancestry_up_to_the_fork_point(owner, admin, thread):
    (before, at, _after), fork = fork_at_middle(
        thread, "fork", "lyra before the fork", "lyra at the fork", "lyra after the fork"
    )
    (own,) = append(fork, {"role": "user", "content": "lyra in the fork"})
    found = {hit.message_id for hit in search_memory(user=owner, query="lyra", channel="fork").hits}
    assert found == {before.id, at.id, own.id}
    services.thread_set_isolated(thread=thread, isolated=True, actor=admin)
    found = {hit.message_id for hit in search_memory(user=owner, query="lyra", channel="fork").hits}
    assert found == {own.id}


@pytest.mark.django_db
def test_it_lists_whole_query_hits_before_word_hits_and_newest_first(owner, thread):
    older_restart, phrase, nginx, newer_restart = append(
        thread,
        {"role": "user", "content": "restart alone"},
        {"role": "user", "content": "please restart nginx now"},
        {"role": "user", "content": "nginx alone"},
        {"role": "user", "content": "restart again"},
    )
    result = search_memory(user=owner, query="restart nginx", channel=thread.channel)
    # The whole query, then each word in query order, newest first; the
    # phrase message's word hits fall inside its window and count once.
    assert [hit.message_id for hit in result.hits] == [phrase.id, newer_restart.id, older_restart.id, nginx.id]
    assert result.literal_hits_total == 4


@pytest.mark.django_db
def test_it_counts_the_true_number_of_hits_not_shown(owner, thread):
    services.messages_append(
        thread=thread,
        messages=services.messages_parse(
            [{"role": "tool", "content": "a" * 3000 + f" beacon-{i} " + "b" * 3000} for i in range(40)]
        ),
        run_hooks=False,
    )
    result = search_memory(user=owner, query="beacon", channel=thread.channel)
    assert result.literal_hits_total == 40
    assert (
        f"{40 - result.literal_hits_shown} more hits not shown; narrow the query, "
        f'or call again with cursor="{result.next_cursor}" for the next ones.'
    ) in result.text
    assert result.literal_hits_shown == len(result.hits) < 40


@pytest.mark.django_db
def test_it_refuses_bad_queries_and_logs_them(owner, thread):
    for query, problem in [
        ("", "empty"),
        ("   ", "empty"),
        ("x" * 1001, "limit is 1000"),
        ("a\x00b", "NUL"),
        ('""', "nothing to search"),
        (42, "string"),
    ]:
        with pytest.raises(InvalidInput, match=problem):
            search_memory(user=owner, query=query, channel=thread.channel)
    assert ToolCall.objects.filter(status_code=400, tool="search_memory").count() == 6
    with pytest.raises(NotFound):
        search_memory(user=owner, query="anything", channel="no-such-thread")
    assert ToolCall.objects.filter(status_code=404).count() == 1


@pytest.mark.django_db
def test_it_refuses_a_global_query_without_three_letters_or_digits_in_a_row(owner, thread):
    append(thread, {"role": "user", "content": "go to C# now"})
    with pytest.raises(InvalidInput, match="3 letters or digits"):
        search_memory(user=owner, query="C#")
    assert search_memory(user=owner, query="C#", channel=thread.channel).literal_hits_total == 1


@pytest.mark.django_db
def test_it_treats_star_as_the_global_scope(owner, thread):
    append(thread, {"role": "user", "content": "nebula-9 is up"})
    result = search_memory(user=owner, query="nebula-9", channel="*")
    assert result.literal_hits_total == 1
    assert '\nchannel: * · query: "nebula-9"' in result.text


@pytest.mark.django_db
def test_it_logs_every_search_with_its_sizes(owner, thread):
    append(thread, {"role": "user", "content": "comet-3 landed"})
    result = search_memory(user=owner, query="comet-3", channel=thread.channel, surface="agent")
    call = ToolCall.objects.get()
    assert (call.tool, call.surface, call.thread_id, call.caller_id) == ("search_memory", "agent", thread.id, owner.id)
    assert call.arguments == {"query": "comet-3", "channel": thread.channel}
    assert (call.hits_total, call.hits_shown, call.chars_returned, call.truncated) == (1, 1, len(result.text), False)
    assert call.latency_ms > 0
    assert call.status_code == 200


@pytest.mark.django_db
def test_it_keeps_every_result_within_12000_characters(owner, thread):
    services.messages_append(
        thread=thread,
        messages=services.messages_parse([{"role": "tool", "content": f"quartz {i} " * 300} for i in range(200)]),
        run_hooks=False,
    )
    result = search_memory(user=owner, query="quartz " + "q" * 900, channel=thread.channel)
    assert len(result.text) <= THREAD_SEARCH_MAX_CHARS
    assert len(literal_part_of(result.text)) <= 8000


@pytest.mark.django_db
def test_the_command_prints_the_exact_tool_text(owner, thread):
    append(thread, {"role": "user", "content": "meteor-5 seen"})
    out = io.StringIO()
    call_command("search_memory", "meteor-5", channel=thread.channel, user="owner", stdout=out)
    expected = search_memory(user=owner, query="meteor-5", channel=thread.channel).text
    assert out.getvalue() == expected + "\n"
    assert ToolCall.objects.filter(surface="cli").count() == 1


@pytest.mark.django_db
def test_it_shows_the_role_and_session_of_each_hit(owner, thread):
    (message,) = append(thread, {"role": "user", "content": "pulsar-8", "session_id": ""})
    result = search_memory(user=owner, query="pulsar-8", channel=thread.channel)
    assert f"--- messageId={message.id} sessionId=- generation=1 role=user field=content\npulsar-8\n" in result.text
    assert Message.objects.count() == 1


@pytest.mark.django_db
def test_it_stops_counting_a_common_term_at_the_bound_in_the_global_scope(owner, thread):
    count = SEARCH_COUNT_LIMIT + 5
    services.messages_append(
        thread=thread,
        messages=services.messages_parse([{"role": "user", "content": f"quasar {i}"} for i in range(count)]),
        run_hooks=False,
    )
    result = search_memory(user=owner, query="quasar")
    shown = result.literal_hits_shown
    assert result.total_is_lower_bound
    assert result.literal_hits_total == SEARCH_COUNT_LIMIT
    assert f"literal hits: more than {SEARCH_COUNT_LIMIT} ({shown} shown)" in result.text
    advice = (
        "narrow the query to continue."
        if result.next_cursor is None
        else f'narrow the query, or call again with cursor="{result.next_cursor}" for the next ones.'
    )
    assert f"\nmore than {SEARCH_COUNT_LIMIT - shown} more hits not shown; {advice}" in result.text
    # The thread's own scope counts them all.
    assert search_memory(user=owner, query="quasar", channel=thread.channel).literal_hits_total == count


@pytest.fixture
def broad_store(thread):
    """Every message has the trigrams of "zircon-5" (zircon ... 5), so the index narrows
    nothing; only the oldest and the newest hold the term itself, and the oldest lies
    beyond the newest GLOBAL_RECENT_BYTES of content, three times as much text away.

    Finding the oldest means testing all of it: milliseconds, past a 1 ms budget,
    for ~* and threadmem_search alike (the "z" filler puts the term's first letter
    at every byte, the slowest text for both)."""
    count = 3 * GLOBAL_RECENT_BYTES // 3000 + 10
    filler = [{"role": "tool", "content": "zircon and 5 " + "z" * 3000} for _ in range(count)]
    filler[0]["content"] += " zircon-5 oldest"
    filler[-1]["content"] += " zircon-5 newest"
    for start in range(0, len(filler), 1000):
        services.messages_append(
            thread=thread, messages=services.messages_parse(filler[start : start + 1000]), run_hooks=False
        )
    return Message.objects.order_by("-id").first()


postgres_only = pytest.mark.skipif(
    connection.vendor != "postgresql", reason="the time budgets guard the trigram index path"
)


@pytest.mark.django_db
@postgres_only
def test_a_global_search_the_index_cannot_narrow_in_time_searches_the_newest_messages(owner, thread, broad_store, tune):
    tune(thread_scan_bytes=0)  # the owner's store is not read whole: the index path
    tune(index_budget_ms=1)
    tune(recent_budget_ms=60_000)  # no accident on a busy machine
    tune(budget_scale_max=1)  # the clock's 1 ms, however busy the machine
    result = search_memory(user=owner, query="zircon-5")
    assert (result.stopped_early, result.coverage) == (True, "recent")
    assert [hit.message_id for hit in result.hits] == [broad_store.id]
    assert "literal hits: at least 1 (1 shown)" in result.text
    assert literal_part_of(result.text).endswith(
        "\nThe global search covered only the newest messages (about 1.5 MB of text) and the whole query there, not "
        "each word: its words are too common for the index to narrow in time. Narrow the query (a rarer word, an "
        "exact identifier) or pass channel to search one thread."
    )
    # The thread's own scope has no budget: it finds both.
    assert search_memory(user=owner, query="zircon-5", channel=thread.channel).literal_hits_total == 2


@pytest.mark.django_db(transaction=True)
@postgres_only
def test_a_global_search_that_runs_out_of_time_says_so_instead_of_running_on(owner, broad_store, tune):
    tune(thread_scan_bytes=0)  # the owner's store is not read whole: the index path
    tune(index_budget_ms=1)
    tune(recent_budget_ms=1)
    tune(budget_scale_max=1)
    # Another session holds the messages table: both attempts wait until their budgets run out.
    with other_session() as other:
        other.execute("LOCK TABLE threadmem_message IN ACCESS EXCLUSIVE MODE")
        result = search_memory(user=owner, query="zircon-5")
    assert (result.coverage, result.hits, result.literal_hits_total) == ("none", [], 0)
    assert literal_part_of(result.text) == (
        "The global search could not finish in time: the query's words are too common for the index to narrow, "
        "even in the newest messages. Narrow the query (a rarer word, an exact identifier) or pass channel to "
        "search one thread."
    )
