"""What the fake model servers share: a JSON request body in, a JSON answer out."""

from __future__ import annotations

import json
from http.server import BaseHTTPRequestHandler
from typing import Any


def read_json(handler: BaseHTTPRequestHandler) -> Any:
    length = int(handler.headers.get("content-length") or 0)
    return json.loads(handler.rfile.read(length) or b"{}")


def send_json(handler: BaseHTTPRequestHandler, data: Any) -> None:
    raw = json.dumps(data).encode()
    handler.send_response(200)
    handler.send_header("content-type", "application/json")
    handler.send_header("content-length", str(len(raw)))
    handler.end_headers()
    handler.wfile.write(raw)
