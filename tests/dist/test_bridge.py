"""`threadmem mcp`'s bridge: which project it names, and when it adds it to a call (cli/bridge.py)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from cli.bridge import as_listed, project_of, with_project
from tests.support.mcp_client import ROOT, free_port


def tool(name: str, *properties: str) -> types.Tool:
    schema = {"type": "object", "properties": {key: {"type": "string"} for key in ("query", *properties)}}
    return types.Tool(name=name, input_schema=schema)


def test_dot_stands_for_this_project_in_a_search_whose_tool_declares_it_and_nothing_is_added():
    declared, undeclared = tool("search_memory", "project"), tool("search_memory")
    assert with_project(declared, {"query": "x", "project": "."}, "/src/app") == {"query": "x", "project": "/src/app"}
    assert with_project(declared, {"query": "x"}, "/src/app") == {"query": "x"}
    assert with_project(declared, {"query": "x", "project": "/src/other"}, "/src/app")["project"] == "/src/other"
    assert with_project(undeclared, {"query": "x", "project": "."}, "/src/app") == {"query": "x", "project": "."}
    assert with_project(tool("message_context_read", "project"), {"messageId": 1}, "/src/app") == {"messageId": 1}
    assert with_project(None, None, "/src/app") == {}


def test_the_listed_search_says_what_dot_stands_for():
    listed = as_listed(tool("search_memory", "project"), "/src/app")
    assert listed.input_schema["properties"]["project"]["description"].endswith(
        'Pass "." for the project this session works in (/src/app).'
    )
    other = tool("message_context_read")
    assert as_listed(other, "/src/app") is other


def test_the_project_is_the_git_root_of_the_working_directory_or_the_directory(tmp_path):
    repository, plain = tmp_path / "repo", tmp_path / "plain" / "dir"
    (repository / "src" / "deep").mkdir(parents=True)
    plain.mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    assert project_of(repository / "src" / "deep") == str(repository.resolve())
    assert project_of(plain) == str(plain.resolve())
    worktree = tmp_path / "worktree"
    (worktree / "lib").mkdir(parents=True)
    (worktree / ".git").write_text(f"gitdir: {repository}/.git/worktrees/w\n")  # a worktree's .git is a file
    assert project_of(worktree / "lib") == str(worktree.resolve())


def test_the_bridge_forwards_with_the_token_and_names_this_project_for_dot(tmp_path):
    """A real server whose search_memory takes ``project`` (tests/support/project_server.py), the bridge as a
    process started in a subfolder of a git repository, the SDK's stdio client."""
    repository = tmp_path / "repo"
    (repository / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repository)], check=True)
    port = free_port()
    echo = subprocess.Popen([sys.executable, "-m", "tests.support.project_server", str(port)], cwd=ROOT)
    try:
        _until_listening(port)
        env = {**os.environ, "PYTHONPATH": str(ROOT), "THREADMEM_TOKEN": "tok-1"}
        env["THREADMEM_URL"] = f"http://127.0.0.1:{port}"
        bridge = StdioServerParameters(
            command=sys.executable, args=["-m", "cli.main", "mcp"], env=env, cwd=str(repository / "src")
        )

        async def main():
            with anyio.fail_after(60):
                async with Client(bridge) as client:
                    tools = (await client.list_tools()).tools
                    plain = await client.call_tool("search_memory", {"query": "x"})
                    here = await client.call_tool("search_memory", {"query": "x", "project": "."})
                    named = await client.call_tool("search_memory", {"query": "x", "project": "/elsewhere"})
                    return tools, *(json.loads(answer.content[0].text) for answer in (plain, here, named))

        tools, plain, here, named = anyio.run(main)
    finally:
        echo.terminate()
        echo.wait(timeout=10)
    assert [tool.name for tool in tools] == ["search_memory"]
    assert plain == {"arguments": {"query": "x"}, "authorization": "Bearer tok-1"}
    assert here["arguments"] == {"query": "x", "project": str(repository.resolve())}
    assert named["arguments"] == {"query": "x", "project": "/elsewhere"}


def _until_listening(port: int) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.1)
    raise RuntimeError("the echo server did not start")
