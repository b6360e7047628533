"""Agent-turn test helpers: the turn endpoint of a channel, a search_memory call, a thread's stored messages."""

from __future__ import annotations

from typing import Any

from threadmem.models import Message, Thread

CHANNEL = "slack:C042/1700000000.1"


def turn_url(channel: str = CHANNEL) -> str:
    return f"/api/v1/threads/{channel}/turns/"


def run_turn(api, content: Any = "what next?", channel: str = CHANNEL, **body: Any):
    return api.post(turn_url(channel), {"content": content, **body}, format="json")


def search_call(query: str, **arguments: Any) -> dict[str, Any]:
    return {"name": "search_memory", "arguments": {"query": query, **arguments}}


def stored(thread: Thread) -> list[Message]:
    return list(Message.objects.filter(thread=thread).order_by("seq"))
