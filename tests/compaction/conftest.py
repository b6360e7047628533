"""Fixtures of the compaction tests: two real workers for a module, a fake model that always answers."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from tests.support.compaction import nine_sections
from tests.support.fake_openai import FakeOpenAI
from tests.support.workers import Workers, running_workers, wait_until


@pytest.fixture(scope="module")
def workers(django_db_setup, fake_openai_server, tmp_path_factory) -> Iterator[Workers]:
    log_dir = tmp_path_factory.mktemp("workers")
    with running_workers(fake_openai_server, log_dir, prefix="threadmem-test", names={"w1": {}, "w2": {}}) as pool:
        yield pool


@pytest.fixture
def fake(fake_openai) -> FakeOpenAI:
    # Any model call beyond the scripted ones gets a valid summary.
    fake_openai.default_chat = lambda body: nine_sections(s8="default answer")
    return fake_openai


@pytest.fixture
def idle_after(workers) -> Iterator[None]:
    """Leave no task behind for the next test (whose tables are flushed meanwhile)."""
    yield
    wait_until(lambda: workers.queued() == 0, workers, what="the queue to drain")
    time.sleep(1.0)  # a task taken just before the drain finishes against this test's rows
