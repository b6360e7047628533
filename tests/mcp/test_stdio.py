"""`manage.py mcp` as a real process, driven over stdio by the SDK's client."""

from __future__ import annotations

import subprocess
import sys

import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support.factories import append, make_thread, token_client
from tests.support.mcp_client import ROOT, SECRET, bobs_attempts, child_env, run, stdio_server, text_of, token_of
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS
from threadmem.models import Message, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

READ_ONLY = {"read_only_hint": True, "destructive_hint": False, "idempotent_hint": True, "open_world_hint": False}


def test_it_lists_both_tools_in_a_fixed_order_with_titles_hints_and_schemas(alice):
    server = stdio_server(token_of(alice))

    async def main():
        async with Client(server) as client:
            return (await client.list_tools()).tools

    tools = run(main)
    assert [tool.name for tool in tools] == ["search_memory", "message_context_read"]
    search, read = tools
    assert (search.title, read.title) == ("Search memory", "Read a stored message")
    for tool in tools:
        assert tool.annotations.model_dump(exclude_none=True, exclude={"title"}) == READ_ONLY
        assert tool.output_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
    assert search.input_schema["required"] == ["query"]
    assert set(search.input_schema["properties"]) == {"query", "channel", "cursor", "tool", "role", "project"}
    assert read.input_schema["required"] == ["messageId"]
    assert set(read.input_schema["properties"]) == {"messageId", "view", "offset"}
    assert set(search.output_schema["required"]) >= {"text", "literal_hits_total", "hits"}
    assert set(read.output_schema["required"]) >= {"text", "content", "next_offset"}


def test_it_answers_search_and_audit_read_with_the_rest_text_and_json(alice, alice_thread):
    rest = token_client(alice)
    call_id = Message.objects.get(thread=alice_thread, role="assistant").id

    server = stdio_server(token_of(alice))

    async def main():
        async with Client(server) as client:
            search = await client.call_tool("search_memory", {"query": "nginx.conf", "channel": alice_thread.channel})
            read = await client.call_tool("message_context_read", {"messageId": call_id, "view": "audit"})
            return search, read

    search, read = run(main)
    rest_search = rest.post("/api/v1/search/", {"query": "nginx.conf", "channel": alice_thread.channel}, format="json")
    assert not search.is_error
    assert text_of(search) == rest_search.json()["text"]
    assert "--- messageId=" in text_of(search)
    assert search.structured_content["literal_hits_total"] == rest_search.json()["literal_hits_total"] >= 1
    assert search.structured_content["hits"][0]["message_id"] == rest_search.json()["hits"][0]["message_id"]
    rest_read = rest.get(f"/api/v1/messages/{call_id}/", {"view": "audit"}).json()
    assert not read.is_error
    assert text_of(read) == rest_read["text"]
    assert read.structured_content == rest_read


def test_it_pages_an_audit_read_with_offset(alice, alice_thread):
    result_id = Message.objects.get(thread=alice_thread, role="tool").id

    server = stdio_server(token_of(alice))

    async def main():
        async with Client(server) as client:
            pages = [await client.call_tool("message_context_read", {"messageId": result_id})]
            while pages[-1].structured_content["next_offset"] is not None:
                offset = pages[-1].structured_content["next_offset"]
                pages.append(await client.call_tool("message_context_read", {"messageId": result_id, "offset": offset}))
            return pages

    pages = run(main)
    assert len(pages) >= 3
    assert all(len(text_of(page)) <= 12_000 for page in pages)
    assert f"next offset: {pages[0].structured_content['next_offset']}" in text_of(pages[0])
    content = Message.objects.get(id=result_id).content
    assert "".join(page.structured_content["content"] for page in pages) == content


def test_bad_arguments_answer_is_error_with_the_message_rest_gives(alice, alice_thread):
    rest = token_client(alice)

    server = stdio_server(token_of(alice))

    async def main():
        async with Client(server) as client:
            empty = await client.call_tool("search_memory", {"query": "  "})
            unknown = await client.call_tool("search_memory", {"query": "deploy", "channel": "no-such-channel"})
            missing = await client.call_tool("message_context_read", {"messageId": 987654})
            negative = await client.call_tool("message_context_read", {"messageId": 1, "offset": -1})
            no_id = await client.call_tool("message_context_read", {})
            return empty, unknown, missing, negative, no_id

    empty, unknown, missing, negative, no_id = run(main)
    assert all(result.is_error for result in (empty, unknown, missing, negative, no_id))
    assert text_of(empty) == rest.post("/api/v1/search/", {"query": "  "}, format="json").json()["detail"]
    rest_unknown = rest.post("/api/v1/search/", {"query": "deploy", "channel": "no-such-channel"}, format="json")
    assert rest_unknown.status_code == 404
    assert text_of(unknown) == rest_unknown.json()["detail"]
    assert text_of(missing) == rest.get("/api/v1/messages/987654/").json()["detail"]
    assert text_of(negative).startswith("offset must be a non-negative integer")
    assert text_of(no_id) == "messageId is required"
    assert empty.structured_content == {"detail": text_of(empty), "field": "query"}


def test_it_caps_a_search_of_a_huge_thread_at_12000_characters(alice):
    thread = make_thread(alice, "huge")
    append(thread, *({"role": "tool", "content": f"needle {i} " + "hay " * 500} for i in range(80)))
    # A child whose "Other memory results" is far longer than the cap (tests/mcp/providers.py).
    server = stdio_server(token_of(alice)).model_copy(update={"args": ["-m", "tests.mcp.providers"]})

    async def main():
        async with Client(server) as client:
            return await client.call_tool("search_memory", {"query": "needle", "channel": "huge"})

    result = run(main)
    assert len(text_of(result)) == THREAD_SEARCH_MAX_CHARS
    assert text_of(result).endswith("[search results truncated]")
    assert result.structured_content["truncated"] is True
    assert "more hits not shown; narrow the query" in text_of(result)


def test_bobs_token_never_reaches_alices_thread_global_search_included(alice, alice_thread, bob):
    append(make_thread(bob, "bob-1"), {"role": "user", "content": "bob deploys staging too"})
    alice_ids = list(Message.objects.filter(thread=alice_thread).values_list("id", flat=True))

    server = stdio_server(token_of(bob))

    async def main():
        async with Client(server) as client:
            return await bobs_attempts(client, alice_thread, alice_ids)

    scoped, global_secret, global_word, reads = run(main)
    assert scoped.is_error
    assert (
        text_of(scoped)
        == token_client(bob)
        .post("/api/v1/search/", {"query": SECRET, "channel": alice_thread.channel}, format="json")
        .json()["detail"]
    )
    assert global_secret.structured_content["literal_hits_total"] == 0
    assert global_word.structured_content["literal_hits_total"] == 1
    assert "bob deploys staging" in text_of(global_word)
    assert "messageId=" not in text_of(global_secret)  # the header echoes the query; nothing else
    for result in (scoped, global_word, *reads):
        assert SECRET not in text_of(result)
        assert "nginx" not in text_of(result)
    assert all(read.is_error for read in reads)


def test_every_call_lands_in_the_tool_call_log_with_surface_mcp(alice, alice_thread):
    server = stdio_server(token_of(alice))

    async def main():
        async with Client(server) as client:
            await client.call_tool("search_memory", {"query": "staging", "channel": alice_thread.channel})
            await client.call_tool("search_memory", {"query": ""})

    run(main)
    calls = list(ToolCall.objects.order_by("id"))
    assert [(c.surface, c.tool, c.caller_id, c.status_code) for c in calls] == [
        ("mcp", "search_memory", alice.id, 200),
        ("mcp", "search_memory", alice.id, 400),
    ]
    assert calls[0].thread_id == alice_thread.id


@pytest.mark.parametrize(
    ("token", "message"),
    [(None, "THREADMEM_TOKEN is not set"), ("not-a-token", "THREADMEM_TOKEN was refused: Invalid token.")],
)
def test_it_refuses_to_start_without_a_valid_token(alice, token, message):
    env = child_env() if token is None else child_env(THREADMEM_TOKEN=token)
    process = subprocess.run(
        [sys.executable, "manage.py", "mcp"], cwd=ROOT, env=env, input="", capture_output=True, text=True, timeout=60
    )
    assert process.returncode != 0
    assert message in process.stderr

    async def main():
        async with Client(stdio_server(token)) as client:
            await client.list_tools()

    with pytest.raises((MCPError, ExceptionGroup)):
        run(main)
