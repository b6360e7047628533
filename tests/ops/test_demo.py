"""`manage.py demo`: admin login and token, demo threads, idempotent across runs."""

from __future__ import annotations

import io
import re
from pathlib import Path

import pytest
from django.contrib.auth import authenticate, get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from threadmem.features.demo import DEPLOY_CHANNEL, FORK_CHANNEL, JOURNAL_NEEDLE
from threadmem.models import Message, Thread, ToolArgument

DOCS_MCP = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"


def run_demo(*args: str) -> dict[str, str]:
    out = io.StringIO()
    call_command("demo", *args, stdout=out)
    text = out.getvalue()
    fields = dict(re.findall(r"^\s+(console|login|password|API token):\s+(\S+)", text, flags=re.MULTILINE))
    fields["text"] = text
    return fields


@pytest.mark.django_db
def test_it_prints_a_working_admin_login_and_token_and_loads_demo_threads():
    printed = run_demo("--host", "127.0.0.1", "--port", "8123")
    assert printed["console"] == "http://127.0.0.1:8123/console/"
    assert printed["login"] == "admin"
    admin = authenticate(username="admin", password=printed["password"])
    assert admin is not None and admin.is_superuser and admin.is_staff
    assert Token.objects.get(user=admin).key == printed["API token"]
    assert (
        f'curl -H "Authorization: Token {printed["API token"]}" http://127.0.0.1:8123/api/v1/threads/'
        in printed["text"]
    )

    deploy = Thread.objects.get(channel=DEPLOY_CHANNEL)
    messages = list(deploy.messages.order_by("seq"))
    longest = max(messages, key=lambda m: len(m.content))
    assert len(longest.content) >= 50_000
    middle = longest.content.index(JOURNAL_NEEDLE) / len(longest.content)
    assert 0.3 < middle < 0.7
    assert any(m.kind == Message.Kind.MACHINE_EVENT for m in messages)
    assert any(not m.model_visible for m in messages)
    paths = set(ToolArgument.objects.filter(thread=deploy).values_list("path", "value"))
    assert ("command", "ssh deploy@staging-7.example.net 'systemctl status api'") in paths
    assert ("files[0].path", "C:\\Users\\ops\\deploy.ps1") in paths
    assert ("url", "https://status.example.net/api/health") in paths
    fork = Thread.objects.get(channel=FORK_CHANNEL)
    assert fork.parent == deploy


@pytest.mark.django_db
def test_it_is_idempotent_and_changes_only_the_password():
    first = run_demo()
    counts = (Thread.objects.count(), Message.objects.count(), ToolArgument.objects.count())
    second = run_demo()
    assert (Thread.objects.count(), Message.objects.count(), ToolArgument.objects.count()) == counts
    assert second["API token"] == first["API token"]
    assert second["password"] != first["password"]
    assert authenticate(username="admin", password=first["password"]) is None
    assert authenticate(username="admin", password=second["password"]) is not None
    assert get_user_model().objects.filter(username="admin").count() == 1
    assert "threads created: none" in second["text"]


@pytest.mark.django_db
def test_the_mcp_line_it_prints_is_the_one_docs_mcp_md_gives_and_the_real_client_test_runs():
    printed = run_demo("--host", "127.0.0.1", "--port", "8000")
    (documented,) = re.findall(r"^claude mcp add --transport http .*$", DOCS_MCP.read_text(), flags=re.MULTILINE)
    assert documented.replace("$TOKEN", printed["API token"]) in printed["text"]
