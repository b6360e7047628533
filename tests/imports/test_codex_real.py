"""Whole, unedited Codex CLI rollouts (tests/fixtures/codex/NOTICE.md): every record they hold, as its raw line says."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest
from django.core.management import call_command

from tests.support.capture import run_capture
from tests.support.factories import row_counts
from threadmem.models import Generation, Message, Thread

pytestmark = pytest.mark.django_db
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "codex"
REAL = sorted(FIXTURES.glob("rollout-2025-*.jsonl"))
SKIPPED_EVENTS = {"agent_message", "agent_reasoning", "token_count", "user_message", "turn_aborted"}


def run(*args: str) -> str:
    from io import StringIO

    out = StringIO()
    call_command("import_sessions", "--owner", "owner", *args, stdout=out)
    return out.getvalue()


def records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def by_line(thread: Thread) -> dict[int, Message]:
    return {int(m.source_id.split(":")[0][1:]): m for m in Message.objects.filter(thread=thread)}


def test_the_real_rollouts_are_there():
    assert len(REAL) == 2


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem[8:27])
def test_a_real_rollout_becomes_one_message_per_response_item_and_nothing_else(owner, path):
    rows = records(path)
    run(str(path))  # no --format: the first record says codex
    meta = rows[0]["payload"]
    thread = Thread.objects.get(channel=f"codex:{meta['id']}")
    assert (thread.source_format, thread.source_cwd, thread.source_session_id) == ("codex", meta["cwd"], meta["id"])
    messages = by_line(thread)
    kinds = Counter((r["type"], r["payload"].get("type")) for r in rows)
    assert {kind for kind, _ in kinds} == {"session_meta", "turn_context", "event_msg", "response_item"}
    first_prompt = None
    for n, record in enumerate(rows, 1):
        kind, payload = record["type"], record["payload"]
        if kind != "response_item":
            # session_meta names the thread; turn_context and these events (repeats, token counts) add nothing.
            assert n not in messages and (kind != "event_msg" or payload["type"] in SKIPPED_EVENTS), (n, payload)
            continue
        message = messages.pop(n)
        if payload["type"] == "message":
            # An image the user pasted is stored as a marker, not its data URL.
            text = "\n".join(part.get("text", f"[{part['type']}]") for part in payload["content"])
            assert message.content == text
            injected = text.startswith("<environment_context>")
            expected = "machine_event" if injected else "message"
            assert (message.role, message.kind) == (payload["role"], expected)
            if payload["role"] == "user" and not injected and first_prompt is None:
                first_prompt = text
        elif payload["type"] == "function_call":
            (call,) = message.tool_calls
            assert message.role == "assistant"
            arguments = json.loads(payload["arguments"])
            assert call == {"id": payload["call_id"], "name": payload["name"], "arguments": arguments}
        elif payload["type"] == "function_call_output":
            answer = (message.role, message.tool_call_id, message.content)
            assert answer == ("tool", payload["call_id"], payload["output"])
        else:
            assert payload["type"] == "reasoning"
            summary = "\n".join(part["text"] for part in payload["summary"])
            assert not message.model_visible and message.content.startswith(summary)
            assert message.content.endswith(f"encrypted_content: {payload['encrypted_content']}")
    assert messages == {}  # nothing stored that no response item says
    assert thread.title == " ".join(first_prompt.split())[:80]
    assert Generation.objects.filter(thread=thread).count() == 1  # these sessions were never compacted


@pytest.mark.parametrize("path", REAL, ids=lambda p: p.stem[8:27])
def test_importing_a_real_rollout_again_adds_nothing(owner, path):
    run("--format", "codex", str(path))
    before = row_counts()
    out = run("--format", "codex", str(path))
    assert row_counts() == before and " 0 new messages" in out


def test_a_compaction_written_after_a_real_rollout_closes_its_generation(owner, tmp_path, monkeypatch):
    """The real sessions were never compacted: the next record Codex would write when it compacts one is appended."""
    live = tmp_path / REAL[0].name
    shutil.copy(REAL[0], live)
    run_capture(monkeypatch, "", "--owner", "owner", "--path", str(live))
    thread = Thread.objects.get(channel=f"codex:{records(REAL[0])[0]['payload']['id']}")
    before = Message.objects.filter(thread=thread).count()
    summary = "Team dashboard: useTeamDashboardMetrics fires on mount; /api/teams/leads feeds the Team Lead field."
    compacted = {"timestamp": "2025-09-25T02:40:00.000Z", "type": "compacted", "payload": {"message": summary}}
    with live.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(compacted) + "\n")
    run_capture(monkeypatch, "", "--owner", "owner", "--path", str(live))
    first, second = Generation.objects.filter(thread=thread).order_by("number")
    assert first.state == "closed" and second.state == "open"
    assert first.summary_message.content == summary and first.summary_message.summary_origin == "codex"
    assert Message.objects.filter(thread=thread, generation=1).count() == before + 1  # the boundary event
