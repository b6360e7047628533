"""``manage.py redact_secrets``: a store written with redaction off is cleaned, derived indexes included, resumably."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command

from tests.support.factories import append, append_tool_exchange, make_thread, open_generation
from tests.support.secrets import (
    AWS_KEY_ID,
    CLASSIC_REDACTED,
    CLASSIC_TOKEN,
    DATABASE_URL,
    GITHUB_TOKEN,
    REDACTED_ARGUMENTS,
    REDACTED_RESULT,
    SECRET_ARGUMENTS,
    SECRET_RESULT,
    SECRETS,
)
from tests.support.semantic import embedded
from threadmem.features.search import search_memory
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


def test_a_dry_run_counts_per_rule_and_field_and_changes_nothing(unredacted_store):
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
    for line in (
        "field message content: 9 redactions",
        "field tool-call arguments: 3 redactions",
        "field thread titles: 1 redactions",
        "field import problems: 1 redactions",
        "field tool-call log: 1 redactions",
    ):
        assert line in out
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


# --- tool names, and what a run prints ------------------------------------------------------------------------


@pytest.fixture
def named_store(owner, settings):
    """A thread written with redaction off whose channel, title and tool call's name hold a token."""
    settings.THREADMEM_REDACT_SECRETS = False
    thread = make_thread(owner, f"cli:{CLASSIC_TOKEN}", title=f"push with {CLASSIC_TOKEN}")
    call, _ = append_tool_exchange(
        thread, {"id": "call_1", "name": CLASSIC_TOKEN, "arguments": {"command": "make deploy-zebrafish"}}, "deployed"
    )
    settings.THREADMEM_REDACT_SECRETS = True
    assert ToolArgument.objects.get(message=call).tool_name == CLASSIC_TOKEN
    return thread, call


def test_it_redacts_tool_names_in_tool_calls_and_their_argument_rows_and_a_second_run_changes_nothing(
    named_store, owner
):
    thread, call = named_store

    out = run()

    call.refresh_from_db()
    assert call.tool_calls == [
        {"id": "call_1", "name": CLASSIC_REDACTED, "arguments": {"command": "make deploy-zebrafish"}}
    ]
    assert ToolArgument.objects.get(message=call).tool_name == CLASSIC_REDACTED
    assert Thread.objects.get(pk=thread.pk).title == f"push with {CLASSIC_REDACTED}"
    assert "changed: 1 messages, 1 tool arguments, 0 pieces to embed again, 1 titles" in out
    # The answer's header names the channel searched, an id that stays as it came.
    text = search_memory(user=owner, query="deploy-zebrafish", channel=thread.channel).text.replace(thread.channel, "")
    assert f"tool={CLASSIC_REDACTED}" in text and CLASSIC_TOKEN not in text
    rows = store_rows()

    assert "changed: 0 messages, 0 tool arguments, 0 pieces to embed again, 0 titles" in run()
    assert store_rows() == rows


def test_a_run_resumed_after_a_tool_call_leaves_its_name_as_it_was(named_store):
    _, call = named_store

    run("--from-id", str(call.id + 1))

    call.refresh_from_db()
    assert call.tool_calls[0]["name"] == CLASSIC_TOKEN


def test_a_dry_run_prints_counts_by_rule_and_field_and_no_stored_text(named_store):
    before = store_rows()

    out = run("--dry-run")

    assert store_rows() == before
    assert "would change: 1 messages, 1 tool arguments, 0 pieces to embed again, 1 titles" in out
    assert "rule github token: 2 redactions" in out
    assert "field tool names: 1 redactions" in out and "field thread titles: 1 redactions" in out
    # Neither the secret nor the title or channel around it: a channel is an id, stored as it came.
    assert CLASSIC_TOKEN not in out and "push with" not in out and "cli:" not in out
