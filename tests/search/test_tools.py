"""The two tools as a model sees them: schemas and the run_tool dispatcher."""

from __future__ import annotations

import json

import pytest

from tests.support.factories import append, make_thread
from threadmem.features.search import search_memory
from threadmem.features.tools import TOOLS, run_tool
from threadmem.models import ToolCall


def test_the_schemas_are_openai_function_tools_that_teach_their_use():
    by_name = {tool["function"]["name"]: tool for tool in TOOLS}
    assert set(by_name) == {"search_memory", "message_context_read"}
    for tool in TOOLS:
        assert tool["type"] == "function"
        assert tool["function"]["parameters"]["type"] == "object"
        json.dumps(tool)  # plain JSON, ready for a chat completion
    search = by_name["search_memory"]["function"]
    assert search["parameters"]["required"] == ["query"]
    assert "narrow the query" in search["description"]
    assert "message_context_read" in search["description"]
    read = by_name["message_context_read"]["function"]
    assert read["parameters"]["required"] == ["message_id"]
    assert "next offset" in read["description"]


@pytest.mark.django_db
def test_it_runs_search_memory_in_the_current_thread_by_default(owner, thread):
    append(thread, {"role": "user", "content": "the vortex-5 host"})
    elsewhere = make_thread(owner, "elsewhere")
    append(elsewhere, {"role": "user", "content": "vortex-5 elsewhere"})
    text = run_tool(
        name="search_memory",
        arguments='{"query": "vortex-5"}',
        user=owner,
        default_channel=thread.channel,
        surface="agent",
    )
    assert text == search_memory(user=owner, query="vortex-5", channel=thread.channel).text
    everywhere = run_tool(
        name="search_memory", arguments={"query": "vortex-5", "channel": "*"}, user=owner, surface="agent"
    )
    assert "literal hits: 2 (2 shown)" in everywhere


@pytest.mark.django_db
def test_it_runs_message_context_read_as_model_facing(owner, admin, thread):
    (message,) = append(thread, {"role": "user", "content": "hello there"})
    text = run_tool(name="message_context_read", arguments={"message_id": str(message.id)}, user=owner, surface="agent")
    assert text.startswith(f"[message_context_read] messageId={message.id} view=audit\n")
    # Even an admin's model reads only what search could show it.
    (event,) = append(thread, {"role": "system", "kind": "machine_event", "content": "status"})
    assert run_tool(name="message_context_read", arguments={"message_id": event.id}, user=admin, surface="agent") == (
        f"error: message {event.id} not found"
    )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("search_memory", "{not json", "error: arguments are not valid JSON"),
        ("search_memory", "[1, 2]", "error: arguments must be a JSON object"),
        ("search_memory", {}, "error: query is required"),
        ("search_memory", {"query": "x", "limit": 5}, "error: unknown arguments: limit"),
        ("search_memory", {"query": ""}, "error: query must not be empty"),
        ("message_context_read", {"message_id": "seven"}, "error: message_id must be an integer"),
        ("message_context_read", {"message_id": 1, "offset": -3}, "error: offset must be a non-negative integer"),
        ("message_context_read", {"message_id": 1, "view": "raw"}, "error: view must be one of: audit"),
    ],
)
def test_it_answers_a_bad_call_with_one_line_and_logs_it(owner, thread, name, arguments, error):
    text = run_tool(name=name, arguments=arguments, user=owner, default_channel=thread.channel, surface="agent")
    assert text.startswith(error)
    assert "\n" not in text
    assert ToolCall.objects.filter(tool=name, status_code=400).count() == 1


@pytest.mark.django_db
def test_it_names_the_tools_when_the_model_calls_an_unknown_one(owner):
    assert run_tool(name="recall", arguments={}, user=owner, surface="agent") == (
        "error: unknown tool 'recall'; the memory tools are search_memory, message_context_read"
    )
