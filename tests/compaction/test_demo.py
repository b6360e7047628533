"""`make run`'s demo data includes a compacted thread whose section 10 points at real messages."""

from __future__ import annotations

import re

from tests.support.compaction import assert_ten_headings_in_order, section
from threadmem.features.demo import DEPLOY_CHANNEL, demo_load
from threadmem.models import Generation, Message, Thread


def call_message(thread: Thread, call_id: str) -> Message:
    return next(m for m in thread.messages.exclude(tool_calls=[]) if any(c["id"] == call_id for c in m.tool_calls))


def test_the_demo_thread_is_compacted_and_its_catalogue_points_at_real_messages(db, no_model):
    demo_load()

    deploy = Thread.objects.get(channel=DEPLOY_CHANNEL)
    first, _second = Generation.objects.filter(thread=deploy).order_by("number")
    assert deploy.current_generation == 2
    assert first.state == Generation.State.CLOSED
    summary = first.summary_message
    assert summary.generation == 2
    assert_ten_headings_in_order(summary.content)
    catalogue = section(summary.content, 10)
    expectations = {
        "command `ssh deploy@staging-7.example.net 'systemctl status api'`": "call_ssh_1",
        "host `deploy@staging-7.example.net`": "call_ssh_1",
        "file `/srv/api/shared/.env.staging`": "call_write_1",
        "file `C:\\Users\\ops\\deploy.ps1`": "call_write_2",
        "url `https://status.example.net/api/health`": "call_fetch_1",
    }
    for resource, call_id in expectations.items():
        line = next(line for line in catalogue.splitlines() if line.startswith(f"- {resource} "))
        assert f"first successful access: messageId={call_message(deploy, call_id).id} " in line
    # Every messageId the catalogue names is a message of this thread the model may read.
    ids = {int(n) for n in re.findall(r"messageId=(\d+)", catalogue)}
    readable = set(
        Message.objects.filter(thread=deploy, id__in=ids, kind="message", isolated=False).values_list("id", flat=True)
    )
    assert ids and ids == readable
    later = list(Message.objects.filter(thread=deploy, generation=2).order_by("seq"))
    assert [m.kind for m in later][:1] == ["summary"] and len(later) == 5
