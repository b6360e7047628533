"""A PostgreSQL server of a test's own on this machine (a scratch cluster, a streaming replica): the server's
binaries refuse to run as root, so they run as the postgres user, in a folder that user owns."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path


def as_postgres(command: list[str]) -> list[str]:
    """``command`` as the postgres user where this runs as root (initdb, pg_ctl and pg_basebackup refuse root)."""
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


def scratch_folder(prefix: str) -> Path:
    """A new temporary folder the postgres user may write in (the server's data directory goes inside)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    root.chmod(0o755)
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
    return root
