"""The semantic part: embeddings through the real ``openai`` SDK, pgvector or NumPy, inside the 12,000 cap.

The model is tests/support/fake_openai.py over HTTP: its embeddings are hashed bags
of words with a small thesaurus (``CONCEPTS``), so "database replication lag"
finds "the postgres replica fell behind" although the two share no word.
Searches run the semantic part on a worker thread with its own database
connection, so these tests commit (``transaction=True``).
"""

from __future__ import annotations

import itertools

import pytest
from django.core.management import call_command
from django.db import connection

from tests.support.factories import append, make_thread, open_generation
from tests.support.search import literal_part_of
from tests.support.semantic import EVIDENCE, PARAPHRASE, listed_ids, semantic_part
from threadmem.domain import services
from threadmem.features.embeddings import retrieve, tasks
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.search import search_memory, semantic
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS, WORDS_BY_CURSOR
from threadmem.features.search.ranked import lane
from threadmem.models import Chunk, EmbeddingProgress

pytestmark = pytest.mark.django_db(transaction=True)

UNRELATED = "Rendered the quarterly marketing slides with the new colour palette."


@pytest.fixture
def embeddings(fake_openai, settings):
    """An embedding model on the fake server; in-process embedding runs are waited for at the end."""
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    yield fake_openai
    tasks.wait_for_background()


def embedded(thread) -> None:
    """Wait for the runs the appends queued, then embed whatever is left (the backfill path)."""
    tasks.wait_for_background()
    embedding_service.embed_thread(thread_id=thread.pk)


@pytest.mark.parametrize("channel", ["ops", None])
def test_a_paraphrase_that_literal_search_misses_is_found(owner, embeddings, channel):
    thread = make_thread(owner, "ops")
    (evidence,) = append(thread, {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE})
    (after,) = append(thread, {"role": "assistant", "content": UNRELATED})
    embedded(thread)

    result = search_memory(user=owner, query=PARAPHRASE, channel=channel)

    assert result.literal_hits_total == 0
    # Without a channel, the words of a described question are offered by cursor instead of matched everywhere.
    assert literal_part_of(result.text) == ("" if channel else WORDS_BY_CURSOR.format(result.next_cursor))
    part = semantic_part(result.text)
    # The match, then the message after it in its thread (ranked/neighbours.py).
    assert listed_ids(part) == {evidence.id, after.id}
    assert part.index(f"messageId={evidence.id} ") < part.index(f"messageId={after.id} ")
    assert f"--- messageId={evidence.id} role=tool" in part and "field=" not in part and "score=" in part
    assert EVIDENCE in part
    assert ("channel=ops" in part) is (channel is None)


def test_tool_argument_leaves_are_embedded_and_named(owner, embeddings):
    thread = make_thread(owner, "ops")
    (call,) = append(
        thread,
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "c1", "name": "shell", "arguments": {"cmd": "ls", "note": "check the postgres standby delay"}}
            ],
        },
    )
    embedded(thread)

    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="ops").text)

    assert listed_ids(part) == {call.id}
    assert "field=tool_args.note" in part
    # "ls" is too short to say anything and is not embedded.
    assert list(Chunk.objects.values_list("field", flat=True)) == ["tool_args.note"]


def test_appends_are_embedded_after_commit_without_waiting_for_the_model(owner, owner_api, embeddings):
    thread = make_thread(owner, "ops")
    response = owner_api.post(
        "/api/v1/threads/ops/messages/",
        [{"role": "user", "content": EVIDENCE}, {"role": "assistant", "content": UNRELATED}],
        format="json",
    )
    assert response.status_code == 201, response.content
    tasks.wait_for_background()

    progress = EmbeddingProgress.objects.get(thread=thread)
    assert progress.embedded_seq == 2 and progress.chunks == 2 and progress.failures == 0
    assert sorted(Chunk.objects.values_list("text", flat=True)) == sorted([EVIDENCE, UNRELATED])
    assert len(embeddings.embedding_requests()) == 1  # one batch for the whole append


def test_only_messages_search_may_ever_show_are_embedded_once(owner, embeddings):
    thread = make_thread(owner, "ops")
    append(
        thread,
        {"role": "system", "kind": "machine_event", "content": EVIDENCE},
        {"role": "tool", "tool_call_id": "c1", "model_visible": False, "content": EVIDENCE},
        {"role": "tool", "tool_call_id": "c2", "content": EVIDENCE},
    )
    open_generation(thread, EVIDENCE)
    embedded(thread)
    requests = len(embeddings.embedding_requests())

    embedding_service.embed_thread(thread_id=thread.pk)  # nothing new: no model call, no duplicate

    assert len(embeddings.embedding_requests()) == requests
    assert Chunk.objects.count() == 1
    assert EmbeddingProgress.objects.get(thread=thread).embedded_seq == thread.next_seq - 1


@pytest.mark.parametrize("remembered, sent", [(embedding_service.REMEMBERED_TEXTS, 1), (1, 2)])
def test_a_text_met_again_in_a_run_is_embedded_once_while_the_run_remembers_it(
    owner, embeddings, monkeypatch, remembered, sent
):
    monkeypatch.setattr(embedding_service, "PIECES_PER_BATCH", 1)  # each message a batch of its own
    monkeypatch.setattr(embedding_service, "REMEMBERED_TEXTS", remembered)
    thread = make_thread(owner, "ops")
    read = "cat config/deploy.yaml\nreplicas: 3\nimage: registry.internal/web:1.42"
    first, _, again = append(
        thread,
        {"role": "tool", "tool_call_id": "c1", "content": read},
        {"role": "tool", "tool_call_id": "c2", "content": UNRELATED},
        {"role": "tool", "tool_call_id": "c3", "content": read},  # the same file read again
    )
    embedded(thread)

    texts = [text for body in embeddings.embedding_requests() for text in body["input"]]
    assert texts.count(read) == sent and texts.count(UNRELATED) == 1
    (vector_first,), (vector_again,) = (
        Chunk.objects.filter(message=m).values_list("embedding", flat=True) for m in (first, again)
    )
    assert list(vector_first) == list(vector_again)
    assert EmbeddingProgress.objects.get(thread=thread).chunks == 3


def test_long_results_are_cut_into_overlapping_pieces_and_shown_as_windows(owner, embeddings):
    thread = make_thread(owner, "ops")
    filler = "-- " * 3_333  # 10,000 characters without a word: the fake's bag of words ignores them
    (result,) = append(thread, {"role": "tool", "tool_call_id": "c1", "content": filler + EVIDENCE + " " + filler})
    embedded(thread)

    chunks = list(Chunk.objects.filter(message=result).order_by("part"))
    assert len(chunks) > 20
    assert all(len(c.text) <= 1_000 for c in chunks)
    assert all(a.start + len(a.text) > b.start for a, b in itertools.pairwise(chunks))  # overlap
    # A paraphrase: a literal hit of the query would list the message above, and the ranked lane never repeats it.
    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="ops").text)
    assert listed_ids(part) == {result.id}  # its pieces collapse into one entry
    window = part.split("\n")[2]  # after the ranked lane's first line and the entry's header
    assert window.startswith("…") and window.endswith("…[truncated]")
    assert len(window) <= 800 + len("…") + len("…[truncated]")


# --- the same exclusions as the literal path, each on this path by itself ----------------------


def _only_semantic(user, channel):
    return listed_ids(semantic_part(search_memory(user=user, query=PARAPHRASE, channel=channel).text))


@pytest.fixture
def visible(owner, embeddings):
    """A thread with one plain piece of evidence the semantic part shows: each test hides another one."""
    thread = make_thread(owner, "ops")
    (plain,) = append(thread, {"role": "tool", "tool_call_id": "c0", "content": EVIDENCE})
    return thread, plain


@pytest.mark.parametrize("channel", ["ops", None])
def test_an_isolated_message_never_appears(owner, admin, visible, channel):
    thread, plain = visible
    (hidden,) = append(thread, {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE})
    embedded(thread)
    assert _only_semantic(owner, channel) == {plain.id, hidden.id}

    services.message_set_isolated(message=hidden, isolated=True, actor=admin)

    assert _only_semantic(owner, channel) == {plain.id}
    assert _only_semantic(admin, channel) == {plain.id}


@pytest.mark.parametrize("channel", ["ops", None])
def test_a_superseded_message_never_appears(owner, visible, channel):
    thread, plain = visible
    (old,) = append(thread, {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE})
    append(thread, {"role": "user", "content": "a correction", "supersedes": old.id})
    embedded(thread)

    assert _only_semantic(owner, channel) == {plain.id}


@pytest.mark.parametrize("channel", ["ops", None])
def test_model_invisible_results_machine_events_and_summaries_never_appear(owner, visible, channel):
    thread, plain = visible
    append(
        thread,
        {"role": "tool", "tool_call_id": "c1", "model_visible": False, "content": EVIDENCE},
        {"role": "system", "kind": "machine_event", "content": EVIDENCE},
    )
    summary = open_generation(thread, EVIDENCE)
    embedded(thread)
    assert Chunk.objects.count() == 1  # they are not embedded at all ...
    # ... and were they (a chunk stored by an older version, a changed flag), search would not show them.
    template = Chunk.objects.get()
    hidden = thread.messages.exclude(pk=plain.pk).exclude(pk=summary.pk).filter(content=EVIDENCE)
    for message in [*hidden, summary]:
        Chunk.objects.create(
            message=message,
            model=template.model,
            part=0,
            field="content",
            start=0,
            text=EVIDENCE,
            dimensions=template.dimensions,
            embedding=template.embedding,
        )
    assert Chunk.objects.count() == 4
    assert _only_semantic(owner, channel) == {plain.id}


@pytest.fixture(params=["exact", "index"])
def global_path(request, monkeypatch):
    """An ordinary user's global scope is small here and ranked exactly; "index" forces the HNSW path."""
    if request.param == "index":
        monkeypatch.setattr(retrieve, "EXACT_MAX_MESSAGES", 0)
    return request.param


def test_an_isolated_thread_disappears_from_global_but_not_from_its_own_channel(owner, admin, visible, global_path):
    thread, plain = visible
    other_thread = make_thread(owner, "ops-2")
    (elsewhere,) = append(other_thread, {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE})
    embedded(thread)
    embedded(other_thread)
    assert _only_semantic(owner, None) == {plain.id, elsewhere.id}

    services.thread_set_isolated(thread=other_thread, isolated=True, actor=admin)

    assert _only_semantic(owner, None) == {plain.id}
    assert _only_semantic(admin, None) == {plain.id}
    assert _only_semantic(owner, "ops-2") == {elsewhere.id}


def test_another_owners_thread_never_appears(owner, other, operator, visible, global_path):
    thread, plain = visible
    theirs = make_thread(other, "theirs")
    (their_evidence,) = append(theirs, {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE})
    embedded(thread)
    embedded(theirs)

    assert _only_semantic(owner, None) == {plain.id}
    assert _only_semantic(other, None) == {their_evidence.id}
    assert _only_semantic(operator, None) == {plain.id, their_evidence.id}


def test_a_fork_sees_its_ancestry_up_to_the_fork_point_only(owner, visible):
    thread, plain = visible
    (after_fork,) = append(thread, {"role": "tool", "tool_call_id": "c1", "content": EVIDENCE})
    fork = services.thread_create(owner=owner, channel="ops-fork", fork_from=plain)
    embedded(thread)

    assert _only_semantic(owner, "ops-fork") == {plain.id}
    assert _only_semantic(owner, "ops") == {plain.id, after_fork.id}
    assert fork.parent_id == thread.id


def test_below_the_threshold_nothing_is_listed(owner, visible, monkeypatch):
    thread, _plain = visible
    embedded(thread)
    monkeypatch.setattr(lane, "CONFIGURED_MIN_SIMILARITY", 0.99)

    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="ops").text)

    assert listed_ids(part) == set()
    assert "No messages match the query by keyword or by meaning" in part


# --- the memory answer, the cap and the deadline ----------------------------------------------


def test_the_memory_answer_comes_first_and_is_given_the_ranked_messages_to_cite(owner, visible, embeddings, settings):
    thread, plain = visible
    embedded(thread)
    settings.THREADMEM_MEMORY_ANSWER = True
    embeddings.push_chat(f"The replica fell 40 s behind during the backup (messageId={plain.id}).")

    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="ops").text)

    assert part.startswith(
        "Memory answer (condensed from the messages below; check them before relying on it):\n"
        f"The replica fell 40 s behind during the backup (messageId={plain.id}).\n\n{lane.HEAD}\n--- messageId="
    )
    assert listed_ids(part) == {plain.id}
    (chat,) = embeddings.chat_requests()
    assert f"messageId={plain.id}" in chat["messages"][-1]["content"]
    assert "Cite every passage you use as messageId=<id>" in chat["messages"][0]["content"]


def test_a_100000_character_memory_answer_is_cut_and_the_messages_it_cites_still_shown(
    owner, visible, embeddings, settings
):
    thread, plain = visible
    embedded(thread)
    settings.THREADMEM_MEMORY_ANSWER = True
    embeddings.push_chat("memory " * 14_286)  # 100,002 characters

    result = search_memory(user=owner, query=PARAPHRASE, channel="ops")

    assert len(result.text) <= THREAD_SEARCH_MAX_CHARS
    part = semantic_part(result.text)
    assert ("memory " * 14_286)[: semantic.MEMORY_ANSWER_MAX_CHARS] + "…\n" in part
    assert listed_ids(part) == {plain.id}


def test_without_the_opt_in_no_chat_call_is_made(owner, visible, embeddings):
    thread, plain = visible
    embedded(thread)

    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="ops").text)

    assert part.startswith(f"{lane.HEAD}\n--- messageId={plain.id} ")
    assert embeddings.chat_requests() == []


def test_a_failing_chat_model_costs_the_answer_not_the_ranked_messages(owner, visible, embeddings, settings):
    thread, plain = visible
    embedded(thread)
    settings.THREADMEM_MEMORY_ANSWER = True
    embeddings.push_error(400, "no such model")

    part = semantic_part(search_memory(user=owner, query=PARAPHRASE, channel="ops").text)

    assert part.startswith("No memory answer for this query (")
    assert listed_ids(part) == {plain.id}


def test_with_the_embedding_server_down_search_answers_with_the_literal_part_and_a_note(owner, visible, settings):
    thread, _plain = visible
    embedded(thread)
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # discard port: connection refused

    result = search_memory(user=owner, query="postgres replica", channel="ops")

    assert result.literal_hits_total == 1
    part = semantic_part(result.text)
    assert part.startswith("Semantic search is unavailable for this query (")
    # One line of note; the keyword ranking (the database's, no model) still lists what it finds below it.
    assert "the literal hits above are complete" in part.splitlines()[0]


def test_a_slow_embedding_server_costs_one_line_within_the_deadline(owner, visible, embeddings, settings):
    thread, _plain = visible
    embedded(thread)
    settings.THREADMEM_SEMANTIC_DEADLINE = 0.5
    gate = embeddings.push_embeddings([embeddings.vector(PARAPHRASE)], hold=True)
    try:
        result = search_memory(user=owner, query="postgres replica", channel="ops")
        # The answer came back while the model server still held the query's embedding.
        assert not gate.is_set()
    finally:
        gate.set()

    assert result.literal_hits_total == 1
    part = semantic_part(result.text)
    assert part == (
        "Semantic search did not answer within 0.5 s (THREADMEM_SEMANTIC_DEADLINE); "
        "the literal hits above are complete."
    )


def test_an_append_while_the_server_is_down_is_stored_and_the_failure_recorded(owner, owner_api, embeddings, settings):
    thread = make_thread(owner, "ops")
    embeddings.push_error(503, endpoint="embeddings")

    response = owner_api.post("/api/v1/threads/ops/messages/", {"role": "user", "content": EVIDENCE}, format="json")
    tasks.wait_for_background()

    assert response.status_code == 201
    progress = EmbeddingProgress.objects.get(thread=thread)
    assert progress.failures == 1 and "HTTP 503" in progress.last_error and progress.embedded_seq == 0
    assert Chunk.objects.count() == 0

    call_command("embeddings")  # the backfill, with the server answering again

    progress.refresh_from_db()
    assert progress.failures == 0 and progress.last_error == "" and progress.embedded_seq == 1
    assert Chunk.objects.count() == 1


def test_the_backfill_embeds_what_was_appended_before_the_model_was_configured(owner, fake_openai, settings, capsys):
    thread = make_thread(owner, "ops")
    append(thread, {"role": "user", "content": EVIDENCE})
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    call_command("embeddings", "--status")
    assert "1 threads behind, 0 failing" in capsys.readouterr().out

    call_command("embeddings")

    assert "1 of 1 threads embedded" in capsys.readouterr().out
    assert embedding_service.threads_behind() == []
    assert Chunk.objects.get().text == EVIDENCE


@pytest.mark.skipif(connection.vendor != "postgresql", reason="pgvector's HNSW index is PostgreSQL's")
def test_embedding_creates_the_hnsw_index_of_the_vectors_dimension(owner, visible):
    thread, _plain = visible
    embedded(thread)
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = 'chunk_embedding_hnsw_64'")
        (definition,) = cursor.fetchone()
    assert "hnsw" in definition and "vector(64)" in definition and "vector_cosine_ops" in definition


def test_the_console_thread_page_shows_embedding_progress_and_the_last_failure(
    owner, operator_console, embeddings, settings
):
    from django.urls import reverse

    thread = make_thread(owner, "ops")
    url = reverse("console:thread", args=[thread.id])
    assert "Not embedded" in operator_console.get(url).content.decode()
    embeddings.push_error(503, "the embedding server is overloaded", endpoint="embeddings")
    append(thread, {"role": "user", "content": EVIDENCE})
    tasks.wait_for_background()

    body = operator_console.get(url).content.decode()

    assert "through seq 0 of 1" in body and "1 failed run," in body
    assert "the embedding server is overloaded" in body
