"""``SearchTuning.path``: one switch over the thread-scope plan, read in one place (search/literal/plan.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests.support.search import choose_plan
from threadmem.features.search.literal import plan as literal_plan
from threadmem.features.search.literal.plan import OWNER_WINDOW_THREADS_MAX, MatchPlan, SearchPath, SearchTuning

SMALL, LARGE = 1_000, 10**9
POSTGRES = SimpleNamespace(vendor="postgresql", has_extension=True)
POSTGRES_PLAIN = SimpleNamespace(vendor="postgresql", has_extension=False)


def thread_of(visible_bytes: int) -> SimpleNamespace:
    return SimpleNamespace(is_global=False, visible_bytes=visible_bytes)


@pytest.mark.parametrize(
    ("path", "visible_bytes", "dialect", "plan"),
    [
        ("auto", SMALL, POSTGRES, MatchPlan.SCAN),
        ("auto", LARGE, POSTGRES, MatchPlan.INDEX_THEN_SCAN),
        ("auto", LARGE, POSTGRES_PLAIN, MatchPlan.SPELLED_INDEX),
        ("scan", LARGE, POSTGRES, MatchPlan.SCAN),
        ("index", SMALL, POSTGRES, MatchPlan.INDEX_THEN_SCAN),
        ("index", SMALL, POSTGRES_PLAIN, MatchPlan.SPELLED_INDEX),
    ],
)
def test_the_path_setting_forces_a_threads_plan_and_auto_chooses_by_size(path, visible_bytes, dialect, plan, tune):
    tune(path=path)
    tune(thread_scan_bytes=1_000_000)
    assert choose_plan(thread_of(visible_bytes), dialect) == plan


@pytest.mark.parametrize(
    ("path", "plan"),
    [("auto", MatchPlan.INDEX_THEN_RECENT), ("index", MatchPlan.INDEX_THEN_RECENT), ("scan", MatchPlan.SCAN)],
)
def test_only_scan_forces_an_operators_global_scope_and_nothing_forces_sqlite(path, plan, tune):
    # scan reads every message: the exhaustive search bench/search.py checks the index paths against.
    tune(path=path)
    operators_global = SimpleNamespace(is_global=True, visible_bytes=0, readable_thread_ids=None)
    assert choose_plan(operators_global, POSTGRES) == plan
    assert choose_plan(thread_of(LARGE), SimpleNamespace(vendor="sqlite", has_extension=False)) == MatchPlan.SCAN


def test_the_knobs_read_as_one_frozen_object(tune):
    assert SearchTuning() == literal_plan.TUNING  # the defaults are the tuning in force
    tune(index_budget_ms=7)
    tuning = literal_plan.TUNING
    assert tuning.index_budget_ms == 7
    assert tuning.path == SearchPath.AUTO
    with pytest.raises(AttributeError):
        tuning.index_budget_ms = 8  # type: ignore[misc]


@pytest.mark.parametrize(
    ("visible_bytes", "threads", "path", "plan"),
    [
        (999_999, 2, "auto", MatchPlan.SCAN),
        (999_999, 2, "scan", MatchPlan.SCAN),
        (999_999, 2, "index", MatchPlan.WINDOW_THEN_RECENT),
        (1_000_001, 2, "auto", MatchPlan.WINDOW_THEN_RECENT),
        # Too many threads to look each one's newest messages up: the indexes alone.
        (1_000_001, OWNER_WINDOW_THREADS_MAX + 1, "auto", MatchPlan.INDEX_THEN_RECENT),
    ],
)
def test_an_owners_global_scope_as_small_as_a_scanned_thread_is_read_whole(visible_bytes, threads, path, plan, tune):
    tune(thread_scan_bytes=1_000_000)
    tune(path=path)
    owned = tuple(range(1, threads + 1))
    owners_global = SimpleNamespace(is_global=True, visible_bytes=visible_bytes, readable_thread_ids=owned)
    assert choose_plan(owners_global, POSTGRES) == plan
