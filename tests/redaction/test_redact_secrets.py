"""``manage.py redact_secrets``: a store written with redaction off is cleaned, derived indexes included, resumably."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.support.factories import append, append_tool_exchange, make_thread, open_generation
from tests.support.secrets import (
    AWS_KEY_ID,
    DATABASE_URL,
    GITHUB_TOKEN,
    REDACTED_ARGUMENTS,
    REDACTED_RESULT,
    SECRET_ARGUMENTS,
    SECRET_RESULT,
    SECRETS,
)
from tests.support.semantic import embedded
from threadmem.models import Chunk, EmbeddingProgress, Import, Message, Thread, ToolArgument, ToolCall

pytestmark = pytest.mark.django_db


def run(*args: str) -> str:
    out = io.StringIO()
    call_command("redact_secrets", *args, stdout=out)
    return out.getvalue()


def store_rows() -> dict[str, list]:
    """Every row the command may change, as text."""
    return {
        "messages": list(Message.objects.order_by("id").values_list("id", "content", "tool_calls")),
        "leaves": list(ToolArgument.objects.order_by("id").values_list("id", "value")),
        "pieces": list(Chunk.objects.order_by("id").values_list("id", "text")),
        "titles": list(Thread.objects.order_by("id").values_list("id", "title")),
        "imports": list(Import.objects.order_by("id").values_list("id", "errors", "error")),
        "log": list(ToolCall.objects.order_by("id").values_list("id", "arguments")),
        "progress": list(EmbeddingProgress.objects.order_by("id").values_list("id", "embedded_seq", "changes")),
    }


def holds_a_secret(rows: dict[str, list]) -> bool:
    text = json.dumps(rows)
    return any(json.dumps(secret)[1:-1] in text for secret in SECRETS)


@pytest.fixture
def unredacted_store(owner, settings, fake_openai):
    """A thread written with redaction off: a tool exchange, a prompt, a summary, a title, an import, a logged
    search, all embedded."""
    settings.THREADMEM_REDACT_SECRETS = False
    settings.THREADMEM_EMBEDDING_MODEL = fake_openai.embedding_model
    thread = make_thread(owner, "cli:leaky", title=f"deploy with {GITHUB_TOKEN}")
    append(thread, {"role": "user", "content": f"the database is {DATABASE_URL}"})
    call, result = append_tool_exchange(
        thread, {"id": "call_1", "name": "shell", "arguments": SECRET_ARGUMENTS}, SECRET_RESULT
    )
    open_generation(thread, f"## 1. Primary request\nThe app reads {AWS_KEY_ID} from .env")
    append(thread, {"role": "user", "content": "nothing secret here"})
    Import.objects.create(owner=owner, format="claude-code", errors=[f"s.jsonl:3: unknown record type '{AWS_KEY_ID}'"])
    ToolCall.objects.create(caller=owner, thread=thread, tool="search_memory", arguments={"query": GITHUB_TOKEN})
    embedded(thread)
    settings.THREADMEM_REDACT_SECRETS = True
    assert holds_a_secret(store_rows()) and Chunk.objects.filter(text__contains=GITHUB_TOKEN).exists()
    return thread, call, result


def test_a_dry_run_counts_per_rule_and_thread_and_changes_nothing(unredacted_store):
    before = store_rows()

    out = run("--dry-run")

    assert store_rows() == before
    pieces = Chunk.objects.exclude(message__content="nothing secret here").count()
    assert (
        f"would change: 4 messages, 3 tool arguments, {pieces} pieces to embed again, 1 titles, 1 imports, "
        "1 logged tool calls" in out
    )
    # The title, the call's command, the tool result and the logged query; the summary, the result and the import.
    assert "rule github token: 4 redactions" in out and "rule aws access key: 3 redactions" in out
    assert "thread cli:leaky: 13 redactions" in out
    assert not any(secret in out for secret in SECRETS)


def test_it_leaves_no_secret_in_messages_leaves_pieces_summaries_titles_imports_or_the_log(unredacted_store, owner_api):
    thread, call, result = unredacted_store
    changes = dict(EmbeddingProgress.objects.values_list("thread_id", "changes"))

    out = run("--batch", "2")

    rows = store_rows()
    assert not holds_a_secret(rows)
    call.refresh_from_db()
    result.refresh_from_db()
    assert call.tool_calls[0]["arguments"] == REDACTED_ARGUMENTS and result.content == REDACTED_RESULT
    assert Message.objects.get(thread=thread, kind="summary").content.endswith(
        "reads [redacted: aws access key] from .env"
    )
    thread.refresh_from_db()
    assert thread.title == "deploy with [redacted: github token]"
    # The changed messages' pieces were dropped and embedded again from the redacted text.
    assert Chunk.objects.filter(message=result, text__contains="[redacted: github token]").exists()
    assert EmbeddingProgress.objects.get(thread=thread).changes > changes[thread.pk]
    # Every batch says where to resume.
    second = Message.objects.order_by("id").values_list("id", flat=True)[1]
    assert f"resume with --from-id {second + 1}" in out and "changed: 4 messages" in out
    assert not any(secret in out for secret in SECRETS)
    for secret in SECRETS:
        assert owner_api.post("/api/v1/search/", {"query": secret}, format="json").json()["literal_hits_total"] == 0
    rows = store_rows()  # with the searches' log rows (redacted as they were written)

    assert "changed: 0 messages, 0 tool arguments, 0 pieces to embed again, 0 titles, 0 imports, 0 logged" in run()
    assert store_rows() == rows


def test_a_run_resumed_from_an_id_leaves_the_messages_before_it_as_they_are(unredacted_store):
    thread, call, result = unredacted_store
    first = Message.objects.filter(thread=thread).order_by("id").first()

    run("--from-id", str(call.id))

    assert DATABASE_URL in Message.objects.get(pk=first.pk).content
    assert Message.objects.get(pk=result.pk).content == REDACTED_RESULT
    run("--from-id", "1")
    assert not holds_a_secret(store_rows())


def test_an_owner_run_leaves_other_owners_threads_alone(unredacted_store, other, settings):
    settings.THREADMEM_REDACT_SECRETS = False
    (theirs,) = append(make_thread(other, "cli:theirs"), {"role": "user", "content": f"token {GITHUB_TOKEN}"})
    settings.THREADMEM_REDACT_SECRETS = True

    run("--owner", "owner")

    assert Message.objects.get(pk=theirs.pk).content == f"token {GITHUB_TOKEN}"
    assert not Message.objects.filter(thread__owner__username="owner", content__contains=GITHUB_TOKEN).exists()
