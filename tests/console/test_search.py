"""The search page: search_memory as the model runs it, tool text beside structured hits."""

from __future__ import annotations

import html
import re

from django.urls import reverse

from tests.support.factories import append, make_thread
from threadmem.domain import services
from threadmem.features.search import search_memory
from threadmem.models import ToolCall

URL = "/console/search/"


def tool_text(response) -> str:
    body = response.content.decode()
    return html.unescape(re.search(r'<pre class="content tool-text" id="tool-text">(.*?)</pre>', body, re.S).group(1))


def test_it_shows_the_exact_tool_text_and_links_every_hit(operator_console, operator, thread):
    first, second = append(
        thread,
        {"role": "user", "content": "please <restart> nginx on staging-7"},
        {"role": "assistant", "tool_calls": [{"id": "c", "name": "bash", "arguments": {"command": "restart nginx"}}]},
    )

    response = operator_console.get(URL, {"q": "restart nginx", "channel": thread.channel})

    assert response.status_code == 200
    expected = search_memory(user=operator, query="restart nginx", channel=thread.channel, surface="console")
    assert tool_text(response) == expected.text
    body = response.content.decode()
    assert "&lt;restart&gt;" in body  # escaped, never markup
    for message in (first, second):
        assert f'href="{reverse("console:message", args=[message.id])}">#{message.id}</a>' in body
    assert "tool_args.command" in body
    assert f"<strong>{expected.literal_hits_total}</strong> literal hit" in body


def test_it_logs_the_search_as_a_console_tool_call(operator_console, operator, thread):
    append(thread, {"role": "user", "content": "the rollout failed"})

    operator_console.get(URL, {"q": "rollout", "channel": thread.channel})

    call = ToolCall.objects.get()
    assert (call.tool, call.surface, call.caller, call.thread_id) == ("search_memory", "console", operator, thread.id)
    assert call.arguments["query"] == "rollout"
    assert call.hits_total == 1


def test_it_searches_globally_without_a_channel(operator_console, owner, other, admin):
    mine = make_thread(owner, "mine")
    theirs = make_thread(other, "theirs")
    hidden = make_thread(other, "hidden")
    a = append(mine, {"role": "user", "content": "kernel panic on boot"})[0]
    b = append(theirs, {"role": "user", "content": "another kernel panic"})[0]
    c = append(hidden, {"role": "user", "content": "kernel panic, isolated"})[0]
    services.thread_set_isolated(thread=hidden, isolated=True, actor=admin)

    response = operator_console.get(URL, {"q": "kernel panic"})

    ids = {hit.message_id for hit in response.context["result"].hits}
    assert ids == {a.id, b.id}
    assert c.id not in ids
    assert "channel: * ·" in tool_text(response)
    assert "scope: global" in response.content.decode()


def test_it_reports_bad_input_with_its_status(operator_console, thread):
    response = operator_console.get(URL, {"q": "anything", "channel": "no-such-channel"})
    assert response.status_code == 404
    assert "no-such-channel" in response.content.decode()
    assert 'class="error-box"' in response.content.decode()

    response = operator_console.get(URL, {"q": "  "})
    assert response.status_code == 400
    assert 'class="error-box"' in response.content.decode()


def test_it_shows_an_empty_form_first(operator_console):
    response = operator_console.get(URL)
    assert response.status_code == 200
    assert "tool-text" not in response.content.decode()
    assert ToolCall.objects.count() == 0


def test_it_offers_recent_channels(operator_console, thread):
    body = operator_console.get(URL).content.decode()
    assert f'<option value="{thread.channel}">' in body


def test_it_takes_the_apis_query_parameter_too(operator_console, operator, thread):
    append(thread, {"role": "user", "content": "please restart nginx on staging-7"})
    by_q = operator_console.get(URL, {"q": "restart nginx", "channel": thread.channel})
    by_query = operator_console.get(URL, {"query": "restart nginx", "channel": thread.channel})
    assert by_query.status_code == 200
    assert tool_text(by_query) == tool_text(by_q)
