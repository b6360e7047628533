"""The shared Claude Code sessions, and longer sessions made from them with fresh ids.

Benches and tests (tests/imports) read the real, sanitized sessions beside
the repository (``<repo>/../shared/data/claude-code``; never edited). A
longer session repeats one, renaming every id a record is known by on each
repetition, so the importer sees new records rather than re-imports.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

# THREADMEM_SESSIONS_DIR: where they are when the checkout has no ../shared beside it (a git worktree).
DATA = Path(
    os.environ.get("THREADMEM_SESSIONS_DIR")
    or Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "claude-code"
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
