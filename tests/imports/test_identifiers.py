"""After import, search finds in the old generation identifiers that Claude Code's own summary dropped.

The identifiers are examples ``bench/identifiers.py`` prints: each occurs in
exactly one tool output before the session's compaction, and not in the
summary Claude Code wrote of it.
"""

from __future__ import annotations

import pytest
from django.core.management import call_command

from tests.support.session_files import write_rollouts
from tests.support.sessions import LONG, OTHER_LONG, data_dir
from threadmem.features.search import search_memory
from threadmem.models import Generation, Message, Thread

pytestmark = pytest.mark.django_db

DROPPED_BY_THE_SUMMARY = [
    (LONG, "1bd593f"),  # a commit
    (LONG, "spotter-rrm.1"),  # an issue id
    (LONG, "0.10.0"),  # a version
    (OTHER_LONG, "0c9d6d42-2e27-4a34-99be-27adf2147a5e"),  # a uuid
    (OTHER_LONG, "../deps/phoenix/priv/static/phoenix.cjs.js"),  # a path
    (OTHER_LONG, "dev.local"),  # a host
]


@pytest.mark.parametrize(("session", "identifier"), DROPPED_BY_THE_SUMMARY)
def test_search_finds_in_the_old_generation_what_claude_codes_summary_dropped(owner, session, identifier):
    call_command("import_sessions", "--format", "claude-code", "--owner", "owner", str(data_dir() / f"{session}.jsonl"))
    thread = Thread.objects.get(channel=f"claude-code:{session}")
    old = Generation.objects.get(thread=thread, number=1)
    (output,) = Message.objects.filter(thread=thread, generation=1, role="tool", content__contains=identifier)
    assert identifier not in old.summary_message.content

    hits = search_memory(user=owner, query=identifier, channel=thread.channel).hits

    # A later read of the same output is listed once with it ("×N identical": contract §9).
    assert output.pk in {message_id for hit in hits for message_id in (hit.message_id, *hit.identical_message_ids)}


@pytest.mark.parametrize(("session", "identifier"), DROPPED_BY_THE_SUMMARY[::2])
def test_search_finds_in_a_codex_rollouts_old_generation_what_its_compacted_summary_dropped(
    owner, tmp_path, session, identifier
):
    """The session written as a Codex rollout (tests/support/session_files.py): its compaction is a ``compacted``
    record."""
    (rollout,) = write_rollouts([data_dir() / f"{session}.jsonl"], tmp_path)
    call_command("import_sessions", "--owner", "owner", str(rollout))  # the format read from the first record
    thread = Thread.objects.get(channel=f"codex:codex-{session}", source_format="codex")
    old = Generation.objects.get(thread=thread, number=1)
    (output,) = Message.objects.filter(thread=thread, generation=1, role="tool", content__contains=identifier)
    assert identifier not in old.summary_message.content and old.summary_message.summary_origin == "codex"

    hits = search_memory(user=owner, query=identifier, channel=thread.channel).hits

    assert output.pk in {message_id for hit in hits for message_id in (hit.message_id, *hit.identical_message_ids)}
