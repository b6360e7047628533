"""contract §9: one entry per tool call, the call's other arguments in brief, identical windows listed once."""

from __future__ import annotations

import pytest

from tests.support.factories import append
from tests.support.search import literal_part_of
from threadmem.features.search import search_memory
from threadmem.features.search.hit_entries import ARGUMENTS_MAX_CHARS

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("thread_match")]

PATH = "/srv/app/lib/ledger-9k.ex"


def headers(text: str) -> list[str]:
    return [line for line in literal_part_of(text).splitlines() if line.startswith("--- ")]


def call(call_id: str, name: str, **arguments) -> dict:
    return {"id": call_id, "name": name, "arguments": arguments}


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_call_and_its_result_that_both_match_are_one_hit_headed_by_the_call(owner, thread, scope):
    edit, result = append(
        thread,
        {"role": "assistant", "tool_calls": [call("e1", "Edit", file_path=PATH, old_string="a", new_string="b")]},
        {"role": "tool", "tool_call_id": "e1", "content": f"The file {PATH} has been updated."},
    )
    answer = search_memory(user=owner, query=PATH, channel=thread.channel if scope == "thread" else None)
    (header,) = headers(answer.text)
    # The result is newer: its window, under the call's header, every argument in brief.
    assert header == (
        f"--- messageId={edit.id} sessionId=- generation=1 role=assistant field=result.content tool=Edit "
        f"result={result.id} ({len(result.content)} chars) args: file_path={PATH} new_string=b old_string=a"
    )
    assert (answer.literal_hits_total, answer.literal_hits_shown) == (1, 1)
    (hit,) = answer.hits
    assert (hit.message_id, hit.result_message_ids, hit.result_chars) == (edit.id, (result.id,), (len(result.content),))
    assert hit.window == result.content


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_a_call_listed_before_its_result_keeps_its_own_window(owner, thread, scope):
    edit, result = append(
        thread,
        {"role": "assistant", "tool_calls": [call("e1", "Edit", file_path=PATH, new_string="ledger refs")]},
        {"role": "tool", "tool_call_id": "e1", "content": f"The file {PATH} has been updated."},
    )
    # The whole query matches only the call; the word hits of the result then join the call's entry.
    answer = search_memory(user=owner, query="ledger refs", channel=thread.channel if scope == "thread" else None)
    assert [(hit.message_id, hit.field) for hit in answer.hits] == [(edit.id, "tool_args.new_string")]
    assert answer.hits[0].result_message_ids == (result.id,)
    assert answer.literal_hits_total == 1


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_an_argument_hit_shows_the_calls_other_arguments_and_its_results_sizes(owner, thread, scope):
    _, whole_result, _, part_result = append(
        thread,
        {"role": "assistant", "tool_calls": [call("r1", "Read", file_path=PATH)]},
        {"role": "tool", "tool_call_id": "r1", "content": "1\tdefmodule Ledger do\n" * 100},
        {"role": "assistant", "tool_calls": [call("r2", "Read", file_path=PATH, offset=120, limit=40)]},
        {"role": "tool", "tool_call_id": "r2", "content": "120\t  def post(entry) do\n"},
    )
    answer = search_memory(user=owner, query=PATH, channel=thread.channel if scope == "thread" else None)
    partial, complete = headers(answer.text)
    size = len(part_result.content)
    assert partial.endswith(f"tool=Read result={part_result.id} ({size} chars) args: limit=40 offset=120")
    assert complete.endswith(f"tool=Read result={whole_result.id} (2,200 chars)")  # no brief: the whole file
    assert [hit.arguments for hit in answer.hits] == ["limit=40 offset=120", ""]


def test_the_brief_stays_bounded_for_calls_with_many_or_huge_arguments(owner, thread):
    many = {f"option_{i:02d}": "v" * 5_000 for i in range(40)}
    nested = {"spec": {"deep": ["x" * 10_000]}, "key_" + "k" * 300: "short"}
    append(
        thread,
        {"role": "assistant", "tool_calls": [call("m1", "Configure", target=PATH, **many)]},
        {"role": "assistant", "tool_calls": [call("n1", "Configure", target=PATH, **nested)]},
    )
    answer = search_memory(user=owner, query=PATH, channel=thread.channel)
    for header in headers(answer.text):
        brief = header.split(" args: ", 1)[1]
        assert len(brief) <= ARGUMENTS_MAX_CHARS + 1
        assert "…" in brief
    assert all(len(hit.arguments) <= ARGUMENTS_MAX_CHARS + 1 for hit in answer.hits)
    assert "spec={" in answer.hits[0].arguments  # a nested value in brief, as JSON


@pytest.mark.parametrize("scope", ["thread", "global"])
def test_identical_windows_are_listed_once_with_every_message_id(owner, thread, scope):
    reads = append(
        thread,
        *({"role": "assistant", "tool_calls": [call(f"r{i}", "Read", file_path=PATH)]} for i in range(5)),
        # One message, two calls with the same arguments: the same window twice.
        {"role": "assistant", "tool_calls": [call("e1", "Edit", file_path=PATH), call("e2", "Edit", file_path=PATH)]},
        {"role": "user", "content": f"partial read of {PATH}"},
    )
    answer = search_memory(user=owner, query=PATH, channel=thread.channel if scope == "thread" else None)
    user, edits, read = headers(answer.text)
    ids = ", ".join(str(message.id) for message in reversed(reads[:5]))
    assert read.endswith(f"tool=Read result=- (×5 identical: messageIds {ids})")
    assert edits.endswith(f"tool=Edit result=- (×2 identical: messageIds {reads[5].id}, {reads[5].id})")
    assert "role=user" in user and "identical" not in user
    # Listed as three entries; the true count of hits still stated.
    assert (answer.literal_hits_total, answer.literal_hits_shown) == (8, 3)
    assert "literal hits: 8 (3 shown)" in answer.text
    assert "more hits not shown" not in answer.text
    assert answer.hits[2].identical_message_ids == tuple(message.id for message in reversed(reads[:4]))


def test_reads_of_a_file_that_changed_between_them_are_not_identical(owner, thread):
    first, _, second, _ = append(
        thread,
        {"role": "assistant", "tool_calls": [call("r1", "Read", file_path=PATH)]},
        {"role": "tool", "tool_call_id": "r1", "content": "1\tdefmodule Ledger do\n2\t  def old_post"},
        {"role": "assistant", "tool_calls": [call("r2", "Read", file_path=PATH)]},
        {"role": "tool", "tool_call_id": "r2", "content": "1\tdefmodule Ledger do"},
    )
    answer = search_memory(user=owner, query=PATH, channel=thread.channel)
    assert [(hit.message_id, hit.identical_message_ids) for hit in answer.hits] == [(second.id, ()), (first.id, ())]
