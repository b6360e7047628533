"""The agents' own session folders on this machine, and how many of their sessions are not imported yet.

Claude Code deletes its transcripts after ``cleanupPeriodDays`` (30 by default), so the first start of a server
says what it found and how to bring it in (`make run`, `threadmem serve`; docs/imports.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from threadmem.features.imports.records import is_subagent_file, session_files
from threadmem.models import Thread

BATCH = 500  # paths a query names at once (SQLite caps a statement's parameters)
# Where each agent keeps its sessions, under the user's home.
AGENT_FOLDERS = (("Claude Code", Path(".claude") / "projects"), ("Codex CLI", Path(".codex") / "sessions"))


@dataclass(frozen=True)
class SessionsFound:
    agent: str
    folder: Path
    sessions: int
    imported: int

    @property
    def waiting(self) -> int:
        return self.sessions - self.imported


def agent_folders(home: Path | None = None) -> list[Path]:
    """The agents' session folders that exist (``threadmem import``'s default)."""
    home = home or Path.home()
    return [home / folder for _, folder in AGENT_FOLDERS if (home / folder).is_dir()]


def sessions_found(home: Path | None = None) -> list[SessionsFound]:
    """Each existing folder's sessions (subagents' files are part of their session) and how many are threads."""
    home = home or Path.home()
    found = []
    for agent, folder in AGENT_FOLDERS:
        if not (home / folder).is_dir():
            continue
        files = [str(path) for path in session_files(home / folder, fmt=None) if not is_subagent_file(path)]
        imported = sum(
            Thread.objects.filter(source_path__in=files[start : start + BATCH]).values("source_path").distinct().count()
            for start in range(0, len(files), BATCH)
        )
        found.append(SessionsFound(agent=agent, folder=home / folder, sessions=len(files), imported=imported))
    return found


def sessions_notice(found: list[SessionsFound], *, command: str) -> list[str]:
    """Lines saying what waits to be imported and the command that imports it; none when nothing waits."""
    waiting = [f for f in found if f.waiting]
    if not waiting:
        return []
    lines = ["Your agents' past sessions (Claude Code deletes its transcripts after 30 days by default):"]
    lines += [f"  {f.agent}: {f.waiting} of {f.sessions} sessions in {f.folder} not imported yet" for f in waiting]
    lines.append(f"  import them now: {command}")
    return lines
