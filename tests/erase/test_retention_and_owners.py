"""Retention (THREADMEM_RETENTION_DAYS, ``manage.py retention``) and ``manage.py forget_owner``."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.apps import apps
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db.models import ForeignKey
from django.utils import timezone

from tests.support.factories import append, console_client, make_thread, token_client
from threadmem.features.erase.tasks import retention
from threadmem.features.search import search_memory
from threadmem.models import CaptureCursor, Deletion, Import, IsolationEvent, Message, Thread, ToolCall

pytestmark = pytest.mark.django_db(transaction=True)


def idle(thread: Thread, days: int) -> None:
    Thread.objects.filter(pk=thread.pk).update(last_activity_at=timezone.now() - timedelta(days=days))


def run(*args: str) -> str:
    out = StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def test_retention_lists_then_deletes_idle_threads_and_keeps_a_family_with_an_active_fork(owner, settings):
    old = make_thread(owner, "old")
    append(old, {"role": "user", "content": "long ago"})
    recent = make_thread(owner, "recent")
    parent = make_thread(owner, "old-parent")
    fork = make_thread(owner, "active-fork", fork_from=append(parent, {"role": "user", "content": "p"})[0])
    idle(old, 40)
    idle(parent, 40)

    listed = run("retention", "--days", "30", "--dry-run")

    assert "old\towner" in listed and "recent" not in listed and "old-parent" not in listed
    assert Thread.objects.count() == 4

    settings.THREADMEM_RETENTION_DAYS = 30
    assert retention() == 1  # the periodic task

    assert set(Thread.objects.values_list("channel", flat=True)) == {"recent", "old-parent", "active-fork"}
    record = Deletion.objects.get()
    assert record.channel == "old" and record.actor_name == "retention" and record.counts["messages"] == 1
    idle(fork, 40)
    assert "2 thread(s) idle" in run("retention", "--days", "30", "--dry-run")
    assert "1 thread(s) deleted" in run("retention", "--days", "30")
    assert set(Thread.objects.values_list("channel", flat=True)) == {"recent"}
    assert recent.pk in Thread.objects.values_list("pk", flat=True)


def test_retention_is_off_unless_set(settings):
    settings.THREADMEM_RETENTION_DAYS = 0
    assert retention() == 0
    with pytest.raises(CommandError, match="retention is off"):
        run("retention", "--dry-run")


def _rows_naming(user) -> dict[str, int]:
    """Every row of every table that points at ``user``, directly or through a thread of theirs."""
    counts = {}
    for model in apps.get_models():
        for field in model._meta.get_fields():
            if isinstance(field, ForeignKey) and field.related_model is get_user_model():
                counts[f"{model._meta.label}.{field.name}"] = model.objects.filter(**{field.name: user.pk}).count()
    counts["threads' messages"] = Message.objects.filter(thread__owner_id=user.pk).count()
    return {name: count for name, count in counts.items() if count}


def test_forget_owner_erases_every_row_of_the_owner_and_keeps_the_others(owner, other, admin, static_model):
    mine = make_thread(owner, "mine")
    (message,) = append(mine, {"role": "user", "content": "owner-only-words"})
    theirs = make_thread(other, "theirs")
    append(theirs, {"role": "user", "content": "other-only-words"})
    search_memory(user=owner, query="owner-only-words")
    search_memory(user=other, query="other-only-words")
    Import.objects.create(owner=owner, format="claude-code", channel="mine", channels=["mine"])
    CaptureCursor.objects.create(owner=owner, path="/x/mine.jsonl", format="claude-code")
    token_client(owner)
    console_client(owner)
    IsolationEvent.objects.create(actor=owner, message=message, thread=mine, isolated=False)
    assert _rows_naming(owner)

    assert "1 thread(s) would be erased" in run("forget_owner", "owner", "--dry-run")
    with pytest.raises(CommandError, match="--yes"):
        run("forget_owner", "owner")
    out = run("forget_owner", "owner", "--yes")

    assert "owner: 1 thread(s) erased" in out
    assert not get_user_model().objects.filter(username="owner").exists()
    assert _rows_naming(owner) == {}
    assert not Deletion.objects.filter(owner_name="owner").exists()
    assert {(d.kind, d.owner_name) for d in Deletion.objects.all()} == {
        ("thread", f"owner #{owner.pk}"),
        ("owner", f"owner #{owner.pk}"),
    }
    assert Message.objects.filter(thread=theirs).count() == 1 and ToolCall.objects.filter(caller=other).count() == 1
    assert "other-only-words" in search_memory(user=other, query="other-only-words").text


def test_a_restored_thread_is_not_idle_for_retention_at_any_limit(owner, owner_api, tmp_path):
    thread = make_thread(owner, "restored")
    append(thread, {"role": "user", "content": "from the backup"})
    long_ago = timezone.now() - timedelta(days=400)
    Thread.objects.filter(pk=thread.pk).update(created_at=long_ago, last_activity_at=long_ago)
    response = owner_api.get("/api/v1/threads/restored/export/")
    export = tmp_path / "restored.jsonl"
    export.write_bytes(b"".join(response.streaming_content))
    owner_api.delete("/api/v1/threads/restored/")

    run("import_sessions", "--owner", owner.username, str(export))

    restored = Thread.objects.get(channel="restored")
    assert restored.created_at < timezone.now() - timedelta(days=399)  # the export's history is kept
    for days in ("1", "30", "365"):
        assert "restored" not in run("retention", "--days", days, "--dry-run")
