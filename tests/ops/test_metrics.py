"""/metrics: who may read it, and that searches, requests, compactions and backlogs move what it says.

Counters live for the whole test process, so each test reads /metrics before
and after and compares.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.db import connection
from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from tests.support.compaction import deploy_conversation, nine_sections
from tests.support.database import other_session
from tests.support.factories import append, console_client, make_thread
from threadmem.features.compaction.tasks import compaction_run_task
from threadmem.features.embeddings import static, tasks
from threadmem.infrastructure.metrics import REGISTRY, asgi_counted, exposition
from threadmem.models import EmbeddingProgress, Import, ToolCall

METRICS_URL = "/metrics"
ROOT = Path(__file__).resolve().parents[2]


def scrape(client) -> dict[tuple[str, frozenset], float]:
    response = client.get(METRICS_URL)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(response.content.decode())
        for sample in family.samples
    }


def value(samples: dict, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def moved(before: dict, after: dict, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


@pytest.mark.django_db
def test_searches_move_the_latency_completeness_request_and_chars_counters(operator_api, owner_api, owner, tune):
    tune(thread_scan_bytes=1_000_000)  # the owner's few messages: the scan plan
    thread = make_thread(owner, "metrics:search")
    append(thread, {"role": "user", "content": "the deploy of nginx on staging"})
    before = scrape(operator_api)

    search = "/api/v1/search/"
    answers = [owner_api.post(search, {"query": "nginx", "channel": thread.channel}, format="json") for _ in range(3)]
    answers.append(owner_api.post(search, {"query": "staging"}, format="json"))
    refused = owner_api.post(search, {"query": ""}, format="json")
    after = scrape(operator_api)

    assert [a.status_code for a in answers] == [200] * 4 and refused.status_code == 400
    assert all("nginx" in a.json()["text"] or "staging" in a.json()["text"] for a in answers)
    thread_scan = {"scope": "thread", "plan": "scan"}
    assert moved(before, after, "threadmem_search_seconds_count", **thread_scan) == 3
    assert moved(before, after, "threadmem_search_seconds_count", scope="owner", plan="scan") == 1
    assert moved(before, after, "threadmem_search_seconds_sum", **thread_scan) > 0
    assert moved(before, after, "threadmem_search_completeness_total", **thread_scan, completeness="complete") == 3
    assert moved(before, after, "threadmem_http_requests_total", surface="api", status="200") == 4
    assert moved(before, after, "threadmem_http_requests_total", surface="api", status="400") == 1
    # The characters served are the log's: every search row's chars_returned, the refusal's included.
    served = sum(ToolCall.objects.filter(tool="search_memory").values_list("chars_returned", flat=True))
    assert (
        moved(before, after, "threadmem_tool_call_chars_returned_total", tool="search_memory", surface="api") == served
    )
    refusals = {"tool": "search_memory", "surface": "api", "status": "400"}
    assert moved(before, after, "threadmem_tool_calls_total", **refusals) == 1
    # The scrape before this one: surface "other".
    assert moved(before, after, "threadmem_http_requests_total", surface="other", status="200") >= 1


@pytest.mark.django_db(transaction=True)
@pytest.mark.skipif(connection.vendor != "postgresql", reason="the time budgets are PostgreSQL's")
def test_a_global_search_out_of_time_is_counted_as_such(operator_api, owner, tune):
    tune(thread_scan_bytes=0)  # the owner's store is not read whole: the index path
    tune(index_budget_ms=1)
    tune(recent_budget_ms=1)
    tune(budget_scale_max=1)
    thread = make_thread(owner, "metrics:timeout")
    append(thread, {"role": "user", "content": "zircon-5 in the logs"})
    owner_api = APIClient()
    owner_api.force_authenticate(owner)
    labels = {"scope": "owner", "plan": "window-then-recent", "completeness": "out_of_time"}
    before = value(scrape(operator_api), "threadmem_search_completeness_total", **labels)
    with other_session() as other:
        # Another session holds the messages table: both statements wait until their budgets run out.
        other.execute("LOCK TABLE threadmem_message IN ACCESS EXCLUSIVE MODE")
        answer = owner_api.post("/api/v1/search/", {"query": "zircon-5"}, format="json")
    assert answer.status_code == 200 and "could not finish in time" in answer.json()["text"]
    assert value(scrape(operator_api), "threadmem_search_completeness_total", **labels) == before + 1


@pytest.mark.django_db
def test_compaction_attempts_retries_and_failures_are_counted(
    owner_api, operator_api, thread, fake_openai, django_capture_on_commit_callbacks
):
    deploy_conversation(thread)
    compact_url = f"/api/v1/threads/{thread.channel}/compact/"
    before = scrape(operator_api)
    for _ in range(compaction_run_task.max_retries + 1):
        fake_openai.push_error(500, "down for maintenance")
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(compact_url)
    fake_openai.push_chat(nine_sections())
    with django_capture_on_commit_callbacks(execute=True):
        owner_api.post(compact_url)
    after = scrape(operator_api)

    retries = compaction_run_task.max_retries
    assert moved(before, after, "threadmem_compaction_retries_total") == retries
    assert moved(before, after, "threadmem_compaction_failures_total") == 1
    assert moved(before, after, "threadmem_compaction_seconds_count", outcome="retry") == retries
    assert moved(before, after, "threadmem_compaction_seconds_count", outcome="failed") == 1
    assert moved(before, after, "threadmem_compaction_seconds_count", outcome="succeeded") == 1


@pytest.mark.django_db
def test_the_backlogs_are_read_from_the_tables(operator_api, owner, settings):
    thread = make_thread(owner, "metrics:backlog")
    append(thread, *({"role": "user", "content": f"message {n}"} for n in range(3)))
    Import.objects.create(owner=owner, format="claude-code")
    Import.objects.create(owner=owner, format="claude-code", status=Import.Status.SUCCEEDED)

    without_model = scrape(operator_api)
    settings.THREADMEM_EMBEDDING_MODEL = "fake-embedding"
    settings.OPENAI_BASE_URL = "http://127.0.0.1:9/v1"  # a configured server (never called: a scrape reads rows)
    with_model = scrape(operator_api)

    assert value(without_model, "threadmem_import_backlog", status="pending") == 1
    assert value(without_model, "threadmem_import_backlog", status="running") == 0
    assert not any(name.startswith("threadmem_embedding_backlog") for name, _ in without_model)
    assert value(with_model, "threadmem_embedding_backlog_messages", model="fake-embedding") == 3
    assert value(with_model, "threadmem_embedding_backlog_threads", model="fake-embedding") == 1


@pytest.mark.django_db(transaction=True)
def test_the_embedding_backlog_is_the_in_process_models_when_none_is_configured(operator_api, owner, static_model):
    thread = make_thread(owner, "metrics:static-backlog")
    append(thread, *({"role": "user", "content": f"the replica lags by {n} seconds"} for n in range(3)))
    tasks.wait_for_background()  # the static model embedded the appends in this process

    embedded = scrape(operator_api)
    EmbeddingProgress.objects.filter(thread=thread).update(embedded_seq=0)  # as if that run never happened
    behind = scrape(operator_api)

    model = static.STATIC_MODEL
    assert ("threadmem_embedding_backlog_threads", frozenset({"model": model}.items())) in embedded  # shown at 0
    assert value(embedded, "threadmem_embedding_backlog_threads", model=model) == 0
    assert value(embedded, "threadmem_embedding_backlog_messages", model=model) == 0
    assert value(behind, "threadmem_embedding_backlog_threads", model=model) == 1
    assert value(behind, "threadmem_embedding_backlog_messages", model=model) == 3


@pytest.mark.django_db
def test_only_staff_and_the_metrics_token_may_read_it(client, owner_api, operator_api, operator, settings):
    settings.THREADMEM_METRICS_TOKEN = "scrape-secret-1"
    scraper, wrong = APIClient(), APIClient()
    scraper.credentials(HTTP_AUTHORIZATION="Bearer scrape-secret-1")
    wrong.credentials(HTTP_AUTHORIZATION="Bearer scrape-secret-2")

    assert client.get(METRICS_URL).status_code == 401
    assert wrong.get(METRICS_URL).status_code == 401
    assert owner_api.get(METRICS_URL).status_code == 403
    assert operator_api.get(METRICS_URL).status_code == 200
    assert console_client(operator).get(METRICS_URL).status_code == 200
    assert scraper.get(METRICS_URL).status_code == 200
    assert b"threadmem_http_requests_total" in scraper.get(METRICS_URL).content


@pytest.mark.django_db
def test_no_token_configured_lets_no_bearer_in(settings):
    settings.THREADMEM_METRICS_TOKEN = ""
    bearer = APIClient()
    bearer.credentials(HTTP_AUTHORIZATION="Bearer ")
    assert bearer.get(METRICS_URL).status_code == 401


def test_an_asgi_app_is_counted_by_the_status_it_answers():
    """The MCP endpoint is not Django's: asgi_counted counts it (config/asgi.py), a crash as 500."""

    async def teapot(scope, receive, send):
        await send({"type": "http.response.start", "status": 418, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def crash(scope, receive, send):
        raise RuntimeError("before any answer")

    async def run(app) -> None:
        async def receive():
            return {"type": "http.request", "body": b""}

        async def send(message):
            pass

        await asgi_counted(app, "mcp")({"type": "http", "path": "/mcp/"}, receive, send)

    def count(status: str) -> float:
        return REGISTRY.get_sample_value("threadmem_http_requests_total", {"surface": "mcp", "status": status}) or 0

    teapots, crashes = count("418"), count("500")
    asyncio.run(run(teapot))
    with pytest.raises(RuntimeError):
        asyncio.run(run(crash))
    assert (count("418"), count("500")) == (teapots + 1, crashes + 1)


def test_with_a_multiprocess_dir_one_scrape_sums_every_process(tmp_path, monkeypatch):
    """Two processes (a web worker, a Celery worker) count apart; a scrape reads both (docs/metrics.md).
    The directory need not exist yet: the first process makes it."""
    directory = tmp_path / "metrics"
    count = "import sys; from threadmem.infrastructure import metrics; metrics.COMPACTION_RETRIES.inc(int(sys.argv[1]))"
    environment = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    for retries in (2, 3):
        subprocess.run([sys.executable, "-c", count, str(retries)], cwd=ROOT, env=environment, check=True)
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(directory))

    body, _ = exposition()

    samples = {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(body.decode())
        for sample in family.samples
    }
    assert value(samples, "threadmem_compaction_retries_total") == 5
