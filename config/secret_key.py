"""Where SECRET_KEY comes from: the environment, else a checkout's .secret_key, else one an installed copy makes."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from config.env import env_str


def secret_key(*, path: Path, debug: bool, checkout: bool, testing: bool) -> str:
    """SECRET_KEY, else the key in ``path`` (kept out of git), else refuse, or create it for an installed copy.

    Importing a checkout's settings never writes a file. Under DEBUG or tests a missing
    key is a random one for this process only (sessions end with it).
    """
    key = env_str("SECRET_KEY")
    if key:
        return key
    if not checkout and not testing:
        return _created_key(path)
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if key:
        return key
    if debug or testing:
        return secrets.token_urlsafe(50)
    raise ImproperlyConfigured(
        f"SECRET_KEY is not set and {path} does not exist: set SECRET_KEY (production), "
        "or run `make run` once, which creates .secret_key for this checkout"
    )


def _created_key(path: Path) -> str:
    """The installed copy's key, written once (0600) by whichever of its processes comes first."""
    if not path.exists():
        # The folder holds the whole memory (the database): its owner's alone.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        draft = path.with_name(f"{path.name}.{os.getpid()}")
        with os.fdopen(os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as handle:
            handle.write(secrets.token_urlsafe(50) + "\n")
        try:
            os.link(draft, path)  # fails if another process linked its key first: theirs is the key
        except FileExistsError:
            pass
        finally:
            draft.unlink()
    return path.read_text().strip()
