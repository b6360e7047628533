"""The agents' session folders on this machine: how many sessions wait, the notice `make run` and `threadmem
serve` print, and the command in it imports them as written (threadmem/features/imports/found.py)."""

from __future__ import annotations

import io
import shlex
import shutil

import pytest
from django.core.management import call_command

from tests.support.sessions import data_dir
from threadmem.features.imports.found import agent_folders, sessions_found, sessions_notice

pytestmark = pytest.mark.django_db


@pytest.fixture
def home(tmp_path, monkeypatch):
    """A HOME whose Claude Code folder holds two of the shared sessions and one's subagent; no Codex folder."""
    project = tmp_path / ".claude" / "projects" / "-home-marco-projects-spotter"
    project.mkdir(parents=True)
    for name in ("short.jsonl", "tool_heavy.jsonl"):
        shutil.copy(data_dir() / name, project / name)
    (project / "short" / "subagents").mkdir(parents=True)
    shutil.copy(data_dir() / "short.jsonl", project / "short" / "subagents" / "agent-a1.jsonl")
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def demo_text() -> str:
    out = io.StringIO()
    call_command("demo", "--empty", stdout=out)
    return out.getvalue()


def test_it_counts_the_sessions_not_imported_yet_and_says_how_to_import_them(home):
    (found,) = sessions_found()
    assert (found.agent, found.sessions, found.imported) == ("Claude Code", 2, 0)
    assert agent_folders() == [home / ".claude" / "projects"]
    assert sessions_notice(sessions_found(), command="threadmem import") == [
        "Your agents' past sessions (Claude Code deletes its transcripts after 30 days by default):",
        f"  Claude Code: 2 of 2 sessions in {home / '.claude' / 'projects'} not imported yet",
        "  import them now: threadmem import",
    ]


def test_make_runs_notice_names_a_command_that_imports_them_and_then_says_nothing(home):
    text = demo_text()
    (line,) = [line for line in text.splitlines() if "import them now:" in line]
    command = shlex.split(line.split("import them now:", 1)[1])
    assert command[:3] == [".venv/bin/python", "manage.py", "import_sessions"]
    call_command(*command[2:], stdout=io.StringIO(), stderr=io.StringIO())
    (found,) = sessions_found()
    assert (found.sessions, found.imported) == (2, 2)
    assert "import them now" not in demo_text()
