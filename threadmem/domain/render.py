"""A message as JSON, the shape every surface shows (contract §6): the REST API and the console both render with it.

A renderer two surfaces need lives in the domain, so neither imports the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from rest_framework.fields import DateTimeField

from threadmem.domain.store import StoredMessage
from threadmem.models import Message, quotes_isolated

# DRF's rendering of a time (its settings and time zone), as MessageSerializer renders created_at.
_DATETIME = DateTimeField()


def message_data(
    message: Message | StoredMessage, *, created_at: str | None = None, hide_isolated: bool = False
) -> dict[str, Any]:
    """``api.serializers.MessageSerializer(message).data`` without DRF's per-field machinery.

    Batch appends answer with every stored message; at 1,000 messages a batch
    the generic serializer costs a noticeable share of the request
    (bench/ingest.py). tests/api/test_messages.py pins that both agree.
    ``created_at`` is the rendered time when the caller has it already.
    ``hide_isolated``: an isolated message keeps its place and flags, without
    its content or tool calls (non-staff callers hold the agent's token, contract §1);
    so does a superseded summary (``quotes_isolated``).
    """
    hidden = hide_isolated and quotes_isolated(message)
    return {
        "id": message.id,
        "generation": message.generation,
        "seq": message.seq,
        "role": message.role,
        "kind": message.kind,
        "content": "" if hidden else message.content,
        "tool_calls": [] if hidden else message.tool_calls,
        "tool_call_id": message.tool_call_id,
        "session_id": message.session_id,
        "source_id": message.source_id,
        "model_visible": message.model_visible,
        "isolated": message.isolated,
        "superseded_by": message.superseded_by_id,
        "created_at": _DATETIME.to_representation(message.created_at) if created_at is None else created_at,
    }


def messages_data(messages: Sequence[Message | StoredMessage], *, hide_isolated: bool = False) -> list[dict[str, Any]]:
    """``message_data`` of each, rendering each distinct created_at once.

    One append stamps all its messages with the same time, and rendering it
    per message (the active time zone is a context-local lookup) was a
    noticeable share of the Python of a 500-message batch.
    """
    rendered: dict[datetime, str] = {}
    data = []
    for message in messages:
        created_at = rendered.get(message.created_at)
        if created_at is None:
            created_at = rendered[message.created_at] = _DATETIME.to_representation(message.created_at)
        data.append(message_data(message, created_at=created_at, hide_isolated=hide_isolated))
    return data
