"""An OpenAI-compatible HTTP server for tests: the real ``openai`` SDK talks to it over loopback.

Start it (the ``fake_openai`` fixture in conftest.py does, and points
OPENAI_BASE_URL / OPENAI_API_KEY / THREADMEM_CHAT_MODEL at it):

    fake = FakeOpenAI().start()        # http://127.0.0.1:<port>/v1
    ...
    fake.stop()

Endpoints: ``POST /v1/chat/completions`` (non-streaming, tool calls included),
``POST /v1/embeddings`` (float or base64) and ``GET /v1/models``.

Script the answers. Each endpoint ("chat", "embeddings") has a queue; a
request takes the next scripted answer, or the default when the queue is
empty:

    fake.push_chat("text")                                    # an assistant message
    fake.push_chat(tool_calls=[{"name": "search_memory", "arguments": {"query": "x"}}])
    fake.push_error(500)                                      # an OpenAI-shaped error body with that status
    fake.push_chat("late", delay=5)                           # answer after 5 s (client timeouts)
    gate = fake.push_chat("held", hold=True); ...; gate.set() # answer when the test says so
    fake.push_raw(b"<html>502</html>", content_type="text/html")  # garbage
    fake.push_disconnect()                                    # close the connection, no answer
    fake.push_embeddings([[0.1, 0.2], ...])                   # exact vectors

Defaults: chat answers ``fake.default_chat(request_body)`` (a string or an
``{"content", "tool_calls"}`` dict; the built-in one says "fake answer");
embeddings are hashed bag-of-words vectors, L2-normalized, of
``dimensions`` (the request's ``dimensions`` wins), so texts sharing words
are close and tests can compute them with ``FakeOpenAI.vector(text)``. Words
listed in ``CONCEPTS`` count as their concept, a small fixed thesaurus that
stands in for what a real model knows: "postgres replica fell behind" and
"database replication lag" share no word and still point the same way.

Inspect what was sent: ``fake.requests`` (every request, in order, with
path, parsed JSON body and headers with lower-case names), ``fake.chat_requests()``,
``fake.embedding_requests()``, ``fake.wait_for_requests(n)``.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import struct
import threading
import time
from collections import deque
from collections.abc import Callable
from http.server import ThreadingHTTPServer
from typing import Any

from tests.support.fake_openai_http import ChatAnswer, Handler, Recorded, Scripted

# word -> concept, for the default embeddings (paraphrases literal search cannot find).
CONCEPTS = {
    "postgres": "database",
    "postgresql": "database",
    "db": "database",
    "database": "database",
    "replica": "replication",
    "replication": "replication",
    "standby": "replication",
    "lag": "delay",
    "behind": "delay",
    "delay": "delay",
    "latency": "delay",
    "certificate": "tls",
    "cert": "tls",
    "tls": "tls",
    "ssl": "tls",
    "expired": "expiry",
    "expiry": "expiry",
    "lapsed": "expiry",
}


def _default_chat(body: dict[str, Any]) -> ChatAnswer:
    return "fake answer"


class FakeOpenAI:
    chat_model = "fake-chat-model"
    embedding_model = "fake-embedding-model"
    api_key = "sk-fake-threadmem-test"

    def __init__(self, *, dimensions: int = 64, require_api_key: bool = True) -> None:
        self.dimensions = dimensions
        self.require_api_key = require_api_key
        self.default_chat: Callable[[dict[str, Any]], ChatAnswer] = _default_chat
        self.requests: list[Recorded] = []
        self._queues: dict[str, deque[Scripted]] = {"chat": deque(), "embeddings": deque()}
        self._holds: list[threading.Event] = []
        self._lock = threading.Lock()
        self._arrived = threading.Condition(self._lock)
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._counter = 0

    # --- lifecycle ----------------------------------------------------------

    def start(self) -> FakeOpenAI:
        fake = self

        class BoundHandler(Handler):
            server_fake = fake

        server = ThreadingHTTPServer(("127.0.0.1", 0), BoundHandler)
        server.daemon_threads = True
        # Do not wait for delayed or held answers on shutdown.
        server.block_on_close = False
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, name="fake-openai", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.release_all()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the fake first"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def reset(self) -> None:
        """Forget scripted answers and recorded requests; release held answers; default chat again."""
        self.release_all()
        with self._lock:
            for queue in self._queues.values():
                queue.clear()
            self.requests.clear()
            self._holds.clear()
        self.default_chat = _default_chat

    # --- scripting ----------------------------------------------------------

    def _push(self, endpoint: str, item: Scripted) -> None:
        if endpoint not in self._queues:
            raise ValueError(f"unknown endpoint {endpoint!r}: use 'chat' or 'embeddings'")
        with self._lock:
            self._queues[endpoint].append(item)

    def push_chat(
        self,
        content: str | None = "",
        *,
        tool_calls: list[dict[str, Any]] | None = None,
        delay: float = 0.0,
        hold: bool = False,
    ) -> threading.Event:
        """An assistant message. ``tool_calls``: ``[{"id"?, "name", "arguments": dict or raw str}]``.

        Returns the gate: with ``hold=True`` the answer waits until ``gate.set()``.
        """
        gate = threading.Event()
        if not hold:
            gate.set()
        else:
            self._holds.append(gate)
        self._push("chat", Scripted(chat={"content": content, "tool_calls": tool_calls}, delay=delay, hold=gate))
        return gate

    def push_error(
        self, status: int = 500, message: str = "fake server error", *, endpoint: str = "chat", delay: float = 0.0
    ) -> None:
        body = {"error": {"message": message, "type": "server_error", "param": None, "code": None}}
        self._push(endpoint, Scripted(status=status, body=body, delay=delay))

    def push_raw(
        self,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str = "application/json",
        endpoint: str = "chat",
        delay: float = 0.0,
    ) -> None:
        raw = body.encode() if isinstance(body, str) else body
        self._push(endpoint, Scripted(status=status, body=raw, content_type=content_type, delay=delay))

    def push_disconnect(self, *, endpoint: str = "chat") -> None:
        self._push(endpoint, Scripted(disconnect=True))

    def push_embeddings(self, vectors: list[list[float]], *, delay: float = 0.0, hold: bool = False) -> threading.Event:
        """Exact vectors for the next embeddings request; ``hold=True`` as for ``push_chat``."""
        gate = threading.Event()
        if not hold:
            gate.set()
        else:
            self._holds.append(gate)
        self._push("embeddings", Scripted(vectors=vectors, delay=delay, hold=gate))
        return gate

    def release_all(self) -> None:
        for gate in list(self._holds):
            gate.set()

    # --- inspection ---------------------------------------------------------

    def chat_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/chat/completions")]

    def embedding_requests(self) -> list[dict[str, Any]]:
        with self._lock:
            return [r.body for r in self.requests if r.path.endswith("/embeddings")]

    def wait_for_requests(self, count: int, *, path_suffix: str = "", timeout: float = 30.0) -> list[Recorded]:
        """Block until ``count`` requests (ending with ``path_suffix``) have arrived."""
        deadline = time.monotonic() + timeout
        with self._arrived:
            while True:
                matching = [r for r in self.requests if r.path.endswith(path_suffix)]
                if len(matching) >= count:
                    return matching
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{len(matching)} of {count} requests arrived within {timeout} s")
                self._arrived.wait(remaining)

    @staticmethod
    def vector(text: str, dimensions: int = 64) -> list[float]:
        """The default embedding: hashed bag of words, L2-normalized (a fixed axis for text with no words)."""
        values = [0.0] * dimensions
        for word in re.findall(r"\w+", text.lower()):
            token = CONCEPTS.get(word, word)
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            index = int.from_bytes(digest[:4], "little") % dimensions
            values[index] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in values))
        if norm == 0:
            values[0] = 1.0
            return values
        return [v / norm for v in values]

    # --- answering (called from handler threads) -----------------------------

    def _record(self, recorded: Recorded) -> None:
        with self._arrived:
            self.requests.append(recorded)
            self._arrived.notify_all()

    def _next(self, endpoint: str) -> Scripted | None:
        with self._lock:
            queue = self._queues[endpoint]
            return queue.popleft() if queue else None

    def _next_id(self) -> int:
        with self._lock:
            self._counter += 1
            return self._counter

    def chat_completion(self, body: dict[str, Any], answer: ChatAnswer) -> dict[str, Any]:
        if isinstance(answer, str):
            answer = {"content": answer}
        content = answer.get("content")
        tool_calls = []
        for index, call in enumerate(answer.get("tool_calls") or []):
            arguments = call.get("arguments", {})
            tool_calls.append(
                {
                    "id": call.get("id") or f"call_fake_{self._next_id()}_{index}",
                    "type": "function",
                    "function": {
                        "name": call["name"],
                        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments),
                    },
                }
            )
        message: dict[str, Any] = {"role": "assistant", "content": content if content or not tool_calls else None}
        if tool_calls:
            message["tool_calls"] = tool_calls
        prompt_chars = sum(len(str(m.get("content") or "")) for m in body.get("messages", []))
        completion_chars = len(content or "")
        return {
            "id": f"chatcmpl-fake-{self._next_id()}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", self.chat_model),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                    "logprobs": None,
                }
            ],
            "usage": {
                "prompt_tokens": prompt_chars // 4,
                "completion_tokens": completion_chars // 4,
                "total_tokens": (prompt_chars + completion_chars) // 4,
            },
        }

    def embeddings(self, body: dict[str, Any], vectors: list[list[float]] | None) -> dict[str, Any]:
        inputs = body.get("input", [])
        if isinstance(inputs, str):
            inputs = [inputs]
        dimensions = int(body.get("dimensions") or self.dimensions)
        if vectors is None:
            vectors = [self.vector(text if isinstance(text, str) else str(text), dimensions) for text in inputs]
        data = []
        for index, vector in enumerate(vectors):
            if body.get("encoding_format") == "base64":
                encoded: Any = base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode()
            else:
                encoded = vector
            data.append({"object": "embedding", "index": index, "embedding": encoded})
        tokens = sum(len(str(text).split()) for text in inputs)
        return {
            "object": "list",
            "data": data,
            "model": body.get("model", self.embedding_model),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }
