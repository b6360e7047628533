"""The shared Claude Code sessions, longer sessions made from them with fresh ids, and the same as Codex rollouts.

Tests (tests/imports) and benches read the real, sanitized sessions beside
the repository (``<repo>/../shared/data/claude-code``; never edited). A
longer session repeats one, renaming every id a record is known by on each
repetition, so the importer sees new records rather than re-imports.

No public Codex rollout comes near the shared sessions' size, so a session is
also written as Codex CLI writes it: each Claude Code record becomes the
rollout items Codex would have written for it (user text, assistant text,
``reasoning`` for thinking, ``function_call`` and ``function_call_output`` by
``call_id``, ``compacted`` with Claude Code's summary), after a ``session_meta``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

# THREADMEM_SESSIONS_DIR: where they are when the checkout has no ../shared beside it (a git worktree).
DATA = Path(
    os.environ.get("THREADMEM_SESSIONS_DIR") or Path(__file__).resolve().parents[3] / "shared" / "data" / "claude-code"
)
LONG_SESSIONS = ("258c7280-ae70-4798-800f-63464d01a85d", "8463c716-a2ea-4c14-9efa-87158ebd9f20")


def ids_of(record: dict[str, Any]) -> list[str]:
    """The ids a Claude Code record is known by: its own, its parent's, its API message's, its tool calls'."""
    ids = [record.get("uuid"), record.get("parentUuid"), record.get("logicalParentUuid")]
    message = record.get("message")
    if isinstance(message, dict):
        ids.append(message.get("id"))
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict):
                ids += [block.get("id"), block.get("tool_use_id")]
    return [i for i in ids if isinstance(i, str) and i]


def templates(sources: Iterable[Path]) -> list[tuple[str, list[str]]]:
    """Every non-blank line of the sources with the ids its record is known by."""
    return [
        (raw, ids_of(json.loads(raw)))
        for source in sources
        for raw in source.read_text(encoding="utf-8").splitlines()
        if raw.strip()
    ]


def repeated(lines: list[tuple[str, list[str]]], repetition: int) -> Iterator[str]:
    """The lines again, each id renamed for this repetition (``<id>-r<n>``)."""
    for raw, ids in lines:
        for old in ids:
            raw = raw.replace(f'"{old}"', f'"{old}-r{repetition}"')
        yield raw


STAMP = "2026-01-01T00:00:00.000Z"


def _line(kind: str, payload: dict[str, Any]) -> str:
    return json.dumps({"timestamp": STAMP, "type": kind, "payload": payload}, ensure_ascii=False)


def _texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [b.get("text") or "" for b in content or [] if isinstance(b, dict) and b.get("type") == "text"]


def rollout_lines(source: Path) -> Iterator[str]:
    """The Codex rollout of one Claude Code session file."""
    records = [json.loads(raw) for raw in source.read_text(encoding="utf-8").splitlines() if raw.strip()]
    session = next((r["sessionId"] for r in records if r.get("sessionId")), source.stem)
    cwd = next((r["cwd"] for r in records if r.get("cwd")), "/")
    yield _line("session_meta", {"id": f"codex-{session}", "cwd": cwd, "originator": "bench", "cli_version": "0"})
    for record in records:
        message = record.get("message") if isinstance(record.get("message"), dict) else {}
        content = message.get("content")
        if record.get("type") == "user" and not record.get("isMeta"):
            if record.get("isCompactSummary"):
                yield _line("compacted", {"message": "\n".join(_texts(content))})
                continue
            for block in content if isinstance(content, list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    result = block.get("content")
                    text = "\n".join(_texts(result)) if isinstance(result, list) else str(result or "")
                    payload = {"type": "function_call_output", "call_id": block.get("tool_use_id"), "output": text}
                    yield _line("response_item", payload)
            texts = [t for t in _texts(content) if t]
            if texts:
                parts = [{"type": "input_text", "text": "\n".join(texts)}]
                yield _line("response_item", {"type": "message", "role": "user", "content": parts})
        elif record.get("type") == "assistant":
            for block in content if isinstance(content, list) else []:
                kind = block.get("type") if isinstance(block, dict) else None
                if kind == "text":
                    parts = [{"type": "output_text", "text": block.get("text") or ""}]
                    yield _line("response_item", {"type": "message", "role": "assistant", "content": parts})
                elif kind == "thinking":
                    summary = [{"type": "summary_text", "text": block.get("thinking") or ""}]
                    yield _line("response_item", {"type": "reasoning", "summary": summary, "encrypted_content": None})
                elif kind == "tool_use":
                    arguments = json.dumps(block.get("input") or {}, ensure_ascii=False)
                    call = {"type": "function_call", "name": block.get("name"), "arguments": arguments}
                    yield _line("response_item", {**call, "call_id": block.get("id")})


def write_rollouts(sources: list[Path], folder: Path) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        target = folder / f"rollout-{source.stem}.jsonl"
        with target.open("w", encoding="utf-8") as handle:
            for line in rollout_lines(source):
                handle.write(line + "\n")
        written.append(target)
    return written
