"""/metrics: Prometheus' text format for operators (docs/metrics.md), served beside the REST API, not in its schema.

Who may read it: staff (an API token or a console session), or whoever sends
THREADMEM_METRICS_TOKEN as ``Authorization: Bearer <token>`` (a scraper with
no user). Anyone else: 401 without credentials, 403 with a non-staff user's.
"""

from __future__ import annotations

import hmac
from collections.abc import Iterator
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.http import HttpResponse
from drf_spectacular.utils import extend_schema
from prometheus_client.core import GaugeMetricFamily
from rest_framework.authentication import BaseAuthentication, SessionAuthentication, TokenAuthentication
from rest_framework.exceptions import AuthenticationFailed
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from threadmem.domain import backlogs
from threadmem.domain.selectors import is_operator
from threadmem.features.embeddings import choice
from threadmem.infrastructure import metrics

METRICS_TOKEN_AUTH = "metrics-token"


class MetricsTokenAuthentication(BaseAuthentication):
    """``Authorization: Bearer <THREADMEM_METRICS_TOKEN>``: a scraper, no user. Another bearer token: 401."""

    def authenticate(self, request: Request) -> tuple[Any, str] | None:
        scheme, _, token = request.META.get("HTTP_AUTHORIZATION", "").partition(" ")
        if scheme.lower() != "bearer":
            return None
        expected = settings.THREADMEM_METRICS_TOKEN
        if not expected or not hmac.compare_digest(token.strip().encode(), expected.encode()):
            raise AuthenticationFailed("invalid metrics token")
        return AnonymousUser(), METRICS_TOKEN_AUTH

    def authenticate_header(self, request: Request) -> str:
        return 'Bearer realm="metrics"'


class StaffOrMetricsToken(BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        if request.auth == METRICS_TOKEN_AUTH:
            return True
        return bool(request.user and request.user.is_authenticated and is_operator(request.user))


class BacklogCollector:
    """The embedding and import backlogs, read from the tables at each scrape (threadmem/domain/backlogs.py)."""

    def collect(self) -> Iterator[GaugeMetricFamily]:
        imports = GaugeMetricFamily(
            "threadmem_import_backlog", "Imports not finished, by status (pending, running).", labels=["status"]
        )
        for status, count in backlogs.import_backlog().items():
            imports.add_metric([status], count)
        yield imports
        model = choice.active_model()  # whichever embeds: a configured model, else the in-process one
        if not model:
            return  # no embedding model: nothing is ever embedded, so nothing waits
        embedding = backlogs.embedding_backlog(model)
        threads = GaugeMetricFamily(
            "threadmem_embedding_backlog_threads",
            "Threads with messages after their embedded seq, for the embedding model in force.",
            labels=["model"],
        )
        threads.add_metric([embedding.model], embedding.threads)
        yield threads
        messages = GaugeMetricFamily(
            "threadmem_embedding_backlog_messages",
            "Messages after their thread's embedded seq, for the embedding model in force.",
            labels=["model"],
        )
        messages.add_metric([embedding.model], embedding.messages)
        yield messages


class MetricsView(APIView):
    authentication_classes = [MetricsTokenAuthentication, TokenAuthentication, SessionAuthentication]
    permission_classes = [StaffOrMetricsToken]

    @extend_schema(exclude=True)
    def get(self, request: Request) -> HttpResponse:
        body, content_type = metrics.exposition(BacklogCollector())
        return HttpResponse(body, content_type=content_type)
