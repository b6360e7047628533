"""The client lines of docs/mcp.md, run with the real clients from npm (clients/package.json) against a running server.

Skipped where the clients cannot be installed (no npm, or no registry). HOME
is a temporary directory, so nothing touches the real ~/.claude.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.mcp_client import ROOT, child_env, token_of

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = ROOT / "clients"
BIN = CLIENTS / "node_modules" / ".bin"
CLI_SECONDS = 120


@pytest.fixture(scope="module")
def clients() -> Path:
    """The clients' binaries, installed from clients/package.json once (pinned versions)."""
    if not (BIN / "claude").exists() or not (BIN / "mcp-inspector").exists():
        if shutil.which("npm") is None:
            pytest.skip("npm is not installed")
        try:
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund"], cwd=CLIENTS, check=True, capture_output=True, timeout=600
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            pytest.skip(f"npm could not install the clients: {err}")
    return BIN


def documented_lines() -> dict[str, str]:
    """The `claude mcp add` lines of docs/mcp.md (where the README sends its readers), by transport."""
    lines = re.findall(r"^claude mcp add .*$", (ROOT / "docs" / "mcp.md").read_text(), flags=re.MULTILINE)
    return {re.search(r"--transport (\w+)", line).group(1): line for line in lines}


def run_shell(line: str, *, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=CLI_SECONDS, check=False
    )


@pytest.fixture
def client_env(tmp_path, clients, alice) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir()
    return {
        **child_env(),
        "HOME": str(home),
        "PATH": f"{clients}{os.pathsep}{os.environ['PATH']}",
        "TOKEN": token_of(alice),
        "PWD": str(ROOT),
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }


@pytest.mark.parametrize("transport", ["http", "stdio"])
def test_every_readme_line_connects_with_claude_code(web, client_env, tmp_path, transport):
    line = documented_lines()[transport].replace("http://127.0.0.1:8000", web)
    line = line.replace('"$PWD/', f'"{ROOT}/')
    project = tmp_path / "project"
    project.mkdir()
    added = run_shell(line, env=client_env, cwd=project)
    assert added.returncode == 0, added.stderr + added.stdout
    listed = run_shell("claude mcp list", env=client_env, cwd=project)
    assert listed.returncode == 0, listed.stderr
    (entry,) = [row for row in listed.stdout.splitlines() if row.startswith("threadmem")]
    assert "Connected" in entry, listed.stdout


def test_the_inspector_lists_both_tools_and_calls_search(web, client_env, alice_thread, tmp_path):
    base = [
        str(client_env["PATH"].split(os.pathsep)[0] + "/mcp-inspector"),
        "--cli",
        f"{web}/mcp/",
        "--transport",
        "http",
        "--header",
        f"Authorization: Bearer {client_env['TOKEN']}",
    ]

    def inspect(*arguments: str) -> dict:
        done = subprocess.run(
            [*base, *arguments], env=client_env, cwd=tmp_path, capture_output=True, text=True, timeout=CLI_SECONDS
        )
        assert done.returncode == 0, done.stderr + done.stdout
        return json.loads(done.stdout)

    listed = inspect("--method", "tools/list")
    assert [tool["name"] for tool in listed["tools"]] == ["search_memory", "message_context_read"]
    called = inspect(
        "--method",
        "tools/call",
        "--tool-name",
        "search_memory",
        "--tool-arg",
        "query=nginx.conf",
        f"channel={alice_thread.channel}",
    )
    (content,) = called["content"]
    assert "field=tool_args.file_path tool=Read" in content["text"]
    assert len(content["text"]) <= 12_000
