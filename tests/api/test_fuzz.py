"""A bounded, deterministic schemathesis run over the OpenAPI schema: no server error, answers as documented.

Every operation of ``/api/v1/schema/`` gets generated requests (valid and
invalid bodies, odd strings, huge numbers), sent in-process through the WSGI
app with an owner's token. Checked: no 5xx; status codes, content types and
bodies conform to the schema; a schema-valid request is accepted (but for the
refusals in ``SEMANTIC_REFUSALS``) and a schema-violating one refused.
``derandomize`` makes the cases the same on every run, so a failure reproduces.
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

from config.wsgi import application

CASES_PER_OPERATION = 12

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = application
schema.location = "/api/v1/schema/"

# 400s that follow from rules no JSON Schema can state: each is (the field the answer names, its words).
SEMANTIC_REFUSALS = [
    ("query", "needs at least 3 letters or digits in a row"),  # only without channel: a cross-field rule
    ("query", "nothing to search for"),  # what is left once quotes and spaces are stripped
    ("cursor", "the cursor is not valid"),  # a cursor is one this service signed
    ("offset", "is past the end of the content"),  # depends on the stored message
    ("file", "the upload is not JSONL"),  # the file's contents
    ("file", "the upload is empty"),
    ("file", "send the JSONL as a multipart field named 'file'"),  # a form field with text instead of a file part
    ("channel", "channel must not"),  # the channel grammar (services._check_channel)
    (None, "contains a NUL character"),  # storable text, in any string field (lib/storable.py)
    (None, "contains a lone surrogate"),
]


def semantic_refusal(response) -> bool:
    if response.status_code != 400:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return any(
        field in (None, body.get("field")) and words in body.get("detail", "") for field, words in SEMANTIC_REFUSALS
    )


def positive_data_acceptance(ctx, response, case):
    """Schemathesis' check, except for the refusals listed above: a schema-valid request is accepted."""
    if semantic_refusal(response):
        return None
    return openapi_checks.positive_data_acceptance(ctx, response, case)


CHECKS = [
    checks.not_a_server_error,
    openapi_checks.status_code_conformance,
    openapi_checks.content_type_conformance,
    openapi_checks.response_schema_conformance,
    positive_data_acceptance,
    openapi_checks.negative_data_rejection,
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
