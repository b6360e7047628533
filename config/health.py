"""Liveness and readiness: the database, and the broker when one is configured."""

from __future__ import annotations

from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse


def healthz(request: HttpRequest) -> JsonResponse:
    checks: dict[str, str] = {}
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
        checks["database"] = "ok"
    except Exception as exc:  # any failure means "not healthy"; say which
        checks["database"] = f"error: {exc.__class__.__name__}: {exc}"
    if settings.CELERY_BROKER_URL:
        from config.celery import app

        try:
            # The URL from settings, not Celery's copy of it, which is cached on
            # first use and would not follow a changed (or overridden) setting.
            with app.connection_for_write(url=settings.CELERY_BROKER_URL) as conn:
                conn.ensure_connection(max_retries=1, timeout=2)
            checks["broker"] = "ok"
        except Exception as exc:
            checks["broker"] = f"error: {exc.__class__.__name__}: {exc}"
    else:
        checks["broker"] = "not configured: tasks run in-process"
    healthy = all(v == "ok" or v.startswith("not configured") for v in checks.values())
    return JsonResponse({"status": "ok" if healthy else "error", "checks": checks}, status=200 if healthy else 503)
