"""The MCP server as real processes, driven by the SDK's own client.

stdio: a spawned ``manage.py mcp`` per client. HTTP: the ASGI app under
uvicorn on a free loopback port, one per module. Both reach pytest's test
database (a file on SQLite, so a child process opens it too); the tests use
``transaction=True`` so the children see committed rows.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.factories import append, make_thread
from tests.support.mcp_client import SECRET, asgi_server
from tests.support.personas import persona_fixture


@pytest.fixture(scope="module")
def web(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The deployment's ASGI app (API, console, MCP) under uvicorn; yields its base URL."""
    with asgi_server(tmp_path_factory.mktemp("uvicorn")) as url:
        yield url


# Rows the server processes must see: committed, in a transactional test database.
alice, bob = (persona_fixture(name, database="transactional_db") for name in ("alice", "bob"))


@pytest.fixture
def alice_thread(alice):
    """A tool call and its result, and a long message that pages."""
    thread = make_thread(alice, "claude-code:alice-1", title="alice's deploy")
    append(
        thread,
        {"role": "user", "content": f"deploy staging with the key {SECRET}"},
        {
            "role": "assistant",
            "tool_calls": [{"id": "c1", "name": "Read", "arguments": {"file_path": "/etc/nginx/nginx.conf"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "worker_processes auto;\n" + "x" * 30_000},
    )
    return thread
