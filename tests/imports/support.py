"""The shared sessions (``<repo>/../shared/data/claude-code``) and what the raw JSONL says about them."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "claude-code"
LONG = "258c7280-ae70-4798-800f-63464d01a85d"
OTHER_LONG = "8463c716-a2ea-4c14-9efa-87158ebd9f20"


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


def _ids_of(record: dict) -> list[str]:
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


def write_repeated_session(source: Path, target: Path, *, times: int) -> int:
    """``source`` written ``times`` times into ``target``, each time with fresh ids (a longer session); bytes."""
    lines = [(raw, _ids_of(json.loads(raw))) for raw in source.read_text(encoding="utf-8").splitlines() if raw.strip()]
    with target.open("w", encoding="utf-8") as handle:
        for repetition in range(1, times + 1):
            for raw, ids in lines:
                for old in ids:
                    raw = raw.replace(f'"{old}"', f'"{old}-r{repetition}"')
                handle.write(raw + "\n")
    return target.stat().st_size
