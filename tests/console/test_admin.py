"""The Django admin has every model, with isolation and the logs read-only."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.support.factories import append
from threadmem.models import IsolationEvent, ToolCall

MODELS = ["thread", "generation", "message", "toolargument", "compaction", "toolcall", "isolationevent"]


@pytest.mark.parametrize("model", MODELS)
def test_it_registers_every_model(admin_console, thread, model):
    append(thread, {"role": "assistant", "tool_calls": [{"id": "c", "name": "bash", "arguments": {"cmd": "ls"}}]})
    response = admin_console.get(reverse(f"admin:threadmem_{model}_changelist"))
    assert response.status_code == 200


def test_it_keeps_isolation_out_of_the_admin_forms(admin_console, thread):
    message = append(thread, {"role": "user", "content": "hi"})[0]
    for url in (
        reverse("admin:threadmem_thread_change", args=[thread.id]),
        reverse("admin:threadmem_message_change", args=[message.id]),
    ):
        body = admin_console.get(url).content.decode()
        assert 'name="isolated"' not in body, url


def test_it_keeps_the_logs_read_only(admin_console, thread, admin):
    call = ToolCall.objects.create(thread=thread, tool="search_memory", arguments={"query": "x"})
    event = IsolationEvent.objects.create(actor=admin, thread=thread, isolated=True)
    assert admin_console.get(reverse("admin:threadmem_toolcall_add")).status_code == 403
    for url in (
        reverse("admin:threadmem_toolcall_delete", args=[call.id]),
        reverse("admin:threadmem_isolationevent_delete", args=[event.id]),
    ):
        assert admin_console.post(url, {"post": "yes"}).status_code == 403, url
    assert ToolCall.objects.count() == 1 and IsolationEvent.objects.count() == 1
