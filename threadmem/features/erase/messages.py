"""Erasing one message (a leaked secret): the row and what derives from it, and the summaries that quoted it.

An erasure is an isolation that leaves nothing behind. The isolation hooks
ask for the re-summaries isolation asks for (compaction/resummarize.py): the
message's generation and every later compacted one, and the forks whose
context held it. Until those are written, every summary that may have
quoted the message (superseded ones included) says it was withdrawn instead:
an erased text is never served while a model rewrites it. A compaction
reading the message right now sees it gone at its commit
(``source_withdrawn``) and reads its input again.
"""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F

from threadmem.domain import services
from threadmem.errors import Conflict, InvalidInput, PermissionDenied
from threadmem.features.compaction.resummarize import forks_holding
from threadmem.features.erase.record import deletion_record, forget_kept
from threadmem.features.erase.rows import delete_messages
from threadmem.infrastructure import replicas
from threadmem.models import Deletion, EmbeddingProgress, Message, Thread

WITHDRAWN_SUMMARY = (
    "[summary withdrawn: a message it summarized was erased; the summary is being written again without it]"
)
ERASE_DENIED = "only admins (superusers or holders of the threadmem.isolate permission) may erase a message"


def message_erase(*, message: Message, actor: AbstractBaseUser, surface: str = "api") -> Deletion:
    """Erase ``message`` for good; answer the deletion's record."""
    if not services.can_isolate(actor):
        raise PermissionDenied(ERASE_DENIED)
    if message.kind == Message.Kind.SUMMARY:
        raise InvalidInput(
            "a summary is not erased itself: erase the message it quoted and the summary is written again",
            field="message_id",
        )
    with transaction.atomic():
        thread = Thread.objects.select_for_update().select_related("owner").get(pk=message.thread_id)
        forked_here = list(Thread.objects.filter(fork_message_id=message.pk).values_list("channel", flat=True))
        if forked_here:
            raise Conflict(
                f"message {message.pk} is where {', '.join(map(repr, forked_here))} forked from: "
                "delete those forks first",
                field="message_id",
            )
        Message.objects.filter(pk=message.pk).update(isolated=True)
        message.isolated = True
        replicas.fence()
        for hook in services.after_isolation_hooks:
            hook(message, actor)
        withdrawn = _withdraw_summaries(message)
        # What it superseded stays out of the model's reads, as it was.
        hidden = Message.objects.filter(superseded_by_id=message.pk).update(isolated=True)
        counts: dict[str, object] = dict(delete_messages([message.pk]))
        counts.update(summaries_withdrawn=withdrawn, superseded_kept_hidden=hidden)
        # The ranked lane's kept pieces of the thread are read again in every process.
        EmbeddingProgress.objects.filter(thread_id=thread.pk).update(changes=F("changes") + 1)
        transaction.on_commit(forget_kept)
        return deletion_record(
            kind=Deletion.Kind.MESSAGE,
            actor=actor,
            owner_name=thread.owner.get_username(),
            channel=thread.channel,
            message_id=message.pk,
            counts=counts,
            surface=surface,
        )


def _withdraw_summaries(message: Message) -> int:
    """Replace every summary that may quote ``message`` by a notice until its re-summary; answer how many."""
    later = Message.objects.filter(
        thread_id=message.thread_id, kind=Message.Kind.SUMMARY, generation__gt=message.generation
    )
    count = later.update(content=WITHDRAWN_SUMMARY)
    forks = [fork.pk for fork in forks_holding(message)]
    if forks:
        count += Message.objects.filter(thread_id__in=forks, kind=Message.Kind.SUMMARY).update(
            content=WITHDRAWN_SUMMARY
        )
    return count
