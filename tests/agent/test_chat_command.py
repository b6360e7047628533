"""``manage.py chat CHANNEL``: one agent turn per line, over the same service as the API."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from tests.support.factories import append
from threadmem.models import Message, Thread, ToolCall


def chat(*args: str, lines: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("chat", *args, stdin=io.StringIO(lines), stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_runs_one_turn_per_line_and_prints_the_answers(thread, fake_openai):
    fake_openai.push_chat("first answer")
    fake_openai.push_chat("second answer")

    out, err = chat(thread.channel, lines="hello\n\nand again\n")

    assert err == ""
    assert "agent> first answer" in out and "agent> second answer" in out
    contents = list(Message.objects.filter(thread=thread).order_by("seq").values_list("role", "content"))
    assert contents == [
        ("user", "hello"),
        ("assistant", "first answer"),
        ("user", "and again"),
        ("assistant", "second answer"),
    ]


def test_it_stops_at_exit(thread, fake_openai):
    fake_openai.push_chat("only answer")

    chat(thread.channel, lines="one\n/exit\ntwo\n")

    assert len(fake_openai.chat_requests()) == 1
    assert Message.objects.filter(thread=thread, role="user").count() == 1


def test_it_shows_the_tool_calls_the_model_makes(thread, fake_openai):
    append(thread, {"role": "user", "content": "the backup bucket is s3://acme-backups"})
    fake_openai.push_chat(tool_calls=[{"name": "search_memory", "arguments": {"query": "backup bucket"}}])
    fake_openai.push_chat("s3://acme-backups")

    out, _ = chat(thread.channel, "--session", "term-1", lines="where are the backups?\n")

    assert '· search_memory({"query": "backup bucket"})' in out
    assert "→" in out and "chars: [search_memory]" in out
    assert out.rstrip().endswith("agent> s3://acme-backups")
    assert ToolCall.objects.get().surface == ToolCall.Surface.AGENT
    assert set(Message.objects.filter(thread=thread, seq__gt=1).values_list("session_id", flat=True)) == {"term-1"}


def test_it_creates_a_missing_thread_for_the_named_user(owner, fake_openai):
    fake_openai.push_chat("hi")

    out, _ = chat("cli:new", "--user", "owner", lines="hello\n")

    thread = Thread.objects.get(channel="cli:new")
    assert thread.owner == owner
    assert "created thread cli:new" in out
    assert Message.objects.filter(thread=thread).count() == 2


def test_it_needs_a_user_to_create_a_thread(owner, fake_openai):
    with pytest.raises(CommandError, match="--user"):
        chat("cli:new", lines="hello\n")
    assert not Thread.objects.filter(channel="cli:new").exists()


def test_it_refuses_an_unknown_user(thread, fake_openai):
    with pytest.raises(CommandError, match="no user 'ghost'"):
        chat(thread.channel, "--user", "ghost", lines="hello\n")


def test_another_owners_thread_is_not_there_for_a_user(thread, other, fake_openai):
    fake_openai.push_chat("a thread of my own")
    out, _ = chat(thread.channel, "--user", "other", lines="hello\n")
    # Channels are per owner: the name another owner holds is a new thread of this user's own.
    assert f"created thread {thread.channel} owned by other" in out
    assert not Message.objects.filter(thread=thread).exists()
    assert Message.objects.filter(thread__owner=other, thread__channel=thread.channel).count() == 2


def test_it_reports_model_errors_and_carries_on(thread, fake_openai):
    fake_openai.push_error(500, "overloaded")
    fake_openai.push_chat("back again")

    out, err = chat(thread.channel, lines="first\nsecond\n")

    assert "error (502)" in err and "HTTP 500" in err
    assert "agent> back again" in out


def test_it_refuses_to_start_without_a_model(thread, no_model):
    with pytest.raises(CommandError, match="THREADMEM_CHAT_MODEL"):
        chat(thread.channel, lines="hello\n")
    assert not Message.objects.exists()
