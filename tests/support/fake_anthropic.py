"""A scripted Anthropic-compatible Messages server on loopback, for a headless Claude Code run (no real model).

Claude Code 2.1 defers MCP tools behind its ``ToolSearch``: the script first
asks it to ``select:`` threadmem's search tool, then calls that tool with the
scripted arguments, records every tool result it is handed, and ends the turn.
Any other request (titles, checks) gets a one-word answer.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.http import read_json, send_json


class Script:
    """What the scripted model does, and what it was handed (``tool_results``: each request's tool results)."""

    def __init__(self, search_arguments: dict[str, Any]) -> None:
        self.search_arguments = search_arguments
        self.requests: list[dict[str, Any]] = []
        self.tool_results: list[Any] = []

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the next answer."""
        self.requests.append(body)
        tools = {tool.get("name") for tool in body.get("tools") or []}
        last = (body.get("messages") or [{}])[-1]
        results = [b for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"]
        if "ToolSearch" not in tools and "mcp__threadmem__search_memory" not in tools:
            return [{"type": "text", "text": "ok"}]
        if not results:
            if "mcp__threadmem__search_memory" in tools and "ToolSearch" not in tools:
                return [self._use("mcp__threadmem__search_memory", self.search_arguments)]
            return [self._use("ToolSearch", {"query": "select:mcp__threadmem__search_memory", "max_results": 1})]
        self.tool_results.append(results)
        if len(self.tool_results) == 1 and "ToolSearch" in tools and not self._searched(body):
            return [self._use("mcp__threadmem__search_memory", self.search_arguments)]
        return [{"type": "text", "text": "done"}]

    def _searched(self, body: dict[str, Any]) -> bool:
        return any(
            b.get("type") == "tool_use" and b.get("name") == "mcp__threadmem__search_memory"
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict)
        )

    def _use(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{len(self.requests):04d}", "name": name, "input": arguments}


def _events(blocks: list[dict[str, Any]], model: str):
    """The server-sent events of a streamed answer (the Messages API's stream)."""
    start = {**_message([], model), "stop_reason": None}
    yield "message_start", {"type": "message_start", "message": start}
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
            )
            yield (
                "content_block_delta",
                {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": block["text"]}},
            )
        else:
            yield (
                "content_block_start",
                {"type": "content_block_start", "index": index, "content_block": {**block, "input": {}}},
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": json.dumps(block["input"])},
                },
            )
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    stop = _message(blocks, model)["stop_reason"]
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 5}},
    )
    yield "message_stop", {"type": "message_stop"}


def _message(blocks: list[dict[str, Any]], model: str) -> dict[str, Any]:
    stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


def serve(script: Script) -> tuple[ThreadingHTTPServer, str]:
    """The server on a free loopback port, in a daemon thread: (server, base URL for ANTHROPIC_BASE_URL)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = read_json(self)
            if not self.path.startswith("/v1/messages") or self.path.startswith("/v1/messages/count_tokens"):
                send_json(self, {"input_tokens": 10})
                return
            blocks = script.answer(body)
            model = body.get("model", "claude")
            if not body.get("stream"):
                send_json(self, _message(blocks, model))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for event, data in _events(blocks, model):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        def do_GET(self) -> None:
            send_json(self, {})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
