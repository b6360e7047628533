"""message_context_read: one stored message, paged, for models and operators (contract §3)."""

from __future__ import annotations

import pytest

from tests.support.factories import append, append_tool_exchange, make_thread, open_generation
from threadmem.domain import services
from threadmem.errors import InvalidInput, NotFound
from threadmem.features.search import message_context_read, search_memory
from threadmem.features.search.answer_caps import AUDIT_READ_MAX_CHARS
from threadmem.models import ToolCall


@pytest.fixture
def exchange(thread):
    """An assistant tool call and its result."""
    call = {"id": "call_7", "name": "shell", "arguments": {"command": "uptime"}}
    return append_tool_exchange(thread, call, "up 3 days", content="checking the box", session_id="s-9")


@pytest.mark.django_db
def test_it_reads_a_message_as_stored_with_its_metadata(owner, thread, exchange):
    call, _ = exchange
    read = message_context_read(user=owner, message_id=call.id)
    lines = read.text.split("\n")
    assert lines[0] == f"[message_context_read] messageId={call.id} view=audit"
    assert lines[1] == (
        f"channel: {thread.channel} · sessionId: s-9 · generation: 1 · seq: 1 · role: assistant · kind: message"
    )
    assert "flags: model_visible=true isolated=false superseded_by=- thread_isolated=false" in lines[2]
    assert read.text.endswith("content (characters 0 to 16 of 16):\nchecking the box")
    assert (read.content, read.next_offset, read.offset) == ("checking the box", None, 0)


@pytest.mark.django_db
def test_a_tool_call_names_its_results_and_a_result_names_its_call(owner, exchange):
    call, result = exchange
    call_read = message_context_read(user=owner, message_id=call.id)
    assert f"- id=call_7 name=shell results: messageId={result.id}\n" in call_read.text
    assert '  arguments: {"command": "uptime"}' in call_read.text
    assert call_read.result_message_ids == [result.id]
    result_read = message_context_read(user=owner, message_id=result.id)
    assert f"result of tool call: id=call_7 tool=shell in messageId={call.id}" in result_read.text
    assert result_read.call_message_id == call.id


@pytest.mark.django_db
def test_it_pages_long_content_in_reads_of_at_most_12000_characters(owner, thread):
    content = "".join(f"line {i:05d} 😀\n" for i in range(4000))  # 56,000 characters
    (message,) = append(thread, {"role": "tool", "content": content})
    pages = []
    offset = 0
    while True:
        read = message_context_read(user=owner, message_id=message.id, offset=offset)
        assert len(read.text) <= AUDIT_READ_MAX_CHARS
        pages.append(read.content)
        if read.next_offset is None:
            break
        assert read.text.endswith(f"\nnext offset: {read.next_offset}")
        assert read.next_offset == offset + len(read.content)
        offset = read.next_offset
    assert "".join(pages) == content
    assert len(pages) == 5
    assert ToolCall.objects.filter(tool="message_context_read", truncated=True).count() == 4


@pytest.mark.django_db
def test_a_model_reads_exactly_what_search_may_show_it(owner, admin, thread, exchange):
    call, result = exchange
    (machine,) = append(thread, {"role": "system", "kind": "machine_event", "content": "status"})
    (invisible,) = append(thread, {"role": "tool", "model_visible": False, "content": "hidden"})
    (old,) = append(thread, {"role": "user", "content": "typo"})
    append(thread, {"role": "user", "content": "fixed", "supersedes": old.id})
    summary = open_generation(thread, "the summary")
    services.message_set_isolated(message=result, isolated=True, actor=admin)
    for message_id in (machine.id, invisible.id, old.id, summary.id, result.id, 999_999, "abc"):
        with pytest.raises(NotFound, match="not found"):
            message_context_read(user=owner, message_id=message_id)
    # The call no longer names its isolated result to a model.
    assert "results: none stored" in message_context_read(user=owner, message_id=call.id).text


@pytest.mark.django_db
def test_an_isolated_message_vanishes_from_search_and_from_every_callers_audit_read(
    owner, operator, admin, thread, exchange
):
    call, result = exchange
    assert search_memory(user=owner, query="uptime", channel=thread.channel).literal_hits_total == 1
    services.message_set_isolated(message=call, isolated=True, actor=admin)
    assert search_memory(user=owner, query="uptime", channel=thread.channel).literal_hits_total == 0
    for user in (owner, operator, admin):
        with pytest.raises(NotFound):
            message_context_read(user=user, message_id=call.id)
    # The result stays readable and no longer names its isolated call.
    assert "not stored in this thread" in message_context_read(user=operator, message_id=result.id).text


@pytest.mark.django_db
def test_another_owners_message_is_not_found(other, exchange):
    call, _ = exchange
    with pytest.raises(NotFound):
        message_context_read(user=other, message_id=call.id)


@pytest.mark.django_db
def test_it_refuses_a_bad_view_or_offset_and_logs_the_refusal(owner, exchange):
    call, _ = exchange
    for kwargs, problem in [
        ({"view": "raw"}, "view must be one of: audit"),
        ({"offset": -1}, "non-negative"),
        ({"offset": "3"}, "non-negative"),
        ({"offset": True}, "non-negative"),
        ({"offset": 17}, "past the end"),
    ]:
        with pytest.raises(InvalidInput, match=problem):
            message_context_read(user=owner, message_id=call.id, **kwargs)
    assert ToolCall.objects.filter(tool="message_context_read", status_code=400).count() == 5
    # The end of the content is a valid (empty) page.
    assert message_context_read(user=owner, message_id=call.id, offset=16).content == ""


@pytest.mark.django_db
def test_it_logs_each_read(owner, thread, exchange):
    call, _ = exchange
    read = message_context_read(user=owner, message_id=call.id, surface="mcp")
    logged = ToolCall.objects.get()
    assert (logged.tool, logged.surface, logged.thread_id, logged.caller_id) == (
        "message_context_read",
        "mcp",
        thread.id,
        owner.id,
    )
    assert logged.arguments == {"message_id": call.id, "view": "audit", "offset": 0}
    assert (logged.chars_returned, logged.truncated, logged.status_code) == (len(read.text), False, 200)


@pytest.mark.django_db
def test_it_bounds_huge_tool_call_arguments(owner, other):
    thread = make_thread(owner, "big-args")
    (call,) = append(
        thread,
        {"role": "assistant", "tool_calls": [{"id": "w", "name": "write", "arguments": {"body": "z" * 50_000}}]},
    )
    read = message_context_read(user=owner, message_id=call.id)
    assert len(read.text) <= AUDIT_READ_MAX_CHARS
    assert "…[truncated]" in read.text
