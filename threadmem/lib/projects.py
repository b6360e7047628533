"""A session's project: its working directory, resolved to the git root above it where there is one.

The capture hooks resolve it where the session runs (``plugin/scripts/threadmem-capture-hook`` carries a copy of
``project_root``: it is stdlib-only and standalone); the server resolves a directory only when it exists on the
server (a local import or capture), and otherwise keeps the working directory as it came (docs/search.md,
"Project scope").
"""

from __future__ import annotations

import os

PROJECT_MAX_CHARS = 1000  # Thread.project's length, as source_cwd's
SEPARATORS = "/\\"
# A walk up stops here: deeper than any real tree, a guard against a loop of links.
WALK_MAX_DEPTH = 64


def project_normal(path: str) -> str:
    """``path`` without the separators it ends with (the root itself, ``/`` or ``C:\\``, stays as it is)."""
    stripped = path.rstrip(SEPARATORS)
    if not stripped or (len(stripped) == 2 and stripped[1] == ":"):
        return path[: len(stripped) + 1] if path else ""
    return stripped


def project_root(cwd: str) -> str:
    """The git root at or above ``cwd`` (a directory holding ``.git``: a repository, a worktree, a submodule), else
    ``cwd``; ``cwd`` itself when it does not exist here. Never raises: an unreadable directory is not a root."""
    cwd = project_normal(cwd)
    if not cwd or not os.path.isabs(cwd) or not os.path.isdir(cwd):
        return cwd
    here = cwd
    for _ in range(WALK_MAX_DEPTH):
        try:
            if os.path.exists(os.path.join(here, ".git")):
                return project_normal(here)
        except (OSError, ValueError):
            return cwd
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return cwd


def project_below(project: str) -> tuple[str, ...]:
    """The prefixes of a project's subdirectories, one per separator: a thread there is in the project too."""
    if not project or project[-1] in SEPARATORS:  # a root: every path below it starts with it
        return (project,) if project else ()
    return tuple(project + separator for separator in SEPARATORS)
