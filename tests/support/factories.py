"""Row factories and authenticated clients: users, threads, appended messages, a generation made by hand."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from threadmem.domain import services
from threadmem.models import Message, Thread


def make_user(username: str, **flags: Any):
    return get_user_model().objects.create_user(username=username, password=f"{username}-password", **flags)


def token_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


def make_thread(owner, channel: str | None = None, **kwargs: Any) -> Thread:
    return services.thread_create(owner=owner, channel=channel, **kwargs)


def append(thread: Thread, *messages: dict[str, Any]) -> list[Message]:
    return services.messages_append(thread=thread, messages=services.messages_parse(list(messages)))


def append_tool_exchange(
    thread: Thread, call: dict[str, Any], result: str, *, content: str | None = None, session_id: str | None = None
) -> tuple[Message, Message]:
    """An assistant's tool ``call`` (``{"id", "name", "arguments"}``, ``content`` beside it if given) and the tool's
    ``result``, both in ``session_id`` if given."""
    call_message: dict[str, Any] = {"role": "assistant", "tool_calls": [call]}
    result_message: dict[str, Any] = {"role": "tool", "tool_call_id": call["id"], "content": result}
    if content is not None:
        call_message["content"] = content
    if session_id is not None:
        call_message["session_id"] = result_message["session_id"] = session_id
    stored_call, stored_result = append(thread, call_message, result_message)
    return stored_call, stored_result


def fork_at_middle(thread: Thread, channel: str, before: str, at: str, after: str) -> tuple[list[Message], Thread]:
    """Three messages in ``thread`` (user, assistant, user) and a fork ``channel`` of it at the assistant's."""
    messages = append(
        thread,
        {"role": "user", "content": before},
        {"role": "assistant", "content": at},
        {"role": "user", "content": after},
    )
    return messages, make_thread(thread.owner, channel, fork_from=messages[1])


def make_summary(thread: Thread, *, generation: int, seq: int, content: str, role: str = "user") -> Message:
    """A summary message stored directly (no compaction): the tests give it the generation and seq they need."""
    return Message.objects.create(
        thread=thread, generation=generation, seq=seq, role=role, kind=Message.Kind.SUMMARY, content=content
    )


def row_counts() -> dict[str, int]:
    """What a refused request must leave unchanged."""
    from threadmem.models import IsolationEvent, ToolArgument

    return {
        "threads": Thread.objects.count(),
        "messages": Message.objects.count(),
        "tool_arguments": ToolArgument.objects.count(),
        "isolation_events": IsolationEvent.objects.count(),
    }


def console_client(user):
    from django.test import Client

    client = Client()
    client.force_login(user)
    return client


def open_generation(thread: Thread, summary: str) -> Message:
    """What a compaction leaves behind, made directly: the summary opening generation N+1.

    The search tests need generations, not the compaction machinery.
    """
    from django.db.models import F

    from threadmem.models import Generation

    thread.refresh_from_db()
    closing = thread.current_generation
    number = closing + 1
    seq = thread.next_seq
    Thread.objects.filter(pk=thread.pk).update(current_generation=number, next_seq=F("next_seq") + 1)
    summary_message = Message.objects.create(
        thread=thread, generation=number, seq=seq, role=Message.Role.SYSTEM, kind=Message.Kind.SUMMARY, content=summary
    )
    Generation.objects.filter(thread=thread, number=closing).update(state="closed", summary_message=summary_message)
    Generation.objects.create(thread=thread, number=number)
    thread.refresh_from_db()
    return summary_message
