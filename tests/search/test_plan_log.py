"""The executed plan on the tool-call log row (ToolCall.plan) and in the metrics: per term, its branch and why."""

from __future__ import annotations

import pytest
from django.db import connection

from tests.support.factories import append
from threadmem.errors import InvalidInput
from threadmem.features.search import search_memory
from threadmem.features.search.literal.plan import Branch
from threadmem.infrastructure import metrics
from threadmem.models import ToolCall

pytestmark = pytest.mark.django_db


@pytest.fixture
def stored(thread):
    append(
        thread,
        {"role": "user", "content": "the rollout of ticket-4711 failed: connection refused"},
        {"role": "assistant", "content": "Retrying ticket-4711 after the connection came back."},
    )
    return thread


def branches(scope: str, plan: str) -> dict[str, float]:
    """The branch counter's values for one scope and plan, by branch."""
    found = {}
    for family in metrics.SEARCH_TERM_BRANCHES.collect():
        for sample in family.samples:
            labels = sample.labels
            if sample.name.endswith("_total") and labels["scope"] == scope and labels["plan"] == plan:
                found[labels["branch"]] = sample.value
    return found


def test_a_thread_search_logs_each_terms_branch_its_coverage_and_time(owner, stored):
    before = branches("thread", "scan")
    result = search_memory(user=owner, query="ticket-4711 connection", channel=stored.channel)
    call = ToolCall.objects.get()
    plan = call.plan
    assert result.literal_hits_total == call.hits_total > 0
    # A two-message thread is scanned on either database (plan.py choose).
    assert plan["plan"] == "scan"
    assert plan["matched_by"] == result.matched_by.value == "scan"
    assert plan["coverage"] == "all"
    assert plan["ms"] >= 0
    assert [(term["term"], term["branch"]) for term in plan["terms"]] == [
        ("ticket-4711 connection", "scan"),
        ("ticket-4711", "scan"),
        ("connection", "scan"),
    ]
    assert all(term["reason"] for term in plan["terms"])
    after = branches("thread", "scan")
    assert after.get("scan", 0) - before.get("scan", 0) == 3


def test_a_global_search_logs_the_plan_its_scope_took(operator, stored):
    search_memory(user=operator, query="ticket-4711")
    plan = ToolCall.objects.get().plan
    if connection.vendor == "postgresql":
        # An operator's global scope has no end to scan: the indexes within a budget, else the newest messages.
        assert plan["plan"] == "index-then-recent"
        assert plan["terms"][0]["branch"] in {Branch.TRIGRAM, Branch.TOKEN, Branch.NEWEST}
        assert plan["matched_by"] in {"index", "recent"}
    else:
        assert plan["plan"] == "scan"
        assert plan["terms"][0]["reason"] == "no index serves SQLite's match function"
    assert plan["terms"][0]["term"] == "ticket-4711"


def test_a_refused_call_and_a_read_log_no_plan(owner, stored):
    with pytest.raises(InvalidInput):
        search_memory(user=owner, query="  ", channel=stored.channel)
    assert ToolCall.objects.get().plan is None
