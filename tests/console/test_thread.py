"""The thread page: generations, messages with their flags, tool calls, summary, compaction history."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from console.calls import TOOL_ARGS_INLINE_CHARS
from console.selectors import MESSAGE_PREVIEW_CHARS, MESSAGES_PER_PAGE
from tests.support.factories import append, make_summary
from threadmem.domain import services
from threadmem.models import Compaction, Generation


def page_url(thread, **params) -> str:
    url = reverse("console:thread", args=[thread.id])
    if params:
        url += "?" + "&".join(f"{k}={v}" for k, v in params.items())
    return url


def row_ids(body: str) -> list[int]:
    return [int(i) for i in re.findall(r'<article class="msg[^"]*" id="m(\d+)">', body)]


def row(body: str, message_id: int) -> str:
    start = body.index(f'id="m{message_id}"')
    return body[start : body.index("</article>", start)]


@pytest.fixture
def convo(thread, admin):
    m = append(
        thread,
        {"role": "system", "content": "You are the deploy agent."},
        {"role": "user", "content": "deploy staging please", "session_id": "s-1"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "call_1", "name": "bash", "arguments": {"command": "kubectl rollout status deploy/web"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": 'deployment "web" successfully rolled out'},
        {"role": "system", "kind": "machine_event", "content": "[status] 3 tasks pending"},
        {"role": "assistant", "content": "draft answer", "model_visible": False},
    )
    final = append(thread, {"role": "assistant", "content": "Staging is deployed.", "supersedes": m[5].id})[0]
    secret = append(thread, {"role": "user", "content": "the password is hunter2"})[0]
    services.message_set_isolated(message=secret, isolated=True, actor=admin)
    return {
        "system": m[0],
        "user": m[1],
        "call": m[2],
        "result": m[3],
        "event": m[4],
        "draft": m[5],
        "final": final,
        "secret": secret,
    }


def test_it_lists_the_generation_in_seq_order(operator_console, thread, convo):
    body = operator_console.get(page_url(thread)).content.decode()
    assert row_ids(body) == [m.id for m in sorted(convo.values(), key=lambda m: m.seq)]


def test_it_marks_roles_kinds_and_flags(operator_console, thread, convo):
    body = operator_console.get(page_url(thread)).content.decode()

    assert 'badge role role-user">user' in row(body, convo["user"].id)
    assert 'badge role role-tool">tool' in row(body, convo["result"].id)
    assert "machine event" in row(body, convo["event"].id)
    assert "model-invisible" in row(body, convo["draft"].id)
    assert f"superseded by #{convo['final'].id}" in row(body, convo["draft"].id)
    assert "flag-isolated" in row(body, convo["secret"].id)
    for clean in ("user", "final", "system"):
        r = row(body, convo[clean].id)
        assert "flag-isolated" not in r and "model-invisible" not in r and "superseded" not in r


def test_it_shows_tool_calls_with_arguments_and_result_size(operator_console, thread, convo):
    body = operator_console.get(page_url(thread)).content.decode()
    call_row = row(body, convo["call"].id)

    assert '<span class="call-name">bash</span>' in call_row
    assert "kubectl rollout status deploy/web" in call_row
    assert "&quot;command&quot;: &quot;kubectl" in call_row  # pretty-printed when expanded
    result_url = reverse("console:message", args=[convo["result"].id])
    assert f'href="{result_url}">→ result #{convo["result"].id} · 40 chars' in call_row


def test_it_links_a_tool_result_to_its_call(operator_console, thread, convo):
    body = operator_console.get(page_url(thread)).content.decode()
    assert f"bash ← #{convo['call'].id}" in row(body, convo["result"].id)


def test_it_links_a_result_to_a_call_on_an_earlier_page(operator_console, thread):
    fillers = [{"role": "user", "content": f"filler {i}"} for i in range(MESSAGES_PER_PAGE - 1)]
    append(thread, *fillers)
    call, result = append(
        thread,
        {"role": "assistant", "tool_calls": [{"id": "c-far", "name": "read_file", "arguments": {}}]},
        {"role": "tool", "tool_call_id": "c-far", "content": "file body"},
    )

    first = operator_console.get(page_url(thread)).content.decode()
    second = operator_console.get(page_url(thread, page=2)).content.decode()

    assert row_ids(second) == [result.id]
    assert f"#{call.id}" in row(second, result.id)
    assert f"→ result #{result.id} · 9 chars" in row(first, call.id)


def test_it_shows_a_preview_of_long_content_and_points_to_the_audit_view(operator_console, thread):
    text = "a" * MESSAGE_PREVIEW_CHARS + "TAIL-MARKER" + "b" * 5000
    message = append(thread, {"role": "tool", "tool_call_id": "x", "content": text})[0]

    body = operator_console.get(page_url(thread)).content.decode()

    assert "TAIL-MARKER" not in body
    assert "a" * MESSAGE_PREVIEW_CHARS in body
    assert f"Showing {MESSAGE_PREVIEW_CHARS:,} of {len(text):,} characters" in row(body, message.id)


def test_it_summarises_large_tool_arguments_instead_of_printing_them(operator_console, thread):
    big = "x" * (TOOL_ARGS_INLINE_CHARS + 10) + "END-OF-FILE"
    call = append(
        thread,
        {
            "role": "assistant",
            "tool_calls": [{"id": "w1", "name": "write_file", "arguments": {"path": "/srv/app.py", "body": big}}],
        },
    )[0]

    body = operator_console.get(page_url(thread)).content.decode()
    call_row = row(body, call.id)

    assert "write_file" in call_row
    assert "END-OF-FILE" not in body
    assert "<code>body</code>" in call_row
    assert f"{len(big):,} chars" in call_row
    assert "/srv/app.py" in call_row


def test_it_shows_the_generation_timeline_and_a_chosen_generation(operator_console, thread, owner):
    old = append(thread, {"role": "user", "content": "in generation one"})[0]
    summary = make_summary(
        thread,
        generation=2,
        seq=99,
        content=f"## 10 How to access the resources used\n- file `/etc/hosts` via bash; messageId={old.id}",
    )
    Generation.objects.filter(thread=thread, number=1).update(state="closed", summary_message=summary)
    Generation.objects.create(thread=thread, number=2)
    thread.current_generation = 2
    thread.save(update_fields=["current_generation"])

    current = operator_console.get(page_url(thread)).content.decode()
    first = operator_console.get(page_url(thread, generation=1)).content.decode()

    assert row_ids(current) == [summary.id]
    assert row_ids(first) == [old.id]
    assert "Gen 1" in current and "Gen 2" in current
    assert '<li class="gen current state-open">' in current
    assert '<li class="gen current state-closed">' in first
    assert "Summary of generation 1" in first
    old_url = reverse("console:message", args=[old.id])
    assert f'messageId=<a class="mid" href="{old_url}">{old.id}</a>' in first


def test_it_paginates_messages(operator_console, thread):
    append(thread, *[{"role": "user", "content": f"n{i}"} for i in range(MESSAGES_PER_PAGE + 5)])

    first = operator_console.get(page_url(thread)).content.decode()
    second = operator_console.get(page_url(thread, page=2)).content.decode()

    assert len(row_ids(first)) == MESSAGES_PER_PAGE
    assert len(row_ids(second)) == 5
    assert max(row_ids(first)) < min(row_ids(second))


def test_it_shows_compaction_history(operator_console, thread, admin):
    Compaction.objects.create(
        thread=thread, generation=1, status=Compaction.Status.FAILED, error="LLMUnavailable: connection refused"
    )
    body = operator_console.get(page_url(thread)).content.decode()
    assert "status-failed" in body
    assert "LLMUnavailable: connection refused" in body


def test_it_reports_compaction_status_as_json_for_the_poll(operator_console, thread):
    url = reverse("console:thread-compactions", args=[thread.id])
    running = Compaction.objects.create(thread=thread, generation=1, status=Compaction.Status.RUNNING)

    live = operator_console.get(url).json()
    assert live["live"] is True
    assert "status-running" in live["html"]

    Compaction.objects.filter(pk=running.pk).update(status=Compaction.Status.SUCCEEDED)
    done = operator_console.get(url).json()
    assert done["live"] is False
    assert "status-succeeded" in done["html"]
    assert done["current_generation"] == 1


def test_it_refreshes_the_page_without_javascript_while_compaction_runs(operator_console, thread):
    assert "http-equiv" not in operator_console.get(page_url(thread)).content.decode()
    Compaction.objects.create(thread=thread, generation=1, status=Compaction.Status.PENDING)
    assert '<meta http-equiv="refresh"' in operator_console.get(page_url(thread)).content.decode()


def build_exchanges(thread, count: int) -> None:
    for i in range(count):
        append(
            thread,
            {"role": "user", "content": f"question {i}"},
            {"role": "assistant", "tool_calls": [{"id": f"c{i}", "name": "bash", "arguments": {"command": f"ls {i}"}}]},
            {"role": "tool", "tool_call_id": f"c{i}", "content": f"out {i}"},
        )


@pytest.mark.parametrize("exchanges", [1, 10, 33])
def test_it_renders_a_thread_in_a_fixed_number_of_queries(
    operator_console, thread, admin, exchanges, django_assert_num_queries
):
    build_exchanges(thread, exchanges)
    services.thread_set_isolated(thread=thread, isolated=True, actor=admin)
    Compaction.objects.create(thread=thread, generation=1, status=Compaction.Status.FAILED)

    # session, user, thread, timeline, count, page, tool calls, results, compactions, trail,
    # embedding progress, and the operator's two permission lookups (may they isolate?)
    with django_assert_num_queries(13):
        response = operator_console.get(page_url(thread))
    assert len(response.context["page"].object_list) == 3 * exchanges


def test_compact_now_compacts_the_current_generation(
    operator_console, operator, thread, django_capture_on_commit_callbacks
):
    first = append(thread, {"role": "user", "content": "please read /etc/hosts"})[0]
    page = operator_console.get(page_url(thread)).content.decode()
    assert f'action="{reverse("console:thread-compact", args=[thread.id])}"' in page

    with django_capture_on_commit_callbacks(execute=True):
        response = operator_console.post(reverse("console:thread-compact", args=[thread.id]))

    assert response.status_code == 302
    assert response["Location"].endswith("#compactions")
    compaction = Compaction.objects.get(thread=thread)
    assert (compaction.trigger, compaction.requested_by, compaction.status) == ("console", operator, "succeeded")
    thread.refresh_from_db()
    assert thread.current_generation == 2
    body = operator_console.get(page_url(thread, generation=1)).content.decode()
    assert "Summary of generation 1" in body
    assert f'href="{reverse("console:message", args=[first.id])}">{first.id}</a>' in body
    assert "status-succeeded" in body


def test_compact_now_says_when_there_is_nothing_to_compact(operator_console, thread):
    response = operator_console.post(reverse("console:thread-compact", args=[thread.id]), follow=True)
    assert "nothing to compact" in response.content.decode()
    assert Compaction.objects.count() == 0


def test_compact_now_is_for_staff_only(owner_console, thread):
    append(thread, {"role": "user", "content": "x"})
    assert owner_console.post(reverse("console:thread-compact", args=[thread.id])).status_code == 403
    assert Compaction.objects.count() == 0
