"""The `threadmem` command as a user gets it: the wheel built from the checkout once a session, installed into a
fresh virtualenv outside it (pip's defaults, its cache included), and its server started once from a temporary
folder with a temporary HOME.

Nothing here reaches the suite's database: the installed server keeps its own SQLite file in its data directory
(XDG_DATA_HOME), as it does for a user. Skipped, saying why, where pip can reach neither PyPI nor its cache.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.mcp_client import ROOT, free_port, stop_process
from tests.support.session_files import DATA

SERVE_SECONDS = 60  # issue 54's target from `threadmem serve` to /healthz answering 200
INSTALL_SECONDS = 900
# What pip says when neither PyPI nor its cache has a requirement: a machine offline, not a defect of the wheel.
UNREACHABLE = ("NewConnectionError", "Temporary failure in name resolution", "No matching distribution found")
# Variables of the suite's own server and database that a user's shell does not have.
SUITE_ONLY = ("THREADMEM_", "DJANGO_", "CELERY_", "OPENAI_", "DATABASE_", "SECRET_KEY", "CACHE_URL", "VIRTUAL_ENV")


@dataclass
class Served:
    url: str
    token: str
    log: Path
    seconds: float  # from the start of `threadmem serve` to the first 200 of /healthz
    home: Path
    data: Path
    bin: Path

    def env(self, **extra: str) -> dict[str, str]:
        return user_env(self.home, self.data, self.bin, **extra)


def user_env(home: Path, data: Path, bin_dir: Path, **extra: str) -> dict[str, str]:
    """A user's shell: the installed command on PATH, their HOME and data directory, none of the suite's settings."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(SUITE_ONLY)}
    env.update(HOME=str(home), XDG_DATA_HOME=str(data), PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", **extra)
    return env


@pytest.fixture(scope="session")
def installed(tmp_path_factory) -> Path:
    """The virtualenv's bin folder, with the wheel of what the checkout holds (committed or not) installed."""
    source = tmp_path_factory.mktemp("checkout")
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    wheels = tmp_path_factory.mktemp("wheel")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--quiet"]
    subprocess.run([*pip, "wheel", "--no-deps", "--wheel-dir", str(wheels), str(source)], check=True, timeout=300)
    (wheel,) = wheels.glob("threadmem-*.whl")
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = subprocess.run(
        [str(venv / "bin" / "python"), *pip[1:], "install", str(wheel)],
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,
        check=False,
    )
    if done.returncode != 0 and any(sign in done.stderr for sign in UNREACHABLE):
        pytest.skip(f"pip could not reach PyPI for the wheel's requirements: {done.stderr[-2000:]}")
    assert done.returncode == 0, done.stderr[-4000:]
    return venv / "bin"


@pytest.fixture(scope="session")
def sessions_home(tmp_path_factory) -> Path:
    """A HOME whose ~/.claude/projects holds a copy of the shared sessions (never the originals: tests write)."""
    if not (DATA / "NOTICE.md").exists():
        pytest.skip(f"the shared Claude Code sessions are not at {DATA}")
    home = tmp_path_factory.mktemp("home")
    shutil.copytree(DATA, home / ".claude" / "projects" / "-home-marco-projects-spotter", ignore=_notice)
    return home


def _notice(folder: str, names: list[str]) -> list[str]:
    return [name for name in names if name == "NOTICE.md"]


@pytest.fixture(scope="session")
def served(installed, sessions_home, tmp_path_factory) -> Iterator[Served]:
    """`threadmem serve` on a free port, from an empty folder; yields it once /healthz answers 200."""
    data, cwd = tmp_path_factory.mktemp("data"), tmp_path_factory.mktemp("cwd")
    port = free_port()
    log = cwd / "serve.log"
    started = time.monotonic()
    with open(log, "w") as out:
        process = subprocess.Popen(
            [str(installed / "threadmem"), "serve", "--port", str(port)],
            cwd=cwd,
            env=user_env(sessions_home, data, installed, PYTHONUNBUFFERED="1"),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        seconds = _until_healthy(f"{url}/healthz", process, log, started)
        token = re.search(r"API token:\s+(\w+)", log.read_text()).group(1)
        yield Served(url, token, log, seconds, sessions_home, data, installed)
    finally:
        stop_process(process, seconds=15)


def _until_healthy(url: str, process: subprocess.Popen, log: Path, started: float) -> float:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                if answer.status == 200:
                    return time.monotonic() - started
        except OSError:
            pass
        if process.poll() is not None or time.monotonic() - started > 4 * SERVE_SECONDS:
            raise RuntimeError(f"threadmem serve did not answer /healthz:\n{log.read_text()}")
        time.sleep(0.2)


def run(
    served: Served, *args: str, stdin: str = "", cwd: Path | None = None, **env: str
) -> subprocess.CompletedProcess:
    """The installed `threadmem` with ``args``, as the user runs it from ``cwd``."""
    return subprocess.run(
        [str(served.bin / "threadmem"), *args],
        input=stdin,
        cwd=cwd or served.home,
        env=served.env(**env),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
