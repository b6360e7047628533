"""contract §9: a tool-argument hit names its tool and its results; a hit in a tool result names its tool and call."""

from __future__ import annotations

import dataclasses
import re

import pytest
from django.db import connection

from tests.support.factories import append
from tests.support.search import literal_part_of
from threadmem.domain import services
from threadmem.features.search import message_context_read, search_memory
from threadmem.features.search.answer_caps import THREAD_LITERAL_MAX_CHARS, THREAD_SEARCH_MAX_CHARS
from threadmem.features.search.database import capabilities as database
from threadmem.models import Message

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("thread_match", "link_form")]


@pytest.fixture(params=["function", "inline"] if connection.vendor == "postgresql" else ["inline"])
def link_form(request, monkeypatch):
    """PostgreSQL looks links up with threadmem_hit_link (literal/link_function.py); the inline SQL answers the same."""
    fields = [field.name for field in dataclasses.fields(database.DatabaseCapabilities)][1:]  # _probe's, in order
    link = fields.index("link_function")
    if request.param == "inline":
        probe = database._probe
        monkeypatch.setattr(database, "_probe", lambda: (*probe()[:link], False, *probe()[link + 1 :]))
    else:
        assert database._probe()[link], "the link function is created after migrations (apps.py)"
    return request.param


PATH = "/srv/app/settings-7q.py"


@pytest.fixture
def session(thread):
    """One assistant message with two calls naming the path (Read, Bash), their results, an Edit with no result."""
    calls, read_result, bash_result = append(
        thread,
        {
            "role": "assistant",
            "session_id": "s1",
            "tool_calls": [
                {"id": "r1", "name": "Read", "arguments": {"file_path": PATH}},
                {"id": "b1", "name": "Bash", "arguments": {"command": f"wc -l {PATH}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "r1", "session_id": "s1", "content": "DEBUG_FLAG_7Q = False"},
        {"role": "tool", "tool_call_id": "b1", "session_id": "s1", "content": "12 lines"},
    )
    (edit,) = append(
        thread,
        {
            "role": "assistant",
            "session_id": "s1",
            "tool_calls": [{"id": "e1", "name": "Edit", "arguments": {"file_path": PATH, "new": "x"}}],
        },
    )
    (orphan,) = append(thread, {"role": "tool", "tool_call_id": "gone", "content": "orphan DEBUG_FLAG_7Q output"})
    return {"calls": calls, "read": read_result, "bash": bash_result, "edit": edit, "orphan": orphan}


def header_of(text: str, message_id: int, field: str) -> str:
    (line,) = [
        line
        for line in text.splitlines()
        if line.startswith(f"--- messageId={message_id} ") and f" field={field}" in line
    ]
    return line


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_an_argument_hit_names_its_own_calls_tool_and_only_its_results(owner, thread, session, scope):
    channel = thread.channel if scope == "thread" else None
    result = search_memory(user=owner, query=PATH, channel=channel)
    calls, read, bash, edit = session["calls"], session["read"], session["bash"], session["edit"]
    assert header_of(result.text, calls.id, "tool_args.file_path").endswith(
        f"role=assistant field=tool_args.file_path tool=Read result={read.id} (21 chars)"
    )
    assert header_of(result.text, calls.id, "tool_args.command").endswith(f"tool=Bash result={bash.id} (8 chars)")
    assert header_of(result.text, edit.id, "tool_args.file_path").endswith("tool=Edit result=- args: new=x")
    by_field = {(hit.message_id, hit.field): hit for hit in result.hits}
    read_hit = by_field[(calls.id, "tool_args.file_path")]
    assert (read_hit.tool, read_hit.result_message_ids, read_hit.call_message_id) == ("Read", (read.id,), None)
    assert by_field[(calls.id, "tool_args.command")].result_message_ids == (bash.id,)
    assert by_field[(edit.id, "tool_args.file_path")].result_message_ids == ()


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_hit_in_a_tool_result_names_its_calls_tool_and_message(owner, thread, session, scope):
    channel = thread.channel if scope == "thread" else None
    result = search_memory(user=owner, query="DEBUG_FLAG_7Q", channel=channel)
    read, orphan = session["read"], session["orphan"]
    assert header_of(result.text, read.id, "content").endswith(
        f"role=tool field=content tool=Read call={session['calls'].id}"
    )
    assert header_of(result.text, orphan.id, "content").endswith("role=tool field=content tool=- call=-")
    by_id = {hit.message_id: hit for hit in result.hits}
    assert (by_id[read.id].tool, by_id[read.id].call_message_id) == ("Read", session["calls"].id)
    assert (by_id[orphan.id].tool, by_id[orphan.id].call_message_id) == (None, None)


def test_a_user_message_hit_names_no_tool(owner, thread, session):
    append(thread, {"role": "user", "content": f"please look at {PATH}"})
    result = search_memory(user=owner, query=PATH, channel=thread.channel)
    user_hit = next(hit for hit in result.hits if hit.role == "user")
    assert user_hit.tool is None
    assert re.search(r"role=user field=content\n", result.text)


def test_results_and_calls_the_caller_may_not_see_are_not_named(owner, admin, thread, session):
    services.message_set_isolated(message=session["read"], isolated=True, actor=admin)
    result = search_memory(user=owner, query=PATH, channel=thread.channel)
    assert header_of(result.text, session["calls"].id, "tool_args.file_path").endswith("tool=Read result=-")
    services.message_set_isolated(message=session["read"], isolated=False, actor=admin)
    services.message_set_isolated(message=session["calls"], isolated=True, actor=admin)
    result = search_memory(user=owner, query="DEBUG_FLAG_7Q", channel=thread.channel)
    assert header_of(result.text, session["read"].id, "content").endswith("tool=- call=-")


def test_a_fork_names_no_result_stored_after_its_fork_point(owner, thread, session):
    calls = session["calls"]
    fork = services.thread_create(owner=owner, channel="fork-7q", fork_from=calls)
    result = search_memory(user=owner, query=PATH, channel=fork.channel)
    assert header_of(result.text, calls.id, "tool_args.file_path").endswith("tool=Read result=-")


def test_the_caps_stay_exact_with_long_tool_names(owner, thread):
    tool = "T" * 200
    for i in range(60):
        append(
            thread,
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": f"c{i}", "name": tool, "arguments": {"p": f"{PATH} " + "y" * 700}},
                    {"id": f"d{i}", "name": tool, "arguments": {"q": "no path here"}},
                ],
            },
            # The result of the other call: a hit of its own (a call's matching result joins its entry).
            {"role": "tool", "tool_call_id": f"d{i}", "content": f"{PATH} " + "z" * 700},
        )
    result = search_memory(user=owner, query=PATH, channel=thread.channel)
    literal = literal_part_of(result.text)
    assert len(literal) <= THREAD_LITERAL_MAX_CHARS
    assert len(result.text) <= THREAD_SEARCH_MAX_CHARS
    assert f"tool={tool} result=" in literal and f"tool={tool} call=" in literal
    assert 0 < result.literal_hits_shown < result.literal_hits_total == 120
    assert result.next_cursor and f'cursor="{result.next_cursor}"' in literal


def test_the_audit_read_names_each_calls_tool_and_results_and_a_results_call(owner, session):
    calls = message_context_read(user=owner, message_id=session["calls"].id)
    assert f"- id=r1 name=Read results: messageId={session['read'].id}" in calls.text
    assert f"- id=b1 name=Bash results: messageId={session['bash'].id}" in calls.text
    assert calls.calls == [
        {"id": "r1", "tool": "Read", "result_message_ids": [session["read"].id]},
        {"id": "b1", "tool": "Bash", "result_message_ids": [session["bash"].id]},
    ]
    read = message_context_read(user=owner, message_id=session["read"].id)
    assert f"result of tool call: id=r1 tool=Read in messageId={session['calls'].id}" in read.text
    assert (read.call_message_id, read.call_tool) == (session["calls"].id, "Read")
    assert Message.objects.filter(tool_call_id="r1").count() == 1


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_naming_tools_costs_the_same_statements_whatever_the_hit_count(owner, thread, scope, tune):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    tune(index_budget_ms=60_000)  # a busy machine must not change the path
    channel = thread.channel if scope == "thread" else None

    def statements() -> int:
        with CaptureQueriesContext(connection) as queries:
            search_memory(user=owner, query=PATH, channel=channel)
        return len(queries)

    def calls(first: int, count: int) -> list[dict]:
        return [
            message
            for i in range(first, first + count)
            for message in (
                {
                    "role": "assistant",
                    "tool_calls": [{"id": f"k{i}", "name": "Read", "arguments": {"file_path": PATH}}],
                },
                {"role": "tool", "tool_call_id": f"k{i}", "content": f"{PATH} holds line {i}"},
            )
        ]

    append(thread, *calls(0, 2))
    few = statements()
    append(thread, *calls(2, 60))
    assert statements() == few


def test_both_tools_schemas_teach_tool_result_and_cursor(owner_api):
    (search, _read) = owner_api.get("/api/v1/tools/").json()
    function = search["function"]
    assert "cursor" in function["parameters"]["properties"]
    assert function["parameters"]["required"] == ["query"]
    for words in ("tool=<name> result=", "tool=<name> call=", "cursor"):
        assert words in function["description"]
