"""The HTTP side of tests/support/fake_openai.py: the request handler and the scripted and recorded exchanges."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.support.fake_openai import FakeOpenAI

ChatAnswer = str | dict[str, Any]

# A held answer is released after this long even if the test forgets.
HOLD_MAX_SECONDS = 120.0


@dataclass
class Scripted:
    """One scripted answer."""

    status: int = 200
    # A dict is sent as JSON; bytes as they are; None builds the normal answer from ``chat``/``vectors``.
    body: dict[str, Any] | bytes | None = None
    content_type: str = "application/json"
    chat: ChatAnswer | None = None
    vectors: list[list[float]] | None = None
    delay: float = 0.0
    hold: threading.Event | None = None
    disconnect: bool = False


@dataclass
class Recorded:
    method: str
    path: str
    body: Any
    headers: dict[str, str]
    at: float = field(default_factory=time.monotonic)


def _headers(handler: BaseHTTPRequestHandler) -> dict[str, str]:
    """Request headers with lower-case names."""
    return {name.lower(): value for name, value in handler.headers.items()}


def _error_body(status: int, message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "invalid_request_error", "code": status}}).encode()


class Handler(BaseHTTPRequestHandler):
    server_fake: FakeOpenAI
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            # The client gave up (its timeout, or a killed worker): nothing to answer.
            self.close_connection = True

    def do_GET(self) -> None:
        fake = self.server_fake
        fake._record(Recorded("GET", self.path, None, _headers(self)))
        if self.path.rstrip("/") == "/v1/models":
            models = [{"id": m, "object": "model", "owned_by": "fake"} for m in (fake.chat_model, fake.embedding_model)]
            self._send(200, json.dumps({"object": "list", "data": models}).encode())
        else:
            self._send(404, _error_body(404, f"no route {self.path}"))

    def do_POST(self) -> None:
        fake = self.server_fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(raw) if raw else {}
        except json.JSONDecodeError:
            body = raw.decode(errors="replace")
        fake._record(Recorded("POST", self.path, body, _headers(self)))
        path = self.path.split("?")[0].rstrip("/")
        endpoint = {"/v1/chat/completions": "chat", "/v1/embeddings": "embeddings"}.get(path)
        if endpoint is None:
            self._send(404, _error_body(404, f"no route {self.path}"))
            return
        if fake.require_api_key and self.headers.get("Authorization") != f"Bearer {fake.api_key}":
            self._send(401, _error_body(401, "Incorrect API key provided"))
            return
        if not isinstance(body, dict):
            self._send(400, _error_body(400, "the body is not a JSON object"))
            return
        if body.get("stream"):
            self._send(400, _error_body(400, "the fake does not stream"))
            return
        item = fake._next(endpoint) or Scripted()
        if item.delay:
            time.sleep(item.delay)
        if item.hold is not None:
            item.hold.wait(HOLD_MAX_SECONDS)
        if item.disconnect:
            self.close_connection = True
            with contextlib.suppress(OSError):  # already gone
                self.connection.shutdown(socket.SHUT_RDWR)
            return
        if item.body is not None:
            payload = item.body if isinstance(item.body, bytes) else json.dumps(item.body).encode()
            self._send(item.status, payload, item.content_type)
            return
        if endpoint == "chat":
            answer = item.chat if item.chat is not None else fake.default_chat(body)
            self._send(item.status, json.dumps(fake.chat_completion(body, answer)).encode())
        else:
            self._send(item.status, json.dumps(fake.embeddings(body, item.vectors)).encode())
