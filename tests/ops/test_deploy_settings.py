"""The documented production configuration passes Django's deployment checks, warnings included."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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


def test_importing_settings_writes_no_key_file_and_refuses_without_a_key(monkeypatch, tmp_path):
    from django.core.exceptions import ImproperlyConfigured

    from config.secret_key import secret_key

    key_file = tmp_path / ".secret_key"
    monkeypatch.delenv("SECRET_KEY", raising=False)
    with pytest.raises(ImproperlyConfigured, match="make run"):
        secret_key(path=key_file, debug=False, checkout=True, testing=False)
    assert secret_key(path=key_file, debug=True, checkout=True, testing=False)  # DEBUG: a key for this process only
    assert not key_file.exists()
    key_file.write_text("from-the-file\n")
    assert secret_key(path=key_file, debug=False, checkout=True, testing=False) == "from-the-file"
    monkeypatch.setenv("SECRET_KEY", "from-the-environment")
    assert secret_key(path=key_file, debug=False, checkout=True, testing=False) == "from-the-environment"


def trusted_origins(**env: str) -> str:
    environment = {k: v for k, v in os.environ.items() if k != "THREADMEM_PUBLIC_URL"} | env
    done = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from django.conf import settings; print(settings.CSRF_TRUSTED_ORIGINS)",
        ],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]  # after the shell's own line on its automatic imports


def test_the_public_url_is_the_origin_csrf_trusts():
    assert trusted_origins(THREADMEM_PUBLIC_URL="https://memory.example.com/") == "['https://memory.example.com']"
    assert trusted_origins() == "[]"


def settings_with(embeddings: str, code: str = "") -> subprocess.CompletedProcess[str]:
    """Django set up in a new process with ``THREADMEM_STATIC_EMBEDDINGS=embeddings``, then ``code``."""
    environment = {**os.environ, "THREADMEM_STATIC_EMBEDDINGS": embeddings, "DJANGO_SETTINGS_MODULE": "config.settings"}
    return subprocess.run(
        [sys.executable, "-c", f"import django; django.setup(); {code}"],
        cwd=ROOT,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    ("value", "sentence", "static"),
    [
        ("", True, True),
        ("sentence", True, True),
        ("minilm", True, True),
        ("static", False, True),
        ("true", False, True),
        ("false", False, False),
    ],
)
def test_the_in_process_model_is_named_by_one_setting(value, sentence, static):
    done = settings_with(
        value,
        "from django.conf import settings as s; print(s.THREADMEM_SENTENCE_EMBEDDINGS, s.THREADMEM_STATIC_EMBEDDINGS)",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [str(sentence), str(static)]


def test_a_misspelt_in_process_model_is_refused_by_name():
    done = settings_with("sentense")
    assert done.returncode != 0
    assert "THREADMEM_STATIC_EMBEDDINGS must be sentence (the default), static or false, got 'sentense'" in done.stderr
