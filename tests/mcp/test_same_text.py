"""The agent-turn loop's dispatcher and the MCP server answer the same call with the same text."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_server.server import build_server
from tests.support.mcp_client import run, text_of
from threadmem.features.tools import run_tool
from threadmem.models import Message, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_agent_loop_and_the_mcp_server_give_the_same_text_for_the_same_call(alice, alice_thread):
    result_id = Message.objects.get(thread=alice_thread, role="tool").id
    calls = [
        ("search_memory", {"query": "nginx.conf staging", "channel": alice_thread.channel}),
        ("search_memory", {"query": "worker_processes"}),
        ("message_context_read", {"message_id": result_id, "offset": 12_000}),
    ]
    agent_texts = [run_tool(name=name, arguments=args, user=alice, surface="agent") for name, args in calls]
    server = build_server(user_of=lambda ctx: alice)

    async def main():
        async with Client(server) as client:
            answers = []
            for name, args in calls:
                if "message_id" in args:
                    args = {"messageId": args["message_id"], "offset": args["offset"]}
                answers.append(await client.call_tool(name, args))
            return answers

    answers = run(main)
    assert [text_of(answer) for answer in answers] == agent_texts
    assert "--- messageId=" in agent_texts[0]
    assert "next offset: " in agent_texts[2]
    surfaces = list(ToolCall.objects.order_by("id").values_list("surface", flat=True))
    assert surfaces == ["agent"] * 3 + ["mcp"] * 3


def test_a_refused_call_is_the_agent_loops_error_line_without_its_prefix(alice):
    server = build_server(user_of=lambda ctx: alice)
    agent_text = run_tool(name="search_memory", arguments={"query": "ab", "channel": "*"}, user=alice, surface="agent")

    async def main():
        async with Client(server) as client:
            return await client.call_tool("search_memory", {"query": "ab", "channel": "*"})

    answer = run(main)
    assert answer.is_error
    assert agent_text == f"error: {text_of(answer)}"
