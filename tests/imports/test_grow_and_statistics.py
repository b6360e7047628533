"""A streamed message grown in place is embedded again; an import refreshes the planner's statistics once."""

from __future__ import annotations

import json
import shutil

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.support.sessions import LONG, data_dir
from threadmem.features.embeddings import thread_embedding as embedding_service
from threadmem.features.embeddings.chunks import message_pieces
from threadmem.features.imports.import_once import import_paths
from threadmem.models import Chunk, EmbeddingProgress, Message, Thread, ToolArgument

pytestmark = pytest.mark.django_db

SESSION = "5f0c1d2e-0000-4000-8000-00000000feed"


def record(kind: str, uuid: str, content: object, **extra: object) -> bytes:
    message = {"role": "assistant" if kind == "assistant" else "user", "content": content, **extra}
    line = {"type": kind, "uuid": uuid, "sessionId": SESSION, "message": message}
    return json.dumps(line).encode() + b"\n"


def tool_use(call_id: str, command: str) -> dict:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def tool_result(call_id: str, text: str) -> dict:
    return {"type": "tool_result", "tool_use_id": call_id, "content": text}


# Claude Code writes each block of a streamed API message as its own record,
# and the result of a parallel call may land between two of them.
BEFORE_THE_CUT = [
    record("user", "u1", "Why does the staging deploy fail?"),
    record("assistant", "a1", [{"type": "text", "text": "Let me look at the unit."}], id="msg_grow"),
    record("assistant", "a2", [tool_use("call_1", "systemctl status api")], id="msg_grow"),
    record("user", "u2", [tool_result("call_1", "api.service: active (running) since Monday")]),
]
AFTER_THE_CUT = [
    record("assistant", "a3", [tool_use("call_2", "journalctl -u quokka-relay-7 --since today")], id="msg_grow"),
    record("user", "u3", [tool_result("call_2", "quokka-relay-7: certificate expired")]),
]


@pytest.fixture
def embeddings(fake_openai, settings):
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    return fake_openai


def embedded_texts(requests: list[dict]) -> list[str]:
    return [text for body in requests for text in body["input"]]


def test_a_grown_message_is_embedded_again_and_the_later_embedded_ones_are_not(owner, embeddings, tmp_path):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(b"".join(BEFORE_THE_CUT))
    import_paths(paths=[path], fmt="claude-code", owner=owner)
    thread = Thread.objects.get(channel=f"claude-code:{SESSION}")
    embedding_service.embed_thread(thread_id=thread.pk)
    progress = EmbeddingProgress.objects.get(thread=thread)
    grown = Message.objects.get(thread=thread, source_id="msg_grow")
    first_result = Message.objects.get(thread=thread, tool_call_id="call_1")
    assert progress.embedded_seq == first_result.seq > grown.seq
    result_pieces = list(Chunk.objects.filter(message=first_result).values_list("pk", "text"))
    requests_before = len(embeddings.embedding_requests())

    path.write_bytes(b"".join(BEFORE_THE_CUT + AFTER_THE_CUT))
    report = import_paths(paths=[path], fmt="claude-code", owner=owner)

    assert report.messages_grown == 1 and report.messages_new == 1
    assert not Chunk.objects.filter(message=grown).exists()
    assert EmbeddingProgress.objects.get(thread=thread).embedded_seq == grown.seq - 1
    embedding_service.embed_thread(thread_id=thread.pk)
    progress.refresh_from_db()
    assert progress.embedded_seq == Message.objects.filter(thread=thread).order_by("-seq").first().seq
    assert any(
        "quokka-relay-7 --since today" in t for t in Chunk.objects.filter(message=grown).values_list("text", flat=True)
    )
    # The result embedded before the growth keeps its pieces and is not sent to the model again.
    assert list(Chunk.objects.filter(message=first_result).values_list("pk", "text")) == result_pieces
    sent_again = embedded_texts(embeddings.embedding_requests()[requests_before:])
    assert not any("active (running)" in text for text in sent_again)
    assert any("certificate expired" in text for text in sent_again)
    assert progress.chunks == Chunk.objects.filter(message__thread=thread).count()


def test_a_message_grown_while_the_model_embeds_its_old_text_keeps_no_old_pieces(
    owner, embeddings, tmp_path, monkeypatch
):
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_bytes(b"".join(BEFORE_THE_CUT))
    import_paths(paths=[path], fmt="claude-code", owner=owner)
    thread = Thread.objects.get(channel=f"claude-code:{SESSION}")
    real_embed = embedding_service.llm.embed
    calls = []

    def embed_while_the_session_grows(texts, *, model):
        if not calls:  # --follow imports the rest of the streamed message meanwhile
            path.write_bytes(b"".join(BEFORE_THE_CUT + AFTER_THE_CUT))
            assert import_paths(paths=[path], fmt="claude-code", owner=owner).messages_grown == 1
        calls.append(texts)
        return real_embed(texts, model=model)

    monkeypatch.setattr(embedding_service.llm, "embed", embed_while_the_session_grows)
    embedding_service.embed_thread(thread_id=thread.pk)

    grown = Message.objects.get(thread=thread, source_id="msg_grow")
    leaves = ToolArgument.objects.filter(message=grown).order_by("call_index", "id").values_list("path", "value")
    as_it_is_now = [(p.field, p.text) for p in message_pieces(grown.content, list(leaves))]
    # The pieces of the message as it is now, none cut from its text before it grew.
    assert list(Chunk.objects.filter(message=grown).order_by("part").values_list("field", "text")) == as_it_is_now
    assert any("quokka-relay-7 --since today" in text for _, text in as_it_is_now)
    last = Message.objects.filter(thread=thread).order_by("-seq").first()
    progress = EmbeddingProgress.objects.get(thread=thread)
    assert progress.embedded_seq == last.seq
    assert progress.chunks == Chunk.objects.filter(message__thread=thread).count()


@pytest.mark.skipif(connection.vendor != "postgresql", reason="ANALYZE is for PostgreSQL's planner")
def test_an_import_run_analyzes_the_tables_it_filled_once(owner, tmp_path):
    folder = tmp_path / "project"
    shutil.copytree(data_dir(), folder, ignore=shutil.ignore_patterns("*.md"))
    with CaptureQueriesContext(connection) as queries:
        report = import_paths(paths=[folder], fmt="claude-code", owner=owner)
    analyzes = [q["sql"] for q in queries.captured_queries if q["sql"].startswith("ANALYZE")]
    assert report.files == 6 and analyzes == ["ANALYZE threadmem_message, threadmem_toolargument"]
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = 'threadmem_message'")
        (estimated,) = cursor.fetchone()
    # The planner's row estimate now counts the import's rows (never analyzed, it reads -1 or 0).
    assert estimated >= 0.9 * Message.objects.count() > 0


def test_a_run_that_adds_nothing_does_not_analyze(owner):
    path = data_dir() / f"{LONG}.jsonl"
    import_paths(paths=[path], fmt="claude-code", owner=owner)
    with CaptureQueriesContext(connection) as queries:
        report = import_paths(paths=[path], fmt="claude-code", owner=owner)
    assert report.messages_new == 0
    assert not [q for q in queries.captured_queries if q["sql"].startswith("ANALYZE")]
