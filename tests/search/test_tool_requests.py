"""One declaration per tool: the model's, MCP's and REST's schemas and the domain's keywords agree with it."""

from __future__ import annotations

import inspect

import pytest

from api.declared import request_serializer
from cli.management.commands.search_memory import Command as SearchMemoryCommand
from mcp_server.tools import tools
from threadmem.features.search import message_context_read, search_memory
from threadmem.features.search.answer_caps import QUERY_MAX_CHARS
from threadmem.features.search.search_service import CHANNEL_MAX_CHARS
from threadmem.features.tools import REQUESTS, TOOLS, MessageContextReadRequest, SearchMemoryRequest
from threadmem.lib.projects import PROJECT_MAX_CHARS

DOMAIN = {SearchMemoryRequest: search_memory, MessageContextReadRequest: message_context_read}


@pytest.mark.parametrize("request_class", REQUESTS)
def test_a_requests_fields_are_its_domain_functions_keywords(request_class):
    keywords = inspect.signature(DOMAIN[request_class]).parameters
    assert set(request_class.args()) <= set(keywords)
    for name in request_class.optional():
        default = request_class.__dataclass_fields__[name].default
        assert keywords[name].default == default, name


def test_the_model_and_mcp_see_the_same_arguments_under_mcps_names():
    model = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
    mcp = {tool.name: tool.input_schema for tool in tools()}
    assert list(model) == list(mcp) == [request.name for request in REQUESTS]
    read_model, read_mcp = model["message_context_read"], mcp["message_context_read"]
    assert list(read_mcp["properties"]) == ["messageId", "view", "offset"]
    assert read_mcp["properties"]["messageId"] == read_model["properties"]["message_id"]
    search_model, search_mcp = model["search_memory"], mcp["search_memory"]
    assert search_model["properties"]["query"] == search_mcp["properties"]["query"]
    # The one difference: an MCP client has no current thread to default to.
    assert "current thread" in search_model["properties"]["channel"]["description"]
    assert "current thread" not in search_mcp["properties"]["channel"]["description"]


def test_every_schema_carries_the_limits_search_checks():
    model = SearchMemoryRequest.parameters()["properties"]
    assert model["query"]["maxLength"] == QUERY_MAX_CHARS
    assert model["channel"]["maxLength"] == CHANNEL_MAX_CHARS
    assert model["project"]["maxLength"] == PROJECT_MAX_CHARS
    body = request_serializer(SearchMemoryRequest, "SearchRequest")()
    assert body.fields["query"].max_length == QUERY_MAX_CHARS
    assert body.fields["channel"].max_length == CHANNEL_MAX_CHARS
    assert body.fields["project"].max_length == PROJECT_MAX_CHARS
    assert [name for name, field in body.fields.items() if field.required] == ["query"]


@pytest.mark.django_db
def test_rest_answers_an_undeclared_field_with_the_declared_ones(owner_api, thread):
    response = owner_api.post("/api/v1/search/", {"query": "vortex", "limit": 3}, format="json")
    assert response.status_code == 400
    assert response.json()["detail"] == "unknown fields: limit (allowed: query, channel, cursor, tool, role, project)"
    response = owner_api.post("/api/v1/search/", ["vortex"], format="json")
    assert response.json()["detail"] == (
        "the body must be a JSON object with query and, optionally, channel, cursor, tool, role and project"
    )


@pytest.mark.django_db
def test_the_schema_document_holds_the_declared_limits(owner_api):
    schema = owner_api.get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    body = schema["components"]["schemas"]["SearchRequest"]["properties"]
    assert body["channel"]["maxLength"] == CHANNEL_MAX_CHARS
    parameters = {p["name"]: p["schema"] for p in schema["paths"]["/api/v1/search/"]["get"]["parameters"]}
    assert parameters["channel"]["maxLength"] == CHANNEL_MAX_CHARS
    assert parameters["query"]["maxLength"] == body["query"]["maxLength"] == QUERY_MAX_CHARS


def test_the_command_line_takes_the_declared_arguments():
    parser = SearchMemoryCommand().create_parser("manage.py", "search_memory")
    options = parser.parse_args(["vortex", "--cursor", "c1", "--tool", "Read", "--tool", "Edit", "--role", "user"])
    assert SearchMemoryRequest.build(vars(options)) == SearchMemoryRequest(
        query="vortex", channel=None, cursor="c1", tool=["Read", "Edit"], role="user"
    )
