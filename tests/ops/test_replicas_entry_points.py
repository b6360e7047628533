"""Every entry point of a model-facing read routed by the one rule (threadmem/infrastructure/replicas/rule.py), on a
real streaming replica: REST's search by GET and by POST, an MCP tool call, an agent turn's tool call, the
console's search page and ``manage.py search_memory``.

Each test shows the read went to the replica (its counter, or an answer the primary would not give), and that the
rule held the caller's read back for their own write or for the fence, as test_replicas.py does for the rule.
"""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from mcp import Client

from mcp_server.server import build_server
from tests.ops.test_replicas import ALIAS, fallbacks, reads, replica, search, standby  # noqa: F401  (fixtures)
from tests.support.factories import append, console_client, make_thread, make_user, token_client
from tests.support.mcp_client import run, text_of
from tests.support.turns import run_turn, search_call
from threadmem.models import Message, ToolCall

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True, databases=["default", ALIAS])]


def post(api, content: str, channel: str):
    stored = api.post(f"/api/v1/threads/{channel}/messages/", {"role": "user", "content": content}, format="json")
    assert stored.status_code == 201, stored.content
    return stored


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_rest_search_reads_the_replica_by_get_and_by_post_and_holds_no_later_read_back(
    replica,  # noqa: F811
    method,
):
    """A search's log row is the service's record, not the caller's write: the search after it, by either
    method, still reads the replica, which does not replay here (a replay paused would fail a held-back read
    over to the primary)."""
    owner = make_user("owner")
    append(make_thread(owner, "entry:rest"), {"role": "user", "content": "the gannet colony moved north"})
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    api = token_client(owner)
    arguments = {"query": "gannet", "channel": "entry:rest"}
    on_replica, behind, logged = reads(ALIAS), fallbacks("writes"), ToolCall.objects.count()

    for _ in range(2):
        if method == "get":
            response = api.get("/api/v1/search/", arguments)
        else:
            response = api.post("/api/v1/search/", arguments, format="json")
        assert response.status_code == 200 and "gannet colony" in response.json()["text"], response.content
    assert reads(ALIAS) - on_replica == 2 and fallbacks("writes") == behind
    assert ToolCall.objects.count() == logged + 2  # both logged, on the primary


def test_a_rest_search_waits_for_its_callers_write(replica):  # noqa: F811
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    make_thread(owner, "entry:rest-ryw")
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    api = token_client(owner)
    post(api, "the skua census was filed", "entry:rest-ryw")
    behind, on_replica = fallbacks("writes"), reads(ALIAS)

    assert "skua census" in api.get("/api/v1/search/", {"query": "skua"}).json()["text"]
    assert "skua census" in api.post("/api/v1/search/", {"query": "skua"}, format="json").json()["text"]
    assert fallbacks("writes") - behind == 2
    # Another caller reads the paused replica, which has not got it: what the writer was spared.
    assert "skua census" not in token_client(operator).get("/api/v1/search/", {"query": "skua"}).json()["text"]
    assert reads(ALIAS) - on_replica == 1


def mcp_calls(user, *requests: tuple[str, dict]) -> list:
    """Tool calls over MCP to the server ``manage.py mcp`` and /mcp/ run, connected in this process."""
    server = build_server(user_of=lambda ctx: user)

    async def main():
        async with Client(server) as client:
            return [await client.call_tool(name, arguments) for name, arguments in requests]

    return run(main)


def test_an_mcp_tool_call_reads_the_replica_and_waits_for_its_callers_write(replica):  # noqa: F811
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    thread = make_thread(owner, "entry:mcp")
    (earlier,) = append(thread, {"role": "user", "content": "the puffin ledger opened in spring"})
    replica.caught_up()
    on_replica = reads(ALIAS)
    search_call_, read_call = mcp_calls(
        operator, ("search_memory", {"query": "puffin"}), ("message_context_read", {"messageId": earlier.id})
    )
    assert "puffin ledger" in text_of(search_call_) and "puffin ledger" in text_of(read_call)
    assert reads(ALIAS) - on_replica == 2

    replica.sql("SELECT pg_wal_replay_pause()")
    post(token_client(owner), "the puffin ledger was audited", "entry:mcp")
    behind, on_replica = fallbacks("writes"), reads(ALIAS)
    (mine,) = mcp_calls(owner, ("search_memory", {"query": "puffin"}))
    assert "was audited" in text_of(mine) and fallbacks("writes") - behind == 1
    (theirs,) = mcp_calls(operator, ("search_memory", {"query": "puffin"}))
    assert "was audited" not in text_of(theirs) and reads(ALIAS) - on_replica == 1


def test_an_agent_turns_search_finds_what_the_turn_wrote_while_the_replica_does_not_replay(
    replica,  # noqa: F811
    fake_openai,
):
    """The turn's tools run as the thread's owner after the turn stored the user's message: the search waits for
    a replica that has it, here the primary; another caller's search reads the replica, which has not."""
    owner, operator = make_user("owner"), make_user("operator", is_staff=True)
    thread = make_thread(owner, "entry:turn")
    replica.caught_up()
    replica.sql("SELECT pg_wal_replay_pause()")
    fake_openai.push_chat(tool_calls=[{"id": "call_1", **search_call("cormorant roost")}])
    fake_openai.push_chat("It is pinned in the hall.")
    behind, on_replica = fallbacks("writes"), reads(ALIAS)

    response = run_turn(token_client(owner), "the cormorant roost list is pinned in the hall", channel="entry:turn")
    assert response.status_code == 200, response.content
    (result,) = Message.objects.filter(thread=thread, role="tool")
    assert "cormorant roost list is pinned" in result.content
    assert fallbacks("writes") - behind == 1
    assert ToolCall.objects.filter(surface=ToolCall.Surface.AGENT).count() == 1
    assert "list is pinned" not in search(operator, "cormorant roost").text
    assert reads(ALIAS) - on_replica == 1


def test_the_console_search_page_reads_the_replica_and_an_isolation_fences_it(replica):  # noqa: F811
    owner, admin = make_user("owner"), make_user("admin", is_staff=True, is_superuser=True)
    (leaked,) = append(make_thread(owner, "entry:console"), {"role": "tool", "content": "the petrel key pk-5512"})
    replica.caught_up()
    console = console_client(admin)
    on_replica = reads(ALIAS)
    page = console.get("/console/search/", {"q": "petrel key"})
    assert page.status_code == 200 and "pk-5512" in page.content.decode()
    model_read = console.get(f"/console/messages/{leaked.id}/model/")
    assert model_read.status_code == 200 and "pk-5512" in model_read.content.decode()
    assert reads(ALIAS) - on_replica == 2
    assert console.get("/console/").status_code == 200  # an operator's page, not a model-facing read
    assert reads(ALIAS) - on_replica == 2

    replica.sql("SELECT pg_wal_replay_pause()")
    isolated = console.post(f"/console/messages/{leaked.id}/isolation/", {"isolated": "true", "confirm": "on"})
    assert isolated.status_code == 302
    fenced, on_replica = fallbacks("writes"), reads(ALIAS)
    page = console.get("/console/search/", {"q": "petrel key"})
    assert page.status_code == 200 and "pk-5512" not in page.content.decode()
    assert reads(ALIAS) == on_replica and fallbacks("writes") - fenced == 1


def cli_search(query: str, username: str) -> str:
    out = StringIO()
    call_command("search_memory", query, "--user", username, stdout=out)
    return out.getvalue()


def test_manage_py_search_memory_reads_the_replica_and_waits_for_its_users_write(replica):  # noqa: F811
    owner = make_user("owner")
    make_user("operator", is_staff=True)  # searches as the operator, who wrote nothing
    append(make_thread(owner, "entry:cli"), {"role": "user", "content": "the shearwater tally is 40"})
    replica.caught_up()
    on_replica = reads(ALIAS)
    assert "shearwater tally is 40" in cli_search("shearwater", "operator")
    assert reads(ALIAS) - on_replica == 1

    replica.sql("SELECT pg_wal_replay_pause()")
    post(token_client(owner), "the shearwater tally doubled", "entry:cli")
    behind, on_replica = fallbacks("writes"), reads(ALIAS)
    assert "shearwater tally doubled" in cli_search("shearwater", "owner")
    assert fallbacks("writes") - behind == 1
    assert "shearwater tally doubled" not in cli_search("shearwater", "operator")
    assert reads(ALIAS) - on_replica == 1
    assert ToolCall.objects.filter(surface=ToolCall.Surface.CLI).count() == 3
