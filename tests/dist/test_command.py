"""The installed `threadmem` command, run from a temporary folder with no checkout: serve, import, capture, mcp."""

from __future__ import annotations

import json
import re
import stat
import urllib.request
import uuid

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.dist.conftest import SERVE_SECONDS, Served, run
from tests.support.capture import hook_json
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS

pytestmark = pytest.mark.dist

SHARED_SESSIONS = 4  # the main sessions of the shared data (the subagents' files are part of theirs)


def api(served: Served, path: str) -> dict:
    request = urllib.request.Request(f"{served.url}{path}", headers={"Authorization": f"Token {served.token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


@pytest.fixture(scope="module")
def imported(served):
    """`threadmem import` with no PATH, twice."""
    return run(served, "import"), run(served, "import")


def test_serve_answers_healthz_within_60_seconds_from_its_own_data_directory(served):
    print(f"threadmem serve: /healthz answered 200 after {served.seconds:.1f} s")
    assert served.seconds <= SERVE_SECONDS
    folder = served.data / "threadmem"
    assert (folder / "threadmem.sqlite3").is_file()
    assert stat.S_IMODE((folder / ".secret_key").stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    # The templates and static files came with the wheel.
    for path in ("/console/login/", "/static/console/console.css"):
        with urllib.request.urlopen(f"{served.url}{path}", timeout=30) as answer:
            assert answer.status == 200, path


def test_serve_says_how_many_past_sessions_wait_and_how_to_import_them(served):
    log = served.log.read_text()
    projects = served.home / ".claude" / "projects"
    assert f"Claude Code: {SHARED_SESSIONS} of {SHARED_SESSIONS} sessions in {projects} not imported yet" in log
    assert "import them now: threadmem import" in log
    assert "30 days" in log


def test_import_shows_progress_and_imports_each_session_once(served, imported):
    first, second = imported
    assert first.returncode == 0, first.stderr
    assert re.search(r"^progress: \d+/\d+ bytes \(\d+%\)$", first.stderr, flags=re.MULTILINE), first.stderr
    new = int(re.search(r"(\d+) new messages, 0 already imported", first.stdout).group(1))
    print(f"threadmem import: {first.stdout.strip()}")
    assert new > 700  # the shared sessions hold 735 messages and their subagents' more
    assert second.returncode == 0, second.stderr
    assert f"0 new messages, {new} already imported" in second.stdout
    channels = {thread["channel"] for thread in api(served, "/api/v1/threads/?page_size=100")["results"]}
    assert "claude-code:258c7280-ae70-4798-800f-63464d01a85d" in channels


def a_session(tmp_path) -> tuple[str, str, str]:
    """A one-turn Claude Code transcript of a new session: (its hook JSON at Stop, the session id, its word)."""
    session_id, word = str(uuid.uuid4()), f"capture-{uuid.uuid4().hex[:12]}"
    transcript = tmp_path / f"{session_id}.jsonl"
    base = {"sessionId": session_id, "cwd": str(tmp_path), "timestamp": "2026-12-06T10:00:00.000Z"}
    records = [
        {**base, "type": "user", "uuid": str(uuid.uuid4()), "message": {"role": "user", "content": f"find {word}"}},
        {
            **base,
            "type": "assistant",
            "uuid": str(uuid.uuid4()),
            "message": {"id": "msg_dist_1", "role": "assistant", "content": [{"type": "text", "text": f"{word} ok"}]},
        },
    ]
    transcript.write_text("".join(json.dumps(record) + "\n" for record in records))
    return hook_json("Stop", transcript=transcript, session_id=session_id, cwd=str(tmp_path)), session_id, word


@pytest.mark.parametrize("where", ["server", "this machine"])
def test_capture_stores_the_turn(served, tmp_path, where):
    """With THREADMEM_URL, the plugin's hook sends it to the server; without, it goes into the installed copy's own
    database (the one the served instance reads)."""
    hook, session_id, word = a_session(tmp_path)
    env = {"THREADMEM_URL": served.url} if where == "server" else {}
    done = run(served, "capture", stdin=hook, THREADMEM_TOKEN=served.token, **env)
    assert done.returncode == 0 and not done.stderr, done.stderr
    thread = api(served, f"/api/v1/threads/claude-code:{session_id}/")
    assert thread["channel"] == f"claude-code:{session_id}"
    messages = api(served, f"/api/v1/threads/claude-code:{session_id}/messages/")["results"]
    assert [m["content"] for m in messages] == [f"find {word}", f"{word} ok"]


def _over_stdio(served: Served, **env: str):
    server = StdioServerParameters(command=str(served.bin / "threadmem"), args=["mcp"], env=served.env(**env))

    async def main():
        with anyio.fail_after(120):
            async with Client(server) as client:
                tools = (await client.list_tools()).tools
                return tools, await client.call_tool("search_memory", {"query": "config/config.exs"})

    return anyio.run(main)


def test_mcp_bridges_stdio_to_the_server_and_answers_a_search(served, imported):
    tools, search = _over_stdio(served, THREADMEM_URL=served.url, THREADMEM_TOKEN=served.token)
    assert [tool.name for tool in tools] == ["search_memory", "message_context_read"]
    assert not search.is_error
    text = search.content[0].text
    assert "config/config.exs" in text and "messageId=" in text and len(text) <= THREAD_SEARCH_MAX_CHARS


def test_mcp_without_a_server_url_serves_the_embedded_database(served, imported):
    tools, search = _over_stdio(served, THREADMEM_TOKEN=served.token)
    assert [tool.name for tool in tools] == ["search_memory", "message_context_read"]
    assert "config/config.exs" in search.content[0].text
