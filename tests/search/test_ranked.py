"""The ranked lane (contract §12) as a fresh install runs it: the database's full-text engine and the static model.

No model server: ``static_model`` turns the static model on (tests/conftest.py).
Searches run the lane on a worker thread with its own database connection, so
these tests commit (``transaction=True``).
"""

from __future__ import annotations

import importlib
import math
import socket

import pytest
from django.core.management import call_command
from django.db import connection

from tests.support.factories import append, make_thread, open_generation
from tests.support.search import literal_part_of
from tests.support.semantic import STUDIO, STUDIO_QUERY, embedded, listed_ids, ranked_ids, semantic_part
from threadmem.domain import services
from threadmem.domain.scope import resolve_scope
from threadmem.features.embeddings import retrieve, static
from threadmem.features.search import search_memory, shared_sql
from threadmem.features.search.answer_caps import THREAD_LITERAL_MAX_CHARS, THREAD_SEARCH_MAX_CHARS, TRUNCATED_LINE
from threadmem.features.search.ranked import backlog, keyword, lane, lexicon, vectors
from threadmem.models import Chunk

pytestmark = pytest.mark.django_db(transaction=True)

GROUP = "Caroline: I went to the LGBTQ support group yesterday and it was so powerful."
PAINT = "Melanie: I painted a sunrise over the lake last weekend."
CHAT = "Melanie: The kids were loud at the park yesterday, but we had fun."
QUESTION = "When did Caroline go to the LGBTQ support group?"


@pytest.fixture
def talk(owner, static_model):
    thread = make_thread(owner, "talk")
    messages = append(
        thread,
        {"role": "assistant", "content": CHAT},
        {"role": "user", "content": GROUP},
        {"role": "assistant", "content": PAINT},
    )
    embedded(thread)
    return thread, dict(zip(("chat", "group", "paint"), messages, strict=True))


@pytest.mark.parametrize("channel", ["talk", None])
def test_a_described_question_ranks_the_turn_holding_its_rare_words_first(owner, talk, channel):
    _, messages = talk

    result = search_memory(user=owner, query=QUESTION, channel=channel)

    if channel is None:  # its words are offered by cursor, not matched one by one in every thread
        assert result.literal_hits_total == 0
        assert literal_part_of(result.text).startswith("The whole query has no literal hit.")
    else:  # its words hit ("did", "the", "support" …), the whole question does not
        assert result.literal_hits_total > 0
        assert literal_part_of(result.text).startswith(f"{result.literal_hits_total} more hits not shown")
    ids = ranked_ids(owner, QUESTION, channel)
    assert ids[0] == messages["group"].id
    part = semantic_part(result.text)
    channel_named = "" if channel else " channel=talk"
    # No session, the current generation and the message's content: the entry names none (the head says so).
    assert f"--- messageId={messages['group'].id} role=user{channel_named} score=" in part
    assert "sessionId=" not in part and "generation=" not in part and "field=" not in part
    assert "without generation is in its thread's current one, without field is the message's content" in part
    assert GROUP in part


@pytest.mark.parametrize("channel", ["talk", None])
def test_an_entry_names_its_generation_once_compacted(owner, talk, channel):
    thread, messages = talk
    open_generation(thread, "1. Primary request and intent: the kids' park day")
    (later,) = append(thread, {"role": "user", "content": "Caroline: the LGBTQ support group meets again on Friday."})
    embedded(thread)

    part = semantic_part(search_memory(user=owner, query=QUESTION, channel=channel).text)

    channel_named = "" if channel else " channel=talk"
    # Generation 1 was compacted: the agent's context no longer holds it. Generation 2 is the live one.
    assert f"--- messageId={messages['group'].id} generation=1 role=user{channel_named} score=" in part
    assert f"--- messageId={later.id} role=user{channel_named} score=" in part


def test_keyword_order_follows_bm25_on_a_fixed_corpus(owner, talk):
    thread, messages = talk
    scope = resolve_scope(user=owner, channel=thread.channel)

    ranked = keyword.rank(scope=scope, query="LGBTQ group yesterday", model=static.STATIC_MODEL, limit=10)

    pieces = dict(Chunk.objects.values_list("id", "message_id"))
    # Two rare words and a shared one beat the shared one alone; the painting holds none.
    assert [pieces[chunk_id] for chunk_id, _ in ranked] == [messages["group"].id, messages["chat"].id]
    assert ranked[0][1] > ranked[1][1] > 0


def bm25_idf(holders: int, total: int) -> float:
    return math.log(1 + (total - holders + 0.5) / (holders + 0.5))


def test_keyword_scores_are_the_same_bm25_on_both_databases_and_no_other_owners_data_moves_them(
    owner, other, talk, static_model
):
    thread, messages = talk
    scope = resolve_scope(user=owner, channel=thread.channel)

    def scores() -> list[tuple[int, float]]:
        ranked = keyword.rank(scope=scope, query="LGBTQ groups yesterday", model=static.STATIC_MODEL, limit=10)
        pieces = dict(Chunk.objects.values_list("id", "message_id"))
        return [(pieces[chunk_id], score) for chunk_id, score in ranked]

    # Each word once a piece (at k1 0.6 a count of 1 weighs 1), so a score is its words' idf over the scope's 3
    # pieces: "lgbtq" and "group" (the query's "groups", stemmed) in one, "yesterday" in two.
    expected = [
        (messages["group"].id, 2 * bm25_idf(1, 3) + bm25_idf(2, 3)),
        (messages["chat"].id, bm25_idf(2, 3)),
    ]
    before = scores()
    assert before == [(message, pytest.approx(score, abs=1e-9)) for message, score in expected]
    theirs = make_thread(other, "talk")
    append(theirs, *({"role": "user", "content": f"LGBTQ group meeting {n} yesterday"} for n in range(20)))
    embedded(theirs)
    assert scores() == before


def meaning_ranking(*, scope, query: str, model: str, k: int) -> list:
    """The meaning ranking's messages with their best piece's details and similarity, best first."""
    hits, _ = lane.meaning_ranking(scope=scope, query=query, model=model, k=k)
    return [r.match for r in lane.with_details(hits)]


def test_meaning_ranks_by_the_static_model_above_its_threshold(owner, talk):
    thread, messages = talk
    scope = resolve_scope(user=owner, channel=thread.channel)

    query = "a picture of the sun coming up at the lake"
    matches = meaning_ranking(scope=scope, query=query, model=static.STATIC_MODEL, k=5)

    assert [m.message_id for m in matches] == [messages["paint"].id]  # the others are below STATIC_MIN_SIMILARITY
    assert matches[0].score >= lane.STATIC_MIN_SIMILARITY


def test_held_vectors_follow_appends_and_flags(owner, admin, talk):
    thread, messages = talk
    scope = resolve_scope(user=owner, channel=thread.channel)
    query = "a picture of the sun coming up at the lake"
    assert [m.message_id for m in meaning_ranking(scope=scope, query=query, model=static.STATIC_MODEL, k=5)] == [
        messages["paint"].id
    ]  # the thread's vectors are now held (ranked/vectors.py)

    (dawn,) = append(thread, {"role": "user", "content": "Melanie: I painted the sun coming up over the lake."})
    embedded(thread)
    services.message_set_isolated(message=messages["paint"], isolated=True, actor=admin)

    ids = [m.message_id for m in meaning_ranking(scope=scope, query=query, model=static.STATIC_MODEL, k=5)]
    assert dawn.id in ids and messages["paint"].id not in ids


def test_a_question_with_no_keyword_and_no_meaning_match(owner, talk):
    part = semantic_part(search_memory(user=owner, query="quokka zeppelin", channel="talk").text)

    assert part == lane.NO_MATCH


@pytest.mark.parametrize("channel", ["talk", None])
def test_hidden_messages_never_appear(owner, admin, talk, channel):
    thread, messages = talk
    (isolated, old) = append(
        thread,
        {"role": "user", "content": "Caroline: the LGBTQ support group again"},
        {"role": "user", "content": "Caroline: the LGBTQ support group once more"},
    )
    append(
        thread,
        {"role": "user", "content": "a correction", "supersedes": old.id},
        {"role": "tool", "tool_call_id": "c1", "model_visible": False, "content": GROUP},
        {"role": "system", "kind": "machine_event", "content": GROUP},
    )
    summary = open_generation(thread, GROUP)
    embedded(thread)
    template = Chunk.objects.get(message=messages["group"])
    for message in thread.messages.filter(content=GROUP).exclude(pk=messages["group"].pk):
        # Chunks an older version stored, or a flag changed since: search still must not show them.
        Chunk.objects.get_or_create(
            message=message,
            model=template.model,
            part=0,
            defaults={
                "field": "content",
                "start": 0,
                "text": GROUP,
                "dimensions": template.dimensions,
                "embedding": template.embedding,
            },
        )
    services.message_set_isolated(message=isolated, isolated=True, actor=admin)

    ids = set(ranked_ids(owner, QUESTION, channel))

    assert messages["group"].id in ids
    assert not ids & {
        isolated.id,
        old.id,
        summary.id,
        *thread.messages.filter(model_visible=False).values_list("id", flat=True),
    }
    assert not ids & set(thread.messages.filter(kind="machine_event").values_list("id", flat=True))


def test_the_best_messages_are_followed_by_their_neighbours(owner, talk):
    _, messages = talk

    ids = ranked_ids(owner, QUESTION, "talk")

    # The group turn ranks first; the turns just before and after it follow, whatever their own rank.
    assert ids == [messages["group"].id, messages["chat"].id, messages["paint"].id]


@pytest.mark.parametrize("channel", ["gap", None])
def test_a_neighbour_the_scope_hides_is_not_listed(owner, admin, static_model, channel):
    thread = make_thread(owner, "gap")
    before, group, hidden, _ = append(
        thread,
        {"role": "user", "content": "Caroline: a quiet week at home."},
        {"role": "user", "content": GROUP},
        {"role": "tool", "tool_call_id": "c1", "model_visible": False, "content": "a hidden tool result"},
        {"role": "assistant", "content": PAINT},
    )
    elsewhere = make_thread(owner, "elsewhere")
    (next_door,) = append(elsewhere, {"role": "user", "content": "Melanie: nothing in common at all."})
    embedded(thread, elsewhere)
    services.message_set_isolated(message=before, isolated=True, actor=admin)

    ids = ranked_ids(owner, QUESTION, channel)

    assert ids[0] == group.id
    assert hidden.id not in ids and before.id not in ids  # seq ± 1 of the best, but not the scope's to show
    assert next_door.id not in ids[:2]  # another thread's message is no neighbour


def test_another_owners_thread_never_appears_and_an_isolated_thread_only_in_its_channel(owner, other, admin, talk):
    _, messages = talk
    theirs = make_thread(other, "theirs")
    (their_group,) = append(theirs, {"role": "user", "content": GROUP})
    mine = make_thread(owner, "mine")
    (my_group,) = append(mine, {"role": "user", "content": GROUP})
    embedded(theirs, mine)

    assert set(ranked_ids(owner, QUESTION, None)) >= {messages["group"].id, my_group.id}
    assert their_group.id not in ranked_ids(owner, QUESTION, None)
    assert their_group.id in ranked_ids(other, QUESTION, None)
    assert their_group.id not in ranked_ids(owner, QUESTION, "talk")

    services.thread_set_isolated(thread=mine, isolated=True, actor=admin)

    assert my_group.id not in ranked_ids(owner, QUESTION, None)
    assert ranked_ids(owner, QUESTION, "mine") == [my_group.id]


def test_the_cap_holds_with_both_parts_full(owner, static_model):
    thread = make_thread(owner, "busy")
    word = "staging database"
    append(thread, *({"role": "user", "content": f"{word} note {i}: " + "words " * 150} for i in range(60)))
    append(thread, *({"role": "assistant", "content": f"the staging box {i} " + "filler " * 40} for i in range(60)))
    embedded(thread)

    result = search_memory(user=owner, query=word, channel="busy")

    literal = literal_part_of(result.text)
    assert THREAD_LITERAL_MAX_CHARS - 1_000 < len(literal) <= THREAD_LITERAL_MAX_CHARS
    part = semantic_part(result.text)
    listed = listed_ids(part)
    assert listed and not listed & {hit.message_id for hit in result.hits}  # never repeated
    assert len(result.text) <= THREAD_SEARCH_MAX_CHARS and not result.text.endswith(TRUNCATED_LINE)
    assert part.splitlines()[-1].endswith(("…[truncated]", "filler "))  # it stops at an entry's end


def test_the_static_model_loads_with_the_network_unreachable(monkeypatch, tmp_path):
    def refuse(*args, **kwargs):
        raise OSError("network unreachable (test)")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HOME", str(tmp_path))  # no cache of an earlier download to fall back on
    monkeypatch.setattr(static, "_model", None)

    (vector,) = static.embed(["the staging database"])

    assert len(vector) == static.STATIC_DIMENSIONS
    assert not any(tmp_path.iterdir())  # nothing was written, let alone downloaded


def test_a_store_from_before_the_lane_gets_its_index_and_vectors(owner, static_model, settings):
    migration = importlib.import_module("threadmem.migrations.0018_chunk_keyword_index")
    settings.THREADMEM_STATIC_EMBEDDINGS = False  # the store as it was: no static vectors
    thread = make_thread(owner, "old")
    (group,) = append(thread, {"role": "user", "content": GROUP})
    with connection.schema_editor() as editor:
        migration.backward(None, editor)
    try:
        settings.THREADMEM_STATIC_EMBEDDINGS = True
        call_command("embeddings")  # the backfill: vectors for what the store holds
        assert Chunk.objects.filter(message=group, model=static.STATIC_MODEL).exists()
    finally:
        with connection.schema_editor() as editor:
            migration.forward(None, editor)  # the index over the pieces already stored

    scope = resolve_scope(user=owner, channel="old")
    ranked = keyword.rank(scope=scope, query="LGBTQ support group", model=static.STATIC_MODEL, limit=5)
    assert [Chunk.objects.get(pk=chunk_id).message_id for chunk_id, _ in ranked] == [group.id]


def test_a_large_stores_global_ranking_leaves_its_common_words_out_and_keeps_the_scope(
    owner, other, static_model, monkeypatch
):
    mine = make_thread(owner, "mine")
    *_, zebrafish = append(
        mine,
        *({"role": "assistant", "content": f"error while loading part {i}"} for i in range(30)),
        {"role": "user", "content": "the zebrafish error came back"},
    )
    theirs = make_thread(other, "theirs")
    (their_zebrafish,) = append(theirs, {"role": "user", "content": "a zebrafish error in their thread"})
    embedded(mine, theirs)
    # The large-table path on a small table: any estimate is large, "error" (31 of 32 pieces) is common.
    monkeypatch.setattr(keyword, "LARGE_TABLE_PIECES", -1)
    monkeypatch.setattr(keyword, "COMMON_LEXEME_SHARE", 0.5)
    question = "what about the zebrafish error?"
    scope = resolve_scope(user=owner, channel=None)

    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE threadmem_chunk")
            assert keyword.uncommon(cursor, ["error", "zebrafish"]) == ["zebrafish"]
    ranked = keyword.rank_pieces(scope=scope, query=question, model=static.STATIC_MODEL, limit=10)

    listed = [message_id for _, message_id, _ in ranked]
    assert listed[0] == zebrafish.id
    assert their_zebrafish.id not in listed
    if connection.vendor == "postgresql":  # the common word's pieces were never read
        assert listed == [zebrafish.id]
    assert their_zebrafish.id not in ranked_ids(owner, question, None)
    assert zebrafish.id in ranked_ids(owner, question, None)
    assert their_zebrafish.id in ranked_ids(other, question, None)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="the kept keyword index is PostgreSQL's")
@pytest.mark.parametrize("kept_max", [lexicon.KEPT_MAX_BYTES, 1])  # 1: every other scope's index dropped
def test_a_threads_keyword_ranking_from_its_kept_index_is_the_databases(
    owner, admin, static_model, kept_max, monkeypatch
):
    monkeypatch.setattr(lexicon, "KEPT_MAX_BYTES", kept_max)
    lexicon.clear()
    thread = make_thread(owner, "words")
    texts = (GROUP, PAINT, CHAT, "support support group: the group met at 5", "Caroline's O'Reilly book")
    messages = append(thread, *({"role": "user", "content": text} for text in texts))
    other = make_thread(owner, "other")
    append(other, {"role": "user", "content": "the support group of another thread"})
    embedded(thread, other)
    model = static.STATIC_MODEL

    def both(query: str, channel: str) -> tuple[list, list]:
        scope = resolve_scope(user=owner, channel=channel)
        held = vectors.scope_pieces(scope=scope, model=model)
        kept = keyword.rank_pieces(scope=scope, query=query, model=model, limit=50, held=held)
        return kept, keyword.rank_pieces(scope=scope, query=query, model=model, limit=50)

    for query in (QUESTION, "support group", "O'Reilly's book", "nothing matches zzz"):
        kept, from_database = both(query, thread.channel)
        assert kept == from_database
    assert both("support group", other.channel)[0] == both("support group", other.channel)[1]
    # A piece hidden since its scope's index was built is never ranked; one appended since is.
    services.message_set_isolated(message=messages[3], isolated=True, actor=admin)
    (added,) = append(thread, {"role": "user", "content": "a new support group message"})
    embedded(thread)
    kept, from_database = both("support group", thread.channel)
    assert kept == from_database
    ranked = {message for _, message, _ in kept}
    assert added.id in ranked and messages[3].id not in ranked


def test_while_the_model_has_messages_to_embed_the_lane_says_so_and_ranks_what_is_embedded(
    owner, static_model, settings
):
    thread = make_thread(owner, "catching-up")
    settings.THREADMEM_STATIC_EMBEDDINGS = False  # a store from before this model: nothing embedded by it
    (early,) = append(thread, {"role": "user", "content": "the zebrafish tank needs a new filter"})
    settings.THREADMEM_STATIC_EMBEDDINGS = True
    embedded(thread)
    settings.THREADMEM_STATIC_EMBEDDINGS = False
    append(thread, *({"role": "user", "content": f"zebrafish feeding log {n}"} for n in range(3)))
    settings.THREADMEM_STATIC_EMBEDDINGS = True

    note = lane.BACKLOG_NOTE.format(messages=3)
    assert semantic_part(search_memory(user=owner, query="zebrafish", channel="catching-up").text).startswith(note)
    assert semantic_part(search_memory(user=owner, query="zebrafish").text).startswith(note)
    assert backlog.messages_behind(static.STATIC_MODEL, (thread.pk,)) == 3
    assert set(Chunk.objects.filter(message__thread=thread).values_list("message_id", flat=True)) == {early.id}

    embedded(thread)
    assert backlog.messages_behind(static.STATIC_MODEL, (thread.pk,)) == 0
    caught_up = search_memory(user=owner, query="zebrafish", channel="catching-up").text
    assert "not embedded yet" not in caught_up


def test_the_backlog_note_counts_only_messages_search_may_show(owner, admin, static_model, settings):
    thread = make_thread(owner, "hidden-tail")
    settings.THREADMEM_STATIC_EMBEDDINGS = False  # appended, not embedded yet
    _, hidden = append(
        thread, {"role": "user", "content": "the zebrafish tank"}, {"role": "user", "content": "a private zebrafish"}
    )
    services.message_set_isolated(message=hidden, isolated=True, actor=admin)
    settings.THREADMEM_STATIC_EMBEDDINGS = True

    part = semantic_part(search_memory(user=owner, query="zebrafish", channel="hidden-tail").text)

    assert part.startswith(lane.BACKLOG_NOTE.format(messages=1))  # the isolated message is not even counted
    assert backlog.messages_behind(static.STATIC_MODEL, (thread.pk,)) == 1


def test_an_entry_names_its_session_and_a_tool_argument_field(owner, static_model):
    thread = make_thread(owner, "ops")
    (call,) = append(
        thread,
        {
            "role": "assistant",
            "session_id": "s-7",
            "tool_calls": [{"id": "c1", "name": "shell", "arguments": {"note": "rotate the standby replica"}}],
        },
    )
    embedded(thread)

    part = semantic_part(search_memory(user=owner, query="why rotate the standby replica?", channel="ops").text)

    assert f"--- messageId={call.id} sessionId=s-7 role=assistant field=tool_args.note score=" in part


def test_the_pieces_details_are_read_by_id_from_a_table_of_ids_on_either_database(owner, talk):
    thread, messages = talk
    chunks = list(Chunk.objects.filter(message__thread=thread).order_by("id").values_list("id", flat=True))
    wanted = [chunks[-1], chunks[0], chunks[0], max(chunks) + 1000]  # out of order, once twice, one gone

    rows = retrieve.detail_rows_of(*shared_sql.ids_table(connection.vendor, wanted))

    expected = retrieve.detail_rows(*shared_sql.in_ids(connection.vendor, "c.id", wanted))
    assert {row[0] for row in rows} == {chunks[0], chunks[-1]}
    assert set(rows) == set(expected)
    assert {row[1] for row in rows} <= {m.id for m in messages.values()}


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite stems a query through a temporary table")
def test_sqlite_keeps_nothing_of_a_query_once_its_terms_are_read(owner, talk):
    thread, messages = talk
    scope = resolve_scope(user=owner, channel=thread.channel)

    ((piece, _),) = keyword.rank(scope=scope, query="LGBTQ", model=static.STATIC_MODEL, limit=10)
    assert Chunk.objects.get(pk=piece).message_id == messages["group"].id
    with connection.cursor() as cursor:  # the connection the ranking read on
        cursor.execute("SELECT count(*) FROM temp.threadmem_query_fts")
        assert cursor.fetchone()[0] == 0


def test_a_configured_models_keyword_ranking_counts_a_messages_neighbours(owner, fake_openai, settings):
    settings.THREADMEM_EMBEDDING_MODEL = model = fake_openai.embedding_model
    thread = make_thread(owner, "studio")
    _, opening, crew, _, mirrors = append(thread, *STUDIO)
    embedded(thread)
    scope = resolve_scope(user=owner, channel="studio")
    held = vectors.scope_pieces(scope=scope, model=model)
    _, meaning = lane.meaning_ranking(scope=scope, query=STUDIO_QUERY, model=model, k=10, held=held, read=True)

    plain = lane.keyword_hits(scope=scope, query=STUDIO_QUERY, model=model, k=10, held=held)
    in_context = lane.keyword_hits(scope=scope, query=STUDIO_QUERY, model=model, k=10, held=held, beside=meaning)

    # BM25 alone puts the short turn first; beside the opening, the crew's turn goes before it. A configured
    # model's width is known once its meaning ranking ran: without it, the plain ranking.
    assert [hit.message_id for hit in plain] == [opening.id, mirrors.id, crew.id]
    assert [hit.message_id for hit in in_context] == [opening.id, crew.id, mirrors.id]
