"""The pointer at session start for a server on another host: ``GET /api/v1/imports/catalogue/`` and the hook script."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from rest_framework.authtoken.models import Token

from tests.imports.test_remote_capture import CLIENT_DIR, run_hook, send
from tests.support.capture import hook_json, run_capture
from tests.support.factories import make_thread
from tests.support.sessions import data_dir
from threadmem.features.imports.catalogue import SESSION_CATALOGUE_MAX_CHARS
from threadmem.models import Message, Thread


@pytest.fixture(autouse=True)
def import_dir(settings, tmp_path):
    settings.THREADMEM_IMPORT_DIR = tmp_path / "imports"


def captured_remotely(client) -> dict[str, Thread]:
    """The two short shared sessions, sent as the remote hook sends them (the client's paths as names)."""
    threads = {}
    for name in ("short", "tool_heavy"):
        response = send(client, f"{CLIENT_DIR}/{name}.jsonl", 0, (data_dir() / f"{name}.jsonl").read_bytes())
        assert response.status_code == 200, response.content
        (channel,) = response.json()["channels"]
        threads[name] = Thread.objects.get(channel=channel)
    return threads


def catalogue(client, **params: str):
    return client.get(f"/api/v1/imports/catalogue/?{urlencode(params)}")


@pytest.mark.django_db
def test_the_catalogue_lists_the_callers_earlier_sessions_of_the_project_and_never_anothers(owner_api, other):
    threads = captured_remotely(owner_api)
    bobs = make_thread(other, "claude-code:bobs", title="bob's session in the same project")
    Thread.objects.filter(pk=bobs.pk).update(
        source_cwd=threads["short"].source_cwd, source_path=f"{CLIENT_DIR}/b.jsonl"
    )
    secret = Message.objects.filter(thread=threads["tool_heavy"], role="tool").first().content

    response = catalogue(
        owner_api, transcript_path=f"{CLIENT_DIR}/new.jsonl", session_id=threads["short"].source_session_id
    )

    assert response.status_code == 200, response.content
    text = response.json()["context"]
    assert len(text) <= SESSION_CATALOGUE_MAX_CHARS and "search_memory" in text.splitlines()[-1]
    assert threads["tool_heavy"].channel in text  # found by the folder the client named
    assert threads["short"].channel not in text  # the session starting
    assert "claude-code:bobs" not in text and secret[:40] not in text
    by_cwd = catalogue(owner_api, cwd=threads["short"].source_cwd).json()["context"]
    assert threads["short"].channel in by_cwd and "claude-code:bobs" not in by_cwd
    assert catalogue(owner_api, cwd="/elsewhere", transcript_path="/elsewhere/x.jsonl").json() == {"context": ""}
    assert catalogue(owner_api, transcript_path="/x.jsonl").json() == {"context": ""}  # "/" is no project


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "words"),
    [("cwd", "a\x00b", "NUL"), ("transcript_path", "x" * 4097, "over 4096"), ("session_id", "s" * 5000, "over 4096")],
)
def test_a_field_that_cannot_be_a_path_answers_400_naming_it(owner_api, field, value, words):
    response = owner_api.get("/api/v1/imports/catalogue/", {field: value})
    assert response.status_code == 400 and response.json()["field"] == field and words in response.json()["detail"]


@pytest.mark.django_db
def test_the_catalogue_needs_a_token(client):
    assert client.get("/api/v1/imports/catalogue/?cwd=/x").status_code == 401


@pytest.mark.django_db(transaction=True)
def test_the_hook_script_prints_at_session_start_what_the_local_command_prints(
    live_server, owner, owner_api, tmp_path, monkeypatch
):
    threads = captured_remotely(owner_api)
    token = Token.objects.get_or_create(user=owner)[0].key
    env = {"THREADMEM_URL": live_server.url, "THREADMEM_TOKEN": token, "THREADMEM_CAPTURE_STATE": str(tmp_path / "s")}
    start = hook_json(
        "SessionStart",
        transcript=f"{CLIENT_DIR}/new.jsonl",
        session_id="new-session",
        cwd=threads["short"].source_cwd,
    )

    done = run_hook(start, **env)

    assert done.returncode == 0 and done.stderr == "", done.stderr
    output = json.loads(done.stdout)["hookSpecificOutput"]
    assert output["hookEventName"] == "SessionStart"
    assert len(output["additionalContext"]) <= SESSION_CATALOGUE_MAX_CHARS
    assert threads["short"].channel in output["additionalContext"]
    local, _ = run_capture(monkeypatch, start, "--owner", "owner")
    assert json.loads(local) == json.loads(done.stdout)
    elsewhere = hook_json("SessionStart", transcript="/elsewhere/x.jsonl", session_id="x", cwd="/elsewhere")
    nothing = run_hook(elsewhere, **env)
    assert (nothing.returncode, nothing.stdout, nothing.stderr) == (0, "", "")
    refused = run_hook(start, **{**env, "THREADMEM_TOKEN": "not-a-token"})
    assert refused.returncode == 0 and refused.stdout == "" and refused.stderr.count("\n") == 1
    assert refused.stderr.startswith(f"threadmem capture: {live_server.url} answered 401")


@pytest.mark.django_db
def test_the_catalogue_never_names_an_isolated_thread_nor_quotes_an_isolated_prompt(owner_api):
    threads = captured_remotely(owner_api)
    Thread.objects.filter(pk=threads["tool_heavy"].pk).update(isolated=True)
    first = Message.objects.filter(thread=threads["short"], role="user", kind="message").order_by("seq").first()
    Message.objects.filter(pk=first.pk).update(isolated=True)

    text = catalogue(owner_api, cwd=threads["short"].source_cwd).json()["context"]

    assert threads["tool_heavy"].channel not in text
    assert threads["short"].channel in text and first.content[:40] not in text
