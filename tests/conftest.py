"""Shared fixtures: the three personas (owner, other user, admin) plus an operator,
API clients authenticated with real DRF tokens, and row factories."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from threadmem import services
from threadmem.models import Message, Thread


def make_user(username: str, **flags: Any):
    return get_user_model().objects.create_user(username=username, password=f"{username}-password", **flags)


@pytest.fixture
def owner(db):
    return make_user("owner")


@pytest.fixture
def other(db):
    return make_user("other")


@pytest.fixture
def operator(db):
    """Staff: reads everything, may not toggle isolation."""
    return make_user("operator", is_staff=True)


@pytest.fixture
def admin(db):
    return make_user("admin", is_staff=True, is_superuser=True)


def token_client(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def owner_api(owner) -> APIClient:
    return token_client(owner)


@pytest.fixture
def other_api(other) -> APIClient:
    return token_client(other)


@pytest.fixture
def operator_api(operator) -> APIClient:
    return token_client(operator)


@pytest.fixture
def admin_api(admin) -> APIClient:
    return token_client(admin)


def make_thread(owner, channel: str | None = None, **kwargs: Any) -> Thread:
    return services.thread_create(owner=owner, channel=channel, **kwargs)


def append(thread: Thread, *messages: dict[str, Any]) -> list[Message]:
    return services.messages_append(thread=thread, messages=services.messages_parse(list(messages)))


@pytest.fixture
def thread(owner) -> Thread:
    return make_thread(owner, "slack:C042/1700000000.1", title="deploy the staging box")
