"""The Claude Code plugin (plugin/, .claude-plugin/marketplace.json) set up with the real CLI's own commands, as
the README says, against the installed `threadmem serve`; then a headless session, driven by a scripted
Anthropic-compatible server into Claude Code's own compaction: its turns are captured, the plugin's tool answers
within the cap, and the pointer after the compaction reaches the model."""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request

import pytest

from tests.dist.conftest import Served
from tests.mcp.test_real_clients import clients  # noqa: F401  (fixture)
from tests.support.fake_anthropic import PLUGIN_SEARCH_TOOL, CompactionScript, compacting_session, serve
from tests.support.mcp_client import ROOT
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS

pytestmark = pytest.mark.dist

WINDOW_TOKENS, COMPACT_AT_TOKENS = 20_000, 190_000
FILES = {
    "notes/rotation.env": "ROTATION_ID=ev-5d1e07aa",
    "notes/release.txt": "artifact /srv/releases/ledger/v4.3.1/bundle.tgz on ledger-07.eu-west.internal",
}
SUMMARY = "1. Primary request: the user asked to read the deployment notes. 2. They were read; nothing is pending."


def readme_set_up() -> list[str]:
    """The README's `claude plugin` lines, run as written in the clone."""
    return re.findall(r"^claude plugin .*$", (ROOT / "README.md").read_text(), flags=re.MULTILINE)


def api(served: Served, path: str) -> dict:
    request = urllib.request.Request(f"{served.url}{path}", headers={"Authorization": f"Token {served.token}"})
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())


def test_the_plugin_set_up_by_claudes_commands_captures_answers_and_points_after_a_compaction(
    served,
    clients,  # noqa: F811
    tmp_path,
):
    home, project = tmp_path / "home", tmp_path / "project"
    home.mkdir()
    for name, text in FILES.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text + "\n")
    env = served.env(THREADMEM_URL=served.url, THREADMEM_TOKEN=served.token)
    env.update(
        HOME=str(home),
        PATH=f"{clients}:{env['PATH']}",
        DISABLE_AUTOUPDATER="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    lines = readme_set_up()
    assert [line.split()[2] for line in lines] == ["validate", "marketplace", "install"]
    for line in lines:
        done = subprocess.run(["bash", "-c", line], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{line}:\n{done.stdout}{done.stderr}"

    script = CompactionScript(
        [f"grep -H . {name}" for name in FILES],
        summary=SUMMARY,
        compact_at_tokens=COMPACT_AT_TOKENS,
        tool=PLUGIN_SEARCH_TOOL,
    )
    model, url = serve(script)
    env.update(ANTHROPIC_BASE_URL=url, ANTHROPIC_API_KEY="any", CLAUDE_CODE_AUTO_COMPACT_WINDOW=str(WINDOW_TOKENS))
    try:
        channel = compacting_session(script, env=env, cwd=project, tools=f"Bash,{PLUGIN_SEARCH_TOOL}")
    finally:
        model.shutdown()
    assert script.ran == len(FILES)

    # SessionStart(compact): the plugin's hook handed the model the pointer, names and never content.
    pointer = script.pointer_text()
    assert f'"{channel}"' in pointer, pointer or [m.get("content") for m in script.after_compaction["messages"]]
    assert all(name in pointer for name in FILES), pointer
    assert "ev-5d1e07aa" not in pointer
    # The plugin's MCP server (`threadmem mcp`, bridged to the server) answered the search the pointer named.
    (result,) = [r for results in script.tool_results for r in results if "[search_memory]" in json.dumps(r)]
    content = result["content"]
    handed = content if isinstance(content, str) else "".join(block.get("text", "") for block in content)
    assert FILES[script.search_arguments["query"]] in handed and len(handed) <= THREAD_SEARCH_MAX_CHARS
    # Stop, PreCompact and SessionEnd captured the session: its turns and the compaction's summary are stored.
    messages = api(served, f"/api/v1/threads/{channel}/messages/?page_size=500")["results"]
    contents = "\n".join(m["content"] or "" for m in messages)
    assert all(text in contents for text in FILES.values())
    assert any(SUMMARY in (m["content"] or "") and m["kind"] == "summary" for m in messages)
