"""Isolation reaches a fork's summaries, and a fork keeps its parent's rewritten summary (contract §1, §4).

A fork's first generation is summarized from its parent's context at the
fork point; isolating a parent's message at or before that point, or the
whole parent thread, rewrites that summary (and those of forks of the fork).
The offline summarizer quotes every user message, and the fake model below
quotes the secret exactly when its input holds it, so a summary still written
from the isolated text shows it.
"""

from __future__ import annotations

import json

import pytest

from tests.support.compaction import nine_sections
from tests.support.factories import append, make_thread
from tests.support.turns import run_turn
from threadmem.domain import selectors, services
from threadmem.features.compaction.compacting import compaction_run_now
from threadmem.models import Compaction, Generation, Message, Thread

SECRET = "hunter2-rotation-password"


def context_text(thread: Thread) -> str:
    thread.refresh_from_db()
    return "\n".join(m.content for m in selectors.context_messages(thread))


def isolation_redos(thread: Thread) -> list[tuple[str, int]]:
    return list(Compaction.objects.filter(thread=thread, trigger="isolation").values_list("status", "generation"))


@pytest.fixture
def parent(thread) -> list[Message]:
    """early, secret, noted: the parent's first generation."""
    return append(
        thread,
        {"role": "user", "content": "set up the box"},
        {"role": "user", "content": f"the door code is {SECRET}"},
        {"role": "assistant", "content": "noted"},
    )


@pytest.fixture
def echo(fake_openai):
    """The model: a summary that quotes the secret exactly when its input holds it."""
    fake_openai.default_chat = lambda body: nine_sections(
        s6=f"the user gave {SECRET}" if SECRET in json.dumps(body) else "the user set up the box"
    )
    return fake_openai


@pytest.mark.django_db
def test_isolating_a_parents_message_rewrites_the_forks_summary_and_its_next_prompt(
    owner, owner_api, admin, thread, parent, echo, django_capture_on_commit_callbacks
):
    early, secret, noted = parent
    fork = make_thread(owner, f"{thread.channel}-fork", fork_from=noted)
    append(fork, {"role": "user", "content": "carry on"})
    before = make_thread(owner, f"{thread.channel}-before", fork_from=early)  # forked before the secret
    append(before, {"role": "user", "content": "elsewhere"})
    for each in (fork, before):
        assert compaction_run_now(thread=each).status == "succeeded"
    assert SECRET in context_text(fork)

    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=secret, isolated=True, actor=admin)

    assert SECRET not in context_text(fork) and "set up the box" in context_text(fork)
    assert isolation_redos(fork) == [("succeeded", 1)]
    assert isolation_redos(before) == [] and isolation_redos(thread) == []  # nothing there quoted it
    sent = len(echo.chat_requests())
    assert run_turn(owner_api, channel=fork.channel).status_code == 200
    prompts = [json.dumps(body) for body in echo.chat_requests()[sent:]]
    assert prompts and all(SECRET not in prompt for prompt in prompts)


@pytest.mark.django_db
def test_a_fork_of_a_fork_is_summarized_again_too(
    owner, admin, thread, parent, no_model, django_capture_on_commit_callbacks
):
    _, secret, noted = parent
    fork = make_thread(owner, f"{thread.channel}-fork", fork_from=noted)
    (middle,) = append(fork, {"role": "user", "content": "carry on"})
    leaf = make_thread(owner, f"{thread.channel}-leaf", fork_from=middle)
    append(leaf, {"role": "user", "content": "and on"})
    compaction_run_now(thread=leaf)
    assert SECRET in context_text(leaf)

    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=secret, isolated=True, actor=admin)

    assert SECRET not in context_text(leaf) and "and on" in context_text(leaf)
    assert isolation_redos(leaf) == [("succeeded", 1)]
    assert isolation_redos(fork) == []  # never compacted: its context reads the parent live


@pytest.mark.django_db
def test_isolating_the_whole_parent_thread_rewrites_its_forks_summaries(
    owner, admin, thread, parent, no_model, django_capture_on_commit_callbacks
):
    _, _, noted = parent
    fork = make_thread(owner, f"{thread.channel}-fork", fork_from=noted)
    append(fork, {"role": "user", "content": "carry on"})
    compaction_run_now(thread=fork)
    assert SECRET in context_text(fork)

    with django_capture_on_commit_callbacks(execute=True):
        services.thread_set_isolated(thread=thread, isolated=True, actor=admin)

    assert SECRET not in context_text(fork) and "carry on" in context_text(fork)
    assert "set up the box" not in context_text(fork)  # none of the isolated parent's context is left
    assert isolation_redos(fork) == [("succeeded", 1)]


@pytest.mark.django_db
def test_a_fork_keeps_its_parents_summary_after_the_parent_is_summarized_again(
    owner, admin, thread, parent, echo, django_capture_on_commit_callbacks
):
    _, secret, _ = parent
    compaction_run_now(thread=thread)
    thread.refresh_from_db()
    (point,) = append(thread, {"role": "user", "content": "now in generation two"})
    reader = make_thread(owner, f"{thread.channel}-reader", fork_from=point)  # reads the parent's summary live
    compacted = make_thread(owner, f"{thread.channel}-compacted", fork_from=point)
    append(compacted, {"role": "user", "content": "carry on"})
    compaction_run_now(thread=compacted)
    assert SECRET in context_text(reader) and SECRET in context_text(compacted)

    with django_capture_on_commit_callbacks(execute=True):
        services.message_set_isolated(message=secret, isolated=True, actor=admin)

    rewritten = Generation.objects.get(thread=thread, number=1).summary_message
    assert rewritten.seq > point.seq  # written after the fork point, and still the fork's history
    reader_context = selectors.context_messages(Thread.objects.get(pk=reader.pk))
    assert [m.pk for m in reader_context] == [rewritten.pk, point.pk]
    for fork in (reader, compacted):
        assert SECRET not in context_text(fork)
        assert "set up the box" in context_text(fork)
