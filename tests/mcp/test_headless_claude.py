"""A headless Claude Code run (npm, clients/package.json) against a scripted Anthropic-compatible server:
what Claude Code hands the model from search_memory stays within the 12,000-character cap and holds the hit."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.mcp.test_real_clients import client_env, clients  # noqa: F401  (fixtures)
from tests.support.factories import append
from tests.support.fake_anthropic import Script, serve
from tests.support.mcp_client import ROOT, child_env, token_of
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("structured", ["false", "true"])
def test_claude_code_hands_the_model_at_most_the_cap(
    alice,
    alice_thread,
    clients,  # noqa: F811
    client_env,  # noqa: F811
    tmp_path,
    structured,
):
    """Off (the default) the model reads the text; on, Claude Code hands it structuredContent, every window twice."""
    append(
        alice_thread,
        *({"role": "tool", "content": f"{'q' * 700} wide-hit-{i:02d} {'r' * 700}"} for i in range(40)),
    )
    script = Script({"query": "wide-hit", "channel": alice_thread.channel})
    server, url = serve(script)
    config = tmp_path / "mcp.json"
    env = child_env(THREADMEM_TOKEN=token_of(alice), THREADMEM_MCP_STRUCTURED_CONTENT=structured)
    config.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "threadmem": {
                        "type": "stdio",
                        "command": sys.executable,
                        "args": [str(ROOT / "manage.py"), "mcp"],
                        "env": env,
                    }
                }
            }
        )
    )
    try:
        done = subprocess.run(
            [
                "claude",
                "-p",
                "Search memory for wide-hit.",
                "--mcp-config",
                str(config),
                "--allowedTools",
                "mcp__threadmem__search_memory",
                "--output-format",
                "json",
            ],
            env={**client_env, "ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": "any"},
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=240,
            check=False,
        )
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr + done.stdout
    searched = [
        result
        for results in script.tool_results
        for result in results
        if "wide-hit" in json.dumps(result.get("content")) and "[search_memory]" in json.dumps(result.get("content"))
    ]
    assert searched, [json.dumps(r)[:300] for r in script.tool_results]
    content = searched[0]["content"]
    handed = content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
    assert "wide-hit-39" in handed and "more hits not shown" in handed
    if structured == "false":
        assert len(handed) <= THREAD_SEARCH_MAX_CHARS
    else:  # why it is off by default (docs/mcp.md)
        assert len(handed) > THREAD_SEARCH_MAX_CHARS
