"""The documented production configuration passes Django's deployment checks, warnings included."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_check_deploy_is_clean_under_the_documented_production_settings():
    env = {
        **os.environ,
        "SECRET_KEY": secrets.token_urlsafe(50),
        "DEBUG": "false",
        "THREADMEM_HTTPS": "true",
        "ALLOWED_HOSTS": "threadmem.example.com",
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_warns_without_them():
    env = {**os.environ, "SECRET_KEY": secrets.token_urlsafe(50), "DEBUG": "false"}
    env.pop("THREADMEM_HTTPS", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "security.W004" in done.stderr + done.stdout
