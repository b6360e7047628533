"""Section 10's resource catalogue: what counts as a resource, and which messageIds it points at.

Pure functions over unsaved Message rows: no database needed.
"""

from __future__ import annotations

import itertools
from typing import Any

import pytest

from threadmem.features.compaction import catalogue
from threadmem.lib.jsonleaves import string_leaves
from threadmem.models import Message

_ids = itertools.count(100)


def msg(role: str, content: str = "", **fields: Any) -> Message:
    number = next(_ids)
    return Message(id=number, seq=number, generation=1, role=role, content=content, **fields)


def call(call_id: str, name: str, **arguments: Any) -> Message:
    return msg("assistant", tool_calls=[{"id": call_id, "name": name, "arguments": arguments}])


def result(call_id: str, content: str) -> Message:
    return msg("tool", content, tool_call_id=call_id)


def found(text: str) -> set[tuple[str, str]]:
    return set(catalogue.scan_text(text))


def entry(lines: str, name: str) -> str:
    matching = [line for line in lines.splitlines() if f"`{name}`" in line]
    assert len(matching) == 1, f"{name!r} is listed {len(matching)} times in:\n{lines}"
    return matching[0]


def test_it_finds_posix_home_and_windows_paths_urls_and_hosts_in_text():
    text = (
        "edited /srv/app/settings.py and ~/deploy/keys.txt, copied C:\\Users\\bob\\notes.txt, "
        "see https://docs.example.com/a?b=1 then ssh deploy@staging.example.com or ping 10.0.0.5:8080 "
        "and db.internal; relative src/app/main.py too"
    )

    assert found(text) == {
        ("file", "/srv/app/settings.py"),
        ("file", "~/deploy/keys.txt"),
        ("file", "C:\\Users\\bob\\notes.txt"),
        ("url", "https://docs.example.com/a?b=1"),
        ("host", "deploy@staging.example.com"),
        ("host", "10.0.0.5:8080"),
        ("host", "db.internal"),
        ("file", "src/app/main.py"),
    }


@pytest.mark.parametrize("prose", ["read and/or write", "on 2024/01/02", "half is 1/2", "a /s flag", "v1.2.3.4.5"])
def test_it_does_not_take_prose_for_resources(prose):
    assert found(prose) == set()


def test_it_never_repeats_the_password_of_a_url():
    assert found("DATABASE_URL=postgres://api_rw:s3cret@db-primary.internal/orders") == {
        ("url", "postgres://api_rw:***@db-primary.internal/orders")
    }
    assert found("postgres://api_rw:${API_DB_PASSWORD}@db.internal/orders") == {
        ("url", "postgres://api_rw:***@db.internal/orders")
    }


def test_it_does_not_list_a_path_inside_a_url_twice():
    assert found("GET https://api.example.com/v1/users/42 failed") == {("url", "https://api.example.com/v1/users/42")}


def test_it_lists_commands_paths_hosts_and_identifiers_from_argument_keys():
    arguments = {
        "command": "kubectl rollout restart deploy/web\nkubectl get pods",
        "files": [{"path": "config/app.yaml"}],
        "host": "build-7",
        "repo": "acme/api",
    }
    resources = {pair for path, value in string_leaves(arguments) for pair in catalogue.scan_argument(path, value)}

    assert ("command", "kubectl rollout restart deploy/web") in resources
    assert ("file", "config/app.yaml") in resources
    assert ("host", "build-7") in resources
    assert ("identifier", "acme/api") in resources


@pytest.mark.parametrize("key", ["password", "api_key", "auth_token", "client_secret"])
def test_it_never_lists_secret_argument_values(key):
    assert list(catalogue.scan_argument(key, "/srv/secret/value-1234")) == []


@pytest.mark.parametrize(
    "content",
    [
        "Error: ENOENT",
        "bash: deploy.sh: command not found",
        "cat: /etc/shadow: Permission denied",
        "Traceback (most recent call last):\n  File x",
        "process exited with exit code 2",
        '{"is_error": true, "content": "boom"}',
        '{"exit_code": 1, "stdout": ""}',
        '{"error": "not found"}',
    ],
)
def test_it_recognises_error_results(content):
    assert catalogue.result_is_error(content)


@pytest.mark.parametrize(
    "content", ["ok", "server { listen 80; }", '{"exit_code": 0, "stdout": "done"}', '{"error": null, "rows": 3}']
)
def test_it_does_not_take_ordinary_results_for_errors(content):
    assert not catalogue.result_is_error(content)


def test_it_names_the_first_successful_access_and_the_latest_one():
    messages = [
        failed_call := call("c1", "bash", command="ssh deploy@staging.example.com uptime"),
        result("c1", "ssh: connect to host staging.example.com port 22: Connection refused"),
        ok_call := call("c2", "bash", command="ssh deploy@staging.example.com uptime"),
        ok_result := result("c2", " 10:00 up 3 days"),
        last_call := call("c3", "bash", command="ssh deploy@staging.example.com df -h"),
        last_result := result("c3", "Filesystem Size"),
    ]

    text = catalogue.catalogue_text(catalogue.collect_resources(messages), channel="c")

    line = entry(text, "deploy@staging.example.com")
    assert line.startswith("- host ")
    assert f"first successful access: messageId={ok_call.id} (result messageId={ok_result.id});" in line
    assert f"latest: messageId={last_call.id} (result messageId={last_result.id})" in line
    assert f"messageId={failed_call.id}" not in line
    command = entry(text, "ssh deploy@staging.example.com uptime")
    assert "via bash (tool_args.command)" in command
    assert f"first successful access: messageId={ok_call.id}" in command


def test_it_says_when_a_resource_was_never_accessed_successfully():
    messages = [call("c1", "read_file", path="/etc/shadow"), denied := result("c1", "Permission denied")]

    line = entry(catalogue.catalogue_text(catalogue.collect_resources(messages), channel="c"), "/etc/shadow")

    assert "no successful access (1 of 1 failed" in line
    assert f"result messageId={denied.id}, error" in line


def test_it_leaves_out_messages_the_model_may_not_read():
    messages = [
        call("c1", "read_file", path="/srv/visible.txt"),
        result("c1", "fine"),
        msg("tool", "see /srv/isolated.txt", tool_call_id="c1", isolated=True),
        msg("tool", "see /srv/hidden.txt", tool_call_id="c1", model_visible=False),
        msg("system", "see /srv/event.txt", kind=Message.Kind.MACHINE_EVENT),
    ]

    names = {r.name for r in catalogue.collect_resources(messages)}

    assert names == {"/srv/visible.txt"}


def test_it_caps_the_catalogue_and_counts_what_it_leaves_out():
    messages = []
    total = catalogue.CATALOGUE_MAX_ENTRIES + 7
    for index in range(total):
        messages += [call(f"c{index}", "read_file", path=f"/data/file-{index}.txt"), result(f"c{index}", "ok")]

    text = catalogue.catalogue_text(catalogue.collect_resources(messages), channel="c")

    assert sum(line.startswith("- file ") for line in text.splitlines()) == catalogue.CATALOGUE_MAX_ENTRIES
    assert "7 more resources are not listed; search_memory finds them by name." in text
    assert len(text) <= catalogue.CATALOGUE_MAX_CHARS + 1_000


def test_it_ends_with_the_exact_guidance_line_of_the_spec():
    text = catalogue.catalogue_text([], channel="slack:C042/1700000000.1")

    assert text.splitlines()[-1] == (
        'To recover earlier experience with a resource, call search_memory(channel="slack:C042/1700000000.1", '
        'query="<resource name/path>"). Results are bounded windows with messageIds for '
        'message_context_read(view="audit").'
    )
    assert text.splitlines()[0] == "No resources were accessed through tools in this generation."


def test_it_carries_entries_of_the_previous_catalogue_that_were_not_touched_again():
    previous = (
        "- file `/srv/old.txt` via read_file (tool_args.path); first successful access: messageId=3; "
        "latest: the same\n"
        "- file `/srv/again.txt` via read_file (tool_args.path); first successful access: messageId=4; "
        "latest: the same\n" + catalogue.guidance_line("c")
    )
    messages = [again := call("c1", "read_file", path="/srv/again.txt"), result("c1", "ok")]

    text = catalogue.catalogue_text(catalogue.collect_resources(messages), channel="c", previous_section=previous)

    assert entry(text, "/srv/old.txt").endswith("messageId=3; latest: the same · earlier generation")
    assert f"messageId={again.id}" in entry(text, "/srv/again.txt")
    assert text.count(catalogue.guidance_line("c")) == 1
