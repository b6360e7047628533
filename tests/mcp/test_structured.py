"""What an MCP client hands the model holds the 12,000-character cap: by default no outputSchema and no
structuredContent, so every client reads the text (Claude Code 2.1 reads structuredContent when there is one)."""

from __future__ import annotations

import json

import pytest
from mcp import Client

from tests.support.factories import append
from tests.support.mcp_client import run, stdio_server, text_of, token_of
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS

pytestmark = pytest.mark.django_db(transaction=True)


def test_by_default_the_tools_send_only_the_text(alice, alice_thread):
    append(
        alice_thread,
        *({"role": "tool", "content": f"{'q' * 600} wide-hit-{i} {'r' * 600}"} for i in range(40)),
    )
    server = stdio_server(token_of(alice), THREADMEM_MCP_STRUCTURED_CONTENT="false")

    async def main():
        async with Client(server) as client:
            listed = (await client.list_tools()).tools
            search = await client.call_tool("search_memory", {"query": "wide-hit", "channel": alice_thread.channel})
            bad = await client.call_tool("search_memory", {"query": "wide-hit", "role": "robot"})
            return listed, search, bad

    listed, search, bad = run(main)
    assert [tool.output_schema for tool in listed] == [None, None]
    assert search.structured_content is None and bad.structured_content is None
    text = text_of(search)
    assert "wide-hit-39" in text and "more hits not shown" in text
    # Everything the client gets, as a client that serializes the whole result would hand it on.
    whole = json.dumps(search.model_dump(by_alias=True, exclude_none=True, mode="json"), ensure_ascii=False)
    assert len(text) <= THREAD_SEARCH_MAX_CHARS and len(whole) <= THREAD_SEARCH_MAX_CHARS + 200
    assert bad.is_error and "role must be one of" in text_of(bad)
