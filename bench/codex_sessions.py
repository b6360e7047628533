"""Codex rollouts for the import bench: the shared Claude Code sessions written again as Codex CLI writes them.

No public Codex rollout comes near the shared sessions' size, so the bench
compares the two importers on the same conversations: each Claude Code
record becomes the rollout items Codex would have written for it (user
text, assistant text, ``reasoning`` for thinking, ``function_call`` and
``function_call_output`` by ``call_id``, ``compacted`` with Claude Code's
summary), after a ``session_meta``. The Claude Code side reads the
originals; both store their messages through the same path.
"""

from __future__ import annotations

import json
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

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


def codex_throughput(
    *, claude_files: list[Path], folder: Path, runs: int, repeat: int, user: Any, cleanup: Callable[[], None]
) -> float:
    """Import the sessions and their rollouts, taking turns; print messages/s of each, answer codex/claude-code."""
    from threadmem.imports.service import FileImport, ImportReport, statistics_refresh

    codex_files = write_rollouts(claude_files, folder)
    sides = {"claude-code": claude_files, "codex": codex_files}
    print(
        f"codex: the same {len(claude_files)} sessions as Codex rollouts"
        f" ({sum(p.stat().st_size for p in codex_files) / 1024 / 1024:.1f} MB), imported beside the originals"
    )
    ratios: list[float] = []
    for run in range(runs):
        rates, counts = {}, {}
        for side in sorted(sides, reverse=run % 2 == 1):
            messages, started = 0, time.perf_counter()
            for time_around in range(repeat):
                report = ImportReport()
                for path in sides[side]:
                    channel = f"bench:import:codex:{run}:{time_around}:{side}:{path.stem}"
                    FileImport(path=path, fmt=side, owner=user, report=report, channel=channel).step(final=True)
                statistics_refresh()
                messages += report.messages_new
            rates[side] = messages / (time.perf_counter() - started)
            counts[side] = messages // repeat
        ratios.append(rates["codex"] / rates["claude-code"])
        print(
            f"  run {run + 1}: codex {rates['codex']:,.0f} messages/s ({counts['codex']} messages)"
            f" · claude-code {rates['claude-code']:,.0f} messages/s ({counts['claude-code']} messages)"
            f" · codex/claude-code {ratios[-1]:.2f}"
        )
        cleanup()
    ratio = statistics.median(ratios)
    print(f"{'meets' if ratio >= 0.8 else 'BELOW'} the target codex/claude-code >= 0.80 ({ratio:.2f})")
    return ratio
