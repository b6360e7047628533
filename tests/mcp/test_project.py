"""search_memory's project over MCP: declared in the tool's input schema (a client bridge passes the current project
when it is), and honoured as over REST."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_server.server import build_server
from tests.support.factories import token_client
from tests.support.mcp_client import run, text_of
from tests.support.projects import APP, SHOP, two_projects

pytestmark = pytest.mark.django_db(transaction=True)


def session(user, *requests: tuple[str, dict]) -> tuple[list, list]:
    server = build_server(user_of=lambda ctx: user)

    async def main():
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return tools, [await client.call_tool(name, args) for name, args in requests]

    return run(main)


def test_each_project_finds_only_its_own_and_the_schema_declares_it(owner, other):
    (app, shop, foreign), ids = two_projects(owner, other)

    tools, (in_app, in_shop, outside) = session(
        owner,
        ("search_memory", {"query": "zebrafish", "project": APP}),
        ("search_memory", {"query": "zebrafish", "project": SHOP}),
        ("search_memory", {"query": "zebrafish", "project": APP, "channel": shop.channel}),
    )

    search = next(tool for tool in tools if tool.name == "search_memory")
    assert search.input_schema["properties"]["project"]["type"] == "string"
    assert "project" not in search.input_schema.get("required", [])
    assert f"messageId={ids[app.channel]} " in text_of(in_app)
    assert f"messageId={ids[shop.channel]} " not in text_of(in_app)
    assert f"messageId={ids[foreign.channel]} " not in text_of(in_app)
    assert f"messageId={ids[shop.channel]} " in text_of(in_shop)
    assert f'project: "{APP}"' in text_of(in_app)
    # The same text REST gives; a channel outside the project is the same refusal.
    rest = token_client(owner).post("/api/v1/search/", {"query": "zebrafish", "project": APP}, format="json")
    assert text_of(in_app) == rest.json()["text"]
    assert outside.is_error and "is in project" in text_of(outside)
