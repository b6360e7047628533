"""Fixtures for the personas, made from a table: a user each, and a client of a surface signed in as each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.factories import make_user


def persona_fixture(name: str, *, database: str = "db", **flags: bool) -> Any:
    """A fixture ``name``: the user ``name`` (with ``flags`` such as ``is_staff``), in the ``database`` fixture's
    database (``transactional_db`` where other processes must see the row).

    The database fixture is a parameter, not requested inside: pytest-django
    sets up the test databases that the collected tests' fixtures name, so a
    file whose tests reach the database only through a persona would
    otherwise run against the unmigrated default database when run alone.
    """

    def in_db(db: None) -> Any:
        return make_user(name, **flags)

    def in_transactional_db(transactional_db: None) -> Any:
        return make_user(name, **flags)

    choices = {"db": in_db, "transactional_db": in_transactional_db}
    return pytest.fixture(name=name)(choices[database])


def client_fixture(persona: str, surface: str, client: Callable[[Any], Any]) -> Any:
    """A fixture ``<persona>_<surface>``: ``client(user)`` for the persona's user."""

    @pytest.fixture(name=f"{persona}_{surface}")
    def persona_client(request: pytest.FixtureRequest) -> Any:
        return client(request.getfixturevalue(persona))

    return persona_client
