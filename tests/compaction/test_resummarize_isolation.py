"""Isolating a message of a compacted generation rewrites the summaries that quoted it (contract §1).

The offline summarizer (no model configured) lists every user message in
section 6, so a secret a user typed is quoted by the summary until the
message is isolated: then the generation is summarized again, the new summary
supersedes the old one (kept, flagged, for operators), and every later
compacted generation is summarized again from the new one. Nothing the model
reads next quotes the secret.
"""

from __future__ import annotations

import json

import pytest
from django.db import connection

from tests.support.compaction import nine_sections
from tests.support.factories import append, make_thread
from threadmem.domain import selectors, services
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.models import Compaction, Generation, Message, Thread

SECRET = "hunter2-rotation-password"
OTHER = "correct-horse-battery"


def context_text(thread: Thread) -> str:
    thread.refresh_from_db()
    return "\n".join(m.content for m in selectors.context_messages(thread))


@pytest.mark.django_db
def test_isolating_a_summarized_message_rewrites_the_summary_without_it(
    thread, admin, no_model, django_capture_on_commit_callbacks
):
    secret, _ = append(
        thread, {"role": "user", "content": f"the door code is {SECRET}"}, {"role": "user", "content": "deploy it"}
    )
    compaction_run_now(thread=thread)
    old = Generation.objects.get(thread=thread, number=1).summary_message
    assert SECRET in old.content and SECRET in context_text(thread)

    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=secret, isolated=True, actor=admin)

    new = Generation.objects.get(thread=thread, number=1).summary_message
    old.refresh_from_db()
    assert new.pk != old.pk and old.superseded_by_id == new.pk
    assert (new.kind, new.generation) == (Message.Kind.SUMMARY, 2)
    assert SECRET not in new.content and "deploy it" in new.content
    assert SECRET not in context_text(thread)
    redo = Compaction.objects.get(thread=thread, trigger="isolation")
    assert (redo.status, redo.generation, redo.summary_message_id, redo.requested_by) == ("succeeded", 1, new.pk, admin)


@pytest.mark.django_db
def test_later_compacted_generations_are_summarized_again_in_order(
    thread, admin, no_model, django_capture_on_commit_callbacks
):
    (secret,) = append(thread, {"role": "user", "content": f"the door code is {SECRET}"})
    compaction_run_now(thread=thread)
    append(Thread.objects.get(pk=thread.pk), {"role": "user", "content": "now roll back"})
    compaction_run_now(thread=Thread.objects.get(pk=thread.pk))
    assert SECRET in context_text(thread)  # the second summary carried the first one's quote

    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=secret, isolated=True, actor=admin)

    for number in (1, 2):
        summary = Generation.objects.get(thread=thread, number=number).summary_message
        assert SECRET not in summary.content
    assert SECRET not in context_text(thread)
    assert "now roll back" in context_text(thread)


@pytest.mark.django_db
def test_isolating_a_message_of_the_current_generation_asks_for_no_summary(
    thread, admin, no_model, django_capture_on_commit_callbacks
):
    (message,) = append(thread, {"role": "user", "content": f"the door code is {SECRET}"})
    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=message, isolated=True, actor=admin)
    assert not Compaction.objects.filter(thread=thread).exists()


@pytest.mark.django_db(transaction=True)
def test_an_isolation_while_a_re_summary_runs_is_left_out_too(
    owner, admin, fake_openai, django_capture_on_commit_callbacks
):
    """The second isolation lands while the re-summary writes generation 2, after it rewrote generation 1."""
    thread = make_thread(owner, "isolate:twice")
    first, second = append(
        thread, {"role": "user", "content": f"one is {SECRET}"}, {"role": "user", "content": f"two is {OTHER}"}
    )
    calls: list[int] = []
    isolate_at: list[int] = []

    def model(body: dict) -> str:
        calls.append(len(calls) + 1)
        if calls[-1] in isolate_at:  # the admin's second request (in the fake server's thread)
            services.message_set_isolated(message=second, isolated=True, actor=admin)
            connection.close()
        quoted = [word for word in (SECRET, OTHER) if word in json.dumps(body)]
        return nine_sections(s6=f"the user gave {' and '.join(quoted) or 'nothing'}")

    fake_openai.default_chat = model
    compaction_run_now(thread=thread)
    append(Thread.objects.get(pk=thread.pk), {"role": "user", "content": "now roll back"})
    compaction_run_now(thread=Thread.objects.get(pk=thread.pk))
    assert OTHER in context_text(thread)
    isolate_at.append(len(calls) + 2)  # the re-summary's second model call: generation 2

    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=first, isolated=True, actor=admin)

    for number in (1, 2):
        summary = Generation.objects.get(thread=thread, number=number).summary_message
        assert SECRET not in summary.content and OTHER not in summary.content
    assert SECRET not in context_text(thread) and OTHER not in context_text(thread)
    assert len(calls) == 6  # two compactions, then the re-summary's two passes over generations 1 and 2
    assert list(Compaction.objects.filter(trigger="isolation").values_list("status", flat=True)) == ["succeeded"]
    visible = Message.objects.visible().filter(thread=thread, kind=Message.Kind.SUMMARY)
    assert visible.count() == 2  # one current summary a generation, the rest superseded
