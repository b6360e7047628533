"""Playwright helpers for the console's browser tests: Debian's chromium, headless.

Playwright never downloads a browser here: it drives /usr/bin/chromium (the
Makefile's test target and .ci/run install it when missing).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connections

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(settings.BASE_DIR) / "test-artifacts" / "console"
VIEWPORT = {"width": 1440, "height": 960}


@contextmanager
def chromium() -> Iterator:
    """A headless chromium for several tests (a module's): launched once, each test's page in a context of its own.

    Fails loudly if the browser is missing. While it runs, Playwright's event loop counts as running in this
    thread: the caller sets DJANGO_ALLOW_ASYNC_UNSAFE for as long (test_browser.py's ``browser`` fixture).
    """
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        raise RuntimeError(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
            connections.close_all()


@contextmanager
def chromium_page(browser) -> Iterator:
    """A fresh page in a fresh browser context (no cookie, storage or cache of an earlier test's)."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        context.set_default_timeout(15_000)
        yield context.new_page()
    finally:
        context.close()
        # ORM calls made inside the Playwright block run in its greenlet,
        # with a database connection of their own: close it, or the test
        # database cannot be dropped at the end of the session.
        connections.close_all()


def login(page, base_url: str, username: str, password: str) -> None:
    page.goto(f"{base_url}/console/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_load_state()


def screenshot(page, name: str, *, full_page: bool = True) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=full_page)
    return path
