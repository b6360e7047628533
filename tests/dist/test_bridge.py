"""`threadmem mcp`'s bridge: which project it names, and when it adds it to a call (cli/bridge.py)."""

from __future__ import annotations

import subprocess

import mcp_types as types

from cli.bridge import project_of, with_project


def tool(name: str, *properties: str) -> types.Tool:
    schema = {"type": "object", "properties": {key: {"type": "string"} for key in ("query", *properties)}}
    return types.Tool(name=name, input_schema=schema)


def test_it_adds_the_project_to_a_search_only_when_the_tool_declares_it_and_the_call_names_none():
    declared, undeclared = tool("search_memory", "project"), tool("search_memory")
    assert with_project(declared, {"query": "x"}, "/src/app") == {"query": "x", "project": "/src/app"}
    assert with_project(declared, {"query": "x", "project": "/src/other"}, "/src/app")["project"] == "/src/other"
    assert with_project(undeclared, {"query": "x"}, "/src/app") == {"query": "x"}
    assert with_project(tool("message_context_read", "project"), {"messageId": 1}, "/src/app") == {"messageId": 1}
    assert with_project(None, None, "/src/app") == {}


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
