"""What the parsers produce, and how lines are read from a file (complete lines only, by byte offset)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from threadmem.domain.services import MessageIn
from threadmem.lib.storable import text_problem

CODEX = "codex"
# threadmem's own export (export.py), restored whole by restore.py.
THREADMEM = "threadmem"
FORMATS = ("claude-code", "openai", CODEX, THREADMEM)
# Only a run of 19 or more digits can be an integer orjson rounds to a float.
_LONG_DIGITS = re.compile(rb"[0-9]{19}")


@dataclass
class Msg:
    """A message to append to the session's thread."""

    message: MessageIn


@dataclass
class Boundary:
    """A compaction boundary: ``event`` (a machine event) closes the current generation."""

    event: MessageIn


@dataclass
class Summary:
    """The agent's own summary: it opens the generation the last boundary started."""

    message: MessageIn


@dataclass
class Problem:
    """A line that could not be imported: reported with its file and line number, then skipped."""

    line: int
    reason: str


Item = Msg | Boundary | Summary | Problem


@dataclass
class Line:
    number: int  # 1-based
    raw: bytes  # without its "\n"
    end_offset: int  # byte offset just after the line's "\n"

    @property
    def text(self) -> str:
        return self.raw.decode("utf-8", errors="replace")


def read_complete_lines(handle: IO[bytes], *, offset: int, line_number: int, final: bool) -> Iterator[Line]:
    """The lines from ``offset`` on that end with "\\n"; the last unterminated one only when ``final``.

    A half-written last line (a live session mid-write, a truncated copy) is
    left for later: the caller keeps ``end_offset`` of the last line consumed.
    With ``final`` (a one-off import of a finished file) an unterminated last
    line is taken if it is complete JSON, since hand-made JSONL often lacks
    the last newline.
    """
    handle.seek(offset)
    while True:
        raw = handle.readline()
        if not raw:
            return
        if not raw.endswith(b"\n"):
            if final and _is_json(raw):
                offset += len(raw)
                line_number += 1
                yield Line(line_number, raw, offset)
            return
        offset += len(raw)
        line_number += 1
        yield Line(line_number, raw[:-1], offset)


def _is_json(raw: bytes) -> bool:
    try:
        json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return True


def load_record(line: Line) -> dict[str, Any] | Problem | None:
    """The line's JSON object; None for a blank line; a Problem for anything else.

    orjson (the API's own parser) reads the bytes as they are; what it
    refuses (invalid UTF-8, a lone surrogate, NaN, nesting past 1,024
    levels) or rounds (an integer past 64 bits, read as a float) is read
    again by the json module, so a line means what it always meant and the
    checks after parsing name the problem.
    """
    if not line.raw.strip():
        return None
    try:
        record = orjson.loads(line.raw)
        exact = _LONG_DIGITS.search(line.raw) is None
    except orjson.JSONDecodeError:
        exact = False
    if not exact:
        try:
            record = json.loads(line.text)
        except ValueError as exc:
            return Problem(line.number, f"not JSON: {exc}")
        except RecursionError:
            return Problem(line.number, "not JSON this service reads: it nests too deeply")
    if not isinstance(record, dict):
        return Problem(line.number, f"not a JSON object but {type(record).__name__}")
    return record


def session_text_problem(record: dict[str, Any], names: tuple[str, ...]) -> str | None:
    """Why one of the record's ``names`` (what its session's thread keeps: its id, its working directory) cannot
    be stored, or None: the line is then a bad line, never a thread's field nor a query's value."""
    for name in names:
        value = record.get(name)
        problem = text_problem(value) if isinstance(value, str) else None
        if problem:
            return f"{name} {problem}"
    return None


def detect_format(path: Path) -> str:
    """A session file's format, from its first record; "" while that record is not complete (a live file).

    A Codex rollout's lines are ``{timestamp, type, payload}`` envelopes (the
    first a ``session_meta``); an OpenAI chat line holds ``messages``; a
    threadmem export's header says ``"format": "threadmem"``; any other
    record is Claude Code's.
    """
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            if not raw.endswith(b"\n") and not _is_json(raw):
                return ""
            try:
                record = orjson.loads(raw)
            except orjson.JSONDecodeError:
                # orjson refuses what the json module reads (a lone surrogate's escape): an export's header
                # holding one is still an export, refused as such by the restore.
                try:
                    record = json.loads(raw)
                except (ValueError, RecursionError):
                    return "claude-code"  # reported as a bad line by its parser
            if isinstance(record, dict):
                if record.get("format") == THREADMEM:
                    return THREADMEM
                if record.get("type") == "session_meta" or ("payload" in record and "timestamp" in record):
                    return CODEX
                if "messages" in record:
                    return "openai"
            return "claude-code"
    return ""


def session_files(path: Path, *, fmt: str | None) -> list[Path]:
    """A file as itself; a folder's .jsonl files (a Claude Code project, or ``~/.claude/projects``).

    Main sessions come before subagent files, so a subagent finds the
    parent thread it forks from.
    """
    if path.is_file():
        return [path]
    files = sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    if fmt != "openai":
        files.sort(key=lambda p: (is_subagent_file(p), str(p)))
    return files


def is_subagent_file(path: Path) -> bool:
    return path.parent.name == "subagents" and path.name.startswith("agent-")
