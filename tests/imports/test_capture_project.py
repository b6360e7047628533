"""A captured or imported session's project: the git root above its working directory, resolved where the directory
exists (the hook's host for a remote capture, this server for a local one), else the directory as recorded."""

from __future__ import annotations

import importlib
import importlib.util
import json
import os
import subprocess
import sys
from importlib.machinery import SourceFileLoader
from pathlib import Path

import pytest
from django.apps import apps
from rest_framework.authtoken.models import Token

from tests.support.capture import hook_json, run_capture
from tests.support.factories import make_thread
from tests.support.sessions import data_dir
from threadmem.lib.projects import project_root
from threadmem.models import Thread

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "plugin" / "scripts" / "threadmem-capture-hook"
RECORDED_CWD = "/home/marco/projects/spotter"  # the shared sessions' cwd: no such directory here


@pytest.fixture(autouse=True)
def import_dir(settings, tmp_path):
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"


@pytest.fixture
def repository(tmp_path) -> tuple[Path, Path]:
    """A git repository (its top holds .git) and a directory deep inside it."""
    top = tmp_path / "work" / "spotter"
    (top / ".git").mkdir(parents=True)
    deep = top / "src" / "api"
    deep.mkdir(parents=True)
    return top, deep


def session_in(directory: Path, target: Path) -> tuple[Path, str]:
    """short.jsonl as if it ran in ``directory``: its records' cwd rewritten."""
    raw = (data_dir() / "short.jsonl").read_text(encoding="utf-8")
    target.write_text(raw.replace(json.dumps(RECORDED_CWD), json.dumps(str(directory))), encoding="utf-8")
    session = json.loads(raw.splitlines()[1])["sessionId"]
    return target, session


@pytest.mark.django_db
def test_a_local_capture_records_the_git_root_above_the_sessions_directory(monkeypatch, owner, repository, tmp_path):
    top, deep = repository
    transcript, session = session_in(deep, tmp_path / "s.jsonl")
    run_capture(monkeypatch, hook_json("Stop", transcript=transcript, session_id=session), "--owner", "owner")
    thread = Thread.objects.get(channel=f"claude-code:{session}")
    assert (thread.source_cwd, thread.project) == (str(deep), str(top))


@pytest.mark.django_db
def test_a_remote_capture_without_a_project_keeps_the_directory_this_server_does_not_have(owner_api):
    raw = (data_dir() / "short.jsonl").read_bytes()
    response = owner_api.post(
        "/api/v1/imports/?offset=0&name=/client/short.jsonl",
        raw,
        content_type="application/octet-stream",
        HTTP_CONTENT_DISPOSITION='attachment; filename="short.jsonl"',
    )
    assert response.status_code == 200, response.content
    (channel,) = response.json()["channels"]
    assert Thread.objects.get(channel=channel).project == RECORDED_CWD


@pytest.mark.django_db(transaction=True)
def test_the_remote_hook_sends_the_git_root_it_resolved_on_its_host(live_server, owner, repository, tmp_path):
    top, deep = repository
    # The records name a directory only the client has; the hook's cwd is where it resolves the project.
    transcript = tmp_path / "s.jsonl"
    transcript.write_bytes((data_dir() / "short.jsonl").read_bytes())
    session = json.loads(transcript.read_text().splitlines()[1])["sessionId"]
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("THREADMEM_")},
        "THREADMEM_URL": live_server.url,
        "THREADMEM_TOKEN": Token.objects.create(user=owner).key,
        "THREADMEM_CAPTURE_STATE": str(tmp_path / "state.json"),
    }
    stdin = hook_json("Stop", transcript=transcript, session_id=session, cwd=str(deep))
    done = subprocess.run([sys.executable, str(HOOK)], input=stdin, capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    thread = Thread.objects.get(channel=f"claude-code:{session}")
    assert (thread.source_cwd, thread.project) == (RECORDED_CWD, str(top))


def test_the_hooks_copy_of_the_rule_agrees_with_the_servers(repository, tmp_path):
    top, deep = repository
    loader = SourceFileLoader("threadmem_capture_hook", str(HOOK))
    hook = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
    loader.exec_module(hook)
    plain = tmp_path / "plain"
    plain.mkdir()
    for cwd in (str(deep), f"{deep}/", str(top), str(plain), "/no/such/place", ""):
        assert hook.project_root(cwd) == project_root(cwd), cwd


@pytest.mark.django_db
def test_the_migration_fills_each_threads_project_from_its_directory(owner, repository):
    top, deep = repository
    backfill = importlib.import_module("threadmem.migrations.0026_thread_project").backfill_projects
    here = make_thread(owner, "here")
    away = make_thread(owner, "away")
    make_thread(owner, "none")
    Thread.objects.filter(pk=here.pk).update(source_cwd=str(deep))
    Thread.objects.filter(pk=away.pk).update(source_cwd=RECORDED_CWD)
    backfill(apps, None)
    assert dict(Thread.objects.values_list("channel", "project")) == {
        "here": str(top),
        "away": RECORDED_CWD,
        "none": "",
    }
