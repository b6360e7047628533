"""What Django or the database refuse answers in the API's JSON with the status that says so: 413 for a body over
the request limit, 400 for a bad Host, 503 with Retry-After while the database cannot be reached (saying the request
may have been stored when the connection was lost at COMMIT)."""

from __future__ import annotations

import socket
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psycopg
import pytest
from django.db import OperationalError, connection

from tests.support.api import MESSAGES
from tests.support.database import other_session
from tests.support.factories import row_counts

BODY = {"role": "user", "content": "x" * 300}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("url", "body", "fmt"),
    [
        (MESSAGES, BODY, "json"),
        ("/api/v1/search/", {"query": "x" * 300}, "json"),
        ("/api/v1/threads/", {"title": "x" * 300}, "json"),
        ("/api/v1/imports/", {"channel": "x" * 300}, "multipart"),
    ],
)
def test_a_body_over_the_request_limit_answers_413_and_stores_nothing(owner_api, thread, settings, url, body, fmt):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 100
    before = row_counts()
    response = owner_api.post(url, body, format=fmt)
    assert response.status_code == 413, response.content
    assert "DATA_UPLOAD_MAX_MEMORY_SIZE" in response.json()["detail"]
    assert row_counts() == before


@pytest.mark.django_db
def test_a_bad_host_answers_json_on_api_paths_and_the_html_page_elsewhere(client):
    api = client.get("/api/v1/threads/", HTTP_HOST="evil.example")
    assert api.status_code == 400
    assert api["content-type"] == "application/json"
    assert api.json() == {"detail": "the Host header is not one of ALLOWED_HOSTS"}
    console = client.get("/console/login/", HTTP_HOST="evil.example")
    assert console.status_code == 400 and console["content-type"].startswith("text/html")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the socket is: nothing listens there


@contextmanager
def database_down(tmp_path: Path) -> Iterator[None]:
    """The default connection, reopened at an address where no database answers; restored afterwards."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "postgresql":
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(closed_port()))
    else:
        connection.settings_dict["NAME"] = str(tmp_path / "no-such-folder" / "db.sqlite3")
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.mark.django_db(transaction=True)
def test_an_append_while_the_database_cannot_be_reached_answers_503_with_retry_after(owner_api, thread, tmp_path):
    before = row_counts()
    with database_down(tmp_path):
        response = owner_api.post(MESSAGES, BODY, format="json")
        search = owner_api.get("/api/v1/search/", {"query": "deploy"})
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    assert "database cannot be reached" in response.json()["detail"]
    assert "127.0.0.1" not in response.content.decode() and "sqlite" not in response.content.decode()
    assert search.status_code == 503
    assert row_counts() == before
    assert owner_api.post(MESSAGES, BODY, format="json").status_code == 201


class ReplyLost:
    """The driver's connection, whose next COMMIT reaches the server but whose answer never comes back."""

    def __init__(self, raw: Any, lose: Callable[[], Exception]) -> None:
        object.__setattr__(self, "_raw", raw)
        object.__setattr__(self, "_lose", lose)
        object.__setattr__(self, "armed", True)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._raw, name)

    def __setattr__(self, name: str, value: Any) -> None:
        setattr(self._raw, name, value)

    def commit(self) -> None:
        self._raw.commit()
        if self.armed:
            object.__setattr__(self, "armed", False)
            raise self._lose()


def lose_the_connection() -> Exception:
    """PostgreSQL: the backend ended after its COMMIT; SQLite: an I/O error (its primary code, 10)."""
    if connection.vendor == "postgresql":
        with other_session(autocommit=True) as other:
            other.execute("SELECT pg_terminate_backend(%s)", [connection.connection.info.backend_pid])
        return psycopg.OperationalError("consuming input failed: server closed the connection unexpectedly")
    error = sqlite3.OperationalError("disk I/O error")
    error.sqlite_errorcode = 10
    return error


@pytest.mark.django_db(transaction=True)
def test_an_append_whose_connection_is_lost_at_commit_says_it_may_have_been_stored(owner_api, thread):
    message = {**BODY, "source_id": "lost-at-commit"}
    connection.ensure_connection()
    connection.connection = ReplyLost(connection.connection, lose_the_connection)
    try:
        response = owner_api.post(MESSAGES, message, format="json")
    finally:
        connection.close()
    assert response.status_code == 503, response.content
    assert response["Retry-After"] == "5"
    detail = response.json()["detail"]
    assert "nothing was stored" not in detail
    assert "may have been stored; retry with the same source_id" in detail
    assert thread.messages.filter(source_id="lost-at-commit").count() == 1  # it was stored
    retried = owner_api.post(MESSAGES, message, format="json")
    assert retried.status_code in (200, 201), retried.content
    assert thread.messages.filter(source_id="lost-at-commit").count() == 1


@pytest.mark.django_db(transaction=True)
def test_an_append_whose_connection_is_lost_before_commit_says_nothing_was_stored(owner_api, thread):
    def lose_in_the_transaction(execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any) -> Any:
        if connection.in_atomic_block:
            raise OperationalError("server closed the connection unexpectedly") from lose_the_connection()
        return execute(sql, params, many, context)

    with connection.execute_wrapper(lose_in_the_transaction):
        response = owner_api.post(MESSAGES, BODY, format="json")
    connection.close()
    assert response.status_code == 503, response.content
    assert "nothing was stored by this request" in response.json()["detail"]
    assert not thread.messages.exists()
