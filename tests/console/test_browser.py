"""The console in a real browser: Debian's chromium driven by Playwright against the live server.

Screenshots of each page land in test-artifacts/console/.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.support.browser import chromium_page, login, screenshot
from tests.support.factories import append, make_thread
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.models import IsolationEvent, Thread

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def journal() -> str:
    lines = [
        f"Nov 03 14:{i // 60:02d}:{i % 60:02d} staging-7 api[4121]: pool stats: active=4 idle={i % 9}"
        for i in range(180)
    ]
    lines.insert(20, "Nov 03 14:00:20 staging-7 api[4121]: FATAL: could not connect to db-primary.internal:5432")
    return "\n".join(lines)


@pytest.fixture
def deploy(owner, admin):
    thread = make_thread(owner, "slack:C042/1700000000.1", title="Deploy the staging box")
    m = append(
        thread,
        {"role": "system", "content": "You are the deploy agent for the staging cluster."},
        {
            "role": "user",
            "content": "Roll out web v2.14 to staging and tell me when it is healthy.",
            "session_id": "s-1",
        },
        {
            "role": "assistant",
            "content": "Starting the rollout.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "name": "bash",
                    "arguments": {"command": "kubectl -n staging rollout restart deploy/web"},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "deployment.apps/web restarted"},
        {
            "role": "assistant",
            "tool_calls": [
                {"id": "call_2", "name": "read_file", "arguments": {"path": "/var/log/api/journal.log", "tail": 200}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_2", "content": journal()},
        {"role": "system", "kind": "machine_event", "content": "[status] rollout 2/3 pods ready"},
        {"role": "assistant", "content": "Draft: looks fine?", "model_visible": False},
    )
    append(
        thread,
        {
            "role": "assistant",
            "content": "The API cannot reach db-primary; checking credentials.",
            "supersedes": m[7].id,
        },
    )
    compaction_run_now(thread=thread, trigger="manual")
    append(
        thread,
        {"role": "user", "content": "Any news on the rollout?", "session_id": "s-2"},
        {"role": "assistant", "content": "The rollout is blocked on the database password; waiting for ops."},
    )
    other = make_thread(owner, "cli:ops/db-migration-2024-11", title="Orders table migration")
    append(other, {"role": "user", "content": "Plan the rollout of the orders migration."})
    thread.refresh_from_db()
    return thread


def test_an_admin_browses_searches_and_isolates(browser, live_server, admin, deploy):
    base = live_server.url
    with chromium_page(browser) as page:
        page.goto(f"{base}/console/")
        assert "/console/login/" in page.url
        screenshot(page, "01-login")
        login(page, base, "admin", "admin-password")

        expect(page.locator("h1", has_text="Threads")).to_be_visible()
        expect(page.locator("a.channel", has_text=deploy.channel)).to_be_visible()
        screenshot(page, "02-threads")

        page.click(f"a.channel:text('{deploy.channel}')")
        page.wait_for_load_state()
        assert page.locator("h1.channel-title").inner_text().startswith(deploy.channel)
        assert page.locator(".timeline .gen").count() == 2
        screenshot(page, "03-thread-current")

        page.click(".timeline .gen:first-child a")
        page.wait_for_load_state()
        expect(page.locator(".summary-card h2", has_text="Summary of generation 1")).to_be_visible()
        tool_result = page.locator("article.msg.role-tool").nth(1)
        body = tool_result.locator(".msg-body pre.content")
        expect(body).to_be_hidden()
        tool_result.locator("summary").click()
        expect(body).to_be_visible()
        assert "db-primary.internal:5432" in body.inner_text()
        expect(tool_result.locator(".more a", has_text="audit view")).to_be_visible()  # the journal goes on
        expect(page.locator("article.msg .badge", has_text="machine event")).to_be_visible()
        expect(page.locator("article.msg .badge", has_text="model-invisible")).to_be_visible()
        screenshot(page, "04-thread-generation-1-expanded")

        # A messageId in the summary leads to the audit page.
        page.locator(".summary-text a.mid").first.click()
        assert re.search(r"/console/messages/\d+/$", page.url)
        expect(page.locator("h1", has_text="Message #")).to_be_visible()
        screenshot(page, "05-message-audit")

        page.goto(f"{base}/console/messages/{deploy.messages.get(tool_call_id='call_2').id}/")
        expect(page.locator(".linkline", has_text="Result of read_file")).to_be_visible()
        page.goto(f"{base}/console/messages/{deploy.messages.get(seq=3).id}/")
        expect(
            page.locator(".call-audit pre.code", has_text='"command": "kubectl -n staging rollout restart deploy/web"')
        ).to_be_visible()
        screenshot(page, "06-message-tool-call")

        # Search the whole service, as the model would.
        page.click("nav.mainnav a:text('Search')")
        page.wait_for_load_state()
        page.fill("input[name=q]", "rollout")
        page.click("form[role=search] button[type=submit]")
        page.wait_for_load_state()
        text = page.locator("pre#tool-text").inner_text()
        assert text.startswith("[search_memory] The following is historical evidence")
        assert deploy.channel in page.locator(".search-split").inner_text() or page.locator(".hit").count() > 0
        hits_before = page.locator(".hit").count()
        assert hits_before >= 2
        screenshot(page, "07-search-global")

        # Isolate the thread: confirm, see the flag, the trail, and global search lose it.
        page.goto(f"{base}/console/threads/{deploy.id}/")
        page.click("button:text('Isolate thread…')")
        page.wait_for_load_state()
        expect(page.locator("h1", has_text="Isolate thread")).to_be_visible()
        screenshot(page, "08-isolation-confirm")
        page.click("button:text('Yes, isolate')")
        page.wait_for_load_state()
        expect(page.locator(".flash", has_text="isolated")).to_be_visible()
        expect(page.locator("h1.channel-title .badge", has_text="isolated")).to_be_visible()
        expect(page.locator(".trail", has_text="admin")).to_be_visible()
        assert Thread.objects.get(pk=deploy.pk).isolated is True
        assert IsolationEvent.objects.filter(thread=deploy, actor=admin, surface="console").count() == 1
        screenshot(page, "09-thread-isolated")

        page.goto(f"{base}/console/search/?q=rollout")
        hits_after = page.locator(".hit").count()
        assert hits_after < hits_before
        assert deploy.channel not in page.locator("pre#tool-text").inner_text()
        page.goto(f"{base}/console/search/?q=rollout&channel={deploy.channel}")
        assert page.locator(".hit").count() >= 2  # its own channel still finds it
        screenshot(page, "10-search-thread")

        page.click("nav.mainnav a:text('Tool calls')")
        page.wait_for_load_state()
        assert page.locator("svg.chart line.cap").count() == 1
        assert page.locator("table.calls-table tbody tr").count() == 3
        screenshot(page, "11-tool-calls")

        page.locator("table.calls-table tbody tr").first.locator("td a").first.click()
        page.wait_for_load_state()
        # The newest call searched "rollout" in the thread: its plan, term by term.
        plan = page.locator(".plan-card li.plan-line").first
        expect(plan).to_be_visible()
        assert re.match(r"'rollout' \(.+\): scan, complete, [0-9.]+ ms$", plan.inner_text())
        screenshot(page, "12-tool-call-plan")


def test_compact_now_shows_the_outcome(browser, live_server, operator, deploy):
    base = live_server.url
    with chromium_page(browser) as page:
        login(page, base, "operator", "operator-password")
        page.goto(f"{base}/console/threads/{deploy.id}/")
        page.click("button:text('Compact now')")
        page.wait_for_load_state()
        page.wait_for_selector("#compactions .status-succeeded")
        assert page.locator("#compactions .compaction").count() == 2
        assert Thread.objects.get(pk=deploy.pk).current_generation == 3
        screenshot(page, "12-compacted")


def test_an_operator_sees_no_isolation_toggle(browser, live_server, operator, deploy):
    base = live_server.url
    message_id = deploy.messages.get(seq=2).id
    with chromium_page(browser) as page:
        login(page, base, "operator", "operator-password")
        page.goto(f"{base}/console/threads/{deploy.id}/")
        expect(page.locator("#isolation")).to_be_visible()
        assert page.locator("#isolation form").count() == 0
        assert page.locator("button", has_text="Isolate").count() == 0
        page.goto(f"{base}/console/messages/{message_id}/")
        assert page.locator("button", has_text="Isolate").count() == 0
        screenshot(page, "13-operator-message")


def test_a_user_who_is_not_staff_cannot_log_in(browser, live_server, owner):
    with chromium_page(browser) as page:
        login(page, live_server.url, "owner", "owner-password")
        assert "/console/login/" in page.url
        expect(page.locator(".error-box", has_text="for operators")).to_be_visible()
        screenshot(page, "14-login-refused")


def test_the_compaction_list_follows_a_running_compaction(browser, live_server, operator, deploy):
    from threadmem.models import Compaction

    running = Compaction.objects.create(
        thread=deploy, generation=deploy.current_generation, status=Compaction.Status.RUNNING, trigger="api"
    )
    base = live_server.url
    with chromium_page(browser) as page:
        login(page, base, "operator", "operator-password")
        page.goto(f"{base}/console/threads/{deploy.id}/")
        expect(page.locator("#compactions .status-running")).to_be_visible()
        expect(page.locator("#compactions .live-note")).to_be_visible()
        assert page.locator("button:text('Compact now')").is_disabled()
        screenshot(page, "15-compaction-running")

        Compaction.objects.filter(pk=running.pk).update(status=Compaction.Status.FAILED, error="LLMTimeout: 60 s")
        page.wait_for_selector("#compactions .status-failed", timeout=15_000)  # no reload: the poll found it
        expect(page.locator("#compactions", has_text="LLMTimeout: 60 s")).to_be_visible()
        expect(page.locator(".live-note", has_text="Compaction finished")).to_be_visible()
        assert page.locator("button:text('Compact now')").is_enabled()


def test_a_huge_message_is_paged(browser, live_server, operator, deploy, settings):
    from console.selectors import CONTENT_PAGE_CHARS

    settings.THREADMEM_MAX_MESSAGE_BYTES = 4 * 1024 * 1024
    text = "".join(f"line {i:07d} of a very long build log\n" for i in range(3 * CONTENT_PAGE_CHARS // 36))
    message = append(deploy, {"role": "tool", "tool_call_id": "build", "content": text})[0]
    base = live_server.url
    with chromium_page(browser) as page:
        login(page, base, "operator", "operator-password")
        page.goto(f"{base}/console/messages/{message.id}/")
        expect(page.locator(".pager-where", has_text="Page 1 of 4").first).to_be_visible()
        page.locator("a[rel=next]").first.click()
        page.wait_for_load_state()
        assert "?page=2" in page.url
        shown = page.locator("pre.audit-content").inner_text()
        assert len(shown) <= CONTENT_PAGE_CHARS
        assert shown.startswith(text[CONTENT_PAGE_CHARS : CONTENT_PAGE_CHARS + 20])
        screenshot(page, "16-message-page-2", full_page=False)

        page.click("a:text('Read as the model')")
        page.wait_for_load_state()
        assert page.locator("pre#tool-text").inner_text().startswith("[message_context_read] messageId=")
        screenshot(page, "17-message-as-the-model-reads-it", full_page=False)
