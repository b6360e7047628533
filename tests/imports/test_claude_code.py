"""Importing the shared, real Claude Code sessions, checked against their raw JSONL (contract §11)."""

from __future__ import annotations

import shutil

import pytest
from django.core.management import CommandError, call_command

from tests.support.sessions import LONG, OTHER_LONG, data_dir, raw_expectations, raw_records
from threadmem.domain.selectors import context_messages
from threadmem.features.search import search_memory
from threadmem.models import Generation, Message, Thread

pytestmark = pytest.mark.django_db


def run(*args: str, owner: str = "owner") -> None:
    call_command("import_sessions", "--format", "claude-code", "--owner", owner, *args)


def contents(thread: Thread) -> list[tuple]:
    return list(
        Message.objects.filter(thread=thread)
        .order_by("seq")
        .values_list("generation", "role", "kind", "content", "tool_calls", "tool_call_id", "model_visible")
    )


@pytest.mark.parametrize("name", [LONG, OTHER_LONG, "short", "tool_heavy"])
def test_it_imports_each_shared_session_as_the_raw_jsonl_says(owner, name):
    path = data_dir() / f"{name}.jsonl"
    expected = raw_expectations(path)
    run(str(path))
    session_id = next(r["sessionId"] for r in raw_records(path) if r.get("sessionId"))
    thread = Thread.objects.get(channel=f"claude-code:{session_id}")
    messages = Message.objects.filter(thread=thread)
    visible_assistant = messages.filter(role="assistant", model_visible=True)
    # One assistant message per API message id (thinking-only messages are stored invisible).
    ids = set(messages.filter(role="assistant").values_list("source_id", flat=True))
    assert {i.removesuffix(":thinking") for i in ids} == expected["assistant_ids"]
    assert messages.filter(role="user", kind="message").count() == expected["users"]
    # Every tool_use has its tool_result and back, by id.
    calls = {c["id"]: c for m in visible_assistant for c in m.tool_calls}
    results = dict(messages.filter(role="tool").values_list("tool_call_id", "content"))
    assert set(calls) == set(expected["tool_uses"]) == set(results) == set(expected["tool_results"])
    for call_id, block in expected["tool_uses"].items():
        assert calls[call_id]["name"] == block["name"]
        assert calls[call_id]["arguments"] == block["input"]
    # No character lost: every text block and string tool output is stored verbatim.
    stored = "\x00".join(messages.values_list("content", flat=True))
    for text in expected["texts"]:
        assert text in stored
    assert messages.filter(role="assistant", model_visible=False).exists() == any(
        '"thinking"' in line for line in path.read_text().splitlines()
    )


def test_a_compact_boundary_closes_generation_1_and_claude_codes_summary_opens_generation_2(owner):
    path = data_dir() / f"{LONG}.jsonl"
    records = raw_records(path)
    summary_record = next(r for r in records if r.get("isCompactSummary"))
    boundary_at = next(i for i, r in enumerate(records) if r.get("subtype") == "compact_boundary")
    run(str(path))
    thread = Thread.objects.get(channel=f"claude-code:{LONG}")
    first, second = Generation.objects.filter(thread=thread).order_by("number")
    summary = first.summary_message
    assert (first.state, second.state, thread.current_generation) == ("closed", "open", 2)
    assert summary.kind == "summary" and summary.summary_origin == "claude-code"
    assert summary.content == summary_record["message"]["content"]
    assert summary.generation == 2 and summary.source_id == summary_record["uuid"]
    assert not Message.objects.filter(thread=thread, generation=2, seq__lt=summary.seq).exists()
    # Messages before the boundary stay in generation 1.
    last_before = next(r for r in reversed(records[:boundary_at]) if r.get("type") == "user")
    assert Message.objects.get(thread=thread, source_id__startswith=last_before["uuid"]).generation == 1
    # The context opens with the imported summary, as with a compaction's.
    context = context_messages(thread)
    assert context[0].pk == summary.pk
    assert all(m.generation == 2 for m in context)


def test_subagents_fork_from_the_assistant_message_whose_task_call_started_them(owner):
    run(str(data_dir()))
    parent = Thread.objects.get(channel=f"claude-code:{LONG}")
    fork = Thread.objects.get(channel=f"claude-code:{LONG}:agent-a881341")
    first_prompt = raw_records(data_dir() / LONG / "subagents" / "agent-a881341.jsonl")[0]["message"]["content"]
    assert fork.parent_id == parent.pk
    task_calls = [c for c in fork.fork_message.tool_calls if c["name"] == "Task"]
    assert fork.fork_message.thread_id == parent.pk and fork.fork_message.role == "assistant"
    assert any(c["arguments"]["prompt"] == first_prompt for c in task_calls)
    compaction_agent = Thread.objects.get(channel=f"claude-code:{LONG}:agent-acompact-fffbd0")
    assert compaction_agent.parent_id == parent.pk and compaction_agent.fork_message.generation == 1


def test_reimporting_adds_no_message(owner):
    run(str(data_dir()))
    before = Message.objects.count()
    run(str(data_dir()))
    assert Message.objects.count() == before


def test_a_file_cut_mid_line_then_imported_whole_equals_one_whole_import(owner, other, tmp_path):
    source = data_dir() / f"{LONG}.jsonl"
    data = source.read_bytes()
    cut = tmp_path / "cut" / f"{LONG}.jsonl"
    cut.parent.mkdir()
    # Cut inside a streamed assistant message, mid-line.
    lines = data.split(b"\n")
    records = raw_records(source)
    at = next(
        i
        for i in range(1, len(records))
        if records[i].get("type") == "assistant"
        and records[i - 1].get("type") == "assistant"
        and records[i]["message"]["id"] == records[i - 1]["message"]["id"]
        and i > 400
    )
    cut.write_bytes(b"\n".join(lines[:at]) + b"\n" + lines[at][: len(lines[at]) // 2])
    run(str(cut), "--channel", "piecewise")
    assert Message.objects.filter(thread__channel="piecewise").exists()
    shutil.copyfile(source, cut)
    run(str(cut), "--channel", "piecewise")
    run(str(source), "--channel", "whole", owner="other")
    assert contents(Thread.objects.get(channel="piecewise")) == contents(Thread.objects.get(channel="whole"))


def test_a_bad_line_is_reported_with_file_and_line_and_the_rest_imports(owner, tmp_path, capsys):
    source = (data_dir() / "short.jsonl").read_text().splitlines(keepends=True)
    path = tmp_path / "short.jsonl"
    path.write_text("".join(source[:3]) + "{not json\n" + '{"type": "mystery"}\n' + "".join(source[3:]))
    with pytest.raises(CommandError, match="skipped 2 bad line"):
        run(str(path))
    err = capsys.readouterr().err
    assert f"{path}:4: not JSON" in err and f"{path}:5: unknown record type 'mystery'" in err
    run_clean = tmp_path / "clean" / "short.jsonl"
    run_clean.parent.mkdir()
    run_clean.write_text("".join(source))
    run(str(run_clean), "--channel", "clean")
    thread = Thread.objects.exclude(channel="clean").get()
    assert len(contents(thread)) == len(contents(Thread.objects.get(channel="clean")))


def test_an_unknown_owner_is_refused(db):
    with pytest.raises(CommandError, match="no user 'nobody'"):
        run(str(data_dir() / "short.jsonl"), owner="nobody")


def test_an_import_never_appends_to_another_owners_channel(owner, other):
    path = data_dir() / "short.jsonl"
    run(str(path), "--channel", "mine")
    before = Message.objects.filter(thread__owner=owner).count()
    run(str(path), "--channel", "mine", owner="other")  # channels are per owner: a thread of the other's own
    assert Message.objects.filter(thread__owner=owner).count() == before
    assert Message.objects.filter(thread__owner=other, thread__channel="mine").count() == before


def test_search_finds_an_old_generation_tool_output_that_claude_codes_summary_left_out(owner):
    run(str(data_dir() / f"{LONG}.jsonl"))
    thread = Thread.objects.get(channel=f"claude-code:{LONG}")
    summary = Generation.objects.get(thread=thread, number=1).summary_message.content
    term = "gqc.1: Extend annotation schema"
    old_tool = Message.objects.filter(
        thread=thread, generation=1, role="tool", content__contains="spotter-u4u.1"
    ).first()
    assert old_tool is not None and "spotter-u4u.1" not in summary, term
    result = search_memory(user=owner, query="spotter-u4u.1", channel=thread.channel)
    assert any(hit.message_id == old_tool.pk for hit in result.hits)
    assert all(
        hit.message_id != Generation.objects.get(thread=thread, number=1).summary_message_id for hit in result.hits
    )


def test_it_imports_a_whole_projects_folder(owner, tmp_path):
    project = tmp_path / "projects" / "-home-USER-spotter"
    shutil.copytree(data_dir(), project, ignore=shutil.ignore_patterns("*.md"))
    run(str(tmp_path / "projects"))
    assert Thread.objects.filter(source_format="claude-code").count() == 6
    thread = Thread.objects.get(channel=f"claude-code:{LONG}")
    assert thread.source_session_id == LONG and thread.source_path == str(project / f"{LONG}.jsonl")


def test_a_line_orjson_refuses_is_read_as_before_and_its_problem_named(owner, tmp_path, capsys):
    # A lone surrogate escape is JSON to the json module (orjson refuses it): the message check names it.
    session = '"sessionId": "s-1", "message": {"role": "user", "content": '
    path = tmp_path / "odd.jsonl"
    path.write_text(
        '{"type": "user", "uuid": "u1", ' + session + '"broken \\ud800 text"}}\n'
        '{"type": "user", "uuid": "u2", ' + session + '"caf\\u00e9 \\ud83d\\ude00 fine"}}\n'
        '{"type": "user", "uuid": "u3", ' + session + '"big", "n": 123456789012345678901234567890}}\n'
    )
    with pytest.raises(CommandError, match="skipped 1 bad line"):
        run(str(path))
    assert f"{path}:1: line 1.content contains a lone surrogate" in capsys.readouterr().err
    assert list(Message.objects.order_by("seq").values_list("content", flat=True)) == ["café 😀 fine", "big"]
