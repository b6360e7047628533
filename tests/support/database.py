"""Another session on the test database, as a second client or a concurrent process would hold one."""

from __future__ import annotations

import psycopg
from django.db import connection


def other_session(*, autocommit: bool = False) -> psycopg.Connection:
    """A psycopg connection of its own to the database the tests run on (PostgreSQL only)."""
    params = connection.get_connection_params()
    return psycopg.connect(**{k: v for k, v in params.items() if k != "cursor_factory"}, autocommit=autocommit)
