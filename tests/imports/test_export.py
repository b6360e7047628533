"""A thread's export (threadmem JSONL) and its restore: export → delete → import gives the same thread back.

The round trips run on the shared real sessions (with their subagent forks), through ``manage.py export``
and ``import_sessions``, and on a compacted, forked thread through the API; each compares every field
of the threads, generations and messages (ids aside) and what ``search_memory`` answers.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection, connections

from tests.support.compaction import deploy_conversation
from tests.support.factories import append, make_thread
from tests.support.sessions import LONG, data_dir
from threadmem.domain import services
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.features.imports.export import thread_export_lines
from threadmem.features.imports.records import detect_format
from threadmem.features.search import search_memory
from threadmem.models import Generation, Import, Message, Thread, ToolArgument

pytestmark = pytest.mark.django_db

# The ids a search answer or a summary names: messageId=12, result=14,15, call=13, messageIds 12, 13.
ID_FIELDS = re.compile(r"(messageId=|result=|call=)(\d+(?:,\d+)*)|(messageIds )(\d+(?:, \d+)*)")
CURSOR = re.compile(r'cursor="[^"]*"')


def delete(thread: Thread, actor) -> None:
    from threadmem.features.erase.thread_delete import thread_delete

    thread_delete(thread=thread, actor=actor)


def delete_all(owner) -> None:
    """Forks before their parents."""
    threads = list(Thread.objects.filter(owner=owner))
    depth = {t.pk: _depth(t) for t in threads}
    for thread in sorted(threads, key=lambda t: -depth[t.pk]):
        delete(thread, owner)
    assert not Thread.objects.filter(owner=owner).exists()


def _depth(thread: Thread) -> int:
    return 0 if thread.parent_id is None else 1 + _depth(thread.parent)


def labels() -> dict[str, str]:
    """Every message id -> ``channel#seq``: what an id means, the same before and after a restore."""
    rows = Message.objects.values_list("pk", "thread__channel", "seq")
    return {str(pk): f"{channel}#{seq}" for pk, channel, seq in rows}


def labelled(text: str, names: dict[str, str]) -> str:
    def swap(match: re.Match) -> str:
        prefix, ids, separator = (match[1], match[2], ",") if match[1] else (match[3], match[4], ", ")
        return prefix + separator.join(names.get(i.strip(), f"?{i}") for i in ids.split(","))

    return CURSOR.sub('cursor="…"', ID_FIELDS.sub(swap, text))


def snapshot(owner) -> dict[str, dict]:
    """Every field an export carries, per channel, ids replaced by what they name."""
    names = labels()
    state = {}
    for thread in Thread.objects.filter(owner=owner).select_related("parent", "fork_message"):
        messages = list(Message.objects.filter(thread=thread).order_by("seq").select_related("superseded_by"))
        state[thread.channel] = {
            "thread": (
                thread.title,
                thread.source_format,
                thread.source_path,
                thread.source_session_id,
                thread.source_cwd,
                thread.created_at,
                # not last_activity_at: a restore is activity (retention counts from it)
                thread.isolated,
                thread.current_generation,
                thread.parent.channel if thread.parent else None,
                thread.fork_message.seq if thread.fork_message else None,
            ),
            "generations": [
                (g.number, g.state, g.started_at, g.closed_at, g.summary_message.seq if g.summary_message else None)
                for g in Generation.objects.filter(thread=thread).order_by("number").select_related("summary_message")
            ],
            "messages": [
                (
                    m.generation,
                    m.seq,
                    m.role,
                    m.kind,
                    labelled(m.content, names),
                    m.tool_calls,
                    m.tool_call_id,
                    m.session_id,
                    m.source_id,
                    m.model_visible,
                    m.isolated,
                    m.superseded_by.seq if m.superseded_by else None,
                    m.summary_origin,
                    m.created_at,
                )
                for m in messages
            ],
            "tool_arguments": sorted(
                ToolArgument.objects.filter(thread=thread).values_list(
                    "message__seq", "call_index", "tool_call_id", "tool_name", "path", "value"
                )
            ),
        }
    return state


def answers(user, searches: list[tuple[str, str]]) -> list[str]:
    names = labels()
    return [labelled(search_memory(user=user, query=q, channel=c).text, names) for c, q in searches]


def export_lines(client, channel: str) -> tuple[object, list[dict]]:
    response = client.get(f"/api/v1/threads/{channel}/export/")
    assert response.status_code == 200, response
    body = b"".join(response.streaming_content)
    assert body.endswith(b"\n")
    return response, [json.loads(line) for line in body.splitlines()]


def upload(client, lines: list[dict], name: str = "export.jsonl", **fields: str) -> dict:
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    data = {"file": SimpleUploadedFile(name, body, content_type="application/x-ndjson"), **fields}
    response = client.post("/api/v1/imports/", data, format="multipart")
    assert response.status_code == 201, response.json()
    return response.json()


def refused_upload(client, lines: list[dict], status: int) -> tuple[str, dict]:
    """An export the upload refuses whole: the answer's detail, and the failed import as its URL reads it."""
    body = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    data = {"file": SimpleUploadedFile("export.jsonl", body, content_type="application/x-ndjson")}
    response = client.post("/api/v1/imports/", data, format="multipart")
    assert response.status_code == status, response.json()
    record = client.get(f"/api/v1/imports/{Import.objects.latest('pk').pk}/").json()
    assert (record["status"], record["messages_imported"]) == ("failed", 0)
    return response.json()["detail"], record


# --- round trips ---------------------------------------------------------------


def test_the_shared_sessions_come_back_the_same_through_export_delete_and_import(owner, tmp_path: Path):
    call_command("import_sessions", "--owner", "owner", str(data_dir()))
    forks = Thread.objects.filter(owner=owner, parent__isnull=False)
    assert forks.exists()  # the subagents: forks of their session's thread
    before = snapshot(owner)
    searches = [
        (f"claude-code:{LONG}", query) for query in ("spotter-u4u.1", "mix.exs", "error", "why did the build fail")
    ] + [(fork.channel, "the") for fork in forks[:2]]
    searched = answers(owner, searches)
    out = tmp_path / "export"
    call_command("export", "--owner", "owner", "--out", str(out))
    files = sorted(out.glob("*.jsonl"))
    assert len(files) == len(before)
    assert {detect_format(f) for f in files} == {"threadmem"}

    delete_all(owner)
    call_command("import_sessions", "--owner", "owner", str(out))

    assert snapshot(owner) == before
    assert answers(owner, searches) == searched
    # Importing the export again adds nothing: every message is known by its source id.
    call_command("import_sessions", "--owner", "owner", str(out))
    assert snapshot(owner) == before


@pytest.fixture
def compacted_fork(admin, no_model) -> tuple[Thread, Thread]:
    """A thread compacted once (its summary opens generation 2), with every kind of message and flag, and a
    fork of it at a generation-2 message, compacted once itself and isolated."""
    thread = make_thread(admin, "ops:deploy/42", title="restart nginx on staging")
    conversation = deploy_conversation(thread)
    services.message_set_isolated(message=conversation.failed_ssh_result, isolated=True, actor=admin)
    assert compaction_run_now(thread=thread).status == "succeeded"
    first, *_ = append(
        thread,
        {"role": "user", "content": "now check the TLS certificate of staging-7", "source_id": "u-1"},
        {"role": "assistant", "content": "thinking about openssl", "model_visible": False, "session_id": "s-2"},
        {
            "role": "assistant",
            "session_id": "s-2",
            "tool_calls": [
                {"id": "call_tls", "name": "bash", "arguments": {"command": "openssl s_client -connect staging-7:443"}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_tls", "content": "Verify return code: 10 (certificate has expired)"},
        {"role": "system", "kind": "machine_event", "content": "[status] turn 3 started"},
    )
    (draft,) = append(thread, {"role": "assistant", "content": "The certificat expired"})
    append(thread, {"role": "assistant", "content": "The certificate expired on staging-7.", "supersedes": draft.pk})
    fork = make_thread(admin, "ops:deploy/42:renew", title="renew it", fork_from=first)
    append(
        fork,
        {"role": "user", "content": "renew the certificate with certbot"},
        {"role": "assistant", "content": "Ran certbot renew; the new certificate is valid until March."},
    )
    assert compaction_run_now(thread=fork).status == "succeeded"
    (secret,) = append(fork, {"role": "user", "content": "the staging-7 root password is hunter2"})
    append(fork, {"role": "assistant", "content": "Noted the renewal in the runbook."})
    services.message_set_isolated(message=secret, isolated=True, actor=admin)
    services.thread_set_isolated(thread=fork, isolated=True, actor=admin)
    return thread, fork


def test_a_compacted_forked_thread_comes_back_the_same_through_the_api(admin, admin_api, compacted_fork):
    thread, fork = compacted_fork
    assert Generation.objects.filter(thread=thread).count() == 2
    assert Generation.objects.filter(thread=fork, summary_message__isnull=False).exists()
    before = snapshot(admin)
    searches = [
        (c, q)
        for c in (thread.channel, fork.channel)
        for q in ("staging", "certificate", "nginx.conf", "hunter2", "systemctl restart")
    ]
    searched = answers(admin, searches)
    _, parent_lines = export_lines(admin_api, thread.channel)
    _, fork_lines = export_lines(admin_api, fork.channel)
    summaries = [line for line in parent_lines + fork_lines if line.get("kind") == "summary"]
    assert summaries and all(line["refs"] for line in summaries)

    delete(fork, admin)
    delete(thread, admin)
    for lines in (parent_lines, fork_lines):
        report = upload(admin_api, lines)
        assert (report["format"], report["errors"], report["lines_skipped"]) == ("threadmem", [], 0)
        assert report["messages_imported"] == len([line for line in lines if line["type"] == "message"])

    assert snapshot(admin) == before
    assert answers(admin, searches) == searched


# --- the export ----------------------------------------------------------------


def test_the_export_streams_jsonl_with_a_header_generations_messages_and_an_end_line(owner_api, thread):
    append(
        thread,
        {"role": "user", "content": "deploy staging-7", "source_id": "m1"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "name": "shell", "arguments": {"command": "make deploy"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "deployed"},
    )
    response, lines = export_lines(owner_api, thread.channel)
    assert response["Content-Type"] == "application/x-ndjson"
    assert re.fullmatch(
        r'attachment; filename="slack_C042_1700000000\.1-[0-9a-f]{8}\.jsonl"', response["Content-Disposition"]
    )
    header, generation, *messages, end = lines
    assert (header["format"], header["version"], header["type"]) == ("threadmem", 1, "thread")
    assert header["thread"]["channel"] == thread.channel and header["thread"]["parent"] is None
    assert generation == {
        "type": "generation",
        "number": 1,
        "state": "open",
        "started_at": generation["started_at"],
        "closed_at": None,
        "summary_seq": None,
    }
    assert [m["seq"] for m in messages] == [1, 2, 3]
    assert messages[1]["tool_calls"] == [{"id": "c1", "name": "shell", "arguments": {"command": "make deploy"}}]
    assert messages[0]["source_id"] == "m1" and messages[2]["tool_call_id"] == "c1"
    assert end == {"type": "end", "generations": 1, "messages": 3}
    # Its own format, read back: an upload without a format is detected as one.
    Thread.objects.filter(pk=thread.pk).update(channel="elsewhere")
    assert upload(owner_api, lines)["format"] == "threadmem"


def test_another_owners_export_answers_404_and_an_operators_answers_200(other_api, operator_api, owner_api, thread):
    refused = other_api.get(f"/api/v1/threads/{thread.channel}/export/", HTTP_ACCEPT="application/x-ndjson")
    assert (refused.status_code, refused["Content-Type"]) == (404, "application/json")
    assert refused.json()["detail"] == f"thread {thread.channel!r} not found"
    assert owner_api.get("/api/v1/threads/no-such-thread/export/").status_code == 404
    assert operator_api.get(f"/api/v1/threads/{thread.channel}/export/").status_code == 200


def test_a_channel_cannot_end_with_export(owner):
    from threadmem.errors import InvalidInput

    with pytest.raises(InvalidInput, match="export"):
        services.thread_create(owner=owner, channel="a/export")


# --- isolation -------------------------------------------------------------------


def test_an_owners_export_withholds_isolated_content_and_its_restore_leaves_it_out(
    owner, owner_api, operator_api, admin, thread
):
    _, hidden, _ = append(
        thread,
        {"role": "user", "content": "rotate the key"},
        {"role": "tool", "content": "the token a tool leaked"},
        {"role": "assistant", "content": "rotated"},
    )
    services.message_set_isolated(message=hidden, isolated=True, actor=admin)
    _, lines = export_lines(owner_api, thread.channel)
    withheld = lines[3]
    assert (withheld["seq"], withheld["isolated"], withheld["content"], withheld["content_withheld"]) == (
        2,
        True,
        "",
        True,
    )
    assert lines[0]["content_withheld"] is True
    _, full = export_lines(operator_api, thread.channel)
    assert full[3]["content"] == "the token a tool leaked" and "content_withheld" not in full[3]

    delete(thread, owner)
    report = upload(owner_api, lines)
    restored = Thread.objects.get(channel=thread.channel)
    assert list(Message.objects.filter(thread=restored).values_list("seq", "content")) == [
        (1, "rotate the key"),
        (3, "rotated"),
    ]
    assert report["lines_skipped"] == 0
    assert any("1 isolated message(s) left out" in e and "without their content" in e for e in report["errors"])


def test_only_an_admins_import_restores_isolation(owner, owner_api, admin, admin_api, operator_api, thread):
    append(thread, {"role": "user", "content": "hello"}, {"role": "tool", "content": "secret output"})
    services.message_set_isolated(message=Message.objects.get(thread=thread, seq=2), isolated=True, actor=admin)
    _, lines = export_lines(operator_api, thread.channel)
    delete(thread, owner)

    report = upload(owner_api, lines)
    restored = Thread.objects.get(channel=thread.channel)
    assert list(Message.objects.filter(thread=restored).values_list("content", flat=True)) == ["hello"]
    assert any("only an admin's import restores them" in e for e in report["errors"])

    delete(restored, owner)
    upload(admin_api, lines)
    assert list(Message.objects.filter(thread__channel=thread.channel).values_list("content", "isolated")) == [
        ("hello", False),
        ("secret output", True),
    ]


def test_an_isolated_thread_is_refused_to_an_import_without_an_admins_authority(owner, owner_api, admin, thread):
    append(thread, {"role": "user", "content": "hello"})
    services.thread_set_isolated(thread=thread, isolated=True, actor=admin)
    _, lines = export_lines(owner_api, thread.channel)
    delete(thread, owner)
    detail, report = refused_upload(owner_api, lines, 403)
    assert "is isolated: only an admin's import restores it" in detail
    assert report["lines_skipped"] == 1
    assert "is isolated: only an admin's import restores it" in report["errors"][0]
    assert not Thread.objects.filter(channel=thread.channel).exists()


# --- an existing channel, a missing parent, a cut-short file ---------------------------


def test_importing_an_export_over_its_own_thread_adds_nothing_when_every_message_has_a_source_id(owner_api, thread):
    append(
        thread,
        {"role": "user", "content": "one", "source_id": "a"},
        {"role": "user", "content": "two", "source_id": "b"},
    )
    _, lines = export_lines(owner_api, thread.channel)
    report = upload(owner_api, lines)
    assert (report["messages_imported"], report["messages_known"], report["errors"]) == (0, 2, [])
    assert Message.objects.filter(thread=thread).count() == 2


def test_importing_an_export_over_an_existing_thread_is_refused_naming_the_channel(owner_api, other_api, thread):
    append(thread, {"role": "user", "content": "one"})
    _, lines = export_lines(owner_api, thread.channel)
    detail, report = refused_upload(owner_api, lines, 409)
    assert f"channel {thread.channel!r} already exists" in detail
    assert report["lines_skipped"] == 1
    assert f"channel {thread.channel!r} already exists" in report["errors"][0]
    assert "has no source id" in report["errors"][0]
    assert Message.objects.filter(thread=thread).count() == 1
    # Under another channel it is a thread of its own.
    assert upload(owner_api, lines, channel="slack:C042/copy")["channels"] == ["slack:C042/copy"]
    assert list(Message.objects.filter(thread__channel="slack:C042/copy").values_list("content", flat=True)) == ["one"]
    # Another owner restores it as a thread of their own (channels are per owner): nothing of the first changes.
    report = upload(other_api, lines)
    assert report["errors"] == [] and report["messages_imported"] == 1
    assert Message.objects.filter(thread=thread).count() == 1
    assert Thread.objects.filter(channel=thread.channel).exclude(pk=thread.pk).get().owner != thread.owner


def test_a_fork_whose_parent_is_gone_comes_back_as_a_plain_thread_with_a_note(owner, owner_api, thread):
    (at,) = append(thread, {"role": "user", "content": "start"})
    fork = make_thread(owner, "slack:C042/fork", fork_from=at)
    append(fork, {"role": "assistant", "content": "forked work"})
    _, lines = export_lines(owner_api, fork.channel)
    assert lines[0]["thread"]["parent"] == {"channel": thread.channel, "fork_message_seq": 1}
    delete(fork, owner)
    delete(thread, owner)
    report = upload(owner_api, lines)
    restored = Thread.objects.get(channel="slack:C042/fork")
    assert restored.parent_id is None
    assert list(Message.objects.filter(thread=restored).values_list("content", flat=True)) == ["forked work"]
    assert any("restored as a plain thread" in e and thread.channel in e for e in report["errors"])


def test_an_export_cut_short_restores_nothing(owner_api, owner, thread):
    append(thread, {"role": "user", "content": "one"}, {"role": "user", "content": "two"})
    _, lines = export_lines(owner_api, thread.channel)
    delete(thread, owner)
    detail, report = refused_upload(owner_api, lines[:-2], 400)
    assert "cut short" in detail
    assert report["lines_skipped"] == 1 and "cut short" in report["errors"][0]
    assert not Thread.objects.filter(channel=thread.channel).exists()


def test_the_export_command_names_each_file_for_its_channel_uniquely(owner, tmp_path: Path):
    for channel in ("deploy", "Deploy", "cli:a/b", "cli:a:b"):
        make_thread(owner, channel)
    call_command("export", "--owner", "owner", "--out", str(tmp_path))
    names = sorted(p.name for p in tmp_path.iterdir())
    assert len(names) == 4 and len({n.lower() for n in names}) == 4
    assert "deploy.jsonl" in names


@pytest.mark.django_db(transaction=True)
def test_the_export_reads_one_snapshot_while_messages_arrive(owner):
    """PostgreSQL: what is appended while an export streams is not in it, and its counts hold."""
    if connection.vendor != "postgresql":
        pytest.skip("SQLite exports read without a transaction: one would hold the write lock (docs/imports.md)")
    thread = make_thread(owner, "ops:snapshot")
    append(thread, {"role": "user", "content": "before the export"})
    lines = thread_export_lines(thread=thread, withhold_isolated=False)
    # The snapshot is taken by the first read, before the header.
    assert [json.loads(next(lines))["type"] for _ in range(2)] == ["thread", "generation"]

    def late() -> None:
        append(thread, {"role": "user", "content": "after the export began"})
        connections.close_all()

    writer = threading.Thread(target=late)
    writer.start()
    writer.join()
    rest = [json.loads(line) for line in lines]
    assert [m["content"] for m in rest if m["type"] == "message"] == ["before the export"]
    assert rest[-1] == {"type": "end", "generations": 1, "messages": 1}
    assert Message.objects.filter(thread=thread).count() == 2


def test_a_restore_keeps_seq_gaps_and_a_generation_that_comes_back(owner, owner_api):
    """An erased message leaves a gap; a summary written again later sits in an older generation."""

    def message(seq: int, generation: int, content: str, **extra) -> dict:
        return {"type": "message", "seq": seq, "generation": generation, "role": "user", "content": content, **extra}

    lines = [
        {"format": "threadmem", "version": 1, "type": "thread", "thread": {"channel": "ops:crafted"}},
        {"type": "generation", "number": 1, "state": "closed", "summary_seq": 7},
        {"type": "generation", "number": 2, "state": "compacting", "summary_seq": None},
        message(1, 1, "first"),
        message(4, 1, "after an erased one"),
        message(5, 2, "in generation 2"),
        message(6, 2, "the first summary", kind="summary", superseded_by_seq=7),
        message(7, 2, "the summary written again", kind="summary", summary_origin="claude-code"),
        message(8, 2, "last"),
        {"type": "end", "generations": 2, "messages": 6},
    ]
    report = upload(owner_api, lines)
    assert (report["errors"], report["messages_imported"]) == ([], 6)
    thread = Thread.objects.get(channel="ops:crafted")
    assert list(
        Message.objects.filter(thread=thread).values_list("seq", "generation", "kind", "superseded_by__seq")
    ) == [
        (1, 1, "message", None),
        (4, 1, "message", None),
        (5, 2, "message", None),
        (6, 2, "summary", 7),
        (7, 2, "summary", None),
        (8, 2, "message", None),
    ]
    assert list(Generation.objects.filter(thread=thread).values_list("number", "state", "summary_message__seq")) == [
        (1, "closed", 7),
        (2, "open", None),
    ]
    assert (thread.current_generation, thread.next_seq) == (2, 9)
    assert Message.objects.get(thread=thread, seq=7).summary_origin == "claude-code"
    # A message that comes back to an older generation after a later one.
    lines[-3] = message(7, 1, "the summary written again", kind="summary")
    Thread.objects.filter(pk=thread.pk).update(channel="ops:elsewhere")
    assert upload(owner_api, lines)["errors"] == []
    assert list(
        Message.objects.filter(thread__channel="ops:crafted").values_list("seq", "generation").order_by("seq")
    ) == [(1, 1), (4, 1), (5, 2), (6, 2), (7, 1), (8, 2)]
