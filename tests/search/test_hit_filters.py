"""contract §9: search_memory's tool and role filters, on every surface, bound into the cursor; bad values refused."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_server.tools import call_tool, tools
from tests.support.factories import append
from threadmem.errors import InvalidInput
from threadmem.features.search import search_memory
from threadmem.features.tools import SEARCH_MEMORY, SEARCH_MEMORY_TOOL, run_tool

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("thread_match")]

PATH = "/srv/app/lib/ledger-9k.ex"


@pytest.fixture(autouse=True)
def patient_global_index(tune):
    tune(index_budget_ms=60_000)  # a loaded test machine must not fall back to the newest


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "name": name, "arguments": arguments}


@pytest.fixture
def busy_path(thread):
    """Two old reads of a path (one partial), then many edits, greps and a user's mention, newest last."""
    messages = [
        {"role": "assistant", "tool_calls": [call("r1", "Read", file_path=PATH)]},
        {"role": "tool", "tool_call_id": "r1", "content": "1\tdefmodule Ledger do"},
        {"role": "assistant", "tool_calls": [call("r2", "Read", file_path=PATH, offset=120, limit=40)]},
        {"role": "tool", "tool_call_id": "r2", "content": "120\t  def post(entry) do"},
    ]
    for i in range(40):
        messages += [
            {"role": "assistant", "tool_calls": [call(f"e{i}", "Edit", file_path=PATH, old_string=f"v{i}")]},
            {"role": "tool", "tool_call_id": f"e{i}", "content": f"The file {PATH} has been updated ({i})."},
            {"role": "assistant", "tool_calls": [call(f"g{i}", "Grep", pattern=f"post{i}", path=PATH)]},
            {"role": "tool", "tool_call_id": f"g{i}", "content": f"{PATH}:12: post{i}"},
        ]
    messages.append({"role": "user", "content": f"now look at {PATH} again"})
    stored = append(thread, *messages)
    return {"whole": stored[0], "partial": stored[2], "user": stored[-1]}


@pytest.mark.parametrize("scope", ["thread", "global"])
@pytest.mark.parametrize("tool", ["Read", "read", ["Read"], ["READ", "NoSuchTool"]])
def test_a_tool_filter_makes_a_paths_old_reads_the_whole_listing(owner, thread, busy_path, scope, tool):
    channel = thread.channel if scope == "thread" else None
    unfiltered = search_memory(user=owner, query=PATH, channel=channel)
    assert unfiltered.next_cursor  # the reads are pages away without the filter
    answer = search_memory(user=owner, query=PATH, channel=channel, tool=tool)
    assert [(hit.message_id, hit.tool) for hit in answer.hits] == [
        (busy_path["partial"].id, "Read"),
        (busy_path["whole"].id, "Read"),
    ]
    assert answer.hits[0].arguments == "limit=40 offset=120"
    assert (answer.literal_hits_total, answer.next_cursor) == (2, None)


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_tool_filter_keeps_the_tools_results_and_a_list_keeps_several(owner, thread, busy_path, scope):
    channel = thread.channel if scope == "thread" else None
    answer = search_memory(user=owner, query="post7", channel=channel, tool=["Grep", "Edit"])
    assert {hit.tool for hit in answer.hits} == {"Grep"}
    assert answer.literal_hits_total == 1  # the Grep call and its result: one hit
    assert search_memory(user=owner, query="post7", channel=channel, tool="Edit").literal_hits_total == 0


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_role_filter_keeps_one_roles_messages(owner, thread, busy_path, scope):
    channel = thread.channel if scope == "thread" else None
    answer = search_memory(user=owner, query=PATH, channel=channel, role="user")
    assert [hit.message_id for hit in answer.hits] == [busy_path["user"].id]
    edits = search_memory(user=owner, query="has been updated (3)", channel=channel, role="tool")
    assert {hit.role for hit in edits.hits} == {"tool"} and "(3)" in edits.hits[0].window
    assert search_memory(user=owner, query=PATH, channel=channel, role="tool", tool="Read").literal_hits_total == 0


def test_filters_cost_no_statement_more(owner, thread, busy_path):
    with CaptureQueriesContext(connection) as plain:
        search_memory(user=owner, query=PATH, channel=thread.channel)
    with CaptureQueriesContext(connection) as filtered:
        search_memory(user=owner, query=PATH, channel=thread.channel, tool=["Read", "Edit"], role="assistant")
    assert len(filtered) == len(plain)


def test_a_cursor_is_bound_to_its_filters(owner, thread, busy_path):
    first = search_memory(user=owner, query=PATH, channel=thread.channel, tool="Edit")
    assert first.next_cursor
    second = search_memory(user=owner, query=PATH, channel=thread.channel, tool="Edit", cursor=first.next_cursor)
    assert {hit.tool for hit in second.hits} == {"Edit"}
    assert not {hit.message_id for hit in first.hits} & {hit.message_id for hit in second.hits}
    for other in ({"tool": "Read"}, {}, {"tool": "Edit", "role": "assistant"}):
        with pytest.raises(InvalidInput, match="not valid for this caller and query"):
            search_memory(user=owner, query=PATH, channel=thread.channel, cursor=first.next_cursor, **other)


BAD = [
    ({"role": "robot"}, "role must be one of user, assistant, tool, system"),
    ({"role": 3}, "role must be one of"),
    ({"tool": 7}, "tool must be a tool name"),
    ({"tool": ["Read", 7]}, "tool must be a tool name"),
    ({"tool": {"name": "Read"}}, "tool must be a tool name"),
    ({"tool": [f"x{i}" for i in range(21)]}, "at most 20 tools"),
    ({"tool": "R" * 256}, "at most 255 characters"),
    ({"tool": "Re\u0000ad"}, "NUL"),
]


@pytest.mark.parametrize(("arguments", "words"), BAD)
def test_bad_filters_are_refused_on_every_surface(owner, owner_api, thread, arguments, words):
    body = {"query": PATH, "channel": thread.channel, **arguments}
    response = owner_api.post("/api/v1/search/", body, format="json")
    assert response.status_code == 400 and words in response.json()["detail"]
    text = run_tool(name=SEARCH_MEMORY, arguments=body, user=owner, surface="agent")
    assert text.startswith("error: ") and words in text
    answer = call_tool(name=SEARCH_MEMORY, arguments=body, user=owner)
    assert answer.is_error and words in answer.content[0].text


def test_the_filters_reach_every_surface(owner, owner_api, thread, busy_path):
    expected = [busy_path["partial"].id, busy_path["whole"].id]
    body = {"query": PATH, "channel": thread.channel, "tool": "Read"}
    assert [hit["message_id"] for hit in owner_api.post("/api/v1/search/", body, format="json").json()["hits"]] == (
        expected
    )
    got = owner_api.get("/api/v1/search/", {"query": PATH, "channel": thread.channel, "tool": ["Read", "Glob"]})
    assert [hit["message_id"] for hit in got.json()["hits"]] == expected
    assert owner_api.get("/api/v1/search/", {**body, "role": "robot"}).status_code == 400
    text = run_tool(name=SEARCH_MEMORY, arguments=body, user=owner, surface="agent")
    assert "literal hits: 2 (2 shown)" in text
    answer = call_tool(name=SEARCH_MEMORY, arguments=body, user=owner)
    assert "literal hits: 2 (2 shown)" in answer.content[0].text
    out = io.StringIO()
    call_command("search_memory", PATH, "--channel", thread.channel, "--tool", "Read", "--user", "owner", stdout=out)
    assert "literal hits: 2 (2 shown)" in out.getvalue()
    call_command("search_memory", PATH, "--channel", thread.channel, "--role", "user", "--user", "owner", stdout=out)
    with pytest.raises(CommandError, match="role must be one of"):
        call_command("search_memory", PATH, "--role", "robot", "--user", "owner", stdout=out)


def test_both_tools_schemas_describe_the_filters():
    for schema in (SEARCH_MEMORY_TOOL["function"]["parameters"], tools()[0].input_schema):
        assert {"tool", "role"} <= set(schema["properties"])
        assert schema["properties"]["role"]["enum"] == ["user", "assistant", "tool", "system"]
    for description in (SEARCH_MEMORY_TOOL["function"]["description"], tools()[0].description):
        assert 'tool="Read"' in description and "args: offset=120 limit=40" in description
