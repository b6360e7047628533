"""A scripted Anthropic-compatible Messages server on loopback, for a headless Claude Code run (no real model).

Claude Code 2.1 defers MCP tools behind its ``ToolSearch``: the script first
asks it to ``select:`` threadmem's search tool, then calls that tool with the
scripted arguments, records every tool result it is handed, and ends the turn.
Any other request (titles, checks) gets a one-word answer.

``CompactionScript`` drives Claude Code into its own compaction: it runs shell
commands, reports a token usage above the auto-compact window after the last
one, answers Claude Code's summary request with a summary naming no file, and
after the compaction calls ``search_memory`` as the pointer it was handed says.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.support.http import read_json, send_json

SEARCH_TOOL = "mcp__threadmem__search_memory"
# The same tool served by the plugin (plugin/.mcp.json): Claude Code names a plugin's tools after the plugin too.
PLUGIN_SEARCH_TOOL = "mcp__plugin_threadmem_threadmem__search_memory"


class Script:
    """What the scripted model does, and what it was handed (``tool_results``: each request's tool results)."""

    input_tokens = 10  # the usage the next answer reports

    def __init__(self, search_arguments: dict[str, Any], *, tool: str = SEARCH_TOOL) -> None:
        self.search_arguments = search_arguments
        self.tool = tool
        self.requests: list[dict[str, Any]] = []
        self.tool_results: list[Any] = []

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        """The content blocks of the next answer."""
        self.requests.append(body)
        tools = {tool.get("name") for tool in body.get("tools") or []}
        last = (body.get("messages") or [{}])[-1]
        results = [b for b in last.get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"]
        if "ToolSearch" not in tools and self.tool not in tools:
            return [{"type": "text", "text": "ok"}]
        if not results:
            if self.tool in tools and "ToolSearch" not in tools:
                return [self._use(self.tool, self.search_arguments)]
            return [self._use("ToolSearch", {"query": f"select:{self.tool}", "max_results": 1})]
        self.tool_results.append(results)
        if len(self.tool_results) == 1 and "ToolSearch" in tools and not self._searched(body):
            return [self._use(self.tool, self.search_arguments)]
        return [{"type": "text", "text": "done"}]

    def _searched(self, body: dict[str, Any]) -> bool:
        return any(
            b.get("type") == "tool_use" and b.get("name") == self.tool
            for m in body.get("messages", [])
            if isinstance(m.get("content"), list)
            for b in m["content"]
            if isinstance(b, dict)
        )

    def _use(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        return {"type": "tool_use", "id": f"toolu_{len(self.requests):04d}", "name": name, "input": arguments}


# How Claude Code 2.1's request for a compaction summary, and its first message after one, begin.
SUMMARY_REQUEST_MARK = "Your task is to create a detailed summary"
CONTINUED_MARK = "This session is being continued from a previous conversation"
HOOK_CONTEXT_MARK = "SessionStart hook additional context:"
SEARCH_CALL_RE = re.compile(r'search_memory\(channel=("(?:[^"\\]|\\.)*"), query=("(?:[^"\\]|\\.)*")\)')


class CompactionScript(Script):
    """Shell commands, then a reported usage of ``compact_at_tokens`` (above ``CLAUDE_CODE_AUTO_COMPACT_WINDOW``):
    Claude Code compacts, asking this script for the summary (``summary``). Its first request after the
    compaction is kept (``after_compaction``); the script then calls search_memory with the first call the pointer
    in it names, and ends the turn once it has the result."""

    def __init__(self, commands: list[str], *, summary: str, compact_at_tokens: int, tool: str = SEARCH_TOOL) -> None:
        super().__init__({}, tool=tool)
        self.commands = list(commands)
        self.summary = summary
        self.compact_at_tokens = compact_at_tokens
        self.ran = 0
        self.summaries_asked = 0
        self.after_compaction: dict[str, Any] | None = None
        self._lock = threading.Lock()

    def answer(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
            self.input_tokens = 10
            tools = {tool.get("name") for tool in body.get("tools") or []}
            messages = body.get("messages") or [{}]
            if SUMMARY_REQUEST_MARK in _text(messages[-1]):
                self.summaries_asked += 1
                return [
                    {
                        "type": "text",
                        "text": f"<analysis>The user's request.</analysis>\n<summary>{self.summary}</summary>",
                    }
                ]
            if "Bash" not in tools:
                return [{"type": "text", "text": "ok"}]
            if not any(CONTINUED_MARK in _text(m) for m in messages):
                if self.ran < len(self.commands):
                    self.ran += 1
                    if self.ran == len(self.commands):
                        self.input_tokens = self.compact_at_tokens
                    command = self.commands[self.ran - 1]
                    return [self._use("Bash", {"command": command, "description": "read a file"})]
                return [{"type": "text", "text": "done"}]
            if self.after_compaction is None:
                self.after_compaction = body
            results = [
                b for b in messages[-1].get("content", []) if isinstance(b, dict) and b.get("type") == "tool_result"
            ]
            if results:
                self.tool_results.append(results)
            if self._searched(body):
                return [{"type": "text", "text": "done"}]
            self.search_arguments = self.pointed_search()
            if self.tool not in tools and not results:
                return [self._use("ToolSearch", {"query": f"select:{self.tool}", "max_results": 1})]
            return [self._use(self.tool, self.search_arguments)]

    def pointed_search(self) -> dict[str, str]:
        """The arguments of the first search_memory call the pointer (the hook's context after the compaction)
        names; empty when it names none."""
        match = SEARCH_CALL_RE.search(self.pointer_text())
        return {"channel": json.loads(match.group(1)), "query": json.loads(match.group(2))} if match else {}

    def pointer_text(self) -> str:
        """The hook contexts Claude Code handed the model with its first request after the compaction (each its
        own text block)."""
        messages = (self.after_compaction or {}).get("messages", [])
        return "\n".join(text for m in messages for text in _texts(m) if HOOK_CONTEXT_MARK in text)


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    return [b.get("text", "") for b in content or [] if isinstance(b, dict)]


def _text(message: dict[str, Any]) -> str:
    return "\n".join(_texts(message))


def _events(blocks: list[dict[str, Any]], model: str, input_tokens: int = 10):
    """The server-sent events of a streamed answer (the Messages API's stream)."""
    start = {**_message([], model, input_tokens), "stop_reason": None}
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
    usage = {"output_tokens": 5, "input_tokens": input_tokens}
    yield (
        "message_delta",
        {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage},
    )
    yield "message_stop", {"type": "message_stop"}


def _message(blocks: list[dict[str, Any]], model: str, input_tokens: int = 10) -> dict[str, Any]:
    stop = "tool_use" if any(block["type"] == "tool_use" for block in blocks) else "end_turn"
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 5},
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
            model, tokens = body.get("model", "claude"), script.input_tokens
            if not body.get("stream"):
                send_json(self, _message(blocks, model, tokens))
                return
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.end_headers()
            for event, data in _events(blocks, model, tokens):
                self.wfile.write(f"event: {event}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        def do_GET(self) -> None:
            send_json(self, {})

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


PROMPT = "Read the deployment notes, a command a file."
JSON_OUTPUT = ("--output-format", "json")


def compacting_session(
    script: CompactionScript, *, env: dict[str, str], cwd: Path, tools: str, options: tuple[str, ...] = ()
) -> str:
    """A headless Claude Code session (``claude -p``) against the fake model at ``env``'s ANTHROPIC_BASE_URL, driven
    by ``script`` through its reads into Claude Code's own compaction; the channel its capture stores it in."""
    done = subprocess.run(
        ["claude", "-p", PROMPT, "--model", "claude-sonnet-4-5", *options, "--allowedTools", tools, *JSON_OUTPUT],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout
    assert script.summaries_asked == 1, "Claude Code did not compact"
    return f"claude-code:{json.loads(done.stdout)['session_id']}"
