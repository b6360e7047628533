"""What an MCP caller reaches: what REST lets it read, isolation honoured; operators read as a model does."""

from __future__ import annotations

import pytest
from mcp import Client

from mcp_server.server import build_server
from tests.support.factories import append, make_thread, make_user, token_client
from tests.support.mcp_client import SECRET, run, text_of
from threadmem.domain import services
from threadmem.models import Message

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def structured_content(settings):
    """These tests compare the REST JSON with structuredContent (off by default: tests/mcp/test_structured.py)."""
    settings.THREADMEM_MCP_STRUCTURED_CONTENT = True


def calls(user, *requests: tuple[str, dict]) -> list:
    server = build_server(user_of=lambda ctx: user)

    async def main():
        async with Client(server) as client:
            return [await client.call_tool(name, args) for name, args in requests]

    return run(main)


def test_an_operator_searches_every_thread_that_is_not_isolated_as_over_rest(alice, alice_thread):
    operator = make_user("operator", is_staff=True)
    (result,) = calls(operator, ("search_memory", {"query": SECRET}))
    rest = token_client(operator).post("/api/v1/search/", {"query": SECRET}, format="json").json()
    assert result.structured_content == rest
    assert rest["literal_hits_total"] == 1


def test_isolated_threads_and_messages_are_out_of_reach_for_everyone(alice, alice_thread):
    admin = make_user("admin", is_staff=True, is_superuser=True)
    other = make_thread(alice, "alice-2")
    (hidden,) = append(other, {"role": "user", "content": f"the other copy of {SECRET}"})
    services.thread_set_isolated(thread=alice_thread, isolated=True, actor=admin)
    services.message_set_isolated(message=hidden, isolated=True, actor=admin)
    for user in (alice, admin):
        search, read = calls(
            user, ("search_memory", {"query": SECRET}), ("message_context_read", {"messageId": hidden.id})
        )
        assert search.structured_content["literal_hits_total"] == 0
        # An audit read over MCP is model-facing (contract §3): an isolated message is a missing one.
        assert read.is_error
        assert text_of(read) == token_client(alice).get(f"/api/v1/messages/{hidden.id}/").json()["detail"]
    own_channel = calls(alice, ("search_memory", {"query": "staging", "channel": alice_thread.channel}))[0]
    assert own_channel.structured_content["literal_hits_total"] == 1  # an isolated thread stays searchable by channel
    assert Message.objects.filter(id=hidden.id, isolated=True).exists()


def test_a_cursor_pages_through_every_hit_over_mcp_as_over_rest(alice):
    thread = make_thread(alice, "claude-code:alice-paged")
    append(thread, *({"role": "user", "content": f"rollout step {n}: " + "y" * 700 + " rollout"} for n in range(40)))
    seen: list[int] = []
    arguments = {"query": "rollout", "channel": thread.channel}
    for _ in range(40):
        (page,) = calls(alice, ("search_memory", arguments))
        assert not page.is_error and len(text_of(page)) <= 12_000
        seen += [hit["message_id"] for hit in page.structured_content["hits"]]
        cursor = page.structured_content["next_cursor"]
        if cursor is None:
            break
        assert f'cursor="{cursor}"' in text_of(page)
        arguments = {**arguments, "cursor": cursor}
    assert sorted(seen) == sorted(set(seen)) and len(seen) == 40
    (forged,) = calls(alice, ("search_memory", {**arguments, "cursor": "not-a-cursor"}))
    assert forged.is_error and "cursor" in text_of(forged)
