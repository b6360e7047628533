"""The real Claude Code CLI (npm, clients/package.json), headless, driven into its own compaction by a scripted
Anthropic-compatible server, with the local hooks block of docs/imports.md as written: the model's first request
after the compaction carries the pointer, and the search_memory call the scripted model makes from it finds what
a command printed before the compaction."""

from __future__ import annotations

import json
import sys

import pytest

from tests.imports.test_hooks_block import LOCAL, hooks_blocks
from tests.mcp.test_real_clients import client_env, clients  # noqa: F401  (fixtures)
from tests.support.fake_anthropic import CompactionScript, compacting_session, serve
from tests.support.mcp_client import ROOT, child_env, token_of
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS
from threadmem.models import Generation, Thread

pytestmark = pytest.mark.django_db(transaction=True)

# The auto-compact window Claude Code is given, and the usage the script reports above it after its last command.
WINDOW_TOKENS, COMPACT_AT_TOKENS = 20_000, 190_000
FILES = {
    "notes/rotation.env": "ROTATION_ID=ev-3b7c91d2",
    "notes/release.txt": "artifact /srv/releases/ledger/v4.2.9/bundle.tgz on ledger-04.eu-west.internal",
    "notes/incident.log": "2026-12-01T10:00:07Z ledger req=9f3c2e71aa04b6d1 status=500",
}
SUMMARY = "1. Primary request: the user asked to read the deployment notes. 2. They were read; nothing is pending."


def test_after_claude_codes_own_compaction_the_model_is_pointed_at_what_it_dropped(
    alice,
    clients,  # noqa: F811
    client_env,  # noqa: F811
    tmp_path,
):
    project = tmp_path / "project"
    for name, text in FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text + "\n")
    # grep -H prints each line with its path: the output names the file the pointer names.
    script = CompactionScript(
        [f"grep -H . {name}" for name in FILES], summary=SUMMARY, compact_at_tokens=COMPACT_AT_TOKENS
    )
    server, url = serve(script)
    token = token_of(alice)
    (local, _) = hooks_blocks()
    command = LOCAL.replace("<your token>", token).replace("/path/to/threadmem/.venv/bin/python", sys.executable)
    command = command.replace("/path/to/threadmem", str(ROOT))
    settings = json.loads(json.dumps({"hooks": local}).replace(json.dumps(LOCAL)[1:-1], command))
    (tmp_path / "home" / ".claude").mkdir(parents=True)
    (tmp_path / "home" / ".claude" / "settings.json").write_text(json.dumps(settings))
    config = tmp_path / "mcp.json"
    server_env = child_env(THREADMEM_TOKEN=token, THREADMEM_MCP_STRUCTURED_CONTENT="false")
    mcp = {"type": "stdio", "command": sys.executable, "args": [str(ROOT / "manage.py"), "mcp"], "env": server_env}
    config.write_text(json.dumps({"mcpServers": {"threadmem": mcp}}))
    env = {
        **client_env,
        "ANTHROPIC_BASE_URL": url,
        "ANTHROPIC_API_KEY": "any",
        "CLAUDE_CODE_AUTO_COMPACT_WINDOW": str(WINDOW_TOKENS),
    }
    try:
        channel = compacting_session(
            script,
            env=env,
            cwd=project,
            tools="Bash,mcp__threadmem__search_memory",
            options=("--mcp-config", str(config)),
        )
    finally:
        server.shutdown()
    assert script.ran == len(FILES)
    # The first request after the compaction carries the pointer: the channel, and the files the calls read.
    pointer = script.pointer_text()
    assert f'"{channel}"' in pointer, pointer or [m.get("content") for m in script.after_compaction["messages"]]
    assert all(name in pointer for name in FILES), pointer
    assert "ROTATION_ID" not in pointer and "ev-3b7c91d2" not in pointer  # names, never content
    # The scripted model searched as the pointer said, and what it read holds what the command printed.
    arguments = script.search_arguments
    assert arguments["channel"] == channel and arguments["query"] in FILES, arguments
    (result,) = [r for results in script.tool_results for r in results if "[search_memory]" in json.dumps(r)]
    content = result["content"]
    handed = content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
    assert FILES[arguments["query"]] in handed and len(handed) <= THREAD_SEARCH_MAX_CHARS
    # The Stop hook after the turn captured what the compaction wrote: Claude Code's summary closes generation 1.
    thread = Thread.objects.get(channel=channel, owner=alice)
    closed = Generation.objects.get(thread=thread, number=1)
    assert closed.state == Generation.State.CLOSED and SUMMARY in closed.summary_message.content
