"""The shared sessions (``<repo>/../shared/data/claude-code``) and what the raw JSONL says about them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.support.session_files import DATA, LONG_SESSIONS, repeated, templates

LONG, OTHER_LONG = LONG_SESSIONS


def data_dir() -> Path:
    if not (DATA / f"{LONG}.jsonl").exists():
        pytest.skip(f"the shared Claude Code sessions are not at {DATA} (CI checks out shared/ beside the repo)")
    return DATA


def raw_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def raw_expectations(path: Path) -> dict:
    """Counts and texts read straight from the JSONL, independently of the importer."""
    records = raw_records(path)
    assistant_ids, tool_uses, tool_results, texts = set(), {}, {}, []
    users = 0
    for r in records:
        message = r.get("message") or {}
        content = message.get("content")
        if r.get("type") == "assistant":
            assistant_ids.add(message["id"])
            for block in content:
                if block["type"] == "tool_use":
                    tool_uses[block["id"]] = block
                elif block["type"] == "text":
                    texts.append(block["text"])
        elif r.get("type") == "user" and not r.get("isMeta") and not r.get("isCompactSummary"):
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            if any(b.get("type") != "tool_result" for b in blocks):
                users += 1
            for b in blocks:
                if b.get("type") == "tool_result":
                    tool_results[b["tool_use_id"]] = b
                    if isinstance(b.get("content"), str) and b["content"]:
                        texts.append(b["content"])
                elif b.get("type") == "text":
                    texts.append(b["text"])
    return {
        "records": Counter(r.get("type") for r in records),
        "assistant_ids": assistant_ids,
        "tool_uses": tool_uses,
        "tool_results": tool_results,
        "users": users,
        "texts": texts,
    }


def write_repeated_session(source: Path, target: Path, *, times: int) -> int:
    """``source`` written ``times`` times into ``target``, each time with fresh ids (a longer session); bytes."""
    lines = templates([source])
    with target.open("w", encoding="utf-8") as handle:
        for repetition in range(1, times + 1):
            for raw in repeated(lines, repetition):
                handle.write(raw + "\n")
    return target.stat().st_size
