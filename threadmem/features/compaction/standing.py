"""What a session worked on, for the pointer after its compaction: where a touched file stands and whether a call
wrote it.

The pointer lists the project's own files first (under the session's working directory), then other files, then
dependency sources (``node_modules/``, ``site-packages/``, the Go, Cargo and Maven caches …), then scratch files (a
background task's ``…/tasks/*.output``, a tool's output under a temporary folder, the agent's own ``~/.claude``
files): a session's summary is about its work, and a name is worth its characters when a later search needs it.
"""

from __future__ import annotations

import re
from enum import IntEnum

# Tools that write or edit the file their path argument names (Claude Code's, Codex's, common MCP file servers').
WRITE_TOOLS = frozenset(
    {
        "Write",
        "Edit",
        "MultiEdit",
        "NotebookEdit",
        "apply_patch",
        "write_file",
        "edit_file",
        "create_file",
        "str_replace_editor",
        "str_replace_based_edit_tool",
    }
)
# Codex's apply_patch names its files inside the patch, not in a path argument: only its headers count.
PATCH_TOOLS = frozenset({"apply_patch"})
PATCH_KEYS = frozenset({"input", "patch"})
PATCH_FILE_RE = re.compile(r"^\*\*\* (?:(?:Add|Update|Delete) File|Move to): (.+?)\s*$", re.MULTILINE)

# A folder of one of these names holds someone else's code: installed packages, vendored sources, build output.
DEPENDENCY_FOLDERS = frozenset(
    {
        "node_modules",
        "bower_components",
        "site-packages",
        "dist-packages",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "vendor",
        "deps",
        "_build",
        "Pods",
        ".gradle",
        ".m2",
        ".ivy2",
        ".bundle",
        ".yarn",
        ".pnpm-store",
    }
)
# Caches and system folders that hold installed sources wherever the home folder is.
DEPENDENCY_PARTS = (
    "/go/pkg/mod/",
    "/.cargo/registry/",
    "/.cargo/git/",
    "/.rustup/",
    "/.npm/",
    "/.nvm/",
    "/.pyenv/",
    "/.rbenv/",
    "/.hex/",
    "/.mix/",
    "/.cache/",
    "/nix/store/",
    "/usr/lib/",
    "/usr/local/lib/",
    "/usr/include/",
    "/usr/share/",
    "/opt/homebrew/",
)
# A background task's output file, wherever the agent keeps it; the agent's own files in the home folder.
SCRATCH_RE = re.compile(r"(?:^|/)tasks/[^/]+\.output$|^(?:~|/home/[^/]+|/Users/[^/]+|/root)/\.(?:claude|codex)/")
TEMPORARY_PREFIXES = ("/tmp/", "/var/tmp/", "/private/tmp/", "/var/folders/", "/private/var/folders/")


class Place(IntEnum):
    """Where a file is, in the order the pointer lists them."""

    PROJECT = 0
    OUTSIDE = 1
    DEPENDENCY = 2
    SCRATCH = 3


def file_place(path: str, *, cwd: str) -> Place:
    """Where ``path`` (as a call wrote it: absolute, ``~/``, or relative to ``cwd``) stands for the session."""
    root = cwd.rstrip("/")
    relative = not path.startswith(("/", "~")) and not re.match(r"[A-Za-z]:\\", path)
    inside = (relative and not path.startswith("../")) or bool(root and path.startswith(root + "/"))
    # Inside the project only the part below its root says what a file is: the project may live in ~/vendor/.
    below = path.removeprefix(root + "/") if inside and not relative else path
    if SCRATCH_RE.search(path):
        return Place.SCRATCH
    if DEPENDENCY_FOLDERS & set(below.split("/")) or any(part in f"/{below}" for part in DEPENDENCY_PARTS):
        return Place.DEPENDENCY
    if inside:
        return Place.PROJECT
    if path.startswith(TEMPORARY_PREFIXES):
        return Place.SCRATCH
    return Place.OUTSIDE


def patched_files(arguments: object) -> set[str]:
    """The files a patch tool's arguments name in its headers (``*** Update File: src/app.py``)."""
    if not isinstance(arguments, dict):
        return set()
    found = set()
    for key in PATCH_KEYS:
        value = arguments.get(key)
        if isinstance(value, str):
            found |= {m.group(1) for m in PATCH_FILE_RE.finditer(value)}
    return found
