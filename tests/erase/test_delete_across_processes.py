"""A thread deleted by one process is never shown by another that kept its pieces (the ranked lane's indexes).

The web process below (uvicorn, as deployed) answers a described question
first, so it keeps the owner's pieces in memory; this process deletes the
thread, telling the web process nothing; the web process's REST and MCP
answers then hold nothing of it.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from tests.support.factories import append, make_thread
from tests.support.mcp_client import asgi_server, http_session, run, text_of, token_of
from tests.support.personas import persona_fixture
from tests.support.semantic import embedded
from threadmem.features.erase.thread_delete import thread_delete
from threadmem.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

alice = persona_fixture("alice", database="transactional_db")
QUESTION = "how did we fix the flaky zebrafish pipeline?"
FIX = "Fixed the flaky zebrafish pipeline: the runner cache was stale, cleared it and pinned the image."


@pytest.fixture(scope="module")
def ranked_web(django_db_setup, tmp_path_factory) -> Iterator[str]:
    with asgi_server(tmp_path_factory.mktemp("uvicorn"), THREADMEM_STATIC_EMBEDDINGS="true") as url:
        yield url


def test_another_process_that_kept_the_pieces_shows_nothing_of_a_deleted_thread(ranked_web, alice, static_model):
    doomed = make_thread(alice, "claude-code:zebrafish")
    append(doomed, {"role": "user", "content": "the zebrafish pipeline fails one run in five"})
    append(doomed, {"role": "assistant", "content": FIX})
    kept = make_thread(alice, "claude-code:billing")
    append(kept, {"role": "user", "content": "rename the billing module"})
    embedded(doomed, kept)
    ids = list(Message.objects.filter(thread=doomed).values_list("pk", flat=True))
    token = token_of(alice)
    rest = httpx2.Client(base_url=ranked_web, headers={"Authorization": f"Token {token}"}, timeout=60)

    def mcp_search() -> str:
        async def main() -> str:
            async with http_session(f"{ranked_web}/mcp/", f"Token {token}") as client:
                return text_of(await client.call_tool("search_memory", {"query": QUESTION}))

        return run(main)

    before = rest.post("/api/v1/search/", json={"query": QUESTION}).json()["text"]
    assert "runner cache was stale" in before and "runner cache was stale" in mcp_search()

    thread_delete(thread=doomed, actor=alice)

    after = rest.post("/api/v1/search/", json={"query": QUESTION}).json()["text"]
    assert "runner cache was stale" not in after and "zebrafish pipeline fails" not in after
    assert "claude-code:zebrafish" not in after
    assert "runner cache was stale" not in mcp_search()
    for message_id in ids:
        assert rest.get(f"/api/v1/messages/{message_id}/").status_code == 404
    assert rest.get("/api/v1/threads/claude-code:zebrafish/").status_code == 404
