"""The console's browser tests share one chromium per module."""

from __future__ import annotations

import pytest

from tests.support.browser import chromium


@pytest.fixture(scope="module")
def browser():
    """One chromium for the module (its launch costs a second or more); each test gets a fresh context and page."""
    # Playwright's sync API runs an event loop in this thread from launch to close; the ORM calls
    # the tests and their fixtures make meanwhile (the flush after each test included) are still plain synchronous code.
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
        with chromium() as launched:
            yield launched
