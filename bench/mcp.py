"""An MCP search_memory call over Streamable HTTP beside the same REST call: same run, same server.

    .venv/bin/python bench/mcp.py [--runs 300]

DATABASE_URL (default postgres://postgres@127.0.0.1:5432/threadmem_bench_mcp)
is created if missing and migrated. The bench adds a user and a thread of
2,000 messages (channel ``bench:mcp``), starts the deployment's ASGI app
(config/asgi.py) under uvicorn on a free loopback port, and times, turn
about, the REST call (``POST /api/v1/search/``) and the MCP call
(``tools/call search_memory`` through the mcp SDK's streamable-HTTP client),
each on one kept-alive connection with the same token, query and channel.
Both answers carry the same text. It prints p50 and p90 of each and the
difference of the medians (target: MCP at most 5 ms above REST), then
deletes its rows.
"""

from __future__ import annotations

import argparse
import logging
import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, this file's folder comes first on sys.path and its name would shadow the mcp SDK.
sys.path[:] = [str(ROOT), *(p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent)]

os.environ.setdefault("DATABASE_URL", "postgres://postgres@127.0.0.1:5432/threadmem_bench_mcp")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

import anyio  # noqa: E402
import django  # noqa: E402
import httpx2  # noqa: E402
from mcp import Client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402

from bench.database import ensure_database  # noqa: E402

CHANNEL = "bench:mcp"
USERNAME = "bench-mcp"
MESSAGES = 2_000
QUERY = "rollout"
WARMUP = 20
TARGET_MS = 5.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def seed() -> str:
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from threadmem.domain import services
    from threadmem.models import Thread

    User = get_user_model()
    Thread.objects.filter(channel=CHANNEL).delete()
    User.objects.filter(username=USERNAME).delete()
    user = User.objects.create_user(username=USERNAME)
    thread = services.thread_create(owner=user, channel=CHANNEL)
    words = ("deploy", "staging", "kubectl", "nginx", "postgres", "cache", "queue")
    messages = [
        {"role": "tool" if i % 2 else "user", "content": f"step {i}: {words[i % len(words)]} " * 8 + f"rollout {i}"}
        for i in range(MESSAGES)
    ]
    for start in range(0, MESSAGES, 500):
        services.messages_append(thread=thread, messages=services.messages_parse(messages[start : start + 500]))
    return Token.objects.create(user=user).key


def cleanup() -> None:
    from django.contrib.auth import get_user_model

    from threadmem.models import Thread, ToolCall

    ToolCall.objects.filter(caller__username=USERNAME).delete()
    Thread.objects.filter(channel=CHANNEL).delete()
    get_user_model().objects.filter(username=USERNAME).delete()


def start_server(port: int, log_path: Path) -> subprocess.Popen:
    log = open(log_path, "w")  # noqa: SIM115  (the server writes to it until it is stopped)
    command = [sys.executable, "-m", "uvicorn", "config.asgi:application", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        [*command, "--port", str(port), "--log-level", "warning"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            if httpx2.get(f"http://127.0.0.1:{port}/healthz").status_code == 200:
                return process
        except httpx2.TransportError:
            time.sleep(0.2)
    process.kill()
    raise SystemExit(f"uvicorn did not start:\n{log_path.read_text()}")


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))]


async def measure(base: str, token: str, runs: int) -> tuple[list[float], list[float]]:
    body = {"query": QUERY, "channel": CHANNEL}
    rest_ms: list[float] = []
    mcp_ms: list[float] = []
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Token {token}"}) as rest,
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http,
        Client(streamable_http_client(f"{base}/mcp/", http_client=http)) as client,
    ):
        rest_text = (await rest.post(f"{base}/api/v1/search/", json=body)).json()["text"]
        mcp_text = (await client.call_tool("search_memory", body)).content[0].text
        if rest_text != mcp_text:
            raise SystemExit("REST and MCP answered different texts")
        for turn in range(WARMUP + runs):
            started = time.perf_counter()
            response = await rest.post(f"{base}/api/v1/search/", json=body)
            rest_elapsed = (time.perf_counter() - started) * 1000
            response.raise_for_status()
            started = time.perf_counter()
            result = await client.call_tool("search_memory", body)
            mcp_elapsed = (time.perf_counter() - started) * 1000
            if result.is_error:
                raise SystemExit(f"MCP call failed: {result.content[0].text}")
            if turn >= WARMUP:
                rest_ms.append(rest_elapsed)
                mcp_ms.append(mcp_elapsed)
    return rest_ms, mcp_ms


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    ensure_database(os.environ["DATABASE_URL"])
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    call_command("migrate", verbosity=0)
    # Django's LOGGING sends INFO to the console; the HTTP client would log every request there.
    for name in ("httpx", "httpx2", "mcp"):
        logging.getLogger(name).setLevel(logging.WARNING)
    token = seed()
    connection.close()
    port = free_port()
    server = start_server(port, Path("/tmp") / f"threadmem-bench-mcp-{port}.log")
    try:
        rest_ms, mcp_ms = anyio.run(measure, f"http://127.0.0.1:{port}", token, args.runs)
    finally:
        server.terminate()
        server.wait(timeout=30)
        cleanup()
    rest_p50, mcp_p50 = statistics.median(rest_ms), statistics.median(mcp_ms)
    print(f"search_memory over one uvicorn process, {MESSAGES} messages, query {QUERY!r}, {args.runs} calls each")
    print(f"  REST POST /api/v1/search/   p50 {rest_p50:7.2f} ms   p90 {percentile(rest_ms, 0.9):7.2f} ms")
    print(f"  MCP  tools/call (HTTP)      p50 {mcp_p50:7.2f} ms   p90 {percentile(mcp_ms, 0.9):7.2f} ms")
    verdict = "within" if mcp_p50 - rest_p50 <= TARGET_MS else "OVER"
    print(f"  MCP - REST at p50: {mcp_p50 - rest_p50:+.2f} ms ({verdict} the {TARGET_MS:g} ms target)")


if __name__ == "__main__":
    main()
