"""A global statement's budget is an idle machine's milliseconds: on a loaded machine it is scaled by the load
(statements.py: within_budget, docs/search.md "Under load"). Other sessions sleeping in pg_sleep stand for
the load here: they are active statements, as a saturated server's are."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

import psycopg
import pytest
from django.db import connection

from tests.support.database import other_session
from threadmem.features.search.literal import plan
from threadmem.features.search.statements import host_runnable, within_budget

pytestmark = pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budget is statement_timeout")

SLEEPERS = 4


def connect() -> psycopg.Connection:
    return other_session(autocommit=True)


def sleep(session: psycopg.Connection) -> None:
    with contextlib.suppress(psycopg.errors.QueryCanceled):
        session.execute("SELECT pg_sleep(30)")


@pytest.fixture
def busy_database() -> Iterator[None]:
    """SLEEPERS other sessions each running a statement, until the test ends."""
    sessions = [connect() for _ in range(SLEEPERS)]
    pids = [session.info.backend_pid for session in sessions]
    threads = [threading.Thread(target=sleep, args=[session], daemon=True) for session in sessions]
    for thread in threads:
        thread.start()
    with connect() as watcher:
        for _ in range(200):
            (active,) = watcher.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid = ANY(%s)", [pids]
            ).fetchone()
            if active == SLEEPERS:
                break
            time.sleep(0.02)
        yield
        watcher.execute("SELECT pg_cancel_backend(pid) FROM unnest(%s::int[]) AS pid", [pids])
    for thread in threads:
        thread.join(timeout=10)
    for session in sessions:
        session.close()


def load_scale() -> tuple[int, int]:
    """The load scale of the tuning in force, as a global search's plan applies it."""
    return plan.TUNING.budget_scale_max, plan.TUNING.db_cpus


@pytest.mark.django_db
def test_a_load_scaled_budget_grows_with_the_statements_the_database_runs(busy_database, tune):
    tune(db_cpus=1)
    tune(budget_scale_max=20)
    timeout = "SELECT current_setting('statement_timeout')"

    (scaled,) = within_budget(timeout, [], 10, scaled=load_scale())[0]
    (fixed,) = within_budget(timeout, [], 10)[0]

    # This statement and the sleepers (and whatever else the server runs): at least five times, at most the cap.
    assert 50 <= int(scaled.removesuffix("ms")) <= 200
    assert fixed == "10ms"


@pytest.mark.django_db
def test_work_that_fits_an_idle_budget_finishes_on_a_loaded_machine(busy_database, tune):
    """Before the scaling, 200 ms of waiting ran out of a 50 ms budget whatever the load; with five statements
    on one CPU the budget is 250 ms or more."""
    tune(db_cpus=1)
    tune(budget_scale_max=20)
    slow = "SELECT 'done' FROM pg_sleep(0.2)"

    assert within_budget(slow, [], 50, scaled=load_scale()) == [("done",)]
    assert within_budget(slow, [], 50) is None
    tune(budget_scale_max=1)  # 1: the clock's milliseconds, as before
    assert within_budget(slow, [], 50, scaled=load_scale()) is None


@pytest.mark.django_db
def test_an_idle_database_leaves_the_budget_as_it_is(tune):
    tune(db_cpus=10_000)  # whatever runs, fewer statements than CPUs
    timeout = "SELECT current_setting('statement_timeout')"
    assert within_budget(timeout, [], 45, scaled=load_scale()) == [("45ms",)]


def test_the_host_count_of_runnable_threads_counts_at_least_this_one():
    assert host_runnable() >= 1
