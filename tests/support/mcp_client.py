"""MCP test helpers: the server as a stdio child or over HTTP, a bounded client conversation, a tool's text."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from rest_framework.authtoken.models import Token

from tests.support.workers import database_url

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
    # The servers the tests start send structuredContent (the REST JSON the tests compare); its default,
    # off, is tests/mcp/test_structured.py's. The static model stays off in the child as in the suite
    # (tests/conftest.py: static_embeddings_off).
    defaults = {"THREADMEM_MCP_STRUCTURED_CONTENT": "true", "THREADMEM_STATIC_EMBEDDINGS": "false"}
    return {**env, **defaults, "DATABASE_URL": database_url(), "PYTHONUNBUFFERED": "1", **extra}


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


async def bobs_attempts(client: Client, alice_thread: Any, alice_ids: list[int]) -> tuple[Any, Any, Any, list[Any]]:
    """What bob tries on alice's thread: a search of it, global searches for her secret and for a word both of them
    wrote, and a read of each of her messages."""
    scoped = await client.call_tool("search_memory", {"query": SECRET, "channel": alice_thread.channel})
    global_secret = await client.call_tool("search_memory", {"query": SECRET})
    global_word = await client.call_tool("search_memory", {"query": "staging"})
    reads = [await client.call_tool("message_context_read", {"messageId": i}) for i in alice_ids]
    return scoped, global_secret, global_word, reads


def token_of(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def text_of(result: Any) -> str:
    assert len(result.content) == 1
    return result.content[0].text


@contextmanager
def asgi_server(log_dir: Path, **extra_env: str) -> Iterator[str]:
    """The deployment's ASGI app (API, console, MCP) under uvicorn in a process of its own; yields its base URL."""
    port = free_port()
    log_path = log_dir / "uvicorn.log"
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=child_env(**extra_env),
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + START_SECONDS
        while "Application startup complete" not in log_path.read_text():
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"uvicorn did not start:\n{log_path.read_text()}")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process, seconds=10)


def stop_process(process: subprocess.Popen, *, seconds: float) -> None:
    """Terminate a server the test started; kill it if it has not gone within ``seconds``."""
    process.terminate()
    try:
        process.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
