"""Reads: who may see what, and what the model sees now.

Every read that a surface answers goes through a function here, so the
ownership rule (non-staff see only their own threads; anything else is 404)
is written once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Count, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from threadmem.errors import Conflict, InvalidInput, NotFound
from threadmem.lib.storable import text_problem
from threadmem.models import WITHDRAWN_PREFIX, Generation, Message, Thread


def is_operator(user: AbstractBaseUser) -> bool:
    """Staff read every thread and every message, flags shown."""
    return bool(user.is_active and user.is_staff)


def thread_list_for(*, user: AbstractBaseUser) -> QuerySet[Thread]:
    threads = Thread.objects.select_related("owner").exclude(channel__startswith=WITHDRAWN_PREFIX)
    if is_operator(user):
        return threads
    return threads.filter(owner=user)


def channel_holder(*, channel: str, holders: list[tuple[int, int, str]], prefer_owner_id: int | None = None) -> int:
    """Which of the threads named ``channel`` (thread id, owner id, owner's name) an operator means.

    Channels are unique per owner, so one name may be several owners' threads: the operator's own, else the only
    one; several others' are a Conflict that names their owners. ``holders`` is never empty.
    """
    own = [thread_id for thread_id, owner_id, _ in holders if owner_id == prefer_owner_id]
    if own:
        return own[0]
    if len(holders) > 1:
        names = ", ".join(sorted(name for _, _, name in holders))
        raise Conflict(
            f"channel {channel!r} is held by {len(holders)} owners ({names}): name one with owner=<username>",
            field="channel",
        )
    return holders[0][0]


def thread_get_for(
    *, user: AbstractBaseUser, channel: str, owner: str | None = None, withdrawn: bool = False
) -> Thread:
    """The caller's thread on ``channel``; an operator may name its ``owner`` (the username).

    ``withdrawn``: else the caller's thread that was on ``channel`` when its deletion stopped half way
    (threadmem/features/erase/thread_delete.py keeps the channel in its title), for a DELETE that finishes it.
    """
    if not isinstance(channel, str) or text_problem(channel):
        # No stored channel has a NUL or a lone surrogate, and PostgreSQL refuses both in a query.
        raise NotFound(f"thread {channel!r} not found")
    try:
        return thread_named(channel=channel, owner=owner, user=user)
    except NotFound:
        if not withdrawn:
            raise
    threads = Thread.objects.select_related("owner").filter(channel__startswith=WITHDRAWN_PREFIX, title=channel)
    if not is_operator(user):
        threads = threads.filter(owner=user)
    elif owner is not None:
        threads = threads.filter(owner__username=owner)
    found = threads.order_by("pk").first()
    if found is None:
        raise NotFound(f"thread {channel!r} not found")
    return found


def thread_named(*, channel: str, owner: str | None = None, user: AbstractBaseUser | None = None) -> Thread:
    """The thread on ``channel`` that ``user`` may read (None: a command on the server reads any).

    A non-operator reads only their own; ``owner`` narrows an operator's (or a command's) choice.
    """
    threads = thread_list_for(user=user) if user is not None else Thread.objects.select_related("owner")
    threads = threads.filter(channel=channel)
    if user is not None and not is_operator(user):
        owner = None  # their own already; naming another owner finds nothing anyway
    if owner is not None:
        threads = threads.filter(owner__username=owner)
    found = {thread.pk: thread for thread in threads[:100]}
    if not found:
        raise NotFound(f"thread {channel!r} not found")
    holders = [(thread.pk, thread.owner_id, thread.owner.get_username()) for thread in found.values()]
    chosen = channel_holder(channel=channel, holders=holders, prefer_owner_id=user.pk if user is not None else None)
    return found[chosen]


def generation_list_for(*, thread: Thread) -> QuerySet[Generation]:
    """The thread's own generations, oldest first, each with ``message_count``.

    One query whatever the number of generations: the count is a correlated
    subquery served by the (thread, generation, seq) index.
    """
    counts = (
        Message.objects.filter(thread_id=OuterRef("thread_id"), generation=OuterRef("number"))
        .order_by()
        .values("generation")
        .annotate(n=Count("id"))
        .values("n")
    )
    return (
        Generation.objects.filter(thread=thread)
        .annotate(message_count=Coalesce(Subquery(counts, output_field=IntegerField()), Value(0)))
        .order_by("number")
    )


def message_list_for(*, thread: Thread, generation: Any = None) -> QuerySet[Message]:
    """The thread's stored messages in seq order, flags shown (the record, not the model's view).

    ``generation`` comes straight from a query string: anything but a
    positive integer is InvalidInput, a generation the thread does not have
    is NotFound.
    """
    messages = Message.objects.filter(thread=thread).order_by("seq")
    if generation is None:
        return messages
    try:
        number = int(str(generation).strip())
    except ValueError:
        raise InvalidInput(f"generation must be a positive integer, got {generation!r}", field="generation") from None
    if number < 1:
        raise InvalidInput(f"generation must be a positive integer, got {generation!r}", field="generation")
    if not Generation.objects.filter(thread=thread, number=number).exists():
        raise NotFound(f"thread {thread.channel!r} has no generation {number}", field="generation")
    return messages.filter(generation=number)


def message_get_for(*, user: AbstractBaseUser, message_id: Any, model_facing: bool) -> Message:
    """A message the caller may read.

    Model-facing callers (agent tokens, the tools, MCP) read exactly what
    search may show them; operators read everything. Anything else answers
    NotFound, the same as an id that does not exist.
    """
    # Only a positive id in ASCII digits names a message: int() would also take "-1", " 7", "1_0", "٣", 7.9 and True.
    if isinstance(message_id, str) and message_id.isascii() and message_id.isdigit():
        message_id = int(message_id)
    if isinstance(message_id, bool) or not isinstance(message_id, int) or not 0 < message_id < 2**63:
        raise NotFound(f"message {message_id!r} not found: a message id is a positive integer")
    messages = Message.objects.select_related("thread", "thread__owner")
    if not is_operator(user):
        messages = messages.filter(thread__owner=user)
    if model_facing:
        messages = messages.searchable()
    try:
        return messages.get(pk=message_id)
    except Message.DoesNotExist:
        raise NotFound(f"message {message_id} not found") from None


@dataclass(frozen=True)
class ScopePart:
    """One thread's share of a search scope: its messages with seq <= max_seq."""

    thread_id: int
    max_seq: int | None  # None: the whole thread


def scope_filter(parts: list[ScopePart], *, prefix: str = "") -> Q:
    """A Q that keeps rows of the scope; ``prefix`` reaches the message (e.g. ``message__``)."""
    condition = Q(pk__in=[])
    for part in parts:
        q = Q(**{f"{prefix}thread_id": part.thread_id})
        if part.max_seq is not None:
            q &= Q(**{f"{prefix}seq__lte": part.max_seq})
        condition |= q
    return condition


def chat_message(message: Message) -> dict[str, Any]:
    """A stored message as an OpenAI-style chat message a runtime can send as is."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call["id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": _json(call["arguments"])},
            }
            for call in message.tool_calls
        ]
    if message.role == Message.Role.TOOL and message.tool_call_id:
        out["tool_call_id"] = message.tool_call_id
    return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def context_messages(thread: Thread, generation: int | None = None, upto_seq: int | None = None) -> list[Message]:
    """What the model sees of a generation (default: the current one), up to ``upto_seq`` if given.

    The generation's summary leads, then its model-visible messages in seq
    order; machine events stay (the framework injected them for the model),
    isolated, superseded and model-invisible messages are left out. A fork
    still in the generation it was forked at starts with its parent's context
    at the fork point (and the summary that opens it, rewritten or not),
    unless the parent is isolated (then it is out of the
    fork's search scope and out of its context alike). Agent turns, the
    context endpoint and compaction all read it here.
    """
    number = thread.current_generation if generation is None else generation
    messages = Message.objects.visible().filter(thread=thread, generation=number)
    if upto_seq is not None:
        # The summary opening the generation stays whatever its seq: a re-summary
        # (compaction/resummarize.py) writes the replacement past any fork point or cut.
        opening = Generation.objects.filter(thread=thread, number=number - 1).values("summary_message_id")
        messages = messages.filter(Q(seq__lte=upto_seq) | Q(pk__in=opening))
    own = list(messages.order_by("seq"))
    # The summary opens the generation even when late arrivals of the
    # previous one (moved here by compaction) carry a lower seq.
    own.sort(key=lambda m: (m.kind != Message.Kind.SUMMARY, m.seq))
    if thread.parent_id is None or thread.fork_message_id is None or any(m.kind == Message.Kind.SUMMARY for m in own):
        return own
    fork = Message.objects.only("generation", "seq").get(pk=thread.fork_message_id)
    if fork.generation != number:
        return own
    parent = Thread.objects.get(pk=thread.parent_id)
    if parent.isolated:
        return own
    return context_messages(parent, fork.generation, fork.seq) + own
