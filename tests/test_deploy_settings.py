"""The documented production configuration passes Django's deployment checks, warnings included."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def check_deploy(**env: str) -> subprocess.CompletedProcess[str]:
    """``manage.py check --deploy`` failing on warnings, with a strong SECRET_KEY, DEBUG off and ``env``."""
    environment = {k: v for k, v in os.environ.items() if k != "THREADMEM_HTTPS"}
    environment.update(SECRET_KEY=secrets.token_urlsafe(50), DEBUG="false", **env)
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_check_deploy_is_clean_under_the_documented_production_settings():
    done = check_deploy(THREADMEM_HTTPS="true", ALLOWED_HOSTS="threadmem.example.com")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_warns_without_them():
    done = check_deploy()
    assert done.returncode != 0
    assert "security.W004" in done.stderr + done.stdout
