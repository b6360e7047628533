"""The ranked lane without a channel: every thread the caller may read, its pieces kept per thread
(search/ranked/spread.py), and each hit's thread named so that the model can search it alone.

Each test warms what the lane keeps first (a search), then changes the store
the way another process would (nothing here tells the kept structures), and
searches again: what the scope may show is read on every search.
"""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.factories import append, make_thread
from tests.support.semantic import embedded, ranked_ids, semantic_part
from threadmem.domain import services
from threadmem.domain.scope import resolve_scope
from threadmem.features.embeddings import static
from threadmem.features.imports.generations import message_grow_imported
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import WORDS_BY_CURSOR
from threadmem.features.search.ranked import lexicon, ranked_results, spread, thread_legend, vectors
from threadmem.features.tools.requests import SearchMemoryRequest
from threadmem.models import EmbeddingProgress, Message

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "how did we fix the flaky zebrafish pipeline?"
FIX = "Fixed the flaky zebrafish pipeline: the runner cache was stale, cleared it and pinned the image."


def lane_ids(user, query: str) -> list[int]:
    """The lane's own ranking, messages the literal part would list included."""
    text = ranked_results(scope=resolve_scope(user=user, channel=None), query=query, terms=[query])
    return [entry.message_id for entry in getattr(text, "entries", [])]


@pytest.fixture
def sessions(owner, static_model):
    """Three sessions of the owner, the fix in the second."""
    first = make_thread(owner, "claude-code:one", title="orders schema")
    second = make_thread(owner, "claude-code:two", title="ci week")
    third = make_thread(owner, "claude-code:three")
    append(first, {"role": "user", "content": "what did we decide about the orders schema?"})
    (prompt, fix) = append(
        second,
        {"role": "user", "content": "the zebrafish pipeline fails one run in five"},
        {"role": "assistant", "content": FIX},
    )
    append(third, {"role": "user", "content": "rename the billing module"})
    embedded(first, second, third)
    return first, second, third, prompt, fix


def test_a_question_without_a_channel_finds_the_session_and_names_it(owner, sessions):
    _, second, _, prompt, fix = sessions

    text = search_memory(user=owner, query=QUESTION).text
    part = semantic_part(text)

    assert ranked_ids(owner, QUESTION)[0] == fix.id
    assert f"channel={second.channel}" in part
    legend = part[part.index(thread_legend.HEAD) :]
    assert f'channel="{second.channel}" "ci week" first prompt: "{prompt.content}"' in legend
    headers = [line for line in part[: part.index(thread_legend.HEAD)].splitlines() if line.startswith("--- ")]
    shown = {line.split()[-2].removeprefix("channel=") for line in headers}
    named = [line.split('"')[1] for line in legend.splitlines()[1:]]
    assert sorted(named) == sorted(shown)  # the threads of the entries shown, each once
    # The words of a described question are offered by cursor, not matched one by one in every thread.
    assert WORDS_BY_CURSOR.split(";")[0] in text


def test_the_words_cursor_lists_the_words_literal_hits(owner, sessions):
    first = search_memory(user=owner, query=QUESTION)
    assert first.literal_hits_total == 0 and first.next_cursor

    page = search_memory(user=owner, query=QUESTION, cursor=first.next_cursor)

    assert page.literal_hits_shown > 0
    assert {hit.message_id for hit in page.hits} >= {sessions[4].id}


def test_a_query_whose_whole_text_matches_lists_its_word_hits_as_before(owner, sessions):
    result = search_memory(user=owner, query="zebrafish pipeline")

    assert WORDS_BY_CURSOR.split(";")[0] not in result.text
    assert result.literal_hits_total >= 2


def test_hidden_messages_and_threads_never_reach_the_answer_once_kept(owner, admin, sessions):
    _, second, _, _, fix = sessions
    assert fix.id in ranked_ids(owner, QUESTION)  # kept now: the pieces, the keyword index, the vectors

    services.message_set_isolated(message=fix, isolated=True, actor=admin)
    assert fix.id not in ranked_ids(owner, QUESTION)
    services.message_set_isolated(message=fix, isolated=False, actor=admin)
    assert fix.id in ranked_ids(owner, QUESTION)

    Message.objects.filter(pk=fix.pk).update(model_visible=False)
    assert fix.id not in ranked_ids(owner, QUESTION)
    Message.objects.filter(pk=fix.pk).update(model_visible=True)

    services.thread_set_isolated(thread=second, isolated=True, actor=admin)
    assert not set(ranked_ids(owner, QUESTION)) & set(second.messages.values_list("id", flat=True))
    assert fix.id not in ranked_ids(admin, QUESTION)  # an operator's global scope leaves isolated threads out too


def test_another_owners_threads_never_appear_and_an_operator_sees_both(owner, other, operator, sessions):
    theirs = make_thread(other, "claude-code:theirs")
    (their_fix,) = append(theirs, {"role": "assistant", "content": FIX})
    embedded(theirs)
    mine = ranked_ids(owner, QUESTION)
    assert their_fix.id not in mine
    assert sessions[4].id not in ranked_ids(other, QUESTION)
    assert their_fix.id in ranked_ids(other, QUESTION)

    assert {their_fix.id, sessions[4].id} <= set(ranked_ids(operator, QUESTION))
    assert their_fix.id not in ranked_ids(owner, QUESTION)  # the operator's kept scope is not the owner's


def test_appended_and_grown_messages_are_ranked_after_the_scope_was_kept(owner, sessions):
    first, *_ = sessions
    assert ranked_ids(owner, "quokka migration") == []  # kept, no match
    before = EmbeddingProgress.objects.get(thread=first, model=static.STATIC_MODEL).changes

    (added,) = append(first, {"role": "assistant", "content": "the quokka migration ran at noon", "source_id": "q1"})
    embedded(first)
    assert EmbeddingProgress.objects.get(thread=first, model=static.STATIC_MODEL).changes == before + 1
    assert lane_ids(owner, "quokka migration")[0] == added.id

    grown = services.message_parse(
        {
            "role": "assistant",
            "content": "the quokka migration ran at noon, then the wombat backfill",
            "source_id": "q1",
        }
    )
    message_grow_imported(thread=first, message_id=added.id, message=grown)
    assert EmbeddingProgress.objects.get(thread=first, model=static.STATIC_MODEL).changes == before + 2
    embedded(first)
    assert lane_ids(owner, "wombat backfill")[0] == added.id


def test_a_scope_of_more_pieces_than_are_held_is_ranked_by_the_database(owner, sessions, monkeypatch):
    monkeypatch.setattr(spread, "GLOBAL_MAX_PIECES", 2)
    scope = resolve_scope(user=owner, channel=None)

    assert spread.global_pieces(scope=scope, model=static.STATIC_MODEL) is None
    assert ranked_ids(owner, QUESTION)[0] == sessions[4].id


def test_vectors_past_the_byte_cap_are_ranked_by_the_database_and_never_held(owner, sessions, monkeypatch):
    vectors.clear()
    monkeypatch.setattr(vectors, "CACHE_MAX_BYTES", 1)  # held: the keyword index; the vectors: never
    fix = sessions[4]

    assert ranked_ids(owner, QUESTION)[0] == fix.id
    assert not vectors._held


@pytest.mark.parametrize("kept_max", [spread.KEPT_MAX_PIECES, 1])  # 1: every thread but the last read dropped
def test_the_kept_pieces_are_the_scopes_statement(owner, admin, sessions, kept_max, monkeypatch):
    monkeypatch.setattr(spread, "KEPT_MAX_PIECES", kept_max)
    fix = sessions[4]
    services.message_set_isolated(message=fix, isolated=True, actor=admin)

    for _ in range(2):  # read, then kept
        scope = resolve_scope(user=owner, channel=None)
        held = spread.global_pieces(scope=scope, model=static.STATIC_MODEL)
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT c.id FROM threadmem_chunk c JOIN threadmem_message m ON m.id = c.message_id "
                "JOIN threadmem_thread t ON t.id = m.thread_id WHERE c.model = %s AND t.owner_id = %s "
                "AND NOT t.isolated AND m.kind = 'message' AND m.model_visible AND NOT m.isolated "
                "AND m.superseded_by_id IS NULL ORDER BY c.id",
                [static.STATIC_MODEL, owner.pk],
            )
            expected = [chunk_id for (chunk_id,) in cursor.fetchall()]
        assert held.ids.tolist() == expected


def test_a_cold_scope_is_read_to_the_end_when_the_searchs_own_statements_are_refused(owner, sessions, monkeypatch):
    """The first read of a large scope is not the lane's to cancel (warm.py): a search past its deadline
    (every statement of its own refused) still leaves the scope kept for the next one."""
    monkeypatch.setattr(vectors, "READ_BATCH", 1)
    monkeypatch.setattr(lexicon, "READ_BATCH", 1)
    scope = resolve_scope(user=owner, channel=None)
    held = spread.global_pieces(scope=scope, model=static.STATIC_MODEL)
    assert len(held.ids) > 1

    def refuse(execute, sql, params, many, context):
        raise RuntimeError("past the deadline")

    postgres = connection.vendor == "postgresql"  # the kept keyword index is PostgreSQL's (SQLite: FTS5)
    with connection.execute_wrapper(refuse):
        vectors.nearest(pieces=held, vector=[1.0] * 256, k=5, min_score=0.0)
        if postgres:
            lexicon.rows(None, held.key, held.shown, ["zebrafish"])

    assert vectors._held[(*held.key, 256)].ids.tolist() == held.ids.tolist()
    if postgres:
        assert set(lexicon._kept[held.key].pieces) == set(held.shown)


def test_the_tool_description_says_what_a_default_answer_holds(owner, sessions):
    """What search_memory's description promises of "Other memory results" holds with nothing configured."""
    description = SearchMemoryRequest.description
    text = search_memory(user=owner, query=QUESTION).text
    part = semantic_part(text)

    assert "semantic search is configured" not in description
    for promise, found in (
        ("keyword relevance and meaning", "Ranked by keyword relevance and meaning" in part),
        ("each with a score", " score=" in part),
        ("names its thread (channel=...)", f"channel={sessions[1].channel} " in part),
        ("a closing list says what each thread is", thread_legend.HEAD in part),
        ("offers a cursor for its words' literal hits", 'cursor="' in text.split(part)[0]),
    ):
        assert promise in description and found, promise
