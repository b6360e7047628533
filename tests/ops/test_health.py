"""/healthz: the database, and the broker when one is configured."""

from __future__ import annotations

import pytest
from django.conf import settings as django_settings
from rest_framework.test import APIClient


@pytest.mark.django_db
def test_it_reports_the_database_ok_without_credentials():
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "ok"
    assert body["checks"]["database"] == "ok"


@pytest.mark.django_db
def test_it_says_tasks_run_in_process_without_a_broker(settings):
    settings.CELERY_BROKER_URL = ""
    body = APIClient().get("/healthz").json()
    assert body["checks"]["broker"] == "not configured: tasks run in-process"
    assert body["status"] == "ok"


@pytest.mark.django_db
def test_it_answers_503_naming_an_unreachable_broker(settings):
    # Port 1 on loopback: nothing listens, so the connection is refused at once.
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"
    response = APIClient().get("/healthz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "error"
    assert body["checks"]["database"] == "ok"
    assert body["checks"]["broker"].startswith("error: ")


@pytest.mark.django_db
@pytest.mark.skipif(not django_settings.CELERY_BROKER_URL, reason="needs CELERY_BROKER_URL (bash .ci/run sets it)")
def test_it_reports_the_configured_broker_ok():
    response = APIClient().get("/healthz")
    assert response.status_code == 200
    assert response.json()["checks"] == {"database": "ok", "broker": "ok"}
