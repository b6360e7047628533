"""The tool-call log page: filters, per-thread totals, the chart with its cap line."""

from __future__ import annotations

import re
from datetime import timedelta
from html import escape

import pytest
from django.utils import timezone

from console.selectors import TOOL_CALLS_PER_PAGE
from tests.support.factories import append, make_thread
from threadmem.features.search import search_memory
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS
from threadmem.models import ToolCall

URL = "/console/tool-calls/"


def log(thread=None, caller=None, *, tool="search_memory", chars=500, truncated=False, ago=0, query="deploy", **kw):
    call = ToolCall.objects.create(
        thread=thread,
        caller=caller,
        tool=tool,
        arguments={"query": query} if tool == "search_memory" else {"message_id": 1},
        hits_total=kw.get("hits_total", 3),
        hits_shown=kw.get("hits_shown", 3),
        chars_returned=chars,
        truncated=truncated,
        latency_ms=kw.get("latency_ms", 12.5),
        surface=kw.get("surface", "api"),
    )
    if ago:
        ToolCall.objects.filter(pk=call.pk).update(created_at=timezone.now() - timedelta(minutes=ago))
    return call


def listed(response) -> list[int]:
    return [c.id for c in response.context["page"].object_list]


@pytest.fixture
def calls(thread, owner, other):
    second = make_thread(other, "second")
    return {
        "a": log(thread, owner, query="kubectl", ago=30),
        "b": log(thread, owner, tool="message_context_read", chars=12_000, truncated=True, ago=20),
        "c": log(second, other, chars=12_000, truncated=True, ago=10, query="billing"),
        "g": log(None, other, query="global words"),
    }


def test_it_lists_every_call_newest_first(operator_console, calls):
    response = operator_console.get(URL)
    assert listed(response) == [calls[k].id for k in "gcba"]
    body = response.content.decode()
    assert "<code>kubectl</code>" in body
    assert "global" in body


def test_it_filters_by_thread_caller_tool_and_truncation(operator_console, calls, thread):
    assert listed(operator_console.get(URL, {"thread": thread.channel})) == [calls["b"].id, calls["a"].id]
    assert listed(operator_console.get(URL, {"caller": "other"})) == [calls["g"].id, calls["c"].id]
    assert listed(operator_console.get(URL, {"tool": "message_context_read"})) == [calls["b"].id]
    assert listed(operator_console.get(URL, {"truncated": "on"})) == [calls["c"].id, calls["b"].id]


def test_it_filters_by_surface(operator_console, calls, thread, owner):
    from_mcp = log(thread, owner, surface="mcp")
    response = operator_console.get(URL, {"surface": "mcp"})
    assert listed(response) == [from_mcp.id]
    assert '<option value="mcp" selected>' in response.content.decode()
    assert len(listed(operator_console.get(URL, {"surface": "api"}))) == len(calls)


def test_it_filters_by_time_range(operator_console, calls):
    now = timezone.now()
    since = (now - timedelta(minutes=25)).strftime("%Y-%m-%dT%H:%M")
    until = (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M")
    assert listed(operator_console.get(URL, {"since": since, "until": until})) == [calls["c"].id, calls["b"].id]


def test_it_reports_a_bad_time_filter(operator_console, calls):
    response = operator_console.get(URL, {"since": "yesterday-ish"})
    assert response.status_code == 200
    assert "since:" in response.content.decode()


def test_it_totals_calls_per_thread(operator_console, calls, thread):
    totals = {t["thread__channel"]: t for t in operator_console.get(URL).context["totals"]}
    assert totals[thread.channel]["calls"] == 2
    assert totals[thread.channel]["chars"] == 12_500
    assert totals[thread.channel]["truncated"] == 1
    assert totals["second"]["calls"] == 1
    assert totals[None]["calls"] == 1


def test_it_charts_characters_per_call_with_the_cap_line(operator_console, calls):
    body = operator_console.get(URL).content.decode()
    svg = body[body.index("<svg") : body.index("</svg>")]

    assert svg.count("<circle") == 4
    assert svg.count('class="dot truncated"') == 2
    cap_y = float(re.search(r'<line class="cap"[^>]*y1="([\d.]+)"', svg).group(1))
    truncated_y = {float(y) for y in re.findall(r'class="dot truncated" cx="[\d.]+" cy="([\d.]+)"', svg)}
    assert truncated_y == {cap_y}  # 12,000-character results sit on the cap
    assert f"cap {THREAD_SEARCH_MAX_CHARS:,}" in svg


def test_it_says_so_when_there_is_nothing_to_chart(operator_console):
    body = operator_console.get(URL).content.decode()
    assert "<svg" not in body
    assert "No calls match these filters." in body


def test_it_paginates_the_log(operator_console, thread, owner):
    for _ in range(TOOL_CALLS_PER_PAGE + 2):
        log(thread, owner)
    assert len(listed(operator_console.get(URL))) == TOOL_CALLS_PER_PAGE
    assert len(listed(operator_console.get(URL, {"page": 2}))) == 2
    assert operator_console.get(URL, {"page": 3}).status_code == 404


@pytest.mark.parametrize("count", [3, 30])
def test_it_renders_the_log_in_a_fixed_number_of_queries(
    operator_console, owner, other, count, django_assert_num_queries
):
    threads = [make_thread(owner, f"t{count}-{i}") for i in range(count)]
    for i, thread in enumerate(threads):
        log(thread, [owner, other][i % 2], truncated=i % 3 == 0, chars=100 * i)

    # session, user, count, page, totals, chart
    with django_assert_num_queries(6):
        response = operator_console.get(URL, {"truncated": "", "tool": "search_memory"})
    assert len(listed(response)) == count


def test_a_calls_page_shows_its_search_plan_term_by_term(operator_console, owner, thread):
    append(thread, {"role": "user", "content": "kubectl rollout status deploy/web"})
    search_memory(user=owner, query="kubectl rollout", channel=thread.channel)
    call = ToolCall.objects.get()
    listing = operator_console.get(URL).content.decode()
    assert f'href="/console/tool-calls/{call.id}/"' in listing
    page = operator_console.get(f"{URL}{call.id}/")
    lines = page.context["plan"]
    # A one-message thread is scanned on either database; the terms share the statement's time.
    assert [line.split(" (")[0] for line in lines] == ["'kubectl rollout'", "'kubectl'", "'rollout'"]
    assert all(re.search(r"\): scan, complete, [0-9.]+ ms$", line) for line in lines)
    assert escape(lines[0]) in page.content.decode()


def test_a_call_without_a_plan_and_an_unknown_call(operator_console, owner_console, calls):
    page = operator_console.get(f"{URL}{calls['b'].id}/")
    assert page.status_code == 200 and page.context["plan"] == []
    assert "plan-card" not in page.content.decode()
    assert operator_console.get(f"{URL}999999/").status_code == 404
    assert owner_console.get(f"{URL}{calls['b'].id}/").status_code in (302, 403)
