"""A bounded, deterministic schemathesis run over the OpenAPI schema: no server error, answers as documented.

Every operation of ``/api/v1/schema/`` gets generated requests (valid and
invalid bodies, odd strings, huge numbers), sent in-process through the WSGI
app with an owner's token, against the owner's thread and one of its messages
(their ids are fixed, so the generated requests reach them instead of a 404).
Checked: no 5xx; status codes, content types and bodies conform to the schema;
a schema-valid request is accepted (but for the refusals in
``SEMANTIC_REFUSALS``) and a schema-violating one refused. ``derandomize``
makes the cases the same on every run, so a failure reproduces;
``FUZZ_EXAMPLES`` raises the cases per operation (``make fuzz``: 300).
"""

from __future__ import annotations

import os
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
from tests.support.factories import append
from threadmem.models import Message

CASES_PER_OPERATION = int(os.environ.get("FUZZ_EXAMPLES", "12"))
CHANNEL = "slack:C042/1700000000.1"  # the ``thread`` fixture's
MESSAGE_ID = 2**40  # the ``message`` fixture's: above any id a test database hands out

schema = schemathesis.openapi.from_dict(SchemaGenerator().get_schema(request=None, public=True))
schema.app = application
schema.location = "/api/v1/schema/"
schema.config.update(parameters={"path.channel": CHANNEL, "path.message_id": MESSAGE_ID})

# 400s that follow from rules no JSON Schema can state: each is (the method, or None for any; the field the
# answer names, or None for any; its words). The schema's descriptions say each of them.
SEMANTIC_REFUSALS = [
    # Only without channel: the GET form's query parameters are independent (the POST body's anyOf says it).
    ("GET", "query", "needs at least 3 letters or digits in a row"),
    (None, "query", "nothing to search for"),  # curly quotes are stripped too, which the pattern does not list
    (None, "cursor", "the cursor is not valid"),  # a cursor is one this service signed
    (None, "offset", "is past the end of the content"),  # depends on the stored message
    (None, "supersedes", "not in this thread"),  # depends on the stored messages
    (None, "file", "the upload is not JSONL"),  # the file's contents
    (None, "file", "the upload is empty"),
    # Storable text, in any string field (lib/storable.py): a pattern on every string would bury the schema.
    (None, None, "contains a NUL character"),
    (None, None, "contains a lone surrogate"),
    (None, None, "holds an integer outside 64 bits"),  # storable JSON, at any depth of a tool call's arguments
]


def semantic_refusal(response, case) -> bool:
    if response.status_code != 400:
        return False
    try:
        body = response.json()
    except ValueError:
        return False
    return any(
        method in (None, case.method) and field in (None, body.get("field")) and words in body.get("detail", "")
        for method, field, words in SEMANTIC_REFUSALS
    )


def positive_data_acceptance(ctx, response, case):
    """Schemathesis' check, except for the refusals listed above: a schema-valid request is accepted."""
    if semantic_refusal(response, case):
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


@pytest.fixture
def message(thread) -> Message:
    """A message of the owner's thread, under the id the generated requests name."""
    assert thread.channel == CHANNEL
    (stored,) = append(thread, {"role": "user", "content": "deploy the staging box with kubectl rollout restart"})
    Message.objects.filter(pk=stored.pk).update(id=MESSAGE_ID)
    return Message.objects.get(pk=MESSAGE_ID)


@schema.exclude(path_regex="^/api/v1/(schema|docs)/").parametrize()
@settings(
    max_examples=CASES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
@pytest.mark.django_db
def test_every_operation_answers_generated_requests_as_documented(case, auth, message, fake_openai):
    # fake_openai: an agent turn answers from a chat model (without one, 503).
    case.call_and_validate(headers=auth, checks=CHECKS)
