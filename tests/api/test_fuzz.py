"""A bounded, deterministic schemathesis run over the OpenAPI schema: no server error, answers as documented.

Every operation of ``/api/v1/schema/`` gets generated requests (valid and
invalid bodies, odd strings, huge numbers), sent in-process through the WSGI
app with an owner's token. Checked: no 5xx; status codes, content types and
bodies conform to the schema. ``derandomize`` makes the cases the same on
every run, so a failure reproduces.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, settings
from schemathesis import checks
from schemathesis.specs.openapi import checks as openapi_checks

from threadmem.wsgi import application

CASES_PER_OPERATION = 12

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = application
schema.location = "/api/v1/schema/"

CHECKS = [
    checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
]


@pytest.fixture
def auth(owner_api) -> Iterator[dict[str, str]]:
    # The WSGI handler closes the connection after each request, which would end the test's
    # transaction; Django's own test client keeps it open the same way.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield {"Authorization": owner_api._credentials["HTTP_AUTHORIZATION"]}
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@schema.exclude(path_regex="^/api/v1/(schema|docs)/").parametrize()
@settings(
    max_examples=CASES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@pytest.mark.django_db
def test_every_operation_answers_generated_requests_as_documented(case, auth, thread):
    case.call_and_validate(headers=auth, checks=CHECKS)
