"""The MCP server as real processes, driven by the SDK's own client.

stdio: a spawned ``manage.py mcp`` per client. HTTP: the ASGI app under
uvicorn on a free loopback port, one per module. Both reach pytest's test
database (a file on SQLite, so a child process opens it too); the tests use
``transaction=True`` so the children see committed rows.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from rest_framework.authtoken.models import Token

from tests.conftest import append, make_thread, make_user
from tests.test_compaction_worker import database_url

ROOT = Path(__file__).resolve().parents[2]
CALL_SECONDS = 60
START_SECONDS = 60
T = TypeVar("T")

SECRET = "zebra-quartz-4471"  # alice's text; bob must never see it


def run(main: Callable[[], Awaitable[T]]) -> T:
    """Run one client conversation, bounded in time."""

    async def bounded() -> T:
        with anyio.fail_after(CALL_SECONDS):
            return await main()

    return anyio.run(bounded)


def child_env(**extra: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "THREADMEM_TOKEN"}
    return {**env, "DATABASE_URL": database_url(), "PYTHONUNBUFFERED": "1", **extra}


def stdio_server(token: str | None, **extra_env: str) -> StdioServerParameters:
    env = child_env(**extra_env) if token is None else child_env(THREADMEM_TOKEN=token, **extra_env)
    return StdioServerParameters(command=sys.executable, args=["manage.py", "mcp"], env=env, cwd=str(ROOT))


@asynccontextmanager
async def http_session(url: str, authorization: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": authorization} if authorization else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=CALL_SECONDS) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def token_of(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def text_of(result: Any) -> str:
    assert len(result.content) == 1
    return result.content[0].text


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def web(django_db_setup, tmp_path_factory) -> Iterator[str]:
    """The deployment's ASGI app (API, console, MCP) under uvicorn; yields its base URL."""
    port = free_port()
    log_path = tmp_path_factory.mktemp("uvicorn") / "uvicorn.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "threadmem.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=child_env(),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while "Application startup complete" not in log_path.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"uvicorn did not start:\n{log_path.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def alice(transactional_db):
    return make_user("alice")


@pytest.fixture
def bob(transactional_db):
    return make_user("bob")


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
