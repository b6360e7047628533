"""/mcp/ refuses what it must before the SDK sees it: a browser page from a foreign Origin (DNS rebinding), a GET
that would open a stream that never ends; and a refused call never quotes SQL."""

from __future__ import annotations

import httpx2
import pytest

from mcp_server.http import origin_allowed
from tests.support.factories import append
from tests.support.mcp_client import token_of
from threadmem.models import ToolCall

# Rows the uvicorn process must see: committed. The pure check of origin_allowed needs no database.
committed = pytest.mark.django_db(transaction=True)

LIST_TOOLS = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
# Each Origin and the status /mcp/ answers it with.
ORIGINS = [
    (None, 200),
    ("http://127.0.0.1:8000", 200),
    ("http://localhost:3000", 200),
    ("http://localhost", 200),
    ("http://[::1]:8000", 200),
    ("http://evil.example", 403),
    ("http://evil.example:8000", 403),
    ("http://127.0.0.1.evil.example:8000", 403),
    ("http://localhost:80x", 403),
    ("null", 403),
]


def headers(user, **extra: str) -> dict[str, str]:
    return {**MCP_HEADERS, "Authorization": f"Bearer {token_of(user)}", **extra}


@committed
def test_it_serves_no_origin_and_loopback_origins_and_refuses_others_with_403(web, alice):
    # One test, every origin: the cases share one user and token (a committed test's flush each would cost more
    # than the requests); a failure names the origin.
    for origin, status in ORIGINS:
        extra = {"Origin": origin} if origin is not None else {}
        response = httpx2.post(f"{web}/mcp/", json=LIST_TOOLS, headers=headers(alice, **extra))
        assert response.status_code == status, (origin, response.text)
        if status == 403:
            assert "THREADMEM_MCP_ALLOWED_ORIGINS" in response.json()["detail"], origin
            assert "search_memory" not in response.text, origin
        else:
            assert "search_memory" in response.text, origin


def test_configured_origins_match_exactly_or_by_any_port():
    allowed = ["https://agents.example.com", "http://10.0.0.5:*"]
    assert origin_allowed("https://agents.example.com", allowed)
    assert origin_allowed("HTTPS://Agents.Example.com", allowed)
    assert origin_allowed("http://10.0.0.5:8000", allowed)
    assert not origin_allowed("https://agents.example.com:444", allowed)
    assert not origin_allowed("http://10.0.0.5", allowed)
    assert not origin_allowed("http://10.0.0.55:80", allowed)
    assert not origin_allowed("http://10.0.0.5:80/x", allowed)
    assert not origin_allowed("https://agents.example.com", [])


@committed
def test_anything_but_post_answers_405_at_once(web, alice):
    for method in ("GET", "DELETE", "PUT"):
        response = httpx2.request(
            method, f"{web}/mcp/", headers=headers(alice, Accept="text/event-stream"), timeout=5.0
        )
        assert response.status_code == 405, method
        assert response.headers["allow"] == "POST", method
        assert "POST" in response.json()["detail"], method


@committed
def test_a_read_with_an_offset_of_nan_is_refused_naming_offset_and_quotes_no_sql(web, alice, alice_thread):
    message = append(alice_thread, {"role": "user", "content": "hello"})[0]
    body = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "message_context_read", '
        f'"arguments": {{"messageId": {message.id}, "offset": NaN}}}}}}'
    )
    response = httpx2.post(f"{web}/mcp/", content=body, headers=headers(alice))
    assert response.status_code == 200, response.text
    answer = response.json()
    assert "error" not in answer, answer
    assert answer["result"]["isError"] is True
    text = answer["result"]["content"][0]["text"]
    assert "offset must be an integer" in text
    for sql in ("INSERT", "SELECT", "jsonb", "threadmem_toolcall"):
        assert sql not in response.text
    (row,) = ToolCall.objects.filter(tool="message_context_read", status_code=400)
    assert row.arguments["offset"] == "nan"
