"""The console by project: the threads page filters by it (a directory below included) and names each thread's,
and its search runs search_memory with it; in the page as served, and in a real browser."""

from __future__ import annotations

import pytest

from tests.support.browser import chromium_page, login, screenshot
from tests.support.factories import append, make_thread

APP = "/home/dev/src/app"
SHOP = "/home/dev/src/shop"


@pytest.fixture
def projects(owner, other):
    app = make_thread(owner, "claude-code:app", project=APP)
    app_web = make_thread(other, "claude-code:app-web", project=f"{APP}/web")
    neighbour = make_thread(owner, "claude-code:app-2", project=f"{APP}-2")
    shop = make_thread(owner, "claude-code:shop", project=SHOP)
    ids = {}
    for thread in (app, app_web, neighbour, shop):
        (ids[thread.channel],) = append(thread, {"role": "user", "content": "the zebrafish migration failed"})
    return {channel: message.id for channel, message in ids.items()}


@pytest.mark.django_db
def test_the_threads_page_filters_by_project_and_names_each_threads(operator_console, projects):
    page = operator_console.get("/console/", {"project": APP}).content.decode()
    assert "claude-code:app<" in page and "claude-code:app-web<" in page
    assert "claude-code:app-2<" not in page and "claude-code:shop<" not in page
    assert f'href="?project={APP}/web"' in page
    everything = operator_console.get("/console/").content.decode()
    assert all(f"{channel}<" in everything for channel in projects)
    assert f'<option value="{SHOP}">' in everything  # the project box's suggestions


@pytest.mark.django_db
def test_the_console_search_takes_a_project(operator_console, projects):
    page = operator_console.get("/console/search/", {"q": "zebrafish", "project": SHOP}).content.decode()
    assert f"project: &quot;{SHOP}&quot;" in page
    assert f"messageId={projects['claude-code:shop']} " in page
    assert f"messageId={projects['claude-code:app']} " not in page
    refused = operator_console.get(
        "/console/search/", {"q": "zebrafish", "channel": "claude-code:app", "project": SHOP}
    )
    assert refused.status_code == 400 and "is in project" in refused.content.decode()


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_an_operator_narrows_the_threads_to_a_project_in_a_browser(browser, live_server, operator, projects):
    with chromium_page(browser) as page:
        login(page, live_server.url, "operator", "operator-password")
        page.goto(f"{live_server.url}/console/")
        page.fill("input[name=project]", SHOP)
        page.click("form[role=search] button[type=submit]")
        page.wait_for_load_state()
        channels = page.locator("a.channel").all_inner_texts()
        assert channels == ["claude-code:shop"]
        # A thread's project links to its project's threads.
        page.goto(f"{live_server.url}/console/")
        page.locator(f'.project a:text-is("{APP}")').click()
        page.wait_for_load_state()
        assert sorted(page.locator("a.channel").all_inner_texts()) == ["claude-code:app", "claude-code:app-web"]
        screenshot(page, "threads-by-project")
