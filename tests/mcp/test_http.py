"""Streamable HTTP at /mcp/ on the deployment's ASGI app under uvicorn, driven by the SDK's client."""

from __future__ import annotations

import httpx2
import pytest
from mcp.shared.exceptions import MCPError

from tests.support.factories import append, make_thread
from tests.support.mcp_client import SECRET, bobs_attempts, http_session, run, text_of, token_of
from threadmem.models import Message, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def test_it_lists_and_calls_both_tools_with_the_rest_text(web, alice, alice_thread):
    token = token_of(alice)
    call_id = Message.objects.get(thread=alice_thread, role="assistant").id
    rest_headers = {"Authorization": f"Token {token}"}
    rest_search = httpx2.post(
        f"{web}/api/v1/search/", json={"query": "staging", "channel": alice_thread.channel}, headers=rest_headers
    ).json()
    rest_read = httpx2.get(f"{web}/api/v1/messages/{call_id}/", headers=rest_headers).json()

    async def main():
        async with http_session(f"{web}/mcp/", f"Bearer {token}") as client:
            tools = (await client.list_tools()).tools
            search = await client.call_tool("search_memory", {"query": "staging", "channel": alice_thread.channel})
            read = await client.call_tool("message_context_read", {"messageId": call_id})
            return tools, search, read

    tools, search, read = run(main)
    assert [tool.name for tool in tools] == ["search_memory", "message_context_read"]
    assert text_of(search) == rest_search["text"]
    assert search.structured_content == rest_search
    assert text_of(read) == rest_read["text"]
    assert read.structured_content == rest_read
    assert list(ToolCall.objects.filter(surface="mcp").values_list("tool", flat=True).order_by("id")) == [
        "search_memory",
        "message_context_read",
    ]


def test_it_takes_the_token_in_drfs_token_scheme_too_and_without_the_trailing_slash(web, alice, alice_thread):
    async def main():
        async with http_session(f"{web}/mcp", f"Token {token_of_alice}") as client:
            return await client.call_tool("search_memory", {"query": "staging", "channel": alice_thread.channel})

    token_of_alice = token_of(alice)
    result = run(main)
    assert not result.is_error
    assert result.structured_content["literal_hits_total"] == 1


@pytest.mark.parametrize("authorization", [None, "Bearer not-a-token", "Basic YWxpY2U6eA=="])
def test_it_answers_401_and_no_tool_list_without_a_valid_token(web, alice, authorization):
    headers = {**MCP_HEADERS, **({"Authorization": authorization} if authorization else {})}
    response = httpx2.post(f"{web}/mcp/", json=LIST_TOOLS, headers=headers)
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "search_memory" not in response.text
    if authorization is None:
        rest = httpx2.get(f"{web}/api/v1/tools/")
        assert rest.status_code == 401
        assert response.json() == rest.json()

    async def main():
        async with http_session(f"{web}/mcp/", authorization) as client:
            await client.list_tools()

    with pytest.raises((MCPError, ExceptionGroup, httpx2.HTTPStatusError)):
        run(main)


def test_bobs_token_never_reaches_alices_thread_global_search_included(web, alice, alice_thread, bob):
    append(make_thread(bob, "bob-1"), {"role": "user", "content": "bob deploys staging too"})
    alice_ids = list(Message.objects.filter(thread=alice_thread).values_list("id", flat=True))
    bob_token = token_of(bob)

    async def main():
        async with http_session(f"{web}/mcp/", f"Bearer {bob_token}") as client:
            return await bobs_attempts(client, alice_thread, alice_ids)

    scoped, global_secret, global_word, reads = run(main)
    assert scoped.is_error
    assert global_secret.structured_content["literal_hits_total"] == 0
    assert "messageId=" not in text_of(global_secret)
    assert [hit["message_id"] for hit in global_word.structured_content["hits"]] == [
        Message.objects.get(thread__channel="bob-1").id
    ]
    assert all(read.is_error for read in reads)
    for result in (scoped, global_word, *reads):
        assert SECRET not in text_of(result)


def test_the_same_server_serves_the_console_static_files_and_health(web, alice):
    assert httpx2.get(f"{web}/healthz").status_code == 200
    assert httpx2.get(f"{web}/static/console/console.css").status_code == 200
    assert httpx2.get(f"{web}/console/login/").status_code == 200
    assert (
        httpx2.post(f"{web}/mcp/", json=LIST_TOOLS, headers={**MCP_HEADERS, "Host": "evil.example"}).status_code == 400
    )
