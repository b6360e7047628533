"""A scripted OpenAI Responses API server on loopback, for a real Codex CLI run (``codex exec``) without a real model.

Codex 0.171 speaks only the Responses API (``wire_api = "responses"``) and
reads its answers as server-sent events. The script runs its shell commands
one per answer through Codex's ``exec_command`` tool, then ends the turn. The
answer that runs command n reports the token usage ``tokens[n]`` (else a small
one): above ``model_auto_compact_token_limit``, Codex compacts its context
after that command; it asks the same model for a handoff summary, which the
script answers with ``summary`` (it names no identifier, as a real summary
drops most of them).

``MemoryScript`` then calls threadmem's ``search_memory`` through Codex's MCP
namespace: with given arguments, or with the first call the pointer names that
a SessionStart hook handed Codex after its compaction.
"""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.http import read_json, send_json

# How the prompt Codex 0.171 sends for a compaction summary begins ("You are performing a CONTEXT CHECKPOINT ...").
COMPACTION_MARK = "CONTEXT CHECKPOINT COMPACTION"
SMALL_USAGE = 1_000


class Script:
    """What the scripted model does; ``requests`` holds every request body, ``compactions`` the summaries asked for."""

    def __init__(
        self, commands: list[str], *, summary: str, tokens: dict[int, int], final: str = "All commands ran."
    ) -> None:
        self.commands = list(commands)
        self.summary = summary
        self.final = final
        self.tokens = tokens
        self.usage: list[int] = []  # the token usage each answer reported
        self.requests: list[dict[str, Any]] = []
        self.compactions = 0
        self.ran = 0
        self._lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The output items of the next answer (its token usage appended to ``usage``)."""
        with self._lock:
            self.requests.append(body)
            number = len(self.requests)
            if COMPACTION_MARK in _last_user_text(body):
                self.compactions += 1
                self.usage.append(SMALL_USAGE)
                return [_message(self.summary, number)]
            if self.ran < len(self.commands):
                self.ran += 1
                self.usage.append(self.tokens.get(self.ran, SMALL_USAGE))
                call = {"type": "function_call", "call_id": f"call_{self.ran:03d}", "name": "exec_command"}
                return [{**call, "arguments": json.dumps({"cmd": self.commands[self.ran - 1]})}]
            self.usage.append(SMALL_USAGE)
            return [_message(self.final, number)]


# Codex 0.171 offers an MCP server's tools as a namespace ``mcp__<server>``; a call names the namespace and the tool.
MCP_NAMESPACE = "mcp__threadmem"
SEARCH_CALL_ID = "call_search_memory"
SEARCH_CALL_RE = re.compile(r'search_memory\(channel=("(?:[^"\\]|\\.)*"), query=("(?:[^"\\]|\\.)*")\)')
POINTER_MARK = "[threadmem]"


class MemoryScript(Script):
    """The commands (and compactions) of ``Script``, then one ``search_memory`` call: with ``search_arguments``, or
    when they are None with the first call the pointer in the request names (``pointer``: that text). ``outputs``:
    the output items Codex handed back for it."""

    def __init__(self, commands: list[str], *, search_arguments: dict[str, str] | None = None, **kwargs: Any) -> None:
        super().__init__(commands, **kwargs)
        self.search_arguments = search_arguments
        self.pointer = ""
        self.outputs: list[dict[str, Any]] = []

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        if COMPACTION_MARK in _last_user_text(body) or self.ran < len(self.commands):
            return super().answer(body)
        with self._lock:
            self.requests.append(body)
            self.usage.append(SMALL_USAGE)
            items = body.get("input") or []
            outputs = [
                i for i in items if i.get("type") == "function_call_output" and i.get("call_id") == SEARCH_CALL_ID
            ]
            if outputs:
                self.outputs = outputs
                return [_message(self.final, len(self.requests))]
            if self.search_arguments is None:
                self.pointer = "\n".join(t for t in map(_item_text, items) if POINTER_MARK in t)
                match = SEARCH_CALL_RE.search(self.pointer)
                self.search_arguments = (
                    {"channel": json.loads(match.group(1)), "query": json.loads(match.group(2))} if match else {}
                )
            arguments = json.dumps(self.search_arguments)
            call = {"type": "function_call", "call_id": SEARCH_CALL_ID, "namespace": MCP_NAMESPACE}
            return [{**call, "name": "search_memory", "arguments": arguments}]

    def output_texts(self) -> list[str]:
        """The texts of the search's output items as Codex handed them to the model."""
        texts = []
        for item in self.outputs:
            output = item.get("output")
            parts = output if isinstance(output, list) else [{"text": output}]
            texts += [str(part.get("text") or "") for part in parts if isinstance(part, dict)]
        return texts


def _item_text(item: dict[str, Any]) -> str:
    if item.get("type") != "message":
        return ""
    return "".join(part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict))


def _last_user_text(body: dict[str, Any]) -> str:
    for item in reversed(body.get("input") or []):
        if item.get("type") == "message" and item.get("role") == "user":
            return "".join(part.get("text", "") for part in item.get("content") or [] if isinstance(part, dict))
    return ""


def _message(text: str, number: int) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text}]
    return {"type": "message", "role": "assistant", "id": f"msg_{number:04d}", "content": content}


def _usage(tokens: int) -> dict[str, Any]:
    return {
        "input_tokens": tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 10,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": tokens + 10,
    }


def _events(items: list[dict[str, Any]], response_id: str, tokens: int) -> list[dict[str, Any]]:
    """The server-sent events of one streamed answer: what Codex reads of the Responses API's stream."""
    done = [{"type": "response.output_item.done", "output_index": i, "item": item} for i, item in enumerate(items)]
    return [
        {"type": "response.created", "response": {"id": response_id}},
        *done,
        {"type": "response.completed", "response": {"id": response_id, "usage": _usage(tokens)}},
    ]


def serve(script: Script) -> tuple[ThreadingHTTPServer, str]:
    """The server on a free loopback port, in a daemon thread: (server, base URL for a Codex model provider)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # the model list Codex may ask for
            send_json(self, {"object": "list", "data": [], "models": []})

        def do_POST(self) -> None:
            body = read_json(self)
            if self.path.split("?")[0].rstrip("/") != "/v1/responses":
                self.send_error(404, f"no route {self.path}")
                return
            items = script.answer(body)
            number, tokens = len(script.requests), script.usage[-1]
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            self.end_headers()
            for event in _events(items, f"resp_{number:04d}", tokens):
                self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
            self.wfile.flush()
            self.close_connection = True

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"
