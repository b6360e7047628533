"""Without DATABASE_REPLICA_URLS nothing changes: no router, no statement, no cache lookup
(threadmem/infrastructure/replicas/)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connection
from django.test.utils import CaptureQueriesContext

from tests.support.factories import append, make_thread, token_client
from threadmem.domain import db
from threadmem.features.tools import tool_answer
from threadmem.infrastructure import replicas
from threadmem.infrastructure.replicas import positions, rule

pytestmark = pytest.mark.django_db


def test_without_replicas_a_read_adds_nothing(owner, monkeypatch):
    thread = make_thread(owner, "unset:reads")
    append(thread, {"role": "user", "content": "the heron count is seven"})
    arguments = {"query": "heron", "channel": "unset:reads"}
    assert "heron count" in tool_answer(name="search_memory", arguments=arguments, user=owner, surface="mcp").text
    assert replicas.aliases() == [] and not getattr(settings, "DATABASE_ROUTERS", [])
    assert db.reading.alias == DEFAULT_DB_ALIAS

    monkeypatch.setattr(rule, "choose", lambda caller: pytest.fail("a replica was looked for"))
    monkeypatch.setattr(positions, "cache", None)  # any cache lookup would fail
    with CaptureQueriesContext(connection) as queries:
        assert replicas.read(lambda: replicas.alias(), owner.pk) == DEFAULT_DB_ALIAS
        replicas.wrote(owner.pk)
    assert len(queries) == 0


def test_without_replicas_a_request_adds_nothing(owner, monkeypatch):
    """The middleware every request passes: no replica looked for, no write position kept."""
    make_thread(owner, "unset:http")
    monkeypatch.setattr(rule, "choose", lambda caller: pytest.fail("a replica was looked for"))
    monkeypatch.setattr(positions, "cache", None)  # any cache lookup would fail
    api = token_client(owner)
    stored = api.post("/api/v1/threads/unset:http/messages/", {"role": "user", "content": "the ibis"}, format="json")
    assert stored.status_code == 201
    assert "the ibis" in api.get("/api/v1/search/", {"query": "ibis"}).json()["text"]
    assert "the ibis" in api.post("/api/v1/search/", {"query": "ibis"}, format="json").json()["text"]
