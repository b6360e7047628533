"""A real Codex CLI session (npm, clients/package.json) run against tests/support/fake_responses.py: its rollout file.

The workspace holds service files full of identifiers (uuids, commits, hosts,
addresses, paths, request ids); the scripted model reads them one command at a
time (``cat``, ``grep``, ``head``, …) through Codex's own shell tool, and Codex compacts its context after
the commands named by ``compact_after`` (the script reports a token usage
above ``model_auto_compact_token_limit`` there). HOME and CODEX_HOME are
temporary directories: nothing touches the real ~/.codex.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import uuid
from dataclasses import dataclass
from pathlib import Path

from tests.support.fake_responses import Script, serve

ROOT = Path(__file__).resolve().parents[2]
CLIENTS = ROOT / "clients"
CODEX = CLIENTS / "node_modules" / ".bin" / "codex"
COMPACT_AT_TOKENS = 100_000
SUMMARY = "Read the deployment files of the first services; they were consistent, nothing is left to check there."
PROMPT = "Read the deploy.env and the app.log of each service under services/, a command a file, then report."
# The commands the model reads the files with, in turn: several tools' output shapes.
READERS = ["cat {}", "grep -n = {}", "head -n 20 {}", "sed -n 1,20p {}", "tail -n 20 {}", "nl -ba {}"]
LOG_LINES = 12
RUN_SECONDS = 300


class Unavailable(Exception):
    """The Codex CLI cannot be installed or run here (no npm, no registry, no binary for this platform)."""


@dataclass
class Session:
    rollout: Path
    version: str  # as `codex --version` prints it: "codex-cli 0.171.0"
    script: Script | None  # None for a rollout read back from a file
    files: list[tuple[str, list[str]]]  # (the file's path in the workspace, the identifiers it holds), in command order


def installed_codex() -> Path:
    """The Codex binary, installed from clients/package.json once (a pinned version)."""
    if not CODEX.exists():
        if shutil.which("npm") is None:
            raise Unavailable("npm is not installed")
        try:
            subprocess.run(
                ["npm", "install", "--no-audit", "--no-fund"], cwd=CLIENTS, check=True, capture_output=True, timeout=600
            )
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
            raise Unavailable(f"npm could not install the clients: {err}") from err
    try:
        subprocess.run([str(CODEX), "--version"], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as err:
        raise Unavailable(f"the Codex binary does not run here: {err}") from err
    return CODEX


def write_workspace(folder: Path, services: int, seed: int) -> list[tuple[str, list[str]]]:
    """Per service a deploy.env and an app.log, each file with identifiers no other holds (deterministic for a
    seed); the files in the order the model reads them."""
    rng = random.Random(seed)
    files = []
    for n in range(services):
        name = f"{rng.choice(['billing', 'ledger', 'search', 'auth', 'ingest', 'notify'])}-{n:02d}"
        settings = {
            "SERVICE_ID": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
            "COMMIT": f"{rng.getrandbits(48):012x}",
            "HOST": f"{name}.{rng.choice(['eu-west', 'us-east', 'ap-south'])}.internal",
            "ADDRESS": "10.{}.{}.{}:{}".format(*(rng.randrange(1, 255) for _ in range(3)), rng.randrange(1024, 65535)),
            "ARTIFACT": "/srv/releases/{}/v{}.{}.{}/bundle.tgz".format(name, *(rng.randrange(1, 40) for _ in range(3))),
        }
        log, held = [], []
        for second in range(LOG_LINES):
            request, trace = f"{rng.getrandbits(64):016x}", str(uuid.UUID(int=rng.getrandbits(128), version=4))
            status = rng.choice([200, 200, 200, 201, 404, 500])
            log.append(f"2026-12-01T10:00:{second:02d}Z {name} req={request} trace={trace} status={status}")
            held += [request, trace]
        for relative, text, identifiers in (
            (
                f"services/{name}/deploy.env",
                "".join(f"{k}={v}\n" for k, v in settings.items()),
                list(settings.values()),
            ),
            (f"services/{name}/app.log", "\n".join(log) + "\n", held),
        ):
            (folder / relative).parent.mkdir(parents=True, exist_ok=True)
            (folder / relative).write_text(text)
            files.append((relative, identifiers))
    return files


def run_session(folder: Path, *, services: int, compact_after: set[int], seed: int = 33) -> Session:
    """Codex reads the files of ``services`` services (one command each, two per service) and compacts after the
    commands numbered in ``compact_after`` (1-based); the rollout Codex wrote."""
    codex = installed_codex()
    home, codex_home, work = folder / "home", folder / "codex-home", folder / "work"
    for path in (home, codex_home, work):
        path.mkdir(parents=True)
    files = write_workspace(work, services, seed)
    script = Script(
        [READERS[n % len(READERS)].format(relative) for n, (relative, _) in enumerate(files)],
        summary=SUMMARY,
        tokens={n: COMPACT_AT_TOKENS * 2 for n in compact_after},
    )
    server, url = serve(script)
    (codex_home / "config.toml").write_text(
        'model = "scripted"\nmodel_provider = "scripted"\n'
        f"model_auto_compact_token_limit = {COMPACT_AT_TOKENS}\n\n"
        f'[model_providers.scripted]\nname = "scripted"\nbase_url = "{url}"\n'
        'env_key = "SCRIPTED_API_KEY"\nwire_api = "responses"\n'
    )
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "CODEX_HOME": str(codex_home)}
    # The sandbox needs kernel features a container may lack; the commands only read the temporary workspace.
    command = [str(codex), "exec", "--skip-git-repo-check", "--sandbox", "danger-full-access", PROMPT]
    try:
        done = subprocess.run(
            command,
            cwd=work,
            env={**env, "SCRIPTED_API_KEY": "scripted"},
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
            check=False,
        )
    finally:
        server.shutdown()
    if done.returncode != 0:
        raise RuntimeError(f"codex exec failed ({done.returncode}): {done.stderr[-2000:]}{done.stdout[-2000:]}")
    (rollout,) = sorted((codex_home / "sessions").glob("*/*/*/rollout-*.jsonl"))
    version = subprocess.run([str(codex), "--version"], capture_output=True, text=True, check=True).stdout.strip()
    return Session(rollout=rollout, version=version, script=script, files=files)
