"""Fixtures for the personas, made from a table: a user each, and a client of a surface signed in as each."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.support.factories import make_user


def persona_fixture(name: str, *, database: str = "db", **flags: bool) -> Any:
    """A fixture ``name``: the user ``name`` (with ``flags`` such as ``is_staff``), in the ``database`` fixture's
    database (``transactional_db`` where other processes must see the row)."""

    @pytest.fixture(name=name)
    def persona(request: pytest.FixtureRequest) -> Any:
        request.getfixturevalue(database)
        return make_user(name, **flags)

    return persona


def client_fixture(persona: str, surface: str, client: Callable[[Any], Any]) -> Any:
    """A fixture ``<persona>_<surface>``: ``client(user)`` for the persona's user."""

    @pytest.fixture(name=f"{persona}_{surface}")
    def persona_client(request: pytest.FixtureRequest) -> Any:
        return client(request.getfixturevalue(persona))

    return persona_client
