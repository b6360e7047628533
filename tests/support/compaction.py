"""Compaction test helpers: a deploy conversation to summarize, a model answer with nine sections,
the ten headings, a compaction whose model call is held open, and what a finished compaction must leave."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, NamedTuple

from tests.support.factories import append, make_thread, token_client
from tests.support.workers import api_post
from threadmem.features.compaction import summary
from threadmem.models import Compaction, Message, Thread

HEADINGS = [
    "## 1. Primary request and intent",
    "## 2. Key technical concepts",
    "## 3. Files and code sections",
    "## 4. Errors and fixes",
    "## 5. Problem solving",
    "## 6. All user messages",
    "## 7. Pending tasks",
    "## 8. Current work",
    "## 9. Optional next step",
    "## 10. How to access the resources used",
]
COMMAND = "ssh deploy@staging.example.com 'sudo systemctl restart nginx'"


@dataclass
class Conversation:
    request: Message
    read_call: Message
    read_result: Message
    failed_ssh: Message
    failed_ssh_result: Message
    ssh: Message
    ssh_result: Message
    answer: Message


def deploy_conversation(thread: Thread) -> Conversation:
    """A user request, a file read, a failed then successful ssh command, an answer."""

    def one(**message: Any) -> Message:
        (stored,) = append(thread, message)
        return stored

    return Conversation(
        request=one(role="user", content="Please restart nginx on staging and check /etc/nginx/nginx.conf"),
        read_call=one(
            role="assistant",
            content="Reading the config first.",
            tool_calls=[{"id": "call_read", "name": "read_file", "arguments": {"path": "/etc/nginx/nginx.conf"}}],
        ),
        read_result=one(role="tool", tool_call_id="call_read", content="server { listen 80; root /var/www/html; }"),
        failed_ssh=one(
            role="assistant", tool_calls=[{"id": "call_ssh1", "name": "bash", "arguments": {"command": COMMAND}}]
        ),
        failed_ssh_result=one(
            role="tool",
            tool_call_id="call_ssh1",
            content="ssh: connect to host staging.example.com port 22: Connection refused",
        ),
        ssh=one(role="assistant", tool_calls=[{"id": "call_ssh2", "name": "bash", "arguments": {"command": COMMAND}}]),
        ssh_result=one(role="tool", tool_call_id="call_ssh2", content="nginx restarted"),
        answer=one(role="assistant", content="Restarted nginx on staging; the config listens on port 80."),
    )


def nine_sections(**overrides: str) -> str:
    """A model answer with the nine headings; ``s3="..."`` replaces section 3's text."""
    return "\n\n".join(
        f"{HEADINGS[n - 1]}\n{overrides.get(f's{n}', f'model text for section {n}')}" for n in range(1, 10)
    )


def section(text: str, number: int) -> str:
    return summary.split_sections(text)[number]


def assert_ten_headings_in_order(text: str) -> None:
    lines = text.splitlines()
    positions = [lines.index(heading) for heading in HEADINGS]
    assert positions == sorted(positions)
    assert sum(line.startswith("## ") for line in lines) == 10


def compaction_of(thread: Thread) -> Compaction:
    return Compaction.objects.get(thread=thread)


def assert_history_intact(thread: Thread, *, before: int, summary_count: int = 1) -> list[Message]:
    messages = list(Message.objects.filter(thread=thread).order_by("seq"))
    assert [m.seq for m in messages] == list(range(1, len(messages) + 1))  # no gap, no duplicate
    assert len(messages) == before + summary_count
    assert sum(m.kind == Message.Kind.SUMMARY for m in messages) == summary_count
    return messages


class HeldCompaction(NamedTuple):
    """A compaction the API started on a deploy conversation, its first model answer held back."""

    thread: Thread
    before: int  # the thread's messages before the compaction
    gate: threading.Event  # set() lets the held answer go (to an attempt that may be dead by then)
    status: int  # the API's answer to the compact request


def compaction_held(owner: Any, fake: Any, channel: str, *, then_section_8: str) -> HeldCompaction:
    """A deploy conversation in a new thread ``channel``, compacted through the API, once its attempt asked the model.

    The model holds that first answer (section 8 "never delivered") and gives the next attempt section 8
    ``then_section_8``.
    """
    thread = make_thread(owner, channel)
    deploy_conversation(thread)
    before = Message.objects.filter(thread=thread).count()
    gate = fake.push_chat(nine_sections(s8="never delivered"), hold=True)
    fake.push_chat(nine_sections(s8=then_section_8))
    status, _ = api_post(token_client(owner), f"/api/v1/threads/{thread.channel}/compact/")
    fake.wait_for_requests(1, path_suffix="/chat/completions")
    return HeldCompaction(thread=thread, before=before, gate=gate, status=status)
