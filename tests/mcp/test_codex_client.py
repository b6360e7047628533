"""The Codex CLI (npm, clients/package.json) as an MCP client and with capture hooks, as docs/mcp.md and
docs/imports.md write them: ``codex mcp add`` lines run as written, ``codex exec`` calling search_memory for a
scripted model (tests/support/fake_responses.py), and the pointer its SessionStart hook prints after Codex's own
compaction. HOME and CODEX_HOME are temporary directories; skipped where the CLI cannot be installed."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.imports.test_hooks_block import LOCAL
from tests.support.codex_cli import Unavailable, installed_codex
from tests.support.factories import append
from tests.support.fake_responses import MemoryScript, serve
from tests.support.mcp_client import ROOT, child_env, token_of
from threadmem.features.search.answer_caps import THREAD_SEARCH_MAX_CHARS
from threadmem.models import Generation, Thread

pytestmark = pytest.mark.django_db(transaction=True)

CLI_SECONDS = 300
COMPACT_AT_TOKENS = 100_000
FILES = {
    "notes/rotation.env": "ROTATION_ID=ev-3b7c91d2",
    "notes/release.txt": "artifact /srv/releases/ledger/v4.2.9/bundle.tgz on ledger-04.eu-west.internal",
}


@pytest.fixture(scope="module")
def codex() -> Path:
    try:
        return installed_codex()
    except Unavailable as err:
        pytest.skip(str(err))


@pytest.fixture
def codex_env(tmp_path, codex, alice) -> dict[str, str]:
    """A temporary HOME and CODEX_HOME, the token in TOKEN, the checkout as PWD (the documented lines use $PWD)."""
    home, codex_home = tmp_path / "home", tmp_path / "home" / ".codex"
    codex_home.mkdir(parents=True)
    return {
        **child_env(THREADMEM_MCP_STRUCTURED_CONTENT="false"),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "PATH": f"{codex.parent}{os.pathsep}{os.environ['PATH']}",
        "TOKEN": token_of(alice),
        "PWD": str(ROOT),
    }


def documented(pattern: str, page: str, flags: int = re.MULTILINE) -> list[str]:
    return re.findall(pattern, (ROOT / "docs" / page).read_text(), flags=flags)


def shell(line: str, *, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["bash", "-c", line], env=env, cwd=cwd, capture_output=True, text=True, timeout=CLI_SECONDS, check=False
    )


def configured(env: dict[str, str], *, transport: str = "stdio", web: str = "", hooks: bool = False) -> None:
    """config.toml as the docs say: the grace line at the top, the `codex mcp add` line, the hooks block."""
    (line,) = [
        line for line in documented(r"^codex mcp add .*$", "mcp.md") if ("--url" in line) == (transport == "http")
    ]
    added = shell(line.replace("http://127.0.0.1:8000", web), env=env, cwd=ROOT)
    assert added.returncode == 0, added.stderr + added.stdout
    config = Path(env["CODEX_HOME"]) / "config.toml"
    (grace,) = documented(r"^(mcp_optional_startup_grace_ms = \d+)$", "mcp.md")
    text = f"{grace}\n{config.read_text()}"
    if transport == "stdio":
        # Codex starts the server with only the environment the line names; a user's checkout holds the key in
        # .secret_key (`make run` writes it), a test's checkout may not (a fresh clone in CI): name the test's.
        table = "[mcp_servers.threadmem.env]\n"
        assert table in text, text
        text = text.replace(table, f"{table}SECRET_KEY = {json.dumps(os.environ['SECRET_KEY'])}\n")
    if hooks:
        (block,) = documented(r"```toml\n(\[\[hooks\.SessionStart\]\].*?)\n```", "imports.md", re.DOTALL)
        command = LOCAL.replace("<your token>", env["TOKEN"]).replace(
            "/path/to/threadmem/.venv/bin/python", sys.executable
        )
        text += "\n" + block.replace(LOCAL, command.replace("/path/to/threadmem", str(ROOT))) + "\n"
    config.write_text(text)


def with_model(env: dict[str, str], url: str) -> None:
    """The scripted model as Codex's provider, in the top-level keys (before the first table)."""
    config = Path(env["CODEX_HOME"]) / "config.toml"
    provider = (
        f'model = "scripted"\nmodel_provider = "scripted"\nmodel_auto_compact_token_limit = {COMPACT_AT_TOKENS}\n'
        f'model_providers.scripted = {{ name = "scripted", base_url = "{url}", env_key = "SCRIPTED_API_KEY", '
        'wire_api = "responses" }\n'
    )
    config.write_text(provider + config.read_text())
    tomllib.loads(config.read_text())


def codex_exec(env: dict[str, str], cwd: Path, prompt: str, *flags: str) -> subprocess.CompletedProcess:
    command = ["codex", "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", *flags, prompt]
    return subprocess.run(
        command,
        cwd=cwd,
        env={**env, "SCRIPTED_API_KEY": "scripted"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=CLI_SECONDS,
        check=False,
    )


@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_each_documented_codex_line_adds_threadmem(web, codex_env, transport):
    configured(codex_env, transport=transport, web=web)
    listed = shell("codex mcp list", env=codex_env, cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    (row,) = [row for row in listed.stdout.splitlines() if row.startswith("threadmem")]
    assert "enabled" in row and (web in row if transport == "http" else "manage.py mcp" in row), listed.stdout


def test_codex_exec_calls_search_memory_and_the_model_reads_at_most_the_cap(alice_thread, codex_env, tmp_path):
    append(
        alice_thread,
        *({"role": "tool", "content": f"{'q' * 700} wide-hit-{i:02d} {'r' * 700}"} for i in range(40)),
    )
    configured(codex_env)
    script = MemoryScript(
        [], search_arguments={"query": "wide-hit", "channel": alice_thread.channel}, summary="", tokens={}
    )
    server, url = serve(script)
    with_model(codex_env, url)
    try:
        done = codex_exec(codex_env, tmp_path, "Search memory for wide-hit.")
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    tools = {tool.get("name"): tool for tool in script.requests[0]["tools"]}
    assert "mcp__threadmem" in tools, done.stderr[-3000:]
    assert {t["name"] for t in tools["mcp__threadmem"]["tools"]} == {"search_memory", "message_context_read"}
    (answer,) = [text for text in script.output_texts() if text.startswith("[search_memory]")]
    assert "wide-hit-39" in answer and "more hits not shown" in answer
    assert len(answer) <= THREAD_SEARCH_MAX_CHARS


def test_after_codexs_own_compaction_its_session_start_hook_points_at_what_it_touched(alice, codex_env, tmp_path):
    work = tmp_path / "work"
    for name, text in FILES.items():
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        (work / name).write_text(text + "\n")
    configured(codex_env, hooks=True)
    # grep -H prints each line with its path; Codex compacts after the last command (its usage above the limit).
    commands = [f"grep -H . {name}" for name in FILES]
    script = MemoryScript(
        commands,
        summary="Read the notes; nothing is pending.",
        tokens={len(commands): COMPACT_AT_TOKENS * 2},
    )
    server, url = serve(script)
    with_model(codex_env, url)
    try:
        done = codex_exec(codex_env, work, "Read the notes, a command a file.", "--dangerously-bypass-hook-trust")
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-3000:]
    assert script.compactions == 1, done.stderr[-3000:]
    (thread,) = Thread.objects.filter(owner=alice, channel__startswith="codex:")
    assert f'"{thread.channel}"' in script.pointer and all(name in script.pointer for name in FILES), script.pointer
    assert "Not in your compaction summary:" in script.pointer  # Codex's summary was in the rollout already
    assert "ROTATION_ID" not in script.pointer
    assert script.search_arguments["channel"] == thread.channel and script.search_arguments["query"] in FILES
    answers = [text for text in script.output_texts() if text.startswith("[search_memory]")]
    assert len(answers) == 1, (script.output_texts(), done.stderr[-3000:])
    (answer,) = answers
    assert FILES[script.search_arguments["query"]] in answer
    assert Generation.objects.get(thread=thread, number=1).state == Generation.State.CLOSED
