"""Writes: every change to threads and messages goes through a function here.

Surfaces (REST, console, agent turns, management commands) validate shape,
call one of these and render; the rules live here so every surface gets the
same ones.
"""

from __future__ import annotations

import json
import logging
import secrets
import unicodedata
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from django.conf import settings
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, connection, transaction
from django.db.models import F, Model
from django.utils import timezone

from threadmem.domain.redaction import messages_redact, title_redacted
from threadmem.domain.store import MessageIn, StoredMessage, analyze_after_bulk_write, store_orm, store_pg
from threadmem.errors import Conflict, InvalidInput, NotFound, PayloadTooLarge, PermissionDenied
from threadmem.infrastructure import replicas
from threadmem.lib.projects import PROJECT_MAX_CHARS, project_normal
from threadmem.lib.validate import check_text, check_tool_calls, require_keys
from threadmem.models import Generation, IsolationEvent, Message, Thread

CHANNEL_MAX_CHARS = 255
TITLE_MAX_CHARS = 500
ID_FIELD_MAX_CHARS = 255
# Ids are 64-bit; a larger number would overflow the database driver, not just miss.
MAX_ROW_ID = 2**63 - 1
# The suffixes of the /api/v1/threads/<channel>/<suffix>/ routes.
CHANNEL_RESERVED_LAST_SEGMENTS = frozenset({"messages", "context", "compact", "compactions", "turns", "export"})
# Tuples, not sets: a client may send an unhashable role such as a list.
ROLES = tuple(Message.Role.values)
KINDS = tuple(Message.Kind.values)
MESSAGE_FIELDS = {
    "role",
    "content",
    "tool_calls",
    "tool_call_id",
    "session_id",
    "kind",
    "model_visible",
    "supersedes",
    "source_id",
}

logger = logging.getLogger(__name__)
RowT = TypeVar("RowT", bound=Model)

# Called after messages land, with the thread; compaction registers its
# automatic trigger here so this module does not import it.
after_append_hooks: list[Callable[[Thread], None]] = []
# Called in the isolation's transaction with the message and the admin; compaction registers the
# re-summary of a compacted generation here (a summary must not keep quoting an isolated message).
after_isolation_hooks: list[Callable[[Message, AbstractBaseUser], object]] = []
# The same for a whole thread: its forks' summaries were written from its context.
after_thread_isolation_hooks: list[Callable[[Thread, AbstractBaseUser], object]] = []


def message_parse(data: Any, *, position: str = "message") -> MessageIn:
    """Check one incoming message object; raise InvalidInput/PayloadTooLarge naming the problem."""
    if not isinstance(data, dict):
        raise InvalidInput(f"{position} must be a JSON object")
    require_keys(
        data, MESSAGE_FIELDS, unknown_message=f"{position} has unknown fields: {{unknown}}", unknown_field=None
    )
    role = data.get("role")
    if role not in ROLES:
        raise InvalidInput(f"{position}.role must be one of {', '.join(ROLES)}", field="role")
    kind = data.get("kind")
    if kind in (None, ""):  # omitted, as the schema says; not any falsy value
        kind = Message.Kind.MESSAGE
    if kind not in KINDS:
        raise InvalidInput(f"{position}.kind must be one of {', '.join(KINDS)}", field="kind")
    if kind == Message.Kind.SUMMARY:
        raise InvalidInput(f"{position}.kind: summaries are written by compaction only", field="kind")
    content = check_text(data.get("content"), name=f"{position}.content")
    tool_calls = check_tool_calls(
        data.get("tool_calls"), name=f"{position}.tool_calls", id_max_chars=ID_FIELD_MAX_CHARS
    )
    if tool_calls and role != Message.Role.ASSISTANT:
        raise InvalidInput(f"{position}.tool_calls are only allowed on assistant messages", field="tool_calls")
    tool_call_id = check_text(data.get("tool_call_id"), name=f"{position}.tool_call_id", max_chars=ID_FIELD_MAX_CHARS)
    session_id = check_text(data.get("session_id"), name=f"{position}.session_id", max_chars=ID_FIELD_MAX_CHARS)
    source_id = check_text(data.get("source_id"), name=f"{position}.source_id", max_chars=ID_FIELD_MAX_CHARS)
    model_visible = data.get("model_visible", True)
    if not isinstance(model_visible, bool):
        raise InvalidInput(f"{position}.model_visible must be true or false", field="model_visible")
    supersedes = data.get("supersedes")
    if supersedes is not None and (
        not isinstance(supersedes, int) or isinstance(supersedes, bool) or not 1 <= supersedes <= MAX_ROW_ID
    ):
        raise InvalidInput(f"{position}.supersedes must be a message id", field="supersedes")
    size = len(content.encode("utf-8"))
    if tool_calls:
        size += len(json.dumps([c["arguments"] for c in tool_calls], ensure_ascii=False).encode("utf-8"))
    limit = settings.THREADMEM_MAX_MESSAGE_BYTES
    if size > limit:
        raise PayloadTooLarge(f"{position} is {size} bytes; the limit is {limit} bytes (THREADMEM_MAX_MESSAGE_BYTES)")
    if not content and not tool_calls:
        raise InvalidInput(f"{position} needs content or tool_calls", field="content")
    return MessageIn(
        role=role,
        content=content,
        tool_calls=tool_calls,
        tool_call_id=tool_call_id,
        session_id=session_id,
        kind=kind,
        model_visible=model_visible,
        supersedes=supersedes,
        source_id=source_id,
        size=size,
    )


def messages_parse(data: Any) -> list[MessageIn]:
    """One message object or a list of them (all or nothing)."""
    if isinstance(data, dict):
        return [message_parse(data)]
    if not isinstance(data, list):
        raise InvalidInput("the body must be a message object or a list of message objects")
    if not data:
        raise InvalidInput("the batch is empty")
    if len(data) > settings.THREADMEM_MAX_BATCH:
        raise PayloadTooLarge(
            f"the batch has {len(data)} messages; the limit is {settings.THREADMEM_MAX_BATCH} (THREADMEM_MAX_BATCH)"
        )
    parsed = [message_parse(item, position=f"messages[{index}]") for index, item in enumerate(data)]
    seen: set[str] = set()
    for index, message in enumerate(parsed):
        if message.source_id in seen:
            raise InvalidInput(
                f"messages[{index}].source_id {message.source_id!r} repeats an earlier message's", field="source_id"
            )
        if message.source_id:
            seen.add(message.source_id)
    return parsed


def create_unless_conflicting(model: type[RowT], **fields: Any) -> RowT | None:
    """``model.objects.create(**fields)`` in a savepoint: None when a unique constraint refuses the row.

    The caller's transaction goes on either way.
    """
    try:
        with transaction.atomic():
            return model.objects.create(**fields)
    except IntegrityError:
        return None


# --- threads ----------------------------------------------------------------


def _check_channel(channel: Any) -> str:
    """The channel grammar: 1-255 characters, no surrounding whitespace, no control characters, no '*'
    (search shows it for "every thread"), no '.' or '..' path segment (clients and proxies rewrite those in
    URLs), and no last segment that names an API route."""
    channel = check_text(channel, name="channel", max_chars=CHANNEL_MAX_CHARS, allow_empty=False)
    if channel != channel.strip() or any(unicodedata.category(c) == "Cc" for c in channel):
        raise InvalidInput("channel must not have surrounding whitespace or control characters", field="channel")
    if "*" in channel:
        raise InvalidInput("channel must not contain '*': search results use it for every thread", field="channel")
    if any(segment in (".", "..") for segment in channel.split("/")):
        raise InvalidInput("channel must not have a '.' or '..' segment: URLs would resolve it away", field="channel")
    if "/" in channel and channel.endswith("/"):
        raise InvalidInput("channel must not end with '/'", field="channel")
    if "/" in channel and channel.rsplit("/", 1)[1] in CHANNEL_RESERVED_LAST_SEGMENTS:
        # threads/<channel>/<suffix>/ routes would read "a/messages" as thread "a".
        raise InvalidInput(
            f"channel must not end with '/{channel.rsplit('/', 1)[1]}': it names an API route", field="channel"
        )
    return channel


def _new_channel() -> str:
    return f"thread-{secrets.token_hex(8)}"


@transaction.atomic
def thread_create(
    *,
    owner: AbstractBaseUser,
    channel: str | None = None,
    title: str = "",
    fork_from: Message | None = None,
    project: str | None = None,
) -> Thread:
    """Create a thread, or a fork of ``fork_from``'s thread at that message.

    A fork starts at the generation of its fork message: its ancestry is the
    parent's history up to and including that message, and its context starts
    as the parent's context did at that point. ``project``: the path search's
    project filter knows it by (a fork without one takes its parent's).
    """
    channel = _check_channel(channel) if channel is not None else _new_channel()
    # Every title is written here or in thread_update (the API, imports, restores): stored redacted, as messages are.
    title = title_redacted(check_text(title, name="title", max_chars=TITLE_MAX_CHARS))
    number = 1
    parent = None
    if fork_from is not None:
        number = fork_from.generation
        parent = fork_from.thread
    if project is not None:
        project = project_normal(check_text(project, name="project", max_chars=PROJECT_MAX_CHARS).strip())
    elif parent is not None:
        project = parent.project
    thread = create_unless_conflicting(
        Thread,
        channel=channel,
        title=title,
        owner=owner,
        parent=parent,
        fork_message=fork_from,
        current_generation=number,
        project=project or "",
    )
    if thread is None:
        raise Conflict(f"channel {channel!r} already exists", field="channel")
    Generation.objects.create(thread=thread, number=number)
    return thread


def thread_update(*, thread: Thread, title: Any) -> Thread:
    thread.title = title_redacted(check_text(title, name="title", max_chars=TITLE_MAX_CHARS))
    thread.save(update_fields=["title"])
    return thread


ISOLATION_DENIED = "only admins (superusers or holders of the threadmem.isolate permission) may change isolation"


def can_isolate(user: AbstractBaseUser) -> bool:
    return bool(user.is_superuser or user.has_perm("threadmem.isolate"))


def _check_isolation_change(*, actor: AbstractBaseUser, isolated: Any) -> None:
    if not can_isolate(actor):
        raise PermissionDenied(ISOLATION_DENIED, field="isolated")
    if not isinstance(isolated, bool):
        raise InvalidInput("isolated must be true or false", field="isolated")


@transaction.atomic
def thread_set_isolated(*, thread: Thread, isolated: bool, actor: AbstractBaseUser, surface: str = "api") -> Thread:
    _check_isolation_change(actor=actor, isolated=isolated)
    Thread.objects.filter(pk=thread.pk).update(isolated=isolated)
    thread.isolated = isolated
    replicas.fence()
    IsolationEvent.objects.create(actor=actor, thread=thread, isolated=isolated, surface=surface)
    for hook in after_thread_isolation_hooks:
        hook(thread, actor)
    return thread


@transaction.atomic
def message_set_isolated(*, message: Message, isolated: bool, actor: AbstractBaseUser, surface: str = "api") -> Message:
    _check_isolation_change(actor=actor, isolated=isolated)
    # The thread's row lock first, as compaction's commits take it before the message rows they move:
    # an isolation lands wholly before or after a commit, and the two never wait on each other.
    Thread.objects.select_for_update().filter(pk=message.thread_id).values_list("pk", flat=True).first()
    Message.objects.filter(pk=message.pk).update(isolated=isolated)
    message.isolated = isolated
    replicas.fence()
    IsolationEvent.objects.create(
        actor=actor, thread_id=message.thread_id, message=message, isolated=isolated, surface=surface
    )
    for hook in after_isolation_hooks:
        hook(message, actor)
    return message


# --- messages ---------------------------------------------------------------


def messages_store(*, thread: Thread, messages: Sequence[MessageIn], run_hooks: bool = True) -> list[StoredMessage]:
    """Append parsed messages to the thread's current generation, all or nothing; answer with the stored rows.

    The seq block is reserved with one UPDATE on the thread row, inside the
    transaction that inserts the rows: concurrent appends (and compaction,
    which moves ``current_generation`` under the same lock) serialize there.

    A message whose ``source_id`` the thread already holds is not stored
    again: the answer carries the stored one in its place, so a retried
    append, or a re-imported file, adds only what is new.

    Secrets in the messages' content and tool-call arguments are replaced
    first, in the given MessageIn objects themselves (``redaction.messages_redact``).

    ``run_hooks=False`` defers the after-append hooks: an agent turn appends
    several times and runs them once, after its last append
    (``after_append``), so no compaction starts in the middle of a turn.
    """
    if not messages:
        raise InvalidInput("nothing to append")
    # The one home of "what is stored is redacted" for every path that appends (threadmem/domain/redaction.py).
    messages_redact(messages)
    now = timezone.now()
    store = store_pg if connection.vendor == "postgresql" else store_orm
    with transaction.atomic():
        known = _stored_by_source_id(thread, messages)
        if known:
            asked, messages = messages, [m for m in messages if m.source_id not in known]
            if not messages:
                return [known[m.source_id] for m in asked]
        superseded_ids = [m.supersedes for m in messages if m.supersedes is not None]
        if superseded_ids:
            found = set(Message.objects.filter(thread=thread, id__in=superseded_ids).values_list("id", flat=True))
            missing = sorted(set(superseded_ids) - found)
            if missing:
                raise InvalidInput(
                    f"supersedes names messages that are not in this thread: {', '.join(map(str, missing))}",
                    field="supersedes",
                )
        stored = store(thread=thread, messages=messages, now=now)
        generation = stored[0].generation
        visible_size = sum(m.size for m in messages if m.model_visible)
        if visible_size:
            Generation.objects.filter(thread=thread, number=generation).update(
                visible_chars=F("visible_chars") + visible_size
            )
        for message_in, message in zip(messages, stored, strict=True):
            if message_in.supersedes is not None:
                Message.objects.filter(pk=message_in.supersedes).update(superseded_by=message.id)
    thread.next_seq = stored[-1].seq + 1
    thread.current_generation = generation
    thread.last_activity_at = now
    _refresh_statistics(len(messages))
    if run_hooks:
        after_append(thread)
    if known:
        new = iter(stored)
        return [known[m.source_id] if m.source_id in known else next(new) for m in asked]
    return stored


def _refresh_statistics(rows: int) -> None:
    """After the commit, as the after-append hooks: a failure is logged, never raised (the messages are stored)."""
    try:
        analyze_after_bulk_write(rows)
    except Exception:
        logger.exception("refreshing the planner's statistics after %s messages failed; the messages are stored", rows)


def _stored_by_source_id(thread: Thread, messages: Sequence[MessageIn]) -> dict[str, StoredMessage]:
    """The thread's stored messages among the batch's source ids, read under the thread's row lock.

    The lock makes a concurrent retry of the same batch wait for this one and
    then find its messages; a batch without source ids costs nothing here.
    """
    source_ids = [m.source_id for m in messages if m.source_id]
    if not source_ids:
        return {}
    Thread.objects.select_for_update().filter(pk=thread.pk).values_list("pk").first()
    rows = Message.objects.filter(thread=thread, source_id__in=source_ids).values_list(*StoredMessage._fields)
    return {row.source_id: row for row in map(StoredMessage._make, rows)}


def messages_append(*, thread: Thread, messages: Sequence[MessageIn], run_hooks: bool = True) -> list[Message]:
    """``messages_store`` answering with Message instances, for callers that go on with the models."""
    created = []
    for row in messages_store(thread=thread, messages=messages, run_hooks=run_hooks):
        message = Message(**row._asdict())
        message.thread = thread  # cached: callers read message.thread
        message._state.adding = False
        message._state.db = connection.alias
        created.append(message)
    return created


def after_append(thread: Thread) -> None:
    """Run the after-append hooks (the automatic compaction check, embedding) for the thread.

    The messages are committed by now: a hook that fails (the broker is
    down, the database connection dropped) is logged, never raised, so a
    stored append never answers an error that would make a client retry it.
    """
    for hook in after_append_hooks:
        try:
            hook(thread)
        except Exception:
            logger.exception("after-append hook %s failed for thread %s; the messages are stored", hook, thread.pk)


def message_lookup_in_thread(*, thread: Thread, message_id: Any) -> Message:
    if not isinstance(message_id, int) or isinstance(message_id, bool):
        raise InvalidInput("message_id must be an integer", field="message_id")
    try:
        return Message.objects.select_related("thread").get(pk=message_id, thread=thread)
    except Message.DoesNotExist:
        raise NotFound(f"message {message_id} is not in thread {thread.channel!r}") from None
